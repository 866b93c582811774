"""Index terms: ``routing.terms.keys_of`` and ``filter.decompose`` (docs/routing.md).

The index is exact only because every term is a *necessary* condition: a
constraint that is TRUE for an event always shares a key with it. These
tests pin the decomposition of each constraint shape, and check the key
relation against ``runtime``'s comparison rules (§2.4.3) as a property.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from omniORB import CORBA

import CosNotification as N
import CosNotifyFilter as F

import cosnotify
from cosnotify.filter import ast
from cosnotify.filter import runtime as R
from cosnotify.filter.constraints import structured_type
from cosnotify.filter.decompose import decompose
from cosnotify.filter.parser import parse_constraint
from cosnotify.filter.paths import Form
from cosnotify.routing.router import Router
from cosnotify.routing.terms import MAX_KEYS, Key, Kind, Term, keys_of
from tests.strategies import ROUTING_ENUM_TC, routing_operands


def _comp(name: str | None, *steps: ast.Step, escaped: bool = False) -> ast.Component:
    return ast.Component(name, escaped, steps)


def _num(value: float) -> Key:
    return ("n", float(value))


def _str(value: str) -> Key:
    return ("s", value)


def _access(text: str) -> Any:
    """The terms of ``text``, without their ``exact`` tests (test_a_lone_comparison...)."""
    found = decompose(parse_constraint(text))
    return found if found is None else tuple(attrs.evolve(term, exact=None) for term in found)


def _enum(ordinal: int) -> R.EnumVal:
    items = ROUTING_ENUM_TC._d[3]
    return R.EnumVal(items[ordinal]._n, ordinal, items)


@pytest.fixture
def filters() -> Iterator[Any]:
    """A channel's default filter factory (as a client reaches it)."""
    factory = cosnotify.EventChannelFactory()
    try:
        yield factory.create_channel([], [])[0]._get_default_filter_factory()
    finally:
        factory.close()


def _alternatives(count: int, literal: Callable[[int], str] = str) -> str:
    """``$a==1 or $a==2 ...``: one index key per alternative (for number literals)."""
    return " or ".join(f"$a=={literal(i)}" for i in range(1, count + 1))


def _event(fields: dict[str, Any]) -> Any:
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("D", "T"), "e"), []),
        [N.Property(k, CORBA.Any(CORBA.TC_long, v)) for k, v in fields.items()],
        CORBA.Any(CORBA.TC_null, None))


class TestKeysOf:
    """keys_of folds §2.4.3's comparison rules into shared keys."""

    def test_numbers_of_every_kind_share_one_key(self) -> None:
        """An int, a float and a Decimal of one value have one key, a double."""
        assert keys_of(5) == keys_of(5.0) == keys_of(Decimal("5.00")) == (_num(5),)

    def test_a_char_is_a_string_and_a_number(self) -> None:
        """A one-character string has its string key and its code point's key."""
        assert keys_of("a") == (_str("a"), _num(97))

    def test_a_longer_string_is_only_a_string(self) -> None:
        """Strings of other lengths compare only as strings."""
        assert keys_of("ab") == (_str("ab"),)
        assert keys_of("") == (_str(""),)

    def test_booleans_are_zero_and_one(self) -> None:
        """TRUE and FALSE compare with numbers as 1 and 0."""
        assert keys_of(True) == (_num(1),)
        assert keys_of(False) == (_num(0),)

    def test_an_enum_is_its_ordinal(self) -> None:
        """An enum value compares with integers by ordinal (§2.4.6)."""
        assert keys_of(_enum(2)) == (_num(2),)

    @pytest.mark.parametrize("value", [float("nan"), Decimal("NaN"), Decimal("sNaN")])
    def test_nan_has_no_key(self, value: Any) -> None:
        """NaN equals nothing, so it has no key."""
        assert keys_of(value) == ()

    @pytest.mark.parametrize("value", [None, [1], (1,), b"a", R.Label("e1"), object()])
    def test_other_values_have_no_key(self, value: Any) -> None:
        """Values no literal can equal (sequences, labels, structs ...) have no key."""
        assert keys_of(value) == ()

    def test_an_integer_beyond_a_double_keeps_its_value(self) -> None:
        """An integer that no double can hold (only integers equal it) is its own key."""
        assert keys_of(10**400) == (("n", 10**400),)

    @given(routing_operands, routing_operands)
    @settings(max_examples=600, deadline=None)
    def test_equal_operands_share_a_key(self, a: Any, b: Any) -> None:
        """Whenever runtime.eq says a == b, some key of a is a key of b."""
        try:
            equal = R.eq(a, b)
        except R.Fail:
            equal = False
        if equal:
            assert set(keys_of(a)) & set(keys_of(b)), (a, b)

    @given(routing_operands, routing_operands)
    @settings(max_examples=600, deadline=None)
    def test_ordered_operands_have_ordered_keys(self, a: Any, b: Any) -> None:
        """Whenever a < b (or <=, >, >=) holds, a key of a and a key of b of one
        domain are ordered the same way, inclusively: a range lookup finds it."""
        checks: list[tuple[Callable[[Any, Any], bool], Callable[[Any, Any], bool]]] = [
            (R.lt, lambda x, y: x <= y), (R.le, lambda x, y: x <= y),
            (R.gt, lambda x, y: x >= y), (R.ge, lambda x, y: x >= y)]
        for holds, keys_ordered in checks:
            try:
                related = holds(a, b)
            except R.Fail:
                related = False
            if related:
                assert any(ka[0] == kb[0] and keys_ordered(ka[1], kb[1])
                           for ka in keys_of(a) for kb in keys_of(b)), (holds.__name__, a, b)


