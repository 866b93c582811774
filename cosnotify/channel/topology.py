"""Topology persistence (ConnectionReliability=Persistent): save on change, restore at start.

Strategy: every persistent object -- a channel, admin or proxy whose
ConnectionReliability is Persistent, and every filter the factory's
FilterFactory made -- has a path (``ch/C``, ``ch/C/ca/A``, ``ch/C/sa/A/P``,
``flt/N``: the ids the server's object keys are made of) and one record in
the store, rewritten whole by :meth:`Topology.save` each time the object
changes (QoS, admin properties, filters, subscriptions and offers,
connection, suspension, mapping filters) and deleted with it. A record is
JSON (``codec.dumps``) with CORBA values as CDR. Writes are serialised by
one lock around snapshot-and-put, so the last write of a path is always the
latest state.

:meth:`Topology.restore` rebuilds the objects in passes -- filters,
channels, admins, proxies, then connections -- with their ids, QoS and
filters, then reconnects each proxy to its client from the stored IOR
(spec section 2.5.5.1: "upon restart from a failure ... the channel will
automatically re-establish connections to each of its clients"); a client
that is gone meets the usual failure policy when it is first called.
Event Service style objects (no ids) and objects whose ConnectionReliability
is BestEffort are not stored: "The notification channel will maintain all
information about its connected clients persistently" is what Persistent
means, and nothing more is promised for BestEffort (section 2.5.5.1).

Ids are taken from the store's counters (``Store.next_value``), for every
object of a factory with a store, so an id is never reused after a restart
and an old reference never names a newer object.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import Any

from omniORB import CORBA

import CosNotifyChannelAdmin as CA

from cosnotify.channel import codec
from cosnotify.channel.clients import stub_class
from cosnotify.qos.negotiation import from_any, legal, to_property_seq
from cosnotify.qos.properties import ADMIN_PROPERTIES, PERSISTENT, QOS_PROPERTIES
from cosnotify.store.interface import Reason, Record, Store, StoreError

__all__ = ["COMMUNICATION_FAILURES", "Topology", "persistent", "retries_for_ever",
           "store_failures"]

log = logging.getLogger("cosnotify.channel")

_CONNECTION = "ConnectionReliability"


def persistent(obj: Any) -> bool:
    """Is ``obj`` (channel, admin or proxy) ConnectionReliability=Persistent?"""
    return bool(obj._qos.get(_CONNECTION) == PERSISTENT)


#: What a client that fails raises -- it is down, cannot be reached, or cannot take more
#: for now (IMP_LIMIT: a channel linked to, full with RejectNewEvents; review 104) -- as
#: against a client that refuses an event (UNKNOWN, BAD_PARAM...; OBJ_ADAPTER, which
#: omniORB raises for a misconfigured POA too: review 105): only these are retried for ever.
COMMUNICATION_FAILURES = (CORBA.TRANSIENT, CORBA.COMM_FAILURE, CORBA.TIMEOUT,
                          CORBA.NO_RESPONSE, CORBA.IMP_LIMIT)


def retries_for_ever(proxy: Any, exc: BaseException | None) -> bool:
    """Does ``proxy`` retry its client for ever, whatever Retries says, after ``exc`` (a
    failed push, or the channel's failed poll of a pull supplier)? Section 2.5.5.1: "Any
    clients that connect to the channel using persistent object references may fail,
    but unless these object references raise an OBJECT_NOT_EXIST exception, the channel
    will continue to retry using them": a proxy holding persistent events; and a
    numbered ConnectionReliability=Persistent proxy whose client is a reference, or one
    of this service's own objects (one destroyed raises OBJECT_NOT_EXIST), when the
    client *failed* (COMMUNICATION_FAILURES) -- not an in-process object, which has no
    persistent reference, nor an Event Service style proxy, which has no record (review
    102), nor a client that refuses the event at the head of the queue, which would
    block the rest for ever (review 103). Its queue stays bounded by consumer_queue_cap."""
    queue = getattr(proxy, "_queue", None)
    if queue is not None and queue.durable is not None:
        return True
    if not isinstance(exc, COMMUNICATION_FAILURES):
        return False
    if not persistent(proxy) or Topology.path(proxy) is None:
        return False
    client = proxy._client if proxy._connected else None
    if isinstance(client, CORBA.Object):
        return True
    path = Topology.path(client) if client is not None else None
    return path is not None and path.startswith("ch/")


class Topology:
    """The topology of one factory in one store."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._restoring = False
        #: Set when the factory closes: what is torn down then stays in the store.
        self.closing = False
        #: Makes the guarded filter for a filter implemented by a client (set by the
        #: server layer; without it the bare reference is used).
        self.remote_filter: Any = None

    # -- ids ------------------------------------------------------------------------------
    def next_id(self, counter: str) -> int:
        with store_failures():
            return self.store.next_value(counter)

    # -- paths ------------------------------------------------------------------------------
    @staticmethod
    def path(obj: Any) -> str | None:
        from cosnotify.channel.admin import ConsumerAdmin, SupplierAdmin
        from cosnotify.channel.channel import EventChannel
        from cosnotify.channel.proxy import ProxyBase

        if isinstance(obj, EventChannel):
            return f"ch/{obj._id}"
        if isinstance(obj, (ConsumerAdmin, SupplierAdmin)):
            if obj._id is None:
                return None
            kind = "ca" if isinstance(obj, ConsumerAdmin) else "sa"
            return f"ch/{obj._channel._id}/{kind}/{obj._id}"
        if isinstance(obj, ProxyBase):
            admin_path = Topology.path(obj._admin)
            return None if obj._id is None or admin_path is None else f"{admin_path}/{obj._id}"
        return getattr(obj, "store_path", None)

    # -- saving -----------------------------------------------------------------------------
    def save(self, obj: Any) -> None:
        """Write ``obj``'s record if it is persistent (no-op while restoring)."""
        if self._restoring:
            return
        path = self.path(obj)
        if path is None or path.startswith("flt/"):
            return
        if not persistent(obj):
            if getattr(obj, "_stored", False):  # switched to BestEffort: no longer kept
                with self._lock, store_failures():
                    self.store.delete(path)
                    self.store.drop_consumer(path)  # nor its stored events
                    obj._stored = False
            return
        with self._lock, store_failures():
            if getattr(obj, "_destroyed", False):
                return
            kind, record = _record(obj)
            self.store.put(Record(path, kind, codec.dumps(record)))
            obj._stored = True

    def save_filter(self, flt: Any) -> None:
        """The listener of every filter the factory's FilterFactory makes."""
        from cosnotify.filter.persist import snapshot

        if self._restoring:
            return
        path = flt.store_path
        with self._lock, store_failures():
            if flt._is_destroyed:
                self.store.delete(path)
                return
            record = snapshot(flt)
            for item in record["constraints"]:
                if item["value"] is not None:
                    item["value"] = codec.encode_any(item["value"])
            if "default" in record:
                record["default"] = codec.encode_any(record["default"])
            self.store.put(Record(path, record["kind"], codec.dumps(record)))

    def forget(self, obj: Any) -> None:
        """``obj`` was destroyed: its record and everything below it go."""
        path = self.path(obj)
        if path is None or self._restoring or self.closing:
            return
        with self._lock, store_failures():
            self.store.delete(path)

    # -- restoring ----------------------------------------------------------------------------
    def restore(self, factory: Any) -> None:
        """Rebuild ``factory``'s persistent objects from the store (at start)."""
        from cosnotify.channel import restore

        self._restoring = True
        try:
            rebuilt = restore.run(self, factory, self.store.records())
        finally:
            self._restoring = False
        self._drop_orphaned_histories(factory)
        # Deliveries start only now: what they change (a consumer gone, a filter made)
        # is saved like any change.
        rebuilt.connect_all()

    def _drop_orphaned_histories(self, factory: Any) -> None:
        """The history of a channel the store no longer knows (a best-effort channel
        when the process died) goes, as its destroy would have taken it
        (docs/history.md). A channel whose record is kept stays, restored or not (a
        record a restart could not read keeps its history for a later one). A store
        error here is logged: the start goes on."""
        try:
            known = {r.path for r in self.store.records() if r.kind == "channel"}
            with factory._lock:  # every kind of channel, typed ones included
                known.update(f"ch/{channel_id}" for channel_id in factory._channels)
            for channel in self.store.history_channels():
                if channel not in known:
                    log.info("dropping the history of %s: the store keeps no such channel",
                             channel)
                    self.store.drop_history(channel)
        except StoreError:
            log.exception("could not drop the histories of channels that are gone")


@contextlib.contextmanager
def store_failures() -> Iterator[None]:
    """A store failure as the CORBA exception a client gets (docs/persistence.md)."""
    try:
        yield
    except StoreError as exc:
        log.error("the store failed: %s", exc)
        if exc.reason is Reason.CLOSED:
            raise CORBA.BAD_INV_ORDER(0, CORBA.COMPLETED_MAYBE, f"store closed: {exc}") from exc
        raise CORBA.NO_RESOURCES(0, CORBA.COMPLETED_MAYBE, f"the store failed: {exc}") from exc


# -- records --------------------------------------------------------------------------------


def _qos_record(obj: Any) -> bytes:
    values = {name: obj._qos[name] for name in obj._qos_explicit if name in obj._qos}
    return codec.encode_properties(to_property_seq(values, QOS_PROPERTIES))


def qos_values(data: bytes, where: str = "") -> dict[str, Any]:
    """The QoS or admin values of a stored PropertySeq, as ``set_qos`` would take them:
    a name the tables do not know, a value of another type and one outside the
    property's range or choices are skipped and logged (``where``: whose record), so
    a record edited or written by other code restores what it can, and nothing that
    set_qos refuses (review 69: a stored OrderPolicy 99 made every obtain_* of its
    channel raise KeyError, a MaximumBatchSize 0 stalled its proxies)."""
    values = {}
    for prop in codec.decode_properties(data):
        definition = QOS_PROPERTIES.get(prop.name) or ADMIN_PROPERTIES.get(prop.name)
        if definition is None:
            log.warning("%s: stored property %r is not known here: skipped", where,
                        prop.name)
            continue
        ok, value = from_any(definition, prop.value)
        if not ok or not legal(definition, value):
            log.warning("%s: stored property %s = %r is not a value it takes: skipped",
                        where, prop.name, value if ok else prop.value)
            continue
        values[prop.name] = value
    return values


def _filters_record(obj: Any) -> dict[str, Any]:
    return {"next": obj._next_filter_id,
            "attached": [{"id": filter_id, **filter_ref(flt)} for filter_id, flt in obj._filters]}


def filter_ref(flt: Any) -> dict[str, Any]:
    """How a filter is named in a record: our own by path, a client's by its IOR."""
    if flt is None:
        return {}
    path = getattr(flt, "store_path", None)
    if path is not None:
        return {"flt": path}
    reference = getattr(flt, "reference", flt)  # the server's guard keeps the reference
    text = codec.reference_text(reference)
    return {"ior": text} if text is not None else {}


def _types(pairs: Any) -> list[list[str]]:
    return sorted([d, t] for d, t in pairs)


def _record(obj: Any) -> tuple[str, dict[str, Any]]:
    """The kind and record of ``obj``, with its TAO name when it has one (names.py)."""
    kind, record = _bare_record(obj)
    name = getattr(obj, "_name", None)
    if name is not None:
        record["name"] = name
    return kind, record


def _bare_record(obj: Any) -> tuple[str, dict[str, Any]]:
    record: dict[str, Any]
    from cosnotify.channel.admin import ConsumerAdmin, SupplierAdmin
    from cosnotify.channel.channel import EventChannel
    from cosnotify.channel.consumer_proxy import ProxyConsumer
    from cosnotify.channel.supplier_proxy import ProxySupplier

    if isinstance(obj, EventChannel):
        record = {"id": obj._id, "qos": _qos_record(obj),
                  "admin": codec.encode_properties(
                      to_property_seq(obj._admin_props, ADMIN_PROPERTIES))}
        if obj.typed:
            record["typed"] = True  # its admins and proxies are typed ones (cosnotify/typed)
        return "channel", record
    if isinstance(obj, (ConsumerAdmin, SupplierAdmin)):
        record = {"id": obj._id, "op": int(obj._operator._v),
                                  "qos": _qos_record(obj), "filters": _filters_record(obj)}
        if isinstance(obj, ConsumerAdmin):
            record["types"] = _types(obj._explicit.types)
            record["priority_filter"] = filter_ref(obj._priority_filter)
            record["lifetime_filter"] = filter_ref(obj._lifetime_filter)
            return "consumer_admin", record
        record["offers"] = _types(obj._offers.types)
        return "supplier_admin", record
    client = obj._client if obj._connected else None
    record = {"id": obj._id, "class": type(obj).__name__, "qos": _qos_record(obj),
              "filters": _filters_record(obj), "connected": obj._connected,
              "client": codec.reference_text(client), "suspended": obj._suspended}
    if client is not None and record["client"] is None:
        # One of this service's own objects (a channel linked to another through a
        # client's references: the server hands the core object): kept by its path.
        path = Topology.path(client)
        if path is not None and path.startswith("ch/"):
            record["client_path"] = path
    interface = getattr(obj, "interface", None)  # a typed proxy's key (cosnotify/typed)
    if interface is not None:
        record["interface"] = interface.repo_id
    if isinstance(obj, ProxySupplier):
        record["explicit_set"] = obj._explicit_set
        record["types"] = _types(obj._explicit.types)
        record["priority_filter"] = filter_ref(obj._priority_filter)
        record["lifetime_filter"] = filter_ref(obj._lifetime_filter)
        return "proxy_supplier", record
    assert isinstance(obj, ProxyConsumer)
    record["offers"] = _types(obj._offers.types)
    record["ack_epoch"] = getattr(obj, "_ack_epoch", 0)
    return "proxy_consumer", record


def client_stub(reference: Any, interface: str | None) -> Any:
    """A restored client reference, typed by its interface without asking the client
    (it may not be running yet: spec section 2.5.5.1 has the channel retry it)."""
    if reference is None or not interface:
        return reference
    stub = stub_class(interface)
    return reference if stub is None else stub(reference._obj)


#: The operator a stored admin record names.
OPERATORS = {int(CA.AND_OP._v): CA.AND_OP, int(CA.OR_OP._v): CA.OR_OP}
