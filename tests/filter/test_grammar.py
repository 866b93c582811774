"""The EXTENDED_TCL grammar: table build, spec examples, precedence, components."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from cosnotify.filter import ConstraintSyntaxError, parse_constraint
from cosnotify.filter import ast as A
from cosnotify.filter.errors import CapturingLogger, GrammarBuildError, RaisingLogger
from cosnotify.filter.parser import ConstraintParser, _default_parser, build_parser

_VECTORS = json.loads((Path(__file__).parent / "vectors" / "spec_examples.json").read_text())[
    "vectors"]


def _id(vector: dict[str, Any]) -> str:
    return f"{vector['source'].split()[-1]}:{vector['text'][:40]!r}"


def comp(*steps: A.Step, variable: str | None = None, escaped: bool = False) -> A.Component:
    return A.Component(variable, escaped, steps)


def member(*names: str) -> tuple[A.Member, ...]:
    return tuple(A.Member(name) for name in names)


def cmp(op: str, left: A.Expression, right: A.Expression) -> A.BinaryOp:
    return A.BinaryOp(A.BinaryOperator(op), left, right)


I, F, S, Id = A.IntegerLiteral, A.FloatLiteral, A.StringLiteral, A.Identifier


class TestGrammarBuild:
    """The PLY tables build cleanly and only once."""

    def test_no_conflicts_or_warnings(self) -> None:
        """With conflict reporting on, PLY logs nothing: no shift/reduce, no reduce/reduce."""
        log = CapturingLogger()
        build_parser(debug=True, errorlog=log)
        assert log.messages == []

    def test_raising_logger_rejects_a_conflicting_grammar(self) -> None:
        """A grammar with an unresolved conflict fails to build under RaisingLogger."""

        class Ambiguous(ConstraintParser):
            precedence = ()  # drop the table: 'expr OP expr' becomes ambiguous

        with pytest.raises(GrammarBuildError, match="conflict"):
            from ply import yacc
            yacc.yacc(module=Ambiguous(), debug=True, debuglog=yacc.NullLogger(),
                      write_tables=False, errorlog=RaisingLogger())

    def test_default_parser_is_cached(self) -> None:
        """parse_constraint reuses one built parser."""
        assert _default_parser() is _default_parser()

    def test_no_files_written(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Building the parser writes neither parsetab.py nor parser.out."""
        monkeypatch.chdir(tmp_path)
        build_parser()
        build_parser(debug=True, errorlog=CapturingLogger())
        assert list(tmp_path.iterdir()) == []


