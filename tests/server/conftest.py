"""Servers to test: in this process (on the session ORB) and as a `cosnotify serve` child.

omniORB allows one ORB per process, so a server made here shares the
session ORB with the test's own client code: calls between them are
collocated. Clients the server must reach over IIOP (to time out, fail or
hang like real ones) are relayed by a peer process (tests/peers). Tests that
only drive the server as a client would run against both an in-process
server and a `cosnotify serve` child process (``factory`` is parametrized).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import CosNotifyChannelAdmin as CA

from cosnotify.server import NotificationServer, ServerConfig
from tests.peers.harness import Peer, compile_relay_idl


@pytest.fixture(scope="session")
def relay_stubs(tmp_path_factory: pytest.TempPathFactory, omniorb: Any) -> Path:
    """The TestPeer stubs, compiled once and importable here."""
    outdir = tmp_path_factory.mktemp("relay_idl")
    compile_relay_idl(outdir)
    return outdir


@pytest.fixture(scope="session")
def peer(omniorb: Any, relay_stubs: Path) -> Iterator[Peer]:
    """A client process that relays the server's calls to servants in this process."""
    made = Peer(omniorb, relay_stubs)
    yield made
    made.close()


@pytest.fixture(scope="session")
def peer2(omniorb: Any, relay_stubs: Path) -> Iterator[Peer]:
    """A second client process (another client address)."""
    made = Peer(omniorb, relay_stubs)
    yield made
    made.close()


@pytest.fixture
def server(omniorb: Any) -> Iterator[NotificationServer]:
    """A server in this process, on the session ORB, with a 2 s call timeout."""
    srv = NotificationServer(ServerConfig(port=0, call_timeout=2.0)).start()
    yield srv
    srv.stop()


class ServeProcess:
    """``python -m cosnotify serve`` on a free loopback port, with embedded naming."""

    def __init__(self, tmp: Path, *options: str) -> None:
        self.ior_file = tmp / "factory.ior"
        endpoint = [] if "--endpoint" in options else ["--endpoint", "127.0.0.1:0"]
        # faulthandler: a server that does not stop dumps its threads on SIGABRT (wait()).
        self.process = subprocess.Popen(
            [sys.executable, "-X", "faulthandler", "-m", "cosnotify", "serve", *endpoint,
             "--ior-file", str(self.ior_file), *options],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.process.stderr is not None
        self.log: list[str] = []
        try:
            for line in self.process.stderr:  # the server logs once it is bound and written
                self.log.append(line)
                if "serving" in line:
                    break
            else:
                raise RuntimeError(f"cosnotify serve did not start: {''.join(self.log)}")
            self.ior = self.ior_file.read_text().strip()
        except BaseException:  # no one will stop it: a server left running outlives the test
            self.process.kill()
            self.process.wait(30)
            raise
        # Keep reading its log, so a chatty server never blocks on a full pipe.
        self._reader = threading.Thread(
            target=lambda: self.log.extend(self.process.stderr or ()), daemon=True)
        self._reader.start()

    def wait(self, timeout: float) -> int:
        """The exit status; a server still running after ``timeout`` dumps its threads
        into the log (SIGABRT) and the assertion shows it."""
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGABRT)
            self.process.wait(timeout=30)
            self._reader.join(10)
            raise AssertionError("cosnotify serve did not stop:\n" + "".join(self.log)) from None

    def stop(self) -> int:
        """SIGTERM (if still running); the exit status, once its whole log is read."""
        if self.process.poll() is None:
            self.process.terminate()
        try:
            status = self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.log.append("[test harness: no exit 30 s after SIGTERM; SIGABRT sent]\n")
            self.process.send_signal(signal.SIGABRT)  # faulthandler: its threads, in the log
            try:
                status = self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                status = self.process.wait()
        self._reader.join(10)  # the pipe ends with the process
        return status


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory, omniorb: Any) -> Iterator[ServeProcess]:
    """One `cosnotify serve` child per test session (tests make their own channels)."""
    made = ServeProcess(tmp_path_factory.mktemp("served"), "--call-timeout", "2")
    yield made
    assert made.stop() == 0, "".join(made.log)


@pytest.fixture(params=["in-process", "served"])
def factory(request: pytest.FixtureRequest, omniorb: Any) -> Any:
    """An EventChannelFactory reference: of a server here, or of a `cosnotify serve` child."""
    if request.param == "in-process":
        ior = request.getfixturevalue("server").ior
    else:
        ior = request.getfixturevalue("served").ior
    return omniorb.string_to_object(ior)._narrow(CA.EventChannelFactory)


@pytest.fixture
def remote_factory(server: NotificationServer, omniorb: Any) -> Any:
    """The in-process server's factory, resolved the way a C++ client would: corbaname."""
    return omniorb.string_to_object(server.factory_url)._narrow(CA.EventChannelFactory)


@pytest.fixture
def remote_channel(remote_factory: Any) -> Any:
    channel, _ = remote_factory.create_channel([], [])
    return channel


@pytest.fixture
def channel(factory: Any) -> Any:
    """A fresh channel of ``factory`` (either kind of server)."""
    made, _ = factory.create_channel([], [])
    return made


def reference(orb: Any, servant: Any) -> Any:
    """``servant`` activated in this process's RootPOA (collocated with a server here)."""
    return orb.resolve_initial_references("RootPOA").servant_to_reference(servant)
