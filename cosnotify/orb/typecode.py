"""CORBA TypeCodes for every TCKind of CORBA 2.6 except valuetypes.

Strategy: one frozen attrs class per TypeCode *shape* (simple, string,
objref, struct/except, union, enum, sequence, array, alias, fixed), all
sharing the :class:`TypeCode` interface of CORBA 2.6 section 10.7.1. The
integer ``_k`` is the TCKind ordinal, used by hot code (CDR, validation)
instead of the ``kind()`` EnumItem.

Recursive TypeCodes (CORBA 2.6 section 10.7.3, ``create_recursive_tc``) use a
:class:`RecursiveTC` placeholder: building the enclosing struct or union with
the same repository id binds every unresolved placeholder inside it, after
which the placeholder behaves exactly like that struct or union. It is the
only mutable part; everything else is immutable once built.

``equal`` and ``equivalent`` follow section 10.7.1 and tolerate cycles.
Hashing uses (kind, id) for named kinds, so hashes terminate on cyclic graphs
(every cycle passes through a named struct or union).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

import attrs

from cosnotify.orb import registry
from cosnotify.orb.exceptions import BAD_TYPECODE, COMPLETED_NO, UserException
from cosnotify.orb.values import STRUCT_ATTRIBUTES, Enum, EnumItem, attr_name, safe_attributes

# -- TCKind (CORBA 2.6 section 10.7.1) -----------------------------------------

_KIND_NAMES = ["tk_null", "tk_void", "tk_short", "tk_long", "tk_ushort", "tk_ulong", "tk_float", "tk_double", "tk_boolean", "tk_char", "tk_octet", "tk_any", "tk_TypeCode", "tk_Principal", "tk_objref", "tk_struct", "tk_union", "tk_enum", "tk_string", "tk_sequence", "tk_array", "tk_alias", "tk_except", "tk_longlong", "tk_ulonglong", "tk_longdouble", "tk_wchar", "tk_wstring", "tk_fixed", "tk_value", "tk_value_box", "tk_native", "tk_abstract_interface", "tk_local_interface", "tk_component", "tk_home", "tk_event"]
_KIND_ITEMS = tuple(EnumItem(name, i) for i, name in enumerate(_KIND_NAMES))
TCKind = Enum("IDL:omg.org/CORBA/TCKind:1.0", _KIND_ITEMS)
registry.register_type(TCKind._NP_RepositoryId, TCKind)

(tk_null, tk_void, tk_short, tk_long, tk_ushort, tk_ulong, tk_float, tk_double, tk_boolean,
 tk_char, tk_octet, tk_any, tk_TypeCode, tk_Principal, tk_objref, tk_struct, tk_union, tk_enum,
 tk_string, tk_sequence, tk_array, tk_alias, tk_except, tk_longlong, tk_ulonglong,
 tk_longdouble, tk_wchar, tk_wstring, tk_fixed, tk_value, tk_value_box, tk_native,
 tk_abstract_interface, tk_local_interface, tk_component, tk_home, tk_event) = _KIND_ITEMS

# Integer ordinals for hot paths.
K_NULL, K_VOID, K_SHORT, K_LONG, K_USHORT, K_ULONG, K_FLOAT, K_DOUBLE, K_BOOLEAN = range(9)
K_CHAR, K_OCTET, K_ANY, K_TYPECODE, K_PRINCIPAL, K_OBJREF, K_STRUCT, K_UNION, K_ENUM = range(9, 18)
K_STRING, K_SEQUENCE, K_ARRAY, K_ALIAS, K_EXCEPT, K_LONGLONG, K_ULONGLONG = range(18, 25)
K_LONGDOUBLE, K_WCHAR, K_WSTRING, K_FIXED = range(25, 29)
K_NATIVE, K_ABSTRACT_INTERFACE, K_LOCAL_INTERFACE = 31, 32, 33

#: Attributes of exception values a member of a dynamic exception must not shadow.
_EXCEPTION_ATTRIBUTES = frozenset(dir(UserException)) | {"_NP_fields"}

_NAMED_KINDS = frozenset({K_OBJREF, K_STRUCT, K_UNION, K_ENUM, K_ALIAS, K_EXCEPT, K_NATIVE,
                          K_ABSTRACT_INTERFACE, K_LOCAL_INTERFACE})


class _DefaultLabel:
    """The label of a union's ``default:`` member."""

    _instance: ClassVar[_DefaultLabel | None] = None

    def __new__(cls) -> _DefaultLabel:  # noqa: PYI034 - a singleton: always the one instance
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "DEFAULT_LABEL"

    def __reduce__(self) -> str:
        return "DEFAULT_LABEL"


