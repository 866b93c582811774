"""Hypothesis strategies of omniORB TypeCodes and values for them (tests/spark).

TypeCodes are built the way ``ORB.create_*_tc`` builds them (``tcInternal``),
so no ORB is needed at import time; their structs and unions get omniORB's
``UnknownStruct``/``UnknownUnion`` classes, like types a process has no stubs
for. Every IDL kind omniORBpy can marshal is generated except object
references (they need an ORB and a live reference; tested by hand): long
double is not supported by omniORBpy.
"""

from __future__ import annotations

import itertools
from typing import Any

import omniORB
from hypothesis import strategies as st
from omniORB import CORBA, tcInternal

from cosnotify.corba import descriptors as D

_ids = itertools.count()

PRIMITIVES = [
    CORBA.TC_short, CORBA.TC_long, CORBA.TC_longlong, CORBA.TC_ushort, CORBA.TC_ulong,
    CORBA.TC_ulonglong, CORBA.TC_float, CORBA.TC_double, CORBA.TC_boolean, CORBA.TC_char,
    CORBA.TC_wchar, CORBA.TC_octet, CORBA.TC_string, CORBA.TC_wstring, CORBA.TC_TypeCode,
    CORBA.TC_null,
]
INTEGER_RANGES = {
    D.SHORT: (-(2**15), 2**15 - 1), D.LONG: (-(2**31), 2**31 - 1),
    D.LONGLONG: (-(2**63), 2**63 - 1), D.USHORT: (0, 2**16 - 1), D.ULONG: (0, 2**32 - 1),
    D.ULONGLONG: (0, 2**64 - 1), D.OCTET: (0, 255),
}

identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)


def fresh_id(kind: str) -> str:
    return f"IDL:test/spark/{kind}{next(_ids)}:1.0"


def struct_tc(repo_id: str, name: str, members: list[tuple[str, Any]]) -> Any:
    """``ORB.create_struct_tc`` from (name, TypeCode) pairs."""
    return tcInternal.createStructTC(repo_id, name,
                                     [CORBA.StructMember(n, t, None) for n, t in members])


def union_tc(repo_id: str, name: str, disc: Any, members: list[tuple[Any, str, Any]],
             default: int = -1) -> Any:
    """``ORB.create_union_tc`` from (label, name, TypeCode); ``default`` marks the default member.

    Built like tcInternal.createUnionTC (the default's label is -1), but with the
    discriminator's descriptor: the wheel's createUnionTC puts only its kind
    there, which breaks enum and alias discriminators.
    """
    entries = tuple((-1 if i == default else label, n, t._d)
                    for i, (label, n, t) in enumerate(members))
    cls = omniORB.createUnknownUnion(repo_id, default, entries)
    d = (D.UNION, cls, repo_id, name, disc._d, default, entries,
         entries[default] if default >= 0 else None,
         {entry[0]: entry for i, entry in enumerate(entries) if i != default})
    return tcInternal.createTypeCode(d)


def _struct(members: list[Any], name: str) -> Any:
    return struct_tc(fresh_id("S"), name, [(f"m{i}", t) for i, t in enumerate(members)])


def _union(members: list[Any], use_default: bool) -> Any:
    default = len(members) - 1 if use_default and len(members) > 1 else -1
    return union_tc(fresh_id("U"), "U", CORBA.TC_long,
                    [(i, f"u{i}", t) for i, t in enumerate(members)], default)


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(tcInternal.createSequenceTC, st.sampled_from([0, 3]), children),
        st.builds(tcInternal.createArrayTC, st.integers(1, 3), children),
        st.builds(_struct, st.lists(children, min_size=0, max_size=4), identifiers),
        st.builds(_union, st.lists(children, min_size=1, max_size=3), st.booleans()),
        st.builds(lambda c: tcInternal.createAliasTC(fresh_id("A"), "A", c), children),
    )


typecodes: st.SearchStrategy[Any] = st.recursive(
    st.one_of(
        st.sampled_from(PRIMITIVES),
        st.builds(lambda n: D.enum_tc(fresh_id("E"), "E", [f"e{i}" for i in range(n)]),
                  st.integers(1, 4)),
        st.builds(tcInternal.createStringTC, st.integers(1, 5)),
        st.builds(lambda d, s: tcInternal.createFixedTC(d, min(s, d)), st.integers(1, 31),
                  st.integers(0, 8)),
        st.just(CORBA.TC_any),
    ),
    _extend,
    max_leaves=8,
)

_chars = st.characters(max_codepoint=255, exclude_characters="\0")
_wchars = st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",), exclude_characters="\0")


