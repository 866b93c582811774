"""The Eventer codec without sockets (cosnotify/protocols/eventer/codec.py, schema.py):
hat-chatter's framing of the HatEventer messages of the Eventer seed's "Chatter messages"."""

from __future__ import annotations

import time
from typing import Any

import hat.event.common as hat_common
import pytest
from hat import chatter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cosnotify.protocols.eventer import schema
from cosnotify.protocols.eventer.codec import (
    ChatterConnection,
    Event,
    EventerProtocolError,
    EventId,
    Msg,
    Order,
    OrderBy,
    Payload,
    PayloadKind,
    QueryData,
    RegisterEvent,
    Timestamp,
)


def hat_frame(module: str, name: str, data: Any, *, msg_id: int = 1, first: int | None = None,
              owner: bool = True, last: bool = True) -> bytes:
    """A frame as hat-chatter 0.5.11 writes it (``_TcpTransport.write``), with hat-event
    0.8.17's repository (the peer's bytes, not ours)."""
    repo = hat_common.sbs_repo
    body = repo.encode("Hat", "Msg", {
        "id": msg_id, "first": msg_id if first is None else first, "owner": owner,
        "token": True, "last": last,
        "data": {"module": ("value", module), "type": name,
                 "data": repo.encode(module, name, data)}})
    size = chatter._uint_to_bebytes(len(body))
    return bytes([len(size)]) + size + body


REGISTER = hat_frame("HatEventer", "MsgRegisterReq", [hat_common.register_event_to_sbs(
    hat_common.RegisterEvent(("a", "b", "c"), hat_common.Timestamp(1_700_000_000, 5),
                             hat_common.EventPayload(hat_common.EventPayloadType.JSON,
                                                     {"k": [1, 2]})))], last=False)
SUBSCRIBE = hat_frame("HatEventer", "MsgSubscribe", [["a", "?"], ["b", "*"]], msg_id=2)
QUERY = hat_frame("HatEventer", "MsgQueryReq", hat_common.query_to_sbs(hat_common.QueryData(
    server_id=3, event_ids=[hat_common.EventId(3, 4, 5)], event_types=[("x", "*")],
    t_from=hat_common.Timestamp(1, 2), t_to=hat_common.Timestamp(3, 4),
    source_t_from=hat_common.Timestamp(5, 6), source_t_to=hat_common.Timestamp(7, 8),
    payload=hat_common.EventPayload(hat_common.EventPayloadType.SBS,
                                    hat_common.SbsData("M", "T", b"\x00\x01")),
    order=hat_common.Order.ASCENDING, order_by=hat_common.OrderBy.SOURCE_TIMESTAMP,
    unique_type=True, max_results=9)), msg_id=3, last=False)
PING = hat_frame("HatPing", "MsgPing", None, msg_id=4, last=False)

EXPECTED_QUERY = QueryData(
    server_id=3, event_ids=(EventId(3, 4, 5),), event_types=(("x", "*"),),
    t_from=Timestamp(1, 2), t_to=Timestamp(3, 4), source_t_from=Timestamp(5, 6),
    source_t_to=Timestamp(7, 8), payload=Payload(PayloadKind.SBS, b"\x00\x01", "M", "T"),
    order=Order.ASCENDING, order_by=OrderBy.SOURCE_TIMESTAMP, unique_type=True,
    max_results=9)


def read_all(data: bytes, chunk: int | None = None) -> list[Msg]:
    codec = ChatterConnection()
    found: list[Msg] = []
    step = chunk or len(data) or 1
    for at in range(0, len(data), step):
        codec.receive_data(data[at:at + step])
        while (msg := codec.next_message()) is not None:
            found.append(msg)
    return found


