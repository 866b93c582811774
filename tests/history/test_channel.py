"""A channel's history: retention and ``channel.query`` (docs/history.md).

Retention is cosnotify's admin properties RetainAge/RetainCount/RetainBytes
(docs/qos.md); queries follow the Eventer seed's "query events" (the cases of
tests/history/test_query.py, here end to end through the store).
"""

from __future__ import annotations

import functools
import itertools
import threading
from collections.abc import Callable
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import TimeBase

from cosnotify.channel.clock import ManualClock, seconds_to_timet
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.retention import LINGER, LINGER_EVENTS
from cosnotify.history.query import EventId, Order, OrderBy


def retain(count: int = 0, age: float = 0, size: int = 0) -> list[Any]:
    return [N.Property("RetainCount", CORBA.Any(CORBA.TC_long, count)),
            N.Property("RetainAge", CORBA.Any(TimeBase._tc_TimeT, round(age * 10**7))),
            N.Property("RetainBytes", CORBA.Any(CORBA.TC_ulonglong, size))]


def event(domain: str, type_name: str, n: int, source: float | None = None,
          timeout: float | None = None) -> Any:
    header = []
    if source is not None:
        header.append(N.Property("SourceTimestamp", CORBA.Any(
            TimeBase._tc_UtcT, TimeBase.UtcT(seconds_to_timet(source), 0, 0, 0))))
    if timeout is not None:
        header.append(N.Property("Timeout", CORBA.Any(TimeBase._tc_TimeT,
                                                      round(timeout * 10**7))))
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType(domain, type_name), f"e{n}"), header),
        [N.Property("n", CORBA.Any(CORBA.TC_long, n))], CORBA.Any(CORBA.TC_null, None))


def supplier(channel: Any) -> Any:
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.SEQUENCE_EVENT)
    proxy.connect_sequence_push_supplier(None)
    return proxy


def numbers(found: list[Any]) -> list[int]:
    return [e.event.filterable_data[0].value.value() for e in found]


def test_retention_needs_a_store() -> None:
    with EventChannelFactory() as made:
        with pytest.raises(N.UnsupportedAdmin) as raised:
            made.create_channel([], retain(count=10))
        assert [e.name for e in raised.value.admin_err] == ["RetainCount"]
        channel, _ = made.create_channel([], [])
        with pytest.raises(N.UnsupportedAdmin):
            channel.set_admin(retain(age=60))
        with pytest.raises(CORBA.BAD_INV_ORDER):
            channel.query()


def test_what_the_channel_accepted_can_be_asked_for(factory: EventChannelFactory,
                                                    clock: ManualClock) -> None:
    channel, _ = factory.create_channel([], retain(count=100))
    push = supplier(channel)
    push.push_structured_events([event("a", "b", 1, source=5.0), event("a", "x", 2)])
    clock.advance(1)
    push.push_structured_events([event("b", "b", 3, source=9.0)])
    assert numbers(channel.query()) == [3, 2, 1]  # descending by timestamp
    assert numbers(channel.query(types=[["a", "?"]], order="ascending")) == [1, 2]
    assert numbers(channel.query(tFrom=1_001.0)) == [3]
    assert numbers(channel.query(orderBy="sourceTimestamp")) == [3, 1, 2]
    assert numbers(channel.query(sourceTFrom=6.0)) == [3]
    assert numbers(channel.query(uniqueType=True, types=[["*"]], maxResults=2)) == [3, 2]
    found = channel.query(order=Order.ASCENDING.value)
    assert found[0].id.session == found[1].id.session != found[2].id.session  # one push
    assert numbers(channel.query(ids=[found[1].id, EventId(0, 0, 10**9)])) == [2]
    assert numbers(channel.query(constraint="$n >= 2")) == [3, 2]


