"""A channel's admin properties (section 2.5.7) and cosnotify's own.

Strategy: ``set_admin`` checks every property first (UnsupportedAdmin names
each refused one, nothing changes), then ``_apply_admin_props`` hands each
value to what it governs: MaxQueueLength, RejectNewEvents and DiscardPolicy
to the queue account (channel/account.py), the OES node limits to the
filters, FilterGroupSemantics to the router, and RetainAge, RetainCount and
RetainBytes to the history writer (channel/retention.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import CosNotification

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

    if TYPE_CHECKING:  # the channel's (channel.py, admin_mixins.py)
        def _check_alive(self) -> None: ...
        def _persist(self) -> None: ...
        def _scan_routes(self) -> Any: ...
        def _count_queued(self) -> None: ...

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
