"""Event Acknowledgment: what leaves the unacknowledged, and how it is counted.

Reviews 72-74's and 80-84's findings, each a test that failed before its fix:
an event past its deadline is not given again (section 2.5.5.1, "within expiry
limits") -- also when a batch is pulled again later, or its push call was still in
flight; a proxy switched to DeliveryReliability None (3.7.8.1: "Any reliable
delivery mechanism is not applied") settles what it gave, also an event put back
for a pull again and a batch whose calls were under way; a push without a
SequenceNumber on a supplier-side Acknowledgment proxy is taken; and the counters
keep docs/operations.md's ``queued = delivered + discarded + expired + removed +
depth`` and count in ``events_in`` only what the channel took. test_ack_calls.py
has what a call meets while it is under way. Time is a ManualClock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA

import cosnotify
from cosnotify.channel.clock import ManualClock
from cosnotify.channel.counters import proxy_counts
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.store import MemoryStore, Store
from tests.channel.conftest import number, structured
from tests.durability.conftest import (
    ACK_QOS,
    DURABLE_QOS,
    OFF,
    ON,
    StructuredConsumer,
    ack_admin,
    balanced,
    pull_all,
    reference,
    sequence_number,
    step,
    supplier_of,
    timeout,
)
from tests.durability.test_ack import numbered


def pulled_unacknowledged(factory: EventChannelFactory) -> Any:
    """A structured pull Ack proxy of a durable channel that was given one event with a
    Timeout of 0.5 s and did not acknowledge it."""
    channel, _ = factory.create_channel(DURABLE_QOS, [])
    proxy, _ = ack_admin(channel).obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
    proxy.connect_structured_pull_consumer(None)
    supplier_of(channel).push_structured_event(structured(fields={"n": 1},
                                                          header=timeout(0.5)))
    assert proxy.try_pull_structured_event()[1]
    return proxy


def test_an_expired_unacknowledged_event_stays_delivered_and_counts_apart() -> None:
    """It was delivered once (``delivered`` is a counter: it never goes down, review
    106), and it expired unacknowledged: ``unacknowledged_expired``, not ``expired``
    (copies that expired before they were given), so queued = delivered + discarded +
    expired + removed + depth still holds."""
    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        proxy = pulled_unacknowledged(factory)
        assert proxy_counts(proxy)["delivered"] == 1
        step(factory, clock, 3)
        counts = proxy_counts(proxy)
        assert (counts["delivered"], counts["expired"], counts["unacknowledged_expired"]) \
            == (1, 0, 1)
        assert balanced(proxy)
        from cosnotify.ops.metrics import StatsCollector

        [family] = [f for f in StatsCollector(factory).collect()
                    if f.name == "cosnotify_supplier_unacknowledged_expired"]
        assert [s.value for s in family.samples if s.name.endswith("_total")] == [1]


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




def test_an_expiry_at_the_ack_timer_is_written_by_a_worker(clock: ManualClock) -> None:
    """Review 80: the ack timer wrote the expired event's store release itself, on the
    clock's thread, which every channel's timers share and which must not wait (a
    ManualClock runs its callbacks on the thread that advances it: here, this one)."""
    import threading

    store = MemoryStore()
    writers: list[threading.Thread] = []
    release = store.release

    def recording(consumer: str, ids: Any) -> None:
        writers.append(threading.current_thread())
        release(consumer, ids)

    store.release = recording  # type: ignore[method-assign]
    with EventChannelFactory(clock=clock, store=store) as factory:
        proxy = pulled_unacknowledged(factory)
        step(factory, clock, 3)  # due at 1 s, expired since 0.5 s: released
        assert store.pending_count(proxy._durable_path()) == 0
    assert writers and threading.current_thread() not in writers


def test_an_expiry_at_the_ack_timer_while_stopping_is_still_written(clock: ManualClock) -> None:
    """Review 81: the factory closes its workers before its clock, and a durable Ack
    proxy's ack timer stays armed: an expiry in between was handed to the closed
    workers and dropped. It is written on the timer's thread then. (A ManualClock is
    not the service's own, so advancing it after close plays that window.)"""
    store = MemoryStore()
    factory = EventChannelFactory(clock=clock, store=store)
    proxy = pulled_unacknowledged(factory)
    factory.close()
    clock.advance(1.0)  # due at 1 s, expired since 0.5 s
    assert store.pending_count(proxy._durable_path()) == 0


def test_without_counts_an_expiry_leaves_delivered_at_0(clock: ManualClock) -> None:
    """Review 82: with ``ServiceConfig(counters=False)`` ``delivered`` is not counted,
    yet an unacknowledged event's expiry was taken off it: -1 (and a Prometheus
    counter going down)."""
    from cosnotify.channel.service import ServiceConfig

    with EventChannelFactory(ServiceConfig(counters=False), clock=clock,
                             store=MemoryStore()) as factory:
        proxy = pulled_unacknowledged(factory)
        step(factory, clock, 3)
        counts = proxy_counts(proxy)  # an expiry is counted, as discards and failures are
        assert (counts["delivered"], counts["expired"], counts["unacknowledged_expired"]) \
            == (0, 0, 1)


