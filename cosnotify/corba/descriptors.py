"""omniORBpy TypeCodes read through their descriptors, around the wheel's TypeCode defects.

Strategy: omniORBpy keeps every TypeCode as a *descriptor* (``tc._d``), the
tuple graph its C++ marshaller walks: a basic kind is a bare int
(``tv_long``), anything else a tuple whose first item is the kind::

    struct/except  (kind, class, repo_id, name, member_name, member_desc, ...)
    union          (kind, class, repo_id, name, disc_desc, default_index,
                    ((label, member_name, member_desc), ...), default_member, {label: member})
    enum           (kind, repo_id, name, (EnumItem, ...))
    string/wstring (kind, bound)        sequence/array (kind, content_desc, bound)
    alias          (kind, repo_id, name, content_desc)
    objref         (kind, repo_id, name)   fixed (kind, digits, scale)
    indirection    (marker, [target_desc or repo_id])

cosnotify walks descriptors, never ``CORBA.TypeCode`` objects: tuple indexing
costs nothing on the event path, and it sidesteps the defects of the 4.3.3
wheel's ``omniORB/tcInternal.py`` (docs/orb.md lists them):

- a TypeCode unmarshalled from the wire marks a repeated or recursive type
  with kind ``0xffffffff`` instead of ``tv__indirect`` (-1), so
  ``member_type()`` and friends raise ``INTERNAL`` on it: :func:`resolve`
  accepts both markers, and :func:`typecode` rebuilds such a descriptor
  with the standard marker before making a TypeCode of it;
- ``member_count()`` returns a float: :func:`member_count` returns an int;
- ``member_label()`` of a union's default member raises ``NameError``:
  :func:`member_label` returns the zero octet CORBA prescribes;
- ``ORB.create_enum_tc`` and ``ORB.create_exception_tc`` fail:
  :func:`enum_tc` and :func:`exception_tc` build the descriptors directly.

Values of types the process has no stubs for arrive as
``omniORB.UnknownStruct``/``UnknownUnion`` instances and ``EnumItem``\\ s;
they have the same attributes as generated ones (member names, ``_d`` and
``_v``, ``_n`` and ``_v``), so nothing here depends on stubs.
"""

from __future__ import annotations

import keyword
from collections.abc import Iterable, Sequence
from typing import Any, Final, TypeAlias

import omniORB
from omniORB import CORBA, tcInternal

__all__ = [
    "ABSTRACT_INTERFACE", "ALIAS", "ANY", "ARRAY", "BOOLEAN", "CHAR", "DOUBLE", "ENUM",
    "EXCEPT", "FIXED", "FLOAT", "INDIRECT", "LOCAL_INTERFACE", "LONG", "LONGDOUBLE",
    "LONGLONG", "NATIVE", "NULL", "OBJREF", "OCTET", "PRINCIPAL", "SEQUENCE", "SHORT",
    "STRING", "STRUCT", "TYPECODE", "ULONG", "ULONGLONG", "UNION", "USHORT", "VALUE",
    "VALUE_BOX", "VOID", "WCHAR", "WIRE_INDIRECT", "WSTRING",
    "Descriptor", "attribute", "content", "enum_labels", "enum_tc", "equivalent",
    "exception_tc", "kind", "member_count", "member_label", "members", "name",
    "repo_id", "resolve", "typecode", "unalias", "union_select",
]

#: A descriptor: an int for a basic kind, else a tuple (see the module docstring).
Descriptor: TypeAlias = Any

