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

import cosnotify
from cosnotify.protocols import Context
from cosnotify.protocols.listener import Limits, Loop
from cosnotify.protocols.serve import FrontEndConfig, FrontEnds, elvin_limits, front_end_config
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
    def test_a_channel_without_its_front_end_is_refused(
            self, capsys: pytest.CaptureFixture[str]) -> None:
        """--PROTOCOL-channel without --PROTOCOL is one line and a failed start, not a
        server that silently runs no such front end."""
        from cosnotify.__main__ import main

        assert main(["serve", "--endpoint", "127.0.0.1:0", "--eventer-channel", "x"]) == 1
        assert capsys.readouterr().err.strip().splitlines() == [
            "cosnotify serve: cannot start: --eventer-channel needs --eventer HOST:PORT"]

    def test_elvin_test_conn_parses(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Elvin §7.4.13: the TestConn period "MUST be configurable, sending MUST be able
        to be disabled": --elvin-test-conn SECONDS, 0 for never; default: the Limits'."""
        from cosnotify.__main__ import _parser, main

        def parsed(*flags: str) -> Any:
            return _parser().parse_args(["serve", "--elvin", "127.0.0.1:0", *flags])
        assert parsed().elvin_test_conn is None
        assert parsed("--elvin-test-conn", "120").elvin_test_conn == 120.0
        assert elvin_limits(parsed("--elvin-test-conn", "120").elvin_test_conn) == Limits(
            idle_timeout=120.0)
        assert elvin_limits(parsed("--elvin-test-conn", "0").elvin_test_conn) == Limits(
            idle_timeout=None)
        for bad in ("-1", "soon", "inf"):
            with pytest.raises(SystemExit):
                parsed("--elvin-test-conn", bad)
        capsys.readouterr()
        assert main(["serve", "--endpoint", "127.0.0.1:0", "--elvin-test-conn", "5"]) == 1
        assert capsys.readouterr().err.strip().splitlines() == [
            "cosnotify serve: cannot start: --elvin-test-conn needs --elvin HOST:PORT"]

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


class TestContext:
    @pytest.fixture
    def factory(self) -> Iterator[Any]:
        made = cosnotify.EventChannelFactory()
        yield made
        made.close(wait=False)

    def test_a_name_made_meanwhile_is_served(self, factory: Any) -> None:
        """A CORBA client that makes the name between the front end's look and its make
        (create_named_channel: NameAlreadyUsed) does not stop the front end: it serves
        the channel the client made (issue 22: clients of every kind share channels)."""
        made: list[Any] = []

        class Racing:
            def __getattr__(self, name: str) -> Any:
                return getattr(factory, name)

            def create_named_channel(self, qos: Any, admin: Any, name: str) -> Any:
                if not made:  # another client's create lands first
                    made.append(factory.create_named_channel([], [], name)[0])
                return factory.create_named_channel(qos, admin, name)

        loop = Loop(workers=1)
        try:
            assert Context(Racing(), loop).channel("shared") is made[0]
        finally:
            loop.close()

    def test_only_ascii_digits_are_an_id(self, factory: Any) -> None:
        """A channel spec of other Unicode digits ("\u00b2") is a name, not a ValueError
        from int()."""
        loop = Loop(workers=1)
        try:
            channel = Context(factory, loop).channel("\u00b2")
        finally:
            loop.close()
        assert channel._name == "\u00b2"


class _Closing:
    """A front end whose close may fail (a protocol's cleanup raising)."""

    def __init__(self, fails: bool, closed: list[str], name: str) -> None:
        self.fails, self.closed, self.name = fails, closed, name
        self.address = ("127.0.0.1", 1)

    def close(self) -> None:
        self.closed.append(self.name)
        if self.fails:
            raise RuntimeError("a protocol's cleanup failed")

    def snapshot(self) -> dict[str, int]:
        return {}


class TestFrontEnds:
    def test_one_failing_close_does_not_stop_the_others(
            self, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
        """FrontEnds.close closes every front end and the loop even when one front end's
        close raises (the server's stop goes on to its channels); the failure is logged."""
        from cosnotify.protocols import eventheap, oes

        closed: list[str] = []
        monkeypatch.setattr(oes, "start", lambda *a, **k: _Closing(True, closed, "oes"))
        monkeypatch.setattr(eventheap, "start",
                            lambda *a, **k: _Closing(False, closed, "eventheap"))
        running = FrontEnds((FrontEndConfig("oes"), FrontEndConfig("eventheap")), None)
        running.close()
        assert closed == ["oes", "eventheap"]
        assert running.loop.loop.is_closed()
        assert "closing the oes front end failed" in caplog.text

    def test_a_failed_start_closes_what_started(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A front end that cannot start closes those started before it, and the loop."""
        from cosnotify.protocols import eventheap, oes

        closed: list[str] = []
        loops: list[Loop] = []

        def refuse(context: Context, *args: Any, **kwargs: Any) -> Any:
            loops.append(context.loop)
            raise OSError("address in use")

        monkeypatch.setattr(oes, "start", lambda *a, **k: _Closing(False, closed, "oes"))
        monkeypatch.setattr(eventheap, "start", refuse)
        with pytest.raises(OSError, match="in use"):
            FrontEnds((FrontEndConfig("oes"), FrontEndConfig("eventheap")), None)
        assert closed == ["oes"]
        assert loops[0].loop.is_closed()


class TestLaneKey:
    @pytest.fixture
    def service(self) -> Iterator[Any]:
        made = cosnotify.EventChannelFactory()
        yield made._service
        made.close(wait=False)

    def test_a_named_lane(self, service: Any) -> None:
        """An in-process client that stands for a peer names its lane (lane_key): the
        same key, the same lane."""
        class Contact:
            lane_key = ("oes-contact", "10.0.0.7")

        assert service.lane_for(Contact()) is service.lane_for(Contact())
        assert service.lane_for(Contact()) is not None

    @pytest.mark.parametrize("odd", ["raises", "unhashable"])
    def test_an_odd_client_gets_no_lane(self, service: Any, odd: str) -> None:
        """A client whose lane_key raises, or is no dict key, gets no lane: its connect
        is not failed by it (logged, not raised)."""
        class Odd:
            @property
            def lane_key(self) -> Any:
                if odd == "raises":
                    raise KeyError("half made")
                return ["not", "hashable"]

        assert service.lane_for(Odd()) is None


class TestServerLifecycle:
    def test_a_stop_while_the_front_ends_start_closes_them(
            self, omniorb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        """A stop() that lands (from another thread) while start() makes the front ends
        leaves none listening: start() closes them and says the server stopped."""
        import omniORB

        from cosnotify.protocols import serve
        from cosnotify.server import app
        from cosnotify.server.app import NotificationServer, ServerConfig

        made: list[Any] = []

        def started_then_stopped(*args: Any) -> Any:
            front_ends = serve.FrontEnds(*args)
            made.append(front_ends)
            server.stop()  # as another thread's stop would, between the two
            return front_ends

        monkeypatch.setattr(app, "FrontEnds", started_then_stopped)
        server = NotificationServer(ServerConfig(port=0, front_ends=(FrontEndConfig("oes"),)),
                                    bind=False)
        with pytest.raises(omniORB.CORBA.BAD_INV_ORDER, match="stopped while it started"):
            server.start()
        assert made[0].loop.loop.is_closed()
        assert made[0].running == []
