"""``cosnotify top URL``: a live view of the service's rates, queues and failures.

Strategy: each refresh reads one snapshot with :func:`cosnotify.tools.ls.fetch`
(the same ``CosNotifyMonitor::Monitor::snapshot`` call as ``cosnotify ls``).
The counters are totals, so a rate is the change of a counter between two
consecutive snapshots divided by the change of their ``time``: pure functions
(:func:`channel_rows`, :func:`proxy_rows`, :func:`ordered`, :func:`fit`) turn
two snapshots into sorted rows and decide how many fit; they are tested
without a terminal. :func:`render` makes a rich renderable of them.

On a terminal the view is a ``rich.live.Live`` on the alternate screen,
redrawn after every snapshot; keys ``q`` (quit) and ``s`` (sort by depth /
by failures) are read by a daemon thread from stdin in cbreak mode, and
Ctrl-C ends it with status 0. Elsewhere (a pipe, a file, ``TERM=dumb``)
each refresh prints one plain frame: a header line starting with
``cosnotify top``, then the tables with no box and nothing cut (unless
COLUMNS says a width: then they fit it as on a terminal), and a blank line.
A service that never answers is an error (one stderr line, exit 1; a wrong
``--channel`` exits 2); one that stops answering later is shown in the
header and asked again at every interval. docs/top.md documents the columns.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Self

import attrs
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.text import Text

from cosnotify.tools import connect, ls
from cosnotify.tools.toptables import cell, channel_table, proxy_table

__all__ = ["SORTS", "ChannelRow", "Frame", "ProxyRow", "add_parser", "channel_rows", "fit",
           "last_departure", "ordered", "proxy_rows", "rate", "render", "run"]

#: The orders ``--sort`` takes: deepest queue first, or highest failure rate first.
SORTS = ("depth", "failures")
#: Width of plain frames when COLUMNS is not set: in effect none, so nothing is cut.
PLAIN_WIDTH = 1000
#: Lines of a frame besides the rows: the blank line and the column heads of both tables.
CHROME = 4

Key = tuple[int, str, str, str]


@attrs.frozen
class ChannelRow:
    """One channel's line: totals now, rates since the previous snapshot (None: not yet)."""

    key: int
    label: str
    proxies: int
    events_in: float | None
    events_out: float | None
    depth: int
    discarded: int
    discards: float | None
    failed: int
    failures: float | None


@attrs.frozen
class ProxyRow:
    """One proxy's line. ``depth`` and the failure fields are None for a proxy consumer,
    which has no queue and makes no calls."""

    key: Key
    channel: str
    admin: str
    proxy: str
    kind: str
    client: str
    state: str
    events_in: float | None
    events_out: float | None
    depth: int | None
    limit: int
    discarded: int | None
    failed: int | None
    failures: float | None
    last_failure: str


@attrs.frozen
class Frame:
    """What one screen shows: the rows and the header's facts."""

    url: str
    interval: float
    sort: str
    channels: list[ChannelRow]
    proxies: list[ProxyRow]
    workers: dict[str, Any] | None
    time: float | None
    error: str | None = None
    keys: bool = False
    #: The latest departure over all channels (:func:`last_departure`), or None.
    gone: str | None = None
    #: A line per front end of the seed protocols (:func:`front_end_lines`).
    front_ends: list[str] = attrs.Factory(list)


# -- rates and rows (pure) ---------------------------------------------------------------

def rate(before: int | None, after: int, seconds: float) -> float | None:
    """``(after - before) / seconds``; None with no earlier value, no time passed, or a
    counter that went down (its owner was replaced)."""
    if before is None or seconds <= 0 or after < before:
        return None
    return (after - before) / seconds


def _seconds(previous: dict[str, Any] | None, current: dict[str, Any]) -> float:
    return 0.0 if previous is None else float(current["time"]) - float(previous["time"])


