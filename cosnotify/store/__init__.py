"""Where a durable service keeps its topology and events (docs/persistence.md).

:mod:`cosnotify.store.interface` is the contract; :class:`SQLiteStore` the
store ``cosnotify serve --db`` uses; :class:`MemoryStore` the same without
the disk.
"""

from cosnotify.store.interface import Reason, Record, Store, StoredEvent, StoreError
from cosnotify.store.memory import MemoryStore

__all__ = ["MemoryStore", "Reason", "Record", "SQLiteStore", "Store", "StoreError",
           "StoredEvent"]


def __getattr__(name: str) -> object:
    if name == "SQLiteStore":
        from cosnotify.store.sqlite import SQLiteStore

        return SQLiteStore
    raise AttributeError(name)
