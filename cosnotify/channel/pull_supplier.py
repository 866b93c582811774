"""Pull-style proxy suppliers: the consumer calls ``pull``/``try_pull``.

Strategy: the consumer's own thread (in-process, or the ORB thread serving
its request) waits on the proxy's condition variable, so a pull proxy needs
no worker. Waits that depend on time (a held StartTime, a PacingInterval)
arm a timer on the service clock that notifies the condition, which keeps
an injected ``ManualClock`` in charge of time. Teardown wakes every waiter,
which then raises ``Disconnected`` (sections 3.3.9.1 and 3.3.13.1).

A proxy the service keeps when it stops (ConnectionReliability=Persistent,
section 2.5.5.1: "upon restart from a failure the notification channel will
automatically re-establish connections to all clients that were connected to
it at the time the failure occurred") is not torn down: ``_service_stops`` wakes its waiting pulls, which raise
``TRANSIENT`` (the client may pull again once the service is back), as does
any pull that comes after. Served, a pull left waiting would be a request in
progress that the POA's destruction waits for, and the server would never stop.

``pull_structured_events(max)`` follows section 3.3.13.1: at most
min(max, MaximumBatchSize) events (none for a ``max`` of 0 or less); no
short batch before PacingInterval has passed since the request arrived
(never, with a PacingInterval of 0); and after an empty interval, the first
event to arrive is returned. A batch larger than the queue can hold
(MaxEventsPerConsumer, or ``ServiceConfig.consumer_queue_cap``) is held to
that: a full queue is a full batch, or the pull would wait for ever while
the DiscardPolicy dropped every further event (review 129). A waiting pull reads MaximumBatchSize and
PacingInterval again when a ``set_qos`` changes them.

A consumer that stops pulling without disconnecting (a killed process) would
keep its proxy, and the events queued for it, for ever. With
``ServiceConfig.idle_pull_consumer_timeout`` set (omniNotify's
``DeadConProxyInterval``, for pull consumers), a connected proxy that has
seen no pull for that long, and has none waiting, is disconnected and
destroyed. It is off by default: a subscription may rightly wait long
between readers.
"""

from __future__ import annotations

import logging
from typing import Any

from omniORB import CORBA

import CosNotifyChannelAdmin as CA

from cosnotify.channel.event import empty_structured_event
from cosnotify.channel.queue import Entry
from cosnotify.channel.supplier_proxy import ProxySupplier, without_unmarshallable
from cosnotify.qos.properties import Level

__all__ = [
    "EventServiceProxyPullSupplier",
    "ProxyPullSupplier",
    "SequenceProxyPullSupplier",
    "StructuredProxyPullSupplier",
]

_NO_ANY = CORBA.Any(CORBA.TC_null, None)

log = logging.getLogger("cosnotify.channel")


