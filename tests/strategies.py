"""Hypothesis strategies shared by the test suite.

Sections are owned by the package they exercise; append new sections rather
than editing others.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import strategies as st

# -- cosnotify.filter: EXTENDED_TCL constraint ASTs and text --------------------------
from cosnotify.filter import ast as tcl

_TCL_IMPLICIT_NAMES = [item.value for item in tcl.Implicit]

#: Identifiers, with keywords and implicit-member names mixed in on purpose.
tcl_names: st.SearchStrategy[str] = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True),
    st.sampled_from(sorted(tcl.KEYWORDS) + _TCL_IMPLICIT_NAMES + ["curtime", "e", "E1"]),
)
_tcl_unsigned = st.one_of(st.integers(0, 20), st.integers(0, tcl.MAX_INTEGER))
_tcl_text = st.text(st.characters(exclude_characters="\0", exclude_categories=["Cs"]),
                    max_size=8)

tcl_steps: st.SearchStrategy[tcl.Step] = st.one_of(
    st.builds(tcl.Member, tcl_names),
    st.builds(tcl.Position, _tcl_unsigned),
    st.builds(tcl.UnionArm, st.one_of(
        st.none(), st.integers(-tcl.MAX_INTEGER, tcl.MAX_INTEGER), _tcl_text)),
    st.builds(tcl.Index, _tcl_unsigned),
    st.builds(tcl.Assoc, tcl_names),
)
#: Plus omniNotify's enumerator label ``.(name)`` (docs/filters.md, "omniNotify extension").
tcl_steps = tcl_steps | st.builds(tcl.UnionEnumLabel, tcl_names)


@st.composite
def tcl_components(draw: Any) -> tcl.Component:
    """A ``$`` component: maybe a run-time variable, a few steps, maybe an implicit member."""
    variable = draw(st.none() | tcl_names)
    escaped = variable is not None and (variable in tcl.KEYWORDS or draw(st.booleans()))
    steps = draw(st.lists(tcl_steps, max_size=4))
    if draw(st.booleans()):
        steps.append(tcl.ImplicitMember(draw(st.sampled_from(list(tcl.Implicit)))))
    return tcl.Component(variable, escaped, tuple(steps))


tcl_identifiers = st.builds(tcl.Identifier, tcl_names)

_tcl_leaves: st.SearchStrategy[tcl.Expression] = st.one_of(
    st.builds(tcl.IntegerLiteral, st.one_of(
        st.integers(-1000, 1000), st.integers(-tcl.MAX_INTEGER, tcl.MAX_INTEGER))),
    st.builds(tcl.FloatLiteral, st.floats(allow_nan=False, allow_infinity=False)),
    st.builds(tcl.StringLiteral, _tcl_text),
    st.builds(tcl.BooleanLiteral, st.booleans()),
    tcl_identifiers,
    tcl_components(),
    st.builds(tcl.Exist, tcl_identifiers | tcl_components()),
    st.builds(tcl.Default, tcl_components()),
)


def _tcl_flat(kind: type[tcl.Or | tcl.And], items: list[Any]) -> Any:
    operands: list[Any] = []
    for item in items:
        operands.extend(item.operands if isinstance(item, kind) else [item])
    return kind(operands)


def _tcl_or(items: list[Any]) -> Any:
    return _tcl_flat(tcl.Or, items)


def _tcl_and(items: list[Any]) -> Any:
    return _tcl_flat(tcl.And, items)


def _tcl_extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(tcl.BinaryOp, st.sampled_from(list(tcl.BinaryOperator)), children, children),
        st.builds(tcl.In, children, tcl_identifiers | tcl_components()),
        st.builds(tcl.Not, children),
        st.lists(children, min_size=2, max_size=4).map(_tcl_or),
        st.lists(children, min_size=2, max_size=4).map(_tcl_and),
    )


#: Any valid constraint AST (small; well under ``tcl.MAX_DEPTH``).
tcl_expressions: st.SearchStrategy[tcl.Expression] = st.recursive(
    _tcl_leaves, _tcl_extend, max_leaves=12)

_TCL_FRAGMENTS = [
    "$", ".", "(", ")", "[", "]", "'", "'x'", "\\", "\\in", "\\$", "_d", "_length", "in", "and",
    "or", "not", "exist", "default", "TRUE", "FALSE", "true", "0", "1", "42", "1.5", ".5",
    "5.", "1e+3", "e", "x", "a1", "+", "-", "*", "/", "~", "==", "!=", "<", "<=", ">", ">=",
    "=", "%", ",", ":", ":v:", "\"", "#", "@", "\n", "\t", "\0", "é", "'\\x41'", "'\\777'",
]

#: Text that looks like a constraint: valid and invalid fragments glued together.
tcl_token_soup: st.SearchStrategy[str] = st.lists(
    st.tuples(st.sampled_from(_TCL_FRAGMENTS), st.sampled_from(["", " "])), max_size=12,
).map(lambda parts: "".join(a + b for a, b in parts))


# -- omniORB TypeCodes and values for them (filters, Spark bridge) -----------------------
# TypeCodes are built the way ``ORB.create_*_tc`` builds them (``tcInternal``), so no
# ORB is needed at import time; their structs and unions get omniORB's
# ``UnknownStruct``/``UnknownUnion`` classes, like types a process has no stubs for.
# Every IDL kind omniORBpy can marshal is generated except object references (they
# need an ORB and a live reference; tested by hand): long double is not supported.

import omniORB
from omniORB import CORBA, tcInternal

import CosNotification as _Notification

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
    return f"IDL:test/omni/{kind}{next(_ids)}:1.0"


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

_chars = st.characters(max_codepoint=255)  # a char may be NUL; a string may not hold one
_string_chars = st.characters(max_codepoint=255, exclude_characters="\0")
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
        return st.text(_string_chars if k == D.STRING else _wchars, max_size=d[1] or 8)
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
        if content == D.ULONGLONG:
            # omniORBpy 4.3.3 cannot marshal an unsigned long long >= 2**63 in a
            # sequence or array of ulonglong itself (SystemError from OverflowError;
            # scalars, aliases and struct members are fine): docs/orb.md, "The
            # wheel's defects", pinned in tests/corba/test_descriptors.py.
            return st.lists(st.integers(0, 2**63 - 1), min_size=low, max_size=high)
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


# -- cosnotify.filter: events, and constraints that reach into them -------------------

#: Names shared by generated events and constraints, so lookups often succeed.
#: Struct members from ``typecodes`` are m0, m1 ...; union members u0 ...; enum labels e0 ...
_FILTER_NAMES = ["a", "m0", "m1", "u0", "u1", "priority", "type_name", "domain_name",
                 "event_name", "curtime", "header", "filterable_data", "value", "name"]
filter_names: st.SearchStrategy[str] = st.sampled_from(_FILTER_NAMES)

#: omniORB CORBA.Any values of any generated TypeCode.
filter_anys: st.SearchStrategy[Any] = typed_values.map(lambda pair: CORBA.Any(*pair))

filter_properties: st.SearchStrategy[list[Any]] = st.lists(
    st.builds(_Notification.Property, filter_names, filter_anys), max_size=4)

#: StructuredEvents (omniORB's CosNotification) with generated header and filterable properties.
filter_structured_events: st.SearchStrategy[Any] = st.builds(
    lambda domain, type_name, event_name, variable, filterable, body:
        _Notification.StructuredEvent(
            _Notification.EventHeader(
                _Notification.FixedEventHeader(_Notification.EventType(domain, type_name),
                                               event_name),
                variable),
            filterable, body),
    st.sampled_from(["", "Telecom", "D*"]), st.sampled_from(["", "CommunicationsAlarm", "%ANY"]),
    st.sampled_from(["", "lost_packet"]), filter_properties, filter_properties, filter_anys)

#: Unstructured events: any generated value, or a StructuredEvent in an Any.
filter_any_events: st.SearchStrategy[Any] = st.one_of(
    filter_anys,
    filter_structured_events.map(lambda ev: CORBA.Any(_Notification._tc_StructuredEvent, ev)),
    filter_properties.map(lambda ps: CORBA.Any(_Notification._tc_PropertySeq, ps)))

_filter_steps: st.SearchStrategy[tcl.Step] = st.one_of(
    st.builds(tcl.Member, filter_names),
    st.builds(tcl.Position, st.integers(0, 4)),
    st.builds(tcl.UnionArm, st.one_of(st.none(), st.integers(-1, 4), st.sampled_from(["a", ""]))),
    st.builds(tcl.Index, st.integers(0, 3)),
    st.builds(tcl.Assoc, filter_names),
)


@st.composite
def filter_components(draw: Any) -> tcl.Component:
    """A component over the shared names, maybe ending in an implicit member."""
    variable = draw(st.none() | filter_names)
    escaped = variable is not None and draw(st.booleans())
    steps = draw(st.lists(_filter_steps, max_size=3))
    if draw(st.booleans()):
        steps.append(tcl.ImplicitMember(draw(st.sampled_from(list(tcl.Implicit)))))
    return tcl.Component(variable, escaped, tuple(steps))


_filter_identifiers = st.builds(tcl.Identifier, filter_names | st.sampled_from(["e0", "e1"]))

_filter_leaves: st.SearchStrategy[tcl.Expression] = st.one_of(
    st.builds(tcl.IntegerLiteral, st.one_of(st.integers(-3, 3), st.sampled_from(
        [2**31 - 1, -(2**31), 2**63 - 1, -(2**63), 2**64 - 1]))),
    st.builds(tcl.FloatLiteral, st.sampled_from([0.0, 0.5, -2.5, 1e+300])),
    st.builds(tcl.StringLiteral, st.sampled_from(["", "a", "H", "abc", "CommunicationsAlarm"])),
    st.builds(tcl.BooleanLiteral, st.booleans()),
    _filter_identifiers,
    filter_components(),
    st.builds(tcl.Exist, _filter_identifiers | filter_components()),
    st.builds(tcl.Default, filter_components()),
)


def _filter_extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(tcl.BinaryOp, st.sampled_from(list(tcl.BinaryOperator)), children, children),
        st.builds(tcl.In, children, _filter_identifiers | filter_components()),
        st.builds(tcl.Not, children),
        st.lists(children, min_size=2, max_size=3).map(_tcl_or),
        st.lists(children, min_size=2, max_size=3).map(_tcl_and),
    )


#: Valid constraints whose names and literals often meet the generated events.
filter_expressions: st.SearchStrategy[tcl.Expression] = st.recursive(
    _filter_leaves, _filter_extend, max_leaves=8)


# -- cosnotify.routing: constraints the predicate index decomposes, events that meet them --
# Few names and literals, so generated constraints are often TRUE for generated events.
# The values cover every rule of §2.4.3 the index folds into its keys: numbers of mixed
# kinds compare as doubles, chars as numbers, booleans as 0/1, enums by ordinal, fixed
# exactly; sequences of each kind for ``in``; Anys inside Anys.

from decimal import Decimal

from cosnotify.filter import runtime as _runtime

ROUTING_ENUM_TC = D.enum_tc("IDL:test/routing/E:1.0", "E", ["e0", "e1", "e2", "e3"])
_ROUTING_FIXED_TC = tcInternal.createFixedTC(10, 2)


def routing_sequence_tc(content: Any) -> Any:
    """``sequence<content>`` (unbounded)."""
    return tcInternal.createSequenceTC(0, content)


def _routing_any(tc: Any) -> Any:
    return lambda value: CORBA.Any(tc, value)


def _routing_enum(ordinal: int) -> Any:
    return ROUTING_ENUM_TC._d[3][ordinal]


#: Property values of a simple type (what a comparison with a literal reads).
routing_scalars: st.SearchStrategy[Any] = st.one_of(
    st.integers(-3, 3).map(_routing_any(CORBA.TC_long)),
    st.sampled_from([2**53, 2**53 + 1, 2**63 - 1]).map(_routing_any(CORBA.TC_longlong)),
    st.sampled_from([2**64 - 1, 97]).map(_routing_any(CORBA.TC_ulonglong)),
    st.sampled_from([0.0, -0.0, 0.5, -2.5, 3.0, 97.0, 1e300, 2.0**53, float("inf"),
                     float("nan")]).map(_routing_any(CORBA.TC_double)),
    st.sampled_from([0.5, 3.0, 0.1]).map(_routing_any(CORBA.TC_float)),
    st.sampled_from(["a", "b", "3", "A"]).map(_routing_any(CORBA.TC_char)),
    st.sampled_from(["a", "ab", "", "3", "b", "abc", "e1"]).map(_routing_any(CORBA.TC_string)),
    st.sampled_from(["a", "ab"]).map(_routing_any(CORBA.TC_wstring)),
    st.booleans().map(_routing_any(CORBA.TC_boolean)),
    st.integers(0, 3).map(lambda i: CORBA.Any(ROUTING_ENUM_TC, _routing_enum(i))),
    st.sampled_from([0, 300, 50, -250, 9700]).map(
        lambda n: CORBA.Any(_ROUTING_FIXED_TC, CORBA.fixed(10, 2, n))),
    st.sampled_from([0, 3, 97, 255]).map(_routing_any(CORBA.TC_octet)),
)

#: Sequence and array values (what ``literal in $component`` reads).
routing_sequences: st.SearchStrategy[Any] = st.one_of(
    st.lists(st.sampled_from(["a", "ab", "x", "3", ""]), max_size=3).map(
        _routing_any(routing_sequence_tc(CORBA.TC_string))),
    st.lists(st.integers(-3, 3), max_size=3).map(_routing_any(routing_sequence_tc(CORBA.TC_long))),
    st.lists(st.sampled_from([0.5, 3.0, 97.0]), max_size=3).map(
        _routing_any(routing_sequence_tc(CORBA.TC_double))),
    st.binary(max_size=3).map(_routing_any(routing_sequence_tc(CORBA.TC_octet))),
    st.text("a3bx", max_size=3).map(_routing_any(routing_sequence_tc(CORBA.TC_char))),
    st.lists(st.booleans(), max_size=3).map(_routing_any(routing_sequence_tc(CORBA.TC_boolean))),
    st.lists(st.integers(0, 3), max_size=3).map(
        lambda v: CORBA.Any(routing_sequence_tc(ROUTING_ENUM_TC), [_routing_enum(i) for i in v])),
    st.lists(routing_scalars, max_size=3).map(_routing_any(routing_sequence_tc(CORBA.TC_any))),
    st.lists(st.integers(-3, 3), min_size=2, max_size=2).map(
        _routing_any(tcInternal.createArrayTC(2, CORBA.TC_long))),
)

routing_values: st.SearchStrategy[Any] = st.one_of(
    routing_scalars, routing_scalars, routing_sequences,
    routing_scalars.map(_routing_any(CORBA.TC_any)))

_ROUTING_DOMAINS = ["", "D", "Dx", "a"]
_ROUTING_TYPES = ["", "T1", "T2", "a", "%ANY"]
_routing_properties = st.lists(
    st.builds(_Notification.Property, st.sampled_from(["a", "b"]), routing_values), max_size=3)


def _routing_event(domain: str, type_name: str, name: str, variable: list[Any],
                   filterable: list[Any], body: Any) -> Any:
    return _Notification.StructuredEvent(
        _Notification.EventHeader(
            _Notification.FixedEventHeader(_Notification.EventType(domain, type_name), name),
            variable),
        filterable, body)


#: StructuredEvents whose header and properties the routing constraints read.
routing_structured_events: st.SearchStrategy[Any] = st.builds(
    _routing_event, st.sampled_from(_ROUTING_DOMAINS), st.sampled_from(_ROUTING_TYPES),
    st.sampled_from(["", "a", "e"]), _routing_properties,
    st.lists(st.builds(_Notification.Property, st.sampled_from(["a", "a", "b"]), routing_values),
             min_size=1, max_size=3),
    routing_values)

#: Unstructured events: a value, or a StructuredEvent in one or two Any layers.
routing_any_events: st.SearchStrategy[Any] = st.one_of(
    routing_values,
    routing_structured_events.map(_routing_any(_Notification._tc_StructuredEvent)),
    routing_structured_events.map(
        lambda ev: CORBA.Any(CORBA.TC_any, CORBA.Any(_Notification._tc_StructuredEvent, ev))))

#: Literals of every kind, as constraint text (huge integers, chars, labels ...);
#: the first ones often equal, or bound, generated values.
ROUTING_LITERALS = ["0", "1", "3", "-2", "'a'", "0.5", "3.0", "TRUE"] * 3 + [
    "97", "300", "9007199254740993", "9223372036854775807", "18446744073709551615", "-2.5",
    "1e+300", "97.0", "0.1", "3.00", "9007199254740992.0", "'ab'", "''", "'3'", "'b'",
    "'e1'", "FALSE", "e1",
]
#: Components, weighted towards the properties and the event itself.
ROUTING_COMPONENTS = ["$a"] * 8 + ["$b"] * 2 + ["$"] * 3 + [
    "a", "$.a", "$\\a", "$a[0]", "$a._length", "$a._d", "$a.m0", "$type_name", "$domain_name",
    "$event_name", "$.header.fixed_header.event_type.type_name", "$.filterable_data[0].value",
    "$.remainder_of_body",
]


@st.composite
def routing_comparisons(draw: Any) -> str:
    """``component op literal`` (either way round) or ``literal in component``."""
    component = draw(st.sampled_from(ROUTING_COMPONENTS))
    literal = draw(st.sampled_from(ROUTING_LITERALS))
    if draw(st.integers(0, 4)) == 0:
        return f"{literal} in {component}"
    op = draw(st.sampled_from(["==", "<", "<=", ">", ">=", "!="]))
    return f"{component} {op} {literal}" if draw(st.booleans()) else f"{literal} {op} {component}"


#: Constraint text: comparisons, often alone, else combined with and, or and not.
routing_constraint_texts: st.SearchStrategy[str] = st.one_of(
    routing_comparisons(), routing_comparisons(),
    st.recursive(
        routing_comparisons(),
        lambda children: st.one_of(
            st.tuples(children, children).map(lambda p: f"({p[0]} or {p[1]})"),
            st.tuples(children, children).map(lambda p: f"({p[0]} and {p[1]})"),
            children.map(lambda p: f"not ({p})")),
        max_leaves=4))

#: Event type lists of constraints: none, exact, wildcards, %ALL and %ANY.
routing_type_lists: st.SearchStrategy[list[tuple[str, str]]] = st.sampled_from([
    [], [], [], [("D", "T1")], [("D*", "*")], [("", "T1")], [("*", "%ALL")], [("", "%ANY")],
    [("a", "a"), ("D", "T2")], [("D", "%ALL")], [("%ALL", "")], [("*x", "T*")],
])


@st.composite
def routing_constraint_exps(draw: Any) -> Any:
    """A ``CosNotifyFilter::ConstraintExp`` from the two strategies above."""
    import CosNotifyFilter

    types = [_Notification.EventType(d, t) for d, t in draw(routing_type_lists)]
    return CosNotifyFilter.ConstraintExp(types, draw(routing_constraint_texts))


#: Operands as compiled constraints see them (``runtime``): every simple kind.
routing_operands: st.SearchStrategy[Any] = st.one_of(
    st.integers(-3, 3), st.integers(-(2**64), 2**64),
    st.sampled_from([2**53, 2**53 + 1, 2**63 - 1, 2**64 - 1]),
    st.floats(allow_nan=False), st.sampled_from([0.5, -0.0, 97.0, 2.0**53, 2.0**64]),
    st.booleans(),
    st.characters(max_codepoint=0x2FF), st.text(max_size=3),
    st.decimals(min_value=-(10**31) + 1, max_value=10**31 - 1, allow_nan=False,
                allow_infinity=False, places=2),
    st.sampled_from([Decimal(97), Decimal("0.50"), Decimal("-0"), Decimal(9007199254740993)]),
    st.integers(0, 3).map(lambda i: _runtime.EnumVal(
        f"e{i}", i, ROUTING_ENUM_TC._d[3])),
)


_DENSE_LITERALS = ["0", "1", "2", "'a'", "1.0", "TRUE"]


@st.composite
def _routing_dense_comparisons(draw: Any) -> str:
    literal = draw(st.sampled_from(_DENSE_LITERALS))
    if draw(st.integers(0, 3)) == 0:
        return f"{literal} in $c"
    component = draw(st.sampled_from(["$a", "$b", "a"]))
    op = draw(st.sampled_from(["==", "<", "<=", ">", ">=", "!="]))
    return f"{component} {op} {literal}" if draw(st.booleans()) else f"{literal} {op} {component}"


#: Constraints over three properties and a few literals, true for about half of
#: ``routing_dense_events``: ``and``, ``or`` and ``not`` are exercised both ways.
routing_dense_constraint_texts: st.SearchStrategy[str] = st.recursive(
    _routing_dense_comparisons(),
    lambda children: st.one_of(
        st.lists(children, min_size=2, max_size=3).map(lambda ps: "(" + " or ".join(ps) + ")"),
        st.lists(children, min_size=2, max_size=3).map(lambda ps: "(" + " and ".join(ps) + ")"),
        children.map(lambda p: f"not ({p})")),
    max_leaves=5)

_dense_scalars = st.one_of(
    st.integers(0, 2).map(_routing_any(CORBA.TC_long)),
    st.sampled_from(["a", "b"]).map(_routing_any(CORBA.TC_char)),
    st.sampled_from([1.0, 1.5]).map(_routing_any(CORBA.TC_double)),
    st.booleans().map(_routing_any(CORBA.TC_boolean)),
)
_dense_sequences = st.one_of(
    st.lists(st.integers(0, 2), max_size=2).map(_routing_any(routing_sequence_tc(CORBA.TC_long))),
    st.lists(st.sampled_from(["a", "b"]), max_size=2).map(
        _routing_any(routing_sequence_tc(CORBA.TC_string))),
)


@st.composite
def routing_dense_events(draw: Any) -> Any:
    """StructuredEvents of type D/T1 with properties a, b (simple) and c (a sequence),
    each there three times in four."""
    found = []
    for name, values in (("a", _dense_scalars), ("b", _dense_scalars), ("c", _dense_sequences)):
        if draw(st.integers(0, 3)):
            found.append(_Notification.Property(name, draw(values)))
    return _routing_event("D", "T1", "e", [], found, CORBA.Any(CORBA.TC_null, None))


# -- cosnotify.filter.eventheap: EVENTHEAP templates (docs/grammars/eventheap.md) ---------------
from cosnotify.filter.eventheap import Template, TemplateField
from cosnotify.filter.eventheap.model import FIELD_TYPES, RESERVED, FieldMode

_eh_names = st.one_of(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True),
                      st.text(min_size=1, max_size=6))


@st.composite
def eventheap_fields(draw: Any) -> TemplateField:
    name = draw(_eh_names)
    ftype = RESERVED[name].type if name in RESERVED else draw(st.sampled_from(FIELD_TYPES))
    fixed = RESERVED[name].template if name in RESERVED else None
    mode = fixed or draw(st.sampled_from(list(FieldMode)))
    value = None
    if mode is FieldMode.ACTUAL and draw(st.booleans()):
        value = draw({
            "boolean": st.booleans(), "int": st.integers(-(2 ** 31), 2 ** 31 - 1),
            "long": st.integers(-(2 ** 63), 2 ** 63 - 1),
            "float": st.floats(width=32, allow_nan=False),
            "double": st.floats(allow_nan=False), "string": st.text(max_size=8),
        }[ftype])
    return TemplateField(name, ftype, mode, value)


eventheap_templates: st.SearchStrategy[Template] = st.lists(eventheap_fields(), max_size=6, unique_by=lambda f: f.name).map(
    lambda fs: Template(tuple(fs)))
