"""Event Acknowledgment (Notification 1.1 section 3.7): the CosNotifyChannelAdminAck proxies.

Strategy: an admin whose DeliveryReliability is Acknowledgment (set on it,
or on its channel) makes its structured and sequence proxy suppliers of the
``...Ack`` kinds here. While the proxy's own DeliveryReliability is
Acknowledgment, what it gives its consumer carries a ``SequenceNumber``
header field -- on each event, or on the first event of a batch (section
3.7.5) -- and stays the proxy's (and the store's) until the consumer calls
``acknowledge`` with that number. What is not acknowledged within
RetryInterval is given again with the same number (section 3.7.7.1 step 3:
pushed again; for pull, put back at the head of the queue), so a consumer
that drops numbers it has seen receives every event exactly once.

Sequence numbers: on a structured proxy with persistent events
(channel/durable.py) the number of a stored event is its store id (below
2^30), so an event given again after a restart carries the number it had
before -- the consumer's duplicate check keeps working across the restart.
Other numbers (batches of a sequence proxy, best-effort events) come from a
count: 0, 1, 2, ... per connection as section 3.7.5 describes; on a proxy
with persistent events it runs from 2^30 up, apart from the store ids, and
its high-water mark is reserved in the store a block at a time, so no
number is given twice across a restart. docs/persistence.md records the
choice. An unacknowledged batch is given again as it was, under its
number.

Section 2.5.5.1 and 3.7.7.3: a durable proxy never gives up; a best-effort
one stops after Retries unanswered resends, as for failed pushes.

The numbers and what is given and not acknowledged (acknowledge, expiry,
settling, the ack timer) are kept by the base class in ack_state.py; here
is how each kind gives a number again and what a push or pull call does.
"""

from __future__ import annotations

import logging
from typing import Any

from cosnotify.channel import pull_supplier as pls
from cosnotify.channel import push_supplier as pss
from cosnotify.channel.ack_state import _Ack, stamped
from cosnotify.channel.counters import failure_reason
from cosnotify.channel.event import empty_structured_event
from cosnotify.channel.queue import Entry
from cosnotify.channel.topology import retries_for_ever

__all__ = [
    "SequenceProxyPullSupplierAck",
    "SequenceProxyPushSupplierAck",
    "StructuredProxyPullSupplierAck",
    "StructuredProxyPushSupplierAck",
]

log = logging.getLogger("cosnotify.channel")


# -- push: the channel pushes again ------------------------------------------------------------


