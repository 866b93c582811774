"""The SQLite :class:`~cosnotify.store.interface.Store`: one file, WAL, group commit.

Strategy: one connection in WAL mode, used under one lock (``_lock``). Every
write is an *operation* put on ``_queue``; a caller that finds nobody
committing becomes the leader: under the lock it takes every queued
operation (up to ``MAX_GROUP``), runs each in a SAVEPOINT of one
transaction, commits once and wakes the callers it served, who waited on a
condition. Concurrent writers so share one commit and one fsync, and one
caller's failure (``SQLITE_FULL`` half way through its events) is undone
alone. An operation that is one statement (the event log's writes,
sqlite_events.py) runs alone in autocommit, with no BEGIN and COMMIT. Reads take the same lock and connection: they see every write that
has returned, releases included.

Durability: a group with an operation that must be durable on return (put,
delete, the counters, add_events, flush) commits at the ``synchronous``
level given (FULL by default: the WAL is fsynced first). A group of only
releases (``release``, ``drop_consumer``) commits at NORMAL: the WAL frames
are written, so a killed process loses nothing, but not fsynced, so a power
loss may undo them; the next durable commit, ``flush`` or ``close`` makes
them durable too (the WAL is written in order). That is the duplicate
window of docs/persistence.md, "The store".

The file: a new store is built whole in a temporary file beside ``path``
and renamed into place, so a file at ``path`` is absent, empty, or a
complete store. An existing file's header (magic, application id) is read
by hand first, so SQLite never touches a foreign file. ``MIGRATIONS[v]``
takes schema ``v`` to ``v + 1``; the steps an open needs run in one
transaction. Event ids come from ``meta.next_event_id``, a high-water mark
written with the events -- ``ID_BLOCK`` ids ahead, so it is written once a
block, not every commit -- so no id is reused once its event is gone (a
consumer paging with ``after=`` would miss a reused id; an Ack consumer
would take a new event for one it has seen).
"""
from __future__ import annotations

import contextlib
import errno
import operator
import os
import secrets
import sqlite3
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any, Self

from cosnotify.store.interface import Reason, Record, StoreError
from cosnotify.store.lockfile import StoreLock
from cosnotify.store.sqlite_events import (
    COPIES_AGAIN_MIGRATION,
    COPIES_MIGRATION,
    PENDING_SQL,
    EventLogTable,
    install,
)
from cosnotify.store.sqlite_history import (
    HISTORY_MIGRATION,
    HISTORY_SOURCE_INDEX_BACK,
    HISTORY_SOURCE_MIGRATION,
    HistoryTable,
)
from cosnotify.store.sqlite_rows import blob
from cosnotify.store.sqlite_txn import ID_BLOCK, UNSET, Ids, Op, Txn, statement, touch

__all__ = ["APPLICATION_ID", "ID_BLOCK", "MAX_GROUP", "MIGRATIONS", "MIN_MAX_BYTES", "PENDING_SQL",
           "WAL_SIZE_LIMIT", "SQLiteStore"]

#: ``PRAGMA application_id`` of every cosnotify store ("CoSN"); header bytes 68-71.
APPLICATION_ID = 0x436F534E

