"""The ORB core: settings, the client connection pool, the POAs, the server.

Strategy: :class:`ORBCore` is what one ``CORBA.ORB`` runs on. It owns the
typed :class:`Settings` parsed from the ``-ORB`` options, the client
:class:`~cosnotify.orb.connection.ConnectionPool`, the
:class:`~cosnotify.orb.poa.AdapterRegistry` of POAs, the request
:class:`~cosnotify.orb.dispatch.Dispatcher` and, once the RootPOA is first
asked for, the :class:`~cosnotify.orb.server.Server` listening on the
``-ORBendPoint`` addresses (port 0 picks a free port; the IORs carry the
real one). It also supplies the two object-reference hooks the CDR codecs
take: ``objref_factory(ior, repo_id)`` (an IOR received -> a stub of the
static type's registered class, bound to this ORB) and ``objref_encoder``
(a stub, an IOR, a servant -- implicitly activated -- or None -> the IOR
to marshal).

Options (omniORB's names where omniORB has one):

=================================== ==================================== =========
``-ORBendPoint giop:tcp:HOST:PORT``  listen there (repeatable)             ``giop:tcp::0``
``-ORBclientCallTimeOutPeriod MS``   reply timeout per call (0: none)      10000
``-ORBclientConnectTimeOutPeriod MS`` connect timeout (0: the OS's)         5000
``-ORBgiopMaxMsgSize N``             largest GIOP message, each way        16 MiB
``-ORBmaxNestingDepth N``            TypeCode/Any/value nesting limit      64
``-ORBthreadPerConnectionPolicy B``  1: thread per connection, 0: pool     1
``-ORBmaxServerThreadPoolSize N``    server worker threads at most         100
``-ORBmaxServerConnections N``       inbound connections at once (JacORB's half the soft
                                     ``max_server_connections``)           RLIMIT_NOFILE
=================================== ==================================== =========
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Sequence
from typing import Any

import attrs

from cosnotify.orb import registry as type_registry
from cosnotify.orb.cdr import Decoder, Encoder
from cosnotify.orb.cdr_core import DEFAULT_MAX_DEPTH, Codec
from cosnotify.orb.codesets import OUR_CODE_SETS, SERVICE_CONTEXT_ID, CodeSetContext, codec_for
from cosnotify.orb.connection import ConnectionPool
from cosnotify.orb.dispatch import Dispatcher
from cosnotify.orb.exceptions import BAD_PARAM, COMPLETED_NO, INITIALIZE, OMGVMCID
from cosnotify.orb.giop import DEFAULT_MAX_MESSAGE_SIZE
from cosnotify.orb.giop_messages import ServiceContext
from cosnotify.orb.interface import Object
from cosnotify.orb.ior import (
    IOR,
    NIL_IOR,
    AlternateAddressComponent,
    CodeSetsComponent,
    IIOPProfile,
)
from cosnotify.orb.objref import ObjectRef, targets_of
from cosnotify.orb.poa import INACTIVE, POA, AdapterRegistry
from cosnotify.orb.PortableServer import Servant
from cosnotify.orb.server import Server
from cosnotify.orb.typecode import TypeCode

__all__ = ["Endpoint", "ORBCore", "Settings", "parse_endpoint"]

OBJECT_ID = "IDL:omg.org/CORBA/Object:1.0"


@attrs.frozen
class Endpoint:
    """Where to listen (``host`` "" = every interface) and the host name IORs carry."""

    host: str
    port: int
    publish_host: str


def _default_host() -> str:
    try:
        address = socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"
    return address


def parse_endpoint(text: str) -> Endpoint:
    """``giop:tcp:HOST:PORT`` (HOST may be empty or ``[v6]``; PORT empty or 0: any free port)."""
    rest = text
    if rest.lower().startswith("giop:tcp:"):
        rest = rest[9:]
    elif rest.lower().startswith("giop:"):
        raise INITIALIZE(0, COMPLETED_NO, f"unsupported endpoint transport in {text!r}")
    host, sep, port_text = rest.rpartition(":")
    if not sep:
        host, port_text = rest, ""
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_text) if port_text else 0
    except ValueError:
        raise INITIALIZE(0, COMPLETED_NO, f"bad port in endpoint {text!r}") from None
    if not 0 <= port < 65536:
        raise INITIALIZE(0, COMPLETED_NO, f"bad port in endpoint {text!r}")
    return Endpoint(host, port, host or _default_host())


def _millis(value: str, name: str) -> float | None:
    try:
        millis = int(value)
    except ValueError:
        raise BAD_PARAM(0, COMPLETED_NO, f"-ORB{name} wants milliseconds, got {value!r}") from None
    return None if millis <= 0 else millis / 1000.0


def _int(value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise BAD_PARAM(0, COMPLETED_NO, f"-ORB{name} wants an integer, got {value!r}") from None


@attrs.frozen
class Settings:
    """The typed ORB options (see the module docstring)."""

    endpoints: tuple[Endpoint, ...] = ()
    call_timeout: float | None = 10.0
    connect_timeout: float | None = 5.0
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    max_depth: int = DEFAULT_MAX_DEPTH
    thread_per_connection: bool = True
    max_threads: int = 100
    max_connections: int | None = None  # None: server.default_max_connections()

    @classmethod
    def from_options(cls, endpoints: Sequence[str], extra: Sequence[tuple[str, str]]) -> Settings:
        values: dict[str, Any] = {"endpoints": tuple(parse_endpoint(e) for e in endpoints)}
        for name, value in extra:
            key = name.lower()
            if key == "clientcalltimeoutperiod":
                values["call_timeout"] = _millis(value, name)
            elif key == "clientconnecttimeoutperiod":
                values["connect_timeout"] = _millis(value, name)
            elif key == "giopmaxmsgsize":
                values["max_message_size"] = max(1024, _int(value, name))
            elif key == "maxnestingdepth":
                values["max_depth"] = max(1, _int(value, name))
            elif key == "threadperconnectionpolicy":
                values["thread_per_connection"] = value.strip().lower() not in ("0", "false", "no")
            elif key == "maxserverthreadpoolsize":
                values["max_threads"] = max(1, _int(value, name))
            elif key == "maxserverconnections":
                values["max_connections"] = max(1, _int(value, name))
        return cls(**values)


class ORBCore:
    """The machinery of one ORB (see the module docstring)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.call_timeout = settings.call_timeout
        self.max_depth = settings.max_depth
        self.pool = ConnectionPool(connect_timeout=settings.connect_timeout,
                                   max_message_size=settings.max_message_size)
        self.registry = AdapterRegistry(self)
        self.dispatcher = Dispatcher(self.registry, objref_factory=self.objref_factory,
                                     objref_encoder=self.objref_encoder,
                                     max_depth=settings.max_depth)
        self.server: Server | None = None
        self.addresses: list[tuple[str, int]] = []
        self._local: frozenset[tuple[str, int]] = frozenset()
        self._lock = threading.RLock()
        self._codecs: dict[tuple[Any, bool, tuple[int, int]], Codec] = {}
        self._contexts: dict[Any, tuple[ServiceContext, ...]] = {}
        self._shut_down = False

    # -- the server side --------------------------------------------------------------------
    def root_poa(self) -> POA:
        """The RootPOA, made (and the endpoints opened) on first use."""
        with self._lock:
            root = self.registry.root
            if root is None:
                self.start_server()
                root = self.registry.create_root()
            return root

    def start_server(self) -> None:
        with self._lock:
            if self.server is not None:
                return
            if self._shut_down:
                raise INITIALIZE(OMGVMCID | 1, COMPLETED_NO, "the ORB was shut down")
            settings = self.settings
            server = Server(self.dispatcher, self.codec, max_message_size=settings.max_message_size,
                            max_workers=settings.max_threads,
                            thread_per_connection=settings.thread_per_connection,
                            max_connections=settings.max_connections)
            endpoints = settings.endpoints or (parse_endpoint("giop:tcp::0"),)
            addresses: list[tuple[str, int]] = []
            local: set[tuple[str, int]] = set()
            try:
                for endpoint in endpoints:
                    port = server.listen(endpoint.host, endpoint.port)
                    addresses.append((endpoint.publish_host, port))
                    local.update({(endpoint.publish_host, port), (endpoint.host, port)})
            except OSError as exc:
                server.close()
                raise INITIALIZE(OMGVMCID | 1, COMPLETED_NO, f"cannot listen: {exc}") from exc
            self.server = server
            self.addresses = addresses
            self._local = frozenset(local)

    def make_ior(self, key: bytes, repo_id: str) -> IOR:
        if not self.addresses:
            self.start_server()
        (host, port), *others = self.addresses
        components: tuple[Any, ...] = (CodeSetsComponent(OUR_CODE_SETS),) + tuple(
            AlternateAddressComponent(h, p) for h, p in others)
        return IOR(repo_id, (IIOPProfile(host, port, key, (1, 2), components),))

    def make_reference(self, key: bytes, repo_id: str) -> Any:
        return self.objref_factory(self.make_ior(key, repo_id), repo_id)

    def local_key(self, obj: Any) -> bytes | None:
        """The object key if ``obj`` (a stub or an IOR) names an object of this ORB."""
        if not self._local:
            return None
        ior = obj if isinstance(obj, IOR) else getattr(getattr(obj, "_NP_delegate", None), "ior", None)
        if not isinstance(ior, IOR):
            return None
        found = targets_of(ior)
        if found and (found[0].host, found[0].port) in self._local:
            return found[0].key
        return None

    # -- the codec hooks --------------------------------------------------------------------
    def objref_factory(self, ior: IOR, repo_id: str) -> Any:
        if not ior.profiles:
            return None  # the nil reference
        stub = type_registry.lookup_stub(repo_id) if repo_id and repo_id != OBJECT_ID else None
        return (stub or Object)(ObjectRef(self, ior))

    def objref_encoder(self, value: Any) -> IOR:
        if value is None:
            return NIL_IOR
        ior = getattr(getattr(value, "_NP_delegate", None), "ior", None)
        if isinstance(ior, IOR):
            return ior
        if isinstance(value, IOR):
            return value
        if isinstance(value, Servant):
            home = self.registry.home_of(value)
            poa = home if home is not None and home.unique_id else self.root_poa()
            reference = poa.servant_to_reference(value)
            found: IOR = reference._NP_delegate.ior
            return found
        raise BAD_PARAM(OMGVMCID | 41, COMPLETED_NO, f"cannot marshal {value!r} as an object reference")

    def codec(self, tcs: CodeSetContext | None, little_endian: bool, version: tuple[int, int]) -> Codec:
        key = (tcs, little_endian, version)
        found = self._codecs.get(key)
        if found is None:
            found = self._codecs[key] = codec_for(tcs, little_endian, version)
        return found

    def codeset_contexts(self, tcs: CodeSetContext) -> tuple[ServiceContext, ...]:
        found = self._contexts.get(tcs)
        if found is None:
            found = self._contexts[tcs] = (ServiceContext(SERVICE_CONTEXT_ID, tcs.encode(True)),)
        return found

    def copy_values(self, types: Sequence[TypeCode], values: Sequence[Any]) -> tuple[Any, ...]:
        """``values`` marshalled and unmarshalled again (servants become references)."""
        codec = self.codec(CodeSetContext(0x05010001, 0x00010109), True, (1, 2))
        encoder = Encoder(codec, objref_encoder=self.objref_encoder, max_depth=self.max_depth)
        for tc, value in zip(types, values):
            encoder.write(tc, value)
        decoder = Decoder(encoder.getvalue(), codec, objref_factory=self.objref_factory,
                          max_depth=self.max_depth)
        return tuple(decoder.read(tc) for tc in types)

    # -- shutting down ----------------------------------------------------------------------
    @property
    def shut_down(self) -> bool:
        return self._shut_down

    def shutdown(self, wait_for_completion: bool) -> None:
        """Refuse new requests (TRANSIENT), let running ones finish if asked, close everything."""
        with self._lock:
            if self._shut_down:
                return
            self._shut_down = True
            server = self.server
            root = self.registry.root
        if server is not None:
            server.stop_listening()
        managers = {id(p.the_POAManager): p.the_POAManager for p in _all_poas(root)}
        for manager in managers.values():
            if manager.get_state() is not INACTIVE:  # an inactive one refuses new requests anyway
                manager.discard_requests(False)
        if server is not None:
            if wait_for_completion:
                server.wait_idle()
            server.close()
        if root is not None:
            root.destroy(True, False)
        self.pool.close()


def _all_poas(root: POA | None) -> list[POA]:
    if root is None:
        return []
    found = [root]
    for child in root.the_children:
        found.extend(_all_poas(child))
    return found
