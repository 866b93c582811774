"""Event Acknowledgment (section 3.7): what an Ack proxy supplier gave and the consumer
has not acknowledged yet (cosnotify/channel/ack.py has the proxies).

Strategy: :class:`_Ack`, mixed into the push and pull Ack proxy suppliers,
keeps each SequenceNumber given and its entries (``_unacked``) with when it
was given (``_given_at``), and one timer for the oldest: RetryInterval after
a number was given, it is given again (the proxy kind's ``_redeliver``) --
after a backoff while the consumer is down (RetryInterval doubled each
round, up to max_backoff; a new consumer starts without it).
Everything that ends a number's life goes through here, each entry released
once: an ``acknowledge``; an expiry (``_expire_number``: past its deadline,
never given again); DeliveryReliability switched back to None
(``_settle_unacked``: delivered); a teardown (``_forget_unacked``). A
number whose push call is under way (``_in_flight``) is left to that call:
``_returned`` or ``_not_given`` settle it when the call ends. A number a
pull has taken and not given yet may be acknowledged meanwhile (``_late``):
it is released once given. docs/persistence.md states these promises.
"""

from __future__ import annotations

import logging
from typing import Any

from omniORB import CORBA

import CosNotification

from cosnotify.channel import pull_supplier as pls
from cosnotify.channel.proxy import retry_interval
from cosnotify.channel.queue import Entry
from cosnotify.channel.topology import (
    COMMUNICATION_FAILURES,
    retries_for_ever,
    store_failures,
)

__all__ = ["SEQUENCE_NUMBER", "stamped"]

log = logging.getLogger("cosnotify.channel")

SEQUENCE_NUMBER = "SequenceNumber"
_MASK = 0x7FFFFFFF
_STORED = 0x3FFFFFFF  # store ids as numbers: below 2^30
_COUNTED = 1 << 30  # counted numbers on a durable proxy: from 2^30
_BLOCK = 10_000  # counted numbers reserved in the store at a time


def stamped(structured: Any, number: int) -> Any:
    """``structured`` with a SequenceNumber header field of ``number`` (replacing one)."""
    header = structured.header
    variable = [p for p in header.variable_header if p.name != SEQUENCE_NUMBER]
    variable.append(CosNotification.Property(SEQUENCE_NUMBER, CORBA.Any(CORBA.TC_long, number)))
    return CosNotification.StructuredEvent(
        CosNotification.EventHeader(header.fixed_header, variable),
        structured.filterable_data, structured.remainder_of_body)


