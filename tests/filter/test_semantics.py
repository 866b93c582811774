"""EXTENDED_TCL evaluation rules (§2.4.2-§2.4.6) beyond the spec's own examples."""

from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest

from cosnotify.filter.factory import FilterFactory
from cosnotify.orb import CORBA, tc
from cosnotify.stubs import CosNotification as N
from tests.filter.events import NOW, make_filter, matcher, structured

MAX_ULL = 18446744073709551615


def value(typecode: Any, *args: Any) -> Any:
    return CORBA.Any(typecode, typecode.python_class()(*args))


def numbers(idl: SimpleNamespace, **overrides: Any) -> Any:
    fields = {"s": -7, "us": 7, "l": 7, "ul": 7, "ll": -(2**62), "ull": MAX_ULL, "f": 1.5,
              "d": 2.5, "b": True, "ch": "A", "o": 255, "str": "text"}
    fields.update(overrides)
    return value(idl.FE._tc_Numbers, *fields.values())


def evaluate(text: str, event: Any) -> bool:
    return matcher(text)(event)


class TestArithmeticConversions:
    """§2.4.3: mixed-type arithmetic."""

    @pytest.mark.parametrize("text", [
        "$.l / 2 == 3",                 # long / long: integer division
        "$.s / 2 == -3",                # truncates toward zero, as C
        "-7 / 2 == -3 and 7 / -2 == -3 and -8 / 2 == -4",
        "$.d / 2 == 1.25",              # double / weak long constant: double
        "$.f / 2 == 0.75",              # float converts to double
        "$.l * 1.0 / 2 == 3.5",         # a double operand makes the division double
        "$.us - $.l - 1 == -1",         # unsigned does not wrap (exact integers)
        "$.ul - 8 == -1",
        "$.o * 2 == 510",               # octet is numeric
        "$.ch + 0 == 65",               # char is numeric
        "$.b + $.b == 2",               # boolean is a weak long 1/0
        "TRUE + FALSE == 1",
        "$.ll - 1 == -4611686018427387905",
        "$.ll * 4 == -18446744073709551615 - 1",   # beyond 64 bits: still exact
        "$.ull - 1 == 18446744073709551614",
        "$.ull / 2 == 9223372036854775807",
        "$.f + $.d == 4.0",
        "'H' + 1 > 32",
        "'H' + 1 == 73",
        "+5 - -5 == 10",
    ])
    def test_true(self, idl: SimpleNamespace, text: str) -> None:
        """Each conversion rule gives the C-like result."""
        assert evaluate(text, numbers(idl)) is True, text

    @pytest.mark.parametrize("text", [
        "$.str + 1 > 0",                # a string of length > 1 is not numeric
        "$.str * 2 == 2",
        "$.l / 0 == 1",                 # division by zero
        "$.d / 0.0 > 1",
        "$.d / $.zero > 1",             # a missing member
        "not ($.l / 0 == 1)",           # the error is not negated: the match is FALSE
        "$.l + 'ab' > 0",
    ])
    def test_errors_are_false(self, idl: SimpleNamespace, text: str) -> None:
        """A type error or a zero denominator makes the whole match FALSE."""
        assert evaluate(text, numbers(idl)) is False, text

    NUMERIC = ("s", "us", "l", "ul", "ll", "ull", "f", "d", "b", "ch", "o")

    @pytest.mark.parametrize("left", NUMERIC)
    @pytest.mark.parametrize("right", NUMERIC)
    def test_division_table(self, idl: SimpleNamespace, left: str, right: str) -> None:
        """Every pair of numeric types: the division is floating when either operand is
        float or double, else integral (booleans and chars are integers here)."""
        text = f"($.{left} - $.{left} + 7) / ($.{right} - $.{right} + 2)"
        floating = left in ("f", "d") or right in ("f", "d")
        event = numbers(idl)
        assert evaluate(f"{text} == {3.5 if floating else 3}", event) is True
        assert evaluate(f"{text} == {3 if floating else 3.5}", event) is False

    def test_double_comparison_converts_the_integer(self, idl: SimpleNamespace) -> None:
        """A double operand converts a 64-bit integer to double before comparing (§2.4.3)."""
        assert evaluate("$.ull == 18446744073709551616.0", numbers(idl)) is True
        assert evaluate("$.ull == 18446744073709551615", numbers(idl)) is True

    def test_fixed_point(self) -> None:
        """fixed values are numeric (kept as Decimal)."""
        event = CORBA.Any(tc.fixed_tc(5, 2), Decimal("1.25"))
        assert evaluate("$ * 2 == 2.5 and $ + 1 > 2 and $ / 5 == 0.25", event) is True
        assert evaluate("$ == 1.5", event) is False


