"""EventQueue against a plain model: OrderPolicy, DiscardPolicy, expiry, StartTime (2.5.5).

The model keeps a list and sorts it on every question; the queue keeps a run
(a deque, while every entry has one order key and seqs ascend) or a heap. Any
sequence of operations must give the same answers from both, whether a copy
is put as an Entry or as a plain copy (the event itself, whose Entry the queue
makes when it needs one: queue.py); entries are compared by what they hold.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from cosnotify.channel.queue import (
    ANY_ORDER,
    DEADLINE_ORDER,
    FIFO_ORDER,
    LIFO_ORDER,
    PRIORITY_ORDER,
    Entry,
    EventQueue,
)

ORDERS = [ANY_ORDER, FIFO_ORDER, PRIORITY_ORDER, DEADLINE_ORDER]
DISCARDS = [*ORDERS, LIFO_ORDER]


class FakeEvent:
    """What the queue reads of an event: its arrival number and StartTime, and for a
    plain copy its priority and deadline."""

    def __init__(self, seq: int, start: float | None, priority: int = 0,
                 deadline: float | None = None) -> None:
        self.seq = seq
        self.start = start
        self.priority = priority
        self.deadline = deadline


def held(entries: list[Entry]) -> list[tuple[int, int, float | None]]:
    """What each entry holds: its event (by identity), priority and deadline."""
    return [(id(e.event), e.priority, e.deadline) for e in entries]


def order_key(policy: int, entry: Entry) -> float:
    if policy == FIFO_ORDER:
        return 0.0
    if policy == DEADLINE_ORDER:
        return entry.deadline if entry.deadline is not None else math.inf
    return float(-entry.priority)


def discard_key(policy: int, entry: Entry) -> float:
    if policy == LIFO_ORDER:
        return float(-entry.event.seq)
    if policy == PRIORITY_ORDER:
        return float(entry.priority)
    if policy == DEADLINE_ORDER:
        return entry.deadline if entry.deadline is not None else math.inf
    return float(entry.event.seq)


class Model:
    """The queue's contract, the slow and obvious way."""

    def __init__(self, order: int, discard: int, limit: int) -> None:
        self.order, self.discard, self.limit = order, discard, limit
        self.ready: list[Entry] = []
        self.held: list[Entry] = []

    def _sorted_ready(self) -> list[Entry]:
        return sorted(self.ready, key=lambda e: (order_key(self.order, e), e.event.seq))

    def _enforce(self, now: float | None = None) -> list[Entry]:
        lost: list[Entry] = []
        if self.limit <= 0:
            return lost
        if now is not None and len(self.ready) + len(self.held) > self.limit:
            # Section 2.5.5.3: expired copies are discarded first, whatever the policy.
            lost = sorted((e for e in self.ready + self.held
                           if e.deadline is not None and e.deadline <= now),
                          key=lambda e: e.event.seq)  # in arrival order
            self.ready = [e for e in self.ready if e not in lost]
            self.held = [e for e in self.held if e not in lost]
        while len(self.ready) + len(self.held) > self.limit:
            victim = min(self.ready + self.held,
                         key=lambda e: (discard_key(self.discard, e), e.event.seq))
            (self.ready if victim in self.ready else self.held).remove(victim)
            lost.append(victim)
        return lost

    def put(self, entry: Entry, now: float) -> list[Entry]:
        start = entry.event.start
        (self.held if start is not None and start > now else self.ready).append(entry)
        return self._enforce(now)

    def release(self, now: float) -> None:
        for entry in sorted(self.held, key=lambda e: (e.event.start, e.event.seq)):
            if entry.event.start <= now:
                self.held.remove(entry)
                self.ready.append(entry)

    def get_batch(self, limit: int, now: float, expired: list[Entry]) -> list[Entry]:
        batch: list[Entry] = []
        for entry in self._sorted_ready():
            if len(batch) >= limit:
                break
            self.ready.remove(entry)
            if entry.deadline is not None and entry.deadline <= now:
                expired.append(entry)
            else:
                batch.append(entry)
        return batch

    def remove(self, entry: Entry) -> bool:
        for where in (self.ready, self.held):
            if entry in where:
                where.remove(entry)
                return True
        return False

    def set_policies(self, order: int, discard: int, limit: int,
                     now: float | None = None) -> list[Entry]:
        self.order, self.discard, self.limit = order, discard, limit
        return self._enforce(now)


