"""Event Acknowledgment: what leaves the unacknowledged, and how it is counted.

Reviews 72-78's findings, each a test that failed before its fix: an event past its
deadline is not given again (section 2.5.5.1, "within expiry limits") -- also
when a batch is pulled again later, or its push call was still in flight; a
proxy switched to DeliveryReliability None (3.7.8.1: "Any reliable delivery
mechanism is not applied") settles what it gave, also an event put back for a
pull again and a batch whose calls were under way; a push without a
SequenceNumber on a supplier-side Acknowledgment proxy is taken; and the
counters keep docs/operations.md's ``queued = delivered + discarded + expired
+ removed + depth`` and count in ``events_in`` only what the channel took. And
a push call during which the consumer acknowledges, disconnects or switches
acknowledgment releases what it gave once, and gives again what is still
unacknowledged. Time is a ManualClock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import TimeBase

import cosnotify
from cosnotify.channel.clock import ManualClock
from cosnotify.channel.counters import proxy_counts
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.store import MemoryStore, Store
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
from tests.durability.test_ack import numbered

OFF = [N.Property("DeliveryReliability", CORBA.Any(CORBA.TC_short, 0))]


def timeout(seconds: float) -> list[Any]:
    return [N.Property("Timeout", CORBA.Any(TimeBase._tc_TimeT, int(seconds * 1e7)))]


def step(factory: EventChannelFactory, clock: ManualClock, seconds: int) -> None:
    for _ in range(seconds):
        clock.advance(1.0)
        assert factory.service.dispatcher.wait_idle()


def balanced(proxy: Any) -> bool:
    """docs/operations.md: queued = delivered + discarded + expired + removed + depth."""
    c = proxy_counts(proxy)
    return bool(c["queued"] == c["delivered"] + c["discarded"] + c["expired"] + c["removed"]
                + c["depth"])


def pull_all(proxy: Any) -> list[Any]:
    got: list[Any] = []
    while True:
        event, ok = proxy.try_pull_structured_event()
        if not ok:
            return got
        got.append(event)


def test_an_expired_unacknowledged_event_counts_as_expired_not_delivered() -> None:
    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        proxy, _ = ack_admin(channel).obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        supplier_of(channel).push_structured_event(structured(fields={"n": 1},
                                                              header=timeout(0.5)))
        assert proxy.try_pull_structured_event()[1]
        step(factory, clock, 3)
        counts = proxy_counts(proxy)
        assert (counts["expired"], counts["delivered"]) == (1, 0) and balanced(proxy)


@pytest.mark.parametrize("kind", ["structured", "sequence"])
def test_what_is_pulled_again_leaves_out_what_expired_since_it_was_due(kind: str) -> None:
    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        admin = ack_admin(channel)
        if kind == "sequence":
            proxy, _ = admin.obtain_notification_pull_supplier(CA.SEQUENCE_EVENT)
            proxy.set_qos([N.Property("MaximumBatchSize", CORBA.Any(CORBA.TC_long, 10))])
            proxy.connect_sequence_pull_consumer(None)

            def pull() -> list[Any]:
                return list(proxy.try_pull_structured_events(10)[0])
        else:
            proxy, _ = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
            proxy.connect_structured_pull_consumer(None)

            def pull() -> list[Any]:
                return pull_all(proxy)
        supplier = supplier_of(channel)
        supplier.push_structured_event(structured(fields={"n": 1}, header=timeout(1.5)))
        supplier.push_structured_event(structured(fields={"n": 2}))
        assert [number(e) for e in pull()] == [1, 2]
        clock.advance(1.0)  # RetryInterval: due again; n=1 lives until 1.5
        assert factory.service.dispatcher.wait_idle()
        clock.advance(0.7)  # 1.7: n=1 expired; only now the consumer pulls
        assert factory.service.dispatcher.wait_idle()
        assert [number(e) for e in pull()] == [2]


def test_switching_off_settles_an_event_put_back_for_a_pull_again() -> None:
    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        proxy, _ = ack_admin(channel).obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        supplier_of(channel).push_structured_event(structured(fields={"n": 1}))
        event, ok = proxy.try_pull_structured_event()
        assert ok and sequence_number(event) is not None
        step(factory, clock, 1)  # not acknowledged: back in the queue for a pull again
        proxy.set_qos(OFF)
        assert proxy.try_pull_structured_event()[1] is False
        assert balanced(proxy)


ON = [N.Property("DeliveryReliability", CORBA.Any(CORBA.TC_short, 1))]


class SwitchingConsumer(StructuredConsumer):
    """Sets its proxy's QoS to ``switch`` while the first push is in its call."""

    proxy: Any = None
    switch: Any = OFF

    def push_structured_event(self, event: Any) -> None:
        super().push_structured_event(event)
        if len(self.items) == 1:
            self.proxy.set_qos(self.switch)