DEFAULT_LABEL = _DefaultLabel()


class BadKind(UserException):
    """``CORBA::TypeCode::BadKind``: the operation is not valid for this kind."""

    _NP_RepositoryId = "IDL:omg.org/CORBA/TypeCode/BadKind:1.0"


class Bounds(UserException):
    """``CORBA::TypeCode::Bounds``: a member index is out of range."""

    _NP_RepositoryId = "IDL:omg.org/CORBA/TypeCode/Bounds:1.0"


class TypeCode:
    """The interface every TypeCode offers (CORBA 2.6 section 10.7.1)."""

    __slots__ = ()
    BadKind = BadKind
    Bounds = Bounds
    _k: int

    # -- identity and naming ---------------------------------------------------
    def kind(self) -> EnumItem:
        return _KIND_ITEMS[self._k]

    def id(self) -> str:
        raise BadKind()

    def name(self) -> str:
        raise BadKind()

    # -- members (struct, union, enum, except) ---------------------------------
    def member_count(self) -> int:
        raise BadKind()

    def member_name(self, index: int) -> str:
        raise BadKind()

    def member_type(self, index: int) -> TypeCode:
        raise BadKind()

    def member_label(self, index: int) -> Any:
        raise BadKind()

    def discriminator_type(self) -> TypeCode:
        raise BadKind()

    def default_index(self) -> int:
        raise BadKind()

    # -- string, sequence, array, alias, fixed ---------------------------------
    def length(self) -> int:
        raise BadKind()

    def content_type(self) -> TypeCode:
        raise BadKind()

    def fixed_digits(self) -> int:
        raise BadKind()

    def fixed_scale(self) -> int:
        raise BadKind()

    # -- comparison -------------------------------------------------------------
    def equal(self, other: TypeCode) -> bool:
        """True when every operation gives the same result on both (10.7.1)."""
        from cosnotify.orb.typecode_ops import compare

        return compare(self, other, strict=True, seen=set())

    def equivalent(self, other: TypeCode) -> bool:
        """Equality after stripping aliases and, where ids exist, by id alone."""
        from cosnotify.orb.typecode_ops import compare

        return compare(self, other, strict=False, seen=set())

    def get_compact_typecode(self) -> TypeCode:
        """This TypeCode without optional names (ids and structure kept)."""
        from cosnotify.orb.typecode_ops import compact

        return compact(self, {})

    def unalias(self) -> TypeCode:
        """This TypeCode with any outer aliases removed (not a CORBA operation)."""
        tc: TypeCode = self
        while tc._k == K_ALIAS:
            tc = tc.content_type()
        return tc

    def _check_index(self, index: int, count: int) -> None:
        if not 0 <= index < count:
            raise Bounds()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TypeCode):
            return NotImplemented
        return self is other or self.equal(other)

    def __ne__(self, other: object) -> bool:
        if not isinstance(other, TypeCode):
            return NotImplemented
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self._k)


@attrs.frozen(eq=False, repr=False)
class SimpleTC(TypeCode):
    """A TypeCode with no parameters: the basic types, any, TypeCode, void, null."""

    _k: int

    def __repr__(self) -> str:
        return f"CORBA.TC_{_KIND_NAMES[self._k][3:]}"

    def __reduce__(self) -> Any:
        return (_simple_tc, (self._k,))


@attrs.frozen(eq=False, repr=False)
class StringTC(TypeCode):
    """string or wstring, with ``bound`` 0 meaning unbounded."""

    _k: int
    _bound: int

    def length(self) -> int:
        return self._bound

    def __repr__(self) -> str:
        base = "string" if self._k == K_STRING else "wstring"
        return f"{base}<{self._bound}>" if self._bound else f"CORBA.TC_{base}"

    def __hash__(self) -> int:
        return hash((self._k, self._bound))


@attrs.frozen(eq=False, repr=False)
class ObjrefTC(TypeCode):
    """An object reference type (also abstract and local interfaces)."""

    _k: int
    _id: str
    _name: str

    def id(self) -> str:
        return self._id

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"objref({self._id})"

    def __hash__(self) -> int:
        return hash((self._k, self._id))


