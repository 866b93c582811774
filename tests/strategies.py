"""Hypothesis strategies shared by the test suite.

Sections are owned by the package they exercise; append new sections rather
than editing others.
"""

from __future__ import annotations

import itertools
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from cosnotify.orb import CORBA, tc
from cosnotify.orb import typecode as T

# -- cosnotify.orb: TypeCodes and values for them ------------------------------------

_ids = itertools.count()

_PRIMITIVES = [
    CORBA.TC_short, CORBA.TC_long, CORBA.TC_longlong, CORBA.TC_ushort, CORBA.TC_ulong,
    CORBA.TC_ulonglong, CORBA.TC_float, CORBA.TC_double, CORBA.TC_longdouble, CORBA.TC_boolean,
    CORBA.TC_char, CORBA.TC_wchar, CORBA.TC_octet, CORBA.TC_string, CORBA.TC_wstring,
    CORBA.TC_TypeCode, CORBA.TC_null,
]

identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)


def _fresh_id(kind: str) -> str:
    return f"IDL:test/{kind}{next(_ids)}:1.0"


def _struct(members: list[Any], name: str) -> T.TypeCode:
    names = [f"m{i}" for i in range(len(members))]
    return tc.struct_tc(_fresh_id("S"), name, list(zip(names, members)))


def _union(members: list[Any], use_default: bool) -> T.TypeCode:
    labels: list[Any] = list(range(len(members)))
    entries = [(label, f"u{i}", t) for i, (label, t) in enumerate(zip(labels, members))]
    default_index = -1
    if use_default and len(entries) > 1:
        entries[-1] = (T.DEFAULT_LABEL, entries[-1][1], entries[-1][2])
        default_index = len(entries) - 1
    return tc.union_tc(_fresh_id("U"), "U", CORBA.TC_long, entries, default_index)


def _extend(children: st.SearchStrategy[T.TypeCode]) -> st.SearchStrategy[T.TypeCode]:
    return st.one_of(
        st.builds(lambda b, c: tc.sequence_tc(b, c), st.sampled_from([0, 3]), children),
        st.builds(lambda n, c: tc.array_tc(n, c), st.integers(1, 3), children),
        st.builds(_struct, st.lists(children, min_size=0, max_size=4), identifiers),
        st.builds(_union, st.lists(children, min_size=1, max_size=3), st.booleans()),
        st.builds(lambda c: tc.alias_tc(_fresh_id("A"), "A", c), children),
    )


typecodes: st.SearchStrategy[T.TypeCode] = st.recursive(
    st.one_of(
        st.sampled_from(_PRIMITIVES),
        st.builds(lambda n: tc.enum_tc(_fresh_id("E"), "E", [f"e{i}" for i in range(n)]),
                  st.integers(1, 4)),
        st.builds(tc.string_tc, st.integers(1, 5)),
        st.builds(lambda d, s: tc.fixed_tc(d, min(s, d)), st.integers(1, 12), st.integers(0, 6)),
        st.just(CORBA.TC_any),
    ),
    _extend,
    max_leaves=8,
)


