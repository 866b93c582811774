"""The notification server: the in-process service behind an ORB, bound in naming.

Strategy: :class:`NotificationServer` owns one ORB listening on one endpoint,
one PERSISTENT/USER_ID POA named ``cosnotify`` whose servants are made on
demand from object ids (``objects.ObjectMap``), and the core
``EventChannelFactory``. On start it binds the factory's reference under
``name`` in a naming service: an embedded one answering at
``corbaloc::HOST:PORT/NameService`` (as omniNames does), or the external one
``naming_url`` names. Remote consumers and suppliers are called through the
ORB, whose per-call timeout (``call_timeout``) keeps a dead client from
holding a worker longer than that.
"""

from __future__ import annotations

import itertools
import logging
import math
import threading
from pathlib import Path
from typing import Any, Self

import attrs

from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.service import ServiceConfig
from cosnotify.orb import CORBA, PortableServer
from cosnotify.orb import naming as embedded_naming
from cosnotify.orb.objref import targets_of
from cosnotify.server.objects import ObjectMap
from cosnotify.server.servants import ServantFactory
from cosnotify.stubs import CosNaming

__all__ = ["NotificationServer", "ServerConfig"]

log = logging.getLogger("cosnotify.server")
_orb_ids = itertools.count(1)


def _positive(instance: Any, attribute: Any, value: float) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{attribute.name} must be a positive number of seconds, not {value!r}")


def _optional_count(instance: Any, attribute: Any, value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{attribute.name} must be a positive integer or None, not {value!r}")


@attrs.frozen
class ServerConfig:
    """How ``cosnotify serve`` runs (see docs/public-api.md section 4)."""

    host: str = "127.0.0.1"
    port: int = 2809
    naming_url: str | None = None          # None: the embedded NameService
    name: str = "NotifyEventChannelFactory"
    ior_file: Path | None = None
    #: Seconds each call to a remote consumer or supplier may take (connecting
    #: included, at most 5 s of it).
    call_timeout: float = attrs.field(default=10.0, validator=_positive)
    #: Seconds each call to a filter a client implements may take (remote.py).
    filter_timeout: float = attrs.field(default=1.0, validator=_positive)
    #: Client connections served at once (None: half the soft RLIMIT_NOFILE); at
    #: the limit the idlest is closed with CloseConnection (docs/orb.md).
    max_connections: int | None = attrs.field(default=None, validator=_optional_count)
    service: ServiceConfig = attrs.Factory(ServiceConfig)


def client_key(reference: Any) -> tuple[str, int] | None:
    """The remote client behind a reference: its first IIOP address (one process)."""
    ior = getattr(getattr(reference, "_NP_delegate", None), "ior", None)
    if ior is None:
        return None  # an in-process object
    found = targets_of(ior)
    return (found[0].host, found[0].port) if found else None


class NotificationServer:
    """One ORB, one POA, one EventChannelFactory, bound in a naming service."""

    def __init__(self, config: ServerConfig | None = None) -> None:
        self.config = config = config or ServerConfig()
        argv = ["-ORBendPoint", f"giop:tcp:{config.host}:{config.port}",
                "-ORBclientCallTimeOutPeriod", str(max(1, round(config.call_timeout * 1000))),
                "-ORBclientConnectTimeOutPeriod",
                str(max(1, round(min(config.call_timeout, 5.0) * 1000)))]
        if config.max_connections is not None:
            argv += ["-ORBmaxServerConnections", str(config.max_connections)]
        self.orb = CORBA.ORB_init(argv, f"cosnotify-server-{next(_orb_ids)}")
        root = self.orb.resolve_initial_references("RootPOA")
        self._poa = root.create_POA("cosnotify", root.the_POAManager, [
            root.create_lifespan_policy(PortableServer.PERSISTENT),
            root.create_id_assignment_policy(PortableServer.USER_ID)])
        self.factory = EventChannelFactory(config.service)
        self.servants = ServantFactory(config.filter_timeout, self.factory.service.submit)
        self.objects = ObjectMap(self.factory, self._poa, self.servants.servant_for)
        self.servants.objects = self.objects
        # Servants of destroyed channels, admins and proxies are deactivated at once.
        self.factory.service.destroyed_hook = self.objects.forget_core
        # A client process's consumers and suppliers share a bounded lane of workers.
        self.factory.service.client_key = client_key
        root.the_POAManager.activate()
        self.factory_ref = self.servants.to_reference(self.factory)
        self.naming: Any = None
        self._naming_context: Any = None
        self._stopped = threading.Event()

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> Self:
        """Serve: bind the factory in naming and write the IOR file, if asked.

        If that fails, the server is stopped (its port released) and the error raised.
        """
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> Self:
        config = self.config
        if config.naming_url is None:
            self.naming = embedded_naming.serve(self.orb)
            context = self.orb.resolve_initial_references("NameService")
        else:
            context = self.orb.string_to_object(config.naming_url)
        context = CosNaming.NamingContext._narrow(context)
        if context is None:
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO,
                                  f"{config.naming_url!r} is not a naming context")
        context.rebind([CosNaming.NameComponent(config.name, "")], self.factory_ref)
        self._naming_context = context
        if config.ior_file is not None:
            config.ior_file.write_text(self.ior + "\n")
        log.info("EventChannelFactory bound as %r; naming at %s", config.name, self.naming_url)
        return self

    def run(self) -> None:
        """Serve until :meth:`stop` is called (from another thread or a signal)."""
        self._stopped.wait()

    def stop(self) -> None:
        """Destroy the channels, stop the ORB and release its port."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        self.factory.close(wait=True)
        try:
            self.orb.shutdown(True)
        finally:
            self.orb.destroy()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses ---------------------------------------------------------------------------
    @property
    def ior(self) -> str:
        return str(self.orb.object_to_string(self.factory_ref))

    @property
    def endpoint(self) -> tuple[str, int]:
        """(host, port) actually listened on (port 0 in the config picks a free one)."""
        profile = self.factory_ref._NP_delegate.ior.iiop_profile()
        return profile.host, profile.port

    @property
    def naming_url(self) -> str:
        if self.config.naming_url is not None:
            return self.config.naming_url
        host, port = self.endpoint
        return f"corbaloc::{host}:{port}/NameService"

    @property
    def factory_url(self) -> str:
        """``corbaname::HOST:PORT#NAME``: what C++ and Java clients resolve."""
        host, port = self.endpoint
        if self.config.naming_url is not None:
            return self.config.naming_url.replace("corbaloc:", "corbaname:", 1) + \
                f"#{self.config.name}"
        return f"corbaname::{host}:{port}#{self.config.name}"

