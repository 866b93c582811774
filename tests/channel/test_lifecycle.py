"""Factory, channel, admin and proxy identity and lifecycle (TAO's IdAssignment and LifeCycle)."""

from __future__ import annotations

from typing import Any

import pytest
from omniORB import CORBA

import CosNotifyChannelAdmin as CA

from cosnotify.channel.factory import EventChannelFactory
from tests.channel.conftest import WAIT, PushSupplier, StructuredPushConsumer


class TestFactory:
    def test_channels_get_distinct_ids_and_can_be_found(self, factory: EventChannelFactory) -> None:
        """create_channel numbers channels uniquely; get_event_channel returns each by id."""
        made = [factory.create_channel([], []) for _ in range(5)]
        ids = [channel_id for _, channel_id in made]
        assert len(set(ids)) == 5
        assert factory.get_all_channels() == sorted(ids)
        for channel, channel_id in made:
            assert factory.get_event_channel(channel_id) is channel
            assert channel._get_MyFactory() is factory

    def test_unknown_channel_raises_channel_not_found(self, factory: EventChannelFactory) -> None:
        """get_event_channel of an id never assigned raises ChannelNotFound."""
        with pytest.raises(CA.ChannelNotFound):
            factory.get_event_channel(12345)

    def test_destroyed_channel_is_forgotten(self, factory: EventChannelFactory) -> None:
        """After destroy, the factory no longer lists or finds the channel."""
        channel, channel_id = factory.create_channel([], [])
        channel.destroy()
        assert channel_id not in factory.get_all_channels()
        with pytest.raises(CA.ChannelNotFound):
            factory.get_event_channel(channel_id)


class TestAdmins:
    def test_default_admins_have_id_zero(self, channel: Any) -> None:
        """Both default admins exist at creation with id 0 (section 3.4.17.2)."""
        assert channel._get_default_consumer_admin()._get_MyID() == 0
        assert channel._get_default_supplier_admin()._get_MyID() == 0
        assert channel.get_consumeradmin(0) is channel._get_default_consumer_admin()
        assert channel.get_all_consumeradmins() == [0]
        assert channel.get_all_supplieradmins() == [0]

    def test_new_admins_get_unique_ids_and_operator(self, channel: Any) -> None:
        """new_for_consumers/new_for_suppliers assign unique ids and keep the operator."""
        made = [channel.new_for_consumers(CA.OR_OP) for _ in range(3)]
        ids = [admin_id for _, admin_id in made]
        assert len(set(ids + [0])) == 4
        for admin, admin_id in made:
            assert channel.get_consumeradmin(admin_id) is admin
            assert admin._get_MyOperator() == CA.OR_OP
            assert admin._get_MyChannel() is channel
        supplier_admin, sid = channel.new_for_suppliers(CA.AND_OP)
        assert channel.get_supplieradmin(sid) is supplier_admin
        assert sorted(channel.get_all_consumeradmins()) == sorted(ids + [0])

    def test_unknown_admin_raises_admin_not_found(self, channel: Any) -> None:
        """get_consumeradmin/get_supplieradmin of an unknown id raise AdminNotFound."""
        with pytest.raises(CA.AdminNotFound):
            channel.get_consumeradmin(99)
        with pytest.raises(CA.AdminNotFound):
            channel.get_supplieradmin(99)

    def test_destroyed_admin_is_removed(self, channel: Any) -> None:
        """A destroyed admin is no longer listed nor found."""
        admin, admin_id = channel.new_for_consumers(CA.AND_OP)
        admin.destroy()
        assert admin_id not in channel.get_all_consumeradmins()
        with pytest.raises(CA.AdminNotFound):
            channel.get_consumeradmin(admin_id)
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)

    def test_event_service_admins_have_no_id(self, channel: Any) -> None:
        """for_consumers/for_suppliers make Event Service admins that are not listed."""
        consumer_admin = channel.for_consumers()
        supplier_admin = channel.for_suppliers()
        assert consumer_admin._get_MyID() is None and supplier_admin._get_MyID() is None
        assert channel.get_all_consumeradmins() == [0]


