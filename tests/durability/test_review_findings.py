"""Regressions from the adversarial review of the durability change (ae1f6c8).

Each test failed on that commit and shows one bug, now fixed: lost or
duplicated persistent events, SequenceNumber defects, MaxQueueLength
accounting, stale topology records. Interleavings are forced with store
subclasses whose hooks run at the racy moment, and time is a ManualClock.
"""
from __future__ import annotations

import threading
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import TimeBase

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.store import MemoryStore
from cosnotify.store.interface import Reason, StoreError
from tests.channel.conftest import (
    WAIT,
    SequencePushConsumer,
    StructuredPushConsumer,
    number,
    structured,
)
from tests.channel.test_references import _FlakyObject
from tests.durability.conftest import (
    ACK_QOS,
    DURABLE_QOS,
    PERSISTENT_QOS,
    sequence_number,
    supplier_of,
)


def short(v: int) -> Any:
    return CORBA.Any(CORBA.TC_short, v)


# -----------------------------------------------------------------------------------------
def test_supplier_ack_failed_push_is_dropped_on_resend() -> None:
    """supplier_ack._check_number advances _expected before the inject; when the inject
    fails (store full -> NO_RESOURCES) the supplier's resend of the same number is taken
    for a duplicate: dropped AND acknowledged. The event is lost."""
    store = MemoryStore(max_events=1)
    with EventChannelFactory(store=store) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        consumer = StructuredPushConsumer()
        out, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        out.connect_structured_push_consumer(consumer)
        out.suspend_connection()
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        proxy.set_qos(ACK_QOS[:1])
        proxy.connect_structured_push_supplier(None)

        def numbered(n: int, s: int) -> Any:
            return structured(fields={"n": n}, header=[
                N.Property("SequenceNumber", CORBA.Any(CORBA.TC_long, s))])

        proxy.push_structured_event(numbered(0, 0))
        with pytest.raises(CORBA.NO_RESOURCES):
            proxy.push_structured_event(numbered(1, 1))  # not accepted: supplier must resend
        out.resume_connection()
        assert consumer.wait_for(1)
        assert factory.service.dispatcher.wait_idle()
        proxy.push_structured_event(numbered(1, 1))  # the resend, room again
        assert consumer.wait_for(2)
        assert [number(e) for e in consumer.received] == [0, 1], "event 1 lost"


# 2 -----------------------------------------------------------------------------------------
def test_durable_ack_numbers_collide_with_best_effort_numbers() -> None:
    """ack._number: a stored copy is numbered by its store id (1, 2, ...), a best-effort
    copy on the same proxy by a counter from 0: two different events get the same
    SequenceNumber; _unacked[n] is overwritten."""
    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        admin, _ = channel.new_for_consumers(CA.AND_OP)
        admin.set_qos(ACK_QOS)
        proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        consumer = StructuredPushConsumer()
        proxy.connect_structured_push_consumer(consumer)
        supplier = supplier_of(channel)
        best_effort = [N.Property("EventReliability", short(0))]
        supplier.push_structured_event(structured(fields={"n": 0}))                      # stored id 1
        supplier.push_structured_event(structured(fields={"n": 1}, header=best_effort))  # number 0
        supplier.push_structured_event(structured(fields={"n": 2}, header=best_effort))  # number 1
        assert consumer.wait_for(3)
        assert factory.service.dispatcher.wait_idle()
        numbers = [sequence_number(e) for e in consumer.received]
        assert len(set(numbers)) == 3, f"SequenceNumbers {numbers}: two events share one"


# 3 -----------------------------------------------------------------------------------------
class RacingStore(MemoryStore):
    """Runs ``hook`` right after add_events commits, before EventLog.admit queues the
    copies: the interleaving of a delivery/pull thread refilling at that moment."""
    hook: Any = None

    def add_events(self, events: Any, marks: Any = None, releases: Any = None) -> list[int]:
        ids = super().add_events(events, marks, releases)
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        return ids


def test_refill_racing_admit_queues_the_event_twice() -> None:
    store = RacingStore()
    with EventChannelFactory(store=store) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        channel._event_log.window = 3
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        supplier = supplier_of(channel)
        for n in range(4):                       # 0..2 in memory, 3 spilled to disk
            supplier.push_structured_event(structured(fields={"n": n}))
        got = [number(proxy.try_pull_structured_event()[0]) for _ in range(3)]
        assert got == [0, 1, 2]
        store.hook = proxy._refill               # a concurrent pull refills here
        supplier.push_structured_event(structured(fields={"n": 4}))
        while True:
            event, ok = proxy.try_pull_structured_event()
            if not ok:
                break
            got.append(number(event))
        assert got == [0, 1, 2, 3, 4], f"delivered {got}"


# 4 -----------------------------------------------------------------------------------------
def _given_once_then_suspended(factory: EventChannelFactory, qos: list[Any]) -> Any:
    """An Ack push proxy that gave event 0 (not acknowledged), then was suspended."""
    channel, _ = factory.create_channel(qos, [])
    admin, _ = channel.new_for_consumers(CA.AND_OP)
    admin.set_qos(ACK_QOS)
    proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
    consumer = StructuredPushConsumer()
    proxy.connect_structured_push_consumer(consumer)
    supplier_of(channel).push_structured_event(structured(fields={"n": 0}))
    assert consumer.wait_for(1)
    assert factory.service.dispatcher.wait_idle()
    proxy.suspend_connection()
    return proxy, consumer


