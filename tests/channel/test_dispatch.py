"""Delivery isolation and the consumer error policy (TAO RedGreen; sections 3.3.7.1, 3.4.12)."""

from __future__ import annotations

import gc
import threading
from typing import Any

from omniORB import CORBA

import CosEventComm
import CosNotification as N
import CosNotifyChannelAdmin as CA
import TimeBase

from cosnotify.channel.dispatch import Dispatcher
from tests.channel.conftest import (
    WAIT,
    PullSupplier,
    StructuredPushConsumer,
    number,
    structured,
)


class GatedConsumer(StructuredPushConsumer):
    """Blocks inside every push until the test opens the gate: a consumer slower than any."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.entered = threading.Event()

    def push_structured_event(self, event: Any) -> None:
        self.entered.set()
        assert self.gate.wait(WAIT), "test never opened the gate"
        super().push_structured_event(event)


class FailingConsumer(StructuredPushConsumer):
    """Raises ``error`` for the first ``failures`` pushes, then accepts."""

    def __init__(self, error: BaseException, failures: int) -> None:
        super().__init__()
        self.error = error
        self.failures = failures
        self.attempts = 0

    def push_structured_event(self, event: Any) -> None:
        self.attempts += 1
        if self.attempts <= self.failures:
            raise self.error
        super().push_structured_event(event)


def connect(channel: Any, consumer: Any) -> Any:
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_push_consumer(consumer)
    return proxy


def entry(channel: Any) -> Any:
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_push_supplier(None)
    return proxy


class TestRedGreen:
    def test_blocked_consumer_does_not_delay_fast_one_or_supplier(self, channel: Any) -> None:
        """TAO RedGreen: while one consumer is stuck in push, another gets every event and
        the supplier's pushes return."""
        slow, fast = GatedConsumer(), StructuredPushConsumer()
        connect(channel, slow)
        connect(channel, fast)
        supplier = entry(channel)
        for i in range(200):
            supplier.push_structured_event(structured(fields={"n": i}))
        assert slow.entered.wait(WAIT)
        assert fast.wait_for(200)
        assert [number(e) for e in fast.received] == list(range(200))
        assert slow.received == []
        slow.gate.set()
        assert slow.wait_for(200)
        assert [number(e) for e in slow.received] == list(range(200))

    def test_many_blocked_consumers_within_the_pool(self, channel: Any) -> None:
        """Several stuck consumers each hold one worker; the fast one is still served."""
        stuck = [GatedConsumer() for _ in range(5)]
        for consumer in stuck:
            connect(channel, consumer)
        fast = StructuredPushConsumer()
        connect(channel, fast)
        supplier = entry(channel)
        for i in range(50):
            supplier.push_structured_event(structured(fields={"n": i}))
        assert all(c.entered.wait(WAIT) for c in stuck)
        assert fast.wait_for(50)
        assert channel._service.dispatcher.thread_count <= channel._service.config.max_workers
        for consumer in stuck:
            consumer.gate.set()
        assert all(c.wait_for(50) for c in stuck)


