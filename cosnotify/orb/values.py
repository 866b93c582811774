"""Python values for IDL constructed types.

Strategy: generated classes subclass the bases here and declare their shape
as class attributes (``__slots__`` for structs, label tables for unions), so
the bases carry all behaviour: construction, equality, repr, pickling. This
mirrors the OMG IDL-to-Python mapping (Python Language Mapping 1.2, sections
1.3.3-1.3.6) as omniORBpy implements it.

IDL names that are Python keywords gain a leading underscore (mapping 1.2
section 1.2); :func:`attr_name` is the one place that rule lives.
"""

from __future__ import annotations

import keyword
from collections.abc import Iterator
from typing import Any, ClassVar

__all__ = [
    "STRUCT_ATTRIBUTES",
    "UNION_ATTRIBUTES",
    "Alias",
    "Enum",
    "EnumItem",
    "StructBase",
    "Union",
    "attr_name",
    "make_exception_class",
    "make_struct_class",
    "make_union_class",
    "member_value",
    "safe_attributes",
]

#: How many dynamic struct and union classes are kept (each distinct TypeCode
#: received makes one; the caches are emptied when they grow past this).
DYNAMIC_CLASS_LIMIT = 4096


def attr_name(idl_name: str) -> str:
    """The Python attribute name for IDL identifier ``idl_name``."""
    if keyword.iskeyword(idl_name) or idl_name in ("None", "True", "False"):
        return "_" + idl_name
    return idl_name


def _usable(name: str, reserved: frozenset[str]) -> bool:
    """Can ``name`` (an :func:`attr_name` result, maybe from the wire) be an attribute?

    ASCII identifiers only (Python folds other identifiers to NFKC), never a
    keyword, never a dunder, and never an attribute the value's class already
    has (``reserved``): a peer cannot name a member ``__class__``,
    ``__init__``, ``_tuple`` or ``args``.
    """
    return (name.isascii() and name.isidentifier() and not keyword.iskeyword(name)
            and not name.startswith("__") and name not in reserved)


def safe_attributes(names: tuple[str, ...], reserved: frozenset[str]) -> tuple[str, ...]:
    """Attribute names for the members of a dynamic class.

    A name that is not :func:`_usable` (a compact TypeCode's empty names, or
    hostile names from the wire) becomes ``_<index>``; so does a repeat.
    """
    out: list[str] = []
    for index, name in enumerate(names):
        if not _usable(name, reserved) or name in out:
            name = f"_{index}"
        out.append(name)
    return tuple(out)


def member_value(value: Any, index: int, name: str) -> Any:
    """Member ``index`` of a struct or exception value, found by position.

    Used when the TypeCode's member name is not the attribute name (a compact
    TypeCode, or a name :func:`safe_attributes` replaced).
    """
    cls = type(value)
    found: Any = getattr(cls, "_NP_fields", None) or getattr(cls, "__slots__", ())
    fields: tuple[str, ...] = tuple(found)
    if 0 <= index < len(fields):
        return getattr(value, fields[index])
    if _usable(name, frozenset(dir(cls))):
        return getattr(value, name)
    raise AttributeError(f"{cls.__name__} has no member {index} ({name!r})")


class StructBase:
    """Base of every IDL struct class.

    A subclass sets ``_NP_RepositoryId``, ``__slots__`` (the member attribute
    names, in IDL order) and an explicit ``__init__``.
    """

    __slots__ = ()
    _NP_RepositoryId: ClassVar[str] = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # used by dynamic classes
        names: tuple[str, ...] = self.__slots__
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__} takes {len(names)} members, got {len(args)}")
        for name, value in zip(names, args):
            object.__setattr__(self, name, value)
        for name, value in kwargs.items():
            if name not in names or name in names[: len(args)]:
                raise TypeError(f"{type(self).__name__}: unexpected or repeated member {name!r}")
            object.__setattr__(self, name, value)
        missing = [n for n in names if not hasattr(self, n)]
        if missing:
            raise TypeError(f"{type(self).__name__}: missing members {missing}")

    def _tuple(self) -> tuple[Any, ...]:
        """The member values in IDL order."""
        names: tuple[str, ...] = self.__slots__
        return tuple(getattr(self, name) for name in names)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            if not isinstance(other, StructBase) or other._NP_RepositoryId != self._NP_RepositoryId:
                return NotImplemented
            if not self._NP_RepositoryId:
                return NotImplemented
        return self._tuple() == other._tuple()

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None  # type: ignore[assignment]  # mutable value type

    def __repr__(self) -> str:
        names: tuple[str, ...] = self.__slots__
        inner = ", ".join(f"{name}={getattr(self, name, '<unset>')!r}" for name in names)
        return f"{type(self).__name__}({inner})"

    def __getstate__(self) -> tuple[Any, ...]:
        return self._tuple()

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        names: tuple[str, ...] = self.__slots__
        for name, value in zip(names, state):
            object.__setattr__(self, name, value)

    def __reduce__(self) -> Any:
        cls = type(self)
        if getattr(cls, "_NP_dynamic", False):
            return (_rebuild_dynamic_struct,
                    (cls._NP_RepositoryId, cls.__name__, cls.__slots__, self._tuple()))
        return (_new_blank, (cls,), self._tuple())


