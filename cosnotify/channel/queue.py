"""A proxy supplier's event queue: OrderPolicy, DiscardPolicy, expiry, StartTime.

Strategy: entries live in two binary heaps with lazy deletion. The *order*
heap gives the next event to deliver under the OrderPolicy; the *discard*
heap (kept only while a limit is set) gives the next victim under the
DiscardPolicy (spec section 2.5.5, "Order Policy" and "Discard Policy").
Both hold ``(key, seq, entry)`` tuples; ``seq`` is the copy's arrival number
(``Entry.seq``: the channel-wide one, or the store id of a persistent copy),
so ties break first-in-first-out and entries are never compared.
Removing an entry only marks it dead; the heaps drop dead tuples as they
surface and are compacted when dead tuples outnumber live ones.

The common case needs no heap: every queued event has the same order key
(one priority, no deadlines, or FifoOrder) and arrives in ``seq`` order. Such
entries wait in a *run*, a plain deque, which pops in exactly the heap's
(key, seq) order without a tuple or a heap operation per entry (the tuple was
a third GC-tracked object per queued copy). The first entry that would break
the run (another key, or an older seq) spills the run into the order heap,
which is then used until it empties. At any time at most one of the two
holds entries.

A *plain* copy (a proxy supplier without priority or lifetime mapping of its
own, nothing to stage or count per copy: ``ProxySupplier._admit_copy``) is
queued as the shared :class:`Event` itself, since its Entry would only repeat
the event's priority, deadline and seq: a run may hold events as well as
entries, and an event's Entry is made when it leaves the run (``get``), or
when anything needs entries of the run (a spill, a discard, expiry, a policy
change, inspection: ``_own_run``). A backlog of plain copies then costs one
slot of a deque per copy, and nothing the garbage collector walks.

Expired events (Timeout / StopTime) are dropped when they reach the front,
and also swept out (``expire``) before MaxEventsPerConsumer discards anything:
section 2.5.5.3, "If an event is not delivered within a specified time, then
it should be discarded", so an expired copy neither takes a live event's place
in the limit nor is kept while a live one is chosen as the victim. The sweep
walks the queue, so it runs only when the limit is reached and ``next_expiry``
(a lower bound of the queued deadlines) says some copy may have expired; the
channel sweeps every queue the same way before MaxQueueLength rejects or
discards (channel.py). Events whose StartTime lies ahead wait in a *held*
heap until released.
The queue is not thread-safe: its owner (the proxy supplier) locks.
"""

from __future__ import annotations

import collections
import heapq
import math
from collections.abc import Iterator
from typing import Any

from cosnotify.channel.event import Event

__all__ = [
    "ANY_ORDER",
    "DEADLINE_ORDER",
    "FIFO_ORDER",
    "LIFO_ORDER",
    "PRIORITY_ORDER",
    "Entry",
    "EventQueue",
]

# The policy constants of CosNotification (section 3.1.3), repeated so this
# module does not depend on the stubs.
ANY_ORDER, FIFO_ORDER, PRIORITY_ORDER, DEADLINE_ORDER, LIFO_ORDER = 0, 1, 2, 3, 4

_INF = math.inf


class Entry:
    """One proxy supplier's copy of an event, with its own priority and deadline."""

    __slots__ = ("alive", "counted", "deadline", "event", "held", "number", "owner", "priority",
                 "seq", "stored")

    def __init__(self, event: Event, priority: int, deadline: float | None) -> None:
        self.event = event
        self.priority = priority
        self.deadline = deadline
        self.alive = True
        self.held = False  # waiting for its StartTime in the held heap
        self.owner: EventQueue | None = None
        #: This copy's place in arrival order: the event's, or for a copy the store
        #: holds, its store id (channel/durable.py: the same whether queued on
        #: arrival or read back from disk).
        self.seq = event.seq
        #: The store's id of the event, for a persistent copy (channel/durable.py); else 0.
        self.stored = 0
        #: The SequenceNumber this copy was given under (ack.py); -1 before.
        self.number = -1
        #: The MaxQueueLength epoch that counts this copy, 0 none (channel/account.py).
        self.counted = 0

    def __repr__(self) -> str:
        return f"<Entry {self.event!r} priority={self.priority} deadline={self.deadline}>"


