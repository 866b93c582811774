"""Eventer event types on notification events: type paths and their ``?``/``*`` patterns.

Strategy: an Eventer event type is a path of strings (``EventType =
Array(String)``, the Eventer seed's "Chatter messages"); a notification event
has a ``domain_name``, a ``type_name`` and properties. cosnotify reads a
retained event's **type path** as::

    (domain_name, type_name, *Subtype)

where ``Subtype`` is an optional property of the variable header holding a
``sequence<string>`` (the segments past the first two; absent: none). So the
Eventer type ``("gateway", "device", "data")`` is ``domain_name`` ``gateway``,
``type_name`` ``device``, ``Subtype`` ``["data"]``; a plain notification event
``("Telecom", "CommunicationsAlarm")`` is the path of two segments its fixed
header names. docs/history.md records the choice.

Patterns, as the seed's queries and subscriptions use them ("including the ?
and * options"): ``?`` stands for exactly one segment, ``*`` for any number of
segments (none included) and may only be the last one, as hat-event's
``matches_query_type`` reads them. Everything here is pure: no channel, no
store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from omniORB import CORBA

__all__ = ["SUBTYPE", "TypePath", "check_pattern", "matches", "pattern_prefix", "type_path"]

#: The variable-header property that holds a type path's segments past the second.
SUBTYPE = "Subtype"

TypePath = tuple[str, ...]


def type_path(structured: Any) -> TypePath:
    """The type path of a Structured Event (module docstring)."""
    event_type = structured.header.fixed_header.event_type
    rest: list[str] = []
    for prop in structured.header.variable_header:
        if prop.name == SUBTYPE:
            value = prop.value.value() if isinstance(prop.value, CORBA.Any) else None
            if isinstance(value, (list, tuple)) and all(isinstance(s, str) for s in value):
                rest = list(value)
            break
    return (event_type.domain_name, event_type.type_name, *rest)


def check_pattern(pattern: Sequence[str]) -> TypePath:
    """``pattern`` as a tuple; ValueError if it is not a type pattern (``*`` not last,
    or a segment that is not a string: one error for the caller to report)."""
    found = tuple(pattern)
    for at, segment in enumerate(found):
        if not isinstance(segment, str):
            raise ValueError(f"type segment {segment!r} is not a string")  # noqa: TRY004
        if segment == "*" and at != len(found) - 1:
            raise ValueError(f"'*' must be the last segment of a type pattern: {list(found)}")
    return found


def matches(pattern: TypePath, path: TypePath) -> bool:
    """Does ``path`` match ``pattern`` (``?``: one segment, ``*`` last: any number)?"""
    for at, segment in enumerate(pattern):
        if segment == "*":
            return True
        if at >= len(path) or (segment != "?" and segment != path[at]):
            return False
    return len(path) == len(pattern)


def pattern_prefix(pattern: TypePath) -> TypePath:
    """The segments before the pattern's first wildcard: every path it matches starts
    with them (what a store can look up in an index before checking the rest)."""
    for at, segment in enumerate(pattern):
        if segment in ("?", "*"):
            return pattern[:at]
    return pattern
