"""ELVIN4 evaluation: tri-state logic, predicates, functions, numbers (§6.1, §6.2, §6.3.1)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N

from cosnotify.filter.elvin4 import compile_program, compiler, evaluate
from cosnotify.filter.elvin4.regex import Glob, Regex
from cosnotify.filter.elvin4.values import Int64
from tests.filter.elvin4.helpers import event_of, load, tri

#: Predicates with a known tri-state value in EVENT (§6.1.1: a missing name is bottom).
PREDICATE = {True: "t > 0", None: "u > 0", False: "f > 0"}
EVENT = event_of({"t": ("int32", 1), "f": ("int32", 0)})

# §6.1.1 "Lukasiewicz tri-state logic table", row by row: A, B, !A, A && B, A || B, A ^^ B.
T, B, F = True, None, False
TABLE = [
    (T, T, F, T, T, F),
    (T, B, F, B, T, B),
    (T, F, F, F, T, T),
    (B, T, B, B, T, B),
    (B, B, B, B, B, B),
    (B, F, B, F, B, B),
    (F, T, T, F, T, T),
    (F, B, T, F, B, B),
    (F, F, T, F, F, F),
]


class TestTruthTable:
    """§6.1.1: every row of the seed's table, in the truth form and the three-valued form."""

    @pytest.mark.parametrize("row", TABLE, ids=lambda r: f"{r[0]}-{r[1]}")
    def test_row(self, row: tuple[Any, ...]) -> None:
        """! && || ^^ give the table's values."""
        a, b, not_a, and_, or_, xor = row
        pa, pb = PREDICATE[a], PREDICATE[b]
        assert tri(f"!({pa})", EVENT) is not_a
        assert tri(f"{pa} && {pb}", EVENT) is and_
        assert tri(f"{pa} || {pb}", EVENT) is or_
        assert tri(f"{pa} ^^ {pb}", EVENT) is xor

    @pytest.mark.parametrize("row", TABLE, ids=lambda r: f"{r[0]}-{r[1]}")
    def test_row_inside_xor(self, row: tuple[Any, ...]) -> None:
        """The same values when the operator sits under ^^ (compiled three-valued)."""
        a, b, not_a, and_, or_, xor = row
        pa, pb = PREDICATE[a], PREDICATE[b]
        false = PREDICATE[False]
        for expr, want in ((f"!({pa})", not_a), (f"{pa} && {pb}", and_),
                           (f"{pa} || {pb}", or_), (f"{pa} ^^ {pb}", xor)):
            assert tri(f"({expr}) ^^ {false}", EVENT) is want, expr

    @pytest.mark.parametrize("values", list(itertools.product([T, B, F], repeat=3)))
    def test_three_operand_chains(self, values: tuple[Any, ...]) -> None:
        """n-ary chains agree with folding the two-operand table."""
        texts = [PREDICATE[v] for v in values]
        and_ = {(r[0], r[1]): r[3] for r in TABLE}
        or_ = {(r[0], r[1]): r[4] for r in TABLE}
        xor = {(r[0], r[1]): r[5] for r in TABLE}
        for op, table in (("&&", and_), ("||", or_), ("^^", xor)):
            want = table[(table[(values[0], values[1])], values[2])]
            assert tri(f" {op} ".join(texts), EVENT) is want

    def test_delivery_only_on_true(self) -> None:
        """§6.1.1 "Notifications are delivered only if the result ... is true"."""
        program = compile_program("u > 0 || f > 0", strict=True)
        assert program.structured(EVENT) is False


class TestVectors:
    """tests/filter/elvin4/vectors/evaluate.json, each citing the seed."""

    @pytest.mark.parametrize("vector", load("evaluate.json"),
                             ids=lambda v: v["expression"][:40])
    def test_vector(self, vector: dict[str, Any]) -> None:
        """The expression has the vector's tri-state value for its attributes."""
        assert tri(vector["expression"], event_of(vector["attributes"])) is vector["expected"]


