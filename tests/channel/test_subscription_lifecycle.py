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

import CosNotification as N
import CosNotifyChannelAdmin as CA


def types(*pairs: tuple[str, str]) -> list[Any]:
    return [N.EventType(d, t) for d, t in pairs]


def pairs(event_types: list[Any]) -> set[tuple[str, str]]:
    return {(t.domain_name, t.type_name) for t in event_types}


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
