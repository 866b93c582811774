"""Fixtures for typed channels: the spec's Coffee interfaces, loaded once per process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cosnotify.typed.channel import TypedEventChannel, TypedEventChannelFactory
from cosnotify.typed.interfaces import InterfaceRepository, TypedInterface

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def repository() -> InterfaceRepository:
    made = InterfaceRepository()
    made.load([DATA / "Coffee.idl"])
    return made


@pytest.fixture(scope="session")
def coffee(repository: InterfaceRepository) -> TypedInterface:
    return repository.lookup("IDL:CoffeeTest/Coffee:1.0")


@pytest.fixture
def channel(factory: TypedEventChannelFactory) -> Iterator[TypedEventChannel]:
    """A new typed channel of the module's ``factory`` fixture, destroyed after."""
    made, _ = factory.create_typed_channel([], [])
    yield made
    made.destroy()
