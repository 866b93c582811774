"""The operator's tools against a real server: in this process, driven as a child.

A tool runs as ``python -m cosnotify TOOL ...`` in a child process (``cli``),
as an operator runs it: its exit status, stdout and stderr are what a test
reads. The server it talks to runs in this process on the session ORB
(``server``), so a test sets up channels, proxies and counters directly.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from cosnotify.server import NotificationServer, ServerConfig

#: How long a test waits for a screen or a child's output before it fails: a bound on
#: a hang, not a speed (the first-hour walk-through ran past 20 s under 8 workers).
WAIT = 60.0

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: Put before a command's argv: it then starts as a terminal's foreground command does,
#: SIGINT and SIGTERM at their defaults and not blocked, whatever this pytest worker
#: passes on. In three full runs one worker's children ignored SIGINT (a publish and a
#: tail each still running long after it); that worker's cause is not found.
FOREGROUND = [sys.executable, "-c",
              ("import os, signal, sys\n"
              "for n in (signal.SIGINT, signal.SIGTERM):\n"
              "    signal.signal(n, signal.SIG_DFL)\n"
              "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})\n"
              "os.execvp(sys.argv[1], sys.argv[1:])\n")]


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


def cli_redirected(redirect: str, *args: str,
                   timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run ``python -m cosnotify *args`` with its standard streams as the shell's
    ``redirect`` makes them (``>/dev/full``, ``>&-``, ``<&-``); stdout and stderr not
    redirected there are captured."""
    script = f'exec "$0" -m cosnotify "$@" {redirect}'
    return subprocess.run(["sh", "-c", script, sys.executable, *args], check=False,
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


class Tmux:
    """A tmux server of its own (a private socket, no config file) running one session."""

    def __init__(self) -> None:
        # Short, under /tmp: a Unix socket path is limited to about 100 bytes.
        self.directory = tempfile.mkdtemp(prefix="cosnotify-tmux-")
        self.socket = os.path.join(self.directory, "socket")
        self.session = "top"

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-S", self.socket, "-f", os.devnull, *args],
                              check=False, capture_output=True, text=True, timeout=10)

    def start(self, command: str, env: dict[str, str]) -> None:
        done = subprocess.run(["tmux", "-S", self.socket, "-f", os.devnull, "new-session",
                               "-d", "-s", self.session, "-x", "160", "-y", "50", command],
                              check=False, capture_output=True, text=True, timeout=10,
                              cwd=ROOT, env=env)
        assert done.returncode == 0, done.stderr

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", self.session).stdout

    def wait_for(self, what: str, test: Callable[[str], bool], timeout: float = WAIT) -> str:
        """Poll the screen every 0.1 s until ``test`` holds (the screen is the only thing
        there is to wait on); fail with the last screen."""
        deadline = time.monotonic() + timeout
        shown = ""
        while time.monotonic() < deadline:
            shown = self.screen()
            if test(shown):
                return shown
            time.sleep(0.1)
        pytest.fail(f"no {what} on the screen after {timeout:g} s; it shows:\n{shown}")

    def kill(self) -> None:
        self("kill-server")
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (.ci/install-debian-packages installs it)")
    made = Tmux()
    try:
        yield made
    finally:
        made.kill()
