"""Fixtures: an in-process channel factory, the protocols' loop, an Elvin front end, clients."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import cosnotify
from cosnotify.protocols import Context
from cosnotify.protocols.elvin import start
from cosnotify.protocols.listener import Limits, Loop
from tests.protocols.elvin.client import Client


@pytest.fixture
def core() -> Iterator[tuple[Any, Loop, Context]]:
    factory = cosnotify.EventChannelFactory()
    loop = Loop(workers=4)
    try:
        yield factory, loop, Context(factory, loop)
    finally:
        loop.close()
        factory.close(wait=False)


@pytest.fixture
def limits() -> Limits:
    return Limits(read_timeout=2.0, max_frame=1 << 16, max_connections=16)


@pytest.fixture
def front_end(core: tuple[Any, Loop, Context], limits: Limits) -> Iterator[Any]:
    fe = start(core[2], "127.0.0.1", 0, limits=limits)
    try:
        yield fe
    finally:
        fe.close()


@pytest.fixture
def channel(core: tuple[Any, Loop, Context], front_end: Any) -> Any:
    """The channel the front end serves (the one named "default")."""
    return front_end.router.channel


@pytest.fixture
def client(front_end: Any) -> Iterator[Callable[[], Client]]:
    """Makes connected-socket clients (not yet Elvin-connected); closes them afterwards."""
    made: list[Client] = []

    def make() -> Client:
        c = Client(front_end.address)
        made.append(c)
        return c
    yield make
    for c in made:
        c.close()
