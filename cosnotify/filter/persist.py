"""Filters and mapping filters as plain records, and back (for the persistent store).

Strategy: a filter's state is its grammar and its constraints -- id, event
types, text and, for a mapping filter, the value -- plus a mapping filter's
default value. :func:`snapshot` reads that from the published constraint set
(never from a half-made change: the store's listener runs with the filter's
lock held) and :func:`restore` compiles it again with the same constraint
ids, so ``get_all_constraints`` after a restart answers what it answered
before. CORBA values (the Anys) are left in the record for the caller to
encode (cosnotify.channel.codec); nothing here touches the store.
"""

from __future__ import annotations

from typing import Any

import CosNotification
import CosNotifyFilter

from cosnotify.filter.constraints import compile_entry
from cosnotify.filter.factory import FilterFactory
from cosnotify.filter.filter import Filter
from cosnotify.filter.mapping import MappingFilter

__all__ = ["restore", "snapshot"]


def snapshot(flt: Filter | MappingFilter) -> dict[str, Any]:
    """The record of ``flt``: ``kind``, ``grammar``, ``constraints`` (and ``default``)."""
    mapping = isinstance(flt, MappingFilter)
    entries = sorted(flt._state.by_id.values(), key=lambda e: e.constraint_id)
    record: dict[str, Any] = {
        "kind": "mapping" if mapping else "filter",
        "grammar": flt._grammar_name,
        "destroyed": flt._is_destroyed,
        "next_id": flt._next_constraint_id,
        "constraints": [{
            "id": e.constraint_id,
            "types": [[t.domain_name, t.type_name] for t in e.expression.event_types],
            "text": e.expression.constraint_expr,
            "value": e.value if mapping else None,
        } for e in entries],
    }
    if isinstance(flt, MappingFilter):
        record["default"] = flt._default
    return record


def restore(factory: FilterFactory, record: dict[str, Any]) -> Filter | MappingFilter:
    """A filter made by ``factory`` again from its record, with the same constraint ids.

    Raises InvalidGrammar if the grammar is no longer known, and
    InvalidConstraint if a stored constraint no longer compiles.
    """
    grammar = factory._grammar(record["grammar"])
    flt: Filter | MappingFilter
    if record["kind"] == "mapping":
        flt = factory.create_mapping_filter(record["grammar"], record["default"])
    else:
        flt = factory.create_filter(record["grammar"])
    entries = []
    for item in record["constraints"]:
        expression = CosNotifyFilter.ConstraintExp(
            [CosNotification.EventType(d, t) for d, t in item["types"]], item["text"])
        if isinstance(flt, MappingFilter):
            entry = flt._compile(expression, item["value"], item["id"])
        else:
            entry = compile_entry(grammar, factory._context, expression, item["id"])
        entries.append(entry)
    flt._restore(entries, record.get("next_id", 1))
    return flt
