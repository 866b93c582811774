"""Regression tests of the review of the OES trees (commit 6b4b171, findings 2-5 and 8,
and the lesser ones; 1 and 6 are in test_corba.py, 7 in test_figures.py,
test_pools.py and test_index.py).

Source: /work/shared/seeds/object-eventing-service.txt -- Abstract ("persistent
data storage"), Basic Concepts (Tree: "UCS-2"; Figures 3-5), Subscription
Contracts ("all memory of the contract ... is cleared"), Quality of Service
("cached for delivery when client unreachable"), SUBSCRIBE ("only one
notification will be delivered for a given contract"), the NODE, CONTRACT and
SUBSCRIPTION tables; the review's findings, each named in its test.
"""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyGrammars as G

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.oes import ContractNotFound, InvalidRequest, Tree
from cosnotify.store import MemoryStore
from cosnotify.store.interface import Reason, StoreError
from tests.oes.conftest import (
    PERSISTENT,
    Recorder,
    Restarts,
    field,
    figure_1,
    settle,
)

BEST_EFFORT = [N.Property("ConnectionReliability", CORBA.Any(CORBA.TC_short, N.BestEffort))]


def node_limits(*limits: Any) -> list[Any]:
    """The channel's OESNodeLimits admin property."""
    return [N.Property("OESNodeLimits", CORBA.Any(G._tc_NodeLimitSeq, list(limits)))]


class Store(MemoryStore):
    """A MemoryStore that fails what it is told to: ``fail`` holds the names of the
    operations (``put``, ``delete``, ``add_events``) that raise, and ``only`` (if set) a
    path fragment the failing put or delete must name."""

    def __init__(self) -> None:
        super().__init__()
        self.fail: set[str] = set()
        self.only = ""

    def _maybe_fail(self, operation: str, path: str = "") -> None:
        if operation in self.fail and self.only in path:
            raise StoreError(Reason.FULL, f"{operation} failed (test)")

    def put(self, record: Any) -> None:
        self._maybe_fail("put", record.path)
        super().put(record)

    def delete(self, path: str) -> None:
        self._maybe_fail("delete", path)
        super().delete(path)

    def add_events(self, *args: Any, **kwargs: Any) -> Any:
        self._maybe_fail("add_events")
        return super().add_events(*args, **kwargs)


@pytest.fixture
def store() -> Store:
    return Store()


@pytest.fixture
def durable(store: Store, clock: ManualClock) -> Iterator[tuple[Any, Tree]]:
    """A persistent channel over a store, with the Figure 1 tree."""
    with EventChannelFactory(clock=clock, store=store) as made:
        channel, _ = made.create_channel(PERSISTENT, [])
        tree = Tree.of(channel)
        figure_1(tree)
        yield channel, tree


class TestReliabilitySwitch:
    """Review finding 2; Abstract: "persistent data storage": a persistent channel's tree
    is in the store whenever the channel is persistent, however it got there."""

    def test_back_to_persistent_writes_the_whole_tree(self, restarts: Restarts) -> None:
        """Persistent -> BestEffort (the channel's records go) -> Persistent, then a
        change: every node comes back after a restart, not only the changed one."""
        channel, channel_id = restarts.start().create_channel(PERSISTENT, [])
        tree = Tree.of(channel)
        tree.create(r"\a", b"x")
        tree.create(r"\a\b", b"y")
        channel.set_qos(BEST_EFFORT)
        channel.set_qos(PERSISTENT)
        tree.post(r"\a\c", b"z")
        tree = Tree.of(restarts.start().get_event_channel(channel_id))
        assert tree.list(r"\a") == ["b", "c"]
        assert [tree.get(p).content for p in (r"\a", r"\a\b", r"\a\c")] == [b"x", b"y", b"z"]

    def test_back_to_persistent_with_no_change_after(self, restarts: Restarts) -> None:
        """Persistent -> BestEffort -> Persistent with no tree operation afterwards: the
        tree comes back all the same."""
        channel, channel_id = restarts.start().create_channel(PERSISTENT, [])
        tree = Tree.of(channel)
        tree.create(r"\a\b", b"y", parents=True)
        channel.set_qos(BEST_EFFORT)
        assert restarts.records(f"ch/{channel_id}/oes") == []
        channel.set_qos(PERSISTENT)
        tree = Tree.of(restarts.start().get_event_channel(channel_id))
        assert tree.get(r"\a\b").content == b"y"

    def test_a_best_effort_tree_made_persistent(self, restarts: Restarts) -> None:
        """A tree built on a best-effort channel (kept in memory only), which is then made
        Persistent: its nodes are written then, and come back. (A channel with admins,
        so with contracts, cannot change its ConnectionReliability.)"""
        channel, channel_id = restarts.start().create_channel([], [])
        tree = Tree.of(channel)
        figure_1(tree)
        tree.post(r"\Asia\India", b"x", barricade=True)
        channel.set_qos(PERSISTENT)
        tree = Tree.of(restarts.start().get_event_channel(channel_id))
        assert tree.list(r"\Europe\France") == ["Nice", "Paris"]
        india = tree.get(r"\Asia\India")
        assert (india.content, india.barricade) == (b"x", True)


