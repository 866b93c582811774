"""Fixtures: an in-process core, the shared loop, an Event Heap front end on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import cosnotify
from cosnotify.protocols import Context
from cosnotify.protocols.eventheap import EventHeapFrontEnd, start
from cosnotify.protocols.listener import Limits, Loop
from tests.protocols.eventheap.client import EventHeapClient


@pytest.fixture
def factory() -> Iterator[Any]:
    made = cosnotify.EventChannelFactory()
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def loop() -> Iterator[Loop]:
    made = Loop(workers=8)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def context(factory: Any, loop: Loop) -> Context:
    return Context(factory, loop)


@pytest.fixture
def limits() -> Limits:
    return Limits(read_timeout=2.0, max_frame=1 << 16)


@pytest.fixture
def front_end(context: Context, limits: Limits) -> Iterator[EventHeapFrontEnd]:
    made = start(context, "127.0.0.1", 0, limits=limits)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def connect(front_end: EventHeapFrontEnd) -> Iterator[Callable[..., EventHeapClient]]:
    made: list[EventHeapClient] = []

    def make(source: str = "test-client", **kw: Any) -> EventHeapClient:
        client = EventHeapClient(front_end.address, source, **kw)
        made.append(client)
        return client

    try:
        yield make
    finally:
        for client in made:
            client.close()


@pytest.fixture
def client(connect: Callable[..., EventHeapClient]) -> EventHeapClient:
    return connect()
