"""What a tree refuses, with the reason, and that a refusal changes nothing.

Source: /work/shared/seeds/object-eventing-service.txt -- Tree ("at least one
character in length", "UCS-2 less the path separator character"), the NODE
table (Nodename Char[64], Content Char[10240] base64, Upl >= -1, Boolean
columns, SubscriptionPool naming a node), REMOVE ("It is not possible to
remove the root"), Figure 5 (pools redirect), the SUBSCRIPTION table (Depth >=
-1), LEASECONTRACT/SUBSCRIBE/UNSUBSCRIBE (404 when the contract, node or
subscription is not there); issue 21's "Bad input" row. Nothing is
half-written: the tree, the store and the channel's notifications are
compared before and after each refusal.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from omniORB import CORBA

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.oes import (
    MAX_CONTENT_BYTES,
    MAX_LEVELS,
    MAX_NAME_CHARS,
    ContractNotFound,
    InvalidRequest,
    NodeNotFound,
    SubscriptionNotFound,
    Tree,
)
from cosnotify.store import MemoryStore
from cosnotify.store.interface import Reason, StoreError
from tests.oes.conftest import PERSISTENT, Recorder, figure_1, settle
from tests.oes.test_nodes import listener


class FailingStore(MemoryStore):
    """A MemoryStore whose ``put`` fails from its ``fail_at``-th call on (0: never)."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_at = 0
        self.puts = 0

    def put(self, record: Any) -> None:
        self.puts += 1
        if self.fail_at and self.puts >= self.fail_at:
            raise StoreError(Reason.FULL, "disk full (test)")
        super().put(record)


@pytest.fixture
def store() -> FailingStore:
    return FailingStore()


@pytest.fixture
def kept(store: FailingStore) -> Iterator[tuple[Any, Tree]]:
    """A persistent channel over a store, with the Figure 1 tree (every node stored)."""
    with EventChannelFactory(clock=ManualClock(), store=store) as made:
        channel, _ = made.create_channel(PERSISTENT, [])
        tree = Tree.of(channel)
        figure_1(tree)
        yield channel, tree


def dump(tree: Tree) -> list[Any]:
    """Every node of the tree with its attributes, from the root down."""
    found, stack = [], ["\\"]
    while stack:
        path = stack.pop()
        found.append(tree.get(path))
        stack.extend(("" if path == "\\" else path) + "\\" + name for name in tree.list(path))
    return sorted(found, key=lambda node: node.nodepath)


def unchanged(channel: Any, tree: Tree, store: MemoryStore,
              refused: Callable[[], Any], error: type[Exception],
              arm: Callable[[], Any] = lambda: None) -> Exception:
    """Run ``refused``, which must raise ``error``; the tree, the store's records and the
    channel's notifications are as they were. Returns the error. ``arm`` runs just
    before ``refused`` (a store set to fail)."""
    heard = listener(channel)
    nodes, records = dump(tree), sorted((r.path, r.data) for r in store.records())
    contracts = {i: tree.get_contract(i) for i in tree.contract_ids()}
    arm()
    with pytest.raises(error) as raised:
        refused()
    if isinstance(store, FailingStore):
        store.fail_at = 0
    tree.post("\\")  # a touch: the notifications before it are all delivered after
    settle(channel)
    assert heard.seen == [("touch", "\\")], "a refused operation notified"
    assert dump(tree)[1:] == nodes[1:], "a refused operation changed the tree"
    after = sorted((r.path, r.data) for r in store.records() if not r.path.endswith("oes/n"))
    assert after == [r for r in records if not r[0].endswith("oes/n")], \
        "a refused operation changed the store"
    assert {i: tree.get_contract(i) for i in tree.contract_ids()} == contracts
    return raised.value