class TestConsumerErrors:
    def test_disconnected_destroys_proxy_at_once(self, channel: Any) -> None:
        """Disconnected from the consumer makes the proxy destroy itself (3.3.7.1)."""
        consumer = FailingConsumer(CosEventComm.Disconnected(), failures=10)
        proxy = connect(channel, consumer)
        entry(channel).push_structured_event(structured())
        assert channel._service.dispatcher.wait_idle()
        assert proxy.destroyed and consumer.attempts == 1
        assert channel._get_default_consumer_admin()._get_push_suppliers() == []
        assert not consumer.disconnected.is_set()  # it said it was gone; no call back

    def test_object_not_exist_destroys_proxy_at_once(self, channel: Any) -> None:
        """OBJECT_NOT_EXIST from the consumer is treated like Disconnected."""
        consumer = FailingConsumer(CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO), failures=10)
        proxy = connect(channel, consumer)
        entry(channel).push_structured_event(structured())
        assert channel._service.dispatcher.wait_idle()
        assert proxy.destroyed and consumer.attempts == 1

    def test_transient_errors_are_retried_with_backoff(self, manual_channel: Any,
                                                       clock: Any) -> None:
        """Other errors are retried after RetryInterval, doubling, keeping the event first."""
        dispatcher = manual_channel._service.dispatcher
        consumer = FailingConsumer(CORBA.TRANSIENT(0, CORBA.COMPLETED_NO), failures=2)
        proxy = connect(manual_channel, consumer)
        proxy.set_qos([N.Property("RetryInterval", CORBA.Any(TimeBase._tc_TimeT, 10_000_000))])
        supplier = entry(manual_channel)
        supplier.push_structured_event(structured(fields={"n": 1}))
        supplier.push_structured_event(structured(fields={"n": 2}))
        assert dispatcher.wait_idle()
        assert consumer.attempts == 1 and consumer.received == []
        clock.advance(0.9)
        assert dispatcher.wait_idle() and consumer.attempts == 1   # 1 s not yet up
        clock.advance(0.1)
        assert dispatcher.wait_idle() and consumer.attempts == 2   # first retry at 1 s
        clock.advance(1.9)
        assert dispatcher.wait_idle() and consumer.attempts == 2   # second waits 2 s
        clock.advance(0.1)
        assert dispatcher.wait_idle()
        assert [number(e) for e in consumer.received] == [1, 2]
        assert not proxy.destroyed

    def test_a_retry_interval_of_0_still_backs_off(self, manual_channel: Any,
                                                    clock: Any) -> None:
        """Section 3.7.8.3: "The QoS property RetryInterval specifies interval between
        original invocation and first retry or between retries"; a RetryInterval of
        0 would retry a dead consumer in a tight loop, 0 doubled being 0: retries wait
        at least ``MIN_RETRY_INTERVAL`` (10 ms), doubling from there (review 129)."""
        from cosnotify.channel.proxy import MIN_RETRY_INTERVAL

        dispatcher = manual_channel._service.dispatcher
        consumer = FailingConsumer(CORBA.TRANSIENT(0, CORBA.COMPLETED_NO), failures=10**6)
        proxy = connect(manual_channel, consumer)
        proxy.set_qos([N.Property("RetryInterval", CORBA.Any(TimeBase._tc_TimeT, 0)),
                       N.Property("Retries", CORBA.Any(CORBA.TC_long, 10**6))])
        entry(manual_channel).push_structured_event(structured(fields={"n": 1}))
        assert dispatcher.wait_idle() and consumer.attempts == 1
        clock.advance(0.0)  # the time has not moved: no retry is due
        assert dispatcher.wait_idle() and consumer.attempts == 1
        clock.advance(MIN_RETRY_INTERVAL)
        assert dispatcher.wait_idle() and consumer.attempts == 2
        clock.advance(MIN_RETRY_INTERVAL)  # the second waits twice as long
        assert dispatcher.wait_idle() and consumer.attempts == 2
        clock.advance(MIN_RETRY_INTERVAL)
        assert dispatcher.wait_idle() and consumer.attempts == 3

    def test_a_retry_interval_of_0_still_backs_off_polls(self, manual_channel: Any,
                                                          clock: Any) -> None:
        """Section 3.7.8.3: "The QoS property RetryInterval specifies interval between
        original invocation and first retry or between retries": the channel's polls
        of a failing pull supplier with RetryInterval 0 were resubmitted at once, for
        ever; they wait ``MIN_RETRY_INTERVAL`` (review 129)."""
        from cosnotify.channel.proxy import MIN_RETRY_INTERVAL

        class Dead(PullSupplier):
            def try_pull_structured_event(self) -> tuple[Any, bool]:
                with self.cond:
                    self.polls += 1
                raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)

        dispatcher = manual_channel._service.dispatcher
        proxy, _ = manual_channel._get_default_supplier_admin(
        ).obtain_notification_pull_consumer(CA.STRUCTURED_EVENT)
        proxy.set_qos([N.Property("RetryInterval", CORBA.Any(TimeBase._tc_TimeT, 0)),
                       N.Property("Retries", CORBA.Any(CORBA.TC_long, 10**6))])
        supplier = Dead()
        proxy.connect_structured_pull_supplier(supplier)
        assert dispatcher.wait_idle(2.0), "the polls of a dead supplier never stop"
        assert supplier.polls == 1
        clock.advance(MIN_RETRY_INTERVAL)
        assert dispatcher.wait_idle() and supplier.polls == 2

    def test_persistent_failure_disconnects_after_retries(self, manual_channel: Any,
                                                          clock: Any) -> None:
        """After Retries failed retries the proxy gives up, tells the consumer, and is gone."""
        dispatcher = manual_channel._service.dispatcher
        consumer = FailingConsumer(RuntimeError("broken consumer"), failures=1000)
        proxy = connect(manual_channel, consumer)
        entry(manual_channel).push_structured_event(structured())
        for _ in range(10):
            assert dispatcher.wait_idle()
            clock.advance(60.0)
        assert dispatcher.wait_idle()
        assert proxy.destroyed
        assert consumer.attempts == 1 + 3  # the first try and three retries (Retries = 3)
        assert consumer.disconnected.is_set()

    def test_failing_consumer_does_not_affect_others(self, channel: Any) -> None:
        """While one consumer fails and backs off, another receives everything."""
        bad = FailingConsumer(RuntimeError("no"), failures=1000)
        good = StructuredPushConsumer()
        connect(channel, bad)
        connect(channel, good)
        supplier = entry(channel)
        for i in range(20):
            supplier.push_structured_event(structured(fields={"n": i}))
        assert good.wait_for(20)


