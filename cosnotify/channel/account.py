"""MaxQueueLength's count: the events queued anywhere in a channel (section 2.5.7).

The count holds an event, once however many queues hold a copy of it, from the
moment its routing reserves a slot until its last copy leaves a queue. Each
event carries ``refs``, how many things hold it for the count: the router while
it routes the event, and each queued copy. When ``refs`` reaches 0 the event
leaves the count. ``-1`` marks an event the limit discarded to make room.

Counting has *epochs*. One starts each time the limit goes from 0 to a number
or back, and the count starts again from nothing. An event is counted only in
the epoch stamped on it (``Event.counted``): by its own routing, or by
``adopt`` when a limit is set and the copies already queued are counted.
Everything else about it is ignored until then: holds, releases, and the
router's last reference. Turning the limit off and on while events are routed
or stored therefore never takes the count below what it holds. It never counts
an event twice, and never marks an event discarded that was not.

Each counted copy carries the epoch too (``Entry.counted``), and only a counted
copy's release lets its event go: a copy taken before the count started, or
while it scanned the queues, neither holds its event nor releases it.
``adopt`` counts only the copies still queued when it runs, so a copy taken
during the scan never holds its event for good. It skips an event already
counted in this epoch, and one the limit discarded. A copy offered after its
event was discarded is not queued (``hold`` says False).

What is not exact, and only while the limit is being set as events flow: an
event adopted while it is still being routed counts without the router's
reference, and when its counted copies have all gone, copies offered after that
are queued uncounted. A plain copy (routed before any limit) of an event the
limit then discarded is still delivered. The count can be low for a while,
never high for good.

Expired copies leave the count as soon as the limit is reached: section
2.5.5.3, "If an event is not delivered within a specified time, then it should
be discarded", and the count is of undelivered events. ``next_expiry`` is a
lower bound of the deadlines of the copies queued in the channel (each queue
lowers it, queue.py, and so does a proxy that holds copies outside its queue:
supplier_proxy ``_holds``); when the channel is full and it has passed, the
channel sweeps the expired copies out of its queues and proxies, releasing
them here, before it rejects an event (RejectNewEvents TRUE) or picks a
victim (admin_props.py).
"""

from __future__ import annotations

import heapq
import math
import threading
from typing import Any

from omniORB import CORBA

from cosnotify.channel.queue import DEADLINE_ORDER, LIFO_ORDER, PRIORITY_ORDER, Entry

__all__ = ["QueueAccount"]


