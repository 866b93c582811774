"""Benchmark: persistent events in process, against best effort (docs/performance.md, "Durability").

Run: ``.venv/bin/python benchmarks/durability_inproc.py [--events 50000] [--runs 3]``,
or ``run()`` from benchmarks/durability_bench.py (part ``inproc``).

Strategy: the pure-Python channel, no server. One ``EventChannelFactory``
over an ``SQLiteStore`` (``synchronous=NORMAL``) per run, a new store file
each time; one channel, Persistent/Persistent or default QoS (best effort);
a push consumer servant of this process (a collocated call: no IIOP, and
omniORB does not let go of the GIL for it) behind a push proxy supplier,
and a push supplier calling the channel's proxy consumer directly. Two
shapes, as in the relay part: sequences of 100, and structured events one
per call. Timed from the first push until the consumer has the last event.
Cases take turns, each round a best-effort and a persistent run of a shape
back to back; the ratio is taken within a round.

What it shows: the supplier's thread and the delivery worker share the GIL,
and a thread that lets it go for an SQLite statement waits to take it back
while the other runs Python, so every statement of a write costs a wait
(cosnotify/store/sqlite_events.py). No timing is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import pathlib
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import omniORB  # noqa: F401 - puts the COS stubs on sys.path
from durability_bench import PERSISTENT_QOS, counter_event  # beside this script
from machine import cpu_model  # benchmarks/machine.py, beside this script
from omniORB import CORBA

import CosNotifyChannelAdmin as CA
import CosNotifyComm__POA

from cosnotify.channel.factory import EventChannelFactory
from cosnotify.store.sqlite import SQLiteStore

SHAPES = {"sequence": "sequences of 100", "structured": "structured, 1 event per call"}


class Counter:
    """Counts events; ``done`` once ``want`` have come."""

    def __init__(self, want: int) -> None:
        self.received = 0
        self.want = want
        self.done = threading.Event()

    def count(self, n: int) -> None:
        self.received += n
        if self.received >= self.want:
            self.done.set()

    def offer_change(self, added: Any, removed: Any) -> None:
        pass


class SequenceReceiver(Counter, CosNotifyComm__POA.SequencePushConsumer):
    def push_structured_events(self, events: Any) -> None:
        self.count(len(events))

    def disconnect_sequence_push_consumer(self) -> None:
        pass


class StructuredReceiver(Counter, CosNotifyComm__POA.StructuredPushConsumer):
    def push_structured_event(self, event: Any) -> None:
        self.count(1)

    def disconnect_structured_push_consumer(self) -> None:
        pass


@contextlib.contextmanager
def channel(folder: pathlib.Path, persistent: bool) -> Iterator[Any]:
    path = folder / f"store-{time.monotonic_ns()}.db"
    store = SQLiteStore(path, synchronous="NORMAL")
    factory = EventChannelFactory(store=store)
    try:
        made, _ = factory.create_channel(PERSISTENT_QOS if persistent else [], [])
        yield made
    finally:
        factory.close()
        store.close()


def one_run(orb: Any, folder: pathlib.Path, shape: str, persistent: bool, events: int) -> float:
    """Events/s from the first push until the consumer has them all."""
    poa = orb.resolve_initial_references("RootPOA")
    receiver = SequenceReceiver(events) if shape == "sequence" else StructuredReceiver(events)
    with channel(folder, persistent) as made:
        consumers = made._get_default_consumer_admin()
        suppliers = made._get_default_supplier_admin()
        if shape == "sequence":
            proxy, _ = consumers.obtain_notification_push_supplier(CA.SEQUENCE_EVENT)
            proxy.connect_sequence_push_consumer(poa.servant_to_reference(receiver))
            supplier, _ = suppliers.obtain_notification_push_consumer(CA.SEQUENCE_EVENT)
            supplier.connect_sequence_push_supplier(None)
            work = [[counter_event(n) for n in range(start, min(start + 100, events))]
                    for start in range(0, events, 100)]
            push = supplier.push_structured_events
        else:
            proxy, _ = consumers.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
            proxy.connect_structured_push_consumer(poa.servant_to_reference(receiver))
            supplier, _ = suppliers.obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
            supplier.connect_structured_push_supplier(None)
            work = [counter_event(n) for n in range(events)]
            push = supplier.push_structured_event
        started = time.perf_counter()
        for item in work:
            push(item)
        if not receiver.done.wait(300):
            raise RuntimeError(f"the consumer got {receiver.received} of {events} events")
        elapsed = time.perf_counter() - started
    return events / elapsed


def run(orb: Any, events: int = 50_000, runs: int = 3) -> dict[str, list[float]]:
    """Print the table; the per-round ratios by shape."""
    counts = {"sequence": events, "structured": max(1, events // 10)}
    print(f"\n== in process: push supplier -> channel over SQLiteStore (NORMAL) -> push consumer"
          f" of this process\n{cpu_model()}; {counts['sequence']:,} events in sequences,"
          f" {counts['structured']:,} structured, {runs} round(s) after a warm-up")
    ratios: dict[str, list[float]] = {shape: [] for shape in SHAPES}
    rates: dict[tuple[str, bool], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="durability-inproc-") as tmp:
        folder = pathlib.Path(tmp)
        for shape in SHAPES:  # warm-up
            for persistent in (False, True):
                one_run(orb, folder, shape, persistent, min(1000, counts[shape]))
        for _ in range(runs):
            for shape in SHAPES:
                best = one_run(orb, folder, shape, False, counts[shape])
                kept = one_run(orb, folder, shape, True, counts[shape])
                rates.setdefault((shape, False), []).append(best)
                rates.setdefault((shape, True), []).append(kept)
                ratios[shape].append(kept / best)
    print(f"{'events/s (median)':<34} {'best effort':>12} {'persistent':>12}  ratio (per round)")
    for shape, label in SHAPES.items():
        per_round = ratios[shape]
        print(f"{label:<34} {statistics.median(rates[shape, False]):>12,.0f}"
              f" {statistics.median(rates[shape, True]):>12,.0f}"
              f"  {statistics.median(per_round):.1%} ({min(per_round):.1%}-{max(per_round):.1%})")
    return ratios


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=50_000, help="events per sequence run")
    parser.add_argument("--runs", type=int, default=3, help="rounds after a warm-up")
    args = parser.parse_args()
    orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)
    orb.resolve_initial_references("RootPOA")._get_the_POAManager().activate()
    run(orb, args.events, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
