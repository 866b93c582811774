"""Clients that are omniORBpy object references, beside Python objects (public-api.md section 3).

The clients are servants activated in the session ORB, written as users write
them (a class inheriting the ``__POA`` skeleton), and the channel is handed
their references. A reference "as received" went through omniORB's
marshalling with the IDL parameter's static type, as the server layer gets
it: omniORB then gives it the stub class of the IOR's type id only when that
type is known here and derives from the static type.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from typing import Any

import omniORB
import pytest
from omniORB import CORBA

import CosEventChannelAdmin as ECA
import CosEventComm
import CosEventComm__POA
import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyComm
import CosNotifyComm__POA
import CosNotifyFilter as F
import CosNotifyFilter__POA

from cosnotify.channel.clients import connectable, narrowed
from tests.channel.conftest import (
    WAIT,
    AnyPushConsumer,
    PushSupplier,
    Recorder,
    StructuredPushConsumer,
    number,
    same_any,
    structured,
)

Activate = Callable[[Any], Any]

#: Stands for a client's own interface, derived from a COS one, that this process
#: has no stubs for: its references carry a type id omniORB does not know here.
UNKNOWN_HERE = "IDL:cosnotify.test/AuditConsumer:1.0"
_NOTIFY_PUBLISH = CosNotifyComm.NotifyPublish._NP_RepositoryId
_NOTIFY_SUBSCRIBE = CosNotifyComm.NotifySubscribe._NP_RepositoryId


@pytest.fixture
def activate(omniorb: Any) -> Iterator[Activate]:
    """Activates servants in the RootPOA; deactivates them after the test."""
    poa = omniorb.resolve_initial_references("RootPOA")
    oids: list[bytes] = []

    def activate_(servant: Any) -> Any:
        reference = servant._this()
        oids.append(poa.reference_to_id(reference))
        return reference

    yield activate_
    for oid in oids:
        try:
            poa.deactivate_object(oid)
        except Exception:  # noqa: BLE001, S110 - the test deactivated it already
            pass


def deactivate(reference: Any) -> None:
    poa = omniORB.orb.resolve_initial_references("RootPOA")
    poa.deactivate_object(poa.reference_to_id(reference))


def as_received(reference: Any, static_type: Any) -> Any:
    """``reference`` as a server unmarshals it for a parameter of ``static_type`` (a TypeCode)."""
    return omniORB.cdrUnmarshal(static_type, omniORB.cdrMarshal(CORBA._tc_Object, reference))


def settle(channel: Any) -> None:
    assert channel._service.dispatcher.wait_idle()


# -- servants, as users write them -----------------------------------------------------------


class StructuredConsumerServant(CosNotifyComm__POA.StructuredPushConsumer, Recorder):
    def push_structured_event(self, notification: Any) -> None:
        self.record(notification)

    def offer_change(self, added: list[Any], removed: list[Any]) -> None:
        Recorder.offer_change(self, added, removed)

    def disconnect_structured_push_consumer(self) -> None:
        self.disconnected.set()


class UnknownHereConsumerServant(StructuredConsumerServant):
    _NP_RepositoryId = UNKNOWN_HERE


class SequenceConsumerServant(CosNotifyComm__POA.SequencePushConsumer, Recorder):
    def push_structured_events(self, notifications: list[Any]) -> None:
        self.record(notifications)

    def offer_change(self, added: list[Any], removed: list[Any]) -> None:
        Recorder.offer_change(self, added, removed)

    def disconnect_sequence_push_consumer(self) -> None:
        self.disconnected.set()


class NotifyAnyConsumerServant(CosNotifyComm__POA.PushConsumer, Recorder):
    """CosNotifyComm::PushConsumer: an Any consumer that also takes offer_change."""

    _NP_RepositoryId = "IDL:cosnotify.test/AlarmSink:1.0"  # a derived type unknown here

    def push(self, data: Any) -> None:
        self.record(data)

    def offer_change(self, added: list[Any], removed: list[Any]) -> None:
        Recorder.offer_change(self, added, removed)

    def disconnect_push_consumer(self) -> None:
        self.disconnected.set()


class EventServiceConsumerServant(CosEventComm__POA.PushConsumer, Recorder):
    """CosEventComm::PushConsumer: knows nothing of offers."""

    def push(self, data: Any) -> None:
        self.record(data)

    def disconnect_push_consumer(self) -> None:
        self.disconnected.set()


class PullSupplierServant(CosNotifyComm__POA.StructuredPullSupplier, Recorder):
    def __init__(self, events: list[Any]) -> None:
        Recorder.__init__(self)
        self.queue = list(events)

    def pull_structured_event(self) -> Any:
        raise AssertionError("the channel must not block in pull_structured_event()")

    def try_pull_structured_event(self) -> tuple[Any, bool]:
        with self.cond:
            if self.queue:
                return self.queue.pop(0), True
        return structured(), False

    def subscription_change(self, added: list[Any], removed: list[Any]) -> None:
        Recorder.subscription_change(self, added, removed)

    def disconnect_structured_pull_supplier(self) -> None:
        self.disconnected.set()


class PushSupplierServant(CosNotifyComm__POA.StructuredPushSupplier, Recorder):
    def subscription_change(self, added: list[Any], removed: list[Any]) -> None:
        Recorder.subscription_change(self, added, removed)

    def disconnect_structured_push_supplier(self) -> None:
        self.disconnected.set()


class EvenFilterServant(CosNotifyFilter__POA.Filter):
    """A client's own filter: passes events with an even ``n``; one constraint on a type."""

    def __init__(self) -> None:
        self.callbacks: dict[int, Any] = {}
        self.detached: list[int] = []

    def get_all_constraints(self) -> list[Any]:
        return [F.ConstraintInfo(F.ConstraintExp([N.EventType("Telecom", "Alarm")], "$n % 2 == 0"),
                                 1)]

    def match_structured(self, filterable_data: Any) -> bool:
        return number(filterable_data) % 2 == 0

    def attach_callback(self, callback: Any) -> int:
        key = len(self.callbacks) + 1
        self.callbacks[key] = callback
        return key

    def detach_callback(self, callback: int) -> None:
        self.detached.append(callback)


