"""The notification channel (section 3.4.17).

Strategy: the channel owns its admins, the subscription hub and the
admin properties, and is the hub of the event path: ``_forward`` admits an
event (MaxQueueLength, section 2.5.7) and hands it to each consumer admin,
whose ``route`` evaluates the admin's filters once and offers the event to
its proxy suppliers. The list of consumer admins is an immutable tuple, so
the path takes no channel lock.

MaxQueueLength counts *events* waiting anywhere in the channel: an event
queued for three consumers is one event until the last copy leaves. When
it is set, each event records its queue entries; when the channel is full,
RejectNewEvents TRUE refuses new events (IMP_LIMIT to push suppliers, and
pull-style proxy consumers pause), and FALSE discards a queued event chosen
by the channel's DiscardPolicy, from every queue that holds it. The count
itself is channel/account.py.
"""

from __future__ import annotations

import itertools
import logging
import threading
from typing import Any, ClassVar

from omniORB import CORBA

import CosNotifyChannelAdmin as CA

from cosnotify.channel.account import QueueAccount
from cosnotify.channel.admin import (
    ConsumerAdmin,
    EventServiceConsumerAdmin,
    EventServiceSupplierAdmin,
    SupplierAdmin,
)
from cosnotify.channel.admin_mixins import QoSAdminMixin, initial_qos
from cosnotify.channel.admin_props import AdminPropertiesMixin
from cosnotify.channel.names import NameTable
from cosnotify.channel.subscriptions import SubscriptionHub
from cosnotify.channel.supplier_proxy import offer_plain
from cosnotify.corba.marshal import REASON
from cosnotify.filter.oes.limits import CURRENT_LIMITS, NodeLimits
from cosnotify.qos.negotiation import Target
from cosnotify.qos.properties import (
    ADMIN_PROPERTIES,
    Level,
)
from cosnotify.routing.router import Router
from cosnotify.store.interface import StoreError

__all__ = ["EventChannel"]

log = logging.getLogger("cosnotify.channel")


