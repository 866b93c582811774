"""A retained event's type path and source timestamp read back from its stored row
(reader.py takes them from the row; the writer took them from the event): they are
what the event itself gives (records.retain), for every store and kind of event, and
the growing pages of a scan end as a page of PAGE rows did (docs/history.md)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import TimeBase

from cosnotify.channel.clock import seconds_to_timet
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.history import reader
from cosnotify.history.records import retain as from_event
from cosnotify.store import MemoryStore
from tests.history.test_channel import event, retain, supplier

_SEQ_STRING = CORBA.TypeCode("IDL:omg.org/CORBA/StringSeq:1.0")
_SEQ_LONG = CORBA.TypeCode("IDL:omg.org/CORBA/LongSeq:1.0")


def _odd(name: str, *header: Any) -> Any:
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("D", name), name), list(header)),
        [N.Property("n", CORBA.Any(CORBA.TC_long, 0))], CORBA.Any(CORBA.TC_null, None))


def _prop(name: str, typecode: Any, value: Any) -> Any:
    return N.Property(name, CORBA.Any(typecode, value))


def odd_events() -> list[Any]:
    """Structured events whose Subtype and SourceTimestamp are well formed, aliased,
    malformed or repeated (types.py: Subtype a sequence<string>; records.py: UtcT/TimeT)."""
    utc = TimeBase.UtcT(seconds_to_timet(1_234.5), 0, 0, 0)
    return [
        _odd("subtype", _prop("Subtype", _SEQ_STRING, ["a", "b"])),
        _odd("subtype-string", _prop("Subtype", CORBA.TC_string, "a")),
        _odd("subtype-longs", _prop("Subtype", _SEQ_LONG, [1, 2])),
        _odd("subtype-any", _prop("Subtype", CORBA.TC_any, CORBA.Any(CORBA.TC_string, "x"))),
        _odd("subtype-twice", _prop("Subtype", _SEQ_STRING, ["first"]),
             _prop("Subtype", _SEQ_STRING, ["second"])),
        _odd("subtype-empty", _prop("Subtype", _SEQ_STRING, [])),
        _odd("utc", _prop("SourceTimestamp", TimeBase._tc_UtcT, utc)),
        _odd("timet", _prop("SourceTimestamp", TimeBase._tc_TimeT, seconds_to_timet(99.25))),
        _odd("source-string", _prop("SourceTimestamp", CORBA.TC_string, "yesterday")),
        _odd("source-twice", _prop("SourceTimestamp", CORBA.TC_long, 5),
             _prop("SourceTimestamp", TimeBase._tc_UtcT, utc)),
        _odd("both", _prop("Priority", CORBA.TC_short, 3),
             _prop("Subtype", _SEQ_STRING, ["x"]),
             _prop("SourceTimestamp", TimeBase._tc_TimeT, seconds_to_timet(7.0))),
        _odd("unicode", _prop("Subtype", _SEQ_STRING, ["caf\u00e9", ""])),
    ]


def supply_everything(channel: Any) -> int:
    """Odd structured events, Anys (one holding a Structured Event, unwrapped by the
    channel, section 2.1.4); returns how many were supplied."""
    events = odd_events()
    supplier(channel).push_structured_events(events)
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.ANY_EVENT)
    proxy.connect_any_push_supplier(None)
    anys = [CORBA.Any(CORBA.TC_long, 42), CORBA.Any(CORBA.TC_string, "text"),
            CORBA.Any(N._tc_StructuredEvent, event("D", "wrapped", 1, source=55.5))]
    for value in anys:
        proxy.push(value)
    return len(events) + len(anys)


def assert_as_the_event_gives(found: list[Any], count: int) -> None:
    assert len(found) == count
    for retained in found:
        again = from_event(retained.event, retained.id, retained.timestamp)
        assert (retained.type, retained.source_timestamp) == (
            again.type, again.source_timestamp), retained.type


class TestRowsAsTheEvent:
    def test_every_kind_of_event(self, store: Any) -> None:
        """Type paths and source timestamps read from rows are the event's own (types.py,
        records.py), for odd Subtypes and SourceTimestamps and for Anys (%ANY)."""
        with EventChannelFactory(store=store) as made:
            channel, _ = made.create_channel([], retain(count=100))
            count = supply_everything(channel)
            found = channel.query(maxResults=100)
        assert_as_the_event_gives(found, count)
        paths = {r.type for r in found}
        assert ("D", "subtype", "a", "b") in paths and ("", "%ANY") in paths
        assert ("D", "subtype-twice", "first") in paths
        assert ("D", "unicode", "caf\u00e9", "") in paths
        assert {r.source_timestamp for r in found if r.type[1] in ("utc", "wrapped")} == {
            1_234.5, 55.5}

    def test_rows_read_back_after_a_restart(self, tmp_path: Path) -> None:
        """Rows a store kept over a restart give the same paths and timestamps."""
        from cosnotify.store.sqlite import SQLiteStore

        persistent = [N.Property("ConnectionReliability",
                                 CORBA.Any(CORBA.TC_short, N.Persistent))]
        store = SQLiteStore(tmp_path / "store.db")
        with EventChannelFactory(store=store) as made:
            channel, channel_id = made.create_channel(persistent, retain(count=100))
            count = supply_everything(channel)
            channel._retention.flush()
        store.close()
        store = SQLiteStore(tmp_path / "store.db")
        try:
            with EventChannelFactory(store=store) as made:
                found = made.get_event_channel(channel_id).query(maxResults=100)
        finally:
            store.close()
        assert_as_the_event_gives(found, count)

    def test_type_queries_match_the_stored_path(self, store: Any) -> None:
        """A query by a type the Subtype gives finds the event; a malformed Subtype is no
        segment (types.py)."""
        with EventChannelFactory(store=store) as made:
            channel, _ = made.create_channel([], retain(count=100))
            supply_everything(channel)
            assert [r.type for r in channel.query(types=[["D", "subtype", "*"]])] == [
                ("D", "subtype", "a", "b")]
            assert [r.type for r in channel.query(types=[["D", "subtype-longs"]])] == [
                ("D", "subtype-longs")]


class TestGrowingPages:
    @pytest.fixture
    def reads(self, monkeypatch: pytest.MonkeyPatch) -> list[int]:
        """The page size of every store read a query makes."""
        sizes: list[int] = []
        original = MemoryStore.read_history

        def spy(self: Any, channel: str, scan: Any, after: Any = None,
                limit: int = 1000) -> Any:
            if scan.instances is None:
                sizes.append(limit)
            return original(self, channel, scan, after, limit)

        monkeypatch.setattr(MemoryStore, "read_history", spy)
        return sizes

    def fill(self, made: EventChannelFactory, rare_every: int, total: int) -> Any:
        channel, _ = made.create_channel([], retain(count=total))
        supplier(channel).push_structured_events(
            [event("D", "rare" if n % rare_every == 0 else "common", n) for n in range(total)])
        return channel

    def test_pages_start_small_and_double_to_page(self, reads: list[int]) -> None:
        """The first read asks for the limit plus FIRST_PAGE_SLACK rows, each next one
        for twice as many, never more than PAGE."""
        with EventChannelFactory(store=MemoryStore()) as made:
            channel = self.fill(made, 500, 5_000)
            found = channel.query(constraint="$type_name == 'rare'", maxResults=10)
        assert len(found) == 10
        first = 10 + reader.FIRST_PAGE_SLACK
        assert reads[:4] == [first, first * 2, first * 4, first * 8]
        assert max(reads) == reader.PAGE
        assert all(b == min(reader.PAGE, 2 * a) for a, b in itertools.pairwise(reads))

    def test_max_scanned_ends_a_scan_with_more(self, reads: list[int],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
        """Past MAX_SCANNED rows a query ends with ``more`` and the last row read as its
        resume point, whatever the page sizes; continuing from it finds the rest once."""
        monkeypatch.setattr(reader, "MAX_SCANNED", 100)
        with EventChannelFactory(store=MemoryStore()) as made:
            channel = self.fill(made, 97, 1_000)
            rare = {n for n in range(1_000) if n % 97 == 0}
            got: list[int] = []
            after = None
            for _ in range(20):
                page = reader.query_page(channel, None, {
                    "constraint": "$type_name == 'rare'", "maxResults": 50, "order": "ascending",
                    **({} if after is None else {"after": after})})
                got += [r.event.filterable_data[0].value.value() for r in page.events]
                if not page.more:
                    break
                assert page.resume is not None
                after = page.resume
            else:
                pytest.fail("the scan never ended")
        assert got == sorted(rare)
        assert max(reads) <= reader.PAGE
