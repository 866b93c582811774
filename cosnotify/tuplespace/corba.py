"""The tuple space over CORBA: servants of ``CosNotifyEventHeap`` (idl/CosNotifyEventHeap.idl).

Strategy: a thin layer over the core (the h11 rule): each servant wraps one
core object given to its constructor -- :class:`TupleSpaceServant` a
:class:`~cosnotify.tuplespace.space.TupleSpace`, :class:`ClientServant` a
:class:`~cosnotify.tuplespace.clients.Client`,
:class:`TupleSpaceFactoryServant` a lookup (a callable channel id ->
channel, raising ``CosNotifyChannelAdmin::ChannelNotFound``) -- and touches
nothing ORB-global, so a server activates them in whatever POA it likes
(objects it makes itself, the spaces and clients, go into its own
``_default_POA()``, or the ``poa`` given). Values are translated here and
nowhere else: a ``TemplateSpec`` union becomes the EVENTHEAP text (a
``CosNotifyGrammars::Template`` rendered by the grammar), a core
:class:`~cosnotify.tuplespace.records.Tuple` a ``Tuple`` struct, a timeout in
ms seconds. The core already raises the IDL's exceptions.

A client that disconnects ends its waits (issue 21, "Bad input": waits "end
cleanly when the client disconnects"): a :class:`ConnectionWatch`, when the
server installs one (``ConnectionWatch().install()``: omniORB's one
connection-info function, ``omniORB.registerConnectionInfoFn``), learns from
omniORB when a connection fails or closes, and cancels the waits of calls
that came over it (``omniORB.currentCallInfo()['peer_address']``) -- a
client whose own call timeout ends its call closes its connection, and so
does a client process that dies. A wait cancelled so takes nothing, and its
client has not received anything; a wait whose tuple was found just as its
caller went gives the tuple back (``TupleSpace.give_back``), so nothing is
lost but the reply. Without a watch a wait ends at its own timeout (at most
MaxWaitMs), or when the channel goes.

The watch also knows the connection each ``Client`` last called on: when it
closes, the client is told (``Client.connection_lost``) and is ended unless
it calls again within CLIENT_GRACE (clients.py). A ``ClientServant`` is
deactivated when its client ends -- replaced by a reconnect, disconnected,
reaped, or its space gone -- so no servant outlives its client.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

import omniORB
from omniORB import CORBA, ConnectionInfo

import CosNotifyChannelAdmin as CA
import CosNotifyEventHeap
import CosNotifyEventHeap__POA

from cosnotify.filter.eventheap.corba import render_template
from cosnotify.tuplespace.limits import MAX_TEMPLATES
from cosnotify.tuplespace.records import ClientInfo, Tuple, invalid_template, limit_exceeded
from cosnotify.tuplespace.space import TupleSpace
from cosnotify.tuplespace.waits import Cancel

__all__ = ["ClientServant", "ConnectionWatch", "TupleSpaceFactoryServant", "TupleSpaceServant",
           "templates_of", "tuples_of"]

#: omniORB connection events after which a connection carries no more replies.
_GONE: Final = frozenset({ConnectionInfo.SEND_FAILED, ConnectionInfo.RECV_FAILED,
                          ConnectionInfo.SEND_TIMED_OUT, ConnectionInfo.RECV_TIMED_OUT,
                          ConnectionInfo.CLOSED})
#: Closed peer addresses remembered (a call that began on a connection that closed before
#: its wait was registered is cancelled at once); a new connection from the address
#: forgets it.
_CLOSED_KEPT: Final = 4096


class ConnectionWatch:
    """Cancels the waits of calls whose connection failed or closed (module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waits: dict[str, set[Cancel]] = {}
        self._closed: OrderedDict[str, None] = OrderedDict()
        #: The clients by the connection they last called on, and the other way round.
        self._clients: dict[str, set[Any]] = {}
        self._address_of: dict[Any, str] = {}

    def install(self) -> ConnectionWatch:
        """Register with omniORB (replacing any other connection-info function)."""
        omniORB.registerConnectionInfoFn(self.connection_event)
        return self

    def connection_event(self, event: int, is_error: bool, address: str, info: Any) -> None:
        """omniORB's callback: ``event`` happened on the connection with ``address``."""
        if event == ConnectionInfo.ACCEPTED_CONNECTION:
            with self._lock:
                self._closed.pop(address, None)
            return
        if event not in _GONE:
            return
        with self._lock:
            cancels = self._waits.pop(address, set())
            clients = self._clients.pop(address, set())
            for client in clients:
                del self._address_of[client]
            self._closed[address] = None
            self._closed.move_to_end(address)
            while len(self._closed) > _CLOSED_KEPT:
                self._closed.popitem(last=False)
        for cancel in cancels:
            cancel.cancel()
        for client in clients:
            client.connection_lost()

    def track(self, client: Any) -> None:
        """``client`` (a core Client) calls now: remember the current call's connection,
        to tell the client when it closes (module docstring)."""
        info = omniORB.currentCallInfo()
        address = info.get("peer_address") if info else None
        if not address or not client.active:
            return
        with self._lock:
            old = self._address_of.get(client)
            if old == address:
                return
            if old is not None:
                self._forget(client, old)
            else:
                client.on_end.append(functools.partial(self.forget, client))
            self._address_of[client] = address
            self._clients.setdefault(address, set()).add(client)
        if not client.active:  # it ended meanwhile: its on_end may have gone before
            self.forget(client)

    def forget(self, client: Any) -> None:
        """``client`` ended: no connection of its is watched any more."""
        with self._lock:
            address = self._address_of.get(client)
            if address is not None:
                self._forget(client, address)
                del self._address_of[client]

    def _forget(self, client: Any, address: str) -> None:
        clients = self._clients.get(address)
        if clients is not None:
            clients.discard(client)
            if not clients:
                del self._clients[address]

    @contextlib.contextmanager
    def watching(self) -> Iterator[Cancel | None]:
        """A Cancel for the current call's connection (None for a call not made over a
        connection: a collocated one)."""
        info = omniORB.currentCallInfo()
        address = info.get("peer_address") if info else None
        if not address:
            yield None
            return
        cancel = Cancel()
        with self._lock:
            closed = address in self._closed
            if not closed:
                self._waits.setdefault(address, set()).add(cancel)
        if closed:
            cancel.cancel()
        try:
            yield cancel
        finally:
            with self._lock:
                waits = self._waits.get(address)
                if waits is not None:
                    waits.discard(cancel)
                    if not waits:
                        del self._waits[address]

    @property
    def watched(self) -> int:
        """Calls being watched now."""
        with self._lock:
            return sum(len(w) for w in self._waits.values())

    @property
    def clients_watched(self) -> int:
        """Clients whose connection is watched now."""
        with self._lock:
            return len(self._address_of)


def templates_of(specs: Sequence[Any]) -> list[str]:
    """``CosNotifyEventHeap::TemplateSpecSeq`` -> EVENTHEAP texts (InvalidTemplate;
    LimitExceeded past MaxTemplates, before any is rendered)."""
    if len(specs) > MAX_TEMPLATES:
        raise limit_exceeded(f"more than {MAX_TEMPLATES} templates in one call",
                             MAX_TEMPLATES)
    texts = []
    for at, spec in enumerate(specs):
        form, value = getattr(spec, "_d", None), getattr(spec, "_v", None)
        ordinal = getattr(form, "_v", form)
        try:
            if ordinal == CosNotifyEventHeap.AS_TEXT._v and isinstance(value, str):
                texts.append(value)
            elif ordinal == CosNotifyEventHeap.AS_VALUE._v and isinstance(value, (list, tuple)):
                texts.append(render_template(value))
            else:
                raise ValueError(f"not a CosNotifyEventHeap::TemplateSpec: {spec!r:.200}")
        except ValueError as exc:
            raise invalid_template(f"template {at}: {exc}") from None
    return texts


def tuples_of(found: Tuple | list[Tuple] | None) -> list[Any]:
    """Core tuples -> ``CosNotifyEventHeap::TupleSeq``."""
    if found is None:
        return []
    items = found if isinstance(found, list) else [found]
    return [CosNotifyEventHeap.Tuple(t.id, t.event) for t in items]


def _seconds(timeout_ms: int) -> float:
    return float(timeout_ms) / 1000.0


class _Operations:
    """The seed's operations, on ``self._target`` (a TupleSpace or a Client)."""

    _target: Any
    _space: TupleSpace
    _watch: ConnectionWatch | None

    def _get_channel_id(self) -> int:
        return self._space.channel_id

    def _get_live_count(self) -> int:
        return min(self._space.live_count, 2**32 - 1)

    def put_event(self, event: Any) -> int:
        return int(self._target.put_event(event))

    def get_event(self, templates: Sequence[Any]) -> list[Any]:
        return tuples_of(self._target.get_event(templates_of(templates)))

    def remove_event(self, templates: Sequence[Any]) -> list[Any]:
        return tuples_of(self._target.remove_event(templates_of(templates)))

    def wait_for_event(self, templates: Sequence[Any], timeout_ms: int) -> list[Any]:
        return self._wait(self._target.wait_for_event, templates, timeout_ms, False)

    def wait_to_remove_event(self, templates: Sequence[Any], timeout_ms: int) -> list[Any]:
        return self._wait(self._target.wait_to_remove_event, templates, timeout_ms, True)

    def _wait(self, op: Callable[..., Tuple | None], templates: Sequence[Any],
              timeout_ms: int, remove: bool) -> list[Any]:
        texts, seconds = templates_of(templates), _seconds(timeout_ms)
        watch = self._watch
        if watch is None:
            return tuples_of(op(texts, seconds))
        with watch.watching() as cancel:
            found = op(texts, seconds, cancel=cancel)
            if found is not None and cancel is not None and cancel.cancelled:
                self._space.give_back(found)  # its caller is gone: nothing taken or received
                found = None
        return tuples_of(found)

    def snoop_events(self, templates: Sequence[Any], max_results: int) -> list[Any]:
        return tuples_of(self._target.snoop_events(templates_of(templates), max_results))

    def get_all(self, max_results: int) -> list[Any]:
        return tuples_of(self._target.get_all(max_results))

    def register_for_events(self, templates: Sequence[Any], consumer: Any) -> int:
        return int(self._target.register_for_events(templates_of(templates), consumer))

    def register_for_all(self, consumer: Any) -> int:
        return int(self._target.register_for_all(consumer))

    def deregister(self, stream: int) -> bool:
        return bool(self._target.deregister(stream))

    def delete_event(self, tuple_id: int) -> bool:
        return bool(self._target.delete_event(tuple_id))

    def clear(self) -> None:
        self._target.clear()


def _activate(poa: Any, servant: Any) -> Any:
    return poa.id_to_reference(poa.activate_object(servant))


class TupleSpaceServant(_Operations, CosNotifyEventHeap__POA.TupleSpace):  # type: ignore[misc]
    """``CosNotifyEventHeap::TupleSpace`` over ``space``. Clients it connects are
    activated in ``poa`` (default: its own ``_default_POA()``)."""

    def __init__(self, space: TupleSpace, watch: ConnectionWatch | None = None,
                 poa: Any = None) -> None:
        self._target = self._space = space
        self._watch = watch
        self._poa = poa

    def connect(self, info: Any) -> Any:
        client = self._space.connect(ClientInfo(info.source, info.application, info.device,
                                                info.person, info.group))
        poa = self._poa if self._poa is not None else self._default_POA()
        servant = ClientServant(client, self._watch, poa)
        reference = _activate(poa, servant)
        client.on_end.append(servant._deactivate)  # replaced, disconnected, reaped...
        if not client.active:
            servant._deactivate()  # it ended meanwhile
        elif self._watch is not None:
            self._watch.track(client)
        return reference


class ClientServant(_Operations, CosNotifyEventHeap__POA.Client):  # type: ignore[misc]
    """``CosNotifyEventHeap::Client`` over ``client``, activated in ``poa`` (default: its
    ``_default_POA()``); gone (OBJECT_NOT_EXIST, and deactivated) once the client is
    replaced, disconnected, ended or its space ends."""

    def __init__(self, client: Any, watch: ConnectionWatch | None = None,
                 poa: Any = None) -> None:
        self._client = client
        self._space = client.space
        self._watch = watch
        self._poa = poa

    @property
    def _target(self) -> Any:
        client = self._client
        if not client.active:
            self._deactivate()
            raise CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO)
        if self._watch is not None:
            self._watch.track(client)
        return client

    def _deactivate(self) -> None:
        with contextlib.suppress(Exception):  # not active (any more): nothing to undo
            poa = self._poa if self._poa is not None else self._default_POA()
            poa.deactivate_object(poa.servant_to_id(self))

    def _get_info(self) -> Any:
        info = self._target.info
        return CosNotifyEventHeap.ClientInfo(info.source, info.application, info.device,
                                             info.person, info.group)

    def _get_session_id(self) -> int:
        return int(self._target.session_id)

    def disconnect(self) -> None:
        client = self._client
        if client.active:
            client.close()
        self._deactivate()


