"""``cosnotify top``: rates from two snapshots, the sort orders, and the live view in tmux."""

from __future__ import annotations

import io
import os
import shlex
import signal
import subprocess
import sys
from typing import Any

import pytest
from omniORB import CORBA
from rich.console import Console

import CosNotification as N
import CosNotifyChannelAdmin as CA
import TimeBase

from cosnotify.server import NotificationServer
from cosnotify.tools.top import Frame, channel_rows, fit, ordered, proxy_rows, rate, render
from tests.channel.conftest import StructuredPushConsumer, structured, structured_supplier
from tests.tools.conftest import Tmux, cli, cli_redirected

# -- hand-made snapshots -----------------------------------------------------------------

def supplier(proxy_id: int, name: str | None = None, *, delivered: int = 0, depth: int = 0,
             failed: int = 0, discarded: int = 0) -> dict[str, Any]:
    """A proxy supplier as the snapshot lists it."""
    return {"id": proxy_id, "name": name, "kind": "structured push supplier",
            "state": "connected", "client": "10.0.0.5:4000", "filters": [],
            "counters": {"queued": delivered + depth + discarded, "delivered": delivered,
                         "discarded": discarded, "expired": 0, "removed": 0,
                         "failed": failed, "depth": depth},
            "queue_limit": 100, "max_events_per_consumer": 0,
            "last_failure": {"time": 0.0, "reason": "TRANSIENT (connect failed)"}
            if failed else None}


def consumer(proxy_id: int, received: int) -> dict[str, Any]:
    """A proxy consumer as the snapshot lists it."""
    return {"id": proxy_id, "name": None, "kind": "structured push consumer",
            "state": "connected", "client": "in-process", "filters": [],
            "counters": {"received": received, "rejected": 0}}


def snapshot(at: float, proxies: list[dict[str, Any]],
             consumers: list[dict[str, Any]] = (),  # type: ignore[assignment]
             events_in: int = 0) -> dict[str, Any]:
    """One channel 0 "alarms" with a consumer admin holding ``proxies`` and a supplier
    admin holding ``consumers``."""
    totals = {"queued": 0, "delivered": 0, "discarded": 0, "expired": 0, "removed": 0,
              "failed": 0, "depth": 0, "received": 0, "rejected": 0}
    for proxy in [*proxies, *consumers]:
        for name, value in proxy["counters"].items():
            totals[name] += value
    admins = [{"id": 0, "name": "ops", "kind": "consumer", "operator": "AND_OP",
               "filters": [], "proxies": proxies},
              {"id": 0, "name": None, "kind": "supplier", "operator": "AND_OP",
               "filters": [], "proxies": list(consumers)}]
    channel = {"id": 0, "name": "alarms", "qos": {}, "admin_properties": {},
               "counters": {"events_in": events_in, "delivered": totals["delivered"],
                            "events_queued_now": 0, "proxy_totals": totals},
               "admins": admins}
    workers = {"total": 4, "busy": 1, "max": 64, "queued": 0,
               "lanes": [{"lane": "failing", "running": 1, "limit": 4, "parked": 2},
                         {"lane": "slow", "running": 0, "limit": 4, "parked": 0}],
               "client_lanes": {"count": 1, "running": 0, "parked": 0, "limit_each": 2}}
    return {"version": 1, "time": at, "channels": [channel], "workers": workers}


def frame(before: dict[str, Any] | None, after: dict[str, Any], sort: str = "depth") -> Frame:
    return Frame(url="127.0.0.1:1", interval=1.0, sort=sort,
                 channels=channel_rows(before, after), proxies=proxy_rows(before, after),
                 workers=after["workers"], time=after["time"])


def screen(renderable: Any, width: int = 160, height: int = 50) -> str:
    console = Console(file=io.StringIO(), width=width, height=height, no_color=True,
                      force_terminal=False)
    console.print(renderable)
    out = console.file
    assert isinstance(out, io.StringIO)
    return out.getvalue()