@attrs.frozen(eq=False, repr=False)
class StructTC(TypeCode):
    """A struct or exception TypeCode; members are (IDL name, TypeCode) pairs."""

    _k: int
    _id: str
    _name: str
    _names: tuple[str, ...]
    _types: tuple[TypeCode, ...]
    _attrs: tuple[str, ...] = attrs.field(init=False)
    #: The attribute names of a dynamic class for this type (``safe_attributes``).
    _safe: tuple[str, ...] = attrs.field(init=False)
    _cls: list[tuple[type, int | None] | None] = attrs.field(init=False, factory=lambda: [None])

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_attrs", tuple(attr_name(n) for n in self._names))
        object.__setattr__(self, "_safe", safe_attributes(
            self._attrs, _EXCEPTION_ATTRIBUTES if self._k == K_EXCEPT else STRUCT_ATTRIBUTES))

    def id(self) -> str:
        return self._id

    def name(self) -> str:
        return self._name

    def member_count(self) -> int:
        return len(self._names)

    def member_name(self, index: int) -> str:
        self._check_index(index, len(self._names))
        return self._names[index]

    def member_type(self, index: int) -> TypeCode:
        self._check_index(index, len(self._types))
        return self._types[index]

    def python_class(self) -> type:
        """The class values of this type are built with (generated or dynamic).

        A dynamic class is looked up again once more types have been
        registered, so importing a stub after decoding still wins.
        """
        cached = self._cls[0]
        if cached is not None and (cached[1] is None or cached[1] == registry.generation):
            return cached[0]
        from cosnotify.orb.typecode_classes import struct_class

        return struct_class(self)

    def __repr__(self) -> str:
        return f"{'struct' if self._k == K_STRUCT else 'exception'}({self._id or self._name})"

    def __hash__(self) -> int:
        return hash((self._k, self._id or self._name))


@attrs.frozen(eq=False, repr=False)
class UnionTC(TypeCode):
    """A union TypeCode; labels are Python discriminator values or DEFAULT_LABEL."""

    _id: str
    _name: str
    _disc: TypeCode
    _labels: tuple[Any, ...]
    _names: tuple[str, ...]
    _types: tuple[TypeCode, ...]
    _default: int
    _k: int = attrs.field(init=False, default=K_UNION)
    _cls: list[tuple[type, int | None] | None] = attrs.field(init=False, factory=lambda: [None])
    _index: dict[Any, int] = attrs.field(init=False, factory=dict)

    def __attrs_post_init__(self) -> None:
        for position, label in enumerate(self._labels):
            if label is not DEFAULT_LABEL:
                self._index.setdefault(label, position)

    def select(self, discriminator: Any) -> int | None:
        """The index of the member ``discriminator`` selects, or None (no member)."""
        try:
            index = self._index.get(discriminator)
        except TypeError:  # unhashable discriminator: not a valid label value
            return None
        if index is not None:
            return index
        return self._default if self._default >= 0 else None

    def id(self) -> str:
        return self._id

    def name(self) -> str:
        return self._name

    def member_count(self) -> int:
        return len(self._names)

    def member_name(self, index: int) -> str:
        self._check_index(index, len(self._names))
        return self._names[index]

    def member_type(self, index: int) -> TypeCode:
        self._check_index(index, len(self._types))
        return self._types[index]

    def member_label(self, index: int) -> Any:
        from cosnotify.orb.any import Any as CorbaAny

        self._check_index(index, len(self._labels))
        if index == self._default:
            return CorbaAny(TC_octet, 0)
        return CorbaAny(self._disc, self._labels[index])

    def discriminator_type(self) -> TypeCode:
        return self._disc

    def default_index(self) -> int:
        return self._default

    def python_class(self) -> type:
        """The class values of this type are built with (generated or dynamic)."""
        cached = self._cls[0]
        if cached is not None and (cached[1] is None or cached[1] == registry.generation):
            return cached[0]
        from cosnotify.orb.typecode_classes import union_class

        return union_class(self)

    def implicit_default(self) -> Any:
        """A discriminator value no explicit label uses, or None if labels cover all."""
        from cosnotify.orb.typecode_classes import implicit_default

        return implicit_default(self)

    def __repr__(self) -> str:
        return f"union({self._id or self._name})"

    def __hash__(self) -> int:
        return hash((K_UNION, self._id or self._name))


