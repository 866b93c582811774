"""Event Acknowledgment (section 3.7): SequenceNumber, acknowledge, redelivery.

Section 3.7.7.1: an event not acknowledged within RetryInterval is sent
again, and "The consumer checks the received events in duplication using
SequenceNumber". Time is a ManualClock, so "RetryInterval passed" is a
step of the test, not a wait.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA

from cosnotify.channel.ack import StructuredProxyPullSupplierAck, StructuredProxyPushSupplierAck
from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.store import Store
from cosnotify.store.sqlite import ID_BLOCK
from tests.channel.conftest import number, structured
from tests.durability.conftest import (
    ACK_QOS,
    DURABLE_QOS,
    StructuredConsumer,
    ack_admin,
    reference,
    sequence_number,
    supplier_of,
)


def numbered(consumer: StructuredConsumer) -> list[tuple[int | None, int]]:
    with consumer.cond:
        return [(sequence_number(e), number(e)) for e in consumer.items]


def pull_proxy_holding(factory: EventChannelFactory, count: int) -> Any:
    """A connected Ack structured pull proxy of a new channel, holding ``count`` events."""
    channel, _ = factory.create_channel([], [])
    proxy, _ = ack_admin(channel).obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
    proxy.connect_structured_pull_consumer(None)
    supplier = supplier_of(channel)
    for n in range(count):
        supplier.push_structured_event(structured(fields={"n": n}))
    return proxy


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def factory(clock: ManualClock) -> Iterator[EventChannelFactory]:
    with EventChannelFactory(clock=clock) as made:
        yield made


class TestPush:
    def test_an_ack_admin_makes_ack_proxies_that_number_each_event(
            self, factory: EventChannelFactory, omniorb: Any) -> None:
        channel, _ = factory.create_channel([], [])
        proxy, _ = ack_admin(channel).obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        assert isinstance(proxy, StructuredProxyPushSupplierAck)
        consumer = StructuredConsumer()
        proxy.connect_structured_push_consumer(reference(omniorb, consumer))
        supplier = supplier_of(channel)
        for n in range(3):
            supplier.push_structured_event(structured(fields={"n": n}))
        assert consumer.wait_for(3)
        assert numbered(consumer) == [(0, 0), (1, 1), (2, 2)]  # section 3.7.5: 0, 1, 2 ...

    def test_what_is_not_acknowledged_comes_again_with_its_number(
            self, factory: EventChannelFactory, clock: ManualClock, omniorb: Any) -> None:
        channel, _ = factory.create_channel([], [])
        proxy, _ = ack_admin(channel).obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        consumer = StructuredConsumer()
        proxy.connect_structured_push_consumer(reference(omniorb, consumer))
        supplier = supplier_of(channel)
        for n in range(3):
            supplier.push_structured_event(structured(fields={"n": n}))
        assert consumer.wait_for(3)
        proxy.acknowledge([0, 2])
        clock.advance(1.0)
        assert consumer.wait_for(4)
        assert factory.service.dispatcher.wait_idle()
        assert numbered(consumer)[3:] == [(1, 1)]
        proxy.acknowledge([1, 1, 99])  # again, and never given: ignored (3.7.5.2)
        clock.advance(5.0)
        assert factory.service.dispatcher.wait_idle()
        assert len(numbered(consumer)) == 4
        assert proxy.pending == 0

    def test_a_sequence_batch_has_one_number_on_its_first_event(
            self, factory: EventChannelFactory, omniorb: Any) -> None:
        from tests.channel.conftest import SequencePushConsumer

        channel, _ = factory.create_channel([], [])
        proxy, _ = ack_admin(channel).obtain_notification_push_supplier(CA.SEQUENCE_EVENT)
        proxy.set_qos([N.Property("MaximumBatchSize", CORBA.Any(CORBA.TC_long, 2))])
        consumer = SequencePushConsumer()
        proxy.connect_sequence_push_consumer(consumer)
        supplier = supplier_of(channel)
        for n in range(4):
            supplier.push_structured_event(structured(fields={"n": n}))
        assert consumer.wait_for(2)
        batches = [[sequence_number(e) for e in batch] for batch in consumer.received]
        assert batches == [[0, None], [1, None]]

    def test_a_plain_proxy_cannot_be_switched_to_acknowledgment(
            self, factory: EventChannelFactory) -> None:
        channel, _ = factory.create_channel([], [])
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        with pytest.raises(N.UnsupportedQoS):
            proxy.set_qos(ACK_QOS[:1])


class TestPull:
    def test_a_pulled_event_not_acknowledged_is_pulled_again(
            self, factory: EventChannelFactory, clock: ManualClock) -> None:
        channel, _ = factory.create_channel([], [])
        proxy, _ = ack_admin(channel).obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        assert isinstance(proxy, StructuredProxyPullSupplierAck)
        proxy.connect_structured_pull_consumer(None)
        supplier = supplier_of(channel)
        for n in range(2):
            supplier.push_structured_event(structured(fields={"n": n}))
        first, _ = proxy.try_pull_structured_event()
        second, _ = proxy.try_pull_structured_event()
        assert [sequence_number(first), sequence_number(second)] == [0, 1]
        proxy.acknowledge([1])
        assert not proxy.try_pull_structured_event()[1]
        clock.advance(1.0)
        again, has_event = proxy.try_pull_structured_event()
        assert has_event and (sequence_number(again), number(again)) == (0, 0)

    def test_acknowledging_twice_or_out_of_order_loses_nothing(
            self, factory: EventChannelFactory, clock: ManualClock) -> None:
        """Section 3.7.5.2: a consumer may acknowledge several numbers at once, after
        several pulls, in any order; a number acknowledged again is a resend and is
        ignored. Only the number never acknowledged is given again."""
        proxy = pull_proxy_holding(factory, 4)
        given = [proxy.try_pull_structured_event()[0] for _ in range(4)]
        numbers = [sequence_number(e) for e in given]
        proxy.acknowledge([numbers[3], numbers[0]])
        proxy.acknowledge([numbers[0], numbers[2], numbers[0]])
        clock.advance(1.0)
        again, has_event = proxy.try_pull_structured_event()
        assert has_event and (sequence_number(again), number(again)) == (numbers[1], 1)
        proxy.acknowledge([numbers[1], numbers[1]])
        clock.advance(1.0)
        assert not proxy.try_pull_structured_event()[1]

    def test_an_event_put_back_for_a_pull_again_is_taken_by_its_acknowledge(
            self, factory: EventChannelFactory, clock: ManualClock) -> None:
        # Section 3.7.6: acknowledge says the consumer received what it names. An
        # event pulled and not acknowledged within RetryInterval goes back to the queue
        # (3.7.7.2); the consumer's late acknowledge still names an event it has, so the
        # event must not be pulled a second time (a consumer that forgot the number
        # after acknowledging it would take it for a new one).
        proxy = pull_proxy_holding(factory, 3)
        given = [proxy.try_pull_structured_event()[0] for _ in range(2)]
        assert [sequence_number(e) for e in given] == [0, 1]
        clock.advance(1.0)  # both go back to the head of the queue
        proxy.acknowledge([0, 1])
        rest, has_event = proxy.try_pull_structured_event()
        assert has_event and (sequence_number(rest), number(rest)) == (2, 2)
        assert not proxy.try_pull_structured_event()[1]
        assert proxy.get_qos() is not None  # still connected: nothing given up


class TestDurable:
    @pytest.fixture
    def reopen(self, store_opener: Callable[[], Store],
               clock: ManualClock) -> Iterator[Callable[[], EventChannelFactory]]:
        made: list[EventChannelFactory] = []

        def restart() -> EventChannelFactory:
            if made:
                made[-1].close()
            made.append(EventChannelFactory(clock=clock, store=store_opener()))
            return made[-1]

        yield restart
        if made:
            made[-1].close()

    def test_unacknowledged_events_come_back_after_a_restart_with_their_numbers(
            self, reopen: Callable[[], EventChannelFactory], omniorb: Any) -> None:
        factory = reopen()
        channel, channel_id = factory.create_channel(DURABLE_QOS, [])
        admin = ack_admin(channel)
        proxy, proxy_id = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        consumer = StructuredConsumer()
        proxy.connect_structured_push_consumer(reference(omniorb, consumer))
        supplier = supplier_of(channel)
        for n in range(3):
            supplier.push_structured_event(structured(fields={"n": n}))
        assert consumer.wait_for(3)
        given = numbered(consumer)
        assert len({seq for seq, _ in given}) == 3
        proxy.acknowledge([given[1][0]])

        factory = reopen()
        assert consumer.wait_for(5)
        assert factory.service.dispatcher.wait_idle()
        assert numbered(consumer)[3:] == [given[0], given[2]]
        admin = factory.get_event_channel(channel_id).get_consumeradmin(admin._get_MyID())
        admin.get_proxy_supplier(proxy_id).acknowledge([given[0][0], given[2][0]])
        store = factory.service.topology.store
        assert store.pending_count(proxy._durable_path()) == 0

    @staticmethod
    def pulled_then_restarted(reopen: Callable[[], EventChannelFactory], pushed: int,
                              pulled: int) -> tuple[EventChannelFactory, Any, Any, list[int]]:
        """A durable channel with an Ack pull proxy; ``pushed`` events, the first
        ``pulled`` pulled and not acknowledged; then a restart. The restarted factory,
        channel and (restored) proxy, and the numbers pulled."""
        factory = reopen()
        channel, channel_id = factory.create_channel(DURABLE_QOS, [])
        admin = ack_admin(channel)
        proxy, proxy_id = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        supplier = supplier_of(channel)
        for n in range(pushed):
            supplier.push_structured_event(structured(fields={"n": n}))
        numbers = [sequence_number(proxy.pull_structured_event()) for _ in range(pulled)]
        factory = reopen()
        channel = factory.get_event_channel(channel_id)
        proxy = channel.get_consumeradmin(admin._get_MyID()).get_proxy_supplier(proxy_id)
        return factory, channel, proxy, numbers

    @pytest.mark.parametrize("pull_first", [False, True], ids=["on-disk", "read-back"])
    def test_an_acknowledge_after_a_restart_takes_what_was_given_before_it(
            self, reopen: Callable[[], EventChannelFactory], pull_first: bool) -> None:
        """A pull consumer that received events, and acknowledges them only once the
        server has restarted, does not get them again: their numbers are their store
        ids, which the restarted proxy knows (section 3.7.5.1: the number "is never
        lost or reset" while the connection lasts). Whether the copies are still on
        disk or already read back into the queue."""
        factory, _, proxy, numbers = self.pulled_then_restarted(reopen, 4, 3)
        if pull_first:  # reads a page back into the queue; the first comes again
            again = proxy.pull_structured_event()
            assert (sequence_number(again), number(again)) == (numbers[0], 0)
        proxy.acknowledge(numbers)
        rest = proxy.pull_structured_event()
        assert number(rest) == 3
        assert not proxy.try_pull_structured_event()[1]
        proxy.acknowledge([sequence_number(rest)])
        store = factory.service.topology.store
        assert store.pending_count(proxy._durable_path()) == 0

    def test_after_a_restart_a_number_never_given_is_still_ignored(
            self, reopen: Callable[[], EventChannelFactory]) -> None:
        """Only what the proxy could have given before the restart is taken by a late
        acknowledge: an event that reached the restarted channel, and was never given,
        stays for its consumer whatever number is acknowledged."""
        _, channel, proxy, (before,) = self.pulled_then_restarted(reopen, 1, 1)
        supplier_of(channel).push_structured_event(structured(fields={"n": 1}))
        # Never given: the new event's id is above ``before`` (the SQLite store may skip
        # ids it had reserved, up to ID_BLOCK of them).
        proxy.acknowledge(list(range(before + 1, before + 2 * ID_BLOCK)))
        proxy.acknowledge([before])  # given before the restart: taken
        after, has_event = proxy.try_pull_structured_event()
        assert has_event and number(after) == 1 and sequence_number(after) > before
        assert not proxy.try_pull_structured_event()[1]

    def test_a_late_acknowledge_while_a_refill_reads_the_page(
            self, reopen: Callable[[], EventChannelFactory],
            monkeypatch: pytest.MonkeyPatch) -> None:
        """After a restart, a consumer thread acknowledges events still on disk while
        another thread's pull has read the page holding them and not yet queued it:
        the refill must not queue them (found in review: it did)."""
        factory, _, proxy, numbers = self.pulled_then_restarted(reopen, 3, 3)
        store = factory.service.topology.store
        read = store.pending
        acknowledged: list[bool] = []

        def pending(*args: Any, **kwargs: Any) -> Any:
            page = read(*args, **kwargs)
            if not acknowledged:  # the page is in hand: the other thread acknowledges
                acknowledged.append(True)
                proxy.acknowledge(numbers)
            return page

        monkeypatch.setattr(store, "pending", pending)
        assert not proxy.try_pull_structured_event()[1]
        assert acknowledged
        assert store.pending_count(proxy._durable_path()) == 0


def test_an_ack_proxy_over_iiop(omniorb: Any) -> None:
    """A remote consumer narrows to CosNotifyChannelAdminAck and acknowledges."""
    import CosNotifyChannelAdminAck

    from cosnotify.server import NotificationServer, ServerConfig

    server = NotificationServer(ServerConfig(port=0, call_timeout=2.0)).start()
    try:
        factory = omniorb.string_to_object(server.ior)._narrow(CA.EventChannelFactory)
        channel, channel_id = factory.create_channel([], [])
        admin, admin_id = channel.new_for_consumers(CA.AND_OP)
        admin.set_qos(ACK_QOS)
        proxy, proxy_id = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        proxy = proxy._narrow(CosNotifyChannelAdminAck.StructuredProxyPushSupplierAck)
        assert proxy is not None
        consumer = StructuredConsumer()
        proxy.connect_structured_push_consumer(reference(omniorb, consumer))
        supplier = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)[0]._narrow(CA.StructuredProxyPushConsumer)
        supplier.connect_structured_push_supplier(None)
        supplier.push_structured_event(structured(fields={"n": 5}))
        assert consumer.wait_for(1)
        assert numbered(consumer) == [(0, 5)]
        core = server.factory.get_event_channel(channel_id).get_consumeradmin(
            admin_id).get_proxy_supplier(proxy_id)
        assert list(core._unacked) == [0]
        proxy.acknowledge([0])
        assert core._unacked == {}
    finally:
        server.stop()


class TestSupplierSide:
    """Section 3.7.3.1 with the channel's proxy push consumer as the consumer."""

    def numbered_event(self, n: int, number: int) -> Any:
        return structured(fields={"n": n}, header=[
            N.Property("SequenceNumber", CORBA.Any(CORBA.TC_long, number))])

    def test_a_resent_number_is_dropped_and_every_number_acknowledged(
            self, factory: EventChannelFactory, omniorb: Any) -> None:
        import threading

        class AckingSupplier:
            def __init__(self) -> None:
                self.acknowledged: list[int] = []
                self.cond = threading.Condition()

            def acknowledge(self, numbers: list[int]) -> None:
                with self.cond:
                    self.acknowledged.extend(numbers)
                    self.cond.notify_all()

            def disconnect_structured_push_supplier(self) -> None:
                pass

        channel, _ = factory.create_channel([], [])
        consumer = StructuredConsumer()
        out, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        out.connect_structured_push_consumer(reference(omniorb, consumer))
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        proxy.set_qos(ACK_QOS[:1])
        supplier = AckingSupplier()
        proxy.connect_structured_push_supplier(supplier)
        for n, seq in ((10, 0), (11, 1), (11, 1), (12, 2), (10, 0)):
            proxy.push_structured_event(self.numbered_event(n, seq))
        assert consumer.wait_for(3)
        with supplier.cond:
            assert supplier.cond.wait_for(lambda: len(supplier.acknowledged) == 5, 10)
        assert factory.service.dispatcher.wait_idle()
        assert [number(e) for e in consumer.items] == [10, 11, 12]
        assert sorted(supplier.acknowledged) == [0, 0, 1, 1, 2]

    def test_the_next_number_survives_a_restart(
            self, store_opener: Callable[[], Store], clock: ManualClock, omniorb: Any) -> None:
        factory = EventChannelFactory(clock=clock, store=store_opener())
        try:
            channel, channel_id = factory.create_channel(DURABLE_QOS, [])
            consumer = StructuredConsumer()
            out, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
                CA.STRUCTURED_EVENT)
            out.connect_structured_push_consumer(reference(omniorb, consumer))
            proxy, proxy_id = channel._get_default_supplier_admin(
            ).obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
            proxy.set_qos(ACK_QOS[:1])
            proxy.connect_structured_push_supplier(None)
            proxy.push_structured_event(self.numbered_event(1, 7))
            assert consumer.wait_for(1)
        finally:
            factory.close()
        factory = EventChannelFactory(clock=clock, store=store_opener())
        try:
            proxy = factory.get_event_channel(channel_id)._get_default_supplier_admin(
            ).get_proxy_consumer(proxy_id)
            proxy.push_structured_event(self.numbered_event(1, 7))  # the supplier's resend
            proxy.push_structured_event(self.numbered_event(2, 8))
            assert consumer.wait_for(2)
            assert factory.service.dispatcher.wait_idle()
            assert [number(e) for e in consumer.items] == [1, 2]
        finally:
            factory.close()


