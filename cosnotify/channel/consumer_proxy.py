"""The supplier-facing half of the channel: every kind of proxy consumer.

Strategy: whatever the form (Any, Structured, Sequence) and style (the
supplier pushes, or the channel pulls), an event enters through
:meth:`ProxyConsumer._inject`: it is wrapped once (anti-wrapping applied,
``event.from_any``/``from_structured``), its header QoS resolved
(``event.apply_qos``; BAD_QOS for what cannot be honoured), filtered by this
proxy's filters and its admin's (combined by the admin's
InterFilterGroupOperator, section 2.3), admitted against MaxQueueLength
(section 2.5.7) and handed to the channel's router. A sequence of n events
is n events (section 2.1.4).

Pull-style proxy consumers poll their supplier with ``try_pull*`` from a task
on the worker pool, every ``pull_interval`` while the supplier has nothing,
and at once again while it has; a pull that would block is never made, so
polling never holds a worker. Polling pauses while the connection is
suspended (section 3.4.9.2) or while the channel is full with
RejectNewEvents TRUE (section 2.5.7). A pulled event the channel refuses
for now (IMP_LIMIT, NO_RESOURCES from the store, TRANSIENT) waits in the proxy
and goes in before anything more is pulled; the refusal is the channel's, never
counted as the supplier failing. One refused for good (BAD_QOS, BAD_PARAM, any
other system exception) is dropped, logged and counted as rejected.
"""

from __future__ import annotations

import logging
from typing import Any

from omniORB import CORBA

import CosEventComm
import CosNotifyChannelAdmin as CA

from cosnotify.channel.admin_mixins import groups_pass, match_any
from cosnotify.channel.clients import narrowed
from cosnotify.channel.counters import Counter, channel_events_in, failure_reason
from cosnotify.channel.counters import calls as _calls
from cosnotify.channel.event import apply_qos, from_any, from_structured
from cosnotify.channel.proxy import ProxyBase, Suspendable, retry_delay
from cosnotify.channel.subscriptions import Relay, TypeSet
from cosnotify.channel.supplier_ack import SupplierAck
from cosnotify.channel.topology import retries_for_ever
from cosnotify.filter.oes.limits import CURRENT_LIMITS
from cosnotify.qos.properties import Level

__all__ = [
    "EventServiceProxyPullConsumer",
    "EventServiceProxyPushConsumer",
    "ProxyConsumer",
    "ProxyPullConsumer",
    "ProxyPushConsumer",
    "SequenceProxyPullConsumer",
    "SequenceProxyPushConsumer",
    "StructuredProxyPullConsumer",
    "StructuredProxyPushConsumer",
]

log = logging.getLogger("cosnotify.channel")

_NOTIFY_SUBSCRIBE = "IDL:omg.org/CosNotifyComm/NotifySubscribe:1.0"
_GONE = (CosEventComm.Disconnected, CORBA.OBJECT_NOT_EXIST)


