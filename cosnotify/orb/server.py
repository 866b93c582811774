"""The GIOP server: listeners, server connections, and the threads that serve them.

Strategy: each accepted transport becomes a :class:`ServerConnection`, the
sans-IO :class:`GIOPConnection` plus the locks and bookkeeping to read
requests and write replies from several threads. Requests are handled by
threads of one elastic, bounded :class:`WorkerPool`. At most one thread at a
time *reads* a connection (the reader role); requests on one connection may
still run concurrently, because the reader gives the role away before it
runs a request.

Two threading models, chosen by ``-ORBthreadPerConnectionPolicy`` (see
docs/orb.md for the measurements behind the default):

* **thread per connection** (default, 1): a thread blocks reading its
  connection. When a request arrives it asks the :class:`Watcher` (one epoll
  thread) to watch the socket, runs the request itself, and then takes the
  reader role back unless more data arrived meanwhile, in which case the
  watcher has already handed the connection to another worker. A client
  making one call at a time is served with no thread hand-off at all.
* **thread pool** (0): idle connections are watched by the watcher; when one
  becomes readable, a worker reads it, gives it back to the watcher and runs
  the requests it read. One hand-off per request, but no thread per idle
  connection.

Transports without a file descriptor (the mock) cannot be watched; their
reader keeps the role and hands every request to the pool instead.

Idle and stalled connections must not starve the others. A thread blocks
reading a connection only while the pool keeps ``reserve`` threads free, and
gives up after ``idle_timeout`` seconds of silence, handing the connection
to the watcher; so however many connections sit idle (or send half a header
and stop), some threads always serve the pool model. The watcher closes a
connection that has been silent for ``stall_timeout`` seconds in the middle
of a message, so a stalled peer does not hold its buffer for ever.

Errors: a peer that breaks GIOP is sent MessageError and disconnected; a
request's failures become replies in :mod:`cosnotify.orb.dispatch`. Nothing
on one connection affects another.
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import select
import threading
import time
from collections.abc import Callable
from typing import Any

from cosnotify.orb.codesets import CodeSetContext
from cosnotify.orb.exceptions import SystemException
from cosnotify.orb.fastpath import STOP, FastRequest, Framer, RequestParser
from cosnotify.orb.giop import (
    NEED_DATA,
    ConnectionClosed,
    GIOPConnection,
    LocalProtocolError,
    RemoteProtocolError,
    Role,
)
from cosnotify.orb.giop_messages import (
    CloseConnection,
    LocateRequest,
    Message,
    MessageError,
    Request,
)
from cosnotify.orb.transport import (
    READ_SIZE,
    ReadError,
    ReadTimeout,
    TCPListener,
    Transport,
    WriteError,
)
from cosnotify.orb.workers import Watcher, WorkerPool

__all__ = ["Server", "ServerConnection", "Watcher", "WorkerPool"]

log = logging.getLogger("cosnotify.orb")

#: Seconds a thread waits on a silent connection (thread per connection) before
#: handing it to the watcher.
IDLE_TIMEOUT = 10.0
#: Seconds of silence in the middle of a message after which the connection is closed.
STALL_TIMEOUT = 60.0
#: At the connection limit: the idlest connections considered for closing.
_CANDIDATES = 8
#: Seconds between warnings about refused connections (each warning counts them).
_REFUSAL_LOG_INTERVAL = 10.0


def default_max_connections() -> int:
    """Half the process's soft file-descriptor limit (the rest is for outbound calls)."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return 512
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return 4096
    return max(16, min(4096, soft // 2))


class ServerConnection:
    """One accepted GIOP connection."""

    def __init__(self, transport: Transport, server: Server) -> None:
        self.transport = transport
        self.server = server
        self.giop = GIOPConnection(Role.SERVER, max_message_size=server.max_message_size)
        self.framer = Framer(server.max_message_size)
        self.parser = RequestParser()
        self.lock = threading.Lock()
        self.write_lock = threading.Lock()
        self.reading = True  # the creator serves it first
        self.running = 0  # requests read and not yet run to the end (guarded by Server._lock)
        self.last_active = time.monotonic()  # when the peer last sent something
        self.closed = False
        self.ending = False
        self.version: tuple[int, int] = (1, 0)
        self.idle = False  # the last read timed out with nothing received
        #: When the peer last sent something while a message was incomplete (None: none is).
        self.stalled_since: float | None = None
        self.tcs: CodeSetContext | None = None
        self._tcs_raw: bytes | None = None
        self._codecs: dict[tuple[bool, tuple[int, int]], Any] = {}
        fileno = getattr(transport, "fileno", None)
        self.fileno: int = fileno() if callable(fileno) else -1

    def __repr__(self) -> str:
        return f"<ServerConnection {getattr(self.transport, 'peer', '?')}>"

    # -- reading -------------------------------------------------------------------------------
    def read_messages(self, timeout: float | None = None) -> list[Any] | None:
        """Complete messages from one read (maybe none); None once the connection is over.

        Waits for data at most ``timeout`` seconds (None: as long as it
        takes); when none came, returns ``[]`` with :attr:`idle` set.
        Common requests come back as :class:`FastRequest`, everything else as
        the GIOP message values. Messages that arrived before the peer closed
        are still returned (a client may send a oneway request and hang up);
        the next call closes.
        """
        if self.closed:
            return None
        if self.ending:
            self.close()
            return None
        try:
            data = self.transport.read(READ_SIZE, timeout)
        except ReadTimeout:
            self.idle = True
            return []
        except ReadError:
            data = b""
        except OSError:
            return []
        self.idle = False
        self.last_active = time.monotonic()
        messages: list[Any] = []
        last_words = b""
        with self.lock:
            framer, giop = self.framer, self.giop
            try:
                if not data:
                    giop.receive_data(framer.take_rest())
                    giop.receive_data(b"")
                    self._drain(messages)
                elif framer.stopped:
                    giop.receive_data(data)
                    self._drain(messages)
                else:
                    framer.feed(data)
                    while True:
                        raw = framer.next()
                        if raw is None:
                            break
                        if raw is STOP:
                            giop.receive_data(framer.take_rest())
                            self._drain(messages)
                            break
                        assert isinstance(raw, bytes)
                        fast = self.parser.parse(raw) if raw[7] == 0 else None
                        if fast is not None:
                            messages.append(fast)
                            continue
                        giop.receive_data(raw)
                        self._drain(messages)
                        if self.ending:
                            break
                if framer.pending() or giop.pending():
                    self.stalled_since = time.monotonic()
                else:
                    self.stalled_since = None
            except RemoteProtocolError as exc:
                log.info("closing %r: %s", self, exc)
                with contextlib.suppress(LocalProtocolError):
                    last_words = giop.send(MessageError(self.version))
                messages = []
                self.ending = True
        if messages:
            return messages
        if not self.ending:
            return messages
        self.close(last_words)
        return None

    def _drain(self, messages: list[Any]) -> None:
        """Collect the GIOP connection's events (called with ``lock``)."""
        while True:
            event = self.giop.next_event()
            if event is NEED_DATA:
                return
            if isinstance(event, (ConnectionClosed, CloseConnection, MessageError)):
                self.ending = True
                return
            messages.append(event)

    # -- writing -------------------------------------------------------------------------------
    def send(self, message: Message) -> None:
        """Send a message through the GIOP state machine."""
        with self.lock:
            if self.closed:
                return
            try:
                data = self.giop.send(message)
            except LocalProtocolError as exc:
                log.warning("cannot send %s on %r: %s", type(message).__name__, self, exc)
                return
        self.write(data)

    def send_reply(self, request: Any, data: bytes) -> None:
        """Send a reply built as octets (the state machine's bookkeeping kept by hand)."""
        if not isinstance(request, FastRequest):
            with self.lock:
                self.giop.outstanding.pop(request.request_id, None)
        self.write(data)

    def write(self, data: bytes) -> None:
        if self.closed:
            return
        with self.write_lock:
            try:
                self.transport.write(data)
            except WriteError:
                self.close()

    def close(self, last_words: bytes = b"") -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
        if last_words:
            with self.write_lock, contextlib.suppress(WriteError):
                self.transport.write(last_words)
        self.server.forget(self)
        self.transport.close()

    def close_politely(self) -> None:
        """Send CloseConnection (15.4.7) and close."""
        data = b""
        with self.lock:
            if self.closed:
                return
            with contextlib.suppress(LocalProtocolError):
                data = self.giop.send(CloseConnection(self.version))
        self.close(data)

    # -- requests ------------------------------------------------------------------------------
    def handle(self, message: Any, before_reply: Callable[[], object] | None = None) -> None:
        """Run one received message and send its reply, if any.

        ``before_reply`` runs once the reply is ready and before it is sent
        (the reader takes its role back there, so that the client's next
        request, which the reply may prompt at once, finds it reading).
        """
        server = self.server
        reply: bytes | None = None
        if isinstance(message, (FastRequest, Request)):
            self.version = message.version
            try:
                codec = self._codec(message)
            except SystemException as exc:
                if message.response_expected:
                    reply = server.dispatcher.system_reply(message, exc)
            else:
                reply = server.dispatcher.handle_request(message, codec,
                                                         self._reply_codec(message.version))
        elif isinstance(message, LocateRequest):
            self.version = message.version
            if before_reply is not None:
                before_reply()
            self.send(server.dispatcher.handle_locate(message))
            return
        # CancelRequest: a running Python call cannot be stopped; its reply is still sent.
        if before_reply is not None:
            before_reply()
        if reply is not None:
            self.send_reply(message, reply)

    def _codec(self, request: Any) -> Any:
        """The codec for a request's body; a CodeSets context fixes the connection's (13.10.2.5)."""
        if self.tcs is None and request.service_contexts and request.version >= (1, 1):
            raw = request.service_context(1)
            if raw is not None and raw != self._tcs_raw:
                self.tcs = CodeSetContext.decode(raw)
                self._tcs_raw = raw
                self._codecs = {}
        key = (request.little_endian, request.version)
        found = self._codecs.get(key)
        if found is None:
            found = self._codecs[key] = self.server.codec(self.tcs, *key)
        return found

    def _reply_codec(self, version: tuple[int, int]) -> Any:
        found = self._codecs.get((True, version))
        if found is None:
            found = self._codecs[(True, version)] = self.server.codec(self.tcs, True, version)
        return found


class Server:
    """Listening endpoints and the connections accepted on them."""

    def __init__(self, dispatcher: Any, codec: Callable[[Any, bool, tuple[int, int]], Any], *,
                 max_message_size: int, max_workers: int, thread_per_connection: bool,
                 max_connections: int | None = None) -> None:
        self.dispatcher = dispatcher
        self.codec = codec
        self.max_message_size = max_message_size
        #: Connections served at once; see :meth:`add_connection`.
        self.max_connections = (default_max_connections() if max_connections is None
                                else max(1, max_connections))
        self.thread_per_connection = thread_per_connection
        self.pool = WorkerPool(max_workers, name="orb-server")
        #: Threads never given to blocking readers (see the module docstring).
        self.reserve = max(1, self.pool.max_workers // 8)
        self.idle_timeout = IDLE_TIMEOUT
        self.stall_timeout = STALL_TIMEOUT
        self._watcher: Watcher | None = None
        if hasattr(select, "epoll"):
            self._watcher = Watcher(self._readable, self._scan)
        self._listeners: list[TCPListener] = []
        self._connections: set[ServerConnection] = set()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._running = 0
        self._idle_waiters = 0
        self._stopped = False
        self._refused = 0  # connections refused since the last warning
        self._refusal_logged = -_REFUSAL_LOG_INTERVAL

    def listen(self, host: str, port: int) -> int:
        """Start accepting on ``host:port``; returns the real port."""
        listener = TCPListener(host, port)
        listener.on_exhausted = log.warning
        self._listeners.append(listener)
        threading.Thread(target=self._accept, args=(listener,), name="orb-accept",
                         daemon=True).start()
        return listener.port

    def _accept(self, listener: TCPListener) -> None:
        while True:
            transport = listener.accept()
            if transport is None:
                return
            self.add_connection(transport)

    def add_connection(self, transport: Transport) -> ServerConnection:
        """Serve an accepted (or mock) transport.

        At ``max_connections`` the idlest connection -- no request running,
        no message half read, nobody reading it -- is closed with
        CloseConnection, which clients answer by reconnecting (the JacORB
        policy); if every connection is busy, the new one is closed at once.
        """
        connection = ServerConnection(transport, self)
        closed_one = True
        while True:
            with self._lock:
                if self._stopped:
                    transport.close()
                    return connection
                if len(self._connections) < self.max_connections:
                    self._connections.add(connection)
                    break
                candidates = heapq.nsmallest(
                    _CANDIDATES, (c for c in self._connections if not c.running),
                    key=lambda c: c.last_active)
            if not closed_one:  # none could go, and no room was made meanwhile
                self._refuse(connection)
                return connection
            closed_one = self._close_idlest(candidates)
        if self._watcher is not None and connection.fileno >= 0:
            self._watcher.add(connection)
        self.pool.submit(self._serve, connection)
        return connection

    def _close_idlest(self, candidates: list[ServerConnection]) -> bool:
        """Close the first of ``candidates`` that is idle now; False if none is.

        The victim leaves the count at once; its CloseConnection is written
        by a worker, since a peer that reads nothing could block the write
        (and this is the accept thread).
        """
        for victim in candidates:
            with victim.lock:  # running is counted before the reader role is given up
                if (victim.reading or victim.closed or victim.running
                        or victim.stalled_since is not None):
                    continue
                victim.reading = True  # the reader role: no request is read from it now
            self.forget(victim)
            log.info("closing %r, idle for %.0f s, to make room (-ORBmaxServerConnections %d)",
                     victim, time.monotonic() - victim.last_active, self.max_connections)
            if not self.pool.submit(victim.close_politely):
                victim.close_politely()
            return True
        return False

    def _refuse(self, connection: ServerConnection) -> None:
        """Turn a newcomer away with CloseConnection: nothing was processed, so its
        client may retry (TRANSIENT), unlike after a bare close (COMM_FAILURE)."""
        now = time.monotonic()
        self._refused += 1
        if now - self._refusal_logged >= _REFUSAL_LOG_INTERVAL:
            log.warning("refused %d connection(s) since the last such warning, the latest "
                        "from %s: all %d connections are busy (-ORBmaxServerConnections)",
                        self._refused, getattr(connection.transport, "peer", "?"),
                        self.max_connections)
            self._refused, self._refusal_logged = 0, now
        connection.close_politely()  # a new socket's buffer is empty: this does not block

    def forget(self, connection: ServerConnection) -> None:
        with self._lock:
            self._connections.discard(connection)
        if self._watcher is not None and connection.fileno >= 0:
            self._watcher.remove(connection)

    # -- the threading models ---------------------------------------------------------------
    def _readable(self, connection: ServerConnection) -> None:
        """Watcher callback: data (or a close) arrived on a connection nobody is reading."""
        with connection.lock:
            if connection.reading or connection.closed:
                return
            connection.reading = True
        self.pool.submit(self._serve, connection)

    def _serve(self, connection: ServerConnection) -> None:
        """Run as the connection's reader until the role is given away.

        Oneway requests run at once, in order, before anything else is read
        from the connection (a client's oneways are not overtaken by its next
        request). A two-way request is run with the reader role given away,
        so a request that blocks does not hold up the connection; the role
        is taken back before the reply goes out, unless another thread took
        it meanwhile.
        """
        watcher = self._watcher if connection.fileno >= 0 else None
        pool = self.pool
        while True:
            if watcher is None:
                timeout: float | None = None  # cannot be watched: the reader keeps it
            elif self.thread_per_connection and pool.busy() <= pool.max_workers - self.reserve:
                timeout = self.idle_timeout
            else:
                timeout = 0.0  # the pool model, or threads are short: read what is there
            block = timeout != 0.0
            messages = connection.read_messages(timeout)
            if messages is None:
                return
            if connection.idle and watcher is not None:  # silence: let the watcher wait
                self._release(connection, watcher)
                return
            last = len(messages) - 1
            if last >= 0:
                # Counted while this thread still reads the connection (see _close_idlest).
                with self._lock:
                    self._running += last + 1
                    connection.running += last + 1
            reclaimed = True
            for index, message in enumerate(messages):
                if not getattr(message, "response_expected", True):
                    self._run(connection, message)
                elif index < last or watcher is None:
                    self._run_async(connection, message)
                else:
                    assert watcher is not None
                    self._release(connection, watcher)
                    if self.thread_per_connection:
                        reclaimed = self._run_and_reclaim(connection, message, watcher)
                    else:
                        self._run(connection, message)
                        reclaimed = False
            if not reclaimed:
                return
            if not block:
                self._release(connection, watcher)
                return

    def _release(self, connection: ServerConnection, watcher: Watcher | None) -> None:
        with connection.lock:
            connection.reading = False
            closed = connection.closed
        if watcher is not None and not closed:
            watcher.watch(connection)

    def _scan(self, connections: list[ServerConnection]) -> None:
        """Watcher callback, now and then: close connections stalled inside a message."""
        limit = time.monotonic() - self.stall_timeout
        for connection in connections:
            with connection.lock:
                since = connection.stalled_since
                if connection.reading or connection.closed or since is None or since > limit:
                    continue
                connection.reading = True  # nobody else may read it now
            log.info("closing %r: silent for %.0f s inside a message", connection,
                     self.stall_timeout)
            connection.close()

    def _reclaim(self, connection: ServerConnection, watcher: Watcher) -> bool:
        with connection.lock:
            if connection.reading or connection.closed:
                return False
            connection.reading = True
        watcher.unwatch(connection)
        return True

    def _run_and_reclaim(self, connection: ServerConnection, message: Any, watcher: Watcher
                         ) -> bool:
        """Run a two-way request; take the reader role back before replying (the hot path)."""
        try:
            if type(message) is not FastRequest:
                outcome = [False]  # per call: requests on one connection run concurrently

                def reclaim() -> None:
                    outcome[0] = self._reclaim(connection, watcher)

                connection.handle(message, reclaim)
                return outcome[0]
            try:
                reply = self.dispatcher.handle_request(
                    message, connection._codec(message), connection._reply_codec((1, 2)))
            except SystemException as exc:  # the request's code sets
                reply = self.dispatcher.system_reply(message, exc)
            with connection.lock:
                reclaimed = not (connection.reading or connection.closed)
                if reclaimed:
                    connection.reading = True
            if reclaimed:
                watcher.unwatch(connection)
            if reply is not None:
                connection.write(reply)
            return reclaimed
        finally:
            self._done(connection)

    def _run_async(self, connection: ServerConnection, message: Message) -> None:
        if not self.pool.submit(self._run, connection, message):
            self._done(connection)  # the server is closing: the request is dropped

    def _run(self, connection: ServerConnection, message: Any,
             before_reply: Callable[[], object] | None = None) -> None:
        try:
            connection.handle(message, before_reply)
        finally:
            self._done(connection)

    def _done(self, connection: ServerConnection) -> None:
        """A request counted by _serve has been run."""
        with self._lock:
            connection.running -= 1
            self._running -= 1
            if self._running == 0 and self._idle_waiters:
                self._idle.notify_all()

    # -- shutting down ------------------------------------------------------------------------
    def stop_listening(self) -> None:
        for listener in self._listeners:
            listener.close()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no request is running."""
        with self._lock:
            self._idle_waiters += 1
            try:
                return self._idle.wait_for(lambda: self._running == 0, timeout)
            finally:
                self._idle_waiters -= 1

    def close(self) -> None:
        """Stop listening, say CloseConnection on every connection, stop the threads."""
        with self._lock:
            self._stopped = True
            connections = list(self._connections)
        self.stop_listening()
        for connection in connections:
            connection.close_politely()
        if self._watcher is not None:
            self._watcher.stop()
        self.pool.stop()

    def connection_count(self) -> int:
        with self._lock:
            return len(self._connections)
