"""Time for the channel: an injectable clock and a timer scheduler.

Strategy: every timing decision in the channel (Timeout, StopTime, StartTime,
PacingInterval, pull intervals, retry backoff) goes through a :class:`Clock`.
``SystemClock`` runs timers on one scheduler thread; ``ManualClock`` fires
them only when a test calls ``advance``, so timing tests are exact and never
sleep. Times are float seconds on the Unix epoch; ``TimeBase`` conversions
(100 ns units since 1582-10-15, Time Service section 1.3) live here too.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

__all__ = [
    "MAX_WAIT",
    "TIMET_EPOCH_OFFSET",
    "Clock",
    "ManualClock",
    "SystemClock",
    "Timer",
    "seconds_to_timet",
    "timet_to_seconds",
    "utc_to_seconds",
]

#: Seconds between 1582-10-15T00:00Z (the TimeBase epoch) and 1970-01-01T00:00Z.
TIMET_EPOCH_OFFSET = 12219292800
#: The longest the timer thread waits at once (it looks again after): far less than
#: threading.TIMEOUT_MAX, past which a wait raises OverflowError.
MAX_WAIT = 3600.0


def seconds_to_timet(seconds: float) -> int:
    """Unix seconds -> TimeBase::TimeT (100 ns units since 1582-10-15)."""
    return round((seconds + TIMET_EPOCH_OFFSET) * 10_000_000)


def timet_to_seconds(timet: int) -> float:
    """TimeBase::TimeT -> Unix seconds."""
    return timet / 10_000_000 - TIMET_EPOCH_OFFSET


def utc_to_seconds(utc: Any) -> float:
    """A TimeBase::UtcT value (``time`` member, 100 ns since 1582) -> Unix seconds.

    The ``tdf`` member is a display offset and does not change the instant.
    """
    return timet_to_seconds(utc.time)


def _nothing() -> None:
    pass


class Timer:
    """A scheduled callback; ``cancel()`` before it fires to drop it. A cancelled timer
    stays in its clock's heap until its time, holding nothing: cancel drops the callback
    (and whatever it refers to)."""

    __slots__ = ("callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        self.callback = _nothing


class Clock(Protocol):
    """What the channel needs from time."""

    def now(self) -> float:
        """The current time in Unix seconds."""
        ...

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        """Run ``callback`` (quickly; it must not block) at or after ``when``."""
        ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        ...

    def close(self) -> None:
        ...


class _TimerHeap:
    """A heap of timers with stable ordering for equal deadlines."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Timer]] = []
        self._seq = itertools.count()

    def push(self, timer: Timer) -> bool:
        """Add a timer; True when it became the earliest."""
        heapq.heappush(self._heap, (timer.when, next(self._seq), timer))
        return self._heap[0][2] is timer

    def pop_due(self, now: float) -> list[Timer]:
        due = []
        while self._heap and self._heap[0][0] <= now:
            timer = heapq.heappop(self._heap)[2]
            if not timer.cancelled:
                due.append(timer)
        return due

    def next_when(self) -> float | None:
        while self._heap and self._heap[0][2].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def __len__(self) -> int:
        return len(self._heap)


class SystemClock:
    """Wall-clock time with one daemon thread that fires timers."""

    def __init__(self) -> None:
        self._timers = _TimerHeap()
        self._cond = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None

    #: time.time itself: read for every push delivered, so no Python frame.
    now: Callable[[], float] = staticmethod(time.time)

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        return self.call_at(time.time() + delay, callback)

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        timer = Timer(when, callback)
        with self._cond:
            if self._closed:
                timer.cancelled = True
                return timer
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="cosnotify-timers",
                                                daemon=True)
                self._thread.start()
            if self._timers.push(timer):
                self._cond.notify()
        return timer

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._closed:
                        return
                    when = self._timers.next_when()
                    now = time.time()
                    if when is not None and when <= now:
                        due = self._timers.pop_due(now)
                        break
                    # A timer centuries away (a StartTime, a PacingInterval of TimeT's
                    # whole range) is waited for an hour at a time: a longer wait than
                    # threading.TIMEOUT_MAX raises OverflowError, and this thread is
                    # every channel's timers (review 66).
                    self._cond.wait(None if when is None else min(when - now, MAX_WAIT))
            for timer in due:
                _fire(timer)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class ManualClock:
    """A clock that moves only when told to: deterministic timing for tests."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = start
        self._timers = _TimerHeap()
        self._lock = threading.Lock()

    def now(self) -> float:
        return self._now

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        return self.call_at(self._now + delay, callback)

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        timer = Timer(when, callback)
        with self._lock:
            self._timers.push(timer)
        return timer

    def advance(self, seconds: float) -> None:
        """Move time forward, firing due timers in deadline order as time passes."""
        target = self._now + seconds
        while True:
            with self._lock:
                when = self._timers.next_when()
                if when is None or when > target:
                    break
                self._now = max(self._now, when)
                due = self._timers.pop_due(self._now)
            for timer in due:
                _fire(timer)
        self._now = target

    def pending(self) -> int:
        """How many live timers are scheduled."""
        with self._lock:
            self._timers.next_when()
            return sum(1 for _, _, t in self._timers._heap if not t.cancelled)

    def close(self) -> None:
        pass


def _fire(timer: Timer) -> None:
    if timer.cancelled:
        return
    try:
        timer.callback()
    except Exception:  # a timer callback must never kill the scheduler
        import logging

        logging.getLogger("cosnotify.channel").exception("timer callback failed")
