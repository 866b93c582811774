"""Fixtures for durability: stores to restart over, and client servants.

``store_opener`` opens the same store again at each call, as a restarted
process would: the same MemoryStore object, or the same SQLite file.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyComm__POA
import TimeBase

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.counters import proxy_counts
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.store import MemoryStore, Store
from tests.channel.conftest import WAIT, structured

#: A channel whose objects and events survive a restart.
PERSISTENT_QOS = [N.Property("ConnectionReliability", CORBA.Any(CORBA.TC_short, N.Persistent))]
#: ... and whose events do too (Persistent/Persistent, section 2.5.5.1).
DURABLE_QOS = [*PERSISTENT_QOS,
               N.Property("EventReliability", CORBA.Any(CORBA.TC_short, N.Persistent))]
#: Event Acknowledgment (section 3.7), unanswered numbers given again after 1 s.
ACK_QOS = [N.Property("DeliveryReliability", CORBA.Any(CORBA.TC_short, 1)),
           N.Property("RetryInterval", CORBA.Any(TimeBase._tc_TimeT, 10_000_000))]


def sequence_number(event: Any) -> int | None:
    """The SequenceNumber header field of a StructuredEvent, if any."""
    for prop in event.header.variable_header:
        if prop.name == "SequenceNumber":
            return int(prop.value.value())
    return None


@pytest.fixture(params=["memory", "sqlite"])
def store_opener(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Store]:
    if request.param == "memory":
        memory = MemoryStore()
        return lambda: memory
    from cosnotify.store.sqlite import SQLiteStore

    opened: list[Store] = []

    def reopen() -> Store:
        if opened:
            opened[-1].close()
        opened.append(SQLiteStore(tmp_path / "store.db"))
        return opened[-1]

    request.addfinalizer(lambda: opened and opened[-1].close())
    return reopen


@pytest.fixture
def reopen(store_opener: Callable[[], Store]) -> Iterator[Callable[[], EventChannelFactory]]:
    """Make a factory over the store; each call closes the previous one first (a restart)."""
    made: list[EventChannelFactory] = []

    def restart() -> EventChannelFactory:
        if made:
            made[-1].close()
        made.append(EventChannelFactory(store=store_opener()))
        return made[-1]

    yield restart
    if made:
        made[-1].close()


def supplier_of(channel: Any) -> Any:
    """A connected structured push supplier's proxy on the default supplier admin."""
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_push_supplier(None)
    return proxy


def ack_admin(channel: Any) -> Any:
    """A new consumer admin of ``channel`` whose proxies acknowledge (ACK_QOS)."""
    admin, _ = channel.new_for_consumers(CA.AND_OP)
    admin.set_qos(ACK_QOS)
    return admin


def reference(orb: Any, servant: Any) -> Any:
    """``servant`` activated in this process's RootPOA."""
    return orb.resolve_initial_references("RootPOA").servant_to_reference(servant)


class StructuredConsumer(CosNotifyComm__POA.StructuredPushConsumer):
    """Records what arrives; signals on a condition."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.cond = threading.Condition()
        self.disconnected = threading.Event()

    def push_structured_event(self, event: Any) -> None:
        with self.cond:
            self.items.append(event)
            self.cond.notify_all()

    def offer_change(self, added: Any, removed: Any) -> None:
        pass

    def disconnect_structured_push_consumer(self) -> None:
        self.disconnected.set()

    def wait_for(self, count: int) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: len(self.items) >= count, WAIT)


# -- Event Acknowledgment: what the Ack tests share (test_ack_*.py) -------------------

#: DeliveryReliability None and Acknowledgment, to switch a proxy.
OFF = [N.Property("DeliveryReliability", CORBA.Any(CORBA.TC_short, 0))]


def timeout(seconds: float) -> list[Any]:
    return [N.Property("Timeout", CORBA.Any(TimeBase._tc_TimeT, int(seconds * 1e7)))]


def step(factory: EventChannelFactory, clock: ManualClock, seconds: int) -> None:
    for _ in range(seconds):
        clock.advance(1.0)
        assert factory.service.dispatcher.wait_idle()


def balanced(proxy: Any) -> bool:
    """docs/operations.md: queued = delivered + discarded + expired + removed + depth."""
    c = proxy_counts(proxy)
    return bool(c["queued"] == c["delivered"] + c["discarded"] + c["expired"] + c["removed"]
                + c["depth"])


def pull_all(proxy: Any) -> list[Any]:
    got: list[Any] = []
    while True:
        event, ok = proxy.try_pull_structured_event()
        if not ok:
            return got
        got.append(event)


ON = [N.Property("DeliveryReliability", CORBA.Any(CORBA.TC_short, 1))]


class Scripted(StructuredConsumer):
    """Runs ``script(consumer, n, event)`` inside its n-th push call (from 1)."""

    proxy: Any = None
    script: Any = None

    def push_structured_event(self, event: Any) -> None:
        super().push_structured_event(event)
        self.script(self, len(self.items), event)


def limited(factory: EventChannelFactory) -> tuple[Any, Any]:
    """A durable channel with MaxQueueLength 10 and RejectNewEvents, and a plain pull
    proxy keeping a second copy of each event: a copy released twice shows in the
    channel's account (section 2.5.7) against what that proxy holds."""
    channel, _ = factory.create_channel(DURABLE_QOS, [
        N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 10)),
        N.Property("RejectNewEvents", CORBA.Any(CORBA.TC_boolean, True))])
    other, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
        CA.STRUCTURED_EVENT)
    other.connect_structured_pull_consumer(None)
    return channel, other


def scripted_push(factory: EventChannelFactory, channel: Any, script: Any,
                  orb: Any) -> tuple[Any, Scripted]:
    proxy, _ = ack_admin(channel).obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
    consumer = Scripted()
    consumer.proxy, consumer.script = proxy, script
    proxy.connect_structured_push_consumer(reference(orb, consumer))
    supplier_of(channel).push_structured_event(structured(fields={"n": 1}))
    assert consumer.wait_for(1)
    return proxy, consumer


def batch_of_two(factory: EventChannelFactory, channel: Any, admin: Any, script: Any,
                 orb: Any) -> tuple[Any, Scripted]:
    """A structured Ack push proxy of ``admin`` given n=1 and n=2 as one batch."""
    proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
    consumer = Scripted()
    consumer.proxy, consumer.script = proxy, script
    proxy.connect_structured_push_consumer(reference(orb, consumer))
    proxy.suspend_connection()
    supplier = supplier_of(channel)
    supplier.push_structured_event(structured(fields={"n": 1}))
    supplier.push_structured_event(structured(fields={"n": 2}))
    proxy.resume_connection()
    assert consumer.wait_for(1)
    assert factory.service.dispatcher.wait_idle()  # the script has run
    return proxy, consumer


def let_go(factory: EventChannelFactory, other: Any) -> None:
    while other.try_pull_structured_event()[1]:
        pass
    assert factory.service.dispatcher.wait_idle()
