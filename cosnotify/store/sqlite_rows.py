"""Many rows in few SQLite statements (cosnotify/store/sqlite_history.py), and BLOB checks.

Strategy: Python's ``sqlite3`` lets go of the GIL around every statement it
steps, and ``executemany`` steps one statement a row. A thread that lets go
of the GIL waits for it again up to the interpreter's switch interval (5 ms)
while another thread computes, so a writer of a row at a time, beside a
supplier's thread, waited once per row (docs/performance.md, "History";
``benchmarks/sqlite_gil_bench.py``: beside a busy thread, 979 us a row through
``executemany``, 29 us in these statements). Here a write of many rows is a few statements of
many rows each: an INSERT of ``VALUES (...), (...)``, a DELETE of ``IN (...)``.

A statement takes at most :func:`max_rows` rows (1,024, and within the
library's limit on parameters: 32,766 by default since SQLite 3.32, 999
before), then the powers of two of the rest (:func:`statement_sizes`), so a
connection prepares a dozen sizes of each statement, not one per length:
SQLite's prepared statement of a thousand rows is most of a MiB and Python
keeps 128 a connection.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3

__all__ = ["MAX_ROWS", "blob", "max_rows", "statement", "statement_sizes"]

#: Rows a statement takes at most, whatever the width of a row.
MAX_ROWS = 1024


@functools.cache
def _parameter_limit() -> int:
    with contextlib.closing(sqlite3.connect(":memory:")) as conn:
        return int(conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))


def max_rows(width: int) -> int:
    """Rows of ``width`` parameters one statement takes at most."""
    return max(1, min(MAX_ROWS, _parameter_limit() // width))


def statement_sizes(count: int, width: int) -> list[int]:
    """How many rows each statement of a write of ``count`` rows takes (module
    docstring): :func:`max_rows` while that many are left, then the powers of two of
    the rest."""
    most = max_rows(width)
    sizes = [most] * (count // most)
    rest = count % most
    sizes += [1 << bit for bit in range(rest.bit_length() - 1, -1, -1) if rest >> bit & 1]
    return sizes


@functools.lru_cache(maxsize=256)
def statement(head: str, row: str, count: int, tail: str = "") -> str:
    """``head``, ``row`` ``count`` times comma-separated, ``tail``."""
    return head + ", ".join([row] * count) + tail


def blob(data: object, what: str) -> bytes:
    """``data`` as the ``bytes`` of a BLOB; TypeError naming ``what`` if it is not bytes."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"{what}: data must be bytes, not {type(data).__name__}")
    return bytes(data)
