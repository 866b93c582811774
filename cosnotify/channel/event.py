"""The channel's internal event envelope and the Table 2-2 translations.

Strategy: an event enters the channel once, at a proxy consumer, and is
wrapped in one :class:`Event` shared by every proxy supplier it reaches. The
envelope keeps the form the supplier used and converts to the other form on
demand, at most once (spec section 2.1.4, Table 2-2):

* Any -> Structured: ``type_name`` "%ANY", empty ``domain_name``, the Any in
  ``remainder_of_body``.
* Structured -> Any: an Any holding the StructuredEvent.

The anti-wrapping rules of section 2.1.4 are applied on entry by
:func:`from_any` and :func:`from_structured`: a Structured Event whose type
is %ANY is unwrapped to its Any, and an Any holding a StructuredEvent is
unwrapped to the StructuredEvent, *before* filtering. Sequences are taken
apart into single events by the proxies (section 2.1.4: a sequence of n is n
events). Events are omniORB values: whether an Any holds a StructuredEvent is
read from its TypeCode's descriptor (``cosnotify.corba.descriptors``): by
identity for the stub's own TypeCode, by repository id for one that came
from the wire, never through ``CORBA.TypeCode`` methods.

Per-event QoS (Priority, Timeout, StopTime, StartTime) is resolved when the
envelope is made, from the header and the receiving proxy's QoS (section
2.2, Table 2-4), so queues compare plain numbers.
"""

from __future__ import annotations

import itertools
from typing import Any

from omniORB import CORBA

import CosNotification

from cosnotify.corba import descriptors as D
from cosnotify.corba.marshal import any_holds_big_ulonglong, structured_holds_big_ulonglong

__all__ = [
    "ANY_TYPE_NAME",
    "TYPED_TYPE_NAME",
    "Event",
    "empty_structured_event",
    "from_any",
    "from_structured",
    "typed_sequence",
]

ANY_TYPE_NAME = "%ANY"
TYPED_TYPE_NAME = "%TYPED"

_sequence = itertools.count()

_TC_STRUCTURED = CosNotification._tc_StructuredEvent
#: The stub's descriptor: an Any made in process with ``_TC_STRUCTURED`` carries this one.
_D_STRUCTURED = _TC_STRUCTURED._d
_STRUCTURED_ID = CosNotification.StructuredEvent._NP_RepositoryId


