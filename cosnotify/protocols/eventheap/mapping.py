"""Event Heap tuples as Notification events and EVENTHEAP templates, and back.

Strategy: the tuple space (cosnotify/tuplespace, docs/history.md) keeps
events as ``CosNotification::StructuredEvent`` values and matches them with
the EVENTHEAP grammar, so a wire tuple is translated at the edge, once, in
three ways (docs/protocols.md, "Event Heap", "Type mapping"):

- **An event to put** (:func:`event_of`): its *post* values ("Tuples, when
  placed into the Event Heap as events ... have the post values for their
  fields active"). EventType is the fixed header's ``type_name`` (domain
  ``EventHeap``), TimeToLive the ``Timeout`` QoS (ms x 10,000, TimeBase::TimeT),
  every other field with an ACTUAL post value a property of
  ``filterable_data`` whose Any has the field type's CORBA kind. A FORMAL post
  value is left out: on Target, TargetApplication, TargetDevice, TargetPerson
  and TargetGroup that *is* the space's formal post value (a tuple without
  the field matches any template value of it); on any other field it is not
  supported. VIRTUAL post values are "inert" and left out.
- **A template** (:func:`template_of`): its *template* values ("Tuples passed
  to the Event Heap as template events in a retrieval call have the template
  values for their fields active"), as a grammar ``Template``; the grammar's
  checks (Tables 1-3) apply to it. A *formal* Source, SourceApplication or
  SourceDevice is left out: Table 1 has a client library put it on every
  template and set the post value on every event, so every event an Event
  Heap client puts carries them, and the only events without them are a
  CORBA supplier's, which the template would otherwise never find. An
  actual value of them is matched as written.
- **An event returned** (:func:`tuple_of`): a stored event's properties
  (``filterable_data``, then the variable header; the first of a name) as
  fields with the post value ACTUAL and, as its template value, what Tables
  1-3 fix for a reserved field (TimeToLive, Source... Formal; SessionID,
  SequenceNum, SourcePerson, SourceGroup Virtual) or else the value itself.
  Template values a client put are not kept by the space.

Anything that cannot be translated is :class:`MappingError` with the
reason; the session answers it with an error bundle.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from omniORB import CORBA, tcInternal

import CosNotification as N
import TimeBase

from cosnotify.filter.eventheap.compiler import kind_and_value
from cosnotify.filter.eventheap.model import (
    KINDS,
    TIMEOUT,
    TIMET_PER_MS,
    FieldMode,
    Template,
    TemplateField,
    java_integer,
)
from cosnotify.protocols.eventheap.codec import (
    ACTUAL,
    FORMAL,
    VIRTUAL,
    Field,
    Tuple,
    Value,
    is_platform_type,
)

__all__ = ["DOMAIN", "MappingError", "event_of", "template_of", "tuple_of"]

#: The domain_name of the events an Event Heap client puts (the seed has no domain).
DOMAIN: Final = "EventHeap"
#: The prefix of the alias TypeCode id that carries a platform type's name.
PLATFORM_ID: Final = "IDL:cosnotify/EventHeap/"
_INT_MAX: Final = 2**31 - 1
#: The longest TimeToLive: its Timeout (100 ns units) must fit a TimeBase::TimeT.
_MAX_TTL_MS: Final = (2**64 - 1) // TIMET_PER_MS
_OCTETS: Final = tcInternal.createSequenceTC(0, CORBA.TC_octet)
_KIND_TYPES: Final = {kind: ftype for ftype, kinds in KINDS.items() for kind in kinds}
_NULL: Final = CORBA.Any(CORBA.TC_null, None)
#: Table 1 and 2 names whose post value is "Formal": left out of a put event when formal.
FORMAL_POST: Final = frozenset({"Target", "TargetApplication", "TargetDevice",
                                "TargetPerson", "TargetGroup"})
#: The template value Tables 1-3 fix for a returned event's reserved fields.
_FIXED_TEMPLATE: Final = {
    "TimeToLive": Value(FORMAL), "Source": Value(FORMAL), "SourceApplication": Value(FORMAL),
    "SourceDevice": Value(FORMAL), "SourcePerson": Value(VIRTUAL),
    "SourceGroup": Value(VIRTUAL), "SessionID": Value(VIRTUAL),
    "SequenceNum": Value(VIRTUAL)}


class MappingError(ValueError):
    """A tuple that cannot be a Notification event or an EVENTHEAP template.

    ``kind``: the error's name in the error bundle (``InvalidEvent``,
    ``InvalidTemplate``); ``field``: the field at fault, or None.
    """

    def __init__(self, kind: str, reason: str, field: str | None = None) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason
        self.field = field


def _latin1(text: str) -> bool:
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


def _platform_tc(ftype: str) -> Any:
    return tcInternal.createAliasTC(f"{PLATFORM_ID}{ftype}:1.0", ftype, _OCTETS)


def _any(f: Field) -> Any:
    """The Any of an ACTUAL post value (the type mapping of docs/protocols.md, "Event Heap")."""
    v = f.post.value
    if v is None:
        return _NULL
    t = f.type
    if t == "boolean":
        return CORBA.Any(CORBA.TC_boolean, bool(v))
    if t == "int":
        return CORBA.Any(CORBA.TC_long, v)
    if t == "long":
        return CORBA.Any(CORBA.TC_longlong, v)
    if t == "float":
        return CORBA.Any(CORBA.TC_float, v)
    if t == "double":
        return CORBA.Any(CORBA.TC_double, v)
    if t == "string":
        if "\0" in v:
            raise MappingError("InvalidEvent", f"field {f.name!r:.60}: a CORBA string "
                               "cannot hold U+0000", f.name)
        return CORBA.Any(CORBA.TC_string if _latin1(v) else CORBA.TC_wstring, v)
    return CORBA.Any(_platform_tc(t), bytes(v))


def _check_name(name: str, what: str) -> None:
    if not name or "\0" in name or not _latin1(name):
        raise MappingError("InvalidEvent", f"{what} {name!r:.60} is not a CORBA string "
                           "(ISO-8859-1 text without U+0000, not empty)", name)


def event_of(tup: Tuple) -> Any:
    """The StructuredEvent of a tuple to put (module docstring); MappingError."""
    type_name = ""
    timeout: list[Any] = []
    props: list[Any] = []
    for f in tup.fields:
        post = f.post
        if f.name == "EventType":
            if f.type != "string" or not post.is_actual or not isinstance(post.value, str):
                raise MappingError("InvalidEvent", "EventType must be a string with an "
                                   "actual post value (Table 1: \"Must be overridden\")",
                                   f.name)
            _check_name(post.value, "the EventType")
            type_name = post.value
            continue
        if not post.is_actual:
            if post.is_formal and f.name not in FORMAL_POST:
                raise MappingError("InvalidEvent", f"field {f.name!r:.60} has a FORMAL "
                                   "post value: the tuple space keeps values only (a formal "
                                   "post value is supported on the Target fields alone)",
                                   f.name)
            continue  # a virtual value is inert; a formal Target field is its absence
        if f.name == "TimeToLive":
            if f.type not in ("int", "long") or post.value is None:
                raise MappingError("InvalidEvent", "TimeToLive must be an int of "
                                   "milliseconds (Table 1)", f.name)
            if post.value <= 0:
                raise MappingError("InvalidEvent", f"TimeToLive {post.value} ms: the "
                                   "event would never be retrievable (Table 1)", f.name)
            if post.value > _MAX_TTL_MS:
                raise MappingError("InvalidEvent", f"TimeToLive {post.value} ms is past "
                                   f"the longest Timeout a notification event can carry "
                                   f"({_MAX_TTL_MS} ms: TimeBase::TimeT)", f.name)
            timeout.append(N.Property(TIMEOUT, CORBA.Any(
                TimeBase._tc_TimeT, post.value * TIMET_PER_MS)))
            continue
        _check_name(f.name, "the field name")
        props.append(N.Property(f.name, _any(f)))
    if not type_name:
        raise MappingError("InvalidEvent", "the event has no EventType (Table 1: \"In "
                           "general, all events must have an event type\")", "EventType")
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType(DOMAIN, type_name), ""), timeout),
        props, _NULL)


_MODES: Final = {ACTUAL: FieldMode.ACTUAL, FORMAL: FieldMode.FORMAL}
#: Table 1 fields whose template value a client library sets to Formal on every template
#: and whose post value it sets on every event: a formal template value of them is not
#: required of an event (module docstring).
IMPLIED: Final = frozenset({"Source", "SourceApplication", "SourceDevice"})


def template_of(tup: Tuple) -> Template:
    """The grammar template of a retrieval tuple's template values; MappingError."""
    fields: list[TemplateField] = []
    for f in tup.fields:
        tv = f.template
        if tv.is_virtual:
            continue  # "This field is inert and will be ignored in any matching"
        if tv.is_formal and f.name in IMPLIED:
            continue
        if is_platform_type(f.type):
            raise MappingError("InvalidTemplate", f"field {f.name!r:.60} of platform type "
                               f"{f.type!r:.60} has a non-virtual template value: the tuple "
                               "space matches the fundamental types only", f.name)
        value = tv.value if tv.is_actual else None
        if f.type == "float" and value is not None:
            value = float(value)
        fields.append(TemplateField(f.name, f.type, _MODES[tv.mode], value))
    return Template(tuple(fields))


