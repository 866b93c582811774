"""Tuple ids: "unique to the instantiation history of the server".

Strategy: the seed's Event Heap Server Responsibilities: "The server must
also assign each event placed into the Event Heap with the putEvent call an
ID unique to the instantiation history of the server. This must be assigned
even if the event being placed was formerly removed from the Event Heap and
already has an ID." One :class:`IdAllocator` per service (so ids are unique
across its channels) hands ids out of blocks of ID_BLOCK: a block is one
``Store.next_value`` (durable on return: one counter write, not one per
tuple), so after a restart the next block is past every id handed out before
it. Without a store the blocks come from memory: ids are unique within the
process only. Ids start at 1 (the seed's serial number 0 means "never been on
an Event Heap server").
"""

from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any

from cosnotify.tuplespace.limits import ID_BLOCK

__all__ = ["COUNTER", "IdAllocator"]

#: The store counter blocks are taken from.
COUNTER = "eventheap_tuple_ids"

_lock = threading.Lock()
_allocators: weakref.WeakKeyDictionary[Any, IdAllocator] = weakref.WeakKeyDictionary()


class IdAllocator:
    """Ids in blocks from a store's counter (module docstring)."""

    def __init__(self, store: Any = None) -> None:
        self._store = store
        self._blocks = itertools.count(0)
        self._lock = threading.Lock()
        self._next = self._end = 0

    @classmethod
    def of(cls, service: Any) -> IdAllocator:
        """The allocator of ``service`` (its topology's store, if it has one)."""
        with _lock:
            found = _allocators.get(service)
            if found is None:
                topology = service.topology
                found = _allocators[service] = cls(topology.store if topology else None)
            return found

    def take(self, count: int) -> list[int]:
        """``count`` new ids, increasing. Raises the store's StoreError when a block cannot
        be taken (nothing is handed out then)."""
        out: list[int] = []
        with self._lock:
            while len(out) < count:
                if self._next >= self._end:
                    store = self._store
                    block = store.next_value(COUNTER) if store is not None else next(self._blocks)
                    self._next, self._end = block * ID_BLOCK + 1, (block + 1) * ID_BLOCK + 1
                n = min(count - len(out), self._end - self._next)
                out.extend(range(self._next, self._next + n))
                self._next += n
        return out
