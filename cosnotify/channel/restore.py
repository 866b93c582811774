"""Rebuilding a factory's persistent objects from their store records (topology.py).

Strategy: records come back in the order their paths were first written,
but an object's record may name a filter made after it, so the rebuild runs
in passes over the decoded records: filters; channels; admins; proxies (each
with its QoS, filters, subscriptions, offers and mapping filters); and last
the connections, once every object a client might call back exists. Objects
are made with their constructors and put straight into their parents'
tables with their stored ids, without the checks a client's request goes
through (the state was valid when it was saved). A record that cannot be
used (a grammar no longer known, a constraint that no longer compiles, a
parent that is missing) is logged and skipped: one bad record does not
keep the rest of the topology from coming back.
"""

from __future__ import annotations

import logging
from typing import Any

from cosnotify.channel import admin as admins
from cosnotify.channel import codec
from cosnotify.channel.ack import ACK_KINDS
from cosnotify.channel.channel import EventChannel
from cosnotify.channel.durable import DurableQueue
from cosnotify.channel.topology import OPERATORS, Topology, client_stub, persistent, qos_values
from cosnotify.store.interface import Record, StoreError

__all__ = ["run"]

log = logging.getLogger("cosnotify.channel")

_FILTER = "IDL:omg.org/CosNotifyFilter/Filter:1.0"
_MAPPING_FILTER = "IDL:omg.org/CosNotifyFilter/MappingFilter:1.0"
_PROXY_CLASSES: dict[str, Any] = {cls.__name__: cls for table in (
    admins._PUSH_SUPPLIERS, admins._PULL_SUPPLIERS, admins._PUSH_CONSUMERS,
    admins._PULL_CONSUMERS) for cls in table.values()}
_PROXY_CLASSES.update({cls.__name__: cls for kinds in ACK_KINDS.values() for cls in kinds})


def run(topology: Topology, factory: Any, records: list[Record]) -> _Rebuild:
    """Rebuild the objects of ``records``; the caller then calls ``connect_all``."""
    decoded: list[tuple[Record, dict[str, Any]]] = []
    for record in records:
        try:
            decoded.append((record, codec.loads(record.data)))
        except (ValueError, TypeError) as exc:
            log.error("store record %s is unreadable (%s): skipped", record.path, exc)
    typed = [record.path for record, data in decoded
             if record.kind == "channel" and data.get("typed")]
    if typed and getattr(factory, "interfaces", None) is None:
        # Skipped, their stored events would go (drop_orphans): refuse instead.
        raise ValueError(f"the store holds typed channels ({', '.join(typed)}): open it "
                         "with cosnotify.TypedEventChannelFactory, which loads their IDL "
                         "from the store")
    _check_interfaces(factory, decoded)
    rebuild = _Rebuild(topology, factory)
    rebuild.decoded = decoded  # OES trees read theirs in connect_all (cosnotify/oes)
    for kinds, step in ((("filter", "mapping"), rebuild.filter),
                        (("channel",), rebuild.channel),
                        (("consumer_admin", "supplier_admin"), rebuild.admin),
                        (("proxy_supplier", "proxy_consumer"), rebuild.proxy)):
        for record, data in decoded:
            if record.kind in kinds:
                try:
                    step(record.path, data)
                except Exception:
                    log.exception("store record %s could not be restored: skipped", record.path)
    return rebuild


def _check_interfaces(factory: Any, decoded: list[tuple[Record, dict[str, Any]]]) -> None:
    """Every typed proxy's key must name a loaded interface (with its ``Pull<I>`` for
    a pull proxy): a typed proxy skipped would have its stored events dropped
    (``drop_orphans``), so a start without them is refused instead."""
    interfaces = getattr(factory, "interfaces", None)
    missing = set()
    for record, data in decoded:
        key = data.get("interface") if record.kind in ("proxy_supplier",
                                                         "proxy_consumer") else None
        if key is None or interfaces is None:
            continue
        try:
            interface = interfaces.lookup(key)
        except KeyError:
            missing.add(key)
            continue
        if "Pull" in str(data.get("class")) and interface.pull_repo_id is None:
            missing.add(f"the Pull interface of {key}")
    if missing:
        raise ValueError(f"the store's typed proxies use {', '.join(sorted(missing))}, which "
                         "no IDL loaded now declares: give the IDL that does (--idl); "
                         "restoring without them would drop their stored events")