class QueueAccount:
    """Events queued in the channel, against MaxQueueLength (module docstring)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.limit = 0
        self.reject = False
        self.discard_policy = 0
        self.count = 0
        #: The current epoch; an Event's ``counted`` of 0 is never one.
        self.epoch = 1
        self._victims: list[tuple[float, int, Any]] = []
        #: No copy queued in the channel expires before this (module docstring).
        self.next_expiry = math.inf

    def _key(self, event: Any) -> float:
        policy = self.discard_policy
        if policy == LIFO_ORDER:
            return float(-event.seq)
        if policy == PRIORITY_ORDER:
            return float(event.priority)
        if policy == DEADLINE_ORDER:
            return event.deadline if event.deadline is not None else math.inf
        return float(event.seq)

    def set_limit(self, limit: int) -> bool:
        """Apply MaxQueueLength (lock held); True when counting starts, so the caller
        adopts what is queued. Going from 0 to a number or back starts a new epoch."""
        counting = bool(self.limit)
        self.limit = limit
        if bool(limit) != counting:
            self.epoch += 1
            self.count = 0
            self._victims = []
        return bool(limit) and not counting

    def reserve(self, event: Any) -> tuple[list[Any], int]:
        """Take a slot for ``event``, about to be routed (the router holds it: one
        reference); returns the events to discard to make room, and the epoch to give
        ``admitted``. Raises IMP_LIMIT when full and RejectNewEvents is TRUE."""
        victims = []
        with self.lock:
            while self.limit and self.count >= self.limit:  # 0: turned off meanwhile
                if self.reject:
                    raise CORBA.IMP_LIMIT(0, CORBA.COMPLETED_NO,
                                          f"channel holds MaxQueueLength={self.limit} events")
                victim = self._pop_victim()
                if victim is None:
                    break
                victims.append(victim)
                self.count -= 1
            self.count += 1
            event.refs = 1
            event.counted = epoch = self.epoch
        return victims, epoch

    def _pop_victim(self) -> Any:
        while self._victims:
            event = heapq.heappop(self._victims)[2]
            if event.counted == self.epoch and event.refs > 0:
                event.refs = -1  # discarded: its later copies are not queued
                return event
        return None

    def hold(self, copy: Any) -> bool:
        """A queue is about to take ``copy`` (an Entry, or a plain copy: its Event):
        count it before any worker can deliver it. False: the limit discarded the
        event, and the copy must not be queued. An event this epoch does not count,
        or whose counted copies have all gone, stays uncounted with all its copies,
        and so does a plain copy."""
        entry = copy if isinstance(copy, Entry) else None
        event = copy if entry is None else entry.event
        with self.lock:
            if event.counted != self.epoch:
                return True
            if event.refs < 0:
                return False
            if event.refs > 0 and entry is not None:
                event.refs += 1
                entry.counted = self.epoch
            return True

    def admitted(self, event: Any, epoch: int) -> None:
        """Routing is over: drop the router's reference (taken in ``epoch``); the event
        counts while queued."""
        with self.lock:
            if epoch != self.epoch or event.counted != epoch or event.refs <= 0:
                return  # counting started again since, or the limit discarded it
            event.refs -= 1
            if event.refs > 0:
                heapq.heappush(self._victims, (self._key(event), event.seq, event))
                if len(self._victims) > 4 * self.count + 64:
                    self._victims = [t for t in self._victims if t[2].refs > 0]
                    heapq.heapify(self._victims)
            else:
                self.count -= 1  # no copy queued, or every copy already delivered

    def release(self, entries: list[Any]) -> None:
        """These copies left their queues: each the count holds lets its event go."""
        with self.lock:
            epoch = self.epoch
            for entry in entries:
                event = entry.event
                if entry.counted == epoch and event.counted == epoch and event.refs > 0:
                    entry.counted = 0  # released once
                    event.refs -= 1
                    if event.refs == 0:
                        self.count -= 1

    def full(self) -> bool:
        return bool(self.limit) and self.count >= self.limit

    def expires_at(self, deadline: float) -> None:
        """A copy expiring at ``deadline`` was queued (or, after a sweep: the soonest
        deadline still queued): lower ``next_expiry`` to it."""
        if deadline < self.next_expiry:
            with self.lock:
                self.next_expiry = min(self.next_expiry, deadline)

    def sweep_begins(self) -> None:
        """The channel sweeps every queue: each one it visits gives its soonest
        deadline again (``expires_at``), and so does each copy queued meanwhile."""
        with self.lock:
            self.next_expiry = math.inf

    def rerank(self) -> None:
        """Re-key the victims after the DiscardPolicy changed."""
        with self.lock:
            self._victims = [(self._key(t[2]), t[1], t[2]) for t in self._victims if t[2].refs > 0]
            heapq.heapify(self._victims)

    def adopt(self, queued: list[tuple[Any, list[Any]]]) -> None:
        """Count events that were queued before accounting started, but those this
        epoch already counts (routed since the limit was set)."""
        with self.lock:
            for event, entries in queued:
                if event.counted == self.epoch or event.refs < 0:
                    continue  # counted already, or discarded (its copies are going)
                # Only the copies still queued now: one taken since the scan was
                # released while its event was not counted, and would hold it for good.
                entries = [entry for entry in entries if entry.alive]
                if not entries:
                    continue
                for entry in entries:
                    entry.counted = self.epoch
                event.holders = entries
                event.refs = len(entries)
                event.counted = self.epoch
                self.count += 1
                heapq.heappush(self._victims, (self._key(event), event.seq, event))
