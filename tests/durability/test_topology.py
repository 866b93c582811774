"""Topology persistence (ConnectionReliability=Persistent), in process.

A factory made over a store saves every persistent object on each change;
closing it leaves them in the store; a second factory over the same store
brings them back with their ids, QoS, filters and client connections (spec
section 2.5.5.1). Clients are omniORBpy servants, so their references can
be stored and called again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from omniORB import CORBA

import CosEventChannelAdmin
import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter

from cosnotify.channel.factory import EventChannelFactory
from cosnotify.store import MemoryStore, Record
from cosnotify.store.interface import Reason, StoreError
from tests.channel.conftest import WAIT, number, structured
from tests.channel.test_real_filters import drain
from tests.durability.conftest import (
    PERSISTENT_QOS,
    StructuredConsumer,
    reference,
    supplier_of,
)


def persistent_channel(factory: EventChannelFactory) -> tuple[Any, int]:
    return factory.create_channel(PERSISTENT_QOS, [])


def push_proxy(channel: Any) -> tuple[Any, int]:
    admin = channel._get_default_supplier_admin()
    return admin.obtain_notification_push_consumer(CA.STRUCTURED_EVENT)


class TestIdsAndState:
    def test_channels_admins_and_proxies_come_back_with_their_ids(
            self, reopen: Callable[[], EventChannelFactory]) -> None:
        factory = reopen()
        channel, channel_id = persistent_channel(factory)
        admin, admin_id = channel.new_for_consumers(CA.OR_OP)
        _, proxy_id = admin.obtain_notification_push_supplier(CA.SEQUENCE_EVENT)

        factory = reopen()
        assert factory.get_all_channels() == [channel_id]
        channel = factory.get_event_channel(channel_id)
        assert admin_id in channel.get_all_consumeradmins()
        admin = channel.get_consumeradmin(admin_id)
        assert admin._get_MyOperator() == CA.OR_OP
        assert admin.get_proxy_supplier(proxy_id)._get_MyType() == CA.PUSH_SEQUENCE

    def test_ids_are_never_reused_after_a_restart(
            self, reopen: Callable[[], EventChannelFactory]) -> None:
        factory = reopen()
        first, first_id = persistent_channel(factory)
        _, gone_id = persistent_channel(factory)
        factory.get_event_channel(gone_id).destroy()
        admin, admin_id = first.new_for_consumers(CA.AND_OP)
        admin.destroy()

        factory = reopen()
        _, new_id = persistent_channel(factory)
        assert new_id not in (first_id, gone_id)
        _, new_admin_id = factory.get_event_channel(first_id).new_for_consumers(CA.AND_OP)
        assert new_admin_id != admin_id

    def test_qos_and_admin_properties_come_back(
            self, reopen: Callable[[], EventChannelFactory]) -> None:
        factory = reopen()
        admin_props = [N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 77))]
        channel, channel_id = factory.create_channel(PERSISTENT_QOS, admin_props)
        channel.set_qos([N.Property("Priority", CORBA.Any(CORBA.TC_short, 5))])
        proxy, proxy_id = push_proxy(channel)
        proxy.set_qos([N.Property("OrderPolicy", CORBA.Any(CORBA.TC_short, N.FifoOrder))])

        factory = reopen()
        channel = factory.get_event_channel(channel_id)
        qos = {p.name: p.value.value() for p in channel.get_qos()}
        assert qos["Priority"] == 5 and qos["ConnectionReliability"] == N.Persistent
        assert {p.name: p.value.value() for p in channel.get_admin()}["MaxQueueLength"] == 77
        proxy = channel._get_default_supplier_admin().get_proxy_consumer(proxy_id)
        assert {p.name: p.value.value() for p in proxy.get_qos()}["OrderPolicy"] == N.FifoOrder

    def test_filter_group_semantics_comes_back(
            self, reopen: Callable[[], EventChannelFactory]) -> None:
        """A channel kept with FilterGroupSemantics 1 (TAO's reading) routes by it after a
        restart: an OR admin's filter no longer holds back its unfiltered proxy."""
        factory = reopen()
        tao = [N.Property("FilterGroupSemantics", CORBA.Any(CORBA.TC_short, 1))]
        channel, channel_id = factory.create_channel(PERSISTENT_QOS, tao)
        admin, admin_id = channel.new_for_consumers(CA.OR_OP)
        flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        flt.add_constraints([CosNotifyFilter.ConstraintExp([], "$n == 1")])
        admin.add_filter(flt)
        _, proxy_id = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)

        factory = reopen()
        channel = factory.get_event_channel(channel_id)
        assert {p.name: p.value.value() for p in channel.get_admin()}["FilterGroupSemantics"] == 1
        proxy = channel.get_consumeradmin(admin_id).get_proxy_supplier(proxy_id)
        proxy.connect_structured_pull_consumer(None)
        supplier, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        supplier.connect_structured_push_supplier(None)
        for n in (1, 2):
            supplier.push_structured_event(structured(fields={"n": n}))
        got = []
        while True:
            event, has = proxy.try_pull_structured_event()
            if not has:
                break
            got.append(number(event))
        assert got == [1, 2]

    def test_oes_node_limits_come_back(
            self, reopen: Callable[[], EventChannelFactory]) -> None:
        """A persistent channel's OESNodeLimits table is read back after a restart."""
        import CosNotifyGrammars as G

        factory = reopen()
        table = [G.NodeLimit(r"\Asia\India", 1, True)]
        channel, channel_id = factory.create_channel(
            PERSISTENT_QOS, [N.Property("OESNodeLimits", CORBA.Any(G._tc_NodeLimitSeq, table))])

        factory = reopen()
        channel = factory.get_event_channel(channel_id)
        [got] = {p.name: p.value.value() for p in channel.get_admin()}["OESNodeLimits"]
        assert (got.path, got.upl, got.barricade) == (r"\Asia\India", 1, True)
        assert channel._oes_limits is not None and len(channel._oes_limits) == 1

    def test_destroyed_objects_stay_destroyed(
            self, reopen: Callable[[], EventChannelFactory]) -> None:
        factory = reopen()
        channel, channel_id = persistent_channel(factory)
        proxy, proxy_id = push_proxy(channel)
        proxy.disconnect_structured_push_consumer()
        _, gone = persistent_channel(factory)
        factory.get_event_channel(gone).destroy()

        factory = reopen()
        assert factory.get_all_channels() == [channel_id]
        admin = factory.get_event_channel(channel_id)._get_default_supplier_admin()
        assert proxy_id not in admin._get_push_consumers()

    def test_best_effort_objects_are_not_kept(
            self, reopen: Callable[[], EventChannelFactory]) -> None:
        """Section 2.5.5.1 promises nothing across a restart for BestEffort objects."""
        factory = reopen()
        _, best_effort_id = factory.create_channel([], [])
        channel, channel_id = persistent_channel(factory)
        admin = channel._get_default_supplier_admin()
        _, kept = admin.obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
        best_effort, dropped = admin.obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
        best_effort.set_qos([N.Property("ConnectionReliability",
                                        CORBA.Any(CORBA.TC_short, N.BestEffort))])

        factory = reopen()
        assert factory.get_all_channels() == [channel_id]
        assert best_effort_id != channel_id
        admin = factory.get_event_channel(channel_id)._get_default_supplier_admin()
        assert kept in admin._get_push_consumers() and dropped not in admin._get_push_consumers()


