"""A pull proxy's inbox: plain copies offered without its lock (channel/supplier_proxy.py).

A supplier appends a plain copy to the proxy's inbox and goes on; a pull folds
the inbox into the queue before it takes. What a consumer pulls is what it
would pull had every copy gone straight into the queue: order, discards by
MaxEventsPerConsumer, and a blocking pull woken by the copy it waits for.
"""

from __future__ import annotations

import threading
from typing import Any

from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA

import cosnotify
from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from tests.channel.conftest import SequencePushConsumer, number, structured
from tests.durability.conftest import ack_admin, sequence_number, supplier_of
from tests.ops.test_stats import proxies
from tests.qos.test_channel_qos import drain, entry, pull_proxy

WAIT = 10.0  # upper bound for what should happen at once


def _maximum(n: int) -> Any:
    return N.Property("MaxEventsPerConsumer", CORBA.Any(CORBA.TC_long, n))


def test_a_push_does_not_wait_for_the_proxy_lock(channel: Any) -> None:
    """While a consumer's thread holds the pull proxy's lock (mid-pull), a supplier's
    push returns; the copy is pulled once the lock is free."""
    proxy = pull_proxy(channel)
    supplier = entry(channel)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with proxy._lock:
            held.set()
            release.wait(WAIT)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(WAIT)
        pushed = threading.Event()
        pusher = threading.Thread(target=lambda: (
            supplier.push_structured_event(structured(fields={"n": 1})), pushed.set()))
        pusher.start()
        assert pushed.wait(WAIT), "the push waited for the consumer's lock"
    finally:
        release.set()
        holder.join(WAIT)
    pusher.join(WAIT)
    assert drain(proxy) == [1]


def test_copies_past_the_inbox_bound_are_queued_by_the_supplier(channel: Any) -> None:
    """Nobody pulls: past the inbox's bound the supplier folds it in itself, so
    MaxEventsPerConsumer keeps memory bounded; the oldest are discarded (FIFO)."""
    proxy = pull_proxy(channel)
    proxy.set_qos([_maximum(10)])
    supplier = entry(channel)
    for n in range(1100):
        supplier.push_structured_event(structured(fields={"n": n}))
    assert len(proxy._inbox) < 1024 and len(proxy._queue) == 10
    assert drain(proxy) == list(range(1090, 1100))


def test_a_blocking_pull_wakes_for_a_copy_in_the_inbox(channel: Any) -> None:
    """A pull waiting on an empty proxy returns the copy a supplier then offers."""
    proxy = pull_proxy(channel)
    supplier = entry(channel)
    waiting = threading.Event()
    wait = proxy._cond.wait

    def noted_wait(*args: Any) -> bool:
        waiting.set()
        return bool(wait(*args))

    proxy._cond.wait = noted_wait
    got: list[int] = []
    puller = threading.Thread(target=lambda: got.append(number(proxy.pull_structured_event())))
    puller.start()
    assert waiting.wait(WAIT)
    supplier.push_structured_event(structured(fields={"n": 7}))
    puller.join(WAIT)
    assert got == [7]


def test_counters_read_fold_the_inbox(channel: Any, factory: Any) -> None:
    """Counters are those of now: copies waiting in the inbox are queued, and what
    MaxEventsPerConsumer discards is counted, when the counters are read."""
    proxy = pull_proxy(channel)
    proxy.set_qos([_maximum(2)])
    supplier = entry(channel)
    for n in range(5):
        supplier.push_structured_event(structured(fields={"n": n}))
    assert len(proxy._inbox) == 5  # not yet folded
    [counters] = [p["counters"] for p in proxies(cosnotify.stats(factory), "pull supplier")]
    assert (counters["queued"], counters["discarded"], counters["depth"]) == (5, 3, 2)
    assert drain(proxy) == [3, 4]


class TestQoSChangesWithCopiesWaiting:
    """A QoS change applies from the change on (review 87): copies offered before it
    were queued under the policies they came under."""

    def test_a_new_discard_policy_leaves_earlier_discards_alone(self, channel: Any) -> None:
        proxy = pull_proxy(channel)
        proxy.set_qos([_maximum(2)])  # DiscardPolicy: the oldest first
        supplier = entry(channel)
        for n in range(5):
            supplier.push_structured_event(structured(fields={"n": n}))
        proxy.set_qos([N.Property("DiscardPolicy", CORBA.Any(CORBA.TC_short, N.LifoOrder))])
        assert drain(proxy) == [3, 4]

    def test_a_higher_limit_does_not_bring_back_what_was_discarded(self, channel: Any) -> None:
        proxy = pull_proxy(channel)
        proxy.set_qos([_maximum(2)])
        supplier = entry(channel)
        for n in range(5):
            supplier.push_structured_event(structured(fields={"n": n}))
        proxy.set_qos([_maximum(10)])
        assert drain(proxy) == [3, 4]


def test_a_sequence_push_proxy_wakes_its_sender_per_batch(channel: Any) -> None:
    """Sequence push proxies queue plain copies under the lock, so batching decides
    when the sender runs: ten events of one MaximumBatchSize wake it at most twice."""
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
        CA.SEQUENCE_EVENT)
    proxy.set_qos([N.Property("MaximumBatchSize", CORBA.Any(CORBA.TC_long, 10))])
    consumer = SequencePushConsumer()
    proxy.connect_sequence_push_consumer(consumer)
    deliver, tasks = proxy._deliver, []

    def counted() -> Any:
        tasks.append(1)
        return deliver()

    proxy._deliver = counted
    supplier = entry(channel)
    for n in range(10):
        supplier.push_structured_event(structured(fields={"n": n}))
        channel._service.dispatcher.wait_idle()
    assert consumer.wait_for(1)
    assert [number(e) for e in consumer.flat()] == list(range(10))
    assert len(tasks) <= 2


def test_an_unacknowledged_event_put_back_keeps_its_place() -> None:
    """An Ack pull proxy gives an unacknowledged event again after RetryInterval (§3.7.8)
    by putting it back at the head of its queue (review 88). Copies offered meanwhile
    go into the queue first, as if they had gone straight in: MaxEventsPerConsumer 2
    weighed them without the event out for acknowledgment, which is pulled again."""
    clock = ManualClock()
    with EventChannelFactory(clock=clock) as factory:
        channel, _ = factory.create_channel([], [])
        proxy, _ = ack_admin(channel).obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy.set_qos([_maximum(2)])
        proxy.connect_structured_pull_consumer(None)
        supplier = supplier_of(channel)
        supplier.push_structured_event(structured(fields={"n": 0}))
        first, _ = proxy.try_pull_structured_event()  # not acknowledged
        for n in (1, 2):
            supplier.push_structured_event(structured(fields={"n": n}))
        clock.advance(1.0)  # RetryInterval: 0 is put back
        channel._service.dispatcher.wait_idle()
        got = []
        while True:
            event, has_event = proxy.try_pull_structured_event()
            if not has_event:
                break
            got.append((sequence_number(event), number(event)))
        assert got == [(sequence_number(first), 0), (1, 1), (2, 2)]
