"""The SQLite store's history table (cosnotify/store/history.py, docs/history.md).

Strategy: one table, ``history``, a row per retained event with its channel,
arrival, session, type key, source timestamp, expiry, size and bytes; ids
``AUTOINCREMENT``, so an id is never given twice, across deletes and
restarts. Three indexes serve the scans: by arrival, by source timestamp
(each with the id, for the cursor) and by type key (a prefix is one range).
A scan is one ``SELECT`` a page long; its order key and id are the cursor.
Writes go through the store's group commit without waiting for an fsync (a
retained event is history, not a delivery promise).

A write is one ``INSERT ... SELECT`` over ``json_each`` (:func:`history_parts`),
in autocommit when it is alone: its rows' bytes and type keys travel as one
BLOB, each row as a JSON array of its numbers and its spans in that BLOB
(``substr`` counts bytes from 1). Python's ``sqlite3`` lets go of the GIL
around every statement it steps, and a writer that let go of it waits up to
the switch interval (5 ms) to take it back while a supplier's thread runs
Python; statements of 1,024 rows each (``VALUES (...), (...)``), with BEGIN
and COMMIT, waited eight times for a write of 5,000 rows, one statement
waits once (docs/performance.md, "History"). JSON carries a double as its
shortest decimal (``repr``), which SQLite reads back to the same double
(SQLite's text-to-double conversion depends on its build and platform:
tests/history/test_store.py checks the SQLite it runs on); an infinity goes
as ``9e999``, which SQLite reads as one, and a NaN as null, as SQLite
stores a NaN it is bound. ``json_extract``, not ``->>``: the JSON functions
of SQLite before 3.38 have no ``->>``. Trims cost what they
delete, not what is kept: expired rows are found by a partial index on
``expires``, old ones by the arrival index, and the oldest past a bound are
read from the arrival index until enough are found.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from cosnotify.store.history import (
    HistoryCursor,
    HistoryRow,
    HistoryScan,
    StoredHistory,
    key_path,
    prefix_range,
    type_key,
)
from cosnotify.store.sqlite_rows import blob

__all__ = ["HISTORY_MIGRATION", "HISTORY_SOURCE_INDEX_BACK", "HISTORY_SOURCE_MIGRATION",
           "INSERT", "PART_BYTES", "PART_ROWS", "HistoryTable",
           "history_parts"]

#: The schema step that adds the table (cosnotify/store/sqlite.py ``MIGRATIONS``).
HISTORY_MIGRATION: tuple[str, ...] = (
    ("CREATE TABLE history (id INTEGER PRIMARY KEY AUTOINCREMENT, channel TEXT NOT NULL,"
     " arrival REAL NOT NULL, session INTEGER NOT NULL, type BLOB NOT NULL, source REAL,"
     " expires REAL, size INTEGER NOT NULL, data BLOB NOT NULL)"),
    "CREATE INDEX history_by_arrival ON history (channel, arrival, id)",
    "CREATE INDEX history_by_source ON history (channel, source, id)",
    "CREATE INDEX history_by_type ON history (channel, type)",
    "CREATE INDEX history_by_expiry ON history (channel, expires) WHERE expires IS NOT NULL",
)

#: Schema step 2 -> 3: the source index holds only the rows that have a source
#: timestamp (a scan by source reads those; the others are read by id), so a
#: retained event without one costs one index insert less.
HISTORY_SOURCE_MIGRATION: tuple[str, ...] = (
    "DROP INDEX history_by_source",
    "CREATE INDEX history_by_source ON history (channel, source, id) WHERE source IS NOT NULL",
)

#: Schema step 3 -> 4: step 2 -> 3 undone. Rows without a source timestamp are read
#: in id order by the second pass of a scan by source; the partial index cannot
#: find them, so that pass read the whole table (of every channel) for each page.
HISTORY_SOURCE_INDEX_BACK: tuple[str, ...] = (
    "DROP INDEX history_by_source",
    "CREATE INDEX history_by_source ON history (channel, source, id)",
)

_COLUMNS = "id, arrival, session, type, source, data"

#: A write's INSERT (module docstring): ``?1`` the channel, ``?2`` the BLOB of the type
#: keys and the data, ``?3`` the rows, each ``[arrival, session, source, expires,
#: type start, type length, data start, data length]``.
INSERT = ("INSERT INTO history (channel, arrival, session, type, source, expires, size, data)"
          " SELECT ?1, json_extract(value, '$[0]'), json_extract(value, '$[1]'),"
          " coalesce(substr(?2, json_extract(value, '$[4]'), json_extract(value, '$[5]')), x''),"
          " json_extract(value, '$[2]'), json_extract(value, '$[3]'), json_extract(value, '$[7]'),"
          " coalesce(substr(?2, json_extract(value, '$[6]'), json_extract(value, '$[7]')), x'')"
          " FROM json_each(?3)")

#: A write's rows go in parts of at most this many bytes of data, and this many rows (a
#: BLOB and a JSON text each, of at most 80 bytes a row: SQLite refuses a value longer
#: than SQLITE_LIMIT_LENGTH, 10^9 by default).
PART_BYTES = 64 * 2**20
PART_ROWS = 1_000_000

#: The rows' JSON: compact, and a float as its shortest decimal; non-finite floats come
#: out as JavaScript's names, which :func:`history_parts` replaces (module docstring).
_encode_json = json.JSONEncoder(separators=(",", ":")).encode
_NON_FINITE = (("-Infinity", "-9e999"), ("Infinity", "9e999"), ("NaN", "null"))


def history_parts(rows: Sequence[HistoryRow]) -> list[tuple[bytes, str]]:
    """``rows`` as the ``(BLOB, JSON)`` parameters of :data:`INSERT`, one pair a part
    (one part unless the data passes :data:`PART_BYTES` or the rows :data:`PART_ROWS`);
    a type key is in a part's BLOB once. Raises TypeError for data that is not bytes,
    OverflowError for a session past SQLite's integers."""
    parts: list[tuple[bytes, str]] = []
    chunks: list[bytes] = []
    spec: list[tuple[Any, ...]] = []
    keys: dict[bytes, tuple[int, int]] = {}
    start = 1
    session = None
    for at, row in enumerate(rows):
        data = row.data
        if type(data) is not bytes:
            data = blob(data, f"rows[{at}]")
        if spec and (start - 1 + len(data) > PART_BYTES or len(spec) >= PART_ROWS):
            parts.append(_part(chunks, spec))
            chunks, spec, keys, start = [], [], {}, 1
        if row.session is not session:
            session = row.session
            if not -2**63 <= session < 2**63:
                raise OverflowError(f"rows[{at}]: session {session} is past SQLite's integers")
        key = type_key(row.type)
        span = keys.get(key)
        if span is None:
            span = keys[key] = (start, len(key))
            chunks.append(key)
            start += len(key)
        spec.append((row.arrival, session, row.source, row.expires, span[0], span[1], start,
                     len(data)))
        chunks.append(data)
        start += len(data)
    if spec:
        parts.append(_part(chunks, spec))
    return parts