class TestFilters:
    def test_constraints_keep_their_ids_and_still_filter(
            self, reopen: Callable[[], EventChannelFactory], omniorb: Any) -> None:
        factory = reopen()
        channel, channel_id = persistent_channel(factory)
        flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        infos = flt.add_constraints([CosNotifyFilter.ConstraintExp([], "$n >= 10"),
                                     CosNotifyFilter.ConstraintExp([], "$n == 3")])
        flt.modify_constraints([infos[1].constraint_id], [])
        admin, admin_id = channel.new_for_consumers(CA.AND_OP)
        filter_id = admin.add_filter(flt)
        consumer = StructuredConsumer()
        proxy, _proxy_id = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(reference(omniorb, consumer))

        factory = reopen()
        channel = factory.get_event_channel(channel_id)
        admin = channel.get_consumeradmin(admin_id)
        restored = admin.get_filter(filter_id)
        assert [c.constraint_id for c in restored.get_all_constraints()] == [
            infos[0].constraint_id]
        added = restored.add_constraints([CosNotifyFilter.ConstraintExp([], "$n == 5")])
        assert added[0].constraint_id > infos[1].constraint_id  # ids are not reused
        supplier, _ = push_proxy(channel)
        supplier.connect_structured_push_supplier(None)
        for n in (1, 5, 12):
            supplier.push_structured_event(structured(fields={"n": n}))
        assert consumer.wait_for(2)
        assert [number(e) for e in consumer.items] == [5, 12]

    def test_filter_ids_are_not_reused_after_a_restart(
            self, reopen: Callable[[], EventChannelFactory]) -> None:
        factory = reopen()
        channel, channel_id = persistent_channel(factory)
        admin, admin_id = channel.new_for_consumers(CA.AND_OP)
        make = channel._get_default_filter_factory().create_filter
        kept = admin.add_filter(make("EXTENDED_TCL"))
        gone = admin.add_filter(make("EXTENDED_TCL"))
        admin.remove_filter(gone)

        factory = reopen()
        channel = factory.get_event_channel(channel_id)
        admin = channel.get_consumeradmin(admin_id)
        assert admin.get_all_filters() == [kept]
        assert admin.add_filter(channel._get_default_filter_factory().create_filter(
            "EXTENDED_TCL")) not in (kept, gone)

    def test_a_mapping_filter_comes_back_and_still_maps(
            self, reopen: Callable[[], EventChannelFactory]) -> None:
        """The admin's priority mapping filter still reorders a PriorityOrder queue."""
        factory = reopen()
        channel, channel_id = persistent_channel(factory)
        mapping = channel._get_default_filter_factory().create_mapping_filter(
            "EXTENDED_TCL", CORBA.Any(CORBA.TC_short, 0))
        mapping.add_mapping_constraints([CosNotifyFilter.MappingConstraintPair(
            CosNotifyFilter.ConstraintExp([], "$n == 1"), CORBA.Any(CORBA.TC_short, 9))])
        admin, admin_id = channel.new_for_consumers(CA.AND_OP)
        admin._set_priority_filter(mapping)
        proxy, proxy_id = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy.set_qos([N.Property("OrderPolicy", CORBA.Any(CORBA.TC_short, N.PriorityOrder))])
        proxy.connect_structured_pull_consumer(None)

        factory = reopen()
        channel = factory.get_event_channel(channel_id)
        admin = channel.get_consumeradmin(admin_id)
        restored = admin._get_priority_filter()
        assert restored._get_default_value().value() == 0
        assert restored.get_all_mapping_constraints()[0].value.value() == 9
        supplier, _ = push_proxy(channel)
        supplier.connect_structured_push_supplier(None)
        for n in range(3):
            supplier.push_structured_event(structured(fields={"n": n}))
        assert drain(admin.get_proxy_supplier(proxy_id)) == [1, 0, 2]

    def test_a_value_that_does_not_fit_adds_nothing_here_or_in_the_store(
            self, reopen: Callable[[], EventChannelFactory]) -> None:
        """§3.2.2.4: "either all of the constraint-value pairs ... or none of them" are
        added, and a value not of value_type is InvalidValue. A short of 70000 (an Any
        made in process is not marshalled) is refused before it is published, so it is
        neither live nor half-saved, and later changes are saved again (review 127)."""
        factory = reopen()
        channel, channel_id = persistent_channel(factory)
        mapping = channel._get_default_filter_factory().create_mapping_filter(
            "EXTENDED_TCL", CORBA.Any(CORBA.TC_short, 0))
        admin, admin_id = channel.new_for_consumers(CA.AND_OP)
        admin._set_priority_filter(mapping)
        pair = lambda text, value: CosNotifyFilter.MappingConstraintPair(
            CosNotifyFilter.ConstraintExp([], text), CORBA.Any(CORBA.TC_short, value))
        with pytest.raises(CosNotifyFilter.InvalidValue):
            mapping.add_mapping_constraints([pair("TRUE", 70000)])
        assert mapping.get_all_mapping_constraints() == []
        mapping.add_mapping_constraints([pair("$n == 1", 9)])

        factory = reopen()
        restored = factory.get_event_channel(channel_id).get_consumeradmin(
            admin_id)._get_priority_filter()
        assert [(c.constraint_expression.constraint_expr, c.value.value())
                for c in restored.get_all_mapping_constraints()] == [("$n == 1", 9)]


