"""CORBA values as Elvin values, and the attributes of each event form (§6.1.4).

Strategy: Elvin has five value types (§6.1.4); in Python they are

    int32 -> int        int64 -> Int64 (an int subclass)     real64 -> float
    string -> str       opaque -> bytes

so a type test is one ``type(v) is ...``. Two sentinels stand for what is not a
value: ``MISSING`` (no attribute of that name: ``require`` is false) and
``None`` (an attribute whose CORBA type has no Elvin counterpart: present,
but bottom in every other use). Both fail every type test, which is how
"bottom for missing attributes" (§6.1.1) falls out of the generated code.

The CORBA -> Elvin mapping (docs/grammars/elvin4.md): short, long, ushort,
octet -> int32; boolean -> int32 0 or 1 (§6.1.4 "nor is there a boolean
data type. All of these can be implemented simply using the existing types");
longlong, ulong -> int64; ulonglong -> int64 when it is at most 2**63-1, else
unmapped; float, double (and long double) -> real64; char, wchar, string,
wstring -> string; sequence<octet> and octet arrays -> opaque; an Any is
looked through; typedefs are followed. Everything else (structs, enums,
fixed, other sequences, object references ...) is unmapped. Values are read
through omniORB descriptors (``runtime.strip``), never TypeCode methods.

Attributes: a structured event's fixed-header fields ``domain_name``,
``type_name``, ``event_name`` (which win over properties of the same name, as
``$type_name`` does in EXTENDED_TCL, paths.STRUCTURED_HEADER), then its
``filterable_data``, then its ``variable_header`` properties, the first of a
name winning; a typed event's properties (``domain_name``/``type_name`` from
its ``event_type`` pair first, as EXTENDED_TCL's typed form does); an Any
event's properties when it holds a PropertySeq, or its members when it holds a
struct, else nothing.
"""

from __future__ import annotations

from typing import Any, Final

from omniORB import CORBA, tcInternal

import CosNotification

from cosnotify.corba import descriptors as D
from cosnotify.filter.runtime import strip

__all__ = ["MISSING", "PLAIN_TYPECODES", "Int64", "any_attributes", "elvin_type",
           "elvin_value", "from_any", "typed_attributes"]

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
INT32_MIN: Final = -(2**31)
INT32_MAX: Final = 2**31 - 1


