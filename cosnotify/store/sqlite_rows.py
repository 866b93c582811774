"""BLOB checks for the SQLite store's writes (cosnotify/store/sqlite.py, sqlite_events.py,
sqlite_history.py).

Strategy: a write's rows reach SQLite as few statements as can be (each write
one statement over ``json_each``, docs/persistence.md and docs/history.md),
their bytes as one BLOB; what goes into that BLOB is checked here first, so a
value that is not bytes is refused by name before anything is written.
"""

from __future__ import annotations

__all__ = ["blob"]


def blob(data: object, what: str) -> bytes:
    """``data`` as the ``bytes`` of a BLOB; TypeError naming ``what`` if it is not bytes."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"{what}: data must be bytes, not {type(data).__name__}")
    return bytes(data)
