"""Elvin clients and CORBA clients on one channel; the type mapping of docs/grammars/elvin4.md.

Issue 22: "A CORBA supplier's event reaches an Elvin subscriber, and an Elvin
producer's notification reaches a CORBA consumer with an EXTENDED_TCL filter."
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import omniORB
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter as F

from cosnotify.protocols.elvin import start
from cosnotify.protocols.elvin.mapping import from_event, to_event
from tests.channel.conftest import StructuredPushConsumer, structured_supplier
from tests.protocols.elvin.client import I64, Client, notify_emit

Make = Callable[[], Client]
A = CORBA.Any


def consumer(channel: Any, grammar: str, text: str) -> StructuredPushConsumer:
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
        CA.STRUCTURED_EVENT)
    flt = channel._get_default_filter_factory().create_filter(grammar)
    flt.add_constraints([F.ConstraintExp([], text)])
    proxy.add_filter(flt)
    sink = StructuredPushConsumer()
    proxy.connect_structured_push_consumer(sink)
    return sink


def props(seq: Any) -> dict[str, Any]:
    return {p.name: p.value for p in seq}


class TestCorbaToElvin:
    """A structured event pushed by an in-process CosNotify supplier."""

    def test_reaches_an_elvin_subscriber_with_the_mapped_types(self, client: Make,
                                                               channel: Any) -> None:
        """Header names, then filterable data, then the variable header become
        attributes; each CORBA type becomes its Elvin type; unmapped ones are left out
        (docs/grammars/elvin4.md, "Types: CORBA -> Elvin")."""
        sub = client()
        sub.connect()
        sid = sub.subscribe('type_name == "Alarm" && severity > 2')
        event = N.StructuredEvent(
            N.EventHeader(N.FixedEventHeader(N.EventType("Ops", "Alarm"), "disk"),
                          [N.Property("Priority", A(CORBA.TC_short, 3))]),
            [N.Property("severity", A(CORBA.TC_long, 4)),
             N.Property("count", A(CORBA.TC_ulong, 9)),
             N.Property("big", A(CORBA.TC_longlong, 2**40)),
             N.Property("load", A(CORBA.TC_double, 0.5)),
             N.Property("up", A(CORBA.TC_boolean, True)),
             N.Property("host", A(CORBA.TC_string, "db42")),
             N.Property("blob", A(CORBA._tc_OctetSeq, b"\x01\x02")),
             N.Property("when", A(CORBA.TypeCode(N.EventType._NP_RepositoryId),
                                  N.EventType("a", "b")))],
            A(CORBA.TC_null, None))
        structured_supplier(channel).push_structured_event(event)
        got = sub.expect("NotifyDeliver")
        assert got["insecure"] == [sid]
        assert got["attributes"] == {
            "domain_name": "Ops", "type_name": "Alarm", "event_name": "disk",
            "severity": 4, "count": I64(9), "big": I64(2**40), "load": 0.5, "up": 1,
            "host": "db42", "blob": b"\x01\x02", "Priority": 3}
        assert isinstance(got["attributes"]["count"], I64)
        assert not isinstance(got["attributes"]["severity"], I64)

    def test_events_the_subscription_does_not_match_stay_away(self, client: Make,
                                                              channel: Any) -> None:
        """The channel's ELVIN4 filter routes: a non-matching event is not delivered."""
        sub = client()
        sub.connect()
        sub.subscribe("severity > 2")
        supplier = structured_supplier(channel)
        for severity in (1, 5):
            supplier.push_structured_event(N.StructuredEvent(
                N.EventHeader(N.FixedEventHeader(N.EventType("", ""), ""), []),
                [N.Property("severity", A(CORBA.TC_long, severity))], A(CORBA.TC_null, None)))
        assert sub.expect("NotifyDeliver")["attributes"] == {"severity": 5}


class TestElvinToCorba:
    """An Elvin producer's notification on the channel."""

    def test_reaches_a_consumer_with_an_extended_tcl_filter(self, client: Make,
                                                            channel: Any) -> None:
        """Only the matching notification arrives; header names fill the fixed header;
        int32 -> long, int64 -> long long, real64 -> double, string, opaque ->
        sequence<octet>."""
        sink = consumer(channel, "EXTENDED_TCL", "$severity > 2 and $host == 'db'")
        pub = client()
        pub.connect()
        pub.send(notify_emit({"type_name": "Alarm", "severity": 1, "host": "db"}))
        pub.send(notify_emit({"domain_name": "Ops", "type_name": "Alarm", "event_name": "e1",
                              "severity": 4, "host": "db", "big": I64(-5), "load": 2.5,
                              "blob": b"\0\1"}))
        assert sink.wait_for(1)
        event = sink.received[0]
        fixed = event.header.fixed_header
        assert (fixed.event_type.domain_name, fixed.event_type.type_name,
                fixed.event_name) == ("Ops", "Alarm", "e1")
        data = props(event.filterable_data)
        assert list(data) == ["severity", "host", "big", "load", "blob"]
        assert data["severity"].typecode().kind() == CORBA.tk_long
        assert data["big"].typecode().kind() == CORBA.tk_longlong
        assert data["load"].typecode().kind() == CORBA.tk_double
        assert data["host"].value() == "db"
        assert data["blob"].typecode().equivalent(CORBA._tc_OctetSeq)
        assert data["blob"].value() == b"\0\1" and data["big"].value() == -5
        assert len(sink.received) == 1

    def test_an_elvin4_filter_sees_what_the_producer_wrote(self, client: Make,
                                                           channel: Any) -> None:
        """The same subscription text as a CORBA ELVIN4 filter matches the same
        notifications an Elvin subscriber gets."""
        sink = consumer(channel, "ELVIN4", 'begins-with(host, "db") && int64(big)')
        pub = client()
        pub.connect()
        pub.send(notify_emit({"host": "web", "big": I64(1)}))
        pub.send(notify_emit({"host": "db1", "big": 1}))
        pub.send(notify_emit({"host": "db2", "big": I64(1)}))
        assert sink.wait_for(1)
        assert props(sink.received[0].filterable_data)["host"].value() == "db2"