def pushed_in_one_batch(factory: EventChannelFactory, channel: Any, proxy: Any,
                        consumer: SwitchingConsumer, orb: Any) -> None:
    """Three events pushed to ``consumer`` as one batch of ``proxy``'s."""
    consumer.proxy = proxy
    proxy.connect_structured_push_consumer(reference(orb, consumer))
    proxy.suspend_connection()
    supplier = supplier_of(channel)
    for n in range(3):
        supplier.push_structured_event(structured(fields={"n": n}))
    proxy.resume_connection()
    assert consumer.wait_for(3)


def test_switching_off_during_a_push_batch_releases_it_once(omniorb: Any) -> None:
    """Review 74: each event of the batch was released twice (by the switch or on
    its call's return, then as the batch sent), so the MaxQueueLength account
    (section 2.5.7) lost the copies another proxy still held."""
    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [
            N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 3)),
            N.Property("RejectNewEvents", CORBA.Any(CORBA.TC_boolean, True))])
        other, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        other.connect_structured_pull_consumer(None)  # keeps a copy of each
        proxy, _ = ack_admin(channel).obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        consumer = SwitchingConsumer()
        pushed_in_one_batch(factory, channel, proxy, consumer, omniorb)
        step(factory, clock, 5)
        with consumer.cond:
            assert [number(e) for e in consumer.items] == [0, 1, 2]
        assert proxy._unacked == {} and balanced(proxy)
        assert channel._account.count == len(other._queue) == 3
        with pytest.raises(CORBA.IMP_LIMIT):  # the channel is full: the others hold 3
            supplier_of(channel).push_structured_event(structured(fields={"n": 3}))
        store = factory.service.topology.store
        assert store.pending_count(proxy._durable_path()) == 0


def test_switching_on_during_a_plain_push_batch_releases_it(omniorb: Any) -> None:
    """Review 74: a batch that went unnumbered, acknowledgment switched on during it,
    was never released: held in the account and the store for good."""
    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [
            N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 100))])
        proxy, _ = ack_admin(channel).obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        proxy.set_qos(OFF)
        consumer = SwitchingConsumer()
        consumer.switch = ON
        pushed_in_one_batch(factory, channel, proxy, consumer, omniorb)
        step(factory, clock, 5)
        with consumer.cond:
            assert [(sequence_number(e), number(e)) for e in consumer.items] == [
                (None, 0), (None, 1), (None, 2)]
        assert proxy._unacked == {} and channel._account.count == 0
        store = factory.service.topology.store
        assert store.pending_count(proxy._durable_path()) == 0


class SlowFailing(StructuredConsumer):
    """Its first call takes 2 s (RetryInterval 1 s, the event's Timeout 1.5 s), then fails."""

    clock: Any = None

    def push_structured_event(self, event: Any) -> None:
        super().push_structured_event(event)
        if len(self.items) == 1:
            self.clock.advance(2.0)
            raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)


