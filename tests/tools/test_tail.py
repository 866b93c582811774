"""``cosnotify tail``: a child process pulling from a channel of an in-process server.

Events are pushed in this process, into the channel's default supplier
admin, once tail's proxy is connected: :func:`wait_for_tail` waits on a
condition that every connection to a consumer admin of this process
notifies (:func:`_connections`, on the admin's own connection hook);
everything else waits on tail's output lines or its exit. Only the test of
a stopped ``cosnotify serve`` child polls, since nothing of that process
can notify this one.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyMonitor
import TimeBase

import cosnotify
from cosnotify.channel.clock import TIMET_EPOCH_OFFSET
from cosnotify.server import NotificationServer
from cosnotify.tools import connect
from cosnotify.tools import tail as tail_tool
from cosnotify.tools.eventjson import to_json
from cosnotify.tools.jsonevents import loads
from tests.channel.conftest import WAIT, StructuredPushConsumer, structured_supplier
from tests.server.conftest import ServeProcess
from tests.tools.conftest import FOREGROUND, ROOT, cli


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
            [*FOREGROUND, sys.executable, "-m", "cosnotify", "tail", *args], cwd=ROOT, text=True,
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


#: Notified by every connection to a consumer admin in this process (_connections).
_CONNECTED = threading.Condition()


@pytest.fixture(autouse=True)
def _connections(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the consumer admins' connection hook notify :data:`_CONNECTED`."""
    from cosnotify.channel.admin import ConsumerAdmin

    hook = ConsumerAdmin._connection_changed

    def notifying(admin: Any, proxy: Any) -> None:
        hook(admin, proxy)
        with _CONNECTED:
            _CONNECTED.notify_all()

    monkeypatch.setattr(ConsumerAdmin, "_connection_changed", notifying)


def tail_connected(server: NotificationServer, channel_id: int) -> bool:
    return any(p["kind"] == "structured pull supplier" and p["state"] == "connected"
               for admin in consumer_admins(server, channel_id) for p in admin["proxies"])


