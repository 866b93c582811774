"""Object identity for the server: core objects <-> object ids <-> references.

Strategy: every core object gets an object id in one PERSISTENT, USER_ID
POA, and references are made from ids without activating anything
(``create_reference_with_id``). Servants are created on the first request
by a servant activator that turns the id back into the core object. Ids of
numbered objects are their spec identities, so they name the same object
after a restart once the store restores the topology:

=========================  ====================================
``factory``                the EventChannelFactory
``typed``                  the TypedEventChannelFactory (``serve --idl``)
``ff``                     the default FilterFactory
``ch/C``                   channel C
``ch/C/ca/A``              consumer admin A (``sa`` for supplier admins)
``ch/C/ca/A/P``            proxy P of that admin
``ch/C/sa/A/P/typed``      the object a typed proxy's ``get_typed_consumer``
                           or ``get_typed_supplier`` gives (cosnotify/typed)
``ch/C/history``           channel C's CosNotifyHistory::History (history/corba.py)
``flt/N``                  filter or mapping filter N of the default
                           FilterFactory, with a store (channel/topology.py)
``obj/B/N``                objects without a spec id (Event Service admins
                           and proxies, filters, mapping filters, callbacks);
                           B is a token of this server's life
=========================  ====================================

Anonymous objects are held weakly -- once the core drops one, its id stops
resolving and requests get ``OBJECT_NOT_EXIST`` -- except those only a remote
client holds (filters made by the FilterFactory), which are kept until their
``destroy``. A destroyed object's id stops resolving at once, and the core
reports each destroyed channel, admin and proxy (``Service.destroyed_hook``)
so that its servant is deactivated: servants do not pile up as clients
create and destroy objects.
"""

from __future__ import annotations

import itertools
import logging
import secrets
import threading
import weakref
from collections.abc import Callable
from typing import Any

import PortableServer__POA
from omniORB import CORBA, PortableServer

import CosNotifyChannelAdmin as CA

from cosnotify.channel.admin import ConsumerAdmin, SupplierAdmin
from cosnotify.channel.channel import EventChannel
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.proxy import ProxyBase
from cosnotify.channel.supplier_proxy import ProxySupplier

__all__ = ["ObjectMap", "destroyed"]

log = logging.getLogger("cosnotify.server.objects")

#: Seconds a request waits for the server to finish starting (restoring its topology).
_OPEN_TIMEOUT = 60.0


class ObjectMap:
    """Maps the core objects of one factory to ids and references in one POA."""

    def __init__(self, factory: EventChannelFactory, poa: Any,
                 servant_for: Callable[[Any, bytes], Any]) -> None:
        self._factory = factory
        self._poa = poa
        self._servant_for = servant_for
        self._lock = threading.Lock()
        self._anonymous: weakref.WeakValueDictionary[bytes, Any] = weakref.WeakValueDictionary()
        self._anonymous_ids: weakref.WeakKeyDictionary[Any, bytes] = weakref.WeakKeyDictionary()
        self._kept: dict[bytes, Any] = {}   # held for remote clients until destroy()
        self._serial = itertools.count(1)
        # Anonymous ids carry a token of this server's life, so a reference kept
        # from before a restart never names an object made after it.
        self._boot = secrets.token_hex(4)
        self._open = threading.Event()
        self._activator = _Activator(self._incarnate)
        poa.set_servant_manager(self._activator)

    def open(self) -> None:
        """Serve requests: until then (the topology being restored) they wait."""
        self._open.set()

    @property
    def active_servants(self) -> int:
        """Servants active in the POA: made on demand, less those deactivated on destroy."""
        return self._activator.active

    # -- core object -> id -> reference --------------------------------------------------
    def oid(self, core: Any, keep: bool = False) -> bytes:
        """The object id of ``core`` (assigned on first use for anonymous objects).

        With ``keep``, the map holds ``core`` until :meth:`release` (its destroy).
        """
        path = _spec_path(core, self._factory)
        if path is not None:
            return path.encode()
        with self._lock:
            found = self._anonymous_ids.get(core)
            if found is None:
                found = f"obj/{self._boot}/{next(self._serial)}".encode()
                self._anonymous_ids[core] = found
                self._anonymous[found] = core
            if keep:
                self._kept[found] = core
            return found

    def reference(self, core: Any, repo_id: str, keep: bool = False) -> Any:
        """An object reference for ``core``; nothing is activated until it is used."""
        return self._poa.create_reference_with_id(self.oid(core, keep), repo_id)

    def existing_oid(self, core: Any) -> bytes | None:
        """The id ``core`` has, without assigning one to an anonymous object."""
        path = _spec_path(core, self._factory)
        if path is not None:
            return path.encode()
        with self._lock:
            return self._anonymous_ids.get(core)

    def forget_core(self, core: Any) -> None:
        """``core`` was destroyed: deactivate its servant, if it has one."""
        oid = self.existing_oid(core)
        if oid is not None:
            self.forget(oid)

    def release(self, oid: bytes) -> None:
        """``destroy`` was called on the object: stop holding it and its servant."""
        with self._lock:
            self._kept.pop(oid, None)
        self.forget(oid)

    # -- reference -> core object ---------------------------------------------------------
    def core_of(self, reference: Any) -> Any:
        """The core object a reference to one of our objects names, else ``reference``."""
        if not isinstance(reference, CORBA.Object):
            return reference
        try:
            oid = self._poa.reference_to_id(reference)
        except (PortableServer.POA.WrongAdapter, CORBA.SystemException):
            return reference  # not one of ours: a client's object
        core = self.lookup(oid)
        if core is None:
            # A parameter, not the target: OBJECT_NOT_EXIST would say the target is gone.
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO,
                                  f"the object {oid.decode('utf-8', 'replace')!r} passed "
                                  "no longer exists")
        return core

    def lookup(self, oid: bytes) -> Any:
        """The live core object with this id, or None."""
        text = oid.decode("utf-8", "replace")
        if text.startswith("obj/"):
            core = self._anonymous.get(oid)
            return None if core is None or destroyed(core) else core
        try:
            core = _resolve_path(self._factory, text.split("/"))
        except (CA.ChannelNotFound, CA.AdminNotFound, CA.ProxyNotFound, ValueError,
                CORBA.OBJECT_NOT_EXIST):
            return None
        if core is None or destroyed(core):
            return None
        return core

    def _incarnate(self, oid: bytes) -> Any:
        if not self._open.wait(_OPEN_TIMEOUT):
            raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO, "the server is still starting")
        core = self.lookup(oid)
        return None if core is None else self._servant_for(core, oid)

    def forget(self, oid: bytes) -> None:
        """Deactivate the servant of a destroyed object."""
        try:
            self._poa.deactivate_object(oid)
        except (PortableServer.POA.ObjectNotActive, CORBA.SystemException) as exc:  # gone
            log.debug("deactivate %r: %s", oid, exc)
            return
        # Counted here, not in etherealize: omniORB etherealizes only once the
        # object's last request is over, possibly later and on another thread.
        self._activator.deactivated()