NULL: Final = tcInternal.tv_null
VOID: Final = tcInternal.tv_void
SHORT: Final = tcInternal.tv_short
LONG: Final = tcInternal.tv_long
USHORT: Final = tcInternal.tv_ushort
ULONG: Final = tcInternal.tv_ulong
FLOAT: Final = tcInternal.tv_float
DOUBLE: Final = tcInternal.tv_double
BOOLEAN: Final = tcInternal.tv_boolean
CHAR: Final = tcInternal.tv_char
OCTET: Final = tcInternal.tv_octet
ANY: Final = tcInternal.tv_any
TYPECODE: Final = tcInternal.tv_TypeCode
PRINCIPAL: Final = tcInternal.tv_Principal
OBJREF: Final = tcInternal.tv_objref
STRUCT: Final = tcInternal.tv_struct
UNION: Final = tcInternal.tv_union
ENUM: Final = tcInternal.tv_enum
STRING: Final = tcInternal.tv_string
SEQUENCE: Final = tcInternal.tv_sequence
ARRAY: Final = tcInternal.tv_array
ALIAS: Final = tcInternal.tv_alias
EXCEPT: Final = tcInternal.tv_except
LONGLONG: Final = tcInternal.tv_longlong
ULONGLONG: Final = tcInternal.tv_ulonglong
LONGDOUBLE: Final = tcInternal.tv_longdouble
WCHAR: Final = tcInternal.tv_wchar
WSTRING: Final = tcInternal.tv_wstring
FIXED: Final = tcInternal.tv_fixed
VALUE: Final = tcInternal.tv_value
VALUE_BOX: Final = tcInternal.tv_value_box
NATIVE: Final = tcInternal.tv_native
ABSTRACT_INTERFACE: Final = tcInternal.tv_abstract_interface
LOCAL_INTERFACE: Final = tcInternal.tv_local_interface
#: The indirection marker of descriptors made in process (stubs, ``create_recursive_tc``).
INDIRECT: Final = tcInternal.tv__indirect
#: The marker the 4.3.3 wheel leaves in descriptors unmarshalled from the wire.
WIRE_INDIRECT: Final = 0xFFFFFFFF

_INDIRECTIONS: Final = frozenset({INDIRECT, WIRE_INDIRECT})
_STRUCTS: Final = frozenset({STRUCT, EXCEPT})
_NAMED: Final = frozenset({OBJREF, ENUM, ALIAS, ABSTRACT_INTERFACE, LOCAL_INTERFACE,
                           NATIVE})
_CLASSED: Final = frozenset({STRUCT, UNION, EXCEPT, VALUE, VALUE_BOX})


# -- following a descriptor -----------------------------------------------------------------


def resolve(d: Descriptor) -> Descriptor:
    """``d`` with indirections followed (either marker); aliases are kept."""
    while type(d) is tuple and d[0] in _INDIRECTIONS:
        target = d[1][0]
        if type(target) is str:  # a recursive stub type, not looked up yet
            found = omniORB.findType(target)
            if found is None:
                raise CORBA.BAD_TYPECODE(omniORB.BAD_TYPECODE_InvalidIndirection,
                                         CORBA.COMPLETED_NO, f"unknown type {target!r}")
            d[1][0] = found
            target = found
        d = target
    return d


def unalias(d: Descriptor) -> Descriptor:
    """``d`` with indirections and aliases followed."""
    while True:
        d = resolve(d)
        if type(d) is not tuple or d[0] != ALIAS:
            return d
        d = d[3]


def kind(d: Descriptor) -> int:
    """The TCKind number of ``d`` (indirections followed, aliases not)."""
    d = resolve(d)
    return d if type(d) is int else int(d[0])


def repo_id(d: Descriptor) -> str:
    """The repository id, or ``""`` for kinds that have none."""
    d = resolve(d)
    if type(d) is int:
        return ""
    k = d[0]
    if k in _CLASSED:
        return str(d[2] or "")
    if k in _NAMED:
        return str(d[1] or "")
    return ""


def name(d: Descriptor) -> str | None:
    """The simple name, or None for kinds that have none (basic types, sequences...)."""
    d = resolve(d)
    if type(d) is int:
        return None
    k = d[0]
    if k in _CLASSED:
        return str(d[3])
    if k in _NAMED:
        return str(d[2])
    return None


def members(d: Descriptor) -> tuple[tuple[str, Descriptor], ...]:
    """A struct's or exception's ``(name, descriptor)`` pairs; ``()`` for other kinds.

    Names are omniORB's Python attribute names: an IDL member named like a
    Python keyword (``from``) appears as ``_from``.
    """
    d = resolve(d)
    if type(d) is not tuple or d[0] not in _STRUCTS:
        return ()
    return tuple(zip(d[4::2], d[5::2], strict=True))


