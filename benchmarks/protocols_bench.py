"""Benchmark: the seeds' protocols as cosnotify front ends (issue 22; docs/protocols.md).

Run: ``.venv/bin/python benchmarks/protocols_bench.py [--only eventer,elvin,...]``.

Strategy: one run, one machine, each protocol's lines from its own module,
every comparison measured side by side in that module:

* ``protocols_eventer.py``: register (batches of 1 and of 100) and a query
  (type wildcard + time range, max 100 of 10,000 stored) through
  hat-event 0.8.17's own client, against cosnotify's Eventer front end and
  against hat-event's own server (lmdb backend);
* ``protocols_elvin.py``: NotifyEmit -> NotifyDeliver through one
  subscription, with the CORBA structured relay beside it;
* ``protocols_eventheap.py``: putEvent + getEvent round trips over the wire,
  beside the in-process tuple-space calls;
* ``protocols_oes.py``: POST round trips with notifications delivered to a
  contact, beside the in-process ``Tree.post``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pathlib
import platform
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from machine import cpu_model

PROTOCOLS = ("eventer", "elvin", "eventheap", "oes")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(PROTOCOLS),
                        help="the protocols to run, comma-separated (default: all)")
    args = parser.parse_args()
    wanted = [name for name in args.only.split(",") if name]
    unknown = sorted(set(wanted) - set(PROTOCOLS))
    if unknown:
        parser.error(f"unknown protocols: {', '.join(unknown)}")
    print(f"{cpu_model()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.1f}")
    for name in wanted:
        module = importlib.import_module(f"protocols_{name}")
        started = time.perf_counter()
        print(f"\n== {name} ==")
        for line in module.run():
            print(line)
        print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
