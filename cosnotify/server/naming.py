"""An embedded CosNaming ``NamingContextExt`` service (Naming Service 1.3) on omniORB.

Strategy: :class:`NameService` owns a tree of :class:`NamingContext`
servants. The root is activated in omniORB's ``omniINSPOA`` under the
object key ``NameService``, so ``corbaloc::HOST:PORT/NameService`` reaches
it, as it reaches omniNames; sub-contexts and binding iterators live in a
child POA of their own. Each context keeps its bindings in an
insertion-ordered dict from ``(id, kind)`` to ``(object reference,
BindingType)``. One re-entrant lock serialises all changes to the tree; it
is never held during a remote call.

Compound names are resolved component by component (section 2.2.2.1): an
``nobject`` binding in the middle of a name is ``NotFound(not_context)``; a
missing one ``NotFound(missing_node)``, with ``rest_of_name`` starting at the
component that failed. A context bound from another server is called
remotely with the rest of the name, so federated graphs work as the spec
describes. ``rebind`` over a context binding, and ``rebind_context`` over an
object binding, are ``NotFound(not_object)`` / ``NotFound(not_context)``
(1.2+). An empty name is ``InvalidName``; so is a stringified name that does
not parse (section 2.4.2's escapes). ``list`` returns at most ``how_many``
bindings and an iterator for the rest (nil when nothing is left).

omniORB allows one ORB per process, and the INS key ``NameService`` once per
ORB, so :func:`serve` shares one NameService between the servers of a
process, counting its users; :meth:`NameService.release` by the last one
deactivates it.
"""

from __future__ import annotations

import builtins
import itertools
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

import omniORB
from omniORB import CORBA, PortableServer

import CosNaming
import CosNaming__POA

__all__ = ["BindingIterator", "NameService", "NamingContext", "StringNameError", "serve",
           "to_name", "to_string", "url_escape"]

NC = CosNaming.NamingContext
NCX = CosNaming.NamingContextExt
#: Binding iterators kept at once; the oldest is destroyed beyond this.
MAX_ITERATORS = 1000
#: Milliseconds a call to a context in another server may take (federated names).
REMOTE_TIMEOUT_MS = 10_000

Key = tuple[str, str]


# -- stringified names (Naming Service 1.3 section 2.4.2) -------------------------------------


class StringNameError(ValueError):
    """A malformed stringified name; ``position`` is where parsing stopped."""

    def __init__(self, reason: str, text: str, position: int) -> None:
        super().__init__(f"{reason} at position {position} of {text!r}")
        self.reason = reason
        self.text = text
        self.position = position


def _split(text: str, separator: str, whole: str, base: int) -> list[tuple[str, int]]:
    """Split on unescaped ``separator``; pieces keep their escapes and start positions."""
    pieces: list[tuple[str, int]] = []
    start = i = 0
    while i < len(text):
        char = text[i]
        if char == "\\":
            if i + 1 >= len(text) or text[i + 1] not in "/.\\":
                raise StringNameError("bad escape", whole, base + i)
            i += 2
            continue
        if char == separator:
            pieces.append((text[start:i], base + start))
            start = i + 1
        i += 1
    pieces.append((text[start:], base + start))
    return pieces


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def to_name(text: str) -> list[Key]:
    """The (id, kind) components of a stringified name."""
    if not text:
        raise StringNameError("empty name", text, 0)
    components = []
    for piece, at in _split(text, "/", text, 0):
        if not piece:
            raise StringNameError("empty name component", text, at)
        if piece == ".":
            components.append(("", ""))
            continue
        parts = _split(piece, ".", text, at)
        if len(parts) > 2:
            raise StringNameError("more than one '.' in a component", text, parts[2][1] - 1)
        if len(parts) == 2 and not parts[1][0]:
            raise StringNameError("trailing '.' with an empty kind", text, parts[1][1] - 1)
        kind = _unescape(parts[1][0]) if len(parts) == 2 else ""
        components.append((_unescape(parts[0][0]), kind))
    return components


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("/", "\\/").replace(".", "\\.")


def to_string(name: Iterable[Key]) -> str:
    """The stringified form of a name given as (id, kind) pairs."""
    out = []
    for ident, kind in name:
        if not ident and not kind:
            out.append(".")
        elif not kind:
            out.append(_escape(ident))
        else:
            out.append(f"{_escape(ident)}.{_escape(kind)}")
    if not out:
        raise StringNameError("empty name", "", 0)
    return "/".join(out)


#: Octets a URL may carry unescaped (CORBA 3.0 section 13.6.10.1).
_URL_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                      ";/:?@&=+$,-_.!~*'()")


def url_escape(text: str) -> str:
    """``text`` with every octet a URL may not carry as ``%xx``."""
    return "".join(chr(b) if chr(b) in _URL_SAFE else f"%{b:02x}" for b in text.encode())


# -- the service --------------------------------------------------------------------------------


def _key(component: Any) -> Key:
    ident, kind = getattr(component, "id", None), getattr(component, "kind", None)
    if not isinstance(ident, str) or not isinstance(kind, str):
        raise NC.InvalidName()
    return ident, kind


