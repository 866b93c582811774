"""Regressions found by the adversarial review of the server layer (remote clients
that hang, die or send the wrong objects; servants of destroyed objects)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from cosnotify.__main__ import main
from cosnotify.orb import CORBA
from cosnotify.server import NotificationServer, ServerConfig, remote
from cosnotify.stubs import CosEventChannelAdmin as ECA
from cosnotify.stubs import CosNotification as N
from cosnotify.stubs import CosNotifyChannelAdmin as CA
from cosnotify.stubs import CosNotifyFilter as F
from cosnotify.stubs import CosNotifyFilter__POA
from tests.channel.conftest import WAIT, number, structured
from tests.server.conftest import reference
from tests.server.test_remote import AnyConsumer, StructuredConsumer, push_entry


@pytest.fixture
def guarded_server() -> Iterator[NotificationServer]:
    """A server whose calls to clients' filters time out quickly."""
    srv = NotificationServer(ServerConfig(port=0, call_timeout=2.0, filter_timeout=0.3)).start()
    yield srv
    srv.stop()


@pytest.fixture
def guarded_channel(guarded_server: NotificationServer, client_orb: Any) -> Any:
    factory = CA.EventChannelFactory._narrow(
        client_orb.string_to_object(guarded_server.factory_url))
    return factory.create_channel([], [])[0]


class ClientFilter(CosNotifyFilter__POA.Filter):
    """A filter in the client's process; ``behave`` decides each answer."""

    def __init__(self, behave: Any) -> None:
        self.behave = behave
        self.calls = 0
        self.callbacks: list[Any] = []
        self.detach_release = threading.Event()
        self.detach_release.set()
        self.detaching = threading.Event()

    def match_structured(self, event: Any) -> bool:
        self.calls += 1
        return bool(self.behave(event))

    def match(self, event: Any) -> bool:
        return self.match_structured(event)

    def get_all_constraints(self) -> list[Any]:
        return []

    def attach_callback(self, callback: Any) -> int:
        self.callbacks.append(callback)
        return len(self.callbacks)

    def detach_callback(self, callback: int) -> None:
        self.detaching.set()
        self.detach_release.wait(WAIT)


class LifetimeGarbage(CosNotifyFilter__POA.MappingFilter):
    """A mapping filter answering a string where a TimeT belongs."""

    def match_structured(self, event: Any) -> tuple[bool, Any]:
        return True, CORBA.Any(CORBA.TC_string, "forever")

    def match(self, event: Any) -> tuple[bool, Any]:
        return True, CORBA.Any(CORBA.TC_string, "forever")


def connected_proxy(client_orb: Any, channel: Any, consumer: Any,
                    flt: Any = None) -> Any:
    admin = channel._get_default_consumer_admin()
    proxy = CA.StructuredProxyPushSupplier._narrow(
        admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)[0])
    if flt is not None:
        proxy.add_filter(reference(client_orb, flt))
    proxy.connect_structured_push_consumer(reference(client_orb, consumer))
    return proxy