class TestNumbers:
    """§6.1.12, §6.2, §6.3.1 through the helpers the generated code calls."""

    def test_promotion(self) -> None:
        """§6.2 "real64 > int64 > int32", and the result has the promoted type."""
        assert type(evaluate.add(1, 2)) is int
        assert type(evaluate.add(1, Int64(2))) is Int64
        assert type(evaluate.add(Int64(1), 2.0)) is float
        assert type(evaluate.div(Int64(4), 2)) is Int64

    def test_wrapping(self) -> None:
        """§6.3.1 item 2: integer overflow wraps to the promoted width."""
        assert evaluate.add(2**31 - 1, 1) == -(2**31)
        assert evaluate.mul(Int64(2**62), 2) == -(2**63)
        assert evaluate.neg(-(2**31)) == -(2**31)
        assert evaluate.div(-(2**31), -1) == -(2**31)

    def test_division_and_remainder_truncate(self) -> None:
        """``/`` truncates toward zero; ``%`` takes the dividend's sign."""
        assert evaluate.div(-7, 2) == -3
        assert evaluate.mod(-7, 2) == -1
        assert evaluate.mod(7, -2) == 1

    def test_integer_division_by_zero(self) -> None:
        """§6.3.1: integer division by zero is bottom."""
        assert evaluate.div(1, 0) is None
        assert evaluate.mod(1, Int64(0)) is None

    def test_real_division_by_zero(self) -> None:
        """§6.3.1 item 3: the IEEE 754 values."""
        assert evaluate.div(1.0, 0) == math.inf
        assert evaluate.div(-1, 0.0) == -math.inf
        assert evaluate.div(1.0, -0.0) == -math.inf
        assert math.isnan(evaluate.div(0.0, 0))

    def test_shift_counts_are_masked(self) -> None:
        """§6.1.12 FIXME "as Java does": 5-bit counts for int32, 6-bit for int64."""
        assert evaluate.lshift(1, 33) == 2
        assert evaluate.lshift(Int64(1), 33) == 2**33
        assert evaluate.rshift(-8, 1) == -4
        assert evaluate.urshift(-1, 0) == -1
        assert evaluate.urshift(Int64(-1), 60) == 15

    def test_integer_only_operators_on_reals(self) -> None:
        """§6.1.12: % << >> >>> & | ^ ~ are defined only on int32 and int64."""
        for helper in (evaluate.mod, evaluate.lshift, evaluate.rshift, evaluate.urshift,
                       evaluate.bit_and, evaluate.bit_or, evaluate.bit_xor):
            assert helper(1.0, 1) is None
        assert evaluate.bit_not(1.0) is None

    def test_non_numbers_are_bottom(self) -> None:
        """§6.3.1: an inappropriate type makes the result bottom."""
        for bad in ("1", b"\x01", None):
            assert evaluate.add(bad, 1) is None
            assert evaluate.lt(bad, 1) is None
            assert evaluate.neg(bad) is None

    def test_real_equality_is_bitwise(self) -> None:
        """§6.1.11: equal "if their sign, mantissa and exponent are all equal"."""
        assert evaluate.eq(0.0, -0.0) is False
        assert evaluate.eq(math.nan, math.nan) is True
        assert evaluate.eq(1, 1.0) is True
        assert evaluate.eq(2**53 + 1, float(2**53)) is True  # promoted to real64

    def test_no_string_ordering(self) -> None:
        """§6.1.8: no predicate tests whether one string is less than another."""
        assert evaluate.lt("a", "b") is None

    def test_opaque_equality_is_bottom(self) -> None:
        """§6.1.4: an opaque value can only be used with size()."""
        assert evaluate.eq(b"a", b"a") is None

    def test_nan_comparisons(self) -> None:
        """IEEE 754: every ordering with NaN is false (not bottom)."""
        event = event_of({"x": ("real64", "nan")})
        assert tri("x < 1.0", event) is False
        assert tri("x > 1.0", event) is False
        assert tri("x == x", event) is True

    def test_literal_at_double_precision_edge(self) -> None:
        """§6.2: an int64 beyond 2**53 against a real64 literal compares as real64."""
        event = event_of({"x": ("int64", 2**53 + 1)})
        assert tri("x > 9007199254740992.0", event) is False
        assert tri("x == 9007199254740992.0", event) is True
        assert tri("x > 9007199254740992L", event) is True

    def test_int64_beyond_double_compares_promoted(self) -> None:
        """§6.2: int64 against real64 compares as real64."""
        event = event_of({"x": ("int64", 2**53 + 1), "y": ("real64", float(2**53))})
        assert tri("x == y", event) is True
        assert tri("x > y", event) is False