def _check(name: Any) -> list[Key]:
    if not isinstance(name, (list, tuple)) or not name:
        raise NC.InvalidName()
    return [_key(c) for c in name]


def _name(keys: Iterable[Key]) -> list[Any]:
    return [CosNaming.NameComponent(i, k) for i, k in keys]


class _Remote(Exception):
    """Internal: the rest of the name lives in another server's context."""

    def __init__(self, context: Any, rest: list[Key]) -> None:
        super().__init__()
        self.context = context
        self.rest = rest


def _remote_context(obj: Any) -> Any:
    """A context of another server, called with a timeout; None if ``obj`` is not one."""
    if obj is None:
        return None
    try:
        omniORB.setClientCallTimeout(obj, REMOTE_TIMEOUT_MS)
        context = obj._narrow(NC)
    except CORBA.SystemException:
        return None
    if context is not None:
        omniORB.setClientCallTimeout(context, REMOTE_TIMEOUT_MS)
    return context


class NamingContext(CosNaming__POA.NamingContextExt):  # type: ignore[misc]
    """One naming context of the tree."""

    def __init__(self, service: NameService, oid: bytes = b"") -> None:
        self._service = service
        self._bindings: OrderedDict[Key, tuple[Any, Any]] = OrderedDict()
        self._oid = oid

    # -- walking compound names -----------------------------------------------------------
    def _target(self, keys: list[Key]) -> NamingContext:
        """The context holding the last component (with the service lock held)."""
        context = self
        for index, key in enumerate(keys[:-1]):
            found = context._bindings.get(key)
            if found is None:
                raise NC.NotFound(NC.missing_node, _name(keys[index:]))
            obj, kind = found
            if kind != CosNaming.ncontext:
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
            context = _remote_context(far.context)
            if context is None:
                raise NC.CannotProceed(self._this(), _name(far.rest)) from None
            try:
                return remote(context, _name(far.rest))
            except CORBA.SystemException:
                # Bound as a context, it is none (bind_context takes the reference as
                # the client typed it), or it is gone or does not answer: this context
                # cannot go on (reviews 108, 111: the system exception reached the
                # client, COMPLETED_MAYBE, as if its own server had failed).
                raise NC.CannotProceed(self._this(), _name(far.rest)) from None

    # -- NamingContext --------------------------------------------------------------------
    def bind(self, n: Any, obj: Any) -> None:
        self._run(n, lambda c, k: c._add(k, obj, CosNaming.nobject, False),
                  lambda r, rest: r.bind(rest, obj))

    def rebind(self, n: Any, obj: Any) -> None:
        self._run(n, lambda c, k: c._add(k, obj, CosNaming.nobject, True),
                  lambda r, rest: r.rebind(rest, obj))

    def bind_context(self, n: Any, nc: Any) -> None:
        if nc is None:
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO, "cannot bind a nil naming context")
        self._run(n, lambda c, k: c._add(k, nc, CosNaming.ncontext, False),
                  lambda r, rest: r.bind_context(rest, nc))

    def rebind_context(self, n: Any, nc: Any) -> None:
        if nc is None:
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO, "cannot bind a nil naming context")
        self._run(n, lambda c, k: c._add(k, nc, CosNaming.ncontext, True),
                  lambda r, rest: r.rebind_context(rest, nc))

    def _add(self, key: Key, obj: Any, kind: Any, replace: bool) -> None:
        existing = self._bindings.get(key)
        if existing is not None:
            if not replace:
                raise NC.AlreadyBound()
            if existing[1] != kind:  # rebind may not change the binding type (1.2)
                reason = NC.not_object if kind == CosNaming.nobject else NC.not_context
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
                remote = _remote_context(far.context)
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
                raise CORBA.NO_PERMISSION(0, CORBA.COMPLETED_NO,
                                          "the root context cannot be destroyed")
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
        return to_string(_check(n))

    def to_name(self, sn: str) -> builtins.list[Any]:
        try:
            return _name(to_name(sn))
        except (StringNameError, TypeError):
            raise NC.InvalidName() from None

    def to_url(self, addr: str, sn: str) -> str:
        if not isinstance(addr, str) or not addr or "/" in addr or "#" in addr:
            raise NCX.InvalidAddress()
        try:  # omniORB's own corbaloc parser judges the address; nothing is contacted
            self._service.orb.string_to_object(f"corbaloc:{addr}/NameService")
        except CORBA.SystemException:
            raise NCX.InvalidAddress() from None
        if sn:
            try:
                to_name(sn)
            except StringNameError:
                raise NC.InvalidName() from None
        return f"corbaname:{addr}#{url_escape(sn)}"

    def resolve_str(self, sn: str) -> Any:
        return self.resolve(self.to_name(sn))


