"""Soak: a consumer that never returns must not grow memory or slow the others.

MaxQueueLength is 10,000 (RejectNewEvents FALSE, so the channel discards by
DiscardPolicy), one structured push consumer blocks forever inside its first
push, and two others consume normally. Suppliers push 1,000,000 events. Every
100,000 events the script prints the process RSS, the events queued in the
channel, and how many events per second the healthy consumers received in
that slice.

Run: ``.venv/bin/python benchmarks/queue_soak.py [TOTAL]``
"""

from __future__ import annotations

import os
import platform
import sys
import threading
import time
from typing import Any

from machine import cpu_model  # benchmarks/machine.py, beside this script
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA

import cosnotify


def rss_mib() -> float:
    with open(f"/proc/{os.getpid()}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def machine() -> str:
    return f"{cpu_model()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


class Stuck:
    """Enters push_structured_event and never comes back (until the run ends)."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def push_structured_event(self, event: Any) -> None:
        self.release.wait()

    def offer_change(self, added: Any, removed: Any) -> None:
        pass

    def disconnect_structured_push_consumer(self) -> None:
        pass


class Counter:
    def __init__(self) -> None:
        self.count = 0

    def push_structured_event(self, event: Any) -> None:
        self.count += 1

    def offer_change(self, added: Any, removed: Any) -> None:
        pass

    def disconnect_structured_push_consumer(self) -> None:
        pass


def main() -> None:
    total = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    print(f"queue_soak: {total:,} events, MaxQueueLength 10,000, one stuck consumer")
    print(f"machine: {machine()}")
    factory = cosnotify.EventChannelFactory()
    channel, _ = factory.create_channel(
        [N.Property("DiscardPolicy", CORBA.Any(CORBA.TC_short, N.FifoOrder))],
        [N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 10_000))])
    admin = channel._get_default_consumer_admin()
    stuck = Stuck()
    healthy = [Counter(), Counter()]
    for consumer in [stuck, *healthy]:
        proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(consumer)
    entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    entry.connect_structured_push_supplier(None)
    event = N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("Soak", "Tick"), ""), []),
        [N.Property("n", CORBA.Any(CORBA.TC_long, 0))], CORBA.Any(CORBA.TC_string, "x" * 100))
    print(f"{'events':>10} {'RSS MiB':>8} {'queued':>7} {'healthy ev/s':>13}")
    start_rss = rss_mib()
    slice_start = time.perf_counter()
    before = [c.count for c in healthy]
    step = 100_000
    for i in range(1, total + 1):
        entry.push_structured_event(event)
        if i % step == 0:
            now = time.perf_counter()
            rates = [(c.count - b) / (now - slice_start) for c, b in zip(healthy, before)]
            print(f"{i:>10,} {rss_mib():>8.1f} {channel._account.count:>7,} "
                  f"{min(rates):>13,.0f}")
            slice_start, before = now, [c.count for c in healthy]
    print(f"RSS grew {rss_mib() - start_rss:+.1f} MiB over the run")
    stuck.release.set()
    factory.close(wait=False)


if __name__ == "__main__":
    main()
