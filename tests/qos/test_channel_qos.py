"""QoS and admin properties enforced by the channel (sections 2.5.3-2.5.7).

Re-expresses the behaviours of TAO's AdminProperties, Discarding, Ordering,
Sequence and Timeout tests and JacORB's QoS, StartTime, StopTime, Timeout and
AdminLimit tests, on a ManualClock.
"""

from __future__ import annotations

from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import TimeBase

from cosnotify.channel.clock import seconds_to_timet
from tests.channel.conftest import (
    WAIT,
    PullConsumer,
    SequencePushConsumer,
    StructuredPushConsumer,
    number,
    structured,
)


def short(name: str, value: int) -> Any:
    return N.Property(name, CORBA.Any(CORBA.TC_short, value))


def long_(name: str, value: int) -> Any:
    return N.Property(name, CORBA.Any(CORBA.TC_long, value))


def boolean(name: str, value: bool) -> Any:
    return N.Property(name, CORBA.Any(CORBA.TC_boolean, value))


def timet(name: str, seconds: float) -> Any:
    return N.Property(name, CORBA.Any(TimeBase._tc_TimeT, int(seconds * 10_000_000)))


def utc(name: str, when: float) -> Any:
    return N.Property(name, CORBA.Any(TimeBase._tc_UtcT,
                                      TimeBase.UtcT(seconds_to_timet(when), 0, 0, 0)))


def qos_dict(props: list[Any]) -> dict[str, Any]:
    return {p.name: p.value.value() for p in props}


def entry(channel: Any, ctype: Any = CA.STRUCTURED_EVENT) -> Any:
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(ctype)
    getattr(proxy, {CA.STRUCTURED_EVENT: "connect_structured_push_supplier",
                    CA.SEQUENCE_EVENT: "connect_sequence_push_supplier",
                    CA.ANY_EVENT: "connect_any_push_supplier"}[ctype])(None)
    return proxy


def pull_proxy(channel: Any, ctype: Any = CA.STRUCTURED_EVENT, admin: Any = None) -> Any:
    admin = admin or channel._get_default_consumer_admin()
    proxy, _ = admin.obtain_notification_pull_supplier(ctype)
    getattr(proxy, {CA.STRUCTURED_EVENT: "connect_structured_pull_consumer",
                    CA.SEQUENCE_EVENT: "connect_sequence_pull_consumer",
                    CA.ANY_EVENT: "connect_any_pull_consumer"}[ctype])(PullConsumer())
    return proxy


def drain(proxy: Any) -> list[int]:
    out = []
    while True:
        event, has_event = proxy.try_pull_structured_event()
        if not has_event:
            return out
        out.append(number(event))


def settle(channel: Any) -> None:
    assert channel._service.dispatcher.wait_idle()


class TestInheritanceAndSetting:
    def test_get_qos_reports_defaults(self, channel: Any) -> None:
        """get_qos returns every property of the level, with defaults (section 2.5.6.3)."""
        values = qos_dict(channel.get_qos())
        assert values["Priority"] == 0 and values["MaximumBatchSize"] == 1
        assert values["EventReliability"] == N.BestEffort
        assert "StartTime" not in values  # per-message only

    def test_values_inherit_at_creation_only(self, channel: Any) -> None:
        """Section 2.5.3 / 2.5.6.1: children copy the parent's QoS when created; later
        parent changes affect only children created afterwards."""
        channel.set_qos([short("Priority", 5)])
        early, _ = channel.new_for_consumers(CA.AND_OP)
        channel.set_qos([short("Priority", 7)])
        late, _ = channel.new_for_consumers(CA.AND_OP)
        assert qos_dict(early.get_qos())["Priority"] == 5
        assert qos_dict(late.get_qos())["Priority"] == 7
        proxy, _ = late.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        assert qos_dict(proxy.get_qos())["Priority"] == 7

    def test_set_qos_is_atomic(self, channel: Any) -> None:
        """A request with one bad property changes nothing (section 2.5.6.1)."""
        before = qos_dict(channel.get_qos())
        with pytest.raises(N.UnsupportedQoS) as info:
            channel.set_qos([short("Priority", 9), long_("MaximumBatchSize", 0)])
        assert [e.name for e in info.value.qos_err] == ["MaximumBatchSize"]
        assert qos_dict(channel.get_qos()) == before

    def test_create_channel_checks_qos_and_admin(self, factory: Any) -> None:
        """create_channel raises UnsupportedQoS / UnsupportedAdmin with the offending names."""
        with pytest.raises(N.UnsupportedQoS):
            factory.create_channel([short("Nonsense", 1)], [])
        with pytest.raises(N.UnsupportedAdmin) as info:
            factory.create_channel([], [long_("MaxQueueLength", -1)])
        assert info.value.admin_err[0].code == N.BAD_VALUE
        channel, _ = factory.create_channel([short("Priority", 3)],
                                            [long_("MaxQueueLength", 10)])
        assert qos_dict(channel.get_qos())["Priority"] == 3
        assert qos_dict(channel.get_admin())["MaxQueueLength"] == 10

    def test_sequence_properties_only_on_sequence_proxies(self, channel: Any) -> None:
        """MaximumBatchSize on a structured proxy is UNSUPPORTED_PROPERTY (Table 2-5 note 2)."""
        admin = channel._get_default_consumer_admin()
        structured_proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        sequence_proxy, _ = admin.obtain_notification_push_supplier(CA.SEQUENCE_EVENT)
        with pytest.raises(N.UnsupportedQoS) as info:
            structured_proxy.set_qos([long_("MaximumBatchSize", 5)])
        assert info.value.qos_err[0].code == N.UNSUPPORTED_PROPERTY
        sequence_proxy.set_qos([long_("MaximumBatchSize", 5)])
        assert qos_dict(sequence_proxy.get_qos())["MaximumBatchSize"] == 5

    def test_validate_event_qos(self, channel: Any) -> None:
        """validate_event_qos accepts per-message Priority and refuses OrderPolicy."""
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        extra = proxy.validate_event_qos([short("Priority", 3)])
        assert "Timeout" in {r.name for r in extra}
        with pytest.raises(N.UnsupportedQoS):
            proxy.validate_event_qos([short("OrderPolicy", N.FifoOrder)])