def structured_consumer_proxy(channel: Any) -> Any:
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
        CA.STRUCTURED_EVENT)
    return proxy


def entry(channel: Any) -> Any:
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_push_supplier(None)
    return proxy


class TestConsumerReferences:
    def test_a_consumer_reference_receives_every_event_in_order(
            self, channel: Any, activate: Activate) -> None:
        """A StructuredPushConsumer servant's reference connects and gets each event once."""
        servant = StructuredConsumerServant()
        reference = as_received(activate(servant), CosNotifyComm._tc_StructuredPushConsumer)
        structured_consumer_proxy(channel).connect_structured_push_consumer(reference)
        supplier = entry(channel)
        for n in range(5):
            supplier.push_structured_event(structured(fields={"n": n}))
        assert servant.wait_for(5)
        assert [number(e) for e in servant.received] == [0, 1, 2, 3, 4]

    def test_another_interface_arriving_as_the_right_stub_is_type_error(
            self, channel: Any, activate: Activate) -> None:
        """A sequence consumer passed where a structured one is declared is refused:
        its stub class is the static type's, so the object itself is asked."""
        reference = as_received(activate(SequenceConsumerServant()),
                                CosNotifyComm._tc_StructuredPushConsumer)
        assert type(reference) is CosNotifyComm._objref_StructuredPushConsumer
        with pytest.raises(ECA.TypeError):
            structured_consumer_proxy(channel).connect_structured_push_consumer(reference)

    def test_a_derived_type_unknown_here_is_asked_and_accepted(
            self, channel: Any, activate: Activate) -> None:
        """A reference of a derived interface this process has no stubs for answers
        ``_is_a`` and is called through the stub, over the same omniORB reference."""
        servant = UnknownHereConsumerServant()
        reference = activate(servant)
        assert type(reference) is CORBA.Object  # nothing here says what it is
        proxy = structured_consumer_proxy(channel)
        proxy.connect_structured_push_consumer(reference)
        assert proxy._client._obj is reference._obj  # its call timeout is the reference's
        entry(channel).push_structured_event(structured(fields={"n": 7}))
        assert servant.wait_for(1)
        assert number(servant.received[0]) == 7

    def test_an_unreachable_reference_is_type_error(self, channel: Any,
                                                    activate: Activate) -> None:
        """A reference whose ``_is_a`` fails (the object is gone) is refused with TypeError."""
        reference = as_received(activate(UnknownHereConsumerServant()),
                                CosNotifyComm._tc_StructuredPushConsumer)
        deactivate(reference)
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            reference._is_a(CosNotifyComm.StructuredPushConsumer._NP_RepositoryId)
        with pytest.raises(ECA.TypeError):
            structured_consumer_proxy(channel).connect_structured_push_consumer(reference)

    def test_a_consumer_that_is_gone_loses_its_proxy(self, channel: Any,
                                                      activate: Activate) -> None:
        """OBJECT_NOT_EXIST from the omniORB call destroys the proxy at once (3.3.7.1)."""
        servant = StructuredConsumerServant()
        reference = activate(servant)
        proxy = structured_consumer_proxy(channel)
        proxy.connect_structured_push_consumer(reference)
        deactivate(reference)
        entry(channel).push_structured_event(structured())
        settle(channel)
        assert proxy.destroyed and servant.received == []
        assert not servant.disconnected.is_set()


