"""Regressions found by the adversarial review of the server layer (remote clients
that hang, die or send the wrong objects; servants of destroyed objects)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from omniORB import CORBA

import CosEventChannelAdmin as ECA
import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter as F
import CosNotifyFilter__POA

from cosnotify.__main__ import main
from cosnotify.server import NotificationServer, ServerConfig, remote
from tests.channel.conftest import WAIT, number, structured
from tests.peers.harness import Peer
from tests.server.test_remote import AnyConsumer, StructuredConsumer, push_entry


@pytest.fixture
def guarded_server() -> Iterator[NotificationServer]:
    """A server whose calls to clients' filters time out quickly."""
    srv = NotificationServer(ServerConfig(port=0, call_timeout=2.0, filter_timeout=0.3)).start()
    yield srv
    srv.stop()


@pytest.fixture
def guarded_channel(guarded_server: NotificationServer, omniorb: Any) -> Any:
    factory = omniorb.string_to_object(guarded_server.factory_url)._narrow(CA.EventChannelFactory)
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


def connected_proxy(peer: Peer, channel: Any, consumer: Any, flt: Any = None) -> Any:
    """A structured push proxy with ``consumer`` (and ``flt``) relayed by ``peer``."""
    admin = channel._get_default_consumer_admin()
    proxy = (
        admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)[0]
            ._narrow(CA.StructuredProxyPushSupplier))
    if flt is not None:
        proxy.add_filter(peer.remote(flt))
    proxy.connect_structured_push_consumer(peer.remote(consumer))
    return proxy


class TestClientFilters:
    def test_hanging_filter_costs_the_supplier_one_timeout(
            self, peer: Peer, guarded_channel: Any, monkeypatch: Any) -> None:
        """A filter that hangs is called once; later events neither wait for it nor match."""
        monkeypatch.setattr(remote.GuardedFilter, "backoff", 60.0)
        release = threading.Event()
        hanging = ClientFilter(lambda event: release.wait(WAIT))
        bystander, filtered = StructuredConsumer(), StructuredConsumer()
        connected_proxy(peer, guarded_channel, bystander)
        connected_proxy(peer, guarded_channel, filtered, hanging)
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
            self, peer: Peer, guarded_channel: Any) -> None:
        """OBJECT_NOT_EXIST from a filter: it matches nothing and is not asked again."""

        def gone(event: Any) -> bool:
            raise CORBA.OBJECT_NOT_EXIST()

        dead = ClientFilter(gone)
        bystander, filtered = StructuredConsumer(), StructuredConsumer()
        connected_proxy(peer, guarded_channel, filtered, dead)
        connected_proxy(peer, guarded_channel, bystander)
        entry = push_entry(guarded_channel)
        for n in range(3):
            entry.push_structured_event(structured(fields={"n": n}))
        assert bystander.wait_for(3)
        assert dead.calls == 1 and filtered.items == []

    def test_unsupported_filterable_data_means_no_match(
            self, peer: Peer, guarded_channel: Any) -> None:
        """Section 3.2.1: UnsupportedFilterableData rejects that event only."""

        def picky(event: Any) -> bool:
            if number(event) % 2:
                raise F.UnsupportedFilterableData()
            return True

        flt = ClientFilter(picky)
        consumer = StructuredConsumer()
        connected_proxy(peer, guarded_channel, consumer, flt)
        entry = push_entry(guarded_channel)
        for n in range(4):
            entry.push_structured_event(structured(fields={"n": n}))
        assert consumer.wait_for(2)
        assert [number(e) for e in consumer.items] == [0, 2]
        assert flt.calls == 4

    def test_mapping_filter_answering_garbage_maps_nothing(
            self, peer: Peer, guarded_channel: Any) -> None:
        """A client's lifetime filter answering a string neither fails the push nor the event."""
        consumer = StructuredConsumer()
        proxy = (
            guarded_channel._get_default_consumer_admin().obtain_notification_push_supplier(
                CA.STRUCTURED_EVENT)[0])._narrow(CA.StructuredProxyPushSupplier)
        proxy._set_lifetime_filter(peer.remote(LifetimeGarbage()))
        proxy.connect_structured_push_consumer(peer.remote(consumer))
        push_entry(guarded_channel).push_structured_event(structured(fields={"n": 1}))
        assert consumer.wait_for(1)
        assert proxy._get_lifetime_filter()._is_equivalent(proxy._get_lifetime_filter())

    def test_filter_callbacks_reach_the_subscription_aggregate(
            self, peer: Peer, guarded_channel: Any) -> None:
        """Section 2.6.5: a client's filter gets a NotifySubscribe that the channel follows."""
        flt = ClientFilter(lambda event: True)
        proxy = connected_proxy(peer, guarded_channel, StructuredConsumer(), flt)
        assert len(flt.callbacks) == 1
        flt.callbacks[0].subscription_change([N.EventType("Review", "Probe")], [])
        entry = push_entry(guarded_channel)
        types = entry.obtain_subscription_types(CA.ALL_NOW_UPDATES_OFF)
        assert ("Review", "Probe") in {(t.domain_name, t.type_name) for t in types}
        assert len(proxy.get_all_filters()) == 1

    def test_destroy_does_not_wait_for_detach_callback(self, omniorb: Any, peer: Peer) -> None:
        """Tearing down a proxy sends detach_callback from the worker pool, not inline."""
        srv = NotificationServer(ServerConfig(port=0, call_timeout=30.0,
                                              filter_timeout=30.0)).start()
        flt = ClientFilter(lambda event: True)
        flt.detach_release.clear()
        try:
            factory = omniorb.string_to_object(srv.factory_url)._narrow(CA.EventChannelFactory)
            channel = factory.create_channel([], [])[0]
            connected_proxy(peer, channel, StructuredConsumer(), flt)
            channel.destroy()
            # destroy() has returned while the client still holds detach_callback open:
            assert flt.detaching.wait(WAIT)
            assert not flt.detach_release.is_set()
        finally:
            flt.detach_release.set()
            srv.stop()