class GatedTask:
    """A dispatcher task that blocks until the gate opens, counting how many run at once."""

    def __init__(self, gate: threading.Event, state: dict[str, int],
                 lock: threading.Lock) -> None:
        self.gate, self.state, self.lock = gate, state, lock

    def __call__(self) -> bool:
        with self.lock:
            self.state["now"] += 1
            self.state["most"] = max(self.state["most"], self.state["now"])
        assert self.gate.wait(WAIT)
        with self.lock:
            self.state["now"] -= 1
            self.state["done"] += 1
        return False


class TestLanes:
    """A lane runs at most ``limit`` of its tasks; the rest wait without holding a worker."""

    def test_a_lane_holds_at_most_its_limit(self) -> None:
        """At most ``lane_limit`` of a lane's tasks run; the rest park without a worker."""
        dispatcher = Dispatcher(2, 8, lane_limit=2)
        try:
            lane = dispatcher.lane(("10.0.0.1", 4000))
            gate, lock = threading.Event(), threading.Lock()
            state = {"now": 0, "most": 0, "done": 0}
            for _ in range(6):
                dispatcher.submit(GatedTask(gate, state, lock), lane)
            seen: list[tuple[int, int]] = []
            free = threading.Event()

            def unlaned() -> bool:
                # Submitted last: the queue is FIFO, so every lane task was taken by now.
                seen.append((lane.running, len(lane.parked)))
                free.set()
                return False

            dispatcher.submit(unlaned)
            assert free.wait(WAIT)  # ran while the lane's tasks were stuck
            assert seen == [(2, 4)]
            gate.set()
            assert dispatcher.wait_idle(WAIT)
            assert state == {"now": 0, "most": 2, "done": 6}
            assert lane.running == 0 and not lane.parked
        finally:
            dispatcher.close()

    def test_a_lane_lives_while_someone_holds_it(self) -> None:
        """One lane per key while referenced; it is dropped once nobody holds it."""
        dispatcher = Dispatcher(1, 4)
        try:
            lane = dispatcher.lane("client")
            assert dispatcher.lane("client") is lane
            assert lane.limit == 1  # a quarter of max_workers, at least one
            del lane
            gc.collect()
            assert "client" not in dispatcher._lanes
        finally:
            dispatcher.close()

    def test_a_hanging_client_holds_only_its_lane(self, channel: Any) -> None:
        """More consumers of one client hang than there are workers: another client's
        consumer still gets every event (before, 33 hanging consumers stalled the rest)."""
        service = channel._service
        service.client_key = lambda consumer: getattr(consumer, "client", None)
        frozen = [GatedConsumer() for _ in range(service.config.max_workers + 8)]
        for consumer in frozen:
            consumer.client = "frozen"  # type: ignore[attr-defined]
            connect(channel, consumer)
        healthy = StructuredPushConsumer()
        healthy.client = "healthy"  # type: ignore[attr-defined]
        connect(channel, healthy)
        supplier = entry(channel)
        for i in range(5):
            supplier.push_structured_event(structured(fields={"n": i}))
        assert healthy.wait_for(5)
        assert sum(c.entered.is_set() for c in frozen) <= service.dispatcher.lane_limit
        for consumer in frozen:
            consumer.gate.set()
        assert all(c.wait_for(5) for c in frozen)

    def test_failing_consumers_share_one_lane(self, manual_channel: Any, clock: Any) -> None:
        """Consumers whose push failed retry in the shared ``failing`` lane: however many
        then hang, they hold at most its limit of workers."""
        service = manual_channel._service
        failing = service.dispatcher.failing
        service.client_key = lambda consumer: id(consumer)  # every consumer its own client
        doomed = [FailingThenGated() for _ in range(failing.limit + 4)]
        proxies = [connect(manual_channel, consumer) for consumer in doomed]
        supplier = entry(manual_channel)
        supplier.push_structured_event(structured(fields={"n": 0}))
        assert service.dispatcher.wait_idle(WAIT)
        assert all(c.attempts == 1 for c in doomed)
        assert all(p._delivery_lane() is failing for p in proxies)
        clock.advance(1.0)  # every retry is due: all go to the failing lane
        seen: list[tuple[int, int]] = []
        probe = threading.Event()

        def after_the_retries() -> bool:
            seen.append((failing.running, len(failing.parked)))
            probe.set()
            return False

        service.submit(after_the_retries)
        assert probe.wait(WAIT)
        assert seen == [(failing.limit, 4)]
        for consumer in doomed:
            consumer.gate.set()
        assert all(c.wait_for(1) for c in doomed)
        assert all(p._delivery_lane() is p._lane for p in proxies)  # healthy again

    def test_failing_pull_suppliers_are_polled_in_the_failing_lane(
            self, manual_channel: Any, clock: Any) -> None:
        """Section 3.7.8.3: "The QoS property RetryInterval specifies interval between
        original invocation and first retry or between retries"; as failing push
        consumers' (docs/architecture.md, "Lanes"), a pull supplier's retried polls run
        in the shared ``failing`` lane, and in its client's lane once a poll succeeds
        (review 129: N dead suppliers in N processes held N workers)."""

        class FailingOnce(PullSupplier):
            def try_pull_structured_event(self) -> tuple[Any, bool]:
                if not self.polls:
                    self.polls += 1
                    raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)
                return super().try_pull_structured_event()

        service = manual_channel._service
        failing = service.dispatcher.failing
        proxy, _ = manual_channel._get_default_supplier_admin(
        ).obtain_notification_pull_consumer(CA.STRUCTURED_EVENT)
        lanes: list[Any] = []
        submit = service.submit

        def recording(task: Any, lane: Any = None) -> bool:
            if getattr(task, "__self__", None) is proxy:
                lanes.append(lane)
            return bool(submit(task, lane))

        service.submit = recording
        supplier = FailingOnce([structured(fields={"n": 0})])
        proxy.connect_structured_pull_supplier(supplier)
        assert service.dispatcher.wait_idle(WAIT)
        clock.advance(1.0)  # the retry (RetryInterval 0.1 s) succeeds
        assert service.dispatcher.wait_idle(WAIT)
        clock.advance(1.0)  # pull_interval: the next poll
        assert service.dispatcher.wait_idle(WAIT)
        # The first poll, the retry, its client's lane again once the retry pulled
        # (review 141), the next poll.
        assert lanes == [proxy._lane, failing, proxy._lane, proxy._lane]
        assert supplier.polls >= 3

    def test_a_recovered_pull_supplier_leaves_the_failing_lane(
            self, manual_channel: Any, clock: Any) -> None:
        """A supplier whose retried poll succeeds with events waiting is polled for them
        in its client's lane, as a recovered push consumer delivers (TestRecovery;
        review 141: the poll task was run again in the failing lane while it pulled)."""
        service = manual_channel._service
        failing = service.dispatcher.failing
        proxy, _ = manual_channel._get_default_supplier_admin(
        ).obtain_notification_pull_consumer(CA.STRUCTURED_EVENT)
        lanes: list[Any] = []  # of the proxy's poll tasks, as submitted
        submit = service.submit

        def recording(task: Any, lane: Any = None) -> bool:
            if getattr(task, "__self__", None) is proxy:
                lanes.append(lane)
            return bool(submit(task, lane))

        class FailingOnce(PullSupplier):
            """Fails its first poll; records the lane of the task polling (the proxy has
            one poll task at a time: the last one submitted, or it run again)."""

            def __init__(self, events: list[Any]) -> None:
                super().__init__(events)
                self.polled_in: list[Any] = []

            def try_pull_structured_event(self) -> tuple[Any, bool]:
                self.polled_in.append(lanes[-1])
                if len(self.polled_in) == 1:
                    raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)
                return super().try_pull_structured_event()

        service.submit = recording
        consumer = StructuredPushConsumer()
        connect(manual_channel, consumer)
        supplier = FailingOnce([structured(fields={"n": n}) for n in range(3)])
        proxy.connect_structured_pull_supplier(supplier)
        assert service.dispatcher.wait_idle(WAIT)
        clock.advance(1.0)  # the retry (RetryInterval 0.1 s) succeeds: 0, then 1 and 2
        assert consumer.wait_for(3)
        assert service.dispatcher.wait_idle(WAIT)
        # The first poll, the retry pulling 0, then 1, 2 and nothing: was all failing.
        assert supplier.polled_in == [proxy._lane, failing] + [proxy._lane] * 3


