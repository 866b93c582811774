"""Prometheus metrics from ``stats()``, and the endpoint of ``serve --metrics``.

Strategy: no metric object lives on the event path. A custom collector calls
:func:`cosnotify.ops.stats.stats` at each scrape and turns the snapshot into
metric families; between scrapes nothing is kept.

Labels stay bounded. Channel series carry ``channel`` (the channel id as a
decimal string); proxy series carry ``channel``, ``admin`` and ``proxy``:
the ids as decimal strings, as the spec assigns them (per channel, per
admin, from 0). Proxy suppliers and proxy consumers are different families
(``cosnotify_supplier_*``, ``cosnotify_consumer_*``), because consumer
admin 0 and supplier admin 0 are different admins. Event Service style
admins and proxies have no id: their admin is ``admin="es"`` and all their
proxies one series ``proxy="es"`` per channel and family. At most
``max_proxies`` proxy series (default 200) are written per scrape, over
both families: proxy suppliers with the deepest queues first, then proxy
consumers by events received; the rest of a channel's proxies are summed
into one series per channel and family with ``admin="other"`` and
``proxy="other"``. Counters of a summed series drop when its members
change (Prometheus reads that as a counter reset). Channels are not capped:
operators make them, not clients. Lanes are the two shared ones by name;
the clients' lanes are summed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from cosnotify.ops.stats import stats

__all__ = ["DEFAULT_MAX_PROXIES", "StatsCollector", "serve_metrics"]

log = logging.getLogger("cosnotify.ops")

DEFAULT_MAX_PROXIES = 200

#: (family suffix, help, counter key) of proxy supplier counters.
_SUPPLIER_COUNTERS = [
    ("queued", "Event copies queued for the consumer", "queued"),
    ("delivered", "Events delivered to the consumer (pushed or pulled)", "delivered"),
    ("expired", "Queued events dropped because their Timeout/StopTime passed", "expired"),
    ("failed", "Push calls to the consumer that failed", "failed"),
]
_DISCARD_REASONS = [("max_events_per_consumer", "discarded"), ("max_queue_length", "removed"),
                    ("unmarshallable", "unsendable")]  # omniORBpy's defect (docs/orb.md)
_PROXY_LABELS = ["channel", "admin", "proxy"]


class StatsCollector(Collector):
    """Collects ``stats(factory)`` as Prometheus families at scrape time."""

    def __init__(self, factory: Any, max_proxies: int = DEFAULT_MAX_PROXIES,
                 snapshot: Callable[[Any], dict[str, Any]] = stats) -> None:
        self._factory = factory
        self._max_proxies = max_proxies
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        snap = self._snapshot(self._factory)
        yield from _channel_families(snap["channels"])
        suppliers, consumers = _proxy_rows(snap["channels"], self._max_proxies)
        yield from _supplier_families(suppliers)
        yield from _consumer_families(consumers)
        yield from _worker_families(snap["workers"])
        yield from _front_end_families(snap.get("front_ends", []))


def _front_end_families(front_ends: list[dict[str, Any]]) -> Iterator[Metric]:
    """The seed protocols' front ends (docs/protocols.md), labelled by protocol."""
    labels = ["protocol", "port"]
    open_now = GaugeMetricFamily("cosnotify_frontend_connections",
                                 "Connections open to a protocol front end", labels=labels)
    counted = {name: CounterMetricFamily(f"cosnotify_frontend_{name}", help_text,
                                         labels=labels)
               for name, help_text in (
                   ("accepted", "Connections a front end accepted"),
                   ("refused", "Connections refused past the front end's limit"),
                   ("closed_bad", "Connections closed for bad input or a timeout"),
                   ("dropped_slow", "Connections dropped for reading too slowly"),
                   ("frames_in", "Frames a front end received"),
                   ("frames_out", "Frames a front end sent"),
                   ("bytes_in", "Bytes a front end received"),
                   ("bytes_out", "Bytes a front end sent"))}
    for front_end in front_ends:
        values = [front_end["protocol"], str(front_end["port"])]
        open_now.add_metric(values, front_end["open"])
        for name, family in counted.items():
            family.add_metric(values, front_end[name])
    yield open_now
    yield from counted.values()


