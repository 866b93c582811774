"""Subscription sharing (spec section 2.6): offers and subscriptions, aggregated.

Strategy: every contributor (a proxy supplier or consumer admin for
subscriptions; a proxy consumer or supplier admin for offers) keeps the
*set* of event types it contributes, and hands the hub only the difference
when that set changes. The hub counts contributors per type; a type entering
or leaving the aggregate is relayed to clients: subscription changes to the
suppliers connected to proxy consumers (``subscription_change``), offer
changes to the consumers connected to proxy suppliers (``offer_change``).

Relays never run on the caller's thread and never under a lock: each client
has a :class:`Relay` that coalesces pending changes and sends them in order
on the worker pool. A client that answers NO_IMPLEMENT (section 2.6.2/2.6.3)
is not called again.

Event types are normalised once, by ``cosnotify.eventtypes``.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from omniORB import CORBA

import CosNotification
import CosNotifyChannelAdmin as CA
import CosNotifyComm__POA

from cosnotify.eventtypes import (
    ALL,
    ATTRIBUTE_DOMAIN,
    attribute_type,
    check_event_types,
    normalize,
    type_matches,
)

__all__ = [
    "ALL",
    "Relay",
    "SubscriptionHub",
    "TypeSet",
    "check_event_types",
    "normalize",
    "type_matches",
]

log = logging.getLogger("cosnotify.channel")


def to_event_types(pairs: Iterable[tuple[str, str]]) -> list[Any]:
    """An EventTypeSeq for the pairs, in a stable order."""
    return [CosNotification.EventType(d, t) for d, t in sorted(pairs)]


class TypeSet:
    """One contributor's event types; ``update`` returns the (added, removed) delta.

    ``types`` is replaced, never changed in place, so a reader without the
    writer's lock (``_wanted_types``) sees one whole set.
    """

    def __init__(self) -> None:
        self.types: set[tuple[str, str]] = set()

    def update(self, added: Iterable[tuple[str, str]],
               removed: Iterable[tuple[str, str]]) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
        before = self.types
        self.types = (before - set(removed)) | set(added)
        return self.types - before, before - self.types

    def replace(self, types: Iterable[tuple[str, str]]) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
        new = set(types)
        added, removed = new - self.types, self.types - new
        self.types = new
        return added, removed


class Relay:
    """Sends one client's offer or subscription changes, in order, coalesced.

    ``method`` is the client operation to call (``offer_change`` or
    ``subscription_change``). Changes queued while a send is in flight are
    merged: a type added then removed before it was sent is not sent at all.
    """

    def __init__(self, service: Any, client: Any, method: str) -> None:
        self._service = service
        self._client = client  # may be attached later (the proxy exists before its client)
        self._method = method
        self._lock = threading.Lock()
        self._added: set[tuple[str, str]] = set()
        self._removed: set[tuple[str, str]] = set()
        self._scheduled = False
        self.enabled = True
        self.unsupported = False
        #: The change being sent now, (added, removed), else None: ``clear`` corrects it.
        self._in_flight: tuple[set[tuple[str, str]], set[tuple[str, str]]] | None = None
        #: What the client was told (or, NONE_NOW_UPDATES_ON, what it was not told
        #: about) by an obtain made before it connected; None when there is none.
        self.baseline: set[tuple[str, str]] | None = None

    def attach(self, client: Any) -> None:
        """The client to tell, once it has connected."""
        self._client = client

    @property
    def attached(self) -> bool:
        return self._client is not None

    def clear(self, current: Iterable[tuple[str, str]] | None = None) -> None:
        """Drop the changes not sent yet: the client was given a new baseline, or asked
        for no more updates (``SubscriptionHub.obtain``). A send in flight goes on and
        reaches the client after the baseline, so with ``current`` (the baseline, the
        aggregate now) what is left to send is its correction: the types it removes
        that are in ``current`` added again, those it adds that are not removed
        (Table 3-1: the list and the updates "should be atomic"; review 141)."""
        with self._lock:
            flight = self._in_flight
            if current is None or flight is None:
                self._added, self._removed = set(), set()
                return
            now = set(current)
            self._added = flight[1] & now
            self._removed = flight[0] - now

    def post(self, added: Iterable[tuple[str, str]], removed: Iterable[tuple[str, str]]) -> None:
        if not self.enabled or self.unsupported or self._client is None:
            return
        with self._lock:
            for pair in added:
                if pair in self._removed:
                    self._removed.discard(pair)
                else:
                    self._added.add(pair)
            for pair in removed:
                if pair in self._added:
                    self._added.discard(pair)
                else:
                    self._removed.add(pair)
            if (self._added or self._removed) and not self._scheduled:
                self._scheduled = True
                self._service.submit(self._send, self._service.lane_for(self._client))

    def _send(self) -> bool:
        with self._lock:
            added, removed = self._added, self._removed
            self._added, self._removed = set(), set()
            if not (added or removed) or not self.enabled:
                self._scheduled = False
                return False
            self._in_flight = (added, removed)
        try:
            getattr(self._client, self._method)(to_event_types(added), to_event_types(removed))
        except CORBA.NO_IMPLEMENT:
            self.unsupported = True
        except Exception as exc:  # noqa: BLE001 - a client failing a courtesy call is logged
            log.info("%s on %r failed: %s", self._method, self._client, exc)
        with self._lock:
            self._in_flight = None
            if self._added or self._removed:
                return True
            self._scheduled = False
            return False


class _Aggregate:
    """Reference counts per event type over all contributors."""

    def __init__(self) -> None:
        self.counts: collections.Counter[tuple[str, str]] = collections.Counter()

    def apply(self, added: Iterable[tuple[str, str]],
              removed: Iterable[tuple[str, str]]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        appeared, vanished = [], []
        for pair in added:
            self.counts[pair] += 1
            if self.counts[pair] == 1:
                appeared.append(pair)
        for pair in removed:
            if self.counts[pair] <= 0:
                continue
            self.counts[pair] -= 1
            if self.counts[pair] == 0:
                del self.counts[pair]
                vanished.append(pair)
        return appeared, vanished

    def current(self) -> list[tuple[str, str]]:
        return sorted(self.counts)


class SubscriptionHub:
    """One channel's aggregate offers and subscriptions and who to tell."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscriptions = _Aggregate()
        self._offers = _Aggregate()
        self._supplier_relays: dict[int, Relay] = {}   # told about subscription changes
        self._consumer_relays: dict[int, Relay] = {}   # told about offer changes

    # -- contributors ----------------------------------------------------------------
    def change_subscriptions(self, added: Iterable[tuple[str, str]],
                             removed: Iterable[tuple[str, str]]) -> None:
        self._change(self._subscriptions, self._supplier_relays, added, removed)

    def change_offers(self, added: Iterable[tuple[str, str]],
                      removed: Iterable[tuple[str, str]]) -> None:
        self._change(self._offers, self._consumer_relays, added, removed)

    def _change(self, aggregate: _Aggregate, relays: dict[int, Relay],
                added: Iterable[tuple[str, str]], removed: Iterable[tuple[str, str]]) -> None:
        with self._lock:
            appeared, vanished = aggregate.apply(added, removed)
            if appeared or vanished:
                for relay in relays.values():
                    relay.post(appeared, vanished)

    # -- clients -----------------------------------------------------------------------
    def watch_subscriptions(self, key: int, relay: Relay, client: Any) -> None:
        """Tell ``client`` (a proxy consumer's supplier) of subscription changes."""
        self._watch(self._subscriptions, self._supplier_relays, key, relay, client)

    def watch_offers(self, key: int, relay: Relay, client: Any) -> None:
        """Tell ``client`` (a proxy supplier's consumer) of offer changes."""
        self._watch(self._offers, self._consumer_relays, key, relay, client)

    def _watch(self, aggregate: _Aggregate, relays: dict[int, Relay], key: int,
               relay: Relay, client: Any) -> None:
        """Attach ``client`` to ``relay``; if the proxy's ``obtain_*`` turned updates on
        before it connected, first post what changed since (Table 3-1: the client
        "does not miss any subscription change updates that may be issued after the
        operation returns"), all under the lock that changes take."""
        with self._lock:
            relay.attach(client)
            relays[key] = relay
            baseline, relay.baseline = relay.baseline, None
            if baseline is not None:
                current = set(aggregate.current())
                relay.post(current - baseline, baseline - current)

    def unwatch(self, key: int) -> None:
        with self._lock:
            self._supplier_relays.pop(key, None)
            self._consumer_relays.pop(key, None)

    def obtain(self, which: str, relay: Relay | None, mode: Any) -> list[Any]:
        """``obtain_subscription_types`` / ``obtain_offered_types`` (Table 3-1).

        Reading the aggregate and switching updates happen under one lock, so
        a client that turns updates on misses nothing and gets nothing twice --
        also before it connects: the relay keeps the aggregate as it was then, and
        ``_watch`` posts the difference when the client attaches.
        The list an ALL_NOW mode returns is the client's new baseline, and a
        client that turns updates off was told to forget them: either way the
        changes its relay still held are dropped (Table 3-1: "these two actions
        should be atomic"), else one made before the list was read, and undone
        while updates were off, would reach the client after it. A change already
        being sent still reaches it after the list: for ALL_NOW_UPDATES_ON the
        relay then sends its correction against the list (``Relay.clear``).
        """
        aggregate = self._subscriptions if which == "subscriptions" else self._offers
        updates = mode in (CA.ALL_NOW_UPDATES_ON, CA.NONE_NOW_UPDATES_ON)
        with self._lock:
            if relay is not None:
                relay.enabled = updates
                if not updates:
                    relay.clear()
                elif mode == CA.ALL_NOW_UPDATES_ON:  # a send in flight is corrected
                    relay.clear(aggregate.current())
                if not relay.attached:  # before connect: changes from now on are owed
                    relay.baseline = set(aggregate.current()) if updates else None
            if mode in (CA.ALL_NOW_UPDATES_OFF, CA.ALL_NOW_UPDATES_ON):
                return to_event_types(aggregate.current())
            return []

    def current(self, which: str) -> list[tuple[str, str]]:
        with self._lock:
            aggregate = self._subscriptions if which == "subscriptions" else self._offers
            return aggregate.current()