class TestSupplierReferences:
    def test_the_channel_polls_a_pull_supplier_reference(self, channel: Any,
                                                         activate: Activate) -> None:
        """A StructuredPullSupplier servant is polled through its reference with try_pull."""
        servant = PullSupplierServant([structured(fields={"n": n}) for n in range(3)])
        sink = StructuredPushConsumer()
        structured_consumer_proxy(channel).connect_structured_push_consumer(sink)
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_pull_consumer(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_supplier(
            as_received(activate(servant), CosNotifyComm._tc_StructuredPullSupplier))
        assert sink.wait_for(3)
        assert [number(e) for e in sink.received] == [0, 1, 2]

    def test_a_push_consumer_is_not_a_pull_supplier(self, channel: Any,
                                                    activate: Activate) -> None:
        """A reference of the wrong interface for a pull supplier raises TypeError."""
        reference = activate(StructuredConsumerServant())
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_pull_consumer(
            CA.STRUCTURED_EVENT)
        with pytest.raises(ECA.TypeError):
            proxy.connect_structured_pull_supplier(reference)

    def test_a_supplier_reference_hears_subscription_changes(self, channel: Any,
                                                             activate: Activate) -> None:
        """subscription_change reaches a StructuredPushSupplier servant (section 2.6.3)."""
        servant = PushSupplierServant()
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_supplier(activate(servant))
        structured_consumer_proxy(channel).connect_structured_push_consumer(
            StructuredPushConsumer())
        settle(channel)
        assert [(t.domain_name, t.type_name) for added, _ in servant.subscriptions
                for t in added] == [("*", "%ALL")]


class TestOfferRelays:
    def test_a_notify_consumer_arriving_as_an_event_service_one_gets_offers(
            self, channel: Any, activate: Activate) -> None:
        """A CosNotifyComm::PushConsumer that arrives typed as CosEventComm::PushConsumer
        (no offer_change on its stub) is asked for NotifyPublish and told of offers."""
        servant = NotifyAnyConsumerServant()
        reference = as_received(activate(servant), CosEventComm._tc_PushConsumer)
        assert not hasattr(reference, "offer_change")
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.ANY_EVENT)
        proxy.connect_any_push_consumer(reference)
        assert proxy._offer_relay._client._obj is reference._obj
        channel._get_default_supplier_admin().offer_change([N.EventType("A", "B")], [])
        assert servant.wait_until(lambda: servant.offers)
        assert [(t.domain_name, t.type_name) for t in servant.offers[0][0]] == [("A", "B")]

    def test_an_event_service_consumer_gets_events_but_no_offers(
            self, channel: Any, activate: Activate) -> None:
        """A CosEventComm::PushConsumer is not a NotifyPublish: no relay, events still flow."""
        servant = EventServiceConsumerServant()
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.ANY_EVENT)
        proxy.connect_any_push_consumer(activate(servant))
        assert proxy._offer_relay._client is None
        channel._get_default_supplier_admin().offer_change([N.EventType("A", "B")], [])
        supplier, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.ANY_EVENT)
        supplier.connect_any_push_supplier(None)
        supplier.push(CORBA.Any(CORBA.TC_long, 5))
        assert servant.wait_for(1)
        settle(channel)
        assert same_any(servant.received[0], CORBA.Any(CORBA.TC_long, 5))
        assert servant.offers == []

    def test_narrowed_and_connectable_judge_python_objects_by_operations(self) -> None:
        """Python clients are judged by their operations, never asked anything."""
        consumer = AnyPushConsumer()
        assert narrowed(consumer, _NOTIFY_PUBLISH, "offer_change") is consumer
        assert narrowed(object(), _NOTIFY_PUBLISH, "offer_change") is None
        assert connectable(consumer, "IDL:omg.org/CosEventComm/PushConsumer:1.0",
                           "push") is consumer
        assert connectable(object(), "IDL:omg.org/CosEventComm/PushConsumer:1.0",
                           "push") is None