class TestOrdering:
    def test_priority_order_delivers_highest_first(self, channel: Any) -> None:
        """OrderPolicy PriorityOrder: higher priority first, FIFO among equals."""
        proxy = pull_proxy(channel)
        proxy.set_qos([short("OrderPolicy", N.PriorityOrder)])
        supplier = entry(channel)
        for n, priority in enumerate([0, 5, -3, 5, 1]):
            supplier.push_structured_event(
                structured(fields={"n": n}, header=[short("Priority", priority)]))
        assert drain(proxy) == [1, 3, 4, 0, 2]

    def test_fifo_order_ignores_priority(self, channel: Any) -> None:
        """OrderPolicy FifoOrder: arrival order whatever the priorities."""
        proxy = pull_proxy(channel)
        proxy.set_qos([short("OrderPolicy", N.FifoOrder)])
        supplier = entry(channel)
        for n, priority in enumerate([0, 5, -3]):
            supplier.push_structured_event(
                structured(fields={"n": n}, header=[short("Priority", priority)]))
        assert drain(proxy) == [0, 1, 2]

    def test_deadline_order_delivers_soonest_expiry_first(self, manual_channel: Any) -> None:
        """OrderPolicy DeadlineOrder: the event that times out soonest goes first."""
        proxy = pull_proxy(manual_channel)
        proxy.set_qos([short("OrderPolicy", N.DeadlineOrder)])
        supplier = entry(manual_channel)
        for n, seconds in enumerate([30, 10, 20]):
            supplier.push_structured_event(
                structured(fields={"n": n}, header=[timet("Timeout", seconds)]))
        supplier.push_structured_event(structured(fields={"n": 3}))  # no deadline: last
        assert drain(proxy) == [1, 2, 0, 3]


class TestDiscarding:
    @pytest.mark.parametrize("policy,kept", [
        (N.FifoOrder, [3, 4, 5]),
        (N.AnyOrder, [3, 4, 5]),
        (N.LifoOrder, [0, 1, 2]),
        (N.PriorityOrder, [1, 3, 5]),
    ])
    def test_max_events_per_consumer(self, channel: Any, policy: int, kept: list[int]) -> None:
        """MaxEventsPerConsumer=3 keeps three events, discarding by DiscardPolicy."""
        proxy = pull_proxy(channel)
        proxy.set_qos([long_("MaxEventsPerConsumer", 3), short("DiscardPolicy", policy),
                       short("OrderPolicy", N.FifoOrder)])
        supplier = entry(channel)
        for n in range(6):
            priority = 10 if n % 2 else 0   # odd events are important
            supplier.push_structured_event(
                structured(fields={"n": n}, header=[short("Priority", priority)]))
        assert drain(proxy) == kept

    def test_limit_affects_only_that_consumer(self, channel: Any) -> None:
        """Section 2.5.5: an event discarded for one consumer stays queued for others."""
        small, large = pull_proxy(channel), pull_proxy(channel)
        small.set_qos([long_("MaxEventsPerConsumer", 2)])
        supplier = entry(channel)
        for n in range(5):
            supplier.push_structured_event(structured(fields={"n": n}))
        assert drain(small) == [3, 4]
        assert drain(large) == [0, 1, 2, 3, 4]

    def test_channel_queue_length_with_discard(self, factory: Any) -> None:
        """MaxQueueLength with RejectNewEvents FALSE: the channel discards by its DiscardPolicy,
        from every consumer's queue."""
        channel, _ = factory.create_channel([short("DiscardPolicy", N.FifoOrder)],
                                            [long_("MaxQueueLength", 3)])
        first, second = pull_proxy(channel), pull_proxy(channel)
        supplier = entry(channel)
        for n in range(5):
            supplier.push_structured_event(structured(fields={"n": n}))
        assert drain(first) == [2, 3, 4] and drain(second) == [2, 3, 4]
        assert channel._account.count == 0

    def test_channel_queue_length_with_reject(self, factory: Any) -> None:
        """MaxQueueLength with RejectNewEvents TRUE: pushes fail with IMP_LIMIT until room."""
        channel, _ = factory.create_channel([], [long_("MaxQueueLength", 2),
                                                 boolean("RejectNewEvents", True)])
        proxy = pull_proxy(channel)
        supplier = entry(channel)
        supplier.push_structured_event(structured(fields={"n": 0}))
        supplier.push_structured_event(structured(fields={"n": 1}))
        with pytest.raises(CORBA.IMP_LIMIT):
            supplier.push_structured_event(structured(fields={"n": 2}))
        assert number(proxy.pull_structured_event()) == 0
        supplier.push_structured_event(structured(fields={"n": 3}))
        assert drain(proxy) == [1, 3]


