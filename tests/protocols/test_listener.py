"""The seed protocols' shared transport (cosnotify/protocols/listener.py): limits, slow
clients, sessions that fail, sends from other threads."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from cosnotify.protocols.listener import (
    Connection,
    FrontEnd,
    Limits,
    Loop,
    ReadTimeout,
    parse_address,
)

WAIT = 10.0
#: The bytes of the answer to b"last" (more than the kernel's socket buffers hold).
LAST = 32 << 20


class Framed:
    """A session of 4-byte big-endian length-prefixed frames, each echoed upper-cased."""

    def __init__(self, connections: list[Connection], closed: threading.Event) -> None:
        self.connections = connections
        self.closed = closed

    async def run(self, connection: Connection) -> None:
        self.connections.append(connection)
        connection.on_close(self.closed.set)
        buffer = b""
        while True:
            buffer += await connection.read_some(idle=not buffer)
            while len(buffer) >= 4:
                size = struct.unpack(">I", buffer[:4])[0]
                if size > connection.limits.max_frame:
                    return  # the protocol's answer to an oversize length: close
                if len(buffer) < 4 + size:
                    break
                frame, buffer = buffer[4:4 + size], buffer[4 + size:]
                connection.counters.frames_in += 1
                if frame == b"boom":
                    raise RuntimeError("a bug in a session")
                if frame == b"last":  # a final answer larger than socket buffers, then close
                    connection.send(b"x" * LAST)
                    return
                if frame == b"flood":
                    for _ in range(1000):
                        connection.send(b"x" * 65536)
                    continue
                connection.send(struct.pack(">I", size) + frame.upper())


def frame(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def receive(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def closed_by_peer(sock: socket.socket) -> bool:
    """True once the server closed ``sock`` (it reads to the end within WAIT seconds)."""
    sock.settimeout(WAIT)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


@pytest.fixture
def loop() -> Iterator[Loop]:
    loop = Loop(workers=2)
    yield loop
    loop.close()


class Server:
    def __init__(self, loop: Loop, limits: Limits) -> None:
        self.connections: list[Connection] = []
        self.closed = threading.Event()
        self.front_end = FrontEnd("test", loop, "127.0.0.1", 0,
                                  lambda c: Framed(self.connections, self.closed), limits)

    def client(self) -> socket.socket:
        sock = socket.create_connection(self.front_end.address, timeout=WAIT)
        return sock


@pytest.fixture
def make_server(loop: Loop) -> Iterator[object]:
    made: list[Server] = []

    def make(**limits: object) -> Server:
        server = Server(loop, Limits(**limits))  # type: ignore[arg-type]
        made.append(server)
        return server

    yield make
    for server in made:
        server.front_end.close()


def echo(sock: socket.socket, data: bytes) -> bytes:
    sock.sendall(frame(data))
    return receive(sock, 4 + len(data))[4:]


class TestFrames:
    def test_a_frame_is_answered_and_counted(self, make_server) -> None:
        """A whole frame gets its answer; the counters count it in and out."""
        server = make_server()
        with server.client() as sock:
            assert echo(sock, b"hello") == b"HELLO"
            assert echo(sock, b"again") == b"AGAIN"
        counters = server.front_end.counters
        assert (counters.accepted, counters.frames_in, counters.frames_out) == (1, 2, 2)
        assert counters.bytes_in == 2 * 4 + 10

    def test_a_frame_one_byte_at_a_time(self, make_server) -> None:
        """Bytes that trickle in (each within the read timeout) make one frame."""
        server = make_server()
        with server.client() as sock:
            for byte in frame(b"slow"):
                sock.sendall(bytes([byte]))
            assert receive(sock, 8)[4:] == b"SLOW"

    def test_send_from_another_thread(self, make_server) -> None:
        """Connection.send works from a thread that is not the loop's (a delivery worker)."""
        server = make_server()
        with server.client() as sock:
            assert echo(sock, b"a") == b"A"
            sent = []
            thread = threading.Thread(
                target=lambda: sent.append(server.connections[0].send(frame(b"pushed"))))
            thread.start()
            thread.join(WAIT)
            assert sent == [True]
            assert receive(sock, 10)[4:] == b"pushed"


