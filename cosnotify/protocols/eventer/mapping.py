"""Eventer events and queries on notification events, channels and the history store.

Strategy: pure functions between the codec's values (:mod:`.codec`) and the
core's: a RegisterEvent becomes a Structured Event, a delivered Structured Event
an Eventer ``Event``, a retained one (``cosnotify.history.query.Retained``) an
``Event`` too, and a ``QueryData`` a history ``Query`` (docs/protocols.md, "Eventer"
has the tables). The type path is docs/history.md's: ``(domain_name, type_name,
*Subtype)``.

Ids are the front end's own (:class:`Sessions`): one session per
MsgRegisterReq ("All events created based on a single MsgRegisterReq have the
same timestamp and same session identifier", the seed's "register event"),
instances 1, 2, ... within it, carried in the event's variable header as
``EventerId`` (``"server:session:instance"``) with its timestamp as
``EventerTimestamp`` (microseconds since 1970, an unsigned long long), so a
notification and a query return the id and timestamp the register returned. A session number is never
given twice, also across restarts: with a store, an epoch the store hands out
once per start (``next_value``) in the high bits and a count in the low 32;
without one, the microseconds since 1970 when the session is made, or one past
the last session if that is larger (a restart starts past every number used
before unless a burst of more than one session a microsecond ran ahead of the
clock by more than the restart took, or the clock went back). An event another
supplier put in the channel has no EventerId: a query gives it the store's
history session with bit :data:`FOREIGN_SESSION` set, so its id is never one of
these (both count from small epochs).

:class:`Subscription` is a MsgSubscribe's patterns as a tree of segments (as
hat-event's own ``Subscription``): matching a type costs its length, not the
number of patterns.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import omniORB
from omniORB import CORBA, tcInternal

import CosNotification as N
import TimeBase

from cosnotify.channel.clock import TIMET_EPOCH_OFFSET
from cosnotify.corba import descriptors as D
from cosnotify.history.payload import JSON_ID, SBS_DATA_ID
from cosnotify.history.query import MAX_IDS, MAX_RESULTS_LIMIT, Query, Retained, bad_query
from cosnotify.history.query import Order as HOrder
from cosnotify.history.query import OrderBy as HOrderBy
from cosnotify.history.records import SOURCE_TIMESTAMP
from cosnotify.history.types import SUBTYPE, check_pattern
from cosnotify.protocols.eventer.codec import (
    Event,
    EventId,
    Order,
    OrderBy,
    Payload,
    PayloadKind,
    QueryData,
    RegisterEvent,
    Timestamp,
)

__all__ = ["EVENTER_ID", "EVENTER_TIMESTAMP", "FOREIGN_SESSION", "JSON_TC", "MAX_IDS_CONSTRAINT",
           "SBS_DATA_TC", "Sessions", "Subscription", "Unmappable", "event_of_retained",
           "event_of_structured", "payload_any", "payload_of_any", "to_queries", "to_query",
           "to_structured"]

#: The variable-header property holding the Eventer id, ``"server:session:instance"``.
EVENTER_ID = "EventerId"
#: The variable-header property holding the Eventer timestamp: an unsigned long long of
#: microseconds since 1970 (equal to the event's arrival in the channel).
EVENTER_TIMESTAMP = "EventerTimestamp"

#: Set in the session of a queried event that no Eventer client registered (module
#: docstring): Eventer sessions (epoch << 32 | n, or microseconds since 1970) stay below.
FOREIGN_SESSION = 1 << 62

_MICROS_OFFSET = TIMET_EPOCH_OFFSET * 1_000_000     # 1582-10-15 .. 1970-01-01, in us
_MAX_TIMET = 2**64 - 1
#: Query bounds are widened by half a microsecond each way: a returned timestamp is
#: its instant rounded to the microsecond, so the bound it gives includes that event.
_HALF_MICRO = 5e-7

_OCTETS = (tcInternal.tv_sequence, tcInternal.tv_octet, 0)
#: ``binary`` payloads: ``sequence<octet>``.
OCTETS_TC = tcInternal.createTypeCode(_OCTETS)
#: ``json`` payloads: the text as sent, an alias of string.
_JSON_ID = JSON_ID
JSON_TC = tcInternal.createTypeCode((tcInternal.tv_alias, _JSON_ID, "Json", (tcInternal.tv_string, 0)))
_SBS_ID = SBS_DATA_ID
_SbsData = omniORB.createUnknownStruct(_SBS_ID, ["module", "type", "data"])
#: ``sbs`` payloads (``Hat.Data``): module (none or one string), type, data.
SBS_DATA_TC = tcInternal.createTypeCode(
    (tcInternal.tv_struct, _SbsData, _SBS_ID, "SbsData",
     "module", (tcInternal.tv_sequence, (tcInternal.tv_string, 0), 1),
     "type", (tcInternal.tv_string, 0), "data", _OCTETS))
_NULL = CORBA.Any(CORBA.TC_null, None)


class Unmappable(ValueError):
    """A RegisterEvent a notification event cannot carry (its registration fails)."""


class Sessions:
    """Session numbers never given twice (module docstring); thread-safe."""

    def __init__(self, store: Any = None) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._base = self._epoch() if store is not None else 0
        self._count = 0
        self._last = 0

    def _epoch(self) -> int:
        return int(self._store.next_value("eventer_session_epoch")) << 32

    def next(self) -> int:
        with self._lock:
            if self._store is None:  # the clock's microseconds, or one past the last
                self._last = max(self._last + 1, time.time_ns() // 1000)
                return self._last
            self._count += 1
            if self._count >= 2**32:
                self._base, self._count = self._epoch(), 1
            return self._base + self._count


class Subscription:
    """A MsgSubscribe's patterns as a tree (module docstring): :meth:`matches` is
    ``any(history.types.matches(p, path) for p in patterns)`` -- ``?`` one segment,
    ``*`` any rest -- walking the tree level by level, no recursion however long a
    type. A ``*`` must be a pattern's last segment: ValueError otherwise, as
    hat-event's own Subscription ("invalid query event type"; its server then closes
    the connection, and so does the session here)."""

    __slots__ = ("_root",)

    def __init__(self, patterns: Any) -> None:
        # A node: [is a pattern's end, has a "*" here, {segment: node}].
        self._root: list[Any] = [False, False, {}]
        for pattern in patterns:
            try:
                check_pattern(pattern)
            except ValueError as exc:
                raise ValueError(f"invalid query event type: {exc}") from None
            node = self._root
            for segment in pattern:
                if segment == "*":
                    node[1] = True
                    break
                node = node[2].setdefault(segment, [False, False, {}])
            else:
                node[0] = True

    def matches(self, path: tuple[str, ...]) -> bool:
        level = [self._root]
        for segment in path:
            following = []
            for node in level:
                if node[1]:
                    return True
                children = node[2]
                if (child := children.get(segment)) is not None:
                    following.append(child)
                if segment != "?" and (child := children.get("?")) is not None:
                    following.append(child)
            if not following:
                return False
            level = following
        return any(node[0] or node[1] for node in level)


# -- timestamps --------------------------------------------------------------------------------


def _utc(t: Timestamp) -> Any:
    """``t`` as a TimeBase::UtcT (100 ns since 1582); Unmappable past its range."""
    value = (_MICROS_OFFSET + t.s * 1_000_000 + t.us) * 10
    if not 0 <= value <= _MAX_TIMET:
        raise Unmappable(f"timestamp {t.s}.{t.us:06d} is outside TimeBase::UtcT")
    return CORBA.Any(TimeBase._tc_UtcT, TimeBase.UtcT(value, 0, 0, 0))


def _micros(t: Timestamp) -> int:
    """``t`` in microseconds since 1970 (EventerTimestamp; Unmappable before 1970)."""
    value = t.s * 1_000_000 + t.us
    if not 0 <= value <= _MAX_TIMET:
        raise Unmappable(f"timestamp {t.s}.{t.us:06d} is not an unsigned long long of us")
    return value


def _timestamp_of_micros(value: Any) -> Timestamp | None:
    micros = value.value() if isinstance(value, CORBA.Any) else None
    if type(micros) is not int or micros < 0:
        return None
    return Timestamp(micros // 1_000_000, micros % 1_000_000)


def _timestamp_of_timet(value: int) -> Timestamp:
    micros = (value + 5) // 10 - _MICROS_OFFSET
    return Timestamp(micros // 1_000_000, micros % 1_000_000)


def _header_timestamp(value: Any) -> Timestamp | None:
    """A UtcT or TimeT property value as a Timestamp (None for anything else)."""
    if not isinstance(value, CORBA.Any):
        return None
    d = D.unalias(D.resolve(value.typecode()._d))
    try:
        if D.equivalent(d, TimeBase._tc_UtcT._d):
            return _timestamp_of_timet(int(value.value().time))
        if D.equivalent(d, TimeBase._tc_TimeT._d):
            return _timestamp_of_timet(int(value.value()))
    except (AttributeError, TypeError, ValueError):
        return None
    return None


# -- payloads ----------------------------------------------------------------------------------


def _no_nul(text: str, what: str) -> str:
    if "\0" in text:
        raise Unmappable(f"{what} holds NUL (a CORBA string cannot)")
    return text


def _json_text(text: Any) -> str:
    """``text`` if it is JSON (as hat-event's server decodes a json payload on arrival,
    ``hat.json.decode``); Unmappable if not. Its size is the frame's (``max_frame``)."""
    if not isinstance(text, str):
        raise Unmappable("a json payload is not a string")
    try:
        json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise Unmappable(f"a json payload is not JSON: {exc!s:.100}") from None
    return text


