"""Fixtures for the whole suite: the process's omniORB ORB."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from omniORB import CORBA

import cosnotify.corba  # noqa: F401 - omniORB first, then the COS and Ack modules

# Property tests check values, never time: no per-example deadline (hypothesis's
# 200 ms default failed an example on a loaded 2-core machine once), and a slow
# strategy is no failure either. The examples stay random: a random example found
# omniORBpy's sequence<unsigned long long> defect (docs/orb.md).
settings.register_profile("cosnotify", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("cosnotify")


@pytest.fixture(scope="session")
def omniorb() -> Any:
    """This process's ORB (omniORB allows one), on a loopback endpoint, RootPOA active.

    It runs with the options `cosnotify serve` sets, since servers made in this
    process share it.
    """
    from cosnotify.server.app import ServerConfig, orb_arguments

    orb = CORBA.ORB_init(orb_arguments(ServerConfig(port=0)), CORBA.ORB_ID)
    orb.resolve_initial_references("RootPOA")._get_the_POAManager().activate()
    return orb


@pytest.fixture(scope="session", autouse=True)
def _orb_before_anything(omniorb: Any) -> None:
    """Make the ORB with `omniorb`'s options before any test runs.

    Code that needs an ORB and finds none (``channel.codec.ensure_orb``, for a
    store) makes one with omniORB's defaults, and omniORB keeps the first ORB
    of a process: had such a test run first in an xdist worker, a later test of
    that worker relying on the server's options (the message size limit,
    tests/server/test_bad_input.py) would fail depending on test order.
    """
