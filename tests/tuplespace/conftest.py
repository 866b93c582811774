"""Fixtures for the Event Heap tuple space (cosnotify/tuplespace, docs/history.md).

Events are built the way the seed describes them ("Events versus Tuples"):
an EventType (the fixed header's type_name), fields as properties, and
TimeToLive as the Timeout QoS (docs/grammars/eventheap.md). Time is a
ManualClock, so expiry and wait timeouts are exact and nothing sleeps.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import TimeBase

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.tuplespace import TupleSpace

#: Seconds a test waits at most for another thread (never reached when all is well).
WAIT = 10.0

_TYPECODES = {bool: CORBA.TC_boolean, int: CORBA.TC_long, float: CORBA.TC_double,
              str: CORBA.TC_string}


def any_of(value: Any) -> Any:
    if isinstance(value, CORBA.Any):
        return value
    if value is None:
        return CORBA.Any(CORBA.TC_null, None)
    return CORBA.Any(_TYPECODES[type(value)], value)


def event(type_name: str, ttl_ms: int | None = None, domain: str = "EH",
          header: dict[str, Any] | None = None, **fields: Any) -> Any:
    """A StructuredEvent: EventType ``type_name``, ``fields`` as filterable properties,
    TimeToLive ``ttl_ms`` as the Timeout QoS (TimeBase::TimeT, 10,000 per ms)."""
    variable = [N.Property(k, any_of(v)) for k, v in (header or {}).items()]
    if ttl_ms is not None:
        variable.append(N.Property("Timeout", CORBA.Any(TimeBase._tc_TimeT, ttl_ms * 10_000)))
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType(domain, type_name), ""), variable),
        [N.Property(k, any_of(v)) for k, v in fields.items()], CORBA.Any(CORBA.TC_null, None))


def field(found: Any, name: str) -> Any:
    """The value of the first property ``name`` of a tuple's (or an event's) event."""
    ev = getattr(found, "event", found)
    for p in list(ev.filterable_data) + list(ev.header.variable_header):
        if p.name == name:
            return p.value.value()
    raise KeyError(name)


def type_of(found: Any) -> str:
    ev = getattr(found, "event", found)
    return str(ev.header.fixed_header.event_type.type_name)


def supplier(channel: Any) -> Any:
    """A sequence push supplier of ``channel`` (an ordinary Notification supplier)."""
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.SEQUENCE_EVENT)
    proxy.connect_sequence_push_supplier(None)
    return proxy


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_000_000.0)


@pytest.fixture
def factory(clock: ManualClock) -> Iterator[EventChannelFactory]:
    with EventChannelFactory(clock=clock) as made:
        yield made


@pytest.fixture
def channel(factory: EventChannelFactory) -> Any:
    made, _ = factory.create_channel([], [])
    return made


@pytest.fixture
def space(channel: Any) -> TupleSpace:
    return TupleSpace.of(channel)