def _part(chunks: list[bytes], spec: list[tuple[Any, ...]]) -> tuple[bytes, str]:
    text = _encode_json(spec)
    if "Infinity" in text or "NaN" in text:  # the rows hold numbers and nulls only
        for name, literal in _NON_FINITE:
            text = text.replace(name, literal)
    return b"".join(chunks), text


class HistoryTable:
    """The history methods of :class:`~cosnotify.store.sqlite.SQLiteStore` (a mixin:
    ``_submit`` and ``_read`` are the store's)."""

    _submit: Any
    _read: Any

    def add_history(self, channel: str, rows: Sequence[HistoryRow]) -> list[int]:
        if not rows:
            return []
        parts = history_parts(rows)
        count = len(rows)

        def add(conn: sqlite3.Connection, txn: Any) -> list[int]:
            last = 0
            for data, text in parts:
                last = conn.execute(INSERT, (channel, data, text)).lastrowid or 0
            # AUTOINCREMENT in one transaction of one connection: consecutive ids.
            return list(range(last - count + 1, last + 1))

        result: list[int] = self._submit(add, sync=False, doing="add_history",
                                         single=len(parts) == 1)
        return result

    def read_history(self, channel: str, scan: HistoryScan,
                     after: HistoryCursor | None = None,
                     limit: int = 1000) -> list[StoredHistory]:
        if limit < 0:
            raise ValueError(f"limit must be >= 0, not {limit}")
        built = scan_sql(channel, scan, after, limit)
        if built is None:
            return []
        sql, args = built
        rows = self._read(lambda conn: conn.execute(sql, args).fetchall(), "read_history")
        return [StoredHistory(row[0], row[1], row[2], key_path(row[3]), row[4], row[5])
                for row in rows]

    def expire_history(self, channel: str, now: float,
                       before: float | None = None) -> tuple[int, int]:
        def expire(conn: sqlite3.Connection, txn: Any) -> tuple[int, int]:
            gone = [0, 0]
            for where, value in (("expires <= ?", now), ("arrival < ?", before)):
                if value is None:
                    continue
                row = conn.execute(f"SELECT count(*), coalesce(sum(size), 0) FROM history"
                                   f" WHERE channel = ? AND {where}", (channel, value)).fetchone()
                if row[0]:
                    conn.execute(f"DELETE FROM history WHERE channel = ? AND {where}",
                                 (channel, value))
                    gone[0] += int(row[0])
                    gone[1] += int(row[1])
            return gone[0], gone[1]

        result: tuple[int, int] = self._submit(expire, sync=False, doing="expire_history")
        return result

    def drop_oldest_history(self, channel: str, count: int = 0,
                            nbytes: int = 0) -> tuple[int, int]:
        def drop(conn: sqlite3.Connection, txn: Any) -> tuple[int, int]:
            ids: list[int] = []
            total = 0
            rows = conn.execute("SELECT id, size FROM history WHERE channel = ?"
                                " ORDER BY arrival, id", (channel,))
            for event_id, size in rows:
                if len(ids) >= count and total >= nbytes:
                    break
                ids.append(event_id)
                total += size
            rows.close()
            for at in range(0, len(ids), 500):
                chunk = ids[at:at + 500]
                conn.execute(f"DELETE FROM history WHERE id IN ({', '.join('?' * len(chunk))})",
                             chunk)
            return len(ids), total

        result: tuple[int, int] = self._submit(drop, sync=False, doing="drop_oldest_history")
        return result

    def history_size(self, channel: str) -> tuple[int, int]:
        row = self._read(lambda conn: conn.execute(
            "SELECT count(*), coalesce(sum(size), 0) FROM history WHERE channel = ?",
            (channel,)).fetchone(), "history_size")
        return int(row[0]), int(row[1])

    def drop_history(self, channel: str) -> None:
        def drop(conn: sqlite3.Connection, txn: Any) -> None:
            conn.execute("DELETE FROM history WHERE channel = ?", (channel,))

        self._submit(drop, sync=False, doing="drop_history")


    def history_channels(self) -> list[str]:
        def channels(conn: sqlite3.Connection) -> list[str]:
            found: list[str] = []
            # One index probe per channel (the arrival index leads with it), not a scan.
            row = conn.execute("SELECT min(channel) FROM history").fetchone()
            while row is not None and row[0] is not None:
                found.append(row[0])
                row = conn.execute("SELECT min(channel) FROM history WHERE channel > ?",
                                   (row[0],)).fetchone()
            return found

        result: list[str] = self._read(channels, "history_channels")
        return result


