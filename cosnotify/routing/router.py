"""The channel's router: from an event to the proxy suppliers that receive it.

Strategy: section 2.3 decides delivery per proxy supplier from two filter
groups, the admin's and the proxy's (``admin_mixins.groups_pass``): a group
passes when one of its filters matches; when one group is empty the other
decides, and the admin's InterFilterGroupOperator combines them when both
have filters. (With FilterGroupSemantics 1, TAO's reading, an empty group
under OR_OP passes everything.) The router keeps, per proxy, which of these
shapes it has, so an event costs the proxies it reaches plus the filters it
matches, not every proxy:

- *open* proxies receive every event, whatever matched: neither group has
  filters (or, TAO's reading, an OR admin where one group is empty);
- a *filtered* proxy (it has filters) receives the event when one of its
  filters matched and the admin's group allows it (AND: the admin matched or
  has no filters; OR: always);
- an *unfiltered* proxy (only its admin has filters) receives the event when
  the admin matched; a matching OR admin also passes its filtered proxies.

Filters made by this process's factories are indexed (``index``): which of
them match is one lookup. Any other filter (another process's, or one of a
grammar without index terms) is *opaque* and asked on every event, outside
the router's lock, as the scanning router would.

Everything the router keeps is changed and read under one lock, taken while
the receivers are computed, never while an event is delivered.
Subscription-type filters (``subscription_change`` on the proxy) are
checked by each proxy as it takes the event. Such a list is the proxy's
filter group (section 2.6.5, "instead of a filter object"): under an OR_OP
admin with filters the proxy is open and asks its admin's filters itself for
an event of a type it did not name.
"""

from __future__ import annotations

import threading
from typing import Any

from cosnotify.channel.admin_mixins import match_any
from cosnotify.filter.constraints import (
    ANY_EVENT_TYPE,
    holds_structured_event,
    structured_type,
    typed_type,
)
from cosnotify.filter.filter import Filter
from cosnotify.filter.paths import Form
from cosnotify.routing.index import PredicateIndex

__all__ = ["Router"]

_OPEN, _FILTERED, _UNFILTERED = "open", "filtered", "unfiltered"


class FilterRecord:
    """One filter attached somewhere in the channel, with who holds it."""

    __slots__ = ("admins", "direct", "filter", "gated", "owners", "solo", "version")

    def __init__(self, flt: Any) -> None:
        self.filter = flt
        self.owners: dict[Any, int] = {}  # admin or proxy -> times attached
        #: Where an event this filter matches leads, as of ``Router._version`` ==
        #: ``version`` (``Router._fan_out``; -1: not worked out): ``direct`` proxies
        #: receive it; ``gated`` ones, (proxy, its admin), when their AND admin's
        #: filters also matched; each of ``admins``, (admin, its routes), passes
        #: its proxies as ``Router.receivers`` says. ``solo``: the one direct proxy
        #: when that is all (the common case, read without the tuple).
        self.version = -1
        self.solo: Any = None
        self.direct: tuple[Any, ...] = ()
        self.gated: tuple[tuple[Any, Any], ...] = ()
        self.admins: tuple[tuple[Any, _AdminRoutes], ...] = ()


class _AdminRoutes:
    __slots__ = ("and_op", "filtered", "has_filters", "unfiltered")

    def __init__(self, and_op: bool) -> None:
        self.and_op = and_op
        self.has_filters = False
        self.filtered: dict[Any, None] = {}    # connected proxies with filters
        self.unfiltered: dict[Any, None] = {}  # connected proxies without


