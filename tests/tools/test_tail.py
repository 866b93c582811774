"""``cosnotify tail``: a child process pulling from a channel of an in-process server.

Events are pushed in this process, into the channel's default supplier
admin, once tail's proxy is connected. That is the one thing a test cannot
be told by an event, so :func:`wait_for_tail` polls the channel's stats
(with a deadline) for it; everything else waits on tail's output lines or
its exit.
"""

from __future__ import annotations

import json
import queue
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA

import cosnotify
from cosnotify.server import NotificationServer
from cosnotify.tools.jsonevents import loads, to_json
from tests.channel.conftest import WAIT, StructuredPushConsumer, structured_supplier
from tests.tools.conftest import ROOT, cli


@pytest.fixture
def channel(server: NotificationServer) -> tuple[Any, int]:
    """A new channel of the in-process server: (core channel, id)."""
    made, channel_id = server.factory.create_channel([], [])
    return made, channel_id


def event(n: int, name: str = "e", **fields: Any) -> Any:
    """A StructuredEvent of Telescope/Alarm with filterable ``n`` (long) and ``fields``."""
    return loads(json.dumps({"domain": "Telescope", "type": "Alarm", "name": name,
                             "filterable": {"n": n, **fields}}))


class Tail:
    """``cosnotify tail`` as a child; its stdout lines arrive on a queue."""

    def __init__(self, *args: str, read: bool = True) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cosnotify", "tail", *args], cwd=ROOT, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        if read:  # else the test reads stdout itself
            self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def line(self) -> str:
        """The next line tail prints (a test fails rather than hangs)."""
        got = self.lines.get(timeout=WAIT)
        assert got is not None, f"tail ended: {self.finish()}"
        return got

    def finish(self) -> tuple[int, list[str], str]:
        """(exit status, the rest of stdout, stderr) once tail has exited."""
        try:
            status = self.process.wait(timeout=WAIT)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        rest: list[str] = []
        if self._reader.ident is not None:  # started: it ends with stdout
            self._reader.join(WAIT)
            while (line := self.lines.get_nowait()) is not None:
                rest.append(line)
        assert self.process.stderr is not None
        return status, rest, self.process.stderr.read()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def tails() -> Iterator[list[Tail]]:
    """Tails started by a test, killed at its end if still running."""
    started: list[Tail] = []
    yield started
    for tail in started:
        tail.kill()


def start(tails: list[Tail], *args: str, read: bool = True) -> Tail:
    tail = Tail(*args, read=read)
    tails.append(tail)
    return tail


def consumer_admins(server: NotificationServer, channel_id: int) -> list[dict[str, Any]]:
    found = cosnotify.stats(server.factory, [channel_id])["channels"][0]["admins"]
    return [a for a in found if a["kind"] == "consumer"]