def test_a_call_in_flight_past_its_deadline_is_expired_once(omniorb: Any) -> None:
    """The entry expired under the call is counted and released by the retry path
    only: the channel's MaxQueueLength account stays right (section 2.5.7)."""
    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [
            N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 10))])
        other, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        other.connect_structured_pull_consumer(None)  # holds a copy of the same event
        proxy, _ = ack_admin(channel).obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        consumer = SlowFailing()
        consumer.clock = clock
        proxy.connect_structured_push_consumer(reference(omniorb, consumer))
        supplier_of(channel).push_structured_event(structured(fields={"n": 1},
                                                              header=timeout(1.5)))
        assert consumer.wait_for(1)
        step(factory, clock, 5)
        assert proxy._queue.expired == 1 and balanced(proxy)
        assert channel._account.count == len(other._queue) == 1


@pytest.mark.parametrize("kind", ["structured", "sequence"])
def test_a_push_without_a_number_on_an_acknowledging_proxy_is_taken(kind: str) -> None:
    with EventChannelFactory(clock=ManualClock(), store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        out, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        out.connect_structured_pull_consumer(None)
        admin = channel._get_default_supplier_admin()
        if kind == "sequence":
            proxy, _ = admin.obtain_notification_push_consumer(CA.SEQUENCE_EVENT)
            proxy.set_qos(ACK_QOS[:1])
            proxy.connect_sequence_push_supplier(None)
            proxy.push_structured_events([structured(fields={"n": 1})])
        else:
            proxy, _ = admin.obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
            proxy.set_qos(ACK_QOS[:1])
            proxy.connect_structured_push_supplier(None)
            proxy.push_structured_event(structured(fields={"n": 1}))
        assert [number(e) for e in pull_all(out)] == [1]


def events_in(factory: EventChannelFactory, channel: Any) -> int:
    [found] = [c for c in cosnotify.stats(factory)["channels"] if c["id"] == channel._id]
    return int(found["counters"]["events_in"])


def test_events_in_counts_only_what_the_channel_took() -> None:
    """A batch's event the store refused is not counted, nor counted twice when the
    supplier's resend takes it (operations.md: counted "after the channel took the
    event")."""
    store = MemoryStore(max_events=2)
    with EventChannelFactory(clock=ManualClock(), store=store) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        out, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        out.connect_structured_pull_consumer(None)
        supplier_of(channel).push_structured_event(structured(fields={"n": 99}))
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.SEQUENCE_EVENT)
        proxy.set_qos(ACK_QOS[:1])
        proxy.connect_sequence_push_supplier(None)
        best = [N.Property("EventReliability", CORBA.Any(CORBA.TC_short, N.BestEffort))]
        first = [N.Property("SequenceNumber", CORBA.Any(CORBA.TC_long, 0))]
        batch = [structured(fields={"n": 0}, header=first),
                 structured(fields={"n": 1}, header=best), structured(fields={"n": 2})]
        with pytest.raises(CORBA.NO_RESOURCES):
            proxy.push_structured_events(batch)
        assert events_in(factory, channel) == 3  # 99, 0 and 1; not 2
        got = pull_all(out)
        proxy.push_structured_events(batch)  # the resend takes 2 only
        got += pull_all(out)
        assert [number(e) for e in got] == [99, 0, 1, 2] and events_in(factory, channel) == 4


@pytest.fixture
def durable_factory(store_opener: Callable[[], Store],
                    clock: ManualClock) -> Iterator[EventChannelFactory]:
    """A factory over each kind of store (tests/durability/conftest.py), on ``clock``."""
    with EventChannelFactory(clock=clock, store=store_opener()) as made:
        yield made


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


def test_an_unacknowledged_event_past_its_timeout_is_not_given_again(
        durable_factory: EventChannelFactory, clock: ManualClock,
        omniorb: Any) -> None:
    channel, _ = durable_factory.create_channel(DURABLE_QOS, [])
    proxy, _ = ack_admin(channel).obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
    consumer = StructuredConsumer()
    proxy.connect_structured_push_consumer(reference(omniorb, consumer))
    supplier_of(channel).push_structured_event(
        structured(fields={"n": 7}, header=timeout(2)))
    assert consumer.wait_for(1)
    step(durable_factory, clock, 10)  # never acknowledged
    given = numbered(consumer)  # given, given again at 1 s; expired at 2
    assert given == [given[0]] * 2 and given[0][1] == 7
    store = durable_factory.service.topology.store
    assert store.pending_count(proxy._durable_path()) == 0
    assert proxy._unacked == {}

