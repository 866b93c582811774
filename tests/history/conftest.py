"""Fixtures of the history tests: a factory with a MemoryStore on a manual clock, and
each kind of store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.store import MemoryStore, Store


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_000.0)


@pytest.fixture
def factory(clock: ManualClock) -> Iterator[EventChannelFactory]:
    with EventChannelFactory(clock=clock, store=MemoryStore()) as made:
        yield made


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """Each store, empty: the contract is both's."""
    if request.param == "memory":
        yield MemoryStore()
        return
    from cosnotify.store.sqlite import SQLiteStore

    made = SQLiteStore(tmp_path / "store.db")
    yield made
    made.close()
