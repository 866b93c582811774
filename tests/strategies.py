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


# -- cosnotify.filter: omniORB TypeCodes (as descriptors) and values for them -------------
# (omniORB's CORBA is imported as _omni, beside the strategies above.)

import omniORB.tcInternal as _tci
from omniORB import CORBA as _omni

import CosNotification as _Notification

from cosnotify.corba import descriptors as _D

#: Every basic TypeCode omniORBpy can carry (``long double`` it cannot, so none here).
OMNI_PRIMITIVES = [
    _omni.TC_short, _omni.TC_long, _omni.TC_longlong, _omni.TC_ushort, _omni.TC_ulong,
    _omni.TC_ulonglong, _omni.TC_float, _omni.TC_double, _omni.TC_boolean, _omni.TC_char,
    _omni.TC_wchar, _omni.TC_octet, _omni.TC_string, _omni.TC_wstring, _omni.TC_TypeCode,
    _omni.TC_null,
]
_omni_ids = itertools.count()
_omni_identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)


def _omni_id(kind: str) -> str:
    return f"IDL:test/omni/{kind}{next(_omni_ids)}:1.0"


_OMNI_RANGES = {
    _D.SHORT: (-(2**15), 2**15 - 1), _D.USHORT: (0, 2**16 - 1), _D.LONG: (-(2**31), 2**31 - 1),
    _D.ULONG: (0, 2**32 - 1), _D.LONGLONG: (-(2**63), 2**63 - 1), _D.ULONGLONG: (0, 2**64 - 1),
    _D.OCTET: (0, 255),
}


def _omni_struct(members: list[Any], name: str) -> Any:
    return _tci.createStructTC(_omni_id("S"), name, [
        _omni.StructMember(f"m{i}", t, None) for i, t in enumerate(members)])


def _omni_union(members: list[Any], use_default: bool) -> Any:
    entries = []
    for i, t in enumerate(members):
        default = use_default and len(members) > 1 and i == len(members) - 1
        label = _omni.Any(_omni.TC_octet, 0) if default else _omni.Any(_omni.TC_long, i)
        entries.append(_omni.UnionMember(f"u{i}", label, t, None))
    return _tci.createUnionTC(_omni_id("U"), "U", _omni.TC_long, entries)


def _omni_extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(_tci.createSequenceTC, st.sampled_from([0, 3]), children),
        st.builds(_tci.createArrayTC, st.integers(1, 3), children),
        st.builds(_omni_struct, st.lists(children, min_size=0, max_size=4),
                  _omni_identifiers),
        st.builds(_omni_union, st.lists(children, min_size=1, max_size=3), st.booleans()),
        st.builds(lambda c: _tci.createAliasTC(_omni_id("A"), "A", c), children),
    )


#: omniORB TypeCodes: basic kinds, enums, bounded strings, fixed, any, and structs,
#: unions, sequences, arrays and aliases of those.
omni_typecodes: st.SearchStrategy[Any] = st.recursive(
    st.one_of(
        st.sampled_from(OMNI_PRIMITIVES),
        st.builds(lambda n: _D.enum_tc(_omni_id("E"), "E", [f"e{i}" for i in range(n)]),
                  st.integers(1, 4)),
        st.builds(_tci.createStringTC, st.integers(1, 5)),
        st.builds(lambda d, s: _tci.createFixedTC(d, min(s, d)), st.integers(1, 12),
                  st.integers(0, 6)),
        st.just(_omni.TC_any),
    ),
    _omni_extend,
    max_leaves=8,
)

_omni_text_chars = st.characters(exclude_categories=("Cs",), exclude_characters="\0")


def omni_values_for(d: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """A strategy of Python values omniORB accepts for descriptor ``d``."""
    d = _D.resolve(d)
    k = _D.kind(d)
    if k in _OMNI_RANGES:
        return st.integers(*_OMNI_RANGES[k])
    if k == _D.FLOAT:
        return st.floats(width=32, allow_nan=False)
    if k == _D.DOUBLE:
        return st.floats(allow_nan=False)
    if k == _D.BOOLEAN:
        return st.booleans()
    if k == _D.CHAR:
        return st.characters(max_codepoint=255, exclude_characters="\0")
    if k == _D.WCHAR:
        return st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",),
                             exclude_characters="\0")
    if k in (_D.STRING, _D.WSTRING):
        return st.text(_omni_text_chars, max_size=d[1] or 8)
    if k == _D.TYPECODE:
        return st.sampled_from(OMNI_PRIMITIVES)
    if k == _D.NULL:
        return st.none()
    if k == _D.ENUM:
        return st.sampled_from(d[3])
    if k == _D.FIXED:
        digits, scale = d[1], d[2]
        limit = 10 ** digits - 1
        return st.integers(-limit, limit).map(lambda n: _omni.fixed(digits, scale, n))
    if k == _D.ANY:
        if depth > 2:
            return st.just(_omni.Any(_omni.TC_long, 7))
        return st.sampled_from(OMNI_PRIMITIVES[:8]).flatmap(
            lambda inner: omni_values_for(inner._d, depth + 1).map(
                lambda v: _omni.Any(inner, v)))
    if k == _D.ALIAS:
        return omni_values_for(d[3], depth)
    if k in (_D.SEQUENCE, _D.ARRAY):
        content, size = d[1], d[2]
        if k == _D.ARRAY:
            items = st.lists(omni_values_for(content, depth + 1), min_size=size, max_size=size)
        else:
            items = st.lists(omni_values_for(content, depth + 1), max_size=size or 3)
        # omniORB takes bytes / str only for sequences of octet / char themselves;
        # for aliases of them, and for wchar, it takes lists (measured: BAD_PARAM).
        if content == _D.OCTET:
            return items.map(bytes)
        if content == _D.CHAR:
            return items.map("".join)
        return items
    if k in (_D.STRUCT, _D.EXCEPT):
        cls = d[1]
        members = [omni_values_for(m, depth + 1) for _, m in _D.members(d)]
        return st.tuples(*members).map(lambda vs: cls(*vs))
    if k == _D.UNION:
        cls = d[1]
        return st.one_of([omni_values_for(m, depth + 1).map(lambda v, label=label: cls(label, v))
                          for label, _, m in d[6]])
    raise NotImplementedError(repr(d))


#: (TypeCode, value) pairs.
omni_typed_values: st.SearchStrategy[tuple[Any, Any]] = omni_typecodes.flatmap(
    lambda t: st.tuples(st.just(t), omni_values_for(t._d)))


# -- cosnotify.filter: events, and constraints that reach into them -------------------

#: Names shared by generated events and constraints, so lookups often succeed.
#: Struct members from ``omni_typecodes`` are m0, m1 ...; union members u0 ...; enum labels e0 ...
_FILTER_NAMES = ["a", "m0", "m1", "u0", "u1", "priority", "type_name", "domain_name",
                 "event_name", "curtime", "header", "filterable_data", "value", "name"]
filter_names: st.SearchStrategy[str] = st.sampled_from(_FILTER_NAMES)

#: omniORB CORBA.Any values of any generated TypeCode.
filter_anys: st.SearchStrategy[Any] = omni_typed_values.map(lambda pair: _omni.Any(*pair))

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
    filter_structured_events.map(lambda ev: _omni.Any(_Notification._tc_StructuredEvent, ev)),
    filter_properties.map(lambda ps: _omni.Any(_Notification._tc_PropertySeq, ps)))

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
