"""A query's answer, each retained event encoded once (cosnotify/protocols/eventer/replies.py),
the array put together around encoded events (codec.query_res_encoded), and a stored
event's record decoded only when read (history/query.py, Retained.stored)."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable
from typing import Any

import hat.event.common as hat_common
import pytest
from hat.event.eventer import client as hat_client
from hypothesis import given, settings
from hypothesis import strategies as st

from cosnotify.history.payload import payload_of
from cosnotify.history.query import EventId as StoreId
from cosnotify.history.query import Retained
from cosnotify.history.records import retain
from cosnotify.protocols.eventer import replies
from cosnotify.protocols.eventer.codec import (
    ChatterConnection,
    Event,
    EventId,
    Msg,
    Payload,
    PayloadKind,
    RegisterEvent,
    Timestamp,
    encode_event,
)
from cosnotify.protocols.eventer.mapping import event_of_retained, to_structured
from cosnotify.protocols.eventer.replies import EncodedEvents
from tests.protocols.eventer.conftest import SERVER_ID, Served, run

REQUEST = Msg(1, 1, True, True, False, "HatEventer", "MsgQueryReq", None)

_INTEGER = st.integers(0, 2**63 - 1)
_PAYLOADS = st.one_of(
    st.none(),
    st.builds(Payload, st.just(PayloadKind.BINARY), st.binary(max_size=40)),
    st.builds(Payload, st.just(PayloadKind.JSON),
              st.dictionaries(st.text(max_size=4), st.integers(), max_size=3).map(json.dumps)),
    st.builds(Payload, st.just(PayloadKind.SBS), st.binary(max_size=20),
              st.one_of(st.none(), st.text(max_size=5)), st.text(max_size=5)))
_STAMPS = st.builds(Timestamp, _INTEGER, st.integers(0, 999_999))
EVENTS = st.builds(Event, st.builds(EventId, _INTEGER, _INTEGER, _INTEGER),
                   st.lists(st.text(max_size=8), min_size=1, max_size=4).map(tuple),
                   _STAMPS, st.one_of(st.none(), _STAMPS), _PAYLOADS)


def _body(frame: bytes) -> dict[str, Any]:
    result: dict[str, Any] = hat_common.sbs_repo.decode("Hat", "Msg", frame[1 + frame[0]:])
    return result


class TestTheArray:
    @settings(max_examples=150, deadline=None)
    @given(st.lists(EVENTS, max_size=5))
    def test_an_answer_of_encoded_events_is_the_same_bytes(self, events: list[Event]) -> None:
        """query_res_encoded of each event's encoding is, byte for byte, query_res of the
        events (hat-sbs encoding the whole array), and hat-event reads it back as them."""
        whole = ChatterConnection().query_res(REQUEST, events)
        parts = ChatterConnection().query_res_encoded(REQUEST, [encode_event(e)
                                                                for e in events])
        assert parts == whole
        data = _body(parts)["data"]
        read = hat_common.sbs_repo.decode("HatEventer", "MsgQueryRes", data["data"])
        assert [hat_common.event_from_sbs(e).event_id.instance for e in read] == [
            e.id.instance for e in events]

    @pytest.mark.parametrize("count", [0, 1, 63, 64, 65, 127, 128, 8191, 8192, 8193])
    def test_counts_across_the_integer_encodings_lengths(self, count: int) -> None:
        """The array's count is an SBS Integer, one byte up to 63 and longer past it
        (hat-sbs's own encoding, checked at each length's edge)."""
        event = Event(EventId(1, 2, 3), ("a", "b"), Timestamp(4, 5))
        events = [event] * count
        assert ChatterConnection().query_res_encoded(REQUEST, [encode_event(event)] * count) \
            == ChatterConnection().query_res(REQUEST, events)


def _structured(n: int) -> Any:
    payload = Payload(PayloadKind.BINARY, bytes([n % 256]) * (n % 7))
    return to_structured(RegisterEvent(("a", "b", str(n)), None, payload),
                         EventId(SERVER_ID, 1, n), Timestamp(1_700_000_000 + n, n))


class Decodes:
    """Retained.stored's decode for tests: the structured events by record, counted."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, record: bytes) -> tuple[Any, Any]:
        self.calls += 1
        structured = _structured(int(record))
        return payload_of(structured.remainder_of_body), structured


