"""Fixtures for the in-process channel: factories, events and client fakes.

Clients record what they receive and signal with ``threading.Event`` /
``Condition`` so tests wait for a condition, never for a duration.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.service import ServiceConfig
from cosnotify.corba import descriptors as D

WAIT = 10.0  # generous upper bound for conditions that should hold almost at once


def structured(domain: str = "Telecom", type_name: str = "CommunicationsAlarm",
               name: str = "e", fields: dict[str, Any] | None = None,
               header: list[Any] | None = None) -> Any:
    """A StructuredEvent; ``fields`` become long-valued filterable properties."""
    data = [N.Property(k, v if isinstance(v, CORBA.Any) else CORBA.Any(CORBA.TC_long, v))
            for k, v in (fields or {}).items()]
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType(domain, type_name), name), header or []),
        data, CORBA.Any(CORBA.TC_string, name))


def structured_supplier(channel: Any) -> Any:
    """A connected structured proxy push consumer of the default supplier admin."""
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_push_supplier(None)
    return proxy


class ClientFilter:
    """A filter object that is not one of ours (a client's, as the server wraps it):
    ``answer`` for every event, by either match operation; ``calls`` records them."""

    def __init__(self, answer: bool = True) -> None:
        self.answer = answer
        self.calls: list[str] = []

    def match(self, filterable_data: Any) -> bool:
        self.calls.append("match")
        return self.answer

    def match_structured(self, filterable_data: Any) -> bool:
        self.calls.append("match_structured")
        return self.answer

    def get_all_constraints(self) -> list[Any]:
        return []

    def attach_callback(self, callback: Any) -> int:
        return 1

    def detach_callback(self, callback: int) -> None:
        pass


def same_any(got: Any, want: Any) -> bool:
    """Does ``got`` hold ``want``'s value with an equivalent TypeCode? (omniORB's Any
    has no ``==``; this compares basic values, which is all these tests need.)"""
    return (isinstance(got, CORBA.Any) and isinstance(want, CORBA.Any)
            and D.equivalent(got._t._d, want._t._d) and got._v == want._v)


def number(event: Any) -> int:
    """The ``n`` filterable field of an event built by ``structured(fields={'n': ...})``."""
    for prop in event.filterable_data:
        if prop.name == "n":
            return prop.value.value()
    raise KeyError("n")


class Recorder:
    """Base of client fakes: a list guarded by a condition variable."""

    def __init__(self) -> None:
        self.received: list[Any] = []
        self.cond = threading.Condition()
        self.disconnected = threading.Event()
        self.offers: list[tuple[list[Any], list[Any]]] = []
        self.subscriptions: list[tuple[list[Any], list[Any]]] = []

    def record(self, item: Any) -> None:
        with self.cond:
            self.received.append(item)
            self.cond.notify_all()

    def wait_for(self, count: int, timeout: float = WAIT) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: len(self.received) >= count, timeout)

    def offer_change(self, added: list[Any], removed: list[Any]) -> None:
        with self.cond:
            self.offers.append((added, removed))
            self.cond.notify_all()

    def subscription_change(self, added: list[Any], removed: list[Any]) -> None:
        with self.cond:
            self.subscriptions.append((added, removed))
            self.cond.notify_all()

    def wait_until(self, predicate: Any, timeout: float = WAIT) -> bool:
        with self.cond:
            return self.cond.wait_for(predicate, timeout)


class AnyPushConsumer(Recorder):
    def push(self, data: Any) -> None:
        self.record(data)

    def disconnect_push_consumer(self) -> None:
        self.disconnected.set()


class StructuredPushConsumer(Recorder):
    def push_structured_event(self, event: Any) -> None:
        self.record(event)

    def disconnect_structured_push_consumer(self) -> None:
        self.disconnected.set()


class SequencePushConsumer(Recorder):
    def push_structured_events(self, events: list[Any]) -> None:
        self.record(list(events))

    def disconnect_sequence_push_consumer(self) -> None:
        self.disconnected.set()

    def flat(self) -> list[Any]:
        with self.cond:
            return [e for batch in self.received for e in batch]


class PushSupplier(Recorder):
    def disconnect_push_supplier(self) -> None:
        self.disconnected.set()

    def disconnect_structured_push_supplier(self) -> None:
        self.disconnected.set()

    def disconnect_sequence_push_supplier(self) -> None:
        self.disconnected.set()


class PullSupplier(Recorder):
    """Serves queued events through every try_pull form; records how often it was asked."""

    def __init__(self, events: list[Any] | None = None) -> None:
        super().__init__()
        self.queue = list(events or [])
        self.polls = 0

    def _next(self) -> Any:
        with self.cond:
            self.polls += 1
            self.cond.notify_all()
            return self.queue.pop(0) if self.queue else None

    def add(self, *events: Any) -> None:
        with self.cond:
            self.queue.extend(events)

    def try_pull(self) -> tuple[Any, bool]:
        event = self._next()
        return (event, True) if event is not None else (CORBA.Any(CORBA.TC_null, None), False)

    def try_pull_structured_event(self) -> tuple[Any, bool]:
        event = self._next()
        return (event, True) if event is not None else (structured(), False)

    def try_pull_structured_events(self, max_number: int) -> tuple[list[Any], bool]:
        with self.cond:
            self.polls += 1
            batch, self.queue = self.queue[:max_number], self.queue[max_number:]
            self.cond.notify_all()
        return batch, bool(batch)

    def pull(self) -> Any:
        raise AssertionError("the channel must not block in pull()")

    def disconnect_pull_supplier(self) -> None:
        self.disconnected.set()

    def disconnect_structured_pull_supplier(self) -> None:
        self.disconnected.set()

    def disconnect_sequence_pull_supplier(self) -> None:
        self.disconnected.set()


class PullConsumer(Recorder):
    def disconnect_pull_consumer(self) -> None:
        self.disconnected.set()

    def disconnect_structured_pull_consumer(self) -> None:
        self.disconnected.set()

    def disconnect_sequence_pull_consumer(self) -> None:
        self.disconnected.set()


class CountingFilter:
    """A Filter stand-in: matches when ``predicate`` says so and counts calls."""

    def __init__(self, predicate: Any = lambda e: True) -> None:
        self.predicate = predicate
        self.calls = 0
        self.lock = threading.Lock()
        self.callbacks: dict[int, Any] = {}

    def match_structured(self, event: Any) -> bool:
        with self.lock:
            self.calls += 1
        return bool(self.predicate(event))

    def match(self, value: Any) -> bool:
        with self.lock:
            self.calls += 1
        return bool(self.predicate(value))

    def get_all_constraints(self) -> list[Any]:
        return []

    def attach_callback(self, callback: Any) -> int:
        key = len(self.callbacks) + 1
        self.callbacks[key] = callback
        return key

    def detach_callback(self, key: int) -> None:
        self.callbacks.pop(key)


@pytest.fixture
def factory() -> Iterator[EventChannelFactory]:
    f = EventChannelFactory()
    yield f
    f.close()


@pytest.fixture
def channel(factory: EventChannelFactory) -> Any:
    return factory.create_channel([], [])[0]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def manual_factory(clock: ManualClock) -> Iterator[EventChannelFactory]:
    # slow_push=0: tests move the clock while pushes are in flight, which would
    # mark those consumers slow (tests/channel/test_slow_consumers.py tests that).
    f = EventChannelFactory(ServiceConfig(pull_interval=1.0, slow_push=0), clock=clock)
    yield f
    f.close()


@pytest.fixture
def manual_channel(manual_factory: EventChannelFactory) -> Any:
    return manual_factory.create_channel([], [])[0]