class TestRates:
    def test_a_rate_is_the_change_over_the_time_between_snapshots(self) -> None:
        """Delivered 100 then 300, two seconds apart: 100 events/s out."""
        before = snapshot(10.0, [supplier(0, delivered=100)], [consumer(0, 100)], events_in=100)
        after = snapshot(12.0, [supplier(0, delivered=300)], [consumer(0, 300)], events_in=300)
        [row] = [r for r in proxy_rows(before, after) if r.depth is not None]
        assert row.events_out == 100.0
        [chan] = channel_rows(before, after)
        assert (chan.events_in, chan.events_out) == (100.0, 100.0)
        [sink] = [r for r in proxy_rows(before, after) if r.depth is None]
        assert (sink.events_in, sink.events_out, sink.failures) == (100.0, None, None)

    def test_a_new_proxy_has_no_rate_yet(self) -> None:
        """A proxy only in the second snapshot has rates None, shown as "-"."""
        before = snapshot(10.0, [supplier(0, delivered=5)])
        after = snapshot(11.0, [supplier(0, delivered=5), supplier(1, "new", delivered=7)])
        rows = {row.key[3]: row for row in proxy_rows(before, after)}
        assert rows["0"].events_out == 0.0
        assert rows["1"].events_out is None and rows["1"].failures is None
        assert '1 "new"' in screen(render(frame(before, after)))

    def test_the_first_snapshot_has_no_rates(self) -> None:
        """With no previous snapshot every rate is None; totals are shown."""
        [chan] = channel_rows(None, snapshot(1.0, [supplier(0, failed=3)]))
        assert chan.events_in is None and chan.failures is None and chan.failed == 3

    def test_a_counter_that_went_down_has_no_rate(self) -> None:
        """A counter lower than before (its proxy was replaced) gives None, not a negative."""
        assert rate(300, 100, 2.0) is None
        assert rate(100, 100, 0.0) is None
        assert rate(None, 100, 2.0) is None
        assert rate(100, 101, 0.5) == 2.0

    def test_discards_and_failures_per_second(self) -> None:
        """The channel's discards and failures per second come from its proxies' totals."""
        before = snapshot(0.0, [supplier(0, failed=1, discarded=2)])
        after = snapshot(4.0, [supplier(0, failed=9, discarded=10)])
        [chan] = channel_rows(before, after)
        assert (chan.discards, chan.failures, chan.failed, chan.discarded) == (2.0, 2.0, 9, 10)


class TestSorting:
    def test_by_depth_puts_the_deepest_queue_first(self) -> None:
        """--sort depth: deepest queue first, proxy consumers (no queue) last."""
        after = snapshot(1.0, [supplier(0, depth=1), supplier(1, depth=50)], [consumer(0, 3)])
        keys = [row.key[3] for row in ordered(proxy_rows(None, after), "depth")]
        assert keys[:2] == ["1", "0"]
        assert ordered(proxy_rows(None, after), "depth")[2].depth is None

    def test_by_failures_puts_the_failing_proxy_first(self) -> None:
        """--sort failures: the proxy failing most per second first, though its queue is
        shallower."""
        before = snapshot(0.0, [supplier(0, depth=50), supplier(1, "pager", depth=1)])
        after = snapshot(1.0, [supplier(0, depth=50), supplier(1, "pager", depth=1, failed=4)])
        rows = proxy_rows(before, after)
        assert [r.key[3] for r in ordered(rows, "failures")] == ["1", "0"]
        assert [r.key[3] for r in ordered(rows, "depth")] == ["0", "1"]

    def test_ties_keep_the_id_order(self) -> None:
        """Equal depths and failure rates: proxy 2 before proxy 10 (numbers, not text)."""
        after = snapshot(1.0, [supplier(2), supplier(10)])
        for by in ("depth", "failures"):
            assert [r.key[3] for r in ordered(proxy_rows(None, after), by)] == ["2", "10"]

    def test_event_service_proxies_are_told_apart(self) -> None:
        """Proxies with no id get es, es2... so each keeps its own rate."""
        before = snapshot(0.0, [supplier(0), supplier(0)])
        after = snapshot(1.0, [supplier(0, delivered=1), supplier(0, delivered=2)])
        for snap in (before, after):
            for proxy in snap["channels"][0]["admins"][0]["proxies"]:
                proxy["id"] = None
        rows = proxy_rows(before, after)
        assert [(r.key[3], r.events_out) for r in rows] == [("es", 1.0), ("es2", 2.0)]


