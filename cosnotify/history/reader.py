"""A channel's history read back: ``channel.query(...)`` (docs/history.md).

Strategy: what is buffered is written first (a query sees every event the
channel accepted before it). The query's plan becomes a store scan, read a
page at a time in the query's order; each row is made a
:class:`~cosnotify.history.query.Retained` from its columns, its record
decoded into its Structured Event only when first read (a payload condition,
a constraint, or the caller), and
:func:`~cosnotify.history.query.select` checks every condition, the
constraint (compiled once, in the query's grammar, by a FilterFactory that
keeps nothing in the store; an unknown grammar or a bad constraint is
BAD_PARAM) included. The store reads in the query's order, so the scan
keeps what matches as it goes -- under ``unique_type`` only the first of each
type -- and stops once the query has all it returns, or after
:data:`MAX_SCANNED` rows (a query that matches little in a huge history
ends; docs/history.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
from omniORB import CORBA

import CosNotifyFilter

from cosnotify.channel import codec
from cosnotify.channel.topology import store_failures
from cosnotify.history.payload import payload_of
from cosnotify.history.query import (
    EventId,
    Query,
    Retained,
    bad_query,
    from_fields,
    passes_constraint,
)
from cosnotify.store.history import HistoryScan

__all__ = ["MAX_SCANNED", "PAGE", "Page", "decode_record", "query_channel", "query_page"]

#: Rows a query reads from the store at most.
MAX_SCANNED = 1_000_000
#: Rows read per page.
PAGE = 1_000
#: Rows the first page reads beyond the query's limit (some may not match).
FIRST_PAGE_SLACK = 16
#: The ``server`` of every event id this service gives (one server per store).
SERVER_ID = 0
#: Store ids are SQLite integers: an instance at or past this names no event.
MAX_ID = 2**63


@attrs.frozen
class Page:
    """What one query read: ``events``, and whether it stopped before reading all the
    store holds for it (``more``: it had ``max_results``, the reply's bytes, or
    :data:`MAX_SCANNED` rows); then ``resume`` is the last row it read, matching
    or not, for a next query's ``after`` (docs/history.md, "Reading on")."""

    events: list[Retained]
    more: bool = False
    resume: EventId | None = None


def query_channel(channel: Any, query: Query | None, fields: Mapping[str, Any]) -> list[Retained]:
    """``channel.query``: the events of :func:`query_page`."""
    return query_page(channel, query, fields).events


def query_page(channel: Any, query: Query | None, fields: Mapping[str, Any],
               max_bytes: int | None = None) -> Page:
    """A query of ``channel``'s history (module docstring); ``max_bytes``: stop once the
    events found hold that many bytes of encoded data (a reply's bound)."""
    if query is None:
        query = from_fields(fields)
    elif fields:
        raise bad_query("give a Query or its fields, not both")
    retention = channel._retention
    topology = channel._service.topology
    if topology is None:
        raise CORBA.BAD_INV_ORDER(0, CORBA.COMPLETED_NO, "this channel keeps no history: "
                                  "it has no store")
    with store_failures():
        if retention is not None:
            retention.flush(trim=True, once=True)
        made = _compiled(channel, query)
        try:
            return _scan(channel, topology.store, query,
                         made.match_structured if made is not None else None, max_bytes)
        finally:
            if made is not None:
                made.destroy()