def test_an_event_pulled_again_is_delivered_once_for_the_channel(clock: ManualClock) -> None:
    """Review 82: the channel's ``delivered`` counted a put-back event at each pull,
    where a push proxy's resends count once; now it agrees with the proxy's."""
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        proxy, _ = ack_admin(channel).obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        supplier_of(channel).push_structured_event(structured(fields={"n": 1}))
        first = sequence_number(proxy.try_pull_structured_event()[0])
        step(factory, clock, 2)  # RetryInterval: put back for the next pull
        assert sequence_number(proxy.try_pull_structured_event()[0]) == first
        proxy.acknowledge([first])
        [found] = cosnotify.stats(factory)["channels"]
        assert proxy_counts(proxy)["delivered"] == found["counters"]["delivered"] == 1


def test_giving_up_is_one_round_of_the_ack_timer(clock: ManualClock) -> None:
    """Review 83: the give-up's teardown runs on a worker; the timer, re-armed for
    numbers already past due, fired again at once, over and over, until a worker
    tore the proxy down (a busy loop on the clock's thread). Here every worker is busy
    (a bounded wait: released after 50 rounds, or the loop would never end)."""
    import threading

    with EventChannelFactory(clock=clock) as factory:
        channel, _ = factory.create_channel([], [])  # best effort: it may give up
        admin = ack_admin(channel)
        admin.set_qos([N.Property("Retries", CORBA.Any(CORBA.TC_long, 0))])
        proxy, _ = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        rounds: list[float] = []
        busy = threading.Event()
        due = proxy._ack_due

        def counted() -> None:
            rounds.append(clock.now())
            if len(rounds) >= 50:
                busy.set()
            due()

        proxy._ack_due = counted
        supplier_of(channel).push_structured_event(structured(fields={"n": 1}))
        assert proxy.try_pull_structured_event()[1]  # given, never acknowledged
        assert factory.service.dispatcher.wait_idle()
        for _ in range(factory.service.config.max_workers):
            factory.service.call_soon(busy.wait, 10.0)
        clock.advance(1.0)  # RetryInterval: unanswered, Retries 0: it gives up
        busy.set()
        assert factory.service.dispatcher.wait_idle()
        assert proxy._destroyed and len(rounds) == 1


def test_pulled_again_while_switched_off_it_is_delivered_once(clock: ManualClock) -> None:
    """Review 83: the same count when acknowledgment is switched off while a pull holds
    the put-back event (the plain path counted it for the channel again)."""
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        proxy, _ = ack_admin(channel).obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        supplier_of(channel).push_structured_event(structured(fields={"n": 1}))
        assert sequence_number(proxy.try_pull_structured_event()[0]) is not None
        step(factory, clock, 2)  # RetryInterval: put back for the next pull
        take = proxy._take

        def switched_off_meanwhile(*args: Any, **kwargs: Any) -> Any:
            batch = take(*args, **kwargs)
            proxy.set_qos(OFF)  # while this pull holds the entry
            return batch

        proxy._take = switched_off_meanwhile
        assert proxy.try_pull_structured_event()[1]
        [found] = cosnotify.stats(factory)["channels"]
        assert proxy_counts(proxy)["delivered"] == found["counters"]["delivered"] == 1


@pytest.mark.parametrize("meanwhile", ["acknowledged", "reconnected"])
def test_a_give_up_looks_again_before_it_tears_down(clock: ManualClock,
                                                    meanwhile: str) -> None:
    """Review 84: the give-up's teardown runs on a worker; a consumer that acknowledged
    everything, or a new one that connected (allow_reconnect; docs/persistence.md,
    "Reconnecting clients"), while it waited was torn down all the same."""
    import threading

    from cosnotify.channel.service import ServiceConfig

    config = ServiceConfig(allow_reconnect=meanwhile == "reconnected", max_workers=2)
    with EventChannelFactory(config, clock=clock) as factory:
        channel, _ = factory.create_channel([], [])  # best effort: it may give up
        admin = ack_admin(channel)
        admin.set_qos([N.Property("Retries", CORBA.Any(CORBA.TC_long, 0))])
        proxy, _ = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        supplier_of(channel).push_structured_event(structured(fields={"n": 1}))
        given = sequence_number(proxy.try_pull_structured_event()[0])
        assert factory.service.dispatcher.wait_idle()
        busy = threading.Event()  # every worker busy until released below
        for _ in range(factory.service.config.max_workers):
            factory.service.call_soon(busy.wait, 10.0)
        clock.advance(1.0)  # unanswered, Retries 0: it gives up; the teardown waits
        if meanwhile == "acknowledged":
            proxy.acknowledge([given])
        else:
            proxy.connect_structured_pull_consumer(None)  # the consumer, restarted
        busy.set()
        assert factory.service.dispatcher.wait_idle()
        assert not proxy._destroyed
