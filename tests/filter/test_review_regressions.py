"""Regressions from an adversarial review of the EXTENDED_TCL filter implementation.

Each class pins one finding: generated code that grew exponentially, literals
that escaped as a plain ValueError, quadratic parsing with no length limit,
exceptions other than the spec's escaping from filter operations, and a few
evaluation rules (docs/filters.md decisions 29, 40, 43).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from omniORB import CORBA, tcInternal

import CosNotification as N
import CosNotifyFilter as F

from cosnotify.filter import ConstraintSyntaxError, constraints, parse_constraint
from cosnotify.filter import ast as A
from cosnotify.filter.compiler import compile_text, generated_source
from cosnotify.filter.factory import FilterFactory
from cosnotify.filter.paths import Form
from cosnotify.filter.registry import (
    CompileContext,
    CompiledConstraint,
    GrammarRegistry,
    compile_extended_tcl,
)
from tests.filter.events import expression, make_filter, same_any, structured


def any_match(text: str) -> Callable[[Any], bool]:
    """The Any-form matcher of one constraint."""
    return compile_text(text)[1]


def _near_recursion_limit(fn: Callable[[], Any], headroom: int = 150) -> Any:
    """``fn()`` called with only ``headroom`` frames left below the recursion limit."""
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return _recurse(sys.getrecursionlimit() - headroom - depth, fn)


def _recurse(count: int, fn: Callable[[], Any]) -> Any:
    if count <= 0:
        return fn()
    return _recurse(count - 1, fn)


class TestGeneratedSourceSize:
    """A comparison with one statically typed side named that side twice in the
    generated code, so nesting doubled the source at every level (2**n)."""

    def test_nested_comparisons_stay_linear(self) -> None:
        """40 nested comparisons generate a few kilobytes, not 2**40 characters."""
        text = "$ == (" * 40 + "TRUE" + ")" * 40
        source = generated_source(parse_constraint(text), Form.ANY)
        assert len(source) < 50 * len(text)

    def test_nested_comparisons_through_a_filter(self) -> None:
        """The same constraint is added to a filter and evaluates as nested equalities."""
        f = make_filter("$ == (" * 40 + "TRUE" + ")" * 40)
        assert f.match(CORBA.Any(CORBA.TC_boolean, True)) is True
        assert f.match(CORBA.Any(CORBA.TC_long, 5)) is False

    @pytest.mark.parametrize(("text", "two", "three"), [
        ("(1 + 1) == $", True, False),
        ("$ == (1 + 1)", True, False),
        ("$ < (0.5 + 2)", True, False),
        ("(4 / 2) >= $", True, False),
        ("('a' ~ 'xa') == ($ == 2)", True, False),
    ])
    def test_named_known_side(self, text: str, two: bool, three: bool) -> None:
        """A computed operand of known kind, now bound once, still compares correctly."""
        match = any_match(text)
        assert match(CORBA.Any(CORBA.TC_long, 2)) is two
        assert match(CORBA.Any(CORBA.TC_long, 3)) is three
        assert match(CORBA.Any(CORBA.TC_string, "x")) is False

    @pytest.mark.parametrize("payload", [
        "'); __import__('os').system('false'); ('", '"""', "'''", "\\", "\n#", "\u2028",
        "{ev}", "%s",
    ])
    def test_string_literals_are_data(self, payload: str) -> None:
        """Quotes, backslashes and newlines in a string literal are compared, not run."""
        literal = A.StringLiteral(payload).to_text()
        match = any_match(f"{literal} == $ and {literal} ~ $")
        assert match(CORBA.Any(CORBA.TC_string, payload)) is True
        assert match(CORBA.Any(CORBA.TC_string, payload + "x")) is False


class TestLiteralLimits:
    """Integer literals beyond Python's int/str conversion limit (4300 digits)
    raised a bare ValueError from the lexer instead of ConstraintSyntaxError."""

    @pytest.mark.parametrize("text", [
        "1" * 5000, "$.a == " + "9" * 5000, "$." + "1" * 5000, "$.a." + "1" * 5000,
        "$.a[" + "1" * 5000 + "]", "$.(" + "1" * 5000 + ")", "18446744073709551616",
    ])
    def test_too_large(self, text: str) -> None:
        """The error is a ConstraintSyntaxError with a short message."""
        with pytest.raises(ConstraintSyntaxError, match="does not fit in 64 bits") as info:
            parse_constraint(text)
        assert len(info.value.message) < 120

    def test_leading_zeros(self) -> None:
        """Leading zeros do not count toward the 64-bit limit."""
        assert parse_constraint("0" * 5000 + "7") == A.IntegerLiteral(7)
        assert parse_constraint("$." + "0" * 5000 + "3") == A.Component(steps=(A.Position(3),))