def test_resends_pile_up_while_suspended() -> None:
    """_ack_due appends every due number to _resends each RetryInterval even when the
    previous resend never went (suspended consumer): unbounded growth, and on resume
    the consumer gets the same number N times. (Durable proxy: it never gives up.)"""
    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        proxy, consumer = _given_once_then_suspended(factory, DURABLE_QOS)
        for _ in range(20):
            clock.advance(1.0)
        pending = len(proxy._resends)
        proxy.resume_connection()
        assert factory.service.dispatcher.wait_idle()
        assert pending <= 1, f"{pending} resends of one number queued"
        assert len(consumer.received) <= 2, f"consumer got number 0 {len(consumer.received)} times"


def test_a_suspended_ack_proxy_is_destroyed() -> None:
    """_ack_due counts an 'unanswered' round even while suspended (nothing was sent), so a
    best-effort Ack proxy whose consumer merely suspended is torn down after Retries+1
    RetryIntervals and its queued events discarded."""
    clock = ManualClock()
    with EventChannelFactory(clock=clock) as factory:
        proxy, _ = _given_once_then_suspended(factory, [])
        for _ in range(5):
            clock.advance(1.0)
            assert factory.service.dispatcher.wait_idle()  # a teardown runs on a worker
        assert not proxy._destroyed, "suspended consumer's proxy destroyed"


# 6 -----------------------------------------------------------------------------------------
def test_max_queue_length_is_not_enforced_for_persistent_events() -> None:
    """Staged (durable) copies are not held by the account during routing, so
    QueueAccount.admitted drops the count to 0 and the later hold() never counts:
    MaxQueueLength/RejectNewEvents are ignored, and count goes negative on delivery."""
    admin_props = [N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 3)),
                   N.Property("RejectNewEvents", CORBA.Any(CORBA.TC_boolean, True))]
    with EventChannelFactory(store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, admin_props)
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        supplier = supplier_of(channel)
        accepted = 0
        for n in range(10):
            try:
                supplier.push_structured_event(structured(fields={"n": n}))
                accepted += 1
            except CORBA.IMP_LIMIT:
                break
        assert accepted == 3, f"MaxQueueLength=3 but {accepted} events queued"


# 7 -----------------------------------------------------------------------------------------
def _durable_pull_with_timeout(clock: ManualClock, factory: EventChannelFactory) -> Any:
    channel, _ = factory.create_channel(DURABLE_QOS, [])
    channel._event_log.window = 1
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
        CA.STRUCTURED_EVENT)
    proxy.set_qos([N.Property("Timeout", CORBA.Any(TimeBase._tc_TimeT, 10_000_000))])  # 1 s
    proxy.connect_structured_pull_consumer(None)
    supplier = supplier_of(channel)
    for n in range(3):              # 0 in memory, 1 and 2 spilled to disk
        supplier.push_structured_event(structured(fields={"n": n}))
    clock.advance(5.0)              # all three are past the proxy's 1 s Timeout
    return proxy


def test_spilled_copy_loses_the_proxys_timeout() -> None:
    """durable._entry forces priority_source/lifetime_source = 2 ("from the header"), so a
    copy read back from disk skips the proxy supplier's own Timeout (and Priority) QoS:
    the in-memory copy expires, the spilled ones never do."""
    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        proxy = _durable_pull_with_timeout(clock, factory)
        got = []
        for _ in range(5):
            event, ok = proxy.try_pull_structured_event()
            if ok:
                got.append(number(event))
        assert got == [], f"expired events delivered: {got}"


def test_try_pull_says_empty_while_events_wait_on_disk() -> None:
    """_take refills only when ready() < limit *before* taking; an expired entry counts as
    ready, then get_batch drops it: try_pull answers has_event=False with events on disk."""
    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        proxy = _durable_pull_with_timeout(clock, factory)
        clock.advance(0)
        _event, ok = proxy.try_pull_structured_event()
        store = factory.service.topology.store
        assert ok or store.pending_count(proxy._durable_path()) == 0, \
            f"has_event=False with {store.pending_count(proxy._durable_path())} events stored"


def test_supplier_sequence_number_wrap_drops_everything_after() -> None:
    """supplier_ack docstring says only the wrap *across a restart* is not followed; in
    fact after 2^31-1 every later number (0, 1, ...) is < _expected and dropped forever."""
    with EventChannelFactory() as factory:
        channel, _ = factory.create_channel([], [])
        consumer = StructuredPushConsumer()
        out, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        out.connect_structured_push_consumer(consumer)
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        proxy.set_qos(ACK_QOS[:1])
        proxy.connect_structured_push_supplier(None)
        for n, s in ((0, 0x7FFFFFFF), (1, 0), (2, 1)):
            proxy.push_structured_event(structured(fields={"n": n}, header=[
                N.Property("SequenceNumber", CORBA.Any(CORBA.TC_long, s))]))
        assert consumer.wait_for(3)
        assert [number(e) for e in consumer.received] == [0, 1, 2]


