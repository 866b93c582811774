"""Client-side GIOP connections and the per-endpoint connection pool.

Strategy: one :class:`ClientConnection` per server endpoint, shared by every
thread and every object reference that talks to it. Requests from several
threads interleave on it, told apart by request id (CORBA 3.0 15.4.2).
There is no reader thread: the *calling* threads take turns reading
(leader/follower). A caller that finds nobody reading becomes the reader; it
hands each reply it reads to the call waiting for it, and when its own reply
has arrived it passes the reader role to another waiting caller. A single
caller therefore sends and receives in its own thread, with no thread
hand-off on the call path; with many callers one thread reads and wakes the
others.

Two locks: ``_lock`` guards the sans-IO :class:`GIOPConnection`, the table of
waiting calls and the reader role (held only for short, non-blocking work);
``_write_lock`` keeps whole messages together on the wire. Nothing blocks
while holding ``_lock``.

Failures (this is the boundary from transport errors to CORBA exceptions):
connecting fails with ``TRANSIENT`` (COMPLETED_NO); a call with no reply
within its timeout with ``TIMEOUT`` (COMPLETED_MAYBE, and a CancelRequest is
sent); a write that fails with ``TRANSIENT`` (COMPLETED_NO, the request never
left whole); losing the connection while calls are in flight with
``COMM_FAILURE`` (COMPLETED_MAYBE); the server's CloseConnection with
``TRANSIENT`` (COMPLETED_NO: 15.4.7 says unanswered requests were not
processed) and such calls may be retried. A connection that went idle is
checked for a pending close (end of stream or CloseConnection) before it is
reused, so a call after the server restarted goes out on a new connection.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from cosnotify.orb.cdr_core import COSNOTIFY_VMCID
from cosnotify.orb.exceptions import (
    COMM_FAILURE,
    COMPLETED_MAYBE,
    COMPLETED_NO,
    OMGVMCID,
    TIMEOUT,
    TRANSIENT,
    SystemException,
)
from cosnotify.orb.fastpath import STOP, Framer, finish_message, parse_reply
from cosnotify.orb.giop import (
    NEED_DATA,
    ConnectionClosed,
    GIOPConnection,
    LocalProtocolError,
    RemoteProtocolError,
    Role,
)
from cosnotify.orb.giop_messages import (
    CancelRequest,
    CloseConnection,
    LocateReply,
    LocateRequest,
    MessageError,
    Reply,
    Request,
)
from cosnotify.orb.transport import (
    READ_SIZE,
    ConnectError,
    ConnectTimeout,
    ReadError,
    ReadTimeout,
    Transport,
    WriteError,
    connect_tcp,
)

__all__ = ["ClientConnection", "ConnectionPool", "Minor"]


class Minor:
    """Minor codes of the exceptions this layer raises."""

    CONNECT_FAILED = OMGVMCID | 2          # TRANSIENT: no usable profile / connect failed
    CONNECTION_CLOSED = COSNOTIFY_VMCID | 32  # TRANSIENT: the server sent CloseConnection
    WRITE_FAILED = COSNOTIFY_VMCID | 33    # TRANSIENT: the request could not be sent
    CONNECTION_LOST = COSNOTIFY_VMCID | 34  # COMM_FAILURE: lost while a reply was due
    PROTOCOL_ERROR = COSNOTIFY_VMCID | 35  # COMM_FAILURE: the server broke GIOP
    CALL_TIMEOUT = COSNOTIFY_VMCID | 36    # TIMEOUT: no reply in time
    CONNECT_TIMEOUT = COSNOTIFY_VMCID | 37  # TRANSIENT: connecting timed out


class _Call:
    """One two-way request waiting for its reply."""

    __slots__ = ("done", "error", "event", "reply", "retryable")

    def __init__(self) -> None:
        self.done = False
        self.reply: Any = None
        self.error: SystemException | None = None
        self.retryable = False
        self.event: threading.Event | None = None


Reader = Callable[[int], "Request | LocateRequest"]


class ClientConnection:
    """One GIOP connection to a server, shared by concurrent callers."""

    def __init__(self, transport: Transport, address: tuple[str, int], *,
                 max_message_size: int, on_close: Callable[[ClientConnection], None] | None = None
                 ) -> None:
        self.address = address
        self._transport = transport
        self._readable: Callable[[], bool] | None = getattr(transport, "readable", None)
        self._giop = GIOPConnection(Role.CLIENT, max_message_size=max_message_size)
        self._framer = Framer(max_message_size)
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._waiters: dict[int, _Call] = {}
        self._reading = False
        self._failure: SystemException | None = None
        self._on_close = on_close
        #: The transmission code sets chosen on this connection (None: not yet).
        self.tcs: Any = None

    @property
    def closed(self) -> bool:
        return self._failure is not None

    def __repr__(self) -> str:
        host, port = self.address
        return f"<ClientConnection {host}:{port}{' closed' if self.closed else ''}>"

    # -- sending ---------------------------------------------------------------------------
    def call(self, build: Callable[[int], Request | LocateRequest], timeout: float | None,
             ) -> Any:
        """Send the message ``build(request_id)`` makes; wait for its reply if one is due.

        Returns None for a oneway request. Raises the CORBA exception the
        caller should see; ``exc.retryable`` (an attribute set here) is True
        when the request certainly was not processed.
        """
        call = _Call()
        with self._write_lock:
            with self._lock:
                if self._failure is None and not self._waiters and not self._reading:
                    self._check_idle()
                if self._failure is not None:
                    raise _retryable(TRANSIENT(Minor.CONNECTION_CLOSED, COMPLETED_NO,
                                               f"connection to {self._peer()} is closed"))
                request_id = self._giop.next_request_id()
                message = build(request_id)
                try:
                    data = self._giop.send(message)
                except LocalProtocolError as exc:
                    raise TRANSIENT(Minor.WRITE_FAILED, COMPLETED_NO, str(exc)) from exc
                expects = isinstance(message, LocateRequest) or message.response_expected
                if expects:
                    self._waiters[request_id] = call
            self._write(data, request_id, reader=False)
        if not expects:
            return None
        return self._wait(call, request_id, timeout)

    def call_raw(self, buffer: bytearray, rid_at: int, version: tuple[int, int], expects: bool,
                 timeout: float | None) -> Any:
        """Like :meth:`call`, for a Request already built as octets on a
        :func:`~cosnotify.orb.fastpath.request_prefix` (size and id patched here).

        Returns a :class:`~cosnotify.orb.fastpath.RawReply`, a ``Reply``, or
        None for a oneway request.
        """
        call = _Call()
        reader = False
        with self._write_lock:
            with self._lock:
                if self._failure is None and not self._waiters and not self._reading:
                    self._check_idle()
                giop = self._giop
                if self._failure is not None or giop.closed:
                    raise _retryable(TRANSIENT(Minor.CONNECTION_CLOSED, COMPLETED_NO,
                                               f"connection to {self._peer()} is closed"))
                request_id = giop.next_request_id()
                finish_message(buffer, request_id, rid_at)
                if expects:
                    giop.outstanding[request_id] = version
                    self._waiters[request_id] = call
                    if not self._reading:  # nobody reads: this caller will (no hand-off)
                        self._reading = reader = True
            self._write(buffer, request_id, reader)
        if not expects:
            return None
        if reader:
            self._read_until(call, None if timeout is None else time.monotonic() + timeout)
            if not call.done:
                self._give_up(call, request_id, timeout)
            if call.error is None:
                return call.reply
        return self._wait(call, request_id, timeout)

    def _write(self, data: bytes | bytearray, request_id: int, reader: bool) -> None:
        """Send a request (with ``_write_lock`` held); on failure the connection fails,
        the request is forgotten and the caller gets a retryable TRANSIENT."""
        try:
            self._transport.write(data)
        except WriteError as exc:
            error = _retryable(TRANSIENT(Minor.WRITE_FAILED, COMPLETED_NO,
                                         f"cannot send to {self._peer()}: {exc}"))
            with self._lock:
                self._waiters.pop(request_id, None)
                self._fail(error, error)
                if reader:
                    self._reading = False
            raise error from exc

    def _check_idle(self) -> None:
        """Notice a close that arrived while nobody was reading (called with ``_lock``)."""
        readable = self._readable
        if readable is not None and not readable():
            return
        try:
            data = self._transport.read(READ_SIZE, 0.0)
        except ReadTimeout:
            return
        except ReadError:
            data = b""
        self._feed(data)

    # -- waiting and reading ---------------------------------------------------------------
    def _wait(self, call: _Call, request_id: int, timeout: float | None) -> Any:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                if call.done:
                    break
                reader = not self._reading
                if reader:
                    self._reading = True
                elif call.event is None:
                    call.event = threading.Event()
                else:
                    call.event.clear()
            if reader:
                self._read_until(call, deadline)
                if not call.done:  # the deadline passed
                    self._give_up(call, request_id, timeout)
                continue
            remaining = None if deadline is None else deadline - time.monotonic()
            assert call.event is not None
            if (remaining is not None and remaining <= 0) or not call.event.wait(remaining):
                self._give_up(call, request_id, timeout)
        if call.error is not None:
            if call.retryable:
                _retryable(call.error)
            raise call.error
        return call.reply

    def _read_until(self, call: _Call, deadline: float | None) -> None:
        """Read and dispatch replies until ``call`` is done or its deadline passes."""
        try:
            while not call.done:
                remaining = None
                if deadline is not None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return
                try:
                    data = self._transport.read(READ_SIZE, remaining)
                except ReadTimeout:
                    continue
                except ReadError:
                    data = b""
                with self._lock:
                    self._feed(data)
        finally:
            with self._lock:
                self._reading = False
                for waiter in self._waiters.values():
                    if waiter.event is not None:  # wake one waiter to take over reading
                        waiter.event.set()
                        break

    def _give_up(self, call: _Call, request_id: int, timeout: float | None) -> None:
        """The call timed out (unless its reply just came): forget it, tell the server."""
        data = b""
        with self._lock:
            if call.done:
                return
            self._waiters.pop(request_id, None)
            version = self._giop.outstanding.get(request_id)
            if not self._giop.closed and version is not None:
                try:
                    data = self._giop.send(CancelRequest(request_id, version))
                except LocalProtocolError:
                    data = b""
        if data:
            with self._write_lock:
                try:
                    self._transport.write(data)
                except WriteError:
                    pass
        raise TIMEOUT(Minor.CALL_TIMEOUT, COMPLETED_MAYBE,
                      f"no reply from {self._peer()} within {timeout} s")

    def _feed(self, data: bytes) -> None:
        """Process received bytes (called with ``_lock`` held).

        Whole Replies without service contexts are taken straight off the
        framer (:mod:`cosnotify.orb.fastpath`); everything else goes through
        the sans-IO GIOP connection.
        """
        framer, giop = self._framer, self._giop
        if not data:
            giop.receive_data(framer.take_rest())
            giop.receive_data(b"")
            self._drain()
            return
        if framer.stopped:
            giop.receive_data(data)
            self._drain()
            return
        framer.feed(data)
        while self._failure is None:
            raw = framer.next()
            if raw is None:
                return
            if raw is STOP:
                giop.receive_data(framer.take_rest())
                self._drain()
                return
            assert isinstance(raw, bytes)
            reply = parse_reply(raw)
            if reply is not None:
                request_id = reply.request_id
                if giop.reply_arrived(request_id):
                    self._deliver(request_id, reply)
                continue  # else the reply to a call that timed out: dropped
            giop.receive_data(raw)
            self._drain()

    def _deliver(self, request_id: int, reply: Any) -> None:
        call = self._waiters.pop(request_id, None)
        if call is not None:
            call.reply = reply
            call.done = True
            if call.event is not None:
                call.event.set()

    def _drain(self) -> None:
        """Handle the GIOP connection's events (called with ``_lock`` held)."""
        giop = self._giop
        while True:
            try:
                event = giop.next_event()
            except RemoteProtocolError as exc:
                reply = b""
                try:
                    reply = giop.send(MessageError((1, 0)))
                except LocalProtocolError:
                    pass
                self._fail(COMM_FAILURE(Minor.PROTOCOL_ERROR, COMPLETED_MAYBE,
                                        f"{self._peer()} broke GIOP: {exc}"), None, reply)
                return
            if event is NEED_DATA:
                return
            kind = type(event)
            if kind is Reply or kind is LocateReply:
                self._deliver(event.request_id, event)  # type: ignore[union-attr]
            elif kind is CloseConnection:
                closed = _retryable(TRANSIENT(Minor.CONNECTION_CLOSED, COMPLETED_NO,
                                              f"{self._peer()} closed the connection"))
                self._fail(closed, closed)
                return
            elif kind is MessageError:
                self._fail(COMM_FAILURE(Minor.PROTOCOL_ERROR, COMPLETED_MAYBE,
                                        f"{self._peer()} sent MessageError"), None)
                return
            elif isinstance(event, ConnectionClosed):
                lost = COMM_FAILURE(Minor.CONNECTION_LOST, COMPLETED_MAYBE,
                                    f"connection to {self._peer()} lost")
                self._fail(lost, _retryable(TRANSIENT(Minor.CONNECTION_CLOSED, COMPLETED_NO,
                                                      f"{self._peer()} closed the connection")))
                return

    def _fail(self, error: SystemException, later: SystemException | None,
              last_words: bytes = b"") -> None:
        """Mark the connection dead and fail every waiting call (called with ``_lock``)."""
        if self._failure is not None:
            return
        self._failure = later or error
        retryable = getattr(error, "retryable", False)
        for call in self._waiters.values():
            call.error = _copy(error)
            call.retryable = retryable
            call.done = True
            if call.event is not None:
                call.event.set()
        self._waiters.clear()
        if last_words:
            try:
                self._transport.write(last_words)
            except WriteError:
                pass
        self._transport.close()
        if self._on_close is not None:
            self._on_close(self)

    def close(self) -> None:
        """Close politely (CloseConnection when nothing is outstanding); fail waiting calls."""
        with self._write_lock, self._lock:
            if self._failure is not None:
                return
            data = b""
            if not self._waiters:
                try:
                    data = self._giop.send(CloseConnection((1, 2)))
                except LocalProtocolError:
                    data = b""
            closed = TRANSIENT(Minor.CONNECTION_CLOSED, COMPLETED_NO, "the ORB was shut down")
            self._fail(COMM_FAILURE(Minor.CONNECTION_LOST, COMPLETED_MAYBE,
                                    "the ORB was shut down"), closed, data)

    def _peer(self) -> str:
        return f"{self.address[0]}:{self.address[1]}"