def front_end_lines(previous: dict[str, Any] | None, current: dict[str, Any]) -> list[str]:
    """A line per front end of ``current`` (docs/protocols.md): its connections, and
    its frames in and out per second measured against ``previous``."""
    seconds = _seconds(previous, current)
    before = {(f["protocol"], f["port"]): f for f in (previous or {}).get("front_ends", [])}
    lines = []
    for front_end in current.get("front_ends", []):
        old = before.get((front_end["protocol"], front_end["port"]), {})
        rates = [rate(old.get(name), front_end[name], seconds)
                 for name in ("frames_in", "frames_out")]
        shown = " ".join("-" if r is None else f"{r:,.0f}/s" for r in rates)
        lines.append(f"{front_end['protocol']} {front_end['host']}:{front_end['port']}: "
                     f"{front_end['open']} connections, frames in/out {shown}, "
                     f"{front_end['refused']} refused, {front_end['closed_bad']} closed bad, "
                     f"{front_end['dropped_slow']} dropped slow")
    return lines


def channel_rows(previous: dict[str, Any] | None, current: dict[str, Any]) -> list[ChannelRow]:
    """A row per channel of ``current``, its rates measured against ``previous``."""
    seconds = _seconds(previous, current)
    before = {c["id"]: c["counters"] for c in (previous or {}).get("channels", [])}
    rows = []
    for channel in current["channels"]:
        counters, totals = channel["counters"], channel["counters"]["proxy_totals"]
        old = before.get(channel["id"])
        old_totals = None if old is None else old["proxy_totals"]
        discarded = totals["discarded"] + totals["removed"]
        rows.append(ChannelRow(
            key=channel["id"], label=f"{channel['id']}{_name(channel)}",
            proxies=sum(len(admin["proxies"]) for admin in channel["admins"]),
            events_in=rate(_get(old, "events_in"), counters["events_in"], seconds),
            events_out=rate(_get(old, "delivered"), counters["delivered"], seconds),
            depth=totals["depth"], discarded=discarded,
            discards=rate(None if old_totals is None else
                          old_totals["discarded"] + old_totals["removed"], discarded, seconds),
            failed=totals["failed"],
            failures=rate(_get(old_totals, "failed"), totals["failed"], seconds)))
    return rows


def last_departure(snapshot: dict[str, Any]) -> str | None:
    """One line on the proxy that went away last (``departed`` in the snapshot): the
    one a dead consumer leaves once the channel gives up on it; None if none did."""
    latest: tuple[float, int, dict[str, Any]] | None = None
    for channel in snapshot["channels"]:
        for gone in channel.get("departed", ()):
            if latest is None or gone["time"] >= latest[0]:
                latest = (gone["time"], channel["id"], gone)
    if latest is None:
        return None
    when, channel_id, gone = latest
    proxy = "" if gone["id"] is None else f" {gone['id']}"
    admin = "" if gone["admin"] is None else f" {gone['admin']}"
    return (f"last gone {_clock(when)}: channel {channel_id} {gone['admin_kind']} admin{admin} "
            f"proxy{proxy}{_name(gone)} ({gone['kind']}, client {gone['client']}): "
            f"{gone['reason']}")


def _get(counters: dict[str, Any] | None, name: str) -> int | None:
    return None if counters is None else counters.get(name)


def proxy_rows(previous: dict[str, Any] | None, current: dict[str, Any]) -> list[ProxyRow]:
    """A row per proxy of ``current``, its rates measured against ``previous``; a proxy
    not in ``previous`` has no rates yet."""
    seconds = _seconds(previous, current)
    before = {key: proxy["counters"] for key, *_, proxy in _proxies(previous or {})}
    rows = []
    for key, channel, admin, proxy in _proxies(current):
        counters, old = proxy["counters"], before.get(key)
        change = {name: rate(_get(old, name), value, seconds)
                  for name, value in counters.items()}
        supplier = "depth" in counters
        last = proxy.get("last_failure")
        rows.append(ProxyRow(
            key=key, channel=f"{channel['id']}{_name(channel)}",
            admin=f"{key[2]}{_name(admin)}", proxy=f"{key[3]}{_name(proxy)}",
            kind=proxy["kind"], client=_clean(proxy["client"]), state=proxy["state"],
            events_in=change["queued"] if supplier else change.get("received"),
            events_out=change["delivered"] if supplier else None,
            depth=counters["depth"] if supplier else None,
            limit=int(proxy.get("queue_limit") or 0),
            discarded=counters["discarded"] + counters["removed"] if supplier else None,
            failed=counters["failed"] if supplier else None,
            failures=change["failed"] if supplier else None,
            last_failure="" if last is None else
            f"{_clock(last['time'])} {_clean(last['reason'])}"))
    return rows