class TestServantLifecycle:
    def test_servants_of_destroyed_objects_are_deactivated(
            self, server: NotificationServer, remote_factory: Any, peer: Peer) -> None:
        """Channels, admins and proxies destroyed any way leave no servant behind."""
        remote_factory.get_all_channels()  # the factory's own servant stays
        baseline = server.objects.active_servants
        assert baseline >= 1
        for _ in range(5):
            channel = remote_factory.create_channel([], [])[0]
            admin = channel.new_for_consumers(CA.AND_OP)[0]
            proxy = (
                admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)[0]
                    ._narrow(CA.StructuredProxyPushSupplier))
            proxy.connect_structured_push_consumer(peer.remote(StructuredConsumer()))
            pull = (
                channel._get_default_consumer_admin().obtain_notification_pull_supplier(
                    CA.STRUCTURED_EVENT)[0])._narrow(CA.StructuredProxyPullSupplier)
            pull.connect_structured_pull_consumer(None)
            pull.disconnect_structured_pull_supplier()      # the client disconnects
            es_proxy = channel._narrow(ECA.EventChannel).for_consumers().obtain_pull_supplier()
            es_proxy.connect_pull_consumer(None)
            channel._get_default_supplier_admin()._get_MyID()
            channel.new_for_suppliers(CA.OR_OP)[0].destroy()  # an admin destroyed alone
            channel.destroy()
        assert server.factory.service.dispatcher.wait_idle()  # deactivations done by workers
        assert server.objects.active_servants == baseline

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
            self, peer: Peer, remote_channel: Any) -> None:
        """A channel, a mapping filter or a client's consumer passed as a filter: BAD_PARAM."""
        proxy = remote_channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)[0]
        factory = remote_channel._get_default_filter_factory()
        mapping = factory.create_mapping_filter("EXTENDED_TCL", CORBA.Any(CORBA.TC_short, 0))
        for wrong in (remote_channel, mapping, peer.remote(StructuredConsumer())):
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
            self, peer: Peer, remote_channel: Any) -> None:
        """A consumer of the wrong kind is TypeError, though it arrives as the right stub."""
        admin = remote_channel._get_default_consumer_admin()
        structured = (
            admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)[0]
                ._narrow(CA.StructuredProxyPushSupplier))
        with pytest.raises(ECA.TypeError):
            structured.connect_structured_push_consumer(peer.remote(AnyConsumer()))
        es_proxy = remote_channel._narrow(ECA.EventChannel).for_consumers().obtain_push_supplier()
        with pytest.raises(ECA.TypeError):
            es_proxy.connect_push_consumer(peer.remote(StructuredConsumer()))
        structured.connect_structured_push_consumer(peer.remote(StructuredConsumer()))


