"""Benchmark: a SQLite writer beside a busy Python thread: a row a statement, many, or all.

Run: ``.venv/bin/python benchmarks/sqlite_gil_bench.py [--rows 10000]`` (about 15 s).

Strategy (docs/performance.md, "History"): Python's ``sqlite3`` lets go of the
GIL around every statement it steps, and takes it back when the busy thread
lets go of it (up to the switch interval, 5 ms). Three ways: ``executemany``
steps one statement a row; ``many_a_statement`` one for up to 1,024 rows
(``VALUES (...), (...)``: how the history wrote until it became one
statement); ``one_statement`` is the store's write (one ``INSERT ... SELECT``
over ``json_each``, ``cosnotify/store/sqlite_history.py``, in autocommit).
Each way writes ``--rows`` rows of the history table's shape
(its four indexes, 120-byte data, commits of 2,000 rows, WAL,
``synchronous=NORMAL``) into a fresh file, first alone, then while another
thread runs a Python loop (a supplier's thread, reduced to its interpreter
time). Printed: microseconds a row, and the busy thread's share of its solo
rate. No timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from machine import cpu_model  # benchmarks/machine.py, beside this script

from cosnotify.store.history import HistoryRow
from cosnotify.store.sqlite_history import HISTORY_MIGRATION, INSERT, history_parts

COMMIT_EVERY = 2000
#: Rows a statement of ``many_a_statement`` took at most.
MANY = 1024
HEAD = ("INSERT INTO history (channel, arrival, session, type, source, expires, size, data)"
        " VALUES ")
ROW = "(?, ?, ?, ?, ?, ?, ?, ?)"


def open_table(path: pathlib.Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    for sql in HISTORY_MIGRATION:
        conn.execute(sql)
    return conn


def one_a_row(conn: sqlite3.Connection, rows: Sequence[Sequence[object]]) -> None:
    for at in range(0, len(rows), COMMIT_EVERY):
        conn.execute("BEGIN")
        conn.executemany(HEAD + ROW, rows[at:at + COMMIT_EVERY])
        conn.execute("COMMIT")


def many_a_statement(conn: sqlite3.Connection, rows: Sequence[Sequence[object]]) -> None:
    """Statements of up to MANY rows, in a transaction a commit."""
    for at in range(0, len(rows), COMMIT_EVERY):
        conn.execute("BEGIN")
        chunk = rows[at:at + COMMIT_EVERY]
        for done in range(0, len(chunk), MANY):
            part = chunk[done:done + MANY]
            params = [field for values in part for field in values]
            conn.execute(HEAD + ", ".join([ROW] * len(part)), params)
        conn.execute("COMMIT")


def one_statement(conn: sqlite3.Connection, rows: Sequence[Any]) -> None:
    """The store's write of ``HistoryRow`` values: one statement a commit, in
    autocommit."""
    for at in range(0, len(rows), COMMIT_EVERY):
        for data, text in history_parts(rows[at:at + COMMIT_EVERY]):
            conn.execute(INSERT, ("ch/1", data, text))


def spin_rate(stop: threading.Event, counted: list[int]) -> None:
    n = 0
    while not stop.is_set():
        n += 1
    counted.append(n)


def measure(write: Callable[[sqlite3.Connection, Sequence[Any]], None],
            rows: Sequence[Any], busy: bool, solo: float,
            scratch: pathlib.Path) -> tuple[float, float]:
    """(us a row, the busy thread's share of its solo rate, or 0 without one)."""
    conn = open_table(scratch / f"{write.__name__}-{busy}.db")
    stop, counted = threading.Event(), list[int]()
    spinner = threading.Thread(target=spin_rate, args=(stop, counted))
    if busy:
        spinner.start()
    start = time.perf_counter()
    write(conn, rows)
    elapsed = time.perf_counter() - start
    if busy:
        stop.set()
        spinner.join()
    conn.close()
    share = counted[0] / elapsed / solo if busy else 0.0
    return elapsed / len(rows) * 1e6, share


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    args = parser.parse_args()
    print(f"{cpu_model()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"SQLite {sqlite3.sqlite_version}, switch interval {sys.getswitchinterval()} s, "
          f"load {os.getloadavg()[0]:.1f}")
    now = time.time()
    data = [os.urandom(120) for _ in range(args.rows)]
    rows: list[Sequence[object]] = [("ch/1", now + n / 1000, 1, b"D3\0T7\0", None, None, 120,
                                     data[n]) for n in range(args.rows)]
    history = [HistoryRow(now + n / 1000, 1, ("D3", "T7"), None, None, data[n])
               for n in range(args.rows)]
    stop, counted = threading.Event(), list[int]()
    spinner = threading.Thread(target=spin_rate, args=(stop, counted))
    spinner.start()
    time.sleep(1.0)  # the busy thread's solo rate: one second alone, not a synchronisation
    stop.set()
    spinner.join()
    solo = counted[0] / 1.0
    print(f"\n{args.rows:,} history rows, commits of {COMMIT_EVERY:,}; us a row "
          "(the busy thread's share of its solo rate)")
    with tempfile.TemporaryDirectory() as scratch:
        results = {}
        for write, given in ((one_a_row, rows), (many_a_statement, rows),
                             (one_statement, history)):
            alone, _ = measure(write, given, False, solo, pathlib.Path(scratch))
            busy, share = measure(write, given, True, solo, pathlib.Path(scratch))
            results[write.__name__] = (alone, busy)
            print(f"  {write.__name__:18} alone {alone:8.2f}   beside a busy thread "
                  f"{busy:9.2f} ({share:.0%})")
    one, many = results["one_a_row"][1], results["many_a_statement"][1]
    print(f"  beside a busy thread, a row a statement costs {one / many:,.0f}x many a"
          f" statement; many a statement {many / results['one_statement'][1]:.1f}x one")
    return 0


if __name__ == "__main__":
    sys.exit(main())