def payload_any(payload: Payload) -> Any:
    """An Eventer payload as the remainder of body (docs/protocols.md, "Eventer")."""
    if payload.kind is PayloadKind.BINARY:
        return CORBA.Any(OCTETS_TC, _octets(payload.data))
    if payload.kind is PayloadKind.JSON:
        return CORBA.Any(JSON_TC, _no_nul(str(payload.data), "a json payload"))
    module = [] if payload.module is None else [_no_nul(payload.module, "an sbs module")]
    return CORBA.Any(SBS_DATA_TC, _SbsData(module, _no_nul(payload.type, "an sbs type"),
                                           _octets(payload.data)))


def _octets(data: bytes | str) -> bytes:
    return data.encode() if isinstance(data, str) else bytes(data)


def payload_of_any(body: Any) -> Payload | None:
    """The remainder of body as an Eventer payload: this front end's own kinds back as
    they came; an Any of tk_null as none; any other Any as ``json``: cosnotify's JSON
    form of the value (``cosnotify tail --format json``'s)."""
    if not isinstance(body, CORBA.Any):
        return None
    d = body.typecode()._d
    if d == D.NULL:  # the usual remainder of an event without a payload
        return None
    d = D.resolve(d)
    if D.kind(d) == D.ALIAS and D.repo_id(d) == _JSON_ID:
        return Payload(PayloadKind.JSON, str(body.value()))
    base = D.unalias(d)
    k = D.kind(base)
    if k == D.NULL:
        return None
    if k == D.STRUCT and D.repo_id(base) == _SBS_ID:
        value = body.value()
        module = list(value.module)
        return Payload(PayloadKind.SBS, bytes(value.data), module[0] if module else None,
                       value.type)
    if k == D.SEQUENCE and D.unalias(D.resolve(base[1])) == D.OCTET:
        return Payload(PayloadKind.BINARY, bytes(body.value()))
    from cosnotify.tools.eventjson import any_to_json

    return Payload(PayloadKind.JSON, json.dumps(any_to_json(body), ensure_ascii=False))


