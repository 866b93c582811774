"""Regressions for the findings of a spec-conformance review of the channel.

Each test pins one behaviour that was wrong once; the docstring says which.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import TimeBase

from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.service import ServiceConfig
from cosnotify.store import MemoryStore
from tests.channel.conftest import (
    WAIT,
    CountingFilter,
    PullSupplier,
    SequencePushConsumer,
    StructuredPushConsumer,
    number,
    structured,
)
from tests.channel.test_queue_count import mapping_filter
from tests.qos.test_channel_qos import drain, pull_proxy


def prop(name: str, value: int, tc: Any = CORBA.TC_short) -> Any:
    return N.Property(name, CORBA.Any(tc, value))


def entry(channel: Any) -> Any:
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_push_supplier(None)
    return proxy


def _pull_proxies(channel: Any, n: int, mapped: bool = True) -> list[Any]:
    proxies = [pull_proxy(channel) for _ in range(n)]
    if mapped:  # each copy an Entry through _enqueue (hold), not a plain copy
        mapping = mapping_filter()
        for proxy in proxies:
            proxy._set_priority_filter(mapping)
    return proxies


_DURABLE = [prop("ConnectionReliability", N.Persistent), prop("EventReliability", N.Persistent)]


_REJECT = [prop("RejectNewEvents", True, CORBA.TC_boolean)]
_BEST_EFFORT_HDR = [N.Property("EventReliability", CORBA.Any(CORBA.TC_short, N.BestEffort))]


def _limit(n: int) -> list[Any]:
    return [prop("MaxQueueLength", n, CORBA.TC_long)]


def _on_first_commit(channel: Any, action: Any) -> list[bool]:
    """Run ``action`` once, right after the store commits the channel's first events
    (as a concurrent set_admin or consumer would while a supplier's call is stored)."""
    store = channel._event_log._store
    add_events, fired = store.add_events, []

    def commit_then_act(*args: Any, **kwargs: Any) -> Any:
        ids = add_events(*args, **kwargs)
        if not fired:
            fired.append(True)
            action()
        return ids

    store.add_events = commit_then_act
    return fired


def _after_copies(proxies: list[Any], copies: int, action: Any) -> list[Any]:
    """Run ``action(proxy)`` once, right after ``proxies`` have taken ``copies``
    copies between them (``proxy`` took the last): as a concurrent set_admin or
    consumer would while an event is being routed. The list of proxies it ran for."""
    taken: list[Any] = []
    fired: list[Any] = []
    for proxy in proxies:
        accept = proxy.accept

        def accept_then_act(event: Any, now: float, _p: Any = proxy, _a: Any = accept) -> Any:
            got = _a(event, now)
            taken.append(got)
            if len(taken) == copies and not fired:
                fired.append(_p)
                action(_p)
            return got

        proxy.accept = accept_then_act
    return fired


def settle(channel: Any) -> None:
    assert channel._service.dispatcher.wait_idle()


class TestLocking:
    def test_set_qos_and_creation_do_not_deadlock(self, channel: Any) -> None:
        """set_qos (QoS lock, then object lock) against creating children (object lock, then
        the parent's QoS lock) once deadlocked: both now take the object lock first."""
        stop = threading.Event()
        admin = channel._get_default_consumer_admin()

        def tune() -> None:
            while not stop.is_set():
                channel.set_qos([prop("Priority", 1)])
                admin.set_qos([prop("Priority", 2)])

        def create() -> None:
            for _ in range(300):
                channel.new_for_consumers(CA.OR_OP)[0].destroy()
                admin.obtain_notification_pull_supplier(CA.ANY_EVENT)[0]._destroy()

        tuner, creator = threading.Thread(target=tune), threading.Thread(target=create)
        tuner.start()
        creator.start()
        creator.join(60)
        stop.set()
        tuner.join(60)
        assert not creator.is_alive() and not tuner.is_alive()


class TestQueueAccounting:
    def test_count_returns_to_zero_after_racing_deliveries(self, factory: Any) -> None:
        """MaxQueueLength's count once drifted up when a copy was delivered before routing
        had finished; RejectNewEvents then refused every push."""
        channel, _ = factory.create_channel([], [prop("MaxQueueLength", 1000, CORBA.TC_long),
                                                 prop("RejectNewEvents", True, CORBA.TC_boolean)])
        sinks = []
        for _ in range(2):
            sink = StructuredPushConsumer()
            proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
                CA.STRUCTURED_EVENT)
            proxy.connect_structured_push_consumer(sink)
            sinks.append(sink)
        supplier = entry(channel)
        # Rounds of 400, so the channel never holds MaxQueueLength events however slow
        # the consumers are (a full channel rightly rejects pushes); within a round,
        # deliveries race with routing.
        for first in range(0, 3000, 400):
            for n in range(first, min(first + 400, 3000)):
                supplier.push_structured_event(structured(fields={"n": n}))
            assert all(sink.wait_for(min(first + 400, 3000)) for sink in sinks)
        settle(channel)
        assert channel._account.count == 0

    @pytest.mark.parametrize("kind", ["plain", "mapped", "persistent"])
    def test_limit_set_while_an_event_is_routed(self, kind: str) -> None:
        """MaxQueueLength set by set_admin while an event was being routed: copies offered
        after it counted an event the count never held, and releasing them took the
        count to -1 for good (a copy with a mapping filter of its own is an entry,
        read the limit per copy). A persistent copy must not be taken for one the limit
        discarded either. Forced in order: the router's answer is worked out, then the
        limit is set, then the copies are offered."""
        with EventChannelFactory(ServiceConfig(routing="index"),
                                 store=MemoryStore() if kind == "persistent" else None) as made:
            self._limit_set_while_routed(made, kind)

    def _limit_set_while_routed(self, factory: Any, kind: str) -> None:
        channel, _ = factory.create_channel(_DURABLE if kind == "persistent" else [], [])
        proxies = _pull_proxies(channel, 3, mapped=kind == "mapped")
        router, limited = channel._router, []
        receivers = router.receivers

        def limit_meanwhile(event: Any) -> Any:
            found = receivers(event)
            if not limited:
                limited.append(True)
                channel.set_admin(_limit(100))
            return found

        router.receivers = limit_meanwhile
        supplier = entry(channel)
        for n in (1, 2):
            supplier.push_structured_event(structured(fields={"n": n}))
        for proxy in proxies:
            got = [proxy.try_pull_structured_event() for _ in range(3)]
            assert [number(event) for event, has in got if has] == [1, 2]
        assert channel._account.count == 0

    def test_self_discard_does_not_occupy_the_channel(self, factory: Any) -> None:
        """An event MaxEventsPerConsumer discards on arrival (LifoOrder) no longer counts."""
        channel, _ = factory.create_channel([], [prop("MaxQueueLength", 3, CORBA.TC_long),
                                                 prop("RejectNewEvents", True, CORBA.TC_boolean)])
        pull, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        pull.connect_structured_pull_consumer(None)
        pull.set_qos([prop("MaxEventsPerConsumer", 1, CORBA.TC_long),
                      prop("DiscardPolicy", N.LifoOrder)])
        supplier = entry(channel)
        for n in range(5):
            supplier.push_structured_event(structured(fields={"n": n}))
        assert channel._account.count == pull.pending == 1

    def test_full_channel_keeps_pulled_events(self, factory: Any) -> None:
        """RejectNewEvents TRUE: a pulled batch that does not fit waits instead of being lost."""
        channel, _ = factory.create_channel([], [prop("MaxQueueLength", 2, CORBA.TC_long),
                                                 prop("RejectNewEvents", True, CORBA.TC_boolean)])
        out, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        out.connect_structured_pull_consumer(None)
        supplier = PullSupplier([structured(fields={"n": n}) for n in range(5)])
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_pull_consumer(
            CA.SEQUENCE_EVENT)
        proxy.set_qos([prop("MaximumBatchSize", 5, CORBA.TC_long)])
        proxy.connect_sequence_pull_supplier(supplier)
        got = [number(out.pull_structured_event()) for _ in range(5)]
        assert got == [0, 1, 2, 3, 4]


