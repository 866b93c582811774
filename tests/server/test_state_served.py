"""The tuple space and OES trees offered by `cosnotify serve` (docs/history.md).

Issue 21, items 3 and 4: "Offered in process and over CORBA". The factory
`cosnotify serve` binds is also a CosNotifyEventHeap::TupleSpaceFactory and a
CosNotifyOES::TreeFactory (idl/CosNotifyMonitor.idl); a client narrows the
factory's reference and asks for a channel's space or tree. The server is a
child process with a store, so every call crosses IIOP; the consumer of a
tree's contract is a servant of this process, on its loopback endpoint.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyComm__POA
import CosNotifyEventHeap
import CosNotifyOES

from tests.server.conftest import ServeProcess
from tests.tuplespace.conftest import event, field

WAIT = 30.0


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, omniorb: Any) -> Iterator[ServeProcess]:
    tmp = tmp_path_factory.mktemp("state")
    made = ServeProcess(tmp, "--call-timeout", "5", "--db", str(tmp / "store.db"))
    yield made
    assert made.stop() == 0, "".join(made.log)


@pytest.fixture
def factory(served: ServeProcess, omniorb: Any) -> Any:
    return omniorb.string_to_object(served.ior)


def new_channel(factory: Any) -> int:
    _, cid = factory._narrow(CA.EventChannelFactory).create_channel([], [])
    return int(cid)


def text(template: str) -> Any:
    return CosNotifyEventHeap.TemplateSpec(CosNotifyEventHeap.AS_TEXT, template)


def test_a_channels_tuple_space_over_iiop(factory: Any) -> None:
    """Event Heap Server Operations through the served factory: put, get (the tuple
    stays), remove (it goes), snoop; the same channel's space each time."""
    cid = new_channel(factory)
    spaces = factory._narrow(CosNotifyEventHeap.TupleSpaceFactory)
    assert spaces is not None
    space = spaces.get_tuple_space(cid)
    assert space.channel_id == cid
    put = space.put_event(event("Alarm", severity=3))
    space.put_event(event("Alarm", severity=1))
    [got] = space.get_event([text('EventType = "Alarm", severity: int = 3')])
    assert (got.id, field(got, "severity")) == (put, 3)
    assert len(space.snoop_events([text('EventType = "Alarm"')], 10)) == 2
    [taken] = space.remove_event([text('EventType = "Alarm", severity: int = 3')])
    assert taken.id == put
    assert space.get_event([text('EventType = "Alarm", severity: int = 3')]) == []
    assert spaces.get_tuple_space(cid)._is_equivalent(space)
    with pytest.raises(CA.ChannelNotFound):
        spaces.get_tuple_space(cid + 1000)


class Consumer(CosNotifyComm__POA.StructuredPushConsumer):  # type: ignore[misc]
    def __init__(self) -> None:
        self.events: list[Any] = []
        self.cond = threading.Condition()

    def push_structured_event(self, event: Any) -> None:
        with self.cond:
            self.events.append(event)
            self.cond.notify_all()

    def offer_change(self, added: Any, removed: Any) -> None:
        pass

    def disconnect_structured_push_consumer(self) -> None:
        pass


def test_a_channels_tree_over_iiop(factory: Any, omniorb: Any) -> None:
    """OES operations through the served factory: create, post, get, list, remove,
    and a leased contract whose subtree subscription is notified of a post (the
    seed's Figure 2: a subscription at a node sees changes below it)."""
    cid = new_channel(factory)
    trees = factory._narrow(CosNotifyOES.TreeFactory)
    assert trees is not None
    tree = trees.get_tree(cid)
    assert tree.channel_id == cid
    consumer = Consumer()
    poa = omniorb.resolve_initial_references("RootPOA")
    poa._get_the_POAManager().activate()
    reference = poa.servant_to_reference(consumer)
    try:
        contract = tree.lease_contract(reference, 60 * 10**7, False)
        tree.create("\\Asia", [], False)
        tree.subscribe(contract.contractid, "\\Asia", -1, False)
        tree.create("\\Asia\\India", [N.Property("content", CORBA.Any(
            CORBA.TypeCode("IDL:CosNotifyOES/NodeContent:1.0"), b"x"))], False)
        node = tree.post("\\Asia\\India", [N.Property("content", CORBA.Any(
            CORBA.TypeCode("IDL:CosNotifyOES/NodeContent:1.0"), b"y"))])
        assert bytes(node.content) == b"y"
        assert list(tree.list("\\Asia")) == ["India"]
        assert bytes(tree.get("\\Asia\\India").content) == b"y"
        with consumer.cond:
            assert consumer.cond.wait_for(lambda: len(consumer.events) >= 2, WAIT)
        assert tree.remove("\\Asia") == 2
        with pytest.raises(CosNotifyOES.NodeNotFound):
            tree.get("\\Asia")
        tree.cancel_contract(contract.contractid)
    finally:
        poa.deactivate_object(poa.servant_to_id(consumer))
