"""Event Heap putEvent + getEvent round trips over the wire, beside the in-process calls.

Issue 22's performance table: "Event Heap putEvent + getEvent round trips:
reported". One run, one machine, side by side:

* **Wire, one at a time**: the front end on 127.0.0.1 (in this process, on
  its own loop thread, the in-process channel and tuple space behind it). One
  client thread over a real TCP socket sends putEvent (an event as Tables 1-3
  make a client post it, plus ``n: int = i`` and two more fields), reads the
  ACK, sends getEvent with the template ``EventType = "Bench", n: int = i``
  (and Table 1's template values), and reads the event back: one round trip
  pair per ``i``. Rate and latency percentiles of the pair.
* **Wire, pipelined**: the same pairs, 100 putEvents written at once, their
  ACKs read, then 100 getEvents and their replies (the seed's "multiple
  simultaneous outstanding requests").
* **In process**: ``TupleSpace.put_event`` + ``TupleSpace.get_event`` with
  the same StructuredEvents and the same grammar templates the front end
  makes (no socket, no codec): the ratio wire / in-process is the cost of
  the protocol front end.

Run: ``.venv/bin/python benchmarks/protocols_eventheap.py [--quick]``
(``run()`` returns the lines, for benchmarks/protocols_bench.py).
"""

from __future__ import annotations

import os
import pathlib
import platform
import statistics
import sys
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

try:
    from machine import cpu_model  # benchmarks/machine.py, beside this script
except ImportError:  # imported as benchmarks.protocols_eventheap
    from benchmarks.machine import cpu_model

import omniORB  # noqa: F401 - puts the COS stubs on sys.path

import cosnotify
from cosnotify.protocols import Context
from cosnotify.protocols.eventheap import start
from cosnotify.protocols.eventheap.mapping import event_of, template_of
from cosnotify.protocols.listener import Loop
from cosnotify.tuplespace import TupleSpace
from tests.protocols.eventheap.client import EventHeapClient

BATCH = 100


def _setup() -> tuple[Any, Loop, Any]:
    factory = cosnotify.EventChannelFactory()
    loop = Loop()
    front_end = start(Context(factory, loop), "127.0.0.1", 0)
    return factory, loop, front_end


def _teardown(factory: Any, loop: Loop, front_end: Any) -> None:
    front_end.close()
    loop.close()
    factory.close()


def _templates(client: EventHeapClient, count: int, distinct: bool) -> list[Any]:
    """``n: int = i`` per pair (each a new template text: the space compiles it), or one
    ``host: string = "db42"`` template for all (compiled once)."""
    if distinct:
        return [client.template("Bench", n=i) for i in range(count)]
    return [client.template("Bench", host="db42")] * count


def _wire_serial(count: int, distinct: bool) -> tuple[float, list[float]]:
    factory, loop, front_end = _setup()
    try:
        client = EventHeapClient(front_end.address, "bench")
        events = [client.event("Bench", n=i, host="db42", load=0.5) for i in range(count)]
        templates = _templates(client, count, distinct)
        pairs: list[float] = []
        started = time.perf_counter()
        for event, template in zip(events, templates, strict=True):
            t0 = time.perf_counter()
            client.put(event)
            reply = client.call("getEvent", [template])
            pairs.append(time.perf_counter() - t0)
            if not reply.tuples:
                raise SystemExit("getEvent found nothing")
        elapsed = time.perf_counter() - started
        client.close()
        return count / elapsed, pairs
    finally:
        _teardown(factory, loop, front_end)


def _wire_pipelined(count: int, distinct: bool) -> float:
    factory, loop, front_end = _setup()
    try:
        client = EventHeapClient(front_end.address, "bench")
        events = [client.event("Bench", n=i, host="db42", load=0.5) for i in range(count)]
        templates = _templates(client, count, distinct)
        started = time.perf_counter()
        for at in range(0, count, BATCH):
            for event in events[at:at + BATCH]:
                client.send("putEvent", [event])
            for _ in events[at:at + BATCH]:
                client.receive()
            for template in templates[at:at + BATCH]:
                client.send("getEvent", [template])
            for _ in templates[at:at + BATCH]:
                if not client.receive().tuples:
                    raise SystemExit("getEvent found nothing")
        elapsed = time.perf_counter() - started
        client.close()
        return count / elapsed
    finally:
        _teardown(factory, loop, front_end)


def _in_process(count: int, distinct: bool) -> float:
    with cosnotify.EventChannelFactory() as factory:
        channel, _ = factory.create_channel([], [])
        space = TupleSpace.of(channel)
        maker = EventHeapClient.__new__(EventHeapClient)  # its builders only: no socket
        maker.source, maker.application, maker.device, maker.session_id = (
            "bench", "bench", "localhost", 1)
        maker._numbers = iter(range(1, count + 1))  # type: ignore[assignment]
        events = [event_of(maker.event("Bench", n=i, host="db42", load=0.5))
                  for i in range(count)]
        templates = [[template_of(t)] for t in _templates(maker, count, distinct)]
        started = time.perf_counter()
        for event, template in zip(events, templates, strict=True):
            space.put_event(event)
            if space.get_event(template) is None:
                raise SystemExit("get_event found nothing")
        return count / (time.perf_counter() - started)


def run(quick: bool = False) -> list[str]:
    count = 1_000 if quick else 5_000
    lines = [
        (f"machine: {cpu_model()}, {os.cpu_count()} CPUs, Python "
         f"{platform.python_version()}, load {os.getloadavg()[0]:.1f}"),
        (f"putEvent + getEvent pairs, {count} per line, a 13-field event, a 6-field "
         "template; the heap grows to that many tuples"),
    ]
    for distinct, title in ((False, "one template for all pairs (compiled once)"),
                            (True, "a new template per pair (n: int = i: each compiled)")):
        serial, pairs = _wire_serial(count, distinct)
        pipelined = _wire_pipelined(count, distinct)
        local = _in_process(count, distinct)
        ms = sorted(p * 1000 for p in pairs)
        p50 = statistics.median(ms)
        p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
        lines += [
            f"{title}:",
            (f"  wire, one at a time  : {serial:8,.0f} pairs/s  (p50 {p50:.2f} ms, "
             f"p99 {p99:.2f} ms a pair)"),
            f"  wire, {BATCH} in flight  : {pipelined:8,.0f} pairs/s",
            f"  in process           : {local:8,.0f} pairs/s  (put_event + get_event)",
            (f"  wire / in process    : {serial / local:.2f} one at a time, "
             f"{pipelined / local:.2f} pipelined"),
        ]
    return lines


def main() -> None:
    for line in run(quick="--quick" in sys.argv):
        print(line)


if __name__ == "__main__":
    main()