def wait_for_tail(server: NotificationServer, channel_id: int, tail: Tail) -> None:
    """Until tail's pull proxy is connected in the channel (polled: no event tells)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        assert tail.process.poll() is None, f"tail ended: {tail.finish()}"
        for admin in consumer_admins(server, channel_id):
            if any(p["kind"] == "structured pull supplier" and p["state"] == "connected"
                   for p in admin["proxies"]):
                return
        time.sleep(0.01)  # a poll interval, not a synchronisation: the loop tests the state
    raise AssertionError("tail did not connect")


def kept_filters(server: NotificationServer) -> int:
    """Filters the server holds for remote clients until they destroy them."""
    return len(server.objects._kept)


class TestTail:
    def test_prints_matching_events_only_and_leaves_nothing(
            self, server: NotificationServer, url: str, channel: tuple[Any, int],
            tails: list[Tail]) -> None:
        """Only events the constraint matches are printed; --count ends tail, and its
        admin, proxy and filter are gone."""
        core, channel_id = channel
        filters_before = kept_filters(server)
        tail = start(tails, url, "--channel", str(channel_id), "--count", "2", "$n > 1")
        wait_for_tail(server, channel_id, tail)
        supplier = structured_supplier(core)
        for n in (1, 2, 0, 3):
            supplier.push_structured_event(event(n, name=f"dome-{n}", s="a b"))
        status, lines, stderr = tail.finish()
        assert (status, stderr) == (0, "")
        assert [line.split(" ", 1)[1] for line in lines] == [
            'Telescope/Alarm dome-2 n=2 s="a b"', 'Telescope/Alarm dome-3 n=3 s="a b"']
        assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z",
                                line.split(" ")[0]) for line in lines)
        assert consumer_admins(server, channel_id) == []
        assert kept_filters(server) == filters_before

    @pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
    def test_a_signal_disconnects_cleanly(self, server: NotificationServer, url: str,
                                          channel: tuple[Any, int], tails: list[Tail],
                                          signum: int) -> None:
        """Ctrl-C (or SIGTERM) while tail waits in pull: exit 0, nothing left behind."""
        core, channel_id = channel
        tail = start(tails, url, "--channel", str(channel_id), "$n >= 0")
        wait_for_tail(server, channel_id, tail)
        structured_supplier(core).push_structured_event(event(7))
        assert " n=7" in tail.line()  # tail is now blocked in its next pull
        tail.process.send_signal(signum)
        status, rest, stderr = tail.finish()
        assert (status, rest, stderr) == (0, [], "")
        assert consumer_admins(server, channel_id) == []

    def test_json_output_round_trips_through_publish(
            self, server: NotificationServer, url: str, channel: tuple[Any, int],
            tails: list[Tail]) -> None:
        """``tail --format json | publish -`` re-creates the events, types and all."""
        core, channel_id = channel
        target, target_id = server.factory.create_channel([], [])
        consumer = StructuredPushConsumer()
        proxy, _ = target._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(consumer)
        sent = [  # the Priority 2 event first: the channel delivers by priority
            loads('{"domain": "D", "type": "T", "name": "", "header": {"Priority": 2},'
                  ' "filterable": {"n": {"$type": "unsigned short", "value": 2},'
                  ' "c": {"$type": "char", "value": "q"}, "big": 18446744073709551615},'
                  ' "body": [1, "two", null, [3.5]]}'),
            event(1, ratio=0.5, tags=["x", "y"], where={"az": 1.5, "ok": True}),
            N.StructuredEvent(event(3).header, event(3).filterable_data,
                              CORBA.Any(CORBA.TC_float, 0.25)),
        ]
        tail = start(tails, url, "--channel", str(channel_id), "--format", "json",
                     "--count", "3")
        wait_for_tail(server, channel_id, tail)
        supplier = structured_supplier(core)
        for item in sent:
            supplier.push_structured_event(item)
        status, lines, stderr = tail.finish()
        assert status == 0, stderr
        assert [json.loads(line) for line in lines] == [to_json(item) for item in sent]
        done = cli("publish", url, "--channel", str(target_id), "-", stdin="\n".join(lines))
        assert done.returncode == 0, done.stderr
        assert consumer.wait_for(3, WAIT)
        for got, want in zip(consumer.received, sent, strict=True):
            assert to_json(got) == to_json(want)
            for a, b in zip(got.filterable_data, want.filterable_data, strict=True):
                assert a.value._t.equivalent(b.value._t)
            assert got.remainder_of_body._t.equivalent(want.remainder_of_body._t)

    def test_row_format_is_the_spark_row(self, server: NotificationServer, url: str,
                                         channel: tuple[Any, int], tails: list[Tail]) -> None:
        """--format row prints event_to_row's columns, VARIANTs as their JSON text."""
        core, channel_id = channel
        tail = start(tails, url, "--channel", str(channel_id), "--format", "row", "--count", "1")
        wait_for_tail(server, channel_id, tail)
        structured_supplier(core).push_structured_event(event(5, name="dome-5", tags=["a"]))
        status, lines, stderr = tail.finish()
        assert status == 0, stderr
        (row,) = [json.loads(line) for line in lines]
        assert (row["domain_name"], row["type_name"], row["event_name"]) == (
            "Telescope", "Alarm", "dome-5")
        assert row["filterable_data"][0] == {"name": "n", "type": "long", "value": "5"}
        assert json.loads(row["filterable_data"][1]["value"]) == ["a"]
        assert row["remainder_of_body"] == {"type": "null", "value": "null"}
        assert row["arrival_time"].endswith("Z") and row["priority"] == 0
        assert row["expiry_time"] is None

    def test_closed_pipe_ends_quietly(self, server: NotificationServer, url: str,
                                      channel: tuple[Any, int], tails: list[Tail]) -> None:
        """tail | head: once the reader is gone tail cleans up and exits 0, silently."""
        core, channel_id = channel
        tail = start(tails, url, "--channel", str(channel_id), read=False)
        wait_for_tail(server, channel_id, tail)
        supplier = structured_supplier(core)
        supplier.push_structured_event(event(1))
        out = tail.process.stdout
        assert out is not None
        assert select.select([out], [], [], WAIT)[0], "tail printed nothing"
        assert " n=1" in out.readline()
        out.close()  # as head does after its line
        supplier.push_structured_event(event(2))
        assert tail.process.wait(timeout=WAIT) == 0
        assert tail.process.stderr is not None and tail.process.stderr.read() == ""
        assert consumer_admins(server, channel_id) == []

    def test_destroyed_channel_is_a_failure(self, server: NotificationServer, url: str,
                                            channel: tuple[Any, int], tails: list[Tail]) -> None:
        """A channel destroyed under tail ends it with exit 1 and one line."""
        core, channel_id = channel
        tail = start(tails, url, "--channel", str(channel_id))
        wait_for_tail(server, channel_id, tail)
        core.destroy()
        status, lines, stderr = tail.finish()
        assert (status, lines) == (1, [])
        assert stderr.splitlines() == [
            "cosnotify tail: the channel disconnected tail (its admin or channel was destroyed?)"]


