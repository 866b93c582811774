"""The Portable Object Adapter: POAs, POA managers, object keys (CORBA 3.0 chapter 11).

Strategy: a POA is a table from object ids to servants (the active object
map) plus its policies, an optional servant manager or default servant,
and its children; a POA manager is a small state machine that every request
passes through (:meth:`POAManager.enter` / ``leave``). Requests reach a POA
through :class:`AdapterRegistry`, which turns an object key back into
(POA, object id).

Object keys say which POA and object they name, and nothing else:

* TRANSIENT POAs: ``b"CNT\\x01" + uid + oid``, where ``uid`` is 8 random
  octets drawn when the POA is created. A reference outlives neither its
  POA nor the process: afterwards it gets ``OBJECT_NOT_EXIST``.
* PERSISTENT POAs: ``b"CNP\\x01" + n + (len, name) * n + oid``: the POA path
  below the RootPOA (n names, each a 2-octet big-endian length and UTF-8)
  then the object id, with no per-process part. An ORB restarted on the same
  fixed endpoint that recreates the same POA path (and, for USER_ID POAs,
  the same ids, or a servant activator that recognises them) answers the
  old references.
* The INS POA (``resolve_initial_references("omniINSPOA")``, as omniORB
  names it): the key *is* the object id, so ``corbaloc::host:port/NameService``
  reaches the object activated there with id ``b"NameService"``.

POA managers and ``PortableServer::Current`` live in
:mod:`cosnotify.orb.poa_manager`, the key registry in
:mod:`cosnotify.orb.adapters`; this module re-exports them.
"""

from __future__ import annotations

import itertools
import os
import struct
import threading
import uuid
from collections.abc import Callable
from typing import Any

from cosnotify.orb import PortableServer as PS
from cosnotify.orb.adapters import (
    PERSISTENT_MAGIC,
    TRANSIENT_MAGIC,
    UID_SIZE,
    AdapterRegistry,
    Core,
    decode_path,
    default_poa,
    encode_path,
    set_default_orb,
    this_reference,
)
from cosnotify.orb.exceptions import (
    BAD_PARAM,
    COMPLETED_NO,
    OBJ_ADAPTER,
    OBJECT_NOT_EXIST,
    OMGVMCID,
    UserException,
)
from cosnotify.orb.poa_manager import (
    ACTIVE,
    DISCARDING,
    HOLDING,
    INACTIVE,
    Current,
    POAManager,
    _exception,
    _local,
    in_upcall,
    pop_upcall,
    push_upcall,
)
from cosnotify.orb.values import EnumItem

__all__ = [
    "ACTIVE",
    "DISCARDING",
    "HOLDING",
    "INACTIVE",
    "PERSISTENT_MAGIC",
    "POA",
    "TRANSIENT_MAGIC",
    "UID_SIZE",
    "AdapterRegistry",
    "Core",
    "Current",
    "POAManager",
    "decode_path",
    "default_poa",
    "encode_path",
    "in_upcall",
    "pop_upcall",
    "push_upcall",
    "set_default_orb",
    "this_reference",
]


_DEFAULTS = {
    PS.THREAD_POLICY_ID: PS.ORB_CTRL_MODEL, PS.LIFESPAN_POLICY_ID: PS.TRANSIENT,
    PS.ID_UNIQUENESS_POLICY_ID: PS.UNIQUE_ID, PS.ID_ASSIGNMENT_POLICY_ID: PS.SYSTEM_ID,
    PS.IMPLICIT_ACTIVATION_POLICY_ID: PS.NO_IMPLICIT_ACTIVATION,
    PS.SERVANT_RETENTION_POLICY_ID: PS.RETAIN,
    PS.REQUEST_PROCESSING_POLICY_ID: PS.USE_ACTIVE_OBJECT_MAP_ONLY,
}


class _FunctionActivator(PS.ServantActivator):
    def __init__(self, fn: Callable[[bytes], PS.Servant | None]) -> None:
        self.fn = fn

    def incarnate(self, oid: bytes, adapter: Any) -> Any:
        return self.fn(oid)