class TestNames:
    """Tree: nodenames and pathnames."""

    @pytest.mark.parametrize("pathname", [r"\Asia\\India", "\\Asia\\", r"\\"])
    def test_empty_names(self, kept: tuple[Any, Tree], store: MemoryStore,
                         pathname: str) -> None:
        """Tree: "The nodename of any non-root node is a character string at least one
        character in length" (the separator twice, or last)."""
        channel, tree = kept
        error = unchanged(channel, tree, store, lambda: tree.create(pathname), InvalidRequest)
        assert "at least one character" in error.reason

    def test_relative_pathname(self, kept: tuple[Any, Tree], store: MemoryStore) -> None:
        """Tree: a pathname is the names "interleaved with a path separator character",
        from the root: one without the leading separator is refused."""
        channel, tree = kept
        error = unchanged(channel, tree, store, lambda: tree.post("Asia", b"x"),
                          InvalidRequest)
        assert "starts with the separator" in error.reason

    def test_name_length(self, kept: tuple[Any, Tree], store: MemoryStore) -> None:
        """NODE table: "Nodename Char[64]": 64 characters are a name, 65 are refused."""
        channel, tree = kept
        tree.create("\\" + "n" * MAX_NAME_CHARS)
        error = unchanged(channel, tree, store,
                          lambda: tree.create("\\" + "n" * (MAX_NAME_CHARS + 1)),
                          InvalidRequest)
        assert "Char[64]" in error.reason

    def test_the_separator_cannot_be_in_a_name(self, kept: tuple[Any, Tree]) -> None:
        """Tree: the legal characters are "UCS-2 less the path separator character": a
        separator in what is meant as a name makes two names, so ``\\a\\b`` under a
        missing ``\\a`` is refused, not made as one node ``a\\b``."""
        _, tree = kept
        with pytest.raises(NodeNotFound) as raised:
            tree.create(r"\Asia\In\dia")
        assert raised.value.nodepath == r"\Asia\In"
        assert tree.list(r"\Asia") == ["India"]

    @pytest.mark.parametrize("bad", ["a\x00b", "a\ud800b"])
    def test_unencodable_characters(self, kept: tuple[Any, Tree], store: MemoryStore,
                                    bad: str) -> None:
        """Names are text a CORBA wstring and the store carry: NUL and lone surrogates
        are refused (cosnotify's limit, docs/history.md)."""
        channel, tree = kept
        unchanged(channel, tree, store, lambda: tree.create("\\" + bad), InvalidRequest)

    def test_depth_limit(self, kept: tuple[Any, Tree], store: MemoryStore) -> None:
        """cosnotify's limit: at most 32 levels (docs/history.md, "OES trees")."""
        channel, tree = kept
        tree.post("\\" + "\\".join("x" * MAX_LEVELS))
        too_deep = "\\" + "\\".join("y" * (MAX_LEVELS + 1))
        unchanged(channel, tree, store, lambda: tree.post(too_deep), InvalidRequest)

    @pytest.mark.parametrize("pathname", [None, 3, b"\\a", ("a",)])
    def test_not_a_string(self, tree: Tree, pathname: Any) -> None:
        """A pathname is a string."""
        with pytest.raises(InvalidRequest):
            tree.get(pathname)


class TestContent:
    """NODE table: "Content Char[10240] Base64 encoded binary content"."""

    def test_content_limit(self, kept: tuple[Any, Tree], store: MemoryStore) -> None:
        """10,240 base64 characters hold 7,680 bytes: that much is kept, one more byte is
        refused, for a new node and for a change."""
        channel, tree = kept
        tree.post(r"\Asia", b"x" * MAX_CONTENT_BYTES)
        assert len(tree.get(r"\Asia").content or b"") == MAX_CONTENT_BYTES
        over = b"y" * (MAX_CONTENT_BYTES + 1)
        unchanged(channel, tree, store, lambda: tree.post(r"\Asia", over), InvalidRequest)
        unchanged(channel, tree, store, lambda: tree.create(r"\Africa", over), InvalidRequest)

    @pytest.mark.parametrize("content", ["text", 7, [1, 2]])
    def test_content_is_binary(self, kept: tuple[Any, Tree], store: MemoryStore,
                               content: Any) -> None:
        """Abstract: nodes contain "arbitrary binary data": content is bytes."""
        channel, tree = kept
        unchanged(channel, tree, store, lambda: tree.post(r"\Asia", content), InvalidRequest)

    def test_post_never_removes_content(self, kept: tuple[Any, Tree],
                                        store: MemoryStore) -> None:
        """POST: "if the <content> element is present ... the content ... is also
        updated" -- it sets content; None (no content) is refused, not a removal."""
        channel, tree = kept
        unchanged(channel, tree, store, lambda: tree.post(r"\Asia", None), InvalidRequest)


