"""Lone comparisons decided by the index without evaluating them (docs/routing.md,
"From candidates to exact results": ``Term.exact``).

A constraint that is nothing but ``component OP literal`` is answered by
comparing the value the index read with the literal, where Python's comparison
is EXTENDED_TCL's (§2.4.3: numbers of mixed kinds compare as doubles). These
cases pin down where the two could part: integers beyond a double's exact
ones, booleans, characters against numbers, strings ordered, event types.
"""

from __future__ import annotations

import itertools
import operator
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyFilter as F

from cosnotify.filter.constraints import ANY_EVENT_TYPE
from cosnotify.filter.factory import FilterFactory
from cosnotify.filter.paths import Form
from cosnotify.routing.router import Router
from tests.routing.test_equivalence import _filter_match, _index_match, _Owner

BIG = 2 ** 53  # the last integer from which every integer is a double


def _event(tc: Any, value: Any, domain: str = "D") -> Any:
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType(domain, "T"), "e"), []),
        [N.Property("a", CORBA.Any(tc, value))], CORBA.Any(CORBA.TC_null, None))


def _refusing(flt: Any) -> list[str]:
    """Make evaluating any of ``flt``'s constraints fail loudly; the texts evaluated."""
    evaluated: list[str] = []
    for entry in flt._state.entries:
        def refuse(event: Any, text: str = entry.expression.constraint_expr) -> bool:
            evaluated.append(text)
            return False
        object.__setattr__(entry.compiled, "structured", refuse)
    return evaluated


class TestDecidedWithoutEvaluation:
    @pytest.mark.parametrize(("text", "value", "expected"), [
        ("$a > 9712", 9713, True), ("$a > 9712", 9712, False), ("$a >= 9712", 9712, True),
        ("$a < 2.5", 2, True), ("$a <= 2", 2, True), ("9712 < $a", 9800, True),
        ("$a == 7", 7, True), ("$a == 7.0", 7, True), ("$a == 7", 8, False),
        ("$a < 2", 2, False), ("$a < 2", 3, False), ("$a <= 2", 3, False),
        ("$a > 2", 1, False), ("$a >= 2", 1, False), ("2 > $a", 2, False)])
    def test_a_number_compared_with_a_literal(self, text: str, value: int,
                                              expected: bool) -> None:
        flt = FilterFactory().create_filter("EXTENDED_TCL")
        flt.add_constraints([F.ConstraintExp([], text)])
        router = Router()
        router.attach(_Owner(), flt)
        evaluated = _refusing(flt)
        assert _index_match(router, _event(CORBA.TC_long, value)) is expected
        assert evaluated == []

    def test_a_string_equal_to_a_literal(self) -> None:
        flt = FilterFactory().create_filter("EXTENDED_TCL")
        flt.add_constraints([F.ConstraintExp([], "$a == 'h5'")])
        router = Router()
        router.attach(_Owner(), flt)
        evaluated = _refusing(flt)
        assert _index_match(router, _event(CORBA.TC_string, "h5"))
        assert not _index_match(router, _event(CORBA.TC_string, "h50"))
        assert evaluated == []

    def test_the_event_types_still_apply(self) -> None:
        """§2.3: a constraint applies only to events of its types."""
        flt = FilterFactory().create_filter("EXTENDED_TCL")
        flt.add_constraints([F.ConstraintExp([N.EventType("D", "*")], "$a > 1")])
        router = Router()
        router.attach(_Owner(), flt)
        evaluated = _refusing(flt)
        assert _index_match(router, _event(CORBA.TC_long, 2, "D"))
        assert not _index_match(router, _event(CORBA.TC_long, 2, "E"))
        assert evaluated == []

    @pytest.mark.parametrize("text", ["$a > 1 and $a != 5", "$a > 1 or $a == 0",
                                      "$a < 'b'", "$a == TRUE"])
    def test_more_than_a_lone_comparison_is_evaluated(self, text: str) -> None:
        """Ordered strings and booleans are left to the grammar: one-character
        strings order as characters, booleans compare as 0 and 1."""
        flt = FilterFactory().create_filter("EXTENDED_TCL")
        flt.add_constraints([F.ConstraintExp([], text)])
        router = Router()
        router.attach(_Owner(), flt)
        evaluated = _refusing(flt)
        tc, value = ((CORBA.TC_string, "a") if "'" in text
                     else (CORBA.TC_boolean, True) if "TRUE" in text else (CORBA.TC_long, 2))
        assert not _index_match(router, _event(tc, value))  # the refusing evaluation said so
        assert evaluated == [text]


    def test_many_bounds_on_one_component(self) -> None:
        """Postings beyond the value's bound are TRUE by their order alone; the one at
        the bound is compared: each filter is still asked exactly (§2.3)."""
        orders = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
        router, filters, tests = Router(), {}, {}
        for op, bound in itertools.product(orders, [-1.5, 0, 1, 2, 2.5, 7]):
            flt = filters[f"$a {op} {bound}"] = FilterFactory().create_filter("EXTENDED_TCL")
            flt.add_constraints([F.ConstraintExp([], f"$a {op} {bound}")])
            router.attach(_Owner(), flt)
            tests[flt] = (orders[op], bound)
        evaluated = [text for flt in filters.values() for text in _refusing(flt)]
        for tc, value in [(CORBA.TC_long, v) for v in (-2, 0, 1, 2, 3, 7, 8)] + [
                (CORBA.TC_double, v) for v in (-1.5, -0.0, 0.5, 2.5, float("inf"))]:
            event = _event(tc, value)
            found = {record.filter for record in router.index.match(
                event, Form.STRUCTURED, ("D", "T"))}
            expected = {flt for flt, (order, bound) in tests.items() if order(value, bound)}
            assert found == expected, (value, sorted(t for t, f in filters.items()
                                                     if (f in found) != (f in expected)))
        assert evaluated == []