class TestConstraintLength:
    """There was no length limit, and parsing an or/and chain was quadratic."""

    def test_longer_than_the_limit(self) -> None:
        """A constraint over ast.MAX_LENGTH characters is refused at the limit."""
        text = "a or " * (A.MAX_LENGTH // 5) + "b" * 10
        assert len(text) > A.MAX_LENGTH
        with pytest.raises(ConstraintSyntaxError, match="the limit is") as info:
            parse_constraint(text)
        assert info.value.position == A.MAX_LENGTH

    def test_at_the_limit(self) -> None:
        """A constraint of exactly ast.MAX_LENGTH characters is accepted."""
        names = [f"a{i}" for i in range(A.MAX_LENGTH // 10)]
        text = " or ".join(names)
        text += " " * (A.MAX_LENGTH - len(text))
        assert len(text) == A.MAX_LENGTH
        tree = parse_constraint(text)
        assert isinstance(tree, A.Or) and len(tree.operands) == len(names)

    def test_long_filter_constraint(self) -> None:
        """Through a filter the limit is InvalidConstraint."""
        with pytest.raises(F.InvalidConstraint):
            make_filter("TRUE" + " " * A.MAX_LENGTH)

    def test_chain_builds_one_node(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A flat chain of n operands constructs one Or node, not n - 1 growing ones."""
        built = []
        original = A.Or.__attrs_post_init__

        def counting(self: A.Or) -> None:
            built.append(len(self.operands))
            original(self)
        monkeypatch.setattr(A.Or, "__attrs_post_init__", counting)
        tree = parse_constraint(" or ".join(f"a{i}" for i in range(500)))
        assert built == [500]
        assert isinstance(tree, A.Or) and len(tree.operands) == 500

    @pytest.mark.parametrize(("text", "expected"), [
        ("a or b and c or d", "a or b and c or d"),
        ("(a or b) or c", "a or b or c"),
        ("a or (b or c)", "a or b or c"),
        ("(a or b) == (c and d)", "(a or b) == (c and d)"),
        ("a and b or c and d", "a and b or c and d"),
        ("not (a or b) or c", "not (a or b) or c"),
    ])
    def test_chains(self, text: str, expected: str) -> None:
        """Chains stay flat and mixed ones keep their precedence."""
        tree = parse_constraint(text)
        assert tree.to_text() == expected
        assert parse_constraint(expected) == tree

    def test_chain_depth(self) -> None:
        """An operand at the depth limit still makes its chain too deep."""
        deep = "not (" * 199 + "b" + ")" * 199
        assert parse_constraint(deep).depth == A.MAX_DEPTH
        with pytest.raises(ConstraintSyntaxError, match="nests more than"):
            parse_constraint("a or " + deep)


class TestRecursionLimit:
    """A RecursionError while compiling became 'cannot compile: maximum recursion
    depth exceeded' (and a logged traceback)."""

    def test_clear_message(self) -> None:
        """Compiled near the recursion limit, a deep constraint is InvalidConstraint
        saying it nests too deeply."""
        text = "1" + " - 1" * 199

        def add() -> Any:
            with pytest.raises(F.InvalidConstraint) as info:
                make_filter(text)
            return info.value
        error = _near_recursion_limit(add)
        assert "nests too deeply" in error.detail

    def test_registry_message(self) -> None:
        """compile_extended_tcl turns it into a ValueError (what grammars raise)."""
        def compile_it() -> Any:
            with pytest.raises(ValueError, match="nests too deeply"):
                compile_extended_tcl("not (" * 199 + "TRUE" + ")" * 199, CompileContext())
        _near_recursion_limit(compile_it)


def _unbound() -> Any:
    """A TypeCode aliasing a recursive reference to a type nobody registered (omniORB
    refuses to make a TypeCode of the bare reference, but not of an alias to it)."""
    return tcInternal.createTypeCode((tcInternal.tv_alias, "IDL:x/R:1.0", "R",
                                      (tcInternal.tv__indirect, ["IDL:x/Unbound:1.0"])))


class TestMatchRobustness:
    """Matching never raises anything but the documented BAD_PARAM for a non-Any."""

    def test_unbound_recursive_typecode(self) -> None:
        """An Any whose TypeCode is an unbound recursive reference is FALSE, not
        BAD_TYPECODE."""
        f = make_filter("$.a == 1")
        assert f.match(CORBA.Any(_unbound(), None)) is False

    def test_typed_event_type_with_bad_typecode(self) -> None:
        """A typed event whose event_type holds such an Any has type %TYPED."""
        f = make_filter(([("D", "T")], "TRUE"), ([("", "%TYPED")], "$x == 1"))
        event = [N.Property("event_type", CORBA.Any(_unbound(), None)),
                 N.Property("x", CORBA.Any(CORBA.TC_long, 1))]
        assert f.match_typed(event) is True
        assert f.match_typed(event[:1]) is False

    def test_structured_event_with_odd_header(self) -> None:
        """A structured event whose header raises on access is FALSE."""
        class Exploding:
            @property
            def fixed_header(self) -> Any:
                raise RuntimeError("no header")
        event = N.StructuredEvent(Exploding(), [], CORBA.Any(CORBA.TC_null, None))
        f = make_filter(([("D", "T")], "TRUE"))
        assert f.match_structured(event) is False


class TestInOctets:
    """Decision 29: ``in`` is TRUE when an element equals the operand. For a
    sequence<octet> (Python bytes) an integer outside 0..255 raised, so
    ``not (300 in $)`` was FALSE."""

    OCTETS = CORBA.Any(tcInternal.createSequenceTC(0, CORBA.TC_octet), b"\x01\x02\xff")

    @pytest.mark.parametrize(("text", "expected"), [
        ("not (300 in $)", True), ("not (-1 in $)", True), ("300 in $", False),
        ("255 in $", True), ("not (3 in $)", True), ("2.0 in $", True),
    ])
    def test_octets(self, text: str, expected: bool) -> None:
        """Integers of any size are compared, never an error."""
        assert any_match(text)(self.OCTETS) is expected


class TestApiMisuse:
    """Malformed arguments give BAD_PARAM or the IDL exception, never TypeError."""

    def test_unhashable_ids(self) -> None:
        """Unhashable ids are ConstraintNotFound / CallbackNotFound."""
        f = make_filter("TRUE")
        with pytest.raises(F.ConstraintNotFound):
            f.modify_constraints([[1]], [])
        with pytest.raises(F.ConstraintNotFound):
            f.modify_constraints([], [F.ConstraintInfo(expression("TRUE"), [1])])
        with pytest.raises(F.CallbackNotFound):
            f.detach_callback([1])
        m = FilterFactory().create_mapping_filter("EXTENDED_TCL", CORBA.Any(CORBA.TC_long, 0))
        with pytest.raises(F.ConstraintNotFound):
            m.modify_mapping_constraints([[1]], [])
        with pytest.raises(F.ConstraintNotFound):
            m.modify_mapping_constraints(
                [], [F.MappingConstraintInfo(expression("TRUE"), [1], CORBA.Any(CORBA.TC_long, 1))])

    @pytest.mark.parametrize("types", [[N.EventType(1, "T")], [5], [N.EventType("D", None)]])
    def test_malformed_event_types(self, types: list[Any]) -> None:
        """Event types that are not pairs of strings are BAD_PARAM."""
        f = make_filter()
        with pytest.raises(CORBA.BAD_PARAM):
            f.add_constraints([F.ConstraintExp(types, "TRUE")])
        assert f.get_all_constraints() == []

    def test_not_a_sequence(self) -> None:
        """A list argument that is not iterable is BAD_PARAM."""
        f = make_filter()
        for call in (lambda: f.add_constraints(None), lambda: f.get_constraints(5),
                     lambda: f.modify_constraints(None, [])):
            with pytest.raises(CORBA.BAD_PARAM):
                call()

    def test_modify_checks_ids_first(self) -> None:
        """Decision 40: an unknown id is reported before an invalid expression."""
        f = make_filter("TRUE")
        [info] = f.get_all_constraints()
        bad = F.ConstraintInfo(expression("1 <"), info.constraint_id)
        unknown = F.ConstraintInfo(expression("TRUE"), 99)
        with pytest.raises(F.ConstraintNotFound):
            f.modify_constraints([], [bad, unknown])
        m = FilterFactory().create_mapping_filter("EXTENDED_TCL", CORBA.Any(CORBA.TC_long, 0))
        [minfo] = m.add_mapping_constraints(
            [F.MappingConstraintPair(expression("TRUE"), CORBA.Any(CORBA.TC_long, 1))])
        with pytest.raises(F.ConstraintNotFound):
            m.modify_mapping_constraints([], [
                F.MappingConstraintInfo(expression("1 <"), minfo.constraint_id,
                                        CORBA.Any(CORBA.TC_long, 1)),
                F.MappingConstraintInfo(expression("TRUE"), 99, CORBA.Any(CORBA.TC_long, 1))])


class TestMappingValuesOfMixedKinds:
    """Decision 43: with value_type ``any``, values holding different kinds were
    sorted against each other and raised TypeError (int < str)."""

    def test_mixed_kinds(self) -> None:
        """Numbers come before strings before enums; each kind in descending order."""
        wrap = lambda tc_: lambda v: CORBA.Any(CORBA.TC_any, CORBA.Any(tc_, v))
        long_, string = wrap(CORBA.TC_long), wrap(CORBA.TC_string)
        m = FilterFactory().create_mapping_filter("EXTENDED_TCL", long_(0))
        m.add_mapping_constraints([
            F.MappingConstraintPair(expression("$ == 1"), string("zz")),
            F.MappingConstraintPair(expression("TRUE"), string("a")),
            F.MappingConstraintPair(expression("$ == 2"), long_(5)),
            F.MappingConstraintPair(expression("$ == 1"), long_(7)),
        ])
        for event, expected in ((1, long_(7)), (2, long_(5)), (3, string("a"))):
            matched, result = m.match(CORBA.Any(CORBA.TC_long, event))
            assert matched is True and same_any(result._v, expected._v)


def _recording_registry(calls: list[int]) -> GrammarRegistry:
    """EXTENDED_TCL, with a combine function that records each group's size."""
    def combine(group: Sequence[CompiledConstraint], form: str,
                context: CompileContext) -> Callable[[Any], bool]:
        calls.append(len(group))
        matchers = [getattr(c, form) for c in group]
        return lambda event: any(m(event) for m in matchers)
    registry = GrammarRegistry()
    registry.register("EXTENDED_TCL", compile_extended_tcl, combine=combine)
    return registry


class TestCombineBudget:
    """Constraints were combined 32 at a time whatever their length, so one
    combine (in a matching thread) could compile 32 constraints of any size."""

    def test_long_constraints_are_not_combined(self) -> None:
        """Constraints as long as the per-group text budget are never combined."""
        calls: list[int] = []
        factory = FilterFactory(_recording_registry(calls), combine_after=0)
        long_text = "$ == 1" + " " * constraints._CHUNK_CHARS
        f = make_filter(*[long_text] * 3, "$ == 2", factory=factory)
        assert calls == []
        assert f.match(CORBA.Any(CORBA.TC_long, 2)) is True
        assert f.match(CORBA.Any(CORBA.TC_long, 3)) is False

    def test_short_constraints_are_grouped(self) -> None:
        """Short constraints are still combined, at most _CHUNK per group."""
        calls: list[int] = []
        factory = FilterFactory(_recording_registry(calls), combine_after=0)
        f = make_filter(*[f"$a == {i}" for i in range(40)], factory=factory)
        assert calls == []  # the dispatch is built when the filter is first used
        assert f.match_structured(structured(filterable={"a": 39})) is True
        assert sorted(calls) == [8, 8, 8, constraints._CHUNK, constraints._CHUNK,
                                 constraints._CHUNK]
        assert f.match_structured(structured(filterable={"a": 40})) is False

    def test_skipped_count_still_combines(self) -> None:
        """A call count already past combine_after (unlocked increments from several
        threads can skip the exact value) still combines on the next call."""
        calls: list[int] = []
        registry = _recording_registry(calls)
        grammar = registry.lookup("EXTENDED_TCL")
        assert grammar is not None
        context = CompileContext(combine_after=5)
        group = tuple(compile_extended_tcl(f"$ == {i}", context) for i in range(2))
        combining = constraints._Combining(group, "any", grammar, context)
        combining._calls = 9
        assert combining.match(CORBA.Any(CORBA.TC_long, 1)) is True
        assert calls == [2]
        assert combining.match != combining._each


def _nested_anys(depth: int, inner: Any) -> Any:
    """``inner`` wrapped in ``depth`` Anys of TypeCode ``any``."""
    for _ in range(depth):
        inner = CORBA.Any(CORBA.TC_any, inner)
    return inner


def _self_containing_any() -> Any:
    """An Any that holds itself (possible only in process: it cannot be marshalled)."""
    cyclic = CORBA.Any(CORBA.TC_any, None)
    cyclic._v = cyclic
    return cyclic


_EVERY_GRAMMAR = [("EXTENDED_TCL", "$x == 7"), ("EVENTHEAP", "x: int = 7"),
                  ("ELVIN4", "x == 7"), ("OES_SUBTREE", "\\a")]


class TestNestedAnyCap:
    """Review finding: runtime.strip followed nested Anys with no bound, so an Any that
    holds itself hung every grammar. At most MAX_NESTED_ANYS are followed; a deeper
    value is no operand (like an empty Any slot)."""

    def test_strip_gives_up_past_the_cap(self) -> None:
        """strip reads through a few nested Anys but not past the cap."""
        from cosnotify.corba import descriptors as D
        from cosnotify.filter import runtime

        shallow = _nested_anys(10, CORBA.Any(CORBA.TC_long, 7))
        found = runtime.strip(shallow, D.ANY)
        assert found is not None and found[0] == 7
        deep = _nested_anys(runtime.MAX_NESTED_ANYS + 5, CORBA.Any(CORBA.TC_long, 7))
        assert runtime.strip(deep, D.ANY) is None
        assert runtime.strip(_self_containing_any(), D.ANY) is None

    @pytest.mark.parametrize(("grammar", "text"), _EVERY_GRAMMAR, ids=lambda x: str(x)[:12])
    def test_too_deep_is_no_value_in_every_grammar(self, grammar: str, text: str) -> None:
        """A value under 1,000 nested Anys does not match; under 10 it does."""
        f = FilterFactory().create_filter(grammar)
        f.add_constraints([F.ConstraintExp([], text)])
        shallow = {"x": _nested_anys(10, CORBA.Any(CORBA.TC_long, 7)),
                   "node": _nested_anys(10, CORBA.Any(CORBA.TC_string, "\\a"))}
        deep = {"x": _nested_anys(1000, CORBA.Any(CORBA.TC_long, 7)),
                "node": _nested_anys(1000, CORBA.Any(CORBA.TC_string, "\\a"))}
        assert f.match_structured(structured(filterable=shallow)) is True
        assert f.match_structured(structured(filterable=deep)) is False

    @pytest.mark.parametrize(("grammar", "text"), _EVERY_GRAMMAR, ids=lambda x: str(x)[:12])
    def test_self_containing_any_matches_nothing(self, grammar: str, text: str) -> None:
        """An Any holding itself, as a property, a typed pair or the event, is FALSE."""
        f = FilterFactory().create_filter(grammar)
        f.add_constraints([F.ConstraintExp([], text)])
        cyclic = _self_containing_any()
        assert f.match_structured(structured(filterable={"x": cyclic, "node": cyclic})) is False
        assert f.match_typed([N.Property("x", cyclic), N.Property("node", cyclic)]) is False
        assert f.match(cyclic) is False


class TestFixedArithmeticContext:
    """Review 114: ``fixed`` arithmetic used the thread's decimal context, 28 digits by
    default, while CORBA fixed has up to 31 (decision 24 promises exact arithmetic),
    and a library that changed ``decimal.getcontext()`` changed filter results."""

    BIG = "9" * 31  # fixed<31,0>, the widest CORBA fixed

    def _event(self, digits: int, scale: int, text: str) -> Any:
        return CORBA.Any(tcInternal.createFixedTC(digits, scale), CORBA.fixed(text))

    def test_31_digits_are_exact(self) -> None:
        event = self._event(31, 0, self.BIG)
        assert any_match("$ + 0 == $ and $ - 1 < $ and $ * 1 == $")(event) is True
        assert any_match("$ * $ - ($ + 1) * ($ - 1) == 1")(event) is True  # 62 digits

    def test_a_changed_thread_context_changes_nothing(self) -> None:
        """Sums, products and quotients use the filter's own contexts, never the thread's."""
        import decimal
        event = self._event(31, 2, "12345678901234567890123456789.01")
        match = any_match("$ * 1 == $ and $ + 1 - 1 == $ and $ / 1 == $ and $ / 4 * 4 == $")
        with decimal.localcontext() as context:
            context.prec = 5
            context.rounding = decimal.ROUND_FLOOR
            context.traps[decimal.Inexact] = True
            assert match(event) is True
        assert match(event) is True

    def test_quotients_have_128_digits(self) -> None:
        """A quotient that does not terminate is rounded at runtime.DIVISION_DIGITS digits
        (docs/filters.md decision 24); one of two fixed<31> values that does is exact."""
        from decimal import Decimal

        from cosnotify.filter import runtime
        one = runtime.fixed_operand(CORBA.fixed("1"))
        assert runtime.div(one, 3) == Decimal("0." + "3" * runtime.DIVISION_DIGITS)
        big = runtime.fixed_operand(CORBA.fixed(self.BIG))
        quotient = runtime.div(big, runtime.fixed_operand(CORBA.fixed(str(2 ** 102))))
        assert len(quotient.as_tuple().digits) == 103
        assert runtime.mul(quotient, 2 ** 102) == big