class TestAdminLimits:
    def test_max_consumers(self, factory: Any) -> None:
        """Section 3.4.15.9: "If the number of consumers currently connected to the channel
        ... exceeds the value of the MaxConsumers administrative property, the
        AdminLimitExceeded exception is raised" by obtain (once they reach it: docs/qos.md)."""
        channel, _ = factory.create_channel([], [long_("MaxConsumers", 2)])
        admin = channel._get_default_consumer_admin()
        first, _ = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        first.connect_structured_pull_consumer(None)
        other, _ = channel.new_for_consumers(CA.OR_OP)
        second, _ = other.obtain_notification_pull_supplier(CA.ANY_EVENT)
        second.connect_any_pull_consumer(None)
        with pytest.raises(CA.AdminLimitExceeded) as info:
            admin.obtain_notification_push_supplier(CA.SEQUENCE_EVENT)
        assert info.value.admin_property_err.name == "MaxConsumers"
        assert info.value.admin_property_err.value.value() == 2

    def test_max_consumers_counts_connected_consumers_only(self, factory: Any) -> None:
        """Section 2.5.7: MaxConsumers is "The maximum number of consumers that can be
        connected to the channel at any given time": proxies never connected do not use
        it up (review 136), and connect_*, whose IDL declares only AlreadyConnected and
        TypeError, does not refuse; the obtain made once the limit is reached does."""
        channel, _ = factory.create_channel([], [long_("MaxConsumers", 1)])
        admin = channel._get_default_consumer_admin()
        push, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        pull, _ = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        pull.connect_structured_pull_consumer(None)
        push.connect_structured_push_consumer(StructuredPushConsumer())
        with pytest.raises(CA.AdminLimitExceeded):
            admin.obtain_notification_pull_supplier(CA.ANY_EVENT)
        push.disconnect_structured_push_supplier()
        with pytest.raises(CA.AdminLimitExceeded):  # one is still connected
            admin.obtain_notification_pull_supplier(CA.ANY_EVENT)
        pull.disconnect_structured_pull_supplier()
        admin.obtain_notification_pull_supplier(CA.ANY_EVENT)

    def test_max_suppliers_frees_on_disconnect(self, factory: Any) -> None:
        """Section 2.5.7: MaxSuppliers is "The maximum number of suppliers that can be
        connected to the channel at any given time": a supplier leaving makes room."""
        channel, _ = factory.create_channel([], [long_("MaxSuppliers", 1)])
        admin = channel._get_default_supplier_admin()
        proxy, _ = admin.obtain_notification_push_consumer(CA.ANY_EVENT)
        proxy.connect_any_push_supplier(None)
        with pytest.raises(CA.AdminLimitExceeded):
            admin.obtain_notification_push_consumer(CA.ANY_EVENT)
        proxy.disconnect_push_consumer()
        admin.obtain_notification_push_consumer(CA.ANY_EVENT)

    def test_bad_admin_values(self, channel: Any) -> None:
        """set_admin with unknown names or wrong types raises UnsupportedAdmin."""
        with pytest.raises(N.UnsupportedAdmin) as info:
            channel.set_admin([long_("MaxQueueLen", 5), short("MaxConsumers", 5)])
        assert {e.name: e.code for e in info.value.admin_err} == {
            "MaxQueueLen": N.BAD_PROPERTY, "MaxConsumers": N.BAD_TYPE}