class TestProxies:
    def test_ids_are_unique_and_listed_by_style(self, channel: Any) -> None:
        """Proxy ids are unique per admin and appear in the push/pull id lists."""
        admin = channel._get_default_consumer_admin()
        push_ids = [admin.obtain_notification_push_supplier(t)[1]
                    for t in (CA.ANY_EVENT, CA.STRUCTURED_EVENT, CA.SEQUENCE_EVENT)]
        pull_ids = [admin.obtain_notification_pull_supplier(t)[1]
                    for t in (CA.ANY_EVENT, CA.STRUCTURED_EVENT, CA.SEQUENCE_EVENT)]
        assert len(set(push_ids + pull_ids)) == 6
        assert admin._get_push_suppliers() == sorted(push_ids)
        assert admin._get_pull_suppliers() == sorted(pull_ids)
        for proxy_id in push_ids + pull_ids:
            assert admin.get_proxy_supplier(proxy_id)._get_MyAdmin() is admin

    def test_proxy_types_match_the_client_type(self, channel: Any) -> None:
        """MyType reports the ProxyType that matches how the proxy was obtained."""
        admin = channel._get_default_supplier_admin()
        expected = {
            (admin.obtain_notification_push_consumer, CA.ANY_EVENT): CA.PUSH_ANY,
            (admin.obtain_notification_push_consumer, CA.STRUCTURED_EVENT): CA.PUSH_STRUCTURED,
            (admin.obtain_notification_push_consumer, CA.SEQUENCE_EVENT): CA.PUSH_SEQUENCE,
            (admin.obtain_notification_pull_consumer, CA.ANY_EVENT): CA.PULL_ANY,
            (admin.obtain_notification_pull_consumer, CA.STRUCTURED_EVENT): CA.PULL_STRUCTURED,
            (admin.obtain_notification_pull_consumer, CA.SEQUENCE_EVENT): CA.PULL_SEQUENCE,
        }
        for (obtain, ctype), proxy_type in expected.items():
            proxy, proxy_id = obtain(ctype)
            assert proxy._get_MyType() == proxy_type
            assert admin.get_proxy_consumer(proxy_id) is proxy

    def test_unknown_proxy_raises_proxy_not_found(self, channel: Any) -> None:
        """get_proxy_supplier/get_proxy_consumer of an unknown id raise ProxyNotFound."""
        with pytest.raises(CA.ProxyNotFound):
            channel._get_default_consumer_admin().get_proxy_supplier(7)
        with pytest.raises(CA.ProxyNotFound):
            channel._get_default_supplier_admin().get_proxy_consumer(7)

    def test_event_service_proxies_have_no_id(self, channel: Any) -> None:
        """obtain_push_supplier and friends make proxies absent from the id lists."""
        admin = channel._get_default_consumer_admin()
        proxy = admin.obtain_push_supplier()
        assert proxy.proxy_id is None
        assert admin._get_push_suppliers() == []
        assert channel._get_default_supplier_admin().obtain_pull_consumer().proxy_id is None