def test_records_are_decoded_only_for_what_needs_them(factory: EventChannelFactory,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A query that selects by the store's columns (types, times) decodes no record; the
    events' ``event`` and ``payload`` decode each once when read; a payload condition
    or a constraint decodes the rows it checks."""
    from cosnotify.history import reader

    calls: list[bytes] = []
    real = reader.decode_record

    def counted(data: bytes) -> tuple[Any, Any]:
        calls.append(data)
        return real(data)

    monkeypatch.setattr(reader, "decode_record", counted)
    channel, _ = factory.create_channel([], retain(count=100))
    supplier(channel).push_structured_events([event("a", "b" if n % 2 else "c", n)
                                              for n in range(10)])
    found = channel.query(types=[["a", "b"]], maxResults=3)
    assert calls == []
    assert numbers(found) == [9, 7, 5]
    assert len(calls) == 3
    assert [e.payload for e in found] == [None] * 3 and len(calls) == 3
    assert numbers(channel.query(constraint="$n >= 8")) == [9, 8]
    assert len(calls) == 3 + 10  # the constraint read each row, once


def test_a_record_that_does_not_decode_is_an_error_not_a_mismatch(
        factory: EventChannelFactory) -> None:
    """A stored record that fails to decode raises when read -- also when a query's
    constraint reads it, which catches what the constraint itself raises (review 96:
    the record was then taken for an event the constraint did not match)."""
    import attrs

    channel, _ = factory.create_channel([], retain(count=100))
    supplier(channel).push_structured_events([event("a", "b", n) for n in range(3)])
    channel.query()  # written
    rows = factory._service.topology.store._history[f"ch/{channel._id}"]
    at, row = rows[1]
    rows[1] = (at, attrs.evolve(row, data=b"\x09" + row.data[1:]))  # record version 9
    found = channel.query()
    assert numbers([found[0], found[2]]) == [2, 0]
    with pytest.raises(ValueError, match="version 9"):
        numbers([found[1]])
    with pytest.raises(ValueError, match="version 9"):
        channel.query(constraint="$n >= 0")


def test_sparse_matches_over_growing_pages(factory: EventChannelFactory) -> None:
    """A query for 5 whose matches are 1 row in 97 reads past its first, short page
    (the limit plus a little), page after growing page, and finds what a scan of every
    row finds -- also past PAGE rows, in both orders."""
    channel, _ = factory.create_channel([], retain(count=10_000))
    push = supplier(channel)
    for start in range(0, 3_000, 500):
        push.push_structured_events([event("D", "rare" if n % 97 == 0 else "common", n)
                                     for n in range(start, start + 500)])
    rare = [n for n in range(3_000) if n % 97 == 0]
    assert numbers(channel.query(types=[["D", "rare"]], maxResults=5,
                                 order="ascending")) == rare[:5]
    assert numbers(channel.query(types=[["D", "rare"]], maxResults=5)) == rare[::-1][:5]
    assert numbers(channel.query(constraint="$n >= 2900", maxResults=3,
                                 order="ascending")) == [2900, 2901, 2902]


def test_bounds_trim_the_history(factory: EventChannelFactory, clock: ManualClock) -> None:
    channel, _ = factory.create_channel([], retain(count=3))
    push = supplier(channel)
    for n in range(6):
        push.push_structured_events([event("a", "b", n)])
    clock.advance(2)  # a trim is due: the query writes and trims first
    push.push_structured_events([event("a", "b", 6)])
    assert numbers(channel.query()) == [6, 5, 4]
    channel.set_admin(retain(age=5))
    clock.advance(10)
    push.push_structured_events([event("a", "b", 7)])
    assert numbers(channel.query()) == [7]


def test_an_expired_event_is_not_returned(factory: EventChannelFactory,
                                          clock: ManualClock) -> None:
    channel, _ = factory.create_channel([], retain(count=10))
    supplier(channel).push_structured_events([event("a", "b", 1, timeout=5),
                                              event("a", "b", 2)])
    assert numbers(channel.query()) == [2, 1]
    clock.advance(6)
    assert numbers(channel.query()) == [2]


def test_a_bad_constraint_is_bad_param(factory: EventChannelFactory) -> None:
    channel, _ = factory.create_channel([], retain(count=10))
    with pytest.raises(CORBA.BAD_PARAM, match="unknown grammar"):
        channel.query(grammar="NOPE", constraint="TRUE")
    with pytest.raises(CORBA.BAD_PARAM, match="invalid EXTENDED_TCL constraint"):
        channel.query(constraint="$n >")
    with pytest.raises(CORBA.BAD_PARAM, match="after"):
        channel.query(tFrom=5, tTo=1)


def test_an_any_is_kept_as_its_percent_any_event(factory: EventChannelFactory) -> None:
    channel, _ = factory.create_channel([], retain(count=10))
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.ANY_EVENT)
    proxy.connect_any_push_supplier(None)
    proxy.push(CORBA.Any(CORBA.TC_long, 42))
    [found] = channel.query(types=[["", "%ANY"]])
    assert found.event.remainder_of_body.value() == 42
    assert channel.query(payload=CORBA.Any(CORBA.TC_long, 42))[0].id == found.id


def test_history_survives_a_restart_and_goes_with_its_channel(tmp_path: Any) -> None:
    from cosnotify.store.sqlite import SQLiteStore

    persistent = [N.Property("ConnectionReliability", CORBA.Any(CORBA.TC_short,
                                                                N.Persistent))]
    store = SQLiteStore(tmp_path / "store.db")
    with EventChannelFactory(store=store) as made:
        channel, channel_id = made.create_channel(persistent, retain(count=10))
        supplier(channel).push_structured_events([event("a", "b", 1), event("a", "b", 2)])
        channel._retention.flush()
    store.close()
    store = SQLiteStore(tmp_path / "store.db")
    try:
        with EventChannelFactory(store=store) as made:
            channel = made.get_event_channel(channel_id)
            assert numbers(channel.query()) == [2, 1]
            channel.destroy()
            assert store.history_size(f"ch/{channel_id}") == (0, 0)
    finally:
        store.close()


_DIES = """
import os, sys
import omniORB
from tests.history.test_channel import N, CORBA, EventChannelFactory, event, retain, supplier
from cosnotify.store.sqlite import SQLiteStore

made = EventChannelFactory(store=SQLiteStore(sys.argv[1]))
persistent = [N.Property("ConnectionReliability", CORBA.Any(CORBA.TC_short, N.Persistent))]
ids = []
for qos in (persistent, []):
    channel, channel_id = made.create_channel(qos, retain(count=10))
    supplier(channel).push_structured_events([event("a", "b", 1)])
    channel._retention.flush()
    ids.append(channel_id)
print(*ids, flush=True)
os._exit(0)  # the process dies: nothing of the factory's close runs
"""


def test_a_channel_that_does_not_come_back_leaves_no_history(tmp_path: Any) -> None:
    """A best-effort channel's history stays in the store when the process dies (its
    destroy never ran); the next start drops it, since the channel is not restored
    and its id may be given again. A persistent channel's stays."""
    import subprocess
    import sys

    from cosnotify.store.sqlite import SQLiteStore

    db = tmp_path / "store.db"
    done = subprocess.run([sys.executable, "-c", _DIES, str(db)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    kept_id, lost_id = (int(word) for word in done.stdout.split())
    store = SQLiteStore(db)
    try:
        assert store.history_channels() == sorted([f"ch/{kept_id}", f"ch/{lost_id}"])
        with EventChannelFactory(store=store) as again:
            assert store.history_channels() == [f"ch/{kept_id}"]
            assert numbers(again.get_event_channel(kept_id).query()) == [1]
    finally:
        store.close()


def test_a_channel_record_a_restart_skips_keeps_its_history(tmp_path: Any) -> None:
    """A channel record the restart could not read is skipped, not deleted: its
    history stays for a later start that can (review finding)."""
    import sqlite3

    from cosnotify.store.sqlite import SQLiteStore

    persistent = [N.Property("ConnectionReliability", CORBA.Any(CORBA.TC_short,
                                                                N.Persistent))]
    db = tmp_path / "store.db"
    store = SQLiteStore(db)
    with EventChannelFactory(store=store) as made:
        channel, channel_id = made.create_channel(persistent, retain(count=10))
        supplier(channel).push_structured_events([event("a", "b", 1)])
    store.close()
    conn = sqlite3.connect(db)
    conn.execute("UPDATE records SET data = x'00' WHERE path = ?", (f"ch/{channel_id}",))
    conn.commit()
    conn.close()
    store = SQLiteStore(db)
    try:
        with EventChannelFactory(store=store) as again:
            assert again.get_all_channels() == []  # skipped
            assert store.history_channels() == [f"ch/{channel_id}"]
    finally:
        store.close()


def test_source_order_puts_undefined_last(factory: EventChannelFactory) -> None:
    channel, _ = factory.create_channel([], retain(count=10))
    supplier(channel).push_structured_events([event("a", "b", 1), event("a", "b", 2, source=3.0),
                                              event("a", "b", 3, source=1.0)])
    found = channel.query(order_by=OrderBy.SOURCE_TIMESTAMP.value, order="ascending")
    assert numbers(found) == [3, 2, 1]


class TestReviewFindings:
    """An adversarial review of the first history layers found these."""

    def test_the_accepted_part_of_a_refused_batch_is_kept(self, factory: EventChannelFactory
                                                          ) -> None:
        admin = [*retain(count=10), N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 2)),
                 N.Property("RejectNewEvents", CORBA.Any(CORBA.TC_boolean, True))]
        channel, _ = factory.create_channel([], admin)
        puller, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        puller.connect_structured_pull_consumer(None)
        with pytest.raises(CORBA.IMP_LIMIT):
            supplier(channel).push_structured_events([event("a", "b", n) for n in range(3)])
        assert numbers(channel.query(order="ascending")) == [0, 1]

    def test_a_channel_takes_its_history_when_it_goes(self, factory: EventChannelFactory
                                                      ) -> None:
        channel, channel_id = factory.create_channel([], retain(count=10))
        supplier(channel).push_structured_events([event("a", "b", 1)])
        assert numbers(channel.query()) == [1]
        channel.set_admin(retain())  # retention off: what was kept stays...
        assert factory.service.topology.store.history_size(f"ch/{channel_id}")[0] == 1
        channel.destroy()  # ...until the channel goes
        assert factory.service.topology.store.history_size(f"ch/{channel_id}") == (0, 0)

    def test_a_query_constraint_leaves_no_filter_behind(self, factory: EventChannelFactory
                                                        ) -> None:
        channel, _ = factory.create_channel([], retain(count=10))
        before = len(factory._get_filter_factory()._filters) \
            if hasattr(factory._get_filter_factory(), "_filters") else None
        for _ in range(3):
            channel.query(constraint="$n > 0")
        records = [r.path for r in factory.service.topology.store.records()]
        assert not [p for p in records if p.startswith("flt/")]
        if before is not None:
            assert len(factory._get_filter_factory()._filters) == before

    def test_an_event_that_cannot_be_kept_is_counted_not_raised(
            self, factory: EventChannelFactory) -> None:
        channel, _ = factory.create_channel([], retain(count=10))
        bad = event("a", "b", 1)
        bad.filterable_data.append(N.Property("s", CORBA.Any(CORBA.TC_string, "b\0c")))
        supplier(channel).push_structured_events([bad, event("a", "b", 2)])  # no exception
        assert numbers(channel.query()) == [2]
        assert channel._retention.dropped == 1

    @pytest.mark.parametrize("fields", [
        {"types": ["ab"]}, {"types": ["Telecom", "*"]}, {"ids": ["123"]},
        {"tFrom": 10**400}, {"tFrom": float("nan")}, {"tTo": float("inf")}])
    def test_malformed_fields(self, factory: EventChannelFactory, fields: dict[str, Any]
                              ) -> None:
        channel, _ = factory.create_channel([], retain(count=10))
        with pytest.raises(CORBA.BAD_PARAM):
            channel.query(**fields)