class SubscriptionContributor:
    """Follows the event types an object subscribes to and reports changes to the hub.

    Used by proxy suppliers and consumer admins (section 2.6.5): the types come
    from ``subscription_change`` calls made on the object itself and from the
    constraints of its filters, which call back through a per-filter
    :class:`FilterCallback` attached with ``attach_callback``.

    A filter's callback is registered while the filter is added (under the
    object's filter lock, ``_filter_adding``), so a ``remove_filter`` that
    follows always finds it; it is attached *before* the filter's constraints
    are read, so no change made meanwhile goes unreported (the reports that
    arrive before the read are applied on top of it: :meth:`FilterCallback.prime`).
    """

    _channel: Any
    _destroyed: bool
    _filters: tuple[tuple[int, Any], ...]

    def _init_subscriptions(self) -> None:
        self._explicit = TypeSet()
        self._callbacks: dict[int, FilterCallback] = {}
        self._contribution = TypeSet()
        #: One thread at a time recomputes and hands the hub the difference; a change
        #: made meanwhile marks the contribution dirty and that thread goes round again
        #: (``_update_contribution``), so no update is lost and none waits on another.
        self._contribution_lock = threading.Lock()
        self._contribution_dirty = False
        self._contribution_busy = False

    def _checked_types(self, types: list[Any]) -> list[tuple[str, str]]:
        return check_event_types(types)

    def _filter_adding(self, filter_id: int, new_filter: Any) -> None:
        """The filter is in ``_filters`` now (called with ``_filter_lock`` held)."""
        self._callbacks[filter_id] = FilterCallback(self, _reports_aggregate(new_filter))
        self._filters_changed()

    def _filter_added(self, filter_id: int, new_filter: Any) -> None:
        callback = self._callbacks.get(filter_id)
        if callback is None:  # removed again already (_filter_removed)
            return
        try:
            callback_id = new_filter.attach_callback(callback.argument_for(new_filter))
        except Exception as exc:  # noqa: BLE001 - a remote filter may refuse; sharing is best effort
            log.debug("cannot follow subscriptions of %r: %s", new_filter, exc)
            callback.release()
        else:
            if not callback.attached(callback_id):  # removed while attaching
                _detach(new_filter, callback)
                return
        counts: collections.Counter[tuple[str, str]] = collections.Counter()
        try:
            constraints = new_filter.get_all_constraints()
            for info in constraints:
                counts.update(set(self._checked_types(info.constraint_expression.event_types)
                                  or [ALL]))
            counts.update(_attributes_of(new_filter, constraints))
        except Exception as exc:  # noqa: BLE001 - a remote filter may be gone
            log.debug("cannot read the constraints of %r: %s", new_filter, exc)
        callback.prime(counts)
        self._update_contribution()

    def _filter_removed(self, filter_id: int, old_filter: Any) -> None:
        callback = self._callbacks.pop(filter_id, None)
        self._filters_changed()
        if callback is not None and callback.cancel() is not None:
            _detach(old_filter, callback)  # else _filter_added detaches it, once attached
        self._update_contribution()

    def _filters_changed(self) -> None:
        """Hook: a filter was added or removed (proxy suppliers: section 2.6.5)."""

    def _filter_wanted(self) -> set[tuple[str, str]]:
        """The types the filters' constraints require now."""
        wanted: set[tuple[str, str]] = set()
        for callback in list(self._callbacks.values()):  # add_filter may run meanwhile
            wanted |= callback.types()
        return wanted

    def _wanted_types(self) -> set[tuple[str, str]]:
        """The types this contributor adds to the aggregate now."""
        return self._collapsed(set(self._explicit.types) | self._filter_wanted())

    def _collapsed(self, wanted: set[tuple[str, str]]) -> set[tuple[str, str]]:
        if ALL in wanted:  # every type; attributes tested still count (a quench)
            wanted = {ALL} | {pair for pair in wanted if pair[0] == ATTRIBUTE_DOMAIN}
        return set() if self._destroyed else wanted

    def _update_contribution(self) -> None:
        """Recompute what this object contributes and hand the hub the difference.

        Without a lock held while computing (``_wanted_types`` may take others):
        a call made while another thread is at it leaves the work to that thread,
        which recomputes until nothing changed under it (section 2.6.3: the
        aggregate must not lose a type a consumer requires).
        """
        lock = self._contribution_lock
        with lock:
            self._contribution_dirty = True
            if self._contribution_busy:
                return
            self._contribution_busy = True
        try:
            while True:
                with lock:
                    if not self._contribution_dirty:
                        self._contribution_busy = False
                        return
                    self._contribution_dirty = False
                added, removed = self._contribution.replace(self._wanted_types())
                if added or removed:
                    self._channel._hub.change_subscriptions(added, removed)
        except BaseException:
            with lock:
                self._contribution_busy = False
            raise