# -- events ------------------------------------------------------------------------------------


def _format_id(event_id: EventId) -> str:
    return f"{event_id.server}:{event_id.session}:{event_id.instance}"


def _parse_id(value: Any) -> EventId | None:
    """An ``EventerId`` header's id, if it is this front end's form (:func:`_format_id`:
    three ASCII decimal numbers, each an SBS Integer: below 2**63); None for any other
    text a supplier put there (a superscript digit passes ``str.isdigit`` but not
    ``int``; 4,300 digits pass neither ``int`` nor, far fewer, the SBS encoder)."""
    text = value.value() if isinstance(value, CORBA.Any) else None
    if type(text) is not str or not text.isascii() or len(text) > _MAX_ID_TEXT:
        return None
    parts = text.split(":")
    if len(parts) != 3:
        return None
    server, session, instance = parts
    if not (server.isdigit() and session.isdigit() and instance.isdigit()):
        return None
    made = EventId(int(server), int(session), int(instance))
    if max(made.server, made.session, made.instance) >= 2**63:
        return None
    return made


#: The longest EventerId text read: three numbers below 2**63 (19 digits) and two colons.
_MAX_ID_TEXT = 3 * 19 + 2


def to_structured(event: RegisterEvent, event_id: EventId, timestamp: Timestamp) -> Any:
    """A RegisterEvent as the Structured Event it enters the channel as; Unmappable when
    a notification event cannot carry it (fewer than two type segments, NUL in a
    string, a source timestamp outside UtcT) or it is not an Eventer event (a json
    payload that is not JSON: never stored, never forwarded)."""
    if len(event.type) < 2:
        raise Unmappable(f"type {list(event.type)} has fewer than the two segments "
                         "domain_name and type_name")
    for segment in event.type:
        _no_nul(segment, "a type segment")
    header = [N.Property(EVENTER_ID, CORBA.Any(CORBA.TC_string, _format_id(event_id))),
              N.Property(EVENTER_TIMESTAMP, CORBA.Any(CORBA.TC_ulonglong, _micros(timestamp)))]
    if len(event.type) > 2:
        header.append(N.Property(SUBTYPE, CORBA.Any(_STRINGS_TC, list(event.type[2:]))))
    if event.source_timestamp is not None:
        header.append(N.Property(SOURCE_TIMESTAMP, _utc(event.source_timestamp)))
    if event.payload is not None and event.payload.kind is PayloadKind.JSON:
        _json_text(event.payload.data)
    body = _NULL if event.payload is None else payload_any(event.payload)
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType(event.type[0], event.type[1]), ""),
                      header), [], body)