class TestQueueAccountingWhileTheLimitChanges:
    """Review 91's reproductions: MaxQueueLength set, or turned off and on, while an
    event is routed or its persistent copies are committed. Forced in order with
    hooks, as a concurrent set_admin and consumer would."""

    def test_limit_set_then_first_copy_delivered_mid_routing(self) -> None:
        """The limit is set while E is routed, E's first copy already queued (the
        count takes it on: 1); that copy is pulled before routing offers the others
        (0). The later copies must not count an event the count no longer holds:
        their releases once took the count to -1."""
        with EventChannelFactory(ServiceConfig(routing="index")) as made:
            channel, _ = made.create_channel([], [])
            proxies = _pull_proxies(channel, 3)

            def meanwhile(first: Any) -> None:
                channel.set_admin(_limit(100))
                assert channel._account.count == 1  # adopted
                assert drain(first) == [1]  # its consumer pulls it meanwhile

            fired = _after_copies(proxies, 1, meanwhile)
            entry(channel).push_structured_event(structured(fields={"n": 1}))
            assert fired
            for proxy in proxies:
                drain(proxy)
            assert channel._account.count == 0

    def test_adopted_event_discarded_mid_routing(self) -> None:
        """As above, but the counted event is the limit's victim (MaxQueueLength 1, a
        new event arrives) before routing offers E's later copies: they must not be
        queued (E was discarded from every queue), nor count it again (the count once
        ended at -1)."""
        with EventChannelFactory(ServiceConfig(routing="index")) as made:
            channel, _ = made.create_channel([], [])
            proxies = _pull_proxies(channel, 3)
            supplier = entry(channel)

            def meanwhile(first: Any) -> None:
                channel.set_admin(_limit(1))
                supplier.push_structured_event(structured(fields={"n": 2}))

            fired = _after_copies(proxies, 1, meanwhile)
            supplier.push_structured_event(structured(fields={"n": 1}))
            assert fired
            assert [drain(proxy) for proxy in proxies] == [[2], [2], [2]]
            assert channel._account.count == 0

    @pytest.mark.parametrize(("initial", "changes"), [(0, [100]), (100, [0, 100])],
                             ids=["limit-set", "limit-off-and-on"])
    def test_a_stored_copy_nothing_discarded_is_queued(self, initial: int,
                                                       changes: list[int]) -> None:
        """A persistent channel, proxy A persistent and B best effort. While E is
        committed (A's copy staged, B's queued), the limit is set, or turned off and
        on, and B pulls E. A's stored copy must still be queued: nothing discarded E
        (a copy was once refused when no copy of its event was counted any more)."""
        with EventChannelFactory(ServiceConfig(routing="index"), store=MemoryStore()) as made:
            channel, _ = made.create_channel(_DURABLE, _limit(initial) if initial else [])
            a, b = _pull_proxies(channel, 2, mapped=False)
            b.set_qos([prop("ConnectionReliability", N.BestEffort)])

            def meanwhile() -> None:
                for limit in changes:
                    channel.set_admin(_limit(limit))
                assert drain(b) == [1]

            fired = _on_first_commit(channel, meanwhile)
            entry(channel).push_structured_event(structured(fields={"n": 1}))
            assert fired
            assert drain(a) == [1]
            assert channel._account.count == 0

    def test_limit_off_then_on_while_staged_only(self) -> None:
        """Limit on, E's only copy (A's, persistent) staged and held. During the commit
        the limit goes off and on (E is in no queue: the new count does not take it
        on). A's delivery must not release E from the new count (it once went to -1:
        counting starts again in a new epoch, channel/account.py)."""
        with EventChannelFactory(ServiceConfig(routing="index"), store=MemoryStore()) as made:
            channel, _ = made.create_channel(_DURABLE, _limit(100))
            (a,) = _pull_proxies(channel, 1, mapped=False)

            def meanwhile() -> None:
                channel.set_admin(_limit(0))
                channel.set_admin(_limit(100))

            fired = _on_first_commit(channel, meanwhile)
            entry(channel).push_structured_event(structured(fields={"n": 1}))
            assert fired
            assert drain(a) == [1]
            assert channel._account.count == 0

    def test_limit_off_during_routing_then_on(self) -> None:
        """Limit on, E routed; mid-routing the limit goes off. The end of E's routing
        must not take the router's reference from the next count (it once went to -1,
        and the limit on again counted the queued events from there)."""
        with EventChannelFactory(ServiceConfig(routing="index")) as made:
            channel, _ = made.create_channel([], _limit(100))
            proxies = _pull_proxies(channel, 1)

            def meanwhile(first: Any) -> None:
                assert drain(first) == [1]  # delivered: refs 2 -> 1
                channel.set_admin(_limit(0))

            fired = _after_copies(proxies, 1, meanwhile)
            supplier = entry(channel)
            supplier.push_structured_event(structured(fields={"n": 1}))
            assert fired
            channel.set_admin(_limit(100))
            supplier.push_structured_event(structured(fields={"n": 2}))
            assert channel._account.count == 1
            assert drain(proxies[0]) == [2]
            assert channel._account.count == 0

    def test_adopt_counts_event_already_counted_by_its_routing(self) -> None:
        """set_admin sets the limit, then counts what is queued. An event pushed in
        between is counted by its own routing: the scan must not count it again (the
        count once stayed at 1 with nothing queued, and with RejectNewEvents and
        MaxQueueLength 1 every later push was refused)."""
        with EventChannelFactory(ServiceConfig(routing="index")) as made:
            channel, _ = made.create_channel([], [])
            (a,) = _pull_proxies(channel, 1)
            supplier = entry(channel)
            original = channel._count_queued

            def count_queued() -> None:  # a concurrent supplier's push lands here
                supplier.push_structured_event(structured(fields={"n": 1}))
                original()

            channel._count_queued = count_queued
            channel.set_admin(_limit(1) + _REJECT)
            del channel._count_queued
            assert drain(a) == [1]
            assert channel._account.count == 0, "count leaked: nothing is queued"
            supplier.push_structured_event(structured(fields={"n": 2}))  # IMP_LIMIT if leaked
            assert drain(a) == [2]

    def test_off_on_mid_routing_refuses_persistent_copy(self) -> None:
        """Limit on; E routed, A's persistent copy staged, B's queued. Mid-routing the
        limit goes off and on, and B pulls E. A's stored copy must still be queued:
        nothing discarded E (the end of E's routing once marked it so)."""
        with EventChannelFactory(ServiceConfig(routing="index"), store=MemoryStore()) as made:
            channel, _ = made.create_channel(_DURABLE, _limit(100))
            a, b = _pull_proxies(channel, 2, mapped=False)
            b.set_qos([prop("ConnectionReliability", N.BestEffort)])

            def meanwhile(last: Any) -> None:
                channel.set_admin(_limit(0))
                channel.set_admin(_limit(100))
                assert drain(b) == [1]

            fired = _after_copies([a, b], 2, meanwhile)
            entry(channel).push_structured_event(structured(fields={"n": 1}))
            assert fired
            assert drain(a) == [1], "A's persistent copy was refused: nothing discarded it"

    def test_copy_delivered_between_scan_and_adopt_is_not_counted(self) -> None:
        """Setting the limit scans every queue, then counts what it found. A copy the
        consumer takes in between must not be counted: it once held its event for
        good, and with RejectNewEvents and MaxQueueLength 1 every later push was
        refused with nothing queued."""
        with EventChannelFactory(ServiceConfig(routing="index")) as made:
            channel, _ = made.create_channel([], [])
            (a,) = _pull_proxies(channel, 1)
            supplier = entry(channel)
            supplier.push_structured_event(structured(fields={"n": 1}))
            account = channel._account
            original = account.adopt

            def adopt(queued: Any) -> None:  # the consumer pulls after its proxy was scanned
                assert drain(a) == [1]
                original(queued)

            account.adopt = adopt
            channel.set_admin(_limit(1) + _REJECT)
            del account.adopt
            assert drain(a) == []
            assert account.count == 0, f"count {account.count} with nothing queued"
            supplier.push_structured_event(structured(fields={"n": 2}))  # IMP_LIMIT if leaked
            assert drain(a) == [2]

    def test_copy_delivered_between_scan_and_adopt_many_proxies(self) -> None:
        """The same on a channel with several proxies: one slot was stuck for each
        event delivered during the scan."""
        with EventChannelFactory(ServiceConfig(routing="index")) as made:
            channel, _ = made.create_channel([], [])
            a, b = _pull_proxies(channel, 2)
            supplier = entry(channel)
            for n in range(3):
                supplier.push_structured_event(structured(fields={"n": n}))
            account = channel._account
            original = account.adopt

            def adopt(queued: Any) -> None:
                drain(a)
                drain(b)
                original(queued)

            account.adopt = adopt
            channel.set_admin(_limit(5))
            del account.adopt
            assert account.count == 0, f"count {account.count} with nothing queued"

    def test_stored_copy_dropped_by_hold_is_released_from_the_store(self) -> None:
        """A stored copy (A's) being queued with no limit; meanwhile the limit is set
        (E counted through B's copy) and a new event makes E the victim. A's copy is
        not queued, and must be released in the store and leave A's memory window,
        as a refused copy is (it once stayed in both)."""
        with EventChannelFactory(ServiceConfig(routing="index"), store=MemoryStore()) as made:
            channel, _ = made.create_channel(_DURABLE, [])
            a, b = _pull_proxies(channel, 2, mapped=False)
            b.set_qos([prop("ConnectionReliability", N.BestEffort)])
            supplier = entry(channel)
            original = a._enqueue
            fired: list[bool] = []

            def enqueue(item: Any, now: float, held: bool = False) -> Any:
                if not fired:
                    fired.append(True)
                    channel.set_admin(_limit(1))  # adopts E (B's copy)
                    supplier.push_structured_event(  # E is the victim
                        structured(fields={"n": 2}, header=_BEST_EFFORT_HDR))
                return original(item, now, held)

            a._enqueue = enqueue
            supplier.push_structured_event(structured(fields={"n": 1}))
            del a._enqueue
            assert fired
            assert (drain(a), drain(b)) == ([2], [2])  # E was discarded
            durable = a._queue.durable
            store = channel._event_log._store
            pending = [s.id for s in store.pending(durable.path)]
            assert not durable.resident, f"a copy neither queued nor released: {durable.resident}"
            assert not pending, f"store still holds {pending} for A"

    def test_victim_adopted_again_before_its_discard(self) -> None:
        """The limit picks V as a victim; before V's copies are removed, the limit goes
        off and on. The new count must not take V on again (V held a slot for good,
        and with RejectNewEvents nothing freed it)."""
        with EventChannelFactory(ServiceConfig(routing="index")) as made:
            channel, _ = made.create_channel([], _limit(1))
            (a,) = _pull_proxies(channel, 1)
            supplier = entry(channel)
            supplier.push_structured_event(structured(fields={"n": 1}))
            original = channel._discard
            fired: list[bool] = []

            def discard(victim: Any) -> None:
                if not fired:
                    fired.append(True)
                    channel.set_admin(_limit(0))
                    channel.set_admin(_limit(1) + _REJECT)
                original(victim)

            channel._discard = discard
            supplier.push_structured_event(structured(fields={"n": 2}))
            del channel._discard
            assert fired
            assert drain(a) == [2]
            assert channel._account.count == 0, f"count {channel._account.count}, nothing queued"

    def test_limit_turned_off_during_push_does_not_refuse(self) -> None:
        """The limit is turned off while a push is being admitted under it: with
        RejectNewEvents the push must not get IMP_LIMIT from a limit of 0."""
        with EventChannelFactory(ServiceConfig(routing="index")) as made:
            channel, _ = made.create_channel([], _limit(5) + _REJECT)
            (a,) = _pull_proxies(channel, 1)
            supplier = entry(channel)
            account = channel._account
            original = account.reserve

            def reserve(event: Any) -> Any:
                del account.reserve
                channel.set_admin(_limit(0))
                return original(event)

            account.reserve = reserve
            supplier.push_structured_event(structured(fields={"n": 1}))
            assert drain(a) == [1]

    @pytest.mark.parametrize("when", ["before-the-scan", "during-the-scan"])
    def test_a_copy_in_flight_when_the_limit_is_set(self, when: str) -> None:
        """A's copy of E is taken by a worker before the limit is set, or while its
        start scans the queues, and delivered after; B's copy is still queued. The
        count must still hold E for B's copy: A's copy was never counted, and its
        release once took E off the count (the count 0 with E queued)."""
        with EventChannelFactory(ServiceConfig(routing="index")) as made:
            channel, _ = made.create_channel([], [])
            a, b = _pull_proxies(channel, 2)
            entry(channel).push_structured_event(structured(fields={"n": 1}))
            account, taken = channel._account, []

            def take() -> None:
                with a._lock:
                    taken.append(a._queue.get(0.0))

            if when == "before-the-scan":
                take()
            else:
                adopt = account.adopt
                account.adopt = lambda queued: (take(), adopt(queued))
            channel.set_admin(_limit(1) + _REJECT)
            channel._released(taken, delivered=True)  # the push returns
            assert len(b._queue) == 1
            assert account.count == 1

    def test_a_refused_stored_copy_is_not_read_back(self) -> None:
        """The stored copy the limit's discard refuses (A's, being queued with no limit
        when it was set) must not be read back by a refill before its release is
        written: A was once given the discarded event."""
        with EventChannelFactory(ServiceConfig(routing="index"), store=MemoryStore()) as made:
            channel, _ = made.create_channel(_DURABLE, [])
            a, b = _pull_proxies(channel, 2, mapped=False)
            b.set_qos([prop("ConnectionReliability", N.BestEffort)])
            log = channel._event_log
            log.window = 1
            supplier = entry(channel)
            enqueue, release_ids = a._enqueue, log.release_ids
            pulled: list[int] = []

            def discard_meanwhile(item: Any, now: float, held: bool = False) -> Any:
                del a._enqueue
                channel.set_admin(_limit(1))  # counts E (B's copy)
                supplier.push_structured_event(  # E is the victim
                    structured(fields={"n": 2}, header=_BEST_EFFORT_HDR))
                return enqueue(item, now, held)

            def refill_meanwhile(path: str, ids: list[int]) -> None:
                if path == a._queue.durable.path and not pulled:
                    with a._lock:  # as a concurrent admit would: A's copies on disk
                        a._queue.durable.spilled = True
                    pulled.extend(drain(a) or [-1])
                release_ids(path, ids)

            a._enqueue = discard_meanwhile
            log.release_ids = refill_meanwhile
            supplier.push_structured_event(structured(fields={"n": 1}))
            assert pulled
            assert 1 not in pulled + drain(a)

