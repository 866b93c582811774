"""Fixtures for the interop tests: omniORB's tools and programs, skipped when missing."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator

import pytest

from tests.interop import peers


def require_tools(*tools: str) -> None:
    """Skip unless the Debian omniORB tools named (default: all the peers') are installed."""
    missing = peers.missing_tools(tuple(tools) or peers.TOOLS)
    if missing:
        pytest.skip(f"omniORB tools not installed: {', '.join(missing)}")


@pytest.fixture
def omninames() -> Iterator[int]:
    """omniNames on a free loopback port with a fresh data directory; yields the port.

    Ready once it logs ``Root context is IOR:...`` on stderr: by then its
    endpoint listens (the IOR names it) and the root context exists.
    """
    require_tools("omniNames")
    port = peers.free_port()
    with tempfile.TemporaryDirectory() as datadir:
        process = subprocess.Popen(
            [peers.tool("omniNames"), "-start", str(port), "-datadir", datadir, "-always",
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


def nameclt(where: int | str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run Debian's nameclt against a NameService: a port on 127.0.0.1, or a corbaloc URL."""
    url = where if isinstance(where, str) else f"corbaloc::127.0.0.1:{where}/NameService"
    return subprocess.run([peers.tool("nameclt"), "-ORBInitRef", f"NameService={url}", *args],
                          capture_output=True, text=True, timeout=30, check=False)