def test_a_full_buffer_is_written_by_the_supply_call(factory: EventChannelFactory,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Flow control: with the writer not running (its worker busy), a supply call that
    finds MAX_BUFFERED events waiting encodes them itself, and one that finds
    MAX_ENCODED rows waiting writes them: memory stays bounded and nothing is lost."""
    from cosnotify.channel import retention as module

    monkeypatch.setattr(module, "MAX_BUFFERED", 3)
    monkeypatch.setattr(module, "MAX_ENCODED", 6)
    channel, _ = factory.create_channel([], retain(count=100))
    retention = channel._retention
    monkeypatch.setattr(retention._service, "submit", lambda task, lane=None: None)
    push = supplier(channel)
    most_buffered = most_encoded = 0
    for n in range(30):
        push.push_structured_events([event("a", "b", n)])
        most_buffered = max(most_buffered, retention._buffered)
        most_encoded = max(most_encoded, len(retention._encoded))
    assert most_buffered <= 4  # the bound, plus one supply call's events
    assert most_encoded <= 6 + 4  # the bound, plus one buffer
    assert retention.written > 0  # written by the supply calls, no writer running
    assert numbers(channel.query(order="ascending")) == list(range(30))


def hold_writes(retention: Any, monkeypatch: pytest.MonkeyPatch
                ) -> tuple[threading.Event, threading.Event]:
    """The writer's store writes held: (set when one is in the store, set to let them
    go)."""
    writing, release = threading.Event(), threading.Event()
    real: Callable[[str, list[Any]], list[int]] = retention._store.add_history

    def held_add(path: str, rows: list[Any]) -> list[int]:
        writing.set()
        assert release.wait(10)
        return real(path, rows)

    monkeypatch.setattr(retention._store, "add_history", held_add)
    return writing, release


class CountingLock:
    """A lock that counts the threads that had to wait for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.waiting = 0
        self.changed = threading.Condition()

    def acquire(self, blocking: bool = True) -> bool:
        if self._lock.acquire(blocking=False):
            return True
        if not blocking:
            return False
        with self.changed:
            self.waiting += 1
            self.changed.notify_all()
        return self._lock.acquire()

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def test_the_encoded_rows_stay_bounded_however_many_suppliers(
        factory: EventChannelFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a write held up, every supply call at the bound waits for it before it
    encodes more: the rows waiting stay under MAX_ENCODED plus one buffer whatever the
    number of supplier threads (found by review: each thread encoded one more buffer
    before it looked), and nothing is lost."""
    from cosnotify.channel import retention as module

    monkeypatch.setattr(module, "MAX_BUFFERED", 3)
    monkeypatch.setattr(module, "MAX_ENCODED", 6)
    channel, _ = factory.create_channel([], retain(count=10_000))
    retention = channel._retention
    monkeypatch.setattr(retention._service, "submit", lambda task, lane=None: None)
    write_lock = retention._write_lock = CountingLock()
    writing, release = hold_writes(retention, monkeypatch)
    numbers_of = iter(range(1_000))

    def supply() -> None:
        push = supplier(channel)
        for n in itertools.islice(numbers_of, 40):
            push.push_structured_events([event("a", "b", n)])

    def waited(count: int) -> bool:
        return write_lock.waiting >= count

    threads = [threading.Thread(target=supply, daemon=True) for _ in range(5)]
    threads[0].start()
    assert writing.wait(10)  # the first supplier holds the write lock, in the store
    most = 0
    for count, thread in enumerate(threads[1:], start=1):
        thread.start()
        with write_lock.changed:  # until this one waits for the write too
            assert write_lock.changed.wait_for(functools.partial(waited, count), 10)
        most = max(most, len(retention._encoded))
    assert most <= 6 + 4
    release.set()
    for thread in threads:
        thread.join(10)
    kept = numbers(channel.query(order="ascending", maxResults=1_000))
    assert sorted(kept) == list(range(200))  # each once (threads interleave)


def test_a_few_events_linger_for_more_to_share_their_write(
        factory: EventChannelFactory, clock: ManualClock,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Group commit's linger: a supply call of one event waits LINGER for others, and
    one write takes them all; LINGER_EVENTS or more are written at once."""
    channel, _ = factory.create_channel([], retain(count=10_000))
    retention = channel._retention
    writes: list[int] = []
    wrote = threading.Event()
    real: Callable[[str, list[Any]], list[int]] = retention._store.add_history

    def counted_add(path: str, rows: list[Any]) -> list[int]:
        writes.append(len(rows))
        wrote.set()
        return real(path, rows)

    monkeypatch.setattr(retention._store, "add_history", counted_add)
    push = supplier(channel)
    push.push_structured_events([event("a", "b", 0)])
    push.push_structured_events([event("a", "b", 1)])
    assert writes == []  # lingering
    clock.advance(LINGER)
    assert wrote.wait(10)
    assert writes == [2]  # both in one write
    wrote.clear()
    push.push_structured_events([event("a", "b", n) for n in range(2, 2 + LINGER_EVENTS)])
    assert wrote.wait(10)  # no clock moved: a full write goes at once
    assert writes == [2, LINGER_EVENTS]
    assert numbers(channel.query(order="ascending")) == list(range(2 + LINGER_EVENTS))


def test_encoding_and_writing_overlap_in_order(factory: EventChannelFactory,
                                               clock: ManualClock,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A supply call encodes while the writer writes (the two stages): the rows reach
    the store in the order their events came, and none twice."""
    channel, _ = factory.create_channel([], retain(count=10_000))
    retention = channel._retention
    writing, release = hold_writes(retention, monkeypatch)
    push = supplier(channel)
    push.push_structured_events([event("a", "b", 0)])
    clock.advance(LINGER)  # one event: its write lingers for more
    assert writing.wait(10)  # the service's writer is in the store
    push.push_structured_events([event("a", "b", n) for n in range(1, 5)])
    assert retention._encode()  # a supply call's share: encoded while the write waits
    assert len(retention._encoded) == 4
    release.set()
    assert numbers(channel.query(order="ascending")) == list(range(5))
    assert retention.written == 5


def test_closing_the_factory_writes_what_a_persistent_channel_kept(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Events accepted but not yet written when the service stops are written as it
    stops: a persistent channel's history comes back whole."""
    from cosnotify.store.sqlite import SQLiteStore

    persistent = [N.Property("ConnectionReliability", CORBA.Any(CORBA.TC_short,
                                                                N.Persistent))]
    store = SQLiteStore(tmp_path / "store.db")
    made = EventChannelFactory(store=store)
    channel, channel_id = made.create_channel(persistent, retain(count=10))
    monkeypatch.setattr(channel._retention._service, "submit", lambda task, lane=None: None)
    supplier(channel).push_structured_events([event("a", "b", 1), event("a", "b", 2)])
    assert channel._retention._buffered == 2  # not written yet
    monkeypatch.undo()
    made.close()
    store.close()
    store = SQLiteStore(tmp_path / "store.db")
    try:
        with EventChannelFactory(store=store) as again:
            assert numbers(again.get_event_channel(channel_id).query()) == [2, 1]
    finally:
        store.close()


def test_turning_retention_off_writes_what_was_accepted(factory: EventChannelFactory,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    channel, _ = factory.create_channel([], retain(count=10))
    monkeypatch.setattr(channel._retention._service, "submit", lambda task, lane=None: None)
    supplier(channel).push_structured_events([event("a", "b", 1)])
    monkeypatch.undo()
    channel.set_admin(retain())
    assert numbers(channel.query()) == [1]


def test_a_supply_call_that_got_the_writer_before_retention_stopped(
        factory: EventChannelFactory) -> None:
    """Retention turned off while a supply call holds the old writer: that call's events
    were accepted, so they are written, not buffered into a writer that stopped."""
    from cosnotify.channel.event import from_structured

    channel, _ = factory.create_channel([], retain(count=10))
    writer = channel._retention
    channel.set_admin(retain())
    writer.keep([from_structured(event("a", "b", 7), 1_000.0)])  # the late call
    assert numbers(channel.query()) == [7]
    assert (writer._buffered, writer.dropped) == (0, 0)


def test_set_admin_after_destroy_is_object_not_exist(factory: EventChannelFactory) -> None:
    channel, channel_id = factory.create_channel([], retain(count=10))
    channel.destroy()
    with pytest.raises(CORBA.OBJECT_NOT_EXIST):
        channel.set_admin(retain())
    assert factory.service.topology.store.history_size(f"ch/{channel_id}") == (0, 0)
