"""CORBA -> Elvin type mapping and the attributes of each event form (§6.1.4, docs/grammars/elvin4.md)."""

from __future__ import annotations

from typing import Any

import pytest
from omniORB import CORBA, tcInternal

import CosNotification as N

from cosnotify.corba import descriptors as D
from cosnotify.filter.elvin4 import compile_program
from cosnotify.filter.elvin4.values import (
    MISSING,
    Int64,
    any_attributes,
    elvin_type,
    from_any,
    typed_attributes,
)
from tests.filter.elvin4.helpers import tri
from tests.filter.events import struct_tc, structured, value

_ALIAS_LONG = tcInternal.createAliasTC("IDL:test/Count:1.0", "Count", CORBA.TC_long)
_ENUM = D.enum_tc("IDL:test/Colour:1.0", "Colour", ["red", "green"])

#: (label, Any, Elvin type, Elvin value) for every CORBA basic kind that maps.
MAPPED = [
    ("short", CORBA.Any(CORBA.TC_short, -5), "int32", -5),
    ("long", CORBA.Any(CORBA.TC_long, -(2**31)), "int32", -(2**31)),
    ("ushort", CORBA.Any(CORBA.TC_ushort, 65535), "int32", 65535),
    ("octet", CORBA.Any(CORBA.TC_octet, 255), "int32", 255),
    ("boolean-true", CORBA.Any(CORBA.TC_boolean, True), "int32", 1),
    ("boolean-false", CORBA.Any(CORBA.TC_boolean, False), "int32", 0),
    ("ulong", CORBA.Any(CORBA.TC_ulong, 2**32 - 1), "int64", 2**32 - 1),
    ("longlong", CORBA.Any(CORBA.TC_longlong, -(2**63)), "int64", -(2**63)),
    ("ulonglong-fits", CORBA.Any(CORBA.TC_ulonglong, 2**63 - 1), "int64", 2**63 - 1),
    ("float", CORBA.Any(CORBA.TC_float, 1.5), "real64", 1.5),
    ("double", CORBA.Any(CORBA.TC_double, -2.25), "real64", -2.25),
    ("char", CORBA.Any(CORBA.TC_char, "c"), "string", "c"),
    ("wchar", CORBA.Any(CORBA.TC_wchar, "\u00e9"), "string", "\u00e9"),
    ("string", CORBA.Any(CORBA.TC_string, "text"), "string", "text"),
    ("bounded-string", CORBA.Any(tcInternal.createStringTC(8), "text"), "string", "text"),
    ("wstring", CORBA.Any(CORBA.TC_wstring, "\u00e0b"), "string", "\u00e0b"),
    ("octet-sequence", CORBA.Any(CORBA._tc_OctetSeq, b"\x00\x01"), "opaque", b"\x00\x01"),
    ("octet-array", CORBA.Any(tcInternal.createArrayTC(2, CORBA.TC_octet), b"ab"),
     "opaque", b"ab"),
    ("alias-long", CORBA.Any(_ALIAS_LONG, 7), "int32", 7),
    ("any-in-any", CORBA.Any(CORBA.TC_any, CORBA.Any(CORBA.TC_long, 3)), "int32", 3),
]

#: CORBA values with no Elvin type: bottom, never an exception.
UNMAPPED = [
    ("ulonglong-too-big", CORBA.Any(CORBA.TC_ulonglong, 2**63)),
    ("enum", CORBA.Any(_ENUM, _ENUM._d[3][1])),
    ("struct", value(struct_tc("IDL:test/P:1.0", "P", [("a", CORBA.TC_long)]), 1)),
    ("long-sequence", CORBA.Any(tcInternal.createSequenceTC(0, CORBA.TC_long), [1, 2])),
    ("fixed", CORBA.Any(tcInternal.createFixedTC(5, 2), CORBA.fixed("1.50"))),
    ("null", CORBA.Any(CORBA.TC_null, None)),
    ("typecode", CORBA.Any(CORBA.TC_TypeCode, CORBA.TC_long)),
    ("empty-any-in-any", CORBA.Any(CORBA.TC_any, None)),
    # Anys made in process, not marshalled: values past their kind's range (review 67:
    # one reached an Elvin delivery, and int32 could not carry it)
    ("long-past-int32", CORBA.Any(CORBA.TC_long, 2**40)),
    ("short-past-int32", CORBA.Any(CORBA.TC_short, -2**31 - 1)),
    ("octet-past-int32", CORBA.Any(CORBA.TC_octet, 2**33)),
]


