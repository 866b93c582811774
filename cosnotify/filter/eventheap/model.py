"""Event Heap templates as values: fields, field types and the reserved fields.

Strategy: a template (Event Heap wire protocol, "Tuple Matching") is a tuple of
:class:`TemplateField` values, each a name, an Event Heap field type, a
:class:`FieldMode` (the seed's ACTUAL=0, FORMAL=1, VIRTUAL>=2 of "Semantics
for Value Transfer") and, for an actual field, its value as a plain Python
value (``None`` for the seed's NULL). Text (``syntax``) and the
``CosNotifyGrammars::Template`` IDL value (``corba``) both become this form,
and only this form is compiled (``compiler``).

Field types are the seed's fundamental types ("Semantics for Field
Transfer": boolean, int, long, float, double, string). Each is matched by a
set of CORBA kinds (:data:`KINDS`), after the IDL-to-Java mapping, since Event
Heap types are Java types: ``long``/``unsigned long`` are Java ``int``,
``long long``/``unsigned long long`` Java ``long``; ``short``, ``unsigned
short`` and ``octet`` widen to ``int`` without loss, so they count as ``int``
too. As in that mapping, an unsigned value keeps its bits: an ``unsigned
long`` above 2**31-1 is the negative Java int of the same 32 bits (4294967295
is -1), an ``unsigned long long`` above 2**63-1 the negative Java long
(:func:`java_integer`). Platform types ("EHJava.<class>") have no CORBA
counterpart and are rejected.

The reserved fields of the seed's Tables 1-3 ("Events versus Tuples") have a
fixed type and a fixed place in a Notification event (:data:`RESERVED`):
``EventType`` is the fixed header's ``type_name``, ``TimeToLive`` the
``Timeout`` QoS property (TimeBase::TimeT, 100 ns units, against the Event
Heap's milliseconds), every other one a property of its own name. The seed's
"Can be Overridden?" column fixes some template values (:attr:`Reserved.template`):
TimeToLive's is Formal ("Post value only"), SessionID's and SequenceNum's
Virtual ("No"); a template that gives them another is refused.
"""

from __future__ import annotations

import enum
import math
import struct
from typing import Any, Final

import attrs

from cosnotify.corba import descriptors as D

__all__ = [
    "FIELD_TYPES",
    "INT_RANGE",
    "KINDS",
    "LONG_RANGE",
    "RESERVED",
    "TIMEOUT",
    "TIMET_PER_MS",
    "FieldMode",
    "Place",
    "Reserved",
    "Template",
    "TemplateField",
    "java_equal",
    "java_integer",
    "to_float32",
]


class FieldMode(enum.Enum):
    """What a template value is (seed: "Semantics for Value Transfer")."""

    ACTUAL = 0
    FORMAL = 1
    VIRTUAL = 2


#: The seed's fundamental field types ("Semantics for Field Transfer").
FIELD_TYPES: Final = ("boolean", "int", "long", "float", "double", "string")

#: Event Heap field type -> the CORBA kinds (unaliased) whose values are of that type.
KINDS: Final[dict[str, frozenset[int]]] = {
    "boolean": frozenset({D.BOOLEAN}),
    "int": frozenset({D.SHORT, D.USHORT, D.LONG, D.ULONG, D.OCTET}),
    "long": frozenset({D.LONGLONG, D.ULONGLONG}),
    "float": frozenset({D.FLOAT}),
    "double": frozenset({D.DOUBLE}),
    "string": frozenset({D.STRING, D.WSTRING}),
}

#: Java int and long: the values an actual ``int`` or ``long`` field may hold.
INT_RANGE: Final = (-(2 ** 31), 2 ** 31 - 1)
LONG_RANGE: Final = (-(2 ** 63), 2 ** 63 - 1)

#: The Notification QoS property TimeToLive maps onto (§2.5.5), and its unit per ms.
TIMEOUT: Final = "Timeout"
TIMET_PER_MS: Final = 10_000


class Place(enum.Enum):
    """Where a field is read in a Notification event."""

    #: A property of the field's name (filterable_data, then variable_header).
    PROPERTY = "property"
    #: The fixed header's ``type_name`` (EventType).
    TYPE_NAME = "type_name"
    #: The ``Timeout`` QoS property, in 100 ns units (TimeToLive, in ms).
    TIMEOUT = "timeout"


