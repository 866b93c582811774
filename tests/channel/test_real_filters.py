"""The channel with real EXTENDED_TCL filters and mapping filters (sections 2.3, 2.3.1, 2.6.5)."""

from __future__ import annotations

from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter as F
import TimeBase

from cosnotify.eventtypes import ALL
from tests.channel.conftest import PushSupplier, StructuredPushConsumer, number, structured

TIMET = TimeBase._tc_TimeT
SECOND = 10_000_000  # TimeBase::TimeT units (100 ns)


def tcl(channel: Any, *constraints: tuple[list[tuple[str, str]], str]) -> Any:
    flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
    flt.add_constraints([F.ConstraintExp([N.EventType(d, t) for d, t in types], text)
                         for types, text in constraints])
    return flt


def mapping(channel: Any, default: Any, *pairs: tuple[str, Any]) -> Any:
    flt = channel._get_default_filter_factory().create_mapping_filter("EXTENDED_TCL", default)
    flt.add_mapping_constraints([F.MappingConstraintPair(F.ConstraintExp([], text), value)
                                 for text, value in pairs])
    return flt


def short(value: int) -> Any:
    return CORBA.Any(CORBA.TC_short, value)


def entry(channel: Any) -> Any:
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_push_supplier(None)
    return proxy


def pull(channel: Any) -> Any:
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_pull_consumer(None)
    return proxy


def drain(proxy: Any) -> list[int]:
    out = []
    while True:
        event, has_event = proxy.try_pull_structured_event()
        if not has_event:
            return out
        out.append(number(event))


class TestForwardingFilters:
    def test_constraint_and_event_types(self, channel: Any) -> None:
        """Section 2.3's example: types in the list, the expression on the contents."""
        proxy = pull(channel)
        proxy.add_filter(tcl(channel, ([("Telecom", "CommunicationsAlarm"),
                                        ("Transport", "RoadImpassable")], "$severity != 4")))
        supplier = entry(channel)
        cases = [("Telecom", "CommunicationsAlarm", 3), ("Telecom", "CommunicationsAlarm", 4),
                 ("Transport", "RoadImpassable", 1), ("Telecom", "Other", 1)]
        for n, (domain, type_name, severity) in enumerate(cases):
            supplier.push_structured_event(structured(domain, type_name,
                                                      fields={"n": n, "severity": severity}))
        assert drain(proxy) == [0, 2]

    def test_admin_and_proxy_filters_with_and(self, channel: Any) -> None:
        """An AND admin: the admin's and the proxy's constraints must both hold."""
        admin, _ = channel.new_for_consumers(CA.AND_OP)
        admin.add_filter(tcl(channel, ([], "$n >= 2")))
        proxy, _ = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        proxy.add_filter(tcl(channel, ([], "$n < 5")))
        supplier = entry(channel)
        for n in range(8):
            supplier.push_structured_event(structured(fields={"n": n}))
        assert drain(proxy) == [2, 3, 4]

    def test_any_events_are_filtered_too(self, channel: Any) -> None:
        """Filters apply to Any events (TAO's ETCL cannot): $ is the Any's value."""
        sink = StructuredPushConsumer()
        out, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.ANY_EVENT)
        out.connect_any_push_consumer(type("C", (), {
            "push": lambda self, a: sink.record(a), "offer_change": lambda *a: None})())
        out.add_filter(tcl(channel, ([], "$ > 10")))
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.ANY_EVENT)
        proxy.connect_any_push_supplier(None)
        for value in (5, 11, 20, 3):
            proxy.push(CORBA.Any(CORBA.TC_long, value))
        assert sink.wait_for(2)
        assert channel._service.dispatcher.wait_idle()
        assert [a.value() for a in sink.received] == [11, 20]


