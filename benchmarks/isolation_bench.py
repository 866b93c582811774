"""Isolation: how late a healthy consumer's events are while another client hangs.

A ``NotificationServer`` (call timeout 1 s, default worker pool of 32) serves
one channel. Client A, a relay peer process (tests/peers: omniORB allows one
ORB per process, so each client is a process of its own whose objects relay
to servants here), connects ``--hanging`` structured push consumers (default
64) that never return from ``push``; client B, another peer process, connects
one healthy consumer. A supplier pushes an event
every 50 ms for ``--seconds`` (default 10); each carries its send time, and
the healthy consumer records how late it arrived. The script prints the
median, 99th percentile and maximum lateness, and the seconds during which
it exceeded 100 ms.

Each hanging push holds a worker until the call timeout; then the consumer is
retried with backoff and, after ``Retries`` (3) failures, disconnected. Before
lanes, 64 hanging consumers held all 32 workers for rounds of 1 s and the
healthy consumer waited behind them (docs/server.md).

Run: ``.venv/bin/python benchmarks/isolation_bench.py [--hanging N] [--seconds S]
[--per-client W]`` (``--per-client 1000`` switches the per-client lane off).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import statistics
import sys
import tempfile
import threading
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from machine import cpu_model  # benchmarks/machine.py, beside this script
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyComm__POA

from cosnotify.channel.service import ServiceConfig
from cosnotify.server import NotificationServer, ServerConfig
from tests.peers.harness import Peer, compile_relay_idl

STOP = threading.Event()


class Hanging(CosNotifyComm__POA.StructuredPushConsumer):
    def push_structured_event(self, event: Any) -> None:
        STOP.wait()

    def offer_change(self, added: Any, removed: Any) -> None:
        pass

    def disconnect_structured_push_consumer(self) -> None:
        pass


class Healthy(Hanging):
    def __init__(self) -> None:
        self.late: list[tuple[float, float]] = []  # (sent, lateness)

    def push_structured_event(self, event: Any) -> None:
        sent = event.filterable_data[0].value.value()
        self.late.append((sent, time.monotonic() - sent))


def connect(peer: Peer, channel: Any, servant: Any) -> None:
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
        CA.STRUCTURED_EVENT)
    proxy._narrow(CA.StructuredProxyPushSupplier).connect_structured_push_consumer(
        peer.remote(servant))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hanging", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--per-client", type=int, default=0,
                        help="ServiceConfig.max_workers_per_client (0: the default)")
    args = parser.parse_args()
    print(f"# {platform.node()}: {cpu_model()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, load {os.getloadavg()[0]:.1f}")
    server = NotificationServer(ServerConfig(
        port=0, call_timeout=1.0,
        service=ServiceConfig(max_workers_per_client=args.per_client))).start()
    stubs = pathlib.Path(tempfile.mkdtemp(prefix="isolation-"))
    compile_relay_idl(stubs)
    frozen, fine = Peer(server.orb, stubs), Peer(server.orb, stubs)
    try:
        channel, _ = server.orb.string_to_object(server.factory_url)._narrow(
            CA.EventChannelFactory).create_channel([], [])
        for _ in range(args.hanging):
            connect(frozen, channel, Hanging())
        healthy = Healthy()
        connect(fine, channel, healthy)
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        entry = proxy._narrow(CA.StructuredProxyPushConsumer)
        entry.connect_structured_push_supplier(None)
        header = N.EventHeader(N.FixedEventHeader(N.EventType("bench", "tick"), ""), [])
        start = time.monotonic()
        ticks = 0
        while time.monotonic() - start < args.seconds:
            entry.push_structured_event(N.StructuredEvent(
                header, [N.Property("sent", CORBA.Any(CORBA.TC_double, time.monotonic()))],
                CORBA.Any(CORBA.TC_null, None)))
            ticks += 1
            STOP.wait(max(0.0, start + ticks * 0.05 - time.monotonic()))
        STOP.wait(3.0)  # let the last events arrive
        late = [lateness for _, lateness in healthy.late]
        slow = {int(sent - start) for sent, lateness in healthy.late if lateness > 0.1}
        print(f"hanging consumers {args.hanging}, per-client lane "
              f"{server.factory.service.dispatcher.lane_limit}, workers "
              f"{server.factory.service.config.max_workers}, call timeout 1 s")
        print(f"healthy consumer: {len(late)} of {ticks} events; lateness median "
              f"{statistics.median(late) * 1000:.1f} ms, p99 "
              f"{statistics.quantiles(late, n=100)[98] * 1000:.1f} ms, max "
              f"{max(late) * 1000:.1f} ms; seconds with an event over 100 ms late: "
              f"{len(slow)}")
    finally:
        STOP.set()
        for peer in (frozen, fine):
            peer.close()
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
