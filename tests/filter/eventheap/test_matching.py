"""EVENTHEAP matching: field modes, reserved fields, equivalence, event forms, filters."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from omniORB import CORBA

import CosNotification as N
import CosNotifyFilter

from cosnotify.filter import FilterFactory
from cosnotify.filter.eventheap import compile_eventheap
from cosnotify.filter.registry import CompileContext, CompiledConstraint
from tests.filter.eventheap.support import VECTORS, event_of, property_seq, typed_any
from tests.filter.events import structured

MATCHING = VECTORS["matching"]


def compiled(text: str) -> CompiledConstraint:
    return compile_eventheap(text, CompileContext())


def matches(text: str, event: Any) -> bool:
    result = compiled(text).structured(event)
    assert isinstance(result, bool)
    return result


def eventheap_filter(*texts: str) -> Any:
    f = FilterFactory().create_filter("EVENTHEAP")
    f.add_constraints([CosNotifyFilter.ConstraintExp([], t) for t in texts])
    return f


class TestVectors:
    """Match vectors written from the seed's "Tuple Matching" and "Events versus Tuples"."""

    @pytest.mark.parametrize("vector", MATCHING, ids=[v["source"][:50] for v in MATCHING])
    def test_vector(self, vector: dict[str, Any]) -> None:
        """The template matches the event exactly when the vector says so."""
        assert matches(vector["template"], event_of(vector["event"])) is vector["match"]

    @pytest.mark.parametrize("vector", MATCHING, ids=[v["source"][:50] for v in MATCHING])
    def test_vector_through_a_filter(self, vector: dict[str, Any]) -> None:
        """The same through FilterFactory().create_filter("EVENTHEAP").match_structured."""
        f = eventheap_filter(vector["template"])
        assert f.match_structured(event_of(vector["event"])) is vector["match"]


class TestFieldModes:
    """ACTUAL, FORMAL and VIRTUAL (Semantics for Value Transfer, Tuple Matching)."""

    EVENT = structured("EventHeap", "alarm", filterable={
        "severity": typed_any("long", 3), "host": typed_any("string", "h1")})

    def test_all_three_modes_together(self) -> None:
        """An actual, a formal and a virtual field: the virtual one may be absent."""
        assert matches('severity: int = 3, host: string = ?, note: string = ~', self.EVENT)

    def test_formal_needs_presence(self) -> None:
        """A formal field is still a field that must be present."""
        assert not matches("missing: string = ?", self.EVENT)

    def test_empty_template_matches_everything(self) -> None:
        """No non-virtual field: every event matches (also unstructured and typed ones)."""
        c = compiled("only: int = ~")
        assert c.structured(self.EVENT) and c.any(CORBA.Any(CORBA.TC_long, 1)) and c.typed([])

    def test_all_fields_must_match(self) -> None:
        """One mismatching field makes the template fail."""
        assert not matches("severity: int = 3, host: string = \"h2\"", self.EVENT)


class TestReservedFields:
    """Tables 1-3 of "Events versus Tuples" onto Notification headers."""

    def test_event_type_formal_always_present(self) -> None:
        """Every structured event has a type_name: EventType = ? matches any."""
        assert matches("EventType = ?", structured("d", "anything"))

    def test_domain_is_not_examined(self) -> None:
        """Only type_name carries EventType; the domain is free."""
        assert matches('EventType = "t"', structured("any domain", "t"))

    def test_time_to_live_reads_the_variable_header_only(self) -> None:
        """Timeout in filterable_data is not the Timeout QoS."""
        ev = structured(filterable={"Timeout": typed_any("TimeT", 10_000)})
        assert not matches("TimeToLive = ?", ev)

    def test_time_to_live_accepts_any_integer_kind(self) -> None:
        """A Timeout sent as unsigned long long or long still counts; a string does not."""
        for kind in ("ulonglong", "long", "TimeT"):
            ev = structured(variable={"Timeout": typed_any(kind, 50_000)})
            assert matches("TimeToLive = ?", ev)
        assert not matches("TimeToLive = ?",
                           structured(variable={"Timeout": typed_any("string", "5")}))

    def test_source_person_and_target_device(self) -> None:
        """Table 1 and 2 Source*/Target* fields are properties of their names."""
        ev = structured(filterable={"SourcePerson": typed_any("string", "ann"),
                                    "TargetDevice": typed_any("string", "wall")})
        assert matches('SourcePerson = "ann", TargetDevice = ?', ev)
        assert not matches('SourcePerson = "bob"', ev)

    def test_event_heap_version_is_int(self) -> None:
        """Table 3 EventHeapVersion is an Integer: a string value does not match."""
        ev = structured(filterable={"EventHeapVersion": typed_any("string", "1")})
        assert not matches("EventHeapVersion = ?", ev)


