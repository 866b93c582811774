"""The seed protocols' transport: one asyncio loop thread, a listener per front end.

Strategy: the front ends (docs/protocols.md) are sans-IO codecs plus a
session coroutine per connection; this module is the only place that owns
sockets. One daemon thread runs an asyncio loop (:class:`Loop`) for every
listener of a server, so a front end costs no thread per client. A session
reads through :class:`Connection`, whose reads end with :class:`ReadTimeout`
when a started frame does not complete in ``Limits.read_timeout`` (a
slow-loris client is closed, the others never wait for it), and writes with
:meth:`Connection.send`, callable from any thread -- the channel's delivery
workers call it -- which never blocks: a client whose unsent bytes pass
``Limits.max_pending`` is dropped, so a slow or dead consumer never stalls
the channel or the other clients. Calls into the core that may block (a
push under flow control, a tuple-space wait) go through
:meth:`Loop.call`, on the loop's executor, so the loop keeps serving
everyone else.

Limits are explicit (:class:`Limits`): connections per listener, the
largest frame a codec accepts, the read and idle timeouts, the bytes queued
to one client. Each listener counts what it did (:class:`Counters`) for
``cosnotify ls``/``top`` and the metrics.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

import attrs

__all__ = ["Connection", "ConnectionClosed", "Counters", "FrontEnd", "Limits", "Loop",
           "ReadTimeout", "Session", "parse_address"]

log = logging.getLogger("cosnotify.protocols")

T = TypeVar("T")


@attrs.frozen
class Limits:
    """One listener's limits (docs/protocols.md, "Limits")."""

    #: Connections open at once; the next one is accepted and closed at once.
    max_connections: int = 256
    #: The largest frame (packet, message, bundle, request) a codec accepts.
    max_frame: int = 1 << 20
    #: Seconds a started frame may take to arrive whole (slow-loris clients are closed).
    read_timeout: float = 30.0
    #: Seconds a connection may stay silent between frames (None: forever).
    idle_timeout: float | None = 3600.0
    #: Bytes queued to one client past which it is dropped as too slow.
    max_pending: int = 16 << 20
    #: Worker threads for the core's blocking calls, shared by the loop's listeners.
    workers: int = 16


@attrs.define
class Counters:
    """What one listener did: read by ``cosnotify ls``/``top`` and the metrics."""

    open: int = 0
    accepted: int = 0
    refused: int = 0          # over max_connections
    closed_bad: int = 0       # closed for bad input, a timeout or a slow read side
    dropped_slow: int = 0     # closed because their unsent bytes passed max_pending
    frames_in: int = 0
    frames_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0

    def snapshot(self) -> dict[str, int]:
        return attrs.asdict(self)


class ConnectionClosed(ConnectionError):
    """The peer went (or the connection was closed) while a session read from it."""


class ReadTimeout(TimeoutError):
    """A frame did not arrive whole in time, or the connection stayed idle too long."""