class TestStringFunctions:
    """§6.1.8-6.1.10 on strings with international characters."""

    @pytest.mark.parametrize(("text", "want"), [
        ('wildcard(x, "a?c")', True), ('wildcard(x, "a*")', True),
        ('wildcard(x, "b*")', False), ('wildcard(x, "[a-b]bc")', True),
        ('wildcard(x, "[!a]bc")', False), ('wildcard(x, "abc", "zzz")', True),
        ('wildcard(x, "\\\\a*")', True), ('wildcard(x, "*")', True),
        ('regex(x, "b")', True), ('regex(x, "^b")', False), ('regex(x, "c$")', True),
        ('regex(x, "^(a|z)b+c{1,2}$")', True), ('regex(x, "[[:upper:]]")', False),
        ('begins-with(fold-case(y), "abc")', True), ('ends-with(decompose(z), "\u0300")', True),
        ('size(fold-case(y)) == 3', True), ('contains(y, "abc")', False),
    ])
    def test_predicates(self, text: str, want: bool) -> None:
        """Each string predicate and function, on x='abc', y='ABC', z='à'."""
        event = event_of({"x": ("string", "abc"), "y": ("string", "ABC"),
                          "z": ("string", "\u00e0")})
        assert tri(text, event) is want

    def test_string_function_of_non_string(self) -> None:
        """§6.1.6: an inappropriate type gives bottom."""
        event = event_of({"x": ("int32", 1)})
        assert tri('fold-case(x) == "1"', event) is None
        assert tri('regex(x, "1")', event) is None
        assert tri('wildcard(x, "*")', event) is None


class TestEquals:
    @pytest.mark.parametrize(("text", "want"), [
        ("equals(x, 2)", True), ("equals(x, 1, 2, 3)", True), ("equals(x, 2.0)", False),
        ("equals(x, 2L)", False), ('equals(x, "a")', False), ('equals(x, "a", 2)', True),
        ("equals(r, 1)", False), ("equals(r, 1.0)", True), ("equals(z, -0.0)", False),
        ("equals(z, 0.0)", True), ('equals(s, "abc")', True), ("equals(s, 1)", False),
        ("equals(x, missing)", False), ("equals(missing, 1)", None), ("equals(o, 1)", False),
        ("equals(o, o)", True), ("equals(x + 0, 2)", True), ("equals(s + 1, 2)", None),
        ("equals(l, 2L)", True), ("equals(l, 2)", False),
    ])
    def test_type_and_value(self, text: str, want: bool | None) -> None:
        """§6.1.7: true when the type and value of the first match a later one; bottom
        only when the first has no value."""
        event = event_of({"x": ("int32", 2), "r": ("real64", 1.0), "z": ("real64", 0.0),
                          "s": ("string", "abc"), "o": ("opaque", "ab"), "l": ("int64", 2)})
        assert tri(text, event) is want

    def test_unmapped_first_is_bottom(self) -> None:
        """An unmapped attribute has no Elvin value: bottom."""
        event = event_of({})
        event.filterable_data = [N.Property("u", CORBA.Any(CORBA.TC_null, None))]
        assert tri("equals(u, 1)", event) is None


def _boom(*args: Any) -> Any:
    raise RuntimeError("helper crashed")


class TestRaisingOperand:
    def test_strict_lets_the_exception_through(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """strict=True matchers do not hide a helper that raises."""
        monkeypatch.setitem(compiler._GLOBALS, "_add", _boom)
        program = compile_program("x + 1 == 5 || x == 3", strict=True)
        with pytest.raises(RuntimeError):
            program.structured(event_of({"x": ("int32", 3)}))

    def test_raising_operand_is_bottom(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """In production an operand that raises is bottom for itself only: the matcher
        never raises, and ``a || b`` is true when b is."""
        monkeypatch.setitem(compiler._GLOBALS, "_add", _boom)
        event = event_of({"x": ("int32", 3)})
        for text, want in (("x + 1 == 5 || x == 3", True), ("x + 1 == 5 && x == 3", False),
                           ("!(x + 1 == 5)", False), ("x + 1 == 5 ^^ x == 3", False),
                           ("x == 3 || x + 1 == 5", True)):
            assert compile_program(text).structured(event) is want, text
            assert compile_program(text).typed([N.Property("x", CORBA.Any(CORBA.TC_long, 3))]) \
                is want, text

    def test_raising_pattern_is_bottom(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The same for a regex or wildcard pattern that raises."""
        event = event_of({"x": ("string", "abc"), "y": ("int32", 1)})
        program = compile_program('regex(x, "b") || y == 1')
        monkeypatch.setattr(Regex, "search", _boom)
        assert program.structured(event) is True
        assert compile_program('wildcard(x, "*") || y == 1').structured(event) is True
        monkeypatch.setattr(Glob, "match", _boom)
        assert compile_program('wildcard(x, "*") || y == 1').structured(event) is True
        assert compile_program('wildcard(x, "*") && y == 1').structured(event) is False