def _reports_aggregate(flt: Any) -> bool:
    """Whether ``flt`` reports the aggregate of its constraints' types (this
    service's filters, docs/filters.md decision 41) rather than each
    constraint's; a filter that does not say is counted per constraint."""
    try:
        return getattr(flt, "_reports_aggregate", False) is True
    except Exception:  # noqa: BLE001 - an object reference answers nothing here
        return False


def _detach(flt: Any, callback: FilterCallback) -> None:
    """Detach ``callback`` (attached, and already taken off its owner) from ``flt``."""
    if callback.callback_id is not None:
        try:
            flt.detach_callback(callback.callback_id)
        except Exception as exc:  # noqa: BLE001
            log.debug("detach_callback on %r failed: %s", flt, exc)
    callback.release()


def _attributes_of(flt: Any, constraints: list[Any]) -> list[tuple[str, str]]:
    """The ("%ATTRIBUTE", name) types ``flt``'s constraints test now (a quench).

    A filter of this process says; another's (a client's, another server's) is
    read by compiling its constraints here when its grammar is one of ours
    with a ``tested`` function, so the later changes its callback reports
    start from the right set. Otherwise: none.
    """
    attributes = getattr(flt, "_attribute_types", None)
    if attributes is not None:
        return list(attributes())
    from cosnotify.filter.registry import CompileContext, lookup_grammar

    try:
        grammar = lookup_grammar(flt._get_constraint_grammar())
    except Exception:  # noqa: BLE001 - a remote filter may be gone; sharing is best effort
        return []
    if grammar is None or grammar.tested is None:
        return []
    found: set[tuple[str, str]] = set()
    context = CompileContext()
    for info in constraints:
        try:
            names = grammar.tested(grammar.compile(info.constraint_expression.constraint_expr,
                                                   context))
        except Exception as exc:  # noqa: BLE001 - a constraint we cannot read reports nothing
            log.debug("no quench for constraint %r of %r: %s", info, flt, exc)
            continue
        found.update(pair for pair in map(attribute_type, names) if pair is not None)
    return sorted(found)