def test_a_pulled_batch_comes_again_without_what_expired(
        durable_factory: EventChannelFactory, clock: ManualClock) -> None:
    channel, _ = durable_factory.create_channel(DURABLE_QOS, [])
    proxy, _ = ack_admin(channel).obtain_notification_pull_supplier(CA.SEQUENCE_EVENT)
    proxy.set_qos([N.Property("MaximumBatchSize", CORBA.Any(CORBA.TC_long, 10))])
    proxy.connect_sequence_pull_consumer(None)
    supplier = supplier_of(channel)
    supplier.push_structured_event(structured(fields={"n": 1}, header=timeout(2)))
    supplier.push_structured_event(structured(fields={"n": 2}))
    first, _ = proxy.try_pull_structured_events(10)
    assert [number(e) for e in first] == [1, 2]
    step(durable_factory, clock, 1)
    again, _ = proxy.try_pull_structured_events(10)
    assert [(sequence_number(e), number(e)) for e in again] == [
        (sequence_number(first[0]), 1), (None, 2)]
    step(durable_factory, clock, 1)  # the first's Timeout has passed
    last, _ = proxy.try_pull_structured_events(10)
    assert [(sequence_number(e), number(e)) for e in last] == [
        (sequence_number(first[0]), 2)]  # the same number, what is left of it
    store = durable_factory.service.topology.store
    assert store.pending_count(proxy._durable_path()) == 1
    proxy.acknowledge([sequence_number(first[0])])
    step(durable_factory, clock, 1)
    assert store.pending_count(proxy._durable_path()) == 0
    assert proxy.try_pull_structured_events(10)[0] == []

def test_switching_acknowledgment_off_gives_nothing_again(
        durable_factory: EventChannelFactory, clock: ManualClock,
        omniorb: Any) -> None:
    channel, _ = durable_factory.create_channel(DURABLE_QOS, [])
    proxy, _ = ack_admin(channel).obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
    consumer = StructuredConsumer()
    proxy.connect_structured_push_consumer(reference(omniorb, consumer))
    supplier = supplier_of(channel)
    supplier.push_structured_event(structured(fields={"n": 1}))
    assert consumer.wait_for(1)
    proxy.set_qos([N.Property("DeliveryReliability", CORBA.Any(CORBA.TC_short, 0))])
    supplier.push_structured_event(structured(fields={"n": 2}))
    assert consumer.wait_for(2)
    step(durable_factory, clock, 5)
    given = numbered(consumer)
    assert [n for _, n in given] == [1, 2] and given[0][0] is not None
    assert given[1][0] is None
    store = durable_factory.service.topology.store
    assert store.pending_count(proxy._durable_path()) == 0


# -- review 75: what a push call's consumer does during the call ---------------------------


class Scripted(StructuredConsumer):
    """Runs ``script(consumer, n, event)`` inside its n-th push call (from 1)."""

    proxy: Any = None
    script: Any = None

    def push_structured_event(self, event: Any) -> None:
        super().push_structured_event(event)
        self.script(self, len(self.items), event)


def limited(factory: EventChannelFactory) -> tuple[Any, Any]:
    """A durable channel with MaxQueueLength 10 and RejectNewEvents, and a plain pull
    proxy keeping a second copy of each event: a copy released twice shows in the
    channel's account (section 2.5.7) against what that proxy holds."""
    channel, _ = factory.create_channel(DURABLE_QOS, [
        N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 10)),
        N.Property("RejectNewEvents", CORBA.Any(CORBA.TC_boolean, True))])
    other, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
        CA.STRUCTURED_EVENT)
    other.connect_structured_pull_consumer(None)
    return channel, other


def scripted_push(factory: EventChannelFactory, channel: Any, script: Any,
                  orb: Any) -> tuple[Any, Scripted]:
    proxy, _ = ack_admin(channel).obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
    consumer = Scripted()
    consumer.proxy, consumer.script = proxy, script
    proxy.connect_structured_push_consumer(reference(orb, consumer))
    supplier_of(channel).push_structured_event(structured(fields={"n": 1}))
    assert consumer.wait_for(1)
    return proxy, consumer