class ProxyConsumer(ProxyBase):
    """``CosNotifyChannelAdmin::ProxyConsumer``: events enter the channel here."""

    side = "consumer"

    qos_level = Level.PROXY_CONSUMER

    def __init__(self, admin: Any, proxy_id: int | None) -> None:
        super().__init__(admin, proxy_id)
        self._offers = TypeSet()
        #: subscription_change to the supplier; made before it connects (see the
        #: offer relay of proxy suppliers).
        self._subscription_relay = Relay(self._service, None, "subscription_change")
        #: Counters (cosnotify.stats): events from the supplier, and those the filters
        #: rejected. Several supplier threads may push at once with no lock held, so
        #: these are itertools counts (channel/counters.py), as is the channel's.
        self._counting = self._service.config.counters
        self._received = Counter()
        self._rejected = Counter()
        self._channel_in = channel_events_in(self._channel)

    # -- the event path ------------------------------------------------------------------
    def _inject_structured(self, structured: Any) -> None:
        self._inject(from_structured(structured, self._service.clock.now()))

    def _inject_any(self, value: Any) -> None:
        self._inject(from_any(value, self._service.clock.now()))

    def _inject(self, event: Any, batch: list[Any] | None = None) -> None:
        """Filter ``event`` and forward it (or, given ``batch``, append it there for the
        channel to forward with the rest of a supplier's sequence)."""
        if self._counting:
            next(self._received)
        explicit = self._qos_explicit
        if explicit or event.qos_header:
            apply_qos(event, self._qos, explicit, self._channel._event_log is not None)
        admin = self._admin
        own = self._filters
        admin_filters = admin._filters
        if own or admin_filters:
            channel = self._channel
            limits = channel._oes_limits  # for OES_SUBTREE filters, as channel._deliver
            token = CURRENT_LIMITS.set(limits) if limits is not CURRENT_LIMITS.get() else None
            try:
                admin_passed = match_any(admin_filters, event) if admin_filters \
                    else None
                passed = groups_pass(admin_passed, own, admin._and_op,
                                     channel._or_empty_passes, event)
            finally:
                if token is not None:
                    CURRENT_LIMITS.reset(token)
            if not passed:
                if self._counting:
                    next(self._rejected)
                return
        if batch is not None:
            batch.append(event)  # counted in as the channel takes it (_inject_batch)
            return
        self._channel._forward(event)
        if self._counting:
            next(self._channel_in)

    # -- NotifyPublish on the proxy (section 2.6.2) ------------------------------------------
    def offer_change(self, added: list[Any], removed: list[Any]) -> None:
        """OBJECT_NOT_EXIST once destroyed (its teardown withdrew its offers); the
        check and the hub's change are one step under the lock (SupplierAdmin's)."""
        add, remove = self._checked_types(added), self._checked_types(removed)
        with self._lock:
            self._check_alive()
            appeared, vanished = self._offers.update(add, remove)
            self._channel._hub.change_offers(appeared, vanished)
        self._persist()

    def obtain_subscription_types(self, mode: Any) -> list[Any]:
        """The channel's aggregate subscriptions, and updates on or off (3.4.1.3)."""
        return list(self._channel._hub.obtain("subscriptions", self._subscription_relay, mode))

    def _start_subscription_relay(self) -> None:
        client = narrowed(self._client, _NOTIFY_SUBSCRIBE, "subscription_change")
        if client is not None:
            self._channel._hub.watch_subscriptions(id(self), self._subscription_relay, client)

    def _on_teardown(self) -> None:
        self._channel._hub.unwatch(id(self))
        with self._lock:
            gone = set(self._offers.types)
            self._offers.types.clear()
        self._channel._hub.change_offers((), gone)


# -- push style: the supplier calls us -----------------------------------------------------


class _PushConsumer(ProxyConsumer):
    def _connect_supplier(self, supplier: Any) -> None:
        # A push supplier may be nil: it only loses disconnect callbacks.
        self._connect(supplier, required=None, interface=None, allow_nil=True)

    def _on_connected(self) -> None:
        self._start_subscription_relay()


class ProxyPushConsumer(_PushConsumer):
    """``CosNotifyChannelAdmin::ProxyPushConsumer``: the supplier pushes Anys."""

    proxy_type = CA.PUSH_ANY
    client_disconnect = "disconnect_push_supplier"

    def connect_any_push_supplier(self, push_supplier: Any) -> None:
        self._connect_supplier(push_supplier)

    def push(self, data: Any) -> None:
        self._require_connected()
        self._inject_any(data)

    def disconnect_push_consumer(self) -> None:
        self._client_disconnected()


class _NumberedPushConsumer(SupplierAck, _PushConsumer):
    """A push consumer that may check and acknowledge SequenceNumbers (supplier_ack.py)."""

    def __init__(self, admin: Any, proxy_id: int | None) -> None:
        super().__init__(admin, proxy_id)
        self._init_supplier_ack()
        self._update_supplier_ack()

    def _qos_changed(self, changes: Any) -> None:
        super()._qos_changed(changes)
        if "DeliveryReliability" in changes:
            self._update_supplier_ack()


    def _inject_marked(self, event: Any, mark: Any) -> Any:
        event.mark = mark
        self._inject(event)
        return event


class StructuredProxyPushConsumer(_NumberedPushConsumer):
    """``CosNotifyChannelAdmin::StructuredProxyPushConsumer``."""

    proxy_type = CA.PUSH_STRUCTURED
    client_disconnect = "disconnect_structured_push_supplier"

    def connect_structured_push_supplier(self, push_supplier: Any) -> None:
        self._connect_supplier(push_supplier)

    def push_structured_event(self, notification: Any) -> None:
        if not self._connected:
            self._require_connected()
        if self._supplier_ack:
            now = self._service.clock.now()
            self._numbered_push(notification, lambda mark, skip=0, handled=None: (
                self._inject_marked(from_structured(notification, now), mark)))
            return
        self._inject(from_structured(notification, self._service.clock.now()))

    def disconnect_structured_push_consumer(self) -> None:
        self._client_disconnected()


