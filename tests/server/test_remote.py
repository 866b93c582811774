"""The service over IIOP: every interface served, every proxy kind used remotely.

Consumers and suppliers are servants of this process relayed by a peer
process (tests/peers), so the server reaches them over IIOP; tests that only
act as a client run against an in-process server and a `cosnotify serve`
child alike (the ``factory``/``channel`` fixtures).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from omniORB import CORBA

import CosEventChannelAdmin as ECA
import CosEventComm
import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyComm__POA
import CosNotifyFilter as F
import CosNotifyFilter__POA

from tests.channel import test_dispatch
from tests.channel.conftest import WAIT, number, structured
from tests.peers.harness import Peer


class Collector:
    """A client servant body: records what arrives, signals on a condition."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.cond = threading.Condition()
        self.disconnected = threading.Event()

    def add(self, item: Any) -> None:
        with self.cond:
            self.items.append(item)
            self.cond.notify_all()

    def wait_for(self, count: int) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: len(self.items) >= count, WAIT)

    def offer_change(self, added: Any, removed: Any) -> None:
        pass


class StructuredConsumer(Collector, CosNotifyComm__POA.StructuredPushConsumer):
    def push_structured_event(self, event: Any) -> None:
        self.add(event)

    def disconnect_structured_push_consumer(self) -> None:
        self.disconnected.set()


class SequenceConsumer(Collector, CosNotifyComm__POA.SequencePushConsumer):
    def push_structured_events(self, events: list[Any]) -> None:
        for event in events:
            self.add(event)

    def disconnect_sequence_push_consumer(self) -> None:
        self.disconnected.set()


class AnyConsumer(Collector, CosNotifyComm__POA.PushConsumer):
    def push(self, data: Any) -> None:
        self.add(data)

    def disconnect_push_consumer(self) -> None:
        self.disconnected.set()


class StructuredPullSupplier(Collector, CosNotifyComm__POA.StructuredPullSupplier):
    def __init__(self, events: list[Any]) -> None:
        super().__init__()
        self.queue = list(events)

    def pull_structured_event(self) -> Any:
        raise CORBA.NO_IMPLEMENT()

    def try_pull_structured_event(self) -> tuple[Any, bool]:
        if self.queue:
            return self.queue.pop(0), True
        return structured(), False

    def subscription_change(self, added: Any, removed: Any) -> None:
        pass

    def disconnect_structured_pull_supplier(self) -> None:
        self.disconnected.set()


def push_entry(channel: Any, ctype: Any = CA.STRUCTURED_EVENT) -> Any:
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(ctype)
    name = {CA.STRUCTURED_EVENT: "StructuredProxyPushConsumer",
            CA.SEQUENCE_EVENT: "SequenceProxyPushConsumer",
            CA.ANY_EVENT: "ProxyPushConsumer"}[ctype]
    proxy = proxy._narrow(getattr(CA, name))
    getattr(proxy, {CA.STRUCTURED_EVENT: "connect_structured_push_supplier",
                    CA.SEQUENCE_EVENT: "connect_sequence_push_supplier",
                    CA.ANY_EVENT: "connect_any_push_supplier"}[ctype])(None)
    return proxy


