"""The OES verbs on a channel's tree: one session per connection, one table of verbs.

Strategy: a thin layer. :class:`Session` reads from its connection, feeds a
:class:`~cosnotify.protocols.oes.codec.Reader`, and answers each request in
order; :class:`Service` (one per front end) maps a request onto the tree of
the front end's channel (``Tree.of(channel)``, cosnotify/oes) as the CORBA
front (cosnotify/oes/corba.py) maps its operations, in one call on the
loop's executor (the tree's lock and the store may block). The seed's
"Processing Logic" decides each answer:

=================  ==========================================================
LIST uri           ``tree.list``: 200 and ``<node>`` with a child per child
GET uri            ``tree.get``: 200 and ``<node>`` with its ``<content>``
POST uri + <node>  ``tree.post`` (creates the node and its missing ancestors,
                   or updates it; nothing given is a touch): 200, no headers
REMOVE uri         ``tree.remove``: 200, no headers (404: no node)
LEASECONTRACT      ``tree.lease_contract`` to a :class:`Notifier` of the
 tcp:host:port     contact (Quality-of-service: keep-alive), or with
                   Contract-id ``tree.renew_contract``: 200 and ``<contract>``
CANCELCONTRACT id  ``tree.cancel_contract``: 200 (404: no such contract)
SUBSCRIBE uri      ``tree.subscribe`` (Contract-id; Cache-last-notification:
                   cache -> guaranteed; Depth, cosnotify's, default -1): 200
UNSUBSCRIBE uri    ``tree.unsubscribe`` (Contract-id): 200 (404: none)
NOTIFY             400: the server sends it, to a contact (contacts.py)
=================  ==========================================================

Statuses: 400 for a malformed request or a refusal of the tree's
(InvalidRequest); 404 for a node, contract or subscription that is not
there ("status code 404 is returned"; LIST and GET say 402 for a missing
node, which the reply grammar, ``Status-Code = "200" | "400" | "404"``, does
not have: ``read_not_found=402`` gives it). "For this status code, there are
no header lines, and no content lines returned": error replies are bare
unless the front end is told to ``explain`` (an ``Error`` header with the
reason). A valid request the service cannot carry out (a full channel, a
failing store, a destroyed channel, a LEASECONTRACT as the front end closes)
is 503, and a bug 500: the seed has no code for either, and follows HTTP's.

A connection, and a client host over all its connections, hold at most
``Options.contracts_per_connection`` (1,000) and ``contracts_per_host`` (5,000)
live contracts: past it a new LEASECONTRACT is 400, so one client cannot take
the tree's whole table (MAX_CONTRACTS) from every other (review 118).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Final, Literal

import attrs
from omniORB import CORBA

from cosnotify.filter.oes.limits import format_path
from cosnotify.oes import (
    ContractNotFound,
    InvalidRequest,
    NodeExists,
    NodeNotFound,
    SubscriptionNotFound,
    Tree,
)
from cosnotify.oes.paths import parse_path
from cosnotify.protocols.listener import Connection, Loop, ReadTimeout
from cosnotify.protocols.oes.bodies import (
    BodyError,
    contract_xml,
    list_xml,
    node_xml,
    parse_contract_id,
    parse_int,
    parse_node,
)
from cosnotify.protocols.oes.codec import ProtocolError, Reader, Request, encode_reply
from cosnotify.protocols.oes.contacts import Contact, Notifier, Tally, parse_contact

__all__ = ["Options", "Service", "Session"]

log = logging.getLogger("cosnotify.protocols.oes")

_XML: Final = (("Content-Type", "text/xml; charset=utf-7"),)
#: Leases between two prunings of the notifiers of contracts that ended unseen.
_PRUNE_EVERY: Final = 64


@attrs.frozen
class Options:
    """What ``start`` is told beyond the address (docs/protocols.md, "OES", "Starting it")."""

    #: Seconds a LEASECONTRACT (or a renewal) leases: the seed leaves it to the server.
    lease: float = 600.0
    #: Seconds a NOTIFY may take to connect, to be written, and to be answered.
    notify_timeout: float = 10.0
    #: The status of LIST and GET for a missing node: 404 (the grammar's) or 402 (their text).
    read_not_found: Literal[402, 404] = 404
    #: Add an ``Error`` header with the reason to 400, 404 and 503 replies.
    explain: bool = False
    #: Contacts a client may name: ``peer`` (its own address only) or ``any``.
    contacts: Literal["peer", "any"] = "peer"
    #: Connections to contacts kept open between NOTIFYs, at most (past it a contract's
    #: connection closes after each NOTIFY).
    contact_connections: int = 256
    #: Live contracts leased over one connection, and by one client host over all its
    #: connections, at most (past it a new LEASECONTRACT is 400; renewals are not
    #: counted): one client cannot take the tree's whole table (MAX_CONTRACTS, 10,000).
    contracts_per_connection: int = 1_000
    contracts_per_host: int = 5_000


class _Bad(ValueError):
    """A request this layer refuses (400)."""


@attrs.frozen
class _Answer:
    status: int
    body: str | None = None
    why: str = ""


_OK: Final = _Answer(200)


class Service:
    """The verbs of one front end on its channel's tree (module docstring)."""

    def __init__(self, loop: Loop, tree: Tree, options: Options) -> None:
        self.loop = loop
        self.tree = tree
        self.options = options
        #: NOTIFY deliveries: sent, failed.
        self.tally = Tally()
        self._lock = threading.Lock()
        #: contract number -> the Notifier of a contract leased over the wire
        self._notifiers: dict[int, Notifier] = {}
        self._leases = 0
        #: contract number -> (the connection, the host) that leased it; and how many
        #: live contracts each connection and each host holds (``_reserve``).
        self._lessees: dict[int, tuple[object, Any]] = {}
        self._held: dict[object, int] = {}
        self._pruned = 0.0
        self._closed = False
        self._verbs: dict[str, Callable[[Request, str], _Answer]] = {
            "LIST": self._list, "GET": self._get, "POST": self._post, "REMOVE": self._remove,
            "NOTIFY": self._notify, "LEASECONTRACT": self._lease,
            "CANCELCONTRACT": self._cancel, "SUBSCRIBE": self._subscribe,
            "UNSUBSCRIBE": self._unsubscribe,
        }

    # -- the boundary ---------------------------------------------------------------------
    async def answer(self, request: Request, peer: str, lessee: object = None) -> bytes:
        """The reply to ``request`` (from a client at ``peer``, over the connection
        ``lessee`` names), as bytes."""
        found = await self.loop.call(self._dispatch, request, peer, lessee)
        return self.encode(found)

    def encode(self, answer: _Answer) -> bytes:
        if answer.status == 200:
            return encode_reply(200, _XML if answer.body is not None else (), answer.body)
        headers = (("Error", answer.why.replace("\r", " ").replace("\n", " ")[:500]),) \
            if self.options.explain and answer.why else ()
        return encode_reply(answer.status, headers)

    def bad(self, error: ProtocolError) -> bytes:
        """The reply to a request the codec refused."""
        return self.encode(_Answer(400, why=error.reason))

    def _dispatch(self, request: Request, peer: str, lessee: object = None) -> _Answer:
        verb = self._verbs.get(request.verb)
        if verb is None:
            return _Answer(400, why=f"unknown verb {request.verb[:20]!r}")
        try:
            if request.verb == "LEASECONTRACT":
                return self._lease(request, peer, lessee)
            return verb(request, peer)
        except (_Bad, BodyError, InvalidRequest, NodeExists) as exc:
            return _Answer(400, why=str(exc))
        except NodeNotFound as exc:
            status = self.options.read_not_found if request.verb in ("LIST", "GET") else 404
            return _Answer(status, why=str(exc))
        except (ContractNotFound, SubscriptionNotFound) as exc:
            return _Answer(404, why=str(exc))
        except CORBA.SystemException as exc:  # full channel, failing store, channel gone
            return _Answer(503, why=f"{type(exc).__name__}: {exc}")
        except Exception:
            log.exception("OES %s failed", request.verb)
            return _Answer(500, why="internal error")

    # -- nodes ----------------------------------------------------------------------------
    @staticmethod
    def _path(request: Request) -> str:
        """The Verb-URI as the node's pathname (none: the root)."""
        return request.uri if request.uri is not None else ""

    def _list(self, request: Request, peer: str) -> _Answer:
        path = self._path(request)
        names = self.tree.list(path)
        node = parse_path(path)
        return _Answer(200, list_xml(format_path(node), node[-1] if node else "", names))

    def _get(self, request: Request, peer: str) -> _Answer:
        return _Answer(200, node_xml(self.tree.get(self._path(request))))

    def _post(self, request: Request, peer: str) -> _Answer:
        path = self._path(request)
        node = parse_path(path)
        found = parse_node(request.body, path, node[-1] if node else "")
        self.tree.post(path, **found)
        return _OK

    def _remove(self, request: Request, peer: str) -> _Answer:
        self.tree.remove(self._path(request))
        return _OK

    def _notify(self, request: Request, peer: str) -> _Answer:
        raise _Bad("NOTIFY is sent by the server, to a contract's contact")

    # -- contracts ------------------------------------------------------------------------
    def _contact(self, request: Request, peer: str) -> Contact:
        try:
            contact = parse_contact(request.uri)
        except ValueError as exc:
            raise _Bad(str(exc)) from None
        if self.options.contacts == "peer" and _address(contact.host) != _address(peer):
            raise _Bad(f"the contact {contact.text} is not on the client's own address "
                       f"{peer}")
        return contact

    def _lease(self, request: Request, peer: str, lessee: object = None) -> _Answer:
        contact = self._contact(request, peer)
        quality = request.header("Quality-of-service")
        if quality is not None and quality.strip().lower() != "keep-alive":
            raise _Bad("Quality-of-service may take only the value 'keep-alive'")
        keep_alive = quality is not None
        tree = self.tree
        given = request.header("Contract-id")
        if given is not None:
            contract_id = self._contract_id(request)
            with self._lock:
                current = self._notifiers.get(contract_id)
            if keep_alive and not tree.get_contract(contract_id).keep_alive:
                raise _Bad("a renewal keeps the contract's quality of service: lease a new "
                           "contract for keep-alive")
            fresh = None if current is not None and current.contact == contact \
                else self._notifier(contact, contract_id)
            contract = tree.renew_contract(contract_id, self.options.lease, fresh)
            if fresh is not None:
                with self._lock:
                    self._notifiers[contract_id] = fresh
                if current is not None:
                    current.supersede(fresh)
        else:
            held = (lessee if lessee is not None else object(), ("host", _address(peer)))
            self._reserve(held)
            try:
                notifier = self._notifier(contact, 0)
                contract = tree.lease_contract(notifier, self.options.lease,
                                               keep_alive=keep_alive)
            except BaseException:
                with self._lock:
                    self._release(held)
                raise
            notifier.contract_id = contract.contract_id
            with self._lock:
                closed = self._closed
                if not closed:
                    self._notifiers[contract.contract_id] = notifier
                    self._lessees[contract.contract_id] = held
                    self._leases += 1
                else:
                    self._release(held)
                prune = self._leases % _PRUNE_EVERY == 0
            if closed:  # the front end closed while this was carried out: no one else
                self._end(notifier)  # would ever cancel it
                return _Answer(503, why="the front end is closed")
            if notifier.ended:  # its contract ended before it was registered: _forget
                self._forget(notifier)  # found nothing then, and close() runs only once
            if prune:
                self._prune()
        return _Answer(200, contract_xml(contract.contract_id, contract.expiry, contact.text))

    def _cancel(self, request: Request, peer: str) -> _Answer:
        contract_id = parse_contract_id(request.uri)
        if contract_id is None:
            raise ContractNotFound(0)
        self.tree.cancel_contract(contract_id)
        with self._lock:
            notifier = self._notifiers.get(contract_id)
        if notifier is not None:
            notifier.close()
        return _OK

    def _subscribe(self, request: Request, peer: str) -> _Answer:
        contract_id = self._contract_id(request, required=True)
        cache = request.header("Cache-last-notification")
        if cache is not None and cache.strip().lower() != "cache":
            raise _Bad("Cache-last-notification may take only the value 'cache'")
        depth_text = request.header("Depth")
        depth = parse_int(depth_text, "Depth") if depth_text is not None else -1
        self.tree.subscribe(contract_id, self._path(request), depth, cache is not None)
        return _OK

    def _unsubscribe(self, request: Request, peer: str) -> _Answer:
        self.tree.unsubscribe(self._contract_id(request, required=True), self._path(request))
        return _OK

    @staticmethod
    def _contract_id(request: Request, required: bool = False) -> int:
        text = request.header("Contract-id")
        if text is None:
            if required:
                raise _Bad(f"{request.verb} must include the 'Contract-id' header")
            raise ContractNotFound(0)
        found = parse_contract_id(text)
        if found is None:
            raise ContractNotFound(0)
        return found

    def _reserve(self, held: tuple[object, Any]) -> None:
        """Count a new contract against its connection and its host, or refuse it (400:
        the seed's status for a request refused) when either holds its limit already.
        Contracts that ended unseen are pruned first, at most once a second."""
        connection, host = held
        options = self.options
        limits = ((connection, options.contracts_per_connection, "this connection",
                   "contracts_per_connection"),
                  (host, options.contracts_per_host, f"the client host {host[1]}",
                   "contracts_per_host"))
        for attempt in (0, 1):
            with self._lock:
                full = next((limit for limit in limits
                             if self._held.get(limit[0], 0) >= limit[1]), None)
                if full is None:
                    for key in held:
                        self._held[key] = self._held.get(key, 0) + 1
                    return
                now = time.monotonic()
                stale = now - self._pruned >= 1.0
                if stale:
                    self._pruned = now
            if attempt or not stale:
                break
            self._prune()
        assert full is not None
        _, most, who, option = full
        raise _Bad(f"{who} holds {most} live contracts, its most ({option})")

    def _release(self, held: tuple[object, Any]) -> None:
        """A counted contract ended (``_reserve``); the lock is held."""
        for key in held:
            left = self._held.get(key, 0) - 1
            if left > 0:
                self._held[key] = left
            else:
                self._held.pop(key, None)

    # -- the notifiers --------------------------------------------------------------------
    def _notifier(self, contact: Contact, contract_id: int) -> Notifier:
        made = Notifier(contact, self.loop, self.options.notify_timeout, self._forget,
                        self.tally, self.options.contact_connections)
        made.contract_id = contract_id
        return made

    def _forget(self, notifier: Notifier) -> None:
        with self._lock:
            if self._notifiers.get(notifier.contract_id) is notifier:
                del self._notifiers[notifier.contract_id]
                held = self._lessees.pop(notifier.contract_id, None)
                if held is not None:
                    self._release(held)

    def _prune(self) -> None:
        """Notifiers of contracts that ended without telling them (a lease that ran out
        before any subscription made a proxy; a delivery that failed, whose proxy went
        without telling) go. The notifiers are listed before the tree's contracts: a
        lease made in between is not among them, so it is never taken for ended."""
        with self._lock:
            known = list(self._notifiers.items())
        live = set(self.tree.contract_ids())
        for contract_id, notifier in known:
            if contract_id not in live:
                notifier.close()

    def contracts(self) -> list[int]:
        """The contracts leased over the wire and still live (their numbers)."""
        self._prune()
        with self._lock:
            return sorted(self._notifiers)

    def close(self) -> None:
        """The front end stops: its contracts are cancelled (no contact could be told),
        and so is any a LEASECONTRACT still being carried out makes."""
        with self._lock:
            self._closed = True
            notifiers = list(self._notifiers.values())
        for notifier in notifiers:
            self._end(notifier)

    def _end(self, notifier: Notifier) -> None:
        try:
            self.tree.cancel_contract(notifier.contract_id)
        except Exception as exc:  # noqa: BLE001 - ended already, or the channel went
            log.debug("contract %d: %s", notifier.contract_id, exc)
        notifier.close()