class TestTime:
    def test_timeout_expires_queued_events(self, manual_channel: Any, clock: Any) -> None:
        """Timeout in the header: an event not delivered in time is discarded (2.5.5.3)."""
        proxy = pull_proxy(manual_channel)
        supplier = entry(manual_channel)
        supplier.push_structured_event(structured(fields={"n": 0}, header=[timet("Timeout", 5)]))
        supplier.push_structured_event(structured(fields={"n": 1}, header=[timet("Timeout", 50)]))
        clock.advance(10)
        assert drain(proxy) == [1]

    def test_proxy_timeout_applies_without_header(self, manual_channel: Any, clock: Any) -> None:
        """A Timeout QoS on the proxy consumer applies to events without one (Table 2-4)."""
        supplier = entry(manual_channel)
        supplier.set_qos([timet("Timeout", 5)])
        proxy = pull_proxy(manual_channel)
        supplier.push_structured_event(structured(fields={"n": 0}))
        supplier.push_structured_event(structured(fields={"n": 1}, header=[timet("Timeout", 60)]))
        clock.advance(10)
        assert drain(proxy) == [1]

    def test_stop_time(self, manual_channel: Any, clock: Any) -> None:
        """StopTime: the event is discarded once that absolute time has passed."""
        proxy = pull_proxy(manual_channel)
        supplier = entry(manual_channel)
        now = clock.now()
        supplier.push_structured_event(structured(fields={"n": 0},
                                                  header=[utc("StopTime", now + 3)]))
        clock.advance(2)
        assert drain(proxy) == [0]
        supplier.push_structured_event(structured(fields={"n": 1},
                                                  header=[utc("StopTime", now + 3)]))
        clock.advance(2)
        assert drain(proxy) == []

    def test_start_time_holds_events(self, manual_channel: Any, clock: Any) -> None:
        """StartTime: the event is not delivered before that time (section 2.5.5.4)."""
        sink = StructuredPushConsumer()
        proxy, _ = manual_channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(sink)
        supplier = entry(manual_channel)
        supplier.push_structured_event(structured(fields={"n": 0},
                                                  header=[utc("StartTime", clock.now() + 5)]))
        supplier.push_structured_event(structured(fields={"n": 1}))
        settle(manual_channel)
        assert [number(e) for e in sink.received] == [1]
        clock.advance(5)
        settle(manual_channel)
        assert [number(e) for e in sink.received] == [1, 0]

    def test_start_time_unsupported_is_bad_qos(self, channel: Any) -> None:
        """StartTime in a header when StartTimeSupported is FALSE raises BAD_QOS."""
        supplier = entry(channel)
        supplier.set_qos([boolean("StartTimeSupported", False)])
        with pytest.raises(CORBA.BAD_QOS):
            supplier.push_structured_event(structured(header=[utc("StartTime", 0.0)]))

    def test_bad_header_qos_is_bad_qos(self, channel: Any) -> None:
        """Header QoS of the wrong type, out of range or unsupported raises BAD_QOS."""
        supplier = entry(channel)
        supplier.push_structured_event(structured(header=[short("Priority", -32767)]))
        for bad in (long_("Priority", 1), short("EventReliability", N.Persistent),
                    short("Priority", -32768)):
            with pytest.raises(CORBA.BAD_QOS):
                supplier.push_structured_event(structured(header=[bad]))