class TestNavigation:
    def test_factory_channel_admin_ids_and_back_references(self, factory: Any) -> None:
        """Ids and back references work remotely (the spec's administrability, 2.1.1)."""
        channel, channel_id = factory.create_channel([], [])
        assert channel_id in factory.get_all_channels()
        assert factory.get_event_channel(channel_id)._is_equivalent(channel)
        assert channel._get_MyFactory()._is_equivalent(factory)
        admin, admin_id = channel.new_for_consumers(CA.OR_OP)
        assert admin._get_MyID() == admin_id and admin._get_MyOperator() == CA.OR_OP
        assert channel.get_consumeradmin(admin_id)._is_equivalent(admin)
        proxy, proxy_id = admin.obtain_notification_pull_supplier(CA.ANY_EVENT)
        assert admin.get_proxy_supplier(proxy_id)._is_equivalent(proxy)
        assert proxy._get_MyType() == CA.PULL_ANY
        assert proxy._get_MyAdmin()._is_equivalent(admin)

    def test_user_exceptions_arrive_with_their_fields(self, factory: Any, channel: Any) -> None:
        """ChannelNotFound, UnsupportedQoS (with its PropertyErrorSeq), AdminLimitExceeded
        (once the one consumer MaxConsumers allows is connected)."""
        with pytest.raises(CA.ChannelNotFound):
            factory.get_event_channel(4242)
        with pytest.raises(N.UnsupportedQoS) as info:
            channel.set_qos([N.Property("MaximumBatchSize", CORBA.Any(CORBA.TC_long, 0))])
        error = info.value.qos_err[0]
        assert (error.code, error.name) == (N.BAD_VALUE, "MaximumBatchSize")
        assert error.available_range.low_val.value() == 1
        channel.set_admin([N.Property("MaxConsumers", CORBA.Any(CORBA.TC_long, 1))])
        admin = channel._get_default_consumer_admin()
        proxy, _ = admin.obtain_notification_pull_supplier(CA.ANY_EVENT)
        proxy._narrow(CA.ProxyPullSupplier).connect_any_pull_consumer(None)
        with pytest.raises(CA.AdminLimitExceeded) as limit:
            admin.obtain_notification_push_supplier(CA.ANY_EVENT)
        assert limit.value.admin_property_err.name == "MaxConsumers"

    def test_destroyed_objects_do_not_exist(self, channel: Any) -> None:
        """After destroy, references to the admin raise OBJECT_NOT_EXIST."""
        admin, _ = channel.new_for_suppliers(CA.AND_OP)
        admin.destroy()
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            admin._get_MyID()
        assert admin._non_existent()


