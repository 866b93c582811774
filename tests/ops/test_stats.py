"""Counters kept by the core, read through ``cosnotify.stats``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter as F

import cosnotify
from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.service import ServiceConfig
from tests.channel.conftest import (
    StructuredPushConsumer,
    structured,
    structured_supplier,
)

WAIT = 10.0


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def factory(clock: ManualClock) -> Iterator[EventChannelFactory]:
    made = EventChannelFactory(clock=clock)
    yield made
    made.close(wait=False)


@pytest.fixture
def channel(factory: EventChannelFactory) -> Any:
    return factory.create_channel([], [])[0]


def proxies(snapshot: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """Every proxy of the first channel whose kind ends with ``kind``."""
    return [proxy for admin in snapshot["channels"][0]["admins"]
            for proxy in admin["proxies"] if proxy["kind"].endswith(kind)]


def pull_proxy(channel: Any, qos: list[Any] | None = None) -> Any:
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
        CA.STRUCTURED_EVENT)
    if qos:
        proxy.set_qos(qos)
    proxy.connect_structured_pull_consumer(None)
    return proxy


def long_qos(name: str, value: int) -> Any:
    return N.Property(name, CORBA.Any(CORBA.TC_long, value))


class FailingConsumer(StructuredPushConsumer):
    """A push consumer whose every push raises TRANSIENT."""

    def push_structured_event(self, event: Any) -> None:
        self.record(event)
        raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)


class TestSupplierCounters:
    """Per proxy supplier: queued, delivered, discarded, expired, failed, depth."""

    def test_pushed_events_are_counted_queued_and_delivered(self, factory: Any,
                                                             channel: Any) -> None:
        """Five events pushed to a consumer: five queued, five delivered, none waiting."""
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        consumer = StructuredPushConsumer()
        proxy.connect_structured_push_consumer(consumer)
        supplier = structured_supplier(channel)
        for i in range(5):
            supplier.push_structured_event(structured(name=f"e{i}"))
        assert consumer.wait_for(5)
        assert factory.service.dispatcher.wait_idle(WAIT)
        [got] = proxies(cosnotify.stats(factory), "push supplier")
        assert got["counters"]["queued"] == 5
        assert got["counters"]["delivered"] == 5
        assert got["counters"]["depth"] == 0
        assert got["client"] == "in-process"

    def test_pulled_events_are_delivered_and_the_rest_wait(self, factory: Any,
                                                           channel: Any) -> None:
        """Three queued, two pulled: two delivered, depth one."""
        proxy = pull_proxy(channel)
        supplier = structured_supplier(channel)
        for i in range(3):
            supplier.push_structured_event(structured(name=f"e{i}"))
        assert proxy.try_pull_structured_event()[1]
        assert proxy.try_pull_structured_event()[1]
        [got] = proxies(cosnotify.stats(factory), "pull supplier")
        assert (got["counters"]["queued"], got["counters"]["delivered"],
                got["counters"]["depth"]) == (3, 2, 1)

    def test_max_events_per_consumer_discards_are_counted(self, factory: Any,
                                                          channel: Any) -> None:
        """MaxEventsPerConsumer 2 and five events: three discarded, limit 2 reported."""
        pull_proxy(channel, [long_qos("MaxEventsPerConsumer", 2)])
        supplier = structured_supplier(channel)
        for i in range(5):
            supplier.push_structured_event(structured(name=f"e{i}"))
        [got] = proxies(cosnotify.stats(factory), "pull supplier")
        assert got["counters"]["discarded"] == 3
        assert got["counters"]["depth"] == 2
        assert got["queue_limit"] == 2
        assert got["max_events_per_consumer"] == 2

    def test_expired_events_are_counted(self, factory: Any, channel: Any,
                                        clock: ManualClock) -> None:
        """Events whose Timeout passed are dropped at the front and counted expired."""
        proxy = pull_proxy(channel, [N.Property("Timeout", CORBA.Any(CORBA.TC_ulonglong,
                                                                     10 * 10**7))])
        supplier = structured_supplier(channel)
        supplier.push_structured_event(structured(name="a"))
        supplier.push_structured_event(structured(name="b"))
        clock.advance(20)
        assert not proxy.try_pull_structured_event()[1]
        [got] = proxies(cosnotify.stats(factory), "pull supplier")
        assert got["counters"]["expired"] == 2
        assert got["counters"]["delivered"] == 0

    def test_max_queue_length_discards_are_counted_as_removed(self, factory: Any,
                                                              channel: Any) -> None:
        """MaxQueueLength 2 and three events: the channel removed one copy."""
        channel.set_admin([N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 2))])
        pull_proxy(channel)
        supplier = structured_supplier(channel)
        for i in range(3):
            supplier.push_structured_event(structured(name=f"e{i}"))
        [got] = proxies(cosnotify.stats(factory), "pull supplier")
        assert got["counters"]["removed"] == 1
        assert got["counters"]["depth"] == 2

    def test_a_failed_push_is_counted_with_its_reason(self, factory: Any,
                                                      channel: Any) -> None:
        """A push that raises TRANSIENT: one failure, its time and reason, nothing delivered."""
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        consumer = FailingConsumer()
        proxy.connect_structured_push_consumer(consumer)
        structured_supplier(channel).push_structured_event(structured())
        assert consumer.wait_for(1)
        assert factory.service.dispatcher.wait_idle(WAIT)
        [got] = proxies(cosnotify.stats(factory), "push supplier")
        assert got["counters"]["failed"] == 1
        assert got["counters"]["delivered"] == 0
        assert got["counters"]["depth"] == 1  # kept for the retry
        assert got["last_failure"]["time"] == factory.service.clock.now()
        assert got["last_failure"]["reason"].startswith("TRANSIENT")


class TestConsumerCounters:
    """Per proxy consumer and per channel: received, rejected, events in."""

    def test_filter_rejections_are_counted(self, factory: Any, channel: Any) -> None:
        """Four events, a filter passing two: four received, two rejected, two in."""
        supplier = structured_supplier(channel)
        flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        flt.add_constraints([F.ConstraintExp([], "$n > 2")])
        supplier.add_filter(flt)
        for n in range(1, 5):
            supplier.push_structured_event(structured(fields={"n": n}))
        snapshot = cosnotify.stats(factory)
        [got] = proxies(snapshot, "push consumer")
        assert got["counters"] == {"received": 4, "rejected": 2}
        assert got["filters"] == [{"id": 1, "grammar": "EXTENDED_TCL",
                                   "constraints": ["$n > 2"]}]
        assert snapshot["channels"][0]["counters"]["events_in"] == 2

    def test_a_sequence_counts_each_event(self, factory: Any, channel: Any) -> None:
        """A sequence of three events is three received and three in."""
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.SEQUENCE_EVENT)
        proxy.connect_sequence_push_supplier(None)
        proxy.push_structured_events([structured(name=f"e{i}") for i in range(3)])
        snapshot = cosnotify.stats(factory)
        [got] = proxies(snapshot, "sequence push consumer")
        assert got["counters"]["received"] == 3
        assert snapshot["channels"][0]["counters"]["events_in"] == 3


class TestCountersOff:
    """ServiceConfig(counters=False) skips the per-event counts."""

    def test_nothing_per_event_is_counted(self) -> None:
        """With counters off, events flow and the per-event counts stay 0."""
        with EventChannelFactory(ServiceConfig(counters=False), clock=ManualClock()) as made:
            channel = made.create_channel([], [])[0]
            proxy = pull_proxy(channel)
            structured_supplier(channel).push_structured_event(structured())
            assert proxy.try_pull_structured_event()[1]
            snapshot = cosnotify.stats(made)
            [supplier] = proxies(snapshot, "pull supplier")
            [consumer] = proxies(snapshot, "push consumer")
            assert supplier["counters"]["queued"] == supplier["counters"]["delivered"] == 0
            assert consumer["counters"]["received"] == 0
            assert snapshot["channels"][0]["counters"]["events_in"] == 0


class TestShape:
    """The snapshot's layout and that it is plain JSON."""

    def test_the_snapshot_is_json(self, factory: Any, channel: Any) -> None:
        """json.dumps takes the snapshot as it is, and it reads back equal."""
        pull_proxy(channel)
        structured_supplier(channel).push_structured_event(structured())
        snapshot = cosnotify.stats(factory)
        assert json.loads(json.dumps(snapshot)) == snapshot

    def test_channels_admins_and_proxies_are_described(self, factory: Any,
                                                       channel: Any) -> None:
        """Each level carries its ids, kinds, QoS and admin properties."""
        pull_proxy(channel)
        structured_supplier(channel)
        snapshot = cosnotify.stats(factory)
        [described] = snapshot["channels"]
        assert described["id"] == 0
        assert described["qos"]["OrderPolicy"] == 0
        assert described["admin_properties"]["MaxQueueLength"] == 0
        kinds = {(a["id"], a["kind"], a["operator"]) for a in described["admins"]}
        assert kinds == {(0, "consumer", "AND_OP"), (0, "supplier", "AND_OP")}
        assert sorted(p["kind"] for a in described["admins"] for p in a["proxies"]) == [
            "structured pull supplier", "structured push consumer"]
        assert set(snapshot["workers"]) >= {"total", "busy", "lanes", "client_lanes"}

    def test_event_service_proxies_are_listed(self, factory: Any, channel: Any) -> None:
        """Event Service style admins and proxies appear with id None."""
        proxy = channel.for_consumers().obtain_push_supplier()
        del proxy
        snapshot = cosnotify.stats(factory)
        kinds = [(a["kind"], [p["kind"] for p in a["proxies"]])
                 for a in snapshot["channels"][0]["admins"] if a["id"] is None]
        assert kinds == [("event service consumer", ["event service push supplier"])]