class SequenceProxyPushConsumer(_NumberedPushConsumer):
    """``CosNotifyChannelAdmin::SequenceProxyPushConsumer``: n events per call."""

    proxy_type = CA.PUSH_SEQUENCE
    qos_level = Level.SEQUENCE_PROXY_CONSUMER
    client_disconnect = "disconnect_sequence_push_supplier"

    def connect_sequence_push_supplier(self, push_supplier: Any) -> None:
        self._connect_supplier(push_supplier)

    def push_structured_events(self, notifications: list[Any]) -> None:
        self._require_connected()
        if self._supplier_ack and notifications:
            self._numbered_push(notifications[0], lambda mark, skip=0, handled=None: (
                self._inject_batch(notifications[skip:], mark, handled)))
            return
        self._inject_batch(notifications, None)

    def _inject_batch(self, notifications: list[Any], mark: Any,
                      handled: list[int] | None = None) -> Any:
        """The batch: filtered one by one, forwarded together (its persistent events
        in one commit, durable.py), with its number's mark on its last event. With
        ``handled``: when one is refused, ``handled[0]`` is how many notifications
        before it were taken (or filtered out), so a numbered resend goes on from it."""
        now = self._service.clock.now()
        batch: list[Any] = []
        origin: list[int] = []  # (numbered batches) the notification of each batch event
        event = None
        for at, notification in enumerate(notifications):
            event = from_structured(notification, now)
            self._inject(event, batch)
            if handled is not None and len(batch) > len(origin):
                origin.append(at)
        if event is not None:
            # On the batch's last event: written in its commit if the event log keeps it,
            # else alone once the batch was taken whole (supplier_ack.py). Not on an
            # earlier one: a refusal of what follows it would leave the number stored
            # as seen, and a resend after a restart would lose the rest (review 79).
            event.mark = mark
        if handled is None:
            self._channel._forward_all(batch, self._channel_in if self._counting else None)
            return event
        taken = [0]
        try:
            self._channel._forward_all(batch, self._channel_in if self._counting else None,
                                       taken)
        except BaseException:
            handled[0] = origin[taken[0]] if taken[0] < len(origin) else len(notifications)
            raise
        return event

    def disconnect_sequence_push_consumer(self) -> None:
        self._client_disconnected()


class EventServiceProxyPushConsumer(ProxyPushConsumer):
    """``CosEventChannelAdmin::ProxyPushConsumer`` (Event Service style)."""

    event_service_style = True

    def connect_push_supplier(self, push_supplier: Any) -> None:
        self._connect_supplier(push_supplier)

    def _start_subscription_relay(self) -> None:
        pass



#: The channel's refusals of a pulled event that may pass later: full with
#: RejectNewEvents TRUE (section 2.5.7), a store without room, a passing failure.
_FOR_NOW = (CORBA.IMP_LIMIT, CORBA.NO_RESOURCES, CORBA.TRANSIENT)


