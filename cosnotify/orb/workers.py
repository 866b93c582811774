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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cosnotify.orb.server import ServerConnection

__all__ = ["Watcher", "WorkerPool"]

log = logging.getLogger("cosnotify.orb")


class WorkerPool:
    """Threads that run submitted tasks: started on demand up to ``max_workers``.

    A task is queued when every worker is busy and the pool is full. Extra
    workers retire after ``idle_timeout`` seconds without work.
    """

    def __init__(self, max_workers: int, idle_timeout: float = 30.0, name: str = "orb") -> None:
        self.max_workers = max(1, max_workers)
        self.idle_timeout = idle_timeout
        self._name = name
        self._tasks: queue.SimpleQueue[tuple[Callable[..., None], tuple[Any, ...]] | None] = (
            queue.SimpleQueue())
        self._lock = threading.Lock()
        self._workers = 0
        self._idle = 0
        self._stopped = False
        self._threads: set[threading.Thread] = set()

    def submit(self, fn: Callable[..., None], *args: Any) -> None:
        with self._lock:
            if self._stopped:
                return
            self._tasks.put((fn, args))
            if self._idle > 0 or self._workers >= self.max_workers:
                self._idle -= 1 if self._idle > 0 else 0
                return
            self._workers += 1
            thread = threading.Thread(target=self._run, name=f"{self._name}-worker", daemon=True)
            self._threads.add(thread)
        thread.start()

    def _run(self) -> None:
        try:
            while True:
                try:
                    task = self._tasks.get(timeout=self.idle_timeout)
                except queue.Empty:
                    with self._lock:
                        if self._idle > 0 and self._tasks.empty():
                            self._idle -= 1
                            self._workers -= 1
                            return
                    continue
                if task is None:
                    return
                fn, args = task
                try:
                    fn(*args)
                except Exception:
                    log.exception("ORB worker task failed")
                with self._lock:
                    self._idle += 1
        finally:
            with self._lock:
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
    each, no bookkeeping.
    """

    def __init__(self, on_readable: Callable[[ServerConnection], None]) -> None:
        self._epoll = select.epoll()
        self._on_readable = on_readable
        self._connections: dict[int, ServerConnection] = {}
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = os.pipe()
        self._epoll.register(self._wake_r, select.EPOLLIN)
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="orb-watcher", daemon=True)
        self._thread.start()

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
        while True:
            try:
                ready = self._epoll.poll()
            except InterruptedError:
                continue
            except (OSError, ValueError):
                return
            for fd, _ in ready:
                if fd == self._wake_r:
                    return
                connection = self._connections.get(fd)
                if connection is not None:
                    self._on_readable(connection)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
        os.write(self._wake_w, b"x")
        self._thread.join(5.0)
        self._epoll.close()
        os.close(self._wake_r)
        os.close(self._wake_w)
