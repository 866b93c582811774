"""docs/operations.md, "The first hour": every command on the page, run in order.

The page's ``$`` lines are read from the page itself and must be exactly
:data:`COMMANDS`, so a command added to the page without a run here fails
the first test. Each runs in ``bash`` as written, with ``.venv/bin`` (the
directory of this interpreter) first on PATH, as the page asks, and the
page's ports 2809 and 9464 replaced by free ones. A line ending in ``&``
runs in the background and is waited on through what it prints (the
consumer's ``ready``) or through the service (``tail``'s proxy appears in a
snapshot); ``top`` runs in a tmux pane, read from the screen and left with
``q``. What the page shows after each command is checked in its essentials.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cosnotify.tools import ls
from cosnotify.tools import top as top_tool
from tests.tools.conftest import FOREGROUND, ROOT, WAIT, Tmux

PAGE = Path(ROOT) / "docs" / "operations.md"
BIN = os.path.dirname(os.path.abspath(os.sys.executable))  # type: ignore[attr-defined]

COMMANDS = [
    "cosnotify serve --endpoint 127.0.0.1:2809 --metrics 127.0.0.1:9464 &",
    "cosnotify ls 127.0.0.1:2809",
    ("python examples/python/push_consumer.py corbaname::127.0.0.1:2809#NotifyEventChannelFactory"
    " --count 2 --vanish &"),
    "cosnotify tail 127.0.0.1:2809 '$severity > 2' &",
    "cosnotify publish 127.0.0.1:2809 examples/alarms.jsonl",
    "cosnotify publish 127.0.0.1:2809 examples/alarms.jsonl",
    "cosnotify ls 127.0.0.1:2809",
    "curl -s http://127.0.0.1:9464/metrics | grep -E '^cosnotify_(channel|supplier)_(delivered|failed)'",
    "cosnotify top 127.0.0.1:2809 --sort failures",
]


def page_commands() -> list[str]:
    """The ``$`` lines of the page's "The first hour" section, in order."""
    text = PAGE.read_text()
    section = text[text.index("## The first hour"):]
    section = section[:section.index("\n## ", 1)]
    return [line[2:] for line in section.splitlines() if line.startswith("$ ")]


def test_the_page_runs_exactly_these_commands() -> None:
    assert page_commands() == COMMANDS


class Background:
    """A command running in the background; its output (stdout and stderr) as lines."""

    def __init__(self, command: str, env: dict[str, str]) -> None:
        self.process = subprocess.Popen([*FOREGROUND, "bash", "-c", f"exec {command}"],
                                        cwd=ROOT, env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, text=True)
        self.lines: list[str] = []
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.lines.append("<eof>")
            self.cond.notify_all()

    def wait_for(self, test: Callable[[str], bool], what: str) -> str:
        with self.cond:
            found = self.cond.wait_for(lambda: any(map(test, self.lines)), WAIT)
            assert found, f"no {what}; it printed: {self.lines}"
            return next(line for line in self.lines if test(line))

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(WAIT)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def until(what: str, test: Callable[[], bool]) -> None:
    """Wait for a state of the service that no output announces (a snapshot shows it)."""
    deadline = time.monotonic() + WAIT
    pause = threading.Event()
    while not test():
        assert time.monotonic() < deadline, f"not seen after {WAIT:g} s: {what}"
        pause.wait(0.05)


def run(command: str, env: dict[str, str]) -> str:
    done = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, f"{command}: {done.returncode}\n{done.stdout}{done.stderr}"
    assert "Traceback" not in done.stderr
    return done.stdout + done.stderr


@pytest.fixture
def page_env() -> Iterator[tuple[dict[str, str], Callable[[str], str]]]:
    api, metrics = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TMUX")}
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")

    def ported(command: str) -> str:
        return command.replace("2809", str(api)).replace("9464", str(metrics))

    yield env, ported


