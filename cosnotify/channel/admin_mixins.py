"""The QoSAdmin and FilterAdmin behaviour shared by channels, admins and proxies.

Strategy: two mixins. ``QoSAdminMixin`` keeps the *effective* QoS of its
object (defaults, then the parent's effective values at creation, then
explicit settings; section 2.5.3) and runs every request through
``cosnotify.qos.negotiation``; it remembers which values were set explicitly
somewhere in the hierarchy, because section 2.3.1 treats an "associated"
priority differently from the default. ``FilterAdminMixin`` keeps filters in
an immutable tuple swapped under a lock, so the event path reads it without
locking.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from omniORB import CORBA

import CosNotification
import CosNotifyFilter

from cosnotify.qos.negotiation import Target, additional_qos, check_qos, to_property_seq
from cosnotify.qos.properties import QOS_PROPERTIES, Level

__all__ = ["FilterAdminMixin", "QoSAdminMixin", "initial_qos"]

log = logging.getLogger("cosnotify.channel")


def initial_qos(level: Level, parent: Mapping[str, Any] | None,
                parent_explicit: frozenset[str] = frozenset()) -> tuple[dict[str, Any], set[str]]:
    """Defaults for ``level`` overlaid with the parent's values (section 2.5.3)."""
    values = {name: d.default for name, d in QOS_PROPERTIES.items() if d.default is not None}
    if parent:
        values.update(parent)
    return values, set(parent_explicit)


class QoSAdminMixin:
    """``CosNotification::QoSAdmin``: get_qos, set_qos, validate_qos."""

    _qos: dict[str, Any]
    _qos_explicit: set[str]
    _qos_level: Level
    _qos_lock: threading.RLock
    #: The object's own lock. Lock order is ``_lock`` then ``_qos_lock``, the order
    #: creating a child takes them (parent ``_lock``, then the parent's QoS snapshot).
    _lock: threading.RLock

    def _qos_target(self) -> Target:
        """The context the rules need; subclasses add parent and children."""
        return Target(self._qos_level)

    def _qos_capabilities(self) -> Any:
        raise NotImplementedError

    def _qos_changed(self, changes: Mapping[str, Any]) -> None:
        """Hook: apply new values (queues, batching)."""

    def get_qos(self) -> list[Any]:
        """The effective QoS: inherited, default and explicit values (section 2.5.6.3)."""
        with self._qos_lock:
            level = self._qos_level
            visible = {n: v for n, v in self._qos.items()
                       if QOS_PROPERTIES[n].levels & level
                       and QOS_PROPERTIES[n].levels != Level.MESSAGE}
        return to_property_seq(visible, QOS_PROPERTIES)

    def set_qos(self, qos: list[Any]) -> None:
        """Apply ``qos`` incrementally and atomically, or raise UnsupportedQoS."""
        with self._lock, self._qos_lock:
            changes, errors = check_qos(qos, self._qos_target(), self._qos,
                                        self._qos_capabilities())
            if errors:
                raise CosNotification.UnsupportedQoS(errors)
            self._qos.update(changes)
            self._qos_explicit.update(changes)
            self._qos_changed(changes)
        self._persist()

    def validate_qos(self, required_qos: list[Any]) -> list[Any]:
        """Check ``required_qos`` without applying it; return the optional extras."""
        with self._lock, self._qos_lock:
            target = self._qos_target()
            _, errors = check_qos(required_qos, target, self._qos, self._qos_capabilities())
            if errors:
                raise CosNotification.UnsupportedQoS(errors)
            return additional_qos(required_qos, target, self._qos, self._qos_capabilities())

    def _persist(self) -> None:
        """Save this object's record if the factory has a store (channel/topology.py)."""
        topology = self._service.topology  # type: ignore[attr-defined]
        if topology is not None:
            topology.save(self)

    def _qos_snapshot(self) -> tuple[dict[str, Any], frozenset[str]]:
        with self._qos_lock:
            return dict(self._qos), frozenset(self._qos_explicit)