_STRINGS_TC = tcInternal.createTypeCode((tcInternal.tv_sequence, (tcInternal.tv_string, 0), 0))


def _headers(structured: Any) -> dict[str, Any]:
    return {p.name: p.value for p in structured.header.variable_header}


def _type_of(structured: Any, headers: dict[str, Any]) -> tuple[str, ...]:
    event_type = structured.header.fixed_header.event_type
    rest: list[str] = []
    value = headers.get(SUBTYPE)
    if isinstance(value, CORBA.Any):
        inner = value.value()
        if isinstance(inner, (list, tuple)) and all(isinstance(s, str) for s in inner):
            rest = list(inner)
    return (event_type.domain_name, event_type.type_name, *rest)


def event_of_structured(structured: Any, default_id: EventId,
                        default_timestamp: Timestamp) -> Event:
    """A delivered Structured Event as an Eventer Event: its EventerId and
    EventerTimestamp when it has them (an Eventer client's), else the defaults (the
    front end's id for a CORBA supplier's event, its delivery time)."""
    headers = _headers(structured)
    event_id = _parse_id(headers.get(EVENTER_ID)) or default_id
    timestamp = _timestamp_of_micros(headers.get(EVENTER_TIMESTAMP)) or default_timestamp
    return Event(event_id, _type_of(structured, headers), timestamp,
                 _header_timestamp(headers.get(SOURCE_TIMESTAMP)),
                 payload_of_any(structured.remainder_of_body))


def event_of_retained(retained: Retained, server_id: int) -> Event:
    """A retained event as an Eventer Event: its EventerId (an Eventer client's) or the
    store's id with this server's id; its timestamp is its arrival, to the microsecond."""
    structured = retained.event
    headers = _headers(structured)
    event_id = _parse_id(headers.get(EVENTER_ID)) or EventId(
        server_id, retained.id.session | FOREIGN_SESSION, retained.id.instance)
    timestamp = _timestamp_of_micros(headers.get(EVENTER_TIMESTAMP)) or Timestamp.of(
        retained.timestamp)
    return Event(event_id, tuple(retained.type), timestamp,
                 _header_timestamp(headers.get(SOURCE_TIMESTAMP)),
                 payload_of_any(structured.remainder_of_body))


