"""Benchmark: what the Spark bridge's two subscriptions cost to pull, and pulling in parallel.

Run: ``.venv/bin/python benchmarks/ack_pull_bench.py [--events 6000] [--rounds 3]``.

Strategy: ``cosnotify serve --db`` (``--db-sync normal``) on loopback, one
persistent channel, TMF-814-style alarms (spark_bench.py's workload) pushed
beforehand, untimed. Each puller is a process of its own, as Spark's source
runner is, started and connected before the clock starts; only pulling
(and acknowledging) is timed, no conversion to rows:

* **sequence**: a ``create_subscription`` proxy (SequenceProxyPullSupplier,
  at most once), ``try_pull_structured_events(1000)``;
* **ack**: a ``create_ack_subscription`` proxy (StructuredProxyPullSupplierAck,
  exactly once), one ``try_pull_structured_event`` per event, an
  ``acknowledge`` per 1,000;
* **ack x2**: two acknowledging subscriptions of the same channel, each
  pulled by its own process at the same time: the total rate against one.

Cases take turns within a round (drift on a shared machine hits them
alike); each round pushes the events again. The figures back two choices of
docs/spark.md: the structured Ack proxy's per-event pull against a sequence
pull, and not splitting a subscription over several proxies.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time
from statistics import median

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from machine import cpu_model, print_rates  # benchmarks/machine.py, beside this script
from omniORB import CORBA
from spark_bench import alarm  # the same workload

import CosNotification as N
import CosNotifyChannelAdmin as CA

import spark_bridge
from spark_bridge import connect
from tests.interop.notify import harness

PERSISTENT_QOS = [N.Property("ConnectionReliability", CORBA.Any(CORBA.TC_short, N.Persistent)),
                  N.Property("EventReliability", CORBA.Any(CORBA.TC_short, N.Persistent))]

#: A puller process: connects, says "ready", pulls COUNT events on "go", prints seconds.
PULLER = '''
import sys, time
sys.path.insert(0, sys.argv[1])
from spark_bridge import connect
from spark_bridge.acked import AckPuller
kind, url, admin, proxy, count = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
address = connect.ChannelAddress(url, None, admin)
if kind == "ack":
    puller = AckPuller.open(address, proxy)
else:
    puller = connect.PullSubscription.open(address, None, proxy, 1000)
print("ready", flush=True)
sys.stdin.readline()
start, got = time.perf_counter(), 0
while got < count:  # never more than count: a subscription may hold more (ack x2)
    if kind == "ack":
        given = puller.pull(min(1000, count - got))
        puller.acknowledge([number for number, _ in given])
    else:
        given = puller.pull(min(1000, count - got))
    got += len(given)
print(time.perf_counter() - start, flush=True)
'''


def pullers(kind: str, url: str, subs: list[tuple[int, int]], count: int) -> float:
    """Seconds from "go" until every puller has its ``count`` events."""
    procs = [subprocess.Popen([sys.executable, "-c", PULLER, str(ROOT), kind, url, str(admin),
                               str(proxy), str(count)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=ROOT)
             for admin, proxy in subs]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        start = time.perf_counter()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        for proc in procs:
            assert proc.stdout is not None
            float(proc.stdout.readline())
        return time.perf_counter() - start
    finally:
        for proc in procs:
            proc.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=6000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    n = args.events
    print(f"{cpu_model()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.1f}")
    orb = connect.client_orb()
    with tempfile.TemporaryDirectory() as scratch:
        server = harness.NotifyServer(pathlib.Path(scratch), extra=[
            "--db", str(pathlib.Path(scratch) / "store.db"), "--db-sync", "normal"])
        try:
            factory = orb.string_to_object(server.ior)._narrow(CA.EventChannelFactory)
            channel = factory.create_channel(PERSISTENT_QOS, [])[0]
            url = orb.object_to_string(channel)
            sequence = spark_bridge.create_subscription(url, orb=orb)
            acks = [spark_bridge.create_ack_subscription(url, orb=orb) for _ in range(2)]
            push = channel._get_default_supplier_admin().obtain_notification_push_consumer(
                CA.SEQUENCE_EVENT)[0]._narrow(CA.SequenceProxyPushConsumer)
            push.connect_sequence_push_supplier(None)
            events = [alarm(i) for i in range(n)]
            rates: dict[str, list[float]] = {"sequence": [], "ack": [], "ack x2": []}
            for _ in range(args.rounds):
                for at in range(0, n, 500):  # each subscription gets them all
                    push.push_structured_events(events[at:at + 500])
                rates["sequence"].append(n / pullers("sequence", url, [(0, sequence)], n))
                rates["ack"].append(n / pullers("ack", url, [(acks[0].admin_id,
                                                              acks[0].proxy_id)], n))
                # acks[1] still holds this round's events; pushed again, acks[0] holds
                # n too, and both pull n at once.
                for at in range(0, n, 500):
                    push.push_structured_events(events[at:at + 500])
                rates["ack x2"].append(2 * n / pullers(
                    "ack", url, [(a.admin_id, a.proxy_id) for a in acks], n))
                pullers("sequence", url, [(0, sequence)], n)  # drain what the round left
                pullers("ack", url, [(acks[1].admin_id, acks[1].proxy_id)], n)
        finally:
            server.stop()
    print(f"\n{n:,} events pulled per puller, {args.rounds} round(s); events/s, median "
          "(higher is better)")

    print_rates(rates)
    print(f"  ack / sequence: {median(rates['ack']) / median(rates['sequence']):.0%};  "
          f"ack x2 (total) / ack: {median(rates['ack x2']) / median(rates['ack']):.0%}")


if __name__ == "__main__":
    main()