def wait_for_tail(server: NotificationServer, channel_id: int, tail: Tail) -> None:
    """Until tail's pull proxy is connected in the channel."""
    with _CONNECTED:
        connected = _CONNECTED.wait_for(lambda: tail_connected(server, channel_id), WAIT)
    assert connected, f"tail did not connect: {tail.finish()}"


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
            ("cosnotify tail: the service disconnected tail: its channel or admin was "
             "destroyed, or the server stopped")]

    def test_a_server_stopped_normally_is_told_neutrally(
            self, omniorb: Any, tmp_path: Path, tails: list[Tail]) -> None:
        """Review 138: a server stopped with SIGTERM disconnects tail's proxy, and tail
        said "(its admin or channel was destroyed?)", blaming the wrong thing. The line
        now names both causes; exit 1."""
        served = ServeProcess(tmp_path)
        try:
            factory = omniorb.string_to_object(served.ior)._narrow(CA.EventChannelFactory)
            _, channel_id = factory.create_channel([], [])
            monitor = factory._narrow(CosNotifyMonitor.EventChannelFactory)
            tail = start(tails, str(served.ior_file), "--channel", str(channel_id))
            _wait_pulling(monitor, channel_id, tail)
            assert served.stop() == 0
            status, lines, stderr = tail.finish()
        finally:
            served.stop()
        assert (status, lines) == (1, [])
        [line] = stderr.splitlines()
        assert "destroyed?" not in line
        assert line in (
            ("cosnotify tail: the service disconnected tail: its channel or admin was "
             "destroyed, or the server stopped"),
            "cosnotify tail: lost the service: COMM_FAILURE (COMM_FAILURE_UnMarshalArguments)",
            "cosnotify tail: lost the service: TRANSIENT (TRANSIENT_ConnectFailed)"), line


    @pytest.mark.parametrize(("fmt", "deep"), [
        ("line", 'x="<any: nested too deep>"'), ("json", '"x":"<any: nested too deep>"'),
        ("row", None)])
    def test_an_event_it_cannot_print_is_skipped(
            self, server: NotificationServer, url: str, channel: tuple[Any, int],
            tails: list[Tail], fmt: str, deep: str | None) -> None:
        """Anys nested a thousand deep, a StopTime past year 9999: printed as far as the
        format can, else one line on stderr each; tail goes on to the next event."""
        core, channel_id = channel
        nested = CORBA.Any(CORBA.TC_long, 1)
        for _ in range(1000):
            nested = CORBA.Any(CORBA.TC_any, nested)
        far = N.Property("StopTime", CORBA.Any(TimeBase._tc_UtcT,
                                               TimeBase.UtcT(2**64 - 1, 0, 0, 0)))
        tail = start(tails, url, "--channel", str(channel_id), "--format", fmt,
                     "--count", "3")
        wait_for_tail(server, channel_id, tail)
        supplier = structured_supplier(core)
        supplier.push_structured_event(N.StructuredEvent(
            event(1, name="deep").header, [N.Property("x", nested)], CORBA.Any(CORBA.TC_null, None)))
        supplier.push_structured_event(N.StructuredEvent(
            N.EventHeader(event(2, name="far").header.fixed_header, [far]), event(2).filterable_data,
            CORBA.Any(CORBA.TC_null, None)))
        supplier.push_structured_event(event(3, name="after"))
        status, lines, stderr = tail.finish()
        assert status == 0, stderr
        assert "after" in lines[-1]
        if fmt == "row":  # no row for the first: the VARIANT encoder's recursion
            assert stderr.splitlines() == [
                ("cosnotify tail: event 1 (Telescope/Alarm deep) cannot be printed: nested too "
                "deep (RecursionError); skipped")]
            # Review 128: an expiry past Spark's last timestamp (year 60038) is NULL.
            far_row = json.loads(next(line for line in lines if '"far"' in line))
            assert far_row["expiry_time"] is None
            return
        assert stderr == ""
        assert deep is not None and deep in lines[0]
        if fmt == "json":  # past 9999 no ISO-8601 form: Unix seconds
            assert json.loads(lines[1])["header"]["StopTime"] == pytest.approx(
                (2**64 - 1) / 10**7 - TIMET_EPOCH_OFFSET)

    def test_a_stopped_service_is_noticed(self, omniorb: Any, tmp_path: Path,
                                          tails: list[Tail]) -> None:
        """A server that stops answering without closing the connection (SIGSTOP): after
        --timeout without events tail checks it, and ends with exit 1 and one line."""
        served = ServeProcess(tmp_path)
        try:
            factory = omniorb.string_to_object(served.ior)._narrow(CA.EventChannelFactory)
            _, channel_id = factory.create_channel([], [])
            monitor = factory._narrow(CosNotifyMonitor.EventChannelFactory)
            tail = start(tails, str(served.ior_file), "--channel", str(channel_id),
                         "--timeout", "1")
            _wait_pulling(monitor, channel_id, tail)
            served.process.send_signal(signal.SIGSTOP)
            try:
                status, lines, stderr = tail.finish()
            finally:
                served.process.send_signal(signal.SIGCONT)
        finally:
            served.stop()
        assert (status, lines) == (1, [])
        # Usually the check times out first; once in a full run the blocked pull itself
        # reported the TIMEOUT first (omniORB; the cause not pinned down): either way
        # one line, the service lost, exit 1.
        [line] = stderr.splitlines()
        assert line in (
            ("cosnotify tail: lost the service: no answer to a check while no event came: "
             "TIMEOUT (TIMEOUT_CallTimedOutOnClient)"),
            "cosnotify tail: lost the service: TIMEOUT (TIMEOUT_CallTimedOutOnClient)"), line


def _pulling(snapshot: str) -> bool:
    """Does the snapshot show a connected structured pull supplier (tail's proxy)?"""
    (found,) = json.loads(snapshot)["channels"]
    return any(p["kind"] == "structured pull supplier" and p["state"] == "connected"
               for admin in found["admins"] for p in admin["proxies"])


class Timeline(queue.Queue[Any]):
    """The puller's queue on a fake clock: each event is due at a time, and a wait on
    the queue moves the clock by its timeout instead of sleeping."""

    def __init__(self, due: list[float]) -> None:
        super().__init__()
        self.now = 0.0
        self.due = due

    def clock(self) -> float:
        return self.now

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        self.now += timeout or 0.0
        if self.due and self.due[0] <= self.now:
            n = len(self.due)
            self.due.pop(0)
            return (self.now, event(n))
        raise queue.Empty