class _PushAck(_Ack, pss._PushSupplier):
    def __init__(self, admin: Any, proxy_id: int | None) -> None:
        super().__init__(admin, proxy_id)
        self._init_ack()
        #: How the batch being sent goes: numbered (DeliveryReliability Acknowledgment
        #: when it started) or plain. Written by the delivery task, its only user.
        self._batch_numbered = False

    def _sent(self, entries: list[Entry]) -> None:
        if not self._batch_numbered:
            super()._sent(entries)
        # else each entry went numbered: acknowledge, _returned (acknowledgment switched
        # off meanwhile) or _settle_unacked releases it, once

    def _redeliver(self, numbers: list[int]) -> None:
        again = set(numbers)  # a resend still waiting gives the number's entries as now
        self._resends = [(n, e) for n, e in self._resends if n not in again]
        self._resends.extend((n, self._unacked[n]) for n in numbers)
        if not self._scheduled and not self._suspended and self._connected:
            self._scheduled = True
            self._service.submit(self._deliver, self._delivery_lane())

    def _send_resends(self) -> bool:
        with self._lock:
            if self._destroyed or not self._connected or self._suspended:
                self._scheduled = False
                return False
            resends, self._resends = self._resends, []
            consumer = self._client
        for at, (number, entries) in enumerate(resends):
            gone: list[Entry] = []
            with self._lock:
                if self._unacked.get(number) is not entries:
                    continue  # acknowledged meanwhile
                if not self._expire_number(number, self._service.clock.now(), gone):
                    entries = []  # expired while it waited
                else:
                    entries = self._unacked[number]
                    self._in_flight.add(number)
            self._release(gone)
            if not entries:
                continue
            try:
                self._push_numbered(consumer, number, entries)
                self._returned(number)
                failure, self._resend_failure = self._resend_failure, None
                if failure is not None and retries_for_ever(self, failure):
                    with self._lock:  # back from an outage it was kept through: its
                        self._unanswered = 0  # Retries rounds begin now (review 104; not a
                        # flaky best-effort one, whose failed rounds count: review 105)
            except Exception as exc:  # noqa: BLE001 - the next resend is the retry
                self._resend_failure = exc  # _ack_due: a consumer down, not silent
                with self._lock:
                    self._in_flight.discard(number)
                    plain = not self._acking() and self._unacked.get(number) is entries
                    if plain:  # switched off during the call: given again plain, as
                        del self._unacked[number]  # a failed first send is
                        self._given_at.pop(number, None)
                        self._retry_first(list(entries))
                        if self._counting:  # counted delivered when first given
                            self._n_delivered -= len(entries)
                    else:
                        self._arm_ack_timer()  # stopped if switched off and on meanwhile
                log.info("%r: resend of %d failed (%s)", self, number, exc)
                self._n_failed += 1  # a failed push call, counted as _failed counts them
                self._last_failure = (self._service.clock.now(), failure_reason(exc))
                # A resend to a consumer that another replaced meanwhile (allow_reconnect)
                # is not the new one's failure (push_supplier._failed; review 129).
                if isinstance(exc, pss._GONE) and self._client is consumer:
                    with self._lock:
                        self._scheduled = False
                    self._teardown(notify_client=False,
                                   why=f"consumer gone ({type(exc).__name__})")
                    return False
                with self._lock:  # they stay unacknowledged; the ack timer retries
                    self._resends = resends[at + 1:] + self._resends
                    self._scheduled = False
                if plain:
                    self._kick()  # the retry path delivers it, plain
                return False
        return True

    def _push_numbered(self, consumer: Any, number: int, entries: list[Entry]) -> None:
        raise NotImplementedError

    def _waiting(self) -> set[int]:
        return {number for number, _ in self._resends}

    def _on_teardown(self) -> None:
        with self._lock:
            gone = self._forget_unacked()
            self._resends = []
        self._channel._released(gone)
        super()._on_teardown()

    def _qos_changed(self, changes: Any) -> None:
        super()._qos_changed(changes)
        if "DeliveryReliability" in changes and not self._acking():
            with self._lock:
                gone = self._settle_unacked()
                self._resends = []
            self._release(gone)


class StructuredProxyPushSupplierAck(_PushAck, pss.StructuredProxyPushSupplier):
    """``CosNotifyChannelAdminAck::StructuredProxyPushSupplierAck``."""

    def _send(self, consumer: Any, batch: list[Entry]) -> None:
        self._batch_numbered = self._acking()
        if not self._batch_numbered:
            super()._send(consumer, batch)
            return
        sent = 0
        try:
            for entry in batch:
                if self._suspended or not self._connected:
                    raise pss._Stopped()
                with self._lock:
                    number = self._number(entry)
                    self._in_flight.add(number)
                # Given before the call: the consumer may acknowledge before it returns.
                if not self._given(number, [entry], push=True):
                    raise pss._Stopped()
                started = self._service.clock.now()
                try:
                    consumer.push_structured_event(stamped(entry.event.as_structured(), number))
                except Exception:
                    if not self._not_given(number):
                        sent += 1  # acknowledged or settled during the call: done with
                    raise
                self._returned(number)
                sent += 1
                pss.timed_push(self, started, sent < len(batch))
        except Exception as exc:
            raise pss._Undelivered(sent, exc) from exc

    def _push_numbered(self, consumer: Any, number: int, entries: list[Entry]) -> None:
        consumer.push_structured_event(stamped(entries[0].event.as_structured(), number))