def scan_sql(channel: str, scan: HistoryScan, after: HistoryCursor | None,
             limit: int) -> tuple[str, list[Any]] | None:
    """The SELECT of one page of ``scan`` (None: it can match nothing)."""
    where: list[str] = ["channel = ?"]
    args: list[Any] = [channel]
    for column, op, value in (("arrival", ">=", scan.t_from), ("arrival", "<=", scan.t_to),
                              ("source", ">=", scan.source_t_from),
                              ("source", "<=", scan.source_t_to)):
        if value is not None:
            where.append(f"{column} {op} ?")
            args.append(value)
    if scan.nulls:
        where.append("source IS NULL")
    elif scan.by_source:
        where.append("source IS NOT NULL")
    if scan.instances is not None:
        if not scan.instances:
            return None
        where.append(f"id IN ({', '.join('?' * len(scan.instances))})")
        args += list(scan.instances)
    if scan.type_prefixes is not None:
        if not scan.type_prefixes:
            return None
        if all(scan.type_prefixes):  # an empty prefix is every type
            ranges = []
            for prefix in scan.type_prefixes:
                ranges.append("(type >= ? AND type < ?)")
                args += list(prefix_range(prefix))
            where.append(f"({' OR '.join(ranges)})")
    if scan.now is not None:
        where.append("(expires IS NULL OR expires > ?)")
        args.append(scan.now)
    if scan.nulls:
        if after is not None:
            where.append("id > ?")
            args.append(after[1])
        order = "id ASC"
    else:
        key = "source" if scan.by_source else "arrival"
        direction = "ASC" if scan.ascending else "DESC"
        if after is not None:
            where.append(f"({key}, id) {'>' if scan.ascending else '<'} (?, ?)")
            args += [after[0], after[1]]
        order = f"{key} {direction}, id {direction}"
    args.append(limit)
    sql = f"SELECT {_COLUMNS} FROM history WHERE {' AND '.join(where)} ORDER BY {order} LIMIT ?"
    return sql, args

