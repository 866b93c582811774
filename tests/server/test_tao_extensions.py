"""A client written for TAO: NotifyMonitoringExt and NotifyExt over IIOP, unchanged."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import NotifyExt
import NotifyExt__POA
import NotifyMonitoringExt as M

from tests.server.conftest import ServeProcess, reference

PRIORITY_5 = [N.Property("Priority", CORBA.Any(CORBA.TC_short, 5))]
UNKNOWN_QOS = [N.Property("NoSuchProperty", CORBA.Any(CORBA.TC_long, 1))]


class Callback(NotifyExt__POA.ReconnectionCallback):
    """A client's ReconnectionCallback."""

    def __init__(self) -> None:
        self.called = threading.Event()

    def reconnect(self, new_connection: Any) -> None:
        self.called.set()

    def is_alive(self) -> bool:
        return True


def priority(obj: Any) -> Any:
    return {p.name: p.value.value() for p in obj.get_qos()}["Priority"]


class TestTaoClient:
    def test_references_are_the_most_derived_interfaces(self, factory: Any) -> None:
        """The factory, channels and admins are NotifyMonitoringExt objects; OMG narrowing works."""
        assert factory._is_a(M.EventChannelFactory._NP_RepositoryId)
        assert factory._is_a(NotifyExt.ReconnectionRegistry._NP_RepositoryId)
        channel, _ = factory.create_channel([], [])
        assert channel._is_a(M.EventChannel._NP_RepositoryId)
        assert channel._narrow(CA.EventChannel) is not None
        admin = channel._get_default_consumer_admin()
        assert admin._is_a(M.ConsumerAdmin._NP_RepositoryId)
        assert channel._get_default_supplier_admin()._is_a(M.SupplierAdmin._NP_RepositoryId)

    def test_references_carry_the_omg_type_ids(self, server: Any, omniorb: Any) -> None:
        """An OMG client's ORB types the references as before, without narrowing."""
        factory = omniorb.string_to_object(server.ior)
        assert type(factory) is CA._objref_EventChannelFactory
        channel = factory.create_channel([], [])[0]
        assert type(omniorb.string_to_object(omniorb.object_to_string(channel))) is (
            CA._objref_EventChannel)
        assert factory._narrow(M.EventChannelFactory).is_alive() is True

    def test_named_channels_admins_and_proxies(self, factory: Any, omniorb: Any) -> None:
        """Named objects are made; a name in use is NameAlreadyUsed; empty is NameMapError."""
        tao = factory._narrow(M.EventChannelFactory)
        name = f"alpha-{id(self)}-{threading.get_ident()}"
        channel, channel_id = tao.create_named_channel([], [], name)
        assert channel_id in tao.get_all_channels()
        with pytest.raises(M.NameAlreadyUsed):
            tao.create_named_channel([], [], name)
        with pytest.raises(M.NameMapError):
            tao.create_named_channel([], [], "")
        channel = channel._narrow(M.EventChannel)
        consumers, cid = channel.named_new_for_consumers(CA.AND_OP, "ca")
        with pytest.raises(M.NameAlreadyUsed):
            channel.named_new_for_consumers(CA.AND_OP, "ca")
        suppliers, _ = channel.named_new_for_suppliers(CA.OR_OP, "sa")
        consumers = consumers._narrow(M.ConsumerAdmin)
        suppliers = suppliers._narrow(M.SupplierAdmin)
        assert consumers._get_MyID() == cid
        proxy, pid = consumers.obtain_named_notification_push_supplier(CA.STRUCTURED_EVENT, "p")
        assert proxy._narrow(CA.StructuredProxyPushSupplier) is not None
        assert pid in consumers._get_push_suppliers()
        with pytest.raises(M.NameAlreadyUsed):
            consumers.obtain_named_notification_push_supplier(CA.STRUCTURED_EVENT, "p")
        inbound, _ = suppliers.obtain_named_notification_push_consumer(CA.STRUCTURED_EVENT, "p")
        assert inbound._narrow(CA.StructuredProxyPushConsumer) is not None

    def test_with_qos(self, channel: Any) -> None:
        """*_with_qos apply the initial QoS; refused QoS is UnsupportedQoS and leaves no proxy."""
        consumers = channel._get_default_consumer_admin()._narrow(M.ConsumerAdmin)
        suppliers = channel._get_default_supplier_admin()._narrow(M.SupplierAdmin)
        proxy, _ = consumers.obtain_notification_push_supplier_with_qos(
            CA.STRUCTURED_EVENT, PRIORITY_5)
        inbound, _ = suppliers.obtain_notification_push_consumer_with_qos(
            CA.SEQUENCE_EVENT, PRIORITY_5)
        assert priority(proxy) == priority(inbound) == 5
        before = consumers._get_push_suppliers()
        with pytest.raises(N.UnsupportedQoS):
            consumers.obtain_notification_push_supplier_with_qos(CA.ANY_EVENT, UNKNOWN_QOS)
        assert consumers._get_push_suppliers() == before

    def test_reconnection_registry(self, factory: Any, omniorb: Any) -> None:
        """register/unregister callbacks, is_alive and save_topology answer."""
        tao = factory._narrow(M.EventChannelFactory)
        callback = reference(omniorb, Callback())._narrow(NotifyExt.ReconnectionCallback)
        first = tao.register_callback(callback)
        second = tao.register_callback(callback)
        assert second > first >= 1
        tao.unregister_callback(first)
        tao.unregister_callback(second)
        assert tao.is_alive() is True
        tao.save_topology()

    def test_destroy_stops_cosnotify_serve(self, tmp_path: Path, omniorb: Any) -> None:
        """NotifyExt's destroy() on the factory ends `cosnotify serve`, cleanly."""
        served = ServeProcess(tmp_path)
        try:
            factory = omniorb.string_to_object(served.ior)._narrow(M.EventChannelFactory)
            factory.create_channel([], [])
            factory.destroy()
            assert served.wait(30) == 0, "".join(served.log)
        finally:
            served.stop()