# 9 -----------------------------------------------------------------------------------------
def test_sequence_pull_redelivery_merges_new_events_under_an_old_number() -> None:
    """_PullAck._redeliver ungets the batch; the next pull may take it together with new
    events and numbers the batch by its first entry: the new event arrives under a number
    the consumer has already seen, and a consumer that drops duplicates by SequenceNumber
    (section 3.7.7.1) drops it."""
    clock = ManualClock()
    with EventChannelFactory(clock=clock) as factory:
        channel, _ = factory.create_channel([], [])
        admin, _ = channel.new_for_consumers(CA.AND_OP)
        admin.set_qos(ACK_QOS)
        proxy, _ = admin.obtain_notification_pull_supplier(CA.SEQUENCE_EVENT)
        proxy.set_qos([N.Property("MaximumBatchSize", CORBA.Any(CORBA.TC_long, 10))])
        proxy.connect_sequence_pull_consumer(None)
        supplier = supplier_of(channel)
        supplier.push_structured_event(structured(fields={"n": 0}))
        first, _ = proxy.try_pull_structured_events(10)
        seen = {sequence_number(first[0])}
        supplier.push_structured_event(structured(fields={"n": 1}))
        clock.advance(1.0)                               # batch #0 due again
        again, _ = proxy.try_pull_structured_events(10)
        # Given again as it was, under its number; event 1 comes in a batch of its own.
        assert ([number(e) for e in again], sequence_number(again[0])) == ([0], sequence_number(first[0]))
        then, _ = proxy.try_pull_structured_events(10)
        assert [number(e) for e in then] == [1] and sequence_number(then[0]) not in seen


# 10 ----------------------------------------------------------------------------------------
def test_sequence_push_stalls_when_batch_size_exceeds_the_window() -> None:
    """A sequence proxy with PacingInterval 0 waits for MaximumBatchSize ready entries; the
    memory window caps them below that, refill finds no room (room <= 0) and retries every
    second forever: nothing is ever delivered although every event is stored."""
    with EventChannelFactory(store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        channel._event_log.window = 4
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.SEQUENCE_EVENT)
        proxy.set_qos([N.Property("MaximumBatchSize", CORBA.Any(CORBA.TC_long, 5))])
        consumer = SequencePushConsumer()
        proxy.connect_sequence_push_consumer(consumer)
        supplier = supplier_of(channel)
        for n in range(10):
            supplier.push_structured_event(structured(fields={"n": n}))
        assert consumer.wait_for(1), "no batch delivered: 10 events stored, window 4 < 5"


# 11 ----------------------------------------------------------------------------------------
def test_a_proxy_switched_to_best_effort_comes_back_after_a_crash() -> None:
    """Topology.save returns early once the proxy is no longer Persistent and never deletes
    the old record; after a crash (no clean close) the BestEffort proxy is resurrected, as
    Persistent, with its stale state."""

    store = MemoryStore()
    crashed = EventChannelFactory(store=store)
    channel, channel_id = crashed.create_channel(PERSISTENT_QOS, [])
    proxy, proxy_id = channel._get_default_consumer_admin().obtain_notification_push_supplier(
        CA.STRUCTURED_EVENT)
    proxy.set_qos([N.Property("ConnectionReliability", short(N.BestEffort))])
    # kill -9: no close(); a new process opens the same store
    with EventChannelFactory(store=store) as factory:
        admin = factory.get_event_channel(channel_id)._get_default_consumer_admin()
        assert proxy_id not in admin._get_push_suppliers(), \
            "a BestEffort proxy was restored from a stale record"
    crashed._service.close(wait=False)


# 12 ----------------------------------------------------------------------------------------
class PageHookStore(MemoryStore):
    """Runs ``hook`` right after a pending() page is read: another thread acting while
    EventLog._refill_page has the page but not yet the proxy lock."""
    hook: Any = None

    def pending(self, consumer: str, after: int = -1, limit: int = 1000) -> Any:
        page = super().pending(consumer, after, limit)
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        return page


def test_two_refills_requeue_an_event_delivered_in_between() -> None:
    """Two pullers refill at once: both read the same page (the id is in neither's
    resident snapshot), the first queues it and it is delivered and released (resident
    discards it), then the second re-checks against the live resident set, no longer
    holding the id, and queues it again: delivered twice without any crash."""
    store = PageHookStore()
    with EventChannelFactory(store=store) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        channel._event_log.window = 2
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.SEQUENCE_EVENT)
        proxy.set_qos([N.Property("MaximumBatchSize", CORBA.Any(CORBA.TC_long, 10))])
        proxy.connect_sequence_pull_consumer(None)
        supplier = supplier_of(channel)
        for n in range(3):                         # 0, 1 in memory; 2 on disk
            supplier.push_structured_event(structured(fields={"n": n}))
        got = [number(e) for e in proxy.try_pull_structured_events(2)[0]]   # 0, 1
        other: list[int] = []
        # puller B refills and takes event 2 while puller A's refill holds a page with it
        store.hook = lambda: other.extend(
            number(e) for e in proxy.try_pull_structured_events(10)[0])
        got += [number(e) for e in proxy.try_pull_structured_events(10)[0]]
        got += other
        assert sorted(got) == [0, 1, 2], f"delivered {sorted(got)}"