class TestSchema:
    def test_the_module_is_hat_events_own(self) -> None:
        """The HatEventer text here defines what hat-event 0.8.17's sbs_repo.json does
        (the seed's "Chatter messages")."""
        ours = [m for m in schema.REPOSITORY.to_json() if m["name"] == "HatEventer"]
        theirs = [m for m in hat_common.sbs_repo.to_json() if m["name"] == "HatEventer"]
        assert ours == theirs

    def test_a_huge_array_count_is_refused_at_once(self) -> None:
        """A 5-byte count of 2**31 in a tiny frame is refused before hat-sbs allocates it
        (its C decoder takes seconds over such a count)."""
        count = bytes([0x08, 0x00, 0x00, 0x00, 0x80])  # 2**31, 7 bits a byte, last flagged
        started = time.perf_counter()
        with pytest.raises(schema.SchemaError, match="array of 2147483648"):
            schema.check("HatEventer", "MsgSubscribe", count + b"\x80\x80")
        assert time.perf_counter() - started < 0.1

    def test_an_overlong_integer_is_refused(self) -> None:
        """An integer past 10 bytes is refused (no 64-bit value needs more)."""
        with pytest.raises(schema.SchemaError, match="longer than 10"):
            schema.check("HatEventer", "Timestamp", b"\x01" * 11 + b"\x81\x81")

    def test_a_string_past_the_end_is_refused(self) -> None:
        """A length past the bytes left is refused."""
        with pytest.raises(schema.SchemaError, match="past the end"):
            schema.check("HatEventer", "EventType", b"\x81\x85ab")


class TestReader:
    @pytest.mark.parametrize("chunk", [None, 1])
    def test_each_client_message_whole_and_byte_by_byte(self, chunk: int | None) -> None:
        """Frames from hat-event's peer decode alike whole and one byte at a time."""
        found = read_all(REGISTER + SUBSCRIBE + QUERY + PING, chunk)
        assert [(m.module, m.type) for m in found] == [
            ("HatEventer", "MsgRegisterReq"), ("HatEventer", "MsgSubscribe"),
            ("HatEventer", "MsgQueryReq"), ("HatPing", "MsgPing")]
        register, subscribe, query, ping = found
        assert register.value == (RegisterEvent(
            ("a", "b", "c"), Timestamp(1_700_000_000, 5),
            Payload(PayloadKind.JSON, '{"k": [1, 2]}')),)
        assert (register.id, register.first, register.owner, register.last) == (1, 1, True,
                                                                                 False)
        assert subscribe.value == (("a", "?"), ("b", "*"))
        assert query.value == EXPECTED_QUERY
        assert ping.value is None and not ping.last

    def test_trailing_bytes_wait_for_the_rest(self) -> None:
        """Bytes after a whole frame are kept for the next one, not read as a message."""
        codec = ChatterConnection()
        codec.receive_data(SUBSCRIBE + PING[:3])
        assert codec.next_message() is not None
        assert codec.next_message() is None and codec.pending
        codec.receive_data(PING[3:])
        msg = codec.next_message()
        assert msg is not None and msg.type == "MsgPing" and not codec.pending

    @pytest.mark.parametrize(("data", "reason"), [
        (b"\x00", "a length of 0 bytes"),
        (b"\x05\x00\x00\x00\x00\x01", "a length of 5 bytes"),
        (b"\x01\x00", "a frame of 0 bytes"),
        (b"\x04\x7f\xff\xff\xff", "a frame of 2147483647 bytes"),
        (b"\x01\x03\xff\xff\xff", "in Hat.Msg"),
    ])
    def test_malformed_framing_is_the_codecs_error(self, data: bytes, reason: str) -> None:
        """Bad length bytes, an oversize or empty frame, garbage SBS: EventerProtocolError."""
        codec = ChatterConnection(max_frame=1 << 20)
        codec.receive_data(data)
        with pytest.raises(EventerProtocolError, match=reason) as raised:
            codec.next_message()
        assert raised.value.offset == 0

    def test_a_server_message_from_a_client_is_refused(self) -> None:
        """MsgNotify goes server to client only (the seed's table): from a client it is
        an error, as is a type the module lacks."""
        notify = hat_frame("HatEventer", "MsgNotify", [])
        for frame, name in ((notify, "MsgNotify"),
                            (hat_frame("HatPing", "MsgPong", None), None)):
            codec = ChatterConnection()
            codec.receive_data(frame)
            if name is None:
                assert codec.next_message() is not None  # a pong is allowed
                continue
            with pytest.raises(EventerProtocolError, match="may not send HatEventer.MsgNotify"):
                codec.next_message()

    def test_invalid_utf8_in_a_type_is_the_codecs_error(self) -> None:
        """A type segment that is not UTF-8 is refused by the codec."""
        inner = b"\x81\x81\x82\xff\xfe"  # one EventType of one 2-byte string, not UTF-8
        body = hat_common.sbs_repo.encode("Hat", "Msg", {
            "id": 1, "first": 1, "owner": True, "token": True, "last": True,
            "data": {"module": ("value", "HatEventer"), "type": "MsgSubscribe",
                     "data": inner}})
        codec = ChatterConnection()
        codec.receive_data(bytes([1, len(body)]) + body)
        with pytest.raises(EventerProtocolError):
            codec.next_message()