class TestBatching:
    def test_full_batches_without_pacing(self, manual_channel: Any, clock: Any) -> None:
        """MaximumBatchSize=3, PacingInterval=0: only full batches are sent (2.5.5)."""
        sink = SequencePushConsumer()
        proxy, _ = manual_channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.SEQUENCE_EVENT)
        proxy.set_qos([long_("MaximumBatchSize", 3)])
        proxy.connect_sequence_push_consumer(sink)
        supplier = entry(manual_channel)
        for n in range(7):
            supplier.push_structured_event(structured(fields={"n": n}))
        settle(manual_channel)
        clock.advance(1000)
        settle(manual_channel)
        assert [[number(e) for e in batch] for batch in sink.received] == [[0, 1, 2], [3, 4, 5]]

    def test_pacing_sends_short_batches(self, manual_channel: Any, clock: Any) -> None:
        """PacingInterval: a short batch goes when the interval ends; an empty interval
        means the next event goes as soon as it arrives."""
        sink = SequencePushConsumer()
        proxy, _ = manual_channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.SEQUENCE_EVENT)
        proxy.set_qos([long_("MaximumBatchSize", 10), timet("PacingInterval", 2)])
        proxy.connect_sequence_push_consumer(sink)
        supplier = entry(manual_channel)
        supplier.push_structured_event(structured(fields={"n": 0}))
        supplier.push_structured_event(structured(fields={"n": 1}))
        settle(manual_channel)
        assert sink.received == []
        clock.advance(2)
        settle(manual_channel)
        assert [[number(e) for e in b] for b in sink.received] == [[0, 1]]
        clock.advance(5)   # an interval passes with nothing
        settle(manual_channel)
        supplier.push_structured_event(structured(fields={"n": 2}))
        settle(manual_channel)
        assert [[number(e) for e in b] for b in sink.received] == [[0, 1], [2]]

    def test_pull_structured_events_respects_batch_size(self, channel: Any) -> None:
        """pull_structured_events(max) returns at most min(max, MaximumBatchSize) events."""
        proxy = pull_proxy(channel, CA.SEQUENCE_EVENT)
        proxy.set_qos([long_("MaximumBatchSize", 4)])
        supplier = entry(channel)
        for n in range(10):
            supplier.push_structured_event(structured(fields={"n": n}))
        assert [number(e) for e in proxy.pull_structured_events(3)] == [0, 1, 2]
        assert [number(e) for e in proxy.pull_structured_events(100)] == [3, 4, 5, 6]
        batch, has_event = proxy.try_pull_structured_events(100)
        assert has_event and [number(e) for e in batch] == [7, 8, 9]

    @pytest.mark.parametrize("max_number", [0, -1])
    def test_no_more_events_than_max_number(self, channel: Any, max_number: int) -> None:
        """§3.3.13.1 and §3.3.13.2: "the maximum length of the sequence returned will
        never exceed the value of the input parameter": 0 or less gives an empty
        sequence, at once, and takes nothing from the queue."""
        proxy = pull_proxy(channel, CA.SEQUENCE_EVENT)
        proxy.set_qos([long_("MaximumBatchSize", 5)])
        supplier = entry(channel)
        for n in range(3):
            supplier.push_structured_event(structured(fields={"n": n}))
        assert proxy.try_pull_structured_events(max_number) == ([], False)
        assert proxy.pull_structured_events(max_number) == []
        batch, has_event = proxy.try_pull_structured_events(5)  # all three still queued
        assert has_event and [number(e) for e in batch] == [0, 1, 2]

    @pytest.mark.parametrize("change", [
        [long_("MaximumBatchSize", 1)],
        [timet("PacingInterval", 0.001)],
    ], ids=["MaximumBatchSize", "PacingInterval"])
    def test_a_waiting_pull_reads_the_batch_qos_again(
            self, channel: Any, change: list[Any]) -> None:
        """A pull waiting for MaximumBatchSize events, with one ready, returns it once a
        set_qos makes one enough (§2.5.5: PacingInterval 0 "will never forward a
        sequence of events whose length is less than MaximumBatchSize"; a batch size of
        1, or an interval that has passed, makes the one event due)."""
        import threading

        proxy = pull_proxy(channel, CA.SEQUENCE_EVENT)
        proxy.set_qos([long_("MaximumBatchSize", 5), timet("PacingInterval", 0)])
        entry(channel).push_structured_event(structured(fields={"n": 0}))
        waiting = threading.Event()

        class Noting(threading.Condition):
            def wait(self, timeout: float | None = None) -> bool:
                waiting.set()  # the pull found too few and waits
                return super().wait(timeout)

        proxy._cond = Noting(proxy._lock)
        got: list[Any] = []
        puller = threading.Thread(target=lambda: got.extend(proxy.pull_structured_events(5)))
        puller.start()
        try:
            assert waiting.wait(WAIT)
            proxy.set_qos(change)
            puller.join(WAIT)
            assert not puller.is_alive()
            assert [number(e) for e in got] == [0]
        finally:
            proxy.disconnect_sequence_pull_supplier()
            puller.join(WAIT)

    def test_a_full_queue_is_a_full_batch_for_a_pull(self, channel: Any) -> None:
        """§2.5.5: PacingInterval 0 "will never forward a sequence of events whose
        length is less than MaximumBatchSize"; with MaximumBatchSize above what the
        queue holds (MaxEventsPerConsumer), a full queue is a full batch, or the pull
        would wait for ever while every further event is discarded (review 129)."""
        import threading

        proxy = pull_proxy(channel, CA.SEQUENCE_EVENT)
        proxy.set_qos([long_("MaxEventsPerConsumer", 2), long_("MaximumBatchSize", 3)])
        waiting = threading.Event()

        class Noting(threading.Condition):
            def wait(self, timeout: float | None = None) -> bool:
                waiting.set()  # the pull found too few and waits
                return super().wait(timeout)

        proxy._cond = Noting(proxy._lock)
        got: list[Any] = []
        puller = threading.Thread(target=lambda: got.append(proxy.pull_structured_events(3)),
                                  daemon=True)
        puller.start()
        try:
            assert waiting.wait(WAIT)
            supplier = entry(channel)
            for n in range(10):
                supplier.push_structured_event(structured(fields={"n": n}))
            puller.join(WAIT)
            assert got, "the pull still waits for a batch the queue cannot hold"
            first, second = (number(e) for e in got[0])  # the two newest, when it woke
            assert second == first + 1
        finally:
            proxy.disconnect_sequence_pull_supplier()
            puller.join(WAIT)

    def test_a_full_queue_is_a_full_batch_for_a_push(self, manual_channel: Any,
                                                     clock: Any) -> None:
        """§2.5.5, as above, for a sequence push: MaximumBatchSize 5 over a queue of
        MaxEventsPerConsumer 2 sends batches of 2 rather than nothing."""
        sink = SequencePushConsumer()
        proxy, _ = manual_channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.SEQUENCE_EVENT)
        proxy.set_qos([long_("MaxEventsPerConsumer", 2), long_("MaximumBatchSize", 5)])
        proxy.connect_sequence_push_consumer(sink)
        supplier = entry(manual_channel)
        for n in range(4):
            supplier.push_structured_event(structured(fields={"n": n}))
            settle(manual_channel)
        assert [[number(e) for e in batch] for batch in sink.received] == [[0, 1], [2, 3]]