# 14 ----------------------------------------------------------------------------------------
def test_numbers_keyed_by_id_of_a_dead_entry_are_reused() -> None:
    """_Ack._numbers maps id(entry) -> number and is cleaned only on acknowledge. An entry
    that leaves another way (expired while waiting to be retried) leaves its key behind;
    a later Entry allocated at the same address inherits the old number, which the
    consumer may already have seen (the failed push may have reached it): dropped."""
    clock = ManualClock()
    with EventChannelFactory(clock=clock) as factory:
        channel, _ = factory.create_channel([], [])
        admin, _ = channel.new_for_consumers(CA.AND_OP)
        admin.set_qos(ACK_QOS + [N.Property("Retries", CORBA.Any(CORBA.TC_long, 100))])
        proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)

        class Flaky(StructuredPushConsumer):
            fail = 1

            def push_structured_event(self, e: Any) -> None:
                super().push_structured_event(e)          # it got there ...
                if self.fail:
                    self.fail -= 1
                    raise CORBA.TIMEOUT(0, CORBA.COMPLETED_MAYBE)  # ... but the reply did not

        consumer = Flaky()
        proxy.connect_structured_push_consumer(consumer)
        supplier = supplier_of(channel)
        timeout = [N.Property("Timeout", CORBA.Any(TimeBase._tc_TimeT, 1_000_000))]  # 0.1 s
        supplier.push_structured_event(structured(fields={"n": 0}, header=timeout))
        assert consumer.wait_for(1)
        assert factory.service.dispatcher.wait_idle()
        clock.advance(1.0)                      # expired while waiting for its retry
        assert factory.service.dispatcher.wait_idle()
        for n in range(1, 50):
            supplier.push_structured_event(structured(fields={"n": n}))
        assert consumer.wait_for(50)
        assert factory.service.dispatcher.wait_idle()
        numbers = [sequence_number(e) for e in consumer.received]
        assert len(set(numbers)) == len(numbers), f"numbers reused: {numbers[:8]}..."


# 15 ----------------------------------------------------------------------------------------
def test_channel_discard_of_a_durable_copy_leaks_resident_and_store() -> None:
    """EventChannel._discard (MaxQueueLength victim) removes queue entries without
    _released: a durable copy discarded this way stays in the store and in
    DurableQueue.resident for good. Once `window` ids leak, room <= 0 forever: every new
    event spills and refill never reads it back -> the proxy stalls."""
    admin_props = [N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 2))]
    with EventChannelFactory(store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, admin_props)
        channel._event_log.window = 4
        admin = channel._get_default_consumer_admin()
        durable, _ = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        durable.connect_structured_pull_consumer(None)
        plain, _ = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        plain.set_qos([N.Property("ConnectionReliability", short(N.BestEffort))])
        plain.connect_structured_pull_consumer(None)
        supplier = supplier_of(channel)
        for n in range(10):
            supplier.push_structured_event(structured(fields={"n": n}))
        got = []
        while True:
            event, ok = durable.try_pull_structured_event()
            if not ok:
                break
            got.append(number(event))
        store = factory.service.topology.store
        left = store.pending_count(durable._durable_path())
        resident = len(durable._queue.durable.resident)
        assert left == 0 and resident == 0, \
            f"pulled {got}; store still holds {left}, resident {resident} (discarded copies)"


# -- the second review (after 6ed3829) --------------------------------------------------------


class ReleaseHookStore(MemoryStore):
    """Runs ``hook`` at the start of release(): what another thread does while the
    release is on its way to the store (the resident set already forgot the id)."""
    hook: Any = None

    def release(self, consumer: str, event_ids: Any) -> None:
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        super().release(consumer, event_ids)


# ---------------------------------------------------------------------------------------
def test_pull_release_racing_a_refill_delivers_twice() -> None:
    """EventLog.released(defer=False) discards the id from durable.resident and only then
    writes store.release; a refill of the same proxy in between (another puller) finds
    the id neither resident nor in unreleased() and still pending: queued again."""
    store = ReleaseHookStore()
    with EventChannelFactory(store=store) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        channel._event_log.window = 2
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        supplier = supplier_of(channel)
        for n in range(3):                        # 0, 1 in memory; 2 on disk
            supplier.push_structured_event(structured(fields={"n": n}))
        got = [number(proxy.try_pull_structured_event()[0])]          # 0
        other: list[int] = []

        def concurrent_puller() -> None:
            while True:
                event, ok = proxy.try_pull_structured_event()
                if not ok:
                    return
                other.append(number(event))
        store.hook = None
        # Puller A takes 1; while its release is on its way, puller B pulls.
        store.hook = concurrent_puller
        got.append(number(proxy.try_pull_structured_event()[0]))     # 1
        got += other
        while True:
            event, ok = proxy.try_pull_structured_event()
            if not ok:
                break
            got.append(number(event))
        assert sorted(got) == [0, 1, 2], f"delivered {sorted(got)}"


def _batch(n: int) -> Any:
    return N.Property("MaximumBatchSize", CORBA.Any(CORBA.TC_long, n))