def attribute(member_name: str) -> str:
    """The Python attribute an IDL member name maps to (keywords get a ``_``)."""
    return "_" + member_name if keyword.iskeyword(member_name) else member_name


def member_count(tc: Any) -> int:
    """``tc.member_count()`` as an int (the wheel returns a float for structs)."""
    d = unalias(tc._d)
    if type(d) is tuple:
        k = d[0]
        if k in _STRUCTS:
            return (len(d) - 4) // 2
        if k == UNION:
            return len(d[6])
        if k == ENUM:
            return len(d[3])
        if k == VALUE:
            return (len(d) - 7) // 3
    raise CORBA.TypeCode.BadKind()


def member_label(tc: Any, index: int) -> Any:
    """``tc.member_label(index)``; the default member's label is the zero octet (CORBA 2.6 10.7.1)."""
    d = resolve(tc._d)
    if type(d) is not tuple or d[0] != UNION:
        raise CORBA.TypeCode.BadKind()
    entries = d[6]
    if not 0 <= index < len(entries):
        raise CORBA.TypeCode.Bounds()
    if index == d[5]:
        return CORBA.Any(CORBA.TC_octet, 0)
    return CORBA.Any(typecode(d[4]), entries[index][0])


def union_select(d: Descriptor, discriminator: Any) -> tuple[Any, str, Descriptor] | None:
    """The ``(label, name, descriptor)`` entry a discriminator value selects, or None.

    ``d`` must be a resolved union descriptor. A value no label names selects
    the default member, if there is one.
    """
    try:
        found = d[8].get(discriminator)
    except TypeError:  # an unhashable value: no label can equal it
        return None
    if found is None:
        found = d[7]
    return found  # type: ignore[no-any-return]


def enum_labels(d: Descriptor) -> tuple[str, ...]:
    """The enumerator names of an enum descriptor."""
    return tuple(item._n for item in resolve(d)[3])


def content(d: Descriptor) -> Descriptor:
    """The element of a sequence or array, the original type of an alias."""
    d = resolve(d)
    if type(d) is tuple:
        if d[0] in (SEQUENCE, ARRAY):
            return d[1]
        if d[0] == ALIAS:
            return d[3]
    raise CORBA.TypeCode.BadKind()


# -- equivalence (CORBA 2.6 section 10.7.1: names and aliases do not count) --------------------


def equivalent(a: Descriptor, b: Descriptor) -> bool:
    """Are ``a`` and ``b`` equivalent TypeCodes? Works across both indirection markers."""
    return _equivalent(a, b, set())


def _equivalent(a: Descriptor, b: Descriptor, assumed: set[tuple[int, int]]) -> bool:
    a, b = unalias(a), unalias(b)
    if a is b:
        return True
    if type(a) is int or type(b) is int:
        return bool(a == b)
    if a[0] != b[0]:
        return False
    pair = (id(a), id(b))
    if pair in assumed:  # a recursive type compared with itself further down
        return True
    k = a[0]
    ida, idb = repo_id(a), repo_id(b)
    if ida and idb and k in _CLASSED | _NAMED:
        return ida == idb
    assumed.add(pair)
    if k in _STRUCTS:
        ta, tb = a[5::2], b[5::2]
        return len(ta) == len(tb) and all(_equivalent(x, y, assumed) for x, y in zip(ta, tb))
    if k == UNION:
        ea, eb = a[6], b[6]
        return (a[5] == b[5] and _equivalent(a[4], b[4], assumed) and len(ea) == len(eb)
                and all(x[0] == y[0] and _equivalent(x[2], y[2], assumed)
                        for x, y in zip(ea, eb)))
    if k == ENUM:
        return len(a[3]) == len(b[3])
    if k in (SEQUENCE, ARRAY):
        return a[2] == b[2] and _equivalent(a[1], b[1], assumed)
    return bool(a[1:] == b[1:])


# -- making TypeCodes --------------------------------------------------------------------------