class TestReviewFindings:
    """Counter paths an adversarial review found wrong (issue 17)."""

    def test_an_ack_pull_redelivery_counts_once(self, factory: EventChannelFactory,
                                                clock: ManualClock) -> None:
        """An unacknowledged event pulled again after RetryInterval is one delivery."""
        channel = factory.create_channel([], [])[0]
        admin, _ = channel.new_for_consumers(CA.AND_OP)
        admin.set_qos([N.Property("DeliveryReliability", CORBA.Any(CORBA.TC_short, 1))])
        proxy, _ = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        structured_supplier(channel).push_structured_event(structured())
        assert proxy.try_pull_structured_event()[1]
        clock.advance(1.0)  # past RetryInterval: the event is given again
        assert proxy.try_pull_structured_event()[1]
        [counters] = [p["counters"] for p in proxies(cosnotify.stats(factory), "supplier")
                      if p["kind"].startswith("structured pull")]
        assert (counters["queued"], counters["delivered"], counters["depth"]) == (1, 1, 0)

    def test_events_a_sequence_push_had_refused_are_not_counted_in(
            self, factory: EventChannelFactory) -> None:
        """A sequence of 3 into a channel full after 1 (RejectNewEvents): events_in is 1."""
        channel = factory.create_channel([], [
            N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 1)),
            N.Property("RejectNewEvents", CORBA.Any(CORBA.TC_boolean, True))])[0]
        pull_proxy(channel)
        supplier, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.SEQUENCE_EVENT)
        supplier.connect_sequence_push_supplier(None)
        with pytest.raises(CORBA.IMP_LIMIT):
            supplier.push_structured_events([structured(name=str(i)) for i in range(3)])
        assert cosnotify.stats(factory)["channels"][0]["counters"]["events_in"] == 1

    def test_a_partial_push_failure_counts_what_went_on_both_levels(
            self, factory: EventChannelFactory) -> None:
        """Two of five pushes go, the third fails: the channel and the proxy both count 2."""
        import threading

        failed = threading.Event()

        class Flaky(StructuredPushConsumer):
            def push_structured_event(self, event: Any) -> None:
                if len(self.received) == 2:
                    failed.set()
                    raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)
                super().push_structured_event(event)

        channel = factory.create_channel([], [])[0]
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(Flaky())
        proxy.suspend_connection()
        supplier = structured_supplier(channel)
        for i in range(5):
            supplier.push_structured_event(structured(name=str(i)))
        proxy.resume_connection()
        assert failed.wait(WAIT)
        assert channel._service.dispatcher.wait_idle()
        counters = cosnotify.stats(factory)["channels"][0]["counters"]
        assert counters["delivered"] == counters["proxy_totals"]["delivered"] == 2