class TestDelivery:
    def test_no_push_after_suspend_returns(self, channel: Any) -> None:
        """A push proxy once kept pushing the rest of a taken batch after suspend_connection."""
        started, gate = threading.Event(), threading.Event()

        class Slow(StructuredPushConsumer):
            def push_structured_event(self, event: Any) -> None:
                started.set()
                assert gate.wait(WAIT)
                super().push_structured_event(event)

        sink = Slow()
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(sink)
        supplier = entry(channel)
        for n in range(20):
            supplier.push_structured_event(structured(fields={"n": n}))
        assert started.wait(WAIT)
        proxy.suspend_connection()
        gate.set()
        settle(channel)
        assert len(sink.received) == 1
        proxy.resume_connection()
        assert sink.wait_for(20)
        assert [number(e) for e in sink.received] == list(range(20))

    def test_no_short_batch_when_events_expire(self, manual_channel: Any, clock: Any) -> None:
        """PacingInterval 0 never sends a short batch, even when queued events expire."""
        sink = SequencePushConsumer()
        proxy, _ = manual_channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.SEQUENCE_EVENT)
        proxy.set_qos([prop("MaximumBatchSize", 3, CORBA.TC_long)])
        proxy.connect_sequence_push_consumer(sink)
        supplier = entry(manual_channel)
        timeout = N.Property("Timeout", CORBA.Any(TimeBase._tc_TimeT, 10_000_000))
        supplier.push_structured_event(structured(fields={"n": 0}, header=[timeout]))
        supplier.push_structured_event(structured(fields={"n": 1}, header=[timeout]))
        clock.advance(2)
        supplier.push_structured_event(structured(fields={"n": 2}))
        settle(manual_channel)
        assert sink.received == []

    def test_lower_batch_size_takes_effect_at_once(self, channel: Any) -> None:
        """Lowering MaximumBatchSize on a connected proxy sends what now fills a batch."""
        sink = SequencePushConsumer()
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.SEQUENCE_EVENT)
        proxy.set_qos([prop("MaximumBatchSize", 10, CORBA.TC_long)])
        proxy.connect_sequence_push_consumer(sink)
        supplier = entry(channel)
        for n in range(4):
            supplier.push_structured_event(structured(fields={"n": n}))
        settle(channel)
        assert sink.received == []
        proxy.set_qos([prop("MaximumBatchSize", 2, CORBA.TC_long)])
        assert sink.wait_for(2)
        assert [[number(e) for e in batch] for batch in sink.received] == [[0, 1], [2, 3]]


