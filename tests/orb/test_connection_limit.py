"""The server's connection limit (-ORBmaxServerConnections) and accept() back-off.

At the limit the server closes its idlest connection with CloseConnection --
GIOP 15.4.7 says the peer's outstanding requests were not processed, and
clients reconnect -- the policy of JacORB's ``max_server_connections``. A
connection with a request running, a message half read or a thread reading
it is never chosen; if no connection can go, the new one is refused, also
with CloseConnection (so its client may retry: TRANSIENT, COMPLETED_NO). Raw
sockets stand in for peers so that every byte the server sends is seen.
Nothing sleeps: the tests wait on ``Server.wait_idle`` and on events.
"""

from __future__ import annotations

import errno
import os
import socket
import threading
from collections.abc import Callable
from typing import Any

import pytest

from cosnotify.orb import CORBA
from cosnotify.orb import giop_messages as gm
from cosnotify.orb.runtime import Settings
from cosnotify.orb.server import default_max_connections
from cosnotify.orb.transport import TCPListener
from cosnotify.server import ServerConfig

LOCATE_REPLY, CLOSE_CONNECTION = 4, 5
WAIT = 20.0


def limited(make_orb: Callable[..., Any], limit: int, pool: bool = True) -> Any:
    """A server ORB that serves at most ``limit`` connections (pool model: idle
    connections go to the watcher at once, so they may be closed)."""
    orb = make_orb("-ORBendPoint", "giop:tcp:127.0.0.1:0",
                   "-ORBmaxServerConnections", str(limit),
                   "-ORBthreadPerConnectionPolicy", "0" if pool else "1")
    orb.resolve_initial_references("RootPOA")._get_the_POAManager().activate()
    return orb


def connect(orb: Any) -> socket.socket:
    return socket.create_connection(orb._core.addresses[0], timeout=WAIT)


def message_type(sock: socket.socket) -> int | None:
    """The type of the next GIOP message on ``sock``; None if it was closed instead."""
    head = b""
    while len(head) < 12:
        chunk = sock.recv(12 - len(head))
        if not chunk:
            return None
        head += chunk
    assert head[:4] == b"GIOP", head
    body = int.from_bytes(head[8:12], "little" if head[6] & 1 else "big")
    while body:
        body -= len(sock.recv(body))
    return head[7]


def locate(orb: Any, sock: socket.socket, request_id: int = 1) -> int | None:
    """Send a LocateRequest; the type of the answer, once the server is idle again."""
    sock.sendall(gm.encode_message(gm.LocateRequest(request_id, gm.KeyAddr(b"nobody"))))
    kind = message_type(sock)
    assert orb._core.server.wait_idle(WAIT)  # the request is counted until its reply is out
    return kind


class TestConnectionLimit:
    def test_the_idlest_connection_is_closed_to_make_room(
            self, make_orb: Callable[..., Any]) -> None:
        orb = limited(make_orb, 2)
        first, second = connect(orb), connect(orb)
        with first, second:
            assert locate(orb, first) == LOCATE_REPLY
            assert locate(orb, second) == LOCATE_REPLY
            with connect(orb) as third:
                assert locate(orb, third) == LOCATE_REPLY
                assert message_type(first) == CLOSE_CONNECTION
                assert first.recv(1) == b""
                assert locate(orb, second, 2) == LOCATE_REPLY  # untouched
                assert orb._core.server.connection_count() == 2

    def test_a_connection_running_a_request_is_never_closed(
            self, make_orb: Callable[..., Any], interop: Any, peer: Any) -> None:
        """A call in progress keeps its connection; the newcomer is refused instead."""
        orb = limited(make_orb, 1)
        client, callbacks = make_orb(), make_orb("-ORBendPoint", "giop:tcp:127.0.0.1:0")
        callbacks.resolve_initial_references("RootPOA")._get_the_POAManager().activate()
        entered, release = threading.Event(), threading.Event()

        class Blocking(peer.Interop__POA.Callback):  # type: ignore[name-defined,misc]
            def notify(self, text: str) -> str:
                entered.set()
                release.wait(WAIT)
                return text

        poa = orb.resolve_initial_references("RootPOA")
        thing = interop.Thing._narrow(client.string_to_object(orb.object_to_string(
            poa.servant_to_reference(peer.Thing(orb)))))
        callback = callbacks.resolve_initial_references("RootPOA").servant_to_reference(
            Blocking())
        answers: list[str] = []
        caller = threading.Thread(target=lambda: answers.append(thing.call_back(callback, "x")))
        caller.start()
        try:
            assert entered.wait(WAIT)
            with connect(orb) as newcomer:  # refused: the only connection is busy
                assert message_type(newcomer) == CLOSE_CONNECTION
                assert newcomer.recv(1) == b""
            other = interop.Thing._narrow(make_orb().string_to_object(
                orb.object_to_string(thing)))
            with pytest.raises(CORBA.TRANSIENT) as refused:  # retryable: nothing was run
                other.echo_small(interop.Small(2, 2.0, "refused"))
            assert refused.value.completed == CORBA.COMPLETED_NO
        finally:
            release.set()
            caller.join(WAIT)
        assert answers == ["x!"]
        assert thing.echo_small(interop.Small(1, 1.0, "still")).c == "still"

    def test_a_connection_being_read_is_never_closed(self, make_orb: Callable[..., Any]
                                                     ) -> None:
        """Thread per connection: a new connection has a thread reading it (for up to
        idle_timeout), so it is not idle yet; the next one is refused."""
        orb = limited(make_orb, 1, pool=False)
        orb._core.server.idle_timeout = WAIT
        with connect(orb) as first:
            assert locate(orb, first) == LOCATE_REPLY
            with connect(orb) as second:
                assert message_type(second) == CLOSE_CONNECTION
                assert second.recv(1) == b""
            assert locate(orb, first, 2) == LOCATE_REPLY

    def test_half_a_message_keeps_the_connection(self, make_orb: Callable[..., Any]) -> None:
        """A connection in the middle of a message is not idle (its rest may be coming)."""
        orb = limited(make_orb, 1)
        data = gm.encode_message(gm.LocateRequest(1, gm.KeyAddr(b"nobody")))
        server = orb._core.server
        released = threading.Condition()
        release = server._release

        def watched(connection: Any, watcher: Any) -> None:
            release(connection, watcher)
            with released:
                released.notify_all()

        server._release = watched
        with connect(orb) as first:
            first.sendall(data[:10])
            with released:  # the half message has been read once the reader lets go
                assert released.wait_for(lambda: any(
                    c.stalled_since is not None and not c.reading
                    for c in list(server._connections)), WAIT)
            with connect(orb) as second:
                assert message_type(second) == CLOSE_CONNECTION
                assert second.recv(1) == b""
            first.sendall(data[10:])
            assert message_type(first) == LOCATE_REPLY

    def test_our_clients_reconnect_after_close_connection(
            self, make_orb: Callable[..., Any], thing_factory: Any, interop: Any) -> None:
        """An ORB whose connection was closed to make room calls again on a new one."""
        orb = limited(make_orb, 1)
        thing = thing_factory(orb)
        assert thing.echo_small(interop.Small(1, 1.0, "a")).c == "a"
        assert orb._core.server.wait_idle(WAIT)
        with connect(orb) as other:
            assert locate(orb, other) == LOCATE_REPLY  # it took the client's place
            assert thing.echo_small(interop.Small(2, 2.0, "b")).c == "b"  # and lost it
            assert message_type(other) == CLOSE_CONNECTION