def _proxies(snapshot: dict[str, Any]) -> Iterator[tuple[Key, dict[str, Any], dict[str, Any],
                                                         dict[str, Any]]]:
    """Each proxy with a key that names it across snapshots: channel id, admin kind, admin
    and proxy id. Event Service admins and proxies have no id: ``es``, then ``es2``... in
    the order the snapshot lists them."""
    for channel in snapshot.get("channels", []):
        unnamed: dict[str, int] = {}
        for admin in channel["admins"]:
            admin_label = _label(admin["id"], unnamed, admin["kind"])
            anonymous: dict[str, int] = {}
            for proxy in admin["proxies"]:
                key = (channel["id"], admin["kind"], admin_label,
                       _label(proxy["id"], anonymous, ""))
                yield key, channel, admin, proxy


def _label(identifier: int | None, seen: dict[str, int], kind: str) -> str:
    if identifier is not None:
        return str(identifier)
    seen[kind] = count = seen.get(kind, 0) + 1
    return "es" if count == 1 else f"es{count}"


def ordered(rows: list[Any], by: str) -> list[Any]:
    """``rows`` (channel or proxy rows) deepest queue first (``depth``), or highest
    failure rate first and then deepest (``failures``). The sort is stable: ties keep
    the snapshot's order, by id."""
    def depth(row: Any) -> int:
        return -1 if row.depth is None else int(row.depth)

    def failures(row: Any) -> float:
        return -1.0 if row.failures is None else float(row.failures)

    if by == "failures":
        return sorted(rows, key=lambda row: (-failures(row), -depth(row)))
    return sorted(rows, key=lambda row: (-depth(row), -failures(row)))