class POA:
    """A Portable Object Adapter (11.3.8)."""

    AdapterAlreadyExists = _exception("AdapterAlreadyExists", "POA/AdapterAlreadyExists")
    AdapterNonExistent = _exception("AdapterNonExistent", "POA/AdapterNonExistent")
    InvalidPolicy = _exception("InvalidPolicy", "POA/InvalidPolicy", ("index",))
    NoServant = _exception("NoServant", "POA/NoServant")
    ObjectAlreadyActive = _exception("ObjectAlreadyActive", "POA/ObjectAlreadyActive")
    ObjectNotActive = _exception("ObjectNotActive", "POA/ObjectNotActive")
    ServantAlreadyActive = _exception("ServantAlreadyActive", "POA/ServantAlreadyActive")
    ServantNotActive = _exception("ServantNotActive", "POA/ServantNotActive")
    WrongAdapter = _exception("WrongAdapter", "POA/WrongAdapter")
    WrongPolicy = _exception("WrongPolicy", "POA/WrongPolicy")

    def __init__(self, registry: AdapterRegistry, name: str, parent: POA | None,
                 manager: POAManager, policies: dict[int, EnumItem], *, ins: bool = False) -> None:
        self._registry = registry
        self._name = name
        self._parent = parent
        self._manager = manager
        self._policies = policies
        self._lock = threading.RLock()
        self._aom: dict[bytes, PS.Servant] = {}
        self._ids_of: dict[int, tuple[PS.Servant, list[bytes]]] = {}
        self._children: dict[str, POA] = {}
        self._servant_manager: PS.ServantManager | None = None
        self._default_servant: PS.Servant | None = None
        self._counter = itertools.count(1)
        self._destroyed = False
        self.the_activator: Any = None
        self.persistent = policies[PS.LIFESPAN_POLICY_ID] is PS.PERSISTENT
        self.user_id = policies[PS.ID_ASSIGNMENT_POLICY_ID] is PS.USER_ID
        self.unique_id = policies[PS.ID_UNIQUENESS_POLICY_ID] is PS.UNIQUE_ID
        self.retain = policies[PS.SERVANT_RETENTION_POLICY_ID] is PS.RETAIN
        self.implicit = policies[PS.IMPLICIT_ACTIVATION_POLICY_ID] is PS.IMPLICIT_ACTIVATION
        self.processing = policies[PS.REQUEST_PROCESSING_POLICY_ID]
        #: SINGLE_THREAD_MODEL (and MAIN_THREAD_MODEL): upcalls one at a time (11.3.7.1)
        self.serialized = policies[PS.THREAD_POLICY_ID] is not PS.ORB_CTRL_MODEL
        self.upcall_lock = threading.RLock()
        self.uid = os.urandom(UID_SIZE)
        if ins:
            self.prefix = b""
        elif self.persistent:
            self.prefix = PERSISTENT_MAGIC + encode_path(self.path())
        else:
            self.prefix = TRANSIENT_MAGIC + self.uid

    def run_upcall(self, method: Callable[..., Any], args: Any) -> Any:
        """Call ``method(*args)``; one at a time when the thread policy says so (11.3.7.1)."""
        if self.serialized:
            with self.upcall_lock:
                return method(*args)
        return method(*args)

    # -- identity ---------------------------------------------------------------------------
    @property
    def the_name(self) -> str:
        return self._name

    @property
    def the_parent(self) -> POA | None:
        return self._parent

    @property
    def the_children(self) -> list[POA]:
        with self._lock:
            return list(self._children.values())

    @property
    def the_POAManager(self) -> POAManager:
        return self._manager

    def _get_the_name(self) -> str:
        return self._name

    def _get_the_POAManager(self) -> POAManager:
        return self._manager

    def path(self) -> tuple[str, ...]:
        """Names from below the RootPOA down to this POA."""
        names: list[str] = []
        poa: POA | None = self
        while poa is not None and poa._parent is not None:
            names.append(poa._name)
            poa = poa._parent
        return tuple(reversed(names))

    def id(self) -> bytes:
        return self.prefix

    def __repr__(self) -> str:
        return f"<POA {'/'.join(('RootPOA',) + self.path())}>"

    # -- policies and children --------------------------------------------------------------
    def _policy(self, policy_type: int, value: EnumItem) -> PS.Policy:
        return PS.Policy(policy_type, value)

    def create_thread_policy(self, value: EnumItem) -> PS.Policy:
        return self._policy(PS.THREAD_POLICY_ID, value)

    def create_lifespan_policy(self, value: EnumItem) -> PS.Policy:
        return self._policy(PS.LIFESPAN_POLICY_ID, value)

    def create_id_uniqueness_policy(self, value: EnumItem) -> PS.Policy:
        return self._policy(PS.ID_UNIQUENESS_POLICY_ID, value)

    def create_id_assignment_policy(self, value: EnumItem) -> PS.Policy:
        return self._policy(PS.ID_ASSIGNMENT_POLICY_ID, value)

    def create_implicit_activation_policy(self, value: EnumItem) -> PS.Policy:
        return self._policy(PS.IMPLICIT_ACTIVATION_POLICY_ID, value)

    def create_servant_retention_policy(self, value: EnumItem) -> PS.Policy:
        return self._policy(PS.SERVANT_RETENTION_POLICY_ID, value)

    def create_request_processing_policy(self, value: EnumItem) -> PS.Policy:
        return self._policy(PS.REQUEST_PROCESSING_POLICY_ID, value)

    def create_POA(self, adapter_name: str, a_POAManager: POAManager | None,
                   policies: list[PS.Policy] | tuple[PS.Policy, ...]) -> POA:
        chosen = dict(_DEFAULTS)
        for index, policy in enumerate(policies):
            values = PS.POLICY_VALUES.get(getattr(policy, "policy_type", -1))
            if values is None or getattr(policy, "value", None) not in tuple(values):
                raise self.InvalidPolicy(index)
            chosen[policy.policy_type] = policy.value
        _check_combination(chosen, policies, self.InvalidPolicy)
        if not isinstance(adapter_name, str) or "\0" in adapter_name:
            raise BAD_PARAM(0, COMPLETED_NO, f"bad POA name {adapter_name!r}")
        with self._lock:
            if self._destroyed:
                raise OBJECT_NOT_EXIST(0, COMPLETED_NO, "the parent POA was destroyed")
            if adapter_name in self._children:
                raise self.AdapterAlreadyExists()
            manager = a_POAManager if a_POAManager is not None else POAManager(adapter_name)
            child = POA(self._registry, adapter_name, self, manager, chosen)
            self._children[adapter_name] = child
        self._registry.add(child)
        return child

    def find_POA(self, adapter_name: str, activate_it: bool) -> POA:
        with self._lock:
            child = self._children.get(adapter_name)
        if (child is None and activate_it and self.the_activator is not None
                and self.the_activator.unknown_adapter(self, adapter_name)):
            with self._lock:
                child = self._children.get(adapter_name)
        if child is None:
            raise self.AdapterNonExistent()
        return child

    def destroy(self, etherealize_objects: bool, wait_for_completion: bool) -> None:
        for child in self.the_children:
            child.destroy(etherealize_objects, wait_for_completion)
        with self._lock:
            if self._destroyed:
                return
            self._destroyed = True
            retained = list(self._aom.items())
            self._aom.clear()
            self._ids_of.clear()
        self._registry.remove(self)
        if self._parent is not None:
            with self._parent._lock:
                if self._parent._children.get(self._name) is self:
                    del self._parent._children[self._name]
        if etherealize_objects and isinstance(self._servant_manager, PS.ServantActivator):
            for oid, servant in retained:
                self._servant_manager.etherealize(oid, self, servant, True, False)
        if wait_for_completion:
            self._manager._wait_idle()

    # -- servant managers and default servants ----------------------------------------------
    def get_servant_manager(self) -> PS.ServantManager | None:
        self._require(self.processing is PS.USE_SERVANT_MANAGER)
        return self._servant_manager

    def set_servant_manager(self, imgr: PS.ServantManager) -> None:
        self._require(self.processing is PS.USE_SERVANT_MANAGER)
        if not isinstance(imgr, (PS.ServantActivator if self.retain else PS.ServantLocator)):
            raise OBJ_ADAPTER(OMGVMCID | 4, COMPLETED_NO, "wrong kind of servant manager")
        self._servant_manager = imgr

    def set_servant_activator(self, fn: Callable[[bytes], PS.Servant | None]) -> None:
        """Extension: make servants lazily with ``fn(oid) -> servant or None`` (any policies).

        The servant is entered in the active object map (RETAIN), so ``fn``
        runs once per object; None means the object does not exist.
        """
        self._servant_manager = _FunctionActivator(fn)

    def get_servant(self) -> PS.Servant:
        self._require(self.processing is PS.USE_DEFAULT_SERVANT)
        if self._default_servant is None:
            raise self.NoServant()
        return self._default_servant

    def set_servant(self, p_servant: PS.Servant) -> None:
        self._require(self.processing is PS.USE_DEFAULT_SERVANT)
        self._default_servant = p_servant

    def _require(self, condition: bool) -> None:
        if not condition:
            raise self.WrongPolicy()

    # -- activation --------------------------------------------------------------------------
    def _new_id(self) -> bytes:
        if self.persistent:
            return uuid.uuid4().bytes
        return struct.pack(">Q", next(self._counter))

    def activate_object(self, p_servant: PS.Servant) -> bytes:
        self._require(not self.user_id and self.retain)
        with self._lock:
            oid = self._new_id()
            self._activate(oid, p_servant)
        return oid

    def activate_object_with_id(self, oid: bytes, p_servant: PS.Servant) -> None:
        self._require(self.retain)
        if isinstance(oid, str):
            oid = oid.encode("latin-1")
        with self._lock:
            if oid in self._aom:
                raise self.ObjectAlreadyActive()
            self._activate(bytes(oid), p_servant)

    def _activate(self, oid: bytes, servant: PS.Servant) -> None:
        if not isinstance(servant, PS.Servant):
            raise BAD_PARAM(0, COMPLETED_NO, f"{servant!r} is not a servant")
        if self._destroyed:
            raise OBJECT_NOT_EXIST(0, COMPLETED_NO, "the POA was destroyed")
        entry = self._ids_of.get(id(servant))
        if entry is not None and self.unique_id:
            raise self.ServantAlreadyActive()
        self._aom[oid] = servant
        if entry is None:
            self._ids_of[id(servant)] = (servant, [oid])
        else:
            entry[1].append(oid)
        self._registry.note_home(servant, self)

    def deactivate_object(self, oid: bytes) -> None:
        self._require(self.retain)
        with self._lock:
            servant = self._aom.pop(bytes(oid), None)
            if servant is None:
                raise self.ObjectNotActive()
            entry = self._ids_of.get(id(servant))
            remaining = False
            if entry is not None:
                entry[1].remove(bytes(oid))
                remaining = bool(entry[1])
                if not remaining:
                    del self._ids_of[id(servant)]
                    self._registry.forget_home(servant, self)
        if isinstance(self._servant_manager, PS.ServantActivator):
            self._servant_manager.etherealize(bytes(oid), self, servant, False, remaining)

    # -- references --------------------------------------------------------------------------
    def create_reference(self, intf: str) -> Any:
        self._require(not self.user_id)
        with self._lock:
            oid = self._new_id()
        return self.create_reference_with_id(oid, intf)

    def create_reference_with_id(self, oid: bytes, intf: str) -> Any:
        if isinstance(oid, str):
            oid = oid.encode("latin-1")
        return self._registry.core.make_reference(self.prefix + bytes(oid), intf)

    def servant_to_id(self, p_servant: PS.Servant) -> bytes:
        self._require(self.retain and (self.unique_id or self.implicit)
                      or self.processing is PS.USE_DEFAULT_SERVANT)
        stack = _local.stack
        if stack and stack[-1][0] is self and stack[-1][2] is p_servant and (
                not self.unique_id or id(p_servant) not in self._ids_of):
            current: bytes = stack[-1][1]
            return current
        with self._lock:
            entry = self._ids_of.get(id(p_servant))
            if entry is not None and self.unique_id:
                return entry[1][0]
            if self.implicit and self.retain:
                oid = self._new_id()
                self._activate(oid, p_servant)
                return oid
        raise self.ServantNotActive()

    def servant_to_reference(self, p_servant: PS.Servant) -> Any:
        oid = self.servant_to_id(p_servant)
        return self.create_reference_with_id(oid, p_servant._NP_RepositoryId)

    def reference_to_id(self, reference: Any) -> bytes:
        key = self._registry.core.local_key(reference)
        if key is None or not key.startswith(self.prefix) or (
                self.prefix == b"" and self._registry.is_structured(key)):
            raise self.WrongAdapter()
        return key[len(self.prefix):]

    def reference_to_servant(self, reference: Any) -> PS.Servant:
        self._require(self.retain or self.processing is PS.USE_DEFAULT_SERVANT)
        oid = self.reference_to_id(reference)
        return self._servant_for(oid, default=True)

    def id_to_servant(self, oid: bytes) -> PS.Servant:
        self._require(self.retain or self.processing is PS.USE_DEFAULT_SERVANT)
        return self._servant_for(bytes(oid), default=True)

    def _servant_for(self, oid: bytes, default: bool) -> PS.Servant:
        found = self._aom.get(oid) if self.retain else None
        if found is not None:
            return found
        if default and self.processing is PS.USE_DEFAULT_SERVANT:
            if self._default_servant is None:
                raise self.NoServant()
            return self._default_servant
        raise self.ObjectNotActive()

    def id_to_reference(self, oid: bytes) -> Any:
        self._require(self.retain)
        servant = self._aom.get(bytes(oid))
        if servant is None:
            raise self.ObjectNotActive()
        return self.create_reference_with_id(bytes(oid), servant._NP_RepositoryId)

    # -- request processing (used by the server side) ----------------------------------------
    def locate_servant(self, oid: bytes, operation: str) -> tuple[PS.Servant, Any]:
        """The servant for a request (incarnating it if need be) and a locator cookie.

        Raises OBJECT_NOT_EXIST, or ``PortableServer.ForwardRequest`` from a
        servant manager.
        """
        if self.retain:
            servant = self._aom.get(oid)
            if servant is not None:
                return servant, None
        manager = self._servant_manager
        if isinstance(manager, PS.ServantActivator) and self.retain:
            with self._lock:  # one incarnation per object at a time
                servant = self._aom.get(oid)
                if servant is None:
                    servant = manager.incarnate(oid, self)
                    if servant is None:
                        raise OBJECT_NOT_EXIST(OMGVMCID | 2, COMPLETED_NO, "no such object")
                    if oid not in self._aom:
                        self._activate(oid, servant)
            return servant, None
        if isinstance(manager, PS.ServantLocator):
            servant, cookie = manager.preinvoke(oid, self, operation)
            return servant, (manager, cookie)
        if self.processing is PS.USE_DEFAULT_SERVANT and self._default_servant is not None:
            return self._default_servant, None
        if isinstance(manager, _FunctionActivator):
            servant = manager.fn(oid)
            if servant is not None:
                return servant, None
        raise OBJECT_NOT_EXIST(OMGVMCID | 2, COMPLETED_NO, "no such object")

    def release_servant(self, oid: bytes, operation: str, servant: PS.Servant, cookie: Any) -> None:
        if cookie is not None:
            manager, value = cookie
            manager.postinvoke(oid, self, operation, value, servant)


def _check_combination(chosen: dict[int, EnumItem], policies: Any,
                       invalid: type[UserException]) -> None:
    """The policy combinations 11.3.8.2 rules out raise InvalidPolicy."""
    index = max(len(policies) - 1, 0)
    if chosen[PS.REQUEST_PROCESSING_POLICY_ID] is PS.USE_DEFAULT_SERVANT and \
            chosen[PS.ID_UNIQUENESS_POLICY_ID] is not PS.MULTIPLE_ID:
        raise invalid(index)
    if chosen[PS.IMPLICIT_ACTIVATION_POLICY_ID] is PS.IMPLICIT_ACTIVATION and (
            chosen[PS.ID_ASSIGNMENT_POLICY_ID] is not PS.SYSTEM_ID
            or chosen[PS.SERVANT_RETENTION_POLICY_ID] is not PS.RETAIN):
        raise invalid(index)
    if chosen[PS.SERVANT_RETENTION_POLICY_ID] is PS.NON_RETAIN and \
            chosen[PS.REQUEST_PROCESSING_POLICY_ID] is PS.USE_ACTIVE_OBJECT_MAP_ONLY:
        raise invalid(index)