# -- queries -----------------------------------------------------------------------------------


def _bound(t: Timestamp | None, widen: float) -> float | None:
    if t is None:
        return None
    return min(max(t.s + t.us / 1e6 + widen, -1e15), 1e15)


def _any_of(terms: list[str]) -> str:
    """``terms`` joined by ``or``, nested as a balanced tree (a deep chain would recurse
    once per term when it is evaluated)."""
    while len(terms) > 1:
        terms = [f"({terms[i]} or {terms[i + 1]})" if i + 1 < len(terms) else terms[i]
                 for i in range(0, len(terms), 2)]
    return terms[0]


#: The longest ids constraint one history query gets: the EXTENDED_TCL parser refuses
#: a constraint of more than 32,768 characters, ~1,100 ids of this server's.
MAX_IDS_CONSTRAINT = 30_000


def to_query(data: QueryData, server_id: int) -> Query | None:
    """A QueryData as a history Query; None when it matches nothing here (another
    server's id, only other servers' event ids, max_results below 1). A malformed one
    raises CORBA.BAD_PARAM (the Query's own checks). A query of more ids than one
    constraint holds: :func:`to_queries`."""
    queries = to_queries(data, server_id)
    return queries[0] if queries else None


def to_queries(data: QueryData, server_id: int) -> list[Query]:
    """A QueryData as history Queries, one per :data:`MAX_IDS_CONSTRAINT` characters of
    its ids' constraint (one without ids): the events of the QueryData are
    ``history.query.select`` over theirs (each returns the first ``max_results`` of
    its ids in the query's order, so the first of all are among them). None matches
    nothing here (as :func:`to_query`, or a payload no stored event can hold: a NUL
    in an sbs string, a json text that is not JSON): []."""
    if data.server_id is not None and data.server_id != server_id:
        return []
    if data.max_results is not None and data.max_results < 1:
        return []
    try:
        asked = data.payload
        payload = None if asked is None else payload_any(asked)
        if asked is not None and asked.kind is PayloadKind.JSON:
            _json_text(asked.data)  # compared as decoded JSON (history.payload)
    except Unmappable:  # a NUL, a text that is not JSON: no stored payload is the same
        return []
    constraints: list[str | None] = [None]
    if data.event_ids is not None:
        if len(data.event_ids) > MAX_IDS:
            raise bad_query(f"{len(data.event_ids)} ids: at most {MAX_IDS}")
        mine = sorted({_format_id(i) for i in data.event_ids if i.server == server_id})
        if not mine:
            return []
        constraints = []
        part: list[str] = []
        size = 0
        for text in mine:
            term = f"${EVENTER_ID} == '{text}'"
            if part and size + len(term) + 8 > MAX_IDS_CONSTRAINT:
                constraints.append(f"exist ${EVENTER_ID} and " + _any_of(part))
                part, size = [], 0
            part.append(term)
            size += len(term) + 8  # " or ", and a pair of parentheses
        constraints.append(f"exist ${EVENTER_ID} and " + _any_of(part))
    return [Query(
        event_types=None if data.event_types is None else tuple(data.event_types),
        t_from=_bound(data.t_from, -_HALF_MICRO),
        t_to=_bound(data.t_to, _HALF_MICRO),
        source_t_from=_bound(data.source_t_from, -_HALF_MICRO),
        source_t_to=_bound(data.source_t_to, _HALF_MICRO),
        payload=payload,
        order=HOrder.ASCENDING if data.order is Order.ASCENDING else HOrder.DESCENDING,
        order_by=HOrderBy.SOURCE_TIMESTAMP if data.order_by is OrderBy.SOURCE_TIMESTAMP
        else HOrderBy.TIMESTAMP,
        unique_type=data.unique_type,
        max_results=MAX_RESULTS_LIMIT if data.max_results is None
        else min(data.max_results, MAX_RESULTS_LIMIT),
        constraint=constraint) for constraint in constraints]
