"""Waiting calls: waitForEvent and waitToRemoveEvent, and how a wait ends.

Strategy: a wait that finds nothing at once becomes a :class:`Waiter` in its
space's list, in the order the waits began. Each event the channel accepts is
offered to the waiters in that order, under the space's lock (space.py): a
waitForEvent waiter gets a copy and the event goes on to the next waiter
and into the space; the first waitToRemoveEvent waiter it matches takes it,
and it is not kept ("the incoming event which eventually satisfies the
request will not be placed into the Event Heap"). A waiter ends exactly
once, under that lock: with a tuple, at its timeout (the channel's clock, so
a ManualClock times it out in tests), by a :class:`Cancel` (the caller is
gone: in process, whoever holds it; over CORBA, the servants' connection
watch), or with OBJECT_NOT_EXIST when the space ends. A waiter that ended
without a tuple took nothing; one that got a tuple hands it to its caller.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from cosnotify.tuplespace.records import Live
from cosnotify.tuplespace.templates import CompiledTemplate

__all__ = ["Cancel", "Waiter"]


class Cancel:
    """Ends the waits it is given to, now or when :meth:`cancel` is called (once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def attach(self, callback: Callable[[], None]) -> bool:
        """Call ``callback`` on :meth:`cancel`; False (and no call) if already cancelled."""
        with self._lock:
            if self._cancelled:
                return False
            self._callbacks.append(callback)
            return True

    def detach(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)


class Waiter:
    """One waiting call (module docstring). ``client``: its sequencing, or None."""

    __slots__ = ("client", "done", "error", "live", "remove", "templates")

    def __init__(self, templates: tuple[CompiledTemplate, ...], client: Any,
                 remove: bool) -> None:
        self.templates = templates
        self.client = client
        self.remove = remove
        #: Set once the waiter has ended (with ``live``, ``error``, or neither).
        self.done = threading.Event()
        self.live: Live | None = None
        self.error: Exception | None = None

    def wants(self, live: Live) -> bool:
        """Does one of its templates match ``live``, and is ``live`` fresh for its client?"""
        if not any(t.matches(live) for t in self.templates):
            return False
        client = self.client
        return client is None or client.seen.fresh(live)

    def end(self, live: Live | None = None, error: Exception | None = None) -> None:
        """End the wait (the space's lock held, and the waiter out of its list)."""
        self.live, self.error = live, error
        self.done.set()
