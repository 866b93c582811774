"""An embedded CosNaming ``NamingContextExt`` service (Naming Service 1.3).

Strategy: :class:`NameService` owns a tree of :class:`NamingContext`
servants (root activated in the INS POA under the object key
``NameService``, so ``corbaloc::HOST:PORT/NameService`` reaches it, as with
omniNames; sub-contexts and binding iterators live in a transient child POA).
Each context keeps its bindings in an insertion-ordered dict from
``(id, kind)`` to ``(object reference, BindingType)``. One re-entrant lock
serialises all changes to the tree; it is never held during a remote call.

Compound names are resolved component by component (2.2.2.1): an ``nobject``
binding in the middle of a name is ``NotFound(not_context)``; a missing one
``NotFound(missing_node)``, with ``rest_of_name`` starting at the component
that failed. A context bound from another server is called remotely with
the rest of the name, so federated graphs work as the spec describes.
``rebind`` over a context binding, and ``rebind_context`` over an object
binding, are ``NotFound(not_object)`` / ``NotFound(not_context)`` (1.2+).
An empty name is ``InvalidName``; so is a stringified name that does not
parse. ``list`` returns at most ``how_many`` bindings and an iterator for the
rest (nil when nothing is left).
"""

from __future__ import annotations

import builtins
import itertools
import threading
from collections import OrderedDict
from typing import Any

from cosnotify.orb import PortableServer as PS
from cosnotify.orb import corbaloc
from cosnotify.orb.exceptions import BAD_PARAM, COMPLETED_NO, NO_PERMISSION, OBJECT_NOT_EXIST
from cosnotify.stubs import CosNaming, CosNaming__POA

__all__ = ["BindingIterator", "NameService", "NamingContext", "serve"]

NC = CosNaming.NamingContext
NCX = CosNaming.NamingContextExt
MAX_ITERATORS = 1000

Key = tuple[str, str]


def _key(component: Any) -> Key:
    ident, kind = getattr(component, "id", None), getattr(component, "kind", None)
    if not isinstance(ident, str) or not isinstance(kind, str):
        raise NC.InvalidName()
    return ident, kind


def _check(name: Any) -> list[Key]:
    if not isinstance(name, (list, tuple)) or not name:
        raise NC.InvalidName()
    return [_key(c) for c in name]


def _name(keys: list[Key]) -> list[Any]:
    return [CosNaming.NameComponent(i, k) for i, k in keys]


class _Remote(Exception):
    """Internal: the rest of the name lives in another server's context."""

    def __init__(self, context: Any, rest: list[Key]) -> None:
        super().__init__()
        self.context = context
        self.rest = rest


