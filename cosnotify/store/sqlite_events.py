"""The event log's writes, one SQLite statement each (cosnotify/store/sqlite.py).

Strategy: Python's ``sqlite3`` lets go of the GIL around every statement it
steps, and a thread that let go of it waits to take it back while another
thread runs Python. A persistent push was six statements (BEGIN, the two
deletes of the releases riding with it, two inserts, COMMIT) and a batch of
100 sixteen, so the supplier's call waited that many times on the delivery
worker (docs/performance.md, "Durability"). Here a write is one row inserted
into the TEMP view ``event_writes``, whose INSTEAD OF trigger does all of it:
the released copies deleted with the events no copy is left of, the new
events and their copies inserted, the counters raised, the id mark stored.
A write alone runs in autocommit, so that one statement is its transaction.

The rows travel as JSON (``json_each``): copies as ``{consumer: [event ids]}``,
counters as ``{name: value}``, and the events' bytes as one blob with
``[id, start, length]`` spans (``substr`` of a BLOB counts bytes, from 1).
TEMP objects belong to the connection, not the file: the schema is the same,
and there is nothing to migrate.
"""

from __future__ import annotations

import json
import operator
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cosnotify.store.interface import StoredEvent
from cosnotify.store.sqlite_rows import blob

__all__ = ["PENDING_SQL", "WRITE", "EventLogTable", "EventRows", "install"]

# Page through one consumer's events on the primary key of pending: CROSS JOIN
# keeps pending the outer loop, so the plan is two index searches, never a scan.
PENDING_SQL = ("SELECT p.event_id, e.data FROM pending AS p CROSS JOIN events AS e"
               " ON e.id = p.event_id WHERE p.consumer = ? AND p.event_id > ?"
               " ORDER BY p.event_id LIMIT ?")

_COPIES = "SELECT c.key, i.value FROM json_each({0}) AS c, json_each(c.value) AS i"

_INSTALL = (
    ("CREATE TEMP VIEW IF NOT EXISTS event_writes (releases, data, spans, copies, counters,"
     " mark) AS SELECT NULL, NULL, NULL, NULL, NULL, NULL WHERE 0"),
    ("CREATE TEMP TRIGGER IF NOT EXISTS event_writes_insert INSTEAD OF INSERT ON event_writes"
     " BEGIN"
     f" DELETE FROM pending WHERE (consumer, event_id) IN ({_COPIES.format('NEW.releases')});"
     " DELETE FROM events WHERE id IN (SELECT i.value FROM json_each(NEW.releases) AS c,"
     " json_each(c.value) AS i) AND NOT EXISTS (SELECT 1 FROM pending"
     " WHERE event_id = events.id);"
     # substr() of nothing is NULL, not an empty BLOB.
     " INSERT INTO events (id, data) SELECT json_extract(value, '$[0]'),"
     " coalesce(substr(NEW.data, json_extract(value, '$[1]'), json_extract(value, '$[2]')),"
     " x'') FROM json_each(NEW.spans);"
     f" INSERT INTO pending (consumer, event_id) {_COPIES.format('NEW.copies')};"
     # WHERE true: an upsert's SELECT needs one (SQLite's parser).
     " INSERT INTO counters (name, next) SELECT key, value FROM json_each(NEW.counters)"
     " WHERE true ON CONFLICT (name) DO UPDATE SET next = max(next, excluded.next);"
     " UPDATE meta SET value = NEW.mark WHERE key = 'next_event_id' AND NEW.mark IS NOT NULL;"
     " END"),
)

#: One write: (releases, data, spans, copies, counters, mark), each NULL for none.
WRITE = ("INSERT INTO temp.event_writes (releases, data, spans, copies, counters, mark)"
         " VALUES (?, ?, ?, ?, ?, ?)")


def install(conn: sqlite3.Connection) -> None:
    """Make ``event_writes`` on ``conn`` (after the schema is in place). Needs SQLite's
    JSON functions (built in since 3.38, an option before) and row values (3.15)."""
    for sql in _INSTALL:
        conn.execute(sql)


def copies_json(copies: Mapping[str, Sequence[int]] | None) -> str | None:
    """``{consumer: [event ids]}`` as a :data:`WRITE` takes it (None: no copies)."""
    return json.dumps(copies) if copies else None


class EventRows:
    """New events with ids from ``first``: the blob, spans and copies of a :data:`WRITE`.

    ``rows``: ``(data, consumers)`` per event; an event without consumers takes its
    id and is not kept.
    """

    __slots__ = ("copies", "data", "spans")

    def __init__(self, first: int, rows: Sequence[tuple[bytes, Sequence[str]]]) -> None:
        kept: list[bytes] = []
        spans: list[tuple[int, int, int]] = []
        copies: dict[str, list[int]] = {}
        start = 1
        for event_id, (data, names) in enumerate(rows, first):
            if names:
                kept.append(data)
                spans.append((event_id, start, len(data)))
                start += len(data)
                for name in names:
                    ids = copies.get(name)
                    if ids is None:
                        copies[name] = [event_id]
                    else:
                        ids.append(event_id)
        self.data = b"".join(kept) if kept else None
        self.spans = json.dumps(spans) if spans else None
        self.copies = json.dumps(copies) if copies else None