class TestAttributes:
    """NODE table: Upl ("constraint [Upl] >= -1"; an Integer), the Boolean columns,
    SubscriptionPool (names an existing node)."""

    @pytest.mark.parametrize("upl", [-2, 2 ** 31, True, "1", 1.0])
    def test_bad_upl(self, kept: tuple[Any, Tree], store: MemoryStore, upl: Any) -> None:
        """Upl is an Integer of at least -1."""
        channel, tree = kept
        unchanged(channel, tree, store, lambda: tree.post(r"\Asia", upl=upl), InvalidRequest)

    @pytest.mark.parametrize("flag", ["yes", 2, None])
    def test_bad_flags(self, kept: tuple[Any, Tree], store: MemoryStore, flag: Any) -> None:
        """QoS and Barricade are Booleans."""
        channel, tree = kept
        unchanged(channel, tree, store, lambda: tree.post(r"\Asia", barricade=flag),
                  InvalidRequest)
        unchanged(channel, tree, store, lambda: tree.create(r"\X", guaranteed=flag),
                  InvalidRequest)

    def test_pool_must_be_a_node(self, kept: tuple[Any, Tree], store: MemoryStore) -> None:
        """SubscriptionPool: "IF [SubscriptionPool] IS NOT NULL THEN 1=COUNT(SELECT * FROM
        NODE N WHERE N.Nodeid = [SubscriptionPool])"."""
        channel, tree = kept
        error = unchanged(channel, tree, store,
                          lambda: tree.post(r"\Asia", subscription_pool=r"\Nowhere"),
                          InvalidRequest)
        assert "is not a node" in error.reason

    @pytest.mark.parametrize("chain", [[r"\Asia"], [r"\Europe", r"\Asia"],
                                       [r"\Europe", r"\Asia\India", r"\Asia"]])
    def test_pool_cycles(self, kept: tuple[Any, Tree], store: MemoryStore,
                         chain: list[str]) -> None:
        """Figure 5: a pool "redirects so that it appears it was generated from a different
        node" and bubbling continues from there: a chain leading back to the node would
        redirect for ever, and is refused (the node itself; two nodes; three)."""
        channel, tree = kept
        for here, there in itertools.pairwise(chain):
            tree.post(here, subscription_pool=there)
        error = unchanged(channel, tree, store,
                          lambda: tree.post(chain[-1], subscription_pool=chain[0]),
                          InvalidRequest)
        assert "cycle" in error.reason

    @pytest.mark.parametrize(("node", "pool"), [(r"\Europe", r"\Europe\France"),
                                                ("\\", r"\Asia"),
                                                (r"\Asia", r"\Asia\India\Bombay")])
    def test_a_pool_inside_its_own_sub_tree(self, kept: tuple[Any, Tree], store: MemoryStore,
                                            node: str, pool: str) -> None:
        """Figure 5's caption: pools "cover all these independent sub-trees", so a pool
        takes its node's whole sub-tree: a node pooled to its own descendant (or the root
        to any node) would get that descendant's notifications back by bubbling, and
        redirect them again for ever: refused."""
        channel, tree = kept
        error = unchanged(channel, tree, store,
                          lambda: tree.post(node, subscription_pool=pool), InvalidRequest)
        assert "cycle" in error.reason and "bubbles up to" in error.reason

    def test_pool_in_use_cannot_be_removed(self, kept: tuple[Any, Tree],
                                           store: MemoryStore) -> None:
        """SubscriptionPool's constraint: a node that is another's pool must exist, so
        removing it (or a sub-tree holding it) is refused while that node is outside;
        the whole sub-tree stays."""
        channel, tree = kept
        tree.post(r"\Europe\France", subscription_pool=r"\Asia\India\Bombay")
        error = unchanged(channel, tree, store, lambda: tree.remove(r"\Asia"),
                          InvalidRequest)
        assert r"\Europe\France" in error.reason
        tree.post(r"\Asia\India\Calcutta", subscription_pool=r"\Asia\India\Bombay")  # inside
        tree.post(r"\Europe\France", subscription_pool=None)
        assert tree.remove(r"\Asia") == 5