def _retryable(exc: SystemException) -> SystemException:
    exc.retryable = True  # type: ignore[attr-defined]
    return exc


def _copy(exc: SystemException) -> SystemException:
    """A fresh exception per waiting call (tracebacks must not be shared)."""
    return type(exc)(exc.minor, exc.completed, exc.detail)


Connector = Callable[[str, int, float | None], Transport]


class ConnectionPool:
    """One :class:`ClientConnection` per endpoint, made on first use."""

    def __init__(self, *, connect_timeout: float | None, max_message_size: int,
                 connector: Connector = connect_tcp) -> None:
        self.connect_timeout = connect_timeout
        self.max_message_size = max_message_size
        self._connector = connector
        self._lock = threading.Lock()
        self._connections: dict[tuple[str, int], ClientConnection] = {}
        self._connecting: dict[tuple[str, int], threading.Lock] = {}
        self._closed = False

    def get(self, host: str, port: int) -> ClientConnection:
        """The live connection to ``host:port``, connecting if there is none."""
        address = (host, port)
        found = self._connections.get(address)
        if found is not None and not found.closed:
            return found
        with self._lock:
            gate = self._connecting.setdefault(address, threading.Lock())
        with gate:  # one connect attempt per endpoint at a time
            found = self._connections.get(address)
            if found is not None and not found.closed:
                return found
            if self._closed:
                raise TRANSIENT(Minor.CONNECT_FAILED, COMPLETED_NO, "the ORB is shut down")
            try:
                transport = self._connector(host, port, self.connect_timeout)
            except ConnectTimeout as exc:
                raise TRANSIENT(Minor.CONNECT_TIMEOUT, COMPLETED_NO,
                                f"connecting to {host}:{port} timed out") from exc
            except ConnectError as exc:
                raise TRANSIENT(Minor.CONNECT_FAILED, COMPLETED_NO, str(exc)) from exc
            connection = ClientConnection(transport, address,
                                          max_message_size=self.max_message_size,
                                          on_close=self._forget)
            with self._lock:
                self._connections[address] = connection
            return connection

    def _forget(self, connection: ClientConnection) -> None:
        with self._lock:
            if self._connections.get(connection.address) is connection:
                del self._connections[connection.address]

    def connections(self) -> list[ClientConnection]:
        with self._lock:
            return list(self._connections.values())

    def close(self) -> None:
        """Close every connection; later ``get`` calls fail with TRANSIENT."""
        with self._lock:
            self._closed = True
            connections = list(self._connections.values())
        for connection in connections:
            connection.close()