# 2 ---------------------------------------------------------------------------------------
def test_events_read_back_overtake_older_ones_still_in_memory() -> None:
    """durable._event gives a read-back event seq = id - 2**62, below every live event,
    and a sequence proxy refills while live (older) copies are still queued (pull:
    ready < limit; push: a batch not yet full). FifoOrder is broken: 2, 3 before 1."""
    store = MemoryStore()
    with EventChannelFactory(store=store) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        channel._event_log.window = 2
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.SEQUENCE_EVENT)
        proxy.set_qos([_batch(2), N.Property("OrderPolicy", CORBA.Any(CORBA.TC_short,
                                                                      N.FifoOrder))])
        proxy.connect_sequence_pull_consumer(None)
        supplier = supplier_of(channel)
        for n in range(4):                        # 0, 1 in memory; 2, 3 on disk
            supplier.push_structured_event(structured(fields={"n": n}))
        got = [number(e) for e in proxy.try_pull_structured_events(1)[0]]        # [0]
        for _ in range(3):
            got += [number(e) for e in proxy.try_pull_structured_events(2)[0]]
        assert got == [0, 1, 2, 3], f"delivered in the order {got}"


def _numbered(n: int, seq: int) -> Any:
    return structured(fields={"n": n}, header=[
        N.Property("SequenceNumber", CORBA.Any(CORBA.TC_long, seq))])


# 3 ---------------------------------------------------------------------------------------
def test_supplier_numbers_after_the_wrap_are_dropped_after_a_restart() -> None:
    """supplier_ack._numbered_push stores mark = number + 1 unmasked, with raise_value
    (never lowers). Past the wrap the counter stays at 2**31 for ever; after a restart
    expected = 2**31 and every number in (2**30, 2**31) is 'older': dropped (and
    acknowledged to the supplier) -- lost. Steps of < 2**30 stand in for ~1.5e9 pushes."""
    store = MemoryStore()
    factory = EventChannelFactory(store=store)
    channel, channel_id = factory.create_channel(DURABLE_QOS, [])
    out, out_id = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
        CA.STRUCTURED_EVENT)
    out.connect_structured_pull_consumer(None)
    proxy, proxy_id = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    proxy.set_qos([N.Property("DeliveryReliability", CORBA.Any(CORBA.TC_short, 1))])
    proxy.connect_structured_push_supplier(None)
    for n, seq in enumerate((0x7FFFFFFF, 0, 1_000_000_000, 1_500_000_000)):
        proxy.push_structured_event(_numbered(n, seq))
    factory.close()

    factory = EventChannelFactory(store=store)               # the restart
    try:
        channel = factory.get_event_channel(channel_id)
        proxy = channel._get_default_supplier_admin().get_proxy_consumer(proxy_id)
        out = channel._get_default_consumer_admin().get_proxy_supplier(out_id)
        proxy.push_structured_event(_numbered(4, 1_500_000_001))   # the next, new one
        got = []
        while True:
            event, ok = out.try_pull_structured_event()
            if not ok:
                break
            got.append(number(event))
        assert got == [0, 1, 2, 3, 4], f"delivered {got}"
    finally:
        factory.close()


# 4 ---------------------------------------------------------------------------------------
def test_a_refused_sequence_leaks_its_staged_events_in_max_queue_length() -> None:
    """EventChannel._forward_all stages every persistent event of a supplier's sequence
    (each reserving a MaxQueueLength slot and holding it) and admits them at the end.
    When a later event of the batch is refused (RejectNewEvents: IMP_LIMIT from
    account.reserve), the exception skips admit/_not_admitted: the staged events are
    neither stored nor released, and their slots are held for ever."""
    admin = [N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 2)),
             N.Property("RejectNewEvents", CORBA.Any(CORBA.TC_boolean, True))]
    with EventChannelFactory(store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, admin)
        out, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        out.connect_structured_pull_consumer(None)
        seq, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.SEQUENCE_EVENT)
        seq.connect_sequence_push_supplier(None)
        with pytest.raises(CORBA.IMP_LIMIT):
            seq.push_structured_events([structured(fields={"n": n}) for n in range(3)])
        # Those before the refused one were accepted (as on a best-effort channel) ...
        assert [number(out.try_pull_structured_event()[0]) for _ in range(2)] == [0, 1]
        assert out.try_pull_structured_event()[1] is False
        # ... and once they are gone the channel takes events again (no slot leaked).
        supplier = supplier_of(channel)
        supplier.push_structured_event(structured(fields={"n": 10}))
        assert number(out.try_pull_structured_event()[0]) == 10


# 5 ---------------------------------------------------------------------------------------
def test_a_proxy_switched_to_best_effort_leaves_its_events_in_the_store_for_ever() -> None:
    """Topology.save deletes the record of a proxy switched to BestEffort, but its stored
    copies stay pending under its path. After a restart nothing owns that path: no
    proxy will ever release or drop it, and nothing sweeps consumers() at restore."""
    store = MemoryStore()
    factory = EventChannelFactory(store=store)
    channel, _ = factory.create_channel(DURABLE_QOS, [])
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_pull_consumer(None)
    supplier = supplier_of(channel)
    for n in range(3):
        supplier.push_structured_event(structured(fields={"n": n}))
    path = proxy._durable_path()
    proxy.set_qos([N.Property("ConnectionReliability", CORBA.Any(CORBA.TC_short,
                                                                 N.BestEffort))])
    # kill -9: no close() (a clean close destroys the BestEffort proxy, dropping them)
    with EventChannelFactory(store=store):
        assert path not in store.consumers(), \
            f"{store.pending_count(path)} events pending for {path}, which no longer exists"
    factory._service.close(wait=False)


