"""One SQLite transaction's shared state, and the queued operations it runs.

Strategy: the group-commit leader (sqlite.py) runs every queued ``Op`` of a
group in one transaction; ``Txn`` is what they share, chiefly the event
ids. Ids come from ``meta.next_event_id``, a high-water mark written
``ID_BLOCK`` ids ahead, so it is written once a block, not once a commit; a
transaction remembers nothing in ``Ids`` until it commits, so a failed one
leaves the connection's idea of the mark as the file has it.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import attrs

__all__ = ["ID_BLOCK", "UNSET", "Ids", "Op", "Txn", "statement", "touch"]

UNSET: Any = object()


#: Event ids reserved in ``meta.next_event_id`` at a time: the high-water mark is
#: written once per block, not once per transaction.
ID_BLOCK = 4096


@attrs.define
class Ids:
    """The event ids of this connection: the next one, and the stored high-water mark
    (every id below it may have been used). Read from the file once; forgotten
    when a transaction fails, so it is read again."""

    next_id: int | None = None
    stored: int = 0

    def forget(self) -> None:
        self.next_id = None


@attrs.define
class Txn:
    """What operations of one transaction share: the next event id."""

    ids: Ids
    next_id: int | None = None
    #: The transaction is one statement in autocommit (Op.single, alone): the id
    #: mark is written by that statement (mark()), not by finish().
    autocommit: bool = False
    #: The id mark this transaction writes (the stored one once it commits).
    reserved: int | None = None

    def take_ids(self, conn: sqlite3.Connection, n: int) -> int:
        if self.next_id is None:
            if self.ids.next_id is None:
                stored, top = conn.execute("SELECT (SELECT value FROM meta WHERE key ="
                                           " 'next_event_id'), (SELECT max(id) FROM events)"
                                           ).fetchone()
                self.ids.stored = stored
                self.ids.next_id = max(stored, (top or 0) + 1)
            self.next_id = self.ids.next_id
        first = self.next_id
        self.next_id += n
        return first

    def mark(self) -> int | None:
        """In autocommit, the id mark the one statement is to write, if the ids taken
        passed the stored one (None: none to write)."""
        return self._reserve() if self.autocommit else None

    def finish(self, conn: sqlite3.Connection) -> None:
        """Before COMMIT: reserve the next block if this transaction passed the mark."""
        reserved = self._reserve()
        if reserved is not None:
            conn.execute("UPDATE meta SET value = ? WHERE key = 'next_event_id'",
                         (reserved,))

    def _reserve(self) -> int | None:
        if self.next_id is None or self.next_id <= self.ids.stored:
            return None
        self.reserved = self.next_id + ID_BLOCK
        return self.reserved

    def committed(self) -> None:
        """The transaction committed: its ids are used, its mark is stored. (Until
        then nothing of it is remembered: a write that fails or is interrupted
        leaves the connection's idea of the stored mark as the file has it.)"""
        if self.next_id is not None:
            self.ids.next_id = self.next_id
        if self.reserved is not None:
            self.ids.stored = self.reserved


@attrs.define(eq=False)
class Op:
    """A queued write: ``fn(conn, txn)`` runs in the leader's transaction."""

    fn: Callable[[sqlite3.Connection, Txn], Any]
    sync: bool  # must be durable on return
    doing: str  # the method, for messages
    #: ``fn`` writes in one statement (it may read first), so alone it needs no
    #: BEGIN and COMMIT of its own (sqlite_events.py).
    single: bool = False
    result: Any = UNSET
    error: BaseException | None = None
    done: bool = False


def touch(conn: sqlite3.Connection, txn: Txn) -> None:
    """A change, so a commit at the durable level writes (and fsyncs) the WAL."""
    conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'flushes'")


def statement(sql: str, args: tuple[Any, ...]) -> Callable[[sqlite3.Connection, Txn], None]:
    """An operation that runs one statement."""

    def run(conn: sqlite3.Connection, txn: Txn) -> None:
        conn.execute(sql, args)

    return run