@attrs.frozen(eq=False, repr=False)
class EnumTC(TypeCode):
    """An enum TypeCode with its member names."""

    _id: str
    _name: str
    _names: tuple[str, ...]
    _k: int = attrs.field(init=False, default=K_ENUM)
    _enum: list[Enum | None] = attrs.field(init=False, factory=lambda: [None])

    def id(self) -> str:
        return self._id

    def name(self) -> str:
        return self._name

    def member_count(self) -> int:
        return len(self._names)

    def member_name(self, index: int) -> str:
        self._check_index(index, len(self._names))
        return self._names[index]

    def enum_items(self) -> tuple[EnumItem, ...]:
        """The Python items of this enum, from the generated module if registered."""
        enum = self._enum[0]
        if enum is None:
            found = registry.lookup_type(self._id) if self._id else None
            if isinstance(found, Enum) and len(found) == len(self._names):
                enum = found
            else:
                enum = Enum(self._id, tuple(EnumItem(n, i) for i, n in enumerate(self._names)))
            self._enum[0] = enum
        return enum._items

    def __repr__(self) -> str:
        return f"enum({self._id or self._name})"

    def __hash__(self) -> int:
        return hash((K_ENUM, self._id or self._name))


@attrs.frozen(eq=False, repr=False)
class SequenceTC(TypeCode):
    """sequence<T> (``_k`` K_SEQUENCE) or T[length] (``_k`` K_ARRAY)."""

    _k: int
    _bound: int
    _content: TypeCode

    def length(self) -> int:
        return self._bound

    def content_type(self) -> TypeCode:
        return self._content

    def __repr__(self) -> str:
        if self._k == K_ARRAY:
            return f"array({self._content!r}, {self._bound})"
        return f"sequence<{self._content!r}{f', {self._bound}' if self._bound else ''}>"

    def __hash__(self) -> int:
        return hash((self._k, self._bound, hash(self._content)))


@attrs.frozen(eq=False, repr=False)
class AliasTC(TypeCode):
    """A typedef."""

    _id: str
    _name: str
    _content: TypeCode
    _k: int = attrs.field(init=False, default=K_ALIAS)

    def id(self) -> str:
        return self._id

    def name(self) -> str:
        return self._name

    def content_type(self) -> TypeCode:
        return self._content

    def __repr__(self) -> str:
        return f"alias({self._id or self._name})"

    def __hash__(self) -> int:
        return hash((K_ALIAS, self._id or self._name))


@attrs.frozen(eq=False, repr=False)
class FixedTC(TypeCode):
    """fixed<digits, scale>."""

    _digits: int
    _scale: int
    _k: int = attrs.field(init=False, default=K_FIXED)

    def fixed_digits(self) -> int:
        return self._digits

    def fixed_scale(self) -> int:
        return self._scale

    def __repr__(self) -> str:
        return f"fixed<{self._digits},{self._scale}>"

    def __hash__(self) -> int:
        return hash((K_FIXED, self._digits, self._scale))


class RecursiveTC(TypeCode):
    """Placeholder for a recursive reference to the struct or union ``repo_id``.

    Until bound, only ``id()`` works; afterwards every operation delegates.
    """

    __slots__ = ("_rid", "_target")

    def __init__(self, repo_id: str) -> None:
        self._rid = repo_id
        self._target: TypeCode | None = None

    def _bound(self) -> TypeCode:
        if self._target is None:
            raise BAD_TYPECODE(0, COMPLETED_NO, f"recursive TypeCode {self._rid} is not bound")
        return self._target

    @property
    def _k(self) -> int:  # type: ignore[override]
        return self._bound()._k

    def id(self) -> str:
        return self._rid

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_rid", "_target"):
            raise AttributeError(name)
        return getattr(self._bound(), name)

    def __getstate__(self) -> tuple[str, TypeCode | None]:
        return (self._rid, self._target)

    def __setstate__(self, state: tuple[str, TypeCode | None]) -> None:
        self._rid, self._target = state

    # TypeCode methods are defined on the base class, so route them explicitly.
    def name(self) -> str:
        return self._bound().name()

    def member_count(self) -> int:
        return self._bound().member_count()

    def member_name(self, index: int) -> str:
        return self._bound().member_name(index)

    def member_type(self, index: int) -> TypeCode:
        return self._bound().member_type(index)

    def member_label(self, index: int) -> Any:
        return self._bound().member_label(index)

    def discriminator_type(self) -> TypeCode:
        return self._bound().discriminator_type()

    def default_index(self) -> int:
        return self._bound().default_index()

    def __repr__(self) -> str:
        return f"recursive({self._rid})"

    def __hash__(self) -> int:
        return hash(self._bound())