def _fifo_key(entry: Entry | Event) -> float:
    return 0.0


def _priority_key(entry: Entry | Event) -> float:
    return -entry.priority


def _deadline_key(entry: Entry | Event) -> float:
    return entry.deadline if entry.deadline is not None else _INF


#: The delivery-order key per OrderPolicy; AnyOrder delivers by priority, FIFO among
#: equals (section 2.5.5.2: "by default ... in priority order").
_ORDER_KEYS = {ANY_ORDER: _priority_key, FIFO_ORDER: _fifo_key,
               PRIORITY_ORDER: _priority_key, DEADLINE_ORDER: _deadline_key}
_NOTHING: list[Entry] = []


def _arrival(entry: Entry) -> int:
    return entry.seq


def _discard_key(policy: int, entry: Entry) -> float:
    if policy == LIFO_ORDER:
        return float(-entry.seq)
    if policy == PRIORITY_ORDER:
        return float(entry.priority)
    if policy == DEADLINE_ORDER:
        return entry.deadline if entry.deadline is not None else _INF
    return float(entry.seq)  # FIFO_ORDER and ANY_ORDER: oldest first


class EventQueue:
    """Events waiting for one consumer."""

    # Slots: a routed copy touches a queue nobody touched for a while (one of
    # thousands), and slots keep its fields in the object, not a dict beside it.
    __slots__ = ("_dead_in_order", "_discard", "_held", "_order", "_order_key", "_run",
                 "_run_key", "_size", "accepted", "account", "counting", "discard_policy",
                 "discarded", "durable", "expired", "lock", "max_events", "next_expiry",
                 "order_policy", "removed")

    def __init__(self, order_policy: int = ANY_ORDER, discard_policy: int = ANY_ORDER,
                 max_events: int = 0) -> None:
        self._order: list[tuple[float, int, Entry]] = []
        #: Entries with one order key (``_run_key``), in seq order (module docstring).
        self._run: collections.deque[Entry | Event] = collections.deque()
        self._run_key = 0.0
        self._discard: list[tuple[float, int, Entry]] | None = None
        self._held: list[tuple[float, int, Entry]] = []
        self._size = 0
        self._dead_in_order = 0
        #: The lock of the proxy owning this queue (set by it; used for channel discards).
        self.lock: Any = None
        #: The store side of a durable proxy's queue (channel/durable.py), else None.
        self.durable: Any = None
        #: No queued copy expires before this (a lower bound: copies taken since may
        #: have had it); ``expire`` makes it exact again (module docstring).
        self.next_expiry = _INF
        #: The channel's MaxQueueLength account (channel/account.py), told of a lower
        #: ``next_expiry`` so that the channel knows when to sweep; None: no one is.
        self.account: Any = None
        self.order_policy = order_policy
        self.discard_policy = discard_policy
        self.max_events = max_events
        #: Counters (cosnotify.stats), bumped under the owner's lock like everything
        #: here: copies put, discarded by MaxEventsPerConsumer, dropped expired,
        #: removed by the channel (MaxQueueLength). ``counting`` False: only the first
        #: is skipped (the others are off the per-event path).
        self.counting = True
        self.accepted = 0
        self.discarded = 0
        self.expired = 0
        self.removed = 0
        self.set_policies(order_policy, discard_policy, max_events)

    # -- configuration ----------------------------------------------------------
    def set_policies(self, order_policy: int, discard_policy: int, max_events: int,
                     now: float | None = None) -> list[Entry]:
        """Change policies, reordering what is queued; returns entries discarded
        because the new limit is lower than the current length (expired ones first,
        given ``now``)."""
        ready = [t[2] for t in self._order if t[2].alive] + [e for e in self._own_run() if e.alive]
        self.order_policy, self.discard_policy, self.max_events = (
            order_policy, discard_policy, max_events)
        self._order_key = _ORDER_KEYS[order_policy]
        self._order = [(self._order_key(e), e.seq, e) for e in ready]
        heapq.heapify(self._order)
        self._run.clear()
        self._dead_in_order = 0
        self._discard = None  # built lazily, the first time the limit is exceeded
        return self._enforce_limit(now)

    # -- adding -------------------------------------------------------------------
    def put(self, entry: Entry | Event, now: float) -> list[Entry]:
        """Queue ``entry`` (or a plain copy: the event itself, see the module
        docstring); returns the entries discarded to respect MaxEventsPerConsumer
        (possibly the one just queued, under LifoOrder)."""
        if self.counting:
            self.accepted += 1
        if not isinstance(entry, Entry):
            start = entry.start
            if self._discard is None and not self._order and (start is None or start <= now):
                run = self._run
                key = self._order_key(entry)
                if not run or (key == self._run_key and entry.seq > run[-1].seq):
                    self._run_key = key
                    run.append(entry)
                    self._size += 1
                    deadline = entry.deadline
                    if deadline is not None and deadline < self.next_expiry:
                        self._expires_at(deadline)
                    return (self._enforce_limit(now) if self._size > self.max_events > 0
                            else _NOTHING)
            entry = self._entry_of(entry)  # held, or not in the run's order: an entry
        entry.owner = self
        deadline = entry.deadline
        if deadline is not None and deadline < self.next_expiry:
            self._expires_at(deadline)
        event = entry.event
        start = event.start
        if start is not None and start > now:
            entry.held = True
            heapq.heappush(self._held, (start, entry.seq, entry))
        else:
            self._push_ready(entry)
        self._size += 1
        discard = self._discard
        if discard is not None:
            heapq.heappush(discard, (_discard_key(self.discard_policy, entry), entry.seq, entry))
        if self._size > self.max_events > 0:
            return self._enforce_limit(now)
        return _NOTHING

    def put_many(self, items: list[Entry | Event], now: float) -> list[Entry]:
        """Queue ``items`` in order, as ``put`` of each in turn would (the copies of a
        proxy's inbox: supplier_proxy.py); the entries discarded. Plain copies that
        extend the run while no limit can be reached go on it without a call each."""
        at = 0
        limit = self.max_events
        if self._discard is None and not self._order and (
                limit <= 0 or self._size + len(items) <= limit):
            run = self._run
            key_of = self._order_key
            by_priority = key_of is _priority_key  # AnyOrder's, the default: inline
            key = self._run_key
            last = run[-1].seq if run else None
            soonest = self.next_expiry
            for item in items:
                if isinstance(item, Entry):
                    break
                start = item.start
                if start is not None and start > now:
                    break
                item_key = -item.priority if by_priority else key_of(item)
                if last is None:
                    key = item_key
                elif item_key != key or item.seq <= last:
                    break
                run.append(item)
                last = item.seq
                at += 1
                deadline = item.deadline
                if deadline is not None and deadline < soonest:
                    soonest = deadline
            if soonest < self.next_expiry:
                self._expires_at(soonest)
            if at:
                self._run_key = key
                self._size += at
                if self.counting:
                    self.accepted += at
        dropped: list[Entry] = []
        for item in items[at:]:
            dropped.extend(self.put(item, now))
        return dropped

    def _push_ready(self, entry: Entry) -> None:
        """Put ``entry`` in the delivery order: on the run if it extends it (or starts
        it), else the heap."""
        key = self._order_key(entry)
        if not self._order:
            run = self._run
            if not run or (key == self._run_key and entry.seq > run[-1].seq):
                self._run_key = key
                run.append(entry)
                return
            self._spill()
        heapq.heappush(self._order, (key, entry.seq, entry))

    def _spill(self) -> None:
        """Move the run into the (empty) order heap; in (key, seq) order it is a heap."""
        key = self._run_key
        self._order = [(key, e.seq, e) for e in self._own_run()]
        self._run.clear()

    def _own_run(self) -> collections.deque[Entry]:
        """The run, its plain copies replaced by their entries (module docstring)."""
        run = self._run
        if not all(isinstance(item, Entry) for item in run):
            run = self._run = collections.deque(
                item if isinstance(item, Entry) else self._entry_of(item) for item in run)
        return run  # type: ignore[return-value]

    def _entry_of(self, event: Event) -> Entry:
        """The entry of a plain copy of ``event`` in this queue."""
        entry = Entry(event, event.priority, event.deadline)
        entry.owner = self
        return entry

    def release_held(self, now: float) -> int:
        """Move events whose StartTime has come into the delivery order."""
        moved = 0
        held = self._held
        while held and held[0][0] <= now:
            entry = heapq.heappop(held)[2]
            if entry.alive:
                entry.held = False
                self._push_ready(entry)
                moved += 1
        return moved

    def next_start(self) -> float | None:
        """The earliest StartTime of a held event, if any."""
        while self._held and not self._held[0][2].alive:
            heapq.heappop(self._held)
        return self._held[0][0] if self._held else None

    # -- taking -------------------------------------------------------------------
    def get(self, now: float, expired: list[Entry] | None = None) -> Entry | None:
        """The next deliverable entry, or None; expired entries met on the way are
        dropped (and appended to ``expired`` when given)."""
        run = self._run
        order = self._order
        while run or order:
            entry = run.popleft() if run else heapq.heappop(order)[2]
            if not isinstance(entry, Entry):
                entry = self._entry_of(entry)  # a plain copy
            elif not entry.alive:
                self._dead_in_order -= 1
                continue
            entry.alive = False
            self._size -= 1
            deadline = entry.deadline
            if deadline is not None and deadline <= now:
                self.expired += 1
                if expired is not None:
                    expired.append(entry)
                continue
            if self._dead_in_order > 64 or (self._discard is not None and not self._size):
                self._maybe_compact()
            return entry
        return None

    def get_batch(self, limit: int, now: float, expired: list[Entry] | None = None) -> list[Entry]:
        """Up to ``limit`` deliverable entries, in order."""
        batch: list[Entry] = []
        while len(batch) < limit:
            entry = self.get(now, expired)
            if entry is None:
                break
            batch.append(entry)
        return batch

    def unget(self, entries: list[Entry]) -> None:
        """Put back entries taken by ``get``/``get_batch`` (they keep their place)."""
        if entries and self._run:
            self._spill()  # they go before the run: the heap puts them there
        for entry in entries:
            entry.alive = True
            deadline = entry.deadline
            if deadline is not None and deadline < self.next_expiry:
                self._expires_at(deadline)
            heapq.heappush(self._order, (self._order_key(entry), entry.seq, entry))
            if self._discard is not None:
                heapq.heappush(self._discard, (_discard_key(self.discard_policy, entry),
                                               entry.seq, entry))
            self._size += 1

    def ready(self) -> int:
        """How many queued entries are not held for a future StartTime."""
        return len(self._order) + len(self._run) - self._dead_in_order

    def remove(self, entry: Entry) -> bool:
        """Drop a queued entry (channel-level discard); False if already gone."""
        if not entry.alive or entry.owner is not self:
            return False
        self._kill(entry)
        self.removed += 1
        self._maybe_compact()
        return True

    def drop_expired(self, now: float) -> list[Entry]:
        """Remove every queued entry whose deadline has passed (the caller releases
        them, as those ``get`` drops); ``next_expiry`` is exact after it."""
        gone: list[Entry] = []
        soonest = _INF
        for entry in self._live_entries():
            deadline = entry.deadline
            if deadline is None:
                continue
            if deadline <= now:
                gone.append(entry)
            elif deadline < soonest:
                soonest = deadline
        for entry in gone:
            self._kill(entry)
        self.next_expiry = soonest
        if gone:
            gone.sort(key=_arrival)  # in arrival order, whatever held them
            self.expired += len(gone)
            self._maybe_compact()
        return gone

    def expire(self, now: float) -> list[Entry]:
        """``drop_expired``, if ``next_expiry`` says a queued copy may have expired."""
        if self.next_expiry > now:
            return _NOTHING
        return self.drop_expired(now)

    def _expires_at(self, deadline: float) -> None:
        """A copy with an earlier deadline than ``next_expiry`` was queued."""
        self.next_expiry = deadline
        account = self.account
        if account is not None:
            account.expires_at(deadline)

    def clear(self) -> list[Entry]:
        """Empty the queue, returning what was in it."""
        entries = list(self._live_entries())
        for entry in entries:
            entry.alive = False
        self._order.clear()
        self._run.clear()
        self._held.clear()
        if self._discard is not None:
            self._discard.clear()
        self._size = 0
        self._dead_in_order = 0
        return entries

    def __len__(self) -> int:
        return self._size

    # -- internals -------------------------------------------------------------------
    def _enforce_limit(self, now: float | None = None) -> list[Entry]:
        """Discard down to MaxEventsPerConsumer under the DiscardPolicy; the expired
        copies go first (module docstring), when ``now`` is known. Returns both."""
        discarded: list[Entry] = []
        if self.max_events <= 0 or self._size <= self.max_events:
            return discarded
        if now is not None and self.next_expiry <= now:
            expired = self.drop_expired(now)
            if self._size <= self.max_events:
                return expired
            discarded = list(expired)
        heap = self._discard
        if heap is None:
            heap = self._discard = [(_discard_key(self.discard_policy, e), e.seq, e)
                                    for e in self._live_entries()]
            heapq.heapify(heap)
        swept = len(discarded)
        while self._size > self.max_events and heap:
            entry = heapq.heappop(heap)[2]
            if not entry.alive:
                continue
            self._kill(entry)
            discarded.append(entry)
        self.discarded += len(discarded) - swept
        self._maybe_compact()
        return discarded

    def _kill(self, entry: Entry) -> None:
        entry.alive = False
        self._size -= 1
        if not entry.held:
            self._dead_in_order += 1

    def _live_entries(self) -> Iterator[Entry]:
        seen: set[int] = set()
        for entry in self._own_run():
            if entry.alive:
                seen.add(id(entry))
                yield entry
        for heap in (self._order, self._held):
            for _, _, entry in heap:
                if entry.alive and id(entry) not in seen:
                    seen.add(id(entry))
                    yield entry

    def _maybe_compact(self) -> None:
        # Dead tuples accumulate in the order heap (discards) and in the discard
        # heap (deliveries); rebuild a heap once its dead tuples outnumber live ones.
        # The discard index is dropped when the queue empties: it is rebuilt only
        # if the limit is exceeded again.
        if self._dead_in_order > 64 and self._dead_in_order > self._size:
            self._order = [t for t in self._order if t[2].alive]
            heapq.heapify(self._order)
            self._run = collections.deque(e for e in self._own_run() if e.alive)
            self._dead_in_order = 0
        discard = self._discard
        if discard is not None:
            if not self._size:
                self._discard = None
            elif len(discard) > 2 * self._size + 64:
                self._discard = [t for t in discard if t[2].alive]
                heapq.heapify(self._discard)

    def snapshot(self) -> list[Any]:
        """The live entries in delivery order (for inspection and tests)."""
        live = [t for t in self._order if t[2].alive]
        return [t[2] for t in sorted(live)] + [e for e in self._own_run() if e.alive]
