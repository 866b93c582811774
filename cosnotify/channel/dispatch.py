"""The channel's worker pool: bounded, elastic, and fair between proxies.

Strategy: delivery work is expressed as *tasks*, each bound to one owner (a
proxy supplier delivering its queue, a pull proxy consumer polling its
supplier, a relay of subscription changes). An owner has at most one task
in flight, so its events stay in order; a task does a bounded slice of work
and, if more remains, asks to be rescheduled at the back of the run queue,
so one busy owner cannot starve the others.

Threads are bounded: the pool starts with ``min_workers`` and adds a worker
whenever work is queued and no worker is idle, up to ``max_workers``; idle
extra workers retire after ``idle_timeout``. A consumer that blocks (a slow
in-process consumer, or a remote one until its call timeout) holds one
worker; the others keep serving everyone else.

*Lanes* bound how many workers one kind of trouble can hold. A task may be
submitted in a :class:`Lane`, which runs at most ``limit`` of its tasks at
once; a task whose lane is full is parked there, holding no worker, until
one of the lane's running tasks ends. The server puts each remote client
(one process: one host and port) in a lane of its own, and every consumer
whose last delivery failed in the shared ``failing`` lane, and every consumer
whose last push was slow in the shared ``slow`` lane, so a client that hangs
with many consumers, many dead consumers, or slow consumers among fast ones
in one process, hold a bounded share of the workers and the rest keep
flowing (docs/architecture.md).
"""

from __future__ import annotations

import collections
import logging
import threading
import weakref
from collections.abc import Callable, Hashable

__all__ = ["Dispatcher", "Lane"]

log = logging.getLogger("cosnotify.channel")

Task = Callable[[], bool]  # returns True to be run again (more work remains)


class Lane:
    """Tasks that hold at most ``limit`` workers at once (guarded by the dispatcher)."""

    __slots__ = ("__weakref__", "key", "limit", "parked", "running")

    def __init__(self, key: Hashable, limit: int) -> None:
        self.key = key
        self.limit = limit
        self.running = 0
        self.parked: collections.deque[Task] = collections.deque()

    def __repr__(self) -> str:
        return f"<Lane {self.key!r} {self.running}/{self.limit}, {len(self.parked)} parked>"


class Dispatcher:
    """A run queue of tasks served by an elastic pool of worker threads."""

    def __init__(self, min_workers: int = 2, max_workers: int = 32,
                 idle_timeout: float = 30.0, name: str = "cosnotify", *,
                 lane_limit: int | None = None, failing_limit: int | None = None,
                 slow_limit: int | None = None) -> None:
        if not 1 <= min_workers <= max_workers:
            raise ValueError("need 1 <= min_workers <= max_workers")
        self.min_workers = min_workers
        self.max_workers = max_workers
        self.idle_timeout = idle_timeout
        #: Workers one client's lane may hold (see :meth:`lane`).
        self.lane_limit = lane_limit or max(1, max_workers // 4)
        #: The lane of tasks whose last attempt failed.
        self.failing = Lane("failing", failing_limit or max(1, max_workers // 4))
        #: The lane of consumers whose last push was slow (see ServiceConfig.slow_push).
        self.slow = Lane("slow", slow_limit or max(1, max_workers // 4))
        self._lanes: weakref.WeakValueDictionary[Hashable, Lane] = (
            weakref.WeakValueDictionary())
        self._name = name
        self._queue: collections.deque[tuple[Task, Lane | None]] = collections.deque()
        self._cond = threading.Condition(threading.Lock())
        self._workers: set[threading.Thread] = set()
        self._idle = 0
        self._busy = 0
        self._closed = False
        self._serial = 0

    # -- submitting ---------------------------------------------------------------
    def lane(self, key: Hashable) -> Lane:
        """The lane for ``key`` (one per key while anyone holds it), ``lane_limit`` wide."""
        with self._cond:
            found = self._lanes.get(key)
            if found is None:
                found = self._lanes[key] = Lane(key, self.lane_limit)
            return found

    def submit(self, task: Task, lane: Lane | None = None) -> bool:
        """Queue ``task``; it runs on a worker, and again while it returns True. False:
        not queued, the dispatcher is closed.

        In a ``lane``, it waits (parked, holding no worker) while the lane's
        limit of tasks is running.
        """
        with self._cond:
            if self._closed:
                return False
            self._queue.append((task, lane))
            if self._idle > len(self._queue) - 1:
                self._cond.notify()
            elif len(self._workers) < self.max_workers:
                self._spawn()
            else:
                self._cond.notify()
        return True

    def _spawn(self) -> None:
        self._serial += 1
        thread = threading.Thread(target=self._work, name=f"{self._name}-worker-{self._serial}",
                                  daemon=True)
        self._workers.add(thread)
        thread.start()

    # -- the worker loop -------------------------------------------------------------
    def _work(self) -> None:
        me = threading.current_thread()
        while True:
            with self._cond:
                while True:
                    while not self._queue:
                        if self._closed:
                            self._workers.discard(me)
                            self._cond.notify_all()
                            return
                        self._idle += 1
                        woke = self._cond.wait(self.idle_timeout)
                        self._idle -= 1
                        if (not woke and not self._queue
                                and len(self._workers) > self.min_workers):
                            self._workers.discard(me)
                            return
                    task, lane = self._queue.popleft()
                    if lane is None:
                        break
                    if lane.running < lane.limit:
                        lane.running += 1
                        break
                    lane.parked.append(task)  # runs when one of the lane's tasks ends
                self._busy += 1
            try:
                again = task()
            except Exception:  # a task must not kill its worker
                log.exception("channel task failed")
                again = False
            with self._cond:
                self._busy -= 1
                if lane is not None:
                    lane.running -= 1
                    if lane.parked:
                        self._queue.append((lane.parked.popleft(), lane))
                if again and not self._closed:
                    self._queue.append((task, lane))
                elif not self._queue and not self._busy:
                    self._cond.notify_all()  # wake wait_idle()

    def wait_idle(self, timeout: float | None = 10.0) -> bool:
        """Block until no task is queued or running (tests with a ManualClock use this)."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._queue and not self._busy, timeout)

    # -- inspection and shutdown ---------------------------------------------------
    @property
    def thread_count(self) -> int:
        with self._cond:
            return len(self._workers)

    def close(self, wait: bool = True, timeout: float | None = 10.0) -> None:
        """Stop accepting tasks; workers finish what is queued (tasks are not
        re-run), then exit. With ``wait``, block until they have (up to ``timeout``);
        what is still queued then is dropped, so no call to a client starts after
        the close has given up waiting (tasks already running go on to their end)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            if wait:
                current = threading.current_thread()
                done = self._cond.wait_for(lambda: not (self._workers - {current}), timeout)
                if not done:
                    lanes = [*self._lanes.values(), self.failing, self.slow]
                    dropped = len(self._queue) + sum(len(lane.parked) for lane in lanes)
                    self._queue.clear()
                    for lane in lanes:
                        lane.parked.clear()
                    if dropped:
                        log.warning("closing: %d queued tasks dropped after %s s", dropped,
                                    timeout)