class TestSpecExamples:
    """Every constraint written in §2.3-§2.4.7 is accepted or rejected as the BNF says."""

    @pytest.mark.parametrize("vector", _VECTORS, ids=_id)
    def test_vector(self, vector: dict[str, Any]) -> None:
        """The spec text parses iff the vector says valid; errors land where pinned."""
        if vector["valid"]:
            node = parse_constraint(vector["text"])
            assert parse_constraint(node.to_text()) == node
        else:
            with pytest.raises(ConstraintSyntaxError) as info:
                parse_constraint(vector["text"])
            if "error_offset" in vector:
                assert info.value.position == vector["error_offset"]

    def test_marx_brothers(self) -> None:
        """§2.4.7: five 'in' tests summed as booleans, compared with 2, and-ed with a type test."""
        text = next(v["text"] for v in _VECTORS if "groucho" in v["text"])
        starlist = comp(A.Member("starlist"))
        names = ["groucho", "chico", "harpo", "zeppo", "gummo"]
        ins = [A.In(S(name), starlist) for name in names]
        total: A.Expression = ins[0]
        for item in ins[1:]:
            total = A.BinaryOp(A.BinaryOperator.ADD, total, item)
        expected = A.And((cmp("==", comp(variable="type_name"), S("MOVIE")),
                          cmp(">", total, I(2))))
        assert parse_constraint(text) == expected

    def test_short_hand_variables(self) -> None:
        """§2.4.5: $type_name, $event_name, $priority are run-time variables."""
        node = parse_constraint("$type_name == 'CommunicationsAlarm' and\n"
                                "$event_name == 'lost_packet' and $priority < 2")
        assert node == A.And((
            cmp("==", comp(variable="type_name"), S("CommunicationsAlarm")),
            cmp("==", comp(variable="event_name"), S("lost_packet")),
            cmp("<", comp(variable="priority"), I(2)),
        ))

    def test_union_positional(self) -> None:
        """§2.4.6: '$. (3) .2' is union label 3 then struct position 2."""
        node = parse_constraint("$. (3) .2 < 128")
        assert node == cmp("<", comp(A.UnionArm(3), A.Position(2)), I(128))

    def test_default_arm_and_discriminator(self) -> None:
        """§2.4.6: '$. ()' is the default arm, '$. _d' the discriminator."""
        assert parse_constraint("$. () == 999") == cmp("==", comp(A.UnionArm(None)), I(999))
        assert parse_constraint("$. _d == 0") == cmp(
            "==", comp(A.ImplicitMember(A.Implicit.DISCRIMINATOR)), I(0))

    def test_name_value_association(self) -> None:
        """§2.4.4/§2.4.7: '(name)' looks a value up in a name-value list."""
        node = parse_constraint("$violation(serviceUser)._repos_id == 'IDL:X:1.0'")
        assert node == cmp("==", comp(A.Assoc("serviceUser"),
                                      A.ImplicitMember(A.Implicit.REPOSITORY_ID),
                                      variable="violation"), S("IDL:X:1.0"))
        assert parse_constraint("exist $.header.variable_header(required_rights)") == A.Exist(
            comp(*member("header", "variable_header"), A.Assoc("required_rights")))

    def test_enum_labels_and_keyword_member(self) -> None:
        """§2.4.7: '$_.in == HOUSE' reads 'in' after '.' as a member; HOUSE is an identifier."""
        node = parse_constraint("$_.in == HOUSE or $_.in == CAR")
        field = comp(A.Member("in"), variable="_")
        assert node == A.Or((cmp("==", field, Id("HOUSE")), cmp("==", field, Id("CAR"))))

    def test_curtime(self) -> None:
        """§2.4.7/§2.4.2: $curtime is a plain variable node; both escapes set 'escaped'."""
        node = parse_constraint("$origination_timestamp.high + 2 < $curtime.high")
        assert node == cmp("<", A.BinaryOp(A.BinaryOperator.ADD,
                                           comp(A.Member("high"), variable="origination_timestamp"),
                                           I(2)),
                           comp(A.Member("high"), variable="curtime"))
        escaped = comp(variable="curtime", escaped=True)
        assert parse_constraint("$\\curtime") == escaped
        assert parse_constraint("\\$curtime") == escaped

    def test_escaped_bare_identifier(self) -> None:
        """A bare '\\curtime' keeps its escape (§2.4.2; decision 1: it resolves like
        '$\\curtime'); a keyword is always escaped, and the text round-trips (review 114)."""
        assert parse_constraint("\\curtime") == Id("curtime", escaped=True)
        assert parse_constraint("curtime") == Id("curtime") == Id("curtime", escaped=False)
        assert parse_constraint("\\and") == Id("and") == Id("and", escaped=True)
        assert parse_constraint("exist \\curtime") == A.Exist(Id("curtime", escaped=True))
        assert Id("curtime", escaped=True).to_text() == "\\curtime"
        with pytest.raises(ValueError, match="keyword"):
            Id("and", escaped=False)

    def test_default_operator(self) -> None:
        """§2.4.7: 'default $_.d' applies default to a component."""
        node = parse_constraint("default $_.d and $.defvalue == 2")
        assert node == A.And((A.Default(comp(A.Member("d"), variable="_")),
                              cmp("==", comp(A.Member("defvalue")), I(2))))


class TestPrecedence:
    """Operators bind as Trading B.2 stratifies them (docs/filters.md)."""

    @pytest.mark.parametrize("text, expected", [
        ("a or b and c", "a or b and c"),
        ("(a or b) and c", "(a or b) and c"),
        ("a == b and c", "a == b and c"),
        ("1 + 2 * 3 == 7", "1 + 2 * 3 == 7"),
        ("(1 + 2) * 3", "(1 + 2) * 3"),
        ("1 - (2 - 3)", "1 - (2 - 3)"),
        ("1 - 2 - 3", "1 - 2 - 3"),
        ("not a == b", "not a == b"),
        ("not (a == b)", "not (a == b)"),
        ("a ~ b in x", "a ~ b in x"),
        ("a in x == TRUE", "a in x == TRUE"),
        ("TRUE == a in x", "TRUE == a in x"),
        ("(a < b) == c", "(a < b) == c"),
        ("not not_a", "not not_a"),
    ])
    def test_unparse_is_minimal(self, text: str, expected: str) -> None:
        """to_text keeps exactly the parentheses the grammar needs for these shapes."""
        assert parse_constraint(text).to_text() == expected

    def test_and_binds_tighter_than_or(self) -> None:
        """'a or b and c' is 'a or (b and c)'."""
        assert parse_constraint("a or b and c") == A.Or((Id("a"), A.And((Id("b"), Id("c")))))

    def test_or_and_chains_are_flat(self) -> None:
        """'or'/'and' chains, even parenthesised, become one n-ary node."""
        assert parse_constraint("a or (b or c) or d") == A.Or(
            (Id("a"), Id("b"), Id("c"), Id("d")))
        assert parse_constraint("(a and b) and c") == A.And((Id("a"), Id("b"), Id("c")))

    def test_not_takes_a_factor(self) -> None:
        """'not a * b' is '(not a) * b' (Trading B.2 <factor_not>)."""
        assert parse_constraint("not a * b") == A.BinaryOp(
            A.BinaryOperator.MUL, A.Not(Id("a")), Id("b"))

    def test_exist_binds_tighter_than_and(self) -> None:
        """'exist $.b and $.b == 5' tests existence first (§2.4.3 example)."""
        node = parse_constraint("exist $.b and $.b == 5")
        assert node == A.And((A.Exist(comp(A.Member("b"))), cmp("==", comp(A.Member("b")), I(5))))

    def test_in_element_is_twiddle_level(self) -> None:
        """'a ~ b in x' is '(a ~ b) in x' and 'a == b in x' is 'a == (b in x)'."""
        assert parse_constraint("a ~ b in x") == A.In(cmp("~", Id("a"), Id("b")), Id("x"))
        assert parse_constraint("a == b in x") == cmp("==", Id("a"), A.In(Id("b"), Id("x")))

    def test_signs_fold_into_numbers(self) -> None:
        """'- <Number>' and '+ <Number>' are literals, so '3 - -2' subtracts -2."""
        assert parse_constraint("3 - -2") == A.BinaryOp(A.BinaryOperator.SUB, I(3), I(-2))
        assert parse_constraint("+5") == I(5)
        assert parse_constraint("-2147483648") == I(-2147483648)
        assert parse_constraint("- .5") == F(-0.5)

    def test_empty_constraint_is_true(self) -> None:
        """An empty or blank constraint means TRUE."""
        assert parse_constraint("") == A.BooleanLiteral(True)
        assert parse_constraint(" \n\t ") == A.BooleanLiteral(True)