class TestFilterReferences:
    def test_a_filter_reference_filters_and_shares_its_types(self, channel: Any,
                                                             activate: Activate) -> None:
        """A client's Filter servant decides delivery, its constraint types reach the
        supplier, and it is handed a NotifySubscribe reference that works until removal."""
        supplier = PushSupplier()
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_supplier(supplier)
        filter_servant = EvenFilterServant()
        sink = StructuredPushConsumer()
        out = structured_consumer_proxy(channel)
        out.connect_structured_push_consumer(sink)
        filter_id = out.add_filter(activate(filter_servant))
        for n in range(4):
            proxy.push_structured_event(structured("Telecom", "Alarm", fields={"n": n}))
        assert sink.wait_for(2)
        settle(channel)
        assert [number(e) for e in sink.received] == [0, 2]
        (callback,) = filter_servant.callbacks.values()
        assert isinstance(callback, CORBA.Object) and callback._is_a(_NOTIFY_SUBSCRIBE)
        callback.subscription_change([N.EventType("Telecom", "Clear")], [])
        settle(channel)
        assert {(t.domain_name, t.type_name) for t in proxy.obtain_subscription_types(
            CA.ALL_NOW_UPDATES_OFF)} == {("Telecom", "Alarm"), ("Telecom", "Clear")}
        out.remove_filter(filter_id)
        assert filter_servant.detached == [1]
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            callback.subscription_change([], [])


class TestWithoutAnORB:
    def test_the_in_process_service_needs_no_orb_init(self) -> None:
        """EventChannelFactory works, events and all, in a process that never calls ORB_init."""
        program = textwrap.dedent("""
            import omniORB
            import cosnotify
            from omniORB import CORBA
            import CosNotifyChannelAdmin as CA
            factory = cosnotify.EventChannelFactory()
            channel, _ = factory.create_channel([], [])
            out, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
                CA.ANY_EVENT)
            out.connect_any_pull_consumer(None)
            entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
                CA.STRUCTURED_EVENT)
            entry.connect_structured_push_supplier(None)
            proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
                CA.ANY_EVENT)
            proxy.connect_any_push_supplier(None)
            proxy.push(CORBA.Any(CORBA.TC_long, 42))
            print(out.pull().value(), omniORB.orb is None)
            factory.close()
        """)
        done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                              timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["42", "True"]