class Router:
    """Receivers of each event of one channel, from a predicate index."""

    def __init__(self, enabled: bool = True) -> None:
        #: False with ``ServiceConfig.routing == "scan"``: the router keeps nothing.
        self.enabled = enabled
        self._lock = threading.Lock()
        self.index = PredicateIndex()
        self._records: dict[int, FilterRecord] = {}  # id(filter) -> indexed record
        self._opaque: dict[int, FilterRecord] = {}
        self._opaque_snapshot: tuple[FilterRecord, ...] = ()
        self._admins: dict[Any, _AdminRoutes] = {}
        self._open: dict[Any, None] = {}
        self._shape: dict[Any, str] = {}  # connected proxy -> its shape
        #: The channel's FilterGroupSemantics is TAO's (docs/filters.md, "Filter groups").
        self.or_empty_passes = False
        #: Raised (under the lock) by every change of owners, shapes or admins' routes:
        #: a record's receivers of an older version are worked out again.
        self._version = 0

    # -- what the channel tells us ----------------------------------------------------------
    def attach(self, owner: Any, flt: Any) -> None:
        """``owner`` (an admin or proxy supplier) added ``flt``; once this returns the
        filter's constraints are indexed.

        Attaching and detaching one filter hold that filter's lock throughout (the
        order its own changes take: the filter's lock, then the router's), so the
        first holder's posting and the last holder's withdrawal are never
        interleaved with another holder's."""
        if not self.enabled:
            return
        if not (isinstance(flt, Filter) and flt._grammar.decompose is not None):
            with self._lock:
                record = self._opaque.get(id(flt))
                if record is None:
                    record = self._opaque[id(flt)] = FilterRecord(flt)
                    self._opaque_snapshot = tuple(self._opaque.values())
                record.owners[owner] = record.owners.get(owner, 0) + 1
                self._version += 1
            return
        with flt._lock:
            with self._lock:
                found = self._records.get(id(flt))
                record = FilterRecord(flt) if found is None else found
                if found is None:
                    self._records[id(flt)] = record
                record.owners[owner] = record.owners.get(owner, 0) + 1
                self._version += 1
            if found is None:
                flt._watch(self, record)  # posts its constraints

    def detach(self, owner: Any, flt: Any) -> None:
        """``owner`` removed ``flt``."""
        if not self.enabled:
            return
        if not (isinstance(flt, Filter) and flt._grammar.decompose is not None):
            with self._lock:
                record = self._opaque.get(id(flt))
                if record is not None and self._drop_owner(record, owner):
                    del self._opaque[id(flt)]
                    self._opaque_snapshot = tuple(self._opaque.values())
            return
        with flt._lock:
            with self._lock:
                record = self._records.get(id(flt))
                if record is None or not self._drop_owner(record, owner):
                    return
                del self._records[id(flt)]
            flt._unwatch(self, record)  # withdraws its constraints

    def _drop_owner(self, record: FilterRecord, owner: Any) -> bool:
        """One hold of ``owner`` less; True when the record has no holder left."""
        count = record.owners.get(owner)
        if count is None:
            return False
        self._version += 1
        # Its receivers may hold the owner on its way out: worked out again when needed.
        record.version, record.direct, record.gated, record.admins = -1, (), (), ()
        record.solo = None
        if count > 1:
            record.owners[owner] = count - 1
            return False
        del record.owners[owner]
        return not record.owners

    def posted(self, record: FilterRecord, entries: list[Any]) -> None:
        """The filter's watcher hook: ``entries`` are about to be published."""
        with self._lock:
            self.index.add(record, entries)

    def withdrawn(self, record: FilterRecord, entries: list[Any]) -> None:
        """The filter's watcher hook: ``entries`` are no longer published."""
        with self._lock:
            self.index.remove(record, entries)

    def refresh(self, proxy: Any) -> None:
        """A proxy supplier connected, went away, or gained or lost its filters."""
        if not self.enabled:
            return
        with self._lock:
            self._place(proxy)

    def refresh_admin(self, admin: Any) -> None:
        """A consumer admin's filters changed: when it gained its first or lost its
        last, its proxies' shapes change with it."""
        if not self.enabled:
            return
        with self._lock:
            routes = self._admins.get(admin)
            if routes is not None and routes.has_filters == bool(admin._filters):
                return
        proxies = admin._all_proxies()
        with self._lock:
            if admin._destroyed:
                return  # its proxies go one by one; admin_gone drops its routes
            self._routes_of(admin).has_filters = bool(admin._filters)
            self._version += 1
            for proxy in proxies:
                self._place(proxy)

    def set_or_empty_passes(self, value: bool, proxies: list[Any]) -> None:
        """The channel's FilterGroupSemantics changed: re-place every proxy supplier --
        those listed, and every one placed meanwhile (review 112: a proxy connected
        after the channel listed them took the old shape and kept it)."""
        with self._lock:
            self.or_empty_passes = value
            self._version += 1
            if self.enabled:
                for proxy in dict.fromkeys([*proxies, *self._shape]):
                    self._place(proxy)

    def admin_gone(self, admin: Any) -> None:
        with self._lock:
            self._admins.pop(admin, None)
            self._version += 1

    def _routes_of(self, admin: Any) -> _AdminRoutes:
        routes = self._admins.get(admin)
        if routes is None:
            routes = self._admins[admin] = _AdminRoutes(admin._and_op)
            routes.has_filters = bool(admin._filters)
        return routes

    def _place(self, proxy: Any) -> None:
        self._version += 1
        admin = proxy._admin
        old = self._shape.pop(proxy, None)
        if old == _OPEN:
            del self._open[proxy]
        elif old is not None:
            routes = self._admins.get(admin)
            if routes is not None:
                routes.filtered.pop(proxy, None)
                routes.unfiltered.pop(proxy, None)
        if not proxy._connected or proxy._destroyed or admin._destroyed:
            return
        routes = self._routes_of(admin)
        # The admin's filters read live: a proxy placed while its admin gains its
        # first filter (before refresh_admin re-places the others and records it)
        # already takes the shape that goes with it.
        admin_filtered = bool(admin._filters)
        own = bool(proxy._filters)
        if admin_filtered and not own and not routes.and_op \
                and getattr(proxy, "_type_filter", None) is not None:
            # Its subscription_change list ORed with the admin's filters: it judges
            # every event itself (ProxySupplier.accept).
            shape = _OPEN
        elif routes.and_op or not self.or_empty_passes:
            shape = (_OPEN if not (own or admin_filtered)
                     else _FILTERED if own else _UNFILTERED)
        else:
            shape = _FILTERED if own and admin_filtered else _OPEN
        self._shape[proxy] = shape
        if shape == _OPEN:
            self._open[proxy] = None
        elif shape == _FILTERED:
            routes.filtered[proxy] = None
        else:
            routes.unfiltered[proxy] = None

    # -- the event path --------------------------------------------------------------------
    def receivers(self, event: Any) -> list[Any]:
        """The proxy suppliers whose filters (and admins' filters) pass ``event``."""
        key: tuple[str, str] | None
        if event.typed is not None:  # a typed call: match_typed (admin_mixins.match_any)
            data, form, key = event.typed, Form.TYPED, typed_type(event.typed)
        elif event.is_structured:
            data, form = event.structured, Form.STRUCTURED
            key = structured_type(data)
        else:
            inner = holds_structured_event(event.any)
            if inner is not None:
                data, form, key = inner, Form.STRUCTURED, structured_type(inner)
            else:
                data, form, key = event.any, Form.ANY, ANY_EVENT_TYPE
        opaque = self._opaque_snapshot
        if opaque:
            # Asked exactly as the scanning router asks them (admin_mixins.match_any).
            opaque = tuple(record for record in opaque
                           if match_any(((0, record.filter),), event))
        with self._lock:
            matched = self.index.match(data, form, key)
            if opaque:
                matched.extend(opaque)
            if not matched:
                return list(self._open)
            found = dict.fromkeys(self._open) if self._open else {}
            version = self._version
            hit: dict[Any, _AdminRoutes] = {}
            gated: list[tuple[Any, Any]] = []
            for record in matched:
                if record.version != version:
                    self._fan_out(record)
                solo = record.solo
                if solo is not None:
                    found[solo] = None
                    continue
                for proxy in record.direct:
                    found[proxy] = None
                if record.gated:
                    gated.extend(record.gated)
                for admin, routes in record.admins:
                    hit[admin] = routes
            for routes in hit.values():
                found.update(routes.unfiltered)  # empty under TAO's OR reading
                if not routes.and_op:
                    found.update(routes.filtered)
            for proxy, admin in gated:
                if admin in hit:
                    found[proxy] = None
            return list(found)

    def _fan_out(self, record: FilterRecord) -> None:
        """Work out (lock held) where a match of ``record``'s filter leads: its admins,
        and the filtered proxies holding it, whose admin lets the event through unless
        it is an AND admin with filters of its own (then only when those matched)."""
        admins, shape = self._admins, self._shape
        direct: list[Any] = []
        gated: list[tuple[Any, Any]] = []
        owned: list[tuple[Any, _AdminRoutes]] = []
        for owner in record.owners:
            routes = admins.get(owner)
            if routes is not None:
                owned.append((owner, routes))
            elif shape.get(owner) == _FILTERED:
                admin = owner._admin
                routes = admins.get(admin)
                if routes is None:  # the admin is being destroyed
                    continue
                if not routes.and_op or not routes.has_filters:
                    direct.append(owner)
                else:
                    gated.append((owner, admin))
        record.direct, record.gated, record.admins = tuple(direct), tuple(gated), tuple(owned)
        record.solo = direct[0] if len(direct) == 1 and not gated and not owned else None
        record.version = self._version

    @property
    def connected(self) -> int:
        """Connected proxy suppliers (read without the lock: a hint)."""
        return len(self._shape)

    # -- inspection -------------------------------------------------------------------------
    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"filters": len(self._records), "opaque_filters": len(self._opaque),
                    "constraints": len(self.index), "fallback_constraints":
                    self.index.fallback_count, "components": self.index.slot_count,
                    "open_proxies": len(self._open), "proxies": len(self._shape)}