def test_acknowledged_during_a_call_that_then_fails_is_done_with(omniorb: Any) -> None:
    """It was released by the acknowledge; the failed call put it on the retry path
    too, so it was given again and released twice ("Acknowledging a number twice ...
    is ignored")."""
    def script(consumer: Scripted, n: int, event: Any) -> None:
        consumer.proxy.acknowledge([sequence_number(event)])
        if n == 1:
            raise CORBA.TRANSIENT(0, CORBA.COMPLETED_MAYBE)

    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, other = limited(factory)
        _, consumer = scripted_push(factory, channel, script, omniorb)
        step(factory, clock, 3)
        assert len(consumer.items) == 1
        assert channel._account.count == len(other._queue) == 1


def test_torn_down_during_a_call_that_then_fails_is_released_once(omniorb: Any) -> None:
    def script(consumer: Scripted, n: int, event: Any) -> None:
        consumer.proxy.disconnect_structured_push_supplier()
        raise CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO)

    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, other = limited(factory)
        scripted_push(factory, channel, script, omniorb)
        step(factory, clock, 3)
        assert channel._account.count == len(other._queue) == 1


def test_switched_off_and_on_during_a_call_it_is_given_again(omniorb: Any) -> None:
    """The switch off stopped the ack timer; back on, nothing armed it again, so the
    unacknowledged event was never given again ("Redelivery")."""
    def script(consumer: Scripted, n: int, event: Any) -> None:
        if n == 1:
            consumer.proxy.set_qos(OFF)
            consumer.proxy.set_qos(ON)

    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        _, consumer = scripted_push(factory, channel, script, omniorb)
        step(factory, clock, 2)
        with consumer.cond:
            given = [(sequence_number(e), number(e)) for e in consumer.items]
        assert len(given) >= 2 and given[1] == given[0]


def test_a_resend_failing_after_switching_off_goes_plain_and_is_released(
        omniorb: Any) -> None:
    """The resend's failure left the number unacknowledged with nothing to settle or
    give it again: held in the store and the account for good."""
    def script(consumer: Scripted, n: int, event: Any) -> None:
        if n == 2:  # the resend
            consumer.proxy.set_qos(OFF)
            raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)

    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, other = limited(factory)
        proxy, consumer = scripted_push(factory, channel, script, omniorb)
        step(factory, clock, 3)
        with consumer.cond:
            assert [sequence_number(e) for e in consumer.items][2:] == [None]  # plain
        assert other.try_pull_structured_event()[1]  # the other holder lets go
        assert factory.service.dispatcher.wait_idle()
        store = factory.service.topology.store
        assert proxy._unacked == {} and store.pending_count(proxy._durable_path()) == 0
        assert channel._account.count == len(other._queue) == 0


@pytest.mark.parametrize("mode", ["acknowledged", "torn down"])
def test_a_sequence_call_that_fails_after_it_was_settled(omniorb: Any, mode: str) -> None:
    from tests.channel.conftest import SequencePushConsumer

    class Consumer(SequencePushConsumer):
        def push_structured_events(self, events: list[Any]) -> None:
            super().push_structured_events(events)
            if mode == "acknowledged":
                proxy.acknowledge([sequence_number(events[0])])
                if len(self.received) == 1:
                    raise CORBA.TRANSIENT(0, CORBA.COMPLETED_MAYBE)
            else:
                proxy.disconnect_sequence_push_supplier()
                raise CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO)

    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, other = limited(factory)
        proxy, _ = ack_admin(channel).obtain_notification_push_supplier(CA.SEQUENCE_EVENT)
        proxy.connect_sequence_push_consumer(Consumer())
        supplier_of(channel).push_structured_event(structured(fields={"n": 1}))
        step(factory, clock, 3)
        assert channel._account.count == len(other._queue) == 1


# -- review 76: teardown during a call, a resend going plain, the timer after a resend ---


