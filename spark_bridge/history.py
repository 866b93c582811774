"""``format("cosnotify_history")``: a channel's retained events as a Spark batch table.

Strategy: a batch read asks the channel's history (``CosNotifyHistory``,
idl/CosNotifyHistory.idl) over IIOP, with the Eventer seed's query fields;
nothing is pulled from a proxy and nothing is taken from the channel, so a
read can be repeated. What the store can narrow by is pushed down:

- ``pushFilters`` takes Spark's comparisons of ``arrival_time`` (the
  channel's timestamp: ``tFrom``/``tTo``) and ``source_time``
  (``sourceTFrom``/``sourceTTo``), and equalities and ``IN`` lists on
  ``domain_name`` and ``type_name`` (type patterns ``(domain, type, *)``,
  one index range each in the store). Spark still checks every filter on
  the rows (the store's bounds are inclusive and a strict comparison is
  not), so pushing down only ever reads less.
- the options ``types``, ``from``, ``to``, ``source_from``, ``source_to``
  and ``constraint`` (any registered grammar, evaluated by the service)
  say the same in words (docs/spark.md, "History").

Each partition reads its time slice (option ``partitions``, when the range
is bounded) in pages of at most ``page_size`` events in ascending order
(a reply holds at most about 1 MiB: the service says when there is
``more``), each page continuing after the last row the one before read (the
query's ``after`` cursor), so no event is read twice or left out, however
many share a timestamp. Pushed-down time bounds are widened by a
microsecond (a row's timestamp is the channel's double rounded to one);
contradictory ones read nothing. A page whose cursor event was trimmed meanwhile (the read fell
behind the channel's retention bounds) fails the read with ValueError. Rows carry the event's id (``event_server``,
``event_session``, ``event_instance``), its type path (``event_type``) and
its source timestamp (``source_time``, NULL when undefined or past Spark's last timestamp,
as ``expiry_time``: ``convert.timestamp_micros``) beside the event schema's columns;
``arrival_time`` is its arrival in the channel.
"""

from __future__ import annotations