@attrs.frozen
class Reserved:
    """A reserved field of the seed's Tables 1-3: its type, place and table.

    ``template`` is the template value the table fixes when its "Can be
    Overridden?" column forbids changing it (TimeToLive: Formal, "Post value
    only"; SessionID, SequenceNum: Virtual, "No"), with ``overridable`` the
    column's text; None when a template may give the field any value.
    """

    type: str
    place: Place
    table: str
    template: FieldMode | None = None
    overridable: str = "Yes."


def _reserved() -> dict[str, Reserved]:
    table: dict[str, Reserved] = {
        "EventType": Reserved("string", Place.TYPE_NAME, "Table 1"),
        "TimeToLive": Reserved("int", Place.TIMEOUT, "Table 1", FieldMode.FORMAL,
                               "Post value only."),
    }
    for name in ("Source", "Target", "SourceApplication", "TargetApplication",
                 "SourceDevice", "TargetDevice"):
        table[name] = Reserved("string", Place.PROPERTY, "Table 1")
    for name in ("SourcePerson", "TargetPerson", "SourceGroup", "TargetGroup"):
        table[name] = Reserved("string", Place.PROPERTY, "Table 2")
    for name in ("SessionID", "SequenceNum"):
        table[name] = Reserved("int", Place.PROPERTY, "Table 3", FieldMode.VIRTUAL, "No.")
    # "No." too, but its template value is not a fixed Formal or Virtual: the client sets
    # it to its own Event Heap version. A filter has no client library, so its writer
    # gives the version (docs/grammars/eventheap.md, "Reserved template values").
    table["EventHeapVersion"] = Reserved("int", Place.PROPERTY, "Table 3")
    return table


#: The reserved field names of the seed's Tables 1-3.
RESERVED: Final = _reserved()


@attrs.frozen
class TemplateField:
    """One template field: name, Event Heap type, mode and (if ACTUAL) value.

    ``value`` is a bool, int, float or str matching ``type``, or None for the
    seed's NULL actual value; it is None for FORMAL and VIRTUAL fields.
    ``position`` is where the field starts in the constraint text (-1 when the
    field did not come from text); it takes no part in equality.
    """

    name: str
    type: str
    mode: FieldMode
    value: Any = None
    position: int = attrs.field(default=-1, eq=False, repr=False)

    @property
    def place(self) -> Place:
        """Where the field is read in a Notification event."""
        reserved = RESERVED.get(self.name)
        return reserved.place if reserved is not None else Place.PROPERTY


@attrs.frozen
class Template:
    """A template: its fields, in order (names are unique)."""

    fields: tuple[TemplateField, ...] = ()

    @property
    def active(self) -> tuple[TemplateField, ...]:
        """The fields that take part in matching: every non-virtual one."""
        return tuple(f for f in self.fields if f.mode is not FieldMode.VIRTUAL)


#: Unsigned CORBA kind -> the bits of the Java type it maps to (IDL-to-Java: same bits).
_UNSIGNED_BITS: Final = {D.ULONG: 32, D.ULONGLONG: 64}


def java_integer(kind: int, value: Any) -> Any:
    """The Java value of an integer of CORBA ``kind``: an ``unsigned long`` or
    ``unsigned long long`` above the signed range wraps to the negative value of
    the same bits (4294967295 is -1), as the IDL-to-Java mapping reads it; any
    other value is returned unchanged."""
    bits = _UNSIGNED_BITS.get(kind)
    if bits is not None and type(value) is int and value >= 1 << (bits - 1):
        return value - (1 << bits)
    return value


def to_float32(value: float) -> float:
    """``value`` rounded to an IEEE single, as a CORBA (and Java) ``float`` holds it.

    Raises OverflowError when it is finite but beyond the single range.
    """
    result: float = struct.unpack(">f", struct.pack(">f", value))[0]
    return result


def java_equal(a: float, b: float) -> bool:
    """Java's ``Double.equals``: NaN equals NaN and 0.0 differs from -0.0."""
    if math.isnan(a):
        return math.isnan(b)
    return a == b and (a != 0.0 or math.copysign(1.0, a) == math.copysign(1.0, b))