class TestTextBeyondLatin1:
    """Elvin strings are UTF-8 (§5.3.1); a CORBA ``string`` is ISO-8859-1 on the wire."""

    def test_the_event_marshals(self) -> None:
        """§5.3.1: "String values are UTF-8 encoded" -- text outside ISO-8859-1 is a
        wstring, which omniORB marshals (a string raised DATA_CONVERSION, review 130);
        ISO-8859-1 text stays a string."""
        event = to_event((("s", "\u20ac \U0001f600"), ("t", "caf\u00e9"),
                          ("type_name", "\u0416urnal")))
        data = props(event.filterable_data)
        assert data["s"].typecode().kind() == CORBA.tk_wstring
        assert data["t"].typecode().kind() == CORBA.tk_string
        back = omniORB.cdrUnmarshal(N._tc_StructuredEvent,
                                    omniORB.cdrMarshal(N._tc_StructuredEvent, event))
        assert from_event(back) == (("s", "\u20ac \U0001f600"), ("t", "caf\u00e9"),
                                    ("type_name", "\u0416urnal"))

    def test_a_header_name_beyond_latin1_stays_a_property(self) -> None:
        """§5.3.1: an attribute is "a name and a typed value"; the fixed header's
        type_name is a CORBA string, so the text is kept as a wstring property."""
        event = to_event((("type_name", "\u0416urnal"),))
        assert event.header.fixed_header.event_type.type_name == ""
        assert props(event.filterable_data)["type_name"].value() == "\u0416urnal"

    def test_the_grammars_match_it(self, client: Make, channel: Any) -> None:
        """§6.1.4 "String: A sequence of UTF-8 encoded Unicode characters": an ELVIN4
        filter, an EXTENDED_TCL filter and an Elvin subscription compare the text as
        the producer wrote it."""
        text = "\u20ac\u0416"
        elvin4 = consumer(channel, "ELVIN4",
                          f'equals(s, "{text}") && type_name == "{text}" && '
                          f'begins-with(s, "\u20ac")')
        tcl = consumer(channel, "EXTENDED_TCL", f"$s == '{text}' and '\u0416' ~ $s")
        sub = client()
        sub.connect()
        sid = sub.subscribe(f's == "{text}"')
        pub = client()
        pub.connect()
        pub.send(notify_emit({"s": "other", "type_name": text}))
        pub.send(notify_emit({"s": text, "type_name": text}))
        assert elvin4.wait_for(1) and tcl.wait_for(1)
        got = sub.expect("NotifyDeliver")
        assert (got["attributes"], got["insecure"]) == ({"s": text, "type_name": text},
                                                        [sid])
        for sink in (elvin4, tcl):
            assert props(sink.received[0].filterable_data)["s"].value() == text
            assert len(sink.received) == 1


class TestChannelChoice:
    """``start(..., channel=...)``: the front end serves the channel it is told."""

    def test_a_named_channel(self, core: Any, client: Make, channel: Any) -> None:
        """An Elvin front end on the channel named "ops" does not feed "default"."""
        context = core[2]
        other = start(context, "127.0.0.1", 0, channel="ops")
        try:
            assert other.router.channel is not channel
            sink = consumer(other.router.channel, "EXTENDED_TCL", "exist $x")
            default_sink = consumer(channel, "EXTENDED_TCL", "exist $x")
            pub = Client(other.address)
            pub.connect()
            pub.send(notify_emit({"x": 1}))
            assert sink.wait_for(1)
            structured_supplier(channel).push_structured_event(N.StructuredEvent(
                N.EventHeader(N.FixedEventHeader(N.EventType("", ""), "mark"), []),
                [N.Property("x", A(CORBA.TC_long, 2))], A(CORBA.TC_null, None)))
            assert default_sink.wait_for(1)    # the mark came first: x = 1 never did
            assert default_sink.received[0].header.fixed_header.event_name == "mark"
            pub.close()
        finally:
            other.close()
