"""Fixtures for the notification interop tests: C++ clients, ``cosnotify serve``, omniEvents."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest

from tests.interop.notify import harness


@pytest.fixture(scope="session")
def notify_cxx() -> dict[str, pathlib.Path]:
    """The C++ clients of ``cxx/`` (built once per source change, cached)."""
    try:
        return harness.build_programs()
    except harness.Unavailable as exc:
        pytest.skip(f"cannot build the C++ notification clients: {exc}")


@pytest.fixture(scope="module")
def notify_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[harness.NotifyServer]:
    """One ``cosnotify serve`` subprocess per test module (each test makes its own channels)."""
    server = harness.NotifyServer(tmp_path_factory.mktemp("notify-server"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def omnievents(tmp_path: pathlib.Path) -> Iterator[harness.OmniEvents]:
    """omniEvents on a free port, listening on loopback only."""
    try:
        service = harness.OmniEvents(tmp_path)
    except harness.Unavailable as exc:
        pytest.skip(f"omniEvents unavailable: {exc}")
    try:
        yield service
    finally:
        service.close()