#: A copy to put: priority, deadline (None or a time), start (None or a time), out of
#: seq order?, a plain copy?
copies = st.tuples(st.integers(-2, 2), st.none() | st.integers(0, 8),
                   st.none() | st.integers(0, 8), st.booleans(), st.booleans())

operations = st.lists(st.one_of(
    st.tuples(st.just("put")).flatmap(lambda head: copies.map(lambda c: head + c)),
    st.tuples(st.just("put_many"), st.lists(copies, max_size=6)),
    st.tuples(st.just("get"), st.integers(1, 5)),
    st.tuples(st.just("unget")),
    st.tuples(st.just("remove"), st.integers(0, 50)),
    st.tuples(st.just("tick")),
    st.tuples(st.just("policies"), st.sampled_from(ORDERS), st.sampled_from(DISCARDS),
              st.integers(0, 6)),
), max_size=60)


class TestAgainstTheModel:
    @settings(max_examples=300, deadline=None)
    @example(FIFO_ORDER, FIFO_ORDER, 0, [("put", 0, None, None, False, False),  # older: spill
                                         ("put", 0, None, None, True, False), ("get", 5)])
    @example(ANY_ORDER, FIFO_ORDER, 0, [("put", 0, None, None, False, False),  # unget, run
                                        ("put", 0, None, None, False, False), ("get", 1),
                                        ("unget",), ("get", 1)])
    @example(ANY_ORDER, FIFO_ORDER, 0, [("put", 0, None, 1, False, False),  # released, run
                                        ("put", 0, None, None, False, False), ("tick",),
                                        ("tick",), ("get", 5)])
    @example(FIFO_ORDER, LIFO_ORDER, 2, [("put", 0, None, None, False, True),  # plain copies
                                         ("put", 0, None, None, False, True),  # over the limit
                                         ("put", 0, None, None, False, True), ("get", 5)])
    @example(ANY_ORDER, FIFO_ORDER, 0, [("put", 0, None, None, False, True),  # a plain run
                                        ("put", 1, None, None, False, False),  # spilled
                                        ("policies", DEADLINE_ORDER, FIFO_ORDER, 1),
                                        ("get", 5)])
    @example(FIFO_ORDER, LIFO_ORDER, 3, [("put", 0, None, None, False, True),  # a fold past
                                         ("put_many", [(0, None, None, False, True)] * 3),
                                         ("get", 5)])                          # the limit
    @example(ANY_ORDER, FIFO_ORDER, 0, [("put_many", [(0, None, None, False, True),  # a run,
                                                      (0, None, None, True, True),   # older,
                                                      (0, None, 3, False, True)]),   # held
                                        ("tick",), ("tick",), ("tick",), ("get", 5)])
    @given(st.sampled_from(ORDERS), st.sampled_from(DISCARDS), st.integers(0, 6), operations)
    def test_same_answers_as_the_model(self, order: int, discard: int, limit: int,
                                       ops: list[tuple[Any, ...]]) -> None:
        """Delivery order, discards, expiry and StartTime match the model after any operations."""
        queue, model = EventQueue(order, discard, limit), Model(order, discard, limit)
        now, seq = 0.0, 100
        entries: list[Entry] = []
        last_batch: list[Entry] = []
        model_batch: list[Entry] = []
        for op in ops:
            if op[0] in ("put", "put_many"):
                items, wanted = [], []
                for priority, deadline, start, older, plain in (
                        [op[1:]] if op[0] == "put" else op[1]):
                    seq += 1
                    event = FakeEvent(-seq if older else seq, start, priority, deadline)
                    entry = Entry(event, priority, deadline)  # type: ignore[arg-type]
                    if not plain:
                        entries.append(entry)  # (the channel removes entries: holders)
                    items.append(event if plain else entry)
                    wanted.append(entry)
                if op[0] == "put":
                    got = queue.put(items[0], now)
                else:  # an inbox folded in: as the puts one by one
                    got = queue.put_many(items, now)
                assert held(got) == held([lost for e in wanted for lost in model.put(e, now)])
                last_batch = model_batch = []
            elif op[0] == "get":
                queue.release_held(now)
                model.release(now)
                got_expired: list[Entry] = []
                want_expired: list[Entry] = []
                last_batch = queue.get_batch(op[1], now, got_expired)
                want = model.get_batch(op[1], now, want_expired)
                assert held(last_batch) == held(want)
                assert held(got_expired) == held(want_expired)
                model_batch = want
            elif op[0] == "unget":
                queue.unget(last_batch)
                model.ready.extend(model_batch)
                last_batch = model_batch = []
            elif op[0] == "remove" and entries:
                entry = entries[op[1] % len(entries)]
                assert queue.remove(entry) == model.remove(entry)
            elif op[0] == "tick":
                now += 1.0
            elif op[0] == "policies":
                assert held(queue.set_policies(*op[1:], now=now)) == held(
                    model.set_policies(*op[1:], now=now))
                last_batch = model_batch = []
            assert len(queue) == len(model.ready) + len(model.held)
        queue.release_held(now)
        model.release(now)
        assert queue.ready() == len(model.ready)
        assert held(queue.snapshot()) == held(model._sorted_ready())
        rest: list[Entry] = []
        assert held(queue.get_batch(1000, now, rest)) == held(model.get_batch(1000, now, []))