class TestReviewFindings:
    def test_default_admins_take_channel_qos_until_first_touched(self, factory: Any) -> None:
        """Section 2.5.5.1: default admins are virtual until accessed, so channel QoS set
        before then reaches them."""
        channel, _ = factory.create_channel([], [])
        channel.set_qos([short("Priority", 5)])
        assert qos_dict(channel._get_default_consumer_admin().get_qos())["Priority"] == 5
        assert channel.get_all_supplieradmins() == [0]

    def test_queue_length_counts_events_already_queued(self, channel: Any) -> None:
        """Setting MaxQueueLength counts the events queued before it was set."""
        proxy = pull_proxy(channel)
        supplier = entry(channel)
        for n in range(5):
            supplier.push_structured_event(structured(fields={"n": n}))
        channel.set_admin([long_("MaxQueueLength", 3), boolean("RejectNewEvents", True)])
        with pytest.raises(CORBA.IMP_LIMIT):
            supplier.push_structured_event(structured(fields={"n": 5}))
        assert drain(proxy) == [0, 1, 2, 3, 4]
        supplier.push_structured_event(structured(fields={"n": 6}))
        assert drain(proxy) == [6]

    def test_discard_policy_change_applies_to_queued_events(self, factory: Any) -> None:
        """After the channel's DiscardPolicy changes, queued events are ranked by the new one."""
        channel, _ = factory.create_channel([short("DiscardPolicy", N.FifoOrder)],
                                            [long_("MaxQueueLength", 3)])
        proxy = pull_proxy(channel)
        supplier = entry(channel)
        for n in range(3):
            supplier.push_structured_event(structured(fields={"n": n}))
        channel.set_qos([short("DiscardPolicy", N.LifoOrder)])
        supplier.push_structured_event(structured(fields={"n": 3}))
        assert drain(proxy) == [0, 1, 3]  # the newest queued (2) made room

    def test_admin_limit_counts_concurrent_connections_exactly(self, factory: Any) -> None:
        """Section 2.5.7: MaxConsumers is "The maximum number of consumers that can be
        connected to the channel at any given time": concurrent connects and disconnects
        leave the count exact, so obtain is refused while 20 are connected and allowed
        once they all left."""
        import threading

        channel, _ = factory.create_channel([], [long_("MaxConsumers", 5)])
        admin = channel._get_default_consumer_admin()
        proxies = [admin.obtain_notification_pull_supplier(CA.ANY_EVENT)[0]
                   for _ in range(20)]  # none connected: none counts
        barrier = threading.Barrier(20)

        def run(step: Any) -> None:
            threads = [threading.Thread(target=lambda p=p: (barrier.wait(), step(p)))
                       for p in proxies]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()

        run(lambda p: p.connect_any_pull_consumer(None))
        assert channel._connected_counts["MaxConsumers"] == 20
        with pytest.raises(CA.AdminLimitExceeded):
            admin.obtain_notification_pull_supplier(CA.ANY_EVENT)
        run(lambda p: p.disconnect_pull_supplier())
        assert channel._connected_counts["MaxConsumers"] == 0
        admin.obtain_notification_pull_supplier(CA.ANY_EVENT)

    def test_unsupported_times_are_not_offered(self, channel: Any) -> None:
        """validate_event_qos does not offer StartTime when StartTimeSupported is FALSE."""
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        proxy.set_qos([boolean("StartTimeSupported", False)])
        offered = {r.name for r in proxy.validate_event_qos([short("Priority", 1)])}
        assert "StartTime" not in offered and "StopTime" in offered

    def test_acknowledgment_needs_an_ack_proxy(self, channel: Any) -> None:
        """DeliveryReliability=Acknowledgment is accepted where Ack proxies are made (the
        channel, an admin), and UNSUPPORTED_VALUE on a proxy that has no acknowledge."""
        channel.set_qos([short("DeliveryReliability", 1)])
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.ANY_EVENT)  # Anys carry no SequenceNumber
        with pytest.raises(N.UnsupportedQoS) as info:
            proxy.set_qos([short("DeliveryReliability", 1)])
        assert info.value.qos_err[0].code == N.UNSUPPORTED_VALUE


