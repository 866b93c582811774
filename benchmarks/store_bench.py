"""Events per second into and out of the SQLite store, beside plain SQLite doing the same.

Cases, each on a new store in a new temporary directory, run ``--runs``
times in turn (so drift on a shared machine hits every case alike), with
the median printed:

* **floor**: plain ``sqlite3`` writing the store's rows (an ``events`` row
  and a ``pending`` row per event, in the store's current schema) in the same
  WAL mode and ``synchronous`` level, ``--batch`` events per transaction,
  one commit each. Nothing can store these events faster through SQLite.
* **add_events, batches**: ``SQLiteStore.add_events`` of ``--batch``
  events, one caller.
* **add_events of 1, 1 caller**: one event per call, so one commit (and
  one fsync) per event: ``--single`` events.
* **add_events of 1, 4 callers**: four threads doing the same at once;
  group commit lets concurrent calls share a commit.
* **pending paging**: reading every event of the batch case back with
  ``pending(after=..., limit=1000)``.

Printed ratios, each taken within a round and then the median and range over
the rounds (a round's cases run back to back, so a slow spell of the disk
hits both sides of a ratio): add_events / floor (the store's overhead at
equal batch size), and 4 callers / 1 caller (what group commit buys). A
commit costs an fsync, which depends on the disk under ``--dir``: the
filesystem is printed.

Run: ``.venv/bin/python benchmarks/store_bench.py [--events N] [--batch N] [--single N]
[--runs N] [--dir D] [--synchronous FULL]``
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from machine import cpu_model  # benchmarks/machine.py, beside this script

from cosnotify.store.sqlite import MIGRATIONS, SQLiteStore

CONSUMER = "ch/0/ca/0/1"
DATA = b"e" * 200


def machine() -> str:
    return f"{cpu_model()}, {os.cpu_count()} CPU(s), Python {platform.python_version()}," \
           f" SQLite {sqlite3.sqlite_version}"


def filesystem(folder: str) -> str:
    """The mount (device and type) holding ``folder``, from /proc/mounts."""
    best = ("?", "?", "")
    try:
        for line in pathlib.Path("/proc/mounts").read_text().splitlines():
            device, mount, kind = line.split()[:3]
            if folder.startswith(mount.rstrip("/") + "/") and len(mount) >= len(best[2]):
                best = (device, kind, mount)
    except OSError:
        pass
    return f"{best[1]} on {best[0]} (mounted at {best[2] or '?'})"


def floor(path: str, events: int, batch: int, synchronous: str, data: bytes = DATA,
          consumer: str = CONSUMER) -> float:
    """Plain sqlite3: the store's schema, WAL, one commit per batch; events/s."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    for step in MIGRATIONS:
        for statement in step:
            conn.execute(statement)
    started = time.perf_counter()
    for first in range(1, events + 1, batch):
        ids = range(first, min(first + batch, events + 1))
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO events (id, data) VALUES (?, ?)",
                         [(i, data) for i in ids])
        conn.executemany("INSERT INTO pending (consumer, event_id) VALUES (?, ?)",
                         [(consumer, i) for i in ids])
        conn.execute("COMMIT")
    rate = events / (time.perf_counter() - started)
    conn.close()
    return rate


def batches(store: SQLiteStore, events: int, batch: int) -> float:
    started = time.perf_counter()
    for first in range(0, events, batch):
        store.add_events([(DATA, [CONSUMER])] * min(batch, events - first))
    return events / (time.perf_counter() - started)


def singles(store: SQLiteStore, events: int, callers: int) -> float:
    """``callers`` threads add ``events`` in all, one per call; events/s."""
    start = threading.Barrier(callers + 1)
    per_caller = events // callers

    def work() -> None:
        start.wait()
        for _ in range(per_caller):
            store.add_events([(DATA, [CONSUMER])])

    threads = [threading.Thread(target=work) for _ in range(callers)]
    for thread in threads:
        thread.start()
    start.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    return per_caller * callers / (time.perf_counter() - started)


def paging(store: SQLiteStore) -> float:
    started = time.perf_counter()
    after, seen = -1, 0
    while page := store.pending(CONSUMER, after=after, limit=1000):
        seen += len(page)
        after = page[-1].id
    return seen / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000, help="events in the batch cases")
    parser.add_argument("--batch", type=int, default=100, help="events per add_events call")
    parser.add_argument("--single", type=int, default=4_000, help="events in the 1-event cases")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", default=None, help="where the stores go (default: temp dir)")
    parser.add_argument("--synchronous", default="FULL")
    args = parser.parse_args()
    print(f"store_bench on {machine()}")
    base = args.dir or tempfile.gettempdir()
    print(f"stores in {base}: {filesystem(os.path.realpath(base))};"
          f" synchronous={args.synchronous}, WAL; {len(DATA)}-byte events, one consumer")
    print(f"load average before: {os.getloadavg()[0]:.2f}; medians of {args.runs} runs")
    rates: dict[str, list[float]] = {}
    commits_per_event: list[float] = []

    def case(name: str, run: Callable[[str], float]) -> None:
        with tempfile.TemporaryDirectory(dir=args.dir) as folder:
            rates.setdefault(name, []).append(run(os.path.join(folder, "store.db")))

    def store_case(path: str, body: Callable[[SQLiteStore], float]) -> float:
        with SQLiteStore(path, synchronous=args.synchronous) as store:
            return body(store)

    def grouped(store: SQLiteStore) -> float:
        before = store.commits
        rate = singles(store, args.single, 4)
        commits_per_event.append((store.commits - before) / (args.single // 4 * 4))
        return rate

    def batch_then_page(store: SQLiteStore) -> float:
        rates.setdefault("add_events, batches", []).append(
            batches(store, args.events, args.batch))
        return paging(store)

    for _ in range(args.runs):
        case("floor: sqlite3, batches", lambda p: floor(p, args.events, args.batch,
                                                        args.synchronous))
        case("pending paging (limit 1000)", lambda p: store_case(p, batch_then_page))
        case("add_events of 1, 1 caller", lambda p: store_case(
            p, lambda s: singles(s, args.single, 1)))
        case("add_events of 1, 4 callers", lambda p: store_case(p, grouped))
    median = {name: statistics.median(values) for name, values in rates.items()}
    print(f"{'case':<34} {'events/s':>12}   (batch of {args.batch} where batched)")
    for name in ["floor: sqlite3, batches", "add_events, batches", "add_events of 1, 1 caller",
                 "add_events of 1, 4 callers", "pending paging (limit 1000)"]:
        spread = f"{min(rates[name]):,.0f}-{max(rates[name]):,.0f}"
        print(f"{name:<34} {median[name]:>12,.0f}   (range {spread})")
    for label, top, bottom in [
            (f"add_events / floor, batches of {args.batch}", "add_events, batches",
             "floor: sqlite3, batches"),
            ("4 callers / 1 caller, 1 event per call", "add_events of 1, 4 callers",
             "add_events of 1, 1 caller")]:
        ratios = [a / b for a, b in zip(rates[top], rates[bottom], strict=True)]
        print(f"{label}: {statistics.median(ratios):.2f}"
              f" (per round {min(ratios):.2f}-{max(ratios):.2f})")
    print(f"commits per event with 4 callers: {statistics.median(commits_per_event):.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
