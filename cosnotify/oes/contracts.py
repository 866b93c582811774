"""Subscription contracts of an OES tree: leases, subscriptions, delivery.

Strategy: "the process leases a subscription contract from OES. The contract
describes at least the means by which notification events are to be
delivered and the time at which the lease expires" (Subscription Contracts).
Here the means is a ``CosNotifyComm::StructuredPushConsumer`` and a contract
is an ordinary part of the channel, so the channel's delivery, queues, QoS
and persistence serve it: one consumer admin per contract, with up to two
structured push proxy suppliers, each with one OES_SUBTREE filter whose
constraints are the contract's subscriptions (a subscription on node S with
depth d is the constraint ``S depth d``, for events of domain ``OES``):

- the **best-effort** proxy holds the subscriptions without the guaranteed
  flag: "undeliverable notifications are discarded";
- the **guaranteed** proxy (ConnectionReliability Persistent, so the channel
  keeps its events in the store and retries them; the tree's notifications are
  then EventReliability Persistent) holds those with it: "latest notification
  is cached for delivery when client unreachable" -- here every notification
  is, not only the latest. It needs a persistent channel in a factory with a
  store.

Both proxies push to a relay (relay.py), which pushes to the contract's
consumer. The relay keeps the seed's rules the channel does not know:
"only one notification will be delivered for a given contract, regardless of
how many subscriptions placed with that contract may absorb the notification"
(a filter's constraints are ORed, and the best-effort relay skips what a
guaranteed subscription of the contract also took -- decided on what held
when the notification was routed, :meth:`ContractBook.routing_state`, not
when it is delivered); "a subscription contract immediately and implicitly
expires upon failure to deliver a notification" unless it was leased
keep-alive (the CONTRACT table's QoS); and a renewal may name a new consumer.
A subscription that moves to the other proxy (a SUBSCRIBE "modification" of
its QoS) leaves its old proxy in place with an empty filter (it passes
nothing), so what was routed to it before is still delivered.

A lease ends on the service's clock (leases.py: one timer per tree, at the
earliest expiry): "all subscriptions associated with the expired contract are
immediately cancelled ... all memory of the contract ... is cleared and its
subscription-contract-id is rendered meaningless". Contract ids come from the
store's counters when there is a store, so none is ever given twice.
"""

from __future__ import annotations

import itertools
import logging
import weakref
from typing import TYPE_CHECKING, Any

import attrs
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter

from cosnotify.channel.clients import connectable
from cosnotify.channel.topology import persistent
from cosnotify.filter.oes.limits import CURRENT_LIMITS, Path, format_path
from cosnotify.filter.oes.subtree import Subscription as _Subtree
from cosnotify.filter.oes.subtree import compile_subscription, render_subscription
from cosnotify.oes.errors import ContractNotFound, InvalidRequest, SubscriptionNotFound
from cosnotify.oes.events import DOMAIN, OPERATIONS
from cosnotify.oes.leases import Leases
from cosnotify.oes.paths import (
    MAX_CONTRACTS,
    MAX_SUBSCRIPTIONS,
    MAX_TREE_SUBSCRIPTIONS,
    check_flag,
    check_lease,
    check_limit,
    parse_path,
    shown,
)
from cosnotify.oes.relay import Relay

if TYPE_CHECKING:
    from cosnotify.oes.tree import Tree

__all__ = ["CONSUMER_ID", "Contract", "ContractBook", "Subscription"]

log = logging.getLogger("cosnotify.oes")

#: The interface of a contract's consumer.
CONSUMER_ID = "IDL:omg.org/CosNotifyComm/StructuredPushConsumer:1.0"
_BEST_EFFORT = [N.Property("ConnectionReliability", CORBA.Any(CORBA.TC_short, 0))]


@attrs.frozen
class Subscription:
    """A row of the SUBSCRIPTION table: the node watched, the depth of its sub-tree
    (-1: infinite) and the guaranteed flag (QoS)."""

    nodepath: str
    depth: int = -1
    guaranteed: bool = False