class TestSixtyFourBit:
    """Integers are exact: 64-bit values never pass through a double."""

    def test_ulonglong_extremes(self, idl: SimpleNamespace) -> None:
        """ulonglong 2**64-1 equals itself and differs from 2**64-2."""
        event = numbers(idl)
        assert evaluate(f"$.ull == {MAX_ULL}", event) is True
        assert evaluate(f"$.ull != {MAX_ULL - 1}", event) is True
        assert evaluate(f"$.ull == {MAX_ULL - 1}", event) is False
        assert evaluate(f"$.ull > {MAX_ULL - 1}", event) is True

    def test_ulonglong_property(self) -> None:
        """The same through a structured event's filterable data."""
        for n in (MAX_ULL, MAX_ULL - 1, 2**53 + 1):
            event = structured(filterable={"n": CORBA.Any(CORBA.TC_ulonglong, n)})
            assert evaluate(f"$n == {n}", event) is True
            assert evaluate(f"$n == {n - 1}", event) is False

    def test_longlong_minimum(self, idl: SimpleNamespace) -> None:
        """-2**63 compares exactly."""
        event = numbers(idl, ll=-(2**63))
        assert evaluate("$.ll == -9223372036854775808", event) is True
        assert evaluate("$.ll == -9223372036854775807", event) is False


class TestComparisons:
    """§2.4.3: strings lexicographic, booleans FALSE < TRUE, no mixing with strings."""

    @pytest.mark.parametrize("text", [
        "'abc' < 'abd'", "'B' < 'a'", "'' < 'a'", "'abc' == 'abc'", "'abc' != 'ab'",
        "FALSE < TRUE", "TRUE >= FALSE", "TRUE == 1", "FALSE == 0", "1 < 1.5",
        "TRUE < 'a'",  # both numeric: 1 < 97
        "$.ch == 'A'", "$.ch == 65", "'A' < 66", "$.b == TRUE", "$.b",
    ])
    def test_true(self, idl: SimpleNamespace, text: str) -> None:
        """These comparisons hold."""
        assert evaluate(text, numbers(idl)) is True, text

    @pytest.mark.parametrize("text", [
        "'abc' < 5", "'abc' == TRUE", "$.str == 1", "TRUE < 'ab'", "$.l", "5", "'x'",
        "$.l and TRUE", "not $.l", "$.l or TRUE", "$.missing == 1", "$.missing != 1",
    ])
    def test_false(self, idl: SimpleNamespace, text: str) -> None:
        """Invalid comparisons, numbers where booleans are needed, and missing members."""
        assert evaluate(text, numbers(idl)) is False, text

    def test_twiddle(self, idl: SimpleNamespace) -> None:
        """A ~ B: A is contained in B (§2.4.1); strings only."""
        event = numbers(idl)
        assert evaluate("'ell' ~ 'hello' and 'ex' ~ $.str and '' ~ 'x'", event) is True
        assert evaluate("'hello' ~ 'ell'", event) is False
        assert evaluate("5 ~ 'x5'", event) is False
        assert evaluate("$.str ~ 5", event) is False


class TestShortCircuit:
    """§2.4.3: and/or short-circuit; an evaluated error ends the match."""

    @pytest.mark.parametrize(("text", "expected"), [
        ("FALSE and $.missing == 1", False),
        ("TRUE or $.missing == 1", True),
        ("$.missing == 1 or TRUE", False),
        ("TRUE and $.missing == 1", False),
        ("FALSE or $.missing == 1 or TRUE", False),
        ("FALSE and 1 / 0 == 1", False),
        ("TRUE or 1 / 0 == 1", True),
        ("not (FALSE and $.missing == 1)", True),
        ("exist $.missing or TRUE", True),
    ])
    def test_order(self, text: str, expected: bool) -> None:
        """Operands are evaluated left to right and only while the result is open."""
        assert evaluate(text, CORBA.Any(CORBA.TC_long, 1)) is expected


