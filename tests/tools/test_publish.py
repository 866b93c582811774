"""``cosnotify publish``: JSON lines pushed into a channel of an in-process server.

Events are received in this process by a push consumer on the channel's
default consumer admin (``StructuredPushConsumer`` records them and signals
a condition), so a test waits for them, never for a duration. The pacing of
``--rate`` and the line reader are tested without a server.
"""

from __future__ import annotations

import io
import os
import pty
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from omniORB import CORBA

import CosEventComm
import CosNotifyChannelAdmin as CA

import cosnotify
from cosnotify.corba import descriptors as D
from cosnotify.server import NotificationServer
from cosnotify.tools.connect import ToolError
from cosnotify.tools.eventjson import to_json
from cosnotify.tools.jsonevents import MAX_LINE_BYTES, JsonEventError
from cosnotify.tools.publish import BOM, Pacer, Pusher, Refused, read_events
from tests.channel.conftest import WAIT, StructuredPushConsumer
from tests.tools.conftest import FOREGROUND, ROOT, cli, cli_redirected

LINES = [  # Priority 0 (the default): another would let the channel reorder the events
    ('{"domain": "Telescope", "type": "Alarm", "name": "dome-1", "filterable": {"n": 0, '
     '"severity": {"$type": "short", "value": 2}}, "body": "first"}'),
    ('{"domain": "Telescope", "type": "Alarm", "name": "dome-2", "filterable": {"n": 1, '
     '"big": 5000000000, "ratio": 0.5, "tags": ["a", "b"]}, "body": [1, "x"]}'),
    ('{"domain": "Telescope", "type": "Status", "name": "dome-3", "header": {"Priority": 0}, '
     '"filterable": {"n": 2, "ok": true, "where": {"az": 10}}}'),
]


@pytest.fixture
def channel(server: NotificationServer) -> tuple[Any, int]:
    """A new channel of the in-process server: (core channel, id)."""
    made, channel_id = server.factory.create_channel([], [])
    return made, channel_id