def batch_of_two(factory: EventChannelFactory, channel: Any, admin: Any, script: Any,
                 orb: Any) -> tuple[Any, Scripted]:
    """A structured Ack push proxy of ``admin`` given n=1 and n=2 as one batch."""
    proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
    consumer = Scripted()
    consumer.proxy, consumer.script = proxy, script
    proxy.connect_structured_push_consumer(reference(orb, consumer))
    proxy.suspend_connection()
    supplier = supplier_of(channel)
    supplier.push_structured_event(structured(fields={"n": 1}))
    supplier.push_structured_event(structured(fields={"n": 2}))
    proxy.resume_connection()
    assert consumer.wait_for(1)
    assert factory.service.dispatcher.wait_idle()  # the script has run
    return proxy, consumer


def let_go(factory: EventChannelFactory, other: Any) -> None:
    while other.try_pull_structured_event()[1]:
        pass
    assert factory.service.dispatcher.wait_idle()


def test_torn_down_during_a_call_that_fails_the_batch_is_released(omniorb: Any) -> None:
    """The call failed TRANSIENT after a disconnect: the rest of the batch went on the
    retry path of a destroyed proxy and was never released (its copies held in the
    MaxQueueLength account for good)."""
    def script(consumer: Scripted, n: int, event: Any) -> None:
        if n == 1:
            consumer.proxy.disconnect_structured_push_supplier()
            raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)

    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, other = limited(factory)
        batch_of_two(factory, channel, ack_admin(channel), script, omniorb)
        step(factory, clock, 5)
        let_go(factory, other)
        assert channel._account.count == len(other._queue) == 0


def test_giving_up_during_a_call_that_fails_the_batch_is_released(omniorb: Any) -> None:
    """The same with the teardown being a best-effort Ack proxy giving up (Retries 1)
    on an unacknowledged number while the call was under way."""
    def script(consumer: Scripted, n: int, event: Any) -> None:
        if n == 1:
            clock.advance(1.0)  # RetryInterval: the first round of resends
            clock.advance(1.0)  # the second: _ack_due gives up, tears the proxy down
            assert consumer.proxy._destroyed
            raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)

    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, _ = factory.create_channel([], [
            N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 10)),
            N.Property("RejectNewEvents", CORBA.Any(CORBA.TC_boolean, True))])
        other, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        other.connect_structured_pull_consumer(None)
        admin = ack_admin(channel)
        admin.set_qos([N.Property("Retries", CORBA.Any(CORBA.TC_long, 1))])
        batch_of_two(factory, channel, admin, script, omniorb)
        step(factory, clock, 5)
        let_go(factory, other)
        assert channel._account.count == len(other._queue) == 0


def test_a_resend_going_plain_is_counted_delivered_once(omniorb: Any) -> None:
    def script(consumer: Scripted, n: int, event: Any) -> None:
        if n == 2:  # the resend
            consumer.proxy.set_qos(OFF)
            raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)

    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, _ = limited(factory)
        proxy, _ = scripted_push(factory, channel, script, omniorb)
        step(factory, clock, 3)
        assert balanced(proxy) and proxy_counts(proxy)["delivered"] == 1


def test_a_resend_failing_after_switching_off_and_on_is_given_again(omniorb: Any) -> None:
    def script(consumer: Scripted, n: int, event: Any) -> None:
        if n == 2:  # the resend
            consumer.proxy.set_qos(OFF)
            consumer.proxy.set_qos(ON)
            raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)

    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        _, consumer = scripted_push(factory, channel, script, omniorb)
        step(factory, clock, 10)
        with consumer.cond:
            given = [(sequence_number(e), number(e)) for e in consumer.items]
        assert len(given) >= 3 and given[2] == given[0]


