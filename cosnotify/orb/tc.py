"""TypeCode builders: what generated code and ``ORB.create_*_tc`` call.

Strategy: each builder checks its arguments (``BAD_PARAM``/``BAD_TYPECODE``
with the OMG minor codes), builds the frozen TypeCode of
``cosnotify.orb.typecode`` and, for structs and unions, binds any
``recursive_tc`` placeholders for its own repository id (CORBA 2.6 section
10.7.3).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cosnotify.orb.exceptions import BAD_PARAM, BAD_TYPECODE, COMPLETED_NO
from cosnotify.orb.typecode import (
    DEFAULT_LABEL,
    INTEGER_RANGES,
    K_ABSTRACT_INTERFACE,
    K_ARRAY,
    K_BOOLEAN,
    K_CHAR,
    K_ENUM,
    K_EXCEPT,
    K_LOCAL_INTERFACE,
    K_OBJREF,
    K_SEQUENCE,
    K_STRING,
    K_STRUCT,
    K_WCHAR,
    K_WSTRING,
    AliasTC,
    EnumTC,
    FixedTC,
    ObjrefTC,
    RecursiveTC,
    SequenceTC,
    StringTC,
    StructTC,
    TC_string,
    TC_wstring,
    TypeCode,
    UnionTC,
    _bind_recursion,
    resolve,
)
from cosnotify.orb.values import EnumItem

__all__ = [
    "DEFAULT_LABEL",
    "abstract_interface_tc",
    "alias_tc",
    "array_tc",
    "enum_tc",
    "exception_tc",
    "fixed_tc",
    "local_interface_tc",
    "objref_tc",
    "recursive_tc",
    "sequence_tc",
    "string_tc",
    "struct_tc",
    "union_tc",
    "wstring_tc",
]


def _check_name(name: str, what: str) -> None:
    if not isinstance(name, str):
        raise BAD_PARAM(15 | 0x4F4D0000, COMPLETED_NO, f"{what} must be a string, got {name!r}")


def struct_tc(repo_id: str, name: str, members: Sequence[tuple[str, TypeCode]]) -> StructTC:
    """A struct TypeCode; ``members`` is a sequence of (name, TypeCode)."""
    return _struct_like(K_STRUCT, repo_id, name, members)


def exception_tc(repo_id: str, name: str, members: Sequence[tuple[str, TypeCode]]) -> StructTC:
    """An exception TypeCode; ``members`` is a sequence of (name, TypeCode)."""
    return _struct_like(K_EXCEPT, repo_id, name, members)


def _struct_like(kind: int, repo_id: str, name: str,
                 members: Sequence[tuple[str, TypeCode]]) -> StructTC:
    _check_name(repo_id, "repository id")
    names = tuple(m[0] for m in members)
    types = tuple(m[1] for m in members)
    named = [n for n in names if n]  # compact TypeCodes leave names empty (10.7.1)
    if len(set(named)) != len(named):
        raise BAD_PARAM(17 | 0x4F4D0000, COMPLETED_NO, f"{name}: duplicate member names {names}")
    for member_type in types:
        if not isinstance(member_type, TypeCode):
            raise BAD_TYPECODE(2 | 0x4F4D0000, COMPLETED_NO, f"{name}: {member_type!r} is not a TypeCode")
    result = StructTC(kind, repo_id, name, names, types)
    _bind_recursion(result, repo_id, types)
    return result


def union_tc(repo_id: str, name: str, discriminator: TypeCode,
             members: Sequence[tuple[Any, str, TypeCode]], default_index: int = -1) -> UnionTC:
    """A union TypeCode; ``members`` is a sequence of (label, name, TypeCode).

    Use :data:`DEFAULT_LABEL` as the label of the default member. Members with
    several labels appear once per label, consecutively, as in CDR.
    """
    _check_name(repo_id, "repository id")
    disc = resolve(discriminator).unalias()
    if disc._k not in INTEGER_RANGES and disc._k not in (K_BOOLEAN, K_CHAR, K_WCHAR, K_ENUM):
        raise BAD_PARAM(20 | 0x4F4D0000, COMPLETED_NO, f"{name}: bad discriminator type {discriminator!r}")
    labels = tuple(m[0] for m in members)
    explicit = [lab for lab in labels if lab is not DEFAULT_LABEL]
    if len(set(map(_label_key, explicit))) != len(explicit):
        raise BAD_PARAM(18 | 0x4F4D0000, COMPLETED_NO, f"{name}: duplicate union labels")
    defaults = [i for i, lab in enumerate(labels) if lab is DEFAULT_LABEL]
    if len(defaults) > 1 or (defaults and default_index not in defaults):
        default_index = defaults[0] if len(defaults) == 1 else -2
    if default_index == -2 or (default_index >= 0 and not defaults):
        raise BAD_PARAM(19 | 0x4F4D0000, COMPLETED_NO, f"{name}: bad default member")
    types = tuple(m[2] for m in members)
    result = UnionTC(repo_id, name, discriminator, labels, tuple(m[1] for m in members), types,
                     default_index)
    _bind_recursion(result, repo_id, types)
    return result


def _label_key(label: Any) -> Any:
    return (label._n, label._v) if isinstance(label, EnumItem) else (type(label) is bool, label)


def enum_tc(repo_id: str, name: str, member_names: Sequence[str]) -> EnumTC:
    """An enum TypeCode."""
    _check_name(repo_id, "repository id")
    return EnumTC(repo_id, name, tuple(member_names))


def alias_tc(repo_id: str, name: str, original: TypeCode) -> AliasTC:
    """A typedef TypeCode."""
    _check_name(repo_id, "repository id")
    return AliasTC(repo_id, name, original)


def objref_tc(repo_id: str, name: str) -> ObjrefTC:
    """An interface (object reference) TypeCode."""
    _check_name(repo_id, "repository id")
    return ObjrefTC(K_OBJREF, repo_id, name)


def abstract_interface_tc(repo_id: str, name: str) -> ObjrefTC:
    return ObjrefTC(K_ABSTRACT_INTERFACE, repo_id, name)


def local_interface_tc(repo_id: str, name: str) -> ObjrefTC:
    return ObjrefTC(K_LOCAL_INTERFACE, repo_id, name)


def string_tc(bound: int = 0) -> StringTC:
    return TC_string if bound == 0 else StringTC(K_STRING, _check_bound(bound))


def wstring_tc(bound: int = 0) -> StringTC:
    return TC_wstring if bound == 0 else StringTC(K_WSTRING, _check_bound(bound))


def sequence_tc(bound: int, element: TypeCode) -> SequenceTC:
    return SequenceTC(K_SEQUENCE, _check_bound(bound), element)


def array_tc(length: int, element: TypeCode) -> SequenceTC:
    if length <= 0:
        raise BAD_PARAM(16 | 0x4F4D0000, COMPLETED_NO, f"array length must be positive, not {length}")
    return SequenceTC(K_ARRAY, length, element)


def fixed_tc(digits: int, scale: int) -> FixedTC:
    if not (1 <= digits <= 31 and 0 <= scale <= digits):
        raise BAD_PARAM(16 | 0x4F4D0000, COMPLETED_NO, f"bad fixed<{digits},{scale}>")
    return FixedTC(digits, scale)


def recursive_tc(repo_id: str) -> RecursiveTC:
    return RecursiveTC(repo_id)


def _check_bound(bound: int) -> int:
    if not 0 <= bound <= 2**32 - 1:
        raise BAD_PARAM(16 | 0x4F4D0000, COMPLETED_NO, f"bad bound {bound}")
    return bound
