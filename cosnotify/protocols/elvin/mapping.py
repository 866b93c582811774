"""Elvin notifications <-> CosNotification structured events.

Strategy: an Elvin notification is a set of named, typed attributes (§5.3.1);
a structured event is a header plus name/value properties. The mapping is the
one the ELVIN4 grammar reads (docs/grammars/elvin4.md, "Attributes"), so an
ELVIN4 filter sees an Elvin producer's notification exactly as the producer
wrote it:

* Elvin -> CORBA (:func:`to_event`): non-empty string attributes
  ``domain_name``, ``type_name`` and ``event_name`` fill the fixed header
  (they are header names for the grammar, which win over properties; an
  empty field is no attribute); every other attribute is a
  ``filterable_data`` property, in the notification's order. A repeated
  name's later attributes are dropped (the grammar reads the first). int32 ->
  ``long``, int64 -> ``long long``, real64 -> ``double``, string ->
  ``string`` when it is ISO-8859-1 text, else ``wstring`` (omniORB marshals a
  ``string`` in ISO-8859-1 only: DATA_CONVERSION on IIOP and in the store;
  such a header attribute stays a property), opaque -> ``sequence<octet>``:
  the inverse of the grammar's CORBA -> Elvin table, so a round trip keeps
  every type. The producer's
  public keys (keys.py) travel in the variable header as the opaque
  property :data:`KEYS_PROPERTY`, **sealed**: an HMAC-SHA256, under the
  front end's secret, of the keys and the notification's attributes comes
  first. Any CORBA supplier can write a variable-header property, so an
  unsealed one would let it claim an Elvin producer's keys and reach key
  holders as a secure match (§7.4.15); :func:`event_keys` only believes a
  seal it can verify, so a forged or copied-onto-other-content property is
  no key at all.
* CORBA -> Elvin (:func:`from_event`): the non-empty header names, then the
  ``filterable_data`` properties, then the ``variable_header`` ones (the
  first of a name wins, as for the grammar), through the grammar's own
  converter (``values.from_any``); properties with no Elvin type are left
  out, since a notification cannot carry them; so are names that are no Elvin
  attribute name (:func:`elvin_name`: §5.3.1, printable ASCII, at most 1024
  bytes, not empty; review 130), strings holding NUL (§7.4: "no NUL bytes")
  and, when encoding meets one, strings that are not UTF-8-encodable
  (:func:`sendable`).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any, Final

from omniORB import CORBA

import CosNotification as N

from cosnotify.filter.elvin4.values import Int64, from_any
from cosnotify.protocols.elvin import keys as K
from cosnotify.protocols.elvin.packets import NameValues, Value, encode_attributes

__all__ = ["HEADER_NAMES", "KEYS_PROPERTY", "MAX_NAME", "elvin_name", "event_keys",
           "from_event", "sendable", "to_any", "to_event"]

#: The fixed-header fields that are also attributes (docs/grammars/elvin4.md).
HEADER_NAMES: Final = ("domain_name", "type_name", "event_name")
#: The variable-header property carrying a notification's public keys (keys.pack), sealed.
KEYS_PROPERTY: Final = "elvin:keys"
#: The seal's length: an HMAC-SHA256.
SEAL_SIZE: Final = 32
#: §5.3.1: "The maximum length of an attribute name is 1024 bytes".
MAX_NAME: Final = 1024

_TC_OCTETS: Final = CORBA._tc_OctetSeq
_TC: Final[dict[type, Any]] = {int: CORBA.TC_long, Int64: CORBA.TC_longlong,
                               float: CORBA.TC_double, str: CORBA.TC_string,
                               bytes: _TC_OCTETS, bool: CORBA.TC_long}
_NULL: Final = CORBA.Any(CORBA.TC_null, None)
_Any = CORBA.Any
_Property = N.Property


def elvin_name(name: str) -> bool:
    """Is ``name`` an Elvin attribute name? §5.3.1: "An attribute name is a string value
    from a subset of the printable ASCII character set. The maximum length of an
    attribute name is 1024 bytes"; and not empty (the front end's input check too)."""
    return 0 < len(name) <= MAX_NAME and name.isascii() and name.isprintable()


def _latin1(text: str) -> bool:
    """Can a CORBA ``string`` carry ``text``? omniORB's native code set for ``string`` is
    ISO-8859-1: other text raises DATA_CONVERSION when marshalled (IIOP, the store)."""
    if text.isascii():
        return True
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


def to_any(value: Value) -> Any:
    """An Elvin value as a CORBA Any of the mapped type (a string that is not ISO-8859-1
    as a ``wstring``, review 130)."""
    kind = type(value)
    if kind is Int64:
        return _Any(CORBA.TC_longlong, int(value))
    if kind is bool:
        return _Any(CORBA.TC_long, int(value))
    if kind is str and not _latin1(value):  # type: ignore[arg-type]
        return _Any(CORBA.TC_wstring, value)
    return _Any(_TC[kind], value)