# 6 ---------------------------------------------------------------------------------------
def test_a_failed_number_reservation_stops_a_sequence_ack_proxy_for_ever() -> None:
    """SequenceProxyPushSupplierAck._send calls _count() (store.raise_value every 10,000
    numbers) outside its try: a StoreError (a full store, which docs/persistence.md says
    the channel goes on from) escapes _deliver, the worker logs it, _scheduled stays
    True and the batch -- taken from the queue, still resident -- is never sent."""
    from cosnotify.store.interface import Reason, StoreError
    from tests.channel.conftest import SequencePushConsumer

    class FlakyStore(MemoryStore):
        fail = False

        def raise_value(self, name: str, at_least: int) -> None:
            if self.fail and name.startswith("ack/"):
                raise StoreError(Reason.FULL, "full")
            super().raise_value(name, at_least)

    store = FlakyStore()
    with EventChannelFactory(store=store) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        admin, _ = channel.new_for_consumers(CA.AND_OP)
        admin.set_qos([N.Property("DeliveryReliability", CORBA.Any(CORBA.TC_short, 1))])
        proxy, _ = admin.obtain_notification_push_supplier(CA.SEQUENCE_EVENT)
        consumer = SequencePushConsumer()
        proxy.connect_sequence_push_consumer(consumer)
        supplier = supplier_of(channel)
        store.fail = True                          # the store is full for a moment
        supplier.push_structured_event(structured(fields={"n": 0}))
        factory._service.dispatcher.wait_idle()
        store.fail = False                         # room again
        supplier.push_structured_event(structured(fields={"n": 1}))
        assert consumer.wait_for(2, timeout=3.0), \
            f"delivered {[[number(e) for e in b] for b in consumer.received]}"


# 7 ---------------------------------------------------------------------------------------
def test_an_event_record_of_the_previous_format_is_not_read_as_such(omniorb: Any) -> None:
    """codec._HEADER changed from <BBdhdd (ae1f6c8, 9778c2f) to <BBdhBdBdd: records of
    the first layout (version 1) must still be read as such (now version 2)."""
    import math
    import struct

    import omniORB

    from cosnotify.channel import codec

    body = omniORB.cdrMarshal(codec._TC_STRUCTURED, structured(fields={"n": 7}))
    old = struct.Struct("<BBdhdd").pack(1, 1, 1_700_000_000.0, 3, math.nan, math.nan)
    value, fields = codec.decode_event(old + bytes(body))  # version 1 is still read
    assert number(value) == 7 and fields["priority"] == 3, f"misread: {fields}"
    assert fields["stop_time"] is None and fields["start"] is None
    assert number(codec.decode_value(old + bytes(body))) == 7  # the value alone, too


def test_the_value_alone_reads_as_the_whole_record_does(omniorb: Any) -> None:
    """codec.decode_value (a history query's read) gives decode_event's value for a
    record of each kind: a Structured Event, an Any, and an unknown version refused."""
    from omniORB import CORBA

    from cosnotify.channel import codec
    from cosnotify.channel.event import from_any, from_structured

    record = codec.encode_event(from_structured(structured(fields={"n": 5}), 1.0))
    assert number(codec.decode_value(record)) == number(codec.decode_event(record)[0]) == 5
    record = codec.encode_event(from_any(CORBA.Any(CORBA.TC_long, 9), 1.0))
    assert codec.decode_value(record).value() == codec.decode_event(record)[0].value() == 9
    with pytest.raises(ValueError, match="version 3"):
        codec.decode_value(b"\x03" + record[1:])


# 8 ---------------------------------------------------------------------------------------
def test_a_reconnected_supplier_starting_again_at_0_is_dropped() -> None:
    """--allow-reconnect (9778c2f): connect_* on a connected proxy push consumer makes a
    new logical connection, whose SequenceNumbers start at 0 (section 3.7.5). The proxy
    keeps _expected (and the stored ack/<path> counter, and _ack_client: acks go to the
    old supplier): the new supplier's events 0..4 are 'resends', dropped and acked."""
    from cosnotify.channel.service import ServiceConfig

    config = ServiceConfig(allow_reconnect=True)
    with EventChannelFactory(config, store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        out, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        out.connect_structured_pull_consumer(None)
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        proxy.set_qos([N.Property("DeliveryReliability", CORBA.Any(CORBA.TC_short, 1))])
        proxy.connect_structured_push_supplier(None)
        for n in range(5):
            proxy.push_structured_event(_numbered(n, n))
        proxy.connect_structured_push_supplier(None)          # the supplier restarted
        for n in range(5, 8):
            proxy.push_structured_event(_numbered(n, n - 5))  # 0, 1, 2 again
        got = []
        while True:
            event, ok = out.try_pull_structured_event()
            if not ok:
                break
            got.append(number(event))
        assert got == list(range(8)), f"delivered {got}"


# 10 --------------------------------------------------------------------------------------
def test_a_sequence_larger_than_max_queue_length_is_not_discarded() -> None:
    """_forward_all stages the whole batch before storing it: the victims account.reserve
    picks for the later events are the batch's own staged events, whose entries have no
    owner yet, so _discard removes nothing -- and admit then queues them anyway, as
    uncounted. MaxQueueLength=2 (discard oldest) holds 5 events."""
    admin = [N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 2))]
    with EventChannelFactory(store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, admin)
        out, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        out.connect_structured_pull_consumer(None)
        seq, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.SEQUENCE_EVENT)
        seq.connect_sequence_push_supplier(None)
        seq.push_structured_events([structured(fields={"n": n}) for n in range(5)])
        assert len(out._queue) <= 2, f"{len(out._queue)} events queued, " \
            f"account.count={channel._account.count}"


