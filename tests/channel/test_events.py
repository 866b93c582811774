"""Events flow through the channel in every form (TAO's Events and MultiTypes; Table 2-2)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import omniORB
import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.counters import read
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.service import ServiceConfig
from cosnotify.store import MemoryStore
from tests.channel.conftest import (
    AnyPushConsumer,
    PullConsumer,
    PullSupplier,
    SequencePushConsumer,
    StructuredPushConsumer,
    number,
    same_any,
    structured,
)
from tests.corba.peer_cdr import received_ulonglongs
from tests.durability.conftest import DURABLE_QOS


def push_consumer(channel: Any, ctype: Any) -> tuple[Any, Any]:
    consumer = {CA.ANY_EVENT: AnyPushConsumer, CA.STRUCTURED_EVENT: StructuredPushConsumer,
                CA.SEQUENCE_EVENT: SequencePushConsumer}[ctype]()
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(ctype)
    name = {CA.ANY_EVENT: "connect_any_push_consumer",
            CA.STRUCTURED_EVENT: "connect_structured_push_consumer",
            CA.SEQUENCE_EVENT: "connect_sequence_push_consumer"}[ctype]
    getattr(proxy, name)(consumer)
    return proxy, consumer


def push_supplier(channel: Any, ctype: Any) -> Callable[[Any], None]:
    """Connect a push supplier of ``ctype``; returns a function that pushes an event in
    that form: the event itself, a one-event sequence, or (Any) its number as a long."""
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(ctype)
    if ctype == CA.ANY_EVENT:
        proxy.connect_any_push_supplier(None)
        return lambda event: proxy.push(CORBA.Any(CORBA.TC_long, number(event)))
    if ctype == CA.STRUCTURED_EVENT:
        proxy.connect_structured_push_supplier(None)
        return proxy.push_structured_event
    proxy.connect_sequence_push_supplier(None)
    return lambda event: proxy.push_structured_events([event])


def numbers_of(received: list[Any], ctype: Any) -> list[int]:
    """Recover the event numbers whatever form they were delivered in."""
    out = []
    for item in received:
        for event in (item if isinstance(item, list) else [item]):
            if isinstance(event, CORBA.Any):
                value = event.value()
                out.append(value if isinstance(value, int) else number(value))
            elif event.header.fixed_header.event_type.type_name == "%ANY":
                out.append(event.remainder_of_body.value())
            else:
                out.append(number(event))
    return out


class TestEvents:
    def test_one_supplier_two_consumers_each_receive_everything(self, channel: Any) -> None:
        """TAO Events: every event reaches both consumers, in order."""
        _, first = push_consumer(channel, CA.STRUCTURED_EVENT)
        _, second = push_consumer(channel, CA.STRUCTURED_EVENT)
        send = push_supplier(channel, CA.STRUCTURED_EVENT)
        for i in range(100):
            send(structured(fields={"n": i}))
        for consumer in (first, second):
            assert consumer.wait_for(100)
            assert [number(e) for e in consumer.received] == list(range(100))

    def test_unconnected_proxy_receives_nothing(self, channel: Any) -> None:
        """Events are queued only for connected proxies."""
        idle, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        push_supplier(channel, CA.STRUCTURED_EVENT)(structured(fields={"n": 1}))
        assert idle.pending == 0


ALL_TYPES = [CA.ANY_EVENT, CA.STRUCTURED_EVENT, CA.SEQUENCE_EVENT]


class TestMultiTypes:
    @pytest.mark.parametrize("supplier_type", ALL_TYPES, ids=lambda t: t._n)
    @pytest.mark.parametrize("consumer_type", ALL_TYPES, ids=lambda t: t._n)
    def test_every_supplier_form_reaches_every_consumer_form(
            self, channel: Any, supplier_type: Any, consumer_type: Any) -> None:
        """TAO MultiTypes: Any, Structured and Sequence suppliers reach all consumer forms."""
        _, consumer = push_consumer(channel, consumer_type)
        send = push_supplier(channel, supplier_type)
        for i in range(5):
            send(structured(fields={"n": i}))
        assert consumer.wait_for(5)
        assert numbers_of(consumer.received, consumer_type) == list(range(5))


class TestTranslation:
    def test_any_becomes_structured_with_percent_any(self, channel: Any) -> None:
        """Table 2-2: an Any reaches a structured consumer as type %ANY, empty domain,
        the Any in remainder_of_body."""
        _, consumer = push_consumer(channel, CA.STRUCTURED_EVENT)
        push_supplier(channel, CA.ANY_EVENT)(structured(fields={"n": 42}))
        assert consumer.wait_for(1)
        event = consumer.received[0]
        assert event.header.fixed_header.event_type.domain_name == ""
        assert event.header.fixed_header.event_type.type_name == "%ANY"
        assert same_any(event.remainder_of_body, CORBA.Any(CORBA.TC_long, 42))

    def test_structured_becomes_an_any_holding_it(self, channel: Any) -> None:
        """Table 2-2: a structured event reaches an Any consumer as an Any of StructuredEvent."""
        _, consumer = push_consumer(channel, CA.ANY_EVENT)
        sent = structured(fields={"n": 3})
        push_supplier(channel, CA.STRUCTURED_EVENT)(sent)
        assert consumer.wait_for(1)
        delivered = consumer.received[0]
        assert delivered.typecode().equivalent(N._tc_StructuredEvent)
        assert delivered.value() is sent  # in process: the very event, not a copy

    def test_percent_any_wrapper_is_unwrapped_on_entry(self, channel: Any) -> None:
        """Section 2.1.4: a %ANY structured event reaches Any consumers as the original Any."""
        _, consumer = push_consumer(channel, CA.ANY_EVENT)
        wrapped = N.StructuredEvent(
            N.EventHeader(N.FixedEventHeader(N.EventType("", "%ANY"), ""), []), [],
            CORBA.Any(CORBA.TC_string, "inner"))
        push_supplier(channel, CA.STRUCTURED_EVENT)(wrapped)
        assert consumer.wait_for(1)
        assert same_any(consumer.received[0], CORBA.Any(CORBA.TC_string, "inner"))

    def test_any_holding_structured_is_unwrapped_on_entry(self, channel: Any) -> None:
        """Section 2.1.4: an Any holding a StructuredEvent reaches structured consumers
        as that event, not wrapped again."""
        _, consumer = push_consumer(channel, CA.STRUCTURED_EVENT)
        inner = structured(type_name="Inner", fields={"n": 8})
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.ANY_EVENT)
        proxy.connect_any_push_supplier(None)
        proxy.push(CORBA.Any(N._tc_StructuredEvent, inner))
        assert consumer.wait_for(1)
        assert consumer.received[0] is inner

    def test_a_wire_any_of_an_alias_of_structured_is_unwrapped(self, channel: Any,
                                                               omniorb: Any) -> None:
        """Section 2.1.4 also holds for an Any that came through CDR whose TypeCode is an
        alias of StructuredEvent (its descriptor is read, not TypeCode methods)."""
        alias = omniorb.create_alias_tc("IDL:cosnotify.test/Notice:1.0", "Notice",
                                        N._tc_StructuredEvent)
        sent = CORBA.Any(alias, structured(type_name="Notice", fields={"n": 4}))
        wire = omniORB.cdrUnmarshal(CORBA.TC_any, omniORB.cdrMarshal(CORBA.TC_any, sent))
        assert wire._t._d is not N._tc_StructuredEvent._d
        _, consumer = push_consumer(channel, CA.STRUCTURED_EVENT)
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.ANY_EVENT)
        proxy.connect_any_push_supplier(None)
        proxy.push(wire)
        assert consumer.wait_for(1)
        event = consumer.received[0]
        assert event.header.fixed_header.event_type.type_name == "Notice"
        assert number(event) == 4

    def test_sequence_of_n_is_n_events(self, channel: Any) -> None:
        """Section 2.1.4: a pushed sequence of n reaches a structured consumer as n events."""
        _, consumer = push_consumer(channel, CA.STRUCTURED_EVENT)
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.SEQUENCE_EVENT)
        proxy.connect_sequence_push_supplier(None)
        proxy.push_structured_events([structured(fields={"n": i}) for i in range(7)])
        assert consumer.wait_for(7)
        assert [number(e) for e in consumer.received] == list(range(7))


class TestPullSuppliers:
    def test_pull_and_try_pull_in_every_form(self, channel: Any) -> None:
        """Pull proxies return queued events; try_pull reports has_event FALSE when empty."""
        admin = channel._get_default_consumer_admin()
        any_proxy, _ = admin.obtain_notification_pull_supplier(CA.ANY_EVENT)
        structured_proxy, _ = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        sequence_proxy, _ = admin.obtain_notification_pull_supplier(CA.SEQUENCE_EVENT)
        any_proxy.connect_any_pull_consumer(PullConsumer())
        structured_proxy.connect_structured_pull_consumer(None)
        sequence_proxy.connect_sequence_pull_consumer(None)
        send = push_supplier(channel, CA.STRUCTURED_EVENT)
        for i in range(3):
            send(structured(fields={"n": i}))
        assert number(any_proxy.pull().value()) == 0
        value, has_event = any_proxy.try_pull()
        assert has_event and number(value.value()) == 1
        assert number(structured_proxy.pull_structured_event()) == 0
        batch, has_event = sequence_proxy.try_pull_structured_events(10)
        assert has_event and [number(e) for e in batch] == [0]  # MaximumBatchSize is 1
        assert number(any_proxy.try_pull()[0].value()) == 2
        assert any_proxy.try_pull()[1] is False
        value, has_event = structured_proxy.try_pull_structured_event()
        assert has_event and number(value) == 1  # each proxy has its own copy


class TestPullConsumers:
    @pytest.mark.parametrize("ctype", ALL_TYPES, ids=lambda t: t._n)
    def test_channel_pulls_from_each_supplier_form(self, channel: Any, ctype: Any) -> None:
        """Pull-style proxy consumers poll their supplier with try_pull* and forward events."""
        _, consumer = push_consumer(channel, CA.STRUCTURED_EVENT)
        events = [structured(fields={"n": i}) for i in range(4)]
        if ctype == CA.ANY_EVENT:
            supplier = PullSupplier([CORBA.Any(CORBA.TC_long, i) for i in range(4)])
        else:
            supplier = PullSupplier(events)
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_pull_consumer(ctype)
        name = {CA.ANY_EVENT: "connect_any_pull_supplier",
                CA.STRUCTURED_EVENT: "connect_structured_pull_supplier",
                CA.SEQUENCE_EVENT: "connect_sequence_pull_supplier"}[ctype]
        getattr(proxy, name)(supplier)
        assert consumer.wait_for(4)
        assert numbers_of(consumer.received, CA.STRUCTURED_EVENT) == [0, 1, 2, 3]

    def test_a_poll_that_fails_before_pulling_polls_again(self, manual_channel: Any,
                                                           clock: Any) -> None:
        """Section 2.5.7: a pull-style proxy consumer stops pulling only "until the total
        number of undelivered events within the channel is decreased"; a poll whose
        check of the channel raises is scheduled again all the same (review 129: the
        raise left the poll marked as running, and it never polled again)."""
        supplier = PullSupplier()
        proxy, _ = manual_channel._get_default_supplier_admin(
        ).obtain_notification_pull_consumer(CA.STRUCTURED_EVENT)
        checks = manual_channel._full_and_rejecting
        failing = [True]

        def check_once_failing() -> bool:
            if failing.pop() if failing else False:
                raise RuntimeError("the channel's check failed")
            return bool(checks())

        manual_channel._full_and_rejecting = check_once_failing
        dispatcher = manual_channel._service.dispatcher
        proxy.connect_structured_pull_supplier(supplier)
        assert dispatcher.wait_idle()
        assert supplier.polls == 0 and not failing  # the first poll failed before pulling
        _, consumer = push_consumer(manual_channel, CA.STRUCTURED_EVENT)
        supplier.add(structured(fields={"n": 5}))
        clock.advance(1.0)  # pull_interval
        assert consumer.wait_for(1)
        assert supplier.polls >= 1 and number(consumer.received[0]) == 5

    def test_an_event_refused_for_good_is_dropped_not_kept(self, omniorb: Any) -> None:
        """A pulled event a persistent channel refuses for good (BAD_PARAM: an unsigned
        long long >= 2**63 in a sequence, docs/orb.md) is dropped and counted as
        rejected, and the events after it are pulled (review 141: it was kept in
        ``_pending`` and refused at every poll, and nothing more was ever pulled)."""
        clock = ManualClock()
        with EventChannelFactory(ServiceConfig(pull_interval=1.0, slow_push=0),
                                 clock=clock, store=MemoryStore()) as factory:
            channel, _ = factory.create_channel(DURABLE_QOS, [])
            _, consumer = push_consumer(channel, CA.STRUCTURED_EVENT)
            supplier = PullSupplier([structured(fields={"big": received_ulonglongs(),
                                                        "n": 0}),
                                     structured(fields={"n": 1}), structured(fields={"n": 2})])
            proxy, _ = channel._get_default_supplier_admin(
            ).obtain_notification_pull_consumer(CA.STRUCTURED_EVENT)
            proxy.connect_structured_pull_supplier(supplier)
            assert consumer.wait_for(2)
            assert [number(e) for e in consumer.received] == [1, 2]
            assert proxy._pending == []
            assert read(proxy._rejected) == 1 and proxy._failures == 0

    @pytest.mark.parametrize("refusal, kept", [
        (CORBA.IMP_LIMIT, True), (CORBA.NO_RESOURCES, True), (CORBA.TRANSIENT, True),
        (CORBA.BAD_PARAM, False), (CORBA.BAD_QOS, False), (CORBA.INTERNAL, False),
    ], ids=lambda v: v.__name__ if isinstance(v, type) else str(v))
    def test_only_a_refusal_for_now_keeps_the_event(self, manual_channel: Any, clock: Any,
                                                    refusal: Any, kept: bool) -> None:
        """IMP_LIMIT, NO_RESOURCES and TRANSIENT keep the pulled event for the next poll
        (section 2.5.7); any other refusal drops it, counted as rejected (review 141)."""
        _, consumer = push_consumer(manual_channel, CA.STRUCTURED_EVENT)
        forward = manual_channel._forward
        refusing = [True]

        def refuse_event_0(event: Any) -> None:
            if refusing[0] and number(event.structured) == 0:
                raise refusal(0, CORBA.COMPLETED_NO)
            forward(event)

        manual_channel._forward = refuse_event_0
        supplier = PullSupplier([structured(fields={"n": 0}), structured(fields={"n": 1})])
        proxy, _ = manual_channel._get_default_supplier_admin(
        ).obtain_notification_pull_consumer(CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_supplier(supplier)
        dispatcher = manual_channel._service.dispatcher
        assert dispatcher.wait_idle()
        assert len(proxy._pending) == (1 if kept else 0)  # nothing pulled after it
        refusing[0] = False
        clock.advance(1.0)  # pull_interval: a paused poll comes again
        assert consumer.wait_for(2 if kept else 1)
        assert dispatcher.wait_idle()
        assert [number(e) for e in consumer.received] == ([0, 1] if kept else [1])
        assert read(proxy._rejected) == (0 if kept else 1) and proxy._failures == 0
