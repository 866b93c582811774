"""The transport layer: TCP, the in-memory mock, and error mapping."""

from __future__ import annotations

import socket
import threading

import pytest

from cosnotify.orb.transport import (
    ConnectError,
    MockTransport,
    ReadError,
    ReadTimeout,
    TCPListener,
    TCPTransport,
    TransportError,
    WriteError,
    connect_tcp,
    map_exceptions,
)


class TestMapExceptions:
    def test_maps_to_the_transport_error_from_the_original(self) -> None:
        """A mapped exception is re-raised as the transport error, chained to the original."""
        with pytest.raises(WriteError) as caught, map_exceptions({OSError: WriteError}):
            raise BrokenPipeError("gone")
        assert isinstance(caught.value.__cause__, BrokenPipeError)

    def test_other_exceptions_pass_through(self) -> None:
        """Exceptions not in the mapping are not touched."""
        with pytest.raises(KeyError), map_exceptions({OSError: WriteError}):
            raise KeyError("x")

    def test_transport_errors_are_os_errors(self) -> None:
        """Every transport error is an OSError (a fitting built-in)."""
        assert issubclass(TransportError, OSError)
        assert issubclass(ReadTimeout, TransportError)


class TestMockTransport:
    def test_pair_carries_bytes_both_ways(self) -> None:
        """What one end writes, the other reads."""
        a, b = MockTransport.pair()
        a.write(b"ping")
        assert b.read() == b"ping"
        b.write(b"pong")
        assert a.read() == b"pong"

    def test_read_respects_max_bytes(self) -> None:
        """A long chunk is handed out in pieces no longer than asked."""
        a, b = MockTransport.pair()
        a.write(b"abcdef")
        assert b.read(4) == b"abcd"
        assert b.read(4) == b"ef"

    def test_close_gives_end_of_stream_to_the_peer(self) -> None:
        """After close, the peer reads what was sent, then b''."""
        a, b = MockTransport.pair()
        a.write(b"last")
        a.close()
        assert b.read() == b"last"
        assert b.read() == b""

    def test_write_to_a_closed_peer_fails(self) -> None:
        """Writing after the peer closed is a WriteError."""
        a, b = MockTransport.pair()
        b.close()
        with pytest.raises(WriteError):
            a.write(b"x")

    def test_read_timeout(self) -> None:
        """A read with a timeout and nothing to read raises ReadTimeout."""
        a, _ = MockTransport.pair()
        with pytest.raises(ReadTimeout):
            a.read(10, 0.0)

    def test_scripted_end_replays_chunks_then_eof(self) -> None:
        """A scripted transport yields its chunks, then end of stream, and keeps writes."""
        t = MockTransport.scripted([b"a", b"", b"bc"])
        assert [t.read(), t.read(), t.read()] == [b"a", b"bc", b""]
        t.write(b"out")
        assert t.written == [b"out"]

    def test_readable(self) -> None:
        """readable() tells whether a read would return at once."""
        a, b = MockTransport.pair()
        assert not b.readable()
        a.write(b"x")
        assert b.readable()

    def test_blocked_read_wakes_on_write(self) -> None:
        """A reader blocked in read() wakes up when data is written."""
        a, b = MockTransport.pair()
        got: list[bytes] = []
        reader = threading.Thread(target=lambda: got.append(b.read()))
        reader.start()
        a.write(b"late")
        reader.join(10)
        assert got == [b"late"]


class TestTCP:
    def test_listener_reports_the_real_port_and_accepts(self) -> None:
        """Port 0 picks a free port; the listener reports it and accepts connections on it."""
        listener = TCPListener("127.0.0.1", 0)
        try:
            assert listener.port > 0
            client = connect_tcp("127.0.0.1", listener.port, 5.0)
            server = listener.accept()
            assert server is not None
            client.write(b"hello")
            assert server.read() == b"hello"
            client.close()
            assert server.read() == b""
            server.close()
        finally:
            listener.close()

    def test_closed_listener_returns_none(self) -> None:
        """A thread blocked in accept() returns None once the listener is closed."""
        listener = TCPListener("127.0.0.1", 0)
        got: list[object] = ["unset"]
        thread = threading.Thread(target=lambda: got.__setitem__(0, listener.accept()))
        thread.start()
        listener.close()
        thread.join(10)
        assert got == [None]

    def test_connect_refused_is_connect_error(self) -> None:
        """Connecting where nothing listens is a ConnectError."""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        with pytest.raises(ConnectError):
            connect_tcp("127.0.0.1", port, 5.0)

    def test_read_timeout_then_data(self) -> None:
        """A timed read raises ReadTimeout when nothing came, and returns data that did."""
        a, b = socket.socketpair()
        transport = TCPTransport(a)
        try:
            with pytest.raises(ReadTimeout):
                transport.read(10, 0.01)
            with pytest.raises(ReadTimeout):
                transport.read(10, 0.0)
            b.sendall(b"x")
            assert transport.read(10, 5.0) == b"x"
            b.sendall(b"y")
            assert transport.read(10, None) == b"y"
        finally:
            transport.close()
            b.close()

    def test_write_after_close_is_write_error(self) -> None:
        """Writing on a closed transport is a WriteError; reading gives end of stream."""
        a, b = socket.socketpair()
        transport = TCPTransport(a)
        transport.close()
        with pytest.raises(WriteError):
            transport.write(b"x")
        assert transport.read() == b""
        b.close()

    def test_reset_peer_read_error_or_eof(self) -> None:
        """A read from a peer that vanished ends the stream or raises ReadError, nothing else."""
        a, b = socket.socketpair()
        transport = TCPTransport(a)
        b.close()
        try:
            assert transport.read() == b""
        except ReadError:
            pass
        transport.close()