#: ``MIGRATIONS[v]`` takes a store from schema version ``v`` to ``v + 1``; the
#: version this code writes is ``len(MIGRATIONS)``. Append; never edit an entry.
MIGRATIONS: list[tuple[str, ...]] = [
    (  # 0 -> 1
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID",
        "INSERT INTO meta (key, value) VALUES ('next_event_id', 1), ('flushes', 0)",
        # seq keeps the order paths were first written; an upsert keeps it.
        ("CREATE TABLE records (seq INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE,"
         " kind TEXT NOT NULL, data BLOB NOT NULL)"),
        "CREATE TABLE counters (name TEXT PRIMARY KEY, next INTEGER NOT NULL) WITHOUT ROWID",
        "CREATE TABLE events (id INTEGER PRIMARY KEY, data BLOB NOT NULL)",
        # (consumer, event_id) is the paging order of pending(); the index finds an
        # event's other holders when a copy is released (until step 4 -> 5).
        ("CREATE TABLE pending (consumer TEXT NOT NULL, event_id INTEGER NOT NULL,"
         " PRIMARY KEY (consumer, event_id)) WITHOUT ROWID"),
        "CREATE INDEX pending_by_event ON pending (event_id)",
    ),
    HISTORY_MIGRATION,  # 1 -> 2: retained events (docs/history.md)
    HISTORY_SOURCE_MIGRATION,  # 2 -> 3: the source index only where there is a source
    HISTORY_SOURCE_INDEX_BACK,  # 3 -> 4: ... undone (the second pass of a source scan)
    COPIES_MIGRATION,  # 4 -> 5: event_copies counts shared events' copies; the index goes
    COPIES_AGAIN_MIGRATION,  # 5 -> 6: either shape of schema 5 to one (sqlite_events.py)
]

#: At most this many queued operations share one transaction.
MAX_GROUP = 1024
#: The smallest ``max_bytes`` accepted (the empty schema takes about 40 KiB).
MIN_MAX_BYTES = 64 * 1024
#: After a checkpoint the WAL file is truncated back to at most this size.
WAL_SIZE_LIMIT = 8 * 2**20

_SYNC_LEVELS = ("OFF", "NORMAL", "FULL", "EXTRA")
_HEADER_MAGIC = b"SQLite format 3\x00"
# By primary result code (the low byte of sqlite3.Error.sqlite_errorcode): SQLITE_FULL,
# SQLITE_CORRUPT, SQLITE_NOTADB, SQLITE_READONLY; SQLITE_CANTOPEN only when opening.
_REASONS = {13: Reason.FULL, 11: Reason.DAMAGED, 26: Reason.DAMAGED, 8: Reason.READ_ONLY}
_SQLITE_CANTOPEN = 14
_EXPLAIN = {Reason.FULL: "the store is full", Reason.DAMAGED: "the file is damaged",
            Reason.READ_ONLY: "the file cannot be written", Reason.IO: "SQLite failed"}