class BindingIterator(CosNaming__POA.BindingIterator):  # type: ignore[misc]
    """What ``list`` could not return at once."""

    def __init__(self, service: NameService, bindings: list[Any], oid: bytes) -> None:
        self._service = service
        self._bindings = bindings
        self._lock = threading.Lock()
        self._oid = oid

    def next_one(self) -> tuple[bool, Any]:
        with self._lock:
            if not self._bindings:
                return False, CosNaming.Binding([], CosNaming.nobject)
            return True, self._bindings.pop(0)

    def next_n(self, how_many: int) -> tuple[bool, list[Any]]:
        if how_many == 0:
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO, "next_n(0)")
        with self._lock:
            chunk, self._bindings = self._bindings[:how_many], self._bindings[how_many:]
        return bool(chunk), chunk

    def destroy(self) -> None:
        self._service.destroy_iterator(self)


_naming_ids = itertools.count(1)


class NameService:
    """The tree of contexts of one embedded naming service."""

    def __init__(self, orb: Any, object_key: bytes = b"NameService") -> None:
        self.orb = orb
        self.lock = threading.RLock()
        self.users = 0
        root_poa = orb.resolve_initial_references("RootPOA")
        self._ins_poa = orb.resolve_initial_references("omniINSPOA")
        self._poa = root_poa.create_POA(
            f"cosnotify-naming-{next(_naming_ids)}", root_poa._get_the_POAManager(),
            [root_poa.create_id_assignment_policy(PortableServer.USER_ID)])
        self._ins_poa._get_the_POAManager().activate()
        self._ids = itertools.count(1)
        self._contexts: dict[bytes, NamingContext] = {}
        self._iterators: OrderedDict[bytes, BindingIterator] = OrderedDict()
        self.root_servant = NamingContext(self)
        self._ins_key = object_key
        self._ins_poa.activate_object_with_id(object_key, self.root_servant)
        self.root = self._ins_poa.id_to_reference(object_key)

    def local_context(self, obj: Any) -> NamingContext | None:
        """The context servant of ours that ``obj`` refers to, or None."""
        if obj is None:
            return None
        for poa in (self._poa, self._ins_poa):
            try:
                oid = poa.reference_to_id(obj)
            except (PortableServer.POA.WrongAdapter, CORBA.SystemException):
                continue
            if poa is self._ins_poa:
                return self.root_servant if oid == self._ins_key else None
            with self.lock:
                return self._contexts.get(oid)
        return None

    def new_context(self) -> Any:
        oid = b"ctx%d" % next(self._ids)
        servant = NamingContext(self, oid)
        with self.lock:
            self._contexts[oid] = servant
        self._poa.activate_object_with_id(oid, servant)
        return self._poa.id_to_reference(oid)._narrow(NCX)

    def destroy_context(self, servant: NamingContext | None) -> None:
        if servant is None or not servant._oid:
            return
        with self.lock:
            self._contexts.pop(servant._oid, None)
        try:
            self._poa.deactivate_object(servant._oid)
        except PortableServer.POA.ObjectNotActive:
            raise CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO,
                                         "context already destroyed") from None

    def new_iterator(self, bindings: list[Any]) -> Any:
        oid = b"it%d" % next(self._ids)
        servant = BindingIterator(self, bindings, oid)
        self._poa.activate_object_with_id(oid, servant)
        with self.lock:
            self._iterators[oid] = servant
            while len(self._iterators) > MAX_ITERATORS:
                old, _ = self._iterators.popitem(last=False)
                try:
                    self._poa.deactivate_object(old)
                except PortableServer.POA.ObjectNotActive:
                    pass
        return self._poa.id_to_reference(oid)._narrow(CosNaming.BindingIterator)

    def destroy_iterator(self, servant: BindingIterator) -> None:
        with self.lock:
            self._iterators.pop(servant._oid, None)
        try:
            self._poa.deactivate_object(servant._oid)
        except PortableServer.POA.ObjectNotActive:
            raise CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO,
                                         "iterator already destroyed") from None

    def release(self) -> None:
        """One user is done; the last one deactivates the service."""
        with _shared_lock:
            self.users -= 1
            if self.users > 0:
                return
            _shared.pop(id(self.orb), None)
        try:
            self._ins_poa.deactivate_object(self._ins_key)
        except PortableServer.POA.ObjectNotActive:
            pass
        self._poa.destroy(False, False)


_shared: dict[int, NameService] = {}
_shared_lock = threading.Lock()


def serve(orb: Any, object_key: bytes = b"NameService") -> NameService:
    """The embedded naming service of ``orb`` at ``corbaloc::HOST:PORT/<object_key>``.

    Started on first use and shared after that (one per ORB, so one per
    process); each caller calls :meth:`NameService.release` when done. It
    also becomes the ORB's ``resolve_initial_references("NameService")``
    unless one was configured (``-ORBInitRef NameService=...``).
    """
    with _shared_lock:
        service = _shared.get(id(orb))
        if service is None:
            service = NameService(orb, object_key)
            _shared[id(orb)] = service
            try:
                orb.register_initial_reference("NameService", service.root)
            except CORBA.ORB.InvalidName:
                pass  # the application named its own; ours still answers at the INS key
        service.users += 1
        return service