def _scan(channel: Any, store: Any, query: Query, constraint: Any,
          max_bytes: int | None) -> Page:
    """Read the store in the query's order, keeping what matches (the first of each
    type under ``unique_type``), until the query has all it returns: the store's order
    is the query's (equal keys by id, as ``select`` orders them), so nothing read
    later could come before what is kept."""
    found: list[Retained] = []
    if query.limit == 0:
        return Page(found)
    plan = query.plan()
    now = channel._service.clock.now()
    passes = [False, True] if plan.by_source and query.source_t_from is None \
        and query.source_t_to is None else [False]
    types: set[Any] = set()
    scanned = 0
    size = 0
    start = None
    if query.after is not None:
        start = _cursor(channel, store, query.after, plan.by_source)
        if start is None:
            return Page(found)
        if start[0]:  # the event has no source timestamp: it is in the second pass
            passes = passes[1:]
    # The first page asks for a little more than the query returns (a query for 100
    # reads 116 rows, not 1,000: most of its time is the rows read); each next page
    # asks for twice as many, up to PAGE.
    page = min(PAGE, query.limit + FIRST_PAGE_SLACK)
    for nulls in passes:
        scan = attrs.evolve(plan, nulls=nulls, now=now)
        after = start[1] if start is not None and passes[0] == nulls else None
        while True:
            rows = store.read_history(f"ch/{channel._id}", scan, after, page)
            for row in rows:
                scanned += 1
                event = _retained(row, SERVER_ID)
                if query.admits(event) and passes_constraint(constraint, event) and not (
                        query.unique_type and event.type in types):
                    types.add(event.type)
                    found.append(event)
                    size += len(row.data)
                    if len(found) >= query.limit or (max_bytes is not None
                                                     and size >= max_bytes):
                        return Page(found, True, event.id)
                if scanned >= MAX_SCANNED:
                    return Page(found, True, event.id)
            if len(rows) < page:
                break
            page = min(PAGE, page * 2)
            last = rows[-1]
            after = ((last.source if plan.by_source and not nulls else last.arrival) or 0.0,
                     last.id)
    return Page(found)


def _cursor(channel: Any, store: Any, after: EventId, by_source: bool
            ) -> tuple[bool, tuple[float, int]] | None:
    """Where a query that continues ``after`` starts: (in the second pass?, cursor);
    None when the id is of another server (nothing follows it here). BAD_PARAM when
    the event is no longer retained: what followed it cannot be told."""
    if after.server != SERVER_ID:
        return None
    if not 0 <= after.instance < MAX_ID:
        raise bad_query(f"after: event {after.server}:{after.session}:{after.instance} is "
                        "not retained")
    rows = store.read_history(f"ch/{channel._id}", HistoryScan(instances=(after.instance,)),
                              None, 1)
    if not rows or rows[0].session != after.session:
        raise bad_query(f"after: event {after.server}:{after.session}:{after.instance} is "
                        "not retained (trimmed or expired): read again from a time")
    row = rows[0]
    if not by_source:
        return False, (row.arrival, row.id)
    if row.source is None:
        return True, (0.0, row.id)
    return False, (row.source, row.id)


def _retained(row: Any, server: int) -> Retained:
    # The row's type path and source timestamp are the event's, as the writer took them
    # from it (channel/retention.py): read back, not worked out again (a tenth of a query).
    # Its record is decoded when first read (Retained.stored).
    return Retained.stored(EventId(server, row.session, row.id), row.type, row.arrival,
                           row.source, row.data, decode_record)


def decode_record(data: bytes) -> tuple[Any, Any]:
    """A stored event record as ``(payload, Structured Event)``."""
    value = codec.decode_value(data)
    structured = value if not isinstance(value, CORBA.Any) else _structured_of(value)
    return payload_of(structured.remainder_of_body), structured


def _structured_of(value: Any) -> Any:
    """An event supplied as an Any, as the %ANY Structured Event (Table 2-2)."""
    from cosnotify.channel.event import from_any

    return from_any(value, 0.0).as_structured()


def _compiled(channel: Any, query: Query) -> Any:
    """The query's constraint as a Filter of its grammar, made by a FilterFactory of
    the channel's grammars that keeps nothing in the store (the caller destroys it)."""
    if query.constraint is None:
        return None
    from cosnotify.filter.factory import FilterFactory

    factory = FilterFactory(channel._get_default_filter_factory()._registry)
    try:
        made = factory.create_filter(query.grammar)
    except CosNotifyFilter.InvalidGrammar:
        raise bad_query(f"unknown grammar {query.grammar!r}") from None
    try:
        made.add_constraints([CosNotifyFilter.ConstraintExp([], query.constraint)])
    except CosNotifyFilter.InvalidConstraint:
        made.destroy()
        raise bad_query(f"invalid {query.grammar} constraint: {query.constraint}") from None
    return made