def values_for(tc: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """A strategy of omniORB values that fit TypeCode ``tc``."""
    return _values(D.resolve(tc._d), depth)


def _values(d: Any, depth: int) -> st.SearchStrategy[Any]:
    d = D.resolve(d)
    k = D.kind(d)
    if k in INTEGER_RANGES:
        return st.integers(*INTEGER_RANGES[k])
    if k == D.FLOAT:
        return st.floats(width=32, allow_nan=False)
    if k == D.DOUBLE:
        return st.floats(allow_nan=False)
    if k == D.BOOLEAN:
        return st.booleans()
    if k == D.CHAR:
        return _chars
    if k == D.WCHAR:
        return _wchars
    if k in (D.STRING, D.WSTRING):
        return st.text(_chars if k == D.STRING else _wchars, max_size=d[1] or 8)
    if k == D.TYPECODE:
        return st.sampled_from(PRIMITIVES)
    if k == D.NULL:
        return st.none()
    if k == D.ENUM:
        return st.sampled_from(d[3])
    if k == D.FIXED:
        digits, scale = d[1], d[2]
        limit = 10 ** digits - 1
        return st.integers(-limit, limit).map(lambda n: CORBA.fixed(digits, scale, n))
    if k == D.ANY:
        if depth > 2:
            return st.just(CORBA.Any(CORBA.TC_long, 7))
        return st.sampled_from(PRIMITIVES[:8]).flatmap(
            lambda inner: values_for(inner, depth + 1).map(lambda v: CORBA.Any(inner, v)))
    if k == D.ALIAS:
        return _values(d[3], depth)
    if k in (D.SEQUENCE, D.ARRAY):
        content, size = d[1], d[2]
        inner = D.kind(content)  # bytes and str only for octet and char themselves, not aliases
        low, high = (size, size) if k == D.ARRAY else (0, size or 3)
        if inner == D.OCTET:
            return st.binary(min_size=low, max_size=high)
        if inner == D.CHAR:
            return st.text(_chars, min_size=low, max_size=high)
        return st.lists(_values(content, depth + 1), min_size=low, max_size=high)
    if k in (D.STRUCT, D.EXCEPT):
        cls = d[1]
        return st.tuples(*[_values(t, depth + 1) for t in d[5::2]]).map(lambda vs: cls(*vs))
    if k == D.UNION:
        cls = d[1]
        options = []
        for i, (label, _, member) in enumerate(d[6]):
            disc = -1 if i == d[5] else label  # createUnionTC leaves -1 free for the default
            options.append(_values(member, depth + 1).map(lambda v, disc=disc: cls(disc, v)))
        return st.one_of(options)
    raise NotImplementedError(repr(d))


typed_values: st.SearchStrategy[tuple[Any, Any]] = typecodes.flatmap(
    lambda t: st.tuples(st.just(t), values_for(t)))


def has_kind(tc: Any, kinds: frozenset[int]) -> bool:
    """Does ``tc`` use one of ``kinds`` anywhere (Anys inside values aside)?"""
    seen: set[int] = set()

    def walk(d: Any) -> bool:
        d = D.resolve(d)
        if type(d) is int:
            return d in kinds
        if id(d) in seen:
            return False
        seen.add(id(d))
        if d[0] in kinds:
            return True
        if d[0] in (D.STRUCT, D.EXCEPT):
            return any(walk(m) for m in d[5::2])
        if d[0] == D.UNION:
            return walk(d[4]) or any(walk(m) for _, _, m in d[6])
        if d[0] in (D.SEQUENCE, D.ARRAY):
            return walk(d[1])
        if d[0] == D.ALIAS:
            return walk(d[3])
        return False

    return walk(tc._d)


def recursive_struct_tc(repo_id: str, name: str) -> Any:
    """``struct Name { long v; sequence<Name> kids; }``, built as omniidl's stubs build it.

    (``ORB.create_recursive_tc`` leaves the repository id in the indirection,
    which only resolves for types registered by stubs.)
    """
    cell: list[Any] = [None]
    d = (D.STRUCT, omniORB.createUnknownStruct(repo_id, ["v", "kids"]), repo_id, name,
         "v", D.LONG, "kids", (D.SEQUENCE, (D.INDIRECT, cell), 0))
    cell[0] = d
    return tcInternal.createTypeCode(d)


def recursive_union_tc(repo_id: str, name: str) -> Any:
    """``union Name switch (boolean) { case TRUE: sequence<Name> kids; case FALSE: string leaf; }``"""
    cell: list[Any] = [None]
    entries = ((True, "kids", (D.SEQUENCE, (D.INDIRECT, cell), 0)), (False, "leaf", (D.STRING, 0)))
    d = (D.UNION, omniORB.createUnknownUnion(repo_id, -1, entries), repo_id, name, D.BOOLEAN, -1,
         entries, None, {entry[0]: entry for entry in entries})
    cell[0] = d
    return tcInternal.createTypeCode(d)
