"""Push-style proxy suppliers: the channel calls the consumer.

Strategy: each proxy delivers from its own queue with a task on the shared
worker pool (``dispatch.Dispatcher``); the proxy has at most one task in
flight, so its consumer sees events in queue order, and a slow or blocked
consumer ties up only its own task (sections 2.3 and 3.4.12-3.4.14).

Failures follow one policy (docs/architecture.md, "Consumer errors"):
``Disconnected`` or ``OBJECT_NOT_EXIST`` from the consumer means it is gone:
the proxy disconnects and destroys itself (section 3.3.7.1). Any other error
is retried with the events kept at the head of the queue, after
RetryInterval doubling per attempt (capped), up to Retries attempts; then
the proxy disconnects the consumer and destroys itself. Retries wait on a
timer, never on a worker.

Sequence proxies batch by MaximumBatchSize and PacingInterval (section
2.5.5): a full batch goes at once; otherwise a short batch goes when the
pacing window ends; a window that ends empty sends the next event as soon
as it arrives; a PacingInterval of 0 never sends a short batch.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from omniORB import CORBA

import CosEventComm
import CosNotifyChannelAdmin as CA

from cosnotify.channel.counters import calls as _calls
from cosnotify.channel.counters import failure_reason
from cosnotify.channel.event import Event
from cosnotify.channel.proxy import Suspendable, retry_delay
from cosnotify.channel.queue import Entry
from cosnotify.channel.supplier_proxy import ProxySupplier, without_unmarshallable
from cosnotify.channel.topology import retries_for_ever
from cosnotify.qos.properties import Level

__all__ = [
    "EventServiceProxyPushSupplier",
    "ProxyPushSupplier",
    "SequenceProxyPushSupplier",
    "StructuredProxyPushSupplier",
]

log = logging.getLogger("cosnotify.channel")

_GONE = (CosEventComm.Disconnected, CORBA.OBJECT_NOT_EXIST)
_TAKE = 32  # entries taken from the queue per lock acquisition


class _Undelivered(Exception):
    """A push failed after ``sent`` entries of the batch had been delivered."""

    def __init__(self, sent: int, error: Exception) -> None:
        super().__init__(sent, error)
        self.sent = sent
        self.error = error


class _Stopped(Exception):
    """The proxy was suspended, disconnected or destroyed in the middle of a batch."""


class _Slowed(Exception):
    """A push took longer than ServiceConfig.slow_push: the rest of the batch waits
    for the slow lane."""


def _one_by_one(proxy: Any, push: Any, batch: list[Entry], convert: Any) -> None:
    """Push each entry with ``push``, raising _Undelivered at the first failure, with
    ``_Stopped`` as soon as the proxy may no longer forward (3.4.13.2), or with
    ``_Slowed`` when a push was slow and the proxy was not known to be slow."""
    sent = 0
    now = proxy._service.clock.now
    slow_push = proxy._service.config.slow_push
    try:
        for entry in batch:
            if proxy._suspended or not proxy._connected:
                raise _Stopped()
            started = now()
            push(convert(entry.event))
            sent += 1
            if slow_push:  # timed_push, inline: this runs once per event delivered
                if now() - started > slow_push:
                    if not proxy._slow:
                        proxy._slow = True
                        if sent < len(batch):
                            raise _Slowed()
                elif proxy._slow:
                    proxy._slow = False
    except Exception as exc:
        raise _Undelivered(sent, exc) from exc


def timed_push(proxy: Any, started: float, more: bool, events: int = 1) -> None:
    """Note how long one push call (of ``events`` events) took: over
    ``ServiceConfig.slow_push`` (per 10 events) marks the consumer slow, under it
    quick again. Raises ``_Slowed`` when it just turned slow and ``more`` of the
    batch remain, so they go on from the slow lane."""
    slow_push = proxy._service.config.slow_push
    if not slow_push:
        return
    was_slow = proxy._slow
    allowed = slow_push * max(1, events // 10)
    proxy._slow = proxy._service.clock.now() - started > allowed
    if proxy._slow and not was_slow and more:
        raise _Slowed()


class _PushSupplier(Suspendable, ProxySupplier):
    """Delivery machinery shared by the push proxy suppliers."""

    #: One call delivers a whole batch (sequence proxies), not one event.
    _batched = False

    consumer_method = ""
    consumer_interface = ""

    def __init__(self, admin: Any, proxy_id: int | None) -> None:
        super().__init__(admin, proxy_id)
        self._scheduled = False
        self._retry: list[Entry] = []
        #: Unacknowledged batches due to be sent again, with their SequenceNumber (ack.py).
        self._resends: list[tuple[int, list[Entry]]] = []
        self._failures = 0
        #: The last push took longer than ServiceConfig.slow_push (see _delivery_lane).
        self._slow = False
        self._timer: Any = None
        #: The backoff timer of a failed push, while one is waiting.
        self._retry_timer: Any = None

    # -- connecting -------------------------------------------------------------------
    def _connect_consumer(self, consumer: Any) -> None:
        self._connect(consumer, required=self.consumer_method, interface=self.consumer_interface,
                      allow_nil=False)

    def _on_connected(self) -> None:
        self._update_contribution()
        self._start_offer_relay()
        with self._lock:
            timer, self._retry_timer = self._retry_timer, None
            if timer is not None:  # a new consumer (--allow-reconnect): no backoff for it
                timer.cancel()
                self._failures = 0
        if timer is not None:  # this task takes the slot the timer held (_scheduled)
            self._service.submit(self._deliver, self._delivery_lane())
        self._kick()

    def _on_suspend_change(self) -> None:
        self._kick()

    # -- scheduling -------------------------------------------------------------------
    def _enqueue(self, entry: Entry | Event, now: float, held: bool = False) -> Entry | None:
        if self._channel._account.limit:
            # MaxQueueLength tracks queue entries exactly
            return super()._enqueue(entry, now, held)
        self._offer_inbox(entry, now)  # every copy: the worker folds them in
        return entry if isinstance(entry, Entry) else None

    def _inbox_grew(self) -> None:
        if not self._scheduled:
            self._kick()

    def _enqueued(self) -> None:
        if not self._scheduled and not self._suspended:
            self._scheduled = True
            self._service.submit(self._deliver, self._delivery_lane())

    def _delivery_lane(self) -> Any:
        """Failing consumers share one lane, slow ones another; the others run in
        their client's lane."""
        if self._failures:
            return self._service.dispatcher.failing
        if self._slow:
            return self._service.dispatcher.slow
        return self._lane

    def _kick(self) -> None:
        """Schedule delivery if there is anything to deliver."""
        with self._lock:
            if (self._scheduled or self._suspended or not self._connected
                    or not (self._retry or len(self._queue) or self._inbox or self._on_disk()
                            or self._resends)):
                return
            self._scheduled = True
        self._service.submit(self._deliver, self._delivery_lane())

    def _wake_at(self, when: float) -> None:
        """Kick delivery at ``when`` (StartTime, pacing); lock held."""
        timer = self._timer
        if timer is not None and not timer.cancelled and timer.when <= when:
            return
        if timer is not None:
            timer.cancel()
        self._timer = self._service.clock.call_at(when, self._timer_fired)

    def _timer_fired(self) -> None:
        with self._lock:
            self._timer = None
        self._kick()

    # -- delivering -------------------------------------------------------------------
    def _deliver(self) -> bool:
        config = self._service.config
        budget = config.delivery_slice
        clock = self._service.clock
        lane = self._delivery_lane()  # the lane this task runs in
        yield_at = clock.now() + config.delivery_time_slice
        while budget > 0:
            if self._resends:  # Ack proxies: unacknowledged events due again (ack.py)
                if not self._send_resends():
                    return False
                continue
            expired: list[Entry] = []
            with self._lock:
                if self._destroyed or not self._connected or self._suspended:
                    self._scheduled = False
                    return False
                now = clock.now()
                if self._inbox:
                    expired.extend(self._fold_inbox(now))
                batch = self._retry
                if batch:
                    self._retry = []
                    late = [e for e in batch if e.deadline is not None and e.deadline <= now]
                    if late:
                        self._queue.expired += len(late)  # taken from the queue before
                        expired.extend(late)
                        batch = [e for e in batch if e.deadline is None or e.deadline > now]
                else:
                    batch = self._take(now, expired)
                consumer = self._client
                again = refill = False
                if not batch:
                    # Clear the flag before looking at the inbox again: a supplier
                    # appends, then reads the flag without the lock, so either it
                    # sees False and kicks, or its entry is seen here.
                    self._scheduled = False
                    if self._inbox or self._resends:
                        self._scheduled = again = True
                    elif self._on_disk():
                        self._scheduled = refill = True
                    else:
                        wake = self._queue.next_start()
                        if wake is not None:
                            self._wake_at(wake)
            self._channel._released(expired)
            if refill:
                if self._refill():
                    continue
                with self._lock:
                    self._scheduled = False
                    if self._on_disk():  # the store could not be read: try again later
                        self._wake_at(self._service.clock.now() + 1.0)
                        return False
                self._kick()  # raced with a new event? then carry on
                return False
            if again:
                continue
            if not batch:
                return False
            if isinstance(consumer, CORBA.Object):  # marshalled: omniORBpy's defect
                batch = without_unmarshallable(self, batch)
                if not batch:
                    continue
            started = clock.now()  # the service's clock: tests move a ManualClock
            try:
                self._send(consumer, batch)
            except _Undelivered as failure:
                if self._counting:
                    self._n_delivered += failure.sent  # this task is the only writer
                self._sent(batch[:failure.sent])
                self._channel._delivered(failure.sent)  # what went before the failure
                if isinstance(failure.error, _Stopped):
                    return self._stopped(batch[failure.sent:])
                if isinstance(failure.error, _Slowed):
                    # The rest waits at the head of the queue; _kick schedules it in
                    # the slow lane (or, if the consumer went meanwhile, it is let go).
                    self._failures = 0
                    return self._stopped(batch[failure.sent:])
                return self._failed(batch[failure.sent:], failure.error, consumer)
            ended = clock.now()
            if self._counting:
                self._n_delivered += len(batch)
            self._failures = 0
            if self._batched:  # one call for the batch (one_by_one times each call)
                timed_push(self, started, False, len(batch))
            self._sent(batch)
            self._channel._delivered(len(batch))
            budget -= len(batch)
            if self._delivery_lane() is not lane:
                # Recovered, or turned slow (or quick again): carry on in the lane that
                # now fits, not behind dead consumers nor holding the client's lane
                # (_scheduled stays True: the new task is this proxy's one task in flight).
                self._service.submit(self._deliver, self._delivery_lane())
                return False
            if ended >= yield_at:
                return True  # to the back of the run queue: others take a turn
        return True

    def _take(self, now: float, expired: list[Entry]) -> list[Entry]:
        """The next entries to send, in order (lock held). Several are taken under one
        lock acquisition; they are still pushed to the consumer one call each."""
        self._queue.release_held(now)
        return self._queue.get_batch(_TAKE, now, expired)

    def _send(self, consumer: Any, batch: list[Entry]) -> None:
        """Deliver ``batch``; on failure raise ``_Undelivered`` with what is left."""
        raise NotImplementedError

    def _send_resends(self) -> bool:
        """Send ``_resends`` again (ack.py); False if delivery must stop for now."""
        return True

    def _sent(self, entries: list[Entry]) -> None:
        """The consumer has these: they leave the queue for good (Ack proxies wait)."""
        self._channel._released(entries, delivered=True)

    def _stopped(self, unsent: list[Entry]) -> bool:
        """Keep what was not sent at the head (suspended), or let it go (gone)."""
        with self._lock:
            self._scheduled = False
            if self._connected and not self._destroyed:
                self._retry_first(unsent)
                unsent = []
        self._channel._released(unsent)
        self._kick()  # resumed meanwhile? then carry on
        return False

    def _failed(self, batch: list[Entry], exc: Exception, consumer: Any) -> bool:
        """The push of ``batch`` to ``consumer`` failed: the failure policy, unless
        another consumer has connected meanwhile (``allow_reconnect``): the old one's
        failure is not the new one's, which gets ``batch`` at once, with no backoff
        (review 129: it was torn down or backed off)."""
        with self._lock:
            stale = self._client is not consumer and not self._destroyed
            if stale:
                self._retry_first(batch)  # first, in order, to the new consumer
        if stale:
            log.info("%r: a push to the previous consumer failed (%s); delivering to the"
                     " new one", self, type(exc).__name__)
            # _scheduled stays True: this is the proxy's one task in flight.
            self._service.submit(self._deliver, self._delivery_lane())
            return False
        self._n_failed += 1  # the delivery task is the only writer
        self._last_failure = (self._service.clock.now(), failure_reason(exc))
        if isinstance(exc, _GONE):
            log.info("%r: consumer is gone (%s); destroying the proxy", self, type(exc).__name__)
            self._channel._released(batch)
            self._teardown(notify_client=False, why=f"consumer gone ({type(exc).__name__})")
            return False
        self._failures += 1
        retries = self._qos.get("Retries", 3)
        # Section 2.5.5.1, ConnectionReliability=Persistent: "unless these object
        # references raise an OBJECT_NOT_EXIST exception, the channel will continue
        # to retry using them" (topology.retries_for_ever: who does).
        if self._failures > retries and not retries_for_ever(self, exc):
            log.warning("%r: consumer failed %d times (%s); disconnecting it",
                        self, self._failures, exc)
            self._channel._released(batch)
            self._teardown(notify_client=True,
                           why=f"gave up after {_calls(self._failures)} failed: {failure_reason(exc)}")
            return False
        delay = retry_delay(self._qos, self._failures, self._service.config.max_backoff)
        log.info("%r: push failed (%s); retry %d of %d in %.2fs",
                 self, exc, self._failures, retries, delay)
        with self._lock:
            gone = self._destroyed  # torn down during the call: its teardown is over,
            if gone:  # so what the call held is released here, once
                self._scheduled = False
            else:
                self._retry_first(batch)
                # Keep _scheduled True: only the timer may restart delivery.
                self._retry_timer = self._service.clock.call_later(delay, self._retry_due)
        if gone:
            self._channel._released(batch)
        return False

    def _retry_first(self, entries: list[Entry]) -> None:
        """Put ``entries`` back at the head, to be sent again (lock held)."""
        self._retry = entries + self._retry
        self._holds(entries)

    def _expire_held(self, now: float) -> tuple[list[Entry], float]:
        """Copies waiting to be sent again whose deadline passed leave at once, not
        when the retry timer fires (review 141: they filled MaxQueueLength meanwhile)."""
        late = [e for e in self._retry if e.deadline is not None and e.deadline <= now]
        if late:
            self._queue.expired += len(late)  # taken from the queue before
            self._retry = [e for e in self._retry if e.deadline is None or e.deadline > now]
        soonest = min((e.deadline for e in self._retry if e.deadline is not None),
                      default=math.inf)
        return late, soonest

    def _retry_due(self) -> None:
        with self._lock:
            if self._retry_timer is None:
                return  # a reconnect took over (_on_connected)
            self._retry_timer = None
            if self._destroyed:
                return
        self._service.submit(self._deliver, self._delivery_lane())

    def _on_teardown(self) -> None:
        with self._lock:
            retry, self._retry = self._retry, []
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        self._channel._released(retry)
        super()._on_teardown()