def values_for(t: T.TypeCode, depth: int = 0) -> st.SearchStrategy[Any]:
    """A strategy of Python values that fit TypeCode ``t``."""
    t = T.resolve(t)
    k = t._k
    if k in T.INTEGER_RANGES:
        lo, hi = T.INTEGER_RANGES[k]
        return st.integers(lo, hi)
    if k == T.K_FLOAT:
        return st.floats(width=32, allow_nan=False)
    if k in (T.K_DOUBLE, T.K_LONGDOUBLE):
        return st.floats(allow_nan=False)
    if k == T.K_BOOLEAN:
        return st.booleans()
    if k == T.K_CHAR:
        return st.characters(max_codepoint=255, exclude_characters="\0")
    if k == T.K_WCHAR:
        return st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",), exclude_characters="\0")
    if k in (T.K_STRING, T.K_WSTRING):
        bound = t.length()
        return st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\0"),
                       max_size=bound or 8)
    if k == T.K_TYPECODE:
        return st.sampled_from(_PRIMITIVES)
    if k == T.K_NULL:
        return st.none()
    if k == T.K_ENUM:
        return st.sampled_from(t.enum_items())  # type: ignore[attr-defined]
    if k == T.K_FIXED:
        digits, scale = t.fixed_digits(), t.fixed_scale()
        limit = 10 ** digits - 1
        return st.integers(-limit, limit).map(lambda n: Decimal(n).scaleb(-scale))
    if k == T.K_ANY:
        if depth > 2:
            return st.just(CORBA.Any(CORBA.TC_long, 7))
        return st.sampled_from(_PRIMITIVES[:8]).flatmap(
            lambda inner: values_for(inner, depth + 1).map(lambda v: CORBA.Any(inner, v)))
    if k == T.K_ALIAS:
        return values_for(t.content_type(), depth)
    if k in (T.K_SEQUENCE, T.K_ARRAY):
        content = t.content_type()
        size = t.length()
        if k == T.K_ARRAY:
            items = st.lists(values_for(content, depth + 1), min_size=size, max_size=size)
        else:
            items = st.lists(values_for(content, depth + 1), max_size=size or 3)
        if T.resolve(content).unalias()._k == T.K_OCTET and k == T.K_SEQUENCE:
            return items.map(bytes)
        return items
    if k in (T.K_STRUCT, T.K_EXCEPT):
        cls = t.python_class()  # type: ignore[attr-defined]
        members = [values_for(t.member_type(i), depth + 1) for i in range(t.member_count())]
        return st.tuples(*members).map(lambda vs: cls(*vs))
    if k == T.K_UNION:
        cls = t.python_class()  # type: ignore[attr-defined]
        options = []
        for i in range(t.member_count()):
            label = t._labels[i]  # type: ignore[attr-defined]
            d = t.implicit_default() if label is T.DEFAULT_LABEL else label  # type: ignore[attr-defined]
            options.append(values_for(t.member_type(i), depth + 1).map(
                lambda v, d=d: cls(d, v)))
        return st.one_of(options)
    raise NotImplementedError(repr(t))


typed_values: st.SearchStrategy[tuple[T.TypeCode, Any]] = typecodes.flatmap(
    lambda t: st.tuples(st.just(t), values_for(t)))


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


# -- cosnotify.idl: token soup for the IDL compiler -----------------------------------

_IDL_WORDS = [
    "module", "interface", "struct", "union", "switch", "case", "default", "enum", "typedef",
    "const", "exception", "raises", "context", "oneway", "readonly", "attribute", "in", "out",
    "inout", "void", "long", "short", "unsigned", "float", "double", "char", "wchar", "string",
    "wstring", "boolean", "octet", "any", "Object", "sequence", "fixed", "native", "TRUE",
    "FALSE", "valuetype", "ValueBase", "Module", "_EventType", "CORBA::TypeCode", "::", ":",
    ";", ",", "{", "}", "(", ")", "<", ">", "[", "]", "=", "+", "-", "*", "/", "%", "~", "|",
    "^", "&", "<<", ">>", "'a'", "'\\n'", "L'x'", '"text"', 'L"wide"', "0x1F", "017", "08",
    "1.5", "2e10", "3.25d", "2147483648", "18446744073709551616", "/*", "*/", "//", "\n",
    "#", "#include \"missing.idl\"\n", "#define X 1\n", "#ifdef X\n", "#if X > 0\n",
    "#else\n", "#endif\n", "#pragma prefix \"p\"\n", "#pragma ID S \"IDL:x/S:1.0\"\n",
    "#pragma version S 2.1\n", "#undef X\n", "@", "$", "`", "\\",
]  # fmt: skip

idl_token_soups = st.lists(
    st.one_of(
        st.sampled_from(_IDL_WORDS),
        identifiers,
        st.integers(min_value=-(2**70), max_value=2**70).map(str),
        st.text(max_size=3),
    ),
    max_size=60,
).map(" ".join)