class TestEnums:
    """Enums compare with their labels, their own type and ordinals (§2.4.6-2.4.7)."""

    def holding(self, idl: SimpleNamespace, asset: Any, amount: int = 1) -> Any:
        return value(idl.FE._tc_Holding, asset, amount)

    @pytest.mark.parametrize(("text", "expected"), [
        ("$.in == HOUSE", False), ("$.in == CAR", True), ("$.in != HOUSE", True),
        ("$.in > HOUSE", True), ("$.in < BOAT", True), ("HOUSE < $.in", True),
        ("$.in == 1", True), ("$.in == $.0", True), ("$.in == $.in", True),
        ("$.in == 'CAR'", False), ("$.in != 'CAR'", False),   # strings are not labels
        ("$.in == PLANE", False), ("$.in != PLANE", False),   # unknown label: error
        ("$.in + 1 == 2", False),                             # no arithmetic on enums
        ("$.in == value", True),   # a resolving identifier is not a label: $.value is 1
        ("$.in ~ 'CAR'", False),
    ])
    def test_comparisons(self, idl: SimpleNamespace, text: str, expected: bool) -> None:
        """CAR compared in every permitted and forbidden way."""
        assert evaluate(text, self.holding(idl, idl.FE.CAR)) is expected, text

    def test_enum_in_sequence(self, idl: SimpleNamespace) -> None:
        """A label can be looked up in a sequence of enums."""
        fe = idl.FE
        bag = value(fe._tc_Bag, [fe.HOUSE, fe.BOAT], [], [], [1, 2, 3], "", b"", [], fe.CAR)
        assert evaluate("HOUSE in $.assets and not (CAR in $.assets)", bag) is True
        assert evaluate("$.one in $.assets", bag) is False
        assert evaluate("PLANE in $.assets", bag) is False


class TestIn:
    """`in` over sequences and arrays (§2.4.2-2.4.3)."""

    def bag(self, idl: SimpleNamespace) -> Any:
        fe = idl.FE
        anys = [CORBA.Any(CORBA.TC_string, "xy"), CORBA.Any(CORBA.TC_short, 5)]
        return value(fe._tc_Bag, [], anys, [1, 2, 3], [4, 5, 6], "abc", b"\x01\xff",
                     ["a", "b"], fe.HOUSE)

    @pytest.mark.parametrize(("text", "expected"), [
        ("2 in $.longs", True), ("9 in $.longs", False), ("5 in $.arr", True),
        ("2.0 in $.longs", True), ("TRUE in $.longs", True),
        ("255 in $.bytes", True), ("2 in $.bytes", False),
        ("'a' in $.chars", True), ("'ab' in $.chars", False), ("97 in $.chars", True),
        ("'xy' in $.anys", True),
        ("5 in $.anys", False),            # 'xy' cannot be compared with 5: an error
        ("'x' in $.longs", False),         # 'x' is a char, 120: compared as a number
        ("'b' in $.str", False),           # a string is not a sequence
        ("1 in $.missing", False),
        ("2 in $.longs and $.longs._length == 3 and $.arr._length == 3", True),
    ])
    def test_membership(self, idl: SimpleNamespace, text: str, expected: bool) -> None:
        """Element equality follows the comparison rules."""
        assert evaluate(text, self.bag(idl)) is expected, text