class TestProxyKinds:
    def test_structured_push_with_our_filter(self, peer: Peer, channel: Any) -> None:
        """A filter made by the server's FilterFactory filters a remote consumer's events."""
        consumer = StructuredConsumer()
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy = proxy._narrow(CA.StructuredProxyPushSupplier)
        factory = channel._get_default_filter_factory()
        flt = factory.create_filter("EXTENDED_TCL")
        flt.add_constraints([F.ConstraintExp([], "$n >= 7")])
        proxy.add_filter(flt)
        proxy.connect_structured_push_consumer(peer.remote(consumer))
        entry = push_entry(channel)
        for n in range(10):
            entry.push_structured_event(structured(fields={"n": n}))
        assert consumer.wait_for(3)
        assert [number(e) for e in consumer.items] == [7, 8, 9]

    def test_invalid_constraint_arrives_intact(self, channel: Any) -> None:
        """InvalidConstraint from the server carries the offending constraint."""
        flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        with pytest.raises(F.InvalidConstraint) as info:
            flt.add_constraints([F.ConstraintExp([], "$a ## 1")])
        assert info.value.constr.constraint_expr == "$a ## 1"
        with pytest.raises(F.InvalidGrammar):
            channel._get_default_filter_factory().create_filter("XPATH")

    def test_sequence_push_consumer(self, peer: Peer, channel: Any) -> None:
        """A remote sequence consumer receives batches of MaximumBatchSize."""
        consumer = SequenceConsumer()
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.SEQUENCE_EVENT)
        proxy = proxy._narrow(CA.SequenceProxyPushSupplier)
        proxy.set_qos([N.Property("MaximumBatchSize", CORBA.Any(CORBA.TC_long, 4))])
        proxy.connect_sequence_push_consumer(peer.remote(consumer))
        entry = push_entry(channel, CA.SEQUENCE_EVENT)
        entry.push_structured_events([structured(fields={"n": n}) for n in range(8)])
        assert consumer.wait_for(8)
        assert [number(e) for e in consumer.items] == list(range(8))

    def test_any_push_and_pull(self, peer: Peer, channel: Any) -> None:
        """Any consumers, push and pull, through notification-style proxies."""
        consumer = AnyConsumer()
        admin = channel._get_default_consumer_admin()
        push_proxy = admin.obtain_notification_push_supplier(
            CA.ANY_EVENT)[0]._narrow(CA.ProxyPushSupplier)
        push_proxy.connect_any_push_consumer(peer.remote(consumer))
        pull_proxy = admin.obtain_notification_pull_supplier(
            CA.ANY_EVENT)[0]._narrow(CA.ProxyPullSupplier)
        pull_proxy.connect_any_pull_consumer(None)
        entry = push_entry(channel, CA.ANY_EVENT)
        entry.push(CORBA.Any(CORBA.TC_string, "hello"))
        assert consumer.wait_for(1)
        assert consumer.items[0].value() == "hello"
        pulled = pull_proxy.pull()
        assert (pulled.typecode().kind(), pulled.value()) == (CORBA.tk_string, "hello")
        _, has_event = pull_proxy.try_pull()
        assert has_event is False

    def test_structured_and_sequence_pull(self, channel: Any) -> None:
        """Pull consumers pull structured events and sequences remotely."""
        admin = channel._get_default_consumer_admin()
        single = (
            admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)[0]
                ._narrow(CA.StructuredProxyPullSupplier))
        batch = (
            admin.obtain_notification_pull_supplier(CA.SEQUENCE_EVENT)[0]
                ._narrow(CA.SequenceProxyPullSupplier))
        single.connect_structured_pull_consumer(None)
        batch.connect_sequence_pull_consumer(None)
        batch.set_qos([N.Property("MaximumBatchSize", CORBA.Any(CORBA.TC_long, 3))])
        entry = push_entry(channel)
        for n in range(3):
            entry.push_structured_event(structured(fields={"n": n}))
        assert number(single.pull_structured_event()) == 0
        assert [number(e) for e in batch.pull_structured_events(10)] == [0, 1, 2]
        event, has_event = single.try_pull_structured_event()
        assert has_event and number(event) == 1

    def test_pull_supplier_polled_remotely(self, peer: Peer, channel: Any) -> None:
        """The channel polls a remote structured pull supplier with try_pull."""
        supplier = StructuredPullSupplier([structured(fields={"n": n}) for n in range(3)])
        proxy = (
            channel._get_default_supplier_admin().obtain_notification_pull_consumer(
                CA.STRUCTURED_EVENT)[0])._narrow(CA.StructuredProxyPullConsumer)
        sink = channel._get_default_consumer_admin()
        pull = (
            sink.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)[0]
                ._narrow(CA.StructuredProxyPullSupplier))
        pull.connect_structured_pull_consumer(None)
        proxy.connect_structured_pull_supplier(peer.remote(supplier))
        assert [number(pull.pull_structured_event()) for _ in range(3)] == [0, 1, 2]

    def test_event_service_style(self, peer: Peer, channel: Any) -> None:
        """CosEventChannelAdmin clients: for_consumers/for_suppliers and Any proxies."""
        event_channel = channel._narrow(ECA.EventChannel)
        consumer = AnyConsumer()
        out = event_channel.for_consumers().obtain_push_supplier()
        out.connect_push_consumer(peer.remote(consumer))
        with pytest.raises(ECA.AlreadyConnected):
            out.connect_push_consumer(peer.remote(AnyConsumer()))
        entry = event_channel.for_suppliers().obtain_push_consumer()
        entry.connect_push_supplier(None)
        entry.push(CORBA.Any(CORBA.TC_long, 99))
        assert consumer.wait_for(1)
        assert consumer.items[0].value() == 99