class TestComponents:
    """§2.4.8 <Component> paths."""

    @pytest.mark.parametrize("text, expected", [
        ("$", comp()),
        ("$.a.b", comp(*member("a", "b"))),
        ("$[2]", comp(A.Index(2))),
        ("$(x)", comp(A.Assoc("x"))),
        ("$.3", comp(A.Position(3))),
        ("$.3.4", comp(A.Position(3), A.Position(4))),
        ("$. 3.5", comp(A.Position(3), A.Position(5))),
        ("$.(5)", comp(A.UnionArm(5))),
        ("$.(+5)", comp(A.UnionArm(5))),
        ("$.(-5)", comp(A.UnionArm(-5))),
        ("$.('x')", comp(A.UnionArm("x"))),
        ("$.()", comp(A.UnionArm(None))),
        ("$.a._length", comp(A.Member("a"), A.ImplicitMember(A.Implicit.LENGTH))),
        ("$._type_id", comp(A.ImplicitMember(A.Implicit.TYPE_ID))),
        ("$.\\_d", comp(A.Member("_d"))),
        ("$.\\in", comp(A.Member("in"))),
        ("$.TRUE", comp(A.Member("TRUE"))),
        ("$x", comp(variable="x")),
        ("$ x", comp(variable="x")),
        ("$\\in", comp(variable="in", escaped=True)),
        ("$x[1](k).(2).y", comp(A.Index(1), A.Assoc("k"), A.UnionArm(2), A.Member("y"),
                               variable="x")),
        ("$.nv(\\default)", comp(A.Member("nv"), A.Assoc("default"))),
    ])
    def test_paths(self, text: str, expected: A.Component) -> None:
        """Each path form parses to its step tuple."""
        assert parse_constraint(text) == expected

    def test_position_differs_from_union_label(self) -> None:
        """'$.5' (position) and '$.(5)' (union label) are different steps."""
        assert parse_constraint("$.5") != parse_constraint("$.(5)")

    def test_in_with_component_and_identifier(self) -> None:
        """'in' takes an <Ident> or a '$' component on the right."""
        assert parse_constraint("'a' in $.list") == A.In(S("a"), comp(A.Member("list")))
        assert parse_constraint("'a' in list") == A.In(S("a"), Id("list"))
        assert parse_constraint("'a' in $") == A.In(S("a"), comp())

    def test_dollar_then_in(self) -> None:
        """'$ in $.x' is the event itself tested for membership."""
        assert parse_constraint("$ in $.x") == A.In(comp(), comp(A.Member("x")))

    def test_exist_identifier(self) -> None:
        """'exist <Ident>' (Trading B.2) is kept apart from 'exist $<Component>'."""
        assert parse_constraint("exist severity") == A.Exist(Id("severity"))

    def test_bare_identifier_keyword_escape(self) -> None:
        """'\\in' is the identifier 'in'; 'true' (lower case) is an identifier too."""
        assert parse_constraint("\\in == 1") == cmp("==", Id("in"), I(1))
        assert parse_constraint("true") == Id("true")


class TestConcurrency:
    """parse_constraint may be called from many threads at once."""

    def test_parallel_parses_agree(self) -> None:
        """Parsing in eight threads gives the same trees and errors as parsing serially."""
        texts = [v["text"] for v in _VECTORS]

        def outcome(text: str) -> object:
            try:
                return parse_constraint(text)
            except ConstraintSyntaxError as err:
                return (err.message, err.position)

        expected = [outcome(text) for text in texts]
        with ThreadPoolExecutor(8) as pool:
            for _ in range(5):
                assert list(pool.map(outcome, texts * 3)) == expected * 3
