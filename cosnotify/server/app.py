"""The notification server: the in-process service behind omniORB, bound in naming.

Strategy: :class:`NotificationServer` puts one core ``EventChannelFactory``
behind one POA of omniORB's: a child POA (PERSISTENT, USER_ID,
USE_SERVANT_MANAGER, with a POA manager of its own) whose servants are made
on the first request from object ids (``objects.ObjectMap``). omniORB allows
one ORB per process, so the server either owns it -- ``cosnotify serve``
initialises it with :func:`orb_arguments` and destroys it on :meth:`stop` --
or is hosted in the ORB an application already has (:func:`host`, or an ORB
initialised before the server is made), under the application's POA.

On start it binds the factory's reference under ``name`` in a naming
service: the embedded one (``naming.py``) answering at
``corbaloc::HOST:PORT/NameService``, as omniNames does, or the external one
``naming_url`` names. Remote consumers and suppliers are called through
omniORB with the call timeout set on each reference the server receives.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import resource
import shutil
import threading
from pathlib import Path
from typing import Any, Self

import attrs
import omniORB
from omniORB import CORBA, PortableServer

import CosNaming
import CosNotifyChannelAdmin as CA

from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.service import ServiceConfig
from cosnotify.corba.addresses import iiop_address
from cosnotify.protocols.serve import FrontEndConfig, FrontEnds
from cosnotify.server import naming as embedded_naming
from cosnotify.server.objects import ObjectMap
from cosnotify.server.servants import ServantFactory
from cosnotify.store.interface import StoreError

__all__ = ["MAX_MESSAGE_SIZE", "NotificationServer", "ServerConfig", "host", "orb_arguments"]

log = logging.getLogger("cosnotify.server")

#: The largest GIOP message accepted or sent (omniORB's giopMaxMsgSize; its default is 2 MiB).
MAX_MESSAGE_SIZE = 16 * 1024 * 1024
#: Connections to one client process the channel may use at once (omniORB's default is 5;
#: a client's lane holds up to 8 workers, each pushing on a connection of its own).
CONNECTIONS_PER_CLIENT = 16


def _positive(instance: Any, attribute: Any, value: float) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{attribute.name} must be a positive number of seconds, not {value!r}")


def _optional_count(instance: Any, attribute: Any, value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{attribute.name} must be a positive integer or None, not {value!r}")


def _a_name(instance: Any, attribute: Any, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{attribute.name} must be a name, not {value!r}")


def _not_the_factory_name(instance: Any, attribute: Any, value: object) -> None:
    _a_name(instance, attribute, value)
    # With typed IDL, one binding would replace the other (review 108); a store's IDL
    # is known only once it is open (checked again before the names are bound).
    if instance.idl and value == instance.name:
        raise ValueError(f"the typed factory's name {value!r} is the factory's: each is "
                         f"bound under its own name")


@attrs.frozen
class ServerConfig:
    """How ``cosnotify serve`` runs (see docs/public-api.md section 4)."""

    host: str = "127.0.0.1"
    port: int = 2809
    naming_url: str | None = None          # None: the embedded NameService
    name: str = attrs.field(default="NotifyEventChannelFactory", validator=_a_name)
    ior_file: Path | None = None
    #: Seconds each call to a remote consumer or supplier may take (set on each
    #: reference); connecting may take at most 5 s of it when the server owns the ORB.
    call_timeout: float = attrs.field(default=10.0, validator=_positive)
    #: Seconds each call to a filter a client implements may take (remote.py).
    filter_timeout: float = attrs.field(default=1.0, validator=_positive)
    #: Connections past which omniORB serves connections from its thread pool
    #: rather than a thread each (None: omniORB's default, 10000). docs/server.md.
    max_connections: int | None = attrs.field(default=None, validator=_optional_count)
    service: ServiceConfig = attrs.Factory(ServiceConfig)
    #: The SQLite store (``--db``): Persistent reliability, and the topology back at
    #: the next start (docs/persistence.md). None: nothing outlives the process.
    db: Path | None = None
    #: The most the store's file may grow to (bytes); past it persistent pushes get
    #: NO_RESOURCES. None: the disk is the limit.
    db_max_bytes: int | None = attrs.field(default=None, validator=_optional_count)
    #: SQLite's synchronous level for what must be durable: "FULL" (fsync: survives a
    #: power loss) or "NORMAL" (survives a killed process, not a power loss; faster).
    db_sync: str = attrs.field(default="FULL", validator=attrs.validators.in_(("FULL", "NORMAL")))
    #: User IDL for typed channels (``--idl``, with ``--include`` directories): the
    #: factory is then also a TypedEventChannelFactory, bound as ``typed_name``
    #: (docs/typed.md). With ``db`` the store keeps the IDL too.
    idl: tuple[Path, ...] = ()
    include: tuple[Path, ...] = ()
    typed_name: str = attrs.field(default="TypedNotifyEventChannelFactory",
                                  validator=_not_the_factory_name)
    #: The seed protocols' front ends (``--elvin``, ``--eventer``, ``--eventheap``,
    #: ``--oes``; docs/protocols.md): none by default.
    front_ends: tuple[FrontEndConfig, ...] = ()
    #: This server's id where a protocol names one (Eventer's ``EventId.server``).
    server_id: int = 0


def _bind_back(context: Any, bound: list[tuple[list[Any], Any]]) -> None:
    """Undo :meth:`NotificationServer._bind_names` after a later failure: each name
    bound to what it named before, or unbound (a failure doing so is logged)."""
    for name, previous in reversed(bound):
        try:
            if previous is None:
                context.unbind(name)
            else:
                context.rebind(name, previous)
        except (CORBA.SystemException, CORBA.UserException) as exc:
            log.warning("could not put back the binding of %r: %s", name[0].id, exc)


def _millis(seconds: float) -> str:
    return str(max(1, round(seconds * 1000)))


def orb_arguments(config: ServerConfig) -> list[str]:
    """The omniORB options a server that owns its ORB starts with (docs/server.md)."""
    host = f"[{config.host}]" if ":" in config.host else config.host
    argv = ["-ORBendPoint", f"giop:tcp:{host}:{config.port}",
            "-ORBclientCallTimeOutPeriod", _millis(config.call_timeout),
            "-ORBclientConnectTimeOutPeriod", _millis(min(config.call_timeout, 5.0)),
            "-ORBmaxGIOPConnectionPerServer", str(CONNECTIONS_PER_CLIENT),
            "-ORBconnectionWatchImmediate", "1",
            "-ORBgiopMaxMsgSize", str(MAX_MESSAGE_SIZE),
            "-ORBscanGranularity", "1"]
    if config.max_connections is not None:
        limit = config.max_connections
        argv += ["-ORBthreadPerConnectionUpperLimit", str(limit),
                 "-ORBthreadPerConnectionLowerLimit", str(max(1, limit * 9 // 10))]
    return argv


def _raise_open_files_limit() -> None:
    """Soft RLIMIT_NOFILE up to the hard limit: omniORB has no cap on connections of its own."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError) as exc:
            log.debug("cannot raise the open-files limit from %s: %s", soft, exc)