def stored(n: int, decode: Callable[[bytes], tuple[Any, Any]]) -> Retained:
    return Retained.stored(StoreId(0, 5, n), ("a", "b", str(n)), 1_700_000_000.0 + n, None,
                           str(n).encode(), decode)


def expected(n: int) -> bytes:
    """Event n encoded from the event itself, with nothing kept."""
    return encode_event(event_of_retained(retain(_structured(n), StoreId(0, 5, n),
                                                 1_700_000_000.0 + n), SERVER_ID))


class TestStoredRecords:
    def test_a_record_is_decoded_once_and_only_when_read(self) -> None:
        decode = Decodes()
        event = stored(3, decode)
        assert (event.id.instance, event.type, event.source_timestamp) == (3, ("a", "b", "3"),
                                                                           None)
        assert decode.calls == 0
        assert event.event.header.fixed_header.event_type.type_name == "b"
        assert event.payload.value() == b"\x03" * 3
        assert decode.calls == 1

    def test_a_record_that_fails_to_decode_fails_each_read(self) -> None:
        def broken(record: bytes) -> tuple[Any, Any]:
            raise ValueError("event record version 9 is not 2")

        event = Retained.stored(StoreId(0, 1, 1), ("a", "b"), 0.0, None, b"x", broken)
        for read in (lambda: event.event, lambda: event.event, lambda: event.payload):
            with pytest.raises(ValueError, match="version 9"):
                read()

    def test_threads_reading_one_event_decode_it_once(self) -> None:
        """Two threads read an event whose decode is under way: one decode, and both
        get its Structured Event (review 96: the second failed an assertion)."""
        entered, release = threading.Event(), threading.Event()
        calls = []

        def slow(record: bytes) -> tuple[Any, Any]:
            calls.append(record)
            entered.set()
            assert release.wait(30)
            return None, ("event", len(calls))

        event = Retained.stored(StoreId(0, 1, 1), ("a", "b"), 0.0, None, b"r", slow)
        got: list[Any] = []
        first = threading.Thread(target=lambda: got.append(event.event))
        first.start()
        assert entered.wait(30)
        second = threading.Thread(target=lambda: got.append(event.event))
        second.start()
        release.set()
        first.join(30)
        second.join(30)
        assert calls == [b"r"] and got == [("event", 1), ("event", 1)]

    def test_a_copy_of_an_unread_event_reads_as_it(self) -> None:
        """An unread event copied (or pickled) decodes as the original (review 96: its
        marker of 'unread' was an object a copy did not keep)."""
        decode = Decodes()
        copied = copy.deepcopy(stored(4, decode))
        assert copied.payload.value() == b"\x04" * 4
        assert "record" not in repr(copied)

    def test_an_event_given_whole_is_as_given(self) -> None:
        structured = _structured(2)
        event = Retained(StoreId(0, 1, 1), ("a", "b", "2"), 1.0, 2.0, None, structured)
        assert event.payload is None and event.event is structured