def resolve(tc: TypeCode) -> TypeCode:
    """``tc`` with a bound recursive placeholder replaced by its target."""
    while isinstance(tc, RecursiveTC):
        tc = tc._bound()
    return tc


# -- primitive constants ---------------------------------------------------------

def _simple_tc(kind: int) -> SimpleTC:
    return _SIMPLE[kind]


_SIMPLE = {k: SimpleTC(k) for k in (K_NULL, K_VOID, K_SHORT, K_LONG, K_USHORT, K_ULONG,
                                    K_FLOAT, K_DOUBLE, K_BOOLEAN, K_CHAR, K_OCTET, K_ANY,
                                    K_TYPECODE, K_PRINCIPAL, K_LONGLONG, K_ULONGLONG,
                                    K_LONGDOUBLE, K_WCHAR)}
TC_null, TC_void = _SIMPLE[K_NULL], _SIMPLE[K_VOID]
TC_short, TC_long, TC_longlong = _SIMPLE[K_SHORT], _SIMPLE[K_LONG], _SIMPLE[K_LONGLONG]
TC_ushort, TC_ulong, TC_ulonglong = _SIMPLE[K_USHORT], _SIMPLE[K_ULONG], _SIMPLE[K_ULONGLONG]
TC_float, TC_double, TC_longdouble = _SIMPLE[K_FLOAT], _SIMPLE[K_DOUBLE], _SIMPLE[K_LONGDOUBLE]
TC_boolean, TC_char, TC_wchar, TC_octet = (_SIMPLE[K_BOOLEAN], _SIMPLE[K_CHAR], _SIMPLE[K_WCHAR],
                                           _SIMPLE[K_OCTET])
TC_any, TC_TypeCode, TC_Principal = _SIMPLE[K_ANY], _SIMPLE[K_TYPECODE], _SIMPLE[K_PRINCIPAL]
TC_string = StringTC(K_STRING, 0)
TC_wstring = StringTC(K_WSTRING, 0)
TC_Object = ObjrefTC(K_OBJREF, "IDL:omg.org/CORBA/Object:1.0", "Object")

#: Inclusive value ranges of the integer kinds.
INTEGER_RANGES: dict[int, tuple[int, int]] = {
    K_SHORT: (-(2**15), 2**15 - 1), K_USHORT: (0, 2**16 - 1),
    K_LONG: (-(2**31), 2**31 - 1), K_ULONG: (0, 2**32 - 1),
    K_LONGLONG: (-(2**63), 2**63 - 1), K_ULONGLONG: (0, 2**64 - 1),
    K_OCTET: (0, 255),
}

# -- builders: in cosnotify.orb.tc, reachable here too for existing callers -------------

_BUILDERS = frozenset({"struct_tc", "exception_tc", "union_tc", "enum_tc", "alias_tc",
                       "objref_tc", "abstract_interface_tc", "local_interface_tc", "string_tc",
                       "wstring_tc", "sequence_tc", "array_tc", "fixed_tc", "recursive_tc"})


def __getattr__(name: str) -> Any:
    if name in _BUILDERS:
        from cosnotify.orb import tc

        return getattr(tc, name)
    raise AttributeError(name)


def _bind_recursion(owner: TypeCode, repo_id: str, members: Iterable[TypeCode]) -> None:
    """Bind unresolved RecursiveTC(repo_id) placeholders reachable from members."""
    if not repo_id:
        return
    stack = list(members)
    seen: set[int] = set()
    while stack:
        tc = stack.pop()
        if id(tc) in seen:
            continue
        seen.add(id(tc))
        if isinstance(tc, RecursiveTC):
            if tc._target is None and tc._rid == repo_id:
                tc._target = owner
            continue
        if isinstance(tc, (SequenceTC, AliasTC)):
            stack.append(tc._content)
        elif isinstance(tc, (StructTC, UnionTC)):
            stack.extend(tc._types)