class TestSubscriptions:
    def test_withdrawing_the_last_type_means_nothing(self, channel: Any) -> None:
        """After subscription_change removes its only type a consumer gets nothing (not all)."""
        sink = StructuredPushConsumer()
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(sink)
        proxy.subscription_change([N.EventType("A", "x")], [])
        proxy.subscription_change([], [N.EventType("A", "x")])
        supplier = entry(channel)
        supplier.push_structured_event(structured("A", "x"))
        supplier.push_structured_event(structured("B", "y"))
        settle(channel)
        assert sink.received == []
        proxy.subscription_change([N.EventType("", "%ALL")], [])
        supplier.push_structured_event(structured("B", "y"))
        assert sink.wait_for(1)

    def test_updates_off_before_connect_is_kept(self, channel: Any) -> None:
        """obtain_offered_types(NONE_NOW_UPDATES_OFF) before connecting is remembered."""
        sink = StructuredPushConsumer()
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.obtain_offered_types(CA.NONE_NOW_UPDATES_OFF)
        proxy.connect_structured_push_consumer(sink)
        channel._get_default_supplier_admin().offer_change([N.EventType("A", "x")], [])
        settle(channel)
        assert sink.offers == []

    def test_unconnected_proxy_subscribes_to_nothing(self, channel: Any) -> None:
        """A proxy supplier adds %ALL to the aggregate only once its consumer connects."""
        supplier = entry(channel)
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        assert supplier.obtain_subscription_types(CA.ALL_NOW_UPDATES_OFF) == []
        proxy.connect_structured_push_consumer(StructuredPushConsumer())
        types = supplier.obtain_subscription_types(CA.ALL_NOW_UPDATES_OFF)
        assert [(t.domain_name, t.type_name) for t in types] == [("*", "%ALL")]

    def test_admin_destroy_detaches_filter_callbacks(self, channel: Any) -> None:
        """A destroyed ConsumerAdmin no longer has callbacks attached to its filters."""
        flt = CountingFilter()
        admin, _ = channel.new_for_consumers(CA.AND_OP)
        admin.add_filter(flt)
        assert flt.callbacks
        admin.destroy()
        assert flt.callbacks == {}