class TestLimits:
    def test_connections_past_the_limit_are_refused(self, make_server) -> None:
        """The connection past max_connections is closed at once; the first keeps working."""
        server = make_server(max_connections=1)
        with server.client() as first:
            assert echo(first, b"one") == b"ONE"
            with server.client() as second:
                assert closed_by_peer(second)
            assert echo(first, b"still") == b"STILL"
        assert server.front_end.counters.refused == 1

    def test_a_slow_loris_is_closed_and_others_go_on(self, make_server) -> None:
        """A frame started and not finished within read_timeout closes its connection;
        another client is answered meanwhile."""
        server = make_server(read_timeout=0.3)
        with server.client() as loris, server.client() as other:
            loris.sendall(frame(b"never finished")[:6])
            assert echo(other, b"meanwhile") == b"MEANWHILE"
            assert closed_by_peer(loris)
            assert echo(other, b"after") == b"AFTER"
        assert server.front_end.counters.closed_bad == 1

    def test_an_idle_connection_is_closed(self, make_server) -> None:
        """A connection silent past idle_timeout between frames is closed."""
        server = make_server(idle_timeout=0.3)
        with server.client() as sock:
            assert echo(sock, b"x") == b"X"
            assert closed_by_peer(sock)
        assert server.closed.wait(WAIT)

    def test_a_client_that_does_not_read_is_dropped(self, make_server) -> None:
        """Sends never block: a client whose unsent bytes pass max_pending is dropped,
        and another client is answered."""
        server = make_server(max_pending=1 << 20)
        with server.client() as reader, server.client() as other:
            reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            reader.sendall(frame(b"flood"))
            assert server.closed.wait(WAIT)
            assert server.front_end.counters.dropped_slow == 1
            assert echo(other, b"fine") == b"FINE"

    def test_an_oversize_length_closes_the_connection(self, make_server) -> None:
        """A session refusing a length past max_frame closes the connection."""
        server = make_server(max_frame=16)
        with server.client() as sock:
            sock.sendall(struct.pack(">I", 1 << 30))
            assert closed_by_peer(sock)


class TestLingering:
    def test_a_close_still_sends_what_was_queued(self, make_server) -> None:
        """A session that ends after a large answer closes gracefully: a client that
        reads gets every byte, then the end of the stream."""
        server = make_server(read_timeout=5.0, max_pending=LAST * 2)
        with server.client() as sock:
            sock.sendall(frame(b"last"))
            got = 0
            while chunk := sock.recv(1 << 20):
                got += len(chunk)
        assert got == LAST
        assert server.front_end.counters.dropped_slow == 0

    def test_a_peer_that_never_reads_is_dropped_after_the_close(self, make_server,
                                                                loop: Loop) -> None:
        """A connection closed with bytes unsent is not kept for ever by a peer that
        reads none of them: read_timeout later it is dropped (its socket and bytes
        released, counted in dropped_slow)."""
        server = make_server(read_timeout=0.3, max_pending=LAST * 2)
        with server.client() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall(frame(b"last"))
            assert server.closed.wait(WAIT)
            loop.submit(server.connections[0].wait_closed()).result(WAIT)
            assert server.front_end.counters.dropped_slow == 1
            assert server.front_end._lingering == set()

    def test_the_front_end_close_releases_lingering_connections(self, make_server,
                                                                loop: Loop) -> None:
        """FrontEnd.close also drops the connections whose close still waits for a
        peer to read (they are no longer counted open)."""
        server = make_server(max_pending=LAST * 2)
        with server.client() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall(frame(b"last"))
            assert server.closed.wait(WAIT)
            assert server.front_end.counters.open == 0
            server.front_end.close()
            loop.submit(server.connections[0].wait_closed()).result(WAIT)