class TestBadInput:
    def test_invalid_constraint(self, server: NotificationServer, url: str,
                                channel: tuple[Any, int]) -> None:
        """A constraint that does not parse: exit 2, one line, no admin or filter left."""
        filters_before = kept_filters(server)
        done = cli("tail", url, "--channel", str(channel[1]), "$n >")
        assert done.returncode == 2
        assert done.stderr.splitlines() == [
            "cosnotify tail: invalid EXTENDED_TCL constraint: $n >"]
        assert consumer_admins(server, channel[1]) == []
        assert kept_filters(server) == filters_before

    def test_unknown_grammar(self, server: NotificationServer, url: str,
                             channel: tuple[Any, int]) -> None:
        """A grammar the service does not know: exit 2, one line, no admin left."""
        done = cli("tail", url, "--channel", str(channel[1]), "--grammar", "SQL", "x = 1")
        assert done.returncode == 2
        assert done.stderr.splitlines() == [
            "cosnotify tail: the service knows no constraint grammar 'SQL'"]
        assert consumer_admins(server, channel[1]) == []

    def test_unreachable_url(self) -> None:
        """Nothing answers: exit 1 and one line, no traceback."""
        done = cli("tail", "127.0.0.1:1", "--count", "1")
        assert done.returncode == 1
        assert done.stderr.splitlines() == [
            "cosnotify tail: cannot reach 127.0.0.1:1: TRANSIENT (TRANSIENT_ConnectFailed)"]

    def test_wrong_channel(self, url: str, channel: tuple[Any, int]) -> None:
        """A channel id the service does not have: exit 2 and one line."""
        done = cli("tail", url, "--channel", "4242", "--count", "1")
        assert done.returncode == 2
        assert done.stderr.splitlines() == ["cosnotify tail: no channel 4242"]

    def test_bad_format(self, url: str) -> None:
        """An unknown --format is argparse's usage error."""
        done = cli("tail", url, "--format", "xml")
        assert done.returncode == 2 and "invalid choice" in done.stderr