class TestClientFilters:
    def test_hanging_filter_costs_the_supplier_one_timeout(
            self, client_orb: Any, guarded_channel: Any, monkeypatch: Any) -> None:
        """A filter that hangs is called once; later events neither wait for it nor match."""
        monkeypatch.setattr(remote.GuardedFilter, "backoff", 60.0)
        release = threading.Event()
        hanging = ClientFilter(lambda event: release.wait(WAIT))
        bystander, filtered = StructuredConsumer(), StructuredConsumer()
        connected_proxy(client_orb, guarded_channel, bystander)
        connected_proxy(client_orb, guarded_channel, filtered, hanging)
        entry = push_entry(guarded_channel)
        try:
            for n in range(5):
                entry.push_structured_event(structured(fields={"n": n}))
            assert bystander.wait_for(5)
            assert [number(e) for e in bystander.items] == list(range(5))
            assert hanging.calls == 1
            assert filtered.items == []
        finally:
            release.set()

    def test_filter_that_no_longer_exists_is_not_called_again(
            self, client_orb: Any, guarded_channel: Any) -> None:
        """OBJECT_NOT_EXIST from a filter: it matches nothing and is not asked again."""

        def gone(event: Any) -> bool:
            raise CORBA.OBJECT_NOT_EXIST()

        dead = ClientFilter(gone)
        bystander, filtered = StructuredConsumer(), StructuredConsumer()
        connected_proxy(client_orb, guarded_channel, filtered, dead)
        connected_proxy(client_orb, guarded_channel, bystander)
        entry = push_entry(guarded_channel)
        for n in range(3):
            entry.push_structured_event(structured(fields={"n": n}))
        assert bystander.wait_for(3)
        assert dead.calls == 1 and filtered.items == []

    def test_unsupported_filterable_data_means_no_match(
            self, client_orb: Any, guarded_channel: Any) -> None:
        """Section 3.2.1: UnsupportedFilterableData rejects that event only."""

        def picky(event: Any) -> bool:
            if number(event) % 2:
                raise F.UnsupportedFilterableData()
            return True

        flt = ClientFilter(picky)
        consumer = StructuredConsumer()
        connected_proxy(client_orb, guarded_channel, consumer, flt)
        entry = push_entry(guarded_channel)
        for n in range(4):
            entry.push_structured_event(structured(fields={"n": n}))
        assert consumer.wait_for(2)
        assert [number(e) for e in consumer.items] == [0, 2]
        assert flt.calls == 4

    def test_mapping_filter_answering_garbage_maps_nothing(
            self, client_orb: Any, guarded_channel: Any) -> None:
        """A client's lifetime filter answering a string neither fails the push nor the event."""
        consumer = StructuredConsumer()
        proxy = CA.StructuredProxyPushSupplier._narrow(
            guarded_channel._get_default_consumer_admin().obtain_notification_push_supplier(
                CA.STRUCTURED_EVENT)[0])
        proxy._set_lifetime_filter(reference(client_orb, LifetimeGarbage()))
        proxy.connect_structured_push_consumer(reference(client_orb, consumer))
        push_entry(guarded_channel).push_structured_event(structured(fields={"n": 1}))
        assert consumer.wait_for(1)
        assert proxy._get_lifetime_filter()._is_equivalent(proxy._get_lifetime_filter())

    def test_filter_callbacks_reach_the_subscription_aggregate(
            self, client_orb: Any, guarded_channel: Any) -> None:
        """Section 2.6.5: a client's filter gets a NotifySubscribe that the channel follows."""
        flt = ClientFilter(lambda event: True)
        proxy = connected_proxy(client_orb, guarded_channel, StructuredConsumer(), flt)
        assert len(flt.callbacks) == 1
        flt.callbacks[0].subscription_change([N.EventType("Review", "Probe")], [])
        entry = push_entry(guarded_channel)
        types = entry.obtain_subscription_types(CA.ALL_NOW_UPDATES_OFF)
        assert ("Review", "Probe") in {(t.domain_name, t.type_name) for t in types}
        assert proxy.get_filter(proxy.get_all_filters()[0])._is_equivalent(
            reference(client_orb, flt))

    def test_destroy_does_not_wait_for_detach_callback(
            self, client_orb: Any) -> None:
        """Tearing down a proxy sends detach_callback from the worker pool, not inline."""
        srv = NotificationServer(ServerConfig(port=0, call_timeout=30.0,
                                              filter_timeout=30.0)).start()
        flt = ClientFilter(lambda event: True)
        flt.detach_release.clear()
        try:
            factory = CA.EventChannelFactory._narrow(client_orb.string_to_object(srv.factory_url))
            channel = factory.create_channel([], [])[0]
            connected_proxy(client_orb, channel, StructuredConsumer(), flt)
            channel.destroy()  # the client ORB's call timeout (5 s) fails this if it waits
            assert flt.detaching.wait(WAIT)
        finally:
            flt.detach_release.set()
            srv.stop()