def test_a_failed_resend_counts_as_a_failed_push(factory: EventChannelFactory,
                                                 clock: ManualClock) -> None:
    """Operators read failures in `ls`/`top` (docs/operations.md): a resend the consumer
    refuses is a failed push call like any other."""
    from cosnotify.ops import stats

    class Refusing:
        def __init__(self) -> None:
            self.calls = 0

        def push_structured_event(self, event: Any) -> None:
            self.calls += 1
            if self.calls > 1:
                raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)

        def offer_change(self, added: Any, removed: Any) -> None:
            pass

    channel, _ = factory.create_channel([], [])
    proxy, _ = ack_admin(channel).obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
    consumer = Refusing()
    proxy.connect_structured_push_consumer(consumer)
    supplier_of(channel).push_structured_event(structured(fields={"n": 0}))
    assert factory.service.dispatcher.wait_idle()
    assert consumer.calls == 1
    clock.advance(1.0)  # not acknowledged: resent, and refused
    assert factory.service.dispatcher.wait_idle()
    assert consumer.calls == 2
    (listed,) = [p for a in stats(factory)["channels"][0]["admins"] for p in a["proxies"]
                 if p["kind"] == "structured push supplier"]
    assert listed["counters"]["failed"] == 1
    assert listed["last_failure"]["reason"].startswith("TRANSIENT")