class Int64(int):
    """An Elvin int64 value (a plain ``int`` is an int32)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Int64({int(self)})"


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


#: The value of an attribute the notification does not have.
MISSING: Final = _Missing()

_INT32_KINDS: Final = frozenset({D.SHORT, D.LONG, D.USHORT, D.OCTET})
_REAL_KINDS: Final = frozenset({D.FLOAT, D.DOUBLE, D.LONGDOUBLE})
_CHAR_KINDS: Final = frozenset({D.CHAR, D.WCHAR})
_TEXT_KINDS: Final = frozenset({D.STRING, D.WSTRING})
_BYTES_KINDS: Final = frozenset({D.SEQUENCE, D.ARRAY})

#: TypeCode (omniORB keeps one per basic kind) -> the Python type of the Elvin value:
#: an Any of that TypeCode whose ``_v`` has exactly that type holds the Elvin value as
#: it is, the fast path of :func:`from_any`. Other ``_v`` (``Any(TC_double, 3)``,
#: ``Any(TC_long, True)``) are normalised by :func:`elvin_value`.
PLAIN_TYPECODES: Final[dict[Any, type]] = {
    tc: (int if key in _INT32_KINDS else float if key in _REAL_KINDS else str)
    for key, tc in tcInternal.basicTypeCodes.items()
    if key in (_INT32_KINDS | _REAL_KINDS | _CHAR_KINDS)
    or (type(key) is tuple and key[0] in _TEXT_KINDS)}

_PROPERTY_ID: Final = CosNotification.Property._NP_RepositoryId
_EVENT_TYPE_ID: Final = CosNotification.EventType._NP_RepositoryId


def elvin_value(value: Any, d: Any) -> Any:
    """The Elvin value of a CORBA value of descriptor ``d``; None if it has none."""
    found = strip(value, d)
    if found is None:
        return None
    value, _, base = found
    if type(base) is int:
        if base in _INT32_KINDS:  # bool and other int subclasses become a plain int
            # An Any made in process is not marshalled: its value may be past its kind's
            # range, and past int32 no Elvin int32 can carry it (review 67).
            if isinstance(value, int) and INT32_MIN <= value <= INT32_MAX:
                return int(value)
            return None
        if base in _REAL_KINDS:
            return float(value) if isinstance(value, (float, int)) else None
        if base == D.BOOLEAN:
            return int(bool(value))
        if base == D.LONGLONG or base == D.ULONG or base == D.ULONGLONG:
            if isinstance(value, int) and INT64_MIN <= value <= INT64_MAX:
                return Int64(value)
            return None
        if base in _CHAR_KINDS:
            return value if type(value) is str else None
        return None
    k = base[0]
    if k in _TEXT_KINDS:
        return value if type(value) is str else None
    if k in _BYTES_KINDS and D.kind(D.unalias(base[1])) == D.OCTET:
        if type(value) is bytes:
            return value
        if isinstance(value, (list, tuple)) and all(
                type(b) is int and 0 <= b <= 255 for b in value):
            return bytes(value)
    return None


def from_any(value: Any) -> Any:
    """The Elvin value held by a ``CORBA.Any`` (None for unmapped types or a non-Any)."""
    if type(value) is not CORBA.Any:
        return None
    plain = value._v
    if type(plain) is PLAIN_TYPECODES.get(value._t) and (
            type(plain) is not int or INT32_MIN <= plain <= INT32_MAX):
        return plain
    try:
        return elvin_value(value._v, value._t._d)
    except Exception:  # noqa: BLE001 - a bad descriptor is an unmapped value, never an error
        return None


def elvin_type(value: Any) -> str | None:
    """``int32``, ``int64``, ``real64``, ``string``, ``opaque`` or None."""
    return _TYPE_NAMES.get(type(value))


_TYPE_NAMES: Final = {int: "int32", Int64: "int64", float: "real64", str: "string",
                      bytes: "opaque"}


def _properties(seq: Any, out: dict[str, Any]) -> None:
    for prop in seq:
        name = getattr(prop, "name", None)
        if type(name) is str and name not in out:
            out[name] = from_any(getattr(prop, "value", None))


def typed_attributes(properties: Any) -> dict[str, Any]:
    """A typed event's attributes (§2.7 of Notification: the PropertySeq)."""
    out: dict[str, Any] = {}
    try:
        for prop in properties:
            if getattr(prop, "name", None) == "event_type":
                found = strip(prop.value, D.ANY)
                if found is not None and D.repo_id(found[2]) == _EVENT_TYPE_ID:
                    for member in ("domain_name", "type_name"):
                        text = getattr(found[0], member, None)
                        if type(text) is str and text:  # empty: absent, as structured
                            out[member] = text
                break
        _properties(properties, out)
    except Exception:  # noqa: BLE001 - a malformed event has the attributes read so far
        return out
    return out


def any_attributes(event: Any) -> dict[str, Any]:
    """An unstructured event's attributes: a PropertySeq's properties, a struct's
    members, else none."""
    out: dict[str, Any] = {}
    try:
        found = strip(event._v, event._t._d)
        if found is None:
            return out
        value, _, base = found
        if type(base) is not tuple:
            return out
        if base[0] == D.SEQUENCE:
            element = D.unalias(base[1])
            if type(element) is tuple and element[0] == D.STRUCT and element[2] == _PROPERTY_ID:
                _properties(value, out)
        elif base[0] == D.STRUCT:
            for name, member_d in D.members(base):
                if name not in out:
                    out[name] = elvin_value(getattr(value, D.attribute(name)), member_d)
    except Exception:  # noqa: BLE001 - a malformed event has the attributes read so far
        return out
    return out
