"""Threads for the server: an elastic bounded worker pool and an epoll watcher.

Strategy: :class:`WorkerPool` runs submitted tasks on threads started on
demand up to a bound; idle extra threads retire. :class:`Watcher` is one
epoll thread that calls back when a connection nobody is reading becomes
readable; the server decides what to do (see :mod:`cosnotify.orb.server`).
Neither knows anything about GIOP.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import select
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cosnotify.orb.server import ServerConnection

__all__ = ["Watcher", "WorkerPool"]

log = logging.getLogger("cosnotify.orb")


class WorkerPool:
    """Threads that run submitted tasks: started on demand up to ``max_workers``.

    A task is queued when every worker is busy and the pool is full. Extra
    workers retire after ``idle_timeout`` seconds without work. The counts
    are exact: ``_waiting`` workers wait for a task, ``_queued`` tasks wait
    for a worker; a new worker starts when the queued tasks outnumber the
    waiting workers (and the pool is not full).
    """

    def __init__(self, max_workers: int, idle_timeout: float = 30.0, name: str = "orb") -> None:
        self.max_workers = max(1, max_workers)
        self.idle_timeout = idle_timeout
        self._name = name
        self._tasks: queue.SimpleQueue[tuple[Callable[..., None], tuple[Any, ...]] | None] = (
            queue.SimpleQueue())
        self._lock = threading.Lock()
        self._workers = 0
        self._waiting = 0
        self._queued = 0
        self._stopped = False
        self._threads: set[threading.Thread] = set()

    def submit(self, fn: Callable[..., None], *args: Any) -> bool:
        """Run ``fn(*args)`` on a worker; False if the pool is stopped (nothing will run)."""
        with self._lock:
            if self._stopped:
                return False
            self._tasks.put((fn, args))
            self._queued += 1
            if self._queued <= self._waiting or self._workers >= self.max_workers:
                return True
            self._workers += 1
            thread = threading.Thread(target=self._run, name=f"{self._name}-worker", daemon=True)
            self._threads.add(thread)
        thread.start()
        return True

    def busy(self) -> int:
        """Workers with a task, plus tasks no worker is free for (a racy read, for heuristics)."""
        return self._workers - self._waiting + self._queued

    def _run(self) -> None:
        lock = self._lock
        try:
            while True:
                with lock:
                    self._waiting += 1
                try:
                    task = self._tasks.get(timeout=self.idle_timeout)
                except queue.Empty:
                    with lock:
                        self._waiting -= 1
                        if not self._queued:
                            self._workers -= 1
                            return
                    continue
                with lock:
                    self._waiting -= 1
                    if task is not None:
                        self._queued -= 1
                if task is None:
                    return
                fn, args = task
                try:
                    fn(*args)
                except Exception:
                    log.exception("ORB worker task failed")
        finally:
            with lock:
                self._threads.discard(threading.current_thread())

    def stop(self) -> None:
        """Let every worker finish its task and exit (tasks still queued are dropped)."""
        with self._lock:
            self._stopped = True
            count = self._workers
        for _ in range(count):
            self._tasks.put(None)


_ARMED = select.EPOLLIN | select.EPOLLRDHUP | select.EPOLLONESHOT if hasattr(select, "epoll") else 0
_DISARMED = select.EPOLLONESHOT if hasattr(select, "epoll") else 0


class Watcher:
    """One epoll thread that hands a connection to the pool when it becomes readable.

    Each connection is registered once, disarmed; ``watch`` arms it for one
    event (EPOLLONESHOT) and ``unwatch`` disarms it again: one ``epoll_ctl``
    each, no bookkeeping. Every ``scan_interval`` seconds it also passes the
    connections to ``on_scan`` (the server closes stalled ones there).
    """

    def __init__(self, on_readable: Callable[[ServerConnection], None],
                 on_scan: Callable[[list[ServerConnection]], None] | None = None,
                 scan_interval: float = 5.0) -> None:
        self._epoll = select.epoll()
        self._on_readable = on_readable
        self._on_scan = on_scan
        self._scan_interval = scan_interval
        self._connections: dict[int, ServerConnection] = {}
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = os.pipe()
        self._epoll.register(self._wake_r, select.EPOLLIN)
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="orb-watcher", daemon=True)
        self._thread.start()

    @property
    def scan_interval(self) -> float:
        return self._scan_interval

    @scan_interval.setter
    def scan_interval(self, seconds: float) -> None:
        """Change the scan period; takes effect at once (the thread is woken)."""
        self._scan_interval = seconds
        with self._lock:
            if not self._stopped:
                os.write(self._wake_w, b"s")

    def add(self, connection: ServerConnection) -> None:
        with self._lock:
            if self._stopped:
                return
            self._connections[connection.fileno] = connection
            with contextlib.suppress(OSError, ValueError):
                self._epoll.register(connection.fileno, _DISARMED)

    def remove(self, connection: ServerConnection) -> None:
        with self._lock:
            if self._connections.get(connection.fileno) is connection:
                del self._connections[connection.fileno]
                with contextlib.suppress(OSError, ValueError):
                    self._epoll.unregister(connection.fileno)

    def watch(self, connection: ServerConnection) -> None:
        if not connection.closed:
            try:
                self._epoll.modify(connection.fileno, _ARMED)
            except (OSError, ValueError):
                pass

    def unwatch(self, connection: ServerConnection) -> None:
        try:
            self._epoll.modify(connection.fileno, _DISARMED)
        except (OSError, ValueError):
            pass

    def _run(self) -> None:
        next_scan = time.monotonic() + self._scan_interval
        while True:
            try:
                ready = self._epoll.poll(self._scan_interval if self._on_scan else -1)
            except InterruptedError:
                continue
            except (OSError, ValueError):
                return
            for fd, _ in ready:
                if fd == self._wake_r:
                    if self._stopped:
                        return
                    os.read(self._wake_r, 64)  # the scan interval changed
                    next_scan = time.monotonic() + self._scan_interval
                    continue
                connection = self._connections.get(fd)
                if connection is not None:
                    try:
                        self._on_readable(connection)
                    except Exception:  # the watcher thread must survive whatever happens
                        log.exception("ORB watcher callback failed")
            if self._on_scan is not None and time.monotonic() >= next_scan:
                next_scan = time.monotonic() + self._scan_interval
                with self._lock:
                    connections = list(self._connections.values())
                try:
                    self._on_scan(connections)
                except Exception:
                    log.exception("ORB watcher scan failed")

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
        os.write(self._wake_w, b"x")
        self._thread.join(5.0)
        self._epoll.close()
        os.close(self._wake_r)
        os.close(self._wake_w)