class Event:
    """One event inside the channel, shared by all the proxies it reaches.

    ``priority``, ``deadline`` (absolute expiry, or None) and ``start`` (the
    earliest delivery time, or None) are the values resolved at entry; a
    proxy supplier's mapping filters may override priority and lifetime for
    its own copy (see ``queue.Entry``).
    """

    __slots__ = (
        "__weakref__",  # durable.py shares an event read back among its proxies
        "any",
        "arrival",
        "counted",
        "deadline",
        "domain_name",
        "holders",
        "is_structured",
        "lifetime",
        "lifetime_source",
        "mark",
        "priority",
        "priority_source",
        "qos_header",
        "refs",
        "reliability",
        "seq",
        "stage",
        "start",
        "stop_time",
        "structured",
        "type_name",
        "typed",
        "unsendable",
    )

    def __init__(self, structured: Any, any_value: Any, arrival: float) -> None:
        self.structured = structured
        self.any = any_value
        #: True when the supplier sent a Structured Event (False: an Any).
        self.is_structured = structured is not None
        if structured is not None:
            event_type = structured.header.fixed_header.event_type
            self.domain_name = event_type.domain_name
            self.type_name = event_type.type_name
            #: The variable header whose standard fields carry per-event QoS.
            self.qos_header = structured.header.variable_header
        else:
            self.domain_name = ""
            self.type_name = ANY_TYPE_NAME
            self.qos_header = None
        self.arrival = arrival
        #: Priority and where it came from: 0 default, 1 proxy consumer QoS, 2 header.
        self.priority = CosNotification.DefaultPriority
        self.priority_source = 0
        #: Relative lifetime in seconds (Timeout), or None, with its source as above.
        self.lifetime: float | None = None
        self.lifetime_source = 0
        #: Absolute limits from the header: StopTime and StartTime (Unix seconds).
        self.stop_time: float | None = None
        self.start: float | None = None
        #: The resulting expiry (the earlier of StopTime and arrival + lifetime).
        self.deadline: float | None = None
        self.seq = next(_sequence)
        #: What holds this event for MaxQueueLength's count (the router, queued copies);
        #: -1: the limit discarded it. ``counted``: the count's epoch it counts in, 0
        #: none (channel/account.py).
        self.refs = 0
        self.counted = 0
        #: The queue entries holding it (kept only when the channel discards by policy).
        self.holders: list[Any] | None = None
        #: The header's EventReliability (0 or 1), or None: the channel's applies.
        self.reliability: int | None = None
        #: While a persistent event is routed: the (proxy, entry) copies waiting to be
        #: stored before they are queued (channel/durable.py); else None.
        self.stage: list[Any] | None = None
        #: A counter to raise in the store with this event, (name, value), or None:
        #: the supplier's next SequenceNumber (supplier_ack.py); None once stored.
        self.mark: tuple[str, int] | None = None
        #: For a typed call (cosnotify/typed): the name-value sequence section 2.7 hands
        #: ``match_typed``, which every filter then gets instead of the event; else None.
        self.typed: Any = None
        #: Whether omniORBpy would corrupt it when marshalling (holds_unmarshallable):
        #: None until asked.
        self.unsendable: bool | None = None

    # -- the two forms ------------------------------------------------------------
    def as_structured(self) -> Any:
        """The event as a StructuredEvent (Table 2-2: Any -> %ANY wrapper)."""
        structured = self.structured
        if structured is None:
            structured = CosNotification.StructuredEvent(
                CosNotification.EventHeader(
                    CosNotification.FixedEventHeader(
                        CosNotification.EventType("", ANY_TYPE_NAME), ""), []),
                [], self.any)
            self.structured = structured
        return structured

    def as_any(self) -> Any:
        """The event as an Any (Table 2-2: Structured -> Any holding it; a typed call
        -> Any holding its name-value sequence, ``operation`` first)."""
        value = self.any
        if value is None:
            if self.typed is not None:
                value = CORBA.Any(CosNotification._tc_PropertySeq,
                                  self.structured.filterable_data)
            else:
                value = CORBA.Any(_TC_STRUCTURED, self.structured)
            self.any = value
        return value

    def holds_unmarshallable(self) -> bool:
        """Does the event hold what omniORBpy 4.3.3 cannot marshal (an unsigned long
        long >= 2**63 in a sequence or array, cosnotify/corba/marshal.py)? Asked
        before it leaves the process; answered once, for every proxy."""
        known = self.unsendable
        if known is None:
            if self.structured is not None:
                known = structured_holds_big_ulonglong(self.structured)
            else:
                known = any_holds_big_ulonglong(self.any)
            self.unsendable = known
        return known

    def __repr__(self) -> str:
        return (f"<Event #{self.seq} {self.domain_name}/{self.type_name} "
                f"priority={self.priority} deadline={self.deadline}>")


def from_structured(structured: Any, arrival: float) -> Event:
    """The envelope for a Structured Event pushed or pulled into the channel.

    Section 2.1.4: a Structured Event of type %ANY carries an Any in
    ``remainder_of_body``; it is unwrapped so filters and consumers see the
    original Any.
    """
    event = Event(structured, None, arrival)  # reads the header once, for both uses
    if event.type_name == ANY_TYPE_NAME and _is_any(structured.remainder_of_body):
        inner = from_any(structured.remainder_of_body, arrival)
        # The wrapper's header QoS still applies to the event (sections 2.2, 2.5.6.2).
        inner.qos_header = event.qos_header
        return inner
    return event


def from_any(value: Any, arrival: float) -> Event:
    """The envelope for an Any pushed or pulled into the channel.

    Section 2.1.4: an Any whose TypeCode is the StructuredEvent's is
    unwrapped into that Structured Event before filtering.
    """
    d = value._t._d
    if d is _D_STRUCTURED or (type(d) is not int and _is_structured(d)):
        return from_structured(value._v, arrival)
    return Event(None, value, arrival)


def _is_any(value: Any) -> bool:
    return isinstance(value, CORBA.Any)


def _is_structured(d: D.Descriptor) -> bool:
    """Is ``d`` (maybe from the wire: aliases, either indirection marker) a StructuredEvent's?"""
    d = D.unalias(d)
    return type(d) is tuple and d[0] == D.STRUCT and D.repo_id(d) == _STRUCTURED_ID


def typed_sequence(structured: Any) -> list[Any] | None:
    """What filters get for a typed call (section 2.7), from its %TYPED Structured
    Event: ``event_type`` -- the interface and the operation, read from the
    ``operation`` string (``::CoffeeTest::Coffee::drinking_coffee``: "the base interface
    name <I> is equivalent to the name of an event type domain, and the base operation
    name <op> is the event type in that domain") -- then the parameters. The typed
    channel makes the event (cosnotify/typed/events.py); a store keeps only that it
    was a typed call, and this makes the sequence again when it is read back. None
    when the event does not start with a string ``operation`` (a damaged record)."""
    data = structured.filterable_data
    if not data or data[0].name != "operation":
        return None
    named = data[0].value.value()
    if not isinstance(named, str):
        return None
    first = _EVENT_TYPES.get(named)
    if first is None:
        interface, _, name = named.removeprefix("::").rpartition("::")
        first = CosNotification.Property("event_type", CORBA.Any(
            CosNotification._tc_EventType, CosNotification.EventType(interface, name)))
        if len(_EVENT_TYPES) >= _EVENT_TYPES_KEPT:
            _EVENT_TYPES.clear()
        _EVENT_TYPES[named] = first
    return [first, *data[1:]]