@pytest.fixture
def thing_factory(make_orb: Callable[..., Any], interop: Any, peer: Any) -> Any:
    """``thing_factory(server_orb)``: a Thing served there, seen from a new client ORB."""
    client = make_orb()

    def make(server_orb: Any) -> Any:
        poa = server_orb.resolve_initial_references("RootPOA")
        ior = server_orb.object_to_string(poa.servant_to_reference(peer.Thing(server_orb)))
        return interop.Thing._narrow(client.string_to_object(ior))

    return make


class TestSettings:
    def test_the_option_and_its_default(self) -> None:
        assert Settings.from_options([], [("maxServerConnections", "7")]).max_connections == 7
        assert Settings.from_options([], []).max_connections is None
        assert 16 <= default_max_connections() <= 4096

    @pytest.mark.parametrize("value", [0, -1, 1.5, True, "10"])
    def test_server_config_refuses_a_bad_limit(self, value: Any) -> None:
        with pytest.raises(ValueError, match="max_connections"):
            ServerConfig(max_connections=value)

    def test_serve_refuses_a_bad_limit(self, capsys: pytest.CaptureFixture[str]) -> None:
        from cosnotify.__main__ import main

        with pytest.raises(SystemExit) as exited:
            main(["serve", "--max-connections", "0"])
        assert exited.value.code == 2
        assert "--max-connections: must be at least 1" in capsys.readouterr().err


class FlakySocket:
    """A listening socket whose accept() fails with ``errors`` first."""

    def __init__(self, errors: list[int], real: socket.socket) -> None:
        self.errors = errors
        self.real = real

    def accept(self) -> tuple[socket.socket, Any]:
        if self.errors:
            code = self.errors.pop(0)
            raise OSError(code, os.strerror(code))
        return self.real.accept()

    def shutdown(self, how: int) -> None:
        self.real.shutdown(how)

    def close(self) -> None:
        self.real.close()


class RecordingEvent:
    """Stands in for the listener's close event: records back-off waits, never waits."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def wait(self, timeout: float) -> bool:
        self.waits.append(timeout)
        return False

    def set(self) -> None:
        pass


class TestAcceptBackOff:
    def test_out_of_descriptors_backs_off_instead_of_spinning(self) -> None:
        listener = TCPListener("127.0.0.1", 0)
        real = listener._sock
        reports: list[str] = []
        listener.on_exhausted = reports.append
        clock = RecordingEvent()
        listener._closing = clock  # type: ignore[assignment]
        listener._sock = FlakySocket(  # type: ignore[assignment]
            [errno.EMFILE] * 5 + [errno.ECONNABORTED, errno.ENFILE], real)
        with socket.create_connection(("127.0.0.1", listener.port), timeout=WAIT):
            transport = listener.accept()
        assert transport is not None
        transport.close()
        # Doubling from 10 ms, across the unrelated ECONNABORTED; one report per episode.
        assert clock.waits == [0.01, 0.02, 0.04, 0.08, 0.16, 0.32]
        assert len(reports) == 1 and "Too many open files" in reports[0]
        listener._sock = real
        listener.close()

    def test_close_ends_a_back_off(self) -> None:
        listener = TCPListener("127.0.0.1", 0)
        listener._sock.close()
        listener._sock = FlakySocket([errno.EMFILE] * 1000, listener._sock)  # type: ignore
        result: list[Any] = ["pending"]
        thread = threading.Thread(target=lambda: result.__setitem__(0, listener.accept()))
        thread.start()
        listener.close()
        thread.join(WAIT)
        assert not thread.is_alive()
        assert result == [None]