def _channel_families(channels: list[dict[str, Any]]) -> Iterator[Metric]:
    events_in = CounterMetricFamily("cosnotify_channel_events_in",
                                    "Events suppliers handed to the channel", labels=["channel"])
    delivered = CounterMetricFamily("cosnotify_channel_delivered",
                                    "Events delivered to the channel's consumers",
                                    labels=["channel"])
    queued = GaugeMetricFamily("cosnotify_channel_queue_depth",
                               "Event copies waiting in the channel's proxy queues",
                               labels=["channel"])
    failed = CounterMetricFamily("cosnotify_channel_failed",
                                 "Push calls to the channel's consumers that failed, "
                                 "proxies gone included", labels=["channel"])
    discarded = CounterMetricFamily("cosnotify_channel_discarded",
                                    "Event copies the channel's proxies discarded or dropped "
                                    "as expired, proxies gone included", labels=["channel"])
    for channel in channels:
        label = [str(channel["id"])]
        counters = channel["counters"]
        totals = counters["proxy_totals"]
        events_in.add_metric(label, counters["events_in"])
        delivered.add_metric(label, counters["delivered"])
        queued.add_metric(label, totals["depth"])
        failed.add_metric(label, totals["failed"])
        discarded.add_metric(label, totals["discarded"] + totals["removed"] + totals["expired"]
                             + totals.get("unsendable", 0))
    yield from (events_in, delivered, queued, failed, discarded)


def _proxy_rows(channels: list[dict[str, Any]], cap: int) -> tuple[list[Any], list[Any]]:
    """(labels, proxy) rows for each family, capped (module docstring)."""
    suppliers: list[tuple[list[str], dict[str, Any]]] = []
    consumers: list[tuple[list[str], dict[str, Any]]] = []
    for channel in channels:
        for admin in channel["admins"]:
            rows = suppliers if admin["kind"].endswith("consumer") else consumers
            admin_label = "es" if admin["id"] is None else str(admin["id"])
            for proxy in admin["proxies"]:
                proxy_label = "es" if proxy["id"] is None else str(proxy["id"])
                rows.append(([str(channel["id"]), admin_label, proxy_label], proxy))
    suppliers.sort(key=lambda row: -row[1]["counters"]["depth"])
    consumers.sort(key=lambda row: -row[1]["counters"]["received"])
    kept_suppliers = suppliers[:cap]
    kept_consumers = consumers[:max(0, cap - len(kept_suppliers))]
    return (_fold(kept_suppliers, suppliers[len(kept_suppliers):]),
            _fold(kept_consumers, consumers[len(kept_consumers):]))


def _fold(kept: list[Any], rest: list[Any]) -> list[Any]:
    """Sum rows with the same labels (Event Service proxies; the rest as one "other"
    series for all channels, since clients can create channels: the label set stays
    bounded). A folded row's queue_limit is the largest of its members'."""
    summed: dict[tuple[str, ...], dict[str, Any]] = {}
    for labels, proxy in kept + [(["other", "other", "other"], proxy) for _, proxy in rest]:
        key = tuple(labels)
        into = summed.get(key)
        if into is None:
            summed[key] = {"counters": dict(proxy["counters"]),
                           "queue_limit": proxy.get("queue_limit", 0)}
            continue
        for name, value in proxy["counters"].items():
            into["counters"][name] = into["counters"].get(name, 0) + value
        into["queue_limit"] = max(into["queue_limit"], proxy.get("queue_limit", 0))
    return [(list(key), value) for key, value in summed.items()]


