"""What a store keeps of a channel's history (docs/history.md), and how it is read.

Strategy: a retained event is a :class:`HistoryRow` -- its arrival, the session
of the supply that brought it, its type path, its source timestamp, when it
expires, and the opaque bytes the channel encoded -- kept per channel, each
with a store id. A read is a :class:`HistoryScan` (what the history layer's
``Query.plan()`` narrows by) walked a page at a time in the scan's order:
arrival or source timestamp, then id, each way. A page ends with the cursor
to pass for the next one. Rows whose ``expires`` has passed are never read,
and :meth:`Store.expire_history` deletes them (and those past an age), and
:meth:`Store.drop_oldest_history` the oldest past a channel's bounds.

The type path is kept as a key that sorts by segments (:func:`type_key`: each
segment's UTF-8 and a NUL), so "every path that starts with these segments"
is one index range (:func:`prefix_range`). Nothing here knows CORBA.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

__all__ = ["HistoryCursor", "HistoryRow", "HistoryScan", "StoredHistory", "key_path",
           "prefix_range", "type_key"]


@attrs.define
class HistoryRow:
    """One event to retain (module docstring); times in Unix seconds. Not changed once
    made (not frozen: a retained push makes one per event, and a frozen class's
    ``__init__`` costs three times as much)."""

    arrival: float
    session: int
    type: tuple[str, ...]
    source: float | None
    expires: float | None
    data: bytes


@attrs.frozen
class StoredHistory:
    """A retained event read back, with the store's id."""

    id: int
    arrival: float
    session: int
    type: tuple[str, ...]
    source: float | None
    data: bytes


@attrs.frozen
class HistoryScan:
    """What to read: ranges (inclusive), instance ids, type-path prefixes (any of
    them; None: every type), the order, and ``now`` (rows expired by then are not
    read). With ``by_source`` the rows without a source timestamp are read in a
    second pass (``nulls``), in id order."""

    t_from: float | None = None
    t_to: float | None = None
    source_t_from: float | None = None
    source_t_to: float | None = None
    instances: tuple[int, ...] | None = None
    type_prefixes: tuple[tuple[str, ...], ...] | None = None
    ascending: bool = False
    by_source: bool = False
    nulls: bool = False
    now: float | None = None


#: Where a page ended: the order key (arrival or source) and the id of its last row.
HistoryCursor = tuple[float, int]


def type_key(path: Sequence[str]) -> bytes:
    """``path`` as a key that sorts by segments (module docstring)."""
    if type(path) is tuple:
        found = _KEYS.get(path)
        if found is not None:
            return found
    key = b"".join(segment.encode("utf-8", "surrogatepass") + b"\0" for segment in path)
    if type(path) is tuple:
        if len(_KEYS) >= _MAX_KEYS:  # a channel of ever new types: start again
            _KEYS.clear()
        _KEYS[path] = key
    return key


def key_path(key: bytes) -> tuple[str, ...]:
    """The type path of a key (:func:`type_key`'s inverse); every row read back needs
    its own, so the paths of the keys seen lately are kept."""
    found = _PATHS.get(key)
    if found is not None:
        return found
    path = tuple(part.decode("utf-8", "surrogatepass") for part in key.split(b"\0")[:-1])
    if len(_PATHS) >= _MAX_KEYS:
        _PATHS.clear()
    _PATHS[key] = path
    return path


#: Keys of the type paths seen lately, and the paths of keys read lately (a channel has
#: few types; each retained event needs its key, each row read its path).
_KEYS: dict[tuple[str, ...], bytes] = {}
_PATHS: dict[bytes, tuple[str, ...]] = {}
_MAX_KEYS = 4096


def prefix_range(prefix: Sequence[str]) -> tuple[bytes, bytes]:
    """The keys of every path that starts with ``prefix``: ``low <= key < high``
    (UTF-8 never holds the byte 0xFF)."""
    low = type_key(prefix)
    return low, low + b"\xff"
