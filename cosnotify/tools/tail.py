"""``cosnotify tail URL [--channel ID] [--grammar G] [CONSTRAINT]``: print events as they arrive.

Strategy: a :class:`Subscription` is a StructuredProxyPullSupplier on a
consumer admin of its own (``new_for_consumers(AND_OP)``), with the
constraint, if any, in a filter from the channel's default filter factory
on that admin; :meth:`Subscription.close` disconnects the proxy, destroys
the admin and the filter, so nothing of tail outlives it. A worker thread
blocks in ``pull_structured_event()`` and hands each event, with its time
of arrival, to the main thread through a bounded queue; the main thread
formats and prints. Stopping (Ctrl-C, SIGTERM, ``--count``, a closed pipe)
is the main thread's ``disconnect_structured_pull_supplier()``: the
server wakes the blocked pull, which ends with ``Disconnected``
(channel/pull_supplier.py, sections 3.3.9.1 and 3.3.13.1), and the worker
returns.

Two omniORB details shape this. The tool's ORB times calls out after
``--timeout``, and a pull that timed out would lose the event the server
then takes for it, so the worker pulls through a reference of its own
whose call timeout is practically unbounded (a per-reference 0 would mean
the ORB's default). And a signal may be delivered to one of omniORB's
threads, where Python only notes it for the main thread: the main thread
therefore waits on the queue in short slices rather than for ever.

An unbounded pull cannot tell a quiet channel from a server that stopped
answering without closing the connection (a stopped process, a dead host
behind a silent network). So after ``--timeout`` seconds without an event
the main thread asks the service whether the proxy still exists
(``_non_existent()``, through the ORB's normal call timeout); no answer
within ``--timeout`` ends tail with "lost the service" (:func:`_print`).

Formatting is the main thread's, one event at a time: an event a format
cannot show (nested too deep, a type the Spark row lacks...) is one line
on stderr and tail goes on.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import queue
import re
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import omniORB
from omniORB import CORBA

import CosEventComm
import CosNotifyChannelAdmin as CA
import CosNotifyFilter

from cosnotify.tools import connect
from cosnotify.tools.eventjson import any_to_json, dumps

__all__ = ["FORMATS", "Subscription", "add_parser", "format_json", "format_line", "run"]

#: The call timeout of the worker's blocking pull, in ms (omniORB's largest, ~24 days).
PULL_TIMEOUT_MS = 0x7FFFFFFF
#: How long the main thread waits on the queue at once (see the module docstring).
WAKE_SECONDS = 0.25
#: Events pulled but not yet printed, at most.
BACKLOG = 1024
#: The grammar of a constraint unless ``--grammar`` says otherwise.
DEFAULT_GRAMMAR = "EXTENDED_TCL"


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "tail", help="print a channel's events as they arrive",
        description="Connect a structured pull consumer to a channel and print the events "
                    "that match CONSTRAINT (all of them without one), one per line, until "
                    "Ctrl-C or --count. The consumer is removed on exit.")
    parser.add_argument("url", metavar="URL",
                        help="the factory: HOST:PORT, corbaname:/corbaloc:/IOR: URL, or an "
                             "IOR file")
    parser.add_argument("constraint", metavar="CONSTRAINT", nargs="?",
                        help="a constraint in --grammar, e.g. \"$severity > 2\"")
    parser.add_argument("--channel", type=connect.channel_id_arg, metavar="ID",
                        help="the channel (default: the lowest-numbered one)")
    parser.add_argument("--grammar", default=DEFAULT_GRAMMAR, metavar="G",
                        help="the constraint's grammar (default EXTENDED_TCL)")
    parser.add_argument("--count", type=connect.count_arg, metavar="N", help="exit after N events")
    parser.add_argument("--format", choices=FORMATS, default="line",
                        help="line (default): TIME TYPE NAME key=value...; json: one event "
                             "object per line, as publish reads; row: the Spark row")
    parser.add_argument("--timeout", type=connect.timeout_arg, default=10.0, metavar="SECONDS",
                        help="give up on an unanswering service after this long (default 10)")
    parser.set_defaults(run=run)
    # CONSTRAINT may come after the options (argparse otherwise gives an optional
    # positional its empty value at the first positional: CPython issue 59317).
    parser.__class__ = _IntermixedParser


class _IntermixedParser(argparse.ArgumentParser):
    """A parser that takes its positionals intermixed with its options."""

    _inner = False

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if self._inner:  # parse_known_intermixed_args calls back here
            return super().parse_known_args(args, namespace)
        self._inner = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._inner = False


# -- formats ----------------------------------------------------------------------------------

_BARE = re.compile(r'^[^\s"=]+$')


def _word(text: str) -> str:
    """``text`` as is, or JSON-quoted when empty or holding blanks, quotes or ``=``."""
    return text if _BARE.match(text) else json.dumps(text, ensure_ascii=False)


def _when(arrival: float) -> str:
    moment = datetime.datetime.fromtimestamp(arrival, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def format_line(event: Any, arrival: float) -> str:
    """``TIME DOMAIN/TYPE NAME key=value ...``: the filterable data, values as JSON."""
    fixed = event.header.fixed_header
    words = [_when(arrival),
             _word(f"{fixed.event_type.domain_name}/{fixed.event_type.type_name}"),
             _word(fixed.event_name)]
    for prop in event.filterable_data:
        value = json.dumps(any_to_json(prop.value), ensure_ascii=False, separators=(",", ":"))
        words.append(f"{_word(prop.name)}={value}")
    return " ".join(words)


def format_json(event: Any, arrival: float) -> str:
    """The event as the JSON line ``publish`` reads (docs/json-events.md)."""
    return dumps(event)


def _row_formatter() -> Callable[[Any, float], str]:
    """The Spark row of an event as one JSON line (pyspark imported only here)."""
    try:
        from spark_bridge.convert import ConversionError, event_to_row
        from spark_bridge.schema import COLUMNS
    except ImportError as exc:
        raise connect.ToolError(f"--format row needs pyspark: {exc}", connect.USAGE) from None

    def cell(item: Any) -> dict[str, Any]:
        *names, variant = item
        keys = ("name", "type") if len(names) == 2 else ("type",)
        return {**dict(zip(keys, names, strict=True)), "value": variant.toJson()}

    def when(moment: Any) -> Any:
        return None if moment is None else moment.isoformat().replace("+00:00", "Z")

    def format_row(event: Any, arrival: float) -> str:
        try:
            row = event_to_row(event, arrival, references=omniORB.orb)
        except ConversionError as exc:
            raise _Unprintable(f"it has no Spark row form: {exc}") from None
        made = dict(zip(COLUMNS, row, strict=True))
        made["variable_header"] = [cell(c) for c in made["variable_header"]]
        made["filterable_data"] = [cell(c) for c in made["filterable_data"]]
        made["remainder_of_body"] = cell(made["remainder_of_body"])
        made["arrival_time"] = when(made["arrival_time"])
        made["expiry_time"] = when(made["expiry_time"])
        return json.dumps(made, ensure_ascii=False, separators=(",", ":"))

    return format_row


class _Unprintable(Exception):
    """An event this format cannot show (reported on stderr; tail goes on)."""


FORMATS = ("line", "json", "row")


# -- the subscription -------------------------------------------------------------------------

class Subscription:
    """A connected structured pull consumer on an admin of its own, with its filter."""

    def __init__(self, channel: Any, grammar: str, constraint: str | None) -> None:
        self.admin: Any = None
        self.filter: Any = None
        self.proxy: Any = None
        self.lost = False  # the service stopped answering: close() does not call it
        for what, text in (("grammar", grammar), ("constraint", constraint or "")):
            connect.check_latin1(what, text)
        try:
            self.admin, _ = channel.new_for_consumers(CA.AND_OP)
            if constraint is not None:
                self._add_filter(channel, grammar, constraint)
            elif grammar != DEFAULT_GRAMMAR:
                self._add_filter(channel, grammar, None)
            proxy, _ = self.admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
            self.proxy = proxy._narrow(CA.StructuredProxyPullSupplier)
            self.proxy.connect_structured_pull_consumer(None)
        except BaseException as exc:
            self.close(report=False)
            if isinstance(exc, CA.AdminLimitExceeded):
                raise connect.ToolError("the channel refuses another consumer "
                                        "(AdminLimitExceeded)") from None
            raise

    def _add_filter(self, channel: Any, grammar: str, constraint: str | None) -> None:
        """A filter of ``constraint`` on the admin; with None, only check that the
        service knows ``grammar`` (the filter made to ask is destroyed at once)."""
        factory = channel._get_default_filter_factory()
        try:
            self.filter = factory.create_filter(grammar)
        except CosNotifyFilter.InvalidGrammar:
            raise connect.ToolError(f"the service knows no constraint grammar {grammar!r}",
                                    connect.USAGE) from None
        if constraint is None:
            made, self.filter = self.filter, None
            _quietly(made.destroy)
            return
        try:
            self.filter.add_constraints([CosNotifyFilter.ConstraintExp([], constraint)])
        except CosNotifyFilter.InvalidConstraint:
            raise connect.ToolError(f"invalid {grammar} constraint: {constraint}",
                                    connect.USAGE) from None
        self.admin.add_filter(self.filter)

    def puller(self) -> Any:
        """A reference to the proxy for the worker's blocking pulls (module docstring)."""
        the_orb = omniORB.orb
        ref = the_orb.string_to_object(the_orb.object_to_string(self.proxy))
        ref = ref._narrow(CA.StructuredProxyPullSupplier)
        omniORB.setClientCallTimeout(ref, PULL_TIMEOUT_MS)
        return ref

    def check(self) -> None:
        """Return if the service answers for the proxy within the ORB's call timeout;
        else a ToolError saying it is lost (or that the proxy is gone)."""
        try:
            gone = self.proxy._non_existent()
        except (CORBA.TIMEOUT, CORBA.COMM_FAILURE, CORBA.TRANSIENT) as exc:
            self.lost = True
            raise connect.ToolError(f"lost the service: no answer to a check while no "
                                    f"event came: {connect.describe(exc)}") from None
        except CORBA.OBJECT_NOT_EXIST:
            gone = True
        if gone:
            raise connect.ToolError(_DISCONNECTED)

    def close(self, report: bool = True) -> None:
        """Disconnect (which ends a blocked pull), destroy the admin and the filter;
        nothing once :meth:`check` found the service gone (each call would wait).

        With ``report``, a failure to destroy is a line on stderr; after an error
        (itself the one line) it is not news.
        """
        proxy, self.proxy = self.proxy, None
        admin, self.admin = self.admin, None
        flt, self.filter = self.filter, None
        if self.lost:
            return
        if proxy is not None:
            _quietly(proxy.disconnect_structured_pull_supplier)
        if admin is not None:
            _quietly(admin.destroy, "its consumer admin" if report else "")
        if flt is not None:
            _quietly(flt.destroy, "its filter" if report else "")


