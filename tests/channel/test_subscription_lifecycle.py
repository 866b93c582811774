"""Offers and subscriptions across the life of their objects (review 136).

Section 2.6: the aggregates follow connections, destruction and the
ObtainInfoMode switches of Table 3-1; each test pins one behaviour that was
wrong once.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from omniORB import CORBA

import CosNotifyChannelAdmin as CA
import CosNotifyFilter

from tests.channel.conftest import PushSupplier, StructuredPushConsumer
from tests.channel.test_subscriptions import accumulated, pairs, types


def watched_entry(channel: Any) -> tuple[Any, PushSupplier]:
    """A connected proxy consumer whose supplier gets subscription_change updates."""
    entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    supplier = PushSupplier()
    entry.connect_structured_push_supplier(supplier)
    entry.obtain_subscription_types(CA.NONE_NOW_UPDATES_ON)
    return entry, supplier


def settle(channel: Any) -> None:
    assert channel._service.dispatcher.wait_idle()


class HeldSupplier:
    """A supplier whose first ``subscription_change`` waits for ``gate``, so the
    channel's later changes queue up behind it; records what it is told."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.calls: list[tuple[set[tuple[str, str]], set[tuple[str, str]]]] = []

    def subscription_change(self, added: list[Any], removed: list[Any]) -> None:
        first = not self.entered.is_set()
        self.entered.set()
        if first:
            assert self.gate.wait(10)
        self.calls.append((pairs(added), pairs(removed)))

    def disconnect_structured_push_supplier(self) -> None:
        pass


class TestDestroyedPublishers:
    def test_offer_change_on_a_destroyed_supplier_admin(self, channel: Any) -> None:
        """Section 3.4.16.9: destroy "can be invoked to destroy the target SupplierAdmin
        instance, freeing all resources consumed by the instance": offer_change on it
        afterwards raises OBJECT_NOT_EXIST and adds nothing to the channel's offers."""
        admin, _ = channel.new_for_suppliers(CA.AND_OP)
        admin.offer_change(types(("A", "B")), [])
        admin.destroy()
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            admin.offer_change(types(("X", "Y")), [])
        assert channel._hub.current("offers") == []

    def test_offer_change_on_a_destroyed_proxy_consumer(self, channel: Any) -> None:
        """Section 3.3.1.1: offer_change tells "the target consumer object" what the
        supplier plans to supply; a proxy consumer its supplier disconnected is gone,
        so the call raises OBJECT_NOT_EXIST and its offers stay out of the aggregate."""
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_supplier(None)
        proxy.offer_change(types(("A", "B")), [])
        proxy.disconnect_structured_push_consumer()
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            proxy.offer_change(types(("P", "Q")), [])
        assert channel._hub.current("offers") == []


class TestObtainModesDropStaleChanges:
    @pytest.mark.parametrize("mode", ["ALL_NOW_UPDATES_ON", "NONE_NOW_UPDATES_ON"])
    def test_a_change_undone_while_updates_were_off_is_not_sent(
            self, channel: Any, mode: str) -> None:
        """Table 3-1, ALL_NOW_UPDATES_ON: "return the current list of subscription types
        ... and subsequent automatic sending of subscription update information should be
        enabled. Note these two actions should be atomic": a change still queued for the
        supplier when it turned updates off, and undone meanwhile, is not sent once it
        turns them on again (nor after the list it was given then)."""
        admin = channel._get_default_consumer_admin()
        admin.obtain_notification_pull_supplier(CA.ANY_EVENT)[0].connect_any_pull_consumer(
            None)  # a consumer of the admin: its types count (section 2.6.4)
        entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        supplier = HeldSupplier()
        entry.connect_structured_push_supplier(supplier)
        admin.subscription_change(types(("D", "A")), [])  # sent; the supplier holds it
        assert supplier.entered.wait(10)
        admin.subscription_change(types(("D", "X")), [])  # queued behind it
        entry.obtain_subscription_types(CA.NONE_NOW_UPDATES_OFF)
        admin.subscription_change([], types(("D", "X")))  # not sent: updates are off
        listed = pairs(entry.obtain_subscription_types(getattr(CA, mode)))
        supplier.gate.set()
        settle(channel)
        assert supplier.calls[1:] == []
        assert ("D", "X") not in listed | pairs(
            entry.obtain_subscription_types(CA.ALL_NOW_UPDATES_OFF))


