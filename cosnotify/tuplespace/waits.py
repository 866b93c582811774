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
without a tuple took nothing; one that got a tuple hands it to its caller --
unless the caller went meanwhile: then the tuple is given back, and its
client has not received it (``TupleSpace.give_back``). An event the space
cannot keep (it is full) is offered only to waitToRemoveEvent waiters: a
waitForEvent's event is "both returned to the requester and placed into the
Event Heap".
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

from cosnotify.tuplespace.limits import MAX_RESULTS, MAX_WAIT
from cosnotify.tuplespace.records import Live, bad_param, limit_exceeded
from cosnotify.tuplespace.templates import CompiledTemplate

#: A retrieval's test of a stored event (space.py's module docstring).
Accept = Callable[[Any], bool]

__all__ = ["Accept", "Cancel", "Waiter", "max_results_of", "wait_seconds"]


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

    __slots__ = ("accept", "client", "done", "error", "live", "receipt", "remove", "templates")

    def __init__(self, templates: tuple[CompiledTemplate, ...], client: Any,
                 remove: bool, accept: Accept | None = None) -> None:
        self.templates = templates
        #: Its caller's test of a matching event (space.py), or None.
        self.accept = accept
        self.client = client
        self.remove = remove
        #: Set once the waiter has ended (with ``live``, ``error``, or neither).
        self.done = threading.Event()
        self.live: Live | None = None
        self.error: Exception | None = None
        #: What its client's sequencing noted when it got ``live`` (Seen.note), or None.
        self.receipt: Any = None

    def wants(self, live: Live) -> bool:
        """Does one of its templates match ``live``, and is ``live`` fresh for its client?"""
        if not any(t.matches(live) for t in self.templates):
            return False
        client = self.client
        if client is not None and not client.seen.fresh(live):
            return False
        return self.accept is None or self.accept(live.event.as_structured())

    def end(self, live: Live | None = None, error: Exception | None = None,
            receipt: Any = None) -> None:
        """End the wait (the space's lock held, and the waiter out of its list)."""
        self.live, self.error, self.receipt = live, error, receipt
        self.done.set()


def wait_seconds(timeout: float | None) -> float:
    """A wait's timeout in seconds (None: MAX_WAIT); BAD_PARAM or LimitExceeded."""
    if timeout is None:
        return MAX_WAIT
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
            or math.isnan(timeout) or timeout < 0:
        raise bad_param(f"a wait's timeout is a number of seconds >= 0, not {timeout!r:.100}")
    if timeout > MAX_WAIT:
        raise limit_exceeded(f"a wait lasts at most {MAX_WAIT:g} s (MAX_WAIT), not "
                             f"{timeout:g} s", int(MAX_WAIT * 1000))
    return float(timeout)


def max_results_of(max_results: int | None) -> int:
    """How many tuples a call returns at most (None or 0: MAX_RESULTS)."""
    if max_results is None or max_results == 0:
        return MAX_RESULTS
    if isinstance(max_results, bool) or not isinstance(max_results, int) or max_results < 0:
        raise bad_param(f"max_results is an integer >= 0, not {max_results!r:.100}")
    if max_results > MAX_RESULTS:
        raise limit_exceeded(f"at most {MAX_RESULTS} tuples a call (MAX_RESULTS), not "
                             f"{max_results}", MAX_RESULTS)
    return max_results
