"""Retention: a channel keeps the events it accepted, in the store (docs/history.md).

Strategy: the channel's admin properties ``RetainAge``, ``RetainCount`` and
``RetainBytes`` (cosnotify's own, docs/qos.md) bound a channel's history by
age, count and bytes; any of them above 0 turns retention on (it needs a
store). Each event the channel accepts -- after its supplier side's filters,
once routed -- is handed to :meth:`Retention.keep` with its *session* (the
events one supply call brought share one). ``keep`` only appends to a
bounded buffer: a worker of the service writes the buffer to the store in
one ``add_history`` call, and trims the history to its bounds (expired rows,
too old, too many, too large) at most once a second, so a push never waits
for the store (between two trims the history may hold a second's events past
its bounds; a query trims first). Past :data:`MAX_BUFFERED` rows waiting to be written the
oldest are dropped and counted (``dropped``). A query first writes what is
buffered, so it sees every event accepted before it.

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

__all__ = ["MAX_BUFFERED", "TRIM_EVERY", "Bounds", "Retention"]

log = logging.getLogger("cosnotify.channel")

#: Rows waiting to be written, at most (the oldest past it are dropped and counted).
MAX_BUFFERED = 100_000
#: Seconds between two trims of a channel's history.
TRIM_EVERY = 1.0


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
        self._buffer: deque[HistoryRow] = deque()
        self._flushing = False
        self._write_lock = threading.Lock()  # one writer at a time, in order
        self._last_trim = 0.0
        #: Rows dropped because the buffer was full (the store could not keep up).
        self.dropped = 0
        #: Rows written to the store.
        self.written = 0
        # Sessions: an epoch from the store (never the same twice), then a count.
        self._epoch = store.next_value("history_session_epoch") << 32
        self._sessions = itertools.count(1)
        #: What the store holds for this channel, rows and bytes (read once, then kept
        #: by what is written and trimmed): trims by count and bytes need no count(*).
        self._count, self._bytes = store.history_size(path)

    def session(self) -> int:
        """A new session number (one supply call's events share it)."""
        return int(self._epoch | next(self._sessions))

    def keep(self, events: list[Any], session: int) -> None:
        """Buffer ``events`` (accepted by the channel) for the store; never blocks."""
        from cosnotify.history.records import source_timestamp
        from cosnotify.history.types import type_path

        rows = []
        for event in events:
            structured = event.as_structured()
            rows.append(HistoryRow(event.arrival, session, type_path(structured),
                                   source_timestamp(structured), event.deadline,
                                   codec.encode_event(event)))
        with self._lock:
            self._buffer.extend(rows)
            over = len(self._buffer) - MAX_BUFFERED
            for _ in range(max(0, over)):
                self._buffer.popleft()
            self.dropped += max(0, over)
            start = not self._flushing
            self._flushing = True
        if start:
            self._service.submit(self._flush_task)

    def _flush_task(self) -> None:
        try:
            self.flush()
        except Exception:
            with self._lock:
                self._flushing = False  # the next keep tries again
            log.exception("%r: its history could not be written", self._channel)

    def tick(self) -> None:
        """The periodic trim (rows grow old with no new event coming): due, it is a
        flush, on a worker."""
        if self._service.clock.now() - self._last_trim >= TRIM_EVERY:
            self._service.submit(self._flush_task)

    def flush(self, trim: bool = False) -> None:
        """Write what is buffered, and trim if due (or if ``trim``: a query does both
        first, so it sees every event accepted before it and none past the bounds)."""
        with self._write_lock:
            while True:
                with self._lock:
                    rows = list(self._buffer)
                    self._buffer.clear()
                    if not rows:
                        self._flushing = False
                        break
                self._store.add_history(self.path, rows)
                self.written += len(rows)
                self._count += len(rows)
                self._bytes += sum(len(row.data) for row in rows)
            now = self._service.clock.now()
            if trim or now - self._last_trim >= TRIM_EVERY:
                self._last_trim = now
                self.trim(now)

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