class TestRemoteClients:
    def test_remote_filter_is_called_remotely(self, peer: Peer, channel: Any) -> None:
        """Footnote 2 of 2.3: a filter object in the client's process is used by the proxy."""

        class EvenFilter(CosNotifyFilter__POA.Filter):
            def __init__(self) -> None:
                self.calls = 0

            def match_structured(self, event: Any) -> bool:
                self.calls += 1
                return number(event) % 2 == 0

            def get_all_constraints(self) -> list[Any]:
                return []

            def attach_callback(self, callback: Any) -> int:
                return 1

            def detach_callback(self, callback: int) -> None:
                pass

        remote_filter = EvenFilter()
        consumer = StructuredConsumer()
        proxy = (
            channel._get_default_consumer_admin().obtain_notification_push_supplier(
                CA.STRUCTURED_EVENT)[0])._narrow(CA.StructuredProxyPushSupplier)
        proxy.add_filter(peer.remote(remote_filter))
        proxy.connect_structured_push_consumer(peer.remote(consumer))
        entry = push_entry(channel)
        for n in range(6):
            entry.push_structured_event(structured(fields={"n": n}))
        assert consumer.wait_for(3)
        assert [number(e) for e in consumer.items] == [0, 2, 4]
        assert remote_filter.calls == 6

    def test_consumer_saying_disconnected_destroys_proxy(self, peer: Peer, server: Any,
                                                         remote_channel: Any) -> None:
        """A remote consumer raising Disconnected makes the proxy destroy itself."""

        class Gone(StructuredConsumer):
            def push_structured_event(self, event: Any) -> None:
                self.add(event)
                raise CosEventComm.Disconnected()

        consumer = Gone()
        admin = remote_channel._get_default_consumer_admin()
        proxy, proxy_id = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        proxy._narrow(CA.StructuredProxyPushSupplier).connect_structured_push_consumer(
            peer.remote(consumer))
        push_entry(remote_channel).push_structured_event(structured())
        assert consumer.wait_for(1)
        assert server.factory.service.dispatcher.wait_idle()
        assert proxy_id not in admin._get_push_suppliers()
        assert not consumer.disconnected.is_set()  # section 3.3.7.1: not called back

    def test_dead_consumer_is_disconnected(self, peer: Peer, server: Any,
                                           remote_channel: Any) -> None:
        """A consumer whose object no longer exists (OBJECT_NOT_EXIST) loses its proxy."""
        consumer = StructuredConsumer()
        ref = peer.remote(consumer)
        peer.drop(ref)
        admin = remote_channel._get_default_consumer_admin()
        proxy, proxy_id = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        proxy._narrow(CA.StructuredProxyPushSupplier).connect_structured_push_consumer(ref)
        push_entry(remote_channel).push_structured_event(structured())
        assert server.factory.service.dispatcher.wait_idle()
        assert proxy_id not in admin._get_push_suppliers()
        assert consumer.items == []


class GatedConsumer(test_dispatch.GatedConsumer, CosNotifyComm__POA.StructuredPushConsumer):
    """tests/channel's consumer that hangs in push until the gate opens, as a servant."""


class TestClientLanes:
    def test_a_client_hanging_with_many_consumers_does_not_stall_another(
            self, omniorb: Any, peer: Peer, peer2: Peer) -> None:
        """One client process hangs in every push of more consumers than the server has
        workers; another client's consumer is served all the while."""
        from cosnotify.channel.service import ServiceConfig
        from cosnotify.server import NotificationServer, ServerConfig

        server = NotificationServer(ServerConfig(
            port=0, call_timeout=120.0, service=ServiceConfig(max_workers=4))).start()
        frozen = [GatedConsumer() for _ in range(6)]
        try:
            channel, _ = omniorb.string_to_object(server.factory_url)._narrow(
                CA.EventChannelFactory).create_channel([], [])
            admin = channel._get_default_consumer_admin()
            for consumer in frozen:
                proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
                proxy._narrow(CA.StructuredProxyPushSupplier).connect_structured_push_consumer(
                    peer.remote(consumer))
            healthy = StructuredConsumer()
            proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
            proxy._narrow(CA.StructuredProxyPushSupplier).connect_structured_push_consumer(
                peer2.remote(healthy))
            entry = push_entry(channel)
            for n in range(5):
                entry.push_structured_event(structured(fields={"n": n}))
            assert healthy.wait_for(5)  # a hung push would hold its worker for 120 s
            assert [number(e) for e in healthy.items] == list(range(5))
            assert sum(c.entered.is_set() for c in frozen) <= 1  # the client's lane: 4 // 4
        finally:
            for consumer in frozen:
                consumer.gate.set()
        try:
            assert all(c.wait_for(5) for c in frozen)
        finally:
            server.stop()
