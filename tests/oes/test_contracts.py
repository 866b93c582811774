"""Subscription contracts: leases on the service's clock, subscriptions, delivery QoS.

Source: /work/shared/seeds/object-eventing-service.txt -- "Subscription
Contracts", "Quality of Service", the CONTRACT and SUBSCRIPTION tables, the
LEASECONTRACT, CANCELCONTRACT, SUBSCRIBE and UNSUBSCRIBE verbs; issue 21:
"an expired lease destroys its subscriptions. The guaranteed QoS maps onto
persistent delivery." Time moves only with the ManualClock (no sleeping).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from omniORB import CORBA

import CosEventComm
import CosNotifyChannelAdmin as CA

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.topology import persistent
from cosnotify.oes import ContractNotFound, Subscription, Tree
from cosnotify.store import MemoryStore
from tests.oes.conftest import PERSISTENT, Recorder, field, figure_1, settle


@pytest.fixture
def asia(tree: Tree) -> Tree:
    figure_1(tree)
    return tree


class TestLease:
    """LEASECONTRACT, renewal, expiry and CANCELCONTRACT."""

    def test_lease_answers_the_contract(self, asia: Tree, clock: ManualClock) -> None:
        """LEASECONTRACT: "The reply to this verb is an XML document describing the contract
        leased": contractid, expiry, contactinfo (and no subscriptions yet)."""
        contract = asia.lease_contract(Recorder(), 60, keep_alive=True)
        assert contract.expiry == clock.now() + 60 and contract.keep_alive
        assert contract.contactinfo == "in-process Recorder" and contract.subscriptions == ()
        assert asia.get_contract(contract.contract_id) == contract

    def test_the_lease_ends_the_subscriptions(self, channel: Any, asia: Tree,
                                              clock: ManualClock) -> None:
        """Subscription Contracts: "If the lease expires, however, all subscriptions
        associated with the expired contract are immediately cancelled, and the process
        ... will no longer receive any further notifications associated with that
        contract" -- its consumer admin and proxy go, and the consumer is told."""
        recorder = Recorder()
        contract = asia.lease_contract(recorder, 60)
        asia.subscribe(contract.contract_id, r"\Asia")
        admins = len(channel.get_all_consumeradmins())
        asia.post(r"\Asia", b"1")
        clock.advance(59.9)
        asia.post(r"\Asia", b"2")
        settle(channel)
        clock.advance(0.1)
        asia.post(r"\Asia", b"3")
        settle(channel)
        assert [field(e, "presentValue") for e in recorder.events] == [b"1", b"2"]
        assert recorder.disconnected.is_set()
        assert len(channel.get_all_consumeradmins()) == admins - 1

    def test_the_contract_id_is_rendered_meaningless(self, asia: Tree,
                                                     clock: ManualClock) -> None:
        """Subscription Contracts: "all memory of the contract (e.g., the set of
        subscriptions made with it) is cleared and its subscription-contract-id is
        rendered meaningless" -- and never given again."""
        first = asia.lease_contract(Recorder(), 10)
        clock.advance(10)
        with pytest.raises(ContractNotFound):
            asia.get_contract(first.contract_id)
        with pytest.raises(ContractNotFound):
            asia.subscribe(first.contract_id, r"\Asia")
        second = asia.lease_contract(Recorder(), 10)
        assert second.contract_id != first.contract_id and asia.contract_ids() == [
            second.contract_id]

    def test_renewal_extends_the_lease(self, channel: Any, asia: Tree,
                                       clock: ManualClock) -> None:
        """Subscription Contracts: "It is permissible for a process to renew its lease on a
        subscription contract, further extending into the future the time at which the
        lease expires" (LEASECONTRACT with the Contract-id header)."""
        recorder = Recorder()
        contract = asia.lease_contract(recorder, 60)
        asia.subscribe(contract.contract_id, r"\Asia")
        clock.advance(50)
        renewed = asia.renew_contract(contract.contract_id, 60)
        assert renewed.expiry == clock.now() + 60
        clock.advance(50)  # past the first expiry
        asia.post(r"\Asia")
        settle(channel)
        assert recorder.seen == [("touch", r"\Asia")] and not recorder.disconnected.is_set()
        clock.advance(10)
        assert asia.contract_ids() == []

    def test_renewal_never_shortens(self, asia: Tree, clock: ManualClock) -> None:
        """Renewal is "further extending into the future": a shorter lease keeps the
        expiry it had."""
        contract = asia.lease_contract(Recorder(), 600)
        assert asia.renew_contract(contract.contract_id, 5).expiry == contract.expiry

    def test_renewal_may_name_a_new_consumer(self, channel: Any, asia: Tree) -> None:
        """LEASECONTRACT: "The argument URI provides information on how to connect to the
        client" -- a renewal with a new consumer delivers there from then on."""
        old, new = Recorder(), Recorder()
        contract = asia.lease_contract(old, 60)
        asia.subscribe(contract.contract_id, r"\Asia")
        asia.post(r"\Asia", b"1")
        settle(channel)
        asia.renew_contract(contract.contract_id, 60, new)
        asia.post(r"\Asia", b"2")
        settle(channel)
        assert (len(old.events), len(new.events)) == (1, 1)

    def test_cancel(self, channel: Any, asia: Tree) -> None:
        """CANCELCONTRACT: "Cancelling a contract immediately removes all subscriptions
        associated with the contract"; 404 (ContractNotFound) the second time."""
        recorder = Recorder()
        contract = asia.lease_contract(recorder, 60)
        asia.subscribe(contract.contract_id, r"\Asia")
        asia.cancel_contract(contract.contract_id)
        asia.post(r"\Asia")
        settle(channel)
        assert recorder.events == [] and recorder.disconnected.is_set()
        with pytest.raises(ContractNotFound):
            asia.cancel_contract(contract.contract_id)

    def test_other_contracts_go_on(self, channel: Any, asia: Tree,
                                   clock: ManualClock) -> None:
        """Subscription Contracts: "It may continue to receive notifications, in general,
        if it had taken out other contracts that have not yet expired"."""
        short, long = Recorder(), Recorder()
        for recorder, lease in ((short, 10), (long, 100)):
            contract = asia.lease_contract(recorder, lease)
            asia.subscribe(contract.contract_id, r"\Asia")
        clock.advance(10)
        asia.post(r"\Asia")
        settle(channel)
        assert (len(short.events), len(long.events)) == (0, 1)

    def test_the_channel_ends_its_contracts(self, channel: Any, asia: Tree) -> None:
        """A destroyed channel takes its tree's contracts: their consumers are told."""
        recorder = Recorder()
        contract = asia.lease_contract(recorder, 60)
        asia.subscribe(contract.contract_id, r"\Asia")
        channel.destroy()
        assert recorder.disconnected.wait(10)