class TestLayout:
    @pytest.mark.parametrize("room,channels,proxies", [
        (20, 2, 5), (20, 2, 100), (20, 100, 3), (20, 100, 100), (3, 10, 10), (1, 5, 5),
        (0, 1, 1)])
    def test_the_rows_and_their_more_lines_fit(self, room: int, channels: int,
                                               proxies: int) -> None:
        """What fit() keeps, plus one "N more" line per cut list, fits the room (when
        there is room for anything)."""
        shown_c, shown_p = fit(room, channels, proxies)
        more = (shown_c < channels) + (shown_p < proxies)
        assert 0 <= shown_c <= channels and 0 <= shown_p <= proxies
        if room >= 3:
            assert shown_c + shown_p + more <= room
            assert shown_c >= 1

    def test_a_short_terminal_shows_n_more(self) -> None:
        """Forty proxies on a 20-line screen: the frame has at most 20 lines and says how
        many proxies it left out."""
        after = snapshot(1.0, [supplier(n, depth=n) for n in range(40)])
        text = screen(render(frame(None, after), 20), height=20)
        lines = text.rstrip("\n").split("\n")
        assert len(lines) <= 20
        shown = sum(1 for line in lines if "structured push supplier" in line)
        assert f"{40 - shown} more proxies" in text

    def test_the_frame_shows_names_workers_and_failures(self) -> None:
        """Names in quotes after ids, the worker lanes, the last failure's reason."""
        before = snapshot(0.0, [supplier(0, "pager")])
        after = snapshot(2.0, [supplier(0, "pager", depth=3, failed=4)])
        text = screen(render(frame(before, after, "failures")), width=200)
        assert '0 "alarms"' in text and '0 "ops"' in text and '0 "pager"' in text
        assert "lanes: failing 1/4 (2 parked), slow 0/4" in text
        assert "sorted by failures" in text
        assert "TRANSIENT (connect failed)" in text
        assert "3/100" in text  # the queue against its limit

    @pytest.mark.parametrize("width", [100, 80, 60, 40])
    def test_a_narrow_window_leaves_columns_out_not_identities(self, width: int) -> None:
        """Review 106: at 80 columns rich narrowed every text column to "…" (which
        proxy a row was could not be read) and at 60 the CHANNEL column vanished. The
        columns that matter least go first; the identities, state and failure rate
        stay, and every line fits."""
        before = snapshot(0.0, [supplier(0, "pager")])
        after = snapshot(2.0, [supplier(0, "pager", depth=3, failed=4)])
        text = screen(render(frame(before, after, "failures"), width=width), width=width)
        lines = text.splitlines()
        assert all(len(line.rstrip()) <= width for line in lines)
        proxy_head = next(line for line in lines if "STATE" in line).split()
        assert proxy_head[:3] == ["CHANNEL", "PROXY", "KIND"] or \
            proxy_head[:4] == ["CHANNEL", "ADMIN", "PROXY", "KIND"]
        row = next(line for line in lines if "connected" in line)
        assert row.startswith('0 "') and '  0 "' in row  # channel 0, proxy 0
        if width >= 60:
            assert "FAIL/s" in proxy_head and row.split()[-1] == "2.0"

    def test_an_empty_service(self) -> None:
        """No channels: the frame says so instead of showing empty tables."""
        empty = {**snapshot(1.0, []), "channels": []}
        text = screen(render(frame(None, empty)))
        assert "no channels" in text and "no proxies" in text

    def test_markup_in_a_name_is_shown_as_it_is(self) -> None:
        """A client-chosen name with rich markup or a newline stays literal, on one line."""
        after = snapshot(1.0, [supplier(0, "[bold]x\ny")])
        text = screen(render(frame(None, after)))
        assert '"[bold]x\\ny"' in text


    def test_a_name_is_shown_as_written_but_for_unprintable_characters(self) -> None:
        """Review 138: names went through json.dumps, so "café" showed as "caf\\u00e9";
        docs/operations.md escapes only unprintable characters (C1 controls, line
        separators, which json.dumps leaves raw)."""
        after = snapshot(1.0, [supplier(0, "café\u0085\u2028日本")])
        text = screen(render(frame(None, after)))
        assert '"café\\u0085\\u2028日本"' in text


# -- against a server --------------------------------------------------------------------

class FailingConsumer(StructuredPushConsumer):
    """A push consumer whose every push raises TRANSIENT: its proxy counts failures."""

    def push_structured_event(self, event: Any) -> None:
        self.record(event)
        raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)


def failing_setup(server: NotificationServer) -> tuple[int, FailingConsumer]:
    """Channel "alarms", admin "ops", push proxy "pager" whose consumer fails every push
    (retried for long), and two events pushed; returns once a failure is counted."""
    channel, channel_id = server.factory.create_named_channel([], [], "alarms")
    admin, _ = channel.named_new_for_consumers(CA.AND_OP, "ops")
    proxy, _ = admin.obtain_named_notification_push_supplier(CA.STRUCTURED_EVENT, "pager")
    proxy.set_qos([N.Property("Retries", CORBA.Any(CORBA.TC_long, 1000)),
                   N.Property("RetryInterval", CORBA.Any(TimeBase._tc_TimeT, 2_000_000))])
    sink = FailingConsumer()
    proxy.connect_structured_push_consumer(sink)
    source = structured_supplier(channel)
    for n in range(2):
        source.push_structured_event(structured(name=f"e{n}"))
    assert sink.wait_for(1)
    return channel_id, sink


