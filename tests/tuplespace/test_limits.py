"""The space's bounds: bytes, tuples, indexes, and the ids behind them.

Provenance: docs/history.md, "Limits" (every bound an explicit constant); the review
of the tuple space, findings 4 ("Memory not bounded in bytes ... cf. retention's
RetainBytes") and 14 (ids "unique per service object, not 'within the process' as
docs say"; "sixteen throwaway template names permanently use up MAX_INDEXED_NAMES";
"give_back ignores max_tuples"; "a waitForEvent copy is not placed into the heap when
the space is full"; "the id block is taken with a synchronous store write inside the
push hook"); the seed's Table 8 (waitForEvent: "both returned to the requester and
placed into the Event Heap") and Server Responsibilities (an ID "unique to the
instantiation history of the server").
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

import CosNotifyChannelAdmin as CA
import CosNotifyEventHeap as EH

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.event import from_structured
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.store import MemoryStore
from cosnotify.tuplespace import TupleSpace
from cosnotify.tuplespace.ids import IdAllocator
from cosnotify.tuplespace.limits import ID_BLOCK, INDEX_IDLE, MAX_BYTES, MAX_INDEXED_NAMES
from cosnotify.tuplespace.sizes import event_size
from tests.tuplespace.conftest import WAIT, event, field, supplier
from tests.tuplespace.test_waits import Call, waiting

BLOB = 3_000


def pull_consumer(channel: Any) -> Any:
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_pull_consumer(None)
    return proxy


def blob(n: int) -> Any:
    return event("Blob", n=n, data="x" * BLOB)


class TestBytes:
    """Finding 4: the space is bounded in bytes (MAX_BYTES), as retention's RetainBytes
    bounds a history."""

    def test_the_estimate_counts_the_payload(self) -> None:
        """sizes.py: a 4 MB property costs at least 4 MB; a small event a few hundred
        bytes."""
        big = event_size(from_structured(event("Blob", data="x" * 4_000_000), 0.0))
        small = event_size(from_structured(event("A", n=1), 0.0))
        assert 4_000_000 <= big < 4_001_000
        assert 0 < small < 500
        assert MAX_BYTES == 256 * 2**20

    def test_a_put_past_the_bound_is_refused(self, channel: Any) -> None:
        """A put that would pass max_bytes is LimitExceeded (the limit given), and nothing
        is supplied; the tuples stay."""
        space = TupleSpace.of(channel, max_bytes=3 * BLOB + 1_000)
        kept = [space.put_event(blob(n)) for n in range(3)]
        pull = pull_consumer(channel)
        with pytest.raises(EH.LimitExceeded) as raised:
            space.put_event(blob(3))
        assert raised.value.limit == 3 * BLOB + 1_000 and "bytes" in raised.value.reason
        assert [t.id for t in space.get_all()] == kept
        _, has = pull.try_pull_structured_event()
        assert not has

    def test_a_suppliers_events_drop_the_oldest(self, channel: Any) -> None:
        """An event another supplier brings past the bound is delivered and kept: the
        oldest tuples go to make room, counted in ``dropped``."""
        space = TupleSpace.of(channel, max_bytes=3 * BLOB + 1_000)
        pull = pull_consumer(channel)
        supplier(channel).push_structured_events([blob(n) for n in range(5)])
        assert [field(t, "n") for t in space.get_all()] == [2, 3, 4]
        assert space.dropped == 2 and space.live_bytes <= space.max_bytes
        assert all(pull.try_pull_structured_event()[1] for _ in range(5))

    def test_an_event_beyond_the_bound_is_not_kept(self, channel: Any) -> None:
        """An event larger than the whole bound drops nothing: it is not kept
        (``refused``)."""
        space = TupleSpace.of(channel, max_bytes=BLOB + 1_000)
        supplier(channel).push_structured_events([blob(0), event("Huge", data="x" * 3 * BLOB)])
        assert [field(t, "n") for t in space.get_all()] == [0]
        assert space.refused == 1 and space.dropped == 0


class TestTuples:
    """Finding 14: MAX_TUPLES (``max_tuples``) holds for a tuple given back, and a
    waitForEvent's event is one the space can place."""

    def test_a_tuple_given_back_to_a_full_space_is_not_kept(self, space: TupleSpace) -> None:
        """give_back honours max_tuples: the space stays at its limit (``refused``)."""
        space.max_tuples = 1
        space.put_event(event("A", n=1))
        taken = space.remove_event("n: int = 1")
        other = space.put_event(event("A", n=2))
        assert taken is not None
        space.give_back(taken)
        assert [t.id for t in space.get_all()] == [other] and space.refused == 1

    def test_a_full_space_does_not_give_a_wait_for_event_what_it_cannot_place(
            self, channel: Any, space: TupleSpace, clock: ManualClock) -> None:
        """Table 8: the incoming event is "both returned to the requester and placed into
        the Event Heap" -- an event a full space cannot place is not a waitForEvent's;
        a waitToRemoveEvent's it still is (Table 7: it "will not be placed")."""
        space.max_tuples = 1
        space.put_event(event("Full"))
        reader = Call(space.wait_for_event, 'EventType = "Job"', 30)
        waiting(space, 1)
        supplier(channel).push_structured_events([event("Job", n=1)])
        assert space.waiting == 1 and space.refused == 1
        taker = Call(space.wait_to_remove_event, 'EventType = "Job"', 30)
        waiting(space, 2)
        supplier(channel).push_structured_events([event("Job", n=2)])
        assert field(taker.result(), "n") == 2
        clock.advance(30)
        assert reader.result() is None


