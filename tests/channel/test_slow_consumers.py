"""Slow consumers among fast ones of the same client (docs/architecture.md, Lanes).

A consumer whose push takes longer than ``ServiceConfig.slow_push`` is served
from the shared ``slow`` lane until a push is quick again, so it never holds
its client's lane while fast consumers of the same process wait. Pushes take
time on the service's ManualClock: the slow consumer moves it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

import CosNotifyChannelAdmin as CA
import CosNotifyFilter as F

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.service import ServiceConfig
from tests.channel.conftest import (
    WAIT,
    StructuredPushConsumer,
    number,
    structured,
    structured_supplier,
)


class SlowConsumer(StructuredPushConsumer):
    """Its first push takes 50 ms (of the manual clock); later ones block on ``gate``."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__()
        self.clock = clock
        self.gate = threading.Event()
        self.blocked = threading.Event()

    def push_structured_event(self, event: Any) -> None:
        if self.received:
            self.blocked.set()
            self.gate.wait(WAIT)
        else:
            self.clock.advance(0.05)
        super().push_structured_event(event)


@pytest.fixture
def one_client() -> Iterator[tuple[EventChannelFactory, ManualClock]]:
    """Every consumer is of one client, whose lane holds one worker."""
    clock = ManualClock()
    factory = EventChannelFactory(ServiceConfig(max_workers=4, max_workers_per_client=1,
                                                max_workers_slow=1, slow_push=0.01),
                                  clock=clock)
    factory._service.client_key = lambda reference: "one client process"
    yield factory, clock
    factory.close()


def _consumer(channel: Any, consumer: Any, to: int) -> Any:
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
        CA.STRUCTURED_EVENT)
    flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
    flt.add_constraints([F.ConstraintExp([], f"$to == {to}")])
    proxy.add_filter(flt)
    proxy.connect_structured_push_consumer(consumer)
    return proxy


def test_a_slow_consumer_does_not_hold_its_clients_lane(
        one_client: tuple[EventChannelFactory, ManualClock]) -> None:
    factory, clock = one_client
    channel, _ = factory.create_channel([], [])
    slow, fast = SlowConsumer(clock), StructuredPushConsumer()
    slow_proxy = _consumer(channel, slow, 1)
    _consumer(channel, fast, 2)
    supplier = structured_supplier(channel)
    for n in range(3):
        supplier.push_structured_event(structured(fields={"to": 1, "n": n}))
    assert slow.blocked.wait(WAIT)  # its second push holds a worker
    assert slow_proxy._slow
    for n in range(5):
        supplier.push_structured_event(structured(fields={"to": 2, "n": n}))
    # The client's lane has one worker: the fast consumer gets it, the slow one
    # being served from the slow lane.
    assert fast.wait_for(5)
    assert [number(e) for e in fast.received] == list(range(5))
    slow.gate.set()
    assert slow.wait_for(3)
    assert [number(e) for e in slow.received] == [0, 1, 2]


def test_a_quick_push_brings_the_consumer_back(
        one_client: tuple[EventChannelFactory, ManualClock]) -> None:
    factory, clock = one_client
    channel, _ = factory.create_channel([], [])
    slow = SlowConsumer(clock)
    slow.gate.set()  # pushes after the first are quick
    proxy = _consumer(channel, slow, 1)
    supplier = structured_supplier(channel)
    supplier.push_structured_event(structured(fields={"to": 1, "n": 0}))
    assert slow.wait_for(1)
    assert factory._service.dispatcher.wait_idle()
    assert proxy._slow
    supplier.push_structured_event(structured(fields={"to": 1, "n": 1}))
    assert slow.wait_for(2)
    assert factory._service.dispatcher.wait_idle()
    assert not proxy._slow


def test_slow_push_zero_never_marks_a_consumer_slow(clock: ManualClock) -> None:
    factory = EventChannelFactory(ServiceConfig(slow_push=0), clock=clock)
    try:
        channel, _ = factory.create_channel([], [])
        slow = SlowConsumer(clock)
        slow.gate.set()
        proxy = _consumer(channel, slow, 1)
        supplier = structured_supplier(channel)
        supplier.push_structured_event(structured(fields={"to": 1, "n": 0}))
        assert slow.wait_for(1)
        assert factory._service.dispatcher.wait_idle()
        assert not proxy._slow
    finally:
        factory.close()


@pytest.mark.parametrize("config", [{"slow_push": -1}, {"delivery_time_slice": 0},
                                    {"max_workers_slow": -1}])
def test_bad_settings_are_refused(config: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ServiceConfig(**config)