def test_a_copy_queued_in_a_batch_goes_before_the_later_ones_left_on_disk() -> None:
    """Review 62: a supply call's copies for one proxy, admitted together, must be
    queued before any later copy is left on disk. Once the proxy is on disk the
    delivery worker reads later copies back and sends them; a copy decided for
    memory but not yet queued then went after them (delivered 0, 2, 1)."""
    gate, entered = threading.Event(), threading.Event()

    class Gated(StructuredPushConsumer):
        def push_structured_event(self, event: Any) -> None:
            if number(event) == 0:
                entered.set()
                assert gate.wait(WAIT), "the gate never opened"
            super().push_structured_event(event)

    with EventChannelFactory(store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        channel._event_log.window = 2
        consumer = Gated()
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(consumer)
        supplier, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.SEQUENCE_EVENT)
        supplier.connect_sequence_push_supplier(None)
        supplier.push_structured_events([structured(fields={"n": 0})])
        assert entered.wait(WAIT)  # 0 in flight: it fills half the window
        enqueue = proxy._enqueue

        def enqueue_late(entry: Any, now: float, held: bool = False) -> Any:
            # Event 1 was decided for memory; if 2 is already on disk, let the worker
            # run until it has delivered twice before 1 is queued (the race, forced).
            if proxy._queue.durable.spilled and not gate.is_set():
                gate.set()
                consumer.wait_for(2)
            return enqueue(entry, now, held)

        proxy._enqueue = enqueue_late
        supplier.push_structured_events([structured(fields={"n": 1}), structured(fields={"n": 2})])
        gate.set()
        assert consumer.wait_for(3)
        with consumer.cond:
            assert [number(event) for event in consumer.received] == [0, 1, 2]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_release_the_store_refused_is_not_given_again(kind: str, tmp_path: Any) -> None:
    """Review 72: a release the store refused was forgotten, so the next refill read the
    delivered copies back from the store and gave them again, in the same process
    (docs/persistence.md allows that only after a restart). Now the release waits to
    be written again, and no refill reads those copies meanwhile."""
    from cosnotify.store.interface import Reason, StoreError
    from cosnotify.store.sqlite import SQLiteStore

    store: Any = MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / "s.db")
    clock = ManualClock()
    try:
        with EventChannelFactory(clock=clock, store=store) as factory:
            channel, _ = factory.create_channel(DURABLE_QOS, [])
            channel._event_log.window = 2  # two copies in memory, the rest on disk
            proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
                CA.STRUCTURED_EVENT)
            proxy.connect_structured_pull_consumer(None)
            supplier = supplier_of(channel)
            for n in range(4):
                supplier.push_structured_event(structured(fields={"n": n}))
            real, refused = store.release, []

            def release(consumer: str, ids: Any) -> None:
                if not refused:
                    refused.append(list(ids))
                    raise StoreError(Reason.IO, "injected: database is locked")
                real(consumer, ids)

            store.release = release
            pulled = []
            while True:
                event, ok = proxy.try_pull_structured_event()
                if not ok:
                    break
                pulled.append(number(event))
            assert refused and pulled == [0, 1, 2, 3]
            clock.advance(5.0)  # the refused release is written again
            assert factory.service.dispatcher.wait_idle()
            assert store.pending_count(proxy._durable_path()) == 0
    finally:
        if kind == "sqlite":
            store.close()


# review 101 --------------------------------------------------------------------------------
def test_a_durable_proxy_backs_off_past_a_thousand_failures() -> None:
    """A durable proxy never gives up on its consumer (section 2.5.5.1); its backoff's
    exponent is bounded, so its 1,025th failure still schedules a retry (review 102:
    2 ** 1024 raised OverflowError and delivery stopped for good, about 8.5 hours into
    an outage at the default RetryInterval)."""
    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        admin, _ = channel.new_for_consumers(CA.AND_OP)
        proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        consumer = _FlakyObject(failures=2)
        proxy.connect_structured_push_consumer(consumer)
        proxy._failures = 2_000                       # as after a long outage
        supplier_of(channel).push_structured_event(structured(fields={"n": 1}))
        for _ in range(10):
            assert factory.service.dispatcher.wait_idle()
            if consumer.received:
                break
            clock.advance(factory.service.config.max_backoff)
        assert len(consumer.received) == 1 and consumer.calls == 3 and not proxy._destroyed