class TestStartup:
    def test_failed_start_releases_the_port(self) -> None:
        """`serve` whose naming service cannot be reached exits 1 and frees its port."""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "cosnotify", "serve", "--endpoint", f"127.0.0.1:{port}",
             "--naming", "corbaloc::127.0.0.1:1/NameService", "--call-timeout", "2"],
            capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 1
        assert done.stderr.strip().splitlines()[-1].startswith("cosnotify serve: cannot start")
        assert "Traceback" not in done.stderr
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", port))

    @pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
    def test_bad_timeouts_are_usage_errors(self, value: str, capsys: Any) -> None:
        """--call-timeout must be a positive number: exit 2 with one line, no traceback."""
        with pytest.raises(SystemExit) as info:
            main(["serve", "--endpoint", "127.0.0.1:0", "--call-timeout", value])
        assert info.value.code == 2
        assert "--call-timeout: must be a positive number" in capsys.readouterr().err
        with pytest.raises(ValueError):
            ServerConfig(call_timeout=float(value))


class TestPersistentReferences:
    def test_references_survive_a_restart_on_the_same_endpoint(
            self, omniorb: Any, tmp_path: Any) -> None:
        """A factory reference taken before a restart reaches the new server (PERSISTENT POA)."""
        from tests.interop.peers import free_port
        from tests.server.conftest import ServeProcess

        port = free_port()
        first = ServeProcess(tmp_path, "--endpoint", f"127.0.0.1:{port}")
        ior = first.ior
        factory = omniorb.string_to_object(ior)._narrow(CA.EventChannelFactory)
        _, channel_id = factory.create_channel([], [])
        assert first.stop() == 0, "".join(first.log)
        second = ServeProcess(tmp_path, "--endpoint", f"127.0.0.1:{port}")
        try:
            assert second.ior == ior  # the same object key on the same endpoint
            try:  # omniORB: the first call on the dead cached connection fails, not retried
                factory.get_all_channels()
            except CORBA.COMM_FAILURE as exc:
                assert exc.completed == CORBA.COMPLETED_MAYBE
            # The old reference works; the channel did not survive (no store yet: issue 13).
            assert factory.get_all_channels() == []
            with pytest.raises(CA.ChannelNotFound):
                factory.get_event_channel(channel_id)
        finally:
            second.stop()


class TestSignals:
    @pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGINT"])
    def test_a_signal_stops_serve_cleanly_and_tells_the_clients(
            self, omniorb: Any, tmp_path: Any, signal_name: str) -> None:
        """SIGTERM/SIGINT: the channels are destroyed, consumers told, exit status 0."""
        import signal

        from tests.server.conftest import ServeProcess, reference

        served = ServeProcess(tmp_path)
        try:
            factory = omniorb.string_to_object(served.ior)._narrow(CA.EventChannelFactory)
            channel = factory.create_channel([], [])[0]
            consumer = StructuredConsumer()
            proxy = channel._get_default_consumer_admin().obtain_notification_push_supplier(
                CA.STRUCTURED_EVENT)[0]._narrow(CA.StructuredProxyPushSupplier)
            # The server is another process: this reference is reached over IIOP.
            proxy.connect_structured_push_consumer(reference(omniorb, consumer))
            served.process.send_signal(getattr(signal, signal_name))
            assert served.wait(60) == 0
        finally:
            served.stop()
        assert consumer.disconnected.is_set()
        assert "stopped" in "".join(served.log)


