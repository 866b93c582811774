"""Reading an accepted event as the EVENTHEAP grammar reads it.

Strategy: a tuple is matched by the grammar's own compiled matchers
(cosnotify/filter/eventheap), so the space never re-implements "Tuple
Matching". What it adds is an index, and an index must never miss an event
a matcher would take: the key of a property is computed here by the rules
the matchers apply (docs/grammars/eventheap.md, "Where fields are read" and
"Equivalence of actual values"): the *first* property of a name (in
``filterable_data``, then the variable header, for a structured event), its
Event Heap type from the CORBA kind (aliases and inner Anys read through),
and its value as Java compares it (an unsigned integer as its Java value; a
float rounded to an IEEE single; NaN equal to NaN, 0.0 not equal to -0.0).
A template's actual field gets the key of the values it matches, so a
bucket holds every candidate and the matcher decides. A template with no
actual property field narrows by its formal ones instead (a formal field
"matches any field with the same name and type"): their index keys a value
by its Event Heap type alone (a null Any by none: a formal field does not
match it).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable
from typing import Any, Final

from omniORB import CORBA, tcInternal

from cosnotify.corba import descriptors as D
from cosnotify.filter.eventheap.compiler import kind_and_value, properties_of_any
from cosnotify.filter.eventheap.model import (
    KINDS,
    FieldMode,
    Place,
    Template,
    java_integer,
    to_float32,
)
from cosnotify.tuplespace.records import Live

__all__ = ["FORMAL", "SEQUENCING", "first_values", "prop_keys", "props_of", "read_event",
           "sequencing_of", "template_keys"]

#: The fields sequencing reads (the seed's Tables 1 and 3).
SEQUENCING: Final = ("Source", "SessionID", "SequenceNum")
_KIND_TYPES: Final[dict[int, str]] = {kind: ftype for ftype, kinds in KINDS.items()
                                      for kind in kinds}
_NULL_KINDS: Final = frozenset({D.NULL, D.VOID})
_NULL_KEY: Final = ("null", None)

#: An index key: (Event Heap type or "null", the value as Java compares it, or FORMAL).
Key = tuple[str, Any]


class _Formal:
    """The value part of a formal key: any value of the type (never equal to a value)."""

    def __repr__(self) -> str:
        return "FORMAL"


FORMAL: Final = _Formal()


def _basic_kinds() -> dict[Any, int]:
    """omniORB's one TypeCode object per basic kind -> that kind (compiler.py's fast path),
    for the kinds whose value is the Any's own: an Event Heap type's, or null. Not
    ``any``: omniORB shares one TypeCode for every Any holding an Any, whose value is read
    through (:func:`kind_and_value`), as the grammar reads it."""
    found = {tc: (key if type(key) is int else key[0])
             for key, tc in tcInternal.basicTypeCodes.items()}
    return {tc: kind for tc, kind in found.items() if kind in _KIND_TYPES or kind in _NULL_KINDS}


_BASIC: Final = _basic_kinds()
_CorbaAny: Final = CORBA.Any


def _kind_value(value: Any) -> tuple[int, Any] | None:
    """:func:`kind_and_value`, with a fast path for the basic TypeCodes (by identity);
    None for a value it cannot read (the matchers find no match in it either)."""
    if type(value) is _CorbaAny:
        kind = _BASIC.get(value._t)
        if kind is not None:
            return kind, value._v
    try:
        return kind_and_value(value)
    except Exception:  # noqa: BLE001 - a TypeCode omniORB cannot walk: no value
        return None


def _bits(value: float) -> Any:
    """A double as Java's ``Double.equals`` compares it: by its bits, one NaN."""
    return "nan" if math.isnan(value) else struct.pack(">d", value)


def _norm(ftype: str, kind: int, value: Any) -> Any:
    if ftype in ("int", "long"):
        return java_integer(kind, value)
    if ftype == "float":
        return _bits(to_float32(float(value)))
    if ftype == "double":
        return _bits(float(value))
    if ftype == "boolean":
        return bool(value)
    return value