#: Disconnected or OBJECT_NOT_EXIST: the proxy is gone, and which of these made it go
#: tail cannot tell (a server stopping normally disconnects its proxies too).
_DISCONNECTED = ("the service disconnected tail: its channel or admin was destroyed, or "
                 "the server stopped")


def _quietly(call: Callable[[], None], what: str = "") -> None:
    """``call()``; an object already gone is fine, another failure is reported if
    ``what`` names it."""
    try:
        call()
    except (CORBA.OBJECT_NOT_EXIST, CosEventComm.Disconnected):
        pass
    except CORBA.SystemException as exc:
        if what:
            print(f"cosnotify tail: could not destroy {what}: {connect.describe(exc)}",
                  file=sys.stderr)


class _Puller(threading.Thread):
    """Pulls into ``events`` until disconnected; the end goes in as an exception."""

    def __init__(self, proxy: Any, events: queue.Queue[Any], count: int | None) -> None:
        super().__init__(name="cosnotify-tail-pull", daemon=True)
        self.proxy = proxy
        self.events = events
        self.count = count
        self.stopping = threading.Event()

    def run(self) -> None:
        pulled = 0
        try:
            while self.count is None or pulled < self.count:
                event = self.proxy.pull_structured_event()
                pulled += 1
                self._hand((time.time(), event))
        except Exception as exc:  # noqa: BLE001 - handed on: the main thread decides
            self._hand(exc)

    def _hand(self, item: Any) -> None:
        while not self.stopping.is_set():
            try:
                self.events.put(item, timeout=WAKE_SECONDS)
                return
            except queue.Full:
                continue


