"""``cosnotify query URL [--channel ID] [--type T]... [--from TIME] ... [CONSTRAINT]``.

Strategy: the command line becomes the Eventer seed's ``QueryData`` fields
(:func:`fields_of_args`), checked here by the very
:class:`~cosnotify.history.query.Query` the service builds, so a malformed
query is refused with its reason before the service is contacted (over IIOP
the service's BAD_PARAM carries no text). The fields then travel as the
PropertySeq of ``CosNotifyHistory::History.query``
(:func:`~cosnotify.history.corba.properties_of`), on the history the
factory gives (``HistoryFactory.get_history``), and each event returned is
printed as one line: ``ID TIME DOMAIN/TYPE NAME key=value...`` (tail's
line with the event's id in front; TIME is its arrival in the channel), or
with ``--json`` one JSON object per line (docs/history.md). Times on the
command line are Unix seconds, ISO 8601 (UTC unless an offset is given),
``now``, or relative to now (``-90s``, ``-15m``, ``-1h``, ``-2d``; written
``--from=-1h``, since argparse reads a lone ``-1h`` as an option).
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
import time
from collections.abc import Callable
from typing import Any

from omniORB import CORBA

import CosNotifyChannelAdmin as CA
import CosNotifyFilter
import CosNotifyHistory

from cosnotify.history.corba import properties_of, retained_of
from cosnotify.history.query import DEFAULT_MAX_RESULTS, Order, OrderBy, Retained, from_fields
from cosnotify.tools import connect
from cosnotify.tools.eventjson import to_json
from cosnotify.tools.jsonevents import JsonEventError, any_from_json
from cosnotify.tools.tail import DEFAULT_GRAMMAR, _IntermixedParser, format_line

__all__ = ["add_parser", "fields_of_args", "format_json", "parse_time", "parse_type", "run"]

_RELATIVE = re.compile(r"^-(\d+(?:\.\d+)?)([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "query", help="ask a channel's history (retained events)",
        description="Print the retained events of a channel that match the query (the "
                    "Eventer seed's QueryData fields, docs/history.md), one per line. The "
                    "channel must retain events (RetainAge, RetainCount or RetainBytes).")
    parser.add_argument("url", metavar="URL",
                        help="the factory: HOST:PORT, corbaname:/corbaloc:/IOR: URL, or an "
                             "IOR file")
    parser.add_argument("constraint", metavar="CONSTRAINT", nargs="?",
                        help="a constraint in --grammar, evaluated on each stored event")
    parser.add_argument("--channel", type=connect.channel_id_arg, metavar="ID",
                        help="the channel (default: the lowest-numbered one)")
    parser.add_argument("--type", dest="types", action="append", type=parse_type,
                        metavar="PATTERN",
                        help="a type pattern DOMAIN/TYPE[/SUBTYPE...], '?' one segment, '*' "
                             "(last) any number; or a JSON list of segments; repeatable")
    parser.add_argument("--id", dest="ids", action="append", type=_event_id,
                        metavar="SERVER:SESSION:INSTANCE", help="an event id; repeatable")
    parser.add_argument("--server", type=_natural, metavar="N", help="only this server's events")
    for option, dest, what in (
            ("--from", "from_", "arrived at or after"), ("--to", "to", "arrived at or before"),
            ("--source-from", "source_from", "with a source timestamp at or after"),
            ("--source-to", "source_to", "with a source timestamp at or before")):
        parser.add_argument(option, dest=dest, type=parse_time, metavar="TIME",
                            help=f"only events {what} TIME: Unix seconds, ISO 8601, now, or "
                                 f"relative ({option}=-1h; s, m, h, d)")
    parser.add_argument("--payload", type=_payload, metavar="JSON",
                        help="only events whose remainder of body is this value (JSON, as "
                             "publish reads values)")
    parser.add_argument("--order", choices=[o.value for o in Order], default=None,
                        help="descending (default) or ascending")
    parser.add_argument("--order-by", choices=[o.value for o in OrderBy], default=None,
                        help="timestamp (default) or sourceTimestamp")
    parser.add_argument("--unique-type", action="store_true",
                        help="one event per type (the first in the order)")
    parser.add_argument("--max", dest="max_results", type=_natural, metavar="N",
                        help="at most N events (default 1000, at most 100000)")
    parser.add_argument("--grammar", default=DEFAULT_GRAMMAR, metavar="G",
                        help="the constraint's grammar (default EXTENDED_TCL)")
    parser.add_argument("--json", action="store_true",
                        help="one JSON object per event: id, type, timestamp, "
                             "sourceTimestamp, event (as publish reads it)")
    parser.add_argument("--timeout", type=connect.timeout_arg, default=10.0, metavar="SECONDS",
                        help="give up on an unanswering service after this long (default 10)")
    parser.set_defaults(run=run)
    parser.__class__ = _IntermixedParser  # CONSTRAINT after the options, as tail takes it


def parse_type(text: str) -> tuple[str, ...]:
    """``a/b/*`` or ``["a", "b/c"]``: a type pattern's segments."""
    if text.startswith("["):
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"not a JSON list: {exc}") from None
        except RecursionError:  # json's decoder recurses per nesting level
            raise argparse.ArgumentTypeError("a JSON type is a list of strings: nested too "
                                             "deep") from None
        if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
            raise argparse.ArgumentTypeError("a JSON type is a list of strings")
        return tuple(value)
    return tuple(text.split("/"))


def parse_time(text: str, now: Callable[[], float] = time.time) -> float:
    """A command-line time as Unix seconds (module docstring)."""
    if text == "now":
        return now()
    relative = _RELATIVE.match(text)
    if relative:
        return now() - float(relative.group(1)) * _UNITS[relative.group(2)]
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is no time: Unix seconds, ISO 8601, now, or -N[smhd]") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def _event_id(text: str) -> tuple[int, int, int]:
    parts = text.split(":")
    if len(parts) != 3 or not all(p.isascii() and p.isdigit() and len(p) <= 20
                                  and int(p) < 2**64 for p in parts):
        raise argparse.ArgumentTypeError(f"{text!r} is not SERVER:SESSION:INSTANCE (each "
                                         "a whole number below 2**64)")
    return (int(parts[0]), int(parts[1]), int(parts[2]))


def _natural(text: str) -> int:
    if not (text.isascii() and text.isdigit() and len(text) <= 10) or int(text) >= 2**32:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 0 to "
                                         "4294967295")
    return int(text)


def _payload(text: str) -> Any:
    try:
        value = json.loads(text)
    except ValueError as exc:  # JSONDecodeError
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
    except RecursionError:  # json's decoder recurses per nesting level
        raise argparse.ArgumentTypeError("not JSON this program can read: nested too "
                                         "deep") from None
    try:
        return any_from_json(value, "payload")
    except JsonEventError as exc:  # a ValueError: JSON, and no value of the mapping
        raise argparse.ArgumentTypeError(str(exc)) from None


def fields_of_args(args: argparse.Namespace) -> dict[str, Any]:
    """The query's fields by the seed's names, from parsed arguments."""
    fields = {"serverId": args.server, "ids": args.ids, "types": args.types,
              "tFrom": args.from_, "tTo": args.to, "sourceTFrom": args.source_from,
              "sourceTTo": args.source_to, "payload": args.payload, "order": args.order,
              "orderBy": args.order_by, "uniqueType": args.unique_type or None,
              "maxResults": args.max_results}
    if args.constraint is not None:
        fields["grammar"] = args.grammar
        fields["constraint"] = args.constraint
    return {k: v for k, v in fields.items() if v is not None}


def format_text(event: Retained) -> str:
    """``SERVER:SESSION:INSTANCE`` and tail's line for the event at its arrival."""
    return f"{event.id.server}:{event.id.session}:{event.id.instance} " \
        f"{format_line(event.event, event.timestamp)}"


def format_json(event: Retained) -> str:
    """One JSON object: the id, type path, times (ISO 8601, UTC) and the event."""
    return json.dumps({"id": {"server": event.id.server, "session": event.id.session,
                              "instance": event.id.instance},
                       "type": list(event.type), "timestamp": _iso(event.timestamp),
                       "sourceTimestamp": None if event.source_timestamp is None
                       else _iso(event.source_timestamp),
                       "event": to_json(event.event)}, ensure_ascii=False)


def _iso(seconds: float) -> str | float:
    """ISO 8601 in UTC; Unix seconds for a time no ISO year (1 to 9999) can hold."""
    try:
        moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    except (OverflowError, OSError, ValueError):
        return seconds
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def run(args: argparse.Namespace) -> int:
    return connect.run_tool("query", lambda: _query(args))


def _query(args: argparse.Namespace) -> int:
    # CORBA strings: refused here, not as DATA_CONVERSION once sent ("lost the service").
    for pattern in args.types or []:
        for segment in pattern:
            connect.check_latin1("type pattern", segment)
    connect.check_latin1("grammar", args.grammar)
    connect.check_latin1("constraint", args.constraint or "")
    fields = fields_of_args(args)
    try:
        from_fields(fields)  # the service's own checks, with their reasons
    except CORBA.BAD_PARAM as exc:
        raise connect.ToolError(_reason(exc), connect.USAGE) from None
    the_orb = connect.orb(args.timeout)
    factory = connect.factory(args.url, the_orb)
    channel_id, channel = connect.channel(factory, args.channel)
    if args.grammar != DEFAULT_GRAMMAR:  # as tail checks it, with or without a constraint
        _check_grammar(channel, args.grammar)
    histories = factory._narrow(CosNotifyHistory.HistoryFactory)
    if histories is None:
        raise connect.ToolError(f"{args.url} serves no CosNotifyHistory (not cosnotify serve?)")
    try:
        history = histories.get_history(channel_id)
        found = _all_pages(history, fields)
    except CosNotifyHistory.NotRetained:
        raise connect.ToolError(f"channel {channel_id} keeps no history (set RetainAge, "
                                "RetainCount or RetainBytes)") from None
    except CA.ChannelNotFound:
        raise connect.ToolError(f"no channel {channel_id}", connect.USAGE) from None
    except CORBA.BAD_PARAM as exc:
        if exc.completed != CORBA.COMPLETED_NO or args.constraint is None:
            raise connect.ToolError("the service refused the query (BAD_PARAM); its log "
                                    "says why", connect.USAGE) from None
        raise connect.ToolError(f"the service refused the query (BAD_PARAM): is the "
                                f"{args.grammar} constraint valid?", connect.USAGE) from None
    show = format_json if args.json else format_text
    for value in found:
        print(connect.printable(show(retained_of(value))))  # a supplier's text
    sys.stdout.flush()
    return 0


def _check_grammar(channel: Any, grammar: str) -> None:
    """Does the service know ``grammar``? Asked of the channel's default filter
    factory, as tail asks it (the filter made to ask is destroyed at once)."""
    try:
        made = channel._get_default_filter_factory().create_filter(grammar)
    except CosNotifyFilter.InvalidGrammar:
        raise connect.ToolError(f"the service knows no constraint grammar {grammar!r}",
                                connect.USAGE) from None
    try:
        made.destroy()
    except CORBA.SystemException:
        pass  # it is asked for nothing else; a lost service shows in the query itself


def _all_pages(history: Any, fields: dict[str, Any]) -> list[Any]:
    """The query's events, asked in as many replies as the service needs (a reply
    holds about 1 MiB; ``more`` says to go on ``after`` its ``resume``). Under
    ``uniqueType`` a page after the first gives the first event of each type after
    its cursor: the types earlier pages gave are dropped (docs/history.md)."""
    wanted = fields.get("maxResults", DEFAULT_MAX_RESULTS)
    found: list[Any] = []
    seen: set[tuple[str, ...]] = set()
    asked = dict(fields)
    while True:
        asked["maxResults"] = wanted - len(found)
        page, more, resume = history.query(properties_of(asked))
        if fields.get("uniqueType"):
            page = [value for value in page if tuple(value.type) not in seen]
            seen.update(tuple(value.type) for value in page)
        found.extend(page)
        if not more or len(found) >= wanted:
            return found
        asked["after"] = (resume.server, resume.session, resume.instance)


def _reason(exc: CORBA.BAD_PARAM) -> str:
    text = str(getattr(exc, "_info", None) or exc)  # omniORB keeps the text in _info
    return "malformed query: " + text.removeprefix("history query: ")