def _supplier_families(rows: list[Any]) -> Iterator[Metric]:
    for suffix, text, key in _SUPPLIER_COUNTERS:
        family = CounterMetricFamily(f"cosnotify_supplier_{suffix}", text, labels=_PROXY_LABELS)
        for labels, proxy in rows:
            family.add_metric(labels, proxy["counters"][key])
        yield family
    unacknowledged = CounterMetricFamily(
        "cosnotify_supplier_unacknowledged_expired",
        "Events given to an acknowledging consumer (DeliveryReliability Acknowledgment), "
        "never acknowledged, and let go at their expiry", labels=_PROXY_LABELS)
    for labels, proxy in rows:
        given_expired = proxy["counters"].get("unacknowledged_expired")
        if given_expired is not None:
            unacknowledged.add_metric(labels, given_expired)
    yield unacknowledged
    discarded = CounterMetricFamily(
        "cosnotify_supplier_discarded", "Queued events discarded to respect a limit",
        labels=[*_PROXY_LABELS, "reason"])
    for labels, proxy in rows:
        for reason, key in _DISCARD_REASONS:
            discarded.add_metric([*labels, reason], proxy["counters"].get(key, 0))
    yield discarded
    depth = GaugeMetricFamily("cosnotify_supplier_queue_depth",
                              "Events waiting for the consumer", labels=_PROXY_LABELS)
    limit = GaugeMetricFamily("cosnotify_supplier_queue_limit",
                              "Events the consumer's queue holds at most "
                              "(MaxEventsPerConsumer, or the service's cap)",
                              labels=_PROXY_LABELS)
    for labels, proxy in rows:
        depth.add_metric(labels, proxy["counters"]["depth"])
        limit.add_metric(labels, proxy["queue_limit"])
    yield from (depth, limit)


def _consumer_families(rows: list[Any]) -> Iterator[Metric]:
    received = CounterMetricFamily("cosnotify_consumer_received",
                                   "Events received from the supplier", labels=_PROXY_LABELS)
    rejected = CounterMetricFamily("cosnotify_consumer_rejected",
                                   "Events the proxy's or its admin's filters rejected",
                                   labels=_PROXY_LABELS)
    for labels, proxy in rows:
        received.add_metric(labels, proxy["counters"]["received"])
        rejected.add_metric(labels, proxy["counters"]["rejected"])
    yield from (received, rejected)


def _worker_families(workers: dict[str, Any]) -> Iterator[Metric]:
    threads = GaugeMetricFamily("cosnotify_workers", "Worker threads of the pool",
                                labels=["state"])
    threads.add_metric(["busy"], workers["busy"])
    threads.add_metric(["total"], workers["total"])
    threads.add_metric(["max"], workers["max"])
    yield threads
    lanes = GaugeMetricFamily("cosnotify_lane_running", "Tasks running in a lane",
                              labels=["lane"])
    parked = GaugeMetricFamily("cosnotify_lane_parked", "Tasks waiting for room in a lane",
                               labels=["lane"])
    for lane in workers["lanes"]:
        lanes.add_metric([lane["lane"]], lane["running"])
        parked.add_metric([lane["lane"]], lane["parked"])
    clients = workers["client_lanes"]
    lanes.add_metric(["clients"], clients["running"])
    parked.add_metric(["clients"], clients["parked"])
    yield from (lanes, parked)


def serve_metrics(host: str, port: int) -> tuple[Any, CollectorRegistry]:
    """Bind ``/metrics`` at ``host:port`` and serve it on a daemon thread.

    Returns ``(server, registry)``: register a :class:`StatsCollector` in the
    registry once the factory exists (scrapes before that are empty), so an
    address that cannot be bound (``OSError``) is found before the service
    starts. ``server.server_address`` has the port chosen for port 0;
    ``server.shutdown()`` stops it.
    """
    from prometheus_client import start_http_server

    registry = CollectorRegistry(auto_describe=False)
    server, _ = start_http_server(port, addr=host, registry=registry)
    log.info("metrics at http://%s:%d/metrics", host, server.server_address[1])
    return server, registry