class _Rebuild:
    def __init__(self, topology: Topology, factory: Any) -> None:
        self.topology = topology
        self.factory = factory
        self.filters: dict[str, Any] = {}
        self.proxies: list[tuple[Any, dict[str, Any]]] = []
        self.decoded: list[tuple[Record, dict[str, Any]]] = []

    # -- objects ----------------------------------------------------------------------------
    def filter(self, path: str, data: dict[str, Any]) -> None:
        from cosnotify.filter.persist import restore

        if data.get("destroyed"):
            return
        for item in data["constraints"]:
            if item["value"] is not None:
                item["value"] = codec.decode_any(item["value"])
        if "default" in data:
            data["default"] = codec.decode_any(data["default"])
        ff = self.factory._get_filter_factory()
        flt = restore(ff, data)
        ff.adopt(flt, path)
        self.filters[path] = flt

    def channel(self, path: str, data: dict[str, Any]) -> None:
        qos = qos_values(data["qos"], path)
        admin = qos_values(data["admin"], path)
        cls = self.factory.typed_channel_class if data.get("typed") else EventChannel
        channel: Any = cls(self.factory, data["id"], qos, set(qos), admin)
        channel._stored = True
        channel._name = data.get("name")
        self.factory._adopt_channel(channel)

    def admin(self, path: str, data: dict[str, Any]) -> None:
        parts = path.split("/")
        channel = self.factory._channels[int(parts[1])]
        consumer = parts[2] == "ca"
        cls: Any = channel.consumer_admin_class if consumer else channel.supplier_admin_class
        table = channel._consumer_admins if consumer else channel._supplier_admins
        admin: Any = cls(channel, data["id"], OPERATORS[data["op"]])
        admin._stored = True
        admin._name = data.get("name")
        channel._names.adopt(parts[2], admin._name)
        _apply_qos(admin, data["qos"], path)
        with channel._lock:
            table[admin._id] = admin
            channel._rebuild_routes()
        self._attach_filters(admin, data["filters"])
        if consumer:
            admin._explicit.update([tuple(t) for t in data["types"]], [])
            admin._update_contribution()
            admin._priority_filter = self._filter(data.get("priority_filter") or {}, "priority")
            admin._lifetime_filter = self._filter(data.get("lifetime_filter") or {}, "lifetime")
        else:
            appeared, vanished = admin._offers.update([tuple(t) for t in data["offers"]], [])
            channel._hub.change_offers(appeared, vanished)

    def proxy(self, path: str, data: dict[str, Any]) -> None:
        parts = path.split("/")
        channel = self.factory._channels[int(parts[1])]
        table = channel._consumer_admins if parts[2] == "ca" else channel._supplier_admins
        admin = table[int(parts[3])]
        cls = _PROXY_CLASSES.get(data["class"]) or channel.proxy_classes[data["class"]]
        # A typed proxy's key: its interface was loaded from the store first.
        extra = (self.factory.interfaces.lookup(data["interface"]),) \
            if "interface" in data else ()
        channel._reserve_proxy(admin.limit_name, force=True)
        try:
            proxy: Any = cls(admin, data["id"], *extra)
            proxy._stored = True
            proxy._name = data.get("name")
            _apply_qos(proxy, data["qos"], path)
            proxy._keep_qos_in_effect()  # an older record may hold an Acknowledgment
            channel._names.adopt(admin.proxy_scope, proxy._name)  # last: a skipped record
            # keeps no name
        except BaseException:
            channel._unreserve_proxy(admin.limit_name)  # the record is skipped: no count
            raise
        with admin._lock:
            admin._proxies[proxy._id] = proxy
        self._attach_filters(proxy, data["filters"])
        if "explicit_set" in data:
            types = [tuple(t) for t in data["types"]]
            if data["explicit_set"]:
                proxy._restore_subscription(types)
            proxy._priority_filter = self._filter(data.get("priority_filter") or {}, "priority")
            proxy._lifetime_filter = self._filter(data.get("lifetime_filter") or {}, "lifetime")
            proxy._refresh_fast_path()
        else:
            appeared, vanished = proxy._offers.update([tuple(t) for t in data["offers"]], [])
            channel._hub.change_offers(appeared, vanished)
            if hasattr(proxy, "_ack_epoch"):
                proxy._ack_epoch = data.get("ack_epoch", 0)
        self.proxies.append((proxy, data))

    # -- connections, last ----------------------------------------------------------------------
    def connect_all(self) -> None:
        """Reconnect every proxy to its client: the consumers' side first, so an event
        a pull supplier is polled for finds every consumer it is for connected."""
        from cosnotify.channel.supplier_proxy import ProxySupplier

        self.drop_orphans()
        ordered = sorted(self.proxies, key=lambda item: not isinstance(item[0], ProxySupplier))
        for proxy, data in ordered:
            if (proxy._channel._event_log is not None and hasattr(proxy, "_queue")
                    and persistent(proxy)):
                # Its stored events are read back as it delivers (channel/durable.py).
                proxy._queue.durable = DurableQueue(proxy._durable_path(), spilled=True,
                                                    restored=True)
            if not data["connected"]:
                continue
            try:
                reference = codec.reference_from_text(data["client"])
                interface = (getattr(proxy, "consumer_interface", "")
                             or getattr(proxy, "supplier_interface", ""))
                if reference is None and "client_path" in data:
                    own = self._own(data["client_path"])  # another channel's proxy
                    if own is None:
                        log.warning("%r: its client %s did not come back: not connected",
                                    proxy, data["client_path"])
                        continue
                    proxy._restore_connection(own, data["suspended"])
                    continue
                if interface and reference is None:
                    # A client the channel calls, kept without a reference (an object
                    # in process): the proxy waits unconnected for a new one.
                    continue
                proxy._restore_connection(client_stub(reference, interface), data["suspended"])
            except Exception:
                log.exception("%r: the connection to its client could not be restored", proxy)
        from cosnotify.oes.durable import restore_trees

        restore_trees(self.factory, self.decoded)  # their contracts' proxies are back now

    def _own(self, path: str) -> Any:
        """The restored object of this service at ``path`` (topology.py), or None."""
        parts = path.split("/")
        channel = self.factory._channels.get(int(parts[1])) if len(parts) > 1 else None
        if channel is None or len(parts) == 2:
            return channel
        admins = channel._consumer_admins if parts[2] == "ca" else channel._supplier_admins
        admin = admins.get(int(parts[3])) if len(parts) > 3 else None
        if admin is None or len(parts) == 4:
            return admin
        return admin._proxies.get(int(parts[4])) if len(parts) == 5 else None

    def drop_orphans(self) -> None:
        """Stored events of a consumer whose record is gone would stay for ever: they go.
        Those of a consumer whose record and its admin's and channel's are kept but
        could not be restored stay, for a later start that can (review 101: they went,
        and the record, mended, came back with nothing; histories are kept the same
        way, Topology). With an ancestor's record missing none can: they go (review 102)."""
        store = self.topology.store
        kept = {proxy._durable_path() for proxy, _ in self.proxies
                if hasattr(proxy, "_queue") and persistent(proxy)}
        try:
            recorded = {record.path for record in store.records()}
            for consumer in store.consumers():
                if consumer in kept:
                    continue
                parts = consumer.split("/")  # ch/C/ca/A/P: the record and its ancestors'
                if all("/".join(parts[:n]) in recorded
                       for n in range(2, len(parts) + 1, 2)) and consumer in recorded:
                    log.error("stored events of %s are kept: its record could not be "
                              "restored (a later start may)", consumer)
                    continue
                log.warning("stored events of %s, which is gone, are dropped", consumer)
                store.drop_consumer(consumer)
        except StoreError as exc:
            log.error("the store could not drop the events of gone consumers: %s", exc)

    # -- helpers --------------------------------------------------------------------------------
    def _filter(self, ref: dict[str, Any], role: str) -> Any:
        """A stored filter reference: ``role`` is ``filter``, ``priority`` or ``lifetime``."""
        if "flt" in ref:
            found = self.filters.get(ref["flt"])
            if found is None:
                log.error("filter %s is not in the store: not attached", ref["flt"])
            return found
        if "ior" in ref:
            interface = _FILTER if role == "filter" else _MAPPING_FILTER
            reference = client_stub(codec.reference_from_text(ref["ior"]), interface)
            make = self.topology.remote_filter
            return make(reference, role) if make is not None else reference
        return None

    def _attach_filters(self, obj: Any, record: Any) -> None:
        # A list: a record of the first format, without the next filter id.
        items = record if isinstance(record, list) else record["attached"]
        next_id = 1 if isinstance(record, list) else int(record["next"])
        attached = []
        for item in items:
            flt = self._filter(item, "filter")
            if flt is not None:
                attached.append((item["id"], flt))
        top = max((filter_id for filter_id, _ in attached), default=0)
        with obj._filter_lock:
            obj._filters = tuple(attached)
            obj._next_filter_id = max(top + 1, next_id)
            for filter_id, flt in attached:
                obj._route_filter(flt, True)
                obj._filter_adding(filter_id, flt)
        for filter_id, flt in attached:
            obj._filter_added(filter_id, flt)


def _apply_qos(obj: Any, data: bytes, path: str) -> None:
    values = qos_values(data, path)
    if values:
        with obj._qos_lock:
            obj._qos.update(values)
            obj._qos_explicit.update(values)
        obj._qos_changed(values)
