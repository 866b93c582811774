"""The byte-stream transport under GIOP: TCP, and an in-memory mock.

Strategy: the protocol code above this module (client and server
connections) sees a transport only through the tiny :class:`Transport`
interface, ``read`` / ``write`` / ``close``, as httpcore's network backends
do. :class:`TCPTransport` wraps a connected socket; :class:`MockTransport`
is an in-memory pipe end (``MockTransport.pair()``) or a scripted peer
(``MockTransport.scripted(chunks)``) so protocol tests run with no network.

Errors: socket trouble is translated once, here, by :func:`map_exceptions`
into the small local hierarchy under :class:`TransportError` (connect
failure, connect timeout, read timeout, read or write failure), raised
``from`` the original. The connection layer maps those to the CORBA
exceptions a caller sees (``TRANSIENT``, ``TIMEOUT``, ``COMM_FAILURE``).
End of stream is not an error: ``read`` returns ``b""``.
"""

from __future__ import annotations

import contextlib
import errno
import select
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Protocol

__all__ = [
    "ConnectError",
    "ConnectTimeout",
    "MockTransport",
    "ReadError",
    "ReadTimeout",
    "TCPListener",
    "TCPTransport",
    "Transport",
    "TransportError",
    "WriteError",
    "connect_tcp",
    "map_exceptions",
]

READ_SIZE = 65536
#: A TCP write that makes no progress for this many seconds fails (SO_SNDTIMEO) ...
SEND_TIMEOUT = 30.0
#: ... and one message may take SEND_TIMEOUT plus its size at this many octets a second.
#: A peer that stops reading therefore cannot hold the writing thread for ever.
MIN_SEND_RATE = 16384


class TransportError(OSError):
    """A transport failed; the subclass says how."""


class ConnectError(TransportError):
    """Could not connect to the peer (refused, unreachable, name not resolved)."""


class ConnectTimeout(ConnectError):
    """Connecting took longer than the connect timeout."""


class ReadError(TransportError):
    """Reading from the peer failed (reset, or the transport was closed)."""


class ReadTimeout(TransportError):
    """No data arrived within the read timeout (the stream is still usable)."""


class WriteError(TransportError):
    """Writing to the peer failed (reset, broken pipe, or the transport was closed)."""


@contextlib.contextmanager
def map_exceptions(mapping: Mapping[type[BaseException], type[TransportError]]) -> Iterator[None]:
    """Re-raise exceptions of the mapped types as their transport error, ``from`` the original."""
    try:
        yield
    except TransportError:
        raise
    except Exception as exc:
        for source, target in mapping.items():
            if isinstance(exc, source):
                raise target(str(exc) or type(exc).__name__) from exc
        raise


class Transport(Protocol):
    """A connected, ordered, reliable byte stream."""

    def read(self, max_bytes: int = READ_SIZE, timeout: float | None = None) -> bytes:
        """Up to ``max_bytes`` received bytes; ``b""`` at end of stream.

        ``timeout`` None waits as long as it takes; otherwise ``ReadTimeout``
        when nothing came in about that long (a transport may give up early,
        so callers loop until their own deadline).
        """
        ...

    def write(self, data: bytes | bytearray) -> None:
        """Send all of ``data`` (``WriteError`` if the stream is broken)."""
        ...

    def close(self) -> None:
        """Close the stream; safe to call twice and from another thread."""
        ...

    # Transports may also offer ``readable() -> bool`` (data or end of stream
    # waiting, without blocking); the client uses it to notice a connection
    # the server closed while it was idle.


# -- TCP ----------------------------------------------------------------------------------