def test_a_record_not_restored_keeps_its_stored_events(tmp_path: Any) -> None:
    """A start that cannot restore a proxy (its admin's record unreadable: logged and
    skipped) keeps the proxy's stored events, so a later start that can read the record
    brings them back (review 101: they were dropped as a gone consumer's)."""
    import sqlite3

    from cosnotify.store.sqlite import SQLiteStore

    path = tmp_path / "s.db"
    with EventChannelFactory(store=SQLiteStore(path)) as factory:
        channel, channel_id = factory.create_channel(DURABLE_QOS, [])
        admin, admin_id = channel.new_for_consumers(CA.AND_OP)
        proxy, proxy_id = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        supplier = supplier_of(channel)
        for n in range(3):
            supplier.push_structured_event(structured(fields={"n": n}))
    admin_path = f"ch/{channel_id}/ca/{admin_id}"

    def admin_record(data: bytes | None = None) -> bytes:
        with sqlite3.connect(path) as conn:
            if data is not None:
                conn.execute("UPDATE records SET data = ? WHERE path = ?", (data, admin_path))
            found: bytes = conn.execute("SELECT data FROM records WHERE path = ?",
                                        (admin_path,)).fetchone()[0]
        return found

    good = admin_record()
    admin_record(b"not json")
    with EventChannelFactory(store=SQLiteStore(path)) as factory, pytest.raises(
            CA.AdminNotFound):  # the admin's record is skipped
        factory.get_event_channel(channel_id).get_consumeradmin(admin_id)
    admin_record(good)
    with EventChannelFactory(store=SQLiteStore(path)) as factory:
        back = factory.get_event_channel(channel_id).get_consumeradmin(
            admin_id).get_proxy_supplier(proxy_id)
        pulled = [back.try_pull_structured_event() for _ in range(2)]
        assert [number(event) for event, ok in pulled if ok] == [0, 1]
    # With its admin's record gone, no start can restore the proxy: its events go
    # (review 102: they were kept for ever).
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM records WHERE path = ?", (admin_path,))
    store = SQLiteStore(path)
    with EventChannelFactory(store=store):
        assert store.consumers() == []


def test_a_record_the_store_refuses_leaves_no_object_behind() -> None:
    """A proxy or a channel whose record the store refuses (disk full: NO_RESOURCES) is
    not made (review 101: both stayed in memory -- the proxy unreachable, counted in the
    admin's limits; the channel gone at the next start)."""
    from cosnotify.store.interface import Reason, StoreError

    class FullStore(MemoryStore):
        full = False

        def put(self, record: Any) -> None:
            if self.full:
                raise StoreError(Reason.FULL, "disk full")
            super().put(record)

    store = FullStore()
    with EventChannelFactory(store=store) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        admin = channel._get_default_consumer_admin()
        store.full = True
        with pytest.raises(CORBA.NO_RESOURCES):
            admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        with pytest.raises(CORBA.NO_RESOURCES):
            factory.create_channel(DURABLE_QOS, [])
        assert admin._get_pull_suppliers() == []
        assert factory.get_all_channels() == [channel._id]
        store.full = False
        _, proxy_id = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        assert admin._get_pull_suppliers() == [proxy_id]


class BreakingStore(MemoryStore):
    """pending() raises StoreError(DAMAGED) while ``broken``."""
    broken = False

    def pending(self, consumer: str, after: int = -1, limit: int = 1000) -> Any:
        if self.broken:
            raise StoreError(Reason.DAMAGED, "store.db: pending: the file is damaged")
        return super().pending(consumer, after, limit)


def test_a_store_that_cannot_be_read_back_is_logged_once_and_counted(
        caplog: pytest.LogCaptureFixture) -> None:
    """Review 145: a refill that met a damaged store logged it at ERROR at every try, for
    ever. Now: one ERROR line until a read succeeds again, and every failure counted."""
    store = BreakingStore()
    with EventChannelFactory(store=store) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        log = channel._event_log
        log.window = 2
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.SEQUENCE_EVENT)
        proxy.set_qos([N.Property("MaximumBatchSize", CORBA.Any(CORBA.TC_long, 2))])
        proxy.connect_sequence_pull_consumer(None)
        supplier = supplier_of(channel)
        for n in range(6):                         # the first few in memory, the rest on disk
            supplier.push_structured_event(structured(fields={"n": n}))
        store.broken = True
        caplog.clear()
        first = [number(e) for e in proxy.try_pull_structured_events(2)[0]]
        assert first == list(range(len(first))) and len(first) < 6
        for _ in range(3):
            assert proxy.try_pull_structured_events(2)[0] == []
        errors = [r for r in caplog.records if "could not be read" in r.getMessage()]
        assert len(errors) == 1 and errors[0].levelname == "ERROR"
        assert log.read_failures >= 3
        store.broken = False
        rest: list[int] = []
        for _ in range(3):
            rest += [number(e) for e in proxy.try_pull_structured_events(2)[0]]
        assert first + rest == list(range(6))
        assert any("can be read again" in r.getMessage() for r in caplog.records)
