"""Interface descriptors and the ``CORBA.Object`` base of every stub.

Strategy: generated code describes each operation once, as an
:class:`Operation` value (name, parameters with modes and TypeCodes, result,
raised exception classes, oneway, contexts). Client stubs hand that
descriptor and the in/inout arguments to their *delegate*, the transport-side
object reference (an IIOP reference, or a collocated shortcut), which
marshals, invokes and unpacks results per the mapping. Servant skeletons use
the same descriptors to demarshal requests, so the two sides cannot drift.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Protocol

import attrs

from cosnotify.orb import registry
from cosnotify.orb.typecode import K_VOID, TypeCode

__all__ = [
    "IN",
    "INOUT",
    "OUT",
    "Delegate",
    "Object",
    "Operation",
    "Param",
    "ParamMode",
    "exception_typecode",
    "merge_operations",
    "register_stub",
]


class ParamMode(enum.Enum):
    """The direction of an operation parameter."""

    IN = "in"
    OUT = "out"
    INOUT = "inout"


IN, OUT, INOUT = ParamMode.IN, ParamMode.OUT, ParamMode.INOUT


@attrs.frozen
class Param:
    """One operation parameter."""

    name: str
    mode: ParamMode
    tc: TypeCode


@attrs.frozen
class Operation:
    """Everything the ORB needs to invoke or dispatch one operation."""

    name: str
    params: tuple[Param, ...]
    result: TypeCode
    raises: tuple[type, ...] = ()
    oneway: bool = False
    contexts: tuple[str, ...] = ()
    in_params: tuple[Param, ...] = attrs.field(init=False)
    out_params: tuple[Param, ...] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "in_params", tuple(p for p in self.params if p.mode is not OUT))
        object.__setattr__(self, "out_params", tuple(p for p in self.params if p.mode is not IN))

    def pack_result(self, result: Any, outs: tuple[Any, ...]) -> Any:
        """Combine a result and out values the way the mapping returns them."""
        if self.result._k == K_VOID:
            if not outs:
                return None
            if len(outs) == 1:
                return outs[0]
            return tuple(outs)
        if not outs:
            return result
        return (result, *outs)

    def unpack_result(self, value: Any) -> tuple[Any, tuple[Any, ...]]:
        """Split a servant's return value into (result, out values)."""
        n_out = len(self.out_params)
        if self.result._k == K_VOID:
            if n_out == 0:
                return None, ()
            if n_out == 1:
                return None, (value,)
            return None, tuple(value)
        if n_out == 0:
            return value, ()
        values = tuple(value)
        return values[0], values[1:]


class Delegate(Protocol):
    """What a stub needs from the ORB side of an object reference."""

    def invoke(self, operation: Operation, args: tuple[Any, ...]) -> Any: ...

    def is_a(self, repo_id: str) -> bool: ...

    def non_existent(self) -> bool: ...

    def is_equivalent(self, other: Delegate) -> bool: ...

    def hash(self, maximum: int) -> int: ...

    @property
    def type_id(self) -> str: ...


