"""The consumer-facing half of the channel: what every proxy supplier does.

Strategy: a proxy supplier owns one :class:`EventQueue` (its consumer's
queue, section 2.3: "the event will be queued by the proxy for eventual
delivery"). The admin's router hands it each event that passed the admin's
filters; the proxy applies its own filters (combined by the admin's
InterFilterGroupOperator), resolves priority and lifetime for *its* copy
(mapping filters, section 2.3.1), and queues it. Push and pull subclasses
decide how the queue is emptied.

Priority for a proxy's copy (sections 2.3.1 and 3.4.2.3), first that applies:
a priority mapping filter (the proxy's if valid, else the admin's: 3.4.15.4)
that *matches*; the event header's Priority; an explicitly set Priority QoS
of the proxy consumer that received the event, then of this proxy supplier
(an explicit 0 too); the mapping filter's default value; 0. Lifetime follows
the same order with Timeout, measured from arrival; a header StopTime is an
absolute limit on top.
"""

from __future__ import annotations

import collections
import logging
import math
from collections.abc import Mapping
from typing import Any

from cosnotify.channel.admin_mixins import groups_pass
from cosnotify.channel.clients import narrowed
from cosnotify.channel.durable import DurableQueue
from cosnotify.channel.event import Event
from cosnotify.channel.mapping import GONE, gone, map_event, mapped
from cosnotify.channel.proxy import ProxyBase
from cosnotify.channel.queue import Entry, EventQueue
from cosnotify.channel.subscriptions import Relay, SubscriptionContributor
from cosnotify.channel.topology import Topology, persistent
from cosnotify.corba.marshal import REASON
from cosnotify.eventtypes import ALL, type_matches
from cosnotify.filter.constraints import typed_type

__all__ = ["ProxySupplier"]

log = logging.getLogger("cosnotify.channel")

_NOTIFY_PUBLISH = "IDL:omg.org/CosNotifyComm/NotifyPublish:1.0"
_INBOX_DRAIN = 1024  # a supplier folds the inbox into the queue itself beyond this


def offer_plain(proxies: list[Any], event: Any, now: float) -> None:
    """``accept`` of ``event`` by each of ``proxies``, for a copy that no
    MaxQueueLength count holds and no store stages (channel._offer checks that
    once an event): the per-copy path of routing, a loop with no call per copy
    but the wake. A plain copy goes to the inbox (``_offer_inbox``, inline)."""
    for proxy in proxies:
        if proxy._plain and proxy._connected and proxy._type_filter is None:
            inbox = proxy._inbox
            inbox.append(event)
            if len(inbox) > _INBOX_DRAIN:
                proxy._drain_inbox(now)
            proxy._inbox_grew()
        else:
            proxy.accept(event, now)