def _seal(secret: bytes, packed: bytes, attributes: NameValues) -> bytes:
    """The HMAC binding ``packed`` keys to an event's ``attributes`` (from_event's)."""
    content = len(packed).to_bytes(4, "big") + packed + encode_attributes(attributes)
    return hmac.new(secret, content, hashlib.sha256).digest()


def _carried_whole(event: Any, attributes: NameValues) -> bool:
    """Is ``attributes`` (from_event's) all of ``event`` but its keys? Only then does the
    seal cover all an ELVIN4 filter reads: a property from_event leaves out (a type with
    no Elvin value, a string holding NUL, a later property of a name) is still there for
    the filter (review 97: copied onto such an event, a seal let the added property reach
    key holders as a secure match). An event made by :func:`to_event` always is."""
    body = event.remainder_of_body
    if not (isinstance(body, CORBA.Any) and body.typecode().kind() == CORBA.tk_null):
        return False
    if len(event.header.variable_header) != 1:        # the keys alone
        return False
    fixed = event.header.fixed_header
    header = sum(1 for value in (fixed.event_type.domain_name, fixed.event_type.type_name,
                                 fixed.event_name) if value)
    return len(attributes) == header + len(event.filterable_data)


def to_event(attributes: NameValues, public: K.PublicKeys = K.NO_KEYS,
             secret: bytes = b"") -> Any:
    """A notification's structured event (see the module docstring); ``public`` keys are
    sealed with ``secret`` (the front end's, Router.secret)."""
    header = {"domain_name": "", "type_name": "", "event_name": ""}
    data = []
    seen: set[str] = set()
    for name, value in attributes:
        # The first attribute of a name is the attribute (a repeat is dropped: from_event,
        # the grammar and the seal read only the first; review 99).
        if name in seen:
            continue
        seen.add(name)
        # An empty string is no header field (from_event and the grammar read an empty
        # field as absent): the attribute stays a property, so it is kept. So does text
        # a CORBA string cannot carry (not ISO-8859-1): a wstring property (review 130).
        if name in header and type(value) is str and value and _latin1(value):
            header[name] = value
        else:
            data.append(_Property(name, to_any(value)))
    variable: list[Any] = []
    event = N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType(header["domain_name"], header["type_name"]),
                                         header["event_name"]), variable),
        data, _NULL)
    if public:
        packed = K.pack(public)
        seal = _seal(secret, packed, from_event(event))
        variable.append(_Property(KEYS_PROPERTY, _Any(_TC_OCTETS, seal + packed)))
    return event


def from_event(event: Any) -> NameValues:
    """A structured event's attributes as a notification carries them."""
    out: dict[str, Value] = {}
    fixed = event.header.fixed_header
    for name, value in (("domain_name", fixed.event_type.domain_name),
                        ("type_name", fixed.event_type.type_name),
                        ("event_name", fixed.event_name)):
        if value and type(value) is str and "\0" not in value:
            out[name] = value
    for source, hidden in ((event.filterable_data, ""),
                           (event.header.variable_header, KEYS_PROPERTY)):
        for prop in source:
            name = prop.name
            # The keys are the variable header's; an attribute of that name is data.
            if name in out or name == hidden or type(name) is not str or not elvin_name(name):
                continue
            value = from_any(prop.value)
            if value is not None and not (type(value) is str and "\0" in value):
                out[name] = value      # §7.4: an Elvin string has "no NUL bytes"
    return tuple(out.items())


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def sendable(attributes: NameValues) -> NameValues:
    """``attributes`` without the string values UTF-8 cannot encode (lone surrogates a
    CORBA string may hold): a notification carries UTF-8 (§5.3.1). Names are ASCII."""
    return tuple((name, value) for name, value in attributes
                 if type(value) is not str or _utf8(value))


def event_keys(event: Any, secret: bytes = b"") -> K.PublicKeys:
    """The public keys an Elvin producer's notification carries: none for other events, and
    none when the seal does not verify under ``secret`` (a forgery, or another front end's)."""
    for prop in event.header.variable_header:
        if prop.name == KEYS_PROPERTY:
            value = from_any(prop.value)
            if type(value) is not bytes or len(value) <= SEAL_SIZE:
                return K.NO_KEYS
            seal, packed = value[:SEAL_SIZE], value[SEAL_SIZE:]
            attributes = from_event(event)
            try:
                if not _carried_whole(event, attributes) or not hmac.compare_digest(
                        seal, _seal(secret, packed, attributes)):
                    return K.NO_KEYS
            except UnicodeEncodeError:  # a CORBA string that is not text: not an Elvin one
                return K.NO_KEYS
            return K.unpack(packed)
    return K.NO_KEYS
