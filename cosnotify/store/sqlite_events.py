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

The rows travel as JSON (``json_each``): counters as ``{name: value}``,
released copies as ``{consumer: [event ids]}``, new copies as ``{consumer:
[positions]}``, and the new events' bytes as one blob with ``[position,
start, length, copies]`` spans (``substr`` of a BLOB counts bytes, from 1).
A new event's id is the write's first id (taken in the transaction,
``first``) plus its position, so all of it is built before the store's lock
is taken. TEMP objects belong to the connection, not the file: they change
with the code, and there is nothing to migrate.

An event written for more than one consumer counts its copies in
``event_copies`` (schema step 4 -> 5) for as long as it is kept; one written
for a single consumer has no count (its one copy's release deletes it). A
release of a copy that is there lowers the count and deletes the event once
none is left, all by primary key. It replaced an index of ``pending``
by event, which answered "does anyone else hold it?" but cost every copy
written an index entry and every commit a page more (docs/performance.md,
"Durability"). The count is a table of its own, not a column of ``events``:
a column's update rewrites the whole row, event bytes included, whenever
the number's size in the record changes (2 to 1, say).
"""

from __future__ import annotations

import json
import operator
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cosnotify.store.interface import StoredEvent
from cosnotify.store.sqlite_rows import blob

__all__ = ["COPIES_AGAIN_MIGRATION", "COPIES_MIGRATION", "PENDING_SQL", "WRITE", "EventLogTable",
           "EventRows", "install"]

# Page through one consumer's events on the primary key of pending: CROSS JOIN
# keeps pending the outer loop, so the plan is two index searches, never a scan.
PENDING_SQL = ("SELECT p.event_id, e.data FROM pending AS p CROSS JOIN events AS e"
               " ON e.id = p.event_id WHERE p.consumer = ? AND p.event_id > ?"
               " ORDER BY p.event_id LIMIT ?")

#: Schema step 4 -> 5: an event held by more than one consumer counts its copies (its
#: ``pending`` rows) in ``event_copies``, so releasing a copy is searches of primary
#: keys, and the index of ``pending`` by event (an entry for every copy written, a page
#: more to each commit) goes. The events' rows are not touched.
COPIES_MIGRATION: tuple[str, ...] = (
    ("CREATE TABLE event_copies (event_id INTEGER PRIMARY KEY, copies INTEGER NOT NULL)"),
    ("INSERT INTO event_copies (event_id, copies) SELECT event_id, count(*) FROM pending"
     " GROUP BY event_id HAVING count(*) > 1"),
    "DROP INDEX pending_by_event",
)

#: Schema step 5 -> 6. Schema 5 was written in two shapes: commit 2ed45e3 counted
#: copies in a column ``events.copies`` (rewriting an event's row whenever the count
#: changed size), 03c70ad in ``event_copies``; this step brings either to the second
#: (a leftover ``events.copies`` column defaults to 0 and is never read). The counts are
#: taken again from ``pending`` (right whatever the file held), and an event no copy
#: refers to, which nothing could read or release, goes.
COPIES_AGAIN_MIGRATION: tuple[str, ...] = (
    ("CREATE TABLE IF NOT EXISTS event_copies (event_id INTEGER PRIMARY KEY,"
     " copies INTEGER NOT NULL)"),
    "DROP INDEX IF EXISTS pending_by_event",
    "DELETE FROM events WHERE id NOT IN (SELECT event_id FROM pending)",
    "DELETE FROM event_copies WHERE event_id NOT IN (SELECT id FROM events)",
    ("INSERT OR REPLACE INTO event_copies (event_id, copies) SELECT event_id, count(*)"
     " FROM pending GROUP BY event_id HAVING count(*) > 1"),
)

_INSTALL = (
    # A released copy (a row trigger, run once per copy: cheaper than IN over a list
    # built for each write), if the copy is there: the event's count goes down (an event
    # written for one consumer has none), the event goes once no copy is left, then the
    # copy, then a count at 0. Searches of primary keys only; the event's own row is
    # never rewritten.
    ("CREATE TEMP VIEW IF NOT EXISTS event_releases (consumer, event_id) AS"
     " SELECT NULL, NULL WHERE 0"),
    ("CREATE TEMP TRIGGER IF NOT EXISTS event_releases_insert INSTEAD OF INSERT"
     " ON event_releases WHEN EXISTS (SELECT 1 FROM pending WHERE consumer = NEW.consumer"
     " AND event_id = NEW.event_id) BEGIN"
     " UPDATE event_copies SET copies = copies - 1 WHERE event_id = NEW.event_id;"
     " DELETE FROM events WHERE id = NEW.event_id AND NOT EXISTS (SELECT 1 FROM event_copies"
     " WHERE event_id = NEW.event_id AND copies > 0);"
     " DELETE FROM pending WHERE consumer = NEW.consumer AND event_id = NEW.event_id;"
     " DELETE FROM event_copies WHERE event_id = NEW.event_id AND copies <= 0;"
     " END"),
    ("CREATE TEMP VIEW IF NOT EXISTS event_writes (releases, data, spans, copies, counters,"
     " mark, first) AS SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL WHERE 0"),
    # (A trigger's statements name tables unqualified; TEMP ones resolve first.)
    ("CREATE TEMP TRIGGER IF NOT EXISTS event_writes_insert INSTEAD OF INSERT ON event_writes"
     " BEGIN"
     " INSERT INTO event_releases (consumer, event_id) SELECT c.key, i.value"
     " FROM json_each(NEW.releases) AS c, json_each(c.value) AS i;"
     # substr() of nothing is NULL, not an empty BLOB.
     " INSERT INTO events (id, data) SELECT NEW.first + json_extract(value, '$[0]'),"
     " coalesce(substr(NEW.data, json_extract(value, '$[1]'), json_extract(value, '$[2]')),"
     " x'') FROM json_each(NEW.spans);"
     " INSERT INTO event_copies (event_id, copies) SELECT NEW.first + json_extract(value,"
     " '$[0]'), json_extract(value, '$[3]') FROM json_each(NEW.spans)"
     " WHERE json_extract(value, '$[3]') > 1;"
     " INSERT INTO pending (consumer, event_id) SELECT c.key, NEW.first + i.value"
     " FROM json_each(NEW.copies) AS c, json_each(c.value) AS i;"
     # WHERE true: an upsert's SELECT needs one (SQLite's parser).
     " INSERT INTO counters (name, next) SELECT key, value FROM json_each(NEW.counters)"
     " WHERE true ON CONFLICT (name) DO UPDATE SET next = max(next, excluded.next);"
     " UPDATE meta SET value = NEW.mark WHERE key = 'next_event_id' AND NEW.mark IS NOT NULL;"
     " END"),
)

#: One write: (releases, data, spans, copies, counters, mark, first), each NULL for none;
#: the new events' ids are ``first`` + their position in the write.
WRITE = ("INSERT INTO temp.event_writes (releases, data, spans, copies, counters, mark, first)"
         " VALUES (?, ?, ?, ?, ?, ?, ?)")


def install(conn: sqlite3.Connection) -> None:
    """Make ``event_writes`` on ``conn`` (after the schema is in place). Needs SQLite's
    JSON functions (built in since 3.38, an option before)."""
    for sql in _INSTALL:
        conn.execute(sql)


#: A write's new events go in parts of at most this many bytes of event data (one
#: BLOB each: SQLite refuses a value longer than SQLITE_LIMIT_LENGTH, 10^9 by default).
PART_BYTES = 64 * 2**20


def check_name(name: object, what: str) -> str:
    """``name`` if it can name a consumer or counter: a str without NUL (json_each
    reads a key up to its first NUL)."""
    if not isinstance(name, str):
        raise TypeError(f"{what}: a name is a str, not {name!r}")
    if "\x00" in name:
        raise ValueError(f"{what}: a name cannot hold NUL: {name!r}")
    return name


def to_json(value: object) -> str:
    """JSON for a :data:`WRITE`: non-ASCII as it is (a lone surrogate then fails to
    bind, as any str SQLite cannot take does)."""
    return json.dumps(value, ensure_ascii=False)


#: A str as a JSON string, non-ASCII as it is (what ``json.dumps(..., ensure_ascii=False)``
#: does for each str it meets).
_json_string = json.encoder.encode_basestring


def copies_json(copies: Mapping[str, Sequence[int]] | None) -> str | None:
    """``{consumer: [event ids]}`` as a :data:`WRITE` takes it (None: no copies); the
    names are checked, the ids ints. Written by hand: a push writes one of these or
    two, and ``json.dumps`` costs three times as much."""
    if not copies:
        return None
    for name in copies:
        check_name(name, "consumer")
    return _copies_text(copies)


def _copies_text(copies: Mapping[str, Sequence[int]]) -> str:
    return "{" + ",".join([_json_string(name) + ":[" + ",".join(map(str, ids)) + "]"
                           for name, ids in copies.items()]) + "}"


def _spans_text(spans: Sequence[tuple[int, int, int, int]]) -> str:
    return "[" + ",".join([f"[{at},{start},{length},{copies}]"
                           for at, start, length, copies in spans]) + "]"


class EventRows:
    """The new events of a write, by position (an id is the write's first id plus the
    position), checked: ``parts``, each ``(data, spans, copies)`` of a :data:`WRITE`
    (one part unless their bytes pass :data:`PART_BYTES`).

    ``events``: ``(data, consumers)`` each; an event without consumers takes its
    position (an id) and is not kept; a consumer named twice holds one copy.
    """

    __slots__ = ("count", "parts")

    def __init__(self, events: Sequence[tuple[bytes, Sequence[str]]]) -> None:
        self.parts: list[tuple[bytes | None, str | None, str | None]] = []
        kept: list[bytes] = []
        spans: list[tuple[int, int, int, int]] = []
        copies: dict[str, list[int]] = {}
        start = 1
        count = 0
        for at, (data, consumers) in enumerate(events):
            count = at + 1
            if type(data) is not bytes:
                data = blob(data, f"events[{at}]")
            if isinstance(consumers, (str, bytes)):  # a lone name would be read as letters
                raise TypeError(f"events[{at}]: consumers must be a sequence of str,"
                                f" not {consumers!r}")
            if not consumers:
                continue
            if kept and start - 1 + len(data) > PART_BYTES:
                self._part(kept, spans, copies)
                kept, spans, copies, start = [], [], {}, 1
            held_by = 0  # the event's copies: its consumers, each once
            for name in consumers:
                held = copies.get(name)
                if held is None:
                    copies[check_name(name, f"events[{at}]")] = [at]
                    held_by += 1
                elif held[-1] != at:
                    held.append(at)
                    held_by += 1
            kept.append(data)
            spans.append((at, start, len(data), held_by))
            start += len(data)
        self.count = count
        if kept or not self.parts:
            self._part(kept, spans, copies)

    def _part(self, kept: list[bytes], spans: list[tuple[int, int, int, int]],
              copies: dict[str, list[int]]) -> None:
        self.parts.append((b"".join(kept) if kept else None,
                           _spans_text(spans) if spans else None,
                           _copies_text(copies) if copies else None))


class EventLogTable:
    """The event-log methods of :class:`~cosnotify.store.sqlite.SQLiteStore` (a mixin:
    ``_submit``, ``_read`` and ``_check_open`` are the store's)."""

    _submit: Any
    _read: Any
    _check_open: Any

    def add_events(self, events: Sequence[tuple[bytes, Sequence[str]]],
                   marks: Mapping[str, int] | None = None,
                   releases: Mapping[str, Sequence[int]] | None = None) -> list[int]:
        counters = {check_name(name, "marks"): max(0, operator.index(value))
                    for name, value in (marks or {}).items()}
        for name, value in counters.items():
            if value >= 2**63:
                raise OverflowError(f"marks[{name!r}]: {value} is past SQLite's integers")
        released = {consumer: [operator.index(event_id) for event_id in held]
                    for consumer, held in (releases or {}).items() if held}
        new = EventRows(events)
        released_text = copies_json(released)
        counters_text = to_json(counters) if counters else None
        count = new.count
        if not count and counters_text is None and released_text is None:
            self._check_open()
            return []
        parts = new.parts

        def add(conn: sqlite3.Connection, txn: Any) -> list[int]:
            first = txn.take_ids(conn, count)
            last = len(parts) - 1
            for at, (data, spans, copies) in enumerate(parts):
                conn.execute(WRITE, (None if at else released_text, data, spans, copies,
                                     None if at < last else counters_text,
                                     None if at < last else txn.mark(), first))
            return list(range(first, first + count))

        ids: list[int] = self._submit(add, sync=True, doing="add_events",
                                      single=len(parts) == 1)
        return ids

    def release(self, consumer: str, event_ids: Iterable[int]) -> None:
        ids = [operator.index(event_id) for event_id in event_ids]
        if not ids:
            self._check_open()
            return

        released = copies_json({consumer: ids})

        def release(conn: sqlite3.Connection, txn: Any) -> None:
            conn.execute(WRITE, (released, None, None, None, None, None, None))

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
            held = "IN (SELECT event_id FROM pending WHERE consumer = ?)"
            conn.execute(f"UPDATE event_copies SET copies = copies - 1 WHERE event_id {held}",
                         (consumer,))
            conn.execute(f"DELETE FROM events WHERE id {held} AND NOT EXISTS (SELECT 1 FROM"
                         f" event_copies WHERE event_id = events.id AND copies > 0)",
                         (consumer,))
            conn.execute(f"DELETE FROM event_copies WHERE event_id {held} AND copies <= 0",
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