def fit(room: int, channels: int, proxies: int) -> tuple[int, int]:
    """How many channel and proxy rows to show in ``room`` lines of rows, keeping a line
    for "N more" under each list that is cut. Channels get at most a third of the room
    when both do not fit; proxies get the rest (channels what fewer proxies leave)."""
    if channels + proxies <= room:
        return channels, proxies
    share = max(1, room // 3)
    if channels <= share:
        return channels, max(0, room - channels - 1)
    if proxies <= room - share - 1:
        return max(0, room - proxies - 1), proxies
    return max(0, min(share, room - 2)), max(0, room - share - 2)


# -- rendering ---------------------------------------------------------------------------

def render(frame: Frame, height: int | None = None, plain: bool = False,
           width: int | None = None) -> RenderableType:
    """The screen for ``frame``; at most ``height`` lines (None: every row); in
    ``width`` columns (None: any), the columns that matter least left out first."""
    header = _header(frame)
    channels, proxies = ordered(frame.channels, frame.sort), ordered(frame.proxies, frame.sort)
    shown_c, shown_p = len(channels), len(proxies)
    if height is not None:
        shown_c, shown_p = fit(height - len(header) - CHROME, shown_c, shown_p)
    parts: list[RenderableType] = [*header, Text("")]
    if frame.channels:
        parts.append(channel_table(channels[:shown_c], plain, width))
    else:
        parts.append(Text("no channels"))
    if shown_c < len(channels):
        parts.append(Text(f"{len(channels) - shown_c} more channels", style="dim"))
    parts.append(Text(""))
    if frame.proxies:
        parts.append(proxy_table(proxies[:shown_p], plain, width))
    else:
        parts.append(Text("no proxies"))
    if shown_p < len(proxies):
        parts.append(Text(f"{len(proxies) - shown_p} more proxies", style="dim"))
    return Group(*parts)


def _header(frame: Frame) -> list[Text]:
    when = "-" if frame.time is None else _clock(frame.time)
    keys = "  (q quit, s sort)" if frame.keys else ""
    lines = [cell(f"cosnotify top {frame.url}  {when}  every {frame.interval:g}s  "
                   f"sorted by {frame.sort}{keys}", "bold")]
    if frame.workers is not None:
        lines.append(cell(_workers(frame.workers)))
    lines.extend(cell(line) for line in frame.front_ends)
    if frame.gone is not None:
        lines.append(cell(_clean(frame.gone), "yellow"))
    if frame.error is not None:
        lines.append(cell(f"! {frame.error}; asking again every {frame.interval:g}s",
                           "bold red"))
    return lines


def _workers(workers: dict[str, Any]) -> str:
    lanes = ", ".join(f"{lane['lane']} {lane['running']}/{lane['limit']}"
                      f"{_parked(lane['parked'])}" for lane in workers["lanes"])
    clients = workers["client_lanes"]
    return (f"workers {workers['busy']}/{workers['total']} busy (max {workers['max']}), "
            f"{workers['queued']} waiting; lanes: {lanes}; {clients['count']} client lanes "
            f"running {clients['running']}{_parked(clients['parked'])}")


def _name(obj: dict[str, Any]) -> str:
    name = obj.get("name")
    # Quoted JSON-style; only unprintable characters escaped (docs/operations.md).
    return "" if name is None else f" {connect.printable(json.dumps(name, ensure_ascii=False))}"


def _clean(text: str) -> str:
    """``text`` on one line, control characters escaped (it comes from the network)."""
    return connect.printable(str(text))


def _parked(count: int) -> str:
    return f" ({count} parked)" if count else ""


def _clock(seconds: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(seconds))


# -- the command -------------------------------------------------------------------------

def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "top", help="a live view of rates, queue depths, discards and failures",
        description="Show the service's channels and proxies with events/s in and out, "
                    "queue depth, discards and failures, refreshed every --interval "
                    "seconds (docs/top.md). Keys: q quits, s switches the sort order.")
    parser.add_argument("url", metavar="URL",
                        help="the factory: HOST:PORT, corbaname:/corbaloc:/IOR: URL, or an "
                             "IOR file")
    parser.add_argument("--sort", choices=SORTS, default="depth",
                        help="deepest queue first (default), or highest failure rate first")
    parser.add_argument("--interval", type=connect.timeout_arg, default=1.0, metavar="SECONDS",
                        help="seconds between refreshes (default 1)")
    parser.add_argument("--channel", type=connect.channel_id_arg, action="append", metavar="ID",
                        help="only this channel (repeatable)")
    parser.add_argument("--timeout", type=connect.timeout_arg, default=10.0, metavar="SECONDS",
                        help="give up on an unanswering service after this long (default 10)")
    parser.add_argument("--iterations", type=connect.count_arg, default=None, metavar="N",
                        help="stop after N refreshes (default: until q or Ctrl-C)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    def body() -> int:
        try:
            # SIGTERM ends it as q and Ctrl-C do: the screen and the cursor come back
            # (Live's and _Keys' exits run) before the process ends.
            with connect.sigterm_interrupts():
                return _Top(args).run()
        except KeyboardInterrupt:
            return 0
        except BrokenPipeError:
            # The reader went away (``top | head``): keep the shutdown flush quiet.
            connect.drop_stdout()
            raise

    return connect.run_tool("top", body)


class _Top:
    """The refresh loop: a snapshot, rows, a screen, a wait; keys between refreshes."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.sort: str = args.sort
        self.wake = threading.Event()
        self.keys = _Keys(self.wake)
        self.previous: dict[str, Any] | None = None
        self.frame: Frame | None = None
        self.monitor: Any = None

    def run(self) -> int:
        self._take(self._snapshot())  # an error here ends the command (exit 1 or 2)
        console = Console(highlight=False)
        if not console.is_terminal or console.is_dumb_terminal:
            return self._plain()
        with self.keys, Live(console=console, screen=True, auto_refresh=False,
                             redirect_stdout=False, redirect_stderr=False) as live:

            def show(frame: Frame) -> None:
                live.update(render(frame, console.height, width=console.width),
                            refresh=True)

            assert self.frame is not None
            self.frame = attrs.evolve(self.frame, keys=self.keys.active)
            self._loop(show)
        return 0

    def _plain(self) -> int:
        fitted: int | None = None  # no COLUMNS: nothing is left out or cut
        columns = os.environ.get("COLUMNS", "")
        if columns.isascii() and columns.isdigit() and len(columns) <= 5:
            fitted = max(40, int(columns))
        console = Console(highlight=False, width=fitted or PLAIN_WIDTH, force_terminal=False,
                          no_color=True)

        def show(frame: Frame) -> None:
            with console.capture() as captured:
                console.print(render(frame, plain=True, width=fitted))
            lines = captured.get().splitlines()
            sys.stdout.write("".join(line.rstrip() + "\n" for line in lines) + "\n")
            sys.stdout.flush()

        self._loop(show)
        return 0

    def _loop(self, show: Callable[[Frame], None]) -> None:
        """Show the first frame, then refresh every interval until done or ``q``."""
        interval, limit = self.args.interval, self.args.iterations
        assert self.frame is not None
        show(self.frame)
        done = 1
        next_at = time.monotonic() + interval
        while limit is None or done < limit:
            self.wake.wait(max(0.0, next_at - time.monotonic()))
            self.wake.clear()
            for key in self.keys.take():
                if key in ("q", "Q"):
                    return
                if key in ("s", "S"):
                    sort = SORTS[(SORTS.index(self.frame.sort) + 1) % len(SORTS)]
                    self.frame = attrs.evolve(self.frame, sort=sort)
                    show(self.frame)
            if time.monotonic() < next_at:
                continue
            try:
                self._take(self._snapshot())
            except connect.ToolError as exc:
                self.frame = attrs.evolve(self.frame,
                                          error=f"{_clock(time.time())} {exc.message}")
            done += 1
            next_at = time.monotonic() + interval
            show(self.frame)

    def _snapshot(self) -> dict[str, Any]:
        from omniORB import CORBA

        try:
            if self.monitor is None:  # resolved once, again only after a failure
                self.monitor = ls.open_monitor(self.args.url, self.args.timeout)
            return ls.read(self.monitor, self.args.url, self.args.channel or [])
        except CORBA.SystemException as exc:
            self.monitor = None
            raise connect.ToolError(f"lost {self.args.url}: {connect.describe(exc)}") from None
        except connect.ToolError:
            self.monitor = None
            raise

    def _take(self, snapshot: dict[str, Any]) -> None:
        """The frame of ``snapshot``, its rates measured from the one before."""
        self.frame = Frame(url=self.args.url, interval=self.args.interval,
                           sort=self.sort if self.frame is None else self.frame.sort,
                           channels=channel_rows(self.previous, snapshot),
                           proxies=proxy_rows(self.previous, snapshot),
                           workers=snapshot["workers"], time=snapshot["time"],
                           keys=self.keys.active, gone=last_departure(snapshot),
                           front_ends=front_end_lines(self.previous, snapshot))
        self.previous = snapshot


class _Keys:
    """Key presses on a terminal's stdin, read one at a time by a daemon thread while
    the terminal is in cbreak mode (Ctrl-C still interrupts); each press sets ``wake``.
    Inactive when stdin is not a terminal or termios is missing."""

    def __init__(self, wake: threading.Event) -> None:
        self.wake = wake
        self.active = False
        self._pressed: list[str] = []
        self._lock = threading.Lock()
        self._saved: Any = None

    def __enter__(self) -> Self:
        try:
            import termios
            import tty
        except ImportError:
            return self
        if sys.stdin is None or not sys.stdin.isatty():  # None: closed
            return self
        fd = sys.stdin.fileno()
        try:
            self._saved = termios.tcgetattr(fd)
            tty.setcbreak(fd)
        except termios.error:
            return self
        self.active = True
        threading.Thread(target=self._read, args=(fd,), name="top-keys", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._saved is not None:
            import termios

            termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, self._saved)
            self._saved = None

    def _read(self, fd: int) -> None:
        while True:
            try:
                data = os.read(fd, 1)
            except OSError:
                return
            if not data:
                return
            with self._lock:
                self._pressed.append(data.decode("latin-1"))
            self.wake.set()

    def take(self) -> list[str]:
        with self._lock:
            pressed, self._pressed = self._pressed, []
        return pressed
