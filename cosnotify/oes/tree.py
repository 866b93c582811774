"""An OES tree bound to a notification channel: named nodes with content, in process.

Strategy: one :class:`Tree` per channel (``Tree.of(channel)``: made on first
use, kept by the channel, ended by its ``destroy``) holds the seed's NODE
table as a dict of paths (tuples of names, root first) to nodes. Every
operation runs under the tree's lock ("It is presumed that operations are
serialized at the server", Concurrency Control) in three steps, so a refused
one changes nothing:

1. **check** everything (names, content, attributes, pools, limits: paths.py),
   then that the channel has room for the notifications;
2. **write** the store records (durable.py), when the channel is persistent in
   a factory with a store; a store failure leaves memory as it was;
3. **apply** the change in memory, and **notify**: each created, changed or
   removed node gives one Structured Event (events.py) that enters the
   channel as a supplier's would, so every consumer, filter and grammar sees
   it, and subtree subscriptions (contracts.py, OES_SUBTREE filters) select
   from it.

The nodes' upward propagation limits, barricades and subscription pools are
the channel's node limits (cosnotify/filter/oes/limits.py): the tree keeps the
entries of its nodes that differ from the defaults and gives the channel the
merged table (:meth:`Tree.node_limits`), so OES_SUBTREE filters see Figures
3-5 as the tree says. A node's limits govern its own notifications, so a
removed node's notifications are routed before its entry goes.

A notification the channel could not take (a store failure, a full channel)
is logged and counted; when a guaranteed subscription waited for it, the
operation -- done, and notified to the others -- raises NO_RESOURCES (or
IMP_LIMIT) with COMPLETED_YES, so the client knows a guaranteed delivery
failed.
"""

from __future__ import annotations

import builtins
import enum
import logging
import threading
from collections.abc import Callable
from typing import Any, Final

import attrs
from omniORB import CORBA

from cosnotify.channel.counters import channel_events_in
from cosnotify.channel.event import from_structured
from cosnotify.filter.oes.limits import INFINITE, NodeLimit, NodeLimits, Path, format_path
from cosnotify.oes import durable
from cosnotify.oes.contracts import Contract, ContractBook
from cosnotify.oes.errors import InvalidRequest, NodeExists, NodeNotFound
from cosnotify.oes.events import CREATE, POST, REMOVE, TOUCH, notification
from cosnotify.oes.paths import (
    MAX_NODES,
    check_content,
    check_flag,
    check_limit,
    parse_path,
    shown,
)

__all__ = ["UNCHANGED", "Node", "Tree"]

log = logging.getLogger("cosnotify.oes")


class _Unchanged(enum.Enum):
    UNCHANGED = "unchanged"


#: ``post``'s default for each attribute: leave it as it is.
UNCHANGED: Final = _Unchanged.UNCHANGED


@attrs.frozen
class Node:
    """A node as GET returns it: "the properties and content of OES tree node" (the
    ``<node>`` element's attributes, and ``content``: None when it has none)."""

    nodepath: str
    nodename: str
    content: bytes | None
    upl: int = INFINITE
    guaranteed: bool = False
    barricade: bool = False
    subscription_pool: str | None = None


class _Node:
    """A row of the NODE table (its path is its key in the tree)."""

    __slots__ = ("barricade", "children", "content", "guaranteed", "pool", "upl")

    def __init__(self, content: bytes | None = None, upl: int = INFINITE,
                 guaranteed: bool = False, barricade: bool = False,
                 pool: Path | None = None) -> None:
        self.content = content
        self.upl = upl
        self.guaranteed = guaranteed
        self.barricade = barricade
        self.pool = pool
        self.children: dict[str, None] = {}

    def copy(self) -> _Node:
        made = _Node(self.content, self.upl, self.guaranteed, self.barricade, self.pool)
        made.children = self.children
        return made

    def limit(self, path: Path) -> NodeLimit:
        return NodeLimit(path, self.upl, self.barricade, self.pool)


