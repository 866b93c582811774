"""Event persistence (EventReliability=Persistent), in process.

Spec section 2.5.5.1 (Persistent/Persistent): "Each event is guaranteed to
be delivered to all consumers registered to receive it at the time the
event was delivered to the channel, within expiry limits". Consumers are
omniORBpy servants; a restart is a second factory over the same store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import TimeBase

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.service import ServiceConfig
from cosnotify.store import MemoryStore, Store
from tests.channel.conftest import PullSupplier, number, structured
from tests.durability.conftest import (
    DURABLE_QOS,
    PERSISTENT_QOS,
    StructuredConsumer,
    reference,
    supplier_of,
)


def short(value: int) -> Any:
    return CORBA.Any(CORBA.TC_short, value)


def push_consumer(channel: Any, orb: Any, consumer: StructuredConsumer,
                  qos: list[Any] | None = None) -> tuple[Any, int]:
    proxy, proxy_id = channel._get_default_consumer_admin().obtain_notification_push_supplier(
        CA.STRUCTURED_EVENT)
    if qos:
        proxy.set_qos(qos)
    proxy.connect_structured_push_consumer(reference(orb, consumer))
    return proxy, proxy_id


def numbers(consumer: StructuredConsumer) -> list[int]:
    with consumer.cond:
        return [number(e) for e in consumer.items]


class TestAcrossARestart:
    def test_queued_events_are_delivered_after_a_restart(
            self, reopen: Callable[[], EventChannelFactory], omniorb: Any) -> None:
        factory = reopen()
        channel, channel_id = factory.create_channel(DURABLE_QOS, [])
        consumer = StructuredConsumer()
        proxy, proxy_id = push_consumer(channel, omniorb, consumer)
        proxy.suspend_connection()
        supplier = supplier_of(channel)
        for n in range(5):
            supplier.push_structured_event(structured(fields={"n": n}))

        factory = reopen()
        proxy = factory.get_event_channel(channel_id)._get_default_consumer_admin(
        ).get_proxy_supplier(proxy_id)
        proxy.resume_connection()
        assert consumer.wait_for(5)
        assert numbers(consumer) == [0, 1, 2, 3, 4]

    def test_delivered_events_leave_the_store(
            self, store_opener: Callable[[], Store], omniorb: Any) -> None:
        """A push's release is written with the next event stored, or RELEASE_DELAY
        seconds later on its own (durable.py)."""
        from cosnotify.channel.clock import ManualClock
        from cosnotify.channel.durable import RELEASE_DELAY

        clock = ManualClock()
        store = store_opener()
        with EventChannelFactory(clock=clock, store=store) as factory:
            channel, _ = factory.create_channel(DURABLE_QOS, [])
            consumer = StructuredConsumer()
            proxy, _ = push_consumer(channel, omniorb, consumer)
            supplier = supplier_of(channel)
            for n in range(3):
                supplier.push_structured_event(structured(fields={"n": n}))
            assert consumer.wait_for(3)
            assert factory.service.dispatcher.wait_idle()
            path = proxy._durable_path()
            # Delivered: what the store still names is waiting to be written.
            assert {e.id for e in store.pending(path)} <= channel._event_log.unreleased(path)
            clock.advance(RELEASE_DELAY)  # the timer hands the write to a worker
            assert factory.service.dispatcher.wait_idle()
            assert store.pending_count(path) == 0
            assert channel._event_log.unreleased(path) == set()

    def test_a_pull_consumer_finds_its_events_after_a_restart(
            self, reopen: Callable[[], EventChannelFactory]) -> None:
        factory = reopen()
        channel, channel_id = factory.create_channel(DURABLE_QOS, [])
        proxy, proxy_id = channel._get_default_consumer_admin(
        ).obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        supplier = supplier_of(channel)
        for n in range(3):
            supplier.push_structured_event(structured(fields={"n": n}))
        event, _ = proxy.try_pull_structured_event()
        assert number(event) == 0  # pulled: no longer the store's

        factory = reopen()
        proxy = factory.get_event_channel(channel_id)._get_default_consumer_admin(
        ).get_proxy_supplier(proxy_id)
        got = []
        while True:
            event, has_event = proxy.try_pull_structured_event()
            if not has_event:
                break
            got.append(number(event))
        assert got == [1, 2]

    def test_a_best_effort_proxy_loses_its_queue_and_only_it(
            self, reopen: Callable[[], EventChannelFactory], omniorb: Any) -> None:
        factory = reopen()
        channel, channel_id = factory.create_channel(DURABLE_QOS, [])
        kept, dropped = StructuredConsumer(), StructuredConsumer()
        kept_proxy, kept_id = push_consumer(channel, omniorb, kept)
        lost_proxy, lost_id = push_consumer(
            channel, omniorb, dropped,
            [N.Property("ConnectionReliability", short(N.BestEffort))])
        kept_proxy.suspend_connection()
        lost_proxy.suspend_connection()
        supplier = supplier_of(channel)
        for n in range(3):
            supplier.push_structured_event(structured(fields={"n": n}))

        factory = reopen()
        admin = factory.get_event_channel(channel_id)._get_default_consumer_admin()
        assert lost_id not in admin._get_push_suppliers()
        admin.get_proxy_supplier(kept_id).resume_connection()
        assert kept.wait_for(3)
        assert numbers(kept) == [0, 1, 2]
        assert numbers(dropped) == []


class TestPerMessageReliability:
    @pytest.mark.parametrize(("channel_qos", "header", "kept"), [
        (DURABLE_QOS, N.BestEffort, 2),     # the channel's events are Persistent
        (PERSISTENT_QOS, N.Persistent, 1),  # the channel's events are BestEffort
    ], ids=["best-effort-event-not-kept", "persistent-event-kept"])
    def test_an_events_header_overrides_the_channel(
            self, reopen: Callable[[], EventChannelFactory], omniorb: Any,
            channel_qos: list[Any], header: int, kept: int) -> None:
        """Section 2.5.5.1: EventReliability "per-message to override the per-channel".
        Event 1 carries the header; event 2 follows the channel."""
        factory = reopen()
        channel, channel_id = factory.create_channel(channel_qos, [])
        consumer = StructuredConsumer()
        proxy, proxy_id = push_consumer(channel, omniorb, consumer)
        proxy.suspend_connection()
        supplier = supplier_of(channel)
        supplier.push_structured_event(structured(
            fields={"n": 1}, header=[N.Property("EventReliability", short(header))]))
        supplier.push_structured_event(structured(fields={"n": 2}))

        factory = reopen()
        factory.get_event_channel(channel_id)._get_default_consumer_admin(
        ).get_proxy_supplier(proxy_id).resume_connection()
        assert consumer.wait_for(1)
        assert factory.service.dispatcher.wait_idle()
        assert numbers(consumer) == [kept]

    def test_a_persistent_event_on_a_best_effort_channel_is_refused(self) -> None:
        with EventChannelFactory(store=MemoryStore()) as factory:
            channel, _ = factory.create_channel([], [])
            supplier = supplier_of(channel)
            with pytest.raises(CORBA.BAD_QOS):
                supplier.push_structured_event(structured(
                    header=[N.Property("EventReliability", short(N.Persistent))]))


class TestLimitsAndFailures:
    def test_events_past_the_memory_window_wait_on_disk(self, omniorb: Any) -> None:
        store = MemoryStore()
        with EventChannelFactory(store=store) as factory:
            channel, _ = factory.create_channel(DURABLE_QOS, [])
            channel._event_log.window = 8
            consumer = StructuredConsumer()
            proxy, _ = push_consumer(channel, omniorb, consumer)
            proxy.suspend_connection()
            supplier = supplier_of(channel)
            for n in range(100):
                supplier.push_structured_event(structured(fields={"n": n}))
            assert len(proxy._queue.durable.resident) == 8
            assert proxy.pending == 8
            assert store.pending_count(proxy._durable_path()) == 100
            proxy.resume_connection()
            assert consumer.wait_for(100)
            assert numbers(consumer) == list(range(100))

    def test_a_full_store_refuses_the_push(self, omniorb: Any) -> None:
        with EventChannelFactory(store=MemoryStore(max_events=2)) as factory:
            channel, _ = factory.create_channel(DURABLE_QOS, [])
            proxy, _ = push_consumer(channel, omniorb, StructuredConsumer())
            proxy.suspend_connection()
            supplier = supplier_of(channel)
            supplier.push_structured_event(structured(fields={"n": 0}))
            supplier.push_structured_event(structured(fields={"n": 1}))
            with pytest.raises(CORBA.NO_RESOURCES) as raised:
                supplier.push_structured_event(structured(fields={"n": 2}))
            assert "limit" in str(raised.value)
            assert proxy.pending == 2  # what was accepted stays

    def test_destroying_a_proxy_drops_its_stored_events(self, omniorb: Any) -> None:
        store = MemoryStore()
        with EventChannelFactory(store=store) as factory:
            channel, _ = factory.create_channel(DURABLE_QOS, [])
            proxy, _ = push_consumer(channel, omniorb, StructuredConsumer())
            proxy.suspend_connection()
            path = proxy._durable_path()
            supplier_of(channel).push_structured_event(structured(fields={"n": 0}))
            assert store.pending_count(path) == 1
            proxy.disconnect_structured_push_supplier()
            assert store.pending_count(path) == 0 and store.consumers() == []

    def test_a_failing_consumer_gets_the_event_again_and_is_never_dropped(
            self, omniorb: Any) -> None:
        """Section 2.5.5.1: the channel "will continue to retry" a Persistent connection
        unless the reference raises OBJECT_NOT_EXIST (TAO's Reconnecting test: a
        consumer's exception leads to redelivery)."""

        class Flaky(StructuredConsumer):
            failures = 4

            def push_structured_event(self, event: Any) -> None:
                if self.failures:
                    self.failures -= 1
                    raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)
                super().push_structured_event(event)

        with EventChannelFactory(store=MemoryStore()) as factory:
            channel, _ = factory.create_channel(DURABLE_QOS, [])
            consumer = Flaky()
            _proxy, _ = push_consumer(channel, omniorb, consumer, [
                N.Property("Retries", CORBA.Any(CORBA.TC_long, 1)),
                N.Property("RetryInterval", CORBA.Any(TimeBase._tc_TimeT, 10_000))])  # 1 ms
            supplier_of(channel).push_structured_event(structured(fields={"n": 7}))
            assert consumer.wait_for(1)
            assert numbers(consumer) == [7] and consumer.failures == 0
            assert not consumer.disconnected.is_set()

    def test_a_pulled_event_the_store_refuses_waits_for_room(self) -> None:
        """Section 2.5.5.1 (Persistent/Persistent): "Each event is guaranteed to be
        delivered to all consumers registered to receive it at the time the event was
        delivered to the channel": a pulled event the store refuses (NO_RESOURCES) is
        kept and injected once there is room, and is no failure of its supplier."""
        clock = ManualClock()
        with EventChannelFactory(ServiceConfig(pull_interval=1.0, slow_push=0), clock=clock,
                                 store=MemoryStore(max_events=2)) as factory:
            channel, _ = factory.create_channel(DURABLE_QOS, [])
            out = pull_out(channel)
            supplier = PullSupplier([structured(fields={"n": n}) for n in range(5)])
            proxy, _ = channel._get_default_supplier_admin().obtain_notification_pull_consumer(
                CA.STRUCTURED_EVENT)
            proxy.set_qos([N.Property("Retries", CORBA.Any(CORBA.TC_long, 0))])
            proxy.connect_structured_pull_supplier(supplier)
            dispatcher = channel._service.dispatcher
            got: list[int] = []
            for _ in range(10):  # the consumer keeps reading: the store has room again
                assert dispatcher.wait_idle()
                got += drain(out)
                clock.advance(1.0)
            assert dispatcher.wait_idle()
            got += drain(out)
            assert got == [0, 1, 2, 3, 4]  # was [0, 1, ...]: the refused events were lost
            assert not supplier.disconnected.is_set() and not proxy.destroyed
            assert proxy._failures == 0

    def test_polling_goes_on_after_a_held_event_is_refused_again(self) -> None:
        """Section 2.5.7: a pulled event held while the channel is full (RejectNewEvents
        TRUE) waits; when the store then refuses it too (NO_RESOURCES), the proxy keeps
        polling (it stopped for good: the refusal escaped the poll, which stayed marked
        as running)."""
        clock = ManualClock()
        with EventChannelFactory(ServiceConfig(pull_interval=1.0, slow_push=0), clock=clock,
                                 store=MemoryStore(max_events=1)) as factory:
            full = [N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 1)),
                    N.Property("RejectNewEvents", CORBA.Any(CORBA.TC_boolean, True))]
            a, _ = factory.create_channel(DURABLE_QOS, full)
            b, _ = factory.create_channel(DURABLE_QOS, [])
            out_a, out_b = pull_out(a), pull_out(b)
            supplier = PullSupplier([structured(fields={"n": n}) for n in range(2)])
            proxy, _ = a._get_default_supplier_admin().obtain_notification_pull_consumer(
                CA.SEQUENCE_EVENT)
            proxy.set_qos([N.Property("MaximumBatchSize", CORBA.Any(CORBA.TC_long, 2))])
            proxy.connect_sequence_pull_supplier(supplier)  # one poll takes both
            dispatcher = a._service.dispatcher
            assert dispatcher.wait_idle()
            assert len(proxy._pending) == 1  # event 1 waits: the channel is full
            assert number(out_a.pull_structured_event()) == 0  # room in channel a
            supplier_of(b).push_structured_event(structured(fields={"n": 99}))  # store full
            clock.advance(1.0)  # a's poll: injecting event 1 is refused (NO_RESOURCES)
            assert dispatcher.wait_idle()
            assert len(proxy._pending) == 1
            assert number(out_b.pull_structured_event()) == 99  # the store has room again
            supplier.add(structured(fields={"n": 2}))
            polls = supplier.polls
            got: list[int] = []
            for _ in range(5):
                clock.advance(1.0)
                assert dispatcher.wait_idle()
                got += drain(out_a)
            assert supplier.polls > polls, "the proxy stopped polling its supplier for good"
            assert got == [1, 2]


