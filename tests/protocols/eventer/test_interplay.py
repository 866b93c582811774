"""Eventer clients and CORBA clients on one channel (issue 22): a CosNotify supplier's
event reaches an Eventer subscriber and a query; an Eventer client's events reach a
structured push consumer through an EXTENDED_TCL filter, payloads kept byte for byte."""

from __future__ import annotations

import time
from typing import Any

import hat.event.common as hc
import pytest
from hat.event.eventer import client as hat_client
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter
import TimeBase

from cosnotify.channel.clock import seconds_to_timet
from cosnotify.protocols.eventer.mapping import EVENTER_ID, OCTETS_TC, Sessions
from tests.protocols.eventer.conftest import SERVER_ID, Recorder, Served, raw, run
from tests.protocols.eventer.test_codec import hat_frame
from tests.protocols.eventer.test_frontend import read_frame


def corba_event() -> Any:
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("corba", "alarm"), "a1"), [
            N.Property("Subtype", CORBA.Any(CORBA.TypeCode("IDL:omg.org/CORBA/StringSeq:1.0"),
                                            ["major"])),
            N.Property("SourceTimestamp", CORBA.Any(TimeBase._tc_UtcT, TimeBase.UtcT(
                seconds_to_timet(1_000.25), 0, 0, 0)))]),
        [N.Property("severity", CORBA.Any(CORBA.TC_long, 3))],
        CORBA.Any(CORBA.TC_long, 42))


class TestFromCorba:
    def test_a_corba_suppliers_event_reaches_an_eventer_subscriber(self,
                                                                  served: Served) -> None:
        """A structured event pushed by an in-process supplier is notified as an Eventer
        event: type path, source timestamp, payload as json; and a query returns it."""
        proxy, _ = served.channel._get_default_supplier_admin() \
            .obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_supplier(None)

        async def go() -> tuple[list[Any], list[Any]]:
            listener = await hat_client.connect(served.address, [("corba", "*")])
            await listener.query(hc.QueryData(max_results=0))  # the subscription is in
            proxy.push_structured_event(corba_event())
            got = await listener.receive()
            found = await listener.query(hc.QueryData(event_types=[("corba", "?", "major")]))
            await listener.async_close()
            return got, found

        got, found = run(go)
        event = got[0]
        assert event.event_type == ("corba", "alarm", "major")
        assert event.source_timestamp == hc.Timestamp(1000, 250_000)
        assert event.payload == hc.EventPayload(hc.EventPayloadType.JSON, 42)
        assert event.event_id.server == SERVER_ID
        assert [e.event_type for e in found] == [("corba", "alarm", "major")]
        assert found[0].payload == event.payload
        assert found[0].event_id.server == SERVER_ID


    @pytest.mark.parametrize("text", ["1:\u00b2:3", "1:2", "a:b:c", "1:2:3:4", "-1:2:3",
                                      "1:2:" + "9" * 20, "1:2:" + "1" * 5000])
    def test_a_foreign_eventer_id_header_is_not_taken_for_an_id(self, served: Served,
                                                                 text: str) -> None:
        """A CORBA supplier's event may carry any ``EventerId`` text. Only this front
        end's own form (three ASCII decimal numbers below 2**63) is read back as the
        event's id; anything else (a superscript digit passes str.isdigit, not int; 20
        digits pass int, not the SBS encoder; review 65) leaves the event an id of this
        server's: a subscriber gets it and the event after it, and the query answers."""
        proxy, _ = served.channel._get_default_supplier_admin() \
            .obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_supplier(None)
        made = corba_event()
        made.header.variable_header.append(N.Property(EVENTER_ID, CORBA.Any(CORBA.TC_string,
                                                                           text)))

        async def go() -> tuple[list[Any], list[Any]]:
            listener = await hat_client.connect(served.address, [("corba", "*")])
            await listener.query(hc.QueryData(max_results=0))  # the subscription is in
            proxy.push_structured_event(made)
            proxy.push_structured_event(corba_event())
            got: list[Any] = []
            while len(got) < 2:
                got += await listener.receive()
            found: list[Any] = await listener.query(hc.QueryData(
                event_types=[("corba", "*")]))
            await listener.async_close()
            return got, found

        got, found = run(go)
        assert [e.event_type for e in got] == [("corba", "alarm", "major")] * 2
        assert [e.event_id.server for e in got + found] == [SERVER_ID] * 4