def _proxies(snap: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [p for c in snap["channels"] for a in c["admins"] for p in a["proxies"]
            if p["kind"] == kind and p["state"] == "connected"]


def _gave_up(snap: dict[str, Any]) -> bool:
    return any(d["reason"].startswith("gave up") for c in snap["channels"]
               for d in c.get("departed", ()))


def test_the_first_hour(page_env: Any, omniorb: Any) -> None:
    if shutil.which("curl") is None or shutil.which("tmux") is None:
        pytest.skip("curl and tmux are needed (.ci/install-debian-packages installs them)")
    env, ported = page_env
    serve, consumer, tail, tmux = None, None, None, Tmux()
    try:
        # 1. the server, with metrics
        serve = Background(ported(COMMANDS[0].removesuffix(" &")), env)
        serve.wait_for(lambda line: "serving NotifyEventChannelFactory" in line, "serving line")
        url = ported("127.0.0.1:2809")
        # 2. it answers, with nothing in it yet
        assert run(ported(COMMANDS[1]), env).startswith("no channels\n")
        # 3. a consumer that will vanish: it makes channel 0
        consumer = Background(ported(COMMANDS[2].removesuffix(" &")), env)
        consumer.wait_for(lambda line: line == "ready", "ready")
        assert "channel 0" in consumer.lines
        # 4. tail, attached once its proxy shows in a snapshot
        tail = Background(ported(COMMANDS[3].removesuffix(" &")), env)
        until("tail's pull proxy", lambda: bool(_proxies(ls.fetch(url, []),
                                                         "structured pull supplier")))
        # 5. three alarms: tail prints the two above severity 2
        assert "published 3 events (0 skipped)" in run(ported(COMMANDS[4]), env)
        tail.wait_for(lambda line: "dome-3" in line, "dome-3 from tail")
        printed = [line for line in tail.lines if "Telescope/Alarm" in line]
        assert [line.split()[2] for line in printed] == ["dome-2", "dome-3"]
        assert printed[0].endswith('Telescope/Alarm dome-2 severity=4 site="north"')
        consumer.wait_for(lambda line: line == "<eof>", "the consumer's exit")
        assert "vanishing without disconnecting" in consumer.lines
        # 6. again: tail prints two more; pushes to the vanished consumer fail, and the
        # channel gives up on it (Retries, RetryInterval)
        assert "published 3 events (0 skipped)" in run(ported(COMMANDS[5]), env)
        until("the consumer given up", lambda: _gave_up(ls.fetch(url, [])))
        tail.wait_for(lambda line: line.count("dome-3") and
                      sum("dome-3" in seen for seen in tail.lines) == 2, "dome-3 again")
        # 7. ls shows the departure, with its failures and reason
        listed = run(ported(COMMANDS[6]), env)
        assert re.search(r"gave up after \d+ calls failed: TRANSIENT", listed), listed
        assert "structured pull supplier, connected" in listed
        assert 'filter 1 EXTENDED_TCL: $severity > 2' in listed
        assert re.search(r"events in 6, delivered \d+, queued now 0, discarded 0, expired 0, "
                         r"failed pushes [1-9]", listed), listed
        # 8. the metrics: tail's proxy delivered 4; the channel counts the failures of
        # the consumer it gave up on
        scraped = run(ported(COMMANDS[7]), env)
        assert re.search(r'^cosnotify_channel_failed_total\{channel="0"\} [1-9]', scraped,
                         re.MULTILINE), scraped
        assert re.search(r'cosnotify_supplier_delivered_total\{admin="\d+",channel="0",'
                         r'proxy="0"\} 4\.0', scraped), scraped
        # 9. top, in a terminal: the last departure in the header; q leaves
        top = ported(COMMANDS[8])
        tmux.start(f"PATH={shlex.quote(env['PATH'])}; {top}; echo EXIT=$?; sleep 60", env)
        # The latest departure: the consumer given up -- or, on a loaded machine where
        # the give-up came first, publish's own proxy, which left when publish exited.
        latest = top_tool.last_departure(ls.fetch(url, []))
        assert latest is not None
        reason = "gave up" if "gave up" in latest else "disconnected by its client"
        assert reason in latest, latest
        shown = tmux.wait_for("the departure", lambda s: "last gone" in s and reason in s)
        assert "sorted by failures" in shown
        tmux("send-keys", "-t", tmux.session, "q")
        assert "EXIT=0" in tmux.wait_for("the exit status", lambda s: "EXIT=" in s)
        print(listed, scraped, shown, "\n".join(tail.lines), "\n".join(consumer.lines),
              sep="\n-----\n")
    finally:
        tmux.kill()
        for process in (tail, consumer, serve):
            if process is not None:
                process.stop()
    assert tail is not None and tail.process.returncode == 0
