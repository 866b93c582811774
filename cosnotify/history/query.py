"""A history query with Eventer's semantics, checked, and run over retained events.

Strategy: sans-IO, as h11 is. :class:`Query` holds the fields of the Eventer
seed's "query events" (``QueryData``), each checked when the query is made,
so a malformed one never reaches a store: a reversed time range, an unknown
field, a negative ``max_results``, a ``*`` that is not last is
``CORBA.BAD_PARAM`` with the reason (:func:`from_fields` reads the seed's
camelCase names and their snake_case forms). :func:`select` runs a query
over :class:`Retained` events: a store hands it the candidates it read
(narrowed by :meth:`Query.plan`, a store scan: what it can look up in its indexes), and
``select`` applies every condition again, then the order, ``unique_type`` and
the cap. A query without ``max_results`` is capped at
:data:`DEFAULT_MAX_RESULTS`; none may ask for more than
:data:`MAX_RESULTS_LIMIT`.

The seed's conditions, field by field (all must hold):

- ``server_id``: "only events with event_id.server equal to server_id";
- ``event_ids``: "only events with ids which are defined as part of filter
  condition";
- ``event_types``: the type path matches at least one pattern (types.py);
- ``t_from``/``t_to``: the channel's timestamp (arrival) ">= / <=";
- ``source_t_from``/``source_t_to``: "only events with source timestamp
  defined, and greater than or equal / lower than or equal";
- ``payload``: "only events with payload defined and whose payload is the
  same as the query's payload" (here: the remainder of body, an Any; the
  same: equivalent TypeCodes holding equal values, or for a query payload of the
  Eventer Json alias equal JSON values, payload.same_payload);
- ``order`` (ascending, descending) and ``order_by`` (timestamp, source
  timestamp: "events with source timestamp undefined returned last");
- ``unique_type``: one event per type, the latest under descending order,
  the earliest under ascending;
- ``max_results``: at most that many, "dependent on the query order the same
  way as in unique_type".

A query may also carry a constraint in any registered grammar
(``grammar``, ``constraint``): the caller compiles it (a Filter) and passes
its ``match_structured`` to :func:`select`; and ``after``, an event id a
previous page ended with, to read on from it (a cursor: the store applies it).
"""

from __future__ import annotations

import enum
import math
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs
from omniORB import CORBA

from cosnotify.history.payload import same_payload
from cosnotify.history.types import TypePath, check_pattern, matches, pattern_prefix
from cosnotify.store.history import HistoryScan

__all__ = ["DEFAULT_MAX_RESULTS", "MAX_IDS", "MAX_PREFIXES", "MAX_RESULTS_LIMIT", "EventId", "Order", "OrderBy",
           "Query", "Retained", "bad_query", "from_fields", "passes_constraint", "select"]

#: Events a query returns when it names no ``max_results``.
DEFAULT_MAX_RESULTS = 1_000
#: The most a query may ask for (``max_results`` above it is BAD_PARAM).
MAX_RESULTS_LIMIT = 100_000
#: Event ids a query may name at most.
MAX_IDS = 10_000
#: Past this many type patterns a store is not asked to narrow by them (one index
#: range each); every pattern is still checked.
MAX_PREFIXES = 64


class Order(enum.Enum):
    DESCENDING = "descending"
    ASCENDING = "ascending"


class OrderBy(enum.Enum):
    TIMESTAMP = "timestamp"
    SOURCE_TIMESTAMP = "sourceTimestamp"


@attrs.frozen(order=True)
class EventId:
    """Eventer's ``EventId``: the server, the session (the events one supply made
    together share it) and the instance (the store's id of the event)."""

    server: int
    session: int
    instance: int


#: Held while a stored record is decoded (Retained.stored): one decode an event, whatever
#: the threads reading it (a decode holds the GIL anyway).
_READING = threading.Lock()


@attrs.frozen(eq=False)
class Retained:
    """A retained event as a query sees it: ``timestamp`` is its arrival in the
    channel and ``source_timestamp`` its origin (Unix seconds, or None); ``payload``
    its remainder of body (an Any, or None); ``event`` the Structured Event.

    One read from a store (:meth:`stored`) decodes its record only when ``payload``
    or ``event`` is first asked for: a query that selects by the store's columns
    alone, and a caller that keeps an answer it already has (the Eventer front end's
    encoded events), never decode it."""

    id: EventId
    type: TypePath
    timestamp: float
    source_timestamp: float | None
    _payload: Any = None
    _event: Any = None
    #: The stored record (None once decoded) and what decodes it into ``(payload, event)``.
    _record: bytes | None = attrs.field(default=None, repr=False)
    _decode: Callable[[bytes], tuple[Any, Any]] | None = attrs.field(default=None, repr=False)

    @classmethod
    def stored(cls, event_id: EventId, type_path: TypePath, timestamp: float,
               source_timestamp: float | None, record: bytes,
               decode: Callable[[bytes], tuple[Any, Any]]) -> Retained:
        """A retained event read from a store: ``decode(record)`` gives its payload
        and Structured Event when first asked for (a failure raises there, each time)."""
        return cls(event_id, type_path, timestamp, source_timestamp, record=record,
                   decode=decode)

    @property
    def payload(self) -> Any:
        if self._record is not None:
            self._read()
        return self._payload

    @property
    def event(self) -> Any:
        if self._record is not None:
            self._read()
        return self._event

    def _read(self) -> None:
        with _READING:
            record = self._record
            if record is None:  # read meanwhile, on another thread
                return
            assert self._decode is not None
            payload, event = self._decode(record)
            object.__setattr__(self, "_payload", payload)
            object.__setattr__(self, "_event", event)
            object.__setattr__(self, "_record", None)  # last: read once this is None