@attrs.frozen
class Contract:
    """A contract as LEASECONTRACT answers it: id, expiry (Unix seconds on the service's
    clock), contact information, keep-alive (the CONTRACT table's QoS) and, here, its
    subscriptions (by node path)."""

    contract_id: int
    expiry: float
    contactinfo: str
    keep_alive: bool
    subscriptions: tuple[Subscription, ...] = ()


class _Contract:
    """A live contract (guarded by the tree's lock)."""

    __slots__ = (
        "admin",
        "constraints",
        "consumer",
        "ended",
        "expiry",
        "filters",
        "id",
        "keep_alive",
        "matchers",
        "proxies",
        "subscriptions",
        "told",
    )

    def __init__(self, contract_id: int, consumer: Any, expiry: float, keep_alive: bool,
                 admin: Any) -> None:
        self.id = contract_id
        self.consumer = consumer
        self.expiry = expiry
        self.keep_alive = keep_alive
        self.admin = admin
        #: node path -> (depth, guaranteed)
        self.subscriptions: dict[Path, tuple[int, bool]] = {}
        #: node path -> its constraint id in the filter of its proxy
        self.constraints: dict[Path, int] = {}
        #: [best-effort, guaranteed]: the proxies and their filters (None: none yet).
        self.proxies: list[Any] = [None, None]
        self.filters: list[Any] = [None, None]
        #: The structured matchers of the guaranteed subscriptions (the relay's test).
        self.matchers: tuple[Any, ...] = ()
        self.ended = False
        self.told = False

    def view(self) -> Contract:
        subscriptions = tuple(Subscription(format_path(path), depth, guaranteed)
                              for path, (depth, guaranteed) in sorted(self.subscriptions.items()))
        return Contract(self.id, self.expiry, contact_info(self.consumer), self.keep_alive,
                        subscriptions)


def contact_info(consumer: Any) -> str:
    """The CONTRACT table's Contactinfo: the consumer's IOR, or what it is in process."""
    if isinstance(consumer, CORBA.Object):
        from cosnotify.channel import codec

        return codec.reference_text(consumer) or ""
    return f"in-process {type(consumer).__name__}"


