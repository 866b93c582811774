"""Retention: a channel keeps the events it accepted, in the store (docs/history.md).

Strategy: the channel's admin properties ``RetainAge``, ``RetainCount`` and
``RetainBytes`` (cosnotify's own, docs/qos.md) bound a channel's history by
age, count and bytes; any of them above 0 turns retention on (it needs a
store). Each event the channel accepts -- after its supplier side's filters,
once routed -- is handed to :meth:`Retention.keep`, one supply call's
events together (they share a *session*). ``keep`` only appends the events
to a buffer: a worker of the service encodes them and writes what is encoded
to the store in one ``add_history`` call (writes grow with the load), and
trims the history to its bounds (expired rows, too old, too many, too
large) at most once a second; trims cost what they delete. Between two
trims the history may hold a second's events past its bounds; a query
writes what is buffered and trims first, so it sees every event kept before
it and none past the bounds.

Encoding and writing are two stages, each one thread at a time and in
order (the encode lock, then the write lock): encoding holds the GIL, most
of a write does not (SQLite runs without it), so one thread's encoding
overlaps another's write; the service's writer writes a round at a time
and comes back as a new task, so a query waiting for the write lock is not
kept waiting by a steady supply. Past :data:`MAX_BUFFERED` events waiting,
a supply call encodes the buffer itself before adding to it, and with
:data:`MAX_ENCODED` rows waiting it writes them first: flow control, so a
supplier goes at the pace the store keeps and memory stays bounded (never
on a worker the writer needs, so it cannot wait for itself). Events that
cannot be encoded and rows a failed write loses are dropped and counted
(``dropped``).

An event's expiry in the history is the earlier of its StopTime and its
arrival plus its Timeout (the values the channel resolved when it came);
an Event Heap ``TimeToLive`` maps onto Timeout.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import deque
from typing import Any

from cosnotify.channel import codec
from cosnotify.store.history import HistoryRow

__all__ = ["LINGER", "LINGER_EVENTS", "MAX_BUFFERED", "MAX_ENCODED", "TRIM_EVERY", "Bounds",
           "Retention"]

log = logging.getLogger("cosnotify.channel")

#: Events waiting to be encoded, at most (past it, plus the supply calls' in flight):
#: then a supply call encodes the buffer itself before it adds to it (flow control).
MAX_BUFFERED = 10_000
#: Rows encoded and waiting to be written, at most (past it, plus one buffer's): then
#: a supply call about to encode writes them itself first.
MAX_ENCODED = 2 * MAX_BUFFERED
#: Seconds between two trims of a channel's history.
TRIM_EVERY = 1.0
#: A write of fewer events than LINGER_EVENTS waits LINGER seconds for more to
#: share its transaction (group commit's linger: one-event supply calls cost a
#: transaction each otherwise, and each of its statements a wait for the GIL).
#: 20 ms: what a crash can lose of the history (docs/history.md); 2 ms made an
#: Eventer client registering one event at a time pay a write per 7 events.
LINGER = 0.02
LINGER_EVENTS = 100


class Bounds:
    """A channel's retention bounds (0: no bound of that kind)."""

    __slots__ = ("age", "count", "size")

    def __init__(self, age: float, count: int, size: int) -> None:
        self.age, self.count, self.size = age, count, size

    @property
    def on(self) -> bool:
        return bool(self.age or self.count or self.size)