#: The ``event_type`` pair of each operation, made once and shared by its events (a
#: queue of typed calls holds fewer objects for the collector to walk); bounded.
_EVENT_TYPES: dict[str, Any] = {}
_EVENT_TYPES_KEPT = 4096


def empty_structured_event() -> Any:
    """The placeholder a ``try_pull`` returns with ``has_event`` FALSE."""
    return CosNotification.StructuredEvent(
        CosNotification.EventHeader(
            CosNotification.FixedEventHeader(CosNotification.EventType("", ""), ""), []),
        [], CORBA.Any(CORBA.TC_null, None))


_HEADER_QOS = ("EventReliability", "Priority", "StartTime", "StopTime", "Timeout")


def apply_qos(event: Event, proxy_qos: dict[str, Any], explicit: set[str] | frozenset[str],
              persistent_supported: bool) -> None:
    """Resolve the event's priority and limits at the proxy consumer that received it.

    Header fields override the proxy's explicitly set Priority and Timeout
    (section 2.2, Table 2-4). A standard header field of the wrong type, out
    of range, or asking for what the channel cannot do raises ``BAD_QOS``
    (sections 2.5.6.2 and 2.5.6.7); other header fields are the supplier's
    own and are left alone.
    """
    header = event.qos_header
    if not explicit and not header:
        return  # nothing to resolve: the defaults set by Event() stand
    if "Priority" in explicit:
        event.priority, event.priority_source = proxy_qos["Priority"], 1
    if "Timeout" in explicit:  # an explicit 0 too: associated, and no timeout (Table 2-4)
        event.lifetime, event.lifetime_source = proxy_qos["Timeout"] / 1e7 or None, 1
    if header:
        for prop in header:
            if prop.name in _HEADER_QOS:
                _apply_header_field(event, prop.name, prop.value, proxy_qos, persistent_supported)
    if event.lifetime:
        expiry = event.arrival + event.lifetime
        event.deadline = expiry if event.stop_time is None else min(event.stop_time, expiry)
    else:
        event.deadline = event.stop_time


def _apply_header_field(event: Event, name: str, value: Any, proxy_qos: dict[str, Any],
                        persistent_supported: bool) -> None:
    from cosnotify.channel.clock import utc_to_seconds
    from cosnotify.qos.negotiation import from_any, legal
    from cosnotify.qos.properties import QOS_PROPERTIES

    definition = QOS_PROPERTIES[name]
    ok, python_value = from_any(definition, value)
    if not ok:
        raise _bad_qos(f"header field {name} has the wrong type")
    if name == "Priority":
        if not -32767 <= python_value <= 32767:
            raise _bad_qos(f"header Priority {python_value} is outside -32767..32767")
        event.priority, event.priority_source = python_value, 2
    elif name == "Timeout":
        # TimeBase::TimeT: an Any made in process (or by a front end) is not marshalled,
        # so nothing else bounds it; past the range no remote consumer could be sent it.
        if not legal(definition, python_value):
            raise _bad_qos(f"header Timeout {python_value} is outside TimeBase::TimeT")
        # Table 2-4: zero means "no timeout", and the header overrides the proxy.
        event.lifetime = python_value / 1e7 if python_value else None
        event.lifetime_source = 2
    elif name in ("StopTime", "StartTime"):
        if not proxy_qos.get(name + "Supported", True):
            raise _bad_qos(f"{name} in the header but {name}Supported is FALSE")
        # A UtcT made in process is not marshalled: nothing else bounds its members.
        if not legal(definition, python_value):
            raise _bad_qos(f"header {name} is outside TimeBase::UtcT")
        when = utc_to_seconds(python_value)
        if name == "StopTime":
            event.stop_time = when
        else:
            event.start = when
    elif name == "EventReliability":
        if python_value not in (0, 1):
            raise _bad_qos(f"header EventReliability {python_value} is not 0 or 1")
        if python_value == 1 and not persistent_supported:
            raise _bad_qos("EventReliability=Persistent needs a channel with a store and "
                           "ConnectionReliability=Persistent (section 2.5.5.1)")
        event.reliability = python_value


def _bad_qos(detail: str) -> Exception:
    error: Exception = CORBA.BAD_QOS(0, CORBA.COMPLETED_NO, detail)
    return error
