"""``cosnotify.stats(factory)``: a plain snapshot of a service's counters.

Strategy: the core keeps its counters where the event path already is
(docs/operations.md, "Metrics and stats"): each proxy supplier's queue counts
under the proxy's lock, its delivery task counts deliveries and failures,
proxy consumers and channels count with ``itertools`` counts
(channel/counters.py). This module only reads them, at the moment it is
called, and returns dicts and lists of numbers, strings, booleans and None
that ``json.dumps`` takes as they are.

Reading never stalls the event path for longer than one read of a few ints:
each proxy supplier's lock is taken once, briefly, to read its queue's
length and counters together (so ``queued`` = ``delivered`` + ``discarded``
+ ``expired`` + ``removed`` + ``depth`` holds within one proxy, give or take
the batch its worker is pushing at that moment). Everything else is read
without a lock, where a torn read is harmless: each int is read whole (an
attribute read is atomic), two counters read one after the other may be one
event apart, and the lists of admins and proxies are copied under their
owners' locks, which topology changes hold only briefly. Filters of this
process are asked for their constraints (the filter's own lock); filters a
client implements are not called (that would be a remote call): they are
listed as ``remote``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

import omniORB
from omniORB import CORBA

import CosNotifyChannelAdmin as CA

from cosnotify.channel.admin import ConsumerAdmin
from cosnotify.channel.consumer_proxy import ProxyConsumer
from cosnotify.channel.counters import (
    channel_events_in,
    departures,
    proxy_counts,
    read,
    retired,
    supplier_counts,
)
from cosnotify.channel.names import name_of
from cosnotify.channel.supplier_proxy import ProxySupplier
from cosnotify.filter.filter import Filter
from cosnotify.filter.mapping import MappingFilter

__all__ = ["MAX_SNAPSHOT_BYTES", "SNAPSHOT_VERSION", "client_description", "proxy_kind", "stats", "stats_json"]

#: The layout version of the snapshot (CosNotifyMonitor::SnapshotVersion).
SNAPSHOT_VERSION = 1
#: The largest snapshot text served: under the server's 16 MiB GIOP message limit
#: (``MAX_MESSAGE_SIZE``, cosnotify/server/app.py), with room for the reply's framing.
#: About 50,000 proxies with short filters fit.
MAX_SNAPSHOT_BYTES = 15 * 2**20


def stats(factory: Any, channels: Iterable[int] = ()) -> dict[str, Any]:
    """A JSON-serialisable snapshot of ``factory``'s channels, admins, proxies
    and worker pool (the layout is in docs/operations.md).

    ``channels``: the ids of the channels to read (all when empty); an id
    the factory does not have raises ``CosNotifyChannelAdmin.ChannelNotFound``.
    """
    wanted = list(channels)
    with factory._lock:
        found = dict(factory._channels)
    if wanted:
        if any(channel_id not in found for channel_id in wanted):
            raise CA.ChannelNotFound()
        found = {channel_id: found[channel_id] for channel_id in wanted}
    listed = sorted(found.values(), key=lambda c: c._id)
    front_ends = getattr(factory, "front_ends", None)  # a server's (cosnotify/protocols)
    return {"version": SNAPSHOT_VERSION, "time": time.time(),
            "channels": [_channel(channel) for channel in listed],
            "workers": _workers(factory._service.dispatcher),
            "front_ends": front_ends.stats() if front_ends is not None else []}


def stats_json(factory: Any, channels: Iterable[int] = ()) -> str:
    """:func:`stats` as compact JSON text: what ``CosNotifyMonitor::Monitor::snapshot``
    answers. Past :data:`MAX_SNAPSHOT_BYTES` it raises ``IMP_LIMIT`` saying so (a reply
    that large would fail as a marshalling error the client cannot explain)."""
    text = json.dumps(stats(factory, channels), separators=(",", ":"))
    if len(text) > MAX_SNAPSHOT_BYTES:
        raise CORBA.IMP_LIMIT(0, CORBA.COMPLETED_NO,
                              f"the snapshot is {len(text) / 2**20:.1f} MiB, more than the "
                              f"{MAX_SNAPSHOT_BYTES / 2**20:.0f} MiB a reply may carry")
    return text


def _channel(channel: Any) -> dict[str, Any]:
    # The proxies gone and those listed are read in one hold of the lock a proxy
    # leaving takes (channel/proxy.py ``_teardown``): each proxy is in exactly one of
    # the two sums, so the totals never fall (Prometheus would read a counter reset).
    with channel._departing:
        gone = retired(channel)
        with channel._lock:
            admins = (sorted(channel._consumer_admins.values(), key=lambda a: a._id)
                      + sorted(channel._supplier_admins.values(), key=lambda a: a._id)
                      + list(channel._es_admins))
        listed = [_admin(admin) for admin in admins]
        departed = departures(channel)  # so a proxy is listed live or departed, not both
    totals = {"queued": 0, "delivered": 0, "discarded": 0, "expired": 0, "removed": 0,
              "failed": 0, "unsendable": 0, "depth": 0, "received": 0, "rejected": 0}
    for name, value in gone.items():  # proxies gone: their final counts
        if name in totals:
            totals[name] += value
    for admin in listed:
        for proxy in admin["proxies"]:
            for name, value in proxy["counters"].items():
                if name in totals:
                    totals[name] += value
    counters = {"events_in": read(channel_events_in(channel)),
                "delivered": int(channel.delivered),
                "events_queued_now": int(channel._account.count),
                "proxy_totals": totals}
    return {"id": channel._id, "name": name_of(channel), "qos": _plain(dict(channel._qos)),
            "admin_properties": _plain(dict(channel._admin_props)),
            "counters": counters, "admins": listed,
            "departed": [_departed(record, client) for record, client in departed]}


def _departed(record: dict[str, Any], client: Any) -> dict[str, Any]:
    """A proxy that went away: what it was when it went (its filters are not kept),
    the client it had, when and why."""
    return {**record, "state": "destroyed", "client": client_description(client),
            "filters": []}


def _admin_kind(admin: Any) -> str:
    kind = "consumer" if isinstance(admin, ConsumerAdmin) else "supplier"
    return kind if admin._id is not None else "event service " + kind


def _admin(admin: Any) -> dict[str, Any]:
    kind = _admin_kind(admin)
    operator = "AND_OP" if admin._operator == CA.AND_OP else "OR_OP"
    with admin._lock:
        proxies = (sorted(admin._proxies.values(), key=lambda p: p._id)
                   + list(admin._anonymous))
    return {"id": admin._id, "name": name_of(admin), "kind": kind, "operator": operator,
            "filters": _filters(admin), "proxies": [_proxy(proxy) for proxy in proxies]}


def _proxy(proxy: Any) -> dict[str, Any]:
    state = ("destroyed" if proxy._destroyed else
             "suspended" if proxy._suspended else
             "connected" if proxy._connected else "idle")
    made: dict[str, Any] = {"id": proxy._id, "name": name_of(proxy),
                            "kind": proxy_kind(proxy), "state": state,
                            "client": client_description(proxy._client),
                            "filters": _filters(proxy)}
    if isinstance(proxy, ProxySupplier):
        counters, limit, last = supplier_counts(proxy)
        made.update({"counters": counters, "queue_limit": limit,
                     "max_events_per_consumer": int(proxy._qos.get("MaxEventsPerConsumer", 0)),
                     "last_failure": (None if last is None
                                      else {"time": last[0], "reason": last[1]})})
    elif isinstance(proxy, ProxyConsumer):
        made["counters"] = proxy_counts(proxy)
    else:
        made["counters"] = {}
    return made


def proxy_kind(proxy: Any) -> str:
    """``"structured push supplier"`` and the like (``"event service push consumer"``)."""
    return str(proxy.kind_text())


def client_description(client: Any) -> str:
    """``host:port`` of a CORBA reference's first IIOP profile, ``in-process`` for a
    Python object, ``none`` before a client connects (or for a nil one)."""
    if client is None:
        return "none"
    if not isinstance(client, CORBA.Object):
        return "in-process"
    orb = omniORB.orb
    if orb is None:
        return "remote"
    from cosnotify.corba.addresses import iiop_address

    found = iiop_address(orb, client)
    if found is None:
        return "remote"
    host, port = found
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _filters(owner: Any) -> list[dict[str, Any]]:
    listed = []
    for filter_id, flt in owner._filters:  # an immutable tuple, replaced on change
        if isinstance(flt, (Filter, MappingFilter)):
            try:
                grammar = str(flt._get_constraint_grammar())
                infos = (flt.get_all_constraints() if isinstance(flt, Filter)
                         else flt.get_all_mapping_constraints())
                constraints = [str(info.constraint_expression.constraint_expr)
                               for info in infos]
            except CORBA.OBJECT_NOT_EXIST:
                listed.append({"id": filter_id, "destroyed": True})
                continue
            listed.append({"id": filter_id, "grammar": grammar, "constraints": constraints})
        else:
            listed.append({"id": filter_id, "remote": True})
    return listed


def _workers(dispatcher: Any) -> dict[str, Any]:
    """Workers busy and in all, and each lane's use (under the pool's lock, briefly)."""
    with dispatcher._cond:
        total, busy, queued = len(dispatcher._workers), dispatcher._busy, len(dispatcher._queue)
        clients = list(dispatcher._lanes.values())
        shared = [dispatcher.failing, dispatcher.slow]
        lanes = [{"lane": str(lane.key), "running": lane.running, "limit": lane.limit,
                  "parked": len(lane.parked)} for lane in shared]
        client_running = sum(lane.running for lane in clients)
        client_parked = sum(len(lane.parked) for lane in clients)
    return {"total": total, "busy": busy, "max": dispatcher.max_workers, "queued": queued,
            "lanes": lanes,
            "client_lanes": {"count": len(clients), "running": client_running,
                             "parked": client_parked, "limit_each": dispatcher.lane_limit}}


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    """QoS and admin property values as JSON values (anything odd as its text)."""
    made: dict[str, Any] = {}
    for name, value in values.items():
        if value is None or isinstance(value, (bool, int, float, str)):
            made[name] = value
        elif isinstance(value, (list, tuple)):
            made[name] = [v if isinstance(v, (bool, int, float, str)) else str(v) for v in value]
        else:
            made[name] = str(value)
    return made