class ProxyPushSupplier(_PushSupplier):
    """``CosNotifyChannelAdmin::ProxyPushSupplier``: delivers Anys."""

    proxy_type = CA.PUSH_ANY
    client_disconnect = "disconnect_push_consumer"
    consumer_method = "push"
    consumer_interface = "IDL:omg.org/CosEventComm/PushConsumer:1.0"

    def connect_any_push_consumer(self, push_consumer: Any) -> None:
        self._connect_consumer(push_consumer)

    def disconnect_push_supplier(self) -> None:
        self._client_disconnected()

    def _send(self, consumer: Any, batch: list[Entry]) -> None:
        _one_by_one(self, consumer.push, batch, Event.as_any)


class StructuredProxyPushSupplier(_PushSupplier):
    """``CosNotifyChannelAdmin::StructuredProxyPushSupplier``."""

    proxy_type = CA.PUSH_STRUCTURED
    client_disconnect = "disconnect_structured_push_consumer"
    consumer_method = "push_structured_event"
    consumer_interface = "IDL:omg.org/CosNotifyComm/StructuredPushConsumer:1.0"

    def connect_structured_push_consumer(self, push_consumer: Any) -> None:
        self._connect_consumer(push_consumer)

    def disconnect_structured_push_supplier(self) -> None:
        self._client_disconnected()

    def _send(self, consumer: Any, batch: list[Entry]) -> None:
        _one_by_one(self, consumer.push_structured_event, batch, Event.as_structured)