class SequenceProxyPushSupplierAck(_PushAck, pss.SequenceProxyPushSupplier):
    """``CosNotifyChannelAdminAck::SequenceProxyPushSupplierAck``."""

    def _send(self, consumer: Any, batch: list[Entry]) -> None:
        self._batch_numbered = self._acking()
        if not self._batch_numbered:
            super()._send(consumer, batch)
            return
        try:
            with self._lock:
                number = self._count()  # a batch has a number of its own (module docstring)
                self._in_flight.add(number)
        except Exception as exc:  # the store could not reserve numbers: retried as a push
            raise pss._Undelivered(0, exc) from exc
        if not self._given(number, batch, push=True):  # see StructuredProxyPushSupplierAck
            raise pss._Undelivered(0, pss._Stopped())
        try:
            self._push_numbered(consumer, number, batch)
        except Exception as exc:
            # Acknowledged or settled during the call: done with, not the retry path's.
            raise pss._Undelivered(0 if self._not_given(number) else len(batch), exc) from exc
        self._returned(number)

    def _push_numbered(self, consumer: Any, number: int, entries: list[Entry]) -> None:
        events = [entry.event.as_structured() for entry in entries]
        events[0] = stamped(events[0], number)
        consumer.push_structured_events(events)


# -- pull: the consumer pulls again --------------------------------------------------------------


class _PullAck(_Ack, pls._PullSupplier):
    def __init__(self, admin: Any, proxy_id: int | None) -> None:
        super().__init__(admin, proxy_id)
        self._init_ack()
        self._repull: list[tuple[int, list[Entry]]] = []

    def _redeliver(self, numbers: list[int]) -> None:
        if isinstance(self, pls.SequenceProxyPullSupplier):
            # A batch is pulled again as it was, under its number (_repulled).
            again = set(numbers)  # one still waiting is pulled with its entries as now
            self._repull = [(n, e) for n, e in self._repull if n not in again]
            self._repull.extend((n, self._unacked[n]) for n in numbers)
        else:
            # Forget one put back long ago and no longer queued: expired or discarded
            # since. One taken by a pull that has not given it yet is not alive either,
            # but is given within moments: an acknowledge meanwhile must still find it.
            now = self._service.clock.now()
            stale = now - 2 * self._interval()
            for number in [n for n, e in self._requeued.items()
                           if not e.alive and self._requeued_at.get(n, now) < stale]:
                del self._requeued[number]
                self._requeued_at.pop(number, None)
            back = [e for n in numbers for e in self._unacked.pop(n)]
            for number, entry in zip(numbers, back, strict=True):  # one entry each
                del self._given_at[number]
                self._requeued[number] = entry
                self._requeued_at[number] = now
            # Copies offered while these were out go in first, as if they had gone
            # straight into the queue: MaxEventsPerConsumer weighed them without these.
            dropped = self._fold_inbox(now)
            self._queue.unget(back)  # at the head; pulled again with the same numbers
            if self._counting:
                self._n_delivered -= len(back)  # counted again when pulled again
            if dropped:  # discarded (any queued copy, stored ones too): off the clock
                self._service.off_clock(self._channel._released, dropped)
        self._cond.notify_all()

    def _waiting(self) -> set[int]:
        return {number for number, _ in self._repull}

    def _numbered(self, batch: list[Entry], per_event: bool) -> list[Any]:
        """The pulled ``batch`` as structured events, numbered, waiting for acknowledge."""
        # Given for the first time (one pulled again has its number): the channel's
        # delivered counts an event once, as for push proxies' resends.
        first = sum(1 for entry in batch if entry.number < 0)
        if not self._acking():
            self._channel._released(batch)
            self._channel._delivered(first)
            return [entry.event.as_structured() for entry in batch]
        try:
            with self._lock:  # numbers first: the store may fail to reserve them
                if per_event:
                    numbers = [self._number(entry) for entry in batch]
                else:
                    numbers = [self._count()] if batch else []
        except Exception:
            dropped: list[Entry] = []
            with self._lock:
                gone = getattr(self, "_destroyed", False)  # its teardown is over
                if not gone:
                    dropped = self._fold_inbox(self._service.clock.now())  # as _redeliver
                    self._queue.unget(batch)  # nothing was given: pulled again later
                if self._counting:
                    self._n_delivered -= len(batch)
            self._channel._released(batch if gone else dropped)
            raise
        self._channel._delivered(first)
        events = [entry.event.as_structured() for entry in batch]
        if per_event:
            for at, (entry, number) in enumerate(zip(batch, numbers, strict=True)):
                events[at] = stamped(events[at], number)
                self._given(number, [entry])
                self._returned(number)  # switched off meanwhile? then delivered
        elif batch:
            events[0] = stamped(events[0], numbers[0])
            self._given(numbers[0], batch)
            self._returned(numbers[0])
        return events

    def _repulled(self) -> list[Any] | None:
        """A batch due to be pulled again, as it was (sequence proxies), else None."""
        gone: list[Entry] = []
        events = None
        with self._lock:
            now = self._service.clock.now()
            while self._repull:
                number, entries = self._repull.pop(0)
                if self._unacked.get(number) is entries \
                        and self._expire_number(number, now, gone):
                    self._given_at[number] = now
                    events = [entry.event.as_structured() for entry in self._unacked[number]]
                    events[0] = stamped(events[0], number)
                    break
        self._release(gone)
        return events

    def _on_teardown(self) -> None:
        with self._lock:
            gone = self._forget_unacked()
            self._repull = []
        self._channel._released(gone)
        super()._on_teardown()

    def _qos_changed(self, changes: Any) -> None:
        super()._qos_changed(changes)
        if "DeliveryReliability" in changes and not self._acking():
            with self._lock:
                gone = self._settle_unacked()
                self._repull = []
            self._release(gone)