class TestToCorba:
    def test_eventer_events_reach_a_filtered_structured_consumer(self, served: Served) -> None:
        """Registered events reach a StructuredPushConsumer whose EXTENDED_TCL filter
        selects by type_name and Subtype; the payload is the remainder of body."""
        admin = served.channel._get_default_consumer_admin()
        proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        made = served.channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        made.add_constraints([CosNotifyFilter.ConstraintExp(
            [], "$type_name == 'device' and $Subtype[0] == 'data'")])
        proxy.add_filter(made)
        consumer = Recorder()
        proxy.connect_structured_push_consumer(consumer)

        async def go() -> None:
            client = await hat_client.connect(served.address)
            await client.register_with_response([
                hc.RegisterEvent(("gateway", "device", "data"), None,
                                 hc.EventPayload(hc.EventPayloadType.BINARY, b"\x00\x01")),
                hc.RegisterEvent(("gateway", "device", "status"), None, None),
                hc.RegisterEvent(("gateway", "other", "data"), None, None)])
            await client.async_close()

        run(go)
        assert consumer.wait_for(1)
        event = consumer.received[0]
        assert (event.header.fixed_header.event_type.domain_name,
                event.header.fixed_header.event_type.type_name) == ("gateway", "device")
        assert event.remainder_of_body.value() == b"\x00\x01"
        assert event.remainder_of_body.typecode().equivalent(OCTETS_TC)
        proxy.disconnect_structured_push_supplier()
        assert len(consumer.received) == 1


class TestPayloads:
    def test_payloads_come_back_byte_for_byte(self, served: Served) -> None:
        """binary, json (its text as sent, spacing and key order kept) and sbs payloads
        are returned by a query exactly as registered."""
        payloads = [("binary", b"\x00\xff\x10"), ("json", '{"b":1,  "a": [2]}'),
                    ("sbs", {"module": ("none", None), "type": "T", "data": b"\x01"}),
                    ("sbs", {"module": ("value", "Mod"), "type": "U", "data": b""})]
        register = [{"type": ["p", "q", str(n)], "sourceTimestamp": ("none", None),
                     "payload": ("value", payload)} for n, payload in enumerate(payloads)]
        with raw(served) as sock:
            sock.sendall(hat_frame("HatEventer", "MsgRegisterReq", register, last=False))
            assert read_frame(sock)["data"]["type"] == "MsgRegisterRes"
            sock.sendall(hat_frame("HatEventer", "MsgQueryReq", hc.query_to_sbs(hc.QueryData(
                event_types=[("p", "*")], order=hc.Order.ASCENDING)), msg_id=2, last=False))
            reply = read_frame(sock)
        assert [e["payload"] for e in reply["value"]] == [("value", p) for p in payloads]


class TestSessions:
    def test_without_a_store_sessions_start_past_earlier_ones(self) -> None:
        """With no store, sessions follow the clock's microseconds (one past the last in a
        burst): a start once the clock passed the earlier sessions gives greater ones."""
        first = Sessions(None)
        given = [first.next() for _ in range(100)]
        assert given == sorted(set(given))
        deadline = time.monotonic() + 5
        while time.time_ns() // 1000 <= max(given) and time.monotonic() < deadline:
            pass  # the burst ran ahead of the clock by at most 100 us
        second = Sessions(None)
        assert second.next() > max(given)

    def test_with_a_store_each_start_takes_a_new_epoch(self, served: Served) -> None:
        """With a store, each start's sessions are a new epoch in the high 32 bits."""
        one, two = Sessions(served.store), Sessions(served.store)
        assert two.next() >> 32 == (one.next() >> 32) + 1


