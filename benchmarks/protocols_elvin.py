"""Elvin 4 NotifyEmit -> NotifyDeliver through one subscription, beside the CORBA relay.

Issue 22's performance table: "Elvin 4 NotifyEmit -> NotifyDeliver through
one subscription: >= 20k notifications/s; report the CORBA structured relay
beside it". One run measures both on the same machine:

* **Elvin**: the front end on 127.0.0.1 (in this process, on its own loop
  thread, with the in-process channel behind it). A subscriber connects and
  registers ``require(n) && severity > 2`` (every notification matches); a
  producer connects and writes N NotifyEmits of 5 attributes (int32, int64,
  real64, string, opaque), pre-encoded, in writes of 500 packets. The time
  runs from the first write to the subscriber reading the N-th
  NotifyDeliver; the subscriber counts frames by their length headers
  without decoding them, so the clients cost little of the process's CPU.
  Both clients are threads of this process (the 2-core VM is shared), over
  real TCP sockets.
* **CORBA relay**: the comparison line: an in-process structured push
  supplier -> the channel -> an in-process structured push consumer with
  the same ELVIN4 filter, N structured events with the same 5 properties,
  pushed one per call (no IIOP).

Run: ``.venv/bin/python benchmarks/protocols_elvin.py [--quick]``
(``run()`` returns the lines, for benchmarks/protocols_bench.py).
"""

from __future__ import annotations

import os
import platform
import socket
import statistics
import struct
import sys
import threading
import time
from typing import Any

try:
    from machine import cpu_model  # benchmarks/machine.py, beside this script
except ImportError:  # imported as benchmarks.protocols_elvin
    from benchmarks.machine import cpu_model

import omniORB  # noqa: F401 - omniORB before any COS stub module

import CosNotifyChannelAdmin as CA
import CosNotifyFilter as F

import cosnotify
from cosnotify.filter.elvin4.values import Int64
from cosnotify.protocols import Context
from cosnotify.protocols.elvin import encode_packet, start
from cosnotify.protocols.elvin.mapping import to_event
from cosnotify.protocols.elvin.packets import ConnRqst, NotifyEmit, SubAddRqst
from cosnotify.protocols.listener import Limits, Loop

EXPRESSION = "require(n) && severity > 2"
GOAL = 20_000


def _attributes(i: int) -> tuple[tuple[str, Any], ...]:
    return (("n", i), ("severity", Int64(4)), ("load", 0.5), ("host", "db42"),
            ("blob", b"\x00\x01\x02"))


def _read_until(sock: socket.socket, count: int) -> None:
    """Read frames until ``count`` whole ones arrived (length headers only)."""
    buffer = bytearray()
    seen = 0
    at = 0
    while seen < count:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise SystemExit(f"the router closed the subscriber after {seen} frames")
        buffer += chunk
        while len(buffer) - at >= 4:
            (length,) = struct.unpack_from(">I", buffer, at)
            if len(buffer) - at < 4 + length:
                break
            at += 4 + length
            seen += 1
        del buffer[:at]
        at = 0


def _reply(sock: socket.socket) -> bytes:
    head = b""
    while len(head) < 4:
        head += sock.recv(4 - len(head))
    (length,) = struct.unpack(">I", head)
    body = b""
    while len(body) < length:
        body += sock.recv(length - len(body))
    return body


def elvin_rate(events: int) -> float:
    """Notifications per second, NotifyEmit -> NotifyDeliver, one subscription."""
    factory = cosnotify.EventChannelFactory()
    loop = Loop(workers=4)
    fe = start(Context(factory, loop), "127.0.0.1", 0,
               limits=Limits(max_pending=256 << 20))
    try:
        sub = socket.create_connection(fe.address, timeout=60)
        pub = socket.create_connection(fe.address, timeout=60)
        for sock in (sub, pub):
            sock.sendall(encode_packet(ConnRqst(1, 4, 0, (("Send-Queue.Max-Length",
                                                          1 << 30),))))
            _reply(sock)
        sub.sendall(encode_packet(SubAddRqst(2, EXPRESSION)))
        assert _reply(sub)[:4] == struct.pack(">I", 61), "no SubRply"
        packets = [encode_packet(NotifyEmit(_attributes(i))) for i in range(events)]
        writes = [b"".join(packets[i:i + 500]) for i in range(0, events, 500)]
        done = threading.Event()
        reader = threading.Thread(target=lambda: (_read_until(sub, events), done.set()),
                                  daemon=True)
        reader.start()
        started = time.perf_counter()
        for data in writes:
            pub.sendall(data)
        if not done.wait(300):
            raise SystemExit("timed out")
        elapsed = time.perf_counter() - started
        sub.close()
        pub.close()
        return events / elapsed
    finally:
        fe.close()
        loop.close()
        factory.close(wait=False)


class _Sink:
    def __init__(self, expected: int) -> None:
        self.expected, self.count, self.done = expected, 0, threading.Event()

    def push_structured_event(self, event: Any) -> None:
        self.count += 1
        if self.count >= self.expected:
            self.done.set()

    def disconnect_structured_push_consumer(self) -> None:
        pass


def corba_rate(events: int) -> float:
    """Events per second, in-process structured push supplier -> channel -> consumer."""
    factory = cosnotify.EventChannelFactory()
    try:
        channel, _ = factory.create_channel([], [])
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        flt = channel._get_default_filter_factory().create_filter("ELVIN4")
        flt.add_constraints([F.ConstraintExp([], EXPRESSION)])
        proxy.add_filter(flt)
        sink = _Sink(events)
        proxy.connect_structured_push_consumer(sink)
        entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        entry.connect_structured_push_supplier(None)
        batch = [to_event(_attributes(i)) for i in range(events)]
        push = entry.push_structured_event
        started = time.perf_counter()
        for event in batch:
            push(event)
        if not sink.done.wait(300):
            raise SystemExit("timed out")
        return events / (time.perf_counter() - started)
    finally:
        factory.close(wait=False)


def run(quick: bool = False) -> list[str]:
    """The lines of one run: the machine, then both rates and their ratio."""
    events = 20_000 if quick else 50_000
    rounds = 3
    elvin = [elvin_rate(events) for _ in range(rounds)]
    corba = [corba_rate(events) for _ in range(rounds)]
    e, c = statistics.median(elvin), statistics.median(corba)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return [
        (f"protocols_elvin on {cpu_model()}, {cores} CPU(s), Python "
         f"{platform.python_version()}; load average {os.getloadavg()[0]:.2f}; "
         f"{events:,} notifications, median of {rounds}"),
        (f"  Elvin 4 NotifyEmit -> NotifyDeliver (TCP, 1 subscription): {e:10,.0f} /s  "
         f"goal >= {GOAL:,}: {'met' if e >= GOAL else 'NOT met'}  rounds: "
         + ", ".join(f"{x:,.0f}" for x in elvin)),
        (f"  CORBA structured relay (in process, ELVIN4 filter):      {c:10,.0f} /s  rounds: "
         + ", ".join(f"{x:,.0f}" for x in corba)),
        f"  Elvin / CORBA relay: {e / c:.2f}",
    ]


def main() -> None:
    for line in run(quick="--quick" in sys.argv):
        print(line)


if __name__ == "__main__":
    main()