class FilterCallback(CosNotifyComm__POA.NotifySubscribe):  # type: ignore[misc]
    """The NotifySubscribe a contributor attaches to each of its filters (section 2.6.5).

    A servant of omniORB's NotifySubscribe skeleton. A filter in this process
    (or the server layer's guard around a client's filter, which makes its own
    reference) is handed the object itself; a filter that is an object
    reference is handed a reference to it, activated in its default POA
    (omniORB's RootPOA, whose manager the application activates) when first
    needed and deactivated when the filter is removed.

    It counts each type (section 2.6.5: a filter may "convey the event types
    for a constraint as the added parameter ... when the constraint is added
    and then as the removed parameter ... when that constraint is removed, or
    ... maintain an aggregate"): a type stays required until every report
    that added it was matched by one that removed it. A filter that reports
    the aggregate (``aggregate``: this service's) is followed as a set.

    Until :meth:`prime` gives the filter's types as read after attaching, the
    reports are kept and then applied on top of the read, in order. Those of
    an aggregate filter say what the set became, so the result is exact; for
    a filter counted per constraint a report made before the read may also be
    in it, so only the added types are applied (a type may stay required after
    its last constraint went; never the other way round).
    """

    def __init__(self, owner: SubscriptionContributor, aggregate: bool = False) -> None:
        self._owner = owner
        self.aggregate = aggregate
        self._lock = threading.Lock()
        self._counts: collections.Counter[tuple[str, str]] = collections.Counter()
        self._pending: list[tuple[list[tuple[str, str]], list[tuple[str, str]]]] | None = []
        self._cancelled = False
        self.callback_id: int | None = None
        self._reference: Any = None

    def subscription_change(self, added: list[Any], removed: list[Any]) -> None:
        # A filter reports event types and, for grammars with a quench, the
        # ("%ATTRIBUTE", name) types of the attributes it tests.
        add = check_event_types(added, attributes=True)
        remove = check_event_types(removed, attributes=True)
        with self._lock:
            if self._pending is not None:  # not primed yet
                self._pending.append((add, remove))
                return
            self._apply(add, remove)
        self._owner._update_contribution()

    def _apply(self, added: list[tuple[str, str]], removed: list[tuple[str, str]]) -> None:
        counts = self._counts
        for pair in removed:
            if counts[pair] <= 1 or self.aggregate:
                counts.pop(pair, None)
            else:
                counts[pair] -= 1
        for pair in added:
            counts[pair] = 1 if self.aggregate else counts[pair] + 1

    def prime(self, counts: collections.Counter[tuple[str, str]]) -> None:
        """The filter's types as read after attaching (per constraint), then the
        reports that came meanwhile."""
        with self._lock:
            self._counts = collections.Counter(dict.fromkeys(counts, 1)) if self.aggregate \
                else collections.Counter(counts)
            for added, removed in self._pending or ():
                self._apply(added, removed if self.aggregate else [])
            self._pending = None

    def types(self) -> set[tuple[str, str]]:
        with self._lock:
            return set(self._counts)

    def attached(self, callback_id: int) -> bool:
        """Record the id ``attach_callback`` gave; False if the filter was removed
        meanwhile (the caller detaches it)."""
        with self._lock:
            self.callback_id = callback_id
            return not self._cancelled

    def cancel(self) -> int | None:
        """The filter was removed: the id to detach, or None while not attached
        (the attaching thread detaches it then, :meth:`attached`)."""
        with self._lock:
            self._cancelled = True
            return self.callback_id

    def argument_for(self, target_filter: Any) -> Any:
        """What to pass to ``target_filter.attach_callback``: self, or a reference to self."""
        if not isinstance(target_filter, CORBA.Object):
            return self
        if self._reference is None:
            self._reference = self._this()
        return self._reference

    def release(self) -> None:
        """Deactivate the reference made by :meth:`argument_for`, if any."""
        reference, self._reference = self._reference, None
        if reference is None:
            return
        try:
            poa = self._default_POA()
            poa.deactivate_object(poa.reference_to_id(reference))
        except Exception as exc:  # noqa: BLE001 - the ORB may be shutting down
            log.debug("deactivating %r failed: %s", self, exc)


Callback = Callable[[list[Any], list[Any]], None]
