"""Elvin notifications <-> CosNotification structured events.

Strategy: an Elvin notification is a set of named, typed attributes (§5.3.1);
a structured event is a header plus name/value properties. The mapping is the
one the ELVIN4 grammar reads (docs/grammars/elvin4.md, "Attributes"), so an
ELVIN4 filter sees an Elvin producer's notification exactly as the producer
wrote it:

* Elvin -> CORBA (:func:`to_event`): string attributes ``domain_name``,
  ``type_name`` and ``event_name`` fill the fixed header (they are header
  names for the grammar, which win over properties); every other attribute
  is a ``filterable_data`` property, in the notification's order. int32 ->
  ``long``, int64 -> ``long long``, real64 -> ``double``, string ->
  ``string``, opaque -> ``sequence<octet>``: the inverse of the grammar's
  CORBA -> Elvin table, so a round trip keeps every type. The producer's
  public keys (keys.py) travel in the variable header as the opaque
  property :data:`KEYS_PROPERTY`.
* CORBA -> Elvin (:func:`from_event`): the non-empty header names, then the
  ``filterable_data`` properties, then the ``variable_header`` ones (the
  first of a name wins, as for the grammar), through the grammar's own
  converter (``values.from_any``); properties with no Elvin type are left
  out, since a notification cannot carry them.
"""

from __future__ import annotations

from typing import Any, Final

from omniORB import CORBA

import CosNotification as N

from cosnotify.filter.elvin4.values import Int64, from_any
from cosnotify.protocols.elvin import keys as K
from cosnotify.protocols.elvin.packets import NameValues, Value

__all__ = ["HEADER_NAMES", "KEYS_PROPERTY", "event_keys", "from_event", "to_any", "to_event"]

#: The fixed-header fields that are also attributes (docs/grammars/elvin4.md).
HEADER_NAMES: Final = ("domain_name", "type_name", "event_name")
#: The variable-header property carrying a notification's public keys (keys.pack).
KEYS_PROPERTY: Final = "elvin:keys"

_TC_OCTETS: Final = CORBA._tc_OctetSeq
_TC: Final[dict[type, Any]] = {int: CORBA.TC_long, Int64: CORBA.TC_longlong,
                               float: CORBA.TC_double, str: CORBA.TC_string,
                               bytes: _TC_OCTETS, bool: CORBA.TC_long}
_NULL: Final = CORBA.Any(CORBA.TC_null, None)
_Any = CORBA.Any
_Property = N.Property


def to_any(value: Value) -> Any:
    """An Elvin value as a CORBA Any of the mapped type."""
    kind = type(value)
    if kind is Int64:
        return _Any(CORBA.TC_longlong, int(value))
    if kind is bool:
        return _Any(CORBA.TC_long, int(value))
    return _Any(_TC[kind], value)


def to_event(attributes: NameValues, public: K.PublicKeys = K.NO_KEYS) -> Any:
    """A notification's structured event (see the module docstring)."""
    header = {"domain_name": "", "type_name": "", "event_name": ""}
    data = []
    for name, value in attributes:
        if name in header and type(value) is str:
            header[name] = value
        else:
            data.append(_Property(name, to_any(value)))
    variable = [_Property(KEYS_PROPERTY, _Any(_TC_OCTETS, K.pack(public)))] if public else []
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType(header["domain_name"], header["type_name"]),
                                         header["event_name"]), variable),
        data, _NULL)


def from_event(event: Any) -> NameValues:
    """A structured event's attributes as a notification carries them."""
    out: dict[str, Value] = {}
    fixed = event.header.fixed_header
    for name, value in (("domain_name", fixed.event_type.domain_name),
                        ("type_name", fixed.event_type.type_name),
                        ("event_name", fixed.event_name)):
        if value and type(value) is str:
            out[name] = value
    for source in (event.filterable_data, event.header.variable_header):
        for prop in source:
            name = prop.name
            if name in out or name == KEYS_PROPERTY or type(name) is not str:
                continue
            value = from_any(prop.value)
            if value is not None:
                out[name] = value
    return tuple(out.items())


def event_keys(event: Any) -> K.PublicKeys:
    """The public keys an Elvin producer's notification carries (none for others)."""
    for prop in event.header.variable_header:
        if prop.name == KEYS_PROPERTY:
            value = from_any(prop.value)
            return K.unpack(value) if type(value) is bytes else K.NO_KEYS
    return K.NO_KEYS