_A, _N, _S, _TAGS = _comp("a"), _comp("n"), _comp("s"), _comp("tags")


class TestDecompose:
    """Each constraint shape gives the necessary terms section 2.4.3 implies."""

    @pytest.mark.parametrize(("text", "access"), [
        ("$a == 5", (Term(Kind.EQ, _A, (_num(5),)),)),
        ("5 == $a", (Term(Kind.EQ, _A, (_num(5),)),)),
        ("$a == 2.5", (Term(Kind.EQ, _A, (_num(2.5),)),)),
        ("$a == TRUE", (Term(Kind.EQ, _A, (_num(1),)),)),
        ("$s == 'x'", (Term(Kind.EQ, _S, (_str("x"), _num(120))),)),
        ("$s == 'xy'", (Term(Kind.EQ, _S, (_str("xy"),)),)),
        ("$n > 5", (Term(Kind.LOWER, _N, (_num(5),)),)),
        ("$n >= 5", (Term(Kind.LOWER, _N, (_num(5),)),)),
        ("$n < 5", (Term(Kind.UPPER, _N, (_num(5),)),)),
        ("$n <= 5", (Term(Kind.UPPER, _N, (_num(5),)),)),
        ("5 < $n", (Term(Kind.LOWER, _N, (_num(5),)),)),
        ("5 <= $n", (Term(Kind.LOWER, _N, (_num(5),)),)),
        ("5 > $n", (Term(Kind.UPPER, _N, (_num(5),)),)),
        ("5 >= $n", (Term(Kind.UPPER, _N, (_num(5),)),)),
        ("'x' in $tags", (Term(Kind.IN, _TAGS, (_str("x"), _num(120))),)),
        ("3 in $tags", (Term(Kind.IN, _TAGS, (_num(3),)),)),
        ("$ == 5", (Term(Kind.EQ, _comp(None), (_num(5),)),)),
        ("$.a[0] <= 3", (Term(Kind.UPPER, _comp(None, ast.Member("a"), ast.Index(0)),
                               (_num(3),)),)),
        ("$type_name == 'T1'", (Term(Kind.EQ, _comp("type_name"), (_str("T1"),)),)),
        ("a == 3", (Term(Kind.EQ, _A, (_num(3),)),)),
        ("$\\curtime == 5", (Term(Kind.EQ, _comp("curtime", escaped=True), (_num(5),)),)),
    ])
    def test_comparisons_with_a_literal(self, text: str, access: Any) -> None:
        """A component compared with a literal gives one term of the operator's kind."""
        assert _access(text) == access

    @pytest.mark.parametrize(("text", "exact"), [
        ("$a == 5", ("==", 5)), ("5 == $a", ("==", 5)), ("$n > 5", (">", 5)),
        ("5 < $n", (">", 5)), ("5 >= $n", ("<=", 5)), ("$s == 'xy'", ("==", "xy")),
        ("$a == 2.5", ("==", 2.5)), ("$a == TRUE", ("==", True)),
        ("$n > 5 and $n != 3", None), ("$a == 1 or $a == 2", None),
        ("'x' in $tags", None), ("$n >= 1 and $n < 5", None)])
    def test_a_lone_comparison_is_its_own_exact_test(self, text: str, exact: Any) -> None:
        """Only a comparison that is the whole constraint is marked exact, oriented
        with the component on the left (the index decides it by comparing)."""
        found = decompose(parse_constraint(text))
        assert [term.exact for term in found] == [exact] * len(found)

    def test_or_is_the_union(self) -> None:
        """``a or b`` needs a term of either: all of both operands' terms."""
        assert _access("$a == 1 or $n > 2 or 'x' in $tags") == (
            Term(Kind.EQ, _A, (_num(1),)), Term(Kind.LOWER, _N, (_num(2),)),
            Term(Kind.IN, _TAGS, (_str("x"), _num(120))))

    def test_false_or_adds_nothing(self) -> None:
        """FALSE has no terms, so it adds none to an ``or``."""
        assert _access("FALSE or $a == 1") == (Term(Kind.EQ, _A, (_num(1),)),)

    @pytest.mark.parametrize(("text", "chosen"), [
        ("$a == 1 and $n > 2", "$a == 1"),
        ("$n > 2 and $a == 1", "$a == 1"),
        ("$n > 2 and 'x' in $tags", "'x' in $tags"),
        ("$s == 'x' and $a == 'xy'", "$a == 'xy'"),
        ("($a == 1 or $a == 2) and $n == 3", "$n == 3"),
        ("$a == 1 and $n != 2", "$a == 1"),
        ("not ($n == 2) and $a == 1", "$a == 1"),
        ("TRUE and $a == 1", "$a == 1"),
    ])
    def test_and_picks_one_operand(self, text: str, chosen: str) -> None:
        """``a and b`` needs both, so one operand's terms do: equality and ``in``
        before ranges, then the fewest keys; an unindexable operand is skipped."""
        assert _access(text) == _access(chosen)

    def test_false_and_is_never_true(self) -> None:
        """``FALSE and x`` is never TRUE: no terms, even when x has none."""
        assert _access("FALSE and $a != 1") == ()

    def test_escaped_bare_curtime_is_a_property(self) -> None:
        """'\\curtime' is the property '$\\curtime' (§2.4.2, decision 1), so it is indexed
        like any property, while the reserved '$curtime' and bare 'curtime' are not."""
        assert _access("\\curtime == 5") == _access("$\\curtime == 5") == (
            Term(Kind.EQ, _comp("curtime", escaped=True), (_num(5),)),)
        assert _access("curtime == 5") is None

    def test_false_is_never_true(self) -> None:
        """FALSE gives the empty access, not None."""
        assert _access("FALSE") == ()

    @pytest.mark.parametrize("text", [
        "TRUE", "not ($a == 1)", "$a != 1", "'x' ~ $s", "$a == $n", "$curtime > 5",
        "$curtime.low == 1", "5 < $curtime", "exist $a", "default $.u", "$a + 1 == 2",
        "$a == 1 or $a != 2", "$a == 1 or exist $n", "5 == 5", "e1 == $a", "$a == e1",
        "$s in $tags", "$a", "not FALSE",
    ])
    def test_what_cannot_be_indexed(self, text: str) -> None:
        """``not``, ``!=``, ``~``, TRUE, two components, ``$curtime``, arithmetic and
        ``exist`` give no access: the constraint is asked for every event of its types."""
        assert _access(text) is None


