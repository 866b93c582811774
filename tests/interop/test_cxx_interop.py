"""Interop with omniORB C++ over Interop.idl, both ways: every type, references, exceptions."""

from __future__ import annotations

from typing import Any

import pytest

from tests.interop import peers

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
        from cosnotify.orb import CORBA

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