class TestPrint:
    def test_a_formatting_failure_skips_that_event_only(
            self, capsys: pytest.CaptureFixture[str]) -> None:
        """Whatever the formatter raises for one event is one stderr line; the next
        event is printed, and it counts toward --count."""
        events: queue.Queue[Any] = queue.Queue()
        for n in (1, 2, 3):
            events.put((0.0, event(n, name=f"dome-{n}")))

        def formatter(item: Any, arrival: float) -> str:
            n = item.filterable_data[0].value.value()
            if n == 1:
                raise OverflowError("date value out of range")
            if n == 2:
                raise RecursionError("maximum recursion depth exceeded")
            return f"event {n}"

        assert tail_tool._print(events, formatter, 3) == 0
        out, err = capsys.readouterr()
        assert out == "event 3\n"
        assert err.splitlines() == [
            ("cosnotify tail: event 1 (Telescope/Alarm dome-1) cannot be printed: "
            "OverflowError: date value out of range; skipped"),
            ("cosnotify tail: event 2 (Telescope/Alarm dome-2) cannot be printed: "
            "nested too deep (RecursionError); skipped")]

    def test_the_service_is_checked_after_a_quiet_spell(
            self, capsys: pytest.CaptureFixture[str]) -> None:
        """check() runs after `quiet` seconds without an event (an event restarts the
        count); while it answers tail goes on, and its failure ends the loop."""
        events = Timeline([5.0])
        checks: list[float] = []

        def check() -> None:
            checks.append(events.now)
            if len(checks) == 2:
                raise connect.ToolError("lost the service: TIMEOUT")

        with pytest.raises(connect.ToolError, match="lost the service"):
            tail_tool._print(events, lambda e, a: "x", None, check, 10.0, events.clock)
        assert checks == [15.0, 25.0]
        assert capsys.readouterr().out == "x\n"

    def test_no_check_while_events_keep_coming(
            self, capsys: pytest.CaptureFixture[str]) -> None:
        """Events arriving more often than every `quiet` seconds never cause a check."""
        events = Timeline([0.5 * n for n in range(1, 21)])

        def check() -> None:
            raise AssertionError("checked while events came")

        assert tail_tool._print(events, lambda e, a: "x", 20, check, 1.0, events.clock) == 0
        assert capsys.readouterr().out == "x\n" * 20
        assert events.now == 10.0

    def test_a_suppliers_control_characters_never_reach_the_terminal(
            self, capsys: pytest.CaptureFixture[str]) -> None:
        """Review 106: an event's text is a supplier's; C0 and C1 controls and DEL in it
        (clear screen, set title, CSI) are printed as JSON escapes, in every format: a
        JSON line stays the same JSON."""
        hostile = "ok\x1b[2J\x1b]0;title\x07\x9b31m\x7f"
        events: queue.Queue[Any] = queue.Queue()
        events.put((0.0, event(1, name=hostile)))
        events.put((0.0, event(2, name=hostile)))
        lines = iter([tail_tool.format_line, tail_tool.format_json])
        assert tail_tool._print(events, lambda e, a: next(lines)(e, a), 2) == 0
        text, as_json = capsys.readouterr().out.splitlines()
        assert text.isprintable() and as_json.isprintable()
        assert "ok\\u001b[2J\\u001b]0;title\\u0007\\u009b31m\\u007f" in text
        assert json.loads(as_json)["name"] == hostile

    def test_no_check_without_a_checker(self) -> None:
        """Without check (the default) a quiet queue is simply waited on."""
        events = Timeline([100.0])
        assert tail_tool._print(events, lambda e, a: "", 1, None, 1.0, events.clock) == 0


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

    def test_unknown_grammar_without_a_constraint(self, server: NotificationServer, url: str,
                                                   channel: tuple[Any, int]) -> None:
        """--grammar is checked even without a constraint (a filter made to ask, then
        destroyed): exit 2, nothing left behind."""
        filters_before = kept_filters(server)
        done = cli("tail", url, "--channel", str(channel[1]), "--grammar", "SQL")
        assert done.returncode == 2
        assert done.stderr.splitlines() == [
            "cosnotify tail: the service knows no constraint grammar 'SQL'"]
        assert consumer_admins(server, channel[1]) == []
        assert kept_filters(server) == filters_before

    def test_known_grammar_without_a_constraint(
            self, server: NotificationServer, url: str, channel: tuple[Any, int],
            tails: list[Tail]) -> None:
        """A grammar the service knows, without a constraint: every event, and the filter
        made to check the grammar is not kept."""
        core, channel_id = channel
        filters_before = kept_filters(server)
        tail = start(tails, url, "--channel", str(channel_id), "--grammar", "ELVIN4",
                     "--count", "1")
        wait_for_tail(server, channel_id, tail)
        assert kept_filters(server) == filters_before
        structured_supplier(core).push_structured_event(event(4))
        status, lines, stderr = tail.finish()
        assert (status, stderr) == (0, "")
        assert " n=4" in lines[0]

    @pytest.mark.parametrize(("args", "what"), [
        (["$site == '\u20ac'"], "constraint"), (["--grammar", "T\u20acL", "1"], "grammar")])
    def test_text_outside_latin1(self, server: NotificationServer, url: str,
                                 channel: tuple[Any, int], args: list[str], what: str) -> None:
        """A constraint or grammar a CORBA string cannot carry: exit 2 and why, before
        anything is made."""
        done = cli("tail", url, "--channel", str(channel[1]), *args)
        assert done.returncode == 2
        assert done.stderr.splitlines() == [
            (f'cosnotify tail: the {what} holds "€" (U+20AC), which is not in ISO-8859-1, '
            f"the character set of a CORBA string")]
        assert consumer_admins(server, channel[1]) == []

    def test_an_output_that_fails(self, server: NotificationServer, url: str,
                                  channel: tuple[Any, int]) -> None:
        """tail > /dev/full: one line, exit 1, and its admin is destroyed."""
        if not os.path.exists("/dev/full"):
            pytest.skip("no /dev/full here")
        channel_id = channel[1]
        with open("/dev/full", "w") as full:
            child = subprocess.Popen(
                [sys.executable, "-m", "cosnotify", "tail", url, "--channel", str(channel_id)],
                cwd=ROOT, text=True, stdout=full, stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL)
        _fails_writing(server, channel, child, "No space left on device")

    def test_a_closed_output(self, server: NotificationServer, url: str,
                             channel: tuple[Any, int]) -> None:
        """Review 138: tail >&- was an AttributeError traceback (sys.stdout is None) at
        the first event; now the line every tool gives, exit 1, its admin destroyed."""
        child = subprocess.Popen(
            ["sh", "-c", 'exec "$0" -m cosnotify "$@" >&-', sys.executable, "tail", url,
             "--channel", str(channel[1])],
            cwd=ROOT, text=True, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        _fails_writing(server, channel, child, "standard output is closed")

    def test_an_interrupt_before_it_subscribed_exits_0(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Ctrl-C while tail is still connecting: exit 0 as at any other time (there is
        nothing to clean up yet)."""
        def interrupted(url: str, the_orb: Any) -> Any:
            raise KeyboardInterrupt

        monkeypatch.setattr(connect, "factory", interrupted)
        args = argparse.Namespace(url="127.0.0.1:1", channel=None, grammar="EXTENDED_TCL",
                                  constraint=None, count=None, format="line", timeout=1.0)
        assert tail_tool.run(args) == 0

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


def _fails_writing(server: NotificationServer, channel: tuple[Any, int],
                   child: subprocess.Popen[str], reason: str) -> None:
    """``child``, a tail that cannot write its output, ends at the first event with one
    line and exit 1, its admin destroyed."""
    core, channel_id = channel
    try:
        with _CONNECTED:
            assert _CONNECTED.wait_for(lambda: tail_connected(server, channel_id), WAIT), \
                "no tail"
        structured_supplier(core).push_structured_event(event(1))
        _, stderr = child.communicate(timeout=WAIT)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 1, stderr
    assert stderr.splitlines() == [f"cosnotify tail: cannot write the output: {reason}"]
    assert consumer_admins(server, channel_id) == []


def _wait_pulling(monitor: Any, channel_id: int, tail: Tail) -> None:
    """Until ``tail``'s proxy on a served channel is pulling (the monitor's snapshot),
    or WAIT. The server is a child process, which cannot notify this one: polled."""
    deadline = time.monotonic() + WAIT
    while not _pulling(monitor.snapshot([channel_id])):
        assert tail.process.poll() is None, f"tail ended: {tail.finish()}"
        assert time.monotonic() < deadline, "tail did not connect"
        time.sleep(0.01)