@pytest.fixture
def received(channel: tuple[Any, int]) -> StructuredPushConsumer:
    """What a structured push consumer of the channel receives."""
    consumer = StructuredPushConsumer()
    proxy, _ = channel[0]._get_default_consumer_admin().obtain_notification_push_supplier(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_push_consumer(consumer)
    return consumer


def write(tmp_path: Path, *lines: str) -> str:
    path = tmp_path / "events.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def snapshot(server: NotificationServer, channel_id: int) -> dict[str, Any]:
    found: dict[str, Any] = cosnotify.stats(server.factory, [channel_id])["channels"][0]
    return found


def admins(server: NotificationServer, channel_id: int) -> list[tuple[str, Any]]:
    """(kind, id) of the channel's admins."""
    return [(a["kind"], a["id"]) for a in snapshot(server, channel_id)["admins"]]


def numbers(consumer: StructuredPushConsumer) -> list[int]:
    with consumer.cond:
        return [e.filterable_data[0].value.value() for e in consumer.received]


def _signal_masks() -> str:
    """This process's blocked, ignored and caught signal masks (Linux /proc)."""
    try:
        with open("/proc/self/status") as status:
            return " ".join(line.strip() for line in status
                            if line.startswith(("SigBlk", "SigIgn", "SigCgt")))
    except OSError as exc:
        return f"unknown: {exc}"


class TestPublish:
    def test_events_arrive_in_order_with_their_types(
            self, server: NotificationServer, url: str, channel: tuple[Any, int],
            received: StructuredPushConsumer, tmp_path: Path) -> None:
        """Each line becomes one event, in file order, with the mapped Any types."""
        before = admins(server, channel[1])
        done = cli("publish", url, "--channel", str(channel[1]), write(tmp_path, *LINES))
        assert done.returncode == 0, done.stderr
        assert done.stderr.startswith("published 3 events (0 skipped) in ")
        assert received.wait_for(3, WAIT)
        first, second, third = received.received
        assert [to_json(e)["name"] for e in received.received] == ["dome-1", "dome-2", "dome-3"]
        props = {p.name: p.value for p in first.filterable_data}
        assert D.unalias(props["severity"]._t._d) == D.SHORT and props["severity"].value() == 2
        props = {p.name: p.value for p in second.filterable_data}
        assert D.unalias(props["big"]._t._d) == D.LONGLONG
        assert D.unalias(props["ratio"]._t._d) == D.DOUBLE
        assert to_json(second)["body"] == [1, "x"]
        (priority,) = third.header.variable_header
        assert D.unalias(priority.value._t._d) == D.SHORT
        assert to_json(third)["filterable"]["where"] == {"az": 10}
        assert admins(server, channel[1]) == before  # its supplier admin is gone

    def test_stdin_and_comments(self, server: NotificationServer, url: str,
                                channel: tuple[Any, int],
                                received: StructuredPushConsumer) -> None:
        """``-`` reads standard input; blank and # lines are skipped, not counted."""
        text = "# a comment\n\n" + LINES[0] + "\n   \n" + LINES[1] + "\n"
        done = cli("publish", url, "--channel", str(channel[1]), "-", stdin=text)
        assert done.returncode == 0, done.stderr
        assert "published 2 events (0 skipped)" in done.stderr
        assert received.wait_for(2, WAIT)
        assert numbers(received) == [0, 1]

    def test_count_stops_early(self, url: str, channel: tuple[Any, int],
                               received: StructuredPushConsumer, tmp_path: Path) -> None:
        """--count N stops after N events."""
        done = cli("publish", url, "--channel", str(channel[1]), "--count", "2",
                   write(tmp_path, *LINES))
        assert done.returncode == 0, done.stderr
        assert "published 2 events" in done.stderr
        assert received.wait_for(2, WAIT)
        assert numbers(received) == [0, 1]

    def test_repeat_cycles_the_file_until_count(
            self, server: NotificationServer, url: str, channel: tuple[Any, int],
            received: StructuredPushConsumer, tmp_path: Path) -> None:
        """--repeat reads the file again from the top; --count ends it."""
        done = cli("publish", url, "--channel", str(channel[1]), "--repeat", "--count", "7",
                   write(tmp_path, *LINES))
        assert done.returncode == 0, done.stderr
        assert received.wait_for(7, WAIT)
        assert numbers(received) == [0, 1, 2, 0, 1, 2, 0]
        assert snapshot(server, channel[1])["counters"]["events_in"] == 7

    @pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
    def test_interrupted_repeat_cleans_up(
            self, server: NotificationServer, url: str, channel: tuple[Any, int],
            received: StructuredPushConsumer, tmp_path: Path, signum: int) -> None:
        """Ctrl-C (or SIGTERM) ends an endless --repeat: summary, exit 130, no admin left."""
        before = admins(server, channel[1])
        args = [url, "--channel", str(channel[1]), "--repeat", "--rate", "200",
                write(tmp_path, *LINES)]
        inherited = _signal_masks()
        # As from a terminal (FOREGROUND; the masks this worker passes on are in the
        # failure). faulthandler: a publish that does not exit dumps its threads on SIGABRT.
        child = subprocess.Popen(
            [*FOREGROUND, sys.executable, "-X", "faulthandler", "-m", "cosnotify", "publish",
             *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, cwd=ROOT)
        try:
            assert received.wait_for(4, WAIT)  # it has cycled the file once at least
            child.send_signal(signum)
            try:
                _, stderr = child.communicate(timeout=WAIT)
            except subprocess.TimeoutExpired:  # seen once, in a loaded full run
                child.send_signal(signal.SIGABRT)
                _, stderr = child.communicate(timeout=WAIT)
                pytest.fail(f"publish did not exit {WAIT:g} s after {signum!r} (this "
                            f"process's masks: {inherited}):\n{stderr}")
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        assert child.returncode == 130
        (line,) = stderr.splitlines()
        assert line.startswith("published ") and line.endswith(" s (interrupted)")
        assert admins(server, channel[1]) == before

    def test_repeat_of_stdin_is_a_usage_error(self, url: str) -> None:
        """Standard input cannot be read twice: exit 2 and one line."""
        done = cli("publish", url, "--repeat", "-", stdin=LINES[0] + "\n")
        assert done.returncode == 2
        assert done.stderr.splitlines() == [
            "cosnotify publish: --repeat needs a FILE: standard input cannot be read again"]

    def test_bad_lines_are_reported_and_skipped(
            self, url: str, channel: tuple[Any, int], received: StructuredPushConsumer,
            tmp_path: Path) -> None:
        """By default an invalid line is reported with its number and skipped; exit 1."""
        path = write(tmp_path, LINES[0], '{"name": "x", ', LINES[1],
                     '{"filterable": {"n": 18446744073709551616}}', LINES[2])
        done = cli("publish", url, "--channel", str(channel[1]), path)
        assert done.returncode == 1
        assert done.stderr.splitlines()[:2] == [
            ("cosnotify publish: line 2: malformed JSON at column 15: Expecting property name "
             "enclosed in double quotes"),
            ("cosnotify publish: line 4: filterable.n: 18446744073709551616 does not fit "
             "unsigned long long")]
        assert done.stderr.splitlines()[2].startswith("published 3 events (2 skipped) in ")
        assert received.wait_for(3, WAIT)
        assert numbers(received) == [0, 1, 2]

    def test_strict_file_with_a_bad_line_pushes_nothing(
            self, server: NotificationServer, url: str, channel: tuple[Any, int],
            tmp_path: Path) -> None:
        """--strict checks a FILE whole first: a bad last line means no push at all."""
        path = write(tmp_path, LINES[0], LINES[1], '{"type": 3}')
        done = cli("publish", url, "--channel", str(channel[1]), "--strict", path)
        assert done.returncode == 1
        assert done.stderr.splitlines() == [
            "cosnotify publish: line 3: type: expected a string, got 3 (nothing was published)"]
        assert snapshot(server, channel[1])["counters"]["events_in"] == 0
        assert admins(server, channel[1]) == []

    def test_strict_stdin_stops_at_the_bad_line(
            self, server: NotificationServer, url: str, channel: tuple[Any, int]) -> None:
        """On stdin --strict stops at the first bad line; the lines before were pushed."""
        text = "\n".join([LINES[0], LINES[1], "{oops", LINES[2]]) + "\n"
        done = cli("publish", url, "--channel", str(channel[1]), "--strict", "-", stdin=text)
        assert done.returncode == 1
        assert done.stderr.splitlines() == [
            ("cosnotify publish: line 3: malformed JSON at column 2: Expecting property name "
             "enclosed in double quotes (2 events were published before it)")]
        assert snapshot(server, channel[1])["counters"]["events_in"] == 2
        assert admins(server, channel[1]) == []

    def test_a_refused_event_is_reported_and_skipped(
            self, server: NotificationServer, url: str, channel: tuple[Any, int],
            received: StructuredPushConsumer, tmp_path: Path) -> None:
        """A push the service refuses for that event alone (BAD_QOS: persistence without
        a store) is reported with its line and skipped; the rest go on; exit 1."""
        before = admins(server, channel[1])
        refused = '{"header": {"EventReliability": 1}, "filterable": {"n": 9}}'
        done = cli("publish", url, "--channel", str(channel[1]),
                   write(tmp_path, LINES[0], refused, LINES[1]))
        assert done.returncode == 1
        first, summary = done.stderr.splitlines()
        assert first.startswith("cosnotify publish: line 2: the service refused the event: "
                                "BAD_QOS")
        assert summary.startswith("published 2 events (1 skipped) in ")
        assert received.wait_for(2, WAIT)
        assert numbers(received) == [0, 1]
        assert admins(server, channel[1]) == before

    def test_strict_stops_at_a_refused_event(
            self, server: NotificationServer, url: str, channel: tuple[Any, int],
            tmp_path: Path) -> None:
        """With --strict a refused push ends publish, saying how many went before it."""
        refused = '{"header": {"EventReliability": 1}, "filterable": {"n": 9}}'
        done = cli("publish", url, "--channel", str(channel[1]), "--strict",
                   write(tmp_path, LINES[0], refused, LINES[1]))
        assert done.returncode == 1
        (line,) = done.stderr.splitlines()
        assert line.startswith("cosnotify publish: line 2: the service refused the event: "
                               "BAD_QOS")
        assert line.endswith("(1 events were published before it)")
        assert snapshot(server, channel[1])["counters"]["events_in"] == 1
        assert admins(server, channel[1]) == []

    def test_text_outside_latin1_is_an_invalid_line_not_a_failed_push(
            self, server: NotificationServer, url: str, channel: tuple[Any, int],
            received: StructuredPushConsumer, tmp_path: Path) -> None:
        """A CORBA string outside ISO-8859-1 (it would fail to marshal: DATA_CONVERSION)
        is an invalid line naming its field; with --strict nothing is pushed."""
        euro = '{"filterable": {"n": 5, "site": "\\u20ac"}}'
        path = write(tmp_path, LINES[0], euro, LINES[1])
        strict = cli("publish", url, "--channel", str(channel[1]), "--strict", path)
        assert strict.returncode == 1
        assert strict.stderr.splitlines() == [
            ('cosnotify publish: line 2: filterable.site: "€" (U+20AC) is not in ISO-8859-1, '
            'the character set of a CORBA string (for other text write {"$type": "wstring", '
            '"value": ...}) (nothing was published)')]
        assert snapshot(server, channel[1])["counters"]["events_in"] == 0
        done = cli("publish", url, "--channel", str(channel[1]), path)
        assert done.returncode == 1
        assert done.stderr.splitlines()[0].startswith(
            'cosnotify publish: line 2: filterable.site: "€" (U+20AC) is not in ISO-8859-1')
        assert received.wait_for(2, WAIT)
        assert numbers(received) == [0, 1]

    def test_a_big_unsigned_long_long_sequence_is_an_invalid_line(
            self, url: str, channel: tuple[Any, int], received: StructuredPushConsumer,
            tmp_path: Path) -> None:
        """Review 138: [2**63, 7] was pushed as a sequence<unsigned long long> that
        omniORBpy sends as [2**64-1, 7] (or a SystemError traceback when last): now
        the line is invalid, the others get through."""
        path = write(tmp_path, '{"filterable": {"n": 0}}',
                     '{"filterable": {"big": [9223372036854775808, 7], "n": 1}}',
                     '{"filterable": {"n": 2}, "body": [9223372036854775808, 7]}',
                     '{"filterable": {"n": 3}}')
        done = cli("publish", url, "--channel", str(channel[1]), path)
        assert done.returncode == 1
        lines = done.stderr.splitlines()
        assert [line.split(":")[1] for line in lines[:2]] == [" line 2", " line 3"]
        assert lines[0].startswith("cosnotify publish: line 2: filterable.big[0]: "
                                   "9223372036854775808 in a sequence<unsigned long long>")
        assert "Traceback" not in done.stderr
        assert lines[2].startswith("published 2 events (2 skipped) in ")
        assert received.wait_for(2, WAIT)
        assert numbers(received) == [0, 3]

    def test_wide_strings_get_through(
            self, url: str, channel: tuple[Any, int], received: StructuredPushConsumer,
            tmp_path: Path) -> None:
        """A wstring carries what a string cannot, through the ORB and back."""
        line = ('{"filterable": {"n": 3, "site": {"$type": "wstring", "value": '
                '"h\\u20acllo \\u65e5\\u672c \\ud83d\\ude00"}}}')
        done = cli("publish", url, "--channel", str(channel[1]), write(tmp_path, line))
        assert done.returncode == 0, done.stderr
        assert received.wait_for(1, WAIT)
        (got,) = received.received
        assert to_json(got)["filterable"]["site"] == {"$type": "wstring",
                                                      "value": "h€llo 日本 😀"}

    def test_repeat_of_a_file_without_events_fails(
            self, server: NotificationServer, url: str, channel: tuple[Any, int],
            tmp_path: Path) -> None:
        """--repeat over a file with no valid event says so and exits 1."""
        empty = tmp_path / "empty.jsonl"
        empty.write_text("# nothing\n\n")
        done = cli("publish", url, "--channel", str(channel[1]), "--repeat", "--count", "5",
                   str(empty))
        assert done.returncode == 1
        first, summary = done.stderr.splitlines()
        assert first == f"cosnotify publish: {empty} has no event to repeat"
        assert summary.startswith("published 0 events (0 skipped)")
        once = cli("publish", url, "--channel", str(channel[1]), str(empty))
        assert once.returncode == 0, once.stderr  # without --repeat an empty file is fine

    def test_closed_standard_streams(self, url: str, channel: tuple[Any, int],
                                     received: StructuredPushConsumer) -> None:
        """Review 138: ``publish -`` with stdin closed was an AttributeError traceback
        (sys.stdin is None): one line, exit 2, as for a FILE that cannot be read. A
        closed stdout does not matter to publish, which writes nothing there."""
        done = cli_redirected("<&-", "publish", url, "--channel", str(channel[1]), "-")
        assert done.returncode == 2
        assert done.stderr.splitlines() == [
            "cosnotify publish: cannot read -: standard input is closed"]
        done = cli_redirected(">&- <<'EOF'\n" + LINES[0] + "\nEOF\n", "publish", url,
                              "--channel", str(channel[1]), "-")
        assert done.returncode == 0, done.stderr
        assert received.wait_for(1, WAIT)

    def test_unreachable_service(self, tmp_path: Path) -> None:
        """A URL nothing answers at: exit 1, one line, no traceback."""
        done = cli("publish", "127.0.0.1:1", write(tmp_path, LINES[0]))
        assert done.returncode == 1
        assert done.stderr.splitlines() == [
            "cosnotify publish: cannot reach 127.0.0.1:1: TRANSIENT (TRANSIENT_ConnectFailed)"]

    def test_wrong_channel_and_missing_file(self, url: str, tmp_path: Path) -> None:
        """A channel id the service does not have, or a FILE that is not there: exit 2."""
        done = cli("publish", url, "--channel", "4242", write(tmp_path, LINES[0]))
        assert done.returncode == 2
        assert done.stderr.splitlines() == ["cosnotify publish: no channel 4242"]
        missing = cli("publish", url, str(tmp_path / "none.jsonl"))
        assert missing.returncode == 2
        assert len(missing.stderr.splitlines()) == 1 and "cannot read" in missing.stderr

    def test_progress_bar_only_on_a_terminal(self, url: str, channel: tuple[Any, int],
                                             tmp_path: Path) -> None:
        """On a terminal stderr shows the bar (count and rate); piped, only the summary."""
        path = write(tmp_path, *LINES)
        args = [sys.executable, "-m", "cosnotify", "publish", url, "--channel",
                str(channel[1]), "--count", "3", path]
        controller, terminal = pty.openpty()
        try:
            child = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=terminal, cwd=ROOT,
                                     env={**os.environ, "COLUMNS": "100", "TERM": "xterm"})
            os.close(terminal)
            shown = b"".join(_drain(controller))
            assert child.wait(timeout=WAIT) == 0
        finally:
            os.close(controller)
        assert b"publishing" in shown and b"ev/s" in shown and b"3/3" in shown
        assert b"published 3 events (0 skipped)" in shown
        piped = cli("publish", url, "--channel", str(channel[1]), path)
        assert "publishing" not in piped.stderr and "ev/s" not in piped.stderr


def _drain(fd: int) -> Iterator[bytes]:
    """What a pty's controller reads until the other side is closed."""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            return
        if not chunk:
            return
        yield chunk


class TestPusher:
    @pytest.mark.parametrize("when", ["after obtain", "after connect"])
    def test_an_interrupt_while_connecting_leaves_nothing(
            self, server: NotificationServer, channel: tuple[Any, int],
            monkeypatch: pytest.MonkeyPatch, when: str) -> None:
        """Ctrl-C (or SIGTERM) arriving while the supplier is being set up: the admin
        made so far is destroyed, and the interrupt goes on."""
        ref = server.factory_ref.get_event_channel(channel[1])
        cls = (CA._objref_SupplierAdmin if when == "after obtain"
               else CA._objref_StructuredProxyPushConsumer)
        name = ("obtain_notification_push_consumer" if when == "after obtain"
                else "connect_structured_push_supplier")
        original = getattr(cls, name)

        def interrupted(self: Any, *args: Any) -> Any:
            original(self, *args)
            raise KeyboardInterrupt

        monkeypatch.setattr(cls, name, interrupted)
        with pytest.raises(KeyboardInterrupt):
            Pusher(ref)
        assert admins(server, channel[1]) == []

    def test_refusals_of_one_event_are_told_apart(
            self, server: NotificationServer, channel: tuple[Any, int]) -> None:
        """COMPLETED_NO BAD_QOS, BAD_PARAM, DATA_CONVERSION, MARSHAL: that event only
        (Refused); anything else, or COMPLETED_MAYBE, ends the run (a plain ToolError)."""
        with Pusher(server.factory_ref.get_event_channel(channel[1])) as pusher:
            for exc, refused in [
                    (CORBA.BAD_QOS(0, CORBA.COMPLETED_NO), True),
                    (CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO), True),
                    (CORBA.DATA_CONVERSION(0, CORBA.COMPLETED_NO), True),
                    (CORBA.MARSHAL(0, CORBA.COMPLETED_NO), True),
                    (CORBA.MARSHAL(0, CORBA.COMPLETED_MAYBE), False),
                    (CORBA.NO_RESOURCES(0, CORBA.COMPLETED_NO), False),
                    (CORBA.TRANSIENT(0, CORBA.COMPLETED_NO), False)]:
                pusher.proxy = _Raising(exc)
                with pytest.raises(ToolError) as caught:
                    pusher.push(7, None)
                assert isinstance(caught.value, Refused) is refused
                assert caught.value.message.startswith("line 7: ")
            pusher.proxy = None

    def test_only_a_refusal_is_called_one(
            self, server: NotificationServer, channel: tuple[Any, int]) -> None:
        """Review 138: a server stopped under publish (OBJECT_NOT_EXIST) was "the service
        refused the event". "Refused" is kept for the refusals of one event; a proxy
        gone is the channel lost, other failures are failed pushes."""
        with Pusher(server.factory_ref.get_event_channel(channel[1])) as pusher:
            for exc, message in [
                    (CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO),
                     ("line 7: lost the channel: its channel or admin was destroyed, or the "
                      "server stopped (OBJECT_NOT_EXIST)")),
                    (CosEventComm.Disconnected(),
                     ("line 7: the service disconnected publish: its channel or admin was "
                      "destroyed, or the server stopped")),
                    (CORBA.NO_RESOURCES(0, CORBA.COMPLETED_NO),
                     "line 7: the push failed: NO_RESOURCES"),
                    (CORBA.MARSHAL(0, CORBA.COMPLETED_MAYBE),
                     "line 7: the service refused the event: MARSHAL")]:
                pusher.proxy = _Raising(exc)
                with pytest.raises(ToolError) as caught:
                    pusher.push(7, None)
                assert not isinstance(caught.value, Refused)
                assert caught.value.message == message
            pusher.proxy = None

    def test_a_value_omniorbpy_cannot_marshal_is_a_refusal_line(
            self, server: NotificationServer, channel: tuple[Any, int]) -> None:
        """Review 138: omniORBpy 4.3.3's marshaller leaves an OverflowError pending
        (docs/orb.md), so a push raised SystemError, a traceback from publish. It is a
        Refused of that event now, saying why."""
        with Pusher(server.factory_ref.get_event_channel(channel[1])) as pusher:
            failure = SystemError("<built-in function invokeOp> returned a result with "
                                  "an exception set")
            failure.__cause__ = OverflowError("int too big to convert")
            pusher.proxy = _Raising(failure)
            with pytest.raises(Refused) as caught:
                pusher.push(4, None)
            assert caught.value.message == (
                "line 4: omniORBpy could not marshal the event: int too big to convert "
                "(SystemError)")
            pusher.proxy = None

    def test_a_push_that_timed_out_is_not_followed_by_more_calls(self) -> None:
        """Review 106: after a push timed out, leaving the ``with`` block still called
        disconnect and destroy, each waiting another --timeout (three in all before
        publish ended). A TIMEOUT marks the service lost and close() calls nothing;
        a lost connection (TRANSIENT, COMM_FAILURE) fails fast and is still cleaned."""
        for exc, cleaned in [(CORBA.TIMEOUT(0, CORBA.COMPLETED_MAYBE), False),
                             (CORBA.COMM_FAILURE(0, CORBA.COMPLETED_MAYBE), True)]:
            pusher = Pusher.__new__(Pusher)
            pusher.lost = False
            calls: list[str] = []
            pusher.admin = _Recording("admin", calls)
            pusher.proxy = _Raising(exc, calls)
            with pytest.raises(ToolError, match="line 3: lost the service"), pusher:
                pusher.push(3, None)
            assert calls == (["proxy.disconnect", "admin.destroy"] if cleaned else [])