def bad_query(reason: str) -> CORBA.BAD_PARAM:
    """The exception a malformed query raises (the reason in its message)."""
    return CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO, f"history query: {reason}")


def _range(low: float | None, high: float | None, what: str) -> None:
    if low is not None and high is not None and low > high:
        raise bad_query(f"{what}: from {low} is after to {high}")


@attrs.frozen
class Query:
    """One history query (module docstring); made through :func:`from_fields` or
    directly, checked either way."""

    server_id: int | None = None
    event_ids: tuple[EventId, ...] | None = None
    event_types: tuple[TypePath, ...] | None = None
    t_from: float | None = None
    t_to: float | None = None
    source_t_from: float | None = None
    source_t_to: float | None = None
    payload: Any = None
    order: Order = Order.DESCENDING
    order_by: OrderBy = OrderBy.TIMESTAMP
    unique_type: bool = False
    max_results: int | None = None
    grammar: str = "EXTENDED_TCL"
    constraint: str | None = None
    #: cosnotify's addition: continue a query after this event (the one a previous
    #: page ended with): only the events that follow it in the query's order. The
    #: store applies it (reader.py), ``select`` does not.
    after: EventId | None = None

    def __attrs_post_init__(self) -> None:
        for name in ("t_from", "t_to", "source_t_from", "source_t_to"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise bad_query(f"{name} {value} is not a finite time")
        if self.event_types is not None:  # tuples of tuples: one form for every store
            if isinstance(self.event_types, str) or any(
                    isinstance(p, str) for p in self.event_types):
                raise bad_query("event types are lists of segments, not strings")
            object.__setattr__(self, "event_types",
                               tuple(tuple(p) for p in self.event_types))
        _range(self.t_from, self.t_to, "timestamp")
        _range(self.source_t_from, self.source_t_to, "source timestamp")
        if self.max_results is not None:
            if self.max_results < 0:
                raise bad_query(f"max_results {self.max_results} is negative")
            if self.max_results > MAX_RESULTS_LIMIT:
                raise bad_query(f"max_results {self.max_results} is over the limit of "
                                f"{MAX_RESULTS_LIMIT}")
        if self.event_ids is not None and len(self.event_ids) > MAX_IDS:
            raise bad_query(f"{len(self.event_ids)} ids: at most {MAX_IDS}")
        for pattern in self.event_types or ():
            try:
                check_pattern(pattern)
            except ValueError as exc:
                raise bad_query(str(exc)) from None

    @property
    def limit(self) -> int:
        """The most events this query returns."""
        return DEFAULT_MAX_RESULTS if self.max_results is None else self.max_results

    def plan(self) -> HistoryScan:
        """What a store can narrow by in its indexes before :func:`select` checks all:
        the time ranges, the ids' instances, each type pattern's prefix (none past
        :data:`MAX_PREFIXES` patterns), and the order."""
        prefixes = None if self.event_types is None or len(self.event_types) > MAX_PREFIXES \
            else tuple(pattern_prefix(p) for p in self.event_types)
        instances = None if self.event_ids is None else tuple(
            sorted({i.instance for i in self.event_ids if 0 <= i.instance < 2**63}))
        return HistoryScan(self.t_from, self.t_to, self.source_t_from, self.source_t_to,
                           instances, prefixes, self.order is Order.ASCENDING,
                           self.order_by is OrderBy.SOURCE_TIMESTAMP)

    def admits(self, event: Retained) -> bool:
        """Every condition of the query but the constraint (module docstring)."""
        if self.server_id is not None and event.id.server != self.server_id:
            return False
        if self.event_ids is not None and event.id not in self.event_ids:
            return False
        if self.event_types is not None and not any(
                matches(p, event.type) for p in self.event_types):
            return False
        if self.t_from is not None and event.timestamp < self.t_from:
            return False
        if self.t_to is not None and event.timestamp > self.t_to:
            return False
        source = event.source_timestamp
        if self.source_t_from is not None and (source is None or source < self.source_t_from):
            return False
        if self.source_t_to is not None and (source is None or source > self.source_t_to):
            return False
        if self.payload is None:
            return True
        return event.payload is not None and same_payload(event.payload, self.payload)


def select(candidates: Iterable[Retained], query: Query,
           constraint: Callable[[Any], bool] | None = None) -> list[Retained]:
    """The events of ``candidates`` the query matches, ordered, unique by type if
    asked, at most ``query.limit`` (module docstring). ``constraint``: the query's
    compiled constraint (a Filter's ``match_structured``); one that raises does not
    match."""
    found = [e for e in candidates if query.admits(e) and passes_constraint(constraint, e)]
    descending = query.order is Order.DESCENDING
    # Equal timestamps go by the store's id (instance), as a store pages them.
    if query.order_by is OrderBy.TIMESTAMP:
        found.sort(key=lambda e: (e.timestamp, e.id.instance), reverse=descending)
    else:  # undefined source timestamps last, whatever the order (the seed)
        timed = sorted((e for e in found if e.source_timestamp is not None),
                       key=lambda e: (e.source_timestamp, e.id.instance), reverse=descending)
        found = timed + sorted((e for e in found if e.source_timestamp is None),
                               key=lambda e: e.id.instance)
    if query.unique_type:
        seen: set[TypePath] = set()
        unique = []
        for event in found:  # the first of each type in this order
            if event.type not in seen:
                seen.add(event.type)
                unique.append(event)
        found = unique
    return found[:query.limit]


def passes_constraint(constraint: Callable[[Any], bool] | None, event: Retained) -> bool:
    if constraint is None:
        return True
    structured = event.event  # a record that does not decode raises, as any read of it
    try:
        return bool(constraint(structured))
    except Exception:  # noqa: BLE001 - a constraint that fails on an event: no match
        return False


#: Query fields by the seed's names (``QueryData``) and their snake_case forms.
_FIELDS = {"serverId": "server_id", "ids": "event_ids", "types": "event_types",
           "tFrom": "t_from", "tTo": "t_to", "sourceTFrom": "source_t_from",
           "sourceTTo": "source_t_to", "payload": "payload", "order": "order",
           "orderBy": "order_by", "uniqueType": "unique_type", "maxResults": "max_results",
           "grammar": "grammar", "constraint": "constraint", "after": "after"}


def from_fields(fields: Mapping[str, Any]) -> Query:
    """A query from named fields (the seed's ``QueryData`` names, or snake_case):
    BAD_PARAM for an unknown field or a value of the wrong kind."""
    known = {**_FIELDS, **{v: v for v in _FIELDS.values()}}
    values: dict[str, Any] = {}
    for name, value in fields.items():
        field = known.get(name)
        if field is None:
            raise bad_query(f"unknown field {name!r}")
        if field in values:
            raise bad_query(f"field {field!r} given twice")
        values[field] = None if value is None else _convert(field, value)
    try:
        return Query(**{k: v for k, v in values.items() if v is not None})
    except (TypeError, ValueError) as exc:
        raise bad_query(str(exc)) from None


def _convert(field: str, value: Any) -> Any:
    try:
        if field == "server_id" or field == "max_results":
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError
            return value
        if field == "event_ids":
            if isinstance(value, (str, bytes)):
                raise TypeError
            return tuple(EventId(*(int(part) for part in _id_parts(item))) for item in value)
        if field == "after":
            return EventId(*(int(part) for part in _id_parts(value)))
        if field == "event_types":
            if isinstance(value, str) or any(isinstance(p, str) for p in value):
                raise TypeError
            return tuple(tuple(pattern) for pattern in value)
        if field in ("t_from", "t_to", "source_t_from", "source_t_to"):
            if isinstance(value, bool):
                raise TypeError
            return float(value)
        if field == "order":
            return Order(value)
        if field == "order_by":
            return OrderBy(value)
        if field == "unique_type":
            if not isinstance(value, bool):
                raise TypeError
            return value
        if field == "payload":
            if not isinstance(value, CORBA.Any):
                raise TypeError
            return value
        if not isinstance(value, str):
            raise TypeError
        return value
    except (TypeError, ValueError, KeyError, OverflowError):
        raise bad_query(f"field {field!r} cannot be {value!r:.80}") from None


def _id_parts(item: Any) -> tuple[Any, ...]:
    if isinstance(item, (str, bytes)):
        raise TypeError
    if isinstance(item, EventId):
        return (item.server, item.session, item.instance)
    if isinstance(item, Mapping):
        return (item["server"], item["session"], item["instance"])
    parts = tuple(item)
    if len(parts) != 3:
        raise ValueError
    return parts