class StructuredProxyPullSupplierAck(_PullAck, pls.StructuredProxyPullSupplier):
    """``CosNotifyChannelAdminAck::StructuredProxyPullSupplierAck``."""

    def pull_structured_event(self) -> Any:
        return self._numbered(self._take(1, block=True), per_event=True)[0]

    def try_pull_structured_event(self) -> tuple[Any, bool]:
        events = self._numbered(self._take(1, block=False), per_event=True)
        if events:
            return events[0], True
        return empty_structured_event(), False


class SequenceProxyPullSupplierAck(_PullAck, pls.SequenceProxyPullSupplier):
    """``CosNotifyChannelAdminAck::SequenceProxyPullSupplierAck``."""

    def pull_structured_events(self, max_number: int) -> list[Any]:
        if self._limit(max_number) <= 0:
            self._require_connected()
            return []  # §3.3.13.1: never more than max_number
        while True:
            again = self._repulled()
            if again is not None:
                return again
            batch = self._take(0, block=True, batched=max_number)
            if batch:  # empty: woken for a batch due again
                return self._numbered(batch, per_event=False)

    def try_pull_structured_events(self, max_number: int) -> tuple[list[Any], bool]:
        if self._limit(max_number) <= 0:
            self._require_connected()
            return [], False  # §3.3.13.1: never more than max_number
        again = self._repulled()
        if again is not None:
            return again, True
        batch = self._take(0, block=False, batched=max_number)
        return self._numbered(batch, per_event=False), bool(batch)

    def _interrupted(self) -> bool:
        return bool(self._repull)


#: The Ack kind of each proxy supplier type an admin makes (admin.py).
ACK_KINDS = {
    "STRUCTURED_EVENT": (StructuredProxyPushSupplierAck, StructuredProxyPullSupplierAck),
    "SEQUENCE_EVENT": (SequenceProxyPushSupplierAck, SequenceProxyPullSupplierAck),
}