class _Recording:
    """An admin that records the calls made on it."""

    def __init__(self, name: str, calls: list[str]) -> None:
        self.name, self.calls = name, calls

    def destroy(self) -> None:
        self.calls.append(f"{self.name}.destroy")


class _Raising:
    """A proxy whose push raises ``exc``."""

    def __init__(self, exc: Exception, calls: list[str] | None = None) -> None:
        self.exc = exc
        self.calls = [] if calls is None else calls

    def push_structured_event(self, event: Any) -> None:
        raise self.exc

    def disconnect_structured_push_consumer(self) -> None:
        self.calls.append("proxy.disconnect")


class TestReader:
    def test_numbers_count_every_line(self) -> None:
        """Line numbers count blank and comment lines too; CRLF endings are fine."""
        data = b"# head\r\n\r\n" + LINES[0].encode() + b"\r\n{bad\n" + LINES[1].encode()
        items = list(read_events(io.BytesIO(data)))
        assert [n for n, _ in items] == [3, 4, 5]
        assert isinstance(items[1][1], JsonEventError)
        assert to_json(items[2][1])["name"] == "dome-2"  # a last line without newline

    def test_a_byte_order_mark_starts_the_first_line_only(self) -> None:
        """A UTF-8 BOM before the first line is ignored; anywhere else it is an error."""
        data = BOM + LINES[0].encode() + b"\n" + BOM + LINES[1].encode() + b"\n"
        items = list(read_events(io.BytesIO(data)))
        assert to_json(items[0][1])["name"] == "dome-1"
        assert isinstance(items[1][1], JsonEventError)
        assert list(read_events(io.BytesIO(BOM + b"# a comment\n"))) == []

    def test_a_line_of_the_limit_after_a_bom_is_read(self) -> None:
        """The BOM does not count against the first line's size limit."""
        filler = MAX_LINE_BYTES - len('{"body": ""}')
        line = b'{"body": "' + b"x" * filler + b'"}'
        ((number, event),) = list(read_events(io.BytesIO(BOM + line + b"\n")))
        assert number == 1 and len(event.remainder_of_body.value()) == filler

    def test_a_line_over_the_limit_is_skipped_whole(self) -> None:
        """A line longer than 1 MiB is one error; the reader resumes at the next line."""
        huge = b'{"body": "' + b"x" * (MAX_LINE_BYTES + 10) + b'"}\n'
        items = list(read_events(io.BytesIO(huge + LINES[0].encode() + b"\n")))
        assert [n for n, _ in items] == [1, 2]
        assert str(items[0][1]) == f"line longer than {MAX_LINE_BYTES} bytes"
        assert to_json(items[1][1])["name"] == "dome-1"


