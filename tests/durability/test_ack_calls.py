"""Event Acknowledgment: what a push or pull call meets while it is under way.

Reviews 75-78's findings, each a test that failed before its fix: a consumer
that acknowledges, disconnects or switches acknowledgment during a push call
that then fails; a proxy torn down, or giving up, during a call; a resend
going back plain; a pull torn down between its take and its numbering; a
batch waiting to be pulled again; an acknowledge meeting a pull that took the
event, before a restart and after. Each released once, given again only if
still unacknowledged (docs/persistence.md, "Event Acknowledgment"). A second
holder of each event (``limited``) makes a double release show in the
channel's MaxQueueLength account. Time is a ManualClock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.counters import proxy_counts
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.store import MemoryStore, Store
from tests.channel.conftest import WAIT, number, structured
from tests.durability.conftest import (
    DURABLE_QOS,
    OFF,
    ON,
    Scripted,
    ack_admin,
    balanced,
    batch_of_two,
    let_go,
    limited,
    pull_all,
    scripted_push,
    sequence_number,
    step,
    supplier_of,
    timeout,
)
from tests.durability.test_ack import numbered

# -- review 75: what a push call's consumer does during the call ---------------------------


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
        given = numbered(consumer)
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
        # Counted delivered once, not again when it went plain (review 76).
        assert balanced(proxy) and proxy_counts(proxy)["delivered"] == 1
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
    """The same with the teardown being a best-effort Ack proxy giving up (Retries 0)
    on an unacknowledged number while the call was under way (on a worker: the clock's
    thread does not tear down). The batch is released once."""
    torn = threading.Event()

    def script(consumer: Scripted, n: int, event: Any) -> None:
        if n == 1:
            proxy = consumer.proxy
            teardown = proxy._teardown

            def announced(*args: Any, **kwargs: Any) -> None:
                teardown(*args, **kwargs)
                torn.set()

            proxy._teardown = announced
            clock.advance(1.0)  # RetryInterval: unanswered, Retries 0: it gives up
            torn.wait(WAIT)  # the teardown (on a worker) before this call fails
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
        admin.set_qos([N.Property("Retries", CORBA.Any(CORBA.TC_long, 0))])
        batch_of_two(factory, channel, admin, script, omniorb)
        assert torn.is_set()  # torn down while the call was under way
        step(factory, clock, 5)
        let_go(factory, other)
        assert channel._account.count == len(other._queue) == 0


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
        given = numbered(consumer)
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
        clock.advance(1.0)  # e0 due again, and expired (released by a worker)
        assert factory.service.dispatcher.wait_idle()
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