class Tree:
    """The OES tree of one channel (module docstring)."""

    def __init__(self, channel: Any) -> None:
        self._channel = channel
        self._service = channel._service
        self._lock = threading.RLock()
        self._nodes: dict[Path, _Node] = {(): _Node()}
        #: Nodes whose limits differ from the defaults (a new dict on every change).
        self._limits: dict[Path, NodeLimit] = {}
        #: Pool target -> the nodes that pool into it (the NODE table's foreign key).
        self._pooled_by: dict[Path, set[Path]] = {}
        self._ended = False
        #: Called once when the channel is destroyed (``when_ended``).
        self._on_end: builtins.list[Callable[[], None]] = []
        #: Notifications the channel refused (full, or its store failed): logged.
        self.undelivered = 0
        self.contracts = ContractBook(self)
        self._records = durable.Records(self)
        #: The channel's count of events in (cosnotify.stats): the tree supplies it.
        self._events_in = channel_events_in(channel) if self._service.config.counters \
            else None

    @classmethod
    def of(cls, channel: Any) -> Tree:
        """The tree of ``channel``, made on first use and kept by the channel."""
        channel._check_alive()
        tree = channel._oes_tree
        if tree is None:
            with channel._lock:
                channel._check_alive()
                tree = channel._oes_tree
                if tree is None:
                    tree = channel._oes_tree = cls(channel)
        return tree  # type: ignore[no-any-return]

    @property
    def channel(self) -> Any:
        return self._channel

    # -- reads ------------------------------------------------------------------------------
    def get(self, pathname: str) -> Node:
        """GET: the node's attributes and content; NodeNotFound when it does not exist."""
        with self._lock:
            self._check_alive()
            path = parse_path(pathname)
            return self._view(path, self._node(path))

    def list(self, pathname: str) -> builtins.list[str]:  # the seed's LIST
        """LIST: "the names of all immediate children" of the node, sorted."""
        with self._lock:
            self._check_alive()
            path = parse_path(pathname)
            return sorted(self._node(path).children)

    def exists(self, pathname: str) -> bool:
        with self._lock:
            return parse_path(pathname) in self._nodes

    def __len__(self) -> int:
        """How many nodes the tree holds, the root included."""
        return len(self._nodes)

    # -- changes ----------------------------------------------------------------------------
    def create(self, pathname: str, content: bytes | None = None, *, upl: int = INFINITE,
               guaranteed: bool = False, barricade: bool = False,
               subscription_pool: str | None = None, parents: bool = False) -> Node:
        """Create a node; NodeExists when it exists, NodeNotFound when its parent does
        not (unless ``parents``: then missing ancestors are made with the defaults, as
        the seed's POST makes them). "Node creation always results in a notification
        being generated": one per node made, ancestors first."""
        with self._lock:
            self._check_alive()
            path = parse_path(pathname)
            if path in self._nodes:
                raise NodeExists(shown(path))
            text = shown(path)
            fresh = _Node(check_content(content, text), check_limit(upl, "upl", text),
                          check_flag(guaranteed, "guaranteed", text),
                          check_flag(barricade, "barricade", text))
            if subscription_pool is not None:
                fresh.pool = self._checked_pool(path, parse_path(subscription_pool,
                                                                 "subscription pool"))
            missing = self._missing_ancestors(path)
            if missing and not parents:
                raise NodeNotFound(shown(missing[0]), "the parent does not exist (create "
                                   "with parents, or POST, to make it)")
            return self._create(path, fresh, missing)

    def post(self, pathname: str, content: bytes | _Unchanged = UNCHANGED, *,
             upl: int | _Unchanged = UNCHANGED, guaranteed: bool | _Unchanged = UNCHANGED,
             barricade: bool | _Unchanged = UNCHANGED,
             subscription_pool: str | None | _Unchanged = UNCHANGED) -> Node:
        """POST: update the node's content and the attributes given; nothing given is a
        *touch* ("so as to trigger a notification, without actually changing the
        node's contents or properties"). A node that does not exist is created, with
        its missing ancestors, "with any attributes not explicitly present in the
        request ... set to their default values". ``subscription_pool=None`` removes
        the pool; content is never removed (the seed's POST only sets it)."""
        with self._lock:
            self._check_alive()
            path = parse_path(pathname)
            text = shown(path)
            old = self._nodes.get(path)
            new = old.copy() if old is not None else _Node()
            given = False
            if content is not UNCHANGED:
                if content is None:
                    raise InvalidRequest(text, "POST sets content; it never removes it "
                                               "(give bytes, or leave content out)")
                new.content = check_content(content, text)
                given = True
            if upl is not UNCHANGED:
                new.upl, given = check_limit(upl, "upl", text), True
            if guaranteed is not UNCHANGED:
                new.guaranteed, given = check_flag(guaranteed, "guaranteed", text), True
            if barricade is not UNCHANGED:
                new.barricade, given = check_flag(barricade, "barricade", text), True
            if subscription_pool is not UNCHANGED:
                new.pool = None if subscription_pool is None else self._checked_pool(
                    path, parse_path(subscription_pool, "subscription pool"))
                given = True
            if old is None:
                return self._create(path, new, self._missing_ancestors(path))
            operation = POST if given else TOUCH
            self._check_room()
            self._records.write_nodes([(path, new)])
            self._nodes[path] = new
            self._limits_changed([(path, old, new)])
            self._notify([notification(operation, path, old.content, new.content, new.upl,
                                       new.guaranteed, new.barricade, new.pool)])
            return self._view(path, new)

    def remove(self, pathname: str) -> int:
        """REMOVE: the node and its whole sub-tree ("removing a particular node removes
        that node, its associated content, plus the descendant nodes"); how many nodes
        went. "A notification is always generated for each node in the tree that was
        removed", deepest first. "It is not possible to remove the root of the entire
        OES tree." A node that is the subscription pool of a node outside the sub-tree
        is refused (the NODE table's constraint on SubscriptionPool)."""
        with self._lock:
            self._check_alive()
            path = parse_path(pathname)
            if not path:
                raise InvalidRequest("\\", "it is not possible to remove the root of the "
                                           "entire OES tree")
            self._node(path)
            doomed = self._subtree(path)
            inside = set(doomed)
            for node_path in doomed:
                for user in self._pooled_by.get(node_path, ()):
                    if user not in inside:
                        raise InvalidRequest(shown(path), f"{shown(node_path)} is the "
                                             f"subscription pool of {shown(user)}: change "
                                             "that node's pool first")
            self._check_room()
            self._records.delete_subtree(path)
            removed = [(node_path, self._nodes.pop(node_path)) for node_path in doomed]
            self._nodes[path[:-1]].children.pop(path[-1], None)
            # Each node's notification is routed with its own limits still in force. The
            # nodes are gone whatever the notifications met (a guaranteed one not kept
            # raises, COMPLETED_YES): their limits, pools and subscriptions go too.
            try:
                self._notify([notification(REMOVE, node_path, node.content, None, node.upl,
                                           node.guaranteed, node.barricade, node.pool)
                              for node_path, node in removed])
            finally:
                self._limits_changed([(node_path, node, None) for node_path, node in removed])
                self.contracts.nodes_removed(inside)
            return len(removed)

    # -- contracts (contracts.py) -------------------------------------------------------------
    def lease_contract(self, consumer: Any, lease: float, *, keep_alive: bool = False) -> Contract:
        """LEASECONTRACT: a subscription contract delivering to ``consumer`` (a
        ``CosNotifyComm::StructuredPushConsumer``, or any object with its operations)
        until ``lease`` seconds from now."""
        return self.contracts.lease(consumer, lease, keep_alive)

    def renew_contract(self, contract_id: int, lease: float, consumer: Any = None) -> Contract:
        """LEASECONTRACT with a Contract-id: the lease then ends ``lease`` seconds from
        now (never earlier than it did); a ``consumer`` given replaces the contract's."""
        return self.contracts.renew(contract_id, lease, consumer)

    def cancel_contract(self, contract_id: int) -> None:
        """CANCELCONTRACT: "immediately removes all subscriptions associated with the
        contract"."""
        self.contracts.cancel(contract_id, "cancelled")

    def subscribe(self, contract_id: int, pathname: str, depth: int = INFINITE,
                  guaranteed: bool = False) -> None:
        """SUBSCRIBE: watch the sub-tree of ``depth`` below the node (-1: all of it)."""
        self.contracts.subscribe(contract_id, pathname, depth, guaranteed)

    def unsubscribe(self, contract_id: int, pathname: str) -> None:
        """UNSUBSCRIBE: revoke the contract's subscription on the node."""
        self.contracts.unsubscribe(contract_id, pathname)

    def get_contract(self, contract_id: int) -> Contract:
        return self.contracts.get(contract_id)

    def contract_ids(self) -> builtins.list[int]:
        return self.contracts.ids()

    # -- the channel's node limits ------------------------------------------------------------
    def node_limits(self, admin: NodeLimits) -> NodeLimits:
        """The table the channel's filters use: the tree's entries, and the channel's own
        (OESNodeLimits) for paths that are not nodes of the tree. Takes no lock (the
        channel calls it under its own)."""
        nodes, limits = self._nodes, self._limits
        merged = [limit for limit in admin if limit.path not in nodes]
        merged.extend(limits.values())
        return NodeLimits(merged)

    def _limits_changed(self, changes: builtins.list[tuple[Path, _Node | None, _Node | None]]) -> None:
        """Nodes changed (old and new state; None: absent): their entries and the pool
        references follow, and the channel gets a new table when an entry changed."""
        limits: dict[Path, NodeLimit] | None = None
        for path, old, new in changes:
            if (old is not None and new is not None and old.upl == new.upl
                    and old.barricade == new.barricade and old.pool == new.pool):
                continue  # content or the QoS flag only: no limit changed
            before = old.limit(path) if old is not None else None
            after = new.limit(path) if new is not None else None
            if old is not None and old.pool is not None and (new is None or new.pool != old.pool):
                users = self._pooled_by.get(old.pool)
                if users is not None:
                    users.discard(path)
                    if not users:
                        del self._pooled_by[old.pool]
            if new is not None and new.pool is not None and (old is None or old.pool != new.pool):
                self._pooled_by.setdefault(new.pool, set()).add(path)
            kept = (before is not None and not before.is_default) or (
                after is not None and not after.is_default)
            if kept and before != after:
                if limits is None:
                    limits = dict(self._limits)
                if after is None or after.is_default:
                    limits.pop(path, None)
                else:
                    limits[path] = after
        if limits is not None:
            self._limits = limits
            self._publish_limits()
        elif self._names_a_channel_limit(changes):
            self._publish_limits()

    def _names_a_channel_limit(self, changes: builtins.list[
            tuple[Path, _Node | None, _Node | None]]) -> bool:
        """Was a node made or removed where the channel's OESNodeLimits name a limit? That
        entry stops (or starts) applying: the node's own limits govern its path."""
        admin = self._channel._node_limits
        return bool(len(admin)) and any(
            (old is None) != (new is None) and not admin.get(path).is_default
            for path, old, new in changes)

    def _publish_limits(self) -> None:
        channel = self._channel
        with channel._lock:
            table = self.node_limits(channel._node_limits)
            channel._oes_limits = table if len(table) else None

    # -- helpers ----------------------------------------------------------------------------
    def _check_alive(self) -> None:
        if self._ended:
            raise CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO, "the channel of this OES "
                                                                "tree was destroyed")

    def _check_room(self) -> None:
        """A change must notify: a channel full under RejectNewEvents TRUE refuses it as
        it refuses a push (IMP_LIMIT, section 2.5.7), before anything changes."""
        if self._channel._full_and_rejecting():
            raise CORBA.IMP_LIMIT(0, CORBA.COMPLETED_NO, "the channel holds MaxQueueLength "
                                  "events and rejects new ones: no change is made")

    def _node(self, path: Path) -> _Node:
        node = self._nodes.get(path)
        if node is None:
            raise NodeNotFound(shown(path))
        return node

    @staticmethod
    def _view(path: Path, node: _Node) -> Node:
        return Node(format_path(path), path[-1] if path else "", node.content, node.upl,
                    node.guaranteed, node.barricade,
                    None if node.pool is None else format_path(node.pool))

    def _missing_ancestors(self, path: Path) -> builtins.list[Path]:
        """The ancestors of ``path`` that do not exist, from the top."""
        missing = []
        for length in range(len(path) - 1, 0, -1):
            if path[:length] in self._nodes:
                break
            missing.append(path[:length])
        return missing[::-1]

    def _checked_pool(self, path: Path, pool: Path) -> Path:
        """NODE.SubscriptionPool: an existing node, and no cycle ("Subscription pools ...
        redirect": a cycle would redirect for ever). A pool redirects the notifications
        of the pooled node's sub-tree (cosnotify/filter/oes/limits.py), so from the pool
        node on, each node's notifications go to the pool of its deepest pooled
        ancestor-or-self (``path``'s being ``pool``); that chain must end. Limits and
        barricades are left out: a change of them never makes a cycle."""
        if pool not in self._nodes:
            raise InvalidRequest(shown(path), f"subscription pool {shown(pool)} is not a node")
        chain, told = [pool], []
        while True:
            step = chain[-1]
            target = None
            for length in range(len(step), -1, -1):
                here = step[:length]
                target = pool if here == path else self._nodes[here].pool
                if target is not None:
                    break
            if target is None:
                return pool
            told.append(f"{shown(step)} is pooled to {shown(target)}" if here == step else
                        f"{shown(step)} bubbles up to {shown(here)}, pooled to {shown(target)}")
            if target in chain:
                raise InvalidRequest(shown(path), f"subscription pool {shown(pool)} would "
                                     "redirect notifications for ever (a pool takes its "
                                     f"node's whole sub-tree: {'; '.join(told)}): a cycle")
            chain.append(target)

    def _subtree(self, path: Path) -> builtins.list[Path]:
        """``path`` and its descendants, deepest first (post-order)."""
        found: builtins.list[Path] = []
        stack: builtins.list[tuple[Path, bool]] = [(path, False)]
        while stack:
            here, done = stack.pop()
            if done:
                found.append(here)
                continue
            stack.append((here, True))
            stack.extend((here + (name,), False) for name in self._nodes[here].children)
        return found

    def _create(self, path: Path, fresh: _Node, missing: builtins.list[Path]) -> Node:
        made = [*((ancestor, _Node()) for ancestor in missing), (path, fresh)]
        if len(self._nodes) + len(made) > MAX_NODES:
            raise InvalidRequest(shown(path), f"the tree holds {MAX_NODES} nodes at most")
        self._check_room()
        self._records.write_nodes(made)
        for node_path, node in made:
            self._nodes[node_path] = node
            self._nodes[node_path[:-1]].children[node_path[-1]] = None
        self._limits_changed([(node_path, None, node) for node_path, node in made])
        self._notify([notification(CREATE, node_path, None, node.content, node.upl,
                                   node.guaranteed, node.barricade, node.pool)
                      for node_path, node in made])
        return self._view(path, fresh)

    def _notify(self, events: builtins.list[Any]) -> None:
        """Route the notifications through the channel, as a supplier's events; one the
        channel refuses (it is full, its store failed) is logged and counted: the
        operation is done and stays done. If guaranteed subscriptions waited for it, the
        caller is told (module docstring)."""
        channel = self._channel
        now = self._service.clock.now()
        book = self.contracts
        durable_events = book.durable_count > 0 and channel._event_log is not None
        routing = book.routing_state()
        failed: Exception | None = None
        for structured in events:
            event = from_structured(structured, now)
            if durable_events:
                event.reliability = 1  # stored for guaranteed subscriptions (contracts.py)
            if routing is not None:
                book.routed(structured, routing)
            try:
                channel._forward(event)
                if self._events_in is not None:
                    next(self._events_in)
            except Exception as exc:  # noqa: BLE001 - the change is made; say so, go on
                self.undelivered += 1
                log.error("%r: the notification of %s could not be routed: %s", channel,
                          structured.filterable_data[0].value.value(), exc)
                if durable_events and failed is None:
                    failed = exc
        if failed is not None:
            kind = CORBA.IMP_LIMIT if isinstance(failed, CORBA.IMP_LIMIT) else CORBA.NO_RESOURCES
            raise kind(0, CORBA.COMPLETED_YES, "the change is made, but a notification of it "
                       f"could not be kept for the guaranteed subscriptions: {failed}") \
                from failed

    # -- lifecycle --------------------------------------------------------------------------
    def when_ended(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the channel is destroyed (now, if it was)."""
        with self._lock:
            if not self._ended:
                self._on_end.append(callback)
                return
        callback()

    def _channel_destroyed(self) -> None:
        """The channel is being destroyed: the contracts end (their consumers are told),
        the tree answers OBJECT_NOT_EXIST; the store drops its records with the channel's."""
        with self._lock:
            self._ended = True
            self.contracts.end_all()
            callbacks, self._on_end = self._on_end, []
        for callback in callbacks:
            try:
                callback()
            except Exception:
                log.exception("%r: a callback of its end failed", self)

    def __repr__(self) -> str:
        return f"<Tree of channel {self._channel._id}: {len(self._nodes)} nodes>"