class Connection:
    """One client's stream, as a session sees it (the loop's thread only, except send)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 loop: asyncio.AbstractEventLoop, limits: Limits, counters: Counters,
                 lingering: set[Connection] | None = None) -> None:
        self._reader = reader
        self._writer = writer
        self._loop = loop
        self.limits = limits
        self.counters = counters
        self.peer: tuple[str, int] = writer.get_extra_info("peername")[:2]
        self.closed = False
        self._on_close: list[Callable[[], None]] = []
        #: The front end's connections closed with bytes still unsent (FrontEnd.close
        #: aborts them).
        self._lingering = lingering if lingering is not None else set()

    # -- reading (the session's coroutine) ---------------------------------------------------
    async def read_some(self, idle: bool = False, deadline: float | None = None) -> bytes:
        """The next bytes the peer sent (at most 64 KiB); ConnectionClosed at its end.

        ``idle`` waits up to ``idle_timeout`` (between frames). Else the read ends by
        ``deadline`` (:meth:`frame_deadline`, taken when a frame began: the whole
        frame must arrive by then, so a client trickling a byte at a time is closed
        too), or without one within ``read_timeout``.
        """
        if idle:
            timeout = self.limits.idle_timeout
        elif deadline is not None:
            timeout = max(0.0, deadline - self._loop.time())
        else:
            timeout = self.limits.read_timeout
        try:
            async with asyncio.timeout(timeout):  # no task per read, unlike wait_for
                data = await self._reader.read(65536)
        except TimeoutError as exc:
            raise ReadTimeout("idle" if idle else "a frame did not arrive in time") from exc
        except (ConnectionError, OSError) as exc:
            raise ConnectionClosed(str(exc)) from exc
        if not data:
            raise ConnectionClosed("the peer closed the connection")
        self.counters.bytes_in += len(data)
        return data

    def frame_deadline(self) -> float:
        """When a frame beginning now must have arrived whole (the loop's clock)."""
        return self._loop.time() + self.limits.read_timeout

    # -- writing (any thread) ------------------------------------------------------------------
    def send(self, data: bytes, frames: int = 1) -> bool:
        """Queue ``data`` to the peer without blocking; False if the connection is gone.

        Safe from any thread. A client whose unsent bytes pass ``max_pending``
        is dropped (counted in ``dropped_slow``).
        """
        if self.closed:
            return False
        if self.in_loop():
            self._write(data, frames)
        else:
            try:
                self._loop.call_soon_threadsafe(self._write, data, frames)
            except RuntimeError:  # the loop is closed: the server is stopping
                return False
        return True

    def in_loop(self) -> bool:
        """Is the caller the loop's thread (where reads and closes run directly)?"""
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:
            return False

    def pending(self) -> int:
        """Bytes written and not yet sent (0 once closed): a protocol's own queue limit
        (Elvin's Send-Queue.Max-Length) reads it; :attr:`Limits.max_pending` is the cap."""
        try:
            return 0 if self.closed else int(self._writer.transport.get_write_buffer_size())
        except (AttributeError, RuntimeError):
            return 0

    def _write(self, data: bytes, frames: int) -> None:
        if self.closed:
            return
        transport = self._writer.transport
        if transport.get_write_buffer_size() + len(data) > self.limits.max_pending:
            self.counters.dropped_slow += 1
            log.warning("%s:%d dropped: more than %d bytes unsent", *self.peer,
                        self.limits.max_pending)
            self.abort()
            return
        self.counters.bytes_out += len(data)  # counted first: the peer may read it at once
        self.counters.frames_out += frames
        self._writer.write(data)

    def on_close(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (in the loop's thread) once the connection is closed."""
        if self.closed:
            callback()
        else:
            self._on_close.append(callback)

    def close(self) -> None:
        """Close after what is queued is written (any thread); a peer that reads none
        of it for ``read_timeout`` is then dropped (:meth:`_linger`)."""
        if self.in_loop():
            self._close(abort=False)
        else:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._close, False)

    def abort(self) -> None:
        """Close at once, dropping what is queued (any thread)."""
        if self.in_loop():
            self._close(abort=True)
        else:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._close, True)

    def _close(self, abort: bool) -> None:
        if self.closed:
            return
        self.closed = True
        transport = self._writer.transport
        if abort:
            transport.abort()
        else:
            transport.close()
            left = transport.get_write_buffer_size()
            if left:  # flushed while the peer reads; not kept for one that never does
                self._lingering.add(self)
                self._loop.call_later(self.limits.read_timeout, self._linger, left)
        callbacks, self._on_close = self._on_close, []
        for callback in callbacks:
            try:
                callback()
            except Exception:  # a session's cleanup must not stop the others'
                log.exception("cleanup of %s:%d failed", *self.peer)

    def _linger(self, before: int) -> None:
        """A closed connection's unsent bytes, ``read_timeout`` after ``before`` were
        left: the peer that read none of them meanwhile is dropped (counted in
        ``dropped_slow``), so it holds neither the socket nor the bytes for ever."""
        transport = self._writer.transport
        left = transport.get_write_buffer_size()
        if not left:  # all sent (or the transport let go): the socket is released
            self._lingering.discard(self)
        elif left < before:  # the peer reads: it may take its time
            self._loop.call_later(self.limits.read_timeout, self._linger, left)
        else:
            self._lingering.discard(self)
            self.counters.dropped_slow += 1
            log.warning("%s:%d dropped: %d bytes left unread after its close", *self.peer,
                        left)
            transport.abort()

    async def wait_closed(self) -> None:
        """Until the socket is released: closed, and what was queued sent or dropped."""
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()


class Session(Protocol):
    """What a front end runs per connection: read frames, answer, until the peer goes."""

    async def run(self, connection: Connection) -> None: ...


class Loop:
    """The daemon thread and asyncio loop that serve a server's front ends."""

    def __init__(self, workers: int = 16, name: str = "cosnotify-protocols") -> None:
        self._loop = asyncio.new_event_loop()
        self._executor = concurrent.futures.ThreadPoolExecutor(workers, name + "-call")
        self._loop.set_default_executor(self._executor)
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.call_soon(self._ready.set)
        self._loop.run_forever()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def submit(self, coroutine: Awaitable[T]) -> concurrent.futures.Future[T]:
        """Run ``coroutine`` on the loop (from another thread)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)  # type: ignore[arg-type]

    async def call(self, function: Callable[..., T], *args: Any) -> T:
        """Run a blocking call into the core on the executor (from the loop)."""
        return await self._loop.run_in_executor(self._executor, function, *args)

    def close(self, timeout: float = 5.0) -> None:
        """Stop the loop and its thread (listeners should be closed first)."""
        if self._loop.is_closed():
            return

        async def finish() -> None:  # sessions still running end cancelled, not destroyed
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks, timeout=timeout) if tasks else None
            self._loop.stop()

        try:
            asyncio.run_coroutine_threadsafe(finish(), self._loop)
        except RuntimeError:  # the loop stopped already
            pass
        self._thread.join(timeout)
        self._executor.shutdown(wait=False, cancel_futures=True)
        if not self._thread.is_alive():
            self._loop.close()


class FrontEnd:
    """One listening socket of a front end: accepts, enforces the limits, runs sessions.

    ``session_factory(connection)`` makes the session for each accepted
    connection; its ``run`` returning, or raising ConnectionClosed or
    ReadTimeout, closes the connection. Any other exception is a bug, logged
    with its traceback; the connection closes and the listener goes on.
    """

    def __init__(self, name: str, loop: Loop, host: str, port: int,
                 session_factory: Callable[[Connection], Session],
                 limits: Limits | None = None) -> None:
        self.name = name
        self.limits = limits or Limits()
        self.counters = Counters()
        self._loop = loop
        self._factory = session_factory
        self._connections: set[Connection] = set()
        self._lingering: set[Connection] = set()
        self._closing = False
        self._server: asyncio.base_events.Server = loop.submit(
            asyncio.start_server(self._accept, host, port, limit=self.limits.max_frame + 65536,
                                 reuse_address=True)).result(10)
        self.address: tuple[str, int] = self._server.sockets[0].getsockname()[:2]

    async def _accept(self, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        if self._closing:  # accepted just before close(): no session on a closed front end
            writer.transport.abort()
            return
        if len(self._connections) >= self.limits.max_connections:
            self.counters.refused += 1
            writer.transport.abort()
            return
        connection = Connection(reader, writer, self._loop.loop, self.limits, self.counters,
                                self._lingering)
        self._connections.add(connection)
        self.counters.accepted += 1
        self.counters.open += 1
        try:
            await self._factory(connection).run(connection)
        except ConnectionClosed:
            pass
        except ReadTimeout as exc:
            self.counters.closed_bad += 1
            log.info("%s: %s:%d closed: %s", self.name, *connection.peer, exc)
        except asyncio.CancelledError:
            pass
        except Exception:
            self.counters.closed_bad += 1
            log.exception("%s: the session of %s:%d failed", self.name, *connection.peer)
        finally:
            self._connections.discard(connection)
            self.counters.open -= 1
            connection._close(abort=False)

    def snapshot(self) -> dict[str, int]:
        """The counters, for ``cosnotify.stats`` (a protocol may add its own)."""
        return self.counters.snapshot()

    def connections(self) -> list[Connection]:
        """The connections open now (a copy)."""
        return list(self._connections)

    def close(self) -> None:
        """Stop listening and close every connection (from any thread but the loop's)."""
        async def shut() -> None:
            self._closing = True
            self._server.close()
            for connection in list(self._connections):
                connection._close(abort=True)
            for connection in list(self._lingering):  # closed, their bytes unsent
                connection._writer.transport.abort()
            self._lingering.clear()
            await self._server.wait_closed()

        with contextlib.suppress(Exception):
            self._loop.submit(shut()).result(10)


def parse_address(text: str, default_port: int) -> tuple[str, int]:
    """``HOST:PORT``, ``HOST`` or ``:PORT`` (the host defaults to 127.0.0.1); an IPv6
    host with a port is bracketed (``[::1]:2917``), one without may be bare (``::1``)."""
    if text.startswith("[") and "]" in text:
        host, _, rest = text[1:].partition("]")
        if rest and not rest.startswith(":"):
            raise ValueError(f"not a port: {rest!r} in {text!r}")
        port = rest[1:]
    elif text.count(":") > 1:
        host, port = text, ""
    else:
        host, _, port = text.rpartition(":") if ":" in text else (text, "", "")
    host = host or "127.0.0.1"
    if not port:
        return host, default_port
    if not (port.isascii() and port.isdigit() and len(port) <= 5) or int(port) > 65535:
        raise ValueError(f"not a port: {port!r} in {text!r}")
    return host, int(port)