class TestCommand:
    def test_piped_top_prints_one_plain_frame_per_refresh(self, server: NotificationServer,
                                                          url: str) -> None:
        """--iterations 2 into a pipe: two frames of plain text with the channel's name."""
        failing_setup(server)
        done = cli("top", url, "--iterations", "2", "--interval", "0.2",
                   env={"COLUMNS": ""})  # a set COLUMNS would narrow the frames
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        frames = done.stdout.count("cosnotify top ")
        assert frames == 2, done.stdout
        assert '"alarms"' in done.stdout and '"pager"' in done.stdout
        assert "\x1b[" not in done.stdout  # no escape sequences in a pipe

    @pytest.mark.parametrize("width", [80, 60])
    def test_a_piped_frame_fits_columns_leaving_columns_out(
            self, server: NotificationServer, url: str, width: int) -> None:
        """Review 138: piped with COLUMNS set, top did not pass the width to the tables,
        so rich narrowed every text column to "…" and dropped CHANNEL at 60. The plain
        frame now leaves out the columns that matter least, as the live view does."""
        failing_setup(server)
        done = cli("top", url, "--iterations", "1", env={"COLUMNS": str(width)})
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert all(len(line) <= width for line in lines), done.stdout
        channel_head = next(line for line in lines if "PROXIES" in line).split()
        assert channel_head[0] == "CHANNEL"
        proxy_head = next(line for line in lines if "STATE" in line).split()
        assert proxy_head[:3] == ["CHANNEL", "PROXY", "KIND"] or \
            proxy_head[:4] == ["CHANNEL", "ADMIN", "PROXY", "KIND"], done.stdout
        row = next(line for line in lines if "connected" in line and "2/" in line).split()
        assert row[0] == "0" and row[1].startswith('"al')  # channel 0 "alarms", maybe cut
        assert any(word.startswith("structur") for word in row), done.stdout  # the kind

    @pytest.mark.parametrize(("redirect", "reason"), [
        (">/dev/full", "No space left on device"), (">&-", "standard output is closed")])
    def test_output_that_cannot_be_written_is_one_line(
            self, server: NotificationServer, url: str, redirect: str, reason: str) -> None:
        """Review 138: stdout on a full disk gave an OSError traceback, a closed stdout
        an AttributeError one. Now one line and exit 1, as tail does."""
        failing_setup(server)
        done = cli_redirected(redirect, "top", url, "--iterations", "1")
        assert done.returncode == 1
        assert done.stderr.splitlines() == [f"cosnotify top: cannot write the output: {reason}"]

    def test_an_unreachable_url_is_one_line_and_status_1(self) -> None:
        """Nobody at the address: one stderr line, exit 1, no traceback."""
        done = cli("top", "127.0.0.1:1", "--timeout", "2", "--iterations", "1")
        assert done.returncode == 1
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert done.stderr.startswith("cosnotify top: ")

    def test_a_wrong_channel_id_is_status_2(self, server: NotificationServer,
                                            url: str) -> None:
        """--channel naming no channel: one stderr line, exit 2."""
        done = cli("top", url, "--channel", "4242", "--iterations", "1")
        assert done.returncode == 2
        assert done.stderr.splitlines() == [done.stderr.strip()]
        assert "no channel 4242" in done.stderr

    def test_a_bad_interval_is_a_usage_error(self) -> None:
        """--interval 0: argparse's usage error, exit 2."""
        done = cli("top", "127.0.0.1:1", "--interval", "0")
        assert done.returncode == 2 and "interval" in done.stderr


# -- in tmux -----------------------------------------------------------------------------

def _failing_row(screen_text: str) -> bool:
    """The "pager" row is there with a FAILED count above 0 and its TRANSIENT reason."""
    for line in screen_text.splitlines():
        if '"pager"' in line and "TRANSIENT" in line:
            numbers = [int(word) for word in line.split() if word.isdigit()]
            return any(n > 0 for n in numbers[2:])
    return False