@pytest.fixture
def stored_factory() -> Any:
    from cosnotify.channel.factory import EventChannelFactory
    from cosnotify.store import MemoryStore

    made = EventChannelFactory(store=MemoryStore())
    yield made
    made.close()


class TestValidateEventQoS:
    """Section 2.5.6.5: validate_event_qos "checks a QoS request to see if it could be
    supported in the header of a structured event"; section 2.5.6.6: "Only properties
    from the request that were in error are returned" (review 115)."""

    def _best_effort_admin_proxy(self, stored_factory: Any) -> Any:
        # A Persistent/Persistent channel (it keeps events) whose default SupplierAdmin
        # is BestEffort: its proxies inherit EventReliability=Persistent internally.
        channel, _ = stored_factory.create_channel(
            [short("ConnectionReliability", 1), short("EventReliability", 1)], [])
        admin = channel._get_default_supplier_admin()
        admin.set_qos([short("ConnectionReliability", 0)])
        return entry(channel)

    def test_a_property_not_asked_for_is_never_blamed(self, stored_factory: Any) -> None:
        proxy = self._best_effort_admin_proxy(stored_factory)
        proxy.validate_event_qos([])
        proxy.validate_event_qos([short("Priority", 3)])

    def test_persistent_header_is_judged_as_push_judges_it(self, stored_factory: Any) -> None:
        """Accepted by both where the channel keeps events. Table 2-4: Persistent "only
        has meaning when ConnectionReliability is also set to 1": on a BestEffort
        channel push raises BAD_QOS and validate_event_qos says UNAVAILABLE_VALUE,
        naming BestEffort."""
        proxy = self._best_effort_admin_proxy(stored_factory)
        proxy.push_structured_event(structured(header=[short("EventReliability", 1)]))
        proxy.validate_event_qos([short("EventReliability", 1)])

        channel, _ = stored_factory.create_channel([], [])
        proxy = entry(channel)
        with pytest.raises(CORBA.BAD_QOS):
            proxy.push_structured_event(structured(header=[short("EventReliability", 1)]))
        with pytest.raises(N.UnsupportedQoS) as info:
            proxy.validate_event_qos([short("EventReliability", 1)])
        (error,) = info.value.qos_err
        assert (error.name, error.code) == ("EventReliability", N.UNAVAILABLE_VALUE)
        assert error.available_range.high_val.value() == 0

    def test_one_error_per_property(self, channel: Any) -> None:
        """A StartTime of the wrong type while StartTimeSupported is FALSE is reported
        once, with the first failure (docs/qos.md, "Error codes")."""
        proxy = entry(channel)
        proxy.set_qos([boolean("StartTimeSupported", False)])
        with pytest.raises(N.UnsupportedQoS) as info:
            proxy.validate_event_qos([long_("StartTime", 5)])
        assert [(e.name, e.code) for e in info.value.qos_err] == [("StartTime", N.BAD_TYPE)]
        with pytest.raises(N.UnsupportedQoS) as info:
            proxy.validate_event_qos([utc("StartTime", 0)])
        assert [(e.name, e.code) for e in info.value.qos_err] == \
            [("StartTime", N.UNAVAILABLE_PROPERTY)]


def _utct_any(name: str, value: Any) -> Any:
    """What an in-process supplier can build: the UtcT TypeCode over any value."""
    return N.Property(name, CORBA.Any(TimeBase._tc_UtcT, value))


#: Not a UtcT (Table 2-6 BAD_TYPE: "The type supplied for the value of this property
#: is incorrect"), and UtcTs whose time is outside TimeBase::TimeT (BAD_VALUE).
_NOT_UTCT = [5, None, TimeBase.UtcT("soon", 0, 0, 0)]
_OUTSIDE_UTCT = [TimeBase.UtcT(-5, 0, 0, 0), TimeBase.UtcT(2**70, 0, 0, 0)]