class TestMapping:
    @pytest.mark.parametrize(("label", "any_", "kind", "expected"), MAPPED,
                             ids=[m[0] for m in MAPPED])
    def test_mapped(self, label: str, any_: Any, kind: str, expected: Any) -> None:
        """Each CORBA kind maps to the documented Elvin type and value."""
        got = from_any(any_)
        assert elvin_type(got) == kind
        assert got == expected
        event = structured(filterable={"x": any_})
        assert tri(f"{kind}(x)", event) is True

    @pytest.mark.parametrize(("label", "any_"), UNMAPPED, ids=[m[0] for m in UNMAPPED])
    def test_unmapped_is_bottom(self, label: str, any_: Any) -> None:
        """Other types are present (require) but bottom everywhere else."""
        assert from_any(any_) is None
        event = structured(filterable={"x": any_})
        assert tri("require(x)", event) is True
        for text in ("x == 1", "x > 1", 'begins-with(x, "")', "size(x) > 0", "nan(x)",
                     "x + 1 > 0"):
            assert tri(text, event) is None, text
        for text in ("int32(x)", "int64(x)", "real64(x)", "string(x)", "opaque(x)"):
            assert tri(text, event) is False, text

    def test_not_an_any(self) -> None:
        """A property value that is not an Any maps to nothing."""
        assert from_any(3) is None

    def test_int64_marker(self) -> None:
        """Int64 is an int distinguishable by type."""
        assert type(Int64(3)) is Int64 and Int64(3) == 3 and repr(Int64(3)) == "Int64(3)"


class TestStructuredAttributes:
    def test_header_fields(self) -> None:
        """domain_name, type_name and event_name are the fixed header's."""
        event = structured("Finance", "Trade", "t1")
        assert tri('domain_name == "Finance" && type_name == "Trade" && event_name == "t1"',
                   event) is True

    def test_header_wins_over_property(self) -> None:
        """A property named type_name does not hide the header (as $type_name in ETCL)."""
        event = structured(type_name="Real", filterable={"type_name": "Fake"})
        assert tri('type_name == "Real"', event) is True

    def test_filterable_data_before_variable_header(self) -> None:
        """filterable_data is searched first, then the variable header."""
        event = structured(variable={"a": "vh", "b": "vh"}, filterable={"a": "fd"})
        assert tri('a == "fd" && b == "vh"', event) is True

    def test_first_of_a_name_wins(self) -> None:
        """With duplicate names the first property counts."""
        event = structured(filterable=[("a", 1), ("a", 2)])
        assert tri("a == 1", event) is True

    def test_many_attributes(self) -> None:
        """Expressions naming more attributes than fit in locals (list prologue)."""
        names = [f"n{i}" for i in range(20)]
        event = structured(filterable={n: i for i, n in enumerate(names)},
                           variable={"late": 5})
        text = " && ".join(f"{n} == {i}" for i, n in enumerate(names)) + " && late == 5"
        assert tri(text, event) is True
        assert tri(text + " && missing == 1", event) is None

    @pytest.mark.parametrize("event", [
        None, 3, "x", N.StructuredEvent(None, None, None), object(), [None, 3],
    ])
    def test_malformed_events_never_raise(self, event: Any) -> None:
        """A matcher answers False for anything that is not a well-formed event."""
        program = compile_program("require(a) || a > 1")
        assert program.structured(event) is False
        assert program.typed(event) is False
        assert program.any(event) is False

    def test_property_value_not_an_any(self) -> None:
        """A property whose value is no Any: the match is false, not an error."""
        event = structured(filterable={"a": 1})
        event.filterable_data[0].value = 5
        assert compile_program("a > 1").structured(event) is False