class TestExpiry:
    def test_expired_copies_go_before_a_live_victim(self) -> None:
        """Section 2.5.5.3: "If an event is not delivered within a specified time, then it
        should be discarded": over MaxEventsPerConsumer, expired copies are discarded
        before the DiscardPolicy picks a live one, and counted as expired."""
        queue = EventQueue(FIFO_ORDER, FIFO_ORDER, 2)
        old = Entry(FakeEvent(1, None), 0, None)  # type: ignore[arg-type]
        expiring = Entry(FakeEvent(2, None), 0, 5.0)  # type: ignore[arg-type]
        new = Entry(FakeEvent(3, None), 0, None)  # type: ignore[arg-type]
        queue.put(old, 0.0)
        queue.put(expiring, 0.0)
        assert queue.put(new, 10.0) == [expiring]
        assert (queue.expired, queue.discarded) == (1, 0)
        assert queue.get_batch(10, 10.0) == [old, new]

    def test_next_expiry_bounds_the_queued_deadlines(self) -> None:
        """Section 2.5.5.3: "If an event is not delivered within a specified time, then it
        should be discarded": the sweep runs only once a deadline may have passed; after
        it, ``next_expiry`` is the soonest deadline still queued, and the channel's
        account is told."""

        class Account:
            soonest = math.inf

            def expires_at(self, deadline: float) -> None:
                self.soonest = min(self.soonest, deadline)

        queue = EventQueue(FIFO_ORDER, FIFO_ORDER, 0)
        queue.account = account = Account()
        later = Entry(FakeEvent(1, None), 0, 7.0)  # type: ignore[arg-type]
        never = Entry(FakeEvent(2, None), 0, None)  # type: ignore[arg-type]
        queue.put_many([later, FakeEvent(5, None, 0, 3.0)], 0.0)  # type: ignore[list-item]
        queue.put(never, 0.0)
        assert queue.next_expiry == 3.0 and account.soonest == 3.0
        assert queue.expire(2.0) == []
        assert [e.event.seq for e in queue.expire(4.0)] == [5]
        assert queue.next_expiry == 7.0


class TestRun:
    def test_equal_keys_in_seq_order_need_no_heap(self) -> None:
        """Entries of one priority arriving in order wait in the run, not the heap."""
        queue = EventQueue()
        entries = [Entry(FakeEvent(n, None), 0, None) for n in range(5)]  # type: ignore[arg-type]
        for entry in entries:
            queue.put(entry, 0.0)
        assert queue._order == [] and list(queue._run) == entries
        assert queue.get_batch(10, 0.0) == entries

    def test_a_higher_priority_spills_the_run_and_goes_first(self) -> None:
        """An entry with another key moves the run into the heap, and the order holds."""
        queue = EventQueue(PRIORITY_ORDER)
        low = [Entry(FakeEvent(n, None), 0, None) for n in range(3)]  # type: ignore[arg-type]
        high = Entry(FakeEvent(3, None), 5, None)  # type: ignore[arg-type]
        for entry in [*low, high]:
            queue.put(entry, 0.0)
        assert not queue._run and len(queue._order) == 4
        assert queue.get_batch(10, 0.0) == [high, *low]
        later = Entry(FakeEvent(4, None), 0, None)  # type: ignore[arg-type]
        queue.put(later, 0.0)  # the heap is empty again: back to the run
        assert list(queue._run) == [later] and queue._order == []