class TestSubscriptions:
    """SUBSCRIBE and UNSUBSCRIBE."""

    def test_subscriptions_are_reported(self, asia: Tree) -> None:
        """The <contract> element's <subscription> children: nodepath, depth, guaranteed."""
        contract = asia.lease_contract(Recorder(), 60)
        asia.subscribe(contract.contract_id, r"\Asia\India", 1)
        asia.subscribe(contract.contract_id, r"\Europe")
        assert asia.get_contract(contract.contract_id).subscriptions == (
            Subscription(r"\Asia\India", 1, False), Subscription(r"\Europe", -1, False))

    def test_a_second_subscription_modifies(self, channel: Any, asia: Tree) -> None:
        """SUBSCRIBE: "There can be only one subscription for a given node per contract
        ... Adding a second subscription for the same node under the same contract
        results in a modification ...; it does not generate an error"."""
        recorder = Recorder()
        contract = asia.lease_contract(recorder, 60)
        asia.subscribe(contract.contract_id, r"\Asia", 0)
        asia.subscribe(contract.contract_id, r"\Asia", 1)
        asia.post(r"\Asia\India")
        asia.post(r"\Asia\India\Bombay")
        settle(channel)
        assert recorder.seen == [("touch", r"\Asia\India")]
        assert len(asia.get_contract(contract.contract_id).subscriptions) == 1

    def test_unsubscribe(self, channel: Any, asia: Tree) -> None:
        """UNSUBSCRIBE: "the row is removed from the table ... No further notifications
        will be processed for this subscription" -- the contract's other ones are."""
        recorder = Recorder()
        contract = asia.lease_contract(recorder, 60)
        asia.subscribe(contract.contract_id, r"\Asia")
        asia.subscribe(contract.contract_id, r"\Europe")
        asia.unsubscribe(contract.contract_id, r"\Asia")
        asia.post(r"\Asia")
        asia.post(r"\Europe")
        settle(channel)
        assert recorder.seen == [("touch", r"\Europe")]

    def test_no_subscription_no_proxy(self, channel: Any, asia: Tree) -> None:
        """A contract's subscriptions are a proxy's filter; with none left the proxy goes
        (an empty filter group would let every event through, section 2.3)."""
        contract = asia.lease_contract(Recorder(), 60)
        admin = asia.contracts._contracts[contract.contract_id].admin
        asia.subscribe(contract.contract_id, r"\Asia")
        assert len(admin._get_push_suppliers()) == 1
        asia.unsubscribe(contract.contract_id, r"\Asia")
        assert admin._get_push_suppliers() == []

    def test_removed_nodes_take_their_subscriptions(self, channel: Any, asia: Tree) -> None:
        """SUBSCRIPTION table: "Nodeid ... constraint: 1=COUNT(SELECT * FROM NODE N WHERE
        N.Nodeid = [Nodeid])": a removed node's subscriptions go, after its removal is
        notified; a node made again under that name is not watched."""
        recorder = Recorder()
        contract = asia.lease_contract(recorder, 60)
        asia.subscribe(contract.contract_id, r"\Asia\India", 0)
        asia.subscribe(contract.contract_id, r"\Europe", 0)
        asia.remove(r"\Asia")
        asia.create(r"\Asia\India", parents=True)
        settle(channel)
        assert recorder.seen == [("remove", r"\Asia\India")]
        assert asia.get_contract(contract.contract_id).subscriptions == (
            Subscription(r"\Europe", 0, False),)

    @pytest.mark.parametrize("subscribed", [[r"\Asia"], [r"\Asia", r"\Asia\India"]])
    def test_a_contract_watching_only_removed_nodes_hears_the_removal(
            self, channel: Any, asia: Tree, subscribed: list[str]) -> None:
        """REMOVE: "A notification is always generated for each node in the tree that was
        removed as a result of this operation" -- also to a contract whose every
        subscription was on a removed node (review 98: its proxy went with its last
        subscription, and the notifications queued in it with it)."""
        recorder = Recorder()
        contract = asia.lease_contract(recorder, 60)
        for path in subscribed:
            asia.subscribe(contract.contract_id, path, 0)
        asia.remove(r"\Asia")
        settle(channel)
        assert sorted(recorder.seen) == sorted(("remove", path) for path in subscribed)
        assert asia.get_contract(contract.contract_id).subscriptions == ()
        asia.create(r"\Asia")
        asia.subscribe(contract.contract_id, r"\Asia", 0)  # the empty proxy serves again
        asia.post(r"\Asia", b"back")
        settle(channel)
        assert recorder.seen[-1][1] == r"\Asia" and len(recorder.seen) == len(subscribed) + 1

    def test_subscriptions_are_channel_objects(self, channel: Any, asia: Tree) -> None:
        """Issue 21: a subscription is a consumer-side subscription in the channel, an
        ordinary consumer admin and structured push proxy with an OES_SUBTREE filter, so
        every consumer of the channel (CORBA ones too) is served alike."""
        contract = asia.lease_contract(Recorder(), 60)
        asia.subscribe(contract.contract_id, r"\Asia\India", 1)
        admin = asia.contracts._contracts[contract.contract_id].admin
        proxy = admin.get_proxy_supplier(admin._get_push_suppliers()[0])
        assert proxy._get_MyType() == CA.PUSH_STRUCTURED
        flt = proxy.get_filter(proxy.get_all_filters()[0])
        assert flt._get_constraint_grammar() == "OES_SUBTREE"
        assert [c.constraint_expression.constraint_expr for c in flt.get_all_constraints()] \
            == [r"\Asia\India depth 1"]