class TestRecovery:
    def test_a_recovered_consumer_leaves_the_failing_lane(self, manual_channel: Any,
                                                          clock: Any) -> None:
        """After one good push the proxy delivers in its client's lane again, so its
        backlog does not queue behind other clients' dead consumers."""
        service = manual_channel._service
        failing = service.dispatcher.failing
        consumer = FailingThenGated(good=1)
        proxy = connect(manual_channel, consumer)
        lanes: list[Any] = []
        submit = service.submit

        def recording(task: Any, lane: Any = None) -> None:
            if getattr(task, "__self__", None) is proxy:
                lanes.append(lane)
            submit(task, lane)

        service.submit = recording
        supplier = entry(manual_channel)
        supplier.push_structured_event(structured(fields={"n": 0}))
        assert service.dispatcher.wait_idle(WAIT)
        assert consumer.attempts == 1  # TRANSIENT: a retry is due in RetryInterval
        for n in (1, 2):  # queued behind the retry
            supplier.push_structured_event(structured(fields={"n": n}))
        clock.advance(1.0)
        assert consumer.entered.wait(WAIT)  # the push of 1: after the good retry of 0
        assert lanes == [None, failing, None]  # first try, retry, the rest
        consumer.gate.set()
        assert consumer.wait_for(3)
        assert [number(e) for e in consumer.received] == [0, 1, 2]