class _PullConsumer(Suspendable, ProxyConsumer):
    supplier_method = ""
    supplier_interface = ""

    def __init__(self, admin: Any, proxy_id: int | None) -> None:
        super().__init__(admin, proxy_id)
        self._polling = False
        self._failures = 0
        #: The delayed poll waiting for its time, if any, and its token (a reconnect
        #: drops it: _on_connected).
        self._poll_timer: Any = None
        self._poll_token: object | None = None
        #: The lane the poll task was submitted in (``_submit_poll``).
        self._polled_in: Any = None
        #: Pulled events the channel could not take yet (full, RejectNewEvents TRUE;
        #: a store that refused them, NO_RESOURCES): injected before anything more is
        #: pulled, so none is lost (section 2.5.7) -- the refusal is not the supplier's.
        self._pending: list[tuple[Any, Any]] = []

    def _connect_supplier(self, supplier: Any) -> None:
        self._connect(supplier, required=self.supplier_method,
                      interface=self.supplier_interface, allow_nil=False)

    def _on_connected(self) -> None:
        self._start_subscription_relay()
        with self._lock:  # a new supplier (allow_reconnect): no backoff of the old one's
            if self._poll_token is not None:  # a poll waits for its time: it is dropped
                self._poll_token = None       # (review 103: up to max_backoff)
                if self._poll_timer is not None:
                    self._poll_timer.cancel()
                self._poll_timer = None
                self._polling = False
            self._failures = 0
        self._schedule_poll(0.0)

    def _on_suspend_change(self) -> None:
        if not self._suspended:
            self._schedule_poll(0.0)

    def _schedule_poll(self, delay: float) -> None:
        token = object()
        with self._lock:
            if self._polling or self._destroyed or not self._connected or self._suspended:
                return
            self._polling = True
            if delay > 0:  # in the same step: a reconnect meanwhile drops it (review 104)
                self._poll_token = token
        if delay <= 0:
            self._submit_poll()
            return
        timer = self._service.clock.call_later(delay, lambda: self._poll_due(token))
        with self._lock:
            if self._poll_token is token:  # neither due nor dropped meanwhile
                self._poll_timer = timer

    def _poll_due(self, token: object) -> None:
        with self._lock:
            if self._poll_token is not token:  # dropped by a reconnect
                return
            self._poll_token = self._poll_timer = None
        self._submit_poll()

    def _submit_poll(self) -> None:
        """Submit the proxy's one poll task in the lane that fits now (``_poll_lane``),
        remembered: the task runs there again while it returns True."""
        lane = self._polled_in = self._poll_lane()
        self._service.submit(self._poll, lane)

    def _poll_lane(self) -> Any:
        """While its polls fail, a supplier is polled in the shared ``failing`` lane,
        as a failing push consumer is retried (push_supplier._delivery_lane), so dead
        suppliers hold at most ``max_workers_failing`` workers; else in its client's."""
        if self._failures:
            return self._service.dispatcher.failing
        return self._lane

    def _poll(self) -> bool:
        interval = self._service.config.pull_interval
        with self._lock:
            if self._destroyed or not self._connected or self._suspended:
                self._polling = False
                return False
            supplier = self._client
        try:  # whatever happens, the poll is scheduled again (_polling reset)
            held = self._channel._full_and_rejecting() or not self._flush_pending()
        except Exception:
            log.exception("%r: the channel could not take the events held for it", self)
            held = True
        if held:
            self._repoll(interval)
            return False
        try:
            got = self._pull_from(supplier)
        except Exception as exc:  # noqa: BLE001 - every failure goes through the policy
            self._failed(exc, supplier)
            return False
        self._failures = 0
        if got:  # more may be waiting: poll again after others had a turn
            if self._poll_lane() is not self._polled_in:
                # Recovered: on in its client's lane, not behind dead suppliers (as
                # push_supplier._deliver; review 141: re-run in the failing lane while
                # it had events). _polling stays True: this is the one task in flight.
                self._submit_poll()
                return False
            return True
        self._repoll(interval)
        return False

    def _repoll(self, delay: float) -> None:
        with self._lock:
            self._polling = False
        self._schedule_poll(delay)

    def _failed(self, exc: Exception, supplier: Any) -> None:
        """The poll of ``supplier`` failed: the failure policy (section 2.5.5.1's
        Retries and RetryInterval), unless another supplier has connected meanwhile
        (``allow_reconnect``): the old one's failure is not the new one's, which is
        polled at once, with no backoff (review 129: it was torn down or backed off)."""
        with self._lock:
            stale = self._client is not supplier
        if stale:
            log.info("%r: a poll of the previous supplier failed (%s); polling the new one",
                     self, type(exc).__name__)
            self._repoll(0.0)
            return
        if isinstance(exc, _GONE):
            log.info("%r: supplier is gone (%s); destroying the proxy", self, type(exc).__name__)
            with self._lock:
                self._polling = False
            self._teardown(notify_client=False, why=f"supplier gone ({type(exc).__name__})")
            return
        self._failures += 1
        retries = self._qos.get("Retries", 3)
        if self._failures > retries and not retries_for_ever(self, exc):  # section 2.5.5.1
            log.warning("%r: supplier failed %d times (%s); disconnecting it",
                        self, self._failures, exc)
            with self._lock:
                self._polling = False
            self._teardown(notify_client=True,
                           why=f"gave up after {_calls(self._failures)} failed: {failure_reason(exc)}")
            return
        self._repoll(retry_delay(self._qos, self._failures, self._service.config.max_backoff))

    def _pull_from(self, supplier: Any) -> bool:
        raise NotImplementedError

    def _inject_checked(self, inject: Any, value: Any) -> None:
        """Inject a pulled event; one the channel refuses (full and rejecting, a store
        that cannot take it) is kept for later, not lost nor blamed on the supplier."""
        if self._pending:
            self._pending.append((inject, value))
            return
        if not self._injected(inject, value, logging.WARNING):
            self._pending.append((inject, value))

    def _flush_pending(self) -> bool:
        """Inject held events in order; True when none is left waiting."""
        while self._pending:
            inject, value = self._pending[0]
            if not self._injected(inject, value, logging.DEBUG):  # warned when kept
                return False
            self._pending.pop(0)
        return True

    def _injected(self, inject: Any, value: Any, level: int) -> bool:
        """Inject one pulled event; False if the channel refused it for now (IMP_LIMIT:
        full with RejectNewEvents TRUE, section 2.5.7; NO_RESOURCES: the store could
        not take it; TRANSIENT) -- the event then waits, and polling pauses for
        ``pull_interval`` without counting a failure of the supplier, which did its
        part. Any other system exception is a refusal of this event for good (BAD_QOS:
        its QoS cannot be honoured; BAD_PARAM: a retaining or storing channel cannot
        keep it intact, docs/orb.md): kept, it would be refused at every poll and
        nothing after it would ever be pulled (review 141), so it is dropped, logged
        and counted as ``rejected``."""
        try:
            inject(value)
        except _FOR_NOW as exc:
            if not isinstance(exc, CORBA.IMP_LIMIT):
                log.log(level, "%r: the channel did not take a pulled event (%s); it waits",
                        self, failure_reason(exc))
            return False
        except CORBA.SystemException as exc:
            log.warning("%r: dropped a pulled event the channel refused (%s): %s",
                        self, type(exc).__name__, exc)
            if self._counting:
                next(self._rejected)
        return True


