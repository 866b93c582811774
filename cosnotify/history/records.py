"""A Structured Event as a retained record: its type path, source timestamp and payload.

Strategy: the Eventer seed's ``Event`` has a ``timestamp`` (set by the server),
an optional ``sourceTimestamp`` (set by the source) and an optional
``payload``. On a notification event:

- ``timestamp`` is the event's arrival in the channel (Unix seconds, the
  channel's clock);
- ``sourceTimestamp`` is the variable-header property ``SourceTimestamp``,
  a ``TimeBase::UtcT`` or a ``TimeBase::TimeT`` (absent: undefined);
- ``payload`` is the remainder of body; an Any of ``tk_null`` is no payload.
  Two payloads are "the same" when their TypeCodes are equivalent and their
  values equal, member by member (``same_payload``).
"""

from __future__ import annotations

from typing import Any

from omniORB import CORBA

import TimeBase

from cosnotify.channel.clock import timet_to_seconds, utc_to_seconds
from cosnotify.corba import descriptors as D
from cosnotify.history.payload import payload_of
from cosnotify.history.query import EventId, Retained
from cosnotify.history.types import type_path

__all__ = ["SOURCE_TIMESTAMP", "path_and_source", "retain", "source_timestamp"]

#: The variable-header property that holds an event's source timestamp.
SOURCE_TIMESTAMP = "SourceTimestamp"


def source_timestamp(structured: Any) -> float | None:
    """The event's ``SourceTimestamp`` in Unix seconds, or None (module docstring)."""
    for prop in structured.header.variable_header:
        if prop.name != SOURCE_TIMESTAMP:
            continue
        value = prop.value
        if not isinstance(value, CORBA.Any):
            return None
        d = D.unalias(D.resolve(value.typecode()._d))
        if D.equivalent(d, TimeBase._tc_UtcT._d):
            return utc_to_seconds(value.value())
        if D.equivalent(d, TimeBase._tc_TimeT._d):
            return timet_to_seconds(value.value())
        return None
    return None


def path_and_source(structured: Any) -> tuple[tuple[str, ...], float | None]:
    """(type path, source timestamp) of ``structured``: what a history row keeps of
    every event, so an event without a variable header (most) costs one look."""
    if structured.header.variable_header:
        return type_path(structured), source_timestamp(structured)
    event_type = structured.header.fixed_header.event_type
    return (event_type.domain_name, event_type.type_name), None


def retain(structured: Any, event_id: EventId, arrival: float) -> Retained:
    """``structured`` as a query sees it (module docstring)."""
    return Retained(event_id, type_path(structured), arrival, source_timestamp(structured),
                    payload_of(structured.remainder_of_body), structured)