class TestOtherForms:
    def test_typed_event(self) -> None:
        """Typed events (a PropertySeq): properties, and the event_type pair's names."""
        event_type = CORBA.Any(N._tc_EventType, N.EventType("IDL:A:1.0", "op"))
        props = [N.Property("event_type", event_type),
                 N.Property("x", CORBA.Any(CORBA.TC_long, 3))]
        assert typed_attributes(props) == {"domain_name": "IDL:A:1.0", "type_name": "op",
                                           "event_type": None, "x": 3}
        program = compile_program('x == 3 && type_name == "op"', strict=True)
        assert program.typed(props) is True

    def test_any_holding_property_seq(self) -> None:
        """An unstructured event holding a PropertySeq: its properties."""
        seq = [N.Property("x", CORBA.Any(CORBA.TC_string, "v"))]
        event = CORBA.Any(N._tc_PropertySeq, seq)
        assert any_attributes(event) == {"x": "v"}
        assert compile_program('x == "v"', strict=True).any(event) is True

    def test_any_holding_struct(self) -> None:
        """An unstructured event holding a struct: its members."""
        tc = struct_tc("IDL:test/Reading:1.0", "Reading",
                       [("sensor", CORBA.TC_string), ("level", CORBA.TC_double)])
        event = value(tc, "s1", 0.5)
        assert any_attributes(event) == {"sensor": "s1", "level": 0.5}
        assert compile_program('sensor == "s1" && level < 1.0', strict=True).any(event) is True

    def test_any_holding_anything_else(self) -> None:
        """Any other unstructured event has no attributes: bottom."""
        event = CORBA.Any(CORBA.TC_long, 5)
        assert any_attributes(event) == {}
        assert compile_program("require(x)", strict=True).any(event) is False

    def test_missing_sentinel(self) -> None:
        """MISSING prints as such and is not None."""
        assert repr(MISSING) == "MISSING" and MISSING is not None


class _NotIterated:
    """A variable_header that fails the test if the prologue scans it."""

    def __iter__(self) -> Any:
        raise AssertionError("variable_header scanned although nothing was missing")


class TestNormalisedAnys:
    @pytest.mark.parametrize(("any_", "expected", "kind"), [
        (CORBA.Any(CORBA.TC_double, 3), 3.0, "real64"),
        (CORBA.Any(CORBA.TC_float, True), 1.0, "real64"),
        (CORBA.Any(CORBA.TC_long, True), 1, "int32"),
        (CORBA.Any(CORBA.TC_short, False), 0, "int32"),
        (CORBA.Any(CORBA.TC_longlong, True), 1, "int64"),
    ])
    def test_value_type_follows_the_typecode(self, any_: Any, expected: Any, kind: str) -> None:
        """The Elvin type comes from the TypeCode, not from how the Any was built."""
        got = from_any(any_)
        assert got == expected and elvin_type(got) == kind
        event = structured(filterable={"x": any_})
        assert tri(f"{kind}(x)", event) is True
        assert tri(f"x == {expected!r}" + ("L" if kind == "int64" else ""), event) is True


class TestHeaderScan:
    def test_variable_header_skipped_when_nothing_missing(self) -> None:
        """With more than 8 names, header slots do not force a scan of variable_header."""
        names = [f"n{i}" for i in range(10)]
        event = structured(filterable={n: i for i, n in enumerate(names)})
        event.header.variable_header = _NotIterated()
        text = " && ".join(f"{n} == {i}" for i, n in enumerate(names)) + ' && type_name == "T"'
        assert compile_program(text, strict=True).structured(event) is False
        assert compile_program(text.replace('"T"', '"CommunicationsAlarm"'),
                               strict=True).structured(event) is True

    def test_small_expression_skips_too(self) -> None:
        """Up to 8 names (locals): the same rule."""
        event = structured(filterable={"a": 1})
        event.header.variable_header = _NotIterated()
        assert compile_program('a == 1 && domain_name == "Telecom"',
                               strict=True).structured(event) is True
