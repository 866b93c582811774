"""Event Heap clients and CORBA clients on one channel (issue 22: "share one channel")."""

from __future__ import annotations

import threading
from typing import Any

from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter as F

from cosnotify.protocols.eventheap import EventHeapFrontEnd
from tests.protocols.eventheap.client import WAIT, EventHeapClient, field_of


class Consumer:
    """An in-process CosNotifyComm::StructuredPushConsumer that records what it gets."""

    def __init__(self) -> None:
        self.received: list[Any] = []
        self.cond = threading.Condition()

    def push_structured_event(self, event: Any) -> None:
        with self.cond:
            self.received.append(event)
            self.cond.notify_all()

    def offer_change(self, added: Any, removed: Any) -> None:
        pass

    def disconnect_structured_push_consumer(self) -> None:
        pass

    def wait_for(self, count: int) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: len(self.received) >= count, WAIT)


def _prop(event: Any, name: str) -> Any:
    for p in event.filterable_data:
        if p.name == name:
            return p.value.value()
    raise KeyError(name)


def _structured(type_name: str, **fields: Any) -> Any:
    props = [N.Property(k, CORBA.Any(CORBA.TC_long if isinstance(v, int) else CORBA.TC_string,
                                     v)) for k, v in fields.items()]
    return N.StructuredEvent(N.EventHeader(N.FixedEventHeader(N.EventType("Corba", type_name),
                                                              ""), []),
                             props, CORBA.Any(CORBA.TC_null, None))


class TestEventHeapToCorba:
    def test_put_reaches_a_filtered_structured_consumer(
            self, client: EventHeapClient, front_end: EventHeapFrontEnd) -> None:
        """An Event Heap putEvent reaches a CosNotify structured push consumer on the same
        channel whose EXTENDED_TCL filter passes it; the filter holds back the others."""
        channel = front_end.server.channel
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        flt.add_constraints([F.ConstraintExp([], "$type_name == 'Job' and $priority > 1")])
        proxy.add_filter(flt)
        consumer = Consumer()
        proxy.connect_structured_push_consumer(consumer)
        client.put(client.event("Job", priority=1))
        client.put(client.event("Job", priority=5, host="h1"))
        client.put(client.event("Other", priority=9))
        assert consumer.wait_for(1)
        client.call("getAll")
        event = consumer.received[0]
        assert event.header.fixed_header.event_type.type_name == "Job"
        assert event.header.fixed_header.event_type.domain_name == "EventHeap"
        assert _prop(event, "priority") == 5 and _prop(event, "host") == "h1"
        assert _prop(event, "Source") == "test-client"
        assert len(consumer.received) == 1


class TestCorbaToEventHeap:
    def _supplier(self, channel: Any) -> Any:
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_supplier(None)
        return proxy

    def test_corba_event_found_by_get_event(self, client: EventHeapClient,
                                            front_end: EventHeapFrontEnd) -> None:
        """The tuple space takes every accepted event: a CORBA supplier's event is found by
        an Event Heap getEvent, its properties as fields."""
        self._supplier(front_end.server.channel).push_structured_event(
            _structured("Alarm", severity=3, where="lab"))
        found = client.call("getEvent", [client.template("Alarm", severity=3)])
        assert found.tuples is not None
        assert field_of(found.tuples[0], "where") == "lab"
        assert field_of(found.tuples[0], "TimeToLive") == 120000  # Table 1's default

    def test_corba_event_reaches_a_stream(self, connect: Any,
                                          front_end: EventHeapFrontEnd) -> None:
        """A registerForEvents stream receives a CORBA supplier's matching event."""
        sub = connect("sub")
        tag = sub.send("registerForEvents", [sub.template("Alarm")])
        sub.call("getAll")
        self._supplier(front_end.server.channel).push_structured_event(
            _structured("Alarm", severity=4))
        reply = sub.receive()
        assert reply.destination_tag == tag
        assert reply.tuples is not None and field_of(reply.tuples[0], "severity") == 4

    def test_waiting_client_gets_a_corba_event(self, client: EventHeapClient,
                                               front_end: EventHeapFrontEnd) -> None:
        """A waitToRemoveEvent is satisfied by a CORBA supplier's event."""
        tag = client.send("waitToRemoveEvent", [client.template("Alarm")])
        assert front_end.space.wait_for_waiters(1, WAIT)
        self._supplier(front_end.server.channel).push_structured_event(
            _structured("Alarm", severity=1))
        reply = client.receive()
        assert reply.destination_tag == tag and reply.tuples is not None