class TestConnections:
    def test_a_push_proxy_reconnects_and_delivers_after_a_restart(
            self, reopen: Callable[[], EventChannelFactory], omniorb: Any) -> None:
        factory = reopen()
        channel, channel_id = persistent_channel(factory)
        admin = channel._get_default_consumer_admin()
        proxy, proxy_id = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        consumer = StructuredConsumer()
        proxy.connect_structured_push_consumer(reference(omniorb, consumer))

        factory = reopen()
        assert not consumer.disconnected.is_set()  # a restart is not a disconnect
        channel = factory.get_event_channel(channel_id)
        proxy = channel._get_default_consumer_admin().get_proxy_supplier(proxy_id)
        with pytest.raises(CosEventChannelAdmin.AlreadyConnected):
            proxy.connect_structured_push_consumer(reference(omniorb, StructuredConsumer()))
        supplier, _ = push_proxy(channel)
        supplier.connect_structured_push_supplier(None)
        supplier.push_structured_event(structured(fields={"n": 42}))
        assert consumer.wait_for(1)
        assert number(consumer.items[0]) == 42

    def test_a_suspended_proxy_stays_suspended(
            self, reopen: Callable[[], EventChannelFactory], omniorb: Any) -> None:
        factory = reopen()
        channel, channel_id = persistent_channel(factory)
        proxy, proxy_id = channel._get_default_consumer_admin(
        ).obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(reference(omniorb, StructuredConsumer()))
        proxy.suspend_connection()

        factory = reopen()
        proxy = factory.get_event_channel(channel_id)._get_default_consumer_admin(
        ).get_proxy_supplier(proxy_id)
        with pytest.raises(CA.ConnectionAlreadyInactive):
            proxy.suspend_connection()
        proxy.resume_connection()


    def test_a_waiting_pull_on_a_kept_proxy_ends_when_the_service_stops(
            self, reopen: Callable[[], EventChannelFactory]) -> None:
        """Section 2.5.5.1 (ConnectionReliability Persistent): "upon restart from a failure
        the notification channel will automatically re-establish connections to all
        clients that were connected to it at the time the failure occurred": a pull
        waiting as the service stops raises TRANSIENT (pull again later) rather than
        waiting for ever, and the kept proxy comes back and still delivers."""
        factory = reopen()
        channel, channel_id = persistent_channel(factory)
        proxy, proxy_id = channel._get_default_consumer_admin(
        ).obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        waiting = threading.Event()
        wait = proxy._cond.wait

        def noted_wait(*args: Any) -> bool:
            waiting.set()
            return bool(wait(*args))

        proxy._cond.wait = noted_wait
        outcome: list[Any] = []

        def pull() -> None:
            try:
                outcome.append(proxy.pull_structured_event())
            except BaseException as exc:  # noqa: BLE001 - the test reads it
                outcome.append(exc)

        puller = threading.Thread(target=pull, daemon=True)
        puller.start()
        assert waiting.wait(WAIT)

        factory = reopen()
        puller.join(WAIT)
        assert not puller.is_alive(), "the pull still waits after the service stopped"
        assert len(outcome) == 1 and isinstance(outcome[0], CORBA.TRANSIENT)
        with pytest.raises(CORBA.TRANSIENT):
            proxy.try_pull_structured_event()  # the old object answers so from now on
        channel = factory.get_event_channel(channel_id)
        proxy = channel._get_default_consumer_admin().get_proxy_supplier(proxy_id)
        supplier, _ = push_proxy(channel)
        supplier.connect_structured_push_supplier(None)
        supplier.push_structured_event(structured(fields={"n": 7}))
        assert number(proxy.pull_structured_event()) == 7

    def test_a_consumer_in_process_is_not_kept(
            self, reopen: Callable[[], EventChannelFactory]) -> None:
        """A Python object in process has no reference to keep: its push proxy comes
        back unconnected (docs/persistence.md), and takes a new consumer -- rather
        than coming back connected to nothing and failing its first delivery."""
        factory = reopen()
        channel, channel_id = persistent_channel(factory)
        proxy, proxy_id = channel._get_default_consumer_admin(
        ).obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(StructuredConsumer())

        factory = reopen()
        channel = factory.get_event_channel(channel_id)
        proxy = channel._get_default_consumer_admin().get_proxy_supplier(proxy_id)
        consumer = StructuredConsumer()
        proxy.connect_structured_push_consumer(consumer)  # not AlreadyConnected
        supplier_of(channel).push_structured_event(structured(fields={"n": 7}))
        assert consumer.wait_for(1)
        assert number(consumer.items[0]) == 7


    def test_a_link_between_two_channels_comes_back(
            self, reopen: Callable[[], EventChannelFactory]) -> None:
        """Channel A's push proxy connected to channel B's proxy push consumer (a
        federation; over IIOP the server hands the core object too): the client is one
        of the service's own objects, kept by its path, and linked again."""
        factory = reopen()
        a, a_id = persistent_channel(factory)
        b, b_id = persistent_channel(factory)
        link_in, link_in_id = push_proxy(b)
        link_in.connect_structured_push_supplier(None)
        link_out, link_out_id = a._get_default_consumer_admin(
        ).obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        link_out.connect_structured_push_consumer(link_in)

        factory = reopen()
        a, b = factory.get_event_channel(a_id), factory.get_event_channel(b_id)
        link_out = a._get_default_consumer_admin().get_proxy_supplier(link_out_id)
        assert link_out._client is b._get_default_supplier_admin().get_proxy_consumer(
            link_in_id)
        reader, _ = b._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        consumer = StructuredConsumer()
        reader.connect_structured_push_consumer(consumer)
        supplier_of(a).push_structured_event(structured(fields={"n": 3}))
        assert consumer.wait_for(1)
        assert number(consumer.items[0]) == 3