def test_a_batch_is_not_numbered_for_a_consumer_that_just_disconnected() -> None:
    """A disconnect (an ORB thread) between the delivery task's look and the batch's
    numbering: the batch was recorded as unacknowledged on the destroyed proxy, and
    pushed to the consumer that had gone."""
    from tests.channel.conftest import SequencePushConsumer

    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, other = limited(factory)
        proxy, _ = ack_admin(channel).obtain_notification_push_supplier(CA.SEQUENCE_EVENT)
        consumer = SequencePushConsumer()
        proxy.connect_sequence_push_consumer(consumer)
        given = proxy._given

        def disconnect_first(number: int, entries: Any, push: bool = False) -> bool:
            proxy.disconnect_sequence_push_supplier()  # lands in that window
            return bool(given(number, entries, push=True) if push else given(number, entries))

        proxy._given = disconnect_first
        supplier_of(channel).push_structured_event(structured(fields={"n": 1}))
        assert factory.service.dispatcher.wait_idle()
        step(factory, clock, 3)
        let_go(factory, other)
        assert consumer.received == [] and proxy._unacked == {}
        assert channel._account.count == len(other._queue) == 0


# -- review 77: pull proxies --------------------------------------------------------------


@pytest.mark.parametrize("kind", ["structured", "sequence"])
def test_a_pull_torn_down_before_its_numbering_releases_what_it_took(kind: str) -> None:
    """A disconnect (another ORB thread) between a pull's take and its numbering: the
    entries went into the unacknowledged of a destroyed proxy, held for good."""
    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, other = limited(factory)
        if kind == "structured":
            proxy, _ = ack_admin(channel).obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
            proxy.connect_structured_pull_consumer(None)
            disconnect, pull = proxy.disconnect_structured_pull_supplier, \
                proxy.try_pull_structured_event
        else:
            proxy, _ = ack_admin(channel).obtain_notification_pull_supplier(CA.SEQUENCE_EVENT)
            proxy.connect_sequence_pull_consumer(None)
            disconnect = proxy.disconnect_sequence_pull_supplier

            def pull() -> Any:
                return proxy.try_pull_structured_events(1)
        given = proxy._given

        def disconnect_first(number: int, entries: Any, push: bool = False) -> bool:
            disconnect()  # lands between the take and the numbering
            return bool(given(number, entries, push=True) if push else given(number, entries))

        proxy._given = disconnect_first
        supplier_of(channel).push_structured_event(structured(fields={"n": 1}))
        pull()
        step(factory, clock, 3)
        let_go(factory, other)
        assert channel._account.count == len(other._queue) == 0


@pytest.mark.parametrize("kind", ["structured", "sequence"])
def test_a_batch_waiting_to_be_pulled_again_is_no_unanswered_resend(kind: str) -> None:
    """A best-effort Ack pull proxy (Retries 3) whose consumer does not pull for 5 s:
    nothing was given again, so it does not give up ("after Retries rounds of
    resends"); the sequence proxy did, losing what was queued."""
    clock = ManualClock()
    with EventChannelFactory(clock=clock) as factory:
        channel, _ = factory.create_channel([], [])
        admin = ack_admin(channel)
        if kind == "structured":
            proxy, _ = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
            proxy.connect_structured_pull_consumer(None)

            def pull() -> list[Any]:
                return [proxy.try_pull_structured_event()[0]]
        else:
            proxy, _ = admin.obtain_notification_pull_supplier(CA.SEQUENCE_EVENT)
            proxy.connect_sequence_pull_consumer(None)

            def pull() -> list[Any]:
                return list(proxy.try_pull_structured_events(1)[0])
        supplier = supplier_of(channel)
        for n in range(3):
            supplier.push_structured_event(structured(fields={"n": n}))
        first = pull()
        step(factory, clock, 5)
        assert not proxy.destroyed
        again = pull()
        assert (sequence_number(again[0]), number(again[0])) == (sequence_number(first[0]), 0)


