"""Benchmark: the Event Heap tuple space on a channel (docs/history.md, "The Event Heap tuple space").

Run: ``.venv/bin/python benchmarks/history_tuplespace.py [--tuples 100000] [--ops 5000]``,
or ``run()`` from benchmarks/history_bench.py.

Strategy, in process, one run (issue 21's goal: removeEvent with a 5-field
template over 100k live tuples, >= 2,000 ops/s; getEvent and snoopEvents
reported too):

* **Fill.** A sequence supplier pushes ``tuples`` events (batches of 1,000)
  into a channel with a tuple space, over an SQLite store (ids in blocks from
  its counter), and the same events into a channel without one, side by side:
  the ratio is what keeping tuples costs the push. Each event: EventType
  ``T<n%10>``, ``Source`` ``s<n%100>``, ``severity`` int ``(n//100)%10``,
  ``host`` string, ``load`` double, one more property.
* **removeEvent.** ``ops`` calls, each with a 5-field template
  ``EventType = "T..", Source = "s..", severity: int = .., host: string = ?,
  load: double = ?`` (1,000 distinct templates, each matching 100 tuples,
  compiled once before the clock starts), over the live tuples (``tuples``
  at the start, ``tuples - ops`` at the end); beside it, what a full scan of
  the live tuples with the same compiled template costs per call.
* **getEvent** (the same templates, anonymous: the tuple stays) and, as a
  client (sequenced: each call returns the next tuple the client has not
  received); **snoopEvents** with a template matching 100 tuples.
* **One template, sequenced** (review finding 2): a client calls getEvent
  with ``EventType = "T3"`` (a tenth of the tuples) ``ops`` times, each call
  returning the next T3 it has not received, then ``ops`` times more once it
  has received them all; and the push rate of ``tuples // 5`` events of
  another type alone, then while that client polls in a loop, side by side.
"""

from __future__ import annotations

import argparse
import gc
import os
import pathlib
import platform
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any, Self

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import omniORB  # noqa: F401 - puts the COS stubs on sys.path
from machine import cpu_model
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA

from cosnotify.channel.factory import EventChannelFactory
from cosnotify.store.sqlite import SQLiteStore
from cosnotify.tuplespace import TupleSpace
from cosnotify.tuplespace.templates import compile_templates


def event(n: int, type_name: str | None = None) -> Any:
    fd = [N.Property("Source", CORBA.Any(CORBA.TC_string, f"s{n % 100}")),
          N.Property("severity", CORBA.Any(CORBA.TC_long, (n // 100) % 10)),
          N.Property("host", CORBA.Any(CORBA.TC_string, f"h{n % 7}")),
          N.Property("load", CORBA.Any(CORBA.TC_double, n * 0.5)),
          N.Property("n", CORBA.Any(CORBA.TC_long, n))]
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("Bench", type_name or f"T{n % 10}"),
                                         f"e{n}"),
                      [N.Property("Priority", CORBA.Any(CORBA.TC_short, 0))]),
        fd, CORBA.Any(CORBA.TC_null, None))


#: The one template a sequenced client reads again and again (a tenth of the tuples).
ONE = 'EventType = "T3"'


def template(i: int) -> str:
    """Five fields (three actual, two formal) matching the 100 events n with n % 100 ==
    i % 100 and (n // 100) % 10 == (i // 100) % 10."""
    source = i % 100
    return (f'EventType = "T{source % 10}", Source = "s{source}", '
            f"severity: int = {(i // 100) % 10}, host: string = ?, load: double = ?")


def _supplier(channel: Any) -> Any:
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.SEQUENCE_EVENT)
    proxy.connect_sequence_push_supplier(None)
    return proxy