class _Activator(PortableServer__POA.ServantActivator):  # type: ignore[misc]
    """Makes the servant of an object id on its first request (USE_SERVANT_MANAGER)."""

    def __init__(self, incarnate: Callable[[bytes], Any]) -> None:
        self._make = incarnate
        self._lock = threading.Lock()
        self.active = 0

    def incarnate(self, oid: bytes, adapter: Any) -> Any:
        servant = self._make(oid)
        if servant is None:
            raise CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO)
        with self._lock:
            self.active += 1
        return servant

    def etherealize(self, oid: bytes, adapter: Any, servant: Any, cleanup_in_progress: bool,
                    remaining_activations: bool) -> None:
        pass  # the count went down when the object was deactivated

    def deactivated(self) -> None:
        with self._lock:
            self.active -= 1


def destroyed(core: Any) -> bool:
    """Has ``core`` been destroyed? (proxies, admins, channels; filters; callbacks)"""
    if getattr(core, "_destroyed", False) or getattr(core, "_is_destroyed", False):
        return True
    owner = getattr(core, "_owner", None)  # a FilterCallback lives as long as its proxy
    return owner is not None and bool(getattr(owner, "_destroyed", False))


def _spec_path(core: Any, factory: EventChannelFactory) -> str | None:
    if core is factory:
        return "factory"
    if core is getattr(factory, "typed", None):
        return "typed"  # the typed factory's view (cosnotify/typed/channel.py)
    if core is factory._filter_factory:
        return "ff"
    suffix = getattr(core, "_spec_suffix", None)  # a typed proxy's typed object
    if suffix is not None:
        owner = _spec_path(core._owner, factory)
        return None if owner is None else f"{owner}/{suffix}"
    if isinstance(core, EventChannel):
        return f"ch/{core._id}"
    if isinstance(core, (ConsumerAdmin, SupplierAdmin)):
        if core._id is None:
            return None
        return f"ch/{core._channel._id}/{_admin_kind(core)}/{core._id}"
    store_path = getattr(core, "store_path", None)  # a filter kept in the store
    if store_path is not None:
        return str(store_path)
    if isinstance(core, ProxyBase):
        admin = core._admin
        if core.proxy_id is None or admin._id is None:
            return None
        return f"ch/{admin._channel._id}/{_admin_kind(admin)}/{admin._id}/{core.proxy_id}"
    return None


def _admin_kind(admin: Any) -> str:
    return "ca" if isinstance(admin, ConsumerAdmin) else "sa"


def _resolve_path(factory: EventChannelFactory, parts: list[str]) -> Any:
    if parts == ["factory"]:
        return factory
    if parts == ["typed"]:
        return getattr(factory, "typed", None)
    if parts == ["ff"]:
        return factory._get_filter_factory()
    if len(parts) == 2 and parts[0] == "flt":
        return factory._get_filter_factory().by_path("/".join(parts))
    if len(parts) < 2 or parts[0] != "ch":
        return None
    channel = factory._find_channel(int(parts[1]))
    if channel is None:
        raise CA.ChannelNotFound()
    if len(parts) == 2:
        return channel
    if parts[2:] == ["history"]:
        from cosnotify.history.corba import History

        return History(channel)
    if len(parts) == 6 and parts[5] == "typed":
        typed = _resolve_path(factory, parts[:5])
        return getattr(typed, "_typed_consumer", None) or getattr(typed, "_typed_supplier", None)
    if len(parts) not in (4, 5) or parts[2] not in ("ca", "sa"):
        return None
    admin_id = int(parts[3])
    if parts[2] == "ca":
        admin: Any = channel.get_consumeradmin(admin_id)
        if len(parts) == 4:
            return admin
        proxy: ProxySupplier = admin.get_proxy_supplier(int(parts[4]))
        return proxy
    admin = channel.get_supplieradmin(admin_id)
    if len(parts) == 4:
        return admin
    return admin.get_proxy_consumer(int(parts[4]))
