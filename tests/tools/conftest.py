"""The operator's tools against a real server: in this process, driven as a child.

A tool runs as ``python -m cosnotify TOOL ...`` in a child process (``cli``),
as an operator runs it: its exit status, stdout and stderr are what a test
reads. The server it talks to runs in this process on the session ORB
(``server``), so a test sets up channels, proxies and counters directly.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from cosnotify.server import NotificationServer, ServerConfig

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def server(omniorb: Any) -> Iterator[NotificationServer]:
    """A server in this process on a free loopback port, with embedded naming."""
    srv = NotificationServer(ServerConfig(port=0, call_timeout=2.0)).start()
    yield srv
    srv.stop()


@pytest.fixture
def url(server: NotificationServer) -> str:
    """``HOST:PORT`` of ``server``: the tools' shorthand for its factory."""
    host, port = server.endpoint
    return f"{host}:{port}"


def cli(*args: str, stdin: str | None = None, timeout: float = 60.0,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m cosnotify *args`` to completion (a hang fails the test)."""
    return subprocess.run([sys.executable, "-m", "cosnotify", *args], input=stdin, check=False,
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env={**os.environ, **(env or {})})
