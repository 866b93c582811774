"""Offer and subscription sharing (section 2.6; TAO Updates; Table 3-1 modes)."""

from __future__ import annotations

from typing import Any

import pytest

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyComm

from cosnotify.eventtypes import ALL, normalize, type_matches
from tests.channel.conftest import PushSupplier, StructuredPushConsumer, structured


def types(*pairs: tuple[str, str]) -> list[Any]:
    return [N.EventType(d, t) for d, t in pairs]


def pairs(event_types: list[Any]) -> set[tuple[str, str]]:
    return {(t.domain_name, t.type_name) for t in event_types}


def accumulated(changes: list[tuple[list[Any], list[Any]]]) -> set[tuple[str, str]]:
    """Replay (added, removed) notifications into the set they describe."""
    current: set[tuple[str, str]] = set()
    for added, removed in changes:
        current -= pairs(removed)
        current |= pairs(added)
    return current


def settle(channel: Any) -> None:
    assert channel._service.dispatcher.wait_idle()


class TestNormalisation:
    @pytest.mark.parametrize("domain,type_name", [("", ""), ("*", "*"), ("", "*"), ("*", ""),
                                                  ("*", "%ALL"), ("", "%ALL")])
    def test_every_spelling_of_all_types(self, domain: str, type_name: str) -> None:
        """Section 2.6.6: empty and '*' in any combination mean %ALL."""
        assert normalize(domain, type_name) == ALL

    def test_all_types_of_one_domain(self) -> None:
        """%ALL with a named domain covers that domain only (2.6.6 defines %ALL with "" or "*")."""
        assert normalize("Telecom", "%ALL") == ("Telecom", "*")
        assert not type_matches(normalize("Telecom", "%ALL"), "Finance", "Quote")

    def test_wildcards_match_anywhere(self) -> None:
        """Section 2.3: '*' stands for zero or more characters in any position."""
        assert type_matches(("Tele*", "*Alarm"), "Telecom", "CommunicationsAlarm")
        assert type_matches(("T*m", "Comm*Al*m"), "Telecom", "CommunicationsAlarm")
        assert not type_matches(("Tele*", "*Alarm"), "Transport", "CommunicationsAlarm")
        assert type_matches(("Telecom", "CommunicationsAlarm"), "Telecom", "CommunicationsAlarm")


class TestOffers:
    def test_offers_aggregate_and_reach_consumers(self, channel: Any) -> None:
        """TAO Updates: an offer new to the channel reaches consumers via offer_change;
        a second supplier offering the same type changes nothing."""
        sink = StructuredPushConsumer()
        out, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        out.connect_structured_push_consumer(sink)
        admin = channel._get_default_supplier_admin()
        first, _ = admin.obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
        second, _ = admin.obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
        first.offer_change(types(("Telecom", "Alarm")), [])
        second.offer_change(types(("Telecom", "Alarm"), ("Telecom", "Clear")), [])
        settle(channel)
        assert accumulated(sink.offers) == {("Telecom", "Alarm"), ("Telecom", "Clear")}
        first.offer_change([], types(("Telecom", "Alarm")))
        settle(channel)
        assert accumulated(sink.offers) == {("Telecom", "Alarm"), ("Telecom", "Clear")}
        second.offer_change([], types(("Telecom", "Alarm")))
        settle(channel)
        assert accumulated(sink.offers) == {("Telecom", "Clear")}
        assert pairs(out.obtain_offered_types(CA.ALL_NOW_UPDATES_ON)) == {("Telecom", "Clear")}

    def test_destroyed_supplier_withdraws_its_offers(self, channel: Any) -> None:
        """A proxy consumer's offers leave the aggregate when it is destroyed."""
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        proxy.offer_change(types(("D", "T")), [])
        out, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        assert pairs(out.obtain_offered_types(CA.ALL_NOW_UPDATES_OFF)) == {("D", "T")}
        proxy._destroy()
        assert out.obtain_offered_types(CA.ALL_NOW_UPDATES_OFF) == []

    def test_supplier_admin_offer_change(self, channel: Any) -> None:
        """SupplierAdmin.offer_change contributes to the aggregate (section 2.6.2)."""
        channel._get_default_supplier_admin().offer_change(types(("A", "B")), [])
        out, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.ANY_EVENT)
        assert pairs(out.obtain_offered_types(CA.ALL_NOW_UPDATES_OFF)) == {("A", "B")}

    def test_invalid_event_type_is_refused(self, channel: Any) -> None:
        """A syntactically invalid name raises InvalidEventType naming it (3.3.1.1)."""
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.ANY_EVENT)
        with pytest.raises(CosNotifyComm.InvalidEventType) as info:
            proxy.offer_change(types(("Tele com", "x")), [])
        assert info.value.type.domain_name == "Tele com"