class FilterAdminMixin:
    """``CosNotifyFilter::FilterAdmin`` over an immutable, lock-free-to-read tuple."""

    _filters: tuple[tuple[int, Any], ...] = ()

    def _init_filters(self) -> None:
        self._filters = ()
        self._filter_lock = threading.Lock()
        self._next_filter_id = 1  # never reused, across restarts too (topology.py)

    def add_filter(self, new_filter: Any) -> int:
        if new_filter is None:
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO, "add_filter: nil filter")
        with self._filter_lock:
            # Destroyed: as a remote call would find it (its teardown removed the
            # filters it held; one added now would keep a callback nobody detaches).
            self._check_alive()
            filter_id = self._next_filter_id
            self._next_filter_id += 1
            self._filters = self._filters + ((filter_id, new_filter),)
            self._route_filter(new_filter, True)
            self._filter_adding(filter_id, new_filter)
        self._filter_added(filter_id, new_filter)
        self._persist()
        return filter_id

    def remove_filter(self, filter: int) -> None:
        with self._filter_lock:
            kept = tuple(pair for pair in self._filters if pair[0] != filter)
            if len(kept) == len(self._filters):
                raise CosNotifyFilter.FilterNotFound()
            removed = next(pair[1] for pair in self._filters if pair[0] == filter)
            self._filters = kept
            self._route_filter(removed, False)
        self._filter_removed(filter, removed)
        self._persist()

    def get_filter(self, filter: int) -> Any:
        for filter_id, found in self._filters:
            if filter_id == filter:
                return found
        raise CosNotifyFilter.FilterNotFound()

    def get_all_filters(self) -> list[int]:
        return [filter_id for filter_id, _ in self._filters]

    def remove_all_filters(self) -> None:
        with self._filter_lock:
            removed, self._filters = self._filters, ()
            for _, old in removed:
                self._route_filter(old, False)
        for filter_id, old in removed:
            self._filter_removed(filter_id, old)
        if removed:
            self._persist()

    def _persist(self) -> None:
        """Overridden by QoSAdminMixin where both are mixed in."""

    # -- hooks -------------------------------------------------------------------------
    def _check_alive(self) -> None:
        """OBJECT_NOT_EXIST once destroyed (proxies and admins)."""

    def _route_filter(self, flt: Any, added: bool) -> None:
        """The channel's router follows ``_filters`` (called with ``_filter_lock`` held,
        so the router sees adds and removes in the order they happened)."""

    def _filter_adding(self, filter_id: int, new_filter: Any) -> None:
        """Called as a filter is added, with ``_filter_lock`` held (it is in ``_filters``
        now), so a remove that follows finds what it did; then ``_filter_added``."""

    def _filter_added(self, filter_id: int, new_filter: Any) -> None:
        """Called after a filter is added (outside the lock)."""

    def _filter_removed(self, filter_id: int, old_filter: Any) -> None:
        """Called after a filter is removed (outside the lock)."""

    # -- evaluation ---------------------------------------------------------------------
    def _filters_match(self, event: Any) -> bool:
        """OR over this object's filters; an empty set forwards everything (section 2.3)."""
        filters = self._filters
        if not filters:
            return True
        return match_any(filters, event)


def groups_pass(admin_passed: bool | None, own: tuple[tuple[int, Any], ...], and_op: bool,
                or_empty_passes: bool, event: Any) -> bool:
    """Whether a proxy's two filter groups pass ``event`` (section 2.3 and footnote 3).

    ``admin_passed`` is the admin group's result, or None when the admin has no
    filters; ``own`` are the proxy's filters. As the spec states it, all the
    filters associated with a proxy are ORed, so a group with no filters lets
    the other decide, and the InterFilterGroupOperator counts only when both
    groups have filters: AND_OP needs both, OR_OP either. With
    ``or_empty_passes`` (FilterGroupSemantics 1, TAO's and JacORB's reading)
    an empty group under OR_OP passes everything. No filters at all: pass.
    """
    if and_op:
        if admin_passed is False:
            return False
        return not own or match_any(own, event)
    if admin_passed is None:
        return or_empty_passes or not own or match_any(own, event)
    if not own:
        return admin_passed or or_empty_passes
    return admin_passed or match_any(own, event)


def match_any(filters: tuple[tuple[int, Any], ...], event: Any) -> bool:
    """True when one of ``filters`` matches ``event`` (OR semantics, section 2.3).

    Each filter gets the event in the form it was supplied in (section 2.3:
    ``match`` for an Any, ``match_structured`` for a Structured Event,
    ``match_typed`` "upon receipt of a typed event", with the name-value
    sequence section 2.7 makes: ``event.typed``, cosnotify/typed/events.py). A
    filter that raises (a remote filter that is gone, a grammar that cannot
    handle this form) does not match; the failure is logged.
    """
    structured = event.is_structured
    typed = event.typed
    for _, candidate in filters:
        try:
            if typed is not None:
                if candidate.match_typed(typed):
                    return True
            elif structured:
                if candidate.match_structured(event.structured):
                    return True
            elif candidate.match(event.any):
                return True
        except Exception as exc:  # noqa: BLE001 - any filter failure means "no match"
            log.warning("filter %r failed on %r: %s", candidate, event, exc)
    return False
