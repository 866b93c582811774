"""Clients' mapping filters over CORBA (section 2.3.1): the server calls them through
its guard (cosnotify/server/remote.py), relayed by a peer process as a real client's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter as F
import CosNotifyFilter__POA

from cosnotify.server import NotificationServer, ServerConfig
from tests.channel.conftest import number, structured
from tests.peers.harness import Peer
from tests.server.test_remote import push_entry
from tests.typed.conftest import DATA
from tests.typed.inprocess import pulled_names, settle, typed_consumer


def short(value: int) -> Any:
    return CORBA.Any(CORBA.TC_short, value)


class CancelsFirst(CosNotifyFilter__POA.MappingFilter):
    """A client's priority mapping filter: a typed ``cancel_coffee`` call gets 9."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def match_typed(self, data: Any) -> tuple[bool, Any]:
        self.asked.append("match_typed")
        cancel = data[0].value.value().type_name == "cancel_coffee"  # section 2.7's event_type
        return cancel, short(9 if cancel else 0)

    def match_structured(self, data: Any) -> tuple[bool, Any]:
        self.asked.append("match_structured")
        return False, short(0)

    def match(self, data: Any) -> tuple[bool, Any]:
        self.asked.append("match")
        return False, short(0)


@pytest.fixture
def typed_server(omniorb: Any) -> Iterator[NotificationServer]:
    """A server with typed channels (the spec's Coffee IDL), in this process."""
    srv = NotificationServer(ServerConfig(port=0, call_timeout=2.0, filter_timeout=2.0,
                                          idl=(DATA / "Coffee.idl",))).start()
    yield srv
    srv.stop()


def priority_puller(server: NotificationServer, core_admin: Any) -> tuple[Any, Any]:
    """A PriorityOrder structured pull proxy of ``core_admin``: (core, CORBA reference)."""
    core, _ = core_admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
    core.connect_structured_pull_consumer(None)
    core.set_qos([N.Property("OrderPolicy", short(N.PriorityOrder))])
    proxy = server.servants.to_reference(core)._narrow(CA.StructuredProxyPullSupplier)
    return core, proxy


def test_client_mapping_filter_maps_typed_calls(typed_server: NotificationServer,
                                                 peer: Peer) -> None:
    """Section 2.3.1: the proxy supplier "invokes the appropriate match operation on the
    mapping filter", and for a typed event that is match_typed (section 2.3: "The
    match_typed operation is invoked by a Proxy object upon receipt of a typed event").
    A client's priority filter, set over CORBA, maps typed calls: cancels first."""
    channel, _ = typed_server.factory.typed.create_typed_channel([], [])
    core, proxy = priority_puller(typed_server, channel._get_default_consumer_admin())
    client = CancelsFirst()
    proxy._set_priority_filter(peer.remote(client))
    _, coffee = typed_consumer(channel)
    coffee.drinking_coffee("Jo", 2)
    coffee.cancel_coffee("Al")
    coffee.drinking_coffee("Bo", 3)
    settle(channel)
    assert pulled_names(core) == ["Al", "Jo", "Bo"]
    assert client.asked == ["match_typed"] * 3


def test_gone_client_mapping_filter_gives_way_to_the_admins(
        server: NotificationServer, remote_channel: Any, peer: Peer) -> None:
    """Section 3.4.15.4: "If this attribute is set to the reference of a valid mapping
    filter object, this mapping filter will override that set at the admin level.
    Otherwise, the mapping filter object referred to by the priority_filter attribute
    of the ConsumerAdmin is used." A client's filter that no longer exists
    (OBJECT_NOT_EXIST) is not valid: the admin's maps, from the event that found it gone."""
    admin, _ = remote_channel.new_for_consumers(CA.AND_OP)
    shared = remote_channel._get_default_filter_factory().create_mapping_filter(
        "EXTENDED_TCL", short(0))
    shared.add_mapping_constraints([F.MappingConstraintPair(
        F.ConstraintExp([], "$n == 1"), short(9))])
    admin._set_priority_filter(shared)
    proxy = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)[0]._narrow(
        CA.StructuredProxyPullSupplier)
    proxy.connect_structured_pull_consumer(None)
    proxy.set_qos([N.Property("OrderPolicy", short(N.PriorityOrder))])
    client = CancelsFirst()
    relay = peer.remote(client)
    proxy._set_priority_filter(relay)
    peer.drop(relay)
    supplier = push_entry(remote_channel)
    for n in range(3):
        supplier.push_structured_event(structured(fields={"n": n}))
    assert server.factory.service.dispatcher.wait_idle()
    pulled = []
    while True:
        event, has_event = proxy.try_pull_structured_event()
        if not has_event:
            break
        pulled.append(number(event))
    assert pulled == [1, 0, 2]
    assert client.asked == []
