"""``cosnotify ls URL``: the service's channels, admins and proxies as a tree.

Strategy: one ``CosNotifyMonitor::Monitor::snapshot`` call reads the whole
tree (docs/operations.md gives its layout); this module only formats it.
``--json`` prints the snapshot itself, so a script sees exactly what the
text is made from. Names given through TAO's NotifyMonitoringExt
operations are shown in double quotes after the id.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from collections.abc import Iterator
from typing import Any

from cosnotify.tools import connect

__all__ = ["add_parser", "fetch", "format_tree", "run"]


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "ls", help="list channels, admins and proxies with their counters",
        description="Print the service's channels with their QoS, admins and proxies: "
                    "each proxy's kind, client, filters, queue depth and counters.")
    parser.add_argument("url", metavar="URL",
                        help="the factory: HOST:PORT, corbaname:/corbaloc:/IOR: URL, or an "
                             "IOR file")
    parser.add_argument("--channel", type=connect.channel_id_arg, action="append", metavar="ID",
                        help="only this channel (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the snapshot as JSON")
    parser.add_argument("--timeout", type=connect.timeout_arg, default=10.0, metavar="SECONDS",
                        help="give up on an unanswering service after this long (default 10)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    def body() -> int:
        snap = fetch(args.url, args.channel or [], args.timeout)
        if args.json:
            json.dump(snap, sys.stdout, indent=1)
            sys.stdout.write("\n")
        else:
            for line in format_tree(snap):  # names, constraints... come from clients
                sys.stdout.write(connect.printable(line) + "\n")
        sys.stdout.flush()
        return 0

    return connect.run_tool("ls", body)


def fetch(url: str, channels: list[int], timeout: float = 10.0) -> dict[str, Any]:
    """The snapshot of the service at ``url`` (a ToolError if it cannot be had)."""
    return read(open_monitor(url, timeout), url, channels)


def open_monitor(url: str, timeout: float = 10.0) -> Any:
    """The ``CosNotifyMonitor::EventChannelFactory`` at ``url`` (resolved and narrowed:
    a naming lookup and an ``_is_a`` call), for :func:`read` to ask as often as needed."""
    return connect.monitor(connect.factory(url, connect.orb(timeout)), url)


def read(monitor: Any, url: str, channels: list[int]) -> dict[str, Any]:
    """One snapshot from ``monitor`` (one call)."""
    from omniORB import CORBA

    import CosNotifyChannelAdmin as CA

    try:
        text = monitor.snapshot(channels)
    except CA.ChannelNotFound:
        raise connect.ToolError(
            f"no channel {', '.join(map(str, _missing(monitor, channels)))} (ids: see "
            f"cosnotify ls {url})", connect.USAGE) from None
    except CORBA.IMP_LIMIT:
        from cosnotify.ops.stats import MAX_SNAPSHOT_BYTES

        raise connect.ToolError(
            f"{url}: the snapshot is larger than one reply may carry "
            f"({MAX_SNAPSHOT_BYTES // 2**20} MiB); read fewer channels at a time with "
            f"--channel ID") from None
    except CORBA.SystemException as exc:
        raise connect.ToolError(f"lost {url}: {connect.describe(exc)}") from None
    snap: dict[str, Any] = json.loads(text)
    if snap.get("version", 0) > 1:
        raise connect.ToolError(f"{url} answers snapshot version {snap['version']}; this "
                                f"cosnotify reads version 1")
    return snap


def _missing(monitor: Any, channels: list[int]) -> list[int]:
    """Which of ``channels`` the service does not have (ChannelNotFound does not say),
    each once; all of them if it cannot be asked."""
    from omniORB import CORBA

    try:
        existing = set(monitor.get_all_channels())
    except CORBA.SystemException:
        existing = set()
    missing = [c for c in dict.fromkeys(channels) if c not in existing]
    return missing or list(dict.fromkeys(channels))


def format_tree(snap: dict[str, Any]) -> Iterator[str]:
    """The lines ``cosnotify ls`` prints for ``snap``."""
    if not snap["channels"]:
        yield "no channels"
    for channel in snap["channels"]:
        yield from _channel(channel)
    workers = snap["workers"]
    lanes = ", ".join(f"{lane['lane']} {lane['running']}/{lane['limit']}"
                      f"{_parked(lane['parked'])}" for lane in workers["lanes"])
    clients = workers["client_lanes"]
    yield (f"workers {workers['busy']}/{workers['total']} busy (max {workers['max']}), "
           f"{workers['queued']} tasks waiting; lanes: {lanes}; "
           f"{clients['count']} client lanes running {clients['running']}"
           f"{_parked(clients['parked'])}")
    for front_end in snap.get("front_ends", []):
        yield front_end_line(front_end)


def front_end_line(front_end: dict[str, Any]) -> str:
    """One front end of the seed protocols (docs/protocols.md), as ``ls`` and ``top`` show it."""
    return (f"{front_end['protocol']} at {front_end['host']}:{front_end['port']}: "
            f"{front_end['open']} connections ({front_end['accepted']} accepted, "
            f"{front_end['refused']} refused, {front_end['closed_bad']} closed for bad input "
            f"or timeouts, {front_end['dropped_slow']} dropped as slow); "
            f"frames {front_end['frames_in']} in, {front_end['frames_out']} out")


def _channel(channel: dict[str, Any]) -> Iterator[str]:
    counters = channel["counters"]
    totals = counters["proxy_totals"]
    yield f"channel {channel['id']}{_name(channel)}"
    yield f"  qos: {_properties(channel['qos'])}"
    if channel["admin_properties"]:
        yield f"  admin properties: {_properties(channel['admin_properties'])}"
    yield (f"  events in {counters['events_in']}, delivered {counters['delivered']}, "
           f"queued now {totals['depth']}, discarded {totals['discarded'] + totals['removed']}, "
           f"expired {totals['expired']}, failed pushes {totals['failed']}")
    for admin in channel["admins"]:
        admin_id = "" if admin["id"] is None else f" {admin['id']}"
        yield f"  {admin['kind']} admin{admin_id}{_name(admin)} ({admin['operator']})"
        yield from _filters(admin["filters"], "    ")
        for proxy in admin["proxies"]:
            yield from _proxy(proxy)
    departed = channel.get("departed", [])
    if departed:
        yield f"  gone lately ({len(departed)}, latest last):"
    for proxy in departed:
        proxy_id = "" if proxy["id"] is None else f" {proxy['id']}"
        admin_id = "" if proxy["admin"] is None else f" {proxy['admin']}"
        yield (f"    {_when(proxy['time'])} proxy{proxy_id}{_name(proxy)} of "
               f"{proxy['admin_kind']} admin{admin_id}: {proxy['kind']}, client "
               f"{proxy['client']}: {proxy['reason']}")
        yield from _counters(proxy, "      ")


def _proxy(proxy: dict[str, Any]) -> Iterator[str]:
    proxy_id = "" if proxy["id"] is None else f" {proxy['id']}"
    yield (f"    proxy{proxy_id}{_name(proxy)}: {proxy['kind']}, {proxy['state']}, "
           f"client {proxy['client']}")
    yield from _filters(proxy["filters"], "      ")
    yield from _counters(proxy, "      ")


def _counters(proxy: dict[str, Any], indent: str) -> Iterator[str]:
    counters = proxy["counters"]
    if "depth" in counters:
        limit = proxy.get("queue_limit") or 0
        line = (f"{indent}queue {counters['depth']}/{limit if limit > 0 else 'unbounded'}, "
                f"delivered {counters['delivered']}, "
                f"discarded {counters['discarded'] + counters['removed']}, "
                f"expired {counters['expired']}, failed {counters['failed']}")
        if counters.get("unacknowledged_expired"):  # an Ack proxy's
            line += f", expired unacknowledged {counters['unacknowledged_expired']}"
        if counters.get("unsendable"):  # events omniORBpy cannot marshal (docs/orb.md)
            line += f", not sendable {counters['unsendable']}"
        if "not_typed" in counters:  # a typed proxy: no call of its interface
            line += f", not typed {counters['not_typed']}"
        last = proxy.get("last_failure")
        if last is not None:
            line += f", last failure {_when(last['time'])}: {last['reason']}"
        yield line
    elif counters:
        yield f"{indent}received {counters['received']}, rejected {counters['rejected']}"


def _filters(filters: list[dict[str, Any]], indent: str) -> Iterator[str]:
    for flt in filters:
        if flt.get("destroyed"):
            yield f"{indent}filter {flt['id']}: destroyed"
        elif flt.get("remote"):
            yield f"{indent}filter {flt['id']}: implemented by a client (not read)"
        elif not flt["constraints"]:
            yield f"{indent}filter {flt['id']} {flt['grammar']}: no constraints (matches nothing)"
        else:
            for text in flt["constraints"]:
                yield f"{indent}filter {flt['id']} {flt['grammar']}: {text}"


def _name(obj: dict[str, Any]) -> str:
    name = obj.get("name")
    # Quoted JSON-style; only unprintable characters escaped (docs/operations.md).
    return "" if name is None else f" {connect.printable(json.dumps(name, ensure_ascii=False))}"


def _properties(values: dict[str, Any]) -> str:
    return " ".join(f"{name}={json.dumps(value)}" for name, value in sorted(values.items()))


def _parked(count: int) -> str:
    return f" ({count} parked)" if count else ""


def _when(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
