"""The steps of a ``$`` component path, one closure per AST step (§2.4.2-2.4.6).

A step maps a ``(value, descriptor)`` pair to the pair it names, or None when
it cannot be resolved; steps never raise (``paths`` chains them behind a root
into a *locator*). Every step first passes over unnamed ``any`` layers and
typedefs (§2.4.2: the run-time engine "quietly" passes over unnamed layers),
then applies one rule:

- ``.name`` / ``.3``: a struct member by name or position (§2.4.6); ``.name``
  on a union is its member of that name when that member is active;
- ``.(label)`` / ``.()``: the union member the label (or ``default:``)
  selects, resolvable only while that member is the active one (§2.4.6; see
  docs/filters.md decision 31); as the operand of ``exist``, only while the
  discriminator is that label ("exist $. (0)" is equivalent to "$. _d == 0");
- ``.(e5)`` (omniNotify's extension): the same, the label given by the name of
  an enumerator of the union's enum discriminator (docs/filters.md,
  "omniNotify extension");
- ``[n]``: an element of a sequence or array;
- ``(name)``: the value paired with ``name`` in a sequence of name-value
  structs (§2.4.4), the first such pair winning;
- ``._length``, ``._d``, ``._type_id``, ``._repos_id`` (§2.4.2).

Types are omniORB descriptors (``any._t._d``), walked with
:mod:`cosnotify.corba.descriptors`: a pair is ``(value, descriptor)``. Both
indirection markers are followed (``tv__indirect`` from stubs, the wheel's
``0xffffffff`` on TypeCodes from the wire), and values of types this process
has no stubs for (``UnknownStruct``, ``UnknownUnion``, ``EnumItem``) are read
by attribute like generated ones; an IDL member named like a Python keyword
is omniORB's attribute ``_name``. No ``CORBA.TypeCode`` method is ever called.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeAlias

from cosnotify.corba import descriptors as D
from cosnotify.corba.descriptors import Descriptor
from cosnotify.filter import ast
from cosnotify.filter.runtime import INTEGER_KINDS, Fail, strip

__all__ = [
    "STRING",
    "Pair",
    "Step",
    "assoc",
    "field",
    "is_default_active",
    "is_struct",
    "make_step",
    "member",
    "member_index",
]

Pair: TypeAlias = tuple[Any, Descriptor]
Step: TypeAlias = Callable[[Any, Descriptor], "Pair | None"]

STRING: Final[Descriptor] = (D.STRING, 0)
_STRING_KINDS: Final = frozenset({D.STRING, D.WSTRING})
_STRUCTS: Final = frozenset({D.STRUCT, D.EXCEPT})
_SEQUENCES: Final = frozenset({D.SEQUENCE, D.ARRAY})

#: ``_type_id`` of the unnamed basic types: their IDL spelling (§2.4.7 example 'short').
_BASIC_NAMES: Final = {
    D.SHORT: "short", D.LONG: "long", D.USHORT: "unsigned short", D.ULONG: "unsigned long",
    D.FLOAT: "float", D.DOUBLE: "double", D.BOOLEAN: "boolean", D.CHAR: "char",
    D.OCTET: "octet", D.ANY: "any", D.TYPECODE: "TypeCode", D.PRINCIPAL: "Principal",
    D.STRING: "string", D.LONGLONG: "long long", D.ULONGLONG: "unsigned long long",
    D.LONGDOUBLE: "long double", D.WCHAR: "wchar", D.WSTRING: "wstring", D.FIXED: "fixed",
}


# -- descriptors ------------------------------------------------------------------------------


def is_struct(d: Descriptor) -> bool:
    return type(d) is tuple and d[0] in _STRUCTS


def member_index(d: Descriptor, attr: str, name: str) -> int:
    """The index in struct descriptor ``d`` of the member named ``name`` (its Python
    attribute ``attr``), or -1. Names sit at even positions from 4 and nothing
    at an odd one is a string, so ``tuple.index`` finds only names."""
    try:
        return d.index(attr, 4)  # type: ignore[no-any-return]
    except ValueError:
        pass
    if attr != name:  # a descriptor built in process with the IDL spelling
        try:
            return d.index(name, 4)  # type: ignore[no-any-return]
        except ValueError:
            pass
    return -1


def field(value: Any, d: Descriptor, i: int) -> Any:
    """Member ``i`` (a descriptor index) of struct ``value``; a TypeCode without
    member names (CORBA does not require them) leaves only ``_values``."""
    attr = d[i]
    if attr:
        return getattr(value, attr)
    return value._values[(i - 4) // 2]


def _struct_or_union(value: Any, d: Descriptor) -> tuple[Any, Descriptor] | None:
    found = strip(value, d)
    if found is None:
        return None
    base = found[2]
    if type(base) is not tuple:
        return None
    return found[0], base


def _same_member(base: Descriptor, a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Do entries ``a`` and ``b`` of union descriptor ``base`` (one per label: the labels
    of one member repeat its name and type) belong to one member?

    Named entries are one member when their names are equal. Without names (§2.4.6:
    "CORBA does not require that the names of IDL type members be marshaled into the
    TypeCode"), the labels of one member are the consecutive entries of one type, so
    entries of one run of unnamed, equivalent types are one member: §2.4.6's
    ``$. _d == 2 and $. (0) != 'hoob'`` must hold with or without names. Two
    distinct consecutive members of one type are then read as one (such a TypeCode
    cannot tell them apart; docs/filters.md decision 31).
    """
    if a is b:
        return True
    if a[1] or b[1]:
        return bool(a[1] == b[1])
    entries = base[6]
    i, j = _entry_index(entries, a), _entry_index(entries, b)
    if i < 0 or j < 0:
        return False
    if i > j:
        i, j = j, i
    kind = a[2]
    return all(not entries[k][1] and (entries[k][2] is kind or D.equivalent(entries[k][2], kind))
               for k in range(i, j + 1))


