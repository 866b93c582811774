"""TAO's NotifyExt and NotifyMonitoringExt operations on the in-process core."""

from __future__ import annotations

from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import NotifyMonitoringExt as M

from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.names import name_of

PRIORITY_5 = [N.Property("Priority", CORBA.Any(CORBA.TC_short, 5))]
BAD_PRIORITY = [N.Property("Priority", CORBA.Any(CORBA.TC_short, 32767)),
                N.Property("NoSuchProperty", CORBA.Any(CORBA.TC_long, 1))]


class TestNamedChannels:
    def test_create_named_channel_returns_channel_and_id(self, factory: EventChannelFactory) -> None:
        """create_named_channel is create_channel plus a name the channel keeps."""
        channel, channel_id = factory.create_named_channel([], [], "alpha")
        assert factory.get_event_channel(channel_id) is channel
        assert channel.name == "alpha"
        assert factory.create_channel([], [])[0].name is None

    def test_a_name_in_use_is_refused(self, factory: EventChannelFactory) -> None:
        """A second channel with the same name is NameAlreadyUsed, and nothing is made."""
        factory.create_named_channel([], [], "alpha")
        before = factory.get_all_channels()
        with pytest.raises(M.NameAlreadyUsed):
            factory.create_named_channel([], [], "alpha")
        assert factory.get_all_channels() == before

    def test_an_empty_name_is_a_name_map_error(self, factory: EventChannelFactory) -> None:
        """TAO refuses an empty name with NameMapError."""
        with pytest.raises(M.NameMapError):
            factory.create_named_channel([], [], "")

    def test_a_destroyed_channel_frees_its_name(self, factory: EventChannelFactory) -> None:
        """Once the channel is destroyed its name can be used again."""
        channel, _ = factory.create_named_channel([], [], "alpha")
        channel.destroy()
        assert factory.create_named_channel([], [], "alpha")[0].name == "alpha"

    def test_refused_qos_does_not_take_the_name(self, factory: EventChannelFactory) -> None:
        """UnsupportedQoS leaves the name free."""
        with pytest.raises(N.UnsupportedQoS):
            factory.create_named_channel(BAD_PRIORITY, [], "alpha")
        assert factory.create_named_channel([], [], "alpha")[0].name == "alpha"


class TestNamedAdmins:
    def test_named_admins(self, channel: Any) -> None:
        """named_new_for_consumers/suppliers return (admin, id) and the admin keeps its name."""
        consumers, cid = channel.named_new_for_consumers(CA.AND_OP, "in")
        suppliers, sid = channel.named_new_for_suppliers(CA.OR_OP, "in")
        assert channel.get_consumeradmin(cid) is consumers and consumers.name == "in"
        assert channel.get_supplieradmin(sid) is suppliers and suppliers.name == "in"
        assert consumers._get_MyOperator() == CA.AND_OP

    def test_admin_names_are_unique_per_channel_and_kind(self, factory: EventChannelFactory) -> None:
        """A consumer-admin name is refused again in its channel, not in another one."""
        first, _ = factory.create_channel([], [])
        first.named_new_for_consumers(CA.AND_OP, "a")
        with pytest.raises(M.NameAlreadyUsed):
            first.named_new_for_consumers(CA.OR_OP, "a")
        assert first.get_all_consumeradmins() == [0, 1]
        second, _ = factory.create_channel([], [])
        assert second.named_new_for_consumers(CA.AND_OP, "a")[0].name == "a"

    def test_a_destroyed_admin_frees_its_name(self, channel: Any) -> None:
        """Destroying a named admin frees its name in the channel."""
        admin, _ = channel.named_new_for_suppliers(CA.AND_OP, "s")
        admin.destroy()
        assert channel.named_new_for_suppliers(CA.AND_OP, "s")[0].name == "s"


class TestNamedProxies:
    def test_named_push_proxies(self, channel: Any) -> None:
        """obtain_named_notification_push_* make push proxies with names."""
        proxy, pid = channel._get_default_consumer_admin().obtain_named_notification_push_supplier(
            CA.STRUCTURED_EVENT, "out")
        inbound, _ = channel._get_default_supplier_admin().obtain_named_notification_push_consumer(
            CA.SEQUENCE_EVENT, "out")
        assert proxy.proxy_type == CA.PUSH_STRUCTURED and name_of(proxy) == "out"
        assert inbound.proxy_type == CA.PUSH_SEQUENCE and name_of(inbound) == "out"
        assert channel._get_default_consumer_admin().get_proxy_supplier(pid) is proxy

    def test_proxy_names_are_unique_in_the_channel(self, channel: Any) -> None:
        """As in TAO, a proxy-supplier name is taken for every consumer admin of the channel,
        and a refused name leaves no proxy behind."""
        channel._get_default_consumer_admin().obtain_named_notification_push_supplier(
            CA.ANY_EVENT, "p")
        other, _ = channel.new_for_consumers(CA.AND_OP)
        with pytest.raises(M.NameAlreadyUsed):
            other.obtain_named_notification_push_supplier(CA.ANY_EVENT, "p")
        assert other._get_push_suppliers() == []

    def test_a_destroyed_proxy_frees_its_name(self, channel: Any) -> None:
        """A disconnected (destroyed) proxy frees its name."""
        admin = channel._get_default_supplier_admin()
        proxy, _ = admin.obtain_named_notification_push_consumer(CA.STRUCTURED_EVENT, "p")
        proxy.disconnect_structured_push_consumer()
        assert name_of(admin.obtain_named_notification_push_consumer(
            CA.STRUCTURED_EVENT, "p")[0]) == "p"


