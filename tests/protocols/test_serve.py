"""``cosnotify serve --PROTOCOL HOST:PORT``: front ends started with the server, seen by
``ls`` and the metrics, refused cleanly when their address is bad or taken
(docs/protocols.md)."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cosnotify.protocols.serve import FrontEndConfig, front_end_config
from tests.protocols.oes.client import Client
from tests.server.conftest import ServeProcess


def front_end_port(log: list[str], protocol: str) -> int:
    """The port a front end's start line names."""
    for line in log:
        found = re.search(rf"{protocol} front end at 127\.0\.0\.1:(\d+)", line)
        if found:
            return int(found.group(1))
    raise AssertionError(f"no {protocol} front end line in: {''.join(log)}")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, omniorb: Any) -> Iterator[ServeProcess]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        metrics_port = probe.getsockname()[1]
    made = ServeProcess(tmp_path_factory.mktemp("frontends"), "--oes", "127.0.0.1:0",
                        "--oes-channel", "trees", "--metrics", f"127.0.0.1:{metrics_port}")
    made.metrics_port = metrics_port  # type: ignore[attr-defined]
    yield made
    assert made.stop() == 0, "".join(made.log)


class TestServeFlags:
    def test_the_front_end_answers_its_protocol(self, served: ServeProcess) -> None:
        """--oes starts the OES front end with the server: a LIST of the root is answered
        200 (the seed's "Wire Protocol")."""
        port = front_end_port(served.log, "oes")
        client = Client(("127.0.0.1", port))
        try:
            assert client.call("LIST", "\\").status == 200
        finally:
            client.close()

    def test_ls_shows_the_front_end(self, served: ServeProcess) -> None:
        """cosnotify ls prints a line per front end with its connections and frames."""
        port = front_end_port(served.log, "oes")
        client = Client(("127.0.0.1", port))
        try:
            assert client.call("LIST", "\\").status == 200
            done = subprocess.run([sys.executable, "-m", "cosnotify", "ls", served.ior],
                                  capture_output=True, text=True, timeout=60, check=False)
        finally:
            client.close()
        assert done.returncode == 0, done.stderr
        line = next(x for x in done.stdout.splitlines() if x.startswith("oes at "))
        assert f"127.0.0.1:{port}" in line
        assert re.search(r"frames [1-9]\d* in, [1-9]\d* out", line), line
        # --oes-channel names the channel, made on first use.
        assert "trees" in done.stdout

    def test_the_metrics_count_the_front_end(self, served: ServeProcess) -> None:
        """serve --metrics exports the front end's gauges and counters by protocol."""
        port = front_end_port(served.log, "oes")
        client = Client(("127.0.0.1", port))
        try:
            assert client.call("LIST", "\\").status == 200
            url = f"http://127.0.0.1:{served.metrics_port}/metrics"  # type: ignore[attr-defined]
            page = urllib.request.urlopen(url, timeout=30).read().decode()
        finally:
            client.close()
        labels = f'port="{port}",protocol="oes"'  # prometheus_client sorts them
        assert re.search(rf"cosnotify_frontend_connections\{{{labels}\}} [1-9]", page), page
        assert re.search(rf"cosnotify_frontend_frames_in_total\{{{labels}\}} [1-9]", page)


class TestRefused:
    def test_a_port_in_use_stops_the_start(self, tmp_path: Path) -> None:
        """A front end whose port is taken stops the server, with one line saying why."""
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            done = subprocess.run(
                [sys.executable, "-m", "cosnotify", "serve", "--endpoint", "127.0.0.1:0",
                 "--oes", f"127.0.0.1:{port}"],
                check=False, capture_output=True, text=True, timeout=60)
        assert done.returncode != 0
        assert "cannot start" in done.stderr
        assert "in use" in done.stderr

    def test_a_bad_address_is_one_line(self) -> None:
        """A malformed --PROTOCOL address is refused before anything starts."""
        done = subprocess.run(
            [sys.executable, "-m", "cosnotify", "serve", "--endpoint", "127.0.0.1:0",
             "--elvin", "127.0.0.1:notaport"],
            check=False, capture_output=True, text=True, timeout=60)
        assert done.returncode == 1
        assert done.stderr.strip().splitlines() == [
            "cosnotify serve: cannot start: not a port: 'notaport' in '127.0.0.1:notaport'"]


class TestConfig:
    def test_a_host_alone_takes_the_default_port(self) -> None:
        """--elvin HOST listens on the seed's port 2917 (section 8)."""
        assert front_end_config("elvin", "0.0.0.0") == FrontEndConfig("elvin", "0.0.0.0", 2917)

    def test_unknown_protocols_are_refused(self) -> None:
        """A protocol cosnotify does not speak is a ValueError naming the known ones."""
        with pytest.raises(ValueError, match="unknown protocol 'amqp'"):
            FrontEndConfig("amqp")


class TestTop:
    def test_a_front_end_line_has_its_rates(self) -> None:
        """cosnotify top shows each front end's connections and its frames in and out per
        second, measured between two snapshots (issue 22, "Operations")."""
        from cosnotify.tools.top import front_end_lines

        def snap(t: float, frames_in: int, frames_out: int) -> dict[str, Any]:
            return {"time": t, "front_ends": [{
                "protocol": "elvin", "host": "127.0.0.1", "port": 2917, "open": 3,
                "accepted": 5, "refused": 1, "closed_bad": 2, "dropped_slow": 0,
                "frames_in": frames_in, "frames_out": frames_out}]}

        assert front_end_lines(None, snap(10.0, 100, 50)) == [
            ("elvin 127.0.0.1:2917: 3 connections, frames in/out - -, 1 refused, "
            "2 closed bad, 0 dropped slow")]
        assert front_end_lines(snap(10.0, 100, 50), snap(12.0, 300, 450)) == [
            ("elvin 127.0.0.1:2917: 3 connections, frames in/out 100/s 200/s, 1 refused, "
            "2 closed bad, 0 dropped slow")]