class FakeTime:
    """A clock that only moves when slept on (or told to)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class TestPacer:
    def test_events_are_spaced_by_the_rate(self) -> None:
        """At 4 events/s with instant pushes, events go at 0, 0.25, 0.5, 0.75 s."""
        fake = FakeTime()
        pacer = Pacer(4.0, fake.clock, fake.sleep)
        times = []
        for _ in range(4):
            pacer.wait()
            times.append(fake.now - 100.0)
        assert times == pytest.approx([0.0, 0.25, 0.5, 0.75])

    def test_time_spent_pushing_counts(self) -> None:
        """A push that took part of the interval shortens the next wait by as much."""
        fake = FakeTime()
        pacer = Pacer(2.0, fake.clock, fake.sleep)
        pacer.wait()
        fake.now += 0.2  # the push
        pacer.wait()
        assert fake.sleeps == pytest.approx([0.25, 0.05])
        assert fake.now == pytest.approx(100.5)

    def test_falling_behind_does_not_burst(self) -> None:
        """After a stall longer than an interval, pacing restarts from now."""
        fake = FakeTime()
        pacer = Pacer(10.0, fake.clock, fake.sleep)
        pacer.wait()
        fake.now += 5.0  # a stall
        pacer.wait()
        assert fake.sleeps == []
        pacer.wait()
        assert sum(fake.sleeps) == pytest.approx(0.1)

    def test_long_waits_are_sliced(self) -> None:
        """A wait of 10 s is slept in slices of at most 0.25 s (signals stay prompt)."""
        fake = FakeTime()
        pacer = Pacer(0.1, fake.clock, fake.sleep)
        pacer.wait()
        pacer.wait()
        assert max(fake.sleeps) <= 0.25 and sum(fake.sleeps) == pytest.approx(10.0)

    def test_no_rate_never_sleeps(self) -> None:
        """Without --rate, wait returns at once."""
        fake = FakeTime()
        pacer = Pacer(None, fake.clock, fake.sleep)
        for _ in range(100):
            pacer.wait()
        assert fake.sleeps == []

    @pytest.mark.parametrize("rate", [0.0, -1.0, float("inf"), float("nan")])
    def test_bad_rates_are_refused(self, rate: float) -> None:
        """The rate must be a positive finite number."""
        with pytest.raises(ValueError, match="positive"):
            Pacer(rate)

    def test_rate_option_is_checked(self, tmp_path: Path) -> None:
        """--rate 0 is a usage error (argparse's exit 2)."""
        done = cli("publish", "127.0.0.1:1", "--rate", "0", write(tmp_path, LINES[0]))
        assert done.returncode == 2 and "positive" in done.stderr