class EventLogTable:
    """The event-log methods of :class:`~cosnotify.store.sqlite.SQLiteStore` (a mixin:
    ``_submit``, ``_read`` and ``_check_open`` are the store's)."""

    _submit: Any
    _read: Any
    _check_open: Any

    def add_events(self, events: Sequence[tuple[bytes, Sequence[str]]],
                   marks: Mapping[str, int] | None = None,
                   releases: Mapping[str, Sequence[int]] | None = None) -> list[int]:
        counters = {name: max(0, operator.index(value)) for name, value in (marks or {}).items()}
        for name, value in counters.items():
            if not isinstance(name, str):
                raise TypeError(f"marks: a counter's name is a str, not {name!r}")
            if value >= 2**63:
                raise OverflowError(f"marks[{name!r}]: {value} is past SQLite's integers")
        released = {consumer: [operator.index(event_id) for event_id in ids]
                    for consumer, ids in (releases or {}).items()}
        rows: list[tuple[bytes, tuple[str, ...]]] = []
        for at, (data, consumers) in enumerate(events):
            if isinstance(consumers, (str, bytes)):  # a lone name would be read as letters
                raise TypeError(f"events[{at}]: consumers must be a sequence of str,"
                                f" not {consumers!r}")
            names = tuple(dict.fromkeys(consumers))
            for name in names:
                if not isinstance(name, str):
                    raise TypeError(f"events[{at}]: a consumer must be a str, not {name!r}")
            rows.append((data if type(data) is bytes else blob(data, f"events[{at}]"), names))
        released_text = copies_json({c: ids for c, ids in released.items() if ids})
        counters_text = json.dumps(counters) if counters else None
        if not rows and counters_text is None and released_text is None:
            self._check_open()
            return []

        def add(conn: sqlite3.Connection, txn: Any) -> list[int]:
            first = txn.take_ids(conn, len(rows))
            new = EventRows(first, rows)
            conn.execute(WRITE, (released_text, new.data, new.spans, new.copies, counters_text,
                                 txn.mark()))
            return list(range(first, first + len(rows)))

        ids: list[int] = self._submit(add, sync=True, doing="add_events", single=True)
        return ids

    def release(self, consumer: str, event_ids: Iterable[int]) -> None:
        ids = [operator.index(event_id) for event_id in event_ids]
        if not ids:
            self._check_open()
            return

        released = copies_json({consumer: ids})

        def release(conn: sqlite3.Connection, txn: Any) -> None:
            conn.execute(WRITE, (released, None, None, None, None, None))

        self._submit(release, sync=False, doing="release", single=True)

    def pending(self, consumer: str, after: int = -1, limit: int = 1000) -> list[StoredEvent]:
        if limit < 0:
            raise ValueError(f"limit must be >= 0, not {limit}")
        args = (consumer, operator.index(after), operator.index(limit))
        rows = self._read(lambda conn: conn.execute(PENDING_SQL, args).fetchall(), "pending")
        return [StoredEvent(event_id, data) for event_id, data in rows]

    def pending_count(self, consumer: str) -> int:
        row = self._read(lambda conn: conn.execute(
            "SELECT count(*) FROM pending WHERE consumer = ?", (consumer,)).fetchone(),
            "pending_count")
        return int(row[0])

    def drop_consumer(self, consumer: str) -> None:
        def drop(conn: sqlite3.Connection, txn: Any) -> None:
            conn.execute("DELETE FROM events WHERE id IN (SELECT event_id FROM pending WHERE"
                         " consumer = ?1) AND NOT EXISTS (SELECT 1 FROM pending AS other"
                         " WHERE other.event_id = events.id AND other.consumer != ?1)",
                         (consumer,))
            conn.execute("DELETE FROM pending WHERE consumer = ?", (consumer,))

        self._submit(drop, sync=False, doing="drop_consumer")

    def consumers(self) -> list[str]:
        def walk(conn: sqlite3.Connection) -> list[str]:
            # One index search per consumer, not a scan of every pending row.
            names: list[str] = []
            row = conn.execute("SELECT min(consumer) FROM pending").fetchone()
            while row[0] is not None:
                names.append(row[0])
                row = conn.execute("SELECT min(consumer) FROM pending WHERE consumer > ?",
                                   (row[0],)).fetchone()
            return names

        names: list[str] = self._read(walk, "consumers")
        return names