def pull_out(channel: Any) -> Any:
    """A connected structured pull proxy supplier of ``channel``'s default admin."""
    out, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
        CA.STRUCTURED_EVENT)
    out.connect_structured_pull_consumer(None)
    return out


def drain(proxy: Any) -> list[int]:
    got = []
    while True:
        event, has = proxy.try_pull_structured_event()
        if not has:
            return got
        got.append(number(event))


def test_a_supplier_batch_is_stored_in_one_commit(tmp_path: Any, omniorb: Any) -> None:
    """push_structured_events: its persistent events share one store commit."""
    from cosnotify.store.sqlite import SQLiteStore

    store = SQLiteStore(tmp_path / "store.db")
    try:
        with EventChannelFactory(store=store) as factory:
            channel, _ = factory.create_channel(DURABLE_QOS, [])
            consumer = StructuredConsumer()
            proxy, _ = push_consumer(channel, omniorb, consumer)
            proxy.suspend_connection()
            supplier, _ = channel._get_default_supplier_admin(
            ).obtain_notification_push_consumer(CA.SEQUENCE_EVENT)
            supplier.connect_sequence_push_supplier(None)
            before = store.commits
            supplier.push_structured_events([structured(fields={"n": n}) for n in range(50)])
            assert store.commits == before + 1
            assert store.pending_count(proxy._durable_path()) == 50
            proxy.resume_connection()
            assert consumer.wait_for(50)
            assert numbers(consumer) == list(range(50))
    finally:
        store.close()