def _new_blank(cls: type[StructBase]) -> Any:
    return cls.__new__(cls)


def _rebuild_dynamic_struct(repo_id: str, name: str, fields: tuple[str, ...],
                            state: tuple[Any, ...]) -> StructBase:
    cls = make_struct_class(repo_id, name, fields)
    obj = cls.__new__(cls)
    obj.__setstate__(state)
    return obj


_dynamic_structs: dict[tuple[str, str, tuple[str, ...]], type[StructBase]] = {}


def make_struct_class(repo_id: str, name: str, fields: tuple[str, ...]) -> type[StructBase]:
    """A struct class for a type known only by its TypeCode (no generated stub).

    Classes are cached, so two values of one dynamic type share a class.
    """
    key = (repo_id, name, tuple(fields))
    cls = _dynamic_structs.get(key)
    if cls is None:
        ns = {"__slots__": tuple(fields), "_NP_RepositoryId": repo_id, "_NP_dynamic": True}
        cls = type(name or "AnonymousStruct", (StructBase,), ns)
        if len(_dynamic_structs) >= DYNAMIC_CLASS_LIMIT:
            _dynamic_structs.clear()
        _dynamic_structs[key] = cls
    return cls


class EnumItem:
    """One enumerator: ``_n`` is its name, ``_v`` its ordinal."""

    __slots__ = ("_n", "_parent_id", "_v")

    def __init__(self, name: str, value: int) -> None:
        self._n = name
        self._v = value
        self._parent_id = ""

    def __repr__(self) -> str:
        return self._n

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EnumItem):
            return self._v == other._v and self._parent_id == other._parent_id
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        if isinstance(other, EnumItem):
            return not (self._v == other._v and self._parent_id == other._parent_id)
        return NotImplemented

    def __lt__(self, other: EnumItem) -> bool:
        self._check_comparable(other)
        return self._v < other._v

    def __le__(self, other: EnumItem) -> bool:
        self._check_comparable(other)
        return self._v <= other._v

    def __gt__(self, other: EnumItem) -> bool:
        self._check_comparable(other)
        return self._v > other._v

    def __ge__(self, other: EnumItem) -> bool:
        self._check_comparable(other)
        return self._v >= other._v

    def _check_comparable(self, other: object) -> None:
        if not isinstance(other, EnumItem) or other._parent_id != self._parent_id:
            raise TypeError(f"cannot order {self!r} against {other!r}")

    def __hash__(self) -> int:
        return hash((self._n, self._v))

    def __reduce__(self) -> Any:
        return (_lookup_enum_item, (self._parent_id, self._v, self._n))


def _lookup_enum_item(parent_id: str, value: int, name: str) -> EnumItem:
    from cosnotify.orb import registry

    enum = registry.lookup_type(parent_id)
    if isinstance(enum, Enum) and 0 <= value < len(enum._items):
        return enum._items[value]
    item = EnumItem(name, value)
    item._parent_id = parent_id
    return item


class Enum:
    """An IDL enum: the container of its items, registered by repository id."""

    def __init__(self, repo_id: str, items: tuple[EnumItem, ...]) -> None:
        self._NP_RepositoryId = repo_id
        self._items = tuple(items)
        for index, item in enumerate(self._items):
            if item._v != index:
                raise ValueError(f"enum {repo_id}: item {item._n} has ordinal {item._v}, not {index}")
            item._parent_id = repo_id

    def _item(self, value: int) -> EnumItem:
        """The item with ordinal ``value``."""
        return self._items[value]

    def __iter__(self) -> Iterator[EnumItem]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Enum({self._NP_RepositoryId!r}, {list(self._items)!r})"


class Alias:
    """Placeholder class for a typedef name; aliases are not instantiable."""

    _NP_RepositoryId: ClassVar[str] = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(f"cannot construct objects of the typedef {type(self).__name__}")


_NO_VALUE = object()