class TestFailures:
    def test_a_failing_session_closes_only_its_connection(self, make_server, caplog) -> None:
        """A session's unexpected exception is logged as a bug with its traceback; the
        connection closes and the listener accepts the next one."""
        server = make_server()
        with server.client() as sock:
            sock.sendall(frame(b"boom"))
            assert closed_by_peer(sock)
        with server.client() as sock:
            assert echo(sock, b"next") == b"NEXT"
        assert "a bug in a session" in caplog.text
        assert server.front_end.counters.closed_bad == 1

    def test_close_ends_every_connection(self, make_server) -> None:
        """FrontEnd.close closes its open connections and stops listening."""
        server = make_server()
        sock = server.client()
        assert echo(sock, b"x") == b"X"
        server.front_end.close()
        assert closed_by_peer(sock)
        sock.close()
        with pytest.raises(OSError):
            socket.create_connection(server.front_end.address, timeout=WAIT).close()

    def test_a_connection_accepted_as_the_front_end_closes_gets_no_session(
            self, make_server, loop: Loop) -> None:
        """A connection whose accept was under way when close() ran (its handler not yet
        started) is closed, not served by a session of the closed front end."""
        import asyncio

        server = make_server()
        server.front_end.close()
        with socket.socket() as other:
            other.bind(("127.0.0.1", 0))
            other.listen()

            async def late_accept() -> bool:
                reader, writer = await asyncio.open_connection(*other.getsockname())
                await server.front_end._accept(reader, writer)
                return writer.transport.is_closing()

            assert loop.submit(late_accept()).result(WAIT) is True
        assert server.connections == []
        assert server.front_end.counters.accepted == 0

    def test_send_after_close_says_so(self, make_server) -> None:
        """send on a closed connection returns False and raises nothing."""
        server = make_server()
        with server.client() as sock:
            assert echo(sock, b"x") == b"X"
        assert server.closed.wait(WAIT)
        assert server.connections[0].send(b"late") is False


class TestLoop:
    def test_call_runs_off_the_loop_thread(self, loop: Loop) -> None:
        """Loop.call runs a blocking function on the executor, not the loop's thread."""
        async def where() -> tuple[str, str]:
            here = threading.current_thread().name
            there = await loop.call(lambda: threading.current_thread().name)
            return here, there

        here, there = loop.submit(where()).result(WAIT)
        assert here == "cosnotify-protocols"
        assert there.startswith("cosnotify-protocols-call")

    def test_read_timeout_is_a_timeout_error(self) -> None:
        """ReadTimeout is a TimeoutError (callers may catch either)."""
        assert issubclass(ReadTimeout, TimeoutError)


class TestParseAddress:
    @pytest.mark.parametrize(("text", "expected"), [
        ("127.0.0.1:2917", ("127.0.0.1", 2917)),
        (":4000", ("127.0.0.1", 4000)),
        ("localhost", ("localhost", 99)),
        ("[::1]:5", ("::1", 5)),
        ("10.0.0.1:", ("10.0.0.1", 99)),
        ("::1", ("::1", 99)),
        ("::", ("::", 99)),
        ("[::]", ("::", 99)),
    ])
    def test_addresses(self, text: str, expected: tuple[str, int]) -> None:
        """HOST:PORT, :PORT, HOST, [IPv6]:PORT and a bare IPv6 host (not its last group
        taken for a port); a missing port is the default."""
        assert parse_address(text, 99) == expected

    @pytest.mark.parametrize("text", ["host:port", "host:70000", "host:-1", "host:\u00b2",
                                      "host:" + "1" * 5000])
    def test_bad_ports(self, text: str) -> None:
        """A port that is not a number from 0 to 65535 is a ValueError naming it."""
        with pytest.raises(ValueError, match="not a port"):
            parse_address(text, 99)