class _Ack:
    """What every Ack proxy supplier shares: numbers, the unacknowledged, acknowledge."""

    acknowledges = True

    _lock: Any
    _qos: dict[str, Any]
    _channel: Any
    _service: Any
    _queue: Any
    _check_alive: Any
    _kick: Any
    _counting: bool
    _n_delivered: int

    def _init_ack(self) -> None:
        self._next_number: int | None = None  # None: not read from the store yet
        self._reserved = 0  # numbers below this are reserved in the store
        #: SequenceNumber -> the entries it names, given and not yet acknowledged.
        self._unacked: dict[int, list[Entry]] = {}
        #: SequenceNumber -> when it was last given (clock seconds); later than that
        #: while resends back off from a consumer that is down (_ack_due): it is due
        #: again RetryInterval after this time.
        self._given_at: dict[int, float] = {}
        self._unanswered = 0
        #: Rounds in a row whose resend found the consumer down (_ack_due's backoff).
        self._down_rounds = 0
        #: What the last resend raised (None: it went; push proxies: ack.py).
        self._resend_failure: BaseException | None = None
        self._ack_timer: Any = None
        #: SequenceNumber -> the entry given again to a structured pull consumer, back in
        #: the queue until pulled again: an acknowledge of it takes it from there.
        self._requeued: dict[int, Entry] = {}
        #: ... and when it went back (only what went back long ago is forgotten).
        self._requeued_at: dict[int, float] = {}
        #: Numbers acknowledged while being pulled again (-> when): released once given.
        #: An entry that expired or was discarded meanwhile is never given: purged.
        self._late: dict[int, float] = {}
        #: Store ids released by a late acknowledge after a restart: not looked for again.
        self._released_before: set[int] = set()
        #: Numbers whose push call has not returned: neither expired nor settled under it
        #: (a call that fails puts its entries back on the retry path).
        self._in_flight: set[int] = set()
        #: Entries given, never acknowledged, then expired (let go, not given again): they
        #: stay counted delivered (they were; a counter never goes down) and are counted
        #: here, not in ``expired`` (which counts copies that expired before they were
        #: given): ``unacknowledged_expired`` in the counters (counters.py).
        self._n_given_expired = 0

    def _acking(self) -> bool:
        return bool(self._qos.get("DeliveryReliability", 0) == 1)

    def _on_connected(self) -> None:
        with self._lock:
            self._unanswered = 0  # a new consumer (allow_reconnect) left nothing unanswered
            # ... and no backoff of the old one's resends (review 105): what waits for
            # one is due again after RetryInterval, as the push path's retry is dropped.
            self._down_rounds = 0
            self._resend_failure = None
            now = self._service.clock.now()
            later = [n for n, at in self._given_at.items() if at > now]
            for number in later:
                self._given_at[number] = now
            if later and self._ack_timer is not None:
                self._ack_timer.cancel()
                self._ack_timer = None
                self._arm_ack_timer()
        super()._on_connected()  # type: ignore[misc]  # the proxy supplier's (a mixin)

    def _number(self, entry: Entry) -> int:
        """The SequenceNumber of ``entry`` (lock held): kept once given."""
        if entry.number < 0:
            entry.number = (entry.stored & _STORED) if entry.stored else self._count()
        return entry.number

    def _count(self) -> int:
        """The next counted number (lock held); see the module docstring."""
        counter = self._counter_name()
        if counter is None:  # nothing survives a restart: 0, 1, 2 ...
            number = self._next_number or 0
            self._next_number = (number + 1) & _MASK
            return number
        store = self._service.topology.store
        if self._next_number is None:
            self._next_number = self._reserved = store.peek_value(counter)
        number = self._next_number
        if number >= self._reserved:
            reserved = number + _BLOCK
            with store_failures():  # StoreError -> NO_RESOURCES: nothing reserved nor taken
                store.raise_value(counter, reserved)
            self._reserved = reserved
        self._next_number = number + 1
        return _COUNTED | (number & _STORED)

    def _counter_name(self) -> str | None:
        from cosnotify.channel.topology import Topology, persistent

        if self._service.topology is None or self._channel._event_log is None \
                or not persistent(self):
            return None
        return f"ack/{Topology.path(self)}"

    def _interval(self) -> float:
        """RetryInterval, at least ``proxy.MIN_RETRY_INTERVAL`` (a 0 would give again,
        or back off by, nothing at all)."""
        return retry_interval(self._qos)

    def _given(self, number: int, entries: list[Entry], push: bool = False) -> bool:
        """``entries`` went to the consumer as ``number``; they wait for its acknowledge
        -- unless it came while they were being given again (acknowledge). With
        ``push`` (before the call): False, nothing recorded, if the proxy was torn
        down, disconnected or suspended since its delivery task looked."""
        with self._lock:
            destroyed = getattr(self, "_destroyed", False)
            if push and (destroyed or getattr(self, "_suspended", False)
                         or not getattr(self, "_connected", False)):
                self._in_flight.discard(number)
                return False
            self._requeued.pop(number, None)  # pulled again: acknowledged as given now
            self._requeued_at.pop(number, None)
            # Acknowledged while being pulled again, or a pull whose proxy was torn down
            # after it took these (its teardown is over): delivered, held by nobody.
            done = number in self._late or destroyed
            if done:
                self._late.pop(number, None)
            else:
                self._unacked[number] = entries
                self._given_at[number] = self._service.clock.now()
                self._holds(entries)  # type: ignore[attr-defined]  # the proxy's
                self._arm_ack_timer()
        if done:
            self._release(entries)
        return True

    def _release(self, entries: list[Entry]) -> None:
        """Release ``entries`` (no lock held) and, if any, make room known: a waiting
        pull wakes, a push proxy's delivery looks again (copies on disk may come)."""
        if entries:
            self._channel._released(entries)
            self._kick()

    def _not_given(self, number: int) -> bool:
        """The call giving ``number`` failed: it goes back to the queue's retry path --
        unless it was acknowledged, or settled by a teardown, during the call (False:
        released already, so not the retry path's, nor to be released again)."""
        with self._lock:
            self._in_flight.discard(number)
            mine = self._unacked.pop(number, None) is not None
            self._given_at.pop(number, None)
        return mine

    def _returned(self, number: int) -> None:
        """The call giving ``number`` returned: if acknowledgment was switched off
        meanwhile, what it gave counts as delivered (see :meth:`_qos_changed`)."""
        with self._lock:
            self._in_flight.discard(number)
            if self._acking():
                self._arm_ack_timer()  # switched off and on during the call: stopped
                return
            entries = self._unacked.pop(number, None)
            self._given_at.pop(number, None)
        if entries:
            self._release(entries)

    def _arm_ack_timer(self) -> None:
        """Wake when the oldest unacknowledged number is due again (lock held)."""
        if self._ack_timer is not None or not self._given_at:
            return
        when = min(self._given_at.values()) + self._interval()
        self._ack_timer = self._service.clock.call_at(when, self._ack_due)

    def acknowledge(self, sequence_numbers: list[int]) -> None:
        """The consumer has these (section 3.7.6): they leave the queue and the store.
        A number already acknowledged, or never given, is ignored (3.7.5.2: it may be
        a resend). A number given, and put back for a pull again after RetryInterval,
        was received all the same: it leaves the queue before it is pulled again."""
        self._check_alive()
        done: list[Entry] = []
        unknown: list[int] = []
        durable = self._queue.durable
        if durable is not None and durable.restored and durable.small_ids is None:
            # Once, outside the lock: may a number be read as a store id (ack_stored)?
            durable.small_ids = self._channel._event_log.all_below(durable.path, _STORED + 1)
        with self._lock:
            for number in sequence_numbers:
                entries = self._unacked.pop(number, None)
                if entries is not None:
                    del self._given_at[number]
                    done.extend(entries)
                    continue
                entry = self._requeued.pop(number, None)
                self._requeued_at.pop(number, None)
                if entry is None:
                    unknown.append(number)
                elif self._queue.remove(entry):
                    self._queue.removed -= 1  # delivered, not removed
                    done.append(entry)
                    if self._counting:
                        self._n_delivered += 1  # uncounted when it went back
                else:
                    # Taken by a pull that has not given it yet (see _given); one that
                    # expired or was discarded is never given: forgotten after a while.
                    self._late[number] = self._service.clock.now()
            on_disk: list[int] = []
            if unknown:
                done.extend(self._acknowledge_stored(unknown, on_disk))
            if self._late:
                stale = self._service.clock.now() - 2 * self._interval()
                for number in [n for n, at in self._late.items() if at < stale]:
                    del self._late[number]
            if done:
                self._unanswered = 0
            durable = self._queue.durable
        self._channel._released(done)
        if on_disk:
            self._channel._event_log.finish_release(durable.path, on_disk)
        if done:
            self._kick()  # room in memory: events waiting on disk may come

    def _acknowledge_stored(self, numbers: list[int], on_disk: list[int]) -> list[Entry]:
        """Numbers this proxy does not know as given, on a durable structured proxy
        (lock held): store ids of events given before a restart. The proxy cannot tell
        which of its events it gave before it restarted; the consumer says it has
        them, so they go: from the queue (returned), or from the store (``on_disk``
        gets their ids, announced to the log; the caller writes it after the lock)."""
        log_ = self._channel._event_log
        durable = self._queue.durable
        if durable is None or log_ is None or not durable.restored \
                or not isinstance(self, pls.StructuredProxyPullSupplier):
            return []
        # Only ids from before the restart (below every id admitted since) that are
        # the numbers themselves (below 2^30); each looked for once.
        first = durable.first_live
        bound = min(_STORED + 1, first) if first is not None else _STORED + 1
        wanted = {n for n in numbers if 0 < n < bound and n not in self._released_before}
        if not wanted:
            return []
        self._released_before |= wanted
        found = [entry for entry in self._queue._live_entries() if entry.stored in wanted]
        for entry in found:
            self._queue.remove(entry)
            self._queue.removed -= 1  # delivered before the restart, not removed
            wanted.discard(entry.stored)
        # In memory and not queued: taken by a pull that has not given it yet. It is
        # released once given (the late path), not from the store under the pull.
        now = self._service.clock.now()
        for stored in [i for i in wanted if i in durable.resident]:
            wanted.discard(stored)
            self._late[stored] = now
        if self._counting:
            self._n_delivered += len(found)
        # On disk: only if every id from before the restart is below 2^30, so the number
        # is the id (a wrapped number is not).
        if wanted and (durable.small_ids or (first is not None and first <= _STORED + 1)):
            on_disk.extend(sorted(wanted))
            log_.begin_release(durable, on_disk)
        return found

    def _ack_due(self) -> None:
        """RetryInterval passed for some numbers: give them again."""
        with self._lock:
            self._ack_timer = None
            if getattr(self, "_destroyed", False):
                return
            now = self._service.clock.now()
            limit = now - self._interval()
            due = sorted(n for n, at in self._given_at.items() if at <= limit)
            if getattr(self, "_suspended", False) or not getattr(self, "_connected", False):
                due = []  # nothing can be given now; resume_connection carries on
                for number, at in self._given_at.items():
                    if at <= limit:
                        self._given_at[number] = now
            expired = self._expire_unacked(due, now)
            waiting = self._waiting()
            if any(number not in waiting for number in due):
                self._unanswered += 1  # a round of resends (not of ones still waiting)
            durable = self._queue.durable is not None
            retries = int(self._qos.get("Retries", 3))
            # A consumer that takes the resends and never acknowledges is given up after
            # Retries rounds (section 3.7.7.3); one whose resends fail, as a push that
            # fails (topology.retries_for_ever; review 103: it was given up while down).
            give_up = bool(due) and not durable and self._unanswered > retries and \
                not retries_for_ever(self, self._resend_failure)
            if not give_up:
                # A consumer down (its last resend failed to reach it) is given them
                # again after a backoff, as a push is: RetryInterval doubled each round,
                # up to max_backoff (review 104: every RetryInterval, for ever).
                failure = self._resend_failure
                self._down_rounds = self._down_rounds + 1 \
                    if isinstance(failure, COMMUNICATION_FAILURES) else 0
                later = 0.0
                if self._down_rounds:
                    interval = self._interval()
                    later = max(0.0, min(interval * 2.0 ** min(self._down_rounds, 64),
                                         self._service.config.max_backoff) - interval)
                for number in due:
                    self._given_at[number] = now + later
                self._redeliver(due)
                self._arm_ack_timer()
            # Giving up: no timer again (its numbers are past due, so it would fire at
            # once, over and over, until the worker's teardown cancels it).
        if expired:  # a store write: not on the clock's thread
            self._service.off_clock(self._release, expired)
        if give_up:
            log.warning("%r: %d event(s) unacknowledged after %d resends; disconnecting",
                        self, len(due), retries)
            why = f"{len(due)} event(s) unacknowledged after {retries} resends"
            self._service.off_clock(self._give_up, why)  # a teardown: a store write too

    def _give_up(self, why: str) -> None:
        """The teardown a give-up decided (:meth:`_ack_due`), on a worker: not if the
        consumer answered meanwhile (an acknowledge) or a new one connected
        (``allow_reconnect``) -- then the ack timer runs again for what is left."""
        with self._lock:
            if getattr(self, "_destroyed", False):
                return
            if self._unanswered <= int(self._qos.get("Retries", 3)):
                self._arm_ack_timer()
                return
        self._teardown(True, why)  # type: ignore[attr-defined]

    def _expire_unacked(self, due: list[int], now: float) -> list[Entry]:
        """Take from ``due`` (in place) and from the unacknowledged the entries whose
        deadline has passed (:meth:`_expire_number`); returned, to release after the
        lock (lock held)."""
        gone: list[Entry] = []
        for number in list(due):
            if not self._expire_number(number, now, gone):
                due.remove(number)
        return gone

    def _expire_number(self, number: int, now: float, gone: list[Entry]) -> bool:
        """Drop from ``number``'s entries those past their deadline, onto ``gone``,
        counted as expired: an event is delivered within its expiry limits (section
        2.5.5.1), so one past them is never given again, and its copy leaves the store.
        What is left is given again under the number; a number with nothing left is
        forgotten (False). A number whose call is in flight is left alone (lock held)."""
        entries = self._unacked[number]
        if number in self._in_flight:
            return True
        live = [e for e in entries if e.deadline is None or e.deadline > now]
        if len(live) == len(entries):
            return True
        expired = [e for e in entries if e.deadline is not None and e.deadline <= now]
        gone.extend(expired)
        # Delivered once already (queued = delivered + ... + expired + ...): counted apart.
        self._n_given_expired += len(expired)
        if live:
            self._unacked[number] = live
            return True
        del self._unacked[number]
        del self._given_at[number]
        return False

    def _expire_held(self, now: float) -> tuple[list[Entry], float]:
        """The channel's sweep (supplier_proxy.py): the unacknowledged copies past their
        deadline leave now (``_expire_number``), not at the next ack timer (review 141:
        they filled MaxQueueLength meanwhile); with what the proxy kind holds."""
        gone, soonest = super()._expire_held(now)  # type: ignore[misc]  # a mixin
        before = len(gone)
        for number in list(self._unacked):
            self._expire_number(number, now, gone)
        if len(gone) > before:  # numbers due again give what they hold now (ack.py)
            for name in ("_resends", "_repull"):
                due = getattr(self, name, None)
                if due:
                    setattr(self, name, [(n, self._unacked[n]) for n, _ in due
                                         if n in self._unacked])
        for entries in self._unacked.values():
            for entry in entries:
                if entry.deadline is not None and entry.deadline < soonest:
                    soonest = entry.deadline
        return gone, soonest

    def _redeliver(self, numbers: list[int]) -> None:
        """Give these numbers again (lock held)."""
        raise NotImplementedError

    def _waiting(self) -> set[int]:
        """Numbers due again and not yet given again (lock held): the consumer has not
        had the chance to answer them, so they are no new round of resends."""
        return set()

    def _settle_unacked(self) -> list[Entry]:
        """DeliveryReliability back to None (section 3.7.8.1: "Any reliable delivery
        mechanism is not applied"): what was given and not acknowledged counts as
        delivered, never given again; returned, to release after the lock. A number
        whose call is in flight is settled when it returns (:meth:`_returned`); an
        entry put back for a pull again leaves the queue (lock held)."""
        if self._ack_timer is not None:
            self._ack_timer.cancel()
            self._ack_timer = None
        gone: list[Entry] = []
        for number in [n for n in self._unacked if n not in self._in_flight]:
            gone.extend(self._unacked.pop(number))
            self._given_at.pop(number, None)
        for entry in self._requeued.values():
            if self._queue.remove(entry):
                self._queue.removed -= 1  # delivered, not removed (as acknowledge does)
                gone.append(entry)
                if self._counting:
                    self._n_delivered += 1
        self._requeued.clear()
        self._requeued_at.clear()
        self._late.clear()
        return gone

    def _forget_unacked(self) -> list[Entry]:
        """Teardown: everything unacknowledged goes, returned to release after the lock
        (lock held)."""
        if self._ack_timer is not None:
            self._ack_timer.cancel()
            self._ack_timer = None
        entries = [e for batch in self._unacked.values() for e in batch]
        self._unacked.clear()
        self._given_at.clear()
        self._requeued.clear()  # still queued: the queue's teardown releases them
        self._requeued_at.clear()
        self._late.clear()
        return entries