class _PullSupplier(ProxySupplier):
    """Blocking and non-blocking takes from the queue."""

    def _connect_consumer(self, consumer: Any) -> None:
        # A pull consumer may be nil: it only loses disconnect callbacks (section 2.6.2).
        self._connect(consumer, required=None, interface=None, allow_nil=True)

    _idle_timer: Any = None
    #: The consumer pulls through the ORB (the server made a servant for this proxy):
    #: events omniORBpy cannot marshal are not given to it (without_unmarshallable).
    _marshalled = False
    #: The service is stopping and keeps this proxy: pulls raise TRANSIENT (docstring).
    _stopping = False

    def __init__(self, admin: Any, proxy_id: int | None) -> None:
        super().__init__(admin, proxy_id)
        #: Pulls in progress (under the lock). The instance's own, not a class
        #: default: ``_inbox_grew`` reads it for every copy routed here.
        self._pulling = 0

    def _on_connected(self) -> None:
        self._update_contribution()
        self._start_offer_relay()
        timeout = self._service.config.idle_pull_consumer_timeout
        if timeout > 0:
            with self._lock:
                self._last_pull = self._service.clock.now()
                self._idle_timer = self._service.clock.call_later(timeout, self._idle_check)

    def _idle_check(self) -> None:
        """Timer: look off the clock's thread (a teardown writes to the store)."""
        self._service.off_clock(self._idle_check_now)

    def _idle_check_now(self) -> None:
        """Destroy the proxy if its consumer has stopped pulling (module docstring)."""
        timeout = self._service.config.idle_pull_consumer_timeout
        clock = self._service.clock
        with self._lock:
            self._idle_timer = None
            if self._destroyed or not self._connected:
                return
            now = clock.now()
            due = now + timeout if self._pulling else self._last_pull + timeout
            if due > now:
                self._idle_timer = clock.call_at(due, self._idle_check)
                return
        log.warning("%r: no pull for %.0f s; destroying the proxy (idle_pull_consumer_timeout)",
                    self, timeout)
        self._teardown(notify_client=True, why=f"no pull for {timeout:.0f} s")

    def _service_stops(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()

    def _on_teardown(self) -> None:
        with self._lock:
            timer, self._idle_timer = self._idle_timer, None
        if timer is not None:
            timer.cancel()
        super()._on_teardown()

    def _enqueued(self) -> None:
        if self._pulling:  # only pulls in progress wait on the condition (lock held)
            self._cond.notify_all()

    def _inbox_grew(self) -> None:
        # Read without the lock: a pull that is not yet counted folds the inbox in
        # after counting itself (_wait_and_take), so it cannot miss this copy.
        if self._pulling:
            with self._cond:
                self._cond.notify_all()

    def _qos_changed(self, changes: Any) -> None:
        super()._qos_changed(changes)
        with self._cond:
            self._cond.notify_all()  # waiting pulls re-read MaximumBatchSize

    def _wake_at(self, when: float) -> Any:
        def wake() -> None:
            with self._cond:
                self._cond.notify_all()

        return self._service.clock.call_at(when, wake)

    def _limit(self, max_number: int) -> int:
        """§3.3.13.1: "the maximum length of the sequence returned will never exceed
        the value of the input parameter" (0 or less: an empty sequence); nor what the
        queue can hold (module docstring)."""
        return max(0, min(max_number, self._batch_size()))

    def _take(self, limit: int, block: bool, batched: int | None = None) -> list[Entry]:
        """Up to ``limit`` entries; blocks (if asked). ``batched``: a sequence pull's
        ``max_number``, whose limit and pacing come from MaximumBatchSize and
        PacingInterval, read again while it waits (``limit`` is then ignored)."""
        clock = self._service.clock
        if batched is not None:
            limit = self._limit(batched)
        if self._on_disk() and self._queue.ready() < limit and not self._stopping:
            self._refill()  # persistent events waiting on disk (channel/durable.py)
        expired: list[Entry] = []
        timers: list[Any] = []
        try:
            with self._cond:
                self._pulling += 1
                try:
                    batch = self._wait_and_take(limit, block, batched, expired, timers)
                    while batch and self._marshalled:
                        kept = without_unmarshallable(self, batch)
                        if kept:
                            batch = kept
                            break
                        batch = self._wait_and_take(limit, block, batched, expired, timers)
                    if self._counting:
                        self._n_delivered += len(batch)
                    return batch
                finally:
                    self._pulling -= 1
                    self._last_pull = clock.now()
        finally:
            for timer in timers:
                timer.cancel()
            self._channel._released(expired)

    def _wait_and_take(self, limit: int, block: bool, batched: int | None,
                       expired: list[Entry], timers: list[Any]) -> list[Entry]:
        """The body of :meth:`_take` (lock held)."""
        clock = self._service.clock
        began = clock.now()
        armed_start: float | None = None
        armed_deadline: float | None = None
        while True:
            self._require_connected()
            if self._stopping:
                raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO,
                                      "the service is stopping: pull again once it is back")
            deadline = None
            if batched is not None:  # a set_qos while waiting applies (_qos_changed)
                limit = self._limit(batched)
                pacing = self._qos.get("PacingInterval", 0) / 1e7
                deadline = began + pacing if pacing > 0 else None
            if limit <= 0:
                return []  # §3.3.13.1: never more than max_number
            if block and self._interrupted():
                return []  # the caller has something else to give (ack.py)
            now = clock.now()
            if self._inbox:
                expired.extend(self._fold_inbox(now))  # discarded copies: released with these
            queue = self._queue
            queue.release_held(now)
            ready = queue.ready()
            if ready < limit and self._on_disk():
                self._channel._released(expired)  # expired copies make room
                expired.clear()
                if self._refill():
                    continue  # persistent events read back from disk (durable.py)
            due = deadline is not None and now >= deadline
            if ready and (not block or ready >= limit or due):
                batch = queue.get_batch(limit, now, expired)
                if not batch and self._on_disk():
                    # What was in memory had expired; more waits on disk: make room first.
                    self._channel._released(expired)
                    expired.clear()
                    if self._refill():
                        continue
                if not block or len(batch) >= limit or (batch and due):
                    return batch
                queue.unget(batch)  # expired entries made it short: wait for more
                continue
            if not block:
                return []
            start = queue.next_start()
            if start is not None and start != armed_start:
                armed_start = start
                timers.append(self._wake_at(start))
            if deadline is not None and deadline != armed_deadline and now < deadline:
                armed_deadline = deadline
                timers.append(self._wake_at(deadline))
            self._cond.wait()

    def _interrupted(self) -> bool:
        """Hook: should a blocking pull stop waiting for the queue? (ack.py)"""
        return False

    def _kick(self) -> None:
        """Events went to disk, or room was made for them: wake a waiting pull."""
        with self._cond:
            self._cond.notify_all()

    def _taken(self, batch: list[Entry]) -> None:
        self._channel._released(batch)
        self._channel._delivered(len(batch))


