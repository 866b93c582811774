"""OES trees over CORBA: ``CosNotifyOES`` (idl/CosNotifyOES.idl, cosnotify/oes/corba.py).

Source: /work/shared/seeds/object-eventing-service.txt -- the verbs of
"Processing Logic" (LIST, GET, POST, REMOVE, LEASECONTRACT, CANCELCONTRACT,
SUBSCRIBE, UNSUBSCRIBE) and their status codes (400 Bad request, 404 Not
found), the XML schema's <node> attributes; issue 21: "Offered in process and
over CORBA". The servants are activated in this process's RootPOA (loopback
endpoint, tests/conftest.py) and called through their references; the last
test is a client in another process, over IIOP.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
import threading
import weakref
from pathlib import Path
from typing import Any

import pytest
from omniORB import CORBA, PortableServer

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyComm__POA
import CosNotifyOES

from cosnotify.channel.clock import ManualClock, seconds_to_timet
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.oes import MAX_CONTENT_BYTES, Tree
from cosnotify.oes.corba import TreeFactoryServant, TreeServant
from tests.oes.conftest import field, figure_1, settle

ROOT = Path(__file__).resolve().parents[2]


def attributes(**values: Any) -> list[Any]:
    """A PropertySeq of node attributes, with the IDL's types."""
    types = {"content": CORBA._tc_OctetSeq, "upl": CORBA.TC_long,
             "guaranteed": CORBA.TC_boolean, "barricade": CORBA.TC_boolean,
             "subscriptionPool": CORBA.TC_wstring}
    return [N.Property(name, CORBA.Any(CORBA.TC_null, None) if value is None
                       else CORBA.Any(types[name], value)) for name, value in values.items()]


class Consumer(CosNotifyComm__POA.StructuredPushConsumer):  # type: ignore[misc]
    def __init__(self) -> None:
        self.events: list[Any] = []
        self.cond = threading.Condition()

    def push_structured_event(self, event: Any) -> None:
        with self.cond:
            self.events.append(event)
            self.cond.notify_all()

    def disconnect_structured_push_consumer(self) -> None:
        pass

    def offer_change(self, added: Any, removed: Any) -> None:
        pass


@pytest.fixture
def served(omniorb: Any) -> Any:
    """A factory with one channel (id 0), its TreeFactory servant's reference, and the
    servants activated meanwhile (deactivated after)."""
    poa = omniorb.resolve_initial_references("RootPOA")
    with EventChannelFactory(clock=ManualClock()) as factory:
        channel, _ = factory.create_channel([], [])
        servant = TreeFactoryServant(factory, call_timeout=5.0)
        reference = servant._this()
        yield factory, channel, reference
        servant.close()
        poa.deactivate_object(poa.reference_to_id(reference))


class TestTreeFactory:
    def test_get_tree(self, served: Any) -> None:
        """TreeFactory::get_tree: the channel's tree; the same reference again."""
        _, channel, reference = served
        tree = reference.get_tree(0)
        assert tree.channel_id == 0 and tree._is_equivalent(reference.get_tree(0))
        tree.create(r"\a", [], False)
        assert Tree.of(channel).get(r"\a").nodename == "a"

    def test_unknown_channel(self, served: Any) -> None:
        """get_tree of a channel that does not exist: ChannelNotFound."""
        with pytest.raises(CA.ChannelNotFound):
            served[2].get_tree(42)


    def test_a_destroyed_channel_takes_its_servant(self, served: Any, omniorb: Any) -> None:
        """Review finding 6; Subscription Contracts: "all memory of the contract ... is
        cleared": a destroyed channel's tree servant is deactivated at once and the factory
        keeps nothing of it (nor of its tree), however many channels come and go."""
        factory, _, reference = served
        poa = omniorb.resolve_initial_references("RootPOA")
        servant = poa.reference_to_servant(reference)
        gone = []
        for _ in range(5):
            channel, channel_id = factory.create_channel([], [])
            tree = reference.get_tree(channel_id)
            tree.create(r"\a", [], False)
            gone.append((weakref.ref(Tree.of(channel)), poa.reference_to_id(tree)))
            channel.destroy()
            del channel, tree
        gc.collect()
        assert servant._servants == {}
        for tree_ref, oid in gone:
            assert tree_ref() is None
            with pytest.raises(PortableServer.POA.ObjectNotActive):
                poa.id_to_servant(oid)
        assert reference.get_tree(0).channel_id == 0  # the factory still serves