class TestEquivalence:
    """Equivalence of actual values, per type (docs/grammars/eventheap.md)."""

    @pytest.mark.parametrize("kind", ["short", "ushort", "long", "ulong", "octet"])
    def test_int_kinds(self, kind: str) -> None:
        """The CORBA integer kinds of at most 32 bits are Event Heap ints."""
        assert matches("i: int = 7", structured(filterable={"i": typed_any(kind, 7)}))

    def test_double_nan_equals_nan(self) -> None:
        """Java's Double.equals: NaN is equivalent to NaN."""
        ev = structured(filterable={"d": typed_any("double", math.nan)})
        assert matches("d: double = NaN", ev)

    def test_double_signed_zero(self) -> None:
        """Java's Double.equals: -0.0 is not equivalent to 0.0."""
        ev = structured(filterable={"d": typed_any("double", -0.0)})
        assert matches("d: double = -0.0", ev) and not matches("d: double = 0.0", ev)

    def test_wstring_is_a_string(self) -> None:
        """A wstring property is an Event Heap string."""
        ev = structured(filterable={"s": typed_any("wstring", "é")})
        assert matches('s = "é"', ev)

    def test_strings_are_case_sensitive(self) -> None:
        """String equivalence is Java's String.equals."""
        assert not matches('s = "A"', structured(filterable={"s": typed_any("string", "a")}))

    def test_floats_inside_a_nested_any(self) -> None:
        """Float and double values behind an inner Any compare as singles and doubles."""
        ev = structured(filterable={
            "f": CORBA.Any(CORBA.TC_any, typed_any("float", 0.1)),
            "d": CORBA.Any(CORBA.TC_any, typed_any("double", 0.1))})
        assert matches("f: float = 0.1, d: double = 0.1", ev)
        assert not matches("d: double = 0.2", ev)

    def test_null_event_type_never_matches(self) -> None:
        """type_name is never NULL, so an actual NULL EventType matches nothing."""
        assert not matches("EventType = null", structured())

    def test_value_inside_a_nested_any(self) -> None:
        """A property whose Any holds an Any is read through it (slow path)."""
        ev = structured(filterable={"i": CORBA.Any(CORBA.TC_any, typed_any("long", 3))})
        assert matches("i: int = 3", ev) and matches("i: int = ?", ev)


class TestForms:
    """Typed and unstructured events."""

    def test_typed_event(self) -> None:
        """A typed event's PropertySeq holds the fields; EventType is event_type.type_name."""
        seq = [N.Property("event_type", CORBA.Any(N._tc_EventType, N.EventType("I", "op"))),
               *property_seq({"a": ["long", 1], "Timeout": ["TimeT", 20_000]})]
        c = compiled('EventType = "op", a: int = 1, TimeToLive = ?')
        assert c.typed(seq) and not c.typed(seq[1:])

    def test_unstructured_property_seq(self) -> None:
        """An Any holding a PropertySeq is read as a typed event."""
        seq = property_seq({"a": ["long", 1]})
        any_event = CORBA.Any(N._tc_PropertySeq, seq)
        assert compiled("a: int = 1").any(any_event)
        assert not compiled("a: int = 2").any(any_event)

    def test_unstructured_other_values_have_no_fields(self) -> None:
        """An Any of anything else has no fields."""
        assert not compiled("a: int = ?").any(CORBA.Any(CORBA.TC_long, 1))


