"""What the counters (docs/operations.md) cost: channel_bench's 1-consumer push
case with ``ServiceConfig(counters=True)`` and ``counters=False`` side by side.

Runs alternate on and off, so drift in the machine hits both alike; the
median deliveries per CPU second of each are compared, and the ratio
(on / off; 1.0 = free, 0.95 = 5% slower) printed with the machine. Pinned to
one CPU unless ``--all-cores``.

Run: ``.venv/bin/python benchmarks/counters_bench.py [--quick] [--all-cores]``
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import threading
import time

from channel_bench import Sink, event, machine  # benchmarks/, beside this script

import CosNotifyChannelAdmin as CA

import cosnotify


def run(counters: bool, events: int) -> tuple[float, float]:
    """Deliveries per wall second and per CPU second, one structured push consumer."""
    factory = cosnotify.EventChannelFactory(cosnotify.ServiceConfig(counters=counters))
    channel, _ = factory.create_channel([], [])
    done, shared = threading.Event(), [0]
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_push_consumer(Sink(done, shared, events))
    entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    entry.connect_structured_push_supplier(None)
    batch = [event(i) for i in range(events)]
    gc.collect()
    started, cpu_started = time.perf_counter(), time.process_time()
    push = entry.push_structured_event
    for item in batch:
        push(item)
    if not done.wait(300):
        raise SystemExit(f"timed out: {shared[0]} of {events} delivered")
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    factory.close(wait=False)
    return events / wall, events / cpu


def main() -> None:
    quick = "--quick" in sys.argv
    if "--all-cores" not in sys.argv and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    events, rounds = (25_000, 5) if quick else (100_000, 9)
    print(f"counters_bench on {machine()}; structured push -> 1 push consumer, "
          f"{events:,} events, {rounds} rounds alternating on/off; "
          f"load average {os.getloadavg()[0]:.2f}")
    results: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    run(True, events // 10)  # warm up imports and code paths
    for i in range(rounds):
        for counters in ((True, False) if i % 2 else (False, True)):
            results[counters].append(run(counters, events))
    for counters in (False, True):
        wall = statistics.median(r[0] for r in results[counters])
        cpu = statistics.median(r[1] for r in results[counters])
        print(f"counters={'on ' if counters else 'off'}  {wall:>12,.0f} deliveries/wall s"
              f"  {cpu:>12,.0f} deliveries/CPU s")
    on = statistics.median(r[1] for r in results[True])
    off = statistics.median(r[1] for r in results[False])
    print(f"ratio on/off (CPU): {on / off:.3f}  ({(1 - on / off) * 100:+.1f}% cost)")


if __name__ == "__main__":
    main()
