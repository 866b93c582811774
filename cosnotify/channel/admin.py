"""ConsumerAdmin and SupplierAdmin, notification and Event Service style.

Strategy: an admin is a factory and manager of proxies (section 2.1.3). It
numbers its notification-style proxies from 0 (section 2.1.1: ids unique
among the objects one creator made); Event Service style proxies have no id
and are not listed. The consumer admin is also a routing stage: the
channel hands it each event, it evaluates *its* filters once, and offers the
event with that result to each connected proxy supplier (section 2.1.2:
"the filtering of a given event can be performed once for a given set of
clients"). Connected proxies are kept in an immutable tuple rebuilt on
connect and disconnect, so routing reads it without a lock.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable
from typing import Any

from omniORB import CORBA

import CosNotifyChannelAdmin as CA

from cosnotify.channel import consumer_proxy as cp
from cosnotify.channel import pull_supplier as pls
from cosnotify.channel import push_supplier as pss
from cosnotify.channel.ack import ACK_KINDS
from cosnotify.channel.admin_mixins import FilterAdminMixin, QoSAdminMixin, initial_qos
from cosnotify.channel.subscriptions import SubscriptionContributor, TypeSet
from cosnotify.eventtypes import check_event_types
from cosnotify.qos.negotiation import Target
from cosnotify.qos.properties import Level

__all__ = ["ConsumerAdmin", "EventServiceConsumerAdmin", "EventServiceSupplierAdmin",
           "SupplierAdmin"]

log = logging.getLogger("cosnotify.channel")

_PUSH_SUPPLIERS = {"ANY_EVENT": pss.ProxyPushSupplier,
                   "STRUCTURED_EVENT": pss.StructuredProxyPushSupplier,
                   "SEQUENCE_EVENT": pss.SequenceProxyPushSupplier}
_PULL_SUPPLIERS = {"ANY_EVENT": pls.ProxyPullSupplier,
                   "STRUCTURED_EVENT": pls.StructuredProxyPullSupplier,
                   "SEQUENCE_EVENT": pls.SequenceProxyPullSupplier}
_PUSH_CONSUMERS = {"ANY_EVENT": cp.ProxyPushConsumer,
                   "STRUCTURED_EVENT": cp.StructuredProxyPushConsumer,
                   "SEQUENCE_EVENT": cp.SequenceProxyPushConsumer}
_PULL_CONSUMERS = {"ANY_EVENT": cp.ProxyPullConsumer,
                   "STRUCTURED_EVENT": cp.StructuredProxyPullConsumer,
                   "SEQUENCE_EVENT": cp.SequenceProxyPullConsumer}


class _Admin(QoSAdminMixin, FilterAdminMixin):
    """What both admin kinds share: identity, QoS, filters, the proxy table."""

    qos_level = Level.CONSUMER_ADMIN
    limit_name = "MaxConsumers"
    #: The channel-wide scope of its proxies' names (channel/names.py).
    proxy_scope = "ps"

    def __init__(self, channel: Any, admin_id: int | None, operator: Any) -> None:
        self._channel = channel
        self._service = channel._service
        self._id = admin_id
        self._name: str | None = None  # TAO's names (channel/names.py)
        self._operator = operator
        self._and_op = operator == CA.AND_OP
        self._lock = threading.RLock()
        self._proxies: dict[int, Any] = {}         # notification style, by id
        self._anonymous: list[Any] = []            # Event Service style
        self._proxy_ids = itertools.count(0)
        #: Proxies made but not yet listed (``_make``): children already, for QoS rules.
        self._making = 0
        self._destroyed = False
        qos, explicit = channel._qos_snapshot()
        self._qos, self._qos_explicit = initial_qos(self.qos_level, qos, explicit)
        self._qos_level = self.qos_level
        self._qos_lock = threading.RLock()
        self._init_filters()

    # -- IDL attributes ---------------------------------------------------------------
    def _get_MyID(self) -> int | None:
        return self._id

    def _get_MyChannel(self) -> Any:
        return self._channel

    def _get_MyOperator(self) -> Any:
        return self._operator

    @property
    def name(self) -> str | None:
        """The name given by ``named_new_for_*``, else None."""
        return self._name

    # -- QoS ----------------------------------------------------------------------------
    def _qos_target(self) -> Target:
        parent, _ = self._channel._qos_snapshot()
        with self._lock:
            children = bool(self._proxies or self._anonymous or self._making)
        return Target(self._qos_level, parent=parent, has_children=children)

    def _qos_capabilities(self) -> Any:
        return self._service.capabilities

    # -- proxies ---------------------------------------------------------------------------
    def _create(self, cls: Callable[[Any, int | None], Any], numbered: bool,
                name: str | None = None, qos: list[Any] | None = None) -> tuple[Any, int | None]:
        """A new proxy; with TAO's ``name`` (claimed first, channel/names.py) and
        ``initial_qos`` (NotifyExt: refused QoS leaves no proxy behind)."""
        self._check_alive()
        with self._channel._names.claimed(self.proxy_scope, name):
            proxy, proxy_id = self._make(cls, numbered, qos)
        proxy._name = name
        try:
            proxy._persist()
        except CORBA.SystemException:  # the store refused its record: no proxy was made
            _undo(proxy._teardown, False, None)  # (review 101: it stayed, unreachable)
            raise
        return proxy, proxy_id

    def _make(self, cls: Callable[[Any, int | None], Any], numbered: bool,
              qos: list[Any] | None = None) -> tuple[Any, int | None]:
        """Make, configure with ``qos`` and only then list a proxy: one whose QoS is
        refused was never seen (by ``get_proxy_*``, ``ls``, the topology)."""
        try:
            self._channel._reserve_proxy(self.limit_name)
        except CA.AdminLimitExceeded as exc:
            if numbered:
                raise
            # The Event Service obtain operations declare no exceptions: the limit
            # is reported as the system exception IMP_LIMIT there.
            raise CORBA.IMP_LIMIT(0, CORBA.COMPLETED_NO,
                                  f"{exc.admin_property_err.name} reached") from None
        topology = self._service.topology
        try:
            with self._lock:
                self._check_alive()
                proxy_id: int | None = None
                if numbered:
                    proxy_id = (topology.next_id(f"{topology.path(self)}/proxies") if topology
                                and self._id is not None else next(self._proxy_ids))
                proxy = cls(self, proxy_id)
                self._making += 1
        except BaseException:
            self._channel._unreserve_proxy(self.limit_name)
            raise
        made_done = False
        try:
            if qos is not None:
                proxy.set_qos(qos)
            with self._lock:
                self._making -= 1
                made_done = True
                self._check_alive()
                if numbered:
                    self._proxies[proxy_id] = proxy  # type: ignore[index]
                else:
                    self._anonymous.append(proxy)
        except BaseException:
            if not made_done:
                with self._lock:
                    self._making -= 1
            proxy._destroy(notify_client=False, why=None)  # gives back the reservation
            raise
        return proxy, proxy_id

    def _obtain(self, table: dict[str, Any], ctype: Any, name: str | None = None,
                qos: list[Any] | None = None) -> tuple[Any, int]:
        kind = str(getattr(ctype, "_n", ""))
        cls = table.get(kind)
        if cls is None:
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO, f"unknown ClientType {ctype!r}")
        if (self._qos.get("DeliveryReliability", 0) == 1 and kind in ACK_KINDS
                and table in (_PUSH_SUPPLIERS, _PULL_SUPPLIERS)):
            # Section 3.7: an Acknowledgment admin makes CosNotifyChannelAdminAck proxies.
            cls = ACK_KINDS[kind][0 if table is _PUSH_SUPPLIERS else 1]
        proxy, proxy_id = self._create(cls, True, name, qos)
        return proxy, proxy_id  # type: ignore[return-value]

    def _ids(self, kinds: tuple[Any, ...]) -> list[int]:
        with self._lock:
            self._check_alive()
            return [pid for pid, p in sorted(self._proxies.items()) if p.proxy_type in kinds]

    def _lookup(self, proxy_id: int) -> Any:
        with self._lock:
            self._check_alive()
            proxy = self._proxies.get(proxy_id)
        if proxy is None:
            raise CA.ProxyNotFound()
        return proxy

    def _check_connect_limit(self, proxy: Any) -> None:
        """MaxConsumers/MaxSuppliers are enforced when proxies are obtained, on the
        clients connected then (channel._reserve_proxy): connect_* raises only what its
        IDL declares (AlreadyConnected, TypeError), so it does not refuse (docs/qos.md)."""

    def _proxy_gone(self, proxy: Any) -> None:
        with self._lock:
            if proxy.proxy_id is not None:
                self._proxies.pop(proxy.proxy_id, None)
            elif proxy in self._anonymous:
                self._anonymous.remove(proxy)
        self._channel._names.release(self.proxy_scope, getattr(proxy, "_name", None))
        self._connection_changed(proxy)
        self._channel._unreserve_proxy(self.limit_name)

    def _connection_changed(self, proxy: Any) -> None:
        """Hook: a proxy connected or went away."""

    def _all_proxies(self) -> list[Any]:
        with self._lock:
            return list(self._proxies.values()) + list(self._anonymous)

    def _check_alive(self) -> None:
        if self._destroyed:
            raise CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO, f"{self!r} was destroyed")

    # -- destroy ----------------------------------------------------------------------------
    def destroy(self) -> None:
        """Destroy every proxy (telling connected clients) and then this admin."""
        if self._id == 0 and not self._channel._destroying:
            # The default admins live as long as their channel (as omniNotify does):
            # destroying one only clears it.
            log.info("destroy on default admin %r: its proxies are destroyed, it stays", self)
            for proxy in self._all_proxies():
                proxy._destroy()
            return
        with self._lock:
            if self._destroyed:
                return
            self._destroyed = True
        for proxy in self._all_proxies():
            proxy._destroy()
        self._on_destroy()
        self._channel._admin_destroyed(self)
        topology = self._service.topology
        if topology is not None:
            topology.forget(self)
        self._service.object_destroyed(self)

    def _on_destroy(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<{type(self).__name__} id={self._id}>"


class ConsumerAdmin(SubscriptionContributor, _Admin):
    """``CosNotifyChannelAdmin::ConsumerAdmin``: makes proxy suppliers, routes to them."""

    qos_level = Level.CONSUMER_ADMIN
    limit_name = "MaxConsumers"

    def __init__(self, channel: Any, admin_id: int | None, operator: Any) -> None:
        super().__init__(channel, admin_id, operator)
        self._priority_filter: Any = None
        self._lifetime_filter: Any = None
        self._routes: tuple[Any, ...] = ()
        self._routes_stale = False
        self._init_subscriptions()

    # -- routing ------------------------------------------------------------------------------
    def route(self, event: Any, now: float, holders: list[Any] | None) -> None:
        """Offer ``event`` to every connected proxy supplier, adding the entries queued
        to ``holders`` when given (the scanning router; ``cosnotify.routing`` is the
        indexed one)."""
        if self._routes_stale:
            self._list_routes()
        routes = self._routes
        if not routes:
            return
        passed = self._filters_match(event) if self._filters else None
        and_op = self._and_op
        if and_op and passed is False:
            return
        tao = self._channel._or_empty_passes
        for proxy in routes:
            entry = proxy.offer(event, passed, and_op, tao, now)
            if entry is not None and holders is not None:
                holders.append(entry)

    def _connection_changed(self, proxy: Any) -> None:
        self._routes_stale = True
        self._channel._router.refresh(proxy)
        self._update_contribution()  # a first consumer came, or the last one left

    def _list_routes(self) -> None:
        with self._lock:
            self._routes_stale = False
            self._routes = tuple(p for p in list(self._proxies.values()) + self._anonymous
                                 if p._connected and not p._destroyed)

    # -- filters, for the channel's router (cosnotify.routing) -------------------------------
    def _route_filter(self, flt: Any, added: bool) -> None:
        router = self._channel._router
        if added:
            if not self._destroyed:
                router.attach(self, flt)
            router.refresh_admin(self)
        else:
            router.refresh_admin(self)
            router.detach(self, flt)

    # -- attributes ------------------------------------------------------------------------------
    def _get_priority_filter(self) -> Any:
        return self._priority_filter

    def _set_priority_filter(self, value: Any) -> None:
        self._priority_filter = value
        for proxy in self._all_proxies():
            proxy._refresh_fast_path()
        self._persist()

    def _get_lifetime_filter(self) -> Any:
        return self._lifetime_filter

    def _set_lifetime_filter(self, value: Any) -> None:
        self._lifetime_filter = value
        for proxy in self._all_proxies():
            proxy._refresh_fast_path()
        self._persist()

    def _get_pull_suppliers(self) -> list[int]:
        return self._ids((CA.PULL_ANY, CA.PULL_STRUCTURED, CA.PULL_SEQUENCE, CA.PULL_TYPED))

    def _get_push_suppliers(self) -> list[int]:
        return self._ids((CA.PUSH_ANY, CA.PUSH_STRUCTURED, CA.PUSH_SEQUENCE, CA.PUSH_TYPED))

    # -- operations -------------------------------------------------------------------------------
    def get_proxy_supplier(self, proxy_id: int) -> Any:
        return self._lookup(proxy_id)

    def obtain_notification_pull_supplier(self, ctype: Any) -> tuple[Any, int]:
        return self._obtain(_PULL_SUPPLIERS, ctype)

    def obtain_notification_push_supplier(self, ctype: Any) -> tuple[Any, int]:
        return self._obtain(_PUSH_SUPPLIERS, ctype)

    def obtain_notification_push_supplier_with_qos(self, ctype: Any,
                                                   initial_qos: list[Any]) -> tuple[Any, int]:
        """NotifyExt: the proxy and its initial QoS in one step (UnsupportedQoS: no proxy)."""
        return self._obtain(_PUSH_SUPPLIERS, ctype, qos=initial_qos)

    def obtain_named_notification_push_supplier(self, ctype: Any, name: str) -> tuple[Any, int]:
        """NotifyMonitoringExt: a push proxy supplier named uniquely in the channel."""
        return self._obtain(_PUSH_SUPPLIERS, ctype, name=name)

    def obtain_push_supplier(self) -> Any:
        """Event Service style proxy (no id; section 2.1.3)."""
        return self._create(pss.EventServiceProxyPushSupplier, numbered=False)[0]

    def obtain_pull_supplier(self) -> Any:
        return self._create(pls.EventServiceProxyPullSupplier, numbered=False)[0]

    # -- NotifySubscribe on the admin, and admin filters' types (section 2.6.3) ------------------
    def subscription_change(self, added: list[Any], removed: list[Any]) -> None:
        add, remove = check_event_types(added), check_event_types(removed)
        with self._lock:
            self._explicit.update(add, remove)
        self._update_contribution()
        self._persist()

    def _filter_added(self, filter_id: int, new_filter: Any) -> None:
        super()._filter_added(filter_id, new_filter)
        self._proxies_follow()

    def _filter_removed(self, filter_id: int, old_filter: Any) -> None:
        super()._filter_removed(filter_id, old_filter)
        self._proxies_follow()

    def _wanted_types(self) -> set[tuple[str, str]]:
        """Its filters' and ``subscription_change`` types while one of its proxy suppliers
        has a consumer connected, else none (section 2.6.4: "When no consumers are
        interested, the channel's aggregate list of event types will change")."""
        with self._lock:
            proxies = list(self._proxies.values()) + self._anonymous
        if not any(p._connected and not p._destroyed for p in proxies):
            return set()
        return super()._wanted_types()

    def _proxies_follow(self) -> None:
        """A proxy without filters contributes %ALL unless this admin's filters bound
        what it receives (ProxySupplier._wanted_types): they follow a change."""
        for proxy in self._all_proxies():
            proxy._update_contribution()

    def _on_destroy(self) -> None:
        self.remove_all_filters()  # detaches this admin's callbacks from its filters
        self._update_contribution()
        self._channel._router.admin_gone(self)


class SupplierAdmin(_Admin):
    """``CosNotifyChannelAdmin::SupplierAdmin``: makes proxy consumers."""

    qos_level = Level.SUPPLIER_ADMIN
    limit_name = "MaxSuppliers"
    proxy_scope = "pc"

    def __init__(self, channel: Any, admin_id: int | None, operator: Any) -> None:
        super().__init__(channel, admin_id, operator)
        self._offers = TypeSet()

    def _get_pull_consumers(self) -> list[int]:
        return self._ids((CA.PULL_ANY, CA.PULL_STRUCTURED, CA.PULL_SEQUENCE, CA.PULL_TYPED))

    def _get_push_consumers(self) -> list[int]:
        return self._ids((CA.PUSH_ANY, CA.PUSH_STRUCTURED, CA.PUSH_SEQUENCE, CA.PUSH_TYPED))

    def get_proxy_consumer(self, proxy_id: int) -> Any:
        return self._lookup(proxy_id)

    def obtain_notification_pull_consumer(self, ctype: Any) -> tuple[Any, int]:
        return self._obtain(_PULL_CONSUMERS, ctype)

    def obtain_notification_push_consumer(self, ctype: Any) -> tuple[Any, int]:
        return self._obtain(_PUSH_CONSUMERS, ctype)

    def obtain_notification_push_consumer_with_qos(self, ctype: Any,
                                                   initial_qos: list[Any]) -> tuple[Any, int]:
        return self._obtain(_PUSH_CONSUMERS, ctype, qos=initial_qos)

    def obtain_named_notification_push_consumer(self, ctype: Any, name: str) -> tuple[Any, int]:
        return self._obtain(_PUSH_CONSUMERS, ctype, name=name)

    def obtain_push_consumer(self) -> Any:
        return self._create(cp.EventServiceProxyPushConsumer, numbered=False)[0]

    def obtain_pull_consumer(self) -> Any:
        return self._create(cp.EventServiceProxyPullConsumer, numbered=False)[0]

    def offer_change(self, added: list[Any], removed: list[Any]) -> None:
        """NotifyPublish on the admin: offers on behalf of its suppliers (section 2.6.2).

        Once destroyed, OBJECT_NOT_EXIST (as the remote call gets): its teardown took
        its offers out of the aggregate, and one added now would stay there for good.
        The check and the hub's change are one step under the lock, so ``_on_destroy``
        withdraws whatever an offer_change racing with ``destroy`` added."""
        add, remove = check_event_types(added), check_event_types(removed)
        with self._lock:
            self._check_alive()
            appeared, vanished = self._offers.update(add, remove)
            self._channel._hub.change_offers(appeared, vanished)
        self._persist()

    def _on_destroy(self) -> None:
        with self._lock:
            gone = set(self._offers.types)
            self._offers.types.clear()
        self._channel._hub.change_offers((), gone)


class EventServiceConsumerAdmin(ConsumerAdmin):
    """``CosEventChannelAdmin::ConsumerAdmin`` made by ``for_consumers`` (no id)."""


class EventServiceSupplierAdmin(SupplierAdmin):
    """``CosEventChannelAdmin::SupplierAdmin`` made by ``for_suppliers`` (no id)."""


def _undo(undo: Callable[..., Any], *args: Any) -> None:
    """Take back what a failed store write left made; its own failure is only logged."""
    try:
        undo(*args)
    except Exception:
        log.exception("could not take back what a failed store write left")