class TestRobustness:
    """Matchers never raise."""

    @pytest.mark.parametrize("event", [None, 3, "x", [], object(), structured(body=None)])
    def test_malformed_events(self, event: Any) -> None:
        """Anything that is not an event is FALSE in every form."""
        c = compiled('EventType = "x", a: int = ?, TimeToLive = ?')
        assert c.structured(event) is False and c.any(event) is False and c.typed(event) is False

    def test_property_that_is_not_an_any(self) -> None:
        """A Property whose value is not an Any does not match."""
        ev = structured()
        ev.filterable_data = [N.Property("a", 3)]
        assert matches("a: int = ?", ev) is False


class TestFilterObject:
    """End to end through the filter factory."""

    def test_invalid_text_is_invalid_constraint(self) -> None:
        """A bad template gives CosNotifyFilter::InvalidConstraint naming the position."""
        with pytest.raises(CosNotifyFilter.InvalidConstraint) as caught:
            eventheap_filter("a: int = 1,, b")
        assert caught.value.constr.constraint_expr == "a: int = 1,, b"

    def test_constraints_are_ored(self) -> None:
        """Two templates in one filter: an event matching either passes."""
        f = eventheap_filter('EventType = "a"', 'EventType = "b"')
        assert f.match_structured(structured("d", "b"))
        assert not f.match_structured(structured("d", "c"))

    def test_grammar_name(self) -> None:
        """The filter reports EVENTHEAP as its grammar."""
        assert FilterFactory().create_filter("EVENTHEAP")._get_constraint_grammar() == "EVENTHEAP"

    @settings(max_examples=100, deadline=None)
    @given(st.text(max_size=60))
    def test_random_text_gives_only_invalid_constraint(self, text: str) -> None:
        """Random constraint text is accepted or refused with InvalidConstraint only."""
        f = FilterFactory().create_filter("EVENTHEAP")
        try:
            f.add_constraints([CosNotifyFilter.ConstraintExp([], text)])
        except CosNotifyFilter.InvalidConstraint:
            return
        assert f.match_structured(structured()) in (True, False)


class TestUnsignedValues:
    """Review finding: an unsigned value above the signed range matched a formal int or
    long but no actual value; it is read as the IDL-to-Java mapping does (same bits)."""

    @pytest.mark.parametrize(("kind", "value", "template", "expected"), [
        ("ulong", 4294967295, "u: int = -1", True),
        ("ulong", 2147483648, "u: int = -2147483648", True),
        ("ulong", 4294967295, "u: int = 1", False),
        ("ulong", 4294967295, "u: int = ?", True),
        ("ulong", 4294967295, "u: long = -1", False),
        ("ulonglong", 2 ** 64 - 1, "u: long = -1", True),
        ("ulonglong", 2 ** 63, "u: long = -9223372036854775808", True),
        ("ulonglong", 2 ** 64 - 1, "u: int = -1", False),
        ("ulong", 5, "u: int = 5", True),
        ("long", -1, "u: int = -1", True),
        ("ulong", 5, "u: int = -1", False),
    ])
    def test_java_value(self, kind: str, value: int, template: str, expected: bool) -> None:
        """Unsigned long is a Java int, unsigned long long a Java long, wrapping."""
        ev = structured(filterable={"u": typed_any(kind, value)})
        assert matches(template, ev) is expected
        nested = structured(filterable={"u": CORBA.Any(CORBA.TC_any, typed_any(kind, value))})
        assert matches(template, nested) is expected  # the slow path agrees
        assert eventheap_filter(template).match_typed(
            [N.Property("u", typed_any(kind, value))]) is expected