class TestIndexes:
    """Finding 14: "sixteen throwaway template names permanently use up
    MAX_INDEXED_NAMES"."""

    def test_an_unused_index_goes(self, channel: Any, space: TupleSpace,
                                  clock: ManualClock) -> None:
        """An index no template used for INDEX_IDLE seconds is dropped; one in use stays;
        a new name then gets its place."""
        supplier(channel).push_structured_events([event("A", k=1, g0=1)])
        for n in range(MAX_INDEXED_NAMES - 1):
            space.get_event(f"g{n}: int = 1")
        space.get_event("k: int = 1")
        assert len(space.stats()["indexed"]) == MAX_INDEXED_NAMES
        clock.advance(INDEX_IDLE - 1)
        assert space.get_event("k: int = 1") is not None
        clock.advance(1)
        assert space.stats()["indexed"] == ["k"]
        assert field(space.get_event("g0: int = 1"), "k") == 1
        assert space.stats()["indexed"] == ["g0", "k"]


class TestIds:
    """Server Responsibilities: an ID "unique to the instantiation history of the
    server"."""

    def test_without_a_store_ids_are_unique_within_the_process(self) -> None:
        """docs/history.md: "Without a store the ids are unique within the process":
        two services' tuples never share an id."""
        with EventChannelFactory(clock=ManualClock()) as one, \
                EventChannelFactory(clock=ManualClock()) as two:
            a = TupleSpace.of(one.create_channel([], [])[0]).put_event(event("A"))
            b = TupleSpace.of(two.create_channel([], [])[0]).put_event(event("A"))
            assert a != b

    def test_the_next_block_is_taken_ahead_and_not_by_the_caller(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The next block of ID_BLOCK ids is taken from the store ahead, by another
        thread, once half the current one is used: a push needing ids does not wait for
        the store's write."""
        callers: list[threading.Thread] = []
        fetched = threading.Event()

        class Store(MemoryStore):
            def next_value(self, name: str) -> int:
                callers.append(threading.current_thread())
                return super().next_value(name)

        ahead = IdAllocator._take_ahead

        def take_ahead(allocator: IdAllocator) -> None:
            ahead(allocator)
            fetched.set()

        monkeypatch.setattr(IdAllocator, "_take_ahead", take_ahead)
        ids = IdAllocator(Store())
        first = ids.take(ID_BLOCK // 2 + 1)
        assert fetched.wait(WAIT)
        second = ids.take(ID_BLOCK)
        assert callers[0] is threading.current_thread()
        assert callers[1] is not threading.current_thread()
        assert first + second == list(range(1, ID_BLOCK + ID_BLOCK // 2 + 2))