class ContractBook:
    """The contracts of one tree (module docstring); every method runs under the tree's
    lock."""

    def __init__(self, tree: Tree) -> None:
        self._tree = tree
        self._channel = tree.channel
        self._service = tree.channel._service
        self._contracts: dict[int, _Contract] = {}
        #: node path -> ids of the contracts subscribed to it (for REMOVE).
        self._subscribers: dict[Path, set[int]] = {}
        #: Guaranteed subscriptions in all contracts (the tree's events are then persistent).
        self.durable_count = 0
        #: Subscriptions in all contracts (at most MAX_TREE_SUBSCRIPTIONS).
        self.subscription_count = 0
        self._ids = itertools.count(1)
        self._filter_factory: Any = None
        #: Contract id -> the matchers of its guaranteed subscriptions, for the contracts
        #: that also have best-effort ones (a new dict on every change; None: none).
        self._covering: dict[int, tuple[Any, ...]] | None = None
        #: A routed notification -> (the node limits, ``_covering``) when it was routed.
        self._routed: weakref.WeakKeyDictionary[Any, tuple[Any, dict[int, tuple[Any, ...]]]] \
            = weakref.WeakKeyDictionary()
        self._leases = Leases(self)

    # -- the operations -------------------------------------------------------------------
    def lease(self, consumer: Any, lease: Any, keep_alive: Any) -> Contract:
        seconds = check_lease(lease)
        keep = check_flag(keep_alive, "keep_alive", "")
        usable = self._usable(consumer)
        tree = self._tree
        with tree._lock:
            tree._check_alive()
            if len(self._contracts) >= MAX_CONTRACTS:
                raise InvalidRequest("", f"the tree holds {MAX_CONTRACTS} contracts at most")
            admin = self._new_admin()
            topology = self._service.topology
            contract_id = (topology.next_id(f"ch/{self._channel._id}/oes/contracts") + 1
                           if topology is not None else next(self._ids))
            contract = _Contract(contract_id, usable, self._service.clock.now() + seconds,
                                 keep, admin)
            try:
                tree._records.write_contract(contract)
            except BaseException:
                admin.destroy()
                raise
            self._contracts[contract_id] = contract
            self._leases.add(contract)
            return contract.view()

    def renew(self, contract_id: int, lease: Any, consumer: Any) -> Contract:
        seconds = check_lease(lease)
        usable = self._usable(consumer) if consumer is not None else None
        tree = self._tree
        with tree._lock:
            tree._check_alive()
            contract = self._live(contract_id)
            expiry = max(contract.expiry, self._service.clock.now() + seconds)
            before = contract.expiry, contract.consumer
            contract.expiry = expiry
            if usable is not None:
                contract.consumer = usable
            try:
                tree._records.write_contract(contract)
            except BaseException:
                contract.expiry, contract.consumer = before
                raise
            if usable is not None:
                for proxy in contract.proxies:
                    if proxy is not None:
                        with proxy._lock:  # the new consumer's lane (none: in process)
                            proxy._lane = self._service.lane_for(usable)
            return contract.view()

    def cancel(self, contract_id: int, why: str) -> None:
        tree = self._tree
        with tree._lock:
            tree._check_alive()
            contract = self._contracts.get(contract_id) if type(contract_id) is int else None
            if contract is None:
                raise ContractNotFound(contract_id)
            self._end(contract, why, strict=True)

    def get(self, contract_id: int) -> Contract:
        with self._tree._lock:
            self._tree._check_alive()
            return self._live(contract_id).view()

    def ids(self) -> list[int]:
        with self._tree._lock:
            return sorted(self._contracts)

    def subscribe(self, contract_id: int, pathname: str, depth: Any, guaranteed: Any) -> None:
        """SUBSCRIBE: "Adding a second subscription for the same node under the same
        contract results in a modification ...; it does not generate an error"."""
        tree = self._tree
        with tree._lock:
            tree._check_alive()
            contract = self._live(contract_id)
            path = parse_path(pathname)
            text = shown(path)
            depth = check_limit(depth, "depth", text)
            guaranteed = check_flag(guaranteed, "guaranteed", text)
            tree._node(path)
            if guaranteed and self._channel._event_log is None:
                raise InvalidRequest(text, "a guaranteed subscription needs a channel with "
                                           "ConnectionReliability Persistent in a factory "
                                           "with a store")
            old = contract.subscriptions.get(path)
            if old == (depth, guaranteed):
                return
            if old is None and len(contract.subscriptions) >= MAX_SUBSCRIPTIONS:
                raise InvalidRequest(text, f"a contract holds {MAX_SUBSCRIPTIONS} "
                                           "subscriptions at most")
            if old is None and self.subscription_count >= MAX_TREE_SUBSCRIPTIONS:
                raise InvalidRequest(text, f"the tree's contracts hold {MAX_TREE_SUBSCRIPTIONS} "
                                           "subscriptions at most")
            made = contract.proxies[guaranteed] is None
            if made:
                self._new_proxy(contract, guaranteed)
            try:
                info = contract.filters[guaranteed].add_constraints([self._constraint(
                    path, depth)])
                contract.subscriptions[path] = (depth, guaranteed)
                try:
                    tree._records.write_contract(contract)
                except BaseException:
                    contract.filters[guaranteed].modify_constraints(
                        [info[0].constraint_id], [])
                    raise
            except BaseException:
                if old is None:
                    contract.subscriptions.pop(path, None)
                else:
                    contract.subscriptions[path] = old
                if made:
                    self._drop_proxy(contract, guaranteed)
                raise
            if old is not None:  # a move to the other proxy keeps it: it may hold some
                self._drop_constraint(contract, path, old[1], keep=old[1] != guaranteed)
            else:
                self.subscription_count += 1
            contract.constraints[path] = info[0].constraint_id
            self._subscribers.setdefault(path, set()).add(contract.id)
            self._counted(contract)

    def unsubscribe(self, contract_id: int, pathname: str) -> None:
        tree = self._tree
        with tree._lock:
            tree._check_alive()
            contract = self._live(contract_id)
            path = parse_path(pathname)
            old = contract.subscriptions.get(path)
            if old is None:
                raise SubscriptionNotFound(contract_id, shown(path))
            del contract.subscriptions[path]
            try:
                tree._records.write_contract(contract)
            except BaseException:
                contract.subscriptions[path] = old
                raise
            self._forget(contract, path, old[1])

    # -- what the tree and the relays tell ---------------------------------------------------
    def nodes_removed(self, paths: set[Path]) -> None:
        """Nodes went (REMOVE): their subscriptions go too, after their notifications
        (the SUBSCRIPTION table's Nodeid names an existing node). The notifications are
        routed, not yet delivered: a proxy left without subscriptions stays, its filter
        empty, so the REMOVE notifications it holds still reach the contract (review
        98: a contract whose only subscription was on a removed node heard nothing)."""
        for path in paths & self._subscribers.keys():
            for contract_id in sorted(self._subscribers.get(path, ())):
                contract = self._contracts[contract_id]
                old = contract.subscriptions.pop(path)
                # A failed write is written again before the next change (durable.py),
                # so a node made again under this name is not watched after a restart.
                self._tree._records.write_contract(contract, strict=False)
                self._forget(contract, path, old[1], keep=True)

    def routing_state(self) -> tuple[Any, dict[int, tuple[Any, ...]]] | None:
        """What decides, for the notifications about to be routed, which contracts'
        guaranteed subscriptions take them (None: no contract has both kinds). The tree
        calls it under its lock, which every change of subscriptions and of the tree's
        node limits holds, and records it per notification (:meth:`routed`)."""
        covering = self._covering
        return None if covering is None else (self._channel._oes_limits, covering)

    def routed(self, event: Any, state: tuple[Any, dict[int, tuple[Any, ...]]]) -> None:
        self._routed[event] = state

    def covered(self, contract: _Contract, event: Any) -> bool:
        """Did a guaranteed subscription of ``contract`` take ``event`` when it was
        routed? (Not when it is delivered: subscriptions and limits may have changed.)"""
        state = self._routed.get(event)
        if state is None:
            return False
        limits, covering = state
        matchers = covering.get(contract.id)
        if not matchers:
            return False
        token = CURRENT_LIMITS.set(limits)
        try:
            return any(match(event) for match in matchers)
        finally:
            CURRENT_LIMITS.reset(token)

    def delivery_failed(self, contract: _Contract, exc: Exception) -> None:
        """A relay could not deliver (not keep-alive): the contract ends, on a worker."""
        log.info("contract %d: a notification could not be delivered (%s): it expires",
                  contract.id, exc)
        self._service.call_soon(self._end_if_live, contract, "a notification could not "
                                "be delivered")

    def channel_side_gone(self, contract: _Contract) -> None:
        """Someone else destroyed the contract's consumer admin or a proxy: the contract
        ends, on a worker -- unless the service is stopping: it destroys the contract's
        best-effort proxy (not persistent), and the contract, persistent, comes back
        with the channel (the proxy made again). Before, a worker that told the relay
        early enough in the stop ended it, and deleted its record."""
        if self._channel.shutting_down:
            return
        self._service.call_soon(self._end_if_live, contract, "its consumer admin or proxy "
                                "was destroyed")

    def end_all(self) -> None:
        """The channel is destroyed: every contract ends (its admin goes with the channel)."""
        for contract in self._contracts.values():
            contract.ended = True
        self._contracts.clear()
        self._subscribers.clear()
        self.durable_count = self.subscription_count = 0
        self._covering = None
        self._leases.clear()

    def _end_if_live(self, contract: _Contract, why: str) -> None:
        with self._tree._lock:
            if not contract.ended and self._contracts.get(contract.id) is contract:
                self._end(contract, why)

    def _end(self, contract: _Contract, why: str, strict: bool = False) -> None:
        """The contract ends. ``strict`` (CANCELCONTRACT): its record goes first, and a
        store that refuses that refuses the cancel (NO_RESOURCES), nothing changed;
        otherwise a record that could not be deleted is deleted before the next write."""
        records = self._tree._records
        if strict:
            records.delete_contract(contract.id)
        log.info("contract %d of %r ends: %s", contract.id, self._channel, why)
        contract.ended = True
        del self._contracts[contract.id]
        for path in contract.subscriptions:
            self._unindex(contract, path)
        self.durable_count -= sum(1 for _, g in contract.subscriptions.values() if g)
        self.subscription_count -= len(contract.subscriptions)
        self._set_covering(contract.id, ())
        try:
            contract.admin.destroy()  # its proxies: the relay tells the consumer
        finally:
            for flt in contract.filters:
                if flt is not None and not flt._is_destroyed:
                    flt.destroy()
            if not strict:
                records.delete_contract(contract.id, strict=False)

    def _live(self, contract_id: Any) -> _Contract:
        """The contract ``contract_id``; one whose lease is over ends now."""
        contract = self._contracts.get(contract_id) if type(contract_id) is int else None
        if contract is None:
            raise ContractNotFound(contract_id)
        if contract.expiry <= self._service.clock.now():
            self._end(contract, "its lease expired")
            raise ContractNotFound(contract_id)
        if contract.admin._destroyed:  # a client destroyed it: the contract cannot go on
            self._end(contract, "its consumer admin was destroyed")
            raise ContractNotFound(contract_id)
        return contract

    # -- the channel side ------------------------------------------------------------------
    @staticmethod
    def _usable(consumer: Any) -> Any:
        usable = connectable(consumer, CONSUMER_ID, "push_structured_event") \
            if consumer is not None else None
        if usable is None:
            raise InvalidRequest("", "a contract delivers to a "
                                     "CosNotifyComm::StructuredPushConsumer")
        return usable

    def _new_admin(self) -> Any:
        admin, _ = self._channel.new_for_consumers(CA.AND_OP)
        return admin

    def _new_proxy(self, contract: _Contract, guaranteed: bool) -> None:
        """The contract's proxy of that kind, with its filter, connected to a relay."""
        admin = contract.admin
        qos = [] if guaranteed else _BEST_EFFORT
        try:
            proxy, _ = admin.obtain_notification_push_supplier_with_qos(CA.STRUCTURED_EVENT,
                                                                        qos)
        except CA.AdminLimitExceeded as exc:
            raise InvalidRequest("", f"the channel's {exc.admin_property_err.name} is "
                                     "reached") from exc
        contract.proxies[guaranteed] = proxy
        try:
            if guaranteed and not persistent(proxy):
                raise InvalidRequest("", "a guaranteed subscription needs a persistent "
                                         "channel")
            contract.filters[guaranteed] = self._factory().create_filter("OES_SUBTREE")
            proxy.add_filter(contract.filters[guaranteed])  # filtered before it connects
            self.connect(contract, guaranteed, proxy)
        except BaseException:
            self._drop_proxy(contract, guaranteed)
            raise

    def connect(self, contract: _Contract, guaranteed: bool, proxy: Any,
                restored: bool = False) -> None:
        relay = Relay(self, contract, guaranteed)
        if restored:
            proxy._restore_connection(relay, False)
        else:
            proxy.connect_structured_push_consumer(relay)
        with proxy._lock:  # the consumer's lane, not the relay's (none: in process)
            proxy._lane = self._service.lane_for(contract.consumer)

    def _drop_proxy(self, contract: _Contract, guaranteed: bool) -> None:
        proxy, flt = contract.proxies[guaranteed], contract.filters[guaranteed]
        contract.proxies[guaranteed] = contract.filters[guaranteed] = None
        if proxy is not None:
            proxy._destroy(notify_client=False, why="its OES subscriptions ended")
        if flt is not None and not flt._is_destroyed:
            flt.destroy()

    def _drop_constraint(self, contract: _Contract, path: Path, guaranteed: bool,
                         keep: bool = False) -> None:
        """The subscription's constraint goes; a proxy left without subscriptions goes too
        (unsubscribed: "No further notifications will be processed for this
        subscription"), unless ``keep``: then its empty filter passes nothing new and
        what it holds is still delivered."""
        constraint = contract.constraints.pop(path, None)
        flt = contract.filters[guaranteed]
        if constraint is not None and flt is not None:
            try:
                flt.modify_constraints([constraint], [])
            except CosNotifyFilter.ConstraintNotFound:
                pass
        if not keep and not any(g == guaranteed for _, g in contract.subscriptions.values()):
            self._drop_proxy(contract, guaranteed)

    def _forget(self, contract: _Contract, path: Path, guaranteed: bool,
                keep: bool = False) -> None:
        self._drop_constraint(contract, path, guaranteed, keep)
        self._unindex(contract, path)
        self.subscription_count -= 1
        self._counted(contract)

    def _unindex(self, contract: _Contract, path: Path) -> None:
        ids = self._subscribers.get(path)
        if ids is not None:
            ids.discard(contract.id)
            if not ids:
                del self._subscribers[path]

    def _counted(self, contract: _Contract) -> None:
        """The contract's guaranteed matchers, the tree's count of guaranteed ones, and the
        contracts with both kinds (:meth:`routing_state`)."""
        before = len(contract.matchers)
        guaranteed = [(path, depth) for path, (depth, g) in contract.subscriptions.items() if g]
        contract.matchers = tuple(compile_subscription(_Subtree(path, depth))[0]
                                  for path, depth in guaranteed)
        self.durable_count += len(contract.matchers) - before
        mixed = len(guaranteed) < len(contract.subscriptions)
        self._set_covering(contract.id, contract.matchers if mixed else ())

    def _set_covering(self, contract_id: int, matchers: tuple[Any, ...]) -> None:
        covering = self._covering or {}
        if covering.get(contract_id, ()) == matchers:
            return
        covering = dict(covering)
        if matchers:
            covering[contract_id] = matchers
        else:
            covering.pop(contract_id, None)
        self._covering = covering or None

    def _factory(self) -> Any:
        """A FilterFactory of the channel's grammars that keeps nothing in the store:
        the contract's record holds its subscriptions (durable.py)."""
        if self._filter_factory is None:
            from cosnotify.filter.factory import FilterFactory

            self._filter_factory = FilterFactory(
                self._channel._get_default_filter_factory()._registry)
        return self._filter_factory

    @staticmethod
    def _constraint(path: Path, depth: int) -> Any:
        """The subscription as a constraint for the tree's notifications (their four
        event types named exactly: the filter's type test is then one set lookup)."""
        return CosNotifyFilter.ConstraintExp([N.EventType(DOMAIN, op) for op in OPERATIONS],
                                             render_subscription(_Subtree(path, depth)))

    # -- restore (durable.py) ----------------------------------------------------------------
    def adopt(self, contract: _Contract) -> None:
        """A contract read back from the store, its proxies wired: live again."""
        self._contracts[contract.id] = contract
        for path in contract.subscriptions:
            self._subscribers.setdefault(path, set()).add(contract.id)
        self.subscription_count += len(contract.subscriptions)
        self._counted(contract)
        self._leases.add(contract)