class FailingThenGated(GatedConsumer):
    """Fails its first push with TRANSIENT, accepts ``good`` more, then blocks in the
    next until the gate opens."""

    def __init__(self, good: int = 0) -> None:
        super().__init__()
        self.attempts = 0
        self.good = good

    def push_structured_event(self, event: Any) -> None:
        self.attempts += 1
        if self.attempts == 1:
            raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)
        if self.attempts <= 1 + self.good:
            StructuredPushConsumer.push_structured_event(self, event)
            return
        super().push_structured_event(event)


class TestClose:
    def test_work_still_queued_when_close_gives_up_never_starts(self) -> None:
        """close(timeout): tasks running go on, tasks queued or parked then are dropped."""
        dispatcher = Dispatcher(1, 1, lane_limit=1)
        gate, started = threading.Event(), threading.Event()
        ran: list[str] = []

        def blocker() -> bool:
            started.set()
            gate.wait(WAIT)
            ran.append("blocker")
            return False

        def later() -> bool:
            ran.append("later")
            return False

        lane = dispatcher.lane(("10.0.0.2", 4000))
        dispatcher.submit(blocker)
        assert started.wait(WAIT)
        dispatcher.submit(later)          # queued behind the only worker
        dispatcher.submit(later, lane)    # queued in a lane
        dispatcher.close(timeout=0.2)     # gives up while the blocker runs
        gate.set()
        assert dispatcher.wait_idle(WAIT)
        assert ran == ["blocker"]
