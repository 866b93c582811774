"""Fixtures for the interop tests: omniORB's tools and programs, skipped when missing."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

from cosnotify.orb import CORBA
from tests.interop import peers

_ids = itertools.count()


def _require_tools() -> None:
    missing = peers.missing_tools()
    if missing:
        pytest.skip(f"omniORB tools not installed: {', '.join(missing)}")


@pytest.fixture(scope="session")
def interop() -> Any:
    """The ``Interop`` Python stubs, made by cosnotify.idl."""
    try:
        path = str(peers.python_stubs())
    except peers.Unavailable as exc:
        pytest.skip(str(exc))
    if path not in sys.path:
        sys.path.insert(0, path)
    import Interop

    return Interop


@pytest.fixture(scope="session")
def peer(interop: Any) -> Any:
    from tests.interop import python_peer

    return python_peer


@pytest.fixture(scope="session")
def cxx() -> dict[str, Any]:
    """The compiled C++ interop programs (built once, cached in cxx/build/)."""
    _require_tools()
    try:
        return peers.build_cxx()
    except peers.Unavailable as exc:
        pytest.skip(f"cannot build the C++ interop programs: {exc}")


@pytest.fixture
def orb() -> Iterator[Any]:
    """One of our ORBs, listening on a free loopback port, RootPOA active."""
    made = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:0",
                           "-ORBclientCallTimeOutPeriod", "30000"],
                          f"interop-{os.getpid()}-{next(_ids)}")
    made.resolve_initial_references("RootPOA").the_POAManager.activate()
    yield made
    made.destroy()


@pytest.fixture
def omninames() -> Iterator[int]:
    """omniNames on a free loopback port with a fresh data directory; yields the port.

    Ready once it logs ``Root context is IOR:...`` on stderr: by then its
    endpoint listens (the IOR names it) and the root context exists.
    """
    _require_tools()
    port = peers.free_port()
    with tempfile.TemporaryDirectory() as datadir:
        process = subprocess.Popen(
            ["omniNames", "-start", str(port), "-datadir", datadir, "-always",
             "-ORBendPoint", f"giop:tcp:127.0.0.1:{port}"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True, errors="replace")
        assert process.stderr is not None
        log = peers.LineReader(process, process.stderr)
        try:
            try:
                log.wait_for("Root context is", 20)
            except peers.Unavailable as exc:
                pytest.skip(f"omniNames did not start: {exc}")
            yield port
        finally:
            process.kill()
            process.wait(10)
            log.thread.join(10)  # the pipe ends with the process
            process.stderr.close()


def nameclt(port: int, *args: str) -> subprocess.CompletedProcess[str]:
    """Run omniORB's nameclt against the NameService at ``127.0.0.1:port``."""
    return subprocess.run(["nameclt", "-ORBInitRef",
                           f"NameService=corbaloc::127.0.0.1:{port}/NameService", *args],
                          capture_output=True, text=True, timeout=30, check=False)