class Gate(Recorder):
    """A Recorder whose pushes wait for ``gate`` (``entered`` is set by the first)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.entered = threading.Event()

    def push_structured_event(self, event: Any) -> None:
        self.entered.set()
        assert self.gate.wait(30)
        super().push_structured_event(event)


class TestOneNotificationPerContract:
    """Review finding 3; SUBSCRIBE: "only one notification will be delivered for a given
    contract, regardless of how many subscriptions placed with that contract may absorb
    the notification" -- decided when the notification is routed, whatever changes while
    it waits."""

    def test_a_subscription_made_guaranteed_while_notifications_wait(
            self, durable: tuple[Any, Tree]) -> None:
        """Five notifications wait for a keep-alive contract's consumer under a best-effort
        subscription; the subscription then becomes guaranteed ("results in a
        modification"): each of the five is delivered once, and so is the next."""
        channel, tree = durable
        consumer = Gate()
        contract = tree.lease_contract(consumer, 3600, keep_alive=True)
        tree.subscribe(contract.contract_id, r"\Asia")
        for n in range(5):
            tree.post(r"\Asia", f"v{n}".encode())
        assert consumer.entered.wait(30)  # v0 is being pushed, v1..v4 wait
        tree.subscribe(contract.contract_id, r"\Asia", -1, True)
        tree.post(r"\Asia", b"v5")
        consumer.gate.set()
        assert consumer.wait_for(6)
        settle(channel)
        assert sorted(field(e, "presentValue") for e in consumer.events) == [
            f"v{n}".encode() for n in range(6)]

    def test_a_limit_changed_while_a_notification_waits(
            self, durable: tuple[Any, Tree]) -> None:
        """A contract watches the root (best effort) and Asia (guaranteed); a notification
        of India, which both take, waits; India's limit then becomes 0 (Figure 3): it is
        still delivered once, by the guaranteed subscription that took it."""
        channel, tree = durable
        consumer = Gate()
        contract = tree.lease_contract(consumer, 3600, keep_alive=True)
        tree.subscribe(contract.contract_id, "\\")
        tree.subscribe(contract.contract_id, r"\Asia", -1, True)
        tree.post(r"\Europe", b"first")  # the root's only: holds the best-effort lane
        assert consumer.entered.wait(30)
        tree.post(r"\Asia\India", b"both")
        tree.post(r"\Asia\India", upl=0)  # its own notification reaches neither
        consumer.gate.set()
        assert consumer.wait_for(2)
        settle(channel)
        assert sorted(field(e, "presentValue") for e in consumer.events) == [b"both", b"first"]


class TestNodeLimitsFollowTheTree:
    """Review finding 4; Figure 3: a node's own limit decides; the channel's OESNodeLimits
    apply to paths that are not nodes of the tree, so creating or removing a node at such
    a path changes the table the channel filters with."""

    def test_a_node_created_where_the_channel_names_a_limit(self, channel: Any,
                                                             tree: Tree) -> None:
        """OESNodeLimits gives \\X limit 0; a node \\X made with the NODE table's default
        ("[Upl] = -1 means infinite"; default -1) notifies the root's subscription; once
        it is removed, the channel's entry is back."""
        channel.set_admin(node_limits(G.NodeLimit(r"\X", 0, False)))
        root = Recorder()
        tree.subscribe(tree.lease_contract(root, 3600).contract_id, "\\")
        tree.create(r"\X")
        tree.post(r"\X", b"v")
        settle(channel)
        assert root.seen == [("create", r"\X"), ("post", r"\X")]
        tree.remove(r"\X")
        settle(channel)
        assert channel._oes_limits.get(("X",)).upl == 0

    def test_after_a_restart(self, restarts: Restarts) -> None:
        """The same after a restart: the restored node \\X governs its own path."""
        channel, channel_id = restarts.start().create_channel(PERSISTENT, [])
        channel.set_admin(node_limits(G.NodeLimit(r"\X", 0, False)))
        Tree.of(channel).create(r"\X")
        channel = restarts.start().get_event_channel(channel_id)
        tree = Tree.of(channel)
        root = Recorder()
        tree.subscribe(tree.lease_contract(root, 3600).contract_id, "\\")
        tree.post(r"\X", b"v")
        settle(channel)
        assert root.seen == [("post", r"\X")]


class TestEndedContractsAreForgotten:
    """Review finding 5; Subscription Contracts: "all memory of the contract (e.g., the
    set of subscriptions made with it) is cleared"."""

    def test_cancelled_contracts_are_not_kept(self, clock: ManualClock) -> None:
        """A cancelled contract (and its consumer) is not kept alive by its lease timer:
        once the service's workers have stopped, nothing but the clock, which outlives
        the factory here, could hold it."""
        refs = []
        with EventChannelFactory(clock=clock) as made:
            channel, _ = made.create_channel([], [])
            tree = Tree.of(channel)
            tree.create(r"\a")
            for _ in range(20):
                consumer = Recorder()
                refs.append(weakref.ref(consumer))
                contract = tree.lease_contract(consumer, 30 * 24 * 3600)
                tree.subscribe(contract.contract_id, r"\a")
                tree.cancel_contract(contract.contract_id)
                del consumer
            settle(channel)
        gc.collect()
        assert [ref for ref in refs if ref() is not None] == []

    def test_renewals_do_not_pile_up_timers(self, tree: Tree, clock: ManualClock) -> None:
        """Renewing ("further extending into the future the time at which the lease
        expires") a thousand times leaves one lease timer, and the lease still ends."""
        contract = tree.lease_contract(Recorder(), 60)
        before = len(clock._timers)
        for n in range(1000):
            tree.renew_contract(contract.contract_id, 60 + n)
        assert len(clock._timers) <= before + 1
        clock.advance(60 + 999)
        assert tree.contract_ids() == []


class TestGuaranteedAdmission:
    """Review finding 8; SUBSCRIPTION QoS: "latest notification is cached for delivery
    when client unreachable": a notification that could not be stored for a guaranteed
    subscription is not passed over in silence."""

    def test_a_store_failure_is_reported(self, durable: tuple[Any, Tree],
                                         store: Store) -> None:
        """The store refuses the notification of a POST while a guaranteed subscription
        waits for it: the caller gets NO_RESOURCES with COMPLETED_YES (the change is
        made, and told to the best-effort subscriptions, but its guaranteed delivery
        failed)."""
        channel, tree = durable
        consumer = Recorder()
        contract = tree.lease_contract(consumer, 3600, keep_alive=True)
        tree.subscribe(contract.contract_id, r"\Asia", -1, True)
        store.fail.add("add_events")
        with pytest.raises(CORBA.NO_RESOURCES) as raised:
            tree.post(r"\Asia", b"new")
        assert raised.value.completed == CORBA.COMPLETED_YES
        assert tree.get(r"\Asia").content == b"new" and tree.undelivered == 1
        store.fail.clear()
        tree.post(r"\Asia", b"newer")
        assert consumer.wait_for(1)
        settle(channel)
        assert [field(e, "presentValue") for e in consumer.events] == [b"newer"]


class TestLesser:
    """The review's lesser findings."""

    def test_names_are_measured_in_ucs2_units(self, tree: Tree) -> None:
        """NODE table "Nodename Char[64]" in UCS-2 ("UCS-2 ... is assumed to be the
        character set"): a character outside the BMP takes two units, so 32 of them fill a
        name and 33 are refused."""
        smile = "\U0001F600"
        tree.create("\\" + smile * 32)
        with pytest.raises(InvalidRequest) as raised:
            tree.create("\\" + smile * 33)
        assert "Char[64]" in raised.value.reason
        assert tree.list("\\") == [smile * 32]

    def test_subscriptions_per_tree_are_bounded(self, tree: Tree,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
        """cosnotify's limit of subscriptions in all of a tree's contracts
        (MAX_TREE_SUBSCRIPTIONS), beside the per-contract one; a modification is fine."""
        monkeypatch.setattr("cosnotify.oes.contracts.MAX_TREE_SUBSCRIPTIONS", 3)
        figure_1(tree)
        first, second = (tree.lease_contract(Recorder(), 60).contract_id for _ in range(2))
        tree.subscribe(first, r"\Asia")
        tree.subscribe(first, r"\Europe")
        tree.subscribe(second, r"\Asia")
        with pytest.raises(InvalidRequest) as raised:
            tree.subscribe(second, r"\Europe")
        assert "subscriptions" in raised.value.reason
        tree.subscribe(second, r"\Asia", 0)
        tree.unsubscribe(first, r"\Europe")
        tree.subscribe(second, r"\Europe")

    def test_a_malformed_request_on_a_full_channel(self, clock: ManualClock) -> None:
        """A malformed request is the seed's 400 (InvalidRequest) even when the channel is
        full under RejectNewEvents, which refuses only valid changes (IMP_LIMIT)."""
        import CosNotifyChannelAdmin as CA

        admin = [N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 1)),
                 N.Property("RejectNewEvents", CORBA.Any(CORBA.TC_boolean, True))]
        with EventChannelFactory(clock=clock) as made:
            channel, _ = made.create_channel([], admin)
            proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
                CA.STRUCTURED_EVENT)
            proxy.connect_structured_pull_consumer(None)
            tree = Tree.of(channel)
            tree.create(r"\a")
            for call in (lambda: tree.post(r"\a\\b"), lambda: tree.create("a"),
                         lambda: tree.remove("\\"), lambda: tree.post(r"\a", upl=-2)):
                with pytest.raises(InvalidRequest):
                    call()
            with pytest.raises(CORBA.IMP_LIMIT):
                tree.post(r"\a", b"x")

    def test_a_cancel_the_store_refuses_changes_nothing(self, durable: tuple[Any, Tree],
                                                        store: Store) -> None:
        """CANCELCONTRACT "immediately removes all subscriptions": if the store cannot
        delete the contract's record, the cancel fails (NO_RESOURCES) and the contract is
        as it was -- it cannot come back at a restart after a cancel that answered OK."""
        _, tree = durable
        contract = tree.lease_contract(Recorder(), 600)
        tree.subscribe(contract.contract_id, r"\Asia")
        store.fail.add("delete")
        with pytest.raises(CORBA.NO_RESOURCES):
            tree.cancel_contract(contract.contract_id)
        assert tree.get_contract(contract.contract_id).subscriptions[0].nodepath == r"\Asia"
        store.fail.clear()
        tree.cancel_contract(contract.contract_id)
        assert [r.path for r in store.records() if "/oes/c/" in r.path] == []

    def test_a_removed_node_subscription_cannot_come_back(self, durable: tuple[Any, Tree],
                                                          store: Store) -> None:
        """SUBSCRIPTION.Nodeid names an existing node: REMOVE drops the subscriptions on
        the removed nodes; if the contract's record could not be rewritten then, it is
        before the next change, so a node made again under the same name is not watched
        from the store either."""
        _, tree = durable
        contract = tree.lease_contract(Recorder(), 600)
        tree.subscribe(contract.contract_id, r"\Asia\India")
        tree.subscribe(contract.contract_id, r"\Europe")
        store.fail.add("put")
        store.only = "/oes/c/"
        tree.remove(r"\Asia")
        store.fail.clear()
        tree.create(r"\Asia\India", parents=True)
        [record] = [r for r in store.records() if r.path.endswith(f"/oes/c/{contract.contract_id}")]
        assert b"India" not in record.data and b"Europe" in record.data

    def test_a_renewal_moves_delivery_to_the_new_consumer_lane(self, factory: Any,
                                                                channel: Any,
                                                                tree: Tree) -> None:
        """LEASECONTRACT with a Contract-id naming a new consumer: the contract's proxies
        then deliver on the new consumer's lane (a client's own workers), not the old
        one's."""
        service = factory.service
        service.client_key = lambda client: getattr(client, "key", None)
        tree.create(r"\a")
        old, new = Recorder(), Recorder()
        old.key, new.key = "old", "new"  # type: ignore[attr-defined]
        contract = tree.lease_contract(old, 60)
        tree.subscribe(contract.contract_id, r"\a")
        proxy = tree.contracts._contracts[contract.contract_id].proxies[False]
        assert proxy._lane is service.dispatcher.lane("old")
        tree.renew_contract(contract.contract_id, 60, new)
        assert proxy._lane is service.dispatcher.lane("new")

    def test_a_destroyed_contract_admin_ends_its_contract(self, channel: Any,
                                                          tree: Tree) -> None:
        """A client that destroys a contract's consumer admin (it is one of the channel's)
        ends the contract: its consumer is told, and the next request naming it is
        ContractNotFound ("its subscription-contract-id is rendered meaningless"), not
        OBJECT_NOT_EXIST -- with subscriptions (its proxies go) or without."""
        tree.create(r"\a")
        watching, idle = Recorder(), Recorder()
        first = tree.lease_contract(watching, 60).contract_id
        tree.subscribe(first, r"\a")
        second = tree.lease_contract(idle, 60).contract_id
        for contract_id in (first, second):
            tree.contracts._contracts[contract_id].admin.destroy()
        settle(channel)
        assert tree.contract_ids() == [second] and watching.disconnected.is_set()
        for contract_id in (first, second):
            with pytest.raises(ContractNotFound):
                tree.subscribe(contract_id, r"\a")
        assert tree.contract_ids() == []