#: Token soup that starts like a real definition, so the parser gets further in.
idl_near_misses = st.tuples(
    st.sampled_from(["module M { ", "interface I { ", "struct S { ", "const long C = ", ""]),
    idl_token_soups,
).map("".join)


# -- cosnotify.orb CDR and GIOP: codecs and messages --------------------------------------

from cosnotify.orb import cdr as _cdr
from cosnotify.orb import giop_messages as _gm
from cosnotify.orb import ior as _ior

#: Stream settings: byte order, char code set, GIOP minor version (wchar rules).
codecs: st.SearchStrategy[_cdr.Codec] = st.builds(
    lambda little, char_set, minor: _cdr.Codec(little, char_set, _cdr.UTF_16, (1, minor)),
    st.booleans(), st.sampled_from([_cdr.UTF_8, _cdr.ISO_8859_1]), st.sampled_from([1, 2]))

_small_ints = st.integers(0, 2**32 - 1)
_keys = st.binary(max_size=24)
_iiop_profiles = st.builds(
    _ior.IIOPProfile, st.from_regex(r"[a-z0-9.]{1,20}", fullmatch=True), st.integers(1, 65535),
    _keys, st.sampled_from([(1, 0), (1, 1), (1, 2)]),
    st.just(()))
iors: st.SearchStrategy[_ior.IOR] = st.builds(
    _ior.IOR, st.from_regex(r"IDL:[A-Za-z/]{1,20}:1\.0", fullmatch=True),
    st.lists(_iiop_profiles, max_size=2).map(tuple))
_contexts = st.lists(st.builds(_gm.ServiceContext, _small_ints, st.binary(max_size=16)),
                     max_size=3).map(tuple)
_versions = st.sampled_from([(1, 0), (1, 1), (1, 2)])


def _request(request_id: int, key: bytes, op: str, body: bytes, flags: int,
             contexts: tuple[_gm.ServiceContext, ...], version: tuple[int, int],
             little: bool) -> _gm.Request:
    # GIOP 1.0/1.1 carry only "response expected", which reads back as flags 3 or 0.
    flags = flags if version >= (1, 2) else (3 if flags & 1 else 0)
    return _gm.Request(request_id, _gm.KeyAddr(key), op, body, flags, contexts, b"", version,
                       little)


#: Requests a client may send (bodies are opaque octets).
requests: st.SearchStrategy[_gm.Request] = st.builds(
    _request, _small_ints, _keys, st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
    st.binary(max_size=40), st.sampled_from([0, 1, 3]), _contexts, _versions, st.booleans())

#: Replies (status and body only; request ids are set by the test).
replies: st.SearchStrategy[_gm.Reply] = st.builds(
    lambda status, body, contexts, version, little: _gm.Reply(
        0, _gm.ReplyStatus(status if version >= (1, 2) else min(status, 3)), body, contexts,
        version, little),
    st.integers(0, 5), st.binary(max_size=40), _contexts, _versions, st.booleans())


# -- cosnotify.filter: events, and constraints that reach into them -------------------

from cosnotify.stubs import CosNotification as _Notification

#: Names shared by generated events and constraints, so lookups often succeed.
#: Struct members from ``typecodes`` are m0, m1 ...; union members u0 ...; enum labels e0 ...
_FILTER_NAMES = ["a", "m0", "m1", "u0", "u1", "priority", "type_name", "domain_name",
                 "event_name", "curtime", "header", "filterable_data", "value", "name"]
filter_names: st.SearchStrategy[str] = st.sampled_from(_FILTER_NAMES)

#: CORBA.Any values of any generated TypeCode.
filter_anys: st.SearchStrategy[Any] = typed_values.map(lambda pair: CORBA.Any(*pair))

filter_properties: st.SearchStrategy[list[Any]] = st.lists(
    st.builds(_Notification.Property, filter_names, filter_anys), max_size=4)

#: StructuredEvents with generated header and filterable properties.
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