class TestWriter:
    def test_replies_are_read_by_hat_event_as_sent(self) -> None:
        """MsgRegisterRes, MsgQueryRes, MsgNotify and MsgPong decode with hat-event's own
        repository into what was meant, in the conversation of the request."""
        codec = ChatterConnection()
        request = read_all(REGISTER)[0]
        event = Event(EventId(7, 8, 1), ("a", "b", "c"), Timestamp(10, 20), None,
                      Payload(PayloadKind.BINARY, b"\x00\xff"))
        frames = [codec.register_res(request, [event, None]), codec.query_res(request, [event]),
                  codec.notify([event]), codec.pong(request)]
        repo = hat_common.sbs_repo
        decoded = []
        for frame in frames:
            size = frame[0]
            decoded.append(repo.decode("Hat", "Msg", frame[1 + size:]))
        assert [d["id"] for d in decoded] == [1, 2, 3, 4]
        assert [(d["first"], d["owner"]) for d in decoded] == [(1, False), (1, False),
                                                               (3, True), (1, False)]
        res = repo.decode("HatEventer", "MsgRegisterRes", decoded[0]["data"]["data"])
        hat_event = hat_common.event_from_sbs(res[0][1])
        assert res[1] == ("failure", None)
        assert hat_event == hat_common.Event(
            hat_common.EventId(7, 8, 1), ("a", "b", "c"), hat_common.Timestamp(10, 20), None,
            hat_common.EventPayload(hat_common.EventPayloadType.BINARY, b"\x00\xff"))
        assert decoded[3]["data"]["type"] == "MsgPong"


FRAMES = [REGISTER, SUBSCRIBE, QUERY, PING]


def _feed(data: bytes) -> None:
    codec = ChatterConnection(max_frame=1 << 16)
    codec.receive_data(data)
    try:
        while codec.next_message() is not None:
            pass
    except EventerProtocolError:
        pass


class TestFuzz:
    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.binary(max_size=512))
    def test_random_bytes_raise_only_the_codecs_error(self, data: bytes) -> None:
        """Random bytes decode or raise EventerProtocolError, nothing else."""
        _feed(data)

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.sampled_from(FRAMES), st.lists(st.tuples(st.integers(0, 10_000),
                                                       st.integers(0, 255)), max_size=8))
    def test_mutated_frames_raise_only_the_codecs_error(
            self, frame: bytes, edits: list[tuple[int, int]]) -> None:
        """Real frames with bytes changed decode or raise EventerProtocolError."""
        data = bytearray(frame)
        for at, value in edits:
            data[at % len(data)] = value
        _feed(bytes(data))


class TestGeneratedCheck:
    @settings(max_examples=200, deadline=None)
    @given(st.sampled_from([("HatEventer", "MsgRegisterReq"), ("HatEventer", "MsgQueryReq"),
                            ("HatEventer", "MsgSubscribe"), ("Hat", "Msg")]),
           st.binary(max_size=64))
    def test_the_generated_check_agrees_with_the_closures(self, ref: tuple[str, str],
                                                          data: bytes) -> None:
        """The unrolled check and the closure walker accept and refuse the same bytes."""
        from hat.sbs import common as sbs_types

        def outcome(walker: Any) -> Any:
            try:
                return walker(data, 0)
            except (schema.SchemaError, IndexError):
                return "refused"

        target = sbs_types.Ref(*ref)
        assert outcome(schema._generated(target)) == outcome(schema._compile(target, {}))

    def test_real_messages_pass_the_check(self) -> None:
        """Each frame hat-event's peer sends passes the check of its message."""
        for frame in FRAMES:
            size = frame[0]
            body = hat_common.sbs_repo.decode("Hat", "Msg", frame[1 + size:])
            schema.check("Hat", "Msg", frame[1 + size:])
            schema.check(body["data"]["module"][1], body["data"]["type"], body["data"]["data"])
