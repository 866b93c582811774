"""The sans-IO GIOP connection and message codecs (CORBA 3.0 chapter 15)."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosnotify.orb import CORBA, cdr
from cosnotify.orb import giop_messages as gm
from cosnotify.orb.codesets import CodeSetContext
from cosnotify.orb.giop import (
    CAN_SEND,
    NEED_DATA,
    TRANSITIONS,
    ConnectionClosed,
    ConnState,
    GIOPConnection,
    LocalProtocolError,
    RemoteProtocolError,
    Role,
    Trigger,
)
from cosnotify.orb.giop_messages import (
    CancelRequest,
    CloseConnection,
    FormatMinor,
    KeyAddr,
    LocateReply,
    LocateRequest,
    LocateStatus,
    MessageError,
    ProfileAddr,
    ReferenceAddr,
    Reply,
    ReplyStatus,
    Request,
    ServiceContext,
)
from cosnotify.orb.ior import make_ior
from tests.strategies import replies, requests

VERSIONS = [(1, 0), (1, 1), (1, 2)]
FEEDS = ["whole", "bytewise", "trailing"]


def feed(conn: GIOPConnection, data: bytes, how: str) -> list[Any]:
    """Feed ``data`` whole, one byte at a time, or followed by the start of another message.

    Returns the events produced (NEED_DATA left out).
    """
    events: list[Any] = []

    def drain() -> None:
        while True:
            event = conn.next_event()
            if event is NEED_DATA:
                return
            events.append(event)
            if isinstance(event, (ConnectionClosed, CloseConnection, MessageError)):
                return

    if how == "bytewise":
        for i in range(len(data)):
            conn.receive_data(data[i:i + 1])
            drain()
    else:
        conn.receive_data(data + (b"GIOP\x01\x02" if how == "trailing" else b""))
        drain()
    return events


def pair() -> tuple[GIOPConnection, GIOPConnection]:
    return GIOPConnection(Role.CLIENT), GIOPConnection(Role.SERVER)


def transfer(sender: GIOPConnection, receiver: GIOPConnection, message: Any, how: str = "whole") -> Any:
    """Send ``message`` from one side; assert the other receives exactly it; return it."""
    events = feed(receiver, sender.send(message), how)
    assert events == [message]
    return events[0]


def request(request_id: int = 1, version: tuple[int, int] = (1, 2), little: bool = True,
            **kwargs: Any) -> Request:
    return Request(request_id, KeyAddr(b"key"), "op", version=version, little_endian=little, **kwargs)


class TestPair:
    @pytest.mark.parametrize("how", FEEDS)
    @pytest.mark.parametrize("version", VERSIONS)
    @pytest.mark.parametrize("little", [True, False])
    def test_request_reply_roundtrip(self, how: str, version: tuple[int, int], little: bool) -> None:
        """A request and its reply arrive unchanged, in every version, order and feeding."""
        client, server = pair()
        contexts = (ServiceContext(1, CodeSetContext(cdr.UTF_8, cdr.UTF_16).encode()),
                    ServiceContext(0x41545401, b"\x01\x02"))
        sent = request(7, version, little, body=b"\x00\x00\x00\x05", service_contexts=contexts,
                       requesting_principal=b"who" if version < (1, 2) else b"")
        got = transfer(client, server, sent, how)
        assert got.codesets() == CodeSetContext(cdr.UTF_8, cdr.UTF_16)
        assert got.object_key == b"key" and got.response_expected
        reply = Reply(7, ReplyStatus.NO_EXCEPTION, b"\x01\x02\x03", (), version, little)
        transfer(server, client, reply, how)
        assert client.outstanding == {} and server.outstanding == {}

    @settings(max_examples=80, deadline=None)
    @given(requests, replies, st.sampled_from(FEEDS))
    def test_generated_messages(self, req: Request, rep: Reply, how: str) -> None:
        """What one side sends the other receives unchanged, for generated requests and replies."""
        client, server = pair()
        transfer(client, server, req, how)
        if req.response_expected:
            status = rep.reply_status if req.version >= (1, 2) else min(rep.reply_status, 3)
            transfer(server, client, attrs.evolve(rep, request_id=req.request_id, version=req.version,
                                                  reply_status=ReplyStatus(status)), how)

    def test_other_messages(self) -> None:
        """LocateRequest/Reply, CancelRequest, CloseConnection and MessageError round-trip."""
        for version in VERSIONS:
            client, server = pair()
            transfer(client, server, LocateRequest(3, KeyAddr(b"k"), version))
            transfer(server, client, LocateReply(3, LocateStatus.OBJECT_HERE, b"", version))
            transfer(client, server, request(4, version))
            transfer(client, server, CancelRequest(4, version))
            transfer(client, server, MessageError(version))
        client, server = pair()
        transfer(server, client, CloseConnection((1, 0)))
        assert client.state is ConnState.CLOSED

    def test_giop12_target_addresses(self) -> None:
        """ProfileAddr and ReferenceAddr travel in GIOP 1.2 and name the right object key."""
        ior = make_ior("IDL:test/T:1.0", "host", 2809, b"the-key")
        client, server = pair()
        for request_id, target in enumerate([ProfileAddr(ior.profiles[0]), ReferenceAddr(0, ior)], 1):
            got = transfer(client, server, Request(request_id, target, "op"))
            assert got.object_key == b"the-key"

    def test_giop10_sends_the_key_of_any_target(self) -> None:
        """Before GIOP 1.2 a profile target is sent as its object key."""
        ior = make_ior("IDL:test/T:1.0", "host", 2809, b"the-key")
        client, server = pair()
        data = client.send(Request(1, ProfileAddr(ior.profiles[0]), "op", version=(1, 0)))
        (got,) = feed(server, data, "whole")
        assert got.target == KeyAddr(b"the-key")

    def test_body_offset_gives_right_alignment(self) -> None:
        """A GIOP 1.0 body marshalled at body_offset() decodes at the received body_offset."""
        for version in VERSIONS:
            client, server = pair()
            shell = Request(1, KeyAddr(b"abc"), "do_it", version=version, little_endian=False)
            codec = cdr.Codec(False)
            encoder = cdr.Encoder(codec, offset=gm.body_offset(shell))
            encoder.write_octet(1)
            encoder.write_double(2.5)
            got = transfer(client, server, attrs.evolve(shell, body=encoder.getvalue()))
            decoder = cdr.Decoder(got.body, codec, offset=got.body_offset)
            assert (decoder.read_octet(), decoder.read_double()) == (1, 2.5)
            if version == (1, 2):
                assert got.body_offset % 8 == 0


class TestReplies:
    @pytest.mark.parametrize("version", VERSIONS)
    @pytest.mark.parametrize("little", [True, False])
    def test_system_exception_reply(self, version: tuple[int, int], little: bool) -> None:
        """A system exception reply carries id, minor and completion status (15.4.3.2)."""
        client, server = pair()
        transfer(client, server, request(5, version, little))
        reply = gm.system_exception_reply(5, CORBA.OBJECT_NOT_EXIST(0x4F4D0002, CORBA.COMPLETED_MAYBE),
                                          version=version, little_endian=little)
        got = transfer(server, client, reply)
        exc = got.system_exception()
        assert isinstance(exc, CORBA.OBJECT_NOT_EXIST)
        assert (exc.minor, exc.completed) == (0x4F4D0002, CORBA.COMPLETED_MAYBE)

    def test_unknown_system_exception_id_becomes_unknown(self) -> None:
        """A system exception id we do not know is reported as CORBA.UNKNOWN."""
        encoder = cdr.Encoder(cdr.Codec(True), offset=24)
        encoder.write_string("IDL:vendor/WEIRD:1.0")
        encoder.write_ulong(3)
        encoder.write_ulong(1)
        reply = Reply(1, ReplyStatus.SYSTEM_EXCEPTION, encoder.getvalue(), body_offset=24)
        assert isinstance(reply.system_exception(), CORBA.UNKNOWN)

    def test_location_forward(self) -> None:
        """LOCATION_FORWARD and LOCATION_FORWARD_PERM replies carry an IOR."""
        target = make_ior("IDL:test/T:1.0", "elsewhere", 1234, b"k")
        for version, permanent in [((1, 0), False), ((1, 2), True)]:
            client, server = pair()
            transfer(client, server, request(9, version))
            got = transfer(server, client, gm.location_forward_reply(9, target, permanent=permanent,
                                                                     version=version))
            assert got.forward_ior() == target
            assert got.reply_status is (ReplyStatus.LOCATION_FORWARD_PERM if permanent
                                        else ReplyStatus.LOCATION_FORWARD)

    def test_giop12_only_statuses_are_rejected_in_giop10(self) -> None:
        """NEEDS_ADDRESSING_MODE in a GIOP 1.0 reply is a protocol error."""
        client, _ = pair()
        client.send(request(1, (1, 0)))
        data = bytearray(gm.encode_message(Reply(1, ReplyStatus.NO_EXCEPTION, version=(1, 0))))
        data[-4:] = struct.pack("<I", 5)
        client.receive_data(bytes(data))
        with pytest.raises(RemoteProtocolError) as info:
            client.next_event()
        assert info.value.minor == FormatMinor.BAD_HEADER


class TestRequestIds:
    def test_replies_may_come_in_any_order(self) -> None:
        """Interleaved calls: replies matched by request id, whatever their order."""
        client, server = pair()
        ids = [client.next_request_id() for _ in range(3)]
        for request_id in ids:
            transfer(client, server, request(request_id))
        assert set(client.outstanding) == set(ids)
        for request_id in reversed(ids):
            transfer(server, client, Reply(request_id))
        assert client.outstanding == {}

    def test_reply_to_unknown_request_is_a_protocol_error(self) -> None:
        """A reply nobody asked for breaks the connection."""
        client = GIOPConnection(Role.CLIENT)
        client.receive_data(gm.encode_message(Reply(42)))
        with pytest.raises(RemoteProtocolError) as info:
            client.next_event()
        assert info.value.minor == FormatMinor.UNKNOWN_REQUEST
        assert client.state is ConnState.ERROR
        with pytest.raises(RemoteProtocolError):  # and keeps saying so
            client.next_event()

    def test_reply_to_cancelled_request_is_dropped(self) -> None:
        """After CancelRequest, a late reply is silently discarded."""
        client, server = pair()
        transfer(client, server, request(1))
        transfer(client, server, CancelRequest(1))
        assert feed(client, server.send(Reply(1)), "whole") == []

    def test_request_id_reuse(self) -> None:
        """A request id still awaiting its reply cannot be reused, on either side."""
        client, server = pair()
        transfer(client, server, request(1))
        with pytest.raises(LocalProtocolError):
            client.send(request(1))
        server.receive_data(gm.encode_message(request(1)))
        with pytest.raises(RemoteProtocolError):
            server.next_event()

    def test_server_must_reply_to_a_received_request_in_its_version(self) -> None:
        """Replying to nothing, or in another GIOP version, is a local error."""
        client, server = pair()
        with pytest.raises(LocalProtocolError):
            server.send(Reply(1))
        transfer(client, server, request(1, (1, 1)))
        with pytest.raises(LocalProtocolError):
            server.send(Reply(1, version=(1, 2)))
        transfer(server, client, Reply(1, version=(1, 1)))

    def test_oneway_requests_are_not_tracked(self) -> None:
        """A request with response_flags 0 expects no reply."""
        client, server = pair()
        transfer(client, server, request(1, response_flags=gm.RESPONSE_NONE))
        assert client.outstanding == {} and server.outstanding == {}

    def test_next_request_id_skips_ids_in_use(self) -> None:
        """Allocated ids are unique among outstanding requests, across wrap-around."""
        client = GIOPConnection(Role.CLIENT, first_request_id=0xFFFFFFFF)
        first = client.next_request_id()
        client.send(request(first))
        client.send(request(0))
        assert (first, client.next_request_id()) == (0xFFFFFFFF, 1)


class TestFragments:
    @pytest.mark.parametrize("version", [(1, 1), (1, 2)])
    @pytest.mark.parametrize("how", FEEDS)
    def test_fragmented_messages_are_reassembled(self, version: tuple[int, int], how: str) -> None:
        """A request and reply sent in 64-octet fragments arrive whole (15.4.9)."""
        client = GIOPConnection(Role.CLIENT, fragment_size=64)
        server = GIOPConnection(Role.SERVER, fragment_size=64)
        body = bytes(range(256)) * 2
        sent = request(3, version, body=body)
        data = client.send(sent)
        assert data.count(b"GIOP") > 5
        assert feed(server, data, how) == [sent]
        assert feed(client, server.send(Reply(3, body=body, version=version)), how)[0].body == body

    def test_giop12_fragments_of_two_messages_interleave(self) -> None:
        """GIOP 1.2 fragments carry the request id, so two requests may interleave."""
        first = gm.fragment_message(gm.encode_message(request(1, body=bytes(200))), 64)
        second = gm.fragment_message(gm.encode_message(request(2, body=b"\x07" * 200)), 64)
        _, server = pair()
        mixed = [piece for both in zip(first, second) for piece in both]
        mixed += first[len(second):] + second[len(first):]
        events = feed(server, b"".join(mixed), "whole")
        assert [e.request_id for e in events] == [1, 2]
        assert events[1].body == b"\x07" * 200

    def test_cancel_drops_a_partly_received_request(self) -> None:
        """CancelRequest for a request still arriving in fragments discards what came (15.4.9)."""
        pieces = gm.fragment_message(gm.encode_message(request(1, body=bytes(200))), 64)
        _, server = pair()
        assert feed(server, b"".join(pieces[:2]) + gm.encode_message(CancelRequest(1)), "whole") \
            == [CancelRequest(1)]
        server.receive_data(pieces[2])
        with pytest.raises(RemoteProtocolError):
            server.next_event()

    def test_fragment_pieces_keep_8_octet_alignment(self) -> None:
        """Every piece but the last is a multiple of 8 octets."""
        pieces = gm.fragment_message(gm.encode_message(request(1, body=bytes(300))), 100)
        assert all(len(p) % 8 == 0 for p in pieces[:-1])

    def test_orphan_fragment_and_unfragmentable_types(self) -> None:
        """A Fragment continuing nothing, or a fragmented CancelRequest, is an error."""
        server = GIOPConnection(Role.SERVER)
        pieces = gm.fragment_message(gm.encode_message(request(1, body=bytes(200))), 64)
        server.receive_data(pieces[1])
        with pytest.raises(RemoteProtocolError) as info:
            server.next_event()
        assert info.value.minor == FormatMinor.BAD_FRAGMENT
        _, server = pair()
        data = bytearray(gm.encode_message(CancelRequest(1)))
        data[6] |= 2
        server.receive_data(bytes(data))
        with pytest.raises(RemoteProtocolError):
            server.next_event()

    def test_reassembly_respects_the_size_limit(self) -> None:
        """Fragments adding up past max_message_size are refused."""
        server = GIOPConnection(Role.SERVER, max_message_size=300)
        pieces = gm.fragment_message(gm.encode_message(request(1, body=bytes(400))), 128)
        server.receive_data(b"".join(pieces))
        with pytest.raises(RemoteProtocolError) as info:
            server.next_event()
        assert info.value.minor == FormatMinor.TOO_LARGE


class TestHeaderChecks:
    def error(self, data: bytes, eof: bool = False, role: Role = Role.SERVER, **kwargs: Any) -> int:
        conn = GIOPConnection(role, **kwargs)
        conn.receive_data(data)
        if eof:
            conn.receive_data(b"")
        with pytest.raises(RemoteProtocolError) as info:
            conn.next_event()
        assert conn.state is ConnState.ERROR
        return info.value.minor

    def test_bad_magic_version_and_type(self) -> None:
        """Magic, version and message type are checked from the header alone."""
        good = gm.encode_message(request())
        assert self.error(b"GIOX" + good[4:12]) == FormatMinor.BAD_MAGIC
        assert self.error(good[:5] + b"\x03" + good[6:12]) == FormatMinor.BAD_VERSION
        assert self.error(good[:7] + b"\x08" + good[8:12]) == FormatMinor.BAD_TYPE

    def test_size_limit_is_checked_before_the_body_arrives(self) -> None:
        """A header announcing more than max_message_size fails before any body is buffered."""
        header = b"GIOP\x01\x02\x01\x00" + struct.pack("<I", 2**20)
        assert self.error(header, max_message_size=1024) == FormatMinor.TOO_LARGE

    def test_truncation_at_end_of_stream(self) -> None:
        """End of stream inside a header or a body is a protocol error; between messages it is not."""
        good = gm.encode_message(request())
        assert self.error(good[:5], eof=True) == FormatMinor.TRUNCATED
        assert self.error(good[:-1], eof=True) == FormatMinor.TRUNCATED
        conn = GIOPConnection(Role.SERVER)
        assert feed(conn, good, "whole")[0] == request()
        conn.receive_data(b"")
        assert conn.next_event() == ConnectionClosed()
        assert conn.state is ConnState.CLOSED

    def test_role_decides_what_may_arrive(self) -> None:
        """A server receiving a Reply, or a client a Request, is a protocol error."""
        assert self.error(gm.encode_message(Reply(1))) == FormatMinor.UNEXPECTED
        assert self.error(gm.encode_message(request()), role=Role.CLIENT) == FormatMinor.UNEXPECTED

    def test_error_carries_a_comm_failure(self) -> None:
        """The protocol error maps to COMM_FAILURE for pending calls."""
        conn = GIOPConnection(Role.CLIENT)
        conn.receive_data(b"JUNKJUNKJUNK")
        with pytest.raises(RemoteProtocolError) as info:
            conn.next_event()
        exc = info.value.to_system()
        assert isinstance(exc, CORBA.COMM_FAILURE) and exc.minor == FormatMinor.BAD_MAGIC


class TestStateTable:
    def test_table_is_data(self) -> None:
        """Transitions and sendable messages are tables, keyed by state and role."""
        assert TRANSITIONS[(ConnState.OPEN, Trigger.PROTOCOL_ERROR)] is ConnState.ERROR
        assert CAN_SEND[(Role.SERVER, ConnState.ERROR)] == frozenset({MessageError})

    def test_after_a_protocol_error_only_message_error_may_be_sent(self) -> None:
        """In ERROR, requests are refused and MessageError closes the connection."""
        client = GIOPConnection(Role.CLIENT)
        client.receive_data(b"GIOP\x09\x09\x00\x00\x00\x00\x00\x00")
        with pytest.raises(RemoteProtocolError):
            client.next_event()
        with pytest.raises(LocalProtocolError):
            client.send(request())
        assert client.send(MessageError()).startswith(b"GIOP\x01\x02")
        assert client.state is ConnState.CLOSED

    def test_close_connection_closes_both_sides(self) -> None:
        """CloseConnection: the sender and the receiver both end up CLOSED, and sending stops."""
        client, server = pair()
        transfer(client, server, request(1))
        transfer(server, client, CloseConnection())
        assert server.state is client.state is ConnState.CLOSED
        assert client.outstanding == {1: (1, 2)}  # may be retried elsewhere
        with pytest.raises(LocalProtocolError):
            client.send(request(2))
        assert client.next_event() == ConnectionClosed()

    def test_roles_limit_what_may_be_sent(self) -> None:
        """A client cannot send replies; a server cannot send requests."""
        client, server = pair()
        with pytest.raises(LocalProtocolError):
            client.send(Reply(1))
        with pytest.raises(LocalProtocolError):
            server.send(request())

    def test_received_message_error_closes(self) -> None:
        """A MessageError from the peer is delivered and closes the connection."""
        client, server = pair()
        transfer(server, client, MessageError())
        assert client.state is ConnState.CLOSED


def _valid_streams() -> Iterator[bytes]:
    yield gm.encode_message(request(1, body=b"abcdefgh"))
    yield gm.encode_message(request(2, (1, 0), False, service_contexts=(ServiceContext(1, b"\x00" * 9),)))
    yield gm.encode_message(LocateRequest(3, KeyAddr(b"k"), (1, 1)))
    yield b"".join(gm.fragment_message(gm.encode_message(request(4, body=bytes(100))), 48))
    yield gm.encode_message(CancelRequest(5))


class TestFuzz:
    @settings(max_examples=300, deadline=None)
    @given(st.binary(max_size=80), st.sampled_from([Role.CLIENT, Role.SERVER]), st.booleans())
    def test_random_bytes_raise_only_the_protocol_error(self, data: bytes, role: Role, eof: bool) -> None:
        """Arbitrary octets produce events or RemoteProtocolError, never another exception."""
        conn = GIOPConnection(role)
        conn.receive_data(b"GIOP" + data if data[:1] == b"\x01" else data)
        if eof:
            conn.receive_data(b"")
        try:
            for _ in range(10):
                if conn.next_event() in (NEED_DATA, ConnectionClosed()):
                    break
        except RemoteProtocolError:
            assert conn.state is ConnState.ERROR

    @settings(max_examples=300, deadline=None)
    @given(st.sampled_from(list(_valid_streams())), st.data())
    def test_mutated_messages_raise_only_the_protocol_error(self, message: bytes, data: st.DataObject) -> None:
        """Valid messages with octets changed or cut off never raise anything but the protocol error."""
        mutated = bytearray(message)
        for _ in range(data.draw(st.integers(1, 4))):
            index = data.draw(st.integers(0, len(mutated) - 1))
            mutated[index] = data.draw(st.integers(0, 255))
        mutated = mutated[:data.draw(st.integers(0, len(mutated)))]
        conn = GIOPConnection(Role.SERVER)
        conn.receive_data(bytes(mutated))
        conn.receive_data(b"")
        try:
            for _ in range(10):
                event = conn.next_event()
                if isinstance(event, Request):
                    event.codesets() if event.service_context(1) is None else None
                if event in (NEED_DATA, ConnectionClosed()):
                    break
        except RemoteProtocolError:
            pass
