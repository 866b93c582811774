"""Run the interop peers: Debian's omniORB tools (omniNames, nameclt, omniEvents, g++).

Strategy: everything that needs external tools is here, so tests and the
benchmarks share it. The peers are the Debian packages' programs, which
nobody here wrote: :func:`tool` finds each in /usr/bin first, so the
omniORB wheel's own omniNames or nameclt in the venv never stands in for
them. Missing tools raise :class:`Unavailable` with the reason, which tests
turn into a skip. Every subprocess has a timeout, and :class:`Process` kills
its child on exit. A child is ready when it prints so (an IOR, a log line),
read by :class:`LineReader`: no test waits on a timer.
"""

from __future__ import annotations

import pathlib
import queue
import shutil
import socket
import subprocess
import threading
import time
from typing import IO, Any

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DEBIAN_BIN = pathlib.Path("/usr/bin")
TOOLS = ("omniidl", "g++", "omniNames", "nameclt")


class Unavailable(Exception):
    """An interop peer cannot be used here (the message says why)."""


def tool(name: str) -> str:
    """The Debian package's program ``name`` (/usr/bin first), else the one on PATH."""
    debian = DEBIAN_BIN / name
    if debian.exists():
        return str(debian)
    found = shutil.which(name)
    if found is None:
        raise Unavailable(f"{name} is not installed")
    return found


def missing_tools(tools: tuple[str, ...] = TOOLS) -> list[str]:
    return [name for name in tools if not (DEBIAN_BIN / name).exists() and shutil.which(name) is None]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LineReader:
    """A child's text output stream, read line by line on a daemon thread.

    Readiness is a line the child prints (an IOR, a "serving" log line), so
    :meth:`wait_for` blocks on a queue the reader fills, never on a timer. The
    reader drains the stream until it ends, so a chatty child never blocks on
    a full pipe; each line is also written to ``copy_to`` (a log file) if given.
    """

    def __init__(self, process: subprocess.Popen[Any], stream: IO[str], *,
                 copy_to: IO[str] | None = None) -> None:
        self.process = process
        self.name = pathlib.Path(str(process.args[0] if isinstance(process.args, list)
                                     else process.args)).name
        self.seen: list[str] = []
        self._copy_to = copy_to
        self._queue: queue.Queue[str | None] = queue.Queue()
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream: IO[str]) -> None:
        try:
            for line in stream:
                if self._copy_to is not None:
                    self._copy_to.write(line)
                    self._copy_to.flush()
                self._queue.put(line.rstrip("\n"))
        except (OSError, ValueError):  # the stream was closed under us by a teardown
            pass
        finally:
            self._queue.put(None)

    def output(self) -> str:
        return "\n".join(self.seen)[-4000:]

    def wait_for(self, text: str, timeout: float) -> str:
        """The next line containing ``text``; :class:`Unavailable` if the output ends first
        or ``timeout`` seconds pass (the message holds the lines seen so far)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise Unavailable(f"{self.name} printed no {text!r} within {timeout} s:\n"
                                  f"{self.output()}") from None
            if line is None:
                self._queue.put(None)  # the end stays visible to a later wait
                try:
                    status: int | None = self.process.wait(10)
                except subprocess.TimeoutExpired:
                    status = None
                raise Unavailable(f"{self.name} ended its output (exit status {status}) "
                                  f"before printing {text!r}:\n{self.output()}")
            self.seen.append(line)
            if text in line:
                return line


class Process:
    """A child process that prints one line (an IOR) when ready; killed on exit."""

    def __init__(self, command: list[str], *, timeout: float = 30.0, env: dict[str, str] | None = None,
                 cwd: pathlib.Path | None = None) -> None:
        self.command = command
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env, cwd=cwd)
        self.first_line = ""
        reader = threading.Thread(target=self._read_first, daemon=True)
        reader.start()
        reader.join(timeout)
        if not self.first_line:
            self.close()
            raise Unavailable(f"{command[0]} printed nothing within {timeout} s: {self.stderr()}")

    def _read_first(self) -> None:
        assert self.proc.stdout is not None
        self.first_line = self.proc.stdout.readline().strip()

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return ""
        assert self.proc.stderr is not None
        return self.proc.stderr.read()[-2000:]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()

    def __enter__(self) -> Process:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_text(command: list[str], timeout: float = 60.0, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env,
                          check=False)
    if done.returncode != 0:
        raise AssertionError(f"{command[0]} exited {done.returncode}: {done.stdout}{done.stderr}")
    return done.stdout


def parse_lines(text: str) -> dict[str, str]:
    """``key=value`` lines as a dict (a ``FAIL`` line is an assertion error)."""
    result = {}
    for line in text.splitlines():
        if line.startswith("FAIL"):
            raise AssertionError(line)
        key, sep, value = line.partition("=")
        if sep:
            result[key] = value
    return result
