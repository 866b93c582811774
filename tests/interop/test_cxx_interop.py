"""Interop with omniORB C++ over Interop.idl, both ways: every type, references, exceptions."""

from __future__ import annotations

import queue
import socket
import subprocess
import threading
from typing import Any

import pytest

from cosnotify.orb import CORBA
from tests.interop import peers
from tests.orb.test_connection_limit import CLOSE_CONNECTION, LOCATE_REPLY, locate, message_type

pytestmark = pytest.mark.interop


class TestPythonClientCxxServer:
    def test_every_operation(self, cxx: dict[str, Any], orb: Any, peer: Any,
                             interop: Any) -> None:
        """Our client calls the C++ server: every result as omniORB computed it."""
        with peers.Process([str(cxx["server"]), "-ORBendPoint", "giop:tcp:127.0.0.1:0"]) as server:
            thing = interop.Thing._narrow(orb.string_to_object(server.first_line))
            lines = peer.run_all(orb, thing)
        assert dict(line.split("=", 1) for line in lines) == peer.expected("cxx-thing")

    def test_remote_shutdown_and_reconnect_failure(self, cxx: dict[str, Any], orb: Any,
                                                   interop: Any) -> None:
        """After the C++ server exits, calls fail with TRANSIENT or COMM_FAILURE, never hang."""
        with peers.Process([str(cxx["server"]), "-ORBendPoint", "giop:tcp:127.0.0.1:0"]) as server:
            thing = interop.Thing._narrow(orb.string_to_object(server.first_line))
            assert thing.poked() == 0
        with pytest.raises((CORBA.TRANSIENT, CORBA.COMM_FAILURE)):
            thing.poked()


class TestCxxClientPythonServer:
    @pytest.mark.parametrize("policy", ["1", "0"])
    def test_every_operation(self, cxx: dict[str, Any], peer: Any, policy: str) -> None:
        """omniORB's C++ client calls our server (both threading models): every result right."""
        command = ["-m", "tests.interop.peers", "server", "-ORBendPoint", "giop:tcp:127.0.0.1:0",
                   "-ORBthreadPerConnectionPolicy", policy]
        import sys

        with peers.Process([sys.executable, *command], env=peers.python_env(),
                           cwd=peers.ROOT) as server:
            text = peers.run_text([str(cxx["client"]), server.first_line], timeout=60)
        assert peers.parse_lines(text) == peer.expected("py-thing")

    def test_in_process_server(self, cxx: dict[str, Any], orb: Any, peer: Any) -> None:
        """The same, with the Python server inside this test process."""
        poa = orb.resolve_initial_references("RootPOA")
        ior = orb.object_to_string(poa.servant_to_reference(peer.Thing(orb)))
        text = peers.run_text([str(cxx["client"]), ior], timeout=60)
        assert peers.parse_lines(text) == peer.expected("py-thing")


class TestConnectionLimitWithOmniORB:
    def test_a_client_closed_to_make_room_reconnects(self, cxx: dict[str, Any], peer: Any
                                                     ) -> None:
        """-ORBmaxServerConnections 1: a newcomer takes omniORB's idle connection
        (CloseConnection); omniORB's next call reconnects and takes it back."""
        orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:0",
                              "-ORBmaxServerConnections", "1",
                              "-ORBthreadPerConnectionPolicy", "0"], "interop-limit")
        try:
            poa = orb.resolve_initial_references("RootPOA")
            poa.the_POAManager.activate()
            ior = orb.object_to_string(poa.servant_to_reference(peer.Thing(orb)))
            client = subprocess.Popen([str(cxx["client"]), ior, "relay"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)
            assert client.stdin is not None and client.stdout is not None
            lines: queue.Queue[str] = queue.Queue()
            stdout = client.stdout
            threading.Thread(target=lambda: [lines.put(x.strip()) for x in stdout],
                             daemon=True).start()

            def echo(text: str) -> str:
                assert client.stdin is not None
                client.stdin.write(text + "\n")
                client.stdin.flush()
                return lines.get(timeout=60)

            try:
                assert echo("a") == "echo=a"
                assert orb._core.server.wait_idle(60)
                with socket.create_connection(orb._core.addresses[0], timeout=60) as other:
                    assert locate(orb, other) == LOCATE_REPLY  # omniORB's connection closed
                    assert echo("b") == "echo=b"  # omniORB reconnected, the newcomer went
                    assert message_type(other) == CLOSE_CONNECTION
            finally:
                client.stdin.close()
                assert client.wait(60) == 0
        finally:
            orb.destroy()
