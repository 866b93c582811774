"""MaxQueueLength's count with a limit set once (RejectNewEvents TRUE): a steady
workload, fully delivered, leaves the count at 0 for every proxy kind, so a full
channel never stays full with nothing queued (channel/account.py). From review 95
of the count's epochs, which found no leak."""
from __future__ import annotations

import threading
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter as F

from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.service import ServiceConfig
from cosnotify.filter.factory import FilterFactory
from cosnotify.store import MemoryStore
from tests.channel.conftest import (
    PullSupplier,
    SequencePushConsumer,
    StructuredPushConsumer,
    number,
    structured,
)
from tests.qos.test_channel_qos import boolean, drain, entry, long_, pull_proxy, timet

N_EVENTS = 81  # a multiple of the batch size: a sequence push waits for a full batch
LIMIT = 4


def prop(name: str, value: Any, tc: Any = CORBA.TC_short) -> Any:
    return N.Property(name, CORBA.Any(tc, value))


ADMIN = [prop("MaxQueueLength", LIMIT, CORBA.TC_long),
         prop("RejectNewEvents", True, CORBA.TC_boolean)]
DURABLE = [prop("ConnectionReliability", N.Persistent), prop("EventReliability", N.Persistent)]
ACK = [prop("DeliveryReliability", 1)]


def seqno(event: Any) -> int | None:
    for p in event.header.variable_header:
        if p.name == "SequenceNumber":
            return p.value.value()
    return None


class Sink:
    def __init__(self, proxy_ref: list[Any], ack: bool) -> None:
        self.got: list[int] = []
        self.ref, self.ack = proxy_ref, ack

    def _one(self, e: Any) -> None:
        self.got.append(number(e))
        if self.ack:
            self.ref[0].acknowledge([seqno(e)])

    def push_structured_event(self, e: Any) -> None:
        self._one(e)

    def push_structured_events(self, es: list[Any]) -> None:
        for e in es:
            self._one(e)

    def disconnect_structured_push_consumer(self) -> None: ...
    def disconnect_sequence_push_consumer(self) -> None: ...


KINDS = [(kind, flags) for kind in ("pull", "seqpull", "push", "seqpush")
         for flags in ((), ("ack",), ("durable",), ("durable", "ack"), ("mapped",))]


def mapping_filter() -> Any:
    m = FilterFactory().create_mapping_filter("EXTENDED_TCL", CORBA.Any(CORBA.TC_short, 0))
    m.add_mapping_constraints([F.MappingConstraintPair(
        F.ConstraintExp([], "TRUE"), CORBA.Any(CORBA.TC_short, 1))])
    return m


@pytest.mark.parametrize("n_consumers", [1, 3])
@pytest.mark.parametrize(("kind", "flags"), KINDS,
                         ids=[f"{k}-{'+'.join(f) or 'plain'}" for k, f in KINDS])