class TestStopWithAPullWaiting:
    def test_stop_returns_while_a_client_waits_in_a_pull_on_a_kept_proxy(
            self, omniorb: Any, tmp_path: Any) -> None:
        """Section 2.5.5.1: "upon restart from a failure the notification channel will
        automatically re-establish connections to all clients that were connected to it
        at the time the failure occurred", so the stop keeps the proxy; the pull waiting on it gets TRANSIENT, and stop()
        (which waits for requests in progress) returns (review 129: SIGTERM was
        ignored by `serve --db` while a pull waited)."""
        srv = NotificationServer(ServerConfig(port=0, call_timeout=2.0,
                                              db=tmp_path / "store.db")).start()
        stopper = threading.Thread(target=srv.stop, daemon=True)
        try:
            factory = omniorb.string_to_object(srv.ior)._narrow(CA.EventChannelFactory)
            persistent = [N.Property("ConnectionReliability",
                                     CORBA.Any(CORBA.TC_short, N.Persistent))]
            channel, channel_id = factory.create_channel(persistent, [])
            proxy, proxy_id = channel._get_default_consumer_admin(
            ).obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
            proxy = proxy._narrow(CA.StructuredProxyPullSupplier)
            proxy.connect_structured_pull_consumer(None)
            core = srv.factory.get_event_channel(channel_id)._get_default_consumer_admin(
            ).get_proxy_supplier(proxy_id)
            waiting = threading.Event()
            wait = core._cond.wait

            def noted_wait(*args: Any) -> bool:
                waiting.set()
                return bool(wait(*args))

            core._cond.wait = noted_wait
            outcome: list[Any] = []

            def pull() -> None:
                try:
                    outcome.append(proxy.pull_structured_event())
                except CORBA.SystemException as exc:
                    outcome.append(exc)

            puller = threading.Thread(target=pull, daemon=True)
            puller.start()
            assert waiting.wait(WAIT)  # the request is in progress in the server
            stopper.start()
            stopper.join(WAIT)
            assert not stopper.is_alive(), "stop() waits for the pull for ever"
            puller.join(WAIT)
            assert len(outcome) == 1 and isinstance(outcome[0], CORBA.TRANSIENT)
        finally:
            if stopper.ident is None:  # not started: the test failed before
                srv.stop()