class ProxySupplier(SubscriptionContributor, ProxyBase):
    """``CosNotifyChannelAdmin::ProxySupplier`` plus the queue every kind needs."""

    side = "supplier"
    #: Plain copies go through the inbox (``_offer_inbox``); False: into the queue
    #: under the lock, where ``_enqueued`` sees each (sequence push proxies' batching).
    _plain_to_inbox = True

    def __init__(self, admin: Any, proxy_id: int | None) -> None:
        super().__init__(admin, proxy_id)
        config = self._service.config
        self._queue = EventQueue(*self._queue_policies(config.consumer_queue_cap))
        self._queue.lock = self._lock
        self._queue.account = self._channel._account  # told of deadlines (queue.py)
        #: Copies offered but not yet in the queue: plain copies (queue.py), and for
        #: push proxies every copy while no MaxQueueLength is counted. Suppliers
        #: append without the lock (deque.append is atomic); whoever takes from the
        #: queue (a pull, the push worker) folds them in under the lock first, so a
        #: supplier never waits for a consumer's thread holding the lock mid-batch.
        self._inbox: collections.deque[Entry | Event] = collections.deque()
        #: Counters (cosnotify.stats): events delivered (pushed, or pulled), failed
        #: pushes and the last failure (time, reason). Push proxies bump them from
        #: their one delivery task, pull proxies under the lock: one writer at a time.
        self._counting = self._queue.counting = config.counters
        self._n_delivered = 0
        self._n_failed = 0
        self._last_failure: tuple[float, str] | None = None
        #: Events not given to the consumer because omniORBpy cannot marshal them
        #: (``_without_unmarshallable``); the same one writer as ``_n_delivered``.
        self._n_unsendable = 0
        self._priority_filter: Any = None
        #: A mapping filter's value of the wrong type was logged (once per proxy: mapping.mapped).
        self._mapping_warned = False
        self._lifetime_filter: Any = None
        self._init_subscriptions()
        #: Whether the consumer's subscription_change calls have named a type for this
        #: proxy. Until then it receives every type; afterwards exactly the types it
        #: asked for (none, if it withdrew them all; every type again if it adds %ALL).
        #: Section 2.6.5: subscription_change stands in for a filter -- until the
        #: proxy has one: then its filters alone decide (``_refresh_type_filter``).
        self._explicit_set = False
        #: The explicit subscription as a frozenset, or None when it restricts nothing
        #: (none was made, it holds %ALL, or the proxy has filters).
        self._type_filter: frozenset[tuple[str, str]] | None = None
        #: offer_change to the consumer; exists before the consumer connects so that an
        #: obtain_offered_types(*_UPDATES_OFF) made first is remembered (Table 3-1).
        self._offer_relay = Relay(self._service, None, "offer_change")
        self._store_path: str | None = None
        self._refresh_fast_path()
        self._update_contribution()

    # -- QoS -> queue ------------------------------------------------------------------
    def _queue_policies(self, cap: int) -> tuple[int, int, int]:
        qos = self._qos
        limit = qos.get("MaxEventsPerConsumer", 0) or cap
        return qos["OrderPolicy"], qos["DiscardPolicy"], min(limit, cap)

    def _qos_changed(self, changes: Mapping[str, Any]) -> None:
        if {"OrderPolicy", "DiscardPolicy", "MaxEventsPerConsumer"} & set(changes):
            with self._lock:
                # Copies offered before the change are queued under the policies
                # they came under, as if they had gone straight into the queue.
                dropped = self._fold_inbox(self._service.clock.now())
                dropped += self._queue.set_policies(
                    *self._queue_policies(self._service.config.consumer_queue_cap),
                    now=self._service.clock.now())
            self._channel._released(dropped)
        self._refresh_fast_path()

    def _refresh_fast_path(self) -> None:
        explicit = self._qos_explicit
        admin = self._admin
        self._fast = (self._priority_filter is None and self._lifetime_filter is None
                      and getattr(admin, "_priority_filter", None) is None
                      and getattr(admin, "_lifetime_filter", None) is None
                      and "Priority" not in explicit and "Timeout" not in explicit)
        self._plain = self._fast and self._plain_to_inbox

    # -- mapping filters (section 2.3.1) -----------------------------------------------
    def _get_priority_filter(self) -> Any:
        return self._priority_filter

    def _set_priority_filter(self, value: Any) -> None:
        self._priority_filter = value
        self._refresh_fast_path()
        self._persist()

    def _get_lifetime_filter(self) -> Any:
        return self._lifetime_filter

    def _set_lifetime_filter(self, value: Any) -> None:
        self._lifetime_filter = value
        self._refresh_fast_path()
        self._persist()

    # -- the event path ------------------------------------------------------------------
    def offer(self, event: Any, admin_passed: bool | None, and_op: bool, or_empty_passes: bool,
              now: float) -> Entry | None:
        """Consider ``event`` for this consumer; returns the queued entry, if any.

        ``admin_passed`` is the result of the admin's filters, evaluated once
        for all its proxies (None: the admin has none); ``and_op`` is the
        admin's InterFilterGroupOperator; ``or_empty_passes`` the channel's
        FilterGroupSemantics (docs/filters.md, "Filter groups").
        """
        if not self._connected:
            return None
        if self._type_filter is not None:  # the proxy's group: no filters, a type list
            if self._type_subscribed(event):
                if and_op and admin_passed is False:
                    return None
            elif and_op or not admin_passed:
                return None
        elif not groups_pass(admin_passed, self._filters, and_op, or_empty_passes, event):
            return None
        return self._admit_copy(event, now)

    def accept(self, event: Any, now: float) -> Entry | None:
        """Take ``event``, which the channel's router found the filters pass
        (``cosnotify.routing``); returns the queued entry, if any."""
        if not self._connected:
            return None
        if self._type_filter is not None and not self._type_subscribed(event):
            # Under OR_OP its admin's filters may pass it (the router gives such a
            # proxy every event: Router._place).
            admin = self._admin
            if admin._and_op or not admin._filters or not admin._filters_match(event):
                return None
        return self._admit_copy(event, now)

    def _admit_copy(self, event: Any, now: float) -> Entry | None:
        if self._fast:
            if event.stage is None and not self._channel._account.limit:
                # A plain copy: the queue keeps the event itself (queue.py) and
                # nothing needs its entry (no stage, no channel-wide count).
                self._enqueue(event, now)
                return None
            entry = Entry(event, event.priority, event.deadline)
        else:
            entry = Entry(event, *self._resolve(event))
        stage = event.stage
        if stage is not None and persistent(self) and self._id is not None:
            account = self._channel._account
            if account.limit and not account.hold(entry):  # counted from now, as queued
                return None  # the limit discarded the event meanwhile
            stage.append((self, entry))  # queued once stored (channel/durable.py)
            return entry
        return self._enqueue(entry, now)

    # -- filters, for the channel's router (cosnotify.routing) -------------------------------
    def _route_filter(self, flt: Any, added: bool) -> None:
        router = self._channel._router
        if added:
            if not self._destroyed:  # a torn-down proxy detached everything it held
                router.attach(self, flt)
            router.refresh(self)
        else:
            router.refresh(self)
            router.detach(self, flt)

    # -- persistent events (channel/durable.py) ----------------------------------------------
    def _durable_path(self) -> str:
        path = self._store_path
        if path is None:
            path = self._store_path = str(Topology.path(self))
        return path

    def _admit_stored(self, entries: list[Entry], path: str) -> list[int]:
        """Queue stored copies (this proxy's of one supply call, in id order), or
        leave them on disk once the memory window is full; the store ids of those
        this proxy can no longer take (the caller releases them).

        The copies decided for memory are queued before any later one is left on
        disk: once the proxy is on disk, the delivery worker may read later copies
        back and send them, and an earlier copy not yet queued would go after them.
        """
        window = self._window()
        account = self._channel._account
        held = bool(account.limit)
        refused: list[int] = []
        unheld: list[Entry] = []  # counted against MaxQueueLength, not queued now
        on_disk = False
        at, first = 0, True
        while at < len(entries):
            queue_now: list[Entry] = []
            with self._lock:
                durable = self._queue.durable
                if durable is None:
                    durable = self._queue.durable = DurableQueue(path)
                elif first:
                    durable.admitting -= len(entries)
                first = False
                if not self._connected or self._destroyed:
                    rest = entries[at:]
                    if account.limit:
                        account.release(rest)
                    refused += [entry.stored for entry in rest]
                    break
                while at < len(entries):
                    entry = entries[at]
                    stored = entry.stored
                    if entry.event.refs < 0:
                        refused.append(stored)  # MaxQueueLength discarded it meanwhile
                        at += 1
                        continue
                    if stored in durable.resident:
                        unheld.append(entry)  # a refill read it back already: queued
                    elif durable.spilled or durable.in_window() >= window:
                        if queue_now:
                            break  # queue those first (docstring), then come back
                        durable.spilled = True
                        durable.generation += 1
                        if stored <= durable.cursor:  # a refill has read past it: go back
                            durable.cursor = stored - 1
                        unheld.append(entry)  # on disk only
                        on_disk = True
                    else:
                        durable.resident.add(stored)
                        queue_now.append(entry)
                    if durable.first_live is None or stored < durable.first_live:
                        durable.first_live = stored
                    at += 1
            for entry in queue_now:
                self._enqueue(entry, entry.event.arrival, held=held)
        if unheld and account.limit:
            account.release(unheld)  # on disk only, or already queued: not these copies
        if on_disk:
            self._kick()
        return refused

    def _admitting(self, path: str, count: int) -> None:
        """``count`` copies for this proxy are about to be stored: a refill must not take
        the proxy off the disk until they have been admitted (durable.py)."""
        with self._lock:
            durable = self._queue.durable
            if durable is None:
                durable = self._queue.durable = DurableQueue(path)
            durable.admitting += count

    def _batch_size(self) -> int:
        """MaximumBatchSize, held to what the queue can hold (MaxEventsPerConsumer or
        the cap) and the channel (MaxQueueLength, section 2.5.7): a full queue is a full
        batch, else one would never come (reviews 129, 141)."""
        size = int(self._qos.get("MaximumBatchSize", 1))  # on every pull and push: plain
        room = self._queue.max_events
        if 0 < room < size:
            size = room
        room = self._channel._account.limit
        if 0 < room < size:
            size = room
        return size

    def _window(self) -> int:
        """Stored copies kept in memory at most: the log's window, or a whole batch."""
        window = int(self._channel._event_log.window)
        return max(window, int(self._qos.get("MaximumBatchSize", 1)))

    def _kick(self) -> None:
        """Hook: start delivery if there is anything to deliver (push proxies)."""

    def _refill(self) -> int:
        """Read copies left on disk back into the queue; how many came."""
        event_log = self._channel._event_log
        if event_log is None or self._queue.durable is None:
            return 0
        return int(event_log.refill(self))

    def _on_disk(self) -> bool:
        durable = self._queue.durable
        return durable is not None and durable.spilled

    def _enqueue(self, entry: Entry | Event, now: float, held: bool = False) -> Entry | None:
        """Put ``entry`` in the queue (subclasses may defer the put, see push_supplier).

        Returns None when the entry was not queued (the proxy is not connected,
        or MaxEventsPerConsumer discarded the entry itself), or was a plain copy
        (an Event: queue.py). ``held``: the MaxQueueLength count already holds it
        (a staged copy).
        """
        if not isinstance(entry, Entry) and self._plain_to_inbox:
            self._offer_inbox(entry, now)  # a plain copy: no count to keep (queue.py)
            return None
        account = self._channel._account
        refused = None
        with self._lock:
            if not self._connected:
                if held:
                    account.release([entry])
                return None
            # Counted (hold) before a worker can release it.
            if account.limit and not held and not account.hold(entry):
                # The limit discarded the event meanwhile: the copy is not queued, and
                # a stored one is refused as _admit_stored refuses it.
                refused = self._refuse_stored(entry)
                dropped = None
            else:
                dropped = self._queue.put(entry, now)
                self._enqueued()
        if dropped is None:
            if refused is not None:
                self._channel._event_log.finish_release(*refused)  # not under the lock
            return None
        if dropped:
            self._channel._released(dropped)
        return entry if isinstance(entry, Entry) and entry.alive else None

    def _refuse_stored(self, entry: Entry | Event) -> tuple[str, list[int]] | None:
        """A stored copy not queued (lock held): out of the memory window, and from
        now on no refill reads it back (``EventLog.begin_release``); the (path, ids)
        to finish releasing, or None for a copy not stored."""
        stored = entry.stored if isinstance(entry, Entry) else 0
        durable = self._queue.durable
        if not stored or durable is None:
            return None
        ids = [stored]
        self._channel._event_log.begin_release(durable, ids)
        durable.resident.discard(stored)
        return durable.path, ids

    def _offer_inbox(self, item: Entry | Event, now: float) -> None:
        """Append ``item`` to the inbox without the lock; beyond ``_INBOX_DRAIN`` (the
        consumer's side is not keeping up, or is stuck in a call) fold it in now, so
        memory stays bounded by MaxEventsPerConsumer or the cap."""
        inbox = self._inbox
        inbox.append(item)
        if len(inbox) > _INBOX_DRAIN:
            self._drain_inbox(now)
        self._inbox_grew()

    def _drain_inbox(self, now: float) -> None:
        """Fold the inbox in now (a supplier, past ``_INBOX_DRAIN``)."""
        with self._lock:
            dropped = self._fold_inbox(now)
        if dropped:
            self._channel._released(dropped)

    def _inbox_grew(self) -> None:
        """Hook, called without the lock after an append to the inbox."""

    def _expire_held(self, now: float) -> tuple[list[Entry], float]:
        """Hook for the channel's sweep (admin_props._sweep_expired; lock held): drop
        the counted copies held outside the queue (a push's retry, the unacknowledged,
        typed calls kept) whose deadline passed, counted as expired; returns them, to
        release after the lock, and the soonest deadline still held so."""
        return [], math.inf

    def _holds(self, entries: list[Entry]) -> None:
        """``entries`` are held outside the queue: the channel's sweep must not skip
        their deadlines (account.py ``next_expiry``)."""
        soonest = min((e.deadline for e in entries if e.deadline is not None), default=None)
        if soonest is not None:
            self._channel._account.expires_at(soonest)

    def _fold_inbox(self, now: float) -> list[Entry]:
        """Move inbox entries into the queue (lock held); returns discarded entries.
        Those appended meanwhile (without the lock) wait for the next fold."""
        inbox = self._inbox
        if not inbox:
            return []
        items = [inbox.popleft() for _ in range(len(inbox))]
        if not self._connected:
            return []
        return self._queue.put_many(items, now)

    @property
    def pending(self) -> int:
        """Events waiting for this proxy's consumer (for inspection and tools); the
        inbox is folded in first, as when counters are read."""
        with self._lock:
            dropped = self._fold_inbox(self._service.clock.now())
            waiting = len(self._queue) + len(self._inbox) + len(getattr(self, "_retry", ()))
        if dropped:
            self._channel._released(dropped)
        return waiting

    def _enqueued(self) -> None:
        """Hook, called with the lock held after an entry was queued."""

    def _type_subscribed(self, event: Any) -> bool:
        if event.typed is not None:  # a typed call's type is (interface, operation), 2.7
            domain, type_name = typed_type(event.typed)
        else:
            domain, type_name = event.domain_name, event.type_name
        return any(type_matches(p, domain, type_name) for p in self._type_filter or ())

    def _resolve(self, event: Any) -> tuple[int, float | None]:
        """This proxy's (priority, deadline) for ``event`` (section 2.3.1)."""
        qos, explicit = self._qos, self._qos_explicit
        priority, source = event.priority, event.priority_source
        if source == 0 and "Priority" in explicit:
            priority, source = qos["Priority"], 1
        mapping, matched, value = self._mapping("_priority_filter", event)
        if value is not None and (matched or source == 0) \
                and mapped(self, mapping, value, "priority"):
            priority = value
        lifetime, source = event.lifetime, event.lifetime_source
        if source == 0 and "Timeout" in explicit:  # an explicit 0 too: no timeout (2-4)
            lifetime, source = qos["Timeout"] / 1e7 or None, 1
        mapping, matched, value = self._mapping("_lifetime_filter", event)
        if value is not None and (matched or source == 0) \
                and mapped(self, mapping, value, "lifetime"):
            lifetime = value / 1e7 if value else None
        deadline = event.stop_time
        if lifetime:
            expiry = event.arrival + lifetime
            deadline = expiry if deadline is None else min(deadline, expiry)
        return priority, deadline

    def _mapping(self, attribute: str, event: Any) -> tuple[Any, bool, Any]:
        """(filter, matched, value) of this proxy's ``attribute`` mapping filter if it is
        valid, else of its admin's (section 3.4.15.4: "If this attribute is set to the
        reference of a valid mapping filter object, this mapping filter will override
        that set at the admin level. Otherwise, the mapping filter object referred to
        by the priority_filter attribute of the ConsumerAdmin is used"); a destroyed
        or gone filter (found so by this very call, too) is not valid."""
        for mapping in (getattr(self, attribute), getattr(self._admin, attribute, None)):
            if mapping is None or gone(mapping):
                continue
            matched, value = map_event(mapping, event, self._channel._oes_limits)
            if value is not GONE and not gone(mapping):
                return mapping, matched, value
        return None, False, None

    # -- subscription sharing: NotifySubscribe on the proxy (section 2.6.5) ---------------
    def subscription_change(self, added: list[Any], removed: list[Any]) -> None:
        """The consumer states the types it wants without a filter (section 2.6.5).

        Its subscription list starts as every type (a proxy without filters "will
        pass through all events it receives", section 2.3); removing a type that
        list does not name removes nothing (section 3.3.2.1: "those event types
        that the associated consumer wants to remove from its subscription list"),
        so only adding a type, or removing %ALL, makes the list explicit.
        """
        add, remove = self._checked_types(added), self._checked_types(removed)
        with self._lock:
            if add or ALL in remove:
                self._explicit_set = True
            if self._explicit_set:
                self._explicit.update(add, remove)
            self._refresh_type_filter()
        self._channel._router.refresh(self)
        self._update_contribution()
        self._persist()

    def _restore_subscription(self, types: list[tuple[str, str]]) -> None:
        """The consumer's subscription_change state, read back from the store."""
        with self._lock:
            self._explicit_set = True
            self._explicit.update(types, [])
            self._refresh_type_filter()
        self._channel._router.refresh(self)
        self._update_contribution()

    def _refresh_type_filter(self) -> None:
        """(``_lock`` held.) Section 2.6.5: "once it adds a filter to the proxy, it must
        then interact with the filter only": with filters, the explicit list is kept
        (it applies again once they are all removed) but restricts nothing. Without,
        the list is the proxy's filter group ("instead of a filter object"): under
        OR_OP an event its admin's filters pass is received whatever its type
        (``offer``, ``accept``), as one a filter of the proxy's would be."""
        types = self._explicit.types
        restricted = self._explicit_set and not self._filters and ALL not in types
        self._type_filter = frozenset(types) if restricted else None

    def _filters_changed(self) -> None:
        with self._lock:
            self._refresh_type_filter()
        self._channel._router.refresh(self)

    def _wanted_types(self) -> set[tuple[str, str]]:
        """A proxy contributes while its consumer is connected (section 2.6.3): its
        filters' types when it has filters (section 2.6.5; none, if they require
        none), else its explicit types; with neither, every type -- unless its
        admin's filters bound what it receives (section 2.3), when the admin's own
        contribution stands for it."""
        if not self._connected:
            return set()
        if self._filters:
            wanted = self._filter_wanted()
        elif self._explicit_set:
            wanted = set(self._explicit.types)
        elif self._admin_bounds():
            wanted = set()
        else:
            wanted = {ALL}
        return self._collapsed(wanted)

    def _admin_bounds(self) -> bool:
        """Whether the admin's filters pass every event this proxy (without filters of
        its own) receives: the admin has filters and ``groups_pass`` asks them --
        always under AND_OP, and under OR_OP unless an empty group passes everything
        (FilterGroupSemantics, docs/filters.md "Filter groups")."""
        admin = self._admin
        if not getattr(admin, "_filters", ()):
            return False
        return bool(admin._and_op) or not self._channel._or_empty_passes

    def obtain_offered_types(self, mode: Any) -> list[Any]:
        """The channel's aggregate offers, and offer_change updates on or off (3.4.2.5)."""
        return list(self._channel._hub.obtain("offers", self._offer_relay, mode))

    def _start_offer_relay(self) -> None:
        client = narrowed(self._client, _NOTIFY_PUBLISH, "offer_change")
        if client is not None:
            self._channel._hub.watch_offers(id(self), self._offer_relay, client)

    # -- teardown ---------------------------------------------------------------------------
    def _on_teardown(self) -> None:
        self._channel._hub.unwatch(id(self))
        with self._filter_lock:
            for _, old in self._filters:
                self._route_filter(old, False)
        for filter_id, old in list(self._filters):
            self._filter_removed(filter_id, old)
        self._update_contribution()
        with self._lock:
            self._inbox.clear()
            dropped = self._queue.clear()
            durable = self._queue.durable
        self._channel._released(dropped)
        event_log = self._channel._event_log
        topology = self._service.topology
        if durable is not None and event_log is not None and not topology.closing:
            event_log.dropped(durable.path)  # destroyed: what it still held goes


def without_unmarshallable(proxy: Any, batch: list[Entry]) -> list[Entry]:
    """``batch`` without the events omniORBpy 4.3.3 cannot marshal for a consumer
    reached through the ORB (cosnotify/corba/marshal.py: it would send each unsigned
    long long >= 2**63 of a sequence as 2**64 - 1, often without an error). Those
    leave ``proxy``'s queue, counted (``unsendable``) and logged: the consumer is
    not blamed, and the events after them go on. Asked once per event."""
    bad = [entry for entry in batch if entry.event.holds_unmarshallable()]
    if not bad:
        return batch
    proxy._n_unsendable += len(bad)
    log.warning("%r: %d event(s) not given to the consumer: they hold %s",
                proxy, len(bad), REASON)
    proxy._channel._released(bad)
    return [entry for entry in batch if not entry.event.unsendable]