class TestWithoutAStore:
    def test_registers_and_notifies_and_answers_queries_empty(self) -> None:
        """Without a store the channel keeps no history: events are registered and
        notified, queries are answered with no events."""
        from cosnotify.channel.factory import EventChannelFactory
        from cosnotify.protocols import Context
        from cosnotify.protocols.eventer import start
        from cosnotify.protocols.listener import Loop

        factory = EventChannelFactory()
        loop = Loop()
        front_end = start(Context(factory, loop, SERVER_ID), "127.0.0.1", 0)
        address = f"tcp+sbs://127.0.0.1:{front_end.address[1]}"
        try:
            async def go() -> tuple[Any, Any, Any]:
                listener = await hat_client.connect(address, [("n", "*")])
                await listener.query(hc.QueryData(max_results=0))
                client = await hat_client.connect(address)
                made = await client.register_with_response([hc.RegisterEvent(("n", "s"),
                                                                             None, None)])
                got = await listener.receive()
                found = await client.query(hc.QueryData())
                await listener.async_close()
                await client.async_close()
                return made, got, found

            made, got, found = run(go)
        finally:
            front_end.close()
            loop.close()
            factory.close()
        assert made[0] is not None and got == made and found == []


class TestRetention:
    def test_an_existing_channel_without_history_is_made_to_retain(self, tmp_path: Any) -> None:
        """A channel made first without retention (by another front end) is given
        RetainCount when the Eventer front end starts on it, so queries find events."""
        from cosnotify.channel.factory import EventChannelFactory
        from cosnotify.protocols import Context
        from cosnotify.protocols.eventer import start
        from cosnotify.protocols.listener import Loop
        from cosnotify.store.sqlite import SQLiteStore

        store = SQLiteStore(tmp_path / "store.db")
        factory = EventChannelFactory(store=store)
        loop = Loop()
        context = Context(factory, loop, SERVER_ID)
        channel = context.channel("shared")
        assert channel._retention is None
        front_end = start(context, "127.0.0.1", 0, channel="shared")
        try:
            async def go() -> list[Any]:
                client = await hat_client.connect(f"tcp+sbs://127.0.0.1:{front_end.address[1]}")
                await client.register_with_response([hc.RegisterEvent(("k", "v"), None, None)])
                found = await client.query(hc.QueryData())
                await client.async_close()
                return found

            found = run(go)
        finally:
            front_end.close()
            loop.close()
            factory.close()
            store.close()
        assert [e.event_type for e in found] == [("k", "v")]


class TestConstraints:
    def test_extended_tcl_reaches_every_mapped_field(self) -> None:
        """The doc's EXTENDED_TCL handles on an Eventer event: EventerId, EventerTimestamp,
        Subtype, and the payload through $.remainder_of_body."""
        from cosnotify.filter.factory import FilterFactory
        from cosnotify.protocols.eventer.codec import (
            EventId,
            Payload,
            PayloadKind,
            RegisterEvent,
            Timestamp,
        )
        from cosnotify.protocols.eventer.mapping import to_structured

        binary_event = to_structured(RegisterEvent(("a", "b", "c"), Timestamp(5, 0), Payload(
            PayloadKind.BINARY, b"xyz")), EventId(1, 2, 3), Timestamp(10, 5))
        json_event = to_structured(RegisterEvent(("a", "b"), None, Payload(
            PayloadKind.JSON, '{"k": 1}')), EventId(1, 2, 4), Timestamp(10, 5))
        made = FilterFactory().create_filter("EXTENDED_TCL")
        results = []
        for constraint in ("$.remainder_of_body._length == 3", "$EventerId == '1:2:3'",
                           "$EventerTimestamp == 10000005", "$Subtype[0] == 'c'",
                           "$.remainder_of_body == '{\"k\": 1}'"):
            made.remove_all_constraints()
            made.add_constraints([CosNotifyFilter.ConstraintExp([], constraint)])
            results.append((made.match_structured(binary_event),
                            made.match_structured(json_event)))
        assert results == [(True, False), (True, False), (True, True), (True, False),
                           (False, True)]
