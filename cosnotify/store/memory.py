"""An in-memory :class:`~cosnotify.store.interface.Store`: the interface without the disk.

For tests, and for a process that wants topology ids and restore logic
within its own lifetime (``EventChannelFactory(store=MemoryStore())``
then a second factory over the same store). Nothing survives the process.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable, Mapping, Sequence

from cosnotify.store.history import HistoryCursor, HistoryRow, HistoryScan, StoredHistory
from cosnotify.store.interface import Reason, Record, StoredEvent, StoreError

__all__ = ["MemoryStore"]


class MemoryStore:
    """A thread-safe store in dicts; ``max_events`` bounds the events kept (FULL past it)."""

    def __init__(self, *, max_events: int | None = None) -> None:
        self._lock = threading.Lock()
        self._records: dict[str, Record] = {}
        self._counters: dict[str, int] = {}
        self._events: dict[int, bytes] = {}
        self._holders: dict[int, int] = {}
        self._pending: dict[str, list[int]] = {}
        self._next_event = 1
        self._history: dict[str, list[tuple[int, HistoryRow]]] = {}
        self._next_history = 0
        self._max_events = max_events
        self._closed = False

    def _check(self) -> None:
        if self._closed:
            raise StoreError(Reason.CLOSED, "the memory store is closed")

    # -- topology --------------------------------------------------------------------------
    def put(self, record: Record) -> None:
        with self._lock:
            self._check()
            self._records[record.path] = record  # an existing key keeps its position

    def delete(self, path: str) -> None:
        with self._lock:
            self._check()
            below = path + "/"
            for key in [k for k in self._records if k == path or k.startswith(below)]:
                del self._records[key]

    def records(self) -> list[Record]:
        with self._lock:
            self._check()
            return list(self._records.values())

    # -- counters --------------------------------------------------------------------------
    def next_value(self, name: str) -> int:
        with self._lock:
            self._check()
            value = self._counters.get(name, 0)
            self._counters[name] = value + 1
            return value

    def peek_value(self, name: str) -> int:
        with self._lock:
            self._check()
            return self._counters.get(name, 0)

    def raise_value(self, name: str, at_least: int) -> None:
        with self._lock:
            self._check()
            self._counters[name] = max(self._counters.get(name, 0), at_least)

    # -- events ------------------------------------------------------------------------------
    def add_events(self, events: Sequence[tuple[bytes, Sequence[str]]],
                   marks: Mapping[str, int] | None = None,
                   releases: Mapping[str, Sequence[int]] | None = None) -> list[int]:
        for consumer, ids in (releases or {}).items():
            self.release(consumer, ids)
        with self._lock:
            self._check()
            kept = sum(1 for _, consumers in events if consumers)
            if self._max_events is not None and len(self._events) + kept > self._max_events:
                raise StoreError(Reason.FULL, f"the memory store holds its limit of "
                                              f"{self._max_events} events")
            for name, value in (marks or {}).items():
                self._counters[name] = max(self._counters.get(name, 0), value)
            ids = []
            for data, consumers in events:
                event_id = self._next_event
                self._next_event += 1
                ids.append(event_id)
                names = set(consumers)
                if not names:
                    continue
                self._events[event_id] = data
                self._holders[event_id] = len(names)
                for name in names:
                    self._pending.setdefault(name, []).append(event_id)
            return ids

    def release(self, consumer: str, event_ids: Iterable[int]) -> None:
        with self._lock:
            self._check()
            queue = self._pending.get(consumer)
            if not queue:
                return
            for event_id in sorted(set(event_ids)):
                at = bisect.bisect_left(queue, event_id)
                if at < len(queue) and queue[at] == event_id:
                    del queue[at]
                    self._unhold(event_id)
            if not queue:
                del self._pending[consumer]

    def _unhold(self, event_id: int) -> None:
        left = self._holders[event_id] - 1
        if left:
            self._holders[event_id] = left
        else:
            del self._holders[event_id]
            del self._events[event_id]

    def pending(self, consumer: str, after: int = -1, limit: int = 1000) -> list[StoredEvent]:
        if limit < 0:
            raise ValueError(f"limit must be >= 0, not {limit}")
        with self._lock:
            self._check()
            queue = self._pending.get(consumer, [])
            at = bisect.bisect_right(queue, after)
            return [StoredEvent(i, self._events[i]) for i in queue[at:at + limit]]

    def pending_count(self, consumer: str) -> int:
        with self._lock:
            self._check()
            return len(self._pending.get(consumer, ()))

    def drop_consumer(self, consumer: str) -> None:
        with self._lock:
            self._check()
            for event_id in self._pending.pop(consumer, ()):
                self._unhold(event_id)

    def consumers(self) -> list[str]:
        with self._lock:
            self._check()
            return sorted(self._pending)

    # -- history (cosnotify/store/history.py) -------------------------------------------------
    def add_history(self, channel: str, rows: Sequence[HistoryRow]) -> list[int]:
        with self._lock:
            self._check()
            kept = self._history.setdefault(channel, [])
            ids = []
            for row in rows:
                self._next_history += 1
                kept.append((self._next_history, row))
                ids.append(self._next_history)
            return ids

    def read_history(self, channel: str, scan: HistoryScan,
                     after: HistoryCursor | None = None,
                     limit: int = 1000) -> list[StoredHistory]:
        if limit < 0:
            raise ValueError(f"limit must be >= 0, not {limit}")
        with self._lock:
            self._check()
            rows = list(self._history.get(channel, ()))
        found = [(i, r) for i, r in rows if _in_scan(i, r, scan)]
        if scan.nulls:
            found.sort(key=lambda item: item[0])
            if after is not None:
                found = [item for item in found if item[0] > after[1]]
        else:
            def key(item: tuple[int, HistoryRow]) -> tuple[float, int]:
                return (item[1].source if scan.by_source else item[1].arrival) or 0.0, item[0]

            found.sort(key=key, reverse=not scan.ascending)
            if after is not None:
                found = [item for item in found
                         if (key(item) > after if scan.ascending else key(item) < after)]
        return [StoredHistory(i, r.arrival, r.session, r.type, r.source, r.data)
                for i, r in found[:limit]]

    def expire_history(self, channel: str, now: float,
                       before: float | None = None) -> tuple[int, int]:
        with self._lock:
            self._check()
            rows = self._history.get(channel, [])
            kept: list[tuple[int, HistoryRow]] = []
            gone: list[tuple[int, HistoryRow]] = []
            for item in rows:
                row = item[1]
                alive = (row.expires is None or row.expires > now) \
                    and (before is None or row.arrival >= before)
                (kept if alive else gone).append(item)
            self._history[channel] = kept
            return len(gone), sum(len(r.data) for _, r in gone)

    def drop_oldest_history(self, channel: str, count: int = 0,
                            nbytes: int = 0) -> tuple[int, int]:
        with self._lock:
            self._check()
            rows = sorted(self._history.get(channel, []),
                          key=lambda item: (item[1].arrival, item[0]))
            taken, total = 0, 0
            while taken < len(rows) and (taken < count or total < nbytes):
                total += len(rows[taken][1].data)
                taken += 1
            gone = {i for i, _ in rows[:taken]}
            self._history[channel] = [(i, r) for i, r in self._history.get(channel, [])
                                      if i not in gone]
            return taken, total

    def history_size(self, channel: str) -> tuple[int, int]:
        with self._lock:
            self._check()
            rows = self._history.get(channel, [])
            return len(rows), sum(len(r.data) for _, r in rows)

    def drop_history(self, channel: str) -> None:
        with self._lock:
            self._check()
            self._history.pop(channel, None)

    def history_channels(self) -> list[str]:
        with self._lock:
            self._check()
            return sorted(c for c, rows in self._history.items() if rows)

    # -- lifecycle ---------------------------------------------------------------------------
    def flush(self) -> None:
        with self._lock:
            self._check()

    def close(self) -> None:
        with self._lock:
            self._closed = True


def _in_scan(event_id: int, row: HistoryRow, scan: HistoryScan) -> bool:
    """Does a retained row meet ``scan``'s conditions (as sqlite_history.scan_sql)?"""
    checks = ((row.arrival, scan.t_from, scan.t_to), (row.source, scan.source_t_from,
                                                      scan.source_t_to))
    for value, low, high in checks:
        if (low is not None or high is not None) and value is None:
            return False
        if low is not None and value is not None and value < low:
            return False
        if high is not None and value is not None and value > high:
            return False
    if scan.nulls and row.source is not None:
        return False
    if scan.by_source and not scan.nulls and row.source is None:
        return False
    if scan.instances is not None and event_id not in scan.instances:
        return False
    if scan.type_prefixes is not None and not any(
            row.type[:len(p)] == p for p in scan.type_prefixes):
        return False
    return scan.now is None or row.expires is None or row.expires > scan.now