class TCPTransport:
    """A connected TCP socket (TCP_NODELAY set: GIOP is request/reply)."""

    __slots__ = ("_closed", "_poller", "_rcvtimeo", "_sock", "peer")

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._closed = False
        self._rcvtimeo = 0.0
        sock.settimeout(None)
        with contextlib.suppress(OSError):
            whole = int(SEND_TIMEOUT)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO,
                            struct.pack("@ll", whole, int((SEND_TIMEOUT - whole) * 1e6)))
        self._poller = select.poll()
        self._poller.register(sock, select.POLLIN | select.POLLPRI)
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            host, port = sock.getpeername()[:2]
            self.peer = f"{host}:{port}"
        except (OSError, ValueError):
            self.peer = "?"

    def fileno(self) -> int:
        return self._sock.fileno()

    def read(self, max_bytes: int = READ_SIZE, timeout: float | None = None) -> bytes:
        # The socket stays in blocking mode (writes from other threads must not
        # time out). A read timeout is the kernel's SO_RCVTIMEO, changed only
        # when it is far from the one asked for (more than 5% + 1 ms longer, or
        # less than half), so calls with the same timeout cost one recv() each.
        # Hence ReadTimeout may come early (callers ask again with what is
        # left) or up to 5% late.
        if timeout is None:
            if self._rcvtimeo:
                self._set_rcvtimeo(0.0)
        elif timeout <= 0.0:
            if not self._poller.poll(0):
                raise ReadTimeout("read timed out")
        else:
            current = self._rcvtimeo
            if not timeout * 0.5 <= current <= timeout * 1.05 + 0.001:
                self._set_rcvtimeo(timeout)
        try:
            return self._sock.recv(max_bytes)
        except BlockingIOError as exc:
            raise ReadTimeout("read timed out") from exc
        except OSError as exc:
            if self._closed:
                return b""
            raise ReadError(str(exc)) from exc

    def _set_rcvtimeo(self, seconds: float) -> None:
        whole = int(seconds)
        micros = max(int((seconds - whole) * 1e6), 0 if whole or not seconds else 1000)
        try:
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO,
                                  struct.pack("@ll", whole, micros))
        except OSError as exc:
            raise ReadError(str(exc)) from exc
        self._rcvtimeo = seconds

    def write(self, data: bytes | bytearray) -> None:
        try:
            sent = self._sock.send(data)
            if sent < len(data):
                self._write_rest(data, sent)
        except OSError as exc:  # map_exceptions spelled out: this is the hot path
            raise WriteError(str(exc)) from exc

    def _write_rest(self, data: bytes | bytearray, sent: int) -> None:
        """The rest of a write the peer is slow to take, within SEND_TIMEOUT/MIN_SEND_RATE."""
        view = memoryview(data)
        deadline = time.monotonic() + SEND_TIMEOUT + len(view) / MIN_SEND_RATE
        while sent < len(view):
            if time.monotonic() > deadline:
                raise WriteError(f"{self.peer} takes {len(view)} octets too slowly")
            sent += self._sock.send(view[sent:])

    def readable(self) -> bool:
        """Optional extension: is there something to read (data or end of stream) now?"""
        return bool(self._poller.poll(0))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._sock.close()

    def __repr__(self) -> str:
        return f"<TCPTransport {self.peer}{' closed' if self._closed else ''}>"


def connect_tcp(host: str, port: int, timeout: float | None = None) -> TCPTransport:
    """Connect to ``host:port``; ``ConnectTimeout`` or ``ConnectError`` on failure."""
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except TimeoutError as exc:
        raise ConnectTimeout(f"connecting to {host}:{port} timed out") from exc
    except (OSError, ValueError, OverflowError) as exc:
        # ValueError: a host name IDNA cannot encode (a label over 63 octets, an
        # empty label, a NUL); OverflowError: a port outside 0-65535. Both can
        # come from a received IOR or a corbaloc URL.
        raise ConnectError(f"cannot connect to {host}:{port}: {exc}") from exc
    return TCPTransport(sock)