class TestFailures:
    def test_a_store_that_fails_gives_no_resources_and_keeps_the_object_usable(
            self, omniorb: Any) -> None:
        class FullStore(MemoryStore):
            full = False

            def put(self, record: Record) -> None:
                if self.full:
                    raise StoreError(Reason.FULL, "disk full (test)")
                super().put(record)

        store = FullStore()
        with EventChannelFactory(store=store) as factory:
            channel, _ = persistent_channel(factory)
            store.full = True
            with pytest.raises(CORBA.NO_RESOURCES) as raised:
                channel.new_for_consumers(CA.AND_OP)
            assert "disk full" in str(raised.value)
            store.full = False
            channel.new_for_consumers(CA.AND_OP)

    def test_stored_values_set_qos_would_refuse_are_skipped(
            self, caplog: pytest.LogCaptureFixture) -> None:
        """A record another program wrote (or edited) may hold a QoS or admin value of
        the right type but out of range, or of another type: each is skipped and logged,
        as set_qos would refuse it, and the rest comes back usable (review 69: OrderPolicy
        99 made every obtain_* of the channel raise KeyError; MaximumBatchSize 0 stalled
        a proxy; a MaxQueueLength of another type vanished without a word)."""
        from cosnotify.channel import codec

        store = MemoryStore()
        with EventChannelFactory(store=store) as factory:
            channel, channel_id = persistent_channel(factory)
            proxy, proxy_id = channel._get_default_consumer_admin() \
                .obtain_notification_pull_supplier(CA.SEQUENCE_EVENT)
        edits = {"channel": ("qos", [N.Property("OrderPolicy", CORBA.Any(CORBA.TC_short, 99)),
                                     *PERSISTENT_QOS]),
                 "proxy_supplier": ("qos", [N.Property("MaximumBatchSize",
                                                       CORBA.Any(CORBA.TC_long, 0))])}
        for record in store.records():
            if record.kind in edits:
                data = codec.loads(record.data)
                field, properties = edits[record.kind]
                data[field] = codec.encode_properties(properties)
                if record.kind == "channel":
                    data["admin"] = codec.encode_properties([N.Property(
                        "MaxQueueLength", CORBA.Any(CORBA.TC_ulonglong, 100))])
                store.put(Record(record.path, record.kind, codec.dumps(data)))
        with caplog.at_level("WARNING"), EventChannelFactory(store=store) as factory:
            channel = factory.get_event_channel(channel_id)
            qos = {p.name: p.value.value() for p in channel.get_qos()}
            assert qos["OrderPolicy"] != 99 and qos["ConnectionReliability"] == N.Persistent
            channel._get_default_consumer_admin().obtain_notification_push_supplier(
                CA.STRUCTURED_EVENT)  # obtain_* works
            proxy = channel._get_default_consumer_admin().get_proxy_supplier(proxy_id)
            proxy.connect_sequence_pull_consumer(None)
            supplier_of(channel).push_structured_event(structured(fields={"n": 7}))
            events, has_events = proxy.try_pull_structured_events(10)
            assert has_events and [number(e) for e in events] == [7]
        skipped = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
        assert any("OrderPolicy = 99" in m for m in skipped), skipped
        assert any("MaximumBatchSize = 0" in m for m in skipped), skipped
        assert any("MaxQueueLength" in m for m in skipped), skipped

    def test_an_unreadable_record_is_skipped_and_the_rest_comes_back(self) -> None:
        store = MemoryStore()
        with EventChannelFactory(store=store) as factory:
            _, kept = persistent_channel(factory)
        store.put(Record("ch/99", "channel", b"\xff not json"))
        with EventChannelFactory(store=store) as factory:
            assert factory.get_all_channels() == [kept]
