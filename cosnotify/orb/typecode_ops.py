"""TypeCode comparison and compaction (CORBA 2.6 section 10.7.1).

Strategy: one recursive comparison serves both ``equal`` (every operation
answers alike: names and ids count) and ``equivalent`` (aliases stripped;
where both have repository ids, the ids decide). A set of pairs already
being compared makes it terminate on recursive TypeCodes (co-induction).
"""

from __future__ import annotations

from typing import Any

from cosnotify.orb.typecode import (
    _NAMED_KINDS,
    AliasTC,
    EnumTC,
    FixedTC,
    ObjrefTC,
    RecursiveTC,
    SequenceTC,
    SimpleTC,
    StringTC,
    StructTC,
    TypeCode,
    UnionTC,
    resolve,
)
from cosnotify.orb.values import EnumItem

__all__ = ["compact", "compare"]


def compare(a: TypeCode, b: TypeCode, strict: bool, seen: set[tuple[int, int]]) -> bool:
    a, b = resolve(a), resolve(b)
    if not strict:
        a, b = _strip_aliases(a), _strip_aliases(b)
    if a is b:
        return True
    if a._k != b._k:
        return False
    key = (id(a), id(b))
    if key in seen:  # a cycle we are already comparing: assume equal (co-induction)
        return True
    seen.add(key)
    k = a._k
    if k in _NAMED_KINDS:
        if strict:
            if a.id() != b.id() or a.name() != b.name():
                return False
        elif a.id() and b.id():
            return a.id() == b.id()
    if isinstance(a, SimpleTC):
        return True
    if isinstance(a, StringTC):
        return bool(a._bound == b._bound)  # type: ignore[attr-defined]
    if isinstance(a, ObjrefTC):
        return True
    if isinstance(a, FixedTC):
        return (a._digits, a._scale) == (b._digits, b._scale)  # type: ignore[attr-defined]
    if isinstance(a, SequenceTC):
        return a._bound == b._bound and compare(a._content, b._content, strict, seen)  # type: ignore[attr-defined]
    if isinstance(a, AliasTC):
        return compare(a._content, b._content, strict, seen)  # type: ignore[attr-defined]
    if isinstance(a, EnumTC):
        return not strict or a._names == b._names  # type: ignore[attr-defined]
    if isinstance(a, StructTC):
        assert isinstance(b, StructTC)
        if len(a._types) != len(b._types) or (strict and a._names != b._names):
            return False
        return all(compare(x, y, strict, seen) for x, y in zip(a._types, b._types))
    if isinstance(a, UnionTC):
        assert isinstance(b, UnionTC)
        if (len(a._types) != len(b._types) or a._default != b._default
                or (strict and a._names != b._names)):
            return False
        if not compare(a._disc, b._disc, strict, seen):
            return False
        if [_label_value(x) for x in a._labels] != [_label_value(x) for x in b._labels]:
            return False
        return all(compare(x, y, strict, seen) for x, y in zip(a._types, b._types))
    return False


def _label_value(label: Any) -> Any:
    return label._v if isinstance(label, EnumItem) else label


def _strip_aliases(tc: TypeCode) -> TypeCode:
    tc = resolve(tc)
    while isinstance(tc, AliasTC):
        tc = resolve(tc._content)
    return tc


def compact(tc: TypeCode, memo: dict[int, TypeCode]) -> TypeCode:
    tc = resolve(tc)
    if id(tc) in memo:
        return memo[id(tc)]
    if isinstance(tc, StructTC):
        placeholder = RecursiveTC(tc._id)
        memo[id(tc)] = placeholder
        types = tuple(compact(t, memo) for t in tc._types)
        out: TypeCode = StructTC(tc._k, tc._id, "", ("",) * len(types), types)
        placeholder._target = out
    elif isinstance(tc, UnionTC):
        placeholder = RecursiveTC(tc._id)
        memo[id(tc)] = placeholder
        types = tuple(compact(t, memo) for t in tc._types)
        out = UnionTC(tc._id, "", compact(tc._disc, memo), tc._labels, ("",) * len(types), types,
                      tc._default)
        placeholder._target = out
    elif isinstance(tc, EnumTC):
        out = EnumTC(tc._id, "", ("",) * len(tc._names))
    elif isinstance(tc, AliasTC):
        out = AliasTC(tc._id, "", compact(tc._content, memo))
    elif isinstance(tc, ObjrefTC):
        out = ObjrefTC(tc._k, tc._id, "")
    elif isinstance(tc, SequenceTC):
        out = SequenceTC(tc._k, tc._bound, compact(tc._content, memo))
    else:
        out = tc
    memo[id(tc)] = out
    return out