class TestDepartures:
    """Proxies that went away stay listed, latest last, with their final counters."""

    def test_a_consumer_given_up_on_is_listed_with_why(self, factory: Any, clock: ManualClock,
                                                       channel: Any) -> None:
        """Retries=0: the first failed push disconnects the consumer (section 2.5.5.1's
        Retries); the proxy leaves the tree and appears among the departures."""
        proxy, proxy_id = channel._get_default_consumer_admin(
        ).obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        proxy.set_qos([N.Property("Retries", CORBA.Any(CORBA.TC_long, 0))])
        consumer = FailingConsumer()
        proxy.connect_structured_push_consumer(consumer)
        structured_supplier(channel).push_structured_event(structured())
        assert consumer.wait_for(1)
        assert factory.service.dispatcher.wait_idle(WAIT)
        snapshot = cosnotify.stats(factory)
        assert proxies(snapshot, "push supplier") == []
        [gone] = [d for d in snapshot["channels"][0]["departed"]
                  if d["kind"] == "structured push supplier"]
        assert gone["id"] == proxy_id
        assert gone["admin"] == 0 and gone["admin_kind"] == "consumer"
        assert gone["state"] == "destroyed"
        assert gone["client"] == "in-process"
        assert gone["reason"].startswith("gave up after 1 call failed: TRANSIENT")
        assert gone["time"] == clock.now()
        assert gone["counters"]["failed"] == 1
        json.dumps(snapshot)

    def test_a_client_disconnect_is_a_departure_and_a_refused_qos_is_not(
            self, factory: Any, channel: Any) -> None:
        admin = channel._get_default_consumer_admin()
        proxy = pull_proxy(channel)
        proxy.disconnect_structured_pull_supplier()
        bad = [N.Property("OrderPolicy", CORBA.Any(CORBA.TC_short, 99))]
        with pytest.raises(N.UnsupportedQoS):
            admin.obtain_notification_push_supplier_with_qos(CA.STRUCTURED_EVENT, bad)
        departed = cosnotify.stats(factory)["channels"][0]["departed"]
        assert [d["reason"] for d in departed] == ["disconnected by its client"]

    def test_only_the_latest_are_kept(self, factory: Any, channel: Any) -> None:
        from cosnotify.channel.counters import DEPARTURES_KEPT

        ids = []
        for _ in range(DEPARTURES_KEPT + 3):
            proxy = pull_proxy(channel)
            ids.append(proxy._id)
            proxy.disconnect_structured_pull_supplier()
        departed = cosnotify.stats(factory)["channels"][0]["departed"]
        assert [d["id"] for d in departed] == ids[3:]

    def test_a_destroyed_channel_is_freed_with_its_departures(self, factory: Any) -> None:
        """Departures hold plain values, never the proxy (which refers to its channel):
        a destroyed channel whose proxies departed is garbage like any other."""
        import gc
        import weakref

        channel, _ = factory.create_channel([], [])
        pull_proxy(channel).disconnect_structured_pull_supplier()
        pull_proxy(channel)  # destroyed with the channel: a departure too
        assert len(cosnotify.stats(factory)["channels"][-1]["departed"]) == 1
        gone = weakref.ref(channel)
        channel.destroy()
        del channel
        gc.collect()
        assert gone() is None

    def test_a_proxy_leaving_during_a_snapshot_is_in_one_sum(
            self, factory: Any, channel: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        """Review 106: a proxy that left between the read of the departed totals and the
        listing of its admin was in neither sum, so ``proxy_totals`` (and the
        ``cosnotify_channel_*_total`` counters) fell for one snapshot. Leaving and the
        snapshot's two reads are one step each: the proxy is counted live or departed."""
        import importlib
        import threading

        stats_module = importlib.import_module("cosnotify.ops.stats")  # not ops.stats()

        supplier = structured_supplier(channel)
        for _ in range(3):
            supplier.push_structured_event(structured())
        before = cosnotify.stats(factory)["channels"][0]["counters"]["proxy_totals"]
        assert before["received"] == 3

        class Watched:
            """The channel's departure lock, saying when a teardown asks for it."""

            def __init__(self, lock: Any) -> None:
                self.lock, self.asked = lock, threading.Event()

            def __enter__(self) -> None:
                if threading.current_thread() is not threading.main_thread():
                    self.asked.set()
                self.lock.acquire()

            def __exit__(self, *exc: object) -> None:
                self.lock.release()

        watched = Watched(getattr(channel, "_departing", threading.Lock()))
        channel._departing = watched
        leaving = threading.Thread(target=supplier.disconnect_structured_push_consumer)
        read_retired = stats_module.retired

        def retired_then_leave(of: Any) -> dict[str, int]:
            gone = read_retired(of)
            leaving.start()  # the proxy leaves now: done, or waiting for the snapshot
            while leaving.is_alive() and not watched.asked.wait(0.01):
                pass
            return gone

        monkeypatch.setattr(stats_module, "retired", retired_then_leave)
        during = cosnotify.stats(factory)["channels"][0]["counters"]["proxy_totals"]
        leaving.join(WAIT)
        monkeypatch.setattr(stats_module, "retired", read_retired)
        after = cosnotify.stats(factory)["channels"][0]["counters"]["proxy_totals"]
        assert during["received"] == 3  # live in this one (left after it)
        assert after["received"] == 3  # departed in the next
        assert proxies(cosnotify.stats(factory), "push consumer") == []
