"""Fixtures of the history tests: a factory with a MemoryStore on a manual clock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.store import MemoryStore


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_000.0)


@pytest.fixture
def factory(clock: ManualClock) -> Iterator[EventChannelFactory]:
    with EventChannelFactory(clock=clock, store=MemoryStore()) as made:
        yield made
