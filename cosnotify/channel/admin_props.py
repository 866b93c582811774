"""A channel's admin properties (section 2.5.7) and cosnotify's own, and the
limits they set at work (MaxQueueLength's count, MaxConsumers and MaxSuppliers).

Strategy: ``set_admin`` checks every property first (UnsupportedAdmin names
each refused one, nothing changes), then ``_apply_admin_props`` hands each
value to what it governs: MaxQueueLength, RejectNewEvents and DiscardPolicy
to the queue account (channel/account.py), the OES node limits to the
filters, FilterGroupSemantics to the router, and RetainAge, RetainCount and
RetainBytes to the history writer (channel/retention.py).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from omniORB import CORBA

import CosNotification
import CosNotifyChannelAdmin as CA

from cosnotify.channel.account import QueueAccount
from cosnotify.filter.oes.limits import NodeLimits
from cosnotify.qos.negotiation import check_admin, to_any, to_property_seq
from cosnotify.qos.properties import (
    ADMIN_PROPERTIES,
    FILTER_GROUP_SEMANTICS,
    OES_NODE_LIMITS,
    RETAIN_AGE,
    RETAIN_BYTES,
    RETAIN_COUNT,
    TAO_GROUPS,
)

__all__ = ["AdminPropertiesMixin", "check_retention"]


def check_retention(changes: dict[str, Any], service: Any) -> None:
    """RetainAge, RetainCount and RetainBytes need a store: UnsupportedAdmin without."""
    wanted = [name for name in (RETAIN_AGE, RETAIN_COUNT, RETAIN_BYTES) if changes.get(name)]
    if wanted and service.topology is None:
        # Table 2-6: "A range of values which *would* be supported is returned": 0..0.
        raise CosNotification.UnsupportedAdmin([CosNotification.PropertyError(
            CosNotification.UNAVAILABLE_VALUE, name, CosNotification.PropertyRange(
                to_any(ADMIN_PROPERTIES[name], 0), to_any(ADMIN_PROPERTIES[name], 0)))
            for name in wanted])

class AdminPropertiesMixin:
    """``get_admin``/``set_admin`` of ``CosNotifyChannelAdmin::EventChannel``, on
    the channel's ``_admin_props``."""

    _admin_props: dict[str, Any]
    _account: QueueAccount
    _lock: Any
    _qos: dict[str, Any]
    _service: Any
    _factory: Any
    _id: int
    _destroyed: bool
    _node_limits: NodeLimits
    _oes_limits: NodeLimits | None
    _oes_tree: Any
    _or_empty_passes: bool
    _router: Any
    _retention: Any
    _event_log: Any
    _connected_counts: dict[str, int]
    _count_lock: Any

    if TYPE_CHECKING:  # the channel's (channel.py, admin_mixins.py)
        def _check_alive(self) -> None: ...
        def _persist(self) -> None: ...
        def _scan_routes(self) -> Any: ...
        def _released(self, entries: list[Any], delivered: bool = False) -> None: ...

    def get_admin(self) -> list[Any]:
        with self._lock:
            return to_property_seq(self._admin_props, ADMIN_PROPERTIES)

    def set_admin(self, admin: list[Any]) -> None:
        changes, errors = check_admin(admin)
        if errors:
            raise CosNotification.UnsupportedAdmin(errors)
        check_retention(changes, self._service)
        with self._lock:
            self._check_alive()  # not after destroy (its history is dropped)
            self._admin_props.update(changes)
            self._apply_admin_props()
        self._persist()
        if "MaxQueueLength" in changes:  # a smaller batch may be met already (_batch_size)
            for consumer_admin in self._scan_routes():
                for proxy in consumer_admin._all_proxies():
                    if getattr(proxy, "_queue", None) is not None:
                        proxy._kick()

    def _apply_admin_props(self) -> None:
        account = self._account
        with account.lock:
            starting = account.set_limit(self._admin_props["MaxQueueLength"])
            account.reject = bool(self._admin_props["RejectNewEvents"])
            account.discard_policy = self._qos.get("DiscardPolicy", 0)
        # A new table, never the old one changed in place: an event being filtered
        # keeps the table it started with (one answer per event).
        table = NodeLimits(self._admin_props[OES_NODE_LIMITS])
        self._node_limits = table
        tree = self._oes_tree
        if tree is not None:
            table = tree.node_limits(table)  # the tree's nodes govern their own paths
        self._oes_limits = table if len(table) else None
        tao = self._admin_props[FILTER_GROUP_SEMANTICS] == TAO_GROUPS
        if tao != self._or_empty_passes:
            self._or_empty_passes = tao
            proxies = [p for a in self._scan_routes() for p in a._all_proxies()]
            self._router.set_or_empty_passes(tao, proxies)
            for proxy in proxies:  # whether an admin's filters bound it (supplier_proxy.py)
                proxy._update_contribution()
        if starting:
            self._count_queued()
        self._apply_retention()

    def _apply_retention(self) -> None:
        """Start, change or stop keeping history (channel/retention.py)."""
        from cosnotify.channel.retention import TRIM_EVERY, Bounds, Retention

        props = self._admin_props
        bounds = Bounds(props[RETAIN_AGE] / 10_000_000, props[RETAIN_COUNT],
                        props[RETAIN_BYTES])
        topology = self._service.topology
        if not bounds.on or topology is None:
            retention, self._retention = self._retention, None
            if retention is not None:
                retention.stop(write=True)  # what was kept stays, until the channel goes
            return
        if self._retention is not None:
            self._retention.bounds = bounds
            return
        retention = self._retention = Retention(self, topology.store, f"ch/{self._id}", bounds)

        def tick() -> None:
            if self._retention is retention and not self._destroyed \
                    and not self._factory._closed:
                retention.tick()
                self._service.clock.call_later(TRIM_EVERY, tick)

        self._service.clock.call_later(TRIM_EVERY, tick)

    # -- the limits of section 2.5.7 at work -------------------------------------------------
    def _count_queued(self) -> None:
        """Start MaxQueueLength accounting with the events already queued, those in a
        proxy's inbox (not yet in its queue) included."""
        holders: dict[int, list[Any]] = {}
        events: dict[int, Any] = {}
        dropped: list[Any] = []
        now = self._service.clock.now()
        for admin in self._scan_routes():
            for proxy in admin._all_proxies():
                queue = getattr(proxy, "_queue", None)
                if queue is None:
                    continue
                with proxy._lock:
                    dropped.extend(proxy._fold_inbox(now))
                    for entry in queue._live_entries():
                        events[id(entry.event)] = entry.event
                        holders.setdefault(id(entry.event), []).append(entry)
        self._account.adopt([(events[k], v) for k, v in holders.items()])
        if dropped and self._event_log is not None:
            # Discarded by MaxEventsPerConsumer, never counted; written with the next
            # event stored, not in a commit under the channel's lock.
            self._event_log.released(dropped, defer=True)

    def _reserve_proxy(self, name: str, force: bool = False) -> None:
        """Allow one more proxy, or raise AdminLimitExceeded once the clients connected
        now reach MaxConsumers/MaxSuppliers (section 3.4.15.9: "If the number of consumers
        currently connected to the channel ... exceeds the value of the MaxConsumers
        administrative property, the AdminLimitExceeded exception is raised"; docs/qos.md).
        A proxy supplier takes a slot of the service's max_subscriptions too. ``force``:
        a proxy restored from the store, whatever the limits."""
        with self._lock:
            limit = self._admin_props[name]
            if limit and not force and self._connected_counts[name] >= limit:
                raise CA.AdminLimitExceeded(CA.AdminLimit(
                    name, CORBA.Any(CORBA.TC_long, limit)))
            if name == "MaxConsumers":
                self._service.reserve_subscription(force)

    def _unreserve_proxy(self, name: str) -> None:
        if name == "MaxConsumers":
            self._service.release_subscription()

    def _count_connection(self, name: str, delta: int) -> None:
        """A client connected to (1) or left (-1) a proxy counted against ``name``."""
        with self._count_lock:
            self._connected_counts[name] += delta

    def _full_and_rejecting(self) -> bool:
        account = self._account
        if not (account.reject and account.full()):
            return False
        self._sweep_expired()
        return account.full()

    def _sweep_expired(self) -> None:
        """The channel is full (MaxQueueLength): take the copies whose Timeout or
        StopTime has passed out of every queue, if any may have (section 2.5.5.3: "If
        an event is not delivered within a specified time, then it should be
        discarded"), so they neither fill the channel nor survive a live victim: the
        queues' and those each proxy holds outside its queue (``_expire_held``: a
        push's retry, the unacknowledged, typed kept calls; review 141)."""
        account = self._account
        now = self._service.clock.now()
        if account.next_expiry > now:
            return
        account.sweep_begins()
        soonest = math.inf
        for admin in self._scan_routes():
            for proxy in admin._all_proxies():
                queue = getattr(proxy, "_queue", None)
                if queue is None:
                    continue
                with proxy._lock:
                    gone = queue.expire(now)
                    held, held_soonest = proxy._expire_held(now)  # outside the queue
                    soonest = min(soonest, queue.next_expiry, held_soonest)
                self._released(gone + held)
        account.expires_at(soonest)