class TestStructure:
    """Creating under a missing parent; removing the root; limits."""

    def test_create_under_a_missing_parent(self, kept: tuple[Any, Tree],
                                           store: MemoryStore) -> None:
        """``create`` is strict (cosnotify's): a missing parent is NodeNotFound, naming
        the first missing ancestor; nothing is made. (The seed's POST makes them.)"""
        channel, tree = kept
        error = unchanged(channel, tree, store, lambda: tree.create(r"\Africa\Kenya\Nairobi"),
                          NodeNotFound)
        assert error.nodepath == r"\Africa"

    def test_root_cannot_be_removed(self, kept: tuple[Any, Tree], store: MemoryStore) -> None:
        """REMOVE: "It is not possible to remove the root of the entire OES tree"."""
        channel, tree = kept
        for root in ("\\", ""):
            unchanged(channel, tree, store, lambda r=root: tree.remove(r), InvalidRequest)

    def test_node_limit(self, kept: tuple[Any, Tree], store: MemoryStore,
                        monkeypatch: pytest.MonkeyPatch) -> None:
        """cosnotify's limit on nodes per tree (MAX_NODES): a creation that would pass it
        is refused whole, ancestors included."""
        channel, tree = kept
        monkeypatch.setattr("cosnotify.oes.tree.MAX_NODES", len(tree) + 2)
        unchanged(channel, tree, store, lambda: tree.post(r"\A\B\C"), InvalidRequest)
        tree.post(r"\A\B")
        assert len(tree) == len(dump(tree))


class TestStoreFailures:
    """A write the store refuses leaves the tree as it was (issue 21: "Nothing is
    half-written")."""

    def test_a_failed_creation_is_undone(self, kept: tuple[Any, Tree],
                                         store: FailingStore) -> None:
        """Three nodes to make, the third write fails: the first two records go again,
        nothing is made in memory, nothing is notified; the client gets NO_RESOURCES."""
        channel, tree = kept
        unchanged(channel, tree, store, lambda: tree.post(r"\Africa\Kenya\Nairobi"),
                  CORBA.NO_RESOURCES, arm=lambda: setattr(store, "fail_at", store.puts + 3))

    def test_a_failed_change(self, kept: tuple[Any, Tree], store: FailingStore) -> None:
        """A POST whose record cannot be written changes nothing."""
        channel, tree = kept
        unchanged(channel, tree, store, lambda: tree.post(r"\Asia", b"x", barricade=True),
                  CORBA.NO_RESOURCES, arm=lambda: setattr(store, "fail_at", store.puts + 1))