class TestDeliveryQoS:
    """Quality of Service: the CONTRACT table's QoS (keep-alive) and the SUBSCRIPTION
    table's (guaranteed)."""

    def test_a_failed_delivery_expires_the_contract(self, channel: Any, asia: Tree) -> None:
        """Quality of Service: "we prescribe this to be the default behaviour: a
        subscription contract immediately and implicitly expires upon failure to deliver
        a notification for a subscription placed using that contract"."""
        recorder = Recorder()
        contract = asia.lease_contract(recorder, 60)
        asia.subscribe(contract.contract_id, r"\Asia")
        recorder.fail = CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)
        asia.post(r"\Asia")
        settle(channel)
        assert asia.contract_ids() == []
        with pytest.raises(ContractNotFound):
            asia.get_contract(contract.contract_id)

    def test_keep_alive_survives_failures(self, channel: Any, asia: Tree) -> None:
        """LEASECONTRACT: "'keep-alive' ... the contract remains intact until its stated
        expiration time, even if a subscription notification could not be delivered";
        SUBSCRIPTION QoS False: "undeliverable notifications are discarded"."""
        recorder = Recorder()
        contract = asia.lease_contract(recorder, 60, keep_alive=True)
        asia.subscribe(contract.contract_id, r"\Asia")
        recorder.fail = CosEventComm.Disconnected()
        asia.post(r"\Asia", b"lost")
        settle(channel)
        recorder.fail = None
        asia.post(r"\Asia", b"kept")
        settle(channel)
        assert [field(e, "presentValue") for e in recorder.events] == [b"kept"]
        assert asia.contract_ids() == [contract.contract_id]

    def test_node_guaranteed_flag_notifies_every_operation(self, channel: Any,
                                                           asia: Tree) -> None:
        """NODE table QoS: True means "a notification is generated for every operation":
        five quick changes, five notifications (every node gets that here: nothing is
        queued to be dropped; docs/history.md)."""
        recorder = Recorder()
        asia.post(r"\Asia", guaranteed=True)
        contract = asia.lease_contract(recorder, 60)
        asia.subscribe(contract.contract_id, r"\Asia")
        for n in range(5):
            asia.post(r"\Asia", bytes([n]))
        settle(channel)
        assert len(recorder.events) == 5