class TestKeyLimit:
    """A constraint may add at most MAX_KEYS keys to a forwarding filter's index; one
    that needs more is still valid (§3.2.1.2: InvalidConstraint is for a constraint that
    "is not a valid expression within the supported constraint grammar"), so it is
    accepted and kept unindexed: the router evaluates it for every event (review 114)."""

    @staticmethod
    def _router_agrees(flt: Any, events: list[Any]) -> Router:
        """A router holding ``flt`` whose index finds it exactly for the events it matches."""
        router = Router()
        router.attach(object(), flt)
        for event in events:
            found = bool(router.index.match(event, Form.STRUCTURED, structured_type(event)))
            assert found is flt.match_structured(event), event.filterable_data
        return router

    def test_more_keys_than_the_limit_are_accepted_unindexed(self, filters: Any) -> None:
        """An ``or`` of 1,100 equalities is accepted with the filter's other constraints;
        it is not indexed, and the index still answers as the filter does."""
        f = filters.create_filter("EXTENDED_TCL")
        text = _alternatives(1100)
        assert len(text) < ast.MAX_LENGTH
        f.add_constraints([F.ConstraintExp([], "$b == 1"), F.ConstraintExp([], text)])
        assert [c.constraint_expression.constraint_expr for c in f.get_all_constraints()] == [
            "$b == 1", text]
        events = [_event({"a": a, "b": b}) for a in (0, 1, 1024, 1025, 1100, 1101) for b in (0, 1)]
        assert [f.match_structured(e) for e in events] == [
            False, True, True, True, True, True, True, True, True, True, False, True]
        router = self._router_agrees(f, events)
        assert router.stats()["fallback_constraints"] == 1

    def test_the_limit_itself_is_indexed(self, filters: Any) -> None:
        """MAX_KEYS keys are indexed; MAX_KEYS + 1 are accepted and evaluated by scan."""
        f = filters.create_filter("EXTENDED_TCL")
        f.add_constraints([F.ConstraintExp([], _alternatives(MAX_KEYS))])
        assert f.match_structured(_event({"a": MAX_KEYS}))
        events = [_event({"a": a}) for a in (0, 1, MAX_KEYS, MAX_KEYS + 1)]
        assert self._router_agrees(f, events).stats()["fallback_constraints"] == 0
        f.add_constraints([F.ConstraintExp([], _alternatives(MAX_KEYS + 1))])
        assert len(f.get_all_constraints()) == 2
        assert self._router_agrees(f, events).stats()["fallback_constraints"] == 1

    def test_a_char_literal_counts_two_keys(self, filters: Any) -> None:
        """A one-character literal adds a string key and a number key."""
        half = MAX_KEYS // 2
        assert len(_access(_alternatives(half, lambda i: "'x'"))[0].keys) == 2
        with pytest.raises(ValueError, match=str(MAX_KEYS)):
            _access(_alternatives(half + 1, lambda i: "'x'"))
        f = filters.create_filter("EXTENDED_TCL")
        f.add_constraints([F.ConstraintExp([], _alternatives(half + 1, lambda i: "'x'"))])
        assert self._router_agrees(f, [_event({"a": 120}), _event({"b": 120})]).stats()[
            "fallback_constraints"] == 1

    def test_modify_constraints_accepts_it_too(self, filters: Any) -> None:
        """Replacing an indexed constraint by one over the limit unindexes it."""
        f = filters.create_filter("EXTENDED_TCL")
        [info] = f.add_constraints([F.ConstraintExp([], "$a == 2000")])
        router = Router()
        router.attach(object(), f)
        f.modify_constraints([], [F.ConstraintInfo(
            F.ConstraintExp([], _alternatives(1100)), info.constraint_id)])
        [kept] = f.get_all_constraints()
        assert kept.constraint_expression.constraint_expr == _alternatives(1100)
        assert router.stats()["fallback_constraints"] == 1
        for a in (1, 1100, 2000):
            event = _event({"a": a})
            assert bool(router.index.match(event, Form.STRUCTURED, structured_type(event))) \
                is f.match_structured(event) is (a <= 1100)

    def test_an_and_with_a_cheap_operand_is_accepted(self, filters: Any) -> None:
        """``x and (1,100 alternatives)`` is indexed by x alone, so it is accepted."""
        f = filters.create_filter("EXTENDED_TCL")
        f.add_constraints([F.ConstraintExp([], f"$b == 1 and ({_alternatives(1100)})")])
        assert f.match_structured(_event({"a": 1100, "b": 1}))
        assert not f.match_structured(_event({"a": 1101, "b": 1}))

    def test_an_unindexable_constraint_is_not_limited(self, filters: Any) -> None:
        """A constraint that gives no terms adds no keys, whatever its size."""
        f = filters.create_filter("EXTENDED_TCL")
        f.add_constraints([F.ConstraintExp([], f"not ({_alternatives(1100)})")])
        assert f.match_structured(_event({"a": 1101}))

    def test_decompose_raises_value_error(self) -> None:
        """decompose itself reports the limit as ValueError (compile_entry then keeps the
        constraint unindexed)."""
        with pytest.raises(ValueError, match=str(MAX_KEYS)):
            _access(_alternatives(MAX_KEYS + 1))

    def test_a_mapping_filter_has_no_limit(self, filters: Any) -> None:
        """Mapping filters index nothing, so the same constraint is accepted and maps."""
        m = filters.create_mapping_filter("EXTENDED_TCL", CORBA.Any(CORBA.TC_short, 0))
        m.add_mapping_constraints([F.MappingConstraintPair(
            F.ConstraintExp([], _alternatives(1100)), CORBA.Any(CORBA.TC_short, 7))])
        matched, value = m.match_structured(_event({"a": 1100}))
        assert matched is True
        assert value.value() == 7