class TestMappingFilters:
    def test_priority_mapping_reorders_delivery(self, channel: Any) -> None:
        """JacORB MappingFilter: a matching priority constraint overrides the header
        priority for that consumer's copy (section 2.3.1)."""
        proxy = pull(channel)
        proxy.set_qos([N.Property("OrderPolicy", short(N.PriorityOrder))])
        proxy._set_priority_filter(mapping(channel, short(0), ("$n == 3", short(100))))
        supplier = entry(channel)
        for n in range(5):
            supplier.push_structured_event(structured(
                fields={"n": n}, header=[N.Property("Priority", short(n))]))
        assert drain(proxy) == [3, 4, 2, 1, 0]

    def test_default_value_applies_without_header_priority(self, channel: Any) -> None:
        """No match and no header priority: the mapping filter's default is used (rule 3)."""
        proxy = pull(channel)
        proxy.set_qos([N.Property("OrderPolicy", short(N.PriorityOrder))])
        proxy._set_priority_filter(mapping(channel, short(50), ("$n == 0", short(-5))))
        supplier = entry(channel)
        supplier.push_structured_event(structured(fields={"n": 0}))   # matches: -5
        supplier.push_structured_event(structured(fields={"n": 1}))   # default: 50
        supplier.push_structured_event(structured(                     # header: 10
            fields={"n": 2}, header=[N.Property("Priority", short(10))]))
        assert drain(proxy) == [1, 2, 0]

    def test_mapped_values_of_other_types_are_ignored(self, channel: Any) -> None:
        """Section 2.3.1: a priority mapping filter's values are shorts, a lifetime one's
        TimeTs. A filter made with a string or a NaN double default gives other values;
        they are ignored (the header priority stands), and neither this consumer nor
        another loses an event or its order (review 67: a string stopped every push,
        a NaN scrambled PriorityOrder)."""
        odd = pull(channel)
        odd.set_qos([N.Property("OrderPolicy", short(N.PriorityOrder))])
        odd._set_priority_filter(mapping(channel, CORBA.Any(CORBA.TC_double, float("nan"))))
        odd._set_lifetime_filter(mapping(channel, CORBA.Any(CORBA.TC_string, "long")))
        worded = pull(channel)
        worded.set_qos([N.Property("OrderPolicy", short(N.FifoOrder))])
        worded._set_priority_filter(mapping(channel, CORBA.Any(CORBA.TC_string, "high")))
        other = pull(channel)
        other.set_qos([N.Property("OrderPolicy", short(N.FifoOrder))])
        supplier = entry(channel)
        for n in (3, 1, 4, 0, 2):
            supplier.push_structured_event(structured(
                fields={"n": n}, header=[N.Property("Priority", short(n))]))
        assert drain(odd) == [4, 3, 2, 1, 0]
        assert drain(worded) == [3, 1, 4, 0, 2]
        assert drain(other) == [3, 1, 4, 0, 2]

    def test_consumer_admin_mapping_filter_applies_to_its_proxies(self, channel: Any) -> None:
        """A ConsumerAdmin's priority_filter is shared by its proxy suppliers (2.3.1)."""
        admin, _ = channel.new_for_consumers(CA.AND_OP)
        admin._set_priority_filter(mapping(channel, short(0), ("$n == 1", short(9))))
        proxy, _ = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        proxy.set_qos([N.Property("OrderPolicy", short(N.PriorityOrder))])
        supplier = entry(channel)
        for n in range(3):
            supplier.push_structured_event(structured(fields={"n": n}))
        assert drain(proxy) == [1, 0, 2]

    def test_lifetime_mapping_expires_events(self, manual_channel: Any, clock: Any) -> None:
        """A lifetime mapping filter gives matching events a short life for this consumer."""
        proxy = pull(manual_channel)
        proxy._set_lifetime_filter(mapping(
            manual_channel, CORBA.Any(TimeBase._tc_TimeT, 0),
            ("$n == 1", CORBA.Any(TimeBase._tc_TimeT, 2 * 10_000_000))))
        supplier = entry(manual_channel)
        for n in range(3):
            supplier.push_structured_event(structured(fields={"n": n}))
        clock.advance(5)
        assert drain(proxy) == [0, 2]

    def test_lifetime_zero_is_the_longest(self, manual_channel: Any, clock: Any) -> None:
        """A lifetime of 0 is no timeout (Table 2-4: "The special value zero indicates
        there is no timeout"), the longest lifetime, so its constraint is tried first
        (§3.2.2.11: "starting with the constraint with the 'best' associated value
        ... the longest lifetime"): an event matching it and a 2 s one never expires."""
        proxy = pull(manual_channel)
        proxy._set_lifetime_filter(mapping(manual_channel, CORBA.Any(TIMET, SECOND),
                                           ("$n >= 0", CORBA.Any(TIMET, 2 * SECOND)),
                                           ("$n == 0", CORBA.Any(TIMET, 0))))
        supplier = entry(manual_channel)
        for n in range(2):
            supplier.push_structured_event(structured(fields={"n": n}))
        clock.advance(5)
        assert drain(proxy) == [0]

    def test_priority_below_lowest_is_ignored(self, channel: Any) -> None:
        """A mapped priority of -32768 is no priority (§2.5.5.2: "Priority is represented
        as a short value, where -32,767 is the lowest priority and 32,767 the highest",
        as a header Priority and a client's mapping filter's answer are checked); the
        value is ignored and the event keeps its own priority (0)."""
        proxy = pull(channel)
        proxy.set_qos([N.Property("OrderPolicy", short(N.PriorityOrder))])
        proxy._set_priority_filter(mapping(channel, short(0), ("$n == 1", short(-32768)),
                                           ("$n == 2", short(-32767))))
        supplier = entry(channel)
        for n in range(4):
            supplier.push_structured_event(structured(fields={"n": n}))
        assert drain(proxy) == [0, 1, 3, 2]

    def test_explicit_timeout_zero_of_proxy_supplier(self, manual_channel: Any,
                                                     clock: Any) -> None:
        """§2.3.1 rule 2 (footnote 4: the same for lifetime): no constraint matched and no
        header Timeout, but the proxy supplier "has an associated" Timeout QoS, so "that
        value will be used", not the mapping filter's default (rule 3). An explicit
        Timeout of 0 is such a value: no timeout (Table 2-4)."""
        proxy = pull(manual_channel)
        proxy.set_qos([N.Property("Timeout", CORBA.Any(TIMET, 0))])
        proxy._set_lifetime_filter(mapping(manual_channel, CORBA.Any(TIMET, 2 * SECOND),
                                           ("$n == 99", CORBA.Any(TIMET, SECOND))))
        entry(manual_channel).push_structured_event(structured(fields={"n": 0}))
        clock.advance(5)
        assert drain(proxy) == [0]

    def test_explicit_timeout_zero_of_proxy_consumer(self, manual_channel: Any,
                                                     clock: Any) -> None:
        """§2.3.1 rule 2, with the Timeout of 0 associated with "the proxy consumer that
        first received the event": it is used, not the mapping filter's default."""
        proxy = pull(manual_channel)
        proxy._set_lifetime_filter(mapping(manual_channel, CORBA.Any(TIMET, 2 * SECOND),
                                           ("$n == 99", CORBA.Any(TIMET, SECOND))))
        supplier = entry(manual_channel)
        supplier.set_qos([N.Property("Timeout", CORBA.Any(TIMET, 0))])
        supplier.push_structured_event(structured(fields={"n": 0}))
        clock.advance(5)
        assert drain(proxy) == [0]

    def test_default_timeout_zero_is_not_associated(self, manual_channel: Any,
                                                    clock: Any) -> None:
        """The built-in Timeout of 0, set nowhere, is no associated QoS (§2.3.1 rule 2):
        the mapping filter's default value applies (rule 3) and the event expires."""
        proxy = pull(manual_channel)
        proxy._set_lifetime_filter(mapping(manual_channel, CORBA.Any(TIMET, 2 * SECOND)))
        entry(manual_channel).push_structured_event(structured(fields={"n": 0}))
        clock.advance(5)
        assert drain(proxy) == []

    @pytest.mark.parametrize("admin_too", [False, True])
    def test_destroyed_proxy_mapping_filter_falls_back_to_the_admins(
            self, channel: Any, admin_too: bool) -> None:
        """§3.4.15.4: "If this attribute is set to the reference of a valid mapping filter
        object, this mapping filter will override that set at the admin level. Otherwise,
        the mapping filter object referred to by the priority_filter attribute of the
        ConsumerAdmin is used." A destroyed filter is not valid; if the admin's is
        destroyed too, nothing is mapped."""
        admin, _ = channel.new_for_consumers(CA.AND_OP)
        shared = mapping(channel, short(0), ("$n == 1", short(9)))
        admin._set_priority_filter(shared)
        proxy, _ = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        proxy.set_qos([N.Property("OrderPolicy", short(N.PriorityOrder))])
        own = mapping(channel, short(0), ("$n == 2", short(5)))
        proxy._set_priority_filter(own)
        own.destroy()
        if admin_too:
            shared.destroy()
        supplier = entry(channel)
        for n in range(3):
            supplier.push_structured_event(structured(fields={"n": n}))
        assert drain(proxy) == ([0, 1, 2] if admin_too else [1, 0, 2])


class TestSharing:
    def test_filter_constraint_types_reach_suppliers(self, channel: Any) -> None:
        """A real filter's constraint types are relayed to suppliers (section 2.6.5)."""
        supplier = PushSupplier()
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_supplier(supplier)
        out = pull(channel)
        flt = tcl(channel, ([("Telecom", "Alarm")], "TRUE"))
        out.add_filter(flt)
        assert channel._service.dispatcher.wait_idle()
        current = set()
        for added, removed in supplier.subscriptions:
            current -= {(t.domain_name, t.type_name) for t in removed}
            current |= {(t.domain_name, t.type_name) for t in added}
        assert current == {("Telecom", "Alarm")}
        flt.add_constraints([F.ConstraintExp([N.EventType("Telecom", "Clear")], "TRUE")])
        assert channel._service.dispatcher.wait_idle()
        for added, removed in supplier.subscriptions[-1:]:
            assert {(t.domain_name, t.type_name) for t in added} == {("Telecom", "Clear")}
        assert ALL not in {(t.domain_name, t.type_name)
                           for t in proxy.obtain_subscription_types(CA.ALL_NOW_UPDATES_OFF)}