class TestWithQoS:
    def test_initial_qos_is_applied(self, channel: Any) -> None:
        """*_with_qos proxies start with the given QoS."""
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier_with_qos(
            CA.STRUCTURED_EVENT, PRIORITY_5)
        inbound, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer_with_qos(
            CA.STRUCTURED_EVENT, PRIORITY_5)
        for made in (proxy, inbound):
            assert {p.name: p.value.value() for p in made.get_qos()}["Priority"] == 5

    def test_unsupported_qos_leaves_nothing_behind(self, channel: Any) -> None:
        """UnsupportedQoS: no proxy stays, and MaxConsumers is not used up."""
        channel.set_admin([N.Property("MaxConsumers", CORBA.Any(CORBA.TC_long, 1))])
        admin = channel._get_default_consumer_admin()
        with pytest.raises(N.UnsupportedQoS):
            admin.obtain_notification_push_supplier_with_qos(CA.STRUCTURED_EVENT, BAD_PRIORITY)
        assert admin._get_push_suppliers() == []
        admin.obtain_notification_push_supplier_with_qos(CA.STRUCTURED_EVENT, PRIORITY_5)

    def test_a_proxy_is_listed_only_once_its_qos_is_set(
            self, channel: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        """While the initial QoS is applied, the admin does not list the proxy yet: nobody
        (get_proxy_supplier, cosnotify ls) sees a proxy that may still be refused."""
        from cosnotify.channel.push_supplier import StructuredProxyPushSupplier

        admin = channel._get_default_consumer_admin()
        listed_during: list[list[int]] = []
        a_child_during: list[bool] = []
        real = StructuredProxyPushSupplier.set_qos

        def watching(proxy: Any, qos: list[Any]) -> None:
            listed_during.append(list(admin._get_push_suppliers()))
            # ...but the admin counts it as a child: its reliability is frozen (section 2.5.5.1, docs/qos.md)
            a_child_during.append(admin._qos_target().has_children)
            real(proxy, qos)

        monkeypatch.setattr(StructuredProxyPushSupplier, "set_qos", watching)
        _, proxy_id = admin.obtain_notification_push_supplier_with_qos(
            CA.STRUCTURED_EVENT, PRIORITY_5)
        assert listed_during == [[]]
        assert a_child_during == [True]
        assert admin._get_push_suppliers() == [proxy_id]
        assert admin._making == 0


class _Callback:
    def __init__(self, fails: bool = False) -> None:
        self.fails = fails
        self.told: list[Any] = []

    def reconnect(self, new_connection: Any) -> None:
        if self.fails:
            raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)
        self.told.append(new_connection)


class TestReconnectionRegistry:
    def test_ids_and_is_alive(self, factory: EventChannelFactory) -> None:
        """Callbacks get ids 1, 2, ...; unregistering one (or an unknown id) is quiet."""
        first, second = factory.register_callback(_Callback()), factory.register_callback(_Callback())
        assert (first, second) == (1, 2)
        factory.unregister_callback(first)
        factory.unregister_callback(99)
        assert list(factory.reconnection_registry.callbacks()) == [2]
        assert factory.is_alive() is True

    def test_send_reconnect_drops_failing_callbacks(self, factory: EventChannelFactory) -> None:
        """Each callback is told the new reference; one that fails is dropped (TAO)."""
        good, bad = _Callback(), _Callback(fails=True)
        good_id = factory.register_callback(good)
        factory.register_callback(bad)
        assert factory.send_reconnect("new factory") == 1
        assert good.told == ["new factory"]
        assert list(factory.reconnection_registry.callbacks()) == [good_id]


class TestFactoryExtensions:
    def test_save_topology_is_a_no_op(self, factory: EventChannelFactory) -> None:
        """save_topology changes nothing (changes are saved as they happen)."""
        factory.create_channel([], [])
        factory.save_topology()
        assert factory.get_all_channels() == [0]

    def test_destroy_shuts_the_factory_down(self) -> None:
        """destroy() closes the factory: its channels go and no new one is made."""
        factory = EventChannelFactory()
        channel, _ = factory.create_channel([], [])
        factory.destroy()
        assert channel._destroyed
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            factory.create_channel([], [])

    def test_destroy_calls_the_hook(self) -> None:
        """With on_destroy set (a server), destroy() calls it instead."""
        factory = EventChannelFactory()
        called: list[bool] = []
        factory.on_destroy = lambda: called.append(True)
        factory.destroy()
        assert called == [True]
        factory.close()