class TestServantLifecycle:
    def test_servants_of_destroyed_objects_are_deactivated(
            self, server: NotificationServer, remote_factory: Any, client_orb: Any) -> None:
        """Channels, admins and proxies destroyed any way leave no servant behind."""
        poa = server._poa
        remote_factory.get_all_channels()  # the factory's own servant stays
        baseline = len(poa._aom)
        for _ in range(5):
            channel = remote_factory.create_channel([], [])[0]
            admin = channel.new_for_consumers(CA.AND_OP)[0]
            proxy = CA.StructuredProxyPushSupplier._narrow(
                admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)[0])
            proxy.connect_structured_push_consumer(reference(client_orb, StructuredConsumer()))
            pull = CA.StructuredProxyPullSupplier._narrow(
                channel._get_default_consumer_admin().obtain_notification_pull_supplier(
                    CA.STRUCTURED_EVENT)[0])
            pull.connect_structured_pull_consumer(None)
            pull.disconnect_structured_pull_supplier()      # the client disconnects
            es_proxy = ECA.EventChannel._narrow(channel).for_consumers().obtain_pull_supplier()
            es_proxy.connect_pull_consumer(None)
            channel._get_default_supplier_admin()._get_MyID()
            channel.new_for_suppliers(CA.OR_OP)[0].destroy()  # an admin destroyed alone
            channel.destroy()
        assert len(poa._aom) == baseline

    def test_destroyed_objects_say_they_do_not_exist(self, remote_channel: Any) -> None:
        """_non_existent is TRUE for every object of a destroyed channel."""
        admin = remote_channel.new_for_consumers(CA.AND_OP)[0]
        proxy = admin.obtain_notification_pull_supplier(CA.ANY_EVENT)[0]
        default = remote_channel._get_default_supplier_admin()
        for obj in (admin, proxy, default):
            assert not obj._non_existent()
        remote_channel.destroy()
        for obj in (remote_channel, admin, proxy, default):
            assert obj._non_existent()
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            proxy._get_MyType()


class TestWrongReferences:
    def test_add_filter_refuses_objects_that_are_not_filters(
            self, client_orb: Any, remote_channel: Any) -> None:
        """A channel, a mapping filter or a client's consumer passed as a filter: BAD_PARAM."""
        proxy = remote_channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)[0]
        factory = remote_channel._get_default_filter_factory()
        mapping = factory.create_mapping_filter("EXTENDED_TCL", CORBA.Any(CORBA.TC_short, 0))
        for wrong in (remote_channel, mapping, reference(client_orb, StructuredConsumer())):
            with pytest.raises(CORBA.BAD_PARAM):
                proxy.add_filter(wrong)
        with pytest.raises(CORBA.BAD_PARAM):
            proxy._set_priority_filter(factory.create_filter("EXTENDED_TCL"))
        assert proxy.get_all_filters() == []

    def test_destroyed_filter_is_refused(self, remote_channel: Any) -> None:
        """A filter destroyed by its client cannot be added again."""
        flt = remote_channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        admin = remote_channel._get_default_consumer_admin()
        admin.add_filter(flt)
        flt.destroy()
        with pytest.raises(CORBA.BAD_PARAM):
            admin.add_filter(flt)

    def test_connect_checks_the_consumers_real_interface(
            self, client_orb: Any, remote_channel: Any) -> None:
        """A consumer of the wrong kind is TypeError, though it arrives as the right stub."""
        admin = remote_channel._get_default_consumer_admin()
        structured = CA.StructuredProxyPushSupplier._narrow(
            admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)[0])
        with pytest.raises(ECA.TypeError):
            structured.connect_structured_push_consumer(reference(client_orb, AnyConsumer()))
        es_proxy = ECA.EventChannel._narrow(remote_channel).for_consumers().obtain_push_supplier()
        with pytest.raises(ECA.TypeError):
            es_proxy.connect_push_consumer(reference(client_orb, StructuredConsumer()))
        structured.connect_structured_push_consumer(reference(client_orb, StructuredConsumer()))


class TestStartup:
    def test_failed_start_releases_the_port(self) -> None:
        """A server whose naming service cannot be reached stops and frees its port."""
        srv = NotificationServer(ServerConfig(port=0,
                                              naming_url="corbaloc::127.0.0.1:1/NameService"))
        host, port = srv.endpoint
        with pytest.raises(CORBA.TRANSIENT):
            srv.start()
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))

    @pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
    def test_bad_timeouts_are_usage_errors(self, value: str, capsys: Any) -> None:
        """--call-timeout must be a positive number: exit 2 with one line, no traceback."""
        with pytest.raises(SystemExit) as info:
            main(["serve", "--endpoint", "127.0.0.1:0", "--call-timeout", value])
        assert info.value.code == 2
        assert "--call-timeout: must be a positive number" in capsys.readouterr().err
        with pytest.raises(ValueError):
            ServerConfig(call_timeout=float(value))