class TestNodes:
    """The node verbs through the IDL."""

    def test_create_get_list(self, served: Any) -> None:
        """GET: nodename, nodepath, upl, guaranteed, barricade, subscriptionPool and
        content, as the IDL's Node; LIST: the children's names."""
        tree = served[2].get_tree(0)
        tree.create(r"\Countries", [], False)
        made = tree.create(r"\Asia\India", attributes(content=b"\x01", upl=1, barricade=True,
                                                     guaranteed=True,
                                                     subscriptionPool=r"\Countries"), True)
        assert vars(made) == vars(tree.get(r"\Asia\India"))  # IDL structs: no __eq__
        assert (made.nodename, made.nodepath, made.upl, made.guaranteed, made.barricade,
                made.has_pool, made.subscriptionPool, made.has_content, made.content) == (
            "India", r"\Asia\India", 1, True, True, True, r"\Countries", True, b"\x01")
        assert tree.list("\\") == ["Asia", "Countries"]
        asia = tree.get(r"\Asia")
        assert (asia.has_content, asia.has_pool) == (False, False)

    def test_post_and_remove(self, served: Any) -> None:
        """POST updates what it names (a null subscriptionPool removes the pool) and
        creates what is missing; REMOVE answers how many nodes went."""
        tree = served[2].get_tree(0)
        tree.post(r"\Asia\India", attributes(content=b"x"))
        tree.post(r"\Pool", [])
        tree.post(r"\Asia\India", attributes(upl=0, subscriptionPool=r"\Pool"))
        node = tree.post(r"\Asia\India", attributes(subscriptionPool=None))
        assert (node.content, node.upl, node.has_pool) == (b"x", 0, False)
        assert tree.remove(r"\Asia") == 2

    def test_names_in_any_script(self, served: Any) -> None:
        """Tree: "UCS-2 ... is assumed to be the character set employed in OES": names are
        wide strings on the wire."""
        tree = served[2].get_tree(0)
        tree.create("\\中国", [], False)
        assert tree.list("\\") == ["中国"] and tree.get("\\中国").nodename == "中国"

    def test_not_found(self, served: Any) -> None:
        """GET, LIST, REMOVE of a missing node: NodeNotFound (the seed's 402/404)."""
        tree = served[2].get_tree(0)
        for call in (tree.get, tree.list, tree.remove):
            with pytest.raises(CosNotifyOES.NodeNotFound) as raised:
                call(r"\Nowhere")
            assert raised.value.nodepath == r"\Nowhere"
        with pytest.raises(CosNotifyOES.NodeNotFound):
            tree.create(r"\Nowhere\Else", [], False)
        with pytest.raises(CosNotifyOES.NodeExists):
            tree.create("\\", [], False)

    @pytest.mark.parametrize(("pathname", "props", "reason"), [
        (r"\a\\b", [], "at least one character"),
        ("\\" + "n" * 65, [], "Char[64]"),
        (r"\a", attributes(content=b"x" * (MAX_CONTENT_BYTES + 1)), "bytes"),
        (r"\a", attributes(upl=-2), "upl"),
        (r"\a", attributes(subscriptionPool=r"\a"), "is not a node"),
        (r"\a", [N.Property("colour", CORBA.Any(CORBA.TC_long, 1))], "unknown node attribute"),
        (r"\a", [N.Property("upl", CORBA.Any(CORBA.TC_string, "1"))], "upl is a long"),
        (r"\a", attributes(upl=1) + attributes(upl=2), "given twice"),
    ])
    def test_bad_requests(self, served: Any, pathname: str, props: list[Any],
                          reason: str) -> None:
        """The seed's 400 (Bad request) is InvalidRequest, with the reason; nothing made."""
        tree = served[2].get_tree(0)
        with pytest.raises(CosNotifyOES.InvalidRequest) as raised:
            tree.post(pathname, props)
        assert reason in raised.value.reason
        assert tree.list("\\") == []

    def test_the_root(self, served: Any) -> None:
        """REMOVE: "It is not possible to remove the root of the entire OES tree"."""
        with pytest.raises(CosNotifyOES.InvalidRequest):
            served[2].get_tree(0).remove("\\")

    def test_destroyed_channel(self, served: Any) -> None:
        """A tree whose channel was destroyed: OBJECT_NOT_EXIST."""
        _, channel, reference = served
        tree = reference.get_tree(0)
        channel.destroy()
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            tree.get("\\")


