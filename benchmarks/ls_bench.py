"""``cosnotify ls`` on a service with 1,000 proxies (the goal: under 1 s).

A ``cosnotify serve`` child process holds N proxy suppliers (default 1,000)
over 10 channels: half are push suppliers connected to a consumer object in
this process (so each has a client address to print), half pull suppliers;
every other one has a filter with a constraint. Then, side by side in this
run, the median of 5 of each:

- ``ls``: the whole ``cosnotify ls URL`` command, a fresh process (Python
  start-up, imports, the ORB, one snapshot call, the text);
- ``floor``: ``cosnotify ls`` against an empty service, the same process
  start-up with nothing to read: what ``ls`` costs before it has work;
- ``snapshot``: the ``CosNotifyMonitor`` snapshot call alone, from this process.

Run: ``.venv/bin/python benchmarks/ls_bench.py [--proxies N]``
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from machine import cpu_model  # benchmarks/, beside this script
from omniORB import CORBA

import CosNotification
import CosNotifyChannelAdmin as CA
import CosNotifyComm__POA
import CosNotifyFilter
import CosNotifyMonitor

import cosnotify.corba  # noqa: F401 - omniORB first

ROOT = Path(__file__).resolve().parents[1]


class Consumer(CosNotifyComm__POA.StructuredPushConsumer):
    """One object every push proxy delivers to (nothing is pushed here)."""

    def push_structured_event(self, event: Any) -> None:
        pass

    def offer_change(self, added: Any, removed: Any) -> None:
        pass

    def disconnect_structured_push_consumer(self) -> None:
        pass


def serve(folder: Path) -> tuple[subprocess.Popen[str], str]:
    ior_file = folder / "factory.ior"
    child = subprocess.Popen([sys.executable, "-m", "cosnotify", "serve", "--endpoint",
                              "127.0.0.1:0", "--ior-file", str(ior_file)],
                             stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert child.stderr is not None
    for line in child.stderr:
        if "serving" in line:
            return child, str(ior_file)
    raise SystemExit("cosnotify serve did not start")


def populate(orb: Any, ior_file: str, proxies: int) -> None:
    poa = orb.resolve_initial_references("RootPOA")
    poa._get_the_POAManager().activate()
    consumer = Consumer()._this()
    factory = orb.string_to_object(Path(ior_file).read_text())._narrow(CA.EventChannelFactory)
    channels = [factory.create_channel([], [])[0] for _ in range(10)]
    for n in range(proxies):
        admin = channels[n % len(channels)]._get_default_consumer_admin()
        if n % 2:
            proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
            proxy = proxy._narrow(CA.StructuredProxyPushSupplier)
            proxy.connect_structured_push_consumer(consumer)
        else:
            proxy, _ = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        if n % 4 < 2:
            flt = channels[0]._get_default_filter_factory().create_filter("EXTENDED_TCL")
            flt.add_constraints([CosNotifyFilter.ConstraintExp(
                [CosNotification.EventType("Telescope", "Alarm")], f"$severity > {n % 7}")])
            proxy.add_filter(flt)


def timed_ls(ior_file: str) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cosnotify", "ls", ior_file],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"cosnotify ls failed: {done.stderr}")
    return elapsed


def median_of(runs: int, measure: Any) -> float:
    return statistics.median(measure() for _ in range(runs))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--proxies", type=int, default=1000)
    args = parser.parse_args()
    orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:",
                          "-ORBgiopMaxMsgSize", str(64 << 20)], CORBA.ORB_ID)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "empty").mkdir()
        (Path(tmp) / "full").mkdir()
        empty, empty_ior = serve(Path(tmp) / "empty")
        full, full_ior = serve(Path(tmp) / "full")
        try:
            populate(orb, full_ior, args.proxies)
            monitor = orb.string_to_object(Path(full_ior).read_text())._narrow(
                CosNotifyMonitor.EventChannelFactory)
            size = len(monitor.snapshot([]))

            def snapshot() -> float:
                started = time.perf_counter()
                monitor.snapshot([])
                return time.perf_counter() - started

            floor = median_of(5, lambda: timed_ls(empty_ior))
            whole = median_of(5, lambda: timed_ls(full_ior))
            call = median_of(5, snapshot)
        finally:
            for child in (empty, full):
                child.terminate()
                child.wait(30)
    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"cosnotify ls, {args.proxies} proxies over 10 channels (median of 5 runs each)")
    print(f"  ls (whole command)       {whole * 1000:8.0f} ms   goal < 1000 ms: "
          f"{'met' if whole < 1.0 else 'MISSED'}")
    print(f"  floor (empty service)    {floor * 1000:8.0f} ms   ls / floor = {whole / floor:.2f}")
    print(f"  snapshot call alone      {call * 1000:8.0f} ms   ({size / 1024:.0f} KiB of JSON)")


if __name__ == "__main__":
    main()
