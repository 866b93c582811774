"""Fixtures for OES trees (cosnotify/oes): a factory on a manual clock, its channel and
tree, consumers that record what they are given, and the seed's Figure 1 tree.

Source: /work/shared/seeds/object-eventing-service.txt ("Basic Concepts": Tree,
Notifications, Figures 1-5).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyComm__POA

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.oes import Tree
from cosnotify.store.sqlite import SQLiteStore

#: Figure 1, as the seed's text names its nodes (Figures 2-5 use them).
FIGURE_1 = [r"\Asia", r"\Asia\India", r"\Asia\India\Bombay", r"\Asia\India\Calcutta",
            r"\Asia\India\New Delhi", r"\Europe", r"\Europe\France", r"\Europe\France\Nice",
            r"\Europe\France\Paris", r"\Europe\Ireland", r"\Europe\Ireland\Cork",
            r"\Europe\Ireland\Dublin"]

PERSISTENT = [N.Property("ConnectionReliability", CORBA.Any(CORBA.TC_short, N.Persistent))]


class Recorder:
    """A contract's consumer (a CosNotifyComm::StructuredPushConsumer in process): keeps
    (operation, node) of each notification, and whether it was told to disconnect.
    ``fail`` makes pushes raise it."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.disconnected = threading.Event()
        self.fail: Exception | None = None
        self.cond = threading.Condition()

    def push_structured_event(self, event: Any) -> None:
        if self.fail is not None:
            raise self.fail
        with self.cond:
            self.events.append(event)
            self.cond.notify_all()

    def disconnect_structured_push_consumer(self) -> None:
        self.disconnected.set()

    @property
    def seen(self) -> list[tuple[str, str]]:
        """(operation, node pathname) of each notification, in order."""
        return [(e.header.fixed_header.event_type.type_name, field(e, "node"))
                for e in self.events]

    def nodes(self) -> set[str]:
        return {node for _, node in self.seen}

    def wait_for(self, count: int, timeout: float = 10.0) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: len(self.events) >= count, timeout)


def field(event: Any, name: str) -> Any:
    """The value of the filterable field ``name``, or KeyError."""
    for prop in event.filterable_data:
        if prop.name == name:
            return prop.value.value()
    raise KeyError(name)


def has_field(event: Any, name: str) -> bool:
    return any(prop.name == name for prop in event.filterable_data)


def settle(channel: Any) -> None:
    """Every delivery queued so far is done (the service's workers are idle)."""
    assert channel._service.dispatcher.wait_idle()


def figure_1(tree: Tree) -> None:
    for path in FIGURE_1:
        tree.create(path)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_000_000.0)


@pytest.fixture
def factory(clock: ManualClock) -> Iterator[EventChannelFactory]:
    with EventChannelFactory(clock=clock) as made:
        yield made


@pytest.fixture
def channel(factory: EventChannelFactory) -> Any:
    made, _ = factory.create_channel([], [])
    return made


@pytest.fixture
def tree(channel: Any) -> Tree:
    return Tree.of(channel)


class Consumer(CosNotifyComm__POA.StructuredPushConsumer):  # type: ignore[misc]
    """A CORBA consumer in this process: its IOR is what a contract keeps."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.fail = False
        self.cond = threading.Condition()

    def push_structured_event(self, event: Any) -> None:
        if self.fail:
            raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)
        with self.cond:
            self.events.append(event)
            self.cond.notify_all()

    def disconnect_structured_push_consumer(self) -> None:
        pass

    def offer_change(self, added: Any, removed: Any) -> None:
        pass

    def wait_for(self, count: int) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: len(self.events) >= count, 10)


class Restarts:
    """Factories over one SQLite file, one after the other, on one manual clock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.clock = ManualClock(1_000_000.0)
        self.store: SQLiteStore | None = None
        self.factory: EventChannelFactory | None = None

    def start(self) -> EventChannelFactory:
        self.stop()
        self.store = SQLiteStore(self.path)
        self.factory = EventChannelFactory(clock=self.clock, store=self.store)
        return self.factory

    def stop(self) -> None:
        if self.factory is not None:
            self.factory.close()
            self.factory = None
        if self.store is not None:
            self.store.close()
            self.store = None

    def records(self, prefix: str) -> list[tuple[str, str]]:
        assert self.store is not None
        return sorted((r.path, r.kind) for r in self.store.records()
                      if r.path.startswith(prefix))


@pytest.fixture
def restarts(tmp_path: Path, omniorb: Any) -> Any:
    made = Restarts(tmp_path / "store.db")
    yield made
    made.stop()


@pytest.fixture
def activate(omniorb: Any) -> Any:
    poa = omniorb.resolve_initial_references("RootPOA")
    made: list[bytes] = []

    def activate_(servant: Any) -> Any:
        reference = servant._this()
        made.append(poa.reference_to_id(reference))
        return reference

    yield activate_
    for oid in made:
        poa.deactivate_object(oid)