class NamingContext(CosNaming__POA.NamingContextExt):
    """One naming context of the tree."""

    def __init__(self, service: NameService) -> None:
        self._service = service
        self._bindings: OrderedDict[Key, tuple[Any, Any]] = OrderedDict()
        self._oid = b""

    # -- walking compound names -----------------------------------------------------------
    def _target(self, keys: list[Key]) -> NamingContext:
        """The context holding the last component (with the service lock held)."""
        context = self
        for index, key in enumerate(keys[:-1]):
            found = context._bindings.get(key)
            if found is None:
                raise NC.NotFound(NC.missing_node, _name(keys[index:]))
            obj, kind = found
            if kind is not CosNaming.ncontext:
                raise NC.NotFound(NC.not_context, _name(keys[index:]))
            local = self._service.local_context(obj)
            if local is None:
                raise _Remote(obj, keys[index + 1:])
            context = local
        return context

    def _run(self, name: Any, local: Any, remote: Any) -> Any:
        """Apply ``local(context, last_key)`` or ``remote(context_ref, rest_of_name)``."""
        keys = _check(name)
        try:
            with self._service.lock:
                return local(self._target(keys), keys[-1])
        except _Remote as far:
            context = NC._narrow(far.context)
            if context is None:
                raise NC.CannotProceed(self._this(), _name(far.rest)) from None
            return remote(context, _name(far.rest))

    # -- NamingContext --------------------------------------------------------------------
    def bind(self, n: Any, obj: Any) -> None:
        self._run(n, lambda c, k: c._add(k, obj, CosNaming.nobject, False),
                  lambda r, rest: r.bind(rest, obj))

    def rebind(self, n: Any, obj: Any) -> None:
        self._run(n, lambda c, k: c._add(k, obj, CosNaming.nobject, True),
                  lambda r, rest: r.rebind(rest, obj))

    def bind_context(self, n: Any, nc: Any) -> None:
        if nc is None:
            raise BAD_PARAM(0, COMPLETED_NO, "cannot bind a nil naming context")
        self._run(n, lambda c, k: c._add(k, nc, CosNaming.ncontext, False),
                  lambda r, rest: r.bind_context(rest, nc))

    def rebind_context(self, n: Any, nc: Any) -> None:
        if nc is None:
            raise BAD_PARAM(0, COMPLETED_NO, "cannot bind a nil naming context")
        self._run(n, lambda c, k: c._add(k, nc, CosNaming.ncontext, True),
                  lambda r, rest: r.rebind_context(rest, nc))

    def _add(self, key: Key, obj: Any, kind: Any, replace: bool) -> None:
        existing = self._bindings.get(key)
        if existing is not None:
            if not replace:
                raise NC.AlreadyBound()
            if existing[1] is not kind:  # rebind may not change the binding type (1.2)
                reason = NC.not_object if kind is CosNaming.nobject else NC.not_context
                raise NC.NotFound(reason, _name([key]))
        self._bindings[key] = (obj, kind)

    def resolve(self, n: Any) -> Any:
        return self._run(n, lambda c, k: c._lookup(k)[0], lambda r, rest: r.resolve(rest))

    def _lookup(self, key: Key) -> tuple[Any, Any]:
        found = self._bindings.get(key)
        if found is None:
            raise NC.NotFound(NC.missing_node, _name([key]))
        return found

    def unbind(self, n: Any) -> None:
        def local(context: NamingContext, key: Key) -> None:
            context._lookup(key)
            del context._bindings[key]

        self._run(n, local, lambda r, rest: r.unbind(rest))

    def new_context(self) -> Any:
        return self._service.new_context()

    def bind_new_context(self, n: Any) -> Any:
        keys = _check(n)
        if len(keys) > 1:
            try:
                with self._service.lock:
                    parent = self._target(keys)
            except _Remote as far:
                remote = NC._narrow(far.context)
                if remote is None:
                    raise NC.CannotProceed(self._this(), _name(far.rest)) from None
                return remote.bind_new_context(_name(far.rest))
            return parent.bind_new_context(_name(keys[-1:]))
        context = self._service.new_context()
        try:
            self.bind_context(n, context)
        except Exception:
            self._service.destroy_context(self._service.local_context(context))
            raise
        return context

    def destroy(self) -> None:
        with self._service.lock:
            if self._bindings:
                raise NC.NotEmpty()
            if self is self._service.root_servant:
                raise NO_PERMISSION(0, COMPLETED_NO, "the root context cannot be destroyed")
            self._service.destroy_context(self)

    def list(self, how_many: int) -> tuple[builtins.list[Any], Any]:
        with self._service.lock:
            bindings = [CosNaming.Binding(_name([key]), kind)
                        for key, (_, kind) in self._bindings.items()]
        first, rest = bindings[:how_many], bindings[how_many:]
        iterator = self._service.new_iterator(rest) if rest else None
        return first, iterator

    # -- NamingContextExt -----------------------------------------------------------------
    def to_string(self, n: Any) -> str:
        keys = _check(n)
        return corbaloc.to_string(keys)

    def to_name(self, sn: str) -> builtins.list[Any]:
        try:
            return _name(corbaloc.to_name(sn))
        except (corbaloc.StringNameError, TypeError):
            raise NC.InvalidName() from None

    def to_url(self, addr: str, sn: str) -> str:
        if not isinstance(addr, str) or not addr:
            raise NCX.InvalidAddress()
        try:
            url = corbaloc.parse(f"corbaloc:{addr}/x")
        except BAD_PARAM:
            raise NCX.InvalidAddress() from None
        if not url.addresses:
            raise NCX.InvalidAddress()
        try:
            return corbaloc.to_url(addr, sn)
        except corbaloc.StringNameError:
            raise NC.InvalidName() from None

    def resolve_str(self, sn: str) -> Any:
        return self.resolve(self.to_name(sn))