class TestContracts:
    """LEASECONTRACT, SUBSCRIBE, UNSUBSCRIBE and CANCELCONTRACT refusals."""

    @pytest.mark.parametrize("lease", [0, -1, float("nan"), float("inf"), 31 * 86400, "60"])
    def test_bad_leases(self, tree: Tree, lease: Any) -> None:
        """A lease is a time in the future ("the time at which the lease expires"), at most
        30 days (cosnotify's limit; renewals extend it)."""
        with pytest.raises(InvalidRequest):
            tree.lease_contract(Recorder(), lease)
        assert tree.contract_ids() == []

    @pytest.mark.parametrize("consumer", [None, object(), "tcp:127.0.0.1:80"])
    def test_consumer_must_take_notifications(self, tree: Tree, consumer: Any) -> None:
        """The contract "describes at least the means by which notification events are to
        be delivered": a StructuredPushConsumer."""
        with pytest.raises(InvalidRequest):
            tree.lease_contract(consumer, 60)
        assert tree.contract_ids() == [] and len(tree.channel.get_all_consumeradmins()) == 1

    def test_unknown_contract(self, tree: Tree) -> None:
        """SUBSCRIBE: "Either of these conditions is not met, status code 404"; UNSUBSCRIBE,
        CANCELCONTRACT: 404 for a contract that does not exist."""
        figure_1(tree)
        for call in (lambda: tree.subscribe(7, r"\Asia"), lambda: tree.unsubscribe(7, r"\Asia"),
                     lambda: tree.cancel_contract(7), lambda: tree.renew_contract(7, 60),
                     lambda: tree.get_contract(7), lambda: tree.subscribe("1", r"\Asia")):
            with pytest.raises(ContractNotFound):
                call()

    def test_subscribe_needs_the_node(self, tree: Tree) -> None:
        """SUBSCRIBE: "the server validates that the node specified by the argument URI
        exists"."""
        contract = tree.lease_contract(Recorder(), 60)
        with pytest.raises(NodeNotFound):
            tree.subscribe(contract.contract_id, r"\Asia")
        assert tree.get_contract(contract.contract_id).subscriptions == ()

    @pytest.mark.parametrize("depth", [-2, 2 ** 31, None, "*"])
    def test_bad_depth(self, tree: Tree, depth: Any) -> None:
        """SUBSCRIPTION table: "Depth ... constraint: [Depth] >= -1" (an Integer)."""
        figure_1(tree)
        contract = tree.lease_contract(Recorder(), 60)
        with pytest.raises(InvalidRequest):
            tree.subscribe(contract.contract_id, r"\Asia", depth)
        assert tree.get_contract(contract.contract_id).subscriptions == ()

    def test_unsubscribe_what_is_not_subscribed(self, tree: Tree) -> None:
        """UNSUBSCRIBE: "If no matching row is found, status code 404 is returned"."""
        figure_1(tree)
        contract = tree.lease_contract(Recorder(), 60)
        tree.subscribe(contract.contract_id, r"\Asia")
        with pytest.raises(SubscriptionNotFound):
            tree.unsubscribe(contract.contract_id, r"\Europe")
        assert len(tree.get_contract(contract.contract_id).subscriptions) == 1

    def test_guaranteed_needs_a_persistent_channel(self, tree: Tree) -> None:
        """A guaranteed subscription is persistent delivery: on a best-effort channel it is
        refused with the reason (docs/history.md)."""
        figure_1(tree)
        contract = tree.lease_contract(Recorder(), 60)
        with pytest.raises(InvalidRequest) as raised:
            tree.subscribe(contract.contract_id, r"\Asia", guaranteed=True)
        assert "Persistent" in raised.value.reason
        assert tree.get_contract(contract.contract_id).subscriptions == ()

    def test_subscription_limit(self, tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
        """cosnotify's limit of subscriptions per contract (MAX_SUBSCRIPTIONS)."""
        monkeypatch.setattr("cosnotify.oes.contracts.MAX_SUBSCRIPTIONS", 2)
        figure_1(tree)
        contract = tree.lease_contract(Recorder(), 60)
        tree.subscribe(contract.contract_id, r"\Asia")
        tree.subscribe(contract.contract_id, r"\Europe")
        with pytest.raises(InvalidRequest):
            tree.subscribe(contract.contract_id, r"\Asia\India")
        tree.subscribe(contract.contract_id, r"\Asia", 1)  # a modification still is fine
        assert len(tree.get_contract(contract.contract_id).subscriptions) == 2

    def test_contract_limit(self, tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
        """cosnotify's limit of contracts per tree (MAX_CONTRACTS)."""
        monkeypatch.setattr("cosnotify.oes.contracts.MAX_CONTRACTS", 1)
        tree.lease_contract(Recorder(), 60)
        with pytest.raises(InvalidRequest):
            tree.lease_contract(Recorder(), 60)
        assert len(tree.contract_ids()) == 1


def test_a_full_channel_refuses_changes(clock: ManualClock) -> None:
    """Every change notifies ("OES generates notification events for every such
    operation"): a channel full under RejectNewEvents TRUE refuses the change as it
    refuses a push (IMP_LIMIT, Notification section 2.5.7), and nothing changes."""
    import CosNotification as N
    import CosNotifyChannelAdmin as CA

    admin = [N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 1)),
             N.Property("RejectNewEvents", CORBA.Any(CORBA.TC_boolean, True))]
    with EventChannelFactory(clock=clock) as made:
        channel, _ = made.create_channel([], admin)
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)  # takes the events, never pulls
        tree = Tree.of(channel)
        tree.create(r"\a")
        with pytest.raises(CORBA.IMP_LIMIT):
            tree.post(r"\a", b"x")
        with pytest.raises(CORBA.IMP_LIMIT):
            tree.create(r"\b")
        assert tree.get(r"\a").content is None and tree.list("\\") == ["a"]
        proxy.pull_structured_event()  # room again
        tree.post(r"\a", b"x")
        assert tree.get(r"\a").content == b"x"