import datetime
import logging
import math
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.types import (
    ArrayType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spark_bridge.arrow import events_to_arrow
from spark_bridge.connect import (
    ChannelAddress,
    ChannelError,
    _float_option,
    _int_option,
    check_option_names,
    client_orb,
)
from spark_bridge.convert import timestamp_micros
from spark_bridge.schema import event_schema

__all__ = ["NAME", "HistoryOptions", "HistoryReader", "HistorySource", "history_schema",
           "register"]

log = logging.getLogger("spark_bridge.history")

NAME = "cosnotify_history"
OPTIONS = frozenset({"channel", "channel_id", "call_timeout", "types", "from", "to",
                     "source_from", "source_to", "grammar", "constraint", "page_size",
                     "partitions"})
#: The columns a history row adds to the event schema's.
HISTORY_COLUMNS = ("event_server", "event_session", "event_instance", "event_type",
                   "source_time")
#: Spark's switch for pushFilters in Python data sources (``register`` sets it).
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
#: How far a pushed-down time bound is widened (seconds): a row's timestamp is the
#: channel's double rounded to the microsecond.
ROUNDING = 1e-6
#: Type patterns pushed down at most (past it the store narrows by none of them).
MAX_PREFIXES = 64
#: Events a page asks for at most (the service caps one query at 100,000).
MAX_PAGE = 100_000


def history_schema() -> StructType:
    """:func:`~spark_bridge.schema.event_schema` plus the id, type path and source time."""
    return StructType([*event_schema().fields,
                       StructField("event_server", LongType(), False),
                       StructField("event_session", LongType(), False),
                       StructField("event_instance", LongType(), False),
                       StructField("event_type", ArrayType(StringType(), False), False),
                       StructField("source_time", TimestampType(), True)])


def _arrow_schema() -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(history_schema(), timezone="UTC")


def _seconds(value: Any, name: str) -> float:
    """An option or a pushed-down value as Unix seconds: a number, an ISO 8601 text
    (UTC unless it has an offset) or a datetime (Spark's are aware)."""
    if isinstance(value, datetime.datetime):
        moment = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    else:
        text = str(value)
        try:
            return float(text)
        except ValueError:
            pass
        try:
            moment = datetime.datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"option {name!r} must be Unix seconds or an ISO 8601 time, "
                             f"not {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def _types(text: str) -> list[tuple[str, ...]]:
    """``a/b/*,c/?``: type patterns, segments separated by ``/``, patterns by ``,``."""
    return [tuple(p.strip().split("/")) for p in text.split(",") if p.strip()]


class HistoryOptions:
    """The read's options, checked once (in whichever process builds the reader)."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        check_option_names(options, OPTIONS, 'format("cosnotify_history") reads')
        self.address = ChannelAddress.from_options(options)
        self.fields: dict[str, Any] = {}
        for option, field in (("from", "tFrom"), ("to", "tTo"), ("source_from", "sourceTFrom"),
                              ("source_to", "sourceTTo")):
            if options.get(option) not in (None, ""):
                self.fields[field] = _seconds(options[option], option)
        if options.get("types"):
            self.fields["types"] = _types(str(options["types"]))
        if options.get("constraint"):
            self.fields["constraint"] = str(options["constraint"])
            self.fields["grammar"] = str(options.get("grammar") or "EXTENDED_TCL")
        self.page_size: int = _int_option(options, "page_size", 10_000, 1, MAX_PAGE) or 10_000
        self.partitions: int = _int_option(options, "partitions", 1, 1, 1024) or 1
        self.call_timeout = _float_option(options, "call_timeout", 60.0)
        self.check()

    def check(self) -> None:
        """The service's own checks of the query (BAD_PARAM -> ValueError, now)."""
        from omniORB import CORBA

        from cosnotify.history.query import from_fields

        try:
            from_fields(self.fields)
        except CORBA.BAD_PARAM as exc:
            raise ValueError(getattr(exc, "_info", None) or str(exc)) from None


class HistorySlice(InputPartition):
    """One task's time slice: ``[low, high]``, ``high`` left out unless ``last``."""

    def __init__(self, index: int, low: float | None, high: float | None, last: bool) -> None:
        super().__init__(index)
        self.low, self.high, self.last = low, high, last


class HistoryReader(DataSourceReader):
    """Reads the history in pages (module docstring)."""

    def __init__(self, options: HistoryOptions) -> None:
        self.options = options
        self.pushed: dict[str, Any] = {}

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:
        domains: set[str] | None = None
        types: set[str] | None = None
        for item in filters:
            attribute = getattr(item, "attribute", None)  # Not, And, Or have none
            column = attribute[0] if attribute is not None and len(attribute) == 1 else None
            if column in ("arrival_time", "source_time"):
                self._push_time(column, item)
            elif column in ("domain_name", "type_name") and isinstance(item, (EqualTo, In)):
                values = {item.value} if isinstance(item, EqualTo) else set(item.value)
                # A value that is a pattern's wildcard cannot be asked for literally.
                if all(isinstance(v, str) and v not in ("?", "*") for v in values):
                    if column == "domain_name":
                        domains = values if domains is None else domains & values
                    else:
                        types = values if types is None else types & values
            yield item  # Spark checks every filter again on the rows (module docstring)
        patterns: list[tuple[str, ...]] = [
            (d, t, "*") for d in sorted(domains or {"?"}) for t in sorted(types or {"?"})]
        if domains is not None and len(patterns) > MAX_PREFIXES:
            patterns = [(d, "*") for d in sorted(domains)]  # the domains alone
        if (domains is not None or types is not None) and len(patterns) <= MAX_PREFIXES:
            self.pushed["types"] = patterns

    def _push_time(self, column: str, item: Any) -> None:
        """A comparison as the query's bound, widened by a microsecond: Spark's
        timestamps are the channel's doubles rounded to microseconds (module docstring)."""
        low, high = ("tFrom", "tTo") if column == "arrival_time" else ("sourceTFrom", "sourceTTo")
        if not isinstance(item, (EqualTo, GreaterThan, GreaterThanOrEqual, LessThan,
                                 LessThanOrEqual)) or item.value is None:
            return
        seconds = _seconds(item.value, column)
        if isinstance(item, (EqualTo, GreaterThan, GreaterThanOrEqual)):
            self.pushed[low] = max(seconds - ROUNDING, self.pushed.get(low, -math.inf))
        if isinstance(item, (EqualTo, LessThan, LessThanOrEqual)):
            self.pushed[high] = min(seconds + ROUNDING, self.pushed.get(high, math.inf))

    def query_fields(self) -> dict[str, Any]:
        """The options' fields narrowed by what was pushed down."""
        fields = dict(self.options.fields)
        for name, value in self.pushed.items():
            if name == "types":
                if "types" not in fields:  # the option's patterns stand; Spark filters rows
                    fields["types"] = value
            elif name in ("tFrom", "sourceTFrom"):
                fields[name] = max(value, fields.get(name, -math.inf))
            else:
                fields[name] = min(value, fields.get(name, math.inf))
        return fields

    def partitions(self) -> list[InputPartition]:
        fields = self.query_fields()
        low, high = fields.get("tFrom"), fields.get("tTo")
        if _empty(fields):  # contradictory filters: one task that asks nothing
            return [HistorySlice(0, None, None, True)]
        count = self.options.partitions
        if count == 1 or low is None or high is None or high <= low:
            return [HistorySlice(0, low, high, True)]
        step = (high - low) / count
        edges = sorted({low + i * step for i in range(count)} | {high})
        return [HistorySlice(i, edges[i], edges[i + 1], i == len(edges) - 2)
                for i in range(len(edges) - 1)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, HistorySlice)
        fields = self.query_fields()
        if _empty(fields):
            return
        fields.pop("tFrom", None)
        fields.pop("tTo", None)
        history = _history(self.options)
        for events in _pages(history, fields, partition, self.options.page_size):
            table = _table(events)
            yield from table.to_batches()


def _empty(fields: Mapping[str, Any]) -> bool:
    """Do the pushed-down bounds contradict each other (no event can match)?"""
    return any(fields.get(low, -math.inf) > fields.get(high, math.inf)
               for low, high in (("tFrom", "tTo"), ("sourceTFrom", "sourceTTo")))


def _history(options: HistoryOptions) -> Any:
    """The channel's ``CosNotifyHistory::History`` (ChannelError if unreachable)."""
    import omniORB

    import cosnotify.corba  # noqa: F401 - puts the generated stubs on the path
    from spark_bridge.connect import resolve_channel

    orb = client_orb()
    address = options.address
    import CosNotifyChannelAdmin as CA
    import CosNotifyHistory

    try:
        obj = address.timed(orb.string_to_object(address.url))
        if obj is not None and obj._is_a("IDL:omg.org/CosNotifyChannelAdmin/EventChannel:1.0"):
            factory = address.timed(obj._narrow(CA.EventChannel)._get_MyFactory())
            channel_id = _channel_id(factory, obj)
        else:
            resolve_channel(orb, address)  # the factory's errors, in its words
            factory = obj
            channel_id = address.channel_id if address.channel_id is not None else min(
                factory._narrow(CA.EventChannelFactory).get_all_channels())
        histories = factory._narrow(CosNotifyHistory.HistoryFactory)
        if histories is None:
            raise ChannelError(address.url, "the service offers no CosNotifyHistory")
        history = histories.get_history(channel_id)
    except CosNotifyHistory.NotRetained as exc:
        raise ChannelError(address.url, f"channel {exc.id} keeps no history (set RetainAge, "
                                        "RetainCount or RetainBytes)") from None
    except ChannelError:
        raise
    except Exception as exc:
        raise ChannelError(address.url, f"cannot reach the history: {type(exc).__name__}: "
                                        f"{exc}") from exc
    omniORB.setClientCallTimeout(history, max(1, round(options.call_timeout * 1000)))
    return history


def _channel_id(factory: Any, channel: Any) -> int:
    import CosNotifyChannelAdmin as CA

    factory = factory._narrow(CA.EventChannelFactory)
    for channel_id in factory.get_all_channels():
        if factory.get_event_channel(channel_id)._is_equivalent(channel):
            return int(channel_id)
    raise CA.ChannelNotFound()


def _pages(history: Any, fields: dict[str, Any], part: HistorySlice,
           page: int) -> Iterator[list[Any]]:
    """The slice's events in ascending order, a page at a time (module docstring)."""
    from omniORB import CORBA

    from cosnotify.history.corba import properties_of, retained_of

    base = {**fields, "order": "ascending", "orderBy": "timestamp", "maxResults": page}
    if part.high is not None:
        # The slice's end is left out unless it is the last: the next slice has it.
        base["tTo"] = part.high if part.last else math.nextafter(part.high, -math.inf)
    if part.low is not None:
        base["tFrom"] = part.low
    after = None
    while True:
        asked = base if after is None else {**base, "after": after}
        try:
            got, more, resume = history.query(properties_of(asked))
        except CORBA.BAD_PARAM:
            raise ValueError("the service refused the history query (BAD_PARAM): the "
                             "constraint is not valid in its grammar, or the history was "
                             "trimmed past the page being read") from None
        found = [retained_of(r) for r in got]
        if found:
            yield found
        if not more:
            return
        after = (resume.server, resume.session, resume.instance)


def _table(events: list[Any]) -> pa.Table:
    from spark_bridge.connect import client_orb as orb

    table, rejected = events_to_arrow([(r.event, r.timestamp) for r in events],
                                      references=orb())
    dropped = {id(item.event) for item in rejected}
    for item in rejected:
        log.warning("dropped: %s", item)
    kept = [r for r in events if id(r.event) not in dropped]
    columns = {
        "event_server": pa.array([r.id.server for r in kept], pa.int64()),
        "event_session": pa.array([r.id.session for r in kept], pa.int64()),
        "event_instance": pa.array([r.id.instance for r in kept], pa.int64()),
        "event_type": pa.array([list(r.type) for r in kept], pa.list_(pa.string())),
        # NULL past Spark's last timestamp too (convert.timestamp_micros), as expiry_time.
        "source_time": pa.array([None if r.source_timestamp is None
                                 else timestamp_micros(r.source_timestamp, "source_time")
                                 for r in kept],
                                pa.timestamp("us", tz="UTC")),
    }
    for name in HISTORY_COLUMNS:
        table = table.append_column(name, columns[name])
    return table.cast(_arrow_schema())


class HistorySource(DataSource):
    """``format("cosnotify_history")``: a channel's retained events (module docstring)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        options = HistoryOptions(self.options)
        _history(options)  # a wrong URL, id or a channel without history fails load()
        return history_schema()

    def reader(self, schema: StructType) -> HistoryReader:
        return HistoryReader(HistoryOptions(self.options))


def register(spark: Any) -> None:
    """Register ``cosnotify_history`` with ``spark`` (``spark_bridge.register`` does),
    and turn on Spark's filter pushdown for Python data sources (off by default: a
    reader that pushes filters is refused while it is off)."""
    _arrow_schema()
    spark.conf.set(PUSHDOWN_CONF, "true")
    spark.dataSource.register(HistorySource)
