"""Fixtures for ORB tests: ORBs that clean up after themselves, and the Interop stubs."""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from cosnotify.orb import CORBA

_ids = itertools.count()


@pytest.fixture(scope="session")
def interop() -> Any:
    """The ``Interop`` stubs (tests/interop/idl/Interop.idl compiled by cosnotify.idl)."""
    from tests.interop import peers

    path = str(peers.python_stubs())
    if path not in sys.path:
        sys.path.insert(0, path)
    import Interop

    return Interop


@pytest.fixture(scope="session")
def peer(interop: Any) -> Any:
    """tests/interop/python_peer.py: the Python ``Interop::Thing`` servant and client."""
    from tests.interop import python_peer

    return python_peer


@pytest.fixture
def make_orb() -> Iterator[Callable[..., Any]]:
    """``make_orb(*argv)``: a fresh ORB (own orb id), destroyed at teardown."""
    made: list[Any] = []

    def make(*argv: str) -> Any:
        orb = CORBA.ORB_init(list(argv), f"test-{os.getpid()}-{next(_ids)}")
        made.append(orb)
        return orb

    yield make
    for orb in reversed(made):
        orb.destroy()


@pytest.fixture
def server_orb(make_orb: Callable[..., Any]) -> Any:
    """An ORB listening on a free loopback port, its RootPOA manager active."""
    orb = make_orb("-ORBendPoint", "giop:tcp:127.0.0.1:0")
    orb.resolve_initial_references("RootPOA")._get_the_POAManager().activate()
    return orb


@pytest.fixture
def client_orb(make_orb: Callable[..., Any]) -> Any:
    """A second ORB in this process: calls to ``server_orb`` objects go over TCP."""
    return make_orb("-ORBclientCallTimeOutPeriod", "20000")


@pytest.fixture
def thing(server_orb: Any, client_orb: Any, interop: Any, peer: Any) -> Any:
    """A client-side reference to a Python ``Interop::Thing`` served by ``server_orb``."""
    poa = server_orb.resolve_initial_references("RootPOA")
    servant = peer.Thing(server_orb)
    ior = server_orb.object_to_string(poa.servant_to_reference(servant))
    return interop.Thing._narrow(client_orb.string_to_object(ior))