class TestSubscriptions:
    def test_filter_types_reach_suppliers(self, channel: Any) -> None:
        """Event types in consumers' filters are relayed to suppliers by subscription_change."""
        from tests.channel.conftest import CountingFilter

        supplier = PushSupplier()
        entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        entry.connect_structured_push_supplier(supplier)
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(StructuredPushConsumer())
        settle(channel)
        assert accumulated(supplier.subscriptions) == {ALL}
        constrained = CountingFilter()
        constrained.get_all_constraints = lambda: [  # type: ignore[method-assign]
            type("Info", (), {"constraint_expression": type(
                "Exp", (), {"event_types": types(("Telecom", "Alarm"))})()})()]
        filter_id = proxy.add_filter(constrained)
        settle(channel)
        assert accumulated(supplier.subscriptions) == {("Telecom", "Alarm")}
        # The filter later adds a type: it calls back through attach_callback.
        (callback,) = constrained.callbacks.values()
        callback.subscription_change(types(("Telecom", "Clear")), [])
        settle(channel)
        assert accumulated(supplier.subscriptions) == {("Telecom", "Alarm"), ("Telecom", "Clear")}
        proxy.remove_filter(filter_id)
        settle(channel)
        assert accumulated(supplier.subscriptions) == {ALL}
        assert constrained.callbacks == {}

    def test_direct_subscription_change_restricts_delivery(self, channel: Any) -> None:
        """A consumer may subscribe by type without a filter (section 2.6.5)."""
        sink = StructuredPushConsumer()
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(sink)
        proxy.subscription_change(types(("Telecom", "*Alarm")), [])
        entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        entry.connect_structured_push_supplier(None)
        for type_name in ("CommunicationsAlarm", "Heartbeat", "EquipmentAlarm"):
            entry.push_structured_event(structured(type_name=type_name))
        settle(channel)
        assert [e.header.fixed_header.event_type.type_name for e in sink.received] == [
            "CommunicationsAlarm", "EquipmentAlarm"]
        assert pairs(entry.obtain_subscription_types(CA.ALL_NOW_UPDATES_OFF)) == {
            ("Telecom", "*Alarm")}


class TestObtainModes:
    @pytest.mark.parametrize("mode,returns,updates", [
        ("ALL_NOW_UPDATES_OFF", True, False),
        ("ALL_NOW_UPDATES_ON", True, True),
        ("NONE_NOW_UPDATES_OFF", False, False),
        ("NONE_NOW_UPDATES_ON", False, True),
    ])
    def test_table_3_1(self, channel: Any, mode: str, returns: bool, updates: bool) -> None:
        """Each ObtainInfoMode returns (or not) the list and turns updates on (or off)."""
        consumer_side = StructuredPushConsumer()
        out, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        out.connect_structured_push_consumer(consumer_side)
        channel._get_default_supplier_admin().offer_change(types(("A", "A")), [])
        settle(channel)
        before = len(consumer_side.offers)
        result = out.obtain_offered_types(getattr(CA, mode))
        assert (pairs(result) == {("A", "A")}) is returns
        assert (result == []) is not returns
        channel._get_default_supplier_admin().offer_change(types(("B", "B")), [])
        settle(channel)
        assert (len(consumer_side.offers) > before) is updates