class TestContracts:
    """LEASECONTRACT, SUBSCRIBE, UNSUBSCRIBE and CANCELCONTRACT through the IDL."""

    def test_lease_subscribe_and_notify(self, served: Any, omniorb: Any) -> None:
        """A CORBA consumer leases a contract (lease in TimeT units, expiry as a TimeT),
        subscribes, and receives the notifications of its sub-tree."""
        factory, channel, reference = served
        tree = reference.get_tree(0)
        figure_1(Tree.of(channel))
        consumer = Consumer()
        consumer_ref = consumer._this()
        try:
            now = factory.service.clock.now()
            contract = tree.lease_contract(consumer_ref, 60 * 10**7, False)
            assert contract.expiry == seconds_to_timet(now + 60) and not contract.keep_alive
            assert "IOR:" in contract.contactinfo
            tree.subscribe(contract.contractid, r"\Asia\India", 1, False)
            assert [vars(s) for s in tree.get_contract(contract.contractid).subscriptions] \
                == [{"nodepath": r"\Asia\India", "depth": 1, "guaranteed": False}]
            tree.post(r"\Asia\India\Bombay", attributes(content=b"b"))
            tree.post(r"\Europe", attributes(content=b"e"))
            settle(channel)
            with consumer.cond:
                assert consumer.cond.wait_for(lambda: consumer.events, 10)
            assert [field(e, "node") for e in consumer.events] == [r"\Asia\India\Bombay"]
            renewed = tree.renew_contract(contract.contractid, 120 * 10**7, None)
            assert renewed.expiry == seconds_to_timet(now + 120)
            tree.unsubscribe(contract.contractid, r"\Asia\India")
            with pytest.raises(CosNotifyOES.SubscriptionNotFound):
                tree.unsubscribe(contract.contractid, r"\Asia\India")
            tree.cancel_contract(contract.contractid)
            with pytest.raises(CosNotifyOES.ContractNotFound) as raised:
                tree.get_contract(contract.contractid)
            assert raised.value.contractid == contract.contractid
        finally:
            poa = omniorb.resolve_initial_references("RootPOA")
            poa.deactivate_object(poa.reference_to_id(consumer_ref))

    def test_bad_contract_requests(self, served: Any) -> None:
        """A nil consumer, a zero lease, a depth below -1: InvalidRequest; an unknown
        contract: ContractNotFound; a missing node: NodeNotFound."""
        tree = served[2].get_tree(0)
        tree.create(r"\a", [], False)
        with pytest.raises(CosNotifyOES.InvalidRequest):
            tree.lease_contract(None, 60 * 10**7, False)
        with pytest.raises(CosNotifyOES.ContractNotFound):
            tree.subscribe(9, r"\a", -1, False)
        with pytest.raises(CosNotifyOES.ContractNotFound):
            tree.cancel_contract(9)


_CLIENT = textwrap.dedent(r'''
    import json, os, sys, threading
    import omniORB
    from omniORB import CORBA
    orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)
    import cosnotify.corba
    import CosNotification as N, CosNotifyComm__POA, CosNotifyOES
    poa = orb.resolve_initial_references("RootPOA")
    poa._get_the_POAManager().activate()
    got = []
    done = threading.Event()

    class Consumer(CosNotifyComm__POA.StructuredPushConsumer):
        def push_structured_event(self, event):
            got.append({p.name: p.value.value() for p in event.filterable_data
                        if p.name in ("node", "operation")})
            if len(got) == 2:
                done.set()
        def disconnect_structured_push_consumer(self): pass
        def offer_change(self, added, removed): pass

    factory = orb.string_to_object(sys.argv[1])._narrow(CosNotifyOES.TreeFactory)
    tree = factory.get_tree(int(sys.argv[2]))
    out = {}
    contract = tree.lease_contract(Consumer()._this(), 60 * 10**7, False)
    tree.create("\\Asia\\India", [], True)
    tree.subscribe(contract.contractid, "\\Asia", -1, False)
    tree.post("\\Asia\\India", [N.Property("content", CORBA.Any(CORBA._tc_OctetSeq, b"x"))])
    tree.remove("\\Asia\\India")
    out["node"] = tree.get("\\Asia").nodepath
    out["children"] = tree.list("\\Asia")
    try:
        tree.create("\\a\\\\b", [], False)
    except CosNotifyOES.InvalidRequest as exc:
        out["refused"] = exc.reason
    out["delivered"] = done.wait(20)
    out["got"] = got
    print(json.dumps(out), flush=True)
    # Done: leave without orb.destroy() or the interpreter's finalization, as
    # `cosnotify serve` does (docs/server.md): the service may still be calling the
    # consumer, and omniORB's teardown then ended this process with std::terminate
    # (status -6) once in a full run.
    os._exit(0)
''')