def prop_keys(value: Any, formal: bool = False) -> tuple[Key, ...]:
    """The index key of a property's value (an Any): its actual key (the null key for a
    null Any), or with ``formal`` its type's formal key; none when no such template field
    can match it (not an Any, or a kind the Event Heap has no type for)."""
    found = _kind_value(value)
    if found is None:
        return ()
    kind, inner = found
    if kind in _NULL_KINDS:
        return () if formal else (_NULL_KEY,)
    ftype = _KIND_TYPES.get(kind)
    if ftype is None:
        return ()
    if formal:
        return ((ftype, FORMAL),)
    try:
        return ((ftype, _norm(ftype, kind, inner)),)
    except (OverflowError, TypeError, ValueError):  # a float beyond the single range...
        return ()


def _seq_type_name(seq: Any) -> str | None:
    """EventType of a typed event: the ``type_name`` of its ``event_type`` pair (§2.7)."""
    for p in seq:
        if getattr(p, "name", None) == "event_type":
            found = kind_and_value(getattr(p, "value", None))
            name = getattr(found[1], "type_name", None) if found is not None else None
            return name if type(name) is str else None
    return None


def read_event(live: Live) -> None:
    """Fill ``live``'s form, subject and EventType from its envelope, as the grammar
    reads each form (compiler.py): structured, typed (§2.7) or an Any."""
    event = live.event
    typed = event.typed
    if typed is not None:
        live.form, live.subject = "typed", typed
        live.type_name = _seq_type_name(typed)
    elif event.is_structured:
        live.form, live.subject = "structured", event.structured
        live.type_name = event.type_name
    else:
        seq = properties_of_any(event.any)
        live.form, live.subject = "any", event.any
        live.type_name = _seq_type_name(seq) if seq is not None else None


def props_of(live: Live) -> tuple[Any, ...]:
    """``live``'s property lists in lookup order (``filterable_data``, then the variable
    header, for a structured event). Not kept on the tuple: a tuple holds as few objects
    as it can, since the collector walks every one it holds."""
    subject = live.subject
    if live.form == "structured":
        return subject.filterable_data, subject.header.variable_header
    if live.form == "typed":
        return (subject,)
    seq = properties_of_any(subject)
    return (seq,) if seq is not None else ()


def first_values(props: Iterable[Any], wanted: frozenset[str] | set[str]) -> dict[str, Any]:
    """The value of the first property of each ``wanted`` name, in lookup order."""
    found: dict[str, Any] = {}
    need = len(wanted)
    for seq in props:
        for p in seq:
            name: Any = getattr(p, "name", None)
            if name in wanted and name not in found:
                found[name] = getattr(p, "value", None)
                if len(found) == need:
                    return found
    return found


def sequencing_of(values: dict[str, Any]) -> tuple[str, int, int] | None:
    """(Source, SessionID, SequenceNum) when the event carries all three with the
    seed's types (String, Integer, Integer: Tables 1 and 3), else None."""
    source = _kind_value(values.get("Source"))
    if source is None or _KIND_TYPES.get(source[0]) != "string":
        return None
    session = _kind_value(values.get("SessionID"))
    number = _kind_value(values.get("SequenceNum"))
    if session is None or number is None:
        return None
    if _KIND_TYPES.get(session[0]) != "int" or _KIND_TYPES.get(number[0]) != "int":
        return None
    return (source[1], java_integer(session[0], session[1]),
            java_integer(number[0], number[1]))


def template_keys(template: Template) -> tuple[tuple[str, ...], tuple[tuple[str, Key], ...], bool]:
    """What an index can narrow ``template`` by: the EventType values its actual
    EventType field asks for (none or one), its actual property fields as (name, key) --
    or, when it has none, its formal ones -- and whether it can match at all
    (``EventType = null`` never does: a type name is a string)."""
    types: list[str] = []
    props: list[tuple[str, Key]] = []
    formals: list[tuple[str, Key]] = []
    for f in template.active:
        if f.mode is FieldMode.FORMAL:
            if f.place is Place.PROPERTY:
                formals.append((f.name, (f.type, FORMAL)))
            continue
        if f.place is Place.TYPE_NAME:
            if f.value is None:
                return (), (), False
            types.append(f.value)
        elif f.place is Place.PROPERTY:
            if f.value is None:
                props.append((f.name, _NULL_KEY))
            else:
                kind = D.LONG if f.type == "int" else D.LONGLONG if f.type == "long" else 0
                props.append((f.name, (f.type, _norm(f.type, kind, f.value))))
    return tuple(types), tuple(props or formals), True