class TestImplicitMembers:
    """_length, _d, _type_id, _repos_id and exist on them (§2.4.2-2.4.3)."""

    def test_length(self, idl: SimpleNamespace) -> None:
        """_length is for sequences and arrays only."""
        bag = TestIn().bag(idl)
        assert evaluate("$.longs._length == 3 and $.bytes._length == 2", bag) is True
        assert evaluate("exist $.str._length", bag) is False
        assert evaluate("exist $.longs._length and not exist $._length", bag) is True

    def test_type_and_repository_ids(self, idl: SimpleNamespace) -> None:
        """Typedef names are kept; basic types have IDL names but no repository id."""
        fe = idl.FE
        student = value(fe._tc_Student, "n", [], [0] * 12, 1, [])
        assert evaluate("$._type_id == 'Student' and $.tests._type_id == 'Scores'"
                        " and $.gpa._type_id == 'long' and $.name._type_id == 'string'",
                        student) is True
        assert evaluate("$._repos_id == 'IDL:FilterExamples/Student:1.0' and "
                        "$.tests._repos_id == 'IDL:FilterExamples/Scores:1.0'", student) is True
        assert evaluate("exist $.gpa._repos_id", student) is False
        numbers_ = numbers(idl)
        assert evaluate("$.us._type_id == 'unsigned short' and "
                        "$.ull._type_id == 'unsigned long long' and $.ch._type_id == 'char'",
                        numbers_) is True

    def test_discriminator(self, idl: SimpleNamespace) -> None:
        """_d only for unions."""
        union = value(idl.FE._tc_Defaulted, 1, 2.5)
        assert evaluate("$._d == 1 and $.f == 2.5", union) is True
        assert evaluate("exist $.f._d", union) is False


class TestUnions:
    """Union members, labels of every discriminator type, and default (§2.4.6)."""

    def test_member_names_need_the_active_arm(self, idl: SimpleNamespace) -> None:
        """A union member resolves only while the discriminator selects it."""
        union = value(idl.FE._tc_Defaulted, 0, "text")
        assert evaluate("$.s == 'text' and not exist $.f and not exist $.defvalue", union)

    def test_char_enum_and_boolean_labels(self, idl: SimpleNamespace) -> None:
        """Labels are char strings, enum ordinals, or 0/1 for booleans."""
        fe = idl.FE
        assert evaluate("$.('a') == 5 and not exist $.('b')", value(fe._tc_ByChar, "a", 5))
        assert evaluate("$.(97) == 5", value(fe._tc_ByChar, "a", 5))
        assert evaluate("$.(2) == 'x' and $.s == 'x'", value(fe._tc_ByEnum, fe.S, "x"))
        assert evaluate("$._d == S and $._d == 2", value(fe._tc_ByEnum, fe.S, "x"))
        assert evaluate("$.(1) == 5 and $._d == TRUE", value(fe._tc_NoDefault, True, 5))
        assert evaluate("$.(0) == 'n'", value(fe._tc_NoDefault, False, "n"))

    def test_default_operator(self, idl: SimpleNamespace) -> None:
        """default is TRUE only while a default member is active; FALSE for a union
        without one; an error for a non-union."""
        fe = idl.FE
        assert evaluate("default $ and default $._d", value(fe._tc_Defaulted, 9, 1)) is True
        assert evaluate("default $", value(fe._tc_Defaulted, 1, 1.0)) is False
        assert evaluate("not default $", value(fe._tc_NoDefault, True, 1)) is True
        assert evaluate("default $.x or TRUE", value(fe._tc_X, 1, "b", 2)) is False
        assert evaluate("exist $.() or TRUE", value(fe._tc_NoDefault, True, 1)) is True


class TestAnyLayers:
    """Unnamed Any layers are transparent (§2.4.2)."""

    def test_nested_anys(self) -> None:
        """$ of Any(Any(Any(long))) is the long, with its type name."""
        event = CORBA.Any(CORBA.TC_any, CORBA.Any(CORBA.TC_any, CORBA.Any(CORBA.TC_long, 5)))
        assert evaluate("$ == 5 and $._type_id == 'long'", event) is True
        assert evaluate("$ == 6", event) is False

    def test_any_holding_a_structured_event(self) -> None:
        """match on an Any holding a StructuredEvent filters the structured event."""
        event = CORBA.Any(N._tc_StructuredEvent, structured(variable={"priority": 1}))
        assert evaluate("$priority == 1 and $type_name == 'CommunicationsAlarm'", event)


