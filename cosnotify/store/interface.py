"""The store interface: what the service keeps on disk, and nothing about how.

Strategy: the channel core asks a store for three things, all in opaque
bytes it encodes itself (the store never sees a CORBA value):

- **Topology records.** One record per persistent object (channel, admin,
  proxy, filter...), keyed by the object's path (``ch/0``, ``ch/0/ca/1/3``,
  ``flt/7``): written whole on every change, deleted on destroy, read back
  in creation order at start.
- **Events.** An event of a persistent channel is added once, with the
  consumers (proxy paths) that must still receive it; ``add_events`` returns
  only when the event is durable. A consumer's copy is released by
  :meth:`Store.release` once delivered or acknowledged; the event goes when
  its last copy does. A consumer reads what it still needs in order, a page
  at a time (:meth:`Store.pending`), so waiting events live on disk, not in
  memory.
- **Counters.** Named integers (the next channel id, the next filter id...)
  that must never go backwards across a restart.
- **History.** Events a channel retains after delivering them, with their
  arrival, type path and source timestamp, read back by range and prefix
  (:mod:`cosnotify.store.history`, docs/history.md).

Every method may raise :class:`StoreError` (disk full, a damaged file, a
schema this code does not know); the service turns it into the CORBA
exception the spec or the situation calls for. Implementations must be
thread-safe. The SQLite one is :mod:`cosnotify.store.sqlite`; an in-memory
one, for tests and for channels that want the interface without the disk,
is :mod:`cosnotify.store.memory`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

import attrs

from cosnotify.store.history import HistoryCursor, HistoryRow, HistoryScan, StoredHistory

__all__ = ["Reason", "Record", "Store", "StoreError", "StoredEvent"]


class Reason(enum.Enum):
    """Why the store failed (the service picks the CORBA exception from it)."""

    FULL = "full"                  # disk full, quota: NO_RESOURCES
    DAMAGED = "damaged"            # not a store, or corrupt: refuse to start (IMP_LIMIT)
    NEWER_SCHEMA = "newer-schema"  # written by a newer cosnotify: refuse to start
    READ_ONLY = "read-only"        # cannot write where it lives: refuse to start
    IN_USE = "in-use"              # another store has the file open: refuse to start
    IO = "io"                      # any other I/O failure: NO_RESOURCES
    CLOSED = "closed"              # used after close(): BAD_INV_ORDER


class StoreError(Exception):
    """The store cannot do what was asked; ``reason`` says why, the message says more."""

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@attrs.frozen
class Record:
    """A topology record: ``path`` (the object's id), ``kind`` and the encoded state."""

    path: str
    kind: str
    data: bytes


@attrs.frozen
class StoredEvent:
    """An event as a consumer reads it back: the store's id (increasing) and the bytes."""

    id: int
    data: bytes


@runtime_checkable
class Store(Protocol):
    """See the module docstring. Paths, kinds and consumer names are plain strings."""

    # -- topology --------------------------------------------------------------------------
    def put(self, record: Record) -> None:
        """Write ``record`` (replacing one with its path); durable on return."""

    def delete(self, path: str) -> None:
        """Delete the record at ``path`` and every record below it (``path/...``)."""

    def records(self) -> list[Record]:
        """Every record, in the order their paths were first written."""

    # -- counters --------------------------------------------------------------------------
    def next_value(self, name: str) -> int:
        """Counter ``name``'s next value (0 first), durable on return."""

    def peek_value(self, name: str) -> int:
        """The value :meth:`next_value` would return, without taking it."""

    def raise_value(self, name: str, at_least: int) -> None:
        """Make counter ``name`` at least ``at_least`` (used when restoring ids)."""

    # -- events ------------------------------------------------------------------------------
    def add_events(self, events: Sequence[tuple[bytes, Sequence[str]]],
                   marks: Mapping[str, int] | None = None,
                   releases: Mapping[str, Sequence[int]] | None = None) -> list[int]:
        """Store each ``(data, consumers)``; their ids, once durable.

        Concurrent callers share one commit (group commit), so durability does
        not cost one fsync per event. An event with no consumers is not kept.
        ``marks`` raises counters (as :meth:`raise_value`) in the same commit:
        either the events and the marks are stored, or neither. ``releases``
        (consumer -> ids, as :meth:`release`) are written in the same commit too.
        Consumer and counter names are str; a store may refuse one holding NUL
        (ValueError; SQLiteStore does), as channels never make one.
        """

    def release(self, consumer: str, event_ids: Iterable[int]) -> None:
        """``consumer`` no longer needs these events (delivered or acknowledged).

        May return before the release is durable: after a crash the consumer
        may be given them again (the duplicate window of docs/persistence.md).
        """

    def pending(self, consumer: str, after: int = -1, limit: int = 1000) -> list[StoredEvent]:
        """Up to ``limit`` events ``consumer`` still needs, with ids above ``after``, in order."""

    def pending_count(self, consumer: str) -> int:
        """How many events ``consumer`` still needs."""

    def drop_consumer(self, consumer: str) -> None:
        """``consumer`` is gone: release everything it still needs."""

    def consumers(self) -> list[str]:
        """Every consumer that still needs an event."""

    # -- history (cosnotify/store/history.py, docs/history.md) -------------------------------
    def add_history(self, channel: str, rows: Sequence[HistoryRow]) -> list[int]:
        """Retain ``rows`` for ``channel``; their ids, increasing and never reused."""

    def read_history(self, channel: str, scan: HistoryScan,
                     after: HistoryCursor | None = None,
                     limit: int = 1000) -> list[StoredHistory]:
        """Up to ``limit`` retained rows of ``channel`` that ``scan`` selects, in its
        order, after the cursor ``after`` (the order key and id of the last row read)."""

    def expire_history(self, channel: str, now: float,
                       before: float | None = None) -> tuple[int, int]:
        """Delete ``channel``'s rows expired by ``now`` and, given ``before``, those that
        arrived before it; how many went, and their bytes of data."""

    def drop_oldest_history(self, channel: str, count: int = 0,
                            nbytes: int = 0) -> tuple[int, int]:
        """Delete ``channel``'s oldest rows (by arrival): at least ``count`` of them and
        at least ``nbytes`` of data; how many went, and their bytes."""

    def history_size(self, channel: str) -> tuple[int, int]:
        """How many rows ``channel`` retains, and their bytes of data."""

    def drop_history(self, channel: str) -> None:
        """``channel`` is gone: its history goes."""

    def history_channels(self) -> list[str]:
        """Every channel that retains a row, in order (a restart drops the histories
        of channels that did not come back)."""

    # -- lifecycle ---------------------------------------------------------------------------
    def flush(self) -> None:
        """Make every release so far durable."""

    def close(self) -> None:
        """Flush and close; later calls raise StoreError(CLOSED)."""
