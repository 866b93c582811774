"""Processes for the notification interop tests and ``benchmarks/remote_bench.py``.

Strategy: everything that starts a process lives here, so the tests and the
benchmark drive ``cosnotify serve``, the C++ clients in ``cxx/``, omniEvents
and omniNames the same way. C++ programs are compiled once per source change
into ``tests/interop/cxx/build/notify/<hash>/`` (git ignores it): the hash
covers the sources and the compiler command, and a finished build is moved
into place atomically, so concurrent sessions never see half a build. Missing
tools raise :class:`Unavailable` (tests skip); a failing *product* (the server
does not start, a client prints ``FAIL``) raises ``AssertionError`` or
``RuntimeError`` instead. No process is waited on without a timeout, and
every class here kills its child on ``close``.

The C++ programs print ``key=value`` lines. :class:`Program` collects them on a
reader thread, so tests wait for a line (``wait_for``) instead of sleeping.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from typing import IO, Any

from tests.interop.peers import LineReader, Unavailable, free_port

__all__ = [
    "NotifyServer",
    "OmniEvents",
    "Program",
    "Unavailable",
    "build_examples",
    "build_loopback_shim",
    "build_programs",
    "free_port",
]

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
CXX = HERE / "cxx"
EXAMPLES_CXX = ROOT / "examples" / "cxx"
BUILD = ROOT / "tests" / "interop" / "cxx" / "build" / "notify"
PROGRAMS = ("notify_supplier", "notify_consumer", "notify_checks")
EXAMPLES = ("structured_supplier", "structured_consumer")
CXXFLAGS = ["-O2", "-Wall", "-I/usr/include/COS"]
LIBS = ["-lCOS4", "-lomniDynamic4", "-lomniORB4", "-lomnithread", "-lpthread"]
HEADERS = (pathlib.Path("/usr/include/omniORB4/CORBA.h"),
           pathlib.Path("/usr/include/COS/CosNotifyChannelAdmin.hh"))

_build_lock = threading.Lock()


# -- building ----------------------------------------------------------------------------------
def require_cxx() -> None:
    """Raise :class:`Unavailable` unless g++, omniORB and the COS stubs headers are here."""
    if shutil.which("g++") is None:
        raise Unavailable("g++ is not installed")
    for header in HEADERS:
        if not header.exists():
            raise Unavailable(f"{header} is missing (Debian: libomniorb4-dev, libcos4-dev)")


def _digest(paths: Sequence[pathlib.Path], *extra: str) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    for text in extra:
        digest.update(text.encode())
    return digest.hexdigest()[:16]


def _cached(key: str, outputs: Sequence[str], build: Any) -> pathlib.Path:
    """``BUILD/key``, made by ``build(workdir)`` unless every output already exists."""
    out = BUILD / key
    with _build_lock:
        if all((out / name).exists() for name in outputs):
            return out
        BUILD.mkdir(parents=True, exist_ok=True)
        work = pathlib.Path(tempfile.mkdtemp(prefix="build-", dir=BUILD))
        try:
            build(work)
            try:
                work.rename(out)
            except OSError:  # another session finished the same build first
                shutil.rmtree(work, ignore_errors=True)
                if not all((out / name).exists() for name in outputs):
                    raise
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
    return out


def _compile_all(jobs: dict[str, list[str]], cwd: pathlib.Path, timeout: float = 600) -> None:
    """Run the compiler commands in parallel; raise :class:`Unavailable` on the first failure."""
    running = {name: subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True)
               for name, command in jobs.items()}
    failures = []
    try:
        for name, process in running.items():
            try:
                output, _ = process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                failures.append(f"{name}: timed out after {timeout} s")
                continue
            if process.returncode != 0:
                failures.append(f"{name}: {output.strip()[-2000:]}")
    finally:
        for process in running.values():
            if process.poll() is None:
                process.kill()
                process.wait(10)
    if failures:
        raise Unavailable("C++ build failed: " + "\n".join(failures))


def build_programs() -> dict[str, pathlib.Path]:
    """The C++ test clients of ``cxx/``, by name (built once per source change)."""
    require_cxx()
    sources = sorted(CXX.glob("*.cc")) + sorted(CXX.glob("*.hh"))

    def build(work: pathlib.Path) -> None:
        _compile_all({name: ["g++", *CXXFLAGS, "-o", str(work / name), str(CXX / f"{name}.cc"),
                             *LIBS] for name in PROGRAMS}, work)

    out = _cached(_digest(sources, *CXXFLAGS, *LIBS), PROGRAMS, build)
    return {name: out / name for name in PROGRAMS}


def build_examples() -> dict[str, pathlib.Path]:
    """``examples/cxx`` built with its own Makefile (``make OUT=dir``)."""
    require_cxx()
    if shutil.which("make") is None:
        raise Unavailable("make is not installed")
    sources = [EXAMPLES_CXX / "Makefile", *sorted(EXAMPLES_CXX.glob("*.cc"))]

    def build(work: pathlib.Path) -> None:
        try:
            done = subprocess.run(["make", "-C", str(EXAMPLES_CXX), f"OUT={work}"],
                                  capture_output=True, text=True, timeout=600, check=False)
        except subprocess.TimeoutExpired as exc:
            raise Unavailable("make timed out") from exc
        if done.returncode != 0:
            raise AssertionError(f"examples/cxx does not build:\n{done.stdout}{done.stderr}")

    out = _cached("examples-" + _digest(sources), EXAMPLES, build)
    return {name: out / name for name in EXAMPLES}


def build_loopback_shim() -> pathlib.Path:
    """``libloopback_only.so``: an LD_PRELOAD library that binds wildcard sockets to loopback.

    omniEvents always listens on ``giop:::PORT`` (every interface); with this
    library preloaded it listens on 127.0.0.1 only.
    """
    require_cxx()
    source = CXX / "shim" / "loopback_only.c"
    name = "libloopback_only.so"

    def build(work: pathlib.Path) -> None:
        _compile_all({name: ["gcc" if shutil.which("gcc") else "g++", "-O2", "-shared", "-fPIC",
                             "-o", str(work / name), str(source), "-ldl"]}, work)

    return _cached("shim-" + _digest([source]), [name], build) / name


# -- processes ---------------------------------------------------------------------------------
class Program:
    """A child process printing ``key=value`` lines, collected on reader threads.

    ``wait_for(key)`` blocks until a line ``key=...`` appears (or the process
    dies, or the timeout passes); ``finish()`` waits for the exit and returns
    the lines as a dict. The process is killed on ``close``.
    """

    def __init__(self, command: Sequence[str | os.PathLike[str]], *,
                 env: dict[str, str] | None = None, cwd: pathlib.Path | None = None,
                 stdin: int | IO[Any] | None = subprocess.PIPE) -> None:
        self.command = [str(part) for part in command]
        self.lines: list[str] = []
        self.errors: list[str] = []
        self._cond = threading.Condition()
        self.proc = subprocess.Popen(self.command, stdin=stdin, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
        self._readers = [threading.Thread(target=self._read, args=(self.proc.stdout, self.lines),
                                          daemon=True),
                         threading.Thread(target=self._read, args=(self.proc.stderr, self.errors),
                                          daemon=True)]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: IO[str] | None, into: list[str]) -> None:
        assert stream is not None
        for line in stream:
            with self._cond:
                into.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    @property
    def name(self) -> str:
        return pathlib.Path(self.command[0]).name

    def output(self) -> str:
        with self._cond:
            return "\n".join([*self.lines, *(f"stderr: {line}" for line in self.errors)])

    def _line(self, prefix: str) -> str | None:
        for line in self.lines:
            if line.startswith("FAIL"):
                raise AssertionError(f"{self.name}: {line}\n{self.output()}")
            if line.startswith(prefix):
                return line
        return None

    def wait_line(self, prefix: str, timeout: float = 30.0) -> str:
        """The first output line starting with ``prefix``, waiting for it up to ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = self._line(prefix)
                if found is not None:
                    return found
                if self.proc.poll() is not None and not self._readers[0].is_alive():
                    raise AssertionError(f"{self.name} exited ({self.proc.returncode}) before "
                                         f"printing {prefix!r}:\n{self.output()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{self.name} printed no {prefix!r} within {timeout} s:"
                                         f"\n{self.output()}")
                self._cond.wait(min(left, 0.5))

    def count_lines(self, prefix: str) -> int:
        """How many output lines so far start with ``prefix``."""
        with self._cond:
            return sum(1 for line in self.lines if line.startswith(prefix))

    def wait_lines(self, prefix: str, count: int, timeout: float = 30.0) -> list[str]:
        """The first ``count`` output lines starting with ``prefix``, waiting for them."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                self._line("FAIL")  # raises on a FAIL line
                found = [line for line in self.lines if line.startswith(prefix)]
                if len(found) >= count:
                    return found[:count]
                if self.proc.poll() is not None and not self._readers[0].is_alive():
                    raise AssertionError(f"{self.name} exited ({self.proc.returncode}) after "
                                         f"{len(found)} of {count} {prefix!r} lines:\n"
                                         f"{self.output()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{self.name} printed {len(found)} of {count} "
                                         f"{prefix!r} lines within {timeout} s:\n"
                                         f"{self.output()}")
                self._cond.wait(min(left, 0.5))

    def wait_for(self, key: str, timeout: float = 30.0) -> str:
        """The value of the first ``key=value`` line, waiting for it up to ``timeout``."""
        return self.wait_line(key + "=", timeout)[len(key) + 1:]

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def finish(self, timeout: float = 60.0) -> dict[str, str]:
        """Wait for a clean exit; the ``key=value`` lines (the last of each key wins)."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.close()
            raise AssertionError(f"{self.name} did not exit within {timeout} s:\n"
                                 f"{self.output()}") from None
        for reader in self._readers:
            reader.join(10)
        result: dict[str, str] = {}
        for line in self.lines:
            if line.startswith("FAIL"):
                raise AssertionError(f"{self.name}: {line}\n{self.output()}")
            key, sep, value = line.partition("=")
            if sep:
                result[key] = value
        if self.proc.returncode != 0:
            raise AssertionError(f"{self.name} exited with {self.proc.returncode}:\n"
                                 f"{self.output()}")
        return result

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a kill always ends it
            pass
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None and not stream.closed:
                try:
                    stream.close()
                except OSError:
                    pass

    def __enter__(self) -> Program:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run(command: Sequence[str | os.PathLike[str]], timeout: float = 60.0,
        **kwargs: Any) -> dict[str, str]:
    """Run a program to completion and return its ``key=value`` lines."""
    with Program(command, stdin=subprocess.DEVNULL, **kwargs) as program:
        return program.finish(timeout)


