"""Tuple ids: "unique to the instantiation history of the server", across restarts.

Provenance: the Event Heap wire protocol appendix, "Event Heap Server
Responsibilities" ("The server must also assign each event placed into the
Event Heap with the putEvent call an ID unique to the instantiation history
of the server"); issue 21, item 3 ("a unique id for every put event across
restarts").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import CosNotifyEventHeap as EH

from cosnotify.channel.factory import EventChannelFactory
from cosnotify.store import MemoryStore
from cosnotify.tuplespace import TupleSpace
from cosnotify.tuplespace.ids import COUNTER
from cosnotify.tuplespace.limits import ID_BLOCK
from tests.tuplespace.conftest import event


def test_ids_are_unique_across_a_restart(tmp_path: Path) -> None:
    """With an SQLite store, ids handed out after a restart are above every id before it,
    on any channel (the instantiation history is the store's)."""
    from cosnotify.store.sqlite import SQLiteStore

    before: list[int] = []
    store = SQLiteStore(tmp_path / "store.db")
    with EventChannelFactory(store=store) as made:
        for _ in range(2):
            channel, _ = made.create_channel([], [])
            space = TupleSpace.of(channel)
            before += [space.put_event(event("A", n=n)) for n in range(3)]
    store.close()
    assert len(set(before)) == 6
    store = SQLiteStore(tmp_path / "store.db")
    try:
        with EventChannelFactory(store=store) as made:
            channel, _ = made.create_channel([], [])
            after = [TupleSpace.of(channel).put_event(event("A", n=n)) for n in range(3)]
    finally:
        store.close()
    assert min(after) > max(before)
    assert len(set(after)) == 3


class CountingStore(MemoryStore):
    """A MemoryStore that counts the writes of the tuple-id counter."""

    takes = 0

    def next_value(self, name: str) -> int:
        if name == COUNTER:
            self.takes += 1
        return super().next_value(name)


def test_ids_come_in_blocks() -> None:
    """Issue 21's brief: ids are taken from the store's counter a block at a time, so a
    put does not cost a durable write each: ID_BLOCK puts, one counter write (and one
    block may be taken ahead: cosnotify/tuplespace/ids.py)."""
    store = CountingStore()
    with EventChannelFactory(store=store) as made:
        channel, _ = made.create_channel([], [])
        space = TupleSpace.of(channel)
        got = [space.put_event(event("A")) for _ in range(2 * ID_BLOCK + 1)]
    assert 3 <= store.takes <= 4
    assert got == sorted(got) and len(set(got)) == len(got)
    assert got[0] == 1  # serial number 0 is "never been on an Event Heap server"


def test_events_of_every_supplier_get_ids(channel: Any, space: TupleSpace) -> None:
    """Every live tuple has an id deleteEvent can use (Table 14), whoever supplied it."""
    from tests.tuplespace.conftest import supplier

    put = space.put_event(event("A"))
    supplier(channel).push_structured_events([event("B"), event("C")])
    found = [t.id for t in space.get_all()]
    assert found[0] == put and len(set(found)) == 3 and 0 not in found


def test_a_space_full_refuses_the_put_whole(channel: Any, space: TupleSpace) -> None:
    """A put beyond the space's limit is LimitExceeded with nothing supplied: the
    channel's consumers receive nothing and no id is spent on a tuple."""
    import CosNotifyChannelAdmin as CA

    proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_pull_consumer(None)
    space.max_tuples = 1
    kept = space.put_event(event("A"))
    proxy.try_pull_structured_event()
    try:
        space.put_event(event("B"))
    except EH.LimitExceeded as exc:
        assert exc.limit == 1 and "live tuples" in exc.reason
    else:
        raise AssertionError("the put was not refused")
    _, has = proxy.try_pull_structured_event()
    assert not has
    assert [t.id for t in space.get_all()] == [kept]
