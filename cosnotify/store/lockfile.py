"""One process at a time on a store file: an exclusive lock beside it.

Strategy: SQLite lets two processes open one database, and two servers on one
store would each restore it and then write what the other does not know (a
channel one destroyed, an admin the other made under it: an orphan at the next
start; the same persistent events delivered twice). So a store takes an
exclusive ``flock`` on ``PATH.lock`` for as long as it is open, without
waiting: an opener in another process is refused with
:class:`~cosnotify.store.interface.StoreError` (``IN_USE``). Stores of one
process on one file share the process's lock (a program that opens its store
again without closing the first keeps working, as before; it is one program).
The lock is the kernel's: it goes with the process, however it ends (SIGKILL
included), so a restart never meets a stale one. The lock file stays (removing
it would race with a next opener); the database file itself is never locked
this way, since closing any descriptor of it would drop SQLite's own POSIX
locks.
"""

from __future__ import annotations

import fcntl
import os
import threading

from cosnotify.store.interface import Reason, StoreError

__all__ = ["StoreLock"]

_held_lock = threading.Lock()
#: This process's locks: lock file's real path -> [descriptor, stores holding it].
_held: dict[str, list[int]] = {}


class StoreLock:
    """The exclusive lock of the store at ``path`` (taken on construction)."""

    def __init__(self, path: str) -> None:
        # Beside the file itself: a symlink to the store locks what it points at.
        self.path = os.path.realpath(path) + ".lock"
        self._key: str | None = None
        with _held_lock:
            key = os.path.realpath(self.path)
            held = _held.get(key)
            if held is None:
                _held[key] = [self._take(path), 1]
            else:
                held[1] += 1
            self._key = key

    def _take(self, path: str) -> int:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise StoreError(Reason.READ_ONLY,
                             f"{path}: cannot make its lock file {self.path}: "
                             f"{exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StoreError(Reason.IN_USE, f"{path}: in use by another process (another "
                                            f"server has this store open)") from None
        return fd

    def release(self) -> None:
        """Let go of the lock (a second call does nothing); the last of the process's
        stores on the file closes it, which ends the flock."""
        with _held_lock:
            key, self._key = self._key, None
            if key is None:
                return
            held = _held[key]
            held[1] -= 1
            if held[1] == 0:
                del _held[key]
                os.close(held[0])