def quiet_omniorb_env() -> dict[str, str]:
    """The environment with no omniORB configuration file (no stray NameService)."""
    env = dict(os.environ)
    env["OMNIORB_CONFIG"] = os.devnull
    return env


class NotifyServer:
    """``cosnotify serve`` on a free loopback port, ready once it logs ``serving ...``.

    The server writes its IOR file, then logs ``serving NAME at URL`` to
    stderr (always, at WARNING); a :class:`LineReader` waits for that line and
    copies the whole output to ``log_path``.
    """

    READY = "cosnotify: serving "

    def __init__(self, workdir: pathlib.Path, *, naming: str | None = None,
                 call_timeout: float = 10.0, start_timeout: float = 30.0,
                 extra: Sequence[str] = ()) -> None:
        self.naming = naming
        self.proc: subprocess.Popen[str] | None = None
        self._reader: LineReader | None = None
        self._log: IO[str] | None = None
        for _attempt in range(3):  # a free port can be taken between probe and bind
            self.port = free_port()
            self.ior_file = workdir / f"cosnotify-{self.port}.ior"
            self.log_path = workdir / f"cosnotify-{self.port}.log"
            command = [sys.executable, "-m", "cosnotify", "serve",
                       "--endpoint", f"127.0.0.1:{self.port}", "--ior-file", str(self.ior_file),
                       "--call-timeout", str(call_timeout), *extra]
            if naming is not None:
                command += ["--naming", naming]
            self._log = self.log_path.open("w")
            self.proc = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         text=True, errors="replace")
            assert self.proc.stdout is not None
            self._reader = LineReader(self.proc, self.proc.stdout, copy_to=self._log)
            if self._wait_ready(start_timeout):
                return
            if "in use" not in self.log():
                break
            self.stop()
        self.stop()
        raise RuntimeError(f"cosnotify serve did not start:\n{self.log()}")

    def _wait_ready(self, timeout: float) -> bool:
        assert self._reader is not None
        try:
            self._reader.wait_for(self.READY, timeout)
        except Unavailable:
            return False
        try:
            return self.ior_file.read_text().endswith("\n")  # written before the log line
        except OSError:
            return False

    def _release(self) -> None:
        """Reap a stopped server: its output reader, the pipe and the log file."""
        if self._reader is not None:
            self._reader.thread.join(10)  # the pipe ends with the process
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()
        if self._log is not None and not self._log.closed:
            self._log.close()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def factory_url(self) -> str:
        """``corbaname::...#NotifyEventChannelFactory``, as a C++ client resolves it."""
        if self.naming is not None:
            return self.naming.replace("corbaloc:", "corbaname:", 1) + "#NotifyEventChannelFactory"
        return f"corbaname::127.0.0.1:{self.port}#NotifyEventChannelFactory"

    @property
    def ior(self) -> str:
        return self.ior_file.read_text().strip()

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``; the exit status (None if killed)."""
        if self.proc is None:
            return None
        status: int | None = self.proc.poll()
        if status is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                status = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                status = None
        self._release()
        return status

    def __enter__(self) -> NotifyServer:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class OmniEvents:
    """Debian's omniEvents (C++ CosEvent service) on a free port, listening on loopback only.

    omniEvents always adds the endpoint ``giop:::PORT`` (every interface), so
    it runs with :func:`build_loopback_shim` preloaded, which binds wildcard
    sockets to 127.0.0.1, and publishes ``127.0.0.1`` in its IORs.
    """

    def __init__(self, workdir: pathlib.Path, start_timeout: float = 20.0) -> None:
        for tool in ("omniEvents", "eventc"):
            if shutil.which(tool) is None:
                raise Unavailable(f"{tool} is not installed (Debian: omnievents)")
        shim = build_loopback_shim()
        self.port = free_port()
        self.datadir = workdir / f"omnievents-{self.port}"
        self.datadir.mkdir()
        self.env = quiet_omniorb_env()
        env = dict(self.env, LD_PRELOAD=str(shim))
        # -v logs the factory's IOR once the POAs are active and the factory
        # exists: the readiness line. -t /dev/stderr sends the log to our pipe
        # (without -t it would go to syslog).
        self.proc = subprocess.Popen(
            ["omniEvents", "-f", "-v", "-p", str(self.port), "-l", str(self.datadir),
             "-t", "/dev/stderr", "-ORBendPointPublish", f"giop:tcp:127.0.0.1:{self.port}"],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True, errors="replace")
        assert self.proc.stderr is not None
        self._reader = LineReader(self.proc, self.proc.stderr)
        try:
            self._reader.wait_for("IOR:", start_timeout)
        except Unavailable:
            self.close()
            raise

    @property
    def factory_url(self) -> str:
        return f"corbaloc::127.0.0.1:{self.port}/omniEvents"

    def create_channel(self, *options: str) -> str:
        """A new channel's IOR, made with ``eventc -v [options] FACTORY``."""
        done = subprocess.run(["eventc", "-v", *options, self.factory_url], capture_output=True,
                              text=True, timeout=30, env=self.env, check=False)
        ior = done.stdout.strip()
        if done.returncode != 0 or not ior.startswith("IOR:"):
            raise RuntimeError(f"eventc failed ({done.returncode}): {done.stdout}{done.stderr}")
        return ior

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._reader.thread.join(10)  # the pipe ends with the process
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        shutil.rmtree(self.datadir, ignore_errors=True)

    def __enter__(self) -> OmniEvents:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
