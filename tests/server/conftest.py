"""A notification server and a client ORB in this process, on loopback ports."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from cosnotify.orb import CORBA
from cosnotify.server import NotificationServer, ServerConfig
from cosnotify.stubs import CosNotifyChannelAdmin as CA

_clients = itertools.count(1)


@pytest.fixture
def server() -> Iterator[NotificationServer]:
    srv = NotificationServer(ServerConfig(port=0, call_timeout=2.0)).start()
    yield srv
    srv.stop()


@pytest.fixture
def client_orb() -> Iterator[Any]:
    orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:0",
                          "-ORBclientCallTimeOutPeriod", "5000"], f"test-client-{next(_clients)}")
    poa = orb.resolve_initial_references("RootPOA")
    poa.the_POAManager.activate()
    yield orb
    orb.shutdown(True)
    orb.destroy()


@pytest.fixture
def remote_factory(server: NotificationServer, client_orb: Any) -> Any:
    """The EventChannelFactory resolved the way a C++ client would: corbaname."""
    return CA.EventChannelFactory._narrow(client_orb.string_to_object(server.factory_url))


@pytest.fixture
def remote_channel(remote_factory: Any) -> Any:
    channel, _ = remote_factory.create_channel([], [])
    return channel


def reference(orb: Any, servant: Any) -> Any:
    """Activate ``servant`` in the client ORB's RootPOA and return its reference."""
    return orb.resolve_initial_references("RootPOA").servant_to_reference(servant)
