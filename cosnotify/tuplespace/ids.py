"""Tuple ids: "unique to the instantiation history of the server".

Strategy: the seed's Event Heap Server Responsibilities: "The server must
also assign each event placed into the Event Heap with the putEvent call an
ID unique to the instantiation history of the server. This must be assigned
even if the event being placed was formerly removed from the Event Heap and
already has an ID." One :class:`IdAllocator` per service (so ids are unique
across its channels) hands ids out of blocks of ID_BLOCK: a block is one
``Store.next_value`` (durable on return: one counter write, not one per
tuple), so after a restart the next block is past every id handed out before
it. The next block is taken *ahead*, by a thread of its own, once half the
current one is used: the channel's push path (which takes ids for every
event it accepts) does not wait for the store's write, and other pushes do
not wait behind it -- unless the store is slower than a half block of
events, or failed (then the block is taken in place, and a failure is the
caller's StoreError). Without a store the blocks come from one counter of
the process: ids are unique within the process. Ids start at 1 (the seed's
serial number 0 means "never been on an Event Heap server").
"""

from __future__ import annotations

import itertools
import logging
import threading
import weakref
from typing import Any

from cosnotify.tuplespace.limits import ID_BLOCK

__all__ = ["COUNTER", "IdAllocator"]

log = logging.getLogger("cosnotify.tuplespace")

#: The store counter blocks are taken from.
COUNTER = "eventheap_tuple_ids"

_lock = threading.Lock()
_allocators: weakref.WeakKeyDictionary[Any, IdAllocator] = weakref.WeakKeyDictionary()
#: The blocks of every allocator without a store, in this process.
_process_blocks = itertools.count(0)
_process_lock = threading.Lock()


class IdAllocator:
    """Ids in blocks from a store's counter (module docstring)."""

    def __init__(self, store: Any = None) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._next = self._end = 0
        #: A block taken ahead, and whether a thread is taking one now.
        self._ahead: int | None = None
        self._taking = False

    @classmethod
    def of(cls, service: Any) -> IdAllocator:
        """The allocator of ``service`` (its topology's store, if it has one)."""
        with _lock:
            found = _allocators.get(service)
            if found is None:
                topology = service.topology
                found = _allocators[service] = cls(topology.store if topology else None)
            return found

    def _block(self) -> int:
        if self._store is None:
            with _process_lock:
                return next(_process_blocks)
        value: int = self._store.next_value(COUNTER)
        return value

    def take(self, count: int) -> list[int]:
        """``count`` new ids, increasing. Raises the store's StoreError when a block cannot
        be taken (nothing is handed out then)."""
        out: list[int] = []
        with self._lock:
            while len(out) < count:
                if self._next >= self._end:
                    block, self._ahead = self._ahead, None
                    if block is None:
                        block = self._block()  # none ahead: in place (ids so far are skipped)
                    self._next, self._end = block * ID_BLOCK + 1, (block + 1) * ID_BLOCK + 1
                n = min(count - len(out), self._end - self._next)
                out.extend(range(self._next, self._next + n))
                self._next += n
            ahead = (self._store is not None and self._ahead is None and not self._taking
                     and self._end - self._next < ID_BLOCK // 2)
            if ahead:
                self._taking = True
        if ahead:
            threading.Thread(target=self._take_ahead, name="cosnotify-tuple-ids",
                             daemon=True).start()
        return out

    def _take_ahead(self) -> None:
        try:
            block: int | None = self._block()
        except Exception as exc:  # noqa: BLE001 - taken in place when needed (and reported)
            log.debug("the next block of tuple ids could not be taken ahead: %s", exc)
            block = None
        with self._lock:
            self._taking = False
            if block is not None and self._ahead is None:
                self._ahead = block