class ProxyPullSupplier(_PullSupplier):
    """``CosNotifyChannelAdmin::ProxyPullSupplier``: the consumer pulls Anys."""

    proxy_type = CA.PULL_ANY
    client_disconnect = "disconnect_pull_consumer"

    def connect_any_pull_consumer(self, pull_consumer: Any) -> None:
        self._connect_consumer(pull_consumer)

    def pull(self) -> Any:
        batch = self._take(1, block=True)
        self._taken(batch)
        return batch[0].event.as_any()

    def try_pull(self) -> tuple[Any, bool]:
        batch = self._take(1, block=False)
        self._taken(batch)
        if batch:
            return batch[0].event.as_any(), True
        return _NO_ANY, False

    def disconnect_pull_supplier(self) -> None:
        self._client_disconnected()


class StructuredProxyPullSupplier(_PullSupplier):
    """``CosNotifyChannelAdmin::StructuredProxyPullSupplier``."""

    proxy_type = CA.PULL_STRUCTURED
    client_disconnect = "disconnect_structured_pull_consumer"

    def connect_structured_pull_consumer(self, pull_consumer: Any) -> None:
        self._connect_consumer(pull_consumer)

    def pull_structured_event(self) -> Any:
        batch = self._take(1, block=True)
        self._taken(batch)
        return batch[0].event.as_structured()

    def try_pull_structured_event(self) -> tuple[Any, bool]:
        batch = self._take(1, block=False)
        self._taken(batch)
        if batch:
            return batch[0].event.as_structured(), True
        return empty_structured_event(), False

    def disconnect_structured_pull_supplier(self) -> None:
        self._client_disconnected()


class SequenceProxyPullSupplier(_PullSupplier):
    """``CosNotifyChannelAdmin::SequenceProxyPullSupplier``."""

    proxy_type = CA.PULL_SEQUENCE
    qos_level = Level.SEQUENCE_PROXY_SUPPLIER
    client_disconnect = "disconnect_sequence_pull_consumer"

    def connect_sequence_pull_consumer(self, pull_consumer: Any) -> None:
        self._connect_consumer(pull_consumer)

    def pull_structured_events(self, max_number: int) -> list[Any]:
        batch = self._take(0, block=True, batched=max_number)
        self._taken(batch)
        return [entry.event.as_structured() for entry in batch]

    def try_pull_structured_events(self, max_number: int) -> tuple[list[Any], bool]:
        batch = self._take(0, block=False, batched=max_number)
        self._taken(batch)
        return [entry.event.as_structured() for entry in batch], bool(batch)

    def disconnect_sequence_pull_supplier(self) -> None:
        self._client_disconnected()


class EventServiceProxyPullSupplier(ProxyPullSupplier):
    """``CosEventChannelAdmin::ProxyPullSupplier`` (Event Service style)."""

    event_service_style = True

    def connect_pull_consumer(self, pull_consumer: Any) -> None:
        self._connect_consumer(pull_consumer)

    def _start_offer_relay(self) -> None:
        pass