class TestHeaderQoS:
    def test_percent_any_wrapper_keeps_its_header_qos(self, channel: Any) -> None:
        """A %ANY structured event's header Priority is checked although the Any is unwrapped."""
        supplier = entry(channel)
        wrapped = N.StructuredEvent(
            N.EventHeader(N.FixedEventHeader(N.EventType("", "%ANY"), ""),
                          [prop("Priority", -32768)]), [], CORBA.Any(CORBA.TC_long, 1))
        with pytest.raises(CORBA.BAD_QOS):
            supplier.push_structured_event(wrapped)

    @pytest.mark.parametrize("value", [2**64, -1])
    def test_a_header_timeout_outside_timet_is_refused(self, channel: Any, value: int) -> None:
        """An in-process supplier's Any is not marshalled, so the channel bounds a header
        Timeout to TimeBase::TimeT itself: past it, no remote consumer could ever be sent
        the event (review 66: an Event Heap TimeToLive made one). BAD_QOS, as for
        Priority."""
        supplier = entry(channel)
        with pytest.raises(CORBA.BAD_QOS):
            supplier.push_structured_event(structured(
                fields={"n": 0}, header=[N.Property("Timeout", CORBA.Any(TimeBase._tc_TimeT,
                                                                         value))]))

    def test_header_timeout_zero_overrides_the_proxy(self, manual_channel: Any,
                                                     clock: Any) -> None:
        """Header Timeout 0 means no timeout and overrides the proxy consumer's Timeout."""
        supplier = entry(manual_channel)
        supplier.set_qos([N.Property("Timeout", CORBA.Any(TimeBase._tc_TimeT, 10_000_000))])
        pull, _ = manual_channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        pull.connect_structured_pull_consumer(None)
        supplier.push_structured_event(structured(
            fields={"n": 0}, header=[N.Property("Timeout", CORBA.Any(TimeBase._tc_TimeT, 0))]))
        clock.advance(5)
        event, has_event = pull.try_pull_structured_event()
        assert has_event and number(event) == 0


class TestInterfaces:
    def test_suspend_only_where_the_idl_has_it(self, channel: Any) -> None:
        """suspend/resume exist on push proxy suppliers and pull proxy consumers only."""
        admin = channel._get_default_consumer_admin()
        assert hasattr(admin.obtain_notification_push_supplier(CA.ANY_EVENT)[0],
                       "suspend_connection")
        assert not hasattr(admin.obtain_notification_pull_supplier(CA.ANY_EVENT)[0],
                           "suspend_connection")
        supplier_admin = channel._get_default_supplier_admin()
        assert not hasattr(supplier_admin.obtain_notification_push_consumer(CA.ANY_EVENT)[0],
                           "suspend_connection")

    def test_event_service_obtain_reports_limits_as_imp_limit(self, factory: Any) -> None:
        """CosEventChannelAdmin obtain operations declare no exceptions: IMP_LIMIT at limits."""
        channel, _ = factory.create_channel([], [prop("MaxConsumers", 1, CORBA.TC_long)])
        admin = channel.for_consumers()
        admin.obtain_pull_supplier().connect_pull_consumer(None)  # the one consumer allowed
        with pytest.raises(CORBA.IMP_LIMIT):
            admin.obtain_push_supplier()