class Union:
    """Base of every IDL union class.

    A subclass sets ``_NP_RepositoryId``, ``_m_to_d`` (member name to its first
    label), ``_d_to_m`` (label to member name), ``_def_m`` (the default member,
    or None) and ``_def_d`` (a discriminator value outside every label, or None
    when the labels cover the whole discriminator range).
    """

    _NP_RepositoryId: ClassVar[str] = ""
    _m_to_d: ClassVar[dict[str, Any]] = {}
    _d_to_m: ClassVar[dict[Any, str]] = {}
    _def_m: ClassVar[str | None] = None
    _def_d: ClassVar[Any] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if len(args) == 2 and not kwargs:
            self._d, self._v = args
            return
        if not args and len(kwargs) == 1:
            ((member, value),) = kwargs.items()
            self.__setattr__(member, value)
            return
        raise TypeError(f"{type(self).__name__}() takes (discriminator, value) or one member=value")

    def _member(self) -> str | None:
        """The name of the member the current discriminator selects, or None."""
        return self._d_to_m.get(self._d, self._def_m)

    def __getattr__(self, name: str) -> Any:
        cls = type(self)
        if name in cls._m_to_d or name == cls._def_m:
            if self._member() != name:
                from cosnotify.orb.exceptions import BAD_PARAM, COMPLETED_NO

                raise BAD_PARAM(0, COMPLETED_NO,
                                f"{cls.__name__}: discriminator {self._d!r} does not select {name!r}")
            return self.__dict__["_v"]
        raise AttributeError(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("_d", "_v"):
            object.__setattr__(self, name, value)
            return
        cls = type(self)
        if name in cls._m_to_d:
            object.__setattr__(self, "_d", cls._m_to_d[name])
        elif name == cls._def_m and cls._def_m is not None:
            object.__setattr__(self, "_d", cls._def_d)
        else:
            raise AttributeError(f"{cls.__name__} has no member {name!r}")
        object.__setattr__(self, "_v", value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Union) or other._NP_RepositoryId != self._NP_RepositoryId:
            return NotImplemented
        return bool(self._d == other._d and self._v == other._v)

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        member = self._member()
        if member is None:
            return f"{type(self).__name__}(_d={self._d!r})"
        return f"{type(self).__name__}({member}={self._v!r})"

    def __reduce__(self) -> Any:
        cls = type(self)
        if getattr(cls, "_NP_dynamic", False):
            return (_rebuild_dynamic_union, (cls._NP_RepositoryId, cls.__name__, cls._m_to_d,
                                             cls._def_m, cls._def_d, self._d, self._v))
        return (cls, (self._d, self._v))


def _rebuild_dynamic_union(repo_id: str, name: str, m_to_d: dict[str, Any], def_m: str | None,
                           def_d: Any, d: Any, v: Any) -> Union:
    cls = make_union_class(repo_id, name, tuple(m_to_d.items()), def_m, def_d)
    return cls(d, v)


_dynamic_unions: dict[tuple[Any, ...], type[Union]] = {}


def make_union_class(repo_id: str, name: str, labels: tuple[tuple[str, Any], ...],
                     def_m: str | None, def_d: Any) -> type[Union]:
    """A union class for a type known only by its TypeCode.

    ``labels`` pairs each member name with one of its labels; every label of
    a member is added to ``_d_to_m`` by passing the pair once per label.
    """
    key = (repo_id, name, labels, def_m, def_d)
    cls = _dynamic_unions.get(key)
    if cls is None:
        m_to_d: dict[str, Any] = {}
        d_to_m: dict[Any, str] = {}
        for member, label in labels:
            m_to_d.setdefault(member, label)
            d_to_m[label] = member
        ns = {"_NP_RepositoryId": repo_id, "_m_to_d": m_to_d, "_d_to_m": d_to_m,
              "_def_m": def_m, "_def_d": def_d, "_NP_dynamic": True}
        cls = type(name or "AnonymousUnion", (Union,), ns)
        if len(_dynamic_unions) >= DYNAMIC_CLASS_LIMIT:
            _dynamic_unions.clear()
        _dynamic_unions[key] = cls
    return cls


def make_exception_class(repo_id: str, name: str, fields: tuple[str, ...]) -> type:
    """A UserException subclass for an exception known only by its TypeCode.

    ``fields`` must come from :func:`safe_attributes`.
    """
    from cosnotify.orb.exceptions import UserException

    def __init__(self: UserException, *args: Any) -> None:
        UserException.__init__(self, *args)
        for field, value in zip(fields, args):
            setattr(self, field, value)

    return type(name or "AnonymousException", (UserException,),
                {"_NP_RepositoryId": repo_id, "_NP_fields": tuple(fields), "__init__": __init__})


#: Attributes the members of dynamic struct and union classes must not shadow.
STRUCT_ATTRIBUTES = frozenset(dir(StructBase)) | {"_NP_dynamic"}
UNION_ATTRIBUTES = frozenset(dir(Union)) | {"_d", "_v", "_NP_dynamic"}