class TestHeaderUtcT:
    """Table 2-4: StartTime and StopTime are TimeBase::UtcT. A header that "cannot be
    satisfied" raises BAD_QOS from push (section 2.5.6.7), not a crash (review 115)."""

    @pytest.mark.parametrize("name", ["StartTime", "StopTime"])
    @pytest.mark.parametrize("value", _NOT_UTCT + _OUTSIDE_UTCT)
    def test_push_raises_bad_qos(self, channel: Any, name: str, value: Any) -> None:
        supplier = entry(channel)
        with pytest.raises(CORBA.BAD_QOS):
            supplier.push_structured_event(structured(header=[_utct_any(name, value)]))

    @pytest.mark.parametrize("name", ["StartTime", "StopTime"])
    def test_validate_event_qos_codes(self, channel: Any, name: str) -> None:
        supplier = entry(channel)
        for value in _NOT_UTCT:
            with pytest.raises(N.UnsupportedQoS) as info:
                supplier.validate_event_qos([_utct_any(name, value)])
            assert [(e.name, e.code) for e in info.value.qos_err] == [(name, N.BAD_TYPE)]
        for value in _OUTSIDE_UTCT:
            with pytest.raises(N.UnsupportedQoS) as info:
                supplier.validate_event_qos([_utct_any(name, value)])
            (error,) = info.value.qos_err
            assert (error.name, error.code) == (name, N.BAD_VALUE)
            legal = error.available_range  # "A range of values which would be supported"
            assert (legal.low_val.value().time, legal.high_val.value().time) == (0, 2**64 - 1)

    def test_pulled_event_is_dropped_not_a_supplier_failure(self, channel: Any) -> None:
        """A pull-style proxy consumer has no caller to raise BAD_QOS to: the event is
        dropped (docs/qos.md), and the supplier is not counted as failing (Retries)."""
        from tests.channel.conftest import PullSupplier

        bad = structured(fields={"n": 0}, header=[_utct_any("StopTime", 5)])
        supplier = PullSupplier([bad] * 6 + [structured(fields={"n": 1})])
        sink = StructuredPushConsumer()
        out, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        out.connect_structured_push_consumer(sink)
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_pull_consumer(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_supplier(supplier)
        assert sink.wait_for(1)
        assert [number(e) for e in sink.received] == [1]
        assert not proxy.destroyed and not supplier.disconnected.is_set()


class TestDeliveryReliabilityInEffect:
    """Section 2.5.6.3: get_qos returns "the current QoS properties in effect". A proxy
    with no acknowledge (section 3.7) inherits no Acknowledgment from its admin: it
    reports None, and set_qos of what it reports is accepted (review 115)."""

    @pytest.mark.parametrize("obtain, ctype", [
        ("obtain_notification_push_supplier", CA.ANY_EVENT),
        ("obtain_notification_pull_supplier", CA.ANY_EVENT),
    ])
    def test_consumer_admin_side(self, channel: Any, obtain: str, ctype: Any) -> None:
        admin, _ = channel.new_for_consumers(CA.AND_OP)
        admin.set_qos([short("DeliveryReliability", 1)])
        proxy, _ = getattr(admin, obtain)(ctype)
        self._check(proxy)
        acked, _ = getattr(admin, obtain)(CA.STRUCTURED_EVENT)  # a ...Ack proxy
        assert qos_dict(acked.get_qos())["DeliveryReliability"] == 1
        acked.set_qos([short("DeliveryReliability", 1)])

    @pytest.mark.parametrize("obtain, ctype", [
        ("obtain_notification_push_consumer", CA.ANY_EVENT),
        ("obtain_notification_pull_consumer", CA.STRUCTURED_EVENT),
        ("obtain_notification_pull_consumer", CA.SEQUENCE_EVENT),
    ])
    def test_supplier_admin_side(self, channel: Any, obtain: str, ctype: Any) -> None:
        admin, _ = channel.new_for_suppliers(CA.AND_OP)
        admin.set_qos([short("DeliveryReliability", 1)])
        self._check(getattr(admin, obtain)(ctype)[0])
        numbered, _ = admin.obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
        assert qos_dict(numbered.get_qos())["DeliveryReliability"] == 1

    def _check(self, proxy: Any) -> None:
        assert qos_dict(proxy.get_qos())["DeliveryReliability"] == 0
        proxy.set_qos([short("DeliveryReliability", 0)])
        offered = {r.name for r in proxy.validate_qos([])}
        assert "DeliveryReliability" not in offered  # no other value would be accepted
        with pytest.raises(N.UnsupportedQoS) as info:
            proxy.set_qos([short("DeliveryReliability", 1)])
        assert info.value.qos_err[0].code == N.UNSUPPORTED_VALUE

    def test_an_older_record_is_restored_in_effect(self, stored_factory: Any) -> None:
        """A record saved before this fix kept the inherited Acknowledgment."""
        from cosnotify.channel.factory import EventChannelFactory

        store = stored_factory._service.topology.store
        channel, channel_id = stored_factory.create_channel(
            [short("ConnectionReliability", 1), short("DeliveryReliability", 1)], [])
        admin, admin_id = channel.new_for_consumers(CA.AND_OP)
        proxy, proxy_id = admin.obtain_notification_push_supplier(CA.ANY_EVENT)
        with proxy._qos_lock:  # what the old code held and saved
            proxy._qos["DeliveryReliability"] = 1
            proxy._qos_explicit.add("DeliveryReliability")
        proxy._persist()
        stored_factory.close()
        with EventChannelFactory(store=store) as again:
            restored = again.get_event_channel(channel_id).get_consumeradmin(
                admin_id).get_proxy_supplier(proxy_id)
            assert qos_dict(restored.get_qos())["DeliveryReliability"] == 0