# -- the command ------------------------------------------------------------------------------

def run(args: argparse.Namespace) -> int:
    return connect.run_tool("tail", lambda: _tail(args))


def _tail(args: argparse.Namespace) -> int:
    with connect.sigterm_interrupts():
        try:
            formatter = ({"line": format_line, "json": format_json}.get(args.format)
                         or _row_formatter())
            return _follow(args, formatter)
        except KeyboardInterrupt:  # before it subscribed, too: nothing is left to clean up
            return 0


def _follow(args: argparse.Namespace, formatter: Callable[[Any, float], str]) -> int:
    the_orb = connect.orb(args.timeout)
    channel_id, channel = connect.channel(connect.factory(args.url, the_orb), args.channel)
    subscription = Subscription(channel, args.grammar, args.constraint)
    puller: _Puller | None = None
    failed = False
    try:
        if sys.stderr.isatty():  # a person is watching; a pipe's stderr stays for errors
            where = (f" where {args.grammar} {json.dumps(args.constraint)}"
                     if args.constraint else "")
            print(f"cosnotify tail: following channel {channel_id}{where} (Ctrl-C stops)",
                  file=sys.stderr, flush=True)
        events: queue.Queue[Any] = queue.Queue(BACKLOG)
        puller = _Puller(subscription.puller(), events, args.count)
        puller.start()
        return _print(events, formatter, args.count, subscription.check, args.timeout)
    except BrokenPipeError:
        # The reader has gone (tail | head): no more output, not even at exit.
        connect.drop_stdout()
        return 0
    except OSError as exc:  # /dev/full, a disk that failed: the output is lost
        failed = True
        connect.drop_stdout()
        raise connect.ToolError(f"cannot write the output: {exc.strerror or exc}") from None
    except BaseException as exc:
        failed = not isinstance(exc, KeyboardInterrupt)
        raise
    finally:
        if puller is not None:
            puller.stopping.set()
        subscription.close(report=not failed)
        if puller is not None and not subscription.lost:  # else blocked on a lost service
            puller.join(5.0)  # its pull ends with the disconnect: let it, before exiting