class TestThreads:
    def test_concurrent_pushes_to_one_consumer_reference(self, channel: Any,
                                                         activate: Activate) -> None:
        """Several suppliers pushing at once: the servant gets every event, each once."""
        servant = StructuredConsumerServant()
        structured_consumer_proxy(channel).connect_structured_push_consumer(activate(servant))
        suppliers = [entry(channel) for _ in range(4)]

        def push(k: int) -> None:
            for i in range(50):
                suppliers[k].push_structured_event(structured(fields={"n": k * 1000 + i}))

        threads = [threading.Thread(target=push, args=(k,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT)
        assert servant.wait_for(200)
        assert sorted(number(e) for e in servant.received) == sorted(
            k * 1000 + i for k in range(4) for i in range(50))


def _run_until(factory: Any, clock: Any, done: Callable[[], bool], steps: int = 60) -> None:
    """Advance ``clock`` a second at a time, the service idle between, until ``done()``."""
    for _ in range(steps):
        assert factory.service.dispatcher.wait_idle()
        if done():
            return
        clock.advance(1.0)


class _FlakyServant(CosNotifyComm__POA.StructuredPushConsumer):
    """A consumer servant whose first ``failures`` pushes raise TRANSIENT."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0
        self.received: list[Any] = []

    def push_structured_event(self, event: Any) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)
        self.received.append(event)

    def disconnect_structured_push_consumer(self) -> None:
        pass

    def offer_change(self, added: Any, removed: Any) -> None:
        pass


class _FlakyObject:
    """The same consumer as an in-process Python object (no reference to keep)."""

    push_structured_event = _FlakyServant.push_structured_event
    disconnect_structured_push_consumer = _FlakyServant.disconnect_structured_push_consumer
    offer_change = _FlakyServant.offer_change

    def __init__(self, failures: int) -> None:
        self.failures, self.calls, self.received = failures, 0, []


@pytest.mark.parametrize("consumer", ["reference", "in-process object"])
def test_a_persistent_connection_to_a_reference_is_retried_for_ever(
        activate: Activate, consumer: str) -> None:
    """Section 2.5.5.1 (EventReliability BestEffort, ConnectionReliability Persistent):
    "Any clients that connect to the channel using persistent object references may
    fail, but unless these object references raise an OBJECT_NOT_EXIST exception, the
    channel will continue to retry using them": a kept proxy whose consumer is a
    reference retries past Retries, with no stored event (review 101); one whose
    consumer is an in-process object, which has no persistent reference, gives up after
    Retries as a best-effort one does (review 102)."""
    from cosnotify.channel.clock import ManualClock
    from cosnotify.channel.factory import EventChannelFactory
    from cosnotify.store import MemoryStore

    persistent = [N.Property("ConnectionReliability", CORBA.Any(CORBA.TC_short, N.Persistent))]
    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(persistent, [])
        admin, _ = channel.new_for_consumers(CA.AND_OP)
        proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        flaky = _FlakyServant(8) if consumer == "reference" else _FlakyObject(8)
        proxy.connect_structured_push_consumer(
            activate(flaky) if consumer == "reference" else flaky)
        supplier, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        supplier.connect_structured_push_supplier(None)
        supplier.push_structured_event(structured(fields={"n": 1}))
        _run_until(factory, clock, lambda: flaky.received or proxy._destroyed)
        if consumer == "reference":
            assert (flaky.calls, len(flaky.received), proxy._destroyed) == (9, 1, False)
        else:
            assert proxy._destroyed and flaky.calls == 4 and not flaky.received


class _RefusingServant(_FlakyServant):
    """A consumer servant that refuses every event with BAD_PARAM: it is up."""

    def push_structured_event(self, event: Any) -> None:
        self.calls += 1
        raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO)


class _DownAfterOne(_FlakyServant):
    """Takes the first push (and never acknowledges it), then is down (TRANSIENT) for
    ``down`` calls, then takes pushes again."""

    def __init__(self, down: int) -> None:
        super().__init__(0)
        self.down = down

    def push_structured_event(self, event: Any) -> None:
        self.calls += 1
        if 1 < self.calls <= 1 + self.down:
            raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)
        self.received.append(event)


def _persistent_proxy(factory: Any, qos: list[Any] | None = None) -> tuple[Any, Any]:
    persistent = [N.Property("ConnectionReliability", CORBA.Any(CORBA.TC_short, N.Persistent))]
    channel, _ = factory.create_channel(persistent, [])
    admin, _ = channel.new_for_consumers(CA.AND_OP)
    if qos:
        admin.set_qos(qos)
    proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
    supplier, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    supplier.connect_structured_push_supplier(None)
    return proxy, supplier


@contextlib.contextmanager
def _ack_consumer_down_after_one(activate: Activate, down: int = 10, **config: Any
                                 ) -> Iterator[tuple[Any, Any, Any, Any]]:
    """An Ack proxy (RetryInterval 1 s) of a persistent connection whose consumer (a
    reference) took event 1 and then is down for ``down`` calls; the clock is manual."""
    import TimeBase

    from cosnotify.channel.clock import ManualClock
    from cosnotify.channel.factory import EventChannelFactory
    from cosnotify.channel.service import ServiceConfig
    from cosnotify.store import MemoryStore

    ack = [N.Property("DeliveryReliability", CORBA.Any(CORBA.TC_short, 1)),
           N.Property("RetryInterval", CORBA.Any(TimeBase._tc_TimeT, 10_000_000))]
    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore(),
                             config=ServiceConfig(**config)) as factory:
        proxy, supplier = _persistent_proxy(factory, ack)
        consumer = _DownAfterOne(down=down)
        proxy.connect_structured_push_consumer(activate(consumer))
        supplier.push_structured_event(structured(fields={"n": 1}))
        yield factory, clock, proxy, consumer


def test_a_persistent_connection_that_refuses_an_event_is_given_up(
        activate: Activate) -> None:
    """Only a client that *fails* -- it is down, or cannot be reached -- is retried for
    ever (section 2.5.5.1); one that refuses the event at the head of its queue (BAD_PARAM,
    UNKNOWN...) is given up after Retries, as a best-effort one is, so it does not block
    the events behind it for ever (review 103)."""
    from cosnotify.channel.clock import ManualClock
    from cosnotify.channel.factory import EventChannelFactory
    from cosnotify.store import MemoryStore

    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        proxy, supplier = _persistent_proxy(factory)
        refusing = _RefusingServant(0)
        proxy.connect_structured_push_consumer(activate(refusing))
        supplier.push_structured_event(structured(fields={"n": 1}))
        _run_until(factory, clock, lambda: proxy._destroyed)
        assert proxy._destroyed and refusing.calls == 4


def test_an_ack_consumer_down_after_a_push_is_retried_for_ever(activate: Activate) -> None:
    """An Ack proxy of a persistent connection whose consumer took a push and then went
    down: the resends that fail are a consumer down, retried as a push is, not rounds
    of a consumer that never acknowledges (review 103: it was given up after three)."""
    with _ack_consumer_down_after_one(activate) as (factory, clock, proxy, consumer):
        _run_until(factory, clock, lambda: len(consumer.received) >= 2 or proxy._destroyed, 600)
        assert not proxy._destroyed and len(consumer.received) == 2   # given again, once up


class _FullServant(_FlakyServant):
    """A consumer that cannot take more for now (IMP_LIMIT, as a linked channel that is
    full with RejectNewEvents) for its first ``failures`` pushes."""

    def push_structured_event(self, event: Any) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise CORBA.IMP_LIMIT(0, CORBA.COMPLETED_NO)
        self.received.append(event)


def test_a_persistent_connection_to_a_full_client_is_retried_for_ever(
        activate: Activate) -> None:
    """IMP_LIMIT is "come back later" (a channel full with RejectNewEvents, section
    2.5.7), not a refusal of the event: a persistent connection retries it for ever
    (review 104: a federated link to a full channel was given up)."""
    from cosnotify.channel.clock import ManualClock
    from cosnotify.channel.factory import EventChannelFactory
    from cosnotify.store import MemoryStore

    clock = ManualClock()
    with EventChannelFactory(clock=clock, store=MemoryStore()) as factory:
        proxy, supplier = _persistent_proxy(factory)
        full = _FullServant(8)
        proxy.connect_structured_push_consumer(activate(full))
        supplier.push_structured_event(structured(fields={"n": 1}))
        _run_until(factory, clock, lambda: full.received or proxy._destroyed)
        assert (full.calls, len(full.received), proxy._destroyed) == (9, 1, False)


def test_an_ack_consumer_back_from_an_outage_gets_its_retries(activate: Activate) -> None:
    """An Ack consumer back from an outage that never acknowledges gets Retries rounds of
    resends again before it is given up (section 3.7.7.3), not one (review 104)."""
    with _ack_consumer_down_after_one(activate) as (factory, clock, proxy, consumer):
        _run_until(factory, clock, lambda: proxy._destroyed, 600)
        assert proxy._destroyed
        assert len(consumer.received) == 1 + 1 + 3   # the push; the first resend back;
        #                                               then Retries (3) rounds unanswered


def test_resends_to_a_consumer_that_is_down_back_off(activate: Activate) -> None:
    """An Ack proxy's resends to a consumer that stays down are given after a backoff
    (RetryInterval doubled each round, up to max_backoff), as failed pushes are -- not
    every RetryInterval for ever (review 104: 36,000 calls an hour at 0.1 s)."""
    with _ack_consumer_down_after_one(activate, down=10**6) as (factory, clock, proxy,
                                                                 consumer):
        _run_until(factory, clock, lambda: False, 300)      # five minutes down
        assert not proxy._destroyed
        # 1 s, 2, 4, 8, 16, then every 30 s: about 14 calls in 300 s, not 300.
        assert 5 < consumer.calls < 30


def test_resends_to_a_consumer_that_is_up_come_every_retry_interval(
        activate: Activate) -> None:
    """A consumer that takes the resends (and never acknowledges) is given them every
    RetryInterval, no backoff, and given up after Retries rounds (section 3.7.7.3)."""
    with _ack_consumer_down_after_one(activate, down=0) as (factory, clock, proxy, consumer):
        start = clock.now()
        _run_until(factory, clock, lambda: proxy._destroyed, 10)
        assert proxy._destroyed and consumer.calls == 1 + 3 and clock.now() - start <= 5


def test_a_reconnected_consumer_does_not_wait_out_the_old_ones_backoff(
        activate: Activate) -> None:
    """A new consumer of an Ack proxy (allow_reconnect) is given what is unacknowledged
    after RetryInterval, not after the backoff of the old one's outage (review 105)."""
    with _ack_consumer_down_after_one(activate, down=10**6, allow_reconnect=True) as (
            factory, clock, proxy, _):
        _run_until(factory, clock, lambda: False, 100)     # the backoff is at 30 s now
        new = _FlakyServant(0)
        proxy.connect_structured_push_consumer(activate(new))
        _run_until(factory, clock, lambda: bool(new.received), 3)
        assert len(new.received) == 1 and not proxy._destroyed