def test_count_back_to_zero(kind: str, flags: tuple[str, ...], n_consumers: int) -> None:
    durable = "durable" in flags
    kwargs = {"store": MemoryStore()} if durable else {}
    with EventChannelFactory(ServiceConfig(routing="index"), **kwargs) as made:
        channel, _ = made.create_channel(DURABLE if durable else [], ADMIN)
        if durable:
            channel._event_log.window = 1
        admin, _ = channel.new_for_consumers(CA.AND_OP)
        if "ack" in flags:
            admin.set_qos(ACK)
        ctype = CA.SEQUENCE_EVENT if kind.startswith("seq") else CA.STRUCTURED_EVENT
        proxies, sinks = [], []
        for _ in range(n_consumers):
            if kind.endswith("pull"):
                proxy, _ = admin.obtain_notification_pull_supplier(ctype)
                (proxy.connect_sequence_pull_consumer if ctype == CA.SEQUENCE_EVENT
                 else proxy.connect_structured_pull_consumer)(None)
                sinks.append([])
            else:
                proxy, _ = admin.obtain_notification_push_supplier(ctype)
                sink = Sink([proxy], "ack" in flags)
                (proxy.connect_sequence_push_consumer if ctype == CA.SEQUENCE_EVENT
                 else proxy.connect_structured_push_consumer)(sink)
                sinks.append(sink)
            if ctype == CA.SEQUENCE_EVENT:
                proxy.set_qos([prop("MaximumBatchSize", 3, CORBA.TC_long)])
            if "mapped" in flags:
                proxy._set_priority_filter(mapping_filter())
            proxies.append(proxy)
        sp, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        sp.connect_structured_push_supplier(None)

        def drain() -> None:
            for proxy, got in zip(proxies, sinks):
                if not kind.endswith("pull"):
                    continue
                while True:
                    if ctype == CA.SEQUENCE_EVENT:
                        es = proxy.try_pull_structured_events(3)[0]
                        if not es:
                            break
                    else:
                        e, has = proxy.try_pull_structured_event()
                        if not has:
                            break
                        es = [e]
                    got.extend(number(e) for e in es)
                    if "ack" in flags:
                        proxy.acknowledge([s for s in (seqno(e) for e in es) if s is not None])

        def received() -> list[list[int]]:
            return [s if isinstance(s, list) else s.got for s in sinks]

        settle = channel._service.dispatcher.wait_idle
        rejected = 0
        for n in range(N_EVENTS):
            for _ in range(LIMIT + 2):  # a full channel: deliver, then push again
                try:
                    sp.push_structured_event(structured(fields={"n": n}))
                    break
                except CORBA.IMP_LIMIT:
                    rejected += 1
                    assert settle()
                    drain()
            else:
                pytest.fail(f"stuck at event {n}: count={channel._account.count}, "
                            f"received={[len(r) for r in received()]}")
            if n % 3 == 0:
                drain()
        assert settle()
        drain()
        for r in received():
            assert sorted(set(r)) == list(range(N_EVENTS))
        assert channel._account.count == 0, (channel._account.count, rejected)


