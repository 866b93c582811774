"""What put_event accepts, and what an Event Heap client stamps on its events.

Strategy: put_event takes a ``CosNotification::StructuredEvent`` and checks
it as the seed's "Events versus Tuples" asks: an EventType ("In general, all
events must have an event type"; its post value "Must be overridden", so
an empty ``type_name``, the seed's INVALID_EVENT, is refused), properties
that are name-Any pairs, and the reserved fields of Tables 1-3 with their
types (Source a string, SessionID an integer...). A %ANY Structured Event
(Table 2-2 of the Notification Service: an Any in a wrapper) is refused:
the channel unwraps it to its Any (§2.1.4), so neither the wrapper's fields
-- a client's stamps among them -- nor the check of them would apply to the
event put. A refused event is ``CosNotifyEventHeap::InvalidEvent`` with the
reason, and nothing is supplied.

A connected client (the seed's "EventHeap object", clients.py) stamps its
events before they are checked, as Tables 1-3 make the client library do
"on posting": Source, SourceApplication, SourceDevice, SourcePerson and
SourceGroup (each only when the client has it; "Can be Overridden?
Template value only": a value the event carries is replaced), SessionID
and SequenceNum ("Set by EventHeap object on posting", overridden "No."),
all in ``filterable_data``; and a ``Timeout`` of 120,000 ms in the variable
header when the event has none (TimeToLive's post value; TimeToLive is the
Timeout QoS, docs/grammars/eventheap.md). The event given is not changed:
the stamped one is a new StructuredEvent.
"""

from __future__ import annotations

from typing import Any, Final

from omniORB import CORBA

import CosNotification
import TimeBase

from cosnotify.channel.event import ANY_TYPE_NAME
from cosnotify.corba import descriptors as D
from cosnotify.filter.eventheap.compiler import kind_and_value
from cosnotify.filter.eventheap.model import KINDS, RESERVED, TIMEOUT, TIMET_PER_MS, Place
from cosnotify.tuplespace.limits import DEFAULT_TIME_TO_LIVE
from cosnotify.tuplespace.records import invalid_event

__all__ = ["check_event", "stamp"]

_NULL_KINDS: Final = frozenset({D.NULL, D.VOID})
#: TimeToLive's post value as a Timeout (TimeBase::TimeT, 100 ns units).
DEFAULT_TIMEOUT: Final = round(DEFAULT_TIME_TO_LIVE * 1000) * TIMET_PER_MS


def check_event(event: Any) -> Any:
    """``event`` if put_event takes it (module docstring); else InvalidEvent."""
    if not isinstance(event, CosNotification.StructuredEvent):
        raise invalid_event(f"not a CosNotification::StructuredEvent: {event!r:.200}")
    try:
        type_name = event.header.fixed_header.event_type.type_name
        lists = (("filterable_data", event.filterable_data),
                 ("variable_header", event.header.variable_header))
    except AttributeError as exc:
        raise invalid_event(f"a malformed StructuredEvent: {exc}") from None
    if type_name == ANY_TYPE_NAME:
        raise invalid_event("an Any in its %ANY wrapper (Table 2-2): the channel would take "
                            "the Any out, without the wrapper's fields; put a "
                            "StructuredEvent with an EventType")
    if not isinstance(type_name, str) or not type_name:
        raise invalid_event("the event has no EventType (an empty type_name): \"In general, "
                            "all events must have an event type\" (Table 1: EventType "
                            "\"Must be overridden\")")
    seen: set[str] = set()
    for where, props in lists:
        if not isinstance(props, (list, tuple)):
            raise invalid_event(f"{where} is not a sequence of properties")
        for p in props:
            name, value = getattr(p, "name", None), getattr(p, "value", None)
            if not isinstance(name, str) or not isinstance(value, CORBA.Any):
                raise invalid_event(f"{where} holds {p!r:.100}, not a name and an Any")
            if name in seen:
                continue
            seen.add(name)
            reserved = RESERVED.get(name)
            if reserved is None or reserved.place is not Place.PROPERTY:
                continue
            found = kind_and_value(value)
            if found is None or (found[0] not in KINDS[reserved.type]
                                 and found[0] not in _NULL_KINDS):
                raise invalid_event(f"the reserved field {name} must be of type "
                                    f"{reserved.type} ({reserved.table}), not {value!r:.100}")
    return event


def _string(value: str) -> Any:
    return CORBA.Any(CORBA.TC_string, value)


def stamp(event: Any, fields: dict[str, str], session: int, number: int) -> Any:
    """``event`` with a client's fields (module docstring): ``fields`` maps Source,
    SourceApplication... to the client's values (empty ones left out)."""
    if not isinstance(event, CosNotification.StructuredEvent):
        raise invalid_event(f"not a CosNotification::StructuredEvent: {event!r:.200}")
    ours = [CosNotification.Property(name, _string(value))
            for name, value in fields.items() if value]
    ours.append(CosNotification.Property("SessionID", CORBA.Any(CORBA.TC_long, session)))
    ours.append(CosNotification.Property("SequenceNum", CORBA.Any(CORBA.TC_long, number)))
    names = {p.name for p in ours}
    try:
        filterable = [p for p in event.filterable_data if getattr(p, "name", None) not in names]
        header = event.header
        variable = list(header.variable_header)
    except (AttributeError, TypeError) as exc:
        raise invalid_event(f"a malformed StructuredEvent: {exc}") from None
    if not any(getattr(p, "name", None) == TIMEOUT for p in variable):
        variable.append(CosNotification.Property(
            TIMEOUT, CORBA.Any(TimeBase._tc_TimeT, DEFAULT_TIMEOUT)))
    return CosNotification.StructuredEvent(
        CosNotification.EventHeader(header.fixed_header, variable),
        ours + filterable, event.remainder_of_body)