class Retention:
    """One channel's history writer (module docstring)."""

    def __init__(self, channel: Any, store: Any, path: str, bounds: Bounds) -> None:
        self._channel = channel
        self._service = channel._service
        self._store = store
        self.path = path
        self.bounds = bounds
        self._lock = threading.Lock()
        #: Events accepted, one supply call's with its session, waiting to be encoded
        #: and written; ``_buffered`` events in all.
        self._buffer: deque[tuple[list[Any], int]] = deque()
        self._buffered = 0
        #: Rows encoded, in the order their events came, waiting to be written.
        self._encoded: list[HistoryRow] = []
        self._flushing = False
        self._encode_lock = threading.Lock()  # one encoder at a time, in order
        self._write_lock = threading.Lock()  # one writer at a time, in order
        self._last_trim = 0.0
        #: False once the channel is destroyed or stops retaining: nothing more is
        #: written (checked under the write lock, so a flush in flight stops too).
        self.alive = True
        #: False once stopping: ``keep`` buffers nothing more. A supply call that got
        #: this writer before it stopped writes its own events if ``_late_write``
        #: (retention turned off: what was accepted is kept), else counts them dropped.
        self._accepting = True
        self._late_write = False
        #: Events not kept: the event could not be encoded, or the store failed to
        #: write it.
        self.dropped = 0
        #: Rows written to the store.
        self.written = 0
        # Sessions: an epoch from the store (never the same twice), then a count.
        self._epoch = store.next_value("history_session_epoch") << 32
        self._sessions = itertools.count(1)
        #: What the store holds for this channel, rows and bytes (read once, then kept
        #: by what is written and trimmed): trims by count and bytes need no count(*).
        self._count, self._bytes = store.history_size(path)

    def keep(self, events: list[Any]) -> None:
        """Buffer ``events`` (accepted by the channel, one supply call's: one session)
        for the store. Never raises (the encoding is the writer's); with the buffer
        full, the supply call encodes it itself first (module docstring)."""
        with self._lock:
            accepting, late_write = self._accepting, self._late_write
            full = accepting and self._buffered >= MAX_BUFFERED
        if not accepting:
            self._late(events, late_write)
            return
        if full:
            try:
                self._relieve()
            except Exception:  # counted in dropped, and logged
                log.exception("%r: its history could not be written", self._channel)
        with self._lock:
            if not self._accepting:  # stopped meanwhile
                accepting, late_write = False, self._late_write
            else:
                session = int(self._epoch | next(self._sessions))
                self._buffer.append((events, session))
                self._buffered += len(events)
                start = not self._flushing
                self._flushing = True
                linger = self._buffered < LINGER_EVENTS
        if not accepting:
            self._late(events, late_write)
        elif start and linger:  # a few events: more may come to share the transaction
            self._service.clock.call_later(LINGER, self._linger_over)
        elif start:
            self._service.submit(self._flush_task)

    def _linger_over(self) -> None:
        """LINGER after a few events came: the writer's turn (a closed service queues
        nothing: its stop writes what is kept)."""
        self._service.submit(self._flush_task)

    def _late(self, events: list[Any], write: bool) -> None:
        """Events of a supply call that got this writer before it stopped."""
        if write:
            with self._lock:
                session = int(self._epoch | next(self._sessions))
            try:
                with self._write_lock:
                    self._write(self._rows([(events, session)]))
            except Exception:  # counted in dropped by _write
                log.exception("%r: its history could not be written", self._channel)
            return
        with self._lock:
            self.dropped += len(events)

    def _flush_task(self) -> None:
        try:
            self._write_round(encode=True)
        except Exception:
            log.exception("%r: its history could not be written", self._channel)
        finally:
            with self._lock:  # events kept since the last look: another flush
                again = bool(self._buffer or self._encoded) and self.alive
                self._flushing = again
            if again:
                self._service.submit(self._flush_task)

    def tick(self) -> None:
        """The periodic trim (rows grow old with no new event coming): due, and no
        flush already pending, it is a flush on a worker."""
        with self._lock:
            due = not self._flushing and \
                self._service.clock.now() - self._last_trim >= TRIM_EVERY
            if due:
                self._flushing = True
        if due:
            self._service.submit(self._flush_task)

    def flush(self, trim: bool = False, once: bool = False) -> None:
        """Write what is buffered, and trim if due (or if ``trim``: a query does both
        first, so it sees every event kept before it and none past the bounds). With
        ``once``, only what was buffered at the first look (a query or a stop writes
        that much, never becoming the writer for others); without it, until nothing
        is left (for a caller that stopped supplying, as a benchmark's end)."""
        while True:
            self._encode()  # what is buffered (or being encoded by another thread)
            self._write_round(False, trim)
            with self._lock:
                if once or not (self.alive and (self._buffer or self._encoded)):
                    return

    def _write_round(self, encode: bool, trim: bool = False) -> None:
        """Under the write lock: write what is encoded; with ``encode``, encode what is
        buffered unless another thread is at it, and write that too; trim if due. One
        round and the lock is let go: the service's writer comes back as a new task
        (``_flush_task``), so a query waiting for the lock under a steady supply is
        not kept waiting by a writer that never stops."""
        with self._write_lock:
            self._write_encoded()
            if encode and self.alive and self._encode(wait=False):
                self._write_encoded()
            now = self._service.clock.now()
            if self.alive and (trim or now - self._last_trim >= TRIM_EVERY):
                self._last_trim = now
                self.trim(now)

    def _relieve(self) -> None:
        """A supply call at the bound: encode the buffer, but first write the rows
        encoded if MAX_ENCODED are waiting -- checked and encoded under the encode
        lock, so however many supply calls come, the rows waiting stay under
        MAX_ENCODED plus one buffer."""
        while self.alive:
            with self._encode_lock:
                with self._lock:
                    backlog = len(self._encoded) >= MAX_ENCODED
                if not backlog:
                    self._encode_held()
                    return
            with self._write_lock:
                self._write_encoded()

    def _encode(self, wait: bool = True) -> bool:
        """Encode what is buffered onto the rows waiting to be written (in order: one
        encoder at a time); whether there was any. Without ``wait``, nothing if another
        thread encodes."""
        if not self._encode_lock.acquire(blocking=wait):
            return False
        try:
            return self._encode_held()
        finally:
            self._encode_lock.release()

    def _encode_held(self) -> bool:
        """:meth:`_encode` with the encode lock held. Rows left with no writer running
        get one (the service's)."""
        with self._lock:
            taken = list(self._buffer)
            self._buffer.clear()
            self._buffered = 0
        if not taken:
            return False
        rows = self._rows(taken)
        with self._lock:
            start = False
            if self.alive:
                self._encoded.extend(rows)
                start = not self._flushing
                self._flushing = True
            else:  # stopped meanwhile (stop() counted what it found)
                self.dropped += len(rows)
        if start:
            self._service.submit(self._flush_task)
        return True

    def _write_encoded(self) -> None:
        """Write the rows waiting (the write lock held)."""
        if not self.alive:
            return
        with self._lock:
            rows, self._encoded = self._encoded, []
        if rows:
            self._write(rows)

    def _write(self, rows: list[HistoryRow]) -> None:
        """Write ``rows`` (the write lock held) and count them; a failure counts them
        as dropped and raises."""
        try:
            self._store.add_history(self.path, rows)
        except Exception:
            with self._lock:
                self.dropped += len(rows)
            raise
        self.written += len(rows)
        self._count += len(rows)
        self._bytes += sum(len(row.data) for row in rows)

    def _rows(self, taken: list[tuple[list[Any], int]]) -> list[HistoryRow]:
        """The store's rows of buffered events (``(events, session)`` each); one that
        cannot be encoded is dropped and counted (a string holding NUL, say: CORBA
        cannot marshal it)."""
        from cosnotify.history.records import path_and_source

        rows = []
        encode = codec.encode_event
        for events, session in taken:
            for event in events:
                try:
                    path, source = path_and_source(event.as_structured())
                    rows.append(HistoryRow(event.arrival, session, path, source,
                                           event.deadline, encode(event)))
                except Exception as exc:  # noqa: BLE001 - one event lost, counted, logged
                    with self._lock:
                        self.dropped += 1
                    log.warning("%r: an event could not be kept in its history: %s",
                                self._channel, exc)
        return rows

    def stop(self, write: bool = False) -> None:
        """No more writes (the channel is destroyed, or stopped retaining): waits for
        a write in flight; with ``write``, what is buffered is written first, and a
        supply call still holding this writer writes its own events."""
        with self._lock:
            self._accepting = False
            self._late_write = write
        if write:
            try:
                self.flush(once=True)  # nothing more is buffered: one snapshot is all
            except Exception:  # counted in dropped by flush
                log.exception("%r: its history could not be written", self._channel)
        self.alive = False
        with self._write_lock, self._lock:
            self.dropped += self._buffered + len(self._encoded)
            self._buffer.clear()
            self._buffered = 0
            self._encoded = []

    def trim(self, now: float) -> int:
        """Delete what expired or is past the bounds; how many rows went. Costs what it
        deletes (cosnotify/store/sqlite_history.py)."""
        bounds = self.bounds
        count, size = self._store.expire_history(
            self.path, now, now - bounds.age if bounds.age else None)
        over_count = self._count - count - bounds.count if bounds.count else 0
        over_bytes = self._bytes - size - bounds.size if bounds.size else 0
        if over_count > 0 or over_bytes > 0:
            more, more_size = self._store.drop_oldest_history(
                self.path, max(0, over_count), max(0, over_bytes))
            count, size = count + more, size + more_size
        self._count -= count
        self._bytes -= size
        return int(count)