class TestExpiredEvents:
    """Section 2.5.5.3: "If an event is not delivered within a specified time, then it
    should be discarded"; MaxQueueLength and MaxEventsPerConsumer count undelivered
    events (2.5.7), so expired copies leave them before anything is refused or
    discarded, not only when a consumer's take reaches them (review 129)."""

    def test_expired_events_do_not_fill_the_channel(self, manual_factory: Any,
                                                    clock: Any) -> None:
        """Section 2.5.7, RejectNewEvents TRUE: "When the total number of undelivered
        events within the channel is equal to MaxQueueLength ... attempts to push new
        events to the channel by push-style suppliers will result in the IMPL_LIMIT
        system exception being raised": expired events are not undelivered ones, so a
        channel holding only those takes a push."""
        channel, _ = manual_factory.create_channel(
            [], [long_("MaxQueueLength", 2), boolean("RejectNewEvents", True)])
        consumer = pull_proxy(channel)
        supplier = entry(channel)
        for n in range(2):
            supplier.push_structured_event(structured(fields={"n": n},
                                                      header=[timet("Timeout", 1)]))
        clock.advance(10)
        supplier.push_structured_event(structured(fields={"n": 2}))  # was IMP_LIMIT
        assert drain(consumer) == [2]
        assert channel._account.count == 0
        assert consumer._queue.expired == 2

    def test_the_channel_discards_an_expired_event_before_a_live_one(
            self, manual_factory: Any, clock: Any) -> None:
        """Section 2.5.7, RejectNewEvents FALSE: "one of the currently queued undelivered
        events being discarded by the channel to make room for the new event": the
        expired event goes, not the DiscardPolicy's live victim."""
        channel, _ = manual_factory.create_channel([], [long_("MaxQueueLength", 2)])
        consumer = pull_proxy(channel)
        supplier = entry(channel)
        supplier.push_structured_event(structured(fields={"n": 0}))
        supplier.push_structured_event(structured(fields={"n": 1},
                                                  header=[timet("Timeout", 1)]))
        clock.advance(10)
        supplier.push_structured_event(structured(fields={"n": 2}))
        assert drain(consumer) == [0, 2]  # was [2]: 0 discarded, expired 1 kept
        assert channel._account.count == 0

    def test_max_events_per_consumer_discards_an_expired_event_first(
            self, manual_channel: Any, clock: Any) -> None:
        """Section 2.5.5.3: "If an event is not delivered within a specified time, then it
        should be discarded": over MaxEventsPerConsumer (FifoOrder discards), the
        expired copy goes first."""
        consumer = pull_proxy(manual_channel)
        consumer.set_qos([long_("MaxEventsPerConsumer", 2),
                          prop("DiscardPolicy", N.FifoOrder)])
        supplier = entry(manual_channel)
        supplier.push_structured_event(structured(fields={"n": 0}))
        supplier.push_structured_event(structured(fields={"n": 1},
                                                  header=[timet("Timeout", 1)]))
        clock.advance(10)
        supplier.push_structured_event(structured(fields={"n": 2}))
        assert drain(consumer) == [0, 2]  # was [2]

    def test_a_suspended_consumers_expired_events_do_not_fill_the_channel(
            self, manual_factory: Any, clock: Any) -> None:
        """Section 3.4.13.2: while suspended, "events that time out prior to resumption of
        the connection will be discarded"; they leave MaxQueueLength's count."""
        channel, _ = manual_factory.create_channel(
            [], [long_("MaxQueueLength", 2), boolean("RejectNewEvents", True)])
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        consumer = StructuredPushConsumer()
        proxy.connect_structured_push_consumer(consumer)
        proxy.suspend_connection()
        supplier = entry(channel)
        for n in range(2):
            supplier.push_structured_event(structured(fields={"n": n},
                                                      header=[timet("Timeout", 1)]))
        clock.advance(10)
        supplier.push_structured_event(structured(fields={"n": 2}))  # was IMP_LIMIT
        proxy.resume_connection()
        assert consumer.wait_for(1)
        assert channel._service.dispatcher.wait_idle()
        assert [number(e) for e in consumer.received] == [2]

    def test_a_pull_supplier_is_polled_again_once_its_expired_events_go(
            self, manual_factory: Any, clock: Any) -> None:
        """Section 2.5.7: "each pull-style proxy consumer will stop attempting to perform
        pull invocations on its supplier until the total number of undelivered events
        within the channel is decreased": expired events are not undelivered ones."""
        channel, _ = manual_factory.create_channel(
            [], [long_("MaxQueueLength", 1), boolean("RejectNewEvents", True)])
        consumer = pull_proxy(channel)
        entry(channel).push_structured_event(
            structured(fields={"n": 0}, header=[timet("Timeout", 1)]))
        supplier = PullSupplier([structured(fields={"n": 1})])
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_pull_consumer(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_supplier(supplier)
        assert channel._service.dispatcher.wait_idle()
        assert supplier.polls == 0  # full: not polled
        clock.advance(10)
        assert channel._service.dispatcher.wait_idle()
        assert drain(consumer) == [1]

    def test_expired_copies_waiting_for_a_retry_do_not_fill_the_channel(
            self, manual_factory: Any, clock: Any) -> None:
        """Section 2.5.5.3: copies a push proxy holds to send again after a failed push
        (backing off for RetryInterval) leave the count once expired, and the soonest
        deadline still held so brings the next sweep (review 141: the sweep walked
        only the queue, and a channel of expired events refused pushes with IMP_LIMIT
        until the retry timer fired)."""
        channel, _ = manual_factory.create_channel(
            [], [long_("MaxQueueLength", 2), boolean("RejectNewEvents", True)])
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.set_qos([timet("RetryInterval", 20)])
        consumer = _Failing()
        proxy.connect_structured_push_consumer(consumer)
        supplier = entry(channel)
        for n, timeout in enumerate((1, 5)):
            supplier.push_structured_event(structured(fields={"n": n},
                                                      header=[timet("Timeout", timeout)]))
        assert channel._service.dispatcher.wait_idle()
        assert consumer.calls == 1 and len(proxy._retry) == 2  # backing off
        clock.advance(2)  # 0 expired, 1 not yet; the retry is due at 20 s
        supplier.push_structured_event(structured(fields={"n": 2}))  # was IMP_LIMIT
        assert [number(e.event.structured) for e in proxy._retry] == [1]
        clock.advance(4)  # 1 expired too: the sweep is not skipped for it
        supplier.push_structured_event(structured(fields={"n": 3}))  # was IMP_LIMIT
        assert proxy._retry == [] and proxy._queue.expired == 2
        assert channel._account.count == 2


    def test_a_copy_put_back_after_a_sweep_keeps_its_deadline_known(
            self, manual_factory: Any, clock: Any) -> None:
        """A copy being pushed when a sweep runs is in no queue; when the push fails and
        it waits for a retry, its deadline lowers the channel's next sweep time again
        (review 141: the sweep had forgotten it, and was skipped once it expired)."""
        channel, _ = manual_factory.create_channel(
            [], [long_("MaxQueueLength", 2), boolean("RejectNewEvents", True)])
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.set_qos([timet("RetryInterval", 20)])
        consumer = _Failing(gated=True)
        proxy.connect_structured_push_consumer(consumer)
        supplier = entry(channel)
        supplier.push_structured_event(structured(fields={"n": 0},
                                                  header=[timet("Timeout", 5)]))
        assert consumer.entered.wait(10)  # 0 is being pushed
        supplier.push_structured_event(structured(fields={"n": 1},
                                                  header=[timet("Timeout", 1)]))
        clock.advance(2)
        supplier.push_structured_event(structured(fields={"n": 2}))  # sweeps 1 out
        consumer.gate.set()  # the push of 0 fails: 0 waits for its retry
        assert channel._service.dispatcher.wait_idle()
        assert [number(e.event.structured) for e in proxy._retry] == [0]
        clock.advance(4)  # 0 expired; the retry is due at 22 s
        supplier.push_structured_event(structured(fields={"n": 3}))  # was IMP_LIMIT
        assert proxy._retry == [] and proxy._queue.expired == 2

    @pytest.mark.parametrize("ctype", [CA.STRUCTURED_EVENT, CA.SEQUENCE_EVENT],
                             ids=["structured", "sequence"])
    def test_expired_unacknowledged_copies_do_not_fill_the_channel(
            self, manual_factory: Any, clock: Any, ctype: Any) -> None:
        """Section 3.7 and 2.5.5.3: copies given and never acknowledged, past their
        deadline, leave the count at the channel's sweep, not at the next resend
        (review 141); one still due is given again (section 3.7.7.1)."""
        channel, _ = manual_factory.create_channel(
            [], [long_("MaxQueueLength", 2), boolean("RejectNewEvents", True)])
        admin = channel._get_default_consumer_admin()
        admin.set_qos(ACK)
        proxy, _ = admin.obtain_notification_push_supplier(ctype)
        proxy.set_qos([timet("RetryInterval", 20)])
        sink = Sink([proxy], ack=False)
        getattr(proxy, "connect_structured_push_consumer" if ctype == CA.STRUCTURED_EVENT
                else "connect_sequence_push_consumer")(sink)
        supplier = entry(channel)
        for n, timeout in enumerate((1, 50)):
            supplier.push_structured_event(structured(fields={"n": n},
                                                      header=[timet("Timeout", timeout)]))
        assert channel._service.dispatcher.wait_idle()
        assert sink.got == [0, 1] and channel._account.count == 2  # unacknowledged
        clock.advance(10)  # 0 expired; the resends are due at 20 s
        supplier.push_structured_event(structured(fields={"n": 2}))  # was IMP_LIMIT
        assert channel._service.dispatcher.wait_idle()
        clock.advance(25)  # the resends of 1 (due at 20 s) and 2 (given at 10 s)
        assert channel._service.dispatcher.wait_idle()
        assert sink.got[:3] == [0, 1, 2] and sorted(sink.got[3:]) == [1, 2]



class TestBatchesUnderMaxQueueLength:
    """Section 2.5.7: the channel holds at most MaxQueueLength events, so a proxy's batch
    is held to it as to its queue's limit (review 141: with MaximumBatchSize above it
    and PacingInterval 0 a batch never gathered; the channel stayed full, and every
    later push was refused, or discarded)."""

    @pytest.mark.parametrize("reject", [True, False])
    def test_a_sequence_push_proxy_delivers(self, manual_factory: Any,
                                            reject: bool) -> None:
        """Batches of MaxQueueLength go out; nothing is refused nor discarded."""
        channel, _ = manual_factory.create_channel(
            [], [long_("MaxQueueLength", 2), boolean("RejectNewEvents", reject)])
        sink = SequencePushConsumer()
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.SEQUENCE_EVENT)
        proxy.set_qos([long_("MaximumBatchSize", 5)])
        proxy.connect_sequence_push_consumer(sink)
        supplier = entry(channel)
        for n in range(6):
            supplier.push_structured_event(structured(fields={"n": n}))  # was IMP_LIMIT
            assert channel._service.dispatcher.wait_idle()
        assert [[number(e) for e in batch] for batch in sink.received] == [
            [0, 1], [2, 3], [4, 5]]
        assert proxy._queue.discarded == 0 and channel._account.count == 0

    def test_a_blocking_sequence_pull_returns_a_full_channel(
            self, manual_factory: Any) -> None:
        """``pull_structured_events`` gives the MaxQueueLength events the channel holds,
        not waiting for MaximumBatchSize (§3.3.13.1, PacingInterval 0)."""
        channel, _ = manual_factory.create_channel(
            [], [long_("MaxQueueLength", 2), boolean("RejectNewEvents", True)])
        proxy = pull_proxy(channel, CA.SEQUENCE_EVENT)
        proxy.set_qos([long_("MaximumBatchSize", 5)])
        supplier = entry(channel)
        for n in range(2):
            supplier.push_structured_event(structured(fields={"n": n}))
        got: list[int] = []
        puller = threading.Thread(target=lambda: got.extend(
            number(e) for e in proxy.pull_structured_events(5)))
        puller.start()
        puller.join(10)  # a bound on a failure only: it returns at once
        alive = puller.is_alive()
        if alive:  # release the pull: the next push fills its batch
            channel.set_admin([long_("MaxQueueLength", 0)])
            for n in range(2, 5):
                supplier.push_structured_event(structured(fields={"n": n}))
            puller.join(10)
        assert not alive and got == [0, 1]

    def test_lowering_max_queue_length_sends_what_now_fills_a_batch(
            self, manual_factory: Any) -> None:
        """set_admin of a lower MaxQueueLength kicks delivery: queued events that now
        fill a batch go without waiting for another push (which a full channel with
        RejectNewEvents TRUE would refuse)."""
        channel, _ = manual_factory.create_channel([], [])
        sink = SequencePushConsumer()
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.SEQUENCE_EVENT)
        proxy.set_qos([long_("MaximumBatchSize", 5)])
        proxy.connect_sequence_push_consumer(sink)
        supplier = entry(channel)
        for n in range(3):
            supplier.push_structured_event(structured(fields={"n": n}))
        assert channel._service.dispatcher.wait_idle()
        assert sink.received == []  # 3 of a batch of 5
        channel.set_admin([long_("MaxQueueLength", 2), boolean("RejectNewEvents", True)])
        assert channel._service.dispatcher.wait_idle()
        assert [number(e) for e in sink.flat()] == [0, 1]

class _Failing:
    """A structured push consumer whose every push fails for now (TRANSIENT); with
    ``gated``, each push waits for ``gate`` first (``entered`` says one does)."""

    def __init__(self, gated: bool = False) -> None:
        self.calls = 0
        self.entered = threading.Event()
        self.gate = threading.Event()
        if not gated:
            self.gate.set()

    def push_structured_event(self, event: Any) -> None:
        self.calls += 1
        self.entered.set()
        assert self.gate.wait(10)
        raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)

    def disconnect_structured_push_consumer(self) -> None:
        pass