class NotificationServer:
    """One POA, one EventChannelFactory, bound in a naming service.

    With ``orb=None`` the server initialises the process's ORB with
    :func:`orb_arguments` and owns it -- unless the process has one already,
    which it then shares (omniORB allows one per process; the endpoint is
    then that ORB's). ``poa`` is the parent of the server's own POA (default:
    the RootPOA).
    """

    def __init__(self, config: ServerConfig | None = None, orb: Any = None,
                 poa: Any = None, *, bind: bool = True) -> None:
        self.config = config = config or ServerConfig()
        self._owns_orb = orb is None and omniORB.orb is None
        if orb is None:
            if self._owns_orb:
                _raise_open_files_limit()
            orb = CORBA.ORB_init(orb_arguments(config), CORBA.ORB_ID)
        self.orb = orb
        self._bind = bind
        self._store: Any = None
        self.factory: Any = None
        try:
            self._store = _open_store(config.db, config.db_max_bytes, config.db_sync)
            if config.idl or _keeps_idl(self._store):
                from cosnotify.typed.channel import TypedEventChannelFactory

                # The IDL a store keeps is loaded with it: --db alone brings typed
                # channels back (docs/typed.md).
                self.factory = TypedEventChannelFactory(config.idl, config.include,
                                                        config=config.service,
                                                        store=self._store, restore=False)
            else:
                self.factory = EventChannelFactory(config.service, store=self._store,
                                                   restore=False)
            self.servants = ServantFactory(config.filter_timeout, self.factory.service.submit,
                                           config.call_timeout, self.factory.service.lane_for)
            # A client process's consumers and suppliers share a bounded lane of workers.
            self.factory.service.client_key = self.client_key
            parent = poa if poa is not None else orb.resolve_initial_references("RootPOA")
            parent._get_the_POAManager().activate()
            self._poa = parent.create_POA(_free_poa_name(parent), None, [
                parent.create_lifespan_policy(PortableServer.PERSISTENT),
                parent.create_id_assignment_policy(PortableServer.USER_ID),
                parent.create_request_processing_policy(PortableServer.USE_SERVANT_MANAGER)])
            # omniORB: the manager must be active before set_servant_manager (docs/orb.md).
            self._poa._get_the_POAManager().activate()
            self.objects = ObjectMap(self.factory, self._poa, self.servants.servant_for)
            self.servants.objects = self.objects
            self._serve_state(parent)
            # Servants of destroyed channels, admins and proxies are deactivated at once.
            self.factory.service.destroyed_hook = self.objects.forget_core
            if self._store is not None:
                # The same ids, so the same object keys: old references work again.
                self.factory.restore(self.servants.guarded_filter)
            # Requests that came meanwhile waited; they find the topology complete
            # (not OBJECT_NOT_EXIST, which would tell a client its object is gone).
            self.objects.open()
        except BaseException:
            if self.factory is not None:
                self.factory.close(wait=False)
            self._close_store()
            self._release_orb()
            raise
        self.factory_ref = self.servants.to_reference(self.factory)
        self.naming: embedded_naming.NameService | None = None
        self.front_ends: FrontEnds | None = None
        self._stopped = threading.Event()
        self._closed = False
        self._lock = threading.Lock()
        self._hosted_key = ""
        # TAO's NotifyExt: destroy() on the factory stops the server, and callbacks
        # registered before a restart are told the factory's reference (docs/server.md).
        self.factory.on_destroy = self.request_stop
        if self._store is not None:
            self._send_reconnect()

    def _serve_state(self, poa: Any) -> None:
        """The factory is also a TupleSpaceFactory and a TreeFactory (idl/CosNotifyMonitor.idl):
        their servants, in ``poa`` (transient: a client asks the factory again after a
        restart; docs/history.md)."""
        from cosnotify.oes.corba import TreeFactoryServant
        from cosnotify.tuplespace.corba import TupleSpaceFactoryServant

        self.tuple_spaces = TupleSpaceFactoryServant(self._channel, _connection_watch(), poa)
        self.trees = TreeFactoryServant(self.factory, self.config.call_timeout, poa)
        self.servants.extensions.update(get_tuple_space=self.tuple_spaces.get_tuple_space,
                                        get_tree=self.trees.get_tree)

    def _channel(self, channel_id: int) -> Any:
        """Channel ``channel_id`` of any kind, or ChannelNotFound."""
        found = self.factory._find_channel(channel_id)
        if found is None:
            raise CA.ChannelNotFound()
        return found

    def _send_reconnect(self) -> None:
        """Call ``reconnect(factory)`` on each restored ReconnectionCallback, on the workers."""
        callbacks = self.factory.reconnection_registry.callbacks()
        if not callbacks:
            return
        for callback in callbacks.values():
            if isinstance(callback, CORBA.Object):
                omniORB.setClientCallTimeout(callback, _timeout_ms(self.config.call_timeout))
        log.info("telling %d reconnection callbacks the factory's reference", len(callbacks))
        factory, reference = self.factory, self.factory_ref
        self.factory.service.submit(lambda: factory.send_reconnect(reference))

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> Self:
        """Serve: bind the factory in naming and write the IOR file, if asked.

        If that fails, the server is stopped (its port released if it owns the
        ORB) and the error raised.
        """
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> Self:
        config = self.config
        if self.config.port and self._owns_orb is False and self.endpoint[1] != config.port:
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO,
                                  f"this process's ORB listens on {self.endpoint}, not port "
                                  f"{config.port}: omniORB allows one ORB per process")
        context: Any = None
        if self._bind:
            if config.naming_url is None:
                self.naming = embedded_naming.serve(self.orb)
                context = self.naming.root
            else:
                context = self.orb.string_to_object(config.naming_url)
                if context is not None:  # _narrow may ask; it makes a new reference
                    omniORB.setClientCallTimeout(context, _timeout_ms(config.call_timeout))
            context = context._narrow(CosNaming.NamingContext) if context is not None else None
            if context is None:
                raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO,
                                      f"{config.naming_url!r} is not a naming context")
            omniORB.setClientCallTimeout(context, _timeout_ms(config.call_timeout))
        if config.front_ends:
            front_ends = FrontEnds(config.front_ends, self.factory, config.server_id,
                                   self._store)
            with self._lock:  # a stop() meanwhile (another thread) would not close them
                stopped = self._closed
                if not stopped:
                    self.front_ends = front_ends
                    self.factory.front_ends = front_ends  # read by cosnotify.stats
            if stopped:
                front_ends.close()
                raise CORBA.BAD_INV_ORDER(0, CORBA.COMPLETED_NO,
                                          "the server was stopped while it started")
        # What can fail comes first: the IOR file is written beside its place (a
        # symlink's target, which is what changes), then the names are bound, and then
        # the file is put in place; if that fails, the names are bound back to what
        # they were. A start that fails leaves the naming service as it found it
        # (reviews 108, 111: the name, in an external naming service, pointed at a
        # server that never came up, in place of the one bound before).
        staged = target = None
        if config.ior_file is not None:
            target = Path(os.path.realpath(config.ior_file))
            if target.is_dir():
                raise IsADirectoryError(f"--ior-file {config.ior_file} is a directory")
            staged = target.with_name(f".{target.name}.{os.getpid()}")
        bound: list[tuple[list[Any], Any]] = []
        try:
            if staged is not None and target is not None:  # in the try: never left behind
                staged.write_text(self.ior + "\n")
                if target.exists():
                    shutil.copymode(target, staged)
            if self._bind:
                self._bind_names(context, bound)
            if staged is not None and target is not None:
                os.replace(staged, target)
        except BaseException:
            _bind_back(context, bound)
            raise
        finally:
            if staged is not None:
                staged.unlink(missing_ok=True)
        return self

    def _bind_names(self, context: Any, bound: list[tuple[list[Any], Any]]) -> None:
        """Bind the factories' names, appending each ``(name, what it named before)``
        to ``bound`` before it is bound (None: nothing), for :func:`_bind_back`."""
        config = self.config
        typed = getattr(self.factory, "typed", None)
        if typed is not None and config.typed_name == config.name:  # typed IDL from --db
            raise ValueError(f"the typed factory's name {config.name!r} is the factory's: "
                             "each is bound under its own name")
        names = [(config.name, self.factory_ref)]
        if typed is not None:
            names.append((config.typed_name, self.servants.to_reference(typed)))
        for text, reference in names:
            name = [CosNaming.NameComponent(text, "")]
            try:
                previous = context.resolve(name)
            except CORBA.UserException:  # NotFound and the like: nothing to put back
                previous = None
            bound.append((name, previous))
            context.rebind(name, reference)
        log.info("EventChannelFactory bound as %r; naming at %s", config.name,
                 self.naming_url)
        if typed is not None:
            log.info("TypedEventChannelFactory bound as %r (%s)", config.typed_name,
                     ", ".join(i.repo_id for i in self.factory.interfaces.interfaces()))

    def run(self) -> None:
        """Serve until :meth:`stop` is called (from another thread or a signal).

        The wait wakes once a second: a SIGTERM that the kernel hands to one of
        omniORB's threads only flags Python's handler, which then runs when the
        main thread next runs Python code -- a wait without a timeout would
        never let it (seen: ``serve`` not stopping on SIGTERM under load).
        """
        while not self._stopped.wait(1.0):
            pass

    def request_stop(self) -> None:
        """Make :meth:`run` return (safe in a signal handler); call :meth:`stop` after it."""
        self._stopped.set()

    def stop(self, *, exiting: bool = False) -> None:
        """Destroy the channels and the server's POA; a server that owns the ORB destroys it
        -- or, ``exiting`` (the process ends right after: ``cosnotify serve``), only shuts
        it down: omniORBpy's ``destroy()`` shuts its thread cache down while omniORB's
        threads may still call into Python as connections close (docs/server.md).

        New requests are refused first (``TRANSIENT``: the server is going), so
        no channel is made while the others are destroyed. Safe from an upcall
        (a servant's operation): then it does not wait for the requests in progress.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._stopped.set()
        try:
            try:
                self._poa._get_the_POAManager().discard_requests(False)
            except (CORBA.SystemException, PortableServer.POAManager.AdapterInactive):
                pass
            if self.front_ends is not None:  # their clients go before the channels
                self.front_ends.close()
            self.factory.close(wait=True)
            self.tuple_spaces.close()
            self.trees.close()
            if self.naming is not None:
                self.naming.release()
                self.naming = None
            try:
                self._poa.destroy(True, True)
            except CORBA.BAD_INV_ORDER:  # called from an upcall: waiting would deadlock
                self._poa.destroy(True, False)
        finally:
            _hosted.pop(self._hosted_key, None)
            self._close_store()
            self._release_orb(destroy=not exiting)

    def _close_store(self) -> None:
        store, self._store = getattr(self, "_store", None), None
        if store is not None:
            try:
                store.close()
            except StoreError as exc:
                log.error("closing the store: %s", exc)

    def _release_orb(self, destroy: bool = True) -> None:
        if self._owns_orb:
            self._owns_orb = False
            try:
                self.orb.shutdown(True)
            except CORBA.BAD_INV_ORDER:  # from an upcall: the ORB stops once it returns
                self.orb.shutdown(False)
                return
            if destroy:
                self.orb.destroy()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- clients -----------------------------------------------------------------------------
    def client_key(self, reference: Any) -> tuple[str, int] | str | None:
        """The remote client behind a reference: its first IIOP address (one process).

        A reference whose IIOP profile has no TCP port (a client listening on a
        unix socket or SSL only) is its own key: its process cannot be told.
        """
        if not isinstance(reference, CORBA.Object):
            return None  # an in-process object
        found = iiop_address(self.orb, reference)
        if found is None or found[1] == 0:
            return str(self.orb.object_to_string(reference))
        return found

    # -- addresses ---------------------------------------------------------------------------
    @property
    def ior(self) -> str:
        return str(self.orb.object_to_string(self.factory_ref))

    @property
    def endpoint(self) -> tuple[str, int]:
        """(host, port) actually listened on (port 0 in the config picks a free one)."""
        found = iiop_address(self.orb, self.factory_ref)
        if found is None:
            raise CORBA.INTERNAL(0, CORBA.COMPLETED_NO, "the factory reference has no IIOP address")
        return found

    @property
    def naming_url(self) -> str:
        if self.config.naming_url is not None:
            return self.config.naming_url
        host, port = self.endpoint
        return f"corbaloc::{_url_host(host)}:{port}/NameService"

    @property
    def factory_url(self) -> str:
        """``corbaname::HOST:PORT#NAME``: what C++ and Java clients resolve.

        With an external naming service named by an IOR, no corbaname URL can
        point at it: the factory's own IOR then.
        """
        host, port = self.endpoint
        naming = self.config.naming_url
        # The one component the factory is bound as, in a URL's stringified-name form
        # ("Notify.Factory" is one id, not an id and a kind: review 108).
        name = embedded_naming.url_escape(embedded_naming.to_string([(self.config.name, "")]))
        if naming is None:
            return f"corbaname::{_url_host(host)}:{port}#{name}"
        if naming.startswith("corbaloc:"):
            return naming.replace("corbaloc:", "corbaname:", 1) + f"#{name}"
        if naming.startswith("corbaname:") and "#" not in naming:
            return f"{naming}#{name}"
        return self.ior


_watch: Any = None
_watch_lock = threading.Lock()


def _connection_watch() -> Any:
    """The process's one ConnectionWatch (omniORB has one connection-info function):
    a tuple-space wait ends when its client's connection does (cosnotify/tuplespace).

    Registered once per process and never replaced or removed: omniORBpy deletes the
    hook it replaces at once, while omniORB's threads may be inside it (a SIGSEGV in
    a process whose servers came and went, when each start registered it again)."""
    global _watch
    from cosnotify.tuplespace.corba import ConnectionWatch

    with _watch_lock:
        if _watch is None:
            _watch = ConnectionWatch().install()
        return _watch


def _keeps_idl(store: Any) -> bool:
    """Does ``store`` keep IDL for typed channels (cosnotify/typed/channel.py)?"""
    if store is None:
        return False
    from cosnotify.typed.channel import stored_sources

    return bool(stored_sources(store))


def _open_store(path: Path | None, max_bytes: int | None, sync: str) -> Any:
    """The SQLite store at ``path`` (StoreError, naming the file, if it cannot be used)."""
    if path is None:
        return None
    from cosnotify.store.sqlite import SQLiteStore

    return SQLiteStore(path, max_bytes=max_bytes, synchronous=sync)


def _free_poa_name(parent: Any) -> str:
    """``cosnotify``, or ``cosnotify-N`` if another server of this process has that name.

    The first server's POA keeps the stable name its persistent object keys need.
    """
    for serial in itertools.count(1):
        name = "cosnotify" if serial == 1 else f"cosnotify-{serial}"
        try:
            parent.find_POA(name, False)
        except PortableServer.POA.AdapterNonExistent:
            return name
    raise AssertionError("unreachable")


def _timeout_ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def host(poa: Any, service: ServiceConfig | None = None, *, call_timeout: float = 10.0,
         filter_timeout: float = 1.0) -> Any:
    """Host the whole service in an application's own ORB, under ``poa``.

    Creates the server's POA as a child of ``poa`` and returns the
    EventChannelFactory's object reference; nothing is bound in naming and
    the application's ORB options stay as they are. The service lives until
    the application destroys its ORB (or calls ``stop()`` on the
    :class:`NotificationServer` that :func:`hosted_server` returns).
    """
    config = ServerConfig(port=0, call_timeout=call_timeout, filter_timeout=filter_timeout,
                          service=service or ServiceConfig())
    orb = omniORB.orb
    if orb is None:
        raise CORBA.BAD_INV_ORDER(0, CORBA.COMPLETED_NO, "call CORBA.ORB_init first")
    server = NotificationServer(config, orb, poa, bind=False).start()
    server._hosted_key = server.ior
    _hosted[server.ior] = server
    return server.factory_ref


_hosted: dict[str, NotificationServer] = {}


def hosted_server(factory: Any) -> NotificationServer:
    """The server :func:`host` made for ``factory`` (its returned reference), until it stops."""
    return _hosted[omniORB.orb.object_to_string(factory)]