class ProxyPullConsumer(_PullConsumer):
    """``CosNotifyChannelAdmin::ProxyPullConsumer``: the channel pulls Anys."""

    proxy_type = CA.PULL_ANY
    client_disconnect = "disconnect_pull_supplier"
    supplier_method = "try_pull"
    supplier_interface = "IDL:omg.org/CosEventComm/PullSupplier:1.0"

    def connect_any_pull_supplier(self, pull_supplier: Any) -> None:
        self._connect_supplier(pull_supplier)

    def disconnect_pull_consumer(self) -> None:
        self._client_disconnected()

    def _pull_from(self, supplier: Any) -> bool:
        value, has_event = supplier.try_pull()
        if has_event:
            self._inject_checked(self._inject_any, value)
        return bool(has_event)


class StructuredProxyPullConsumer(_PullConsumer):
    """``CosNotifyChannelAdmin::StructuredProxyPullConsumer``."""

    proxy_type = CA.PULL_STRUCTURED
    client_disconnect = "disconnect_structured_pull_supplier"
    supplier_method = "try_pull_structured_event"
    supplier_interface = "IDL:omg.org/CosNotifyComm/StructuredPullSupplier:1.0"

    def connect_structured_pull_supplier(self, pull_supplier: Any) -> None:
        self._connect_supplier(pull_supplier)

    def disconnect_structured_pull_consumer(self) -> None:
        self._client_disconnected()

    def _pull_from(self, supplier: Any) -> bool:
        value, has_event = supplier.try_pull_structured_event()
        if has_event:
            self._inject_checked(self._inject_structured, value)
        return bool(has_event)


class SequenceProxyPullConsumer(_PullConsumer):
    """``CosNotifyChannelAdmin::SequenceProxyPullConsumer``."""

    proxy_type = CA.PULL_SEQUENCE
    qos_level = Level.SEQUENCE_PROXY_CONSUMER
    client_disconnect = "disconnect_sequence_pull_supplier"
    supplier_method = "try_pull_structured_events"
    supplier_interface = "IDL:omg.org/CosNotifyComm/SequencePullSupplier:1.0"

    def connect_sequence_pull_supplier(self, pull_supplier: Any) -> None:
        self._connect_supplier(pull_supplier)

    def disconnect_sequence_pull_consumer(self) -> None:
        self._client_disconnected()

    def _pull_from(self, supplier: Any) -> bool:
        batch, has_event = supplier.try_pull_structured_events(
            self._qos.get("MaximumBatchSize", 1))
        if has_event:
            for value in batch:
                self._inject_checked(self._inject_structured, value)
        return bool(has_event and batch)


class EventServiceProxyPullConsumer(ProxyPullConsumer):
    """``CosEventChannelAdmin::ProxyPullConsumer`` (Event Service style)."""

    event_service_style = True

    def connect_pull_supplier(self, pull_supplier: Any) -> None:
        self._connect_supplier(pull_supplier)

    def _start_subscription_relay(self) -> None:
        pass