def _entry_index(entries: tuple[tuple[Any, ...], ...], entry: tuple[Any, ...]) -> int:
    """The position of ``entry`` in a union's entries (by identity, else equality), or -1."""
    for k, candidate in enumerate(entries):
        if candidate is entry:
            return k
    for k, candidate in enumerate(entries):
        if candidate == entry:
            return k
    return -1


# -- steps ------------------------------------------------------------------------------------


def member(name: str) -> Step:
    attr = D.attribute(name)

    def step(value: Any, d: Descriptor) -> Pair | None:
        if type(d) is not tuple or d[0] != D.STRUCT:
            found = _struct_or_union(value, d)
            if found is None:
                return None
            value, d = found
            k = d[0]
            if k == D.UNION:
                active = D.union_select(d, value._d)
                if active is not None and (active[1] == attr or active[1] == name):
                    return value._v, active[2]
                return None
            if k not in _STRUCTS:
                return None
        try:
            i = d.index(attr, 4)  # names sit at even positions from 4 (see member_index)
        except ValueError:
            i = member_index(d, attr, name)
            if i < 0:
                return None
            return field(value, d, i), d[i + 1]
        return getattr(value, attr), d[i + 1]
    return step


def _position(index: int) -> Step:
    at = 4 + 2 * index

    def step(value: Any, d: Descriptor) -> Pair | None:
        if type(d) is not tuple or d[0] != D.STRUCT:
            found = _struct_or_union(value, d)
            if found is None:
                return None
            value, d = found
            if d[0] not in _STRUCTS:
                return None
        if at + 1 < len(d):
            return field(value, d, at), d[at + 1]
        return None
    return step


_NO_LABEL: Final = object()


def _label_value(label: int | str, disc: Descriptor) -> Any:
    """The discriminator value a ``<UnionVal>`` label stands for (§2.4.6, decision 8)."""
    base = D.unalias(disc)
    if type(base) is int:
        if base in INTEGER_KINDS:
            return label if type(label) is int else _NO_LABEL
        if base == D.BOOLEAN:
            return bool(label) if type(label) is int and label in (0, 1) else _NO_LABEL
        if base in (D.CHAR, D.WCHAR):
            if isinstance(label, str):
                return label if len(label) == 1 else _NO_LABEL
            return chr(label) if 0 <= label < 0x110000 else _NO_LABEL
        return _NO_LABEL
    if base[0] == D.ENUM and type(label) is int:
        items = base[3]
        return items[label] if 0 <= label < len(items) else _NO_LABEL
    return _NO_LABEL


def _union_member(label_of: Callable[[Descriptor], Any], exist: bool) -> Step:
    """A step to the union member the label ``label_of(union descriptor)`` selects
    (``None``: the ``default:`` member; ``_NO_LABEL``: nothing), resolvable only
    while that member is the active one (decision 31). With ``exist``, only while
    the discriminator is that very label (§2.4.6: "exist $. (0)" is TRUE "if and
    only if the discriminator is set to 0")."""
    def step(value: Any, d: Descriptor) -> Pair | None:
        found = _struct_or_union(value, d)
        if found is None:
            return None
        value, base = found
        if base[0] != D.UNION:
            return None
        label = label_of(base)
        if label is _NO_LABEL:
            return None
        target = base[7] if label is None else D.union_select(base, label)
        active = D.union_select(base, value._d)
        if target is None or active is None or not _same_member(base, active, target):
            return None
        if exist and label is not None and not bool(value._d == label):
            return None
        return value._v, active[2]
    return step


def _union_arm(label: int | str | None, exist: bool) -> Step:
    def label_of(base: Descriptor) -> Any:
        return None if label is None else _label_value(label, base[4])
    return _union_member(label_of, exist)


def _enumerator(disc: Descriptor, name: str) -> Any:
    """The enumerator named ``name`` of discriminator ``disc``, or ``_NO_LABEL`` when
    ``disc`` is no enum or has no such enumerator."""
    base = D.unalias(disc)
    if type(base) is not tuple or base[0] != D.ENUM:
        return _NO_LABEL
    for item in base[3]:
        if item._n == name:
            return item
    return _NO_LABEL