def _print(events: queue.Queue[Any], formatter: Callable[[Any, float], str],
           count: int | None, check: Callable[[], None] | None = None,
           quiet: float = math.inf, clock: Callable[[], float] = time.monotonic) -> int:
    """Print what the puller hands over until ``count`` events (or a failure).

    After ``quiet`` seconds without an event, ``check()`` asks whether the service
    still answers (it raises if not); the clock is injectable for tests.
    """
    received = 0
    out = sys.stdout
    heard = clock()
    while count is None or received < count:
        try:
            item = events.get(timeout=WAKE_SECONDS)
        except queue.Empty:
            if check is not None and clock() - heard >= quiet:
                check()
                heard = clock()
            continue
        heard = clock()
        if isinstance(item, (CosEventComm.Disconnected, CORBA.OBJECT_NOT_EXIST)):
            raise connect.ToolError(_DISCONNECTED)
        if isinstance(item, CORBA.SystemException):
            raise connect.ToolError(f"lost the service: {connect.describe(item)}")
        if isinstance(item, BaseException):
            raise item  # not a CORBA failure: a bug, with its traceback
        arrival, event = item
        received += 1
        try:
            line = formatter(event, arrival)
        except Exception as exc:  # noqa: BLE001 - one event's failure never ends tail
            print(connect.printable(f"cosnotify tail: event {received} ({_label(event)}) "
                                    f"cannot be printed: {_reason(exc)}; skipped"),
                  file=sys.stderr, flush=True)
        else:
            out.write(connect.printable(line) + "\n")  # the event's text is a supplier's
            out.flush()
    return 0


def _label(event: Any) -> str:
    """``DOMAIN/TYPE NAME`` of an event, as the line format shows them (cut if long)."""
    try:
        fixed = event.header.fixed_header
        text = (f"{_word(fixed.event_type.domain_name + '/' + fixed.event_type.type_name)} "
                f"{_word(fixed.event_name)}")
    except Exception:  # noqa: BLE001 - only a label for a message
        return "?"
    return text if len(text) <= 100 else text[:99] + "\u2026"


def _reason(exc: Exception) -> str:
    """What went wrong, on one line (cut if long)."""
    if isinstance(exc, _Unprintable):
        text = str(exc)
    elif isinstance(exc, RecursionError):
        text = "nested too deep (RecursionError)"
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:199] + "\u2026"