def test_an_unacknowledged_event_expiring_wakes_what_waits_for_room() -> None:
    """The ack timer released an expired entry after it had woken the pull proxy, so a
    pull blocked on a full memory window (copies waiting on disk) could stay asleep
    with room free. Now a release there is followed by a wake (``_kick``)."""
    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        channel._event_log.window = 1
        proxy, _ = ack_admin(channel).obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        supplier = supplier_of(channel)
        supplier.push_structured_event(structured(fields={"n": 0}, header=timeout(1)))
        supplier.push_structured_event(structured(fields={"n": 1}))
        assert number(proxy.try_pull_structured_event()[0]) == 0
        calls: list[str] = []
        released, kick = channel._released, proxy._kick

        def recording_released(entries: Any, delivered: bool = False) -> None:
            calls.append(f"released {len(entries)}")
            released(entries, delivered)

        def recording_kick() -> None:
            calls.append("kick")
            kick()

        channel._released, proxy._kick = recording_released, recording_kick
        clock.advance(1.0)  # e0 due again, and expired
        assert "released 1" in calls
        assert "kick" in calls[calls.index("released 1"):]
        event, ok = proxy.try_pull_structured_event()
        assert ok and number(event) == 1


# -- review 78: an acknowledge meeting a pull that took the event -------------------------


@pytest.mark.parametrize("durable", [False, True], ids=["best effort", "durable"])
def test_an_acknowledge_meeting_a_pull_again_is_honoured(durable: bool) -> None:
    """n0 is put back for a pull again; a pull takes it; before it gives it, n1 falls
    due (which forgot n0 as "expired or discarded": it was only taken) and the consumer
    acknowledges n0. "It is given once more, as a resend, and released then" -- it was
    never released and given again every RetryInterval instead."""
    clock = ManualClock()
    store = {"store": MemoryStore()} if durable else {}
    with EventChannelFactory(clock=clock, **store) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS if durable else [], [])
        proxy, _ = ack_admin(channel).obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        supplier = supplier_of(channel)
        supplier.push_structured_event(structured(fields={"n": 0}))
        supplier.push_structured_event(structured(fields={"n": 1}))
        n0 = sequence_number(proxy.try_pull_structured_event()[0])
        clock.advance(0.5)
        n1 = sequence_number(proxy.try_pull_structured_event()[0])
        clock.advance(0.5)  # n0 due: back at the head of the queue
        given = proxy._given

        def meeting(number: int, entries: Any, push: bool = False) -> bool:
            if number == n0:
                proxy._given = given
                clock.advance(0.5)  # n1 falls due
                proxy.acknowledge([n0])
            return bool(given(number, entries))

        proxy._given = meeting
        assert sequence_number(proxy.try_pull_structured_event()[0]) == n0
        proxy.acknowledge([n1])
        step(factory, clock, 4)
        assert [number(e) for e in pull_all(proxy)] == [] and proxy._unacked == {}


def test_an_acknowledge_after_a_restart_meeting_a_pull_releases_once(
        store_opener: Callable[[], Store]) -> None:
    """After a restart the consumer acknowledges n0 while a pull has read it back and
    taken it: it was released from the store under the pull, then recorded as
    unacknowledged, given again every RetryInterval and released a second time."""
    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=store_opener()) as factory:
        channel, channel_id = factory.create_channel(DURABLE_QOS, [])
        admin = ack_admin(channel)
        admin_id = admin._get_MyID()
        proxy, proxy_id = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        supplier_of(channel).push_structured_event(structured(fields={"n": 0}))
        n0 = sequence_number(proxy.try_pull_structured_event()[0])
    with EventChannelFactory(clock=clock, store=store_opener()) as factory:
        channel = factory.get_event_channel(channel_id)
        proxy = channel.get_consumeradmin(admin_id).get_proxy_supplier(proxy_id)
        releases: list[int] = []
        released, given = channel._released, proxy._given

        def recording(entries: Any, delivered: bool = False) -> None:
            releases.extend(e.stored for e in entries)
            released(entries, delivered)

        def meeting(number: int, entries: Any, push: bool = False) -> bool:
            if number == n0:
                proxy._given = given
                proxy.acknowledge([n0])  # lands between the pull's take and its give
            return bool(given(number, entries))

        channel._released, proxy._given = recording, meeting
        assert sequence_number(proxy.try_pull_structured_event()[0]) == n0
        step(factory, clock, 3)
        assert pull_all(proxy) == [] and releases.count(n0) == 1
        store = factory.service.topology.store
        assert store.pending_count(proxy._durable_path()) == 0