def _union_enum_label(name: str, exist: bool) -> Step:
    """``.(name)``: ``.(n)`` for the ordinal ``n`` of enumerator ``name`` (omniNotify).

    Which enumerator a name stands for is remembered for the last discriminator
    descriptor seen: events of one stub type share it.
    """
    last: list[tuple[Any, Any]] = [(None, _NO_LABEL)]  # replaced whole (atomic)

    def label_of(base: Descriptor) -> Any:
        disc = base[4]
        seen, label = last[0]
        if seen is not disc:
            label = _enumerator(disc, name)
            last[0] = (disc, label)
        return label
    return _union_member(label_of, exist)


def _index(index: int) -> Step:
    def step(value: Any, d: Descriptor) -> Pair | None:
        if type(d) is not tuple or d[0] not in _SEQUENCES:
            found = strip(value, d)
            if found is None:
                return None
            value, _, d = found
            if type(d) is not tuple or d[0] not in _SEQUENCES:
                return None
        if index < len(value):
            return value[index], d[1]
        return None
    return step


def _nv_struct(base: Descriptor) -> Descriptor | None:
    """The element struct of a name-value list: ``{string name; <T> value; ...}`` (§2.4.4)."""
    if type(base) is not tuple or base[0] not in _SEQUENCES:
        return None
    element = D.unalias(base[1])
    if is_struct(element) and len(element) >= 8:
        first = D.unalias(element[5])
        if type(first) is tuple and first[0] in _STRING_KINDS:
            return element
    return None


def assoc(name: str) -> Step:
    def step(value: Any, d: Descriptor) -> Pair | None:
        found = strip(value, d)
        if found is None:
            return None
        value, _, base = found
        element = _nv_struct(base)
        if element is None:
            return None
        key, val = element[4], element[6]
        if key and val:
            for pair in value:
                if getattr(pair, key) == name:
                    return getattr(pair, val), element[7]
            return None
        for pair in value:  # member names not in the TypeCode
            if field(pair, element, 4) == name:
                return field(pair, element, 6), element[7]
        return None
    return step


def _length(value: Any, d: Descriptor) -> Pair | None:
    found = strip(value, d)
    if found is None:
        return None
    base = found[2]
    if type(base) is not tuple or base[0] not in _SEQUENCES:
        return None
    return len(found[0]), D.ULONG


def _discriminator(value: Any, d: Descriptor) -> Pair | None:
    found = strip(value, d)
    if found is None:
        return None
    base = found[2]
    if type(base) is not tuple or base[0] != D.UNION:
        return None
    return found[0]._d, base[4]


def _type_id(value: Any, d: Descriptor) -> Pair | None:
    found = strip(value, d)
    if found is None:
        return None
    declared = found[1]
    name = D.name(declared)
    if name is None:
        name = _BASIC_NAMES.get(D.kind(declared), "")
    return (name, STRING) if name else None


def _repos_id(value: Any, d: Descriptor) -> Pair | None:
    found = strip(value, d)
    if found is None:
        return None
    repo_id = D.repo_id(found[1])
    return (repo_id, STRING) if repo_id else None


_IMPLICIT: Final[dict[ast.Implicit, Step]] = {
    ast.Implicit.LENGTH: _length,
    ast.Implicit.DISCRIMINATOR: _discriminator,
    ast.Implicit.TYPE_ID: _type_id,
    ast.Implicit.REPOSITORY_ID: _repos_id,
}


def make_step(step: ast.Step, exist: bool = False) -> Step:
    """The closure for one component step; with ``exist``, for the operand of
    ``exist``, where a union label resolves only while the discriminator is that
    label (§2.4.6, decision 31)."""
    if isinstance(step, ast.Member):
        return member(step.name)
    if isinstance(step, ast.Position):
        return _position(step.index)
    if isinstance(step, ast.UnionArm):
        return _union_arm(step.label, exist)
    if isinstance(step, ast.UnionEnumLabel):
        return _union_enum_label(step.name, exist)
    if isinstance(step, ast.Index):
        return _index(step.index)
    if isinstance(step, ast.Assoc):
        return assoc(step.name)
    return _IMPLICIT[step.kind]


# -- default ---------------------------------------------------------------------------------


def is_default_active(found: Pair | None) -> bool:
    """``default $.u`` (§2.4.2-2.4.3): the union's ``default:`` member is active.

    An operand that is not a union is an error; a union without a default
    member gives FALSE.
    """
    if found is None:
        raise Fail
    located = strip(*found)
    if located is None:
        raise Fail
    value, _, base = located
    if type(base) is not tuple or base[0] != D.UNION:
        raise Fail
    default = base[7]
    if default is None:
        return False
    active = D.union_select(base, value._d)
    return active is not None and _same_member(base, active, default)