class TestDestroy:
    def test_channel_destroy_disconnects_every_client(self, channel: Any) -> None:
        """destroy on the channel destroys admins and proxies and calls disconnect_* on clients."""
        consumer = StructuredPushConsumer()
        supplier = PushSupplier()
        admin, _ = channel.new_for_consumers(CA.AND_OP)
        proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(consumer)
        pc, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        pc.connect_structured_push_supplier(supplier)
        channel.destroy()
        assert consumer.disconnected.wait(WAIT)
        assert supplier.disconnected.wait(WAIT)
        assert proxy.destroyed and pc.destroyed

    def test_admin_destroy_disconnects_its_proxies_only(self, channel: Any) -> None:
        """Destroying one admin leaves proxies of other admins connected."""
        doomed, _ = channel.new_for_consumers(CA.AND_OP)
        survivor = channel._get_default_consumer_admin()
        c1, c2 = StructuredPushConsumer(), StructuredPushConsumer()
        p1, _ = doomed.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        p2, _ = survivor.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        p1.connect_structured_push_consumer(c1)
        p2.connect_structured_push_consumer(c2)
        doomed.destroy()
        assert c1.disconnected.wait(WAIT)
        assert not p2.destroyed and not c2.disconnected.is_set()

    def test_client_disconnect_does_not_call_back(self, channel: Any) -> None:
        """A consumer's own disconnect destroys the proxy without calling the consumer."""
        consumer = StructuredPushConsumer()
        admin = channel._get_default_consumer_admin()
        proxy, proxy_id = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(consumer)
        proxy.disconnect_structured_push_supplier()
        with pytest.raises(CA.ProxyNotFound):
            admin.get_proxy_supplier(proxy_id)
        channel.destroy()  # nothing left to tell
        assert not consumer.disconnected.is_set()

    def test_destroyed_proxy_refuses_connect(self, channel: Any) -> None:
        """Connecting to a destroyed proxy raises OBJECT_NOT_EXIST."""
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(StructuredPushConsumer())
        proxy.disconnect_structured_push_supplier()
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            proxy.connect_structured_push_consumer(StructuredPushConsumer())

    def test_lifecycle_loop_leaves_nothing_behind(self, channel: Any) -> None:
        """Creating and destroying admins and proxies in a loop leaves the lists empty."""
        for _ in range(20):
            admin, _ = channel.new_for_consumers(CA.OR_OP)
            for ctype in (CA.ANY_EVENT, CA.STRUCTURED_EVENT, CA.SEQUENCE_EVENT):
                admin.obtain_notification_push_supplier(ctype)
                admin.obtain_notification_pull_supplier(ctype)
            admin.obtain_pull_supplier().connect_pull_consumer(None)
            admin.destroy()
        assert channel.get_all_consumeradmins() == [0]
        assert channel._connected_counts == {"MaxConsumers": 0, "MaxSuppliers": 0}


class TestDestroyedObjectsInProcess:
    """public-api.md section 3: an in-process object raises "exactly as a remote call
    would", and the server answers every call on a destroyed object with
    OBJECT_NOT_EXIST (§3.4.15.11: "Ultimately, the ConsumerAdmin instance itself will
    be destroyed"; so a channel and a proxy)."""

    def test_a_destroyed_channel_lists_no_admins(self, factory: EventChannelFactory) -> None:
        channel, _ = factory.create_channel([], [])
        channel.destroy()
        for call in (channel.get_all_consumeradmins, channel.get_all_supplieradmins,
                     lambda: channel.get_consumeradmin(0),
                     lambda: channel.get_supplieradmin(0)):
            with pytest.raises(CORBA.OBJECT_NOT_EXIST):
                call()

    def test_a_destroyed_admin_finds_no_proxy(self, channel: Any) -> None:
        admin, _ = channel.new_for_consumers(CA.AND_OP)
        _, proxy_id = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        admin.destroy()
        for call in (lambda: admin.get_proxy_supplier(proxy_id), admin._get_push_suppliers,
                     admin._get_pull_suppliers):
            with pytest.raises(CORBA.OBJECT_NOT_EXIST):
                call()

    def test_a_destroyed_proxy_refuses_a_second_disconnect(self, channel: Any) -> None:
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(StructuredPushConsumer())
        proxy.disconnect_structured_push_supplier()
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            proxy.disconnect_structured_push_supplier()

    def test_a_destroyed_proxy_is_gone_before_its_argument_is_judged(
            self, channel: Any) -> None:
        """A nil consumer is BAD_PARAM on a live proxy; on a destroyed one the object's
        absence comes first."""
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.disconnect_structured_push_supplier()
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            proxy.connect_structured_push_consumer(None)