class _FullCollections:
    """Seconds the collector spent in full (generation 2) collections while active."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._start

    def __enter__(self) -> Self:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)


def _fill(channel: Any, events: list[Any]) -> tuple[float, float]:
    """Events/s pushing ``events``, and the seconds of full collections meanwhile."""
    push = _supplier(channel)
    with _FullCollections() as collections:
        start = time.perf_counter()
        for at in range(0, len(events), 1000):
            push.push_structured_events(events[at:at + 1000])
        rate = len(events) / (time.perf_counter() - start)
    return rate, collections.seconds


def _contention(channel: Any, client: Any, tuples: int, extra: int) -> tuple[float, float, int]:
    """Events/s pushing ``extra`` events of another type alone, then while ``client``
    polls ONE in a loop (finding nothing new); and the polls made."""
    alone, _ = _fill(channel, [event(tuples + n, "X") for n in range(extra)])
    stop = threading.Event()
    polls = [0]

    def poll() -> None:
        while not stop.is_set():
            client.get_event(ONE)
            polls[0] += 1

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        polled, _ = _fill(channel, [event(tuples + extra + n, "X") for n in range(extra)])
    finally:
        stop.set()
        poller.join()
    return alone, polled, polls[0]


def _rate(ops: int, call: Callable[[int], Any]) -> tuple[float, int]:
    """Calls per second, and how many returned something."""
    found = 0
    start = time.perf_counter()
    for i in range(ops):
        if call(i):
            found += 1
    return ops / (time.perf_counter() - start), found


def run(tuples: int = 100_000, ops: int = 5_000, machine_line: str | None = None) -> list[str]:
    """Measure, print and return the report's lines (module docstring)."""
    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    if machine_line is None:
        machine_line = (f"{cpu_model()}, {os.cpu_count()} CPUs, Python "
                        f"{platform.python_version()}, load {os.getloadavg()[0]:.1f}")
    say(machine_line)
    events = [event(n) for n in range(tuples)]
    texts = [template(i) for i in range(1_000)]
    with tempfile.TemporaryDirectory() as scratch:
        store = SQLiteStore(pathlib.Path(scratch) / "store.db", synchronous="NORMAL")
        try:
            with EventChannelFactory(store=store) as factory:
                plain, _ = factory.create_channel([], [])
                channel, _ = factory.create_channel([], [])
                extra = max(tuples // 5, 1_000)
                space = TupleSpace.of(channel, max_tuples=tuples + ops + 2 * extra)
                without, gc_without = _fill(plain, events)
                with_space, gc_with = _fill(channel, events)
                say(f"\ntuple space, {space.live_count:,} live tuples (pushed in batches of "
                    "1,000 by a sequence supplier)")
                say(f"  push into a channel with a tuple space: {with_space:10,.0f} events/s; "
                    f"without: {without:,.0f}; ratio {with_space / without:.0%} (full "
                    f"collections meanwhile: {gc_with:.2f} s with, {gc_without:.2f} s without)")
                for text in texts:  # compiled once, as a client reusing its templates
                    compile_templates(text)
                space.get_event(texts[0])  # the indexes on Source and severity are made
                rate, found = _rate(ops, lambda i: space.get_event(texts[i % 1000]))
                say(f"  getEvent, 5-field template:            {rate:10,.0f} ops/s "
                    f"({found:,} of {ops:,} found a tuple)")
                client = space.connect("bench")
                rate, found = _rate(ops, lambda i: client.get_event(texts[i % 1000]))
                say(f"  getEvent as a client (sequenced):      {rate:10,.0f} ops/s "
                    f"({found:,} of {ops:,} found a tuple)")
                one = space.connect("bench-one")
                rate, found = _rate(ops, lambda i: one.get_event(ONE))
                say(f"  getEvent as a client, one template again and again: {rate:,.0f} ops/s "
                    f"({found:,} of {ops:,} found the next {ONE} it had not received)")
                while one.get_event(ONE) is not None:
                    pass
                rate, found = _rate(ops, lambda i: one.get_event(ONE))
                say(f"  ... once it has received every one:    {rate:10,.0f} ops/s "
                    f"({found:,} found)")
                alone, polled, polls = _contention(channel, one, tuples, extra)
                say(f"  push while that client polls:          {polled:10,.0f} events/s; "
                    f"alone: {alone:,.0f}; ratio {polled / alone:.0%} (the poller made "
                    f"{polls:,} calls; both share the GIL)")
                rate, found = _rate(max(ops // 10, 1), lambda i: space.snoop_events(
                    texts[i % 1000]))
                say(f"  snoopEvents, 5-field template (100 each): {rate:7,.0f} ops/s")
                before = space.live_count
                rate, found = _rate(ops, lambda i: space.remove_event(texts[i % 1000]))
                say(f"  removeEvent, 5-field template:         {rate:10,.0f} ops/s over "
                    f"{before:,} -> {space.live_count:,} live tuples ({found:,} removed)"
                    "   (goal: >= 2,000)")
                compiled = compile_templates(texts[:10])
                live = list(space._table.all.lives())
                start = time.perf_counter()
                for t in compiled:
                    for item in live:
                        t.matches(item)
                scan = len(compiled) / (time.perf_counter() - start)
                say(f"  the same template by a full scan:      {scan:10,.1f} ops/s; "
                    f"the index is {rate / scan:,.0f}x faster")
                channel.destroy()
                plain.destroy()
        finally:
            store.close()
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tuples", type=int, default=100_000)
    parser.add_argument("--ops", type=int, default=5_000)
    args = parser.parse_args()
    run(args.tuples, args.ops)
    return 0


if __name__ == "__main__":
    sys.exit(main())