class TestRemoveWhoseNotificationFails:
    """Review 125: a REMOVE whose guaranteed notification could not be kept raises
    (COMPLETED_YES: the nodes are gone) -- and left the removed nodes' limits, pool
    references and subscriptions behind. The seed's tables: a subscription's and a
    pool's Nodeid names an existing node ("1=COUNT(SELECT * FROM NODE N WHERE
    N.Nodeid = [Nodeid])")."""

    FULL: ClassVar[list[Any]] = [
        N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 2)),
        N.Property("RejectNewEvents", CORBA.Any(CORBA.TC_boolean, True))]
    ROOMY: ClassVar[list[Any]] = [N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 0))]

    def _fail_remove(self, channel: Any, tree: Tree) -> None:
        import CosNotifyChannelAdmin as CA

        held, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        held.connect_structured_pull_consumer(None)  # keeps every event queued
        channel.set_admin(self.FULL)
        with pytest.raises((CORBA.IMP_LIMIT, CORBA.NO_RESOURCES)) as raised:
            tree.remove(r"\x")  # three notifications, room for two
        assert raised.value.completed == CORBA.COMPLETED_YES
        assert not tree.exists(r"\x")
        channel.set_admin(self.ROOMY)
        settle(channel)

    def test_limits_and_subscriptions_of_removed_nodes_go(self, clock: ManualClock) -> None:
        with EventChannelFactory(clock=clock, store=MemoryStore()) as made:
            channel, _ = made.create_channel(PERSISTENT, [])
            tree = Tree.of(channel)
            tree.create(r"\x\y\z", parents=True)
            tree.post(r"\x\y", barricade=True)
            guaranteed = tree.lease_contract(Recorder(), 3600, keep_alive=True)
            tree.subscribe(guaranteed.contract_id, r"\x\y", -1, True)
            root = Recorder()
            tree.subscribe(tree.lease_contract(root, 3600).contract_id, "\\")
            settle(channel)
            self._fail_remove(channel, tree)
            assert not tree.get_contract(guaranteed.contract_id).subscriptions
            before = len(root.seen)
            tree.create(r"\x\y\q", parents=True)  # no barricade at \x\y any more
            settle(channel)
            assert [n for _, n in root.seen[before:]] == [r"\x", r"\x\y", r"\x\y\q"]

    def test_a_removed_nodes_pool_can_go(self, clock: ManualClock) -> None:
        with EventChannelFactory(clock=clock, store=MemoryStore()) as made:
            channel, _ = made.create_channel(PERSISTENT, [])
            tree = Tree.of(channel)
            tree.create(r"\P")
            tree.create(r"\x\y\z", parents=True)
            tree.post(r"\x\y", subscription_pool=r"\P")
            guaranteed = tree.lease_contract(Recorder(), 3600, keep_alive=True)
            tree.subscribe(guaranteed.contract_id, "\\", -1, True)
            settle(channel)
            self._fail_remove(channel, tree)
            assert tree.remove(r"\P") == 1  # nothing is pooled to \P any more