@pytest.fixture
def durable(clock: ManualClock) -> Iterator[tuple[Any, Tree]]:
    """A persistent channel in a factory over a store, with the Figure 1 tree."""
    with EventChannelFactory(clock=clock, store=MemoryStore()) as made:
        channel, _ = made.create_channel(PERSISTENT, [])
        tree = Tree.of(channel)
        figure_1(tree)
        yield channel, tree


class TestGuaranteed:
    """Issue 21: "The guaranteed QoS maps onto persistent delivery"."""

    def test_guaranteed_subscriptions_use_a_persistent_proxy(
            self, durable: tuple[Any, Tree]) -> None:
        """SUBSCRIPTION QoS True: "latest notification is cached for delivery when client
        unreachable": the subscription is on a proxy with ConnectionReliability
        Persistent, and the tree's notifications are then EventReliability Persistent
        (kept in the store until delivered); best-effort ones on another proxy."""
        _, tree = durable
        contract = tree.lease_contract(Recorder(), 60)
        tree.subscribe(contract.contract_id, r"\Asia", guaranteed=True)
        tree.subscribe(contract.contract_id, r"\Europe")
        live = tree.contracts._contracts[contract.contract_id]
        guaranteed, best_effort = live.proxies[True], live.proxies[False]
        assert persistent(guaranteed) and not persistent(best_effort)
        assert tree.contracts.durable_count == 1

    def test_notifications_wait_in_the_store(self, durable: tuple[Any, Tree]) -> None:
        """SUBSCRIPTION QoS: "cached for delivery when client unreachable": while the
        consumer fails (keep-alive contract) the notifications stay in the store, then
        reach it, in order; the best-effort subscription's are discarded."""
        channel, tree = durable
        recorder = Recorder()
        contract = tree.lease_contract(recorder, 600, keep_alive=True)
        tree.subscribe(contract.contract_id, r"\Asia", guaranteed=True)
        tree.subscribe(contract.contract_id, r"\Europe")
        proxy = tree.contracts._contracts[contract.contract_id].proxies[True]
        recorder.fail = CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)
        tree.post(r"\Asia", b"a1")
        tree.post(r"\Europe", b"e1")
        tree.post(r"\Asia", b"a2")
        settle(channel)
        store = channel._service.topology.store
        assert store.pending_count(proxy._durable_path()) == 2
        recorder.fail = None
        channel._service.clock.advance(60)  # the proxy's retry timer
        assert recorder.wait_for(2)
        settle(channel)
        assert [(field(e, "node"), field(e, "presentValue")) for e in recorder.events] == [
            (r"\Asia", b"a1"), (r"\Asia", b"a2")]

    def test_one_notification_across_both_proxies(self, durable: tuple[Any, Tree]) -> None:
        """SUBSCRIBE: "only one notification will be delivered for a given contract" -- a
        node under a guaranteed and a best-effort subscription of one contract is
        delivered once, by the guaranteed proxy."""
        channel, tree = durable
        recorder = Recorder()
        contract = tree.lease_contract(recorder, 60)
        tree.subscribe(contract.contract_id, r"\Asia", guaranteed=True)
        tree.subscribe(contract.contract_id, "\\")
        tree.post(r"\Asia\India")
        tree.post(r"\Europe")
        settle(channel)
        assert sorted(recorder.seen) == [("touch", r"\Asia\India"), ("touch", r"\Europe")]

    def test_moving_between_guaranteed_and_not(self, durable: tuple[Any, Tree]) -> None:
        """SUBSCRIBE: a second subscription "results in a modification ... if the extended
        quality-of-service parameter changes": it moves to the other proxy; the proxy it
        left keeps no constraint (it passes nothing new, and still delivers what it held:
        review finding 3), and is used again by the next subscription of its kind."""
        channel, tree = durable
        recorder = Recorder()
        contract = tree.lease_contract(recorder, 60)
        tree.subscribe(contract.contract_id, r"\Asia")
        best_effort = tree.contracts._contracts[contract.contract_id].proxies[False]
        tree.subscribe(contract.contract_id, r"\Asia", guaranteed=True)
        live = tree.contracts._contracts[contract.contract_id]
        assert persistent(live.proxies[True]) and live.proxies[False] is best_effort
        assert live.filters[False].get_all_constraints() == []
        tree.post(r"\Asia")
        settle(channel)
        assert recorder.seen == [("touch", r"\Asia")]
        tree.subscribe(contract.contract_id, r"\Asia", guaranteed=False)
        assert live.proxies[False] is best_effort and tree.contracts.durable_count == 0
        assert live.filters[True].get_all_constraints() == []
        tree.post(r"\Asia")
        settle(channel)
        assert recorder.seen == [("touch", r"\Asia")] * 2
