"""How many bytes a tuple costs: an estimate of its event's encoded size.

Strategy: the space bounds its tuples in bytes (limits.MAX_BYTES), as
retention's RetainBytes bounds a history by the bytes its rows take. A
tuple's bytes are estimated from its event's values, about as CDR encodes
them -- a string or an octet sequence its length, a number or a boolean 8
bytes, a struct or a sequence its members, an Any its value (and a few
bytes of TypeCode) -- without marshalling anything, on the channel's push
path. The work is bounded: below MAX_DEPTH levels a value counts as
DEEP_VALUE bytes, and a sequence longer than SAMPLE is estimated from its
first SAMPLE elements. Python holds small values in more memory than this
(MAX_TUPLES bounds the per-tuple part); large payloads, the ones a byte
bound is for, cost about what is estimated.
"""

from __future__ import annotations

from typing import Any, Final

from omniORB import CORBA

__all__ = ["event_size"]

#: Elements of a sequence read to estimate it (the rest are assumed alike).
SAMPLE: Final = 32
#: Nesting levels read; a value deeper counts as DEEP_VALUE bytes.
MAX_DEPTH: Final = 16
DEEP_VALUE: Final = 64
#: A TypeCode, an object reference, or an unknown value.
OTHER: Final = 64

_SCALARS: Final = frozenset({bool, int, float})
_TEXT: Final = frozenset({str, bytes, bytearray})
_SEQUENCES: Final = frozenset({list, tuple})
_CorbaAny: Final = CORBA.Any


def _size(value: Any, depth: int) -> int:
    kind = type(value)
    if kind in _TEXT:
        return 4 + len(value)
    if kind in _SCALARS or value is None:
        return 8
    if depth >= MAX_DEPTH:
        return DEEP_VALUE
    if kind is _CorbaAny:
        return 8 + _size(value._v, depth + 1)
    if kind in _SEQUENCES:
        count = len(value)
        if count <= SAMPLE:
            return 4 + sum([_size(item, depth + 1) for item in value])
        sample = sum([_size(item, depth + 1) for item in value[:SAMPLE]])
        return 4 + sample * count // SAMPLE
    if isinstance(value, (str, bytes)):  # a subclass
        return 4 + len(value)
    members = getattr(value, "__dict__", None)
    if isinstance(members, dict) and not isinstance(value, CORBA.Object):
        return sum([_size(item, depth + 1) for name, item in members.items()
                    if name == "_v" or name[0] != "_"])  # a union's value is _v
    return OTHER


def _properties(props: Any) -> int:
    """A PropertySeq, the common values read at once."""
    total = 4
    for p in props:
        value = p.value._v
        kind = type(value)
        if kind is str:
            total += 16 + len(p.name) + len(value)
        elif kind in _SCALARS:
            total += 20 + len(p.name)
        else:
            total += 12 + len(p.name) + _size(value, 2)
    return total


def event_size(event: Any) -> int:
    """The estimated encoded bytes of a channel envelope's event (module docstring)."""
    try:
        if not event.is_structured:
            return max(1, _size(event.any, 0))
        structured = event.structured
        header = structured.header
        fixed = header.fixed_header
        kind = fixed.event_type
        return (12 + len(kind.domain_name) + len(kind.type_name) + len(fixed.event_name)
                + _properties(header.variable_header) + _properties(structured.filterable_data)
                + _size(structured.remainder_of_body, 0))
    except Exception:  # noqa: BLE001 - a value that cannot be walked: a small tuple
        return OTHER