class BindingIterator(CosNaming__POA.BindingIterator):
    """What ``list`` could not return at once."""

    def __init__(self, service: NameService, bindings: list[Any]) -> None:
        self._service = service
        self._bindings = bindings
        self._lock = threading.Lock()
        self._oid = b""

    def next_one(self) -> tuple[bool, Any]:
        with self._lock:
            if not self._bindings:
                return False, CosNaming.Binding([], CosNaming.nobject)
            return True, self._bindings.pop(0)

    def next_n(self, how_many: int) -> tuple[bool, list[Any]]:
        if how_many == 0:
            raise BAD_PARAM(0, COMPLETED_NO, "next_n(0)")
        with self._lock:
            chunk, self._bindings = self._bindings[:how_many], self._bindings[how_many:]
        return bool(chunk), chunk

    def destroy(self) -> None:
        self._service.destroy_iterator(self)


class NameService:
    """The tree of contexts of one embedded naming service."""

    def __init__(self, orb: Any, object_key: bytes = b"NameService") -> None:
        self.orb = orb
        self.lock = threading.RLock()
        root_poa = orb.resolve_initial_references("RootPOA")
        ins_poa = orb.resolve_initial_references("omniINSPOA")
        self._poa = root_poa.create_POA(f"cosnotify-naming-{id(self):x}", root_poa.the_POAManager,
                                        [root_poa.create_id_assignment_policy(PS.USER_ID)])
        self._ids = itertools.count(1)
        self._contexts: dict[bytes, NamingContext] = {}
        self._iterators: OrderedDict[bytes, BindingIterator] = OrderedDict()
        self.root_servant = NamingContext(self)
        ins_poa.activate_object_with_id(object_key, self.root_servant)
        self.root = ins_poa.id_to_reference(object_key)
        self._ins_key = object_key
        self._contexts[orb._core.local_key(self.root)] = self.root_servant

    def local_context(self, obj: Any) -> NamingContext | None:
        key = self.orb._core.local_key(obj)
        return None if key is None else self._contexts.get(key)

    def new_context(self) -> Any:
        servant = NamingContext(self)
        oid = b"ctx%d" % next(self._ids)
        servant._oid = oid
        self._poa.activate_object_with_id(oid, servant)
        reference = self._poa.id_to_reference(oid)
        with self.lock:
            self._contexts[self.orb._core.local_key(reference)] = servant
        return CosNaming.NamingContextExt._unchecked_narrow(reference)

    def destroy_context(self, servant: NamingContext | None) -> None:
        if servant is None or not servant._oid:
            return
        with self.lock:
            self._contexts = {k: v for k, v in self._contexts.items() if v is not servant}
        try:
            self._poa.deactivate_object(servant._oid)
        except self._poa.ObjectNotActive:
            raise OBJECT_NOT_EXIST(0, COMPLETED_NO, "context already destroyed") from None

    def new_iterator(self, bindings: list[Any]) -> Any:
        servant = BindingIterator(self, bindings)
        oid = b"it%d" % next(self._ids)
        servant._oid = oid
        self._poa.activate_object_with_id(oid, servant)
        with self.lock:
            self._iterators[oid] = servant
            while len(self._iterators) > MAX_ITERATORS:
                old, _ = self._iterators.popitem(last=False)
                try:
                    self._poa.deactivate_object(old)
                except self._poa.ObjectNotActive:
                    pass
        return CosNaming.BindingIterator._unchecked_narrow(self._poa.id_to_reference(oid))

    def destroy_iterator(self, servant: BindingIterator) -> None:
        with self.lock:
            self._iterators.pop(servant._oid, None)
        try:
            self._poa.deactivate_object(servant._oid)
        except self._poa.ObjectNotActive:
            raise OBJECT_NOT_EXIST(0, COMPLETED_NO, "iterator already destroyed") from None


def serve(orb: Any, object_key: bytes = b"NameService") -> NameService:
    """Start an embedded naming service on ``orb`` at ``corbaloc::HOST:PORT/<object_key>``.

    It also becomes the ORB's ``resolve_initial_references("NameService")``
    (unless ``-ORBInitRef NameService=...`` says otherwise).
    """
    service = NameService(orb, object_key)
    try:
        orb.register_initial_reference("NameService", service.root)
    except orb.InvalidName:
        pass
    return service
