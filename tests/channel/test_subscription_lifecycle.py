"""Offers and subscriptions across the life of their objects (review 136).

Section 2.6: the aggregates follow connections, destruction and the
ObtainInfoMode switches of Table 3-1; each test pins one behaviour that was
wrong once.
"""

from __future__ import annotations

from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA


def types(*pairs: tuple[str, str]) -> list[Any]:
    return [N.EventType(d, t) for d, t in pairs]


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