def test_a_client_in_another_process(served: Any, omniorb: Any) -> None:
    """Issue 21, "Offered ... over CORBA": a client process leases, subscribes, posts,
    removes and reads over IIOP, and its consumer receives the notifications."""
    reference = served[2]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", _CLIENT, omniorb.object_to_string(reference),
                           "0"], capture_output=True, text=True, timeout=120, env=env,
                          cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["node"] == r"\Asia" and out["children"] == []
    assert "at least one character" in out["refused"]
    assert out["delivered"], out
    assert out["got"] == [{"node": r"\Asia\India", "operation": "post"},
                          {"node": r"\Asia\India", "operation": "remove"}]


def test_servant_wraps_a_core_tree(served: Any) -> None:
    """TreeServant takes the core tree and nothing ORB-global (the lead wires it into
    ``cosnotify serve``)."""
    _, channel, _ = served
    servant = TreeServant(Tree.of(channel))
    assert servant._get_channel_id() == 0
    assert servant.get("\\").nodepath == "\\"


_REFUSALS = textwrap.dedent(r'''
    import json, sys
    import omniORB
    from omniORB import CORBA
    orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)
    import cosnotify.corba
    import CosNotification as N, CosNotifyOES

    def pool(path):
        return [N.Property("subscriptionPool", CORBA.Any(CORBA.TC_wstring, path))]

    factory = orb.string_to_object(sys.argv[1])._narrow(CosNotifyOES.TreeFactory)
    tree = factory.get_tree(int(sys.argv[2]))
    out = {}
    calls = {
        "long name": lambda: tree.create("\\" + "\u6f22" * 65, [], False),
        "pool not a node": lambda: tree.create("\\x", pool("\\\u6f22\u8a9e"), False),
        "pool in use": lambda: tree.remove("\\\u6f22\u5b57"),
        "pool cycle": lambda: tree.post("\\\u6f22\u5b57", pool("\\y")),
    }
    tree.create("\\\u6f22\u5b57", [], False)
    tree.create("\\y", pool("\\\u6f22\u5b57"), False)
    for name, call in calls.items():
        try:
            call()
            out[name] = "accepted"
        except CosNotifyOES.InvalidRequest as exc:
            out[name] = [exc.nodepath, exc.reason]
        except Exception as exc:
            out[name] = type(exc).__name__
    out["alive"] = tree.list("\\")
    print(json.dumps(out))
    orb.destroy()
''')


def test_refusals_quoting_any_script_reach_the_client(served: Any, omniorb: Any) -> None:
    """Review finding 1; Tree: "UCS-2 ... is assumed to be the character set employed in
    OES": a refusal that quotes a name outside Latin-1 (a name over Char[64], a pool that
    is not a node, a pool in use, a pool cycle) reaches a client in another process as
    InvalidRequest with its reason -- its reason is a wstring like the names it quotes --
    and the connection stays usable."""
    reference = served[2]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", _REFUSALS, omniorb.object_to_string(reference),
                           "0"], capture_output=True, text=True, timeout=120, env=env,
                          cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    han = "\u6f22"
    assert out["long name"][0] == "\\" + han * 65 and "Char[64]" in out["long name"][1]
    assert han in out["long name"][1]
    assert out["pool not a node"] == ["\\x", "subscription pool \\" + han + "\u8a9e is not "
                                               "a node"]
    assert out["pool in use"][0] == "\\" + han + "\u5b57"
    assert "subscription pool of \\y" in out["pool in use"][1]
    assert "a cycle" in out["pool cycle"][1] and han in out["pool cycle"][1]
    assert sorted(out["alive"]) == ["y", han + "\u5b57"]
