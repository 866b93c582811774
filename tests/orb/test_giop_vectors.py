"""GIOP bytes captured from omniORB (tests/vectors/omniorb_*.json) decode exactly."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from cosnotify.orb import CORBA, cdr, tc
from cosnotify.orb import giop_messages as gm
from cosnotify.orb.giop import NEED_DATA, GIOPConnection, RemoteProtocolError, Role
from cosnotify.orb.giop_messages import FormatMinor
from cosnotify.orb.ior import IOR
from tests.orb.test_giop import FEEDS, feed

VECTORS = pathlib.Path(__file__).parent.parent / "vectors"
CAPTURED = {path.stem: json.loads(path.read_text()) for path in sorted(VECTORS.glob("omniorb_*_[0-9][0-9].json"))}
INVALID = {path.stem: json.loads(path.read_text()) for path in sorted(VECTORS.glob("invalid_*.json"))}

# CosNaming types, to read the bodies omniORB sent.
NAME_COMPONENT = tc.struct_tc("IDL:omg.org/CosNaming/NameComponent:1.0", "NameComponent",
                              [("id", CORBA.TC_string), ("kind", CORBA.TC_string)])
NAME = tc.alias_tc("IDL:omg.org/CosNaming/Name:1.0", "Name", tc.sequence_tc(0, NAME_COMPONENT))
BINDING_TYPE = tc.enum_tc("IDL:omg.org/CosNaming/BindingType:1.0", "BindingType", ["nobject", "ncontext"])
BINDING = tc.struct_tc("IDL:omg.org/CosNaming/Binding:1.0", "Binding",
                       [("binding_name", NAME), ("binding_type", BINDING_TYPE)])
BINDING_LIST = tc.alias_tc("IDL:omg.org/CosNaming/BindingList:1.0", "BindingList",
                           tc.sequence_tc(0, BINDING))
ITERATOR = tc.objref_tc("IDL:omg.org/CosNaming/BindingIterator:1.0", "BindingIterator")
CONTEXT = tc.objref_tc("IDL:omg.org/CosNaming/NamingContext:1.0", "NamingContext")
NOT_FOUND = tc.exception_tc("IDL:omg.org/CosNaming/NamingContext/NotFound:1.0", "NotFound", [
    ("why", tc.enum_tc("IDL:omg.org/CosNaming/NamingContext/NotFoundReason:1.0", "NotFoundReason",
                       ["missing_node", "not_context", "not_object"])),
    ("rest_of_name", NAME)])


def conversation(scenario: str, connection: int) -> list[tuple[str, dict[str, Any]]]:
    return [(name, v) for name, v in CAPTURED.items()
            if name.rsplit("_", 1)[0] == scenario and v["connection"] == connection]


def replay(scenario: str, connection: int = 0) -> dict[str, Any]:
    """Feed one captured connection to a server (client bytes) and a client (server bytes).

    The client learns of each request by sending the request the server decoded.
    Returns vector name -> event (None while a fragmented message is incomplete).
    """
    server, client = GIOPConnection(Role.SERVER), GIOPConnection(Role.CLIENT)
    events: dict[str, Any] = {}
    for name, vector in conversation(scenario, connection):
        if vector["direction"] == "client->server":
            server.receive_data(bytes.fromhex(vector["hex"]))
            event = server.next_event()
            if event is not NEED_DATA and not isinstance(event, (gm.CloseConnection, gm.CancelRequest)):
                client.send(event)
        else:
            client.receive_data(bytes.fromhex(vector["hex"]))
            event = client.next_event()
        events[name] = None if event is NEED_DATA else event
    return events


def codec_of(message: Any) -> cdr.Codec:
    return cdr.Codec(message.little_endian, cdr.ISO_8859_1, cdr.UTF_16, message.version)


def body(message: Any) -> cdr.Decoder:
    return cdr.Decoder(message.body, codec_of(message), offset=message.body_offset)


SCENARIOS = sorted({(name.rsplit("_", 1)[0], v["connection"]) for name, v in CAPTURED.items()})


class TestCapturedMessages:
    def test_there_are_vectors_of_every_version_and_kind(self) -> None:
        """The captures cover GIOP 1.0-1.2 and every message type nameclt and omniNames use."""
        kinds = {(v["expect"]["message_type"], tuple(v["expect"]["version"])) for v in CAPTURED.values()}
        for version in [(1, 0), (1, 1), (1, 2)]:
            assert ("Request", version) in kinds and ("Reply", version) in kinds
        assert {"LocateRequest", "LocateReply", "CloseConnection", "Fragment"} <= {k for k, _ in kinds}
        assert all(v["source"].startswith("omniORB 4.2.5") for v in CAPTURED.values())

    @pytest.mark.parametrize(("scenario", "connection"), SCENARIOS)
    def test_fields_match(self, scenario: str, connection: int) -> None:
        """Type, ids, operation, key, service contexts and statuses are exactly as captured."""
        events = replay(scenario, connection)
        for name, vector in conversation(scenario, connection):
            expect, event = vector["expect"], events[name]
            if expect["message_type"] == "Fragment" or expect["more_fragments"]:
                continue  # checked on the reassembled message
            assert type(event).__name__ == expect["message_type"], name
            assert list(event.version) == expect["version"]
            assert event.little_endian == expect["little_endian"]
            if "request_id" in expect:
                assert event.request_id == expect["request_id"]
            if "operation" in expect:
                assert event.operation == expect["operation"]
            if "object_key" in expect:
                assert event.object_key.hex() == expect["object_key"]
            if "service_context_ids" in expect:
                assert [c.context_id for c in event.service_contexts] == expect["service_context_ids"]
            if "response_flags" in expect:
                assert event.response_flags == expect["response_flags"]
            if "response_expected" in expect:
                assert event.response_expected == expect["response_expected"]
            if "reply_status" in expect:
                assert event.reply_status == expect["reply_status"]
            if "locate_status" in expect:
                assert event.locate_status == expect["locate_status"]
            if "body_offset" in expect and event.body:
                assert event.body_offset == expect["body_offset"]
            if "exception_id" in expect:
                assert body(event).read_string() == expect["exception_id"]

    @pytest.mark.parametrize("how", FEEDS)
    def test_each_message_fed_three_ways(self, how: str) -> None:
        """Every unfragmented captured request decodes the same whole, bytewise and with trailing bytes."""
        for name, vector in CAPTURED.items():
            expect = vector["expect"]
            if vector["direction"] != "client->server" or expect["more_fragments"] \
                    or expect["message_type"] == "Fragment":
                continue
            reference = GIOPConnection(Role.SERVER)
            reference.receive_data(bytes.fromhex(vector["hex"]))
            assert feed(GIOPConnection(Role.SERVER), bytes.fromhex(vector["hex"]), how) \
                == [reference.next_event()], name


class TestCapturedBodies:
    def test_codesets_service_context(self) -> None:
        """The first request on an IOR with TAG_CODE_SETS carries CodeSets: ISO-8859-1 and UTF-16."""
        events = replay("omniorb_list_by_ior_giop12")
        request = events["omniorb_list_by_ior_giop12_02"]
        context = request.codesets()
        assert (context.char_data, context.wchar_data) == (cdr.ISO_8859_1, cdr.UTF_16)

    def test_is_a_request_and_reply(self) -> None:
        """_is_a carries a repository id string and answers a boolean."""
        events = replay("omniorb_list_empty_giop12")
        assert body(events["omniorb_list_empty_giop12_00"]).read_string() \
            == "IDL:omg.org/CosNaming/NamingContext:1.0"
        assert body(events["omniorb_list_empty_giop12_01"]).read_boolean() is True

    @pytest.mark.parametrize("scenario", ["omniorb_list_one_giop12", "omniorb_list_giop10",
                                          "omniorb_list_giop11"])
    def test_list_reply_holds_bindings_and_an_iterator(self, scenario: str) -> None:
        """list(0) returns no bindings and an iterator, whose next_one() yields ctx1, a context."""
        events = replay(scenario, 0)
        decoder = body(events[f"{scenario}_03"])
        assert decoder.read(BINDING_LIST) == []
        iterator = decoder.read(ITERATOR)
        assert decoder.at_end()
        assert isinstance(iterator, IOR) and iterator.type_id == ITERATOR.id()
        later = replay(scenario, 1) if scenario.endswith(("10", "11")) else events
        first = min(name for name, e in later.items() if isinstance(e, gm.LocateRequest))
        assert later[first].object_key == iterator.iiop_profile().object_key
        replies = [e for e in later.values() if isinstance(e, gm.Reply)]
        found = body(replies[-3])
        assert found.read_boolean() is True
        binding = found.read(BINDING)
        assert ([(c.id, c.kind) for c in binding.binding_name], binding.binding_type._n) \
            == ([("ctx1", "")], "ncontext")
        assert body(replies[-2]).read_boolean() is False

    def test_list_request_asks_for_zero(self) -> None:
        """nameclt calls list(0) and walks the iterator."""
        events = replay("omniorb_list_empty_giop12")
        assert body(events["omniorb_list_empty_giop12_02"]).read_ulong() == 0

    def test_resolve_reply_is_a_naming_context(self) -> None:
        """resolve(ctx1) returns the new context's IOR with an IIOP 1.2 profile."""
        events = replay("omniorb_resolve_giop12")
        request = events["omniorb_resolve_giop12_02"]
        assert [(c.id, c.kind) for c in body(request).read(NAME)] == [("ctx1", "")]
        ior = body(events["omniorb_resolve_giop12_03"]).read(CORBA.TC_Object)
        assert ior.type_id == "IDL:omg.org/CosNaming/NamingContextExt:1.0"
        assert ior.iiop_profile().version == (1, 2)

    def test_user_exception_reply(self) -> None:
        """resolve(nosuch) raises NotFound(missing_node, [nosuch])."""
        events = replay("omniorb_resolve_missing_giop12")
        reply = events["omniorb_resolve_missing_giop12_03"]
        assert reply.reply_status is gm.ReplyStatus.USER_EXCEPTION
        decoder = body(reply)
        assert decoder.read_string() == NOT_FOUND.id()
        exc = decoder.read(NOT_FOUND)
        assert exc.why._n == "missing_node"
        assert [(c.id, c.kind) for c in exc.rest_of_name] == [("nosuch", "")]

    def test_system_exception_reply(self) -> None:
        """A request to an unknown key gets OBJECT_NOT_EXIST."""
        events = replay("omniorb_bad_key_giop12")
        exc = events["omniorb_bad_key_giop12_01"].system_exception()
        assert isinstance(exc, CORBA.OBJECT_NOT_EXIST)
        assert exc.completed == CORBA.COMPLETED_NO

    @pytest.mark.parametrize(("scenario", "length"), [("omniorb_bind_long_giop12", 20000),
                                                      ("omniorb_bind_long_giop11", 20001)])
    def test_fragmented_request_reassembles(self, scenario: str, length: int) -> None:
        """A 20 kB bind_new_context arrives in three fragments and decodes exactly."""
        events = replay(scenario)
        request = next(e for e in events.values() if isinstance(e, gm.Request)
                       and e.operation == "bind_new_context")
        name = cdr.decode(NAME, request.body, codec_of(request), offset=request.body_offset, exact=True)
        assert len(name) == 1 and len(name[0].id) == length and name[0].kind == ""


class TestInvalidVectors:
    @pytest.mark.parametrize("name", sorted(INVALID))
    def test_rejected_with_the_named_error(self, name: str) -> None:
        """Each expected-invalid vector raises RemoteProtocolError with its minor code."""
        vector = INVALID[name]
        assert vector["expected_valid"] is False
        conn = GIOPConnection(Role(vector["role"]))
        conn.receive_data(bytes.fromhex(vector["hex"]))
        conn.receive_data(b"")
        with pytest.raises(RemoteProtocolError) as info:
            conn.next_event()
        assert info.value.minor == getattr(FormatMinor, vector["expect_error"])