class TestRunTimeVariables:
    """The §2.4.5 translation order, in each event form."""

    def test_structured_order(self) -> None:
        """Fixed header, then variable header, then filterable data, then $.name."""
        event = structured(domain="D", variable={"x": 1, "domain_name": "prop"},
                           filterable={"x": 2, "y": 3})
        assert evaluate("$domain_name == 'D' and $x == 1 and $y == 3", event) is True
        assert evaluate("$header.fixed_header.event_type.domain_name == 'D'", event) is True
        assert evaluate("x == 1 and y == 3 and domain_name == 'D'", event) is True
        assert evaluate("exist $z or exist z", event) is False

    def test_first_translation_wins(self) -> None:
        """The first translation that names something is used; there is no backtracking."""
        record = tc.struct_tc("IDL:test/R:1.0", "R", [("a", CORBA.TC_long)])
        event = structured(variable={"p": 5}, filterable={"p": value(record, 7)})
        assert evaluate("$p == 5", event) is True
        assert evaluate("exist $p.a", event) is False

    def test_curtime(self) -> None:
        """$curtime is a TimeBase::UtcT from the injected clock; $\\curtime is a property."""
        event = structured(filterable={"curtime": 42})
        assert evaluate(f"$curtime.time == {NOW} and $curtime.tdf == 0", event) is True
        assert evaluate("$curtime._type_id == 'UtcT' and "
                        "$curtime._repos_id == 'IDL:omg.org/TimeBase/UtcT:1.0'", event) is True
        assert evaluate("$\\curtime == 42 and \\$curtime == 42", event) is True
        assert evaluate("exist curtime and not exist $\\curtime.x", event) is True
        later = FilterFactory(clock=lambda: NOW + 1).create_filter("EXTENDED_TCL")
        later.add_constraints([_exp(f"$curtime.time > {NOW}")])
        assert later.match_structured(event) is True

    def test_any_event_with_structured_layout(self) -> None:
        """An unstructured event laid out like a structured one: the same translations."""
        mirror = tc.struct_tc("IDL:test/M:1.0", "M", [
            ("header", N._tc_EventHeader), ("filterable_data", N._tc_PropertySeq),
            ("z", CORBA.TC_long)])
        header = N.EventHeader(N.FixedEventHeader(N.EventType("D", "T"), "E"),
                               [N.Property("p", CORBA.Any(CORBA.TC_long, 1))])
        event = value(mirror, header, [N.Property("q", CORBA.Any(CORBA.TC_long, 2))], 3)
        assert evaluate("$domain_name == 'D' and $type_name == 'T' and $event_name == 'E'"
                        " and $p == 1 and $q == 2 and $z == 3", event) is True
        assert evaluate("exist $w", event) is False

    def test_any_holding_a_name_value_list(self) -> None:
        """An Any holding one unnamed name-value list: $name is $(name)."""
        event = CORBA.Any(N._tc_PropertySeq, [N.Property("a", CORBA.Any(CORBA.TC_long, 1))])
        assert evaluate("$a == 1 and $(a) == 1 and a == 1", event) is True
        assert evaluate("exist $b", event) is False

    def test_typed_events(self) -> None:
        """A typed event (§2.7): its event_type pair names domain and type; the other
        parameters are $(name)."""
        f = make_filter("$domain_name == 'Coffee' and $type_name == 'drinking_coffee' "
                        "and $minutes > 3 and $(name) == 'ann'")
        def typed(minutes: int) -> list[Any]:
            return [N.Property("event_type",
                               CORBA.Any(N._tc_EventType, N.EventType("Coffee", "drinking_coffee"))),
                    N.Property("name", CORBA.Any(CORBA.TC_string, "ann")),
                    N.Property("minutes", CORBA.Any(CORBA.TC_long, minutes))]
        assert f.match_typed(typed(5)) is True
        assert f.match_typed(typed(2)) is False


def _exp(text: str) -> Any:
    from cosnotify.stubs import CosNotifyFilter

    return CosNotifyFilter.ConstraintExp([], text)


class TestDeepConstraints:
    """Very deep trees still compile (Python limits nested parentheses to 200)."""

    def test_deep_arithmetic(self) -> None:
        """A 190-level arithmetic chain compiles and evaluates."""
        text = "1" + " - 1" * 190 + " == -189"
        assert evaluate(text, CORBA.Any(CORBA.TC_long, 0)) is True
        nested = "(" * 150 + "$ == 0" + ")" * 150
        assert evaluate(nested, CORBA.Any(CORBA.TC_long, 0)) is True
        right = "1 + (" * 150 + "1" + ")" * 150 + " == 151"
        assert evaluate(right, CORBA.Any(CORBA.TC_long, 0)) is True
