"""Fixtures for the ops tests: the session ORB first.

Something in these tests makes omniORB initialise an ORB (the in-process
core does, lazily, for some values); if that happened before the session's
``omniorb`` fixture, the ORB would lack the options `cosnotify serve` sets
(its 16 MiB message limit) for the server tests sharing the worker.
"""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _session_orb(omniorb: Any) -> Any:
    return omniorb
