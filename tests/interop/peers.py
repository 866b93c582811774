"""Build and run the interop peers: omniORB C++ programs and their Python twins.

Strategy: everything that needs external tools is here, so tests and the
benchmark share it. :func:`build_cxx` compiles ``cxx/*.cc`` with the stubs
``omniidl -bcxx`` makes from ``idl/Interop.idl`` into ``cxx/build/`` (git
ignores it), keyed by a hash of the sources so a second run rebuilds
nothing; :func:`python_stubs` compiles the same IDL with ``cosnotify.idl``.
Missing tools or a failed build raise :class:`Unavailable` with the reason,
which tests turn into a skip. Every subprocess has a timeout, and
:class:`Process` kills its child on exit. A child is ready when it prints
so (an IOR, a log line), read by :class:`LineReader`: no test waits on a timer.

Run as a script, this module is also the Python peer (see ``--help``):
``server`` serves ``Interop::Thing`` and prints its IOR; ``client IOR``
calls every operation and prints ``key=value`` lines in the same format as
``cxx/interop_client.cc``; ``bench IOR N`` prints ``calls_per_second=X``.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import queue
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO, Any

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
IDL = HERE / "idl" / "Interop.idl"
CXX = HERE / "cxx"
BUILD = CXX / "build"
TOOLS = ("omniidl", "g++", "omniNames", "nameclt")


class Unavailable(Exception):
    """An interop peer cannot be used here (the message says why)."""


def missing_tools(tools: tuple[str, ...] = TOOLS) -> list[str]:
    return [tool for tool in tools if shutil.which(tool) is None]


def _digest(paths: list[pathlib.Path]) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


_build_lock = threading.Lock()


def build_cxx() -> dict[str, pathlib.Path]:
    """``{"server": path, "client": path}``, compiled once per source change."""
    missing = missing_tools(("omniidl", "g++"))
    if missing:
        raise Unavailable(f"omniORB C++ tools missing: {', '.join(missing)}")
    if not pathlib.Path("/usr/include/omniORB4/CORBA.h").exists():
        raise Unavailable("omniORB headers (libomniorb4-dev) are not installed")
    sources = [IDL, *sorted(CXX.glob("*.cc"))]
    out = BUILD / _digest(sources)
    programs = {"server": out / "interop_server", "client": out / "interop_client"}
    with _build_lock:
        if all(p.exists() for p in programs.values()):
            return programs
        work = pathlib.Path(tempfile.mkdtemp(prefix="build-", dir=_ensure(BUILD)))
        try:
            _run(["omniidl", "-bcxx", "-Wba", str(IDL)], work, 120)
            stubs = [str(work / "InteropSK.cc"), str(work / "InteropDynSK.cc"),
                     str(CXX / "interop_common.cc")]
            flags = ["-O2", f"-I{work}", "-lomniORB4", "-lomniDynamic4", "-lomnithread"]
            for name in programs:
                main = str(CXX / f"interop_{name}.cc")
                _run(["g++", "-o", str(work / f"interop_{name}"), main, *stubs, *flags], work, 600)
            _publish(work, out)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
    return programs


def _publish(work: pathlib.Path, out: pathlib.Path) -> None:
    """Move a finished build into place; another process may have won the race."""
    try:
        work.rename(out)
    except OSError:
        shutil.rmtree(work, ignore_errors=True)
        if not out.exists():
            raise


def _ensure(path: pathlib.Path) -> pathlib.Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _run(command: list[str], cwd: pathlib.Path, timeout: float) -> None:
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired as exc:
        raise Unavailable(f"{command[0]} timed out after {timeout} s") from exc
    if done.returncode != 0:
        raise Unavailable(f"{command[0]} failed: {done.stderr.strip()[-2000:]}")


def python_stubs() -> pathlib.Path:
    """A directory holding the ``Interop`` and ``Interop__POA`` packages made by cosnotify.idl."""
    out = BUILD / ("py-" + _digest([IDL, *sorted((ROOT / "cosnotify" / "idl").glob("*.py"))]))
    with _build_lock:
        if not (out / "Interop" / "__init__.py").exists():
            work = pathlib.Path(tempfile.mkdtemp(prefix="py-", dir=_ensure(BUILD)))
            _run([sys.executable, "-m", "cosnotify.idl", str(IDL), "-o", str(work)], ROOT, 120)
            _publish(work, out)
    return out


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


def python_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(python_stubs()), str(ROOT), env.get("PYTHONPATH", "")])
    return env


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


if __name__ == "__main__":
    sys.path.insert(0, str(python_stubs()))
    from tests.interop import python_peer

    sys.exit(python_peer.main(sys.argv[1:]))