class EventChannel(AdminPropertiesMixin, QoSAdminMixin):
    """``CosNotifyChannelAdmin::EventChannel``."""

    #: The admins it makes (a typed channel makes typed ones: cosnotify/typed), and
    #: its Event Service style ones (``for_consumers``/``for_suppliers``).
    consumer_admin_class: Any = ConsumerAdmin
    supplier_admin_class: Any = SupplierAdmin
    es_consumer_admin_class: Any = EventServiceConsumerAdmin
    es_supplier_admin_class: Any = EventServiceSupplierAdmin
    #: A typed channel (cosnotify/typed): the store records it so, and its proxies'
    #: classes by name (channel/restore.py).
    typed = False
    proxy_classes: ClassVar[dict[str, Any]] = {}

    def __init__(self, factory: Any, channel_id: int, qos: dict[str, Any],
                 explicit: set[str], admin: dict[str, Any]) -> None:
        self._factory = factory
        self._service = factory._service
        self._id = channel_id
        #: TAO's names (channel/names.py): this channel's, and those of its admins and proxies.
        self._name: str | None = None
        self._names = NameTable()
        self._qos, self._qos_explicit = initial_qos(Level.CHANNEL, None)
        self._qos.update(qos)
        self._qos_explicit.update(explicit)
        self._qos_level = Level.CHANNEL
        self._qos_lock = threading.RLock()
        self._admin_props = {name: d.default for name, d in ADMIN_PROPERTIES.items()}
        self._admin_props.update(admin)
        self._lock = threading.RLock()
        self._hub = SubscriptionHub()
        self._account = QueueAccount()
        #: Receivers of each event (cosnotify.routing), unless config.routing is "scan";
        #: with "auto", only once more than config.scan_below proxy suppliers connect.
        config = self._service.config
        self._scan_below = {"scan": -1, "index": 0}.get(config.routing, config.scan_below)
        self._router = Router(enabled=config.routing != "scan")
        #: FilterGroupSemantics is TAO's: under OR_OP an empty filter group passes all.
        self._or_empty_passes = False
        #: The OES_SUBTREE node limits (OESNodeLimits), current while this channel
        #: filters an event (docs/grammars/oes.md); None while the table is empty.
        self._node_limits = NodeLimits()
        self._oes_limits: NodeLimits | None = None
        #: The OES tree bound to this channel (cosnotify/oes: ``Tree.of``), or None;
        #: its nodes' limits join the table above.
        self._oes_tree: Any = None
        self._routes: tuple[ConsumerAdmin, ...] = ()
        self._routes_stale = False
        self._consumer_admins: dict[int, ConsumerAdmin] = {}
        self._supplier_admins: dict[int, SupplierAdmin] = {}
        self._es_admins: list[Any] = []
        self._admin_ids = itertools.count(1)
        self._destroyed = False
        self._destroying = False
        #: Clients connected now, the count MaxConsumers/MaxSuppliers limit (section
        #: 2.5.7); changed under ``_count_lock``, a leaf lock taken under a proxy's.
        self._connected_counts = {"MaxConsumers": 0, "MaxSuppliers": 0}
        self._count_lock = threading.Lock()
        self.delivered = 0
        #: Held while a proxy leaves its admin and joins the channel's departures, and
        #: while a snapshot reads both (ops/stats.py): a proxy is in exactly one sum.
        self._departing = threading.Lock()
        self._filter_factory: Any = None
        #: The history writer (channel/retention.py), while RetainAge, RetainCount or
        #: RetainBytes is set; else None.
        self._retention: Any = None
        #: The Event Heap tuple space (cosnotify/tuplespace: ``TupleSpace.of``), or None;
        #: it is handed every event the channel accepts, beside retention.
        self._tuplespace: Any = None
        #: True once the service stops (:meth:`_shutdown`).
        self.shutting_down = False
        self._apply_admin_props()
        #: Persistent events (channel/durable.py): with a store and ConnectionReliability
        #: Persistent, else None.
        self._event_log: Any = None
        self._update_event_log()

    # -- attributes ---------------------------------------------------------------------------
    def _get_MyFactory(self) -> Any:
        return self._factory

    def _get_default_consumer_admin(self) -> ConsumerAdmin:
        return self._default_admin(self._consumer_admins, self.consumer_admin_class)  # type: ignore[no-any-return]

    def _get_default_supplier_admin(self) -> SupplierAdmin:
        return self._default_admin(self._supplier_admins, self.supplier_admin_class)  # type: ignore[no-any-return]

    def _default_admin(self, table: dict[int, Any], cls: Any) -> Any:
        """The default admin (id 0), made on first access (section 2.5.5.1: until a client
        touches them the defaults are "virtually non-existent", so QoS set on the channel
        before then still reaches them)."""
        admin = table.get(0)
        if admin is None:
            with self._lock:
                self._check_alive()
                admin = table.get(0)
                if admin is None:
                    admin = cls(self, 0, CA.AND_OP)
                    table[0] = admin
                    self._rebuild_routes()
                    made = True
                else:
                    made = False
            if made:
                admin._persist()
        return admin

    def _get_default_filter_factory(self) -> Any:
        return self._factory._get_filter_factory()

    @property
    def channel_id(self) -> int:
        return self._id

    @property
    def name(self) -> str | None:
        """The name given by ``create_named_channel``, else None."""
        return self._name

    # -- admins --------------------------------------------------------------------------------
    def new_for_consumers(self, op: Any) -> tuple[ConsumerAdmin, int]:
        return self._new_admin(self.consumer_admin_class, self._consumer_admins, op)

    def new_for_suppliers(self, op: Any) -> tuple[SupplierAdmin, int]:
        return self._new_admin(self.supplier_admin_class, self._supplier_admins, op)

    def named_new_for_consumers(self, op: Any, name: str) -> tuple[ConsumerAdmin, int]:
        return self._new_admin(self.consumer_admin_class, self._consumer_admins, op,
                               name)  # names.py

    def named_new_for_suppliers(self, op: Any, name: str) -> tuple[SupplierAdmin, int]:
        return self._new_admin(self.supplier_admin_class, self._supplier_admins, op, name)

    def _new_admin(self, cls: Any, table: dict[int, Any], op: Any,
                   name: str | None = None) -> tuple[Any, int]:
        if op not in (CA.AND_OP, CA.OR_OP):
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO, f"bad InterFilterGroupOperator {op!r}")
        topology = self._service.topology
        scope = "ca" if issubclass(cls, ConsumerAdmin) else "sa"
        with self._lock:
            self._check_alive()
            with self._names.claimed(scope, name):
                admin_id = (topology.next_id(f"ch/{self._id}/admins") + 1 if topology
                            else next(self._admin_ids))
                admin = cls(self, admin_id, op)
            admin._name = name
            table[admin_id] = admin
            self._rebuild_routes()
        admin._persist()
        return admin, admin_id

    def get_consumeradmin(self, id: int) -> ConsumerAdmin:
        self._check_alive()
        if id == 0:
            return self._get_default_consumer_admin()
        admin = self._consumer_admins.get(id)
        if admin is None:
            raise CA.AdminNotFound()
        return admin

    def get_supplieradmin(self, id: int) -> SupplierAdmin:
        self._check_alive()
        if id == 0:
            return self._get_default_supplier_admin()
        admin = self._supplier_admins.get(id)
        if admin is None:
            raise CA.AdminNotFound()
        return admin

    def get_all_consumeradmins(self) -> list[int]:
        with self._lock:
            self._check_alive()
            return sorted(set(self._consumer_admins) | {0})

    def get_all_supplieradmins(self) -> list[int]:
        with self._lock:
            self._check_alive()
            return sorted(set(self._supplier_admins) | {0})

    def for_consumers(self) -> Any:
        """An Event Service style ConsumerAdmin (no id; section 2.1.2)."""
        with self._lock:
            self._check_alive()
            admin = self.es_consumer_admin_class(self, None, CA.OR_OP)
            self._es_admins.append(admin)
            self._rebuild_routes()
        return admin

    def for_suppliers(self) -> Any:
        with self._lock:
            self._check_alive()
            admin = self.es_supplier_admin_class(self, None, CA.OR_OP)
            self._es_admins.append(admin)
        return admin

    def _admin_destroyed(self, admin: Any) -> None:
        with self._lock:
            if admin._id is None:
                if admin in self._es_admins:
                    self._es_admins.remove(admin)
            elif isinstance(admin, ConsumerAdmin):
                self._consumer_admins.pop(admin._id, None)
                self._names.release("ca", admin._name)
            else:
                self._supplier_admins.pop(admin._id, None)
                self._names.release("sa", admin._name)
            self._rebuild_routes()

    def _rebuild_routes(self) -> None:
        """The admins changed: the scanning router lists them again before its next event."""
        self._routes_stale = True

    def _scan_routes(self) -> tuple[ConsumerAdmin, ...]:
        if self._routes_stale:
            with self._lock:
                self._routes_stale = False
                admins = list(self._consumer_admins.values())
                admins += [a for a in self._es_admins if isinstance(a, ConsumerAdmin)]
                self._routes = tuple(admins)
        return self._routes

    # -- QoS and admin properties --------------------------------------------------------------
    def _qos_target(self) -> Target:
        with self._lock:
            children = bool(self._consumer_admins or self._supplier_admins or self._es_admins)
        return Target(Level.CHANNEL, parent=None, has_children=children)

    def _qos_capabilities(self) -> Any:
        return self._service.capabilities

    def _qos_changed(self, changes: Any) -> None:
        if "DiscardPolicy" in changes:
            self._apply_admin_props()
            self._account.rerank()
        if "ConnectionReliability" in changes:
            self._update_event_log()

    def _update_event_log(self) -> None:
        from cosnotify.channel.durable import EventLog
        from cosnotify.channel.topology import persistent

        topology = self._service.topology
        if topology is None or not persistent(self):
            self._event_log = None
        elif self._event_log is None:
            self._event_log = EventLog(self, topology.store)

    def query(self, query: Any = None, **fields: Any) -> list[Any]:
        """The retained events a history query selects (docs/history.md): a
        ``cosnotify.history.query.Query``, or its fields by name."""
        from cosnotify.history.reader import query_channel

        return query_channel(self, query, fields)

    # -- the event path -----------------------------------------------------------------------------
    def _forward(self, event: Any) -> None:
        """Admit ``event`` and route it to every consumer admin."""
        event_log = self._event_log
        if event_log is not None and event_log.wants(event):
            self._storable(event)
            staged = self._staged(event)
            if staged:
                event_log.admit([(event, staged)])
        else:
            self._route(event)
        retention = self._retention
        if retention is not None:
            retention.keep([event])
        space = self._tuplespace
        if space is not None:
            space.accepted([event])

    def _forward_all(self, events: list[Any], counted: Any = None,
                     taken: list[int] | None = None) -> None:
        """Admit a supplier's batch: its persistent events are stored in one commit.
        ``counted`` (an itertools.count, or None) is advanced once per event taken;
        ``taken[0]``, if given, says how many were (also when one is refused)."""
        if taken is None:
            taken = [0]
        try:
            self._admit_all(events, taken)
        finally:
            if counted is not None:
                for _ in range(taken[0]):
                    next(counted)
            retention = self._retention
            if retention is not None and taken[0]:
                retention.keep(events[:taken[0]])
            space = self._tuplespace
            if space is not None and taken[0]:
                space.accepted(events[:taken[0]])

    def _admit_all(self, events: list[Any], taken: list[int]) -> None:
        """The body of :meth:`_forward_all`; ``taken[0]``: how many events were taken
        (those before a refused one are, and stay counted when it raises)."""
        event_log = self._event_log
        if event_log is None:
            for event in events:
                self._route(event)
                taken[0] += 1
            return
        items: list[Any] = []
        waiting = 0  # persistent events since the last admit: taken once it commits
        try:
            for event in events:
                if event_log.wants(event):
                    self._storable(event)
                    staged = self._staged(event)
                    if staged:
                        items.append((event, staged))
                    waiting += 1
                else:
                    done, waiting = waiting, 0
                    if items:  # keep the batch's order: what came before goes first
                        admitted, items = items, []
                        event_log.admit(admitted)
                    taken[0] += done
                    self._route(event)
                    taken[0] += 1
        except BaseException:
            # One event refused (IMP_LIMIT...): those before it are accepted, as
            # they are on a best-effort channel; then the supplier is told.
            if items:
                event_log.admit(items)
            taken[0] += waiting
            raise
        if items:
            event_log.admit(items)
        taken[0] += waiting

    @staticmethod
    def _storable(event: Any) -> None:
        """Refuse, before it is routed, an event the store could not keep intact:
        omniORBpy 4.3.3 would encode an unsigned long long >= 2**63 in a sequence
        or array as 2**64 - 1, often without an error (cosnotify/corba/marshal.py).
        Asked of persistent events only: a retained event is checked as it is encoded
        (codec.encode_event), and one that would not encode intact is left out of the
        history, counted and logged (docs/orb.md), with no cost at the door."""
        if event.holds_unmarshallable():
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO, f"event refused: it holds {REASON}")

    def _staged(self, event: Any) -> list[Any]:
        """Route ``event`` with durable proxies staging their copies (durable.py)."""
        staged: list[Any] = []
        event.stage = staged
        try:
            self._route(event)
        finally:
            event.stage = None
        return staged

    def _route(self, event: Any) -> None:
        account = self._account
        now = event.arrival
        if not account.limit:
            self._deliver(event, now, None)
            return
        if account.full():
            self._sweep_expired()  # expired copies make room first (account.py)
        victims, epoch = account.reserve(event)
        for victim in victims:
            self._discard(victim)
        holders: list[Any] = []
        event.holders = holders
        try:
            self._deliver(event, now, holders)
        finally:
            account.admitted(event, epoch)

    def _deliver(self, event: Any, now: float, holders: list[Any] | None) -> None:
        """Offer ``event`` to the proxy suppliers whose filters pass it (section 2.3),
        with this channel's OES node limits current for the filters."""
        limits = self._oes_limits
        if limits is not CURRENT_LIMITS.get():
            token = CURRENT_LIMITS.set(limits)
            try:
                self._offer(event, now, holders)
            finally:
                CURRENT_LIMITS.reset(token)
            return
        self._offer(event, now, holders)

    def _offer(self, event: Any, now: float, holders: list[Any] | None) -> None:
        scan_below = self._scan_below
        if scan_below and (scan_below < 0 or len(self._router._shape) <= scan_below):
            for admin in self._scan_routes() if self._routes_stale else self._routes:
                admin.route(event, now, holders)
            return
        receivers = self._router.receivers(event)
        if holders is None and event.stage is None:  # no count holds a copy, none is staged
            offer_plain(receivers, event, now)
            return
        for proxy in receivers:
            entry = proxy.accept(event, now)
            if entry is not None and holders is not None:
                holders.append(entry)

    def _discard(self, event: Any) -> None:
        """Remove a discarded event from every queue holding it."""
        removed = []
        for entry in event.holders or ():
            queue = entry.owner
            if queue is not None and queue.lock is not None:
                with queue.lock:
                    if queue.remove(entry):
                        removed.append(entry)
        event.holders = None
        if removed and self._event_log is not None:
            self._event_log.released(removed)  # the count already let the event go

    def _released(self, entries: list[Any], delivered: bool = False) -> None:
        """Entries left their queues (delivered, expired, discarded, dropped).
        ``delivered`` by a push: the store may write that with the next event."""
        if entries:
            if self._account.limit:
                self._account.release(entries)
            if self._event_log is not None:
                self._event_log.released(entries, defer=delivered)

    def _delivered(self, count: int) -> None:
        self.delivered += count

    # -- lifecycle ------------------------------------------------------------------------------------
    def _check_alive(self) -> None:
        if self._destroyed:
            raise CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO, f"{self!r} was destroyed")

    def destroy(self) -> None:
        """Destroy every admin and proxy, telling connected clients (section 3.4.17)."""
        with self._lock:
            if self._destroyed:
                return
            self._destroyed = True
            self._destroying = True
            admins = (list(self._consumer_admins.values()) + list(self._supplier_admins.values())
                      + list(self._es_admins))
        tree = self._oes_tree
        if tree is not None:
            tree._channel_destroyed()  # its contracts end; its records go with the channel's
        for admin in admins:
            admin.destroy()
        self._factory._channel_destroyed(self)
        topology = self._service.topology
        if topology is not None:
            topology.forget(self)
            retention, self._retention = self._retention, None
            if retention is not None:
                retention.stop()  # a write in flight ends first: nothing comes after
            if not topology.closing:
                try:
                    topology.store.drop_history(f"ch/{self._id}")  # its history goes too
                except StoreError as exc:
                    log.error("%r: its history could not be dropped: %s", self, exc)
        space = self._tuplespace
        if space is not None:
            space.close()  # its waiters wake with OBJECT_NOT_EXIST
        self._service.object_destroyed(self)

    def _shutdown(self) -> None:
        """The service stops with a store: destroy only what is not persistent, so the
        rest (and its clients' connections) comes back at the next start."""
        from cosnotify.channel.topology import persistent

        # What the stop destroys now is not its clients' doing: an OES contract told its
        # best-effort proxy went does not end (oes/contracts.py).
        self.shutting_down = True
        with self._lock:
            admins = (list(self._consumer_admins.values()) + list(self._supplier_admins.values())
                      + list(self._es_admins))
        for admin in admins:
            if admin._id is None or not persistent(admin):
                admin.destroy()
                continue
            for proxy in admin._all_proxies():
                if proxy._id is None or not persistent(proxy):
                    proxy._destroy()
                else:
                    proxy._service_stops()  # a pull waiting on it ends (pull_supplier.py)
        space = self._tuplespace
        if space is not None:
            space.close()  # tuples live in memory only: its waits end as the service stops

    def __repr__(self) -> str:
        return f"<EventChannel id={self._id}>"