class SequenceProxyPushSupplier(_PushSupplier):
    """``CosNotifyChannelAdmin::SequenceProxyPushSupplier``: batches by QoS."""

    _batched = True

    proxy_type = CA.PUSH_SEQUENCE
    qos_level = Level.SEQUENCE_PROXY_SUPPLIER
    client_disconnect = "disconnect_sequence_push_consumer"
    consumer_method = "push_structured_events"
    consumer_interface = "IDL:omg.org/CosNotifyComm/SequencePushConsumer:1.0"

    def __init__(self, admin: Any, proxy_id: int | None) -> None:
        super().__init__(admin, proxy_id)
        self._window_end = 0.0

    # Batching decides when to wake the sender as events arrive (see _enqueued), so
    # sequence proxies queue under the lock instead of through the inbox.
    _enqueue = ProxySupplier._enqueue
    _plain_to_inbox = False

    def connect_sequence_push_consumer(self, push_consumer: Any) -> None:
        self._connect_consumer(push_consumer)

    def disconnect_sequence_push_supplier(self) -> None:
        self._client_disconnected()

    def _on_connected(self) -> None:
        with self._lock:
            self._window_end = self._service.clock.now() + self._pacing()
        super()._on_connected()

    def _qos_changed(self, changes: Any) -> None:
        super()._qos_changed(changes)
        if {"MaximumBatchSize", "PacingInterval"} & set(changes):
            with self._lock:
                self._window_end = self._service.clock.now() + self._pacing()
            self._kick()  # a smaller batch size may already be met

    def _pacing(self) -> float:
        return float(self._qos.get("PacingInterval", 0)) / 1e7

    def _enqueued(self) -> None:
        # Only wake the sender when a batch could go: full, or the window is over.
        if self._queue.ready() >= self._batch_size():
            super()._enqueued()
        elif self._pacing() > 0:
            if self._service.clock.now() >= self._window_end:
                super()._enqueued()
            elif not self._scheduled:
                self._wake_at(self._window_end)

    def _take(self, now: float, expired: list[Entry]) -> list[Entry]:
        self._queue.release_held(now)
        size = self._batch_size()  # a full queue is a full batch (supplier_proxy.py)
        ready = self._queue.ready()
        pacing = self._pacing()
        if ready >= size or (pacing > 0 and ready and now >= self._window_end):
            batch = self._queue.get_batch(size, now, expired)
            if len(batch) < size and not (pacing > 0 and now >= self._window_end):
                # Expired entries made it short: PacingInterval 0 never sends a short
                # batch (section 2.5.5), so wait for more.
                self._queue.unget(batch)
                return []
            if batch:
                self._window_end = now + pacing
            return batch
        if pacing > 0 and ready:
            self._wake_at(self._window_end)
        return []

    def _send(self, consumer: Any, batch: list[Entry]) -> None:
        try:
            consumer.push_structured_events([entry.event.as_structured() for entry in batch])
        except Exception as exc:
            raise _Undelivered(0, exc) from exc


class EventServiceProxyPushSupplier(ProxyPushSupplier):
    """``CosEventChannelAdmin::ProxyPushSupplier`` (Event Service style): an Any push
    proxy with the Event Service's connect operation and no offers."""

    event_service_style = True

    def connect_push_consumer(self, push_consumer: Any) -> None:
        self._connect_consumer(push_consumer)

    def _start_offer_relay(self) -> None:
        pass  # Event Service consumers know nothing of offers
