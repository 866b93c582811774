"""OES trees over CORBA: servants of ``CosNotifyOES`` (idl/CosNotifyOES.idl).

Strategy: a thin layer, as the style guide asks: each servant holds a core
object (a :class:`~cosnotify.oes.tree.Tree`, or the EventChannelFactory whose
trees a ``TreeFactory`` hands out) and nothing ORB-global. It turns the IDL's
values into the core's (a ``PropertySeq`` of the ``<node>`` element's
attribute names into keyword arguments, ``TimeBase::TimeT`` leases into
seconds) and back (``Node`` and ``Contract`` structs), and is the one
boundary where the core's refusals (cosnotify/oes/errors.py) become the IDL's
exceptions, reason included. A failing store is ``NO_RESOURCES`` as
everywhere in the service; a tree whose channel was destroyed answers
``OBJECT_NOT_EXIST``.

``TreeFactory.get_tree`` activates one ``Tree`` servant per tree in the POA
it is given (default: the factory servant's ``_default_POA``), and hands the
same reference out again while the tree lives; when the tree's channel is
destroyed the servant is deactivated and forgotten at once.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import omniORB
from omniORB import CORBA

import CosNotifyOES
import CosNotifyOES__POA

from cosnotify.channel.clock import TIMET_EPOCH_OFFSET
from cosnotify.oes import tree_of
from cosnotify.oes.contracts import Contract
from cosnotify.oes.errors import (
    ContractNotFound,
    InvalidRequest,
    NodeExists,
    NodeNotFound,
    SubscriptionNotFound,
)
from cosnotify.oes.tree import UNCHANGED, Node, Tree

__all__ = ["ATTRIBUTES", "TreeFactoryServant", "TreeServant", "attributes_of",
           "contract_struct", "node_struct"]

#: The attribute names ``create`` and ``post`` take (the seed's ``<node>`` element),
#: and the keyword each is for.
ATTRIBUTES = {"content": "content", "upl": "upl", "guaranteed": "guaranteed",
              "barricade": "barricade", "subscriptionPool": "subscription_pool"}


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """The core's refusals as the IDL's exceptions."""
    try:
        yield
    except InvalidRequest as exc:
        raise CosNotifyOES.InvalidRequest(exc.nodepath, exc.reason) from None
    except NodeNotFound as exc:
        raise CosNotifyOES.NodeNotFound(exc.nodepath, exc.reason) from None
    except NodeExists as exc:
        raise CosNotifyOES.NodeExists(exc.nodepath) from None
    except ContractNotFound as exc:
        raise CosNotifyOES.ContractNotFound(_contract_number(exc.contract_id)) from None
    except SubscriptionNotFound as exc:
        raise CosNotifyOES.SubscriptionNotFound(_contract_number(exc.contract_id),
                                                exc.nodepath) from None


def _contract_number(value: Any) -> int:
    return value if type(value) is int and 0 <= value < 2 ** 64 else 0


def attributes_of(nodepath: str, properties: Sequence[Any]) -> dict[str, Any]:
    """A ``PropertySeq`` of node attributes as the core's keyword arguments;
    InvalidRequest for an unknown name, a name given twice or a value of the wrong
    type (the core checks ranges)."""
    found: dict[str, Any] = {}
    for prop in properties:
        name = prop.name
        keyword = ATTRIBUTES.get(name)
        if keyword is None:
            raise InvalidRequest(nodepath, f"unknown node attribute {name!r}; known: "
                                           f"{', '.join(ATTRIBUTES)}")
        if keyword in found:
            raise InvalidRequest(nodepath, f"node attribute {name!r} is given twice")
        value = prop.value.value() if isinstance(prop.value, CORBA.Any) else prop.value
        if name == "content" and type(value) is not bytes:
            raise InvalidRequest(nodepath, "content is a sequence<octet>")
        if name == "upl" and type(value) is not int:
            raise InvalidRequest(nodepath, "upl is a long")
        if name in ("guaranteed", "barricade") and type(value) is not bool:
            raise InvalidRequest(nodepath, f"{name} is a boolean")
        if name == "subscriptionPool" and value is not None and type(value) is not str:
            raise InvalidRequest(nodepath, "subscriptionPool is a (w)string, or an Any of "
                                           "tk_null for no pool")
        found[keyword] = value
    return found


def node_struct(node: Node) -> Any:
    pool = node.subscription_pool
    return CosNotifyOES.Node(node.nodename, node.nodepath, node.upl, node.guaranteed,
                             node.barricade, pool is not None, pool or "",
                             node.content is not None, node.content or b"")


def contract_struct(contract: Contract) -> Any:
    expiry = max(0, round((contract.expiry + TIMET_EPOCH_OFFSET) * 10_000_000))
    return CosNotifyOES.Contract(
        contract.contract_id, expiry, contract.contactinfo, contract.keep_alive,
        [CosNotifyOES.Subscription(s.nodepath, s.depth, s.guaranteed)
         for s in contract.subscriptions])


def _seconds(lease: Any) -> Any:
    """A ``TimeBase::TimeT`` lease (100 ns units) in seconds (the core checks it)."""
    return lease / 10_000_000 if type(lease) is int else lease


class TreeServant(CosNotifyOES__POA.Tree):  # type: ignore[misc]
    """``CosNotifyOES::Tree`` over one core :class:`Tree`.

    ``call_timeout`` (seconds; None: omniORB's default, none): given to the
    consumer references of contracts (``omniORB.setClientCallTimeout``), so a
    consumer that hangs cannot hold a delivery worker for ever.
    """

    def __init__(self, tree: Tree, call_timeout: float | None = None) -> None:
        self._tree = tree
        self._call_timeout = call_timeout

    def _get_channel_id(self) -> int:
        return int(self._tree.channel._id)

    def create(self, nodepath: str, attributes: Sequence[Any], make_parents: bool) -> Any:
        with translated():
            found = attributes_of(nodepath, attributes)
            if found.get("subscription_pool", 0) is None:
                del found["subscription_pool"]  # no pool: the default
            return node_struct(self._tree.create(nodepath, **found, parents=make_parents))

    def get(self, nodepath: str) -> Any:
        with translated():
            return node_struct(self._tree.get(nodepath))

    def list(self, nodepath: str) -> list[str]:
        with translated():
            return self._tree.list(nodepath)

    def post(self, nodepath: str, attributes: Sequence[Any]) -> Any:
        with translated():
            found = attributes_of(nodepath, attributes)
            return node_struct(self._tree.post(nodepath, found.pop("content", UNCHANGED),
                                               **found))

    def remove(self, nodepath: str) -> int:
        with translated():
            return self._tree.remove(nodepath)

    def lease_contract(self, consumer: Any, lease: int, keep_alive: bool) -> Any:
        with translated():
            return contract_struct(self._tree.lease_contract(
                self._timed(consumer), _seconds(lease), keep_alive=keep_alive))

    def renew_contract(self, id: int, lease: int, consumer: Any) -> Any:
        with translated():
            return contract_struct(self._tree.renew_contract(id, _seconds(lease),
                                                             self._timed(consumer)))

    def cancel_contract(self, id: int) -> None:
        with translated():
            self._tree.cancel_contract(id)

    def get_contract(self, id: int) -> Any:
        with translated():
            return contract_struct(self._tree.get_contract(id))

    def subscribe(self, id: int, nodepath: str, depth: int, guaranteed: bool) -> None:
        with translated():
            self._tree.subscribe(id, nodepath, depth, guaranteed)

    def unsubscribe(self, id: int, nodepath: str) -> None:
        with translated():
            self._tree.unsubscribe(id, nodepath)

    def _timed(self, consumer: Any) -> Any:
        if isinstance(consumer, CORBA.Object) and self._call_timeout is not None:
            omniORB.setClientCallTimeout(consumer, max(1, round(self._call_timeout * 1000)))
        return consumer


class TreeFactoryServant(CosNotifyOES__POA.TreeFactory):  # type: ignore[misc]
    """``CosNotifyOES::TreeFactory`` over an EventChannelFactory: ``get_tree(id)`` is
    the tree of its channel ``id`` (made on first use), served in ``poa`` (default: this
    servant's ``_default_POA()``) while the channel lives."""

    def __init__(self, factory: Any, call_timeout: float | None = None,
                 poa: Any = None) -> None:
        self._factory = factory
        self._call_timeout = call_timeout
        self._poa = poa
        self._lock = threading.Lock()
        #: channel id -> (its tree, the servant's reference, its object id)
        self._servants: dict[int, tuple[Tree, Any, bytes]] = {}

    def get_tree(self, id: int) -> Any:
        tree = tree_of(self._factory, id)  # ChannelNotFound, or OBJECT_NOT_EXIST
        poa = self._the_poa()
        with self._lock:
            found = self._servants.get(id)
            if found is not None and found[0] is tree:
                return found[1]
            oid = poa.activate_object(TreeServant(tree, self._call_timeout))
            reference = poa.id_to_reference(oid)
            self._servants[id] = (tree, reference, oid)
        tree.when_ended(lambda: self._forget(id, tree))  # now, if the channel just went
        return reference

    def close(self) -> None:
        """Deactivate the tree servants made so far (the server is stopping)."""
        with self._lock:
            servants, self._servants = self._servants, {}
        for _, _, oid in servants.values():
            self._deactivate(oid)

    def _forget(self, channel_id: int, tree: Tree) -> None:
        """The tree's channel was destroyed: its servant goes."""
        with self._lock:
            found = self._servants.get(channel_id)
            if found is None or found[0] is not tree:
                return
            del self._servants[channel_id]
        self._deactivate(found[2])

    def _the_poa(self) -> Any:
        return self._poa if self._poa is not None else self._default_POA()

    def _deactivate(self, oid: bytes) -> None:
        with contextlib.suppress(Exception):  # deactivated already, or the POA went
            self._the_poa().deactivate_object(oid)