def _field_of(name: str, value: Any) -> Field | None:
    """A returned event's property as a field, or None if no field type holds it."""
    found = kind_and_value(value)
    if found is None:
        return None
    kind, inner = found
    ftype = _KIND_TYPES.get(kind)
    if ftype is None:
        tc = getattr(value, "_t", None)
        if inner is None:  # tk_null / tk_void: the seed's NULL (its type is not kept)
            post = Value(ACTUAL, None)
            return Field(name, "string", post, _FIXED_TEMPLATE.get(name, post))
        try:
            tc_id = tc.id() if tc is not None and tc.kind() == CORBA.tk_alias else ""
        except Exception:  # noqa: BLE001 - a TypeCode we cannot ask: not ours
            tc_id = ""
        if tc_id.startswith(PLATFORM_ID) and isinstance(inner, bytes):
            post = Value(ACTUAL, inner)
            return Field(name, tc_id[len(PLATFORM_ID):].rsplit(":", 1)[0], post,
                         _FIXED_TEMPLATE.get(name, post))
        return None
    if ftype in ("int", "long"):
        inner = java_integer(kind, inner)
    elif ftype == "float" or ftype == "double":
        inner = float(inner)
    elif ftype == "boolean":
        inner = bool(inner)
    post = Value(ACTUAL, inner)
    return Field(name, ftype, post, _FIXED_TEMPLATE.get(name, post))


def tuple_of(event: Any, serial: int = 0, expires_ms: int | None = None) -> Tuple:
    """The wire tuple of a stored or streamed StructuredEvent (module docstring)."""
    type_name = str(event.header.fixed_header.event_type.type_name)
    et = Value(ACTUAL, type_name)
    fields: list[Field] = [Field("EventType", "string", et, et)]
    seen = {"EventType", "TimeToLive", TIMEOUT}
    ttl = expires_ms
    props: Iterable[Any] = list(event.filterable_data) + list(event.header.variable_header)
    for p in props:
        name = getattr(p, "name", None)
        if not isinstance(name, str):
            continue
        if name == TIMEOUT and ttl is None:
            found = kind_and_value(p.value)
            if found is not None and isinstance(found[1], int):
                ttl = found[1] // TIMET_PER_MS
        if name in seen:
            continue
        seen.add(name)
        made = _field_of(name, p.value)
        if made is not None:
            fields.append(made)
    if ttl is not None:
        fields.insert(1, Field("TimeToLive", "int", Value(ACTUAL, max(0, min(ttl, _INT_MAX))),
                               Value(FORMAL)))
    return Tuple(serial if 0 < serial <= _INT_MAX else 0, tuple(fields))