class Object:
    """``CORBA.Object``: the base of every interface class and stub.

    Interface classes (``CosNotifyFilter.Filter``) are abstract; the stub
    classes (``_objref_Filter``) are built around a :class:`Delegate`.
    """

    _NP_RepositoryId: ClassVar[str] = "IDL:omg.org/CORBA/Object:1.0"
    _NP_operations: ClassVar[Mapping[str, Operation]] = {}
    _NP_stub: ClassVar[type[Object] | None] = None

    def __init__(self, delegate: Delegate) -> None:
        self._NP_delegate = delegate

    # -- the pseudo-operations of CORBA::Object ----------------------------------
    def _invoke(self, operation: Operation, args: tuple[Any, ...]) -> Any:
        return self._NP_delegate.invoke(operation, args)

    def _is_a(self, repo_id: str) -> bool:
        if _class_is_a(type(self), repo_id):
            return True
        return self._NP_delegate.is_a(repo_id)

    def _non_existent(self) -> bool:
        return self._NP_delegate.non_existent()

    def _is_equivalent(self, other: Object | None) -> bool:
        if other is None:
            return False
        return self is other or self._NP_delegate.is_equivalent(other._NP_delegate)

    def _hash(self, maximum: int) -> int:
        return self._NP_delegate.hash(maximum)

    def _duplicate(self) -> Object:
        return self

    def _release(self) -> None:
        pass

    def _repository_id(self) -> str:
        """The most derived repository id the reference claims (its IOR type id)."""
        return self._NP_delegate.type_id

    @classmethod
    def _narrow(cls, obj: Object | None) -> Any:
        """``obj`` as a reference to this interface, or None if it is not one.

        Local knowledge (the reference's class or type id) answers when it can;
        otherwise the object is asked with a remote ``_is_a``.
        """
        if obj is None:
            return None
        if isinstance(obj, cls) and type(obj) is not cls:
            return obj
        repo_id = cls._NP_RepositoryId
        delegate = obj._NP_delegate
        if not (_class_is_a(type(obj), repo_id) or _type_id_is_a(delegate.type_id, repo_id)
                or delegate.is_a(repo_id)):
            return None
        stub = cls._NP_stub or Object
        return stub(delegate)

    _unchecked_narrow = classmethod(lambda cls, obj: None if obj is None
                                    else (cls._NP_stub or Object)(obj._NP_delegate))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._NP_delegate!r}>"

    def __reduce__(self) -> Any:
        from cosnotify.orb.exceptions import BAD_OPERATION, COMPLETED_NO

        raise BAD_OPERATION(0, COMPLETED_NO, "object references are pickled as strings: "
                                             "use orb.object_to_string()")


_is_a_cache: dict[tuple[type, str], bool] = {}


def _class_is_a(cls: type, repo_id: str) -> bool:
    key = (cls, repo_id)
    found = _is_a_cache.get(key)
    if found is None:
        found = repo_id == Object._NP_RepositoryId or any(
            getattr(c, "_NP_RepositoryId", None) == repo_id for c in cls.__mro__
            if issubclass(c, Object) and c is not Object)
        _is_a_cache[key] = found
    return found


def _type_id_is_a(type_id: str, repo_id: str) -> bool:
    if not type_id:
        return False
    if type_id == repo_id:
        return True
    stub = registry.lookup_stub(type_id)
    return stub is not None and _class_is_a(stub, repo_id)


def register_stub(interface: type[Object], stub: type[Object]) -> None:
    """Link an interface class to its stub class, and record it by repository id."""
    interface._NP_stub = stub
    registry.register_stub_class(interface._NP_RepositoryId, stub)
    registry.register_type(interface._NP_RepositoryId, interface)


def merge_operations(bases: Iterable[type], own: Mapping[str, Operation]) -> dict[str, Operation]:
    """The operation table of an interface: its bases' operations, then its own."""
    merged: dict[str, Operation] = {}
    for base in bases:
        merged.update(getattr(base, "_NP_operations", {}))
    merged.update(own)
    return merged


_exception_tcs: dict[type, TypeCode | None] = {}


def exception_typecode(cls: type) -> TypeCode | None:
    """The TypeCode of a generated user exception class, or None if it has none.

    Generated code defines ``_tc_<Name>`` beside each exception class: in its
    module, or as a class attribute of the interface it is declared in
    (``CosNaming.NamingContext._tc_NotFound``). A class may also carry its
    TypeCode as ``_NP_typecode``.
    """
    if cls in _exception_tcs:
        return _exception_tcs[cls]
    import sys

    found = getattr(cls, "_NP_typecode", None)
    if not isinstance(found, TypeCode):
        found = None
        # A subclass of a generated exception (one that adds a readable message,
        # say) is marshalled as the generated exception it derives from.
        for klass in cls.__mro__:
            scope: Any = sys.modules.get(klass.__module__)
            parts = klass.__qualname__.split(".")
            for part in parts[:-1]:
                scope = getattr(scope, part, None)
            candidate = getattr(scope, f"_tc_{parts[-1]}", None) if scope is not None else None
            if isinstance(candidate, TypeCode) and \
                    candidate.id() == getattr(klass, "_NP_RepositoryId", None):
                found = candidate
                break
    _exception_tcs[cls] = found
    return found