class TupleSpaceFactoryServant(CosNotifyEventHeap__POA.TupleSpaceFactory):  # type: ignore[misc]
    """``CosNotifyEventHeap::TupleSpaceFactory``: ``lookup(id)`` gives channel ``id`` or
    raises ChannelNotFound; each channel's space gets one servant, activated in ``poa``
    (default: the factory servant's ``_default_POA()``) on first request."""

    def __init__(self, lookup: Callable[[int], Any], watch: ConnectionWatch | None = None,
                 poa: Any = None) -> None:
        self._lookup = lookup
        self._watch = watch
        self._poa = poa
        self._lock = threading.Lock()
        self._spaces: dict[int, tuple[TupleSpace, Any, bytes]] = {}

    def get_tuple_space(self, id: int) -> Any:
        channel = self._lookup(id)
        try:
            space = TupleSpace.of(channel)
        except CORBA.OBJECT_NOT_EXIST:
            raise CA.ChannelNotFound() from None
        poa = self._poa if self._poa is not None else self._default_POA()
        with self._lock:
            for channel_id, (old, _, oid) in list(self._spaces.items()):
                if old.closed:  # its channel went: its servant goes too
                    del self._spaces[channel_id]
                    with contextlib.suppress(Exception):
                        poa.deactivate_object(oid)
            found = self._spaces.get(id)
            if found is not None and found[0] is space:
                return found[1]
            servant = TupleSpaceServant(space, self._watch, poa)
            oid = poa.activate_object(servant)
            reference = poa.id_to_reference(oid)
            self._spaces[id] = (space, reference, oid)
            return reference

    def close(self) -> None:
        """Deactivate the space servants made so far (the server is stopping)."""
        poa = self._poa if self._poa is not None else self._default_POA()
        with self._lock:
            spaces, self._spaces = self._spaces, {}
        for _, _, oid in spaces.values():
            with contextlib.suppress(Exception):
                poa.deactivate_object(oid)