class TestConsumerAdminsContributeWhileConsumersAreConnected:
    @pytest.mark.parametrize("leaves", ["disconnect", "destroy"])
    def test_admin_types_follow_its_consumers(self, channel: Any, leaves: str) -> None:
        """Section 2.6.4: "When no consumers are interested, the channel's aggregate list
        of event types will change, and the supplier will be notified via the
        subscription_change operation that these notifications are no longer being
        consumed": a ConsumerAdmin's filter and subscription_change types count while one
        of its proxy suppliers has a consumer, and leave with the last one."""
        admin, _ = channel.new_for_consumers(CA.AND_OP)
        flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        flt.add_constraints([CosNotifyFilter.ConstraintExp(types(("D", "X")), "TRUE")])
        admin.add_filter(flt)
        admin.subscription_change(types(("D", "Y")), [])
        entry, supplier = watched_entry(channel)
        assert channel._hub.current("subscriptions") == []  # nobody consumes yet
        proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(StructuredPushConsumer())
        settle(channel)
        assert accumulated(supplier.subscriptions) == {("D", "X"), ("D", "Y")}
        if leaves == "disconnect":
            proxy.disconnect_structured_push_supplier()
        else:
            proxy._destroy()
        settle(channel)
        assert accumulated(supplier.subscriptions) == set()
        assert pairs(entry.obtain_subscription_types(CA.ALL_NOW_UPDATES_OFF)) == set()

    def test_an_event_service_consumer_counts_too(self, channel: Any) -> None:
        """Section 2.6.3: "Event Channels will aggregate the event types that their
        consumers require": a connected Event Service style proxy supplier of the admin
        makes the admin's types required."""
        admin = channel._get_default_consumer_admin()
        admin.subscription_change(types(("D", "Z")), [])
        assert channel._hub.current("subscriptions") == []
        admin.obtain_pull_supplier().connect_pull_consumer(None)
        assert ("D", "Z") in channel._hub.current("subscriptions")


class TestObtainBeforeConnect:
    def test_subscription_changes_after_obtain_reach_a_supplier_that_connects_later(
            self, channel: Any) -> None:
        """Table 3-1, ALL_NOW_UPDATES_ON: "guaranteeing that the supplier connected to the
        proxy consumer does not miss any subscription change updates that may be issued
        after the operation returns" -- also when it called obtain_subscription_types
        before connect_*: what changed between the two is sent once it connects."""
        entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        listed = pairs(entry.obtain_subscription_types(CA.ALL_NOW_UPDATES_ON))
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(StructuredPushConsumer())
        proxy.subscription_change(types(("A", "B")), [])
        supplier = PushSupplier()
        entry.connect_structured_push_supplier(supplier)
        settle(channel)
        assert accumulated([(types(*listed), [])] + supplier.subscriptions) == {("A", "B")}
        assert pairs(entry.obtain_subscription_types(CA.ALL_NOW_UPDATES_OFF)) == {("A", "B")}

    @pytest.mark.parametrize(("mode", "told"), [("NONE_NOW_UPDATES_ON", True),
                                                ("ALL_NOW_UPDATES_OFF", False)])
    def test_offer_changes_after_obtain_reach_a_consumer_that_connects_later(
            self, channel: Any, mode: str, told: bool) -> None:
        """Section 3.4.2.5: obtain_offered_types takes the modes of Table 3-1 "except that
        the information being shared is "offer" information": NONE_NOW_UPDATES_ON "should
        enable the subsequent automatic sending" of the offers made before the consumer
        connected; with updates off nothing is sent."""
        admin = channel._get_default_supplier_admin()
        admin.offer_change(types(("Old", "Offer")), [])
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.obtain_offered_types(getattr(CA, mode))
        admin.offer_change(types(("A", "B")), types(("Old", "Offer")))
        consumer = StructuredPushConsumer()
        proxy.connect_structured_push_consumer(consumer)
        settle(channel)
        added = set().union(*(pairs(a) for a, _ in consumer.offers))
        removed = set().union(*(pairs(r) for _, r in consumer.offers))
        assert (added, removed) == (({("A", "B")}, {("Old", "Offer")}) if told
                                    else (set(), set()))