def _address(host: str) -> Any:
    try:
        found = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        return found.ipv4_mapped
    return found


class Session:
    """One client's connection: requests in, replies out, in order."""

    def __init__(self, service: Service, connection: Connection) -> None:
        self._service = service
        #: Names this connection for its contracts' count (Options.contracts_per_connection).
        self._lessee = object()
        self._reader = Reader("request", max_frame=connection.limits.max_frame)

    async def run(self, connection: Connection) -> None:
        reader, service, counters = self._reader, self._service, connection.counters
        peer = connection.peer[0]
        clock = asyncio.get_running_loop().time
        #: When the request begun must be whole (Limits.read_timeout for the whole
        #: request, not for each read: a client trickling a byte at a time is closed).
        #: A connection is not idle before its first request: that request must be
        #: whole within read_timeout of the accept, or a peer's silent sockets would
        #: hold the front end's connections (Limits.max_connections) for idle_timeout.
        deadline: float | None = clock() + connection.limits.read_timeout
        asked = False
        while True:
            if reader.in_frame or not asked:
                if deadline is None:
                    deadline = clock() + connection.limits.read_timeout
                try:
                    data = await asyncio.wait_for(connection.read_some(),
                                                  max(0.0, deadline - clock()))
                except TimeoutError:
                    raise ReadTimeout("a request did not arrive whole in time") from None
            else:
                deadline = None
                data = await connection.read_some(idle=True)
            reader.feed(data)
            while True:
                try:
                    request = reader.next_message()
                except ProtocolError as exc:
                    counters.frames_in += 1
                    log.info("OES %s:%d: %s", *connection.peer, exc)
                    connection.send(service.bad(exc))
                    if exc.fatal:
                        connection.close()
                        return
                    deadline, asked = None, True
                    continue
                if request is None:
                    break
                deadline, asked = None, True  # the next request's time starts now
                counters.frames_in += 1
                assert isinstance(request, Request)
                connection.send(await service.answer(request, peer, self._lessee))