#: accept() errors that mean "out of resources": retrying at once would spin.
_EXHAUSTED = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class TCPListener:
    """A listening TCP socket; ``port`` is the real port (also for port 0)."""

    def __init__(self, host: str, port: int, backlog: int = 128) -> None:
        with map_exceptions({OSError: ConnectError}):
            self._sock = socket.create_server((host, port), backlog=backlog, reuse_port=False)
        self.host = host
        self.port = int(self._sock.getsockname()[1])
        self._closed = False
        self._closing = threading.Event()  # set by close(): ends a back-off at once
        #: Called with a message when accepting fails for want of resources.
        self.on_exhausted: Callable[[str], object] | None = None

    def accept(self) -> TCPTransport | None:
        """The next connection, or None once the listener is closed.

        Out of file descriptors (EMFILE, ENFILE) or buffers, ``accept`` would
        fail at once for as long as the connection waits in the backlog: the
        listener then backs off (10 ms doubling to 1 s) instead of spinning,
        and reports the first failure of each episode to ``on_exhausted``.
        """
        delay = 0.0
        while True:
            try:
                sock, _ = self._sock.accept()
            except OSError as exc:
                if self._closed:
                    return None
                if exc.errno not in _EXHAUSTED:
                    continue  # e.g. ECONNABORTED: the client gave up before we accepted
                if not delay and self.on_exhausted is not None:
                    self.on_exhausted(f"cannot accept on port {self.port}: {exc.strerror}; "
                                      "backing off")
                delay = min(1.0, delay * 2 or 0.01)
                if self._closing.wait(delay):
                    return None
                continue
            return TCPTransport(sock)

    def close(self) -> None:
        """Stop listening; a thread blocked in ``accept`` returns None."""
        self._closed = True
        self._closing.set()
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes accept() on Linux
        with contextlib.suppress(OSError):
            self._sock.close()


# -- the in-memory mock -----------------------------------------------------------------------


class _Pipe:
    """One direction of a mock connection."""

    def __init__(self) -> None:
        self.chunks: deque[bytes] = deque()
        self.eof = False
        self.cond = threading.Condition()


class MockTransport:
    """An in-memory transport for protocol tests (no sockets, no timing).

    ``MockTransport.pair()`` gives two connected ends. ``scripted(chunks)``
    gives an end whose peer "sends" ``chunks`` and then closes; what is
    written to it is kept in ``written``.
    """

    def __init__(self, inbound: _Pipe, outbound: _Pipe | None) -> None:
        self._in = inbound
        self._out = outbound
        self._closed = False
        self.written: list[bytes] = []
        self.peer = "mock"

    @classmethod
    def pair(cls) -> tuple[MockTransport, MockTransport]:
        a_to_b, b_to_a = _Pipe(), _Pipe()
        return cls(b_to_a, a_to_b), cls(a_to_b, b_to_a)

    @classmethod
    def scripted(cls, chunks: Iterable[bytes], *, eof: bool = True) -> MockTransport:
        pipe = _Pipe()
        pipe.chunks.extend(bytes(c) for c in chunks if c)
        pipe.eof = eof
        return cls(pipe, None)

    def feed(self, data: bytes, *, eof: bool = False) -> None:
        """Make ``data`` (then end of stream, with ``eof``) arrive on this end."""
        with self._in.cond:
            if data:
                self._in.chunks.append(bytes(data))
            self._in.eof = self._in.eof or eof
            self._in.cond.notify_all()

    def read(self, max_bytes: int = READ_SIZE, timeout: float | None = None) -> bytes:
        pipe = self._in
        deadline = None if timeout is None else time.monotonic() + timeout
        with pipe.cond:
            while not pipe.chunks and not pipe.eof and not self._closed:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise ReadTimeout("mock read timed out")
                pipe.cond.wait(remaining)
            if self._closed or not pipe.chunks:
                return b""
            chunk = pipe.chunks.popleft()
            if len(chunk) > max_bytes:
                pipe.chunks.appendleft(chunk[max_bytes:])
                chunk = chunk[:max_bytes]
            return chunk

    def readable(self) -> bool:
        with self._in.cond:
            return bool(self._in.chunks) or self._in.eof or self._closed

    def write(self, data: bytes | bytearray) -> None:
        if self._closed:
            raise WriteError("mock transport is closed")
        self.written.append(bytes(data))
        out = self._out
        if out is None:
            return
        with out.cond:
            if out.eof:
                raise WriteError("mock peer closed")
            out.chunks.append(bytes(data))
            out.cond.notify_all()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for pipe in (self._in, self._out):
            if pipe is not None:
                with pipe.cond:
                    pipe.eof = True
                    pipe.cond.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed
