"""``cosnotify publish URL [--channel ID] FILE|-``: push structured events read as JSON lines.

Strategy: reading is separate from pushing. :func:`read_events` turns a
binary stream into ``(line number, event or error)`` pairs with the size
limit applied while reading (``readline`` with a bound, so a huge line is
never held whole), and every line is converted completely
(``jsonevents.loads``) before anything is pushed, so an invalid line
never becomes half an event. With ``--strict`` and a FILE, the whole file
is read once to validate it before the service is even contacted; standard
input cannot be read twice, so there the events before a bad line have
been pushed. Pushing uses a :class:`Pusher`: a StructuredProxyPushConsumer
on a supplier admin of its own, so that the admin's ``destroy()`` at the end
(also after Ctrl-C, SIGTERM or an error) leaves nothing behind -- the
channel's default supplier admin cannot be destroyed, and its proxies would
share its filters. A push the service refuses for that one event, before
doing anything with it (``COMPLETED_NO``: ``BAD_QOS``, ``BAD_PARAM``,
``DATA_CONVERSION``, ``MARSHAL``), or one omniORBpy fails to marshal
(``SystemError``, docs/orb.md), is a :class:`Refused`: by default the
line is reported and skipped like an invalid one, with ``--strict`` it
stops publish. ``--rate`` is paced by :class:`Pacer`, whose clock and
sleep are injected (the tests use a fake clock). A rich progress bar is
drawn on stderr only when stderr is a terminal; invalid lines and the
summary are printed above it. docs/json-events.md documents the schema,
the options and the exit statuses.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from types import TracebackType
from typing import IO, Any, Self

from omniORB import CORBA

import CosEventComm
import CosNotifyChannelAdmin as CA

from cosnotify.tools import connect
from cosnotify.tools.jsonevents import MAX_LINE_BYTES, JsonEventError, loads

__all__ = ["Pacer", "Pusher", "Refused", "add_parser", "read_events", "run"]

#: What a UTF-8 file may start with (stripped from its first line).
BOM = b"\xef\xbb\xbf"


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "publish", help="push structured events read as JSON lines",
        description="Push StructuredEvents read as JSON lines from FILE or standard input "
                    "(-) into a channel (schema: docs/json-events.md). Blank lines and lines "
                    "starting with # are skipped.")
    parser.add_argument("url", metavar="URL",
                        help="the factory: HOST:PORT, corbaname:/corbaloc:/IOR: URL, or an "
                             "IOR file")
    parser.add_argument("file", metavar="FILE|-", help="JSON lines to publish; - for stdin")
    parser.add_argument("--channel", type=connect.channel_id_arg, metavar="ID",
                        help="the channel (default: the lowest-numbered one)")
    parser.add_argument("--rate", type=_rate, metavar="R",
                        help="push at most R events per second (default: as fast as possible)")
    parser.add_argument("--count", type=connect.count_arg, metavar="N", help="stop after N events pushed")
    parser.add_argument("--repeat", action="store_true",
                        help="read FILE again from the top at its end (until --count, or "
                             "Ctrl-C)")
    parser.add_argument("--strict", action="store_true",
                        help="an invalid line stops publish (a FILE is checked whole before "
                             "the first push)")
    parser.add_argument("--timeout", type=connect.timeout_arg, default=10.0, metavar="SECONDS",
                        help="give up on an unanswering service after this long (default 10)")
    parser.set_defaults(run=run)


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected events per second, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"the rate must be a positive number, not {text!r}")
    return value


# -- reading ----------------------------------------------------------------------------------

def read_events(stream: IO[bytes]) -> Iterator[tuple[int, Any]]:
    """``(line number, StructuredEvent or JsonEventError)`` for each line that is not
    blank or a ``#`` comment; a line over the size limit is an error, read past in chunks.
    A UTF-8 byte order mark at the start of the stream is ignored. A failed read is a
    ToolError (not an OSError, which :func:`connect.run_tool` takes for the output's)."""
    number = 0
    bound = MAX_LINE_BYTES + 2  # room for "\r\n"
    while True:
        try:
            raw = stream.readline(bound if number else bound + len(BOM))
        except OSError as exc:  # a directory as stdin, a disk that failed
            raise connect.ToolError(f"cannot read line {number + 1}: "
                                    f"{exc.strerror or exc}") from None
        if not raw:
            return
        number += 1
        if number == 1 and raw.startswith(BOM):
            raw = raw[len(BOM):]
        if not raw.endswith(b"\n") and len(raw) >= bound:
            while (rest := stream.readline(1 << 16)) and not rest.endswith(b"\n"):
                pass
            yield number, JsonEventError("", f"line longer than {MAX_LINE_BYTES} bytes")
            continue
        line = raw.strip()
        if not line or line.startswith(b"#"):
            continue
        try:
            yield number, loads(raw.rstrip(b"\r\n"))
        except JsonEventError as exc:
            yield number, exc


# -- pacing -----------------------------------------------------------------------------------

class Pacer:
    """Spaces calls of :meth:`wait` ``1/rate`` seconds apart (no limit when rate is None).

    The schedule is absolute, so time spent pushing counts; falling behind by
    more than one interval re-anchors it instead of bursting to catch up.
    Sleeps are cut into slices of at most ``slice`` seconds, so a signal
    handled by the main thread is never held up for long.
    """

    def __init__(self, rate: float | None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, slice: float = 0.25) -> None:
        if rate is not None and not (math.isfinite(rate) and rate > 0):
            raise ValueError(f"the rate must be a positive number, not {rate!r}")
        self.interval = 0.0 if rate is None else 1.0 / rate
        self.clock = clock
        self.sleep = sleep
        self.slice = slice
        self._due: float | None = None

    def wait(self) -> None:
        """Return when the next event is due."""
        if not self.interval:
            return
        now = self.clock()
        if self._due is None or now - self._due > self.interval:
            self._due = now
        while (remaining := self._due - now) > 0:
            self.sleep(min(remaining, self.slice))
            now = self.clock()
        self._due += self.interval


# -- pushing ----------------------------------------------------------------------------------

class Refused(connect.ToolError):
    """The service refused one event and did nothing with it (``COMPLETED_NO``), or
    omniORBpy could not marshal it (``SystemError``); the next may be fine. ``exc`` is
    what was raised."""

    def __init__(self, message: str, exc: Exception) -> None:
        super().__init__(message)
        self.exc = exc


#: Why a proxy is gone (Disconnected, OBJECT_NOT_EXIST): publish cannot tell which.
_GONE = "its channel or admin was destroyed, or the server stopped"
#: Refusals of the event itself: its QoS header, a value the service cannot take.
_REFUSALS = (CORBA.BAD_QOS, CORBA.BAD_PARAM, CORBA.DATA_CONVERSION, CORBA.MARSHAL)


class Pusher:
    """A StructuredProxyPushConsumer on a supplier admin of its own; :meth:`close`
    (or leaving the ``with`` block) disconnects it and destroys the admin."""

    def __init__(self, channel: Any) -> None:
        self.admin: Any = None
        self.proxy: Any = None
        #: The service did not answer within --timeout: close() does not call it again
        #: (each call would wait another --timeout), as tail's Subscription.lost.
        self.lost = False
        try:
            self.admin, _ = channel.new_for_suppliers(CA.AND_OP)
            proxy, _ = self.admin.obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
            self.proxy = proxy._narrow(CA.StructuredProxyPushConsumer)
            self.proxy.connect_structured_push_supplier(None)
        except BaseException as exc:  # Ctrl-C or SIGTERM too: nothing is left behind
            self.close(report=False)
            if isinstance(exc, CA.AdminLimitExceeded):
                raise connect.ToolError("cannot connect a supplier: the channel refuses "
                                        "another supplier (AdminLimitExceeded)") from None
            if isinstance(exc, CORBA.SystemException):
                raise connect.ToolError(f"cannot connect a supplier: "
                                        f"{connect.describe(exc)}") from None
            raise

    def push(self, number: int, event: Any) -> None:
        """Push the event of line ``number``; a failure is a ToolError naming the line,
        a :class:`Refused` when only this event was refused."""
        try:
            self.proxy.push_structured_event(event)
        except CosEventComm.Disconnected:
            raise connect.ToolError(f"line {number}: the service disconnected publish: "
                                    f"{_GONE}") from None
        except CORBA.OBJECT_NOT_EXIST as exc:  # its proxy is gone: not this event's fault
            raise connect.ToolError(f"line {number}: lost the channel: {_GONE} "
                                    f"({connect.describe(exc)})") from None
        except (CORBA.COMM_FAILURE, CORBA.TRANSIENT, CORBA.TIMEOUT) as exc:
            self.lost = isinstance(exc, CORBA.TIMEOUT)
            raise connect.ToolError(f"line {number}: lost the service: "
                                    f"{connect.describe(exc)}") from None
        except _REFUSALS as exc:
            message = f"line {number}: the service refused the event: {connect.describe(exc)}"
            if exc.completed == CORBA.COMPLETED_NO:
                raise Refused(message, exc) from None
            raise connect.ToolError(message) from None
        except CORBA.SystemException as exc:  # IMP_LIMIT, NO_RESOURCES...: not a refusal
            raise connect.ToolError(f"line {number}: the push failed: "
                                    f"{connect.describe(exc)}") from None
        except SystemError as exc:
            # omniORBpy 4.3.3's marshaller left an error pending (docs/orb.md: an
            # unsigned long long >= 2**63 in a sequence); loads refuses the values known
            # to do it, so this is the one event's failure, not the service's.
            cause = exc.__cause__ or exc.__context__ or exc
            raise Refused(f"line {number}: omniORBpy could not marshal the event: {cause} "
                          f"(SystemError)", exc) from None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        # After an error (already the one line on stderr) a failed destroy is not news.
        self.close(report=kind is None or issubclass(kind, KeyboardInterrupt))

    def close(self, report: bool = True) -> None:
        proxy, self.proxy = self.proxy, None
        admin, self.admin = self.admin, None
        if self.lost:  # each call would wait --timeout again; the admin stays behind
            return
        if proxy is not None:
            try:
                proxy.disconnect_structured_push_consumer()
            except (CORBA.SystemException, CosEventComm.Disconnected):
                pass  # gone already; destroying the admin below removes it anyway
        if admin is not None:
            try:
                admin.destroy()
            except CORBA.OBJECT_NOT_EXIST:
                pass
            except CORBA.SystemException as exc:
                if report:
                    print(f"cosnotify publish: could not destroy its supplier admin: "
                          f"{connect.describe(exc)}", file=sys.stderr)


# -- display ----------------------------------------------------------------------------------

class _Display:
    """Lines on stderr, above a rich progress bar when stderr is a terminal."""

    def __init__(self, total: int | None, bar: bool) -> None:
        self._progress: Any = None
        self._task: Any = None
        if bar:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            columns: list[Any] = [TextColumn("publishing")]
            if total is not None:
                columns += [BarColumn(), MofNCompleteColumn()]
            else:
                columns.append(TextColumn("{task.completed} events"))
            columns += [_rate_column(), TimeElapsedColumn()]
            self._progress = Progress(*columns, console=Console(file=sys.stderr),
                                      transient=True)
            self._task = self._progress.add_task("publish", total=total)

    def __enter__(self) -> Self:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self) -> None:
        if self._progress is not None:
            self._progress.advance(self._task)

    def say(self, text: str) -> None:
        if self._progress is not None:
            self._progress.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=sys.stderr, flush=True)


def _rate_column() -> Any:
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RateColumn(ProgressColumn):
        """Events per second, as rich estimates them."""

        def render(self, task: Any) -> Text:
            speed = task.finished_speed or task.speed
            return Text("- ev/s" if speed is None else f"{speed:,.0f} ev/s")

    return RateColumn()


# -- the command ------------------------------------------------------------------------------

def run(args: argparse.Namespace) -> int:
    return connect.run_tool("publish", lambda: _publish(args))


def _open(name: str) -> IO[bytes]:
    if name == "-":
        if sys.stdin is None:  # Python's stdin when its descriptor is closed
            raise connect.ToolError("cannot read -: standard input is closed",
                                    connect.USAGE)
        return sys.stdin.buffer
    try:
        return open(name, "rb")  # closed by the caller's ExitStack
    except OSError as exc:
        raise connect.ToolError(f"cannot read {name}: {exc.strerror or exc}",
                                connect.USAGE) from None


def _publish(args: argparse.Namespace) -> int:
    from_stdin = args.file == "-"
    if args.repeat and from_stdin:
        raise connect.ToolError("--repeat needs a FILE: standard input cannot be read again",
                                connect.USAGE)
    with ExitStack() as stack:
        source = _open(args.file)
        if not from_stdin:
            stack.callback(source.close)
            if (args.strict or args.repeat) and not source.seekable():
                raise connect.ToolError(f"{args.file} cannot be read twice (--strict and "
                                        f"--repeat need a regular file)", connect.USAGE)
        if args.strict and not from_stdin:
            for number, item in read_events(source):
                if isinstance(item, JsonEventError):
                    raise connect.ToolError(f"line {number}: {item} (nothing was published)")
            source.seek(0)
        stack.enter_context(connect.sigterm_interrupts())
        the_orb = connect.orb(args.timeout)
        _, channel = connect.channel(connect.factory(args.url, the_orb), args.channel)
        pusher = stack.enter_context(Pusher(channel))
        display = stack.enter_context(_Display(args.count, sys.stderr.isatty()))
        return _loop(args, source, pusher, display)
    raise AssertionError("unreachable")  # ExitStack does not swallow exceptions here


def _loop(args: argparse.Namespace, source: IO[bytes], pusher: Pusher, display: _Display) -> int:
    pacer = Pacer(args.rate)
    pushed = skipped = 0
    started = time.monotonic()
    interrupted = empty = False
    try:
        first = True
        while True:
            before = pushed
            for number, item in read_events(source):
                if isinstance(item, JsonEventError):
                    if args.strict:
                        raise connect.ToolError(f"line {number}: {item} ({pushed} events were "
                                                f"published before it)")
                    if first:  # a repeated file reports its bad lines once
                        skipped += 1
                        display.say(f"cosnotify publish: line {number}: {item}")
                    continue
                pacer.wait()
                try:
                    pusher.push(number, item)
                except Refused as exc:
                    if args.strict:
                        raise connect.ToolError(f"{exc.message} ({pushed} events were "
                                                f"published before it)") from None
                    if first:
                        skipped += 1
                        display.say(f"cosnotify publish: {exc.message}")
                    continue
                pushed += 1
                display.advance()
                if pushed == args.count:
                    break
            else:
                if args.repeat and pushed > before:  # a file with no event is not repeated
                    source.seek(0)
                    first = False
                    continue
                if args.repeat and first:
                    display.say(f"cosnotify publish: {args.file} has no event to repeat")
                    empty = True
            break
    except KeyboardInterrupt:
        interrupted = True
    elapsed = time.monotonic() - started
    display.say(f"published {pushed} events ({skipped} skipped) in {elapsed:.1f} s"
                + (" (interrupted)" if interrupted else ""))
    if interrupted:
        return 130
    return 1 if skipped or empty else 0