def typecode(d: Descriptor) -> Any:
    """A ``CORBA.TypeCode`` for ``d``; wire indirections are rewritten first."""
    if _has_wire_indirection(d, set()):
        d = _Rebuild()(d)
    return tcInternal.createTypeCode(d)


def _children(d: tuple[Any, ...]) -> Iterable[Any]:
    k = d[0]
    if k in _STRUCTS:
        return d[5::2]
    if k == UNION:
        return (d[4], *(entry[2] for entry in d[6]))
    if k in (SEQUENCE, ARRAY):
        return (d[1],)
    if k == ALIAS:
        return (d[3],)
    if k == VALUE_BOX:
        return (d[4],)
    if k == VALUE:
        return (d[6], *d[8::3])
    return ()


def _has_wire_indirection(d: Descriptor, seen: set[int]) -> bool:
    if type(d) is not tuple or id(d) in seen:
        return False
    seen.add(id(d))
    if d[0] == WIRE_INDIRECT:
        return True
    if d[0] == INDIRECT:
        return False
    return any(_has_wire_indirection(c, seen) for c in _children(d))


class _Rebuild:
    """Rebuilds a descriptor with every indirection in the standard form ``(-1, [target])``.

    The target of a wire indirection is the full descriptor it repeats: an
    ancestor (a recursive type), whose cell is filled once that ancestor is
    rebuilt, or a type met before, which is simply shared.
    """

    def __init__(self) -> None:
        self.done: dict[int, Any] = {}
        self.building: set[int] = set()
        self.cells: dict[int, list[list[Any]]] = {}

    def __call__(self, d: Descriptor) -> Descriptor:
        if type(d) is not tuple:
            return d
        if d[0] in _INDIRECTIONS:
            target = d[1][0]
            if type(target) is str:
                return (INDIRECT, [target])
            if id(target) in self.done:
                return self.done[id(target)]
            if id(target) in self.building:
                cell: list[Any] = [None]
                self.cells.setdefault(id(target), []).append(cell)
                return (INDIRECT, cell)
            return self(target)
        if id(d) in self.done:
            return self.done[id(d)]
        self.building.add(id(d))
        rebuilt = self._node(d)
        self.building.discard(id(d))
        self.done[id(d)] = rebuilt
        for cell in self.cells.pop(id(d), []):
            cell[0] = rebuilt
        return rebuilt

    def _node(self, d: tuple[Any, ...]) -> tuple[Any, ...]:
        k = d[0]
        if k in _STRUCTS:
            items = list(d[:4])
            for member_name, member in zip(d[4::2], d[5::2], strict=True):
                items += [member_name, self(member)]
            return tuple(items)
        if k == UNION:
            entries = tuple((label, n, self(m)) for label, n, m in d[6])
            default = entries[d[5]] if d[5] >= 0 else None
            table = {entry[0]: entry for i, entry in enumerate(entries) if i != d[5]}
            return (k, d[1], d[2], d[3], self(d[4]), d[5], entries, default, table)
        if k in (SEQUENCE, ARRAY):
            return (k, self(d[1]), d[2])
        if k == ALIAS:
            return (k, d[1], d[2], self(d[3]))
        return d


def enum_tc(repo_id_: str, name_: str, labels: Sequence[str]) -> Any:
    """``ORB.create_enum_tc``, which the wheel breaks (its items lack ``_parent_id``)."""
    items = []
    for i, label in enumerate(labels):
        item = omniORB.EnumItem(label, i)
        item._parent_id = repo_id_
        items.append(item)
    return tcInternal.createTypeCode((ENUM, repo_id_, name_, tuple(items)))


def exception_tc(repo_id_: str, name_: str, fields: Sequence[tuple[str, Any]]) -> Any:
    """``ORB.create_exception_tc``, which the wheel breaks; ``fields`` are (name, TypeCode)."""
    names = [n for n, _ in fields]
    cls = omniORB.createUnknownUserException(repo_id_, names)
    flat: list[Any] = [EXCEPT, cls, repo_id_, name_]
    for field_name, field_tc in fields:
        flat += [field_name, field_tc._d]
    return tcInternal.createTypeCode(tuple(flat))
