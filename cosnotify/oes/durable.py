"""An OES tree in the store: its nodes and contracts as topology records.

Strategy: the tree of a *persistent* channel (ConnectionReliability
Persistent) in a factory with a store keeps one record per node and one per
contract, below the channel's own record, so destroying the channel deletes
them with it (``Topology.forget`` deletes ``ch/C`` and everything below):

==============================  ==============  ==================================
``ch/C/oes/n/<name>/<name>...``  ``oes_node``    the NODE table's row: content,
                                                 upl, guaranteed, barricade, pool
                                                 (the root's is ``ch/C/oes/n``)
``ch/C/oes/c/<id>``              ``oes_contract``  the CONTRACT row and its
                                                 SUBSCRIPTION rows
==============================  ==============  ==================================

Names are percent-encoded in record paths, so a sub-tree is one path prefix
and REMOVE is one ``Store.delete``. Records are JSON (``codec.dumps``), as every
topology record is, so ``channel/restore.py`` reads them with the others and
hands them here once the channels, admins and proxies are back
(:func:`restore_trees`). A record is written before memory changes (tree.py),
and a failed write of several is undone, so a refused operation leaves
nothing behind. A write that cannot fail the operation it follows (a
contract's record after a REMOVE, the deletion of an expired contract's) is
kept and done again before the next write, which fails while it does: so a
stale record cannot outlive a later change. The tree of a best-effort
channel is not stored: the channel does not come back, nor would its tree.
The tree follows its channel's ConnectionReliability: when the channel
becomes Persistent (its record written), the whole tree is written (a store
failure then is the ``set_qos``'s NO_RESOURCES, and the whole tree is written
again before the tree's next write); when it becomes BestEffort, the
channel's records, the tree's among them, go. The channel has no hook for
that: ``Records`` wraps the channel object's ``_persist``.

A contract's consumer is kept by its IOR; one in this process has none, so
its contract cannot come back and ends at the restart. Its admin and its
guaranteed proxy are persistent channel objects and come back with the
channel (with the events stored for them); its best-effort proxy is made
again.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import TYPE_CHECKING, Any, Final

import CosNotifyChannelAdmin as CA

from cosnotify.channel import codec
from cosnotify.channel.topology import client_stub, persistent, store_failures
from cosnotify.filter.oes.limits import Path
from cosnotify.store.interface import Record

if TYPE_CHECKING:
    from cosnotify.oes.contracts import _Contract
    from cosnotify.oes.tree import Tree, _Node

__all__ = ["CONTRACT_KIND", "KINDS", "NODE_KIND", "Records", "restore_trees"]

log = logging.getLogger("cosnotify.oes")

NODE_KIND: Final = "oes_node"
CONTRACT_KIND: Final = "oes_contract"
KINDS: Final = (NODE_KIND, CONTRACT_KIND)


class Records:
    """The store side of one tree (every method runs under the tree's lock)."""

    def __init__(self, tree: Tree) -> None:
        self._tree = tree
        channel = tree.channel
        self._channel = channel
        self.base = f"ch/{channel._id}/oes"
        #: Every node and contract is in the store (False until the tree is first
        #: written while its channel is persistent: then all of it is).
        self.complete = False
        #: Writes to do again before the next one: path -> record to put (None: delete).
        self._pending: dict[str, Record | None] = {}
        # The channel's record is written when its QoS changes: the tree follows it.
        saved = channel._persist

        def persist() -> None:
            saved()
            self.channel_saved()

        channel._persist = persist

    def channel_saved(self) -> None:
        """The channel's record was saved (or deleted, when it became BestEffort): a
        channel that is Persistent now gets the whole tree written, if it was not."""
        if self._channel._service.topology is None or self._tree._ended:
            return
        if not persistent(self._channel):
            self.complete = False  # Topology.save deleted ch/C and everything below
            return
        if not self.complete:
            with self._tree._lock:
                if not self._tree._ended:
                    self._store()

    def _store(self) -> Any:
        """The store, when the tree is kept; the first time, the whole tree is written,
        and every time first the writes that failed before (``_pending``)."""
        from cosnotify.oes.paths import record_suffix

        topology = self._channel._service.topology
        if topology is None or not persistent(self._channel):
            self.complete = False
            self._pending.clear()
            return None
        store = topology.store
        if self._pending:  # first: the whole tree's records, if written next, are newer
            with store_failures():
                for where, record in list(self._pending.items()):
                    if record is None:
                        store.delete(where)
                    else:
                        store.put(record)
                    del self._pending[where]
        if not self.complete:
            tree = self._tree
            with store_failures():
                for path, node in tree._nodes.items():
                    store.put(Record(self.base + record_suffix(path), NODE_KIND,
                                     node_record(path, node)))
                for contract in tree.contracts._contracts.values():
                    store.put(self._contract(contract))
            self.complete = True
        return store

    def write_nodes(self, items: list[tuple[Path, _Node]]) -> None:
        """Write these nodes' records, all or none (a failure deletes those written)."""
        from cosnotify.oes.paths import record_suffix

        store = self._store()
        if store is None:
            return
        written: list[str] = []
        try:
            with store_failures():
                for path, node in items:
                    where = self.base + record_suffix(path)
                    store.put(Record(where, NODE_KIND, node_record(path, node)))
                    written.append(where)
        except BaseException:
            if len(items) > 1:
                for where in written:
                    try:
                        store.delete(where)
                    except Exception:
                        log.exception("%s could not be undone", where)
            raise

    def delete_subtree(self, path: Path) -> None:
        from cosnotify.oes.paths import record_suffix

        store = self._store()
        if store is not None:
            with store_failures():
                store.delete(self.base + record_suffix(path))

    def write_contract(self, contract: _Contract, strict: bool = True) -> None:
        """Write the contract's record; a failure raises (NO_RESOURCES), or, when not
        ``strict``, is logged and the write done again before the next one."""
        try:
            store = self._store()
            if store is not None:
                with store_failures():
                    store.put(self._contract(contract))
        except Exception as exc:
            if strict:
                raise
            self._retry(f"{self.base}/c/{contract.id}", self._contract(contract), exc)

    def delete_contract(self, contract_id: int, strict: bool = True) -> None:
        """Delete the contract's record (``strict``: as :meth:`write_contract`)."""
        where = f"{self.base}/c/{contract_id}"
        try:
            store = self._store()
            if store is not None:
                with store_failures():
                    store.delete(where)
        except Exception as exc:
            if strict:
                raise
            self._retry(where, None, exc)

    def _retry(self, where: str, record: Record | None, exc: Exception) -> None:
        log.error("%s could not be %s (%s): done again before the next write", where,
                  "deleted" if record is None else "written", exc)
        if persistent(self._channel):
            self._pending[where] = record

    def _contract(self, contract: _Contract) -> Record:
        return Record(f"{self.base}/c/{contract.id}", CONTRACT_KIND, contract_record(contract))


def node_record(path: Path, node: _Node) -> bytes:
    return codec.dumps({"path": list(path), "content": node.content, "upl": node.upl,
                        "guaranteed": node.guaranteed, "barricade": node.barricade,
                        "pool": None if node.pool is None else list(node.pool)})


def contract_record(contract: _Contract) -> bytes:
    guaranteed = contract.proxies[True]
    return codec.dumps({
        "id": contract.id, "expiry": contract.expiry, "keep_alive": contract.keep_alive,
        "consumer": codec.reference_text(contract.consumer), "admin": contract.admin._id,
        "guaranteed_proxy": None if guaranteed is None else guaranteed._id,
        "subscriptions": [[list(path), depth, g]
                          for path, (depth, g) in sorted(contract.subscriptions.items())]})


# -- restore ---------------------------------------------------------------------------------


def restore_trees(factory: Any, decoded: list[tuple[Record, dict[str, Any]]]) -> None:
    """Bring back the trees of the restored channels (channel/restore.py calls it last,
    once every channel, admin and proxy is back and connected)."""
    by_channel: dict[int, list[tuple[Record, dict[str, Any]]]] = defaultdict(list)
    for record, data in decoded:
        if record.kind in KINDS:
            try:
                by_channel[int(record.path.split("/")[1])].append((record, data))
            except (IndexError, ValueError):
                log.error("store record %s is not an OES tree's: skipped", record.path)
    for channel_id, records in by_channel.items():
        channel = factory._channels.get(channel_id)
        if channel is None:
            log.warning("the OES tree of channel %d did not come back (the channel did "
                        "not)", channel_id)
            continue
        try:
            _restore(channel, records)
        except Exception:
            log.exception("the OES tree of channel %d could not be restored", channel_id)


def _restore(channel: Any, records: list[tuple[Record, dict[str, Any]]]) -> None:
    from cosnotify.oes.tree import Tree, _Node

    tree = Tree.of(channel)
    nodes = [data for record, data in records if record.kind == NODE_KIND]
    nodes.sort(key=lambda data: len(data["path"]))
    pools: list[tuple[Path, Path]] = []
    with tree._lock:
        for data in nodes:
            try:
                path = tuple(str(name) for name in data["path"])
                if path and path[:-1] not in tree._nodes:
                    log.error("OES node %s has no parent: skipped", _text(path))
                    continue
                node = _Node(data["content"], int(data["upl"]), bool(data["guaranteed"]),
                             bool(data["barricade"]))
                old = tree._nodes.get(path)
                if old is not None:
                    node.children = old.children
                tree._nodes[path] = node
                if path:
                    tree._nodes[path[:-1]].children[path[-1]] = None
                if data["pool"] is not None:
                    pools.append((path, tuple(str(n) for n in data["pool"])))
            except (KeyError, TypeError, ValueError):
                log.exception("an OES node record of channel %d is damaged: skipped",
                              channel._id)
        for path, pool in pools:
            if pool in tree._nodes and path in tree._nodes:
                tree._nodes[path].pool = pool
            else:
                log.error("OES node %s: its subscription pool %s is gone: dropped",
                          _text(path), _text(pool))
        tree._limits_changed([(path, None, node) for path, node in tree._nodes.items()])
        tree._records.complete = True
        for record, data in records:
            if record.kind == CONTRACT_KIND:
                try:
                    _restore_contract(tree, data)
                except Exception:
                    log.exception("OES contract record %s could not be restored",
                                  record.path)


def _restore_contract(tree: Tree, data: dict[str, Any]) -> None:
    from cosnotify.oes.contracts import _BEST_EFFORT, CONSUMER_ID, _Contract

    channel = tree.channel
    book = tree.contracts
    admin = channel._consumer_admins.get(data["admin"])
    contract_id = int(data["id"])
    reference = codec.reference_from_text(data["consumer"])
    now = channel._service.clock.now()
    if reference is None or float(data["expiry"]) <= now:
        why = "its lease expired" if reference is not None else \
            "its consumer was an object of the stopped process"
        log.info("OES contract %d of %r ends at the restart: %s", contract_id, channel, why)
        if admin is not None:
            admin.destroy()
        tree._records.delete_contract(contract_id, strict=False)
        return
    if admin is None:
        admin = book._new_admin()
    contract = _Contract(contract_id, client_stub(reference, CONSUMER_ID),
                         float(data["expiry"]), bool(data["keep_alive"]), admin)
    for names, depth, guaranteed in data["subscriptions"]:
        path = tuple(str(name) for name in names)
        if path in tree._nodes:
            contract.subscriptions[path] = (int(depth), bool(guaranteed))
    kept = admin._proxies.get(data.get("guaranteed_proxy"))
    for proxy in admin._all_proxies():
        if proxy is not kept:
            proxy._destroy(notify_client=False, why=None)  # not the contract's any more
    for guaranteed in (False, True):
        paths = [p for p, (_, g) in contract.subscriptions.items() if g == guaranteed]
        if not paths and not (guaranteed and kept is not None):
            continue  # (a guaranteed proxy with no subscriptions left delivers what it holds)
        flt = book._factory().create_filter("OES_SUBTREE")
        if paths:
            infos = flt.add_constraints([book._constraint(p, contract.subscriptions[p][0])
                                         for p in paths])
            contract.constraints.update((p, info.constraint_id)
                                        for p, info in zip(paths, infos, strict=True))
        contract.filters[guaranteed] = flt
        if guaranteed and kept is not None:
            kept.add_filter(flt)  # before it connects: it takes only its subscriptions
            contract.proxies[True] = kept
            book.connect(contract, True, kept, restored=True)
        else:
            proxy, _ = admin.obtain_notification_push_supplier_with_qos(
                CA.STRUCTURED_EVENT, [] if guaranteed else _BEST_EFFORT)
            proxy.add_filter(flt)
            contract.proxies[guaranteed] = proxy
            book.connect(contract, guaranteed, proxy)
    book.adopt(contract)
    tree._records.write_contract(contract, strict=False)


def _text(path: Path) -> str:
    return "\\" + "\\".join(path)
