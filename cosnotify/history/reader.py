"""A channel's history read back: ``channel.query(...)`` (docs/history.md).

Strategy: what is buffered is written first (a query sees every event the
channel accepted before it). The query's plan becomes a store scan, read a
page at a time in the query's order; each row is decoded into its Structured
Event and made a :class:`~cosnotify.history.query.Retained`, and
:func:`~cosnotify.history.query.select` checks every condition, the
constraint (compiled once by the channel's filter factory, in the query's
grammar: an unknown grammar or a bad constraint is BAD_PARAM) included. The
scan stops once the query has all it can return -- except under
``unique_type``, which must see every event of the range -- or after
:data:`MAX_SCANNED` rows (a query that matches little in a huge history ends;
docs/history.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from omniORB import CORBA

import CosNotifyFilter

from cosnotify.channel import codec
from cosnotify.history.query import (
    EventId,
    Query,
    Retained,
    bad_query,
    from_fields,
    select,
)
from cosnotify.history.records import retain
from cosnotify.store.history import HistoryScan

__all__ = ["MAX_SCANNED", "PAGE", "query_channel"]

#: Rows a query reads from the store at most.
MAX_SCANNED = 1_000_000
#: Rows read per page.
PAGE = 1_000


def query_channel(channel: Any, query: Query | None, fields: Mapping[str, Any]) -> list[Retained]:
    if query is None:
        query = from_fields(fields)
    elif fields:
        raise bad_query("give a Query or its fields, not both")
    retention = channel._retention
    topology = channel._service.topology
    if topology is None:
        raise CORBA.BAD_INV_ORDER(0, CORBA.COMPLETED_NO, "this channel keeps no history: "
                                  "it has no store")
    if retention is not None:
        retention.flush(trim=True)
    constraint = _compiled(channel, query)
    server = getattr(channel._factory, "server_id", 0)
    plan = query.plan()
    now = channel._service.clock.now()
    passes = [False, True] if plan.by_source and query.source_t_from is None \
        and query.source_t_to is None else [False]
    found: list[Retained] = []
    scanned = 0
    for nulls in passes:
        scan = HistoryScan(plan.t_from, plan.t_to, plan.source_t_from, plan.source_t_to,
                           plan.instances, plan.type_prefixes, plan.ascending,
                           plan.by_source, nulls, now)
        after = None
        while scanned < MAX_SCANNED:
            rows = topology.store.read_history(f"ch/{channel._id}", scan, after, PAGE)
            scanned += len(rows)
            for row in rows:
                found.append(_retained(row, server))
            if not query.unique_type:
                found = select(found, query, constraint)  # order kept: cut early
                if len(found) >= query.limit:
                    return found[:query.limit]
            if len(rows) < PAGE:
                break
            last = rows[-1]
            after = ((last.source if plan.by_source and not nulls else last.arrival) or 0.0,
                     last.id)
    return select(found, query, constraint)


def _retained(row: Any, server: int) -> Retained:
    value, _ = codec.decode_event(row.data)
    structured = value if not isinstance(value, CORBA.Any) else _structured_of(value)
    return retain(structured, EventId(server, row.session, row.id), row.arrival)


def _structured_of(value: Any) -> Any:
    """An event supplied as an Any, as the %ANY Structured Event (Table 2-2)."""
    from cosnotify.channel.event import from_any

    return from_any(value, 0.0).as_structured()


def _compiled(channel: Any, query: Query) -> Any:
    if query.constraint is None:
        return None
    factory = channel._get_default_filter_factory()
    try:
        made = factory.create_filter(query.grammar)
    except CosNotifyFilter.InvalidGrammar:
        raise bad_query(f"unknown grammar {query.grammar!r}") from None
    try:
        made.add_constraints([CosNotifyFilter.ConstraintExp([], query.constraint)])
    except CosNotifyFilter.InvalidConstraint:
        made.destroy()
        raise bad_query(f"invalid {query.grammar} constraint: {query.constraint}") from None
    return made.match_structured