class TestReviewOfTheMigration:
    """Findings of the review of the move to omniORBpy."""

    def test_references_kept_across_a_restart_do_not_alias_new_objects(
            self, omniorb: Any, tmp_path: Any) -> None:
        """An Event Service proxy (no spec id) referenced before a restart is gone after it,
        even when a new one is made in the same place."""
        from tests.interop.peers import free_port
        from tests.server.conftest import ServeProcess

        port = free_port()
        first = ServeProcess(tmp_path, "--endpoint", f"127.0.0.1:{port}")
        factory = omniorb.string_to_object(first.ior)._narrow(CA.EventChannelFactory)
        channel = factory.create_channel([], [])[0]._narrow(ECA.EventChannel)
        old_proxy = channel.for_suppliers().obtain_push_consumer()
        assert first.stop() == 0, "".join(first.log)
        second = ServeProcess(tmp_path, "--endpoint", f"127.0.0.1:{port}")
        try:
            try:
                factory.get_all_channels()
            except CORBA.COMM_FAILURE:
                pass  # the first call after a restart (see the test above)
            fresh = factory.create_channel([], [])[0]._narrow(ECA.EventChannel)
            fresh.for_suppliers().obtain_push_consumer()  # the same position as before
            with pytest.raises(CORBA.OBJECT_NOT_EXIST):
                old_proxy.connect_push_supplier(None)
        finally:
            status = second.stop()
        assert status == 0, "".join(second.log)

    def test_serve_shuts_the_orb_down_without_destroying_it(self) -> None:
        """``cosnotify serve`` stops with ``exiting=True``: the ORB it owns is shut down,
        not destroyed, since the process ends next. omniORBpy's destroy() shuts its
        thread cache down while omniORB's threads may still call into Python as
        connections close (a core dump: SIGSEGV in the connection-info hook inside
        destroy(); docs/server.md). A process of its own: this one's ORB is the
        fixtures'."""
        import subprocess
        import sys

        script = (
            "from omniORB import CORBA\n"
            "calls = []\n"
            "for name in ('shutdown', 'destroy'):\n"
            "    real = getattr(CORBA.ORB, name)\n"
            "    def spy(self, *a, _real=real, _name=name):\n"
            "        calls.append(_name)\n"
            "        return _real(self, *a)\n"
            "    setattr(CORBA.ORB, name, spy)\n"
            "from cosnotify.server.app import NotificationServer, ServerConfig\n"
            "server = NotificationServer(ServerConfig(port=0)).start()\n"
            "server.stop(exiting=True)\n"
            "print(*calls)\n")
        done = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["shutdown"]

    def test_the_connection_watch_is_registered_once(
            self, omniorb: Any, monkeypatch: Any) -> None:
        """Servers of one process share omniORB's connection-info hook, registered once:
        omniORBpy deletes the hook it replaces at once, even while omniORB's threads are
        inside it (pytest workers crashed with SIGSEGV when each server start and stop
        registered it again)."""
        import omniORB

        calls: list[Any] = []
        real = omniORB.registerConnectionInfoFn

        def spy(fn: Any) -> None:
            calls.append(fn)
            real(fn)

        monkeypatch.setattr(omniORB, "registerConnectionInfoFn", spy)
        first = NotificationServer(ServerConfig(port=0), bind=False).start()
        first.stop()
        second = NotificationServer(ServerConfig(port=0), bind=False).start()
        second.stop()
        assert len(calls) <= 1 and None not in calls

    def test_stop_while_a_pull_is_blocked(self, omniorb: Any, tmp_path: Any) -> None:
        """SIGTERM while a client waits in a blocking pull: the pull ends, the server exits 0."""
        from tests.server.conftest import ServeProcess

        served = ServeProcess(tmp_path)
        outcome: list[BaseException] = []
        try:
            factory = omniorb.string_to_object(served.ior)._narrow(CA.EventChannelFactory)
            channel = factory.create_channel([], [])[0]
            pull = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
                CA.STRUCTURED_EVENT)[0]._narrow(CA.StructuredProxyPullSupplier)
            pull.connect_structured_pull_consumer(None)
            waiting = threading.Event()

            def blocked_pull() -> None:
                waiting.set()
                try:
                    pull.pull_structured_event()
                except Exception as exc:  # noqa: BLE001 - what ends the pull is the result
                    outcome.append(exc)

            worker = threading.Thread(target=blocked_pull)
            worker.start()
            assert waiting.wait(WAIT)
            served.process.terminate()
            assert served.wait(60) == 0
            worker.join(WAIT)
            assert not worker.is_alive()
        finally:
            served.stop()
        assert len(outcome) == 1 and isinstance(outcome[0], Exception)

    def test_stop_from_an_upcall(self, omniorb: Any, peer: Peer) -> None:
        """A hosting application stops the service from one of its servants' operations."""
        import CosEventComm__POA

        import cosnotify
        from cosnotify.server import hosted_server

        factory = cosnotify.host(omniorb.resolve_initial_references("RootPOA"))
        server = hosted_server(factory)

        class Shutdown(CosEventComm__POA.PushConsumer):
            def push(self, data: Any) -> None:
                server.stop()

            def disconnect_push_consumer(self) -> None:
                pass

        peer.remote(Shutdown()).push(CORBA.Any(CORBA.TC_long, 0))  # an upcall from another process
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            factory.get_all_channels()
        with pytest.raises(KeyError):
            hosted_server(factory)  # a stopped server is not kept

    def test_an_unanswering_naming_service_times_out(self, omniorb: Any) -> None:
        """--naming at a peer that accepts and never answers: start() fails within the timeout."""
        with socket.socket() as silent:
            silent.bind(("127.0.0.1", 0))
            silent.listen(8)
            port = silent.getsockname()[1]
            srv = NotificationServer(ServerConfig(
                port=0, call_timeout=1.0, naming_url=f"corbaloc::127.0.0.1:{port}/NameService"))
            with pytest.raises((CORBA.TIMEOUT, CORBA.TRANSIENT)):
                srv.start()

    def test_poa_names_stay_stable(self, omniorb: Any) -> None:
        """The first server of a process gets the POA `cosnotify`, again after another stops."""
        first = NotificationServer(ServerConfig(port=0))
        second = NotificationServer(ServerConfig(port=0))
        first_name, second_name = first._poa._get_the_name(), second._poa._get_the_name()
        assert first_name.startswith("cosnotify") and first_name != second_name
        first.stop()
        third = NotificationServer(ServerConfig(port=0))
        try:
            assert third._poa._get_the_name() == first_name  # freed by the stop, taken again
        finally:
            second.stop()
            third.stop()

    def test_clients_without_a_tcp_port_get_a_lane_each(self, server: NotificationServer,
                                                        omniorb: Any) -> None:
        """References whose IIOP profile says port 0 (unix or SSL only) are not one client."""
        a = omniorb.string_to_object("corbaloc::127.0.0.1:0/a")
        b = omniorb.string_to_object("corbaloc::127.0.0.1:0/b")
        c = omniorb.string_to_object("corbaloc::127.0.0.1:4000/c")
        d = omniorb.string_to_object("corbaloc::127.0.0.1:4000/d")
        assert server.client_key(a) != server.client_key(b)
        assert server.client_key(c) == server.client_key(d) == ("127.0.0.1", 4000)