class TestInTmux:
    def test_the_live_view_shows_names_and_failures_and_ends_on_ctrl_c(
            self, server: NotificationServer, url: str, tmux: Tmux) -> None:
        """top in a 160x50 tmux pane shows "alarms", "pager" with failures, switches to
        --sort failures on s, and Ctrl-C ends it with status 0."""
        failing_setup(server)
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TMUX")}
        top = shlex.join([sys.executable, "-m", "cosnotify", "top", url, "--interval", "0.5"])
        tmux.start(f"trap : INT; {top}; echo EXIT=$?; sleep 60", env)
        shown = tmux.wait_for('"alarms"', lambda s: '0 "alarms"' in s or '"alarms"' in s)
        shown = tmux.wait_for('"pager" with failures', _failing_row)
        assert "sorted by depth" in shown and "workers " in shown and "q quit" in shown
        tmux("send-keys", "-t", tmux.session, "s")
        tmux.wait_for("sorted by failures", lambda s: "sorted by failures" in s)
        tmux("send-keys", "-t", tmux.session, "C-c")
        shown = tmux.wait_for("the exit status", lambda s: "EXIT=" in s)
        assert "EXIT=0" in shown, shown
        assert "Traceback" not in shown

    def test_q_quits(self, server: NotificationServer, url: str, tmux: Tmux) -> None:
        """The q key ends top with status 0 and gives the terminal back."""
        server.factory.create_named_channel([], [], "quiet")
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TMUX")}
        top = shlex.join([sys.executable, "-m", "cosnotify", "top", url, "--interval", "0.5"])
        tmux.start(f"{top}; echo EXIT=$?; stty -a | grep -q -- -icanon && echo TTY=raw "
                   f"|| echo TTY=cooked; sleep 60", env)
        tmux.wait_for('"quiet"', lambda s: '"quiet"' in s)
        tmux("send-keys", "-t", tmux.session, "q")
        shown = tmux.wait_for("the exit status", lambda s: "EXIT=" in s)
        assert "EXIT=0" in shown, shown
        shown = tmux.wait_for("the terminal's mode", lambda s: "TTY=" in s)
        assert "TTY=cooked" in shown, shown

    def test_sigterm_gives_the_terminal_back(self, server: NotificationServer, url: str,
                                             tmux: Tmux) -> None:
        """Review 106: SIGTERM ended top at once, leaving the pane on the alternate
        screen with the cursor hidden (exit 143). It ends top as q does: status 0, the
        screen and the cursor restored."""
        server.factory.create_named_channel([], [], "quiet")
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TMUX")}
        top = shlex.join([sys.executable, "-m", "cosnotify", "top", url, "--interval", "0.5"])
        tmux.start(f"{top}; echo EXIT=$?; sleep 60", env)
        tmux.wait_for('"quiet"', lambda s: '"quiet"' in s)
        shell = tmux("list-panes", "-t", tmux.session, "-F", "#{pane_pid}").stdout.split()[0]
        children = subprocess.run(["pgrep", "-P", shell], capture_output=True, text=True,
                                  check=False).stdout.split()
        assert len(children) == 1, children
        os.kill(int(children[0]), signal.SIGTERM)
        shown = tmux.wait_for("the exit status", lambda s: "EXIT=" in s)
        assert "EXIT=0" in shown, shown
        modes = tmux("display-message", "-p", "-t", tmux.session,
                     "#{alternate_on} #{cursor_flag}").stdout.split()
        assert modes == ["0", "1"], modes


def test_the_latest_departure_is_one_header_line() -> None:
    """A consumer the channel gave up on leaves the proxy table; the header keeps the
    latest departure over all channels, with its reason."""
    from cosnotify.tools.top import last_departure

    after = snapshot(2.0, [])
    assert last_departure(after) is None
    gone = {**supplier(3, "pager", delivered=5), "state": "destroyed", "admin": 1,
            "admin_kind": "consumer", "client": "127.0.0.1:4000", "time": 1.5,
            "reason": "gave up after 4 calls failed: TRANSIENT"}
    older = {**gone, "id": 2, "name": None, "time": 1.0, "reason": "disconnected by its client"}
    after["channels"][0]["departed"] = [older, gone]
    line = last_departure(after)
    assert line is not None
    assert 'channel 0 consumer admin 1 proxy 3 "pager"' in line
    assert line.endswith("client 127.0.0.1:4000): gave up after 4 calls failed: TRANSIENT")
    shown = screen(render(Frame(url="u", interval=1.0, sort="depth", channels=[], proxies=[],
                                workers=None, time=2.0, gone=line)))
    assert "gave up after 4 calls failed" in shown