class TestEncodedEvents:
    def test_an_event_answered_again_is_not_decoded_again(self) -> None:
        decode = Decodes()
        encoded = EncodedEvents(SERVER_ID)
        first, cut = encoded.encode([stored(n, decode) for n in range(5)])
        assert first == [expected(n) for n in range(5)] and not cut
        assert (decode.calls, encoded.hits, encoded.misses) == (5, 0, 5)
        again, _ = encoded.encode([stored(n, decode) for n in (4, 2, 7)])
        assert again == [expected(n) for n in (4, 2, 7)]
        assert (decode.calls, encoded.hits, encoded.misses) == (6, 2, 6)

    def test_the_least_recently_used_go_first_past_the_count(self) -> None:
        decode = Decodes()
        encoded = EncodedEvents(SERVER_ID, max_events=3)
        encoded.encode([stored(n, decode) for n in (1, 2, 3)])
        encoded.encode([stored(1, decode)])       # used again: 2 is now the oldest
        encoded.encode([stored(4, decode)])       # 2 goes
        assert len(encoded) == 3
        calls = decode.calls
        assert encoded.encode([stored(n, decode) for n in (1, 3, 4)])[0] == [
            expected(n) for n in (1, 3, 4)]
        assert decode.calls == calls
        encoded.encode([stored(2, decode)])
        assert decode.calls == calls + 1

    def test_bytes_are_bounded_and_a_bigger_event_is_answered_not_kept(self) -> None:
        decode = Decodes()
        sizes = {n: len(expected(n)) for n in range(12)}
        bound = sizes[0] + sizes[1] + sizes[2]
        encoded = EncodedEvents(SERVER_ID, max_bytes=bound)
        answer, _ = encoded.encode([stored(n, decode) for n in range(12)])
        assert answer == [expected(n) for n in range(12)]
        assert 0 < encoded.size <= bound
        assert encoded.size == sum(sizes[n] for n in range(12 - len(encoded), 12))
        tiny = EncodedEvents(SERVER_ID, max_bytes=min(sizes.values()) - 1)
        assert tiny.encode([stored(5, decode)])[0] == [expected(5)]
        assert (len(tiny), tiny.size) == (0, 0)

    def test_nothing_past_the_byte_bound_is_encoded_or_kept(self) -> None:
        """An answer stops at the event whose bytes reach the bound (as the reader's
        bound: that one is sent), says it was cut, and neither decodes nor keeps the
        events past it; an event alone over the bound is still answered."""
        decode = Decodes()
        encoded = EncodedEvents(SERVER_ID)
        sizes = [len(expected(n)) for n in range(10)]
        answer, cut = encoded.encode([stored(n, decode) for n in range(10)],
                                     max_bytes=sizes[0] + sizes[1] + 1)
        assert answer == [expected(n) for n in range(3)] and cut
        assert (decode.calls, len(encoded)) == (3, 3)
        answer, cut = encoded.encode([stored(n, decode) for n in range(3)],
                                     max_bytes=sum(sizes[:3]) + 1)
        assert answer == [expected(n) for n in range(3)] and not cut
        assert encoded.encode([stored(9, decode)], max_bytes=1) == ([expected(9)], False)

    def test_an_event_sbs_cannot_carry_is_left_out_of_the_answer_only(
            self, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
        real = replies.encode_event

        def encode(event: Event) -> bytes:
            if event.type[2] == "1":
                raise OverflowError("int too big to convert")
            return real(event)

        monkeypatch.setattr(replies, "encode_event", encode)
        decode = Decodes()
        encoded = EncodedEvents(SERVER_ID)
        assert encoded.encode([stored(n, decode) for n in range(3)])[0] == [expected(0),
                                                                            expected(2)]
        assert "SBS cannot carry it" in caplog.text
        assert (len(encoded), encoded.misses) == (2, 3)

    def test_answers_on_many_threads_agree_and_stay_bounded(self) -> None:
        """Answers of overlapping events on four threads, with room for five events:
        each answer is its events' bytes, and what is kept is counted right."""
        decode = Decodes()
        encoded = EncodedEvents(SERVER_ID, max_events=5)
        reference = {n: expected(n) for n in range(12)}
        wrong: list[Any] = []
        start = threading.Barrier(4)

        def answer(offset: int) -> None:
            start.wait()
            for round_ in range(200):
                numbers = [(offset + round_ + k) % 12 for k in range(4)]
                got, _ = encoded.encode([stored(n, decode) for n in numbers])
                if got != [reference[n] for n in numbers]:
                    wrong.append((numbers, got))

        threads = [threading.Thread(target=answer, args=(k,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert wrong == []
        assert len(encoded) <= 5
        assert encoded.size == sum(len(v) for v in encoded._kept.values())
        assert encoded.hits + encoded.misses == 4 * 200 * 4


class TestOverTheWire:
    def test_a_query_asked_again_is_answered_from_the_encoded_events(
            self, served: Served) -> None:
        """hat-event's client asks the same query twice: the same events, and the second
        answer's events were all kept from the first."""
        async def go() -> tuple[list[Any], list[Any]]:
            client = await hat_client.connect(served.address)
            await client.register_with_response([
                hat_common.RegisterEvent(("w", "x", str(n)), None, hat_common.EventPayload(
                    hat_common.EventPayloadType.JSON, {"n": n})) for n in range(20)])
            query = hat_common.QueryData(event_types=[("w", "*")], max_results=15)
            first = await client.query(query)
            second = await client.query(query)
            await client.async_close()
            return first, second

        encoded = served.front_end.service.encoded  # type: ignore[attr-defined]
        first, second = run(go)
        assert len(first) == 15 and second == first
        assert [e.payload.data["n"] for e in first] == list(range(19, 4, -1))
        assert (encoded.misses, encoded.hits) == (15, 15)