class TestSameAnswerAsTheFilter:
    """Where Python's comparison and the grammar's could differ, the index's answer
    is still the filter's own."""

    @pytest.mark.parametrize(("tc", "values"), [
        (CORBA.TC_longlong, [BIG - 1, BIG, BIG + 1, -BIG - 1, 2 ** 62]),
        (CORBA.TC_ulonglong, [BIG, BIG + 1, 2 ** 64 - 1]),
        (CORBA.TC_double, [float(BIG), float(BIG) * 2, float("inf"), -0.0, 0.5]),
        (CORBA.TC_char, ["a", "b"]), (CORBA.TC_boolean, [False, True]),
        (CORBA.TC_string, ["a", "b", "ab", ""])])
    def test_every_operator_at_and_around_its_bound(self, tc: Any, values: list[Any]) -> None:
        literals = [str(BIG), str(BIG + 1), str(2 ** 62), "0", "1", "97", "0.0",
                    "'a'", "'ab'", "TRUE"]
        for op, literal in itertools.product(["==", "<", "<=", ">", ">="], literals):
            flt = FilterFactory().create_filter("EXTENDED_TCL")
            flt.add_constraints([F.ConstraintExp([], f"$a {op} {literal}")])
            router = Router()
            router.attach(_Owner(), flt)
            for value in values:
                event = _event(tc, value)
                assert _index_match(router, event) is _filter_match(flt, event), (
                    op, literal, value)


def test_the_index_reads_the_form_it_is_asked_for() -> None:
    """An Any event's value is read as match() reads it (Form.ANY), and a lone
    comparison on it is decided the same way."""
    flt = FilterFactory().create_filter("EXTENDED_TCL")
    flt.add_constraints([F.ConstraintExp([], "$ > 3")])
    router = Router()
    router.attach(_Owner(), flt)
    for value in (2, 3, 4):
        event = CORBA.Any(CORBA.TC_long, value)
        assert bool(router.index.match(event, Form.ANY, ANY_EVENT_TYPE)) is (value > 3)