class SQLiteStore(EventLogTable, HistoryTable):
    """A :class:`~cosnotify.store.interface.Store` in the SQLite file ``path``.

    ``max_bytes`` bounds the database file (``PRAGMA max_page_count``; the WAL
    beside it is extra: checkpointed every 1000 pages, then cut back to
    ``WAL_SIZE_LIMIT``): past it writes raise StoreError(FULL), and releasing
    events makes room again. ``synchronous`` is SQLite's level for durable
    commits (``FULL``: fsynced on return).
    ``commits`` counts the transactions committed.
    """

    def __init__(self, path: str | os.PathLike[str], *, max_bytes: int | None = None,
                 synchronous: str = "FULL") -> None:
        self.path = os.fspath(path)  # as given: the name errors use
        # The file itself, resolved once: a symlink (dangling too: a store not made yet)
        # is followed for the header, the temporary file, the rename and the lock alike.
        self._file = os.path.realpath(self.path)
        level = synchronous.upper()
        if level not in _SYNC_LEVELS:
            raise ValueError(f"synchronous must be one of {', '.join(_SYNC_LEVELS)},"
                             f" not {synchronous!r}")
        if max_bytes is not None and max_bytes < MIN_MAX_BYTES:
            raise ValueError(f"max_bytes must be at least {MIN_MAX_BYTES}, not {max_bytes}")
        self.max_bytes = max_bytes
        self.commits = 0
        self._ids = Ids()
        self._sync_level = level
        # Releases never ask for more than NORMAL, nor more than the caller chose.
        self._release_level = min(level, "NORMAL", key=_SYNC_LEVELS.index)
        self._sync_now = ""
        self._unsynced = False  # a commit since the last one at _sync_level
        self._lock = threading.Lock()  # the connection; a leader holds it while committing
        guard = threading.Lock()  # the queue, _leading, _closed
        self._cond = threading.Condition(guard)  # followers wait here for their results
        self._queue_grew = threading.Condition(guard)  # for wait_queued()
        self._queue: list[Op] = []
        self._leading = False
        self._closed = False
        self._conn: sqlite3.Connection | None = self._open()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- opening -----------------------------------------------------------------------------
    def _fail(self, reason: Reason, what: str) -> StoreError:
        return StoreError(reason, f"{self.path}: {what}")

    def _open(self) -> sqlite3.Connection:
        self._check_writable()
        self._check_header()  # reads only: a foreign file gets no lock file
        self._file_lock = StoreLock(self._file)  # one process on the file (lockfile.py)
        try:
            # Read again under the lock: another process may have made the store since.
            return self._open_locked(self._check_header())
        except BaseException:
            self._file_lock.release()
            raise

    def _open_locked(self, exists: bool) -> sqlite3.Connection:
        if not exists:
            self._create()
        else:
            self._check_version()  # before WAL mode or a migration changes a byte
        conn = self._connect()
        try:
            self._migrate(conn, creating=False)
            try:
                install(conn)
            except sqlite3.Error as exc:
                raise self._fail(Reason.IO, f"SQLite {sqlite3.sqlite_version} cannot make the"
                                            f" event log's statements (they need its JSON"
                                            f" functions): {exc}") from exc
            if self.max_bytes is not None:
                page_size = conn.execute("PRAGMA page_size").fetchone()[0]
                conn.execute(f"PRAGMA max_page_count = {self.max_bytes // page_size}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _check_writable(self) -> None:
        folder = os.path.dirname(self._file)
        if not os.path.isdir(folder):
            raise self._fail(Reason.READ_ONLY, f"cannot write here: {folder} is not a directory")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise self._fail(Reason.READ_ONLY, f"cannot write in {folder} (SQLite keeps its"
                                               " -wal and -shm files beside the store)")
        if os.path.exists(self._file) and not os.access(self._file, os.W_OK):
            raise self._fail(Reason.READ_ONLY, "the file is read-only")
        for beside in (self._file + "-wal", self._file + "-shm"):
            if not os.path.lexists(beside):
                continue
            if not os.path.isfile(beside):
                raise self._fail(Reason.READ_ONLY, f"{beside} is not a regular file")
            if not os.access(beside, os.R_OK | os.W_OK):
                raise self._fail(Reason.READ_ONLY, f"{beside} cannot be written (SQLite"
                                                   " writes it beside the store)")

    def _check_header(self) -> bool:
        """Whether there is a store at ``path`` (False: no file, or an empty one).

        Reads the 100-byte header itself, so SQLite never touches a foreign file."""
        try:
            with open(self._file, "rb") as file:
                header = file.read(100)
        except FileNotFoundError:
            return False
        except IsADirectoryError:
            raise self._fail(Reason.DAMAGED, "is a directory, not a store") from None
        except OSError as exc:
            raise self._fail(Reason.IO, f"cannot read the file: {exc}") from exc
        if not header:
            return False
        if len(header) < 100 or not header.startswith(_HEADER_MAGIC):
            raise self._fail(Reason.DAMAGED, "not a cosnotify store (not an SQLite database);"
                                             " left untouched")
        app_id = int.from_bytes(header[68:72], "big", signed=True)
        if app_id != APPLICATION_ID:
            raise self._fail(Reason.DAMAGED, f"not a cosnotify store (an SQLite database with"
                                             f" application id {app_id:#x}, not"
                                             f" {APPLICATION_ID:#x}); left untouched")
        return True

    def _connect(self, path: str | None = None) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(path or self._file, isolation_level=None,
                                   check_same_thread=False, timeout=5.0)
        except sqlite3.Error as exc:
            raise self._error(exc, "cannot open", opening=True) from exc
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode != "wal":
                raise self._fail(Reason.IO, f"cannot use WAL mode (journal mode is {mode})")
            conn.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
        except BaseException as exc:
            conn.close()
            if isinstance(exc, sqlite3.Error):
                raise self._error(exc, "cannot open", opening=True) from exc
            raise
        return conn

    def _create(self) -> None:
        """Build an empty store in a temporary file and rename it to ``path``."""
        temp = f"{self._file}.new-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            conn = self._connect(temp)
            try:
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                self._migrate(conn, creating=True)
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                conn.close()
            _fsync(temp)
            os.replace(temp, self._file)
            _fsync(os.path.dirname(self._file))
        except sqlite3.Error as exc:
            raise self._error(exc, "cannot create the store", opening=True) from exc
        except OSError as exc:
            reason = {errno.ENOSPC: Reason.FULL, errno.EDQUOT: Reason.FULL,
                      errno.EACCES: Reason.READ_ONLY, errno.EPERM: Reason.READ_ONLY,
                      errno.EROFS: Reason.READ_ONLY}.get(exc.errno or 0, Reason.IO)
            raise self._fail(reason, f"cannot create the store: {exc}") from exc
        finally:
            for leftover in (temp, temp + "-wal", temp + "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(leftover)

    def _migrate(self, conn: sqlite3.Connection, *, creating: bool) -> None:
        """Bring the schema to ``len(MIGRATIONS)``, every step in one transaction."""
        known = len(MIGRATIONS)
        try:
            version = self._schema_version(conn, creating)
            self._refuse_newer(version)  # under the lock: _check_version read it already
            if version == known:
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                for step in range(version, known):
                    for statement in MIGRATIONS[step]:
                        conn.execute(statement)
                conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', ?)"
                             " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                             (known,))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise self._error(exc, "cannot read or migrate the schema", opening=True) from exc

    def _check_version(self) -> None:
        """Refuse a newer or damaged schema on a read-only connection (no WAL pragma)."""
        try:
            conn = sqlite3.connect(f"{_file_uri(self._file)}?mode=ro", uri=True,
                                   isolation_level=None, timeout=5.0)
        except sqlite3.Error as exc:
            raise self._error(exc, "cannot open", opening=True) from exc
        try:
            version = self._schema_version(conn, False)
            self._refuse_newer(version)
            # Every page's structure (about 0.05 s for 100,000 events, 36 MB, cached):
            # a damaged file is refused now, not written to with its events unreadable.
            found = [row[0] for row in conn.execute("PRAGMA quick_check(1)")]
        except sqlite3.Error as exc:
            raise self._error(exc, "cannot read or check the file", opening=True) from exc
        finally:
            conn.close()
        if found != ["ok"]:
            raise self._fail(Reason.DAMAGED, f"the file is damaged (PRAGMA quick_check:"
                                             f" {' '.join(str(found[0]).split())}); left"
                                             " untouched")

    def _refuse_newer(self, version: int) -> None:
        if version > len(MIGRATIONS):
            raise self._fail(Reason.NEWER_SCHEMA, f"written by a newer cosnotify (schema"
                                                  f" {version}, this code knows"
                                                  f" {len(MIGRATIONS)})")

    def _schema_version(self, conn: sqlite3.Connection, creating: bool) -> int:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
            if creating:
                return 0
            raise self._fail(Reason.DAMAGED, "has cosnotify's application id but no meta table")
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None or not isinstance(row[0], int) or row[0] < 1:
            raise self._fail(Reason.DAMAGED, f"no valid schema_version in meta ({row})")
        return int(row[0])

    # -- the write queue ---------------------------------------------------------------------
    def _closed_error(self) -> StoreError:
        return self._fail(Reason.CLOSED, "the store is closed")

    def _check_open(self) -> None:
        with self._cond:
            if self._closed:
                raise self._closed_error()

    def _submit(self, fn: Callable[[sqlite3.Connection, Txn], Any], *, sync: bool,
                doing: str, single: bool = False) -> Any:
        """Queue one write, lead a group commit or wait for one; its result."""
        op = Op(fn, sync, doing, single)
        with self._cond:
            if self._closed:
                raise self._closed_error()
            self._queue.append(op)
            self._queue_grew.notify_all()
            while not op.done:
                if self._leading:
                    self._cond.wait()
                    continue
                self._leading = True
                self._cond.release()
                group: list[Op] = []
                try:
                    with self._lock:
                        with self._cond:
                            group = self._queue[:MAX_GROUP]
                            del self._queue[:MAX_GROUP]
                        self._run(group)
                finally:
                    self._cond.acquire()
                    for queued in group:
                        if queued.error is None and queued.result is UNSET:
                            queued.error = self._fail(Reason.IO, f"{queued.doing}: interrupted")
                        queued.done = True
                    self._leading = False
                    self._cond.notify_all()
        if op.error is not None:
            raise op.error
        return op.result

    def _run(self, group: list[Op]) -> None:
        """Run ``group`` in one transaction and commit (under ``_lock``)."""
        conn = self._conn
        if conn is None:
            for op in group:
                op.error = self._closed_error()
            return
        level = self._sync_level if any(op.sync for op in group) else self._release_level
        todo = group
        while todo:
            try:
                if level != self._sync_now:
                    conn.execute(f"PRAGMA synchronous = {level}")
                    self._sync_now = level
                if not self._transaction(conn, todo):
                    self._ids.forget()
                    todo = [op for op in todo if op.error is None]
                    continue
            except sqlite3.Error as exc:
                self._ids.forget()
                if conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                for op in todo:
                    if op.error is None:
                        op.error = self._error(exc, op.doing)
                        op.result = UNSET
                return
            self.commits += 1
            self._unsynced = level != self._sync_level
            return

    def _transaction(self, conn: sqlite3.Connection, ops: list[Op]) -> bool:
        """One try at ``ops``; False if it committed nothing (SQLite undid it, or a lone op
        failed): the caller reruns the ops without an error, if any."""
        alone = len(ops) == 1  # then the transaction is the op's savepoint
        if alone and ops[0].single:
            return self._autocommit(conn, ops[0])
        txn = Txn(self._ids)
        conn.execute("BEGIN IMMEDIATE")
        for op in ops:
            if not alone:
                conn.execute("SAVEPOINT op")
            try:
                op.result = op.fn(conn, txn)
            except Exception as exc:  # noqa: BLE001 - handed to the caller that asked
                op.error = self._error(exc, op.doing) if isinstance(exc, sqlite3.Error) else exc
                op.result = UNSET
                if alone or not conn.in_transaction:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    return False
                conn.execute("ROLLBACK TO op")
            if not alone:
                conn.execute("RELEASE op")
        txn.finish(conn)
        conn.execute("COMMIT")
        txn.committed()
        return True

    def _autocommit(self, conn: sqlite3.Connection, op: Op) -> bool:
        """``op`` alone, its one statement its transaction (see :meth:`_transaction`)."""
        txn = Txn(self._ids, autocommit=True)
        try:
            op.result = op.fn(conn, txn)
        except Exception as exc:  # noqa: BLE001 - handed to the caller that asked
            op.error = self._error(exc, op.doing) if isinstance(exc, sqlite3.Error) else exc
            op.result = UNSET
            if conn.in_transaction:  # not ours to leave open
                conn.execute("ROLLBACK")
            return False
        txn.committed()
        return True

    def _error(self, exc: sqlite3.Error, doing: str, *, opening: bool = False) -> StoreError:
        code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
        reason = _REASONS.get(code, Reason.READ_ONLY if opening and code == _SQLITE_CANTOPEN
                              else Reason.IO)
        limit = f" (max_bytes={self.max_bytes})" if reason is Reason.FULL and self.max_bytes else ""
        error = self._fail(reason, f"{doing}: {_EXPLAIN[reason]}{limit} ({exc})")
        error.__cause__ = exc
        return error

    def _read(self, fn: Callable[[sqlite3.Connection], Any], doing: str) -> Any:
        with self._lock:
            if self._conn is None:
                raise self._closed_error()
            try:
                return fn(self._conn)
            except sqlite3.Error as exc:
                raise self._error(exc, doing) from exc

    # -- for tests and benchmarks ------------------------------------------------------------
    @contextlib.contextmanager
    def hold_commits(self) -> Iterator[None]:
        """While inside, no transaction starts and no read runs: writers queue up."""
        with self._lock:
            yield

    def wait_queued(self, n: int, timeout: float) -> bool:
        """Wait until ``n`` writes are queued (see :meth:`hold_commits`); False on timeout."""
        with self._cond:
            return self._queue_grew.wait_for(lambda: len(self._queue) >= n, timeout)

    # -- topology --------------------------------------------------------------------------
    def put(self, record: Record) -> None:
        self._submit(statement(
            "INSERT INTO records (path, kind, data) VALUES (?, ?, ?) ON CONFLICT (path)"
            " DO UPDATE SET kind = excluded.kind, data = excluded.data",
            (record.path, record.kind, blob(record.data, "record.data"))),
            sync=True, doing="put")

    def delete(self, path: str) -> None:
        # Every path below ``path`` sorts in [path + "/", path + "0"): "0" follows "/".
        self._submit(statement("DELETE FROM records WHERE path = ? OR (path >= ? AND path < ?)",
                                (path, path + "/", path + "0")), sync=True, doing="delete")

    def records(self) -> list[Record]:
        rows = self._read(lambda conn: conn.execute(
            "SELECT path, kind, data FROM records ORDER BY seq").fetchall(), "records")
        return [Record(path, kind, data) for path, kind, data in rows]

    # -- counters --------------------------------------------------------------------------
    def next_value(self, name: str) -> int:
        def take(conn: sqlite3.Connection, txn: Txn) -> int:
            row = conn.execute("SELECT next FROM counters WHERE name = ?", (name,)).fetchone()
            value: int = row[0] if row else 0
            conn.execute("INSERT INTO counters (name, next) VALUES (?, ?) ON CONFLICT (name)"
                         " DO UPDATE SET next = excluded.next", (name, value + 1))
            return value

        value: int = self._submit(take, sync=True, doing="next_value")
        return value

    def peek_value(self, name: str) -> int:
        row = self._read(lambda conn: conn.execute(
            "SELECT next FROM counters WHERE name = ?", (name,)).fetchone(), "peek_value")
        return int(row[0]) if row else 0

    def raise_value(self, name: str, at_least: int) -> None:
        self._submit(statement(
            "INSERT INTO counters (name, next) VALUES (?, ?) ON CONFLICT (name)"
            " DO UPDATE SET next = max(next, excluded.next)",
            (name, max(0, operator.index(at_least)))), sync=True, doing="raise_value")

    # -- lifecycle ---------------------------------------------------------------------------
    def flush(self) -> None:
        with self._lock:
            if self._conn is None:
                raise self._closed_error()
            if not self._unsynced:
                return
        self._submit(touch, sync=True, doing="flush")

    def close(self) -> None:
        """Finish queued writes, make releases durable, close. A second close does nothing."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.wait_for(lambda: not self._leading and not self._queue)
        flush = Op(touch, sync=True, doing="close")
        with self._lock:
            if self._conn is None:
                return
            try:
                if self._unsynced:
                    self._run([flush])
            finally:
                self._conn.close()
                self._conn = None
                self._file_lock.release()
        if flush.error is not None:
            raise flush.error


def _file_uri(path: str) -> str:
    """``path`` as an SQLite ``file:`` URI (``?`` and ``#`` in a name are escaped)."""
    return "file:" + urllib.parse.quote(os.path.abspath(path))


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
