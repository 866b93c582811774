"""Bad constraints raise ConstraintSyntaxError with position, line, column and caret."""

from __future__ import annotations

import pickle

import pytest

from cosnotify.filter import ConstraintSyntaxError, parse_constraint
from cosnotify.filter import ast as A


def error_for(text: str) -> ConstraintSyntaxError:
    with pytest.raises(ConstraintSyntaxError) as info:
        parse_constraint(text)
    return info.value


class TestErrorFields:
    """The fields the InvalidConstraint wrapper relies on."""

    def test_is_value_error(self) -> None:
        """The error type subclasses ValueError."""
        assert issubclass(ConstraintSyntaxError, ValueError)

    def test_fields_single_line(self) -> None:
        """position is 0-based; line and column are 1-based; excerpt has a caret."""
        err = error_for("$a # 3")
        assert (err.position, err.line, err.column) == (3, 1, 4)
        assert err.excerpt == "$a # 3\n   ^"
        assert err.text == "$a # 3"
        assert err.message == "unexpected character '#'"

    def test_message_names_position_and_shows_caret(self) -> None:
        """str(err) names line, column and offset and ends with the caret excerpt."""
        assert str(error_for("1 +")) == (
            "unexpected end of constraint at line 1, column 4 (offset 3)\n1 +\n   ^")

    def test_multi_line(self) -> None:
        """On a later line the excerpt is that line alone."""
        err = error_for("$.a == 1 and\n  $.b ==\n    @")
        assert (err.line, err.column, err.position) == (3, 5, 26)
        assert err.excerpt == "    @\n    ^"

    def test_crlf_lines(self) -> None:
        """A CR before the newline is not shown in the excerpt."""
        err = error_for("$.a == 1 and\r\n#")
        assert (err.line, err.column) == (2, 1)
        assert err.excerpt == "#\n^"

    def test_tabs_keep_caret_aligned(self) -> None:
        """Tabs in the line are repeated in the caret line."""
        err = error_for("\t$.a ==\t@")
        assert err.excerpt == "\t$.a ==\t@\n\t      \t^"

    def test_long_line_is_windowed(self) -> None:
        """A very long line is cut around the caret, which still points at the fault."""
        text = "$.a == 1 and " * 40 + "@" + " and $.b == 2" * 40
        err = error_for(text)
        line, caret = err.excerpt.split("\n")
        assert len(line) < 120
        assert line[caret.index("^")] == "@"

    def test_unprintable_shown_as_question_mark(self) -> None:
        """Control characters in the excerpt do not break the caret line."""
        err = error_for("$.a\x01 == 1")
        assert err.excerpt == "$.a? == 1\n   ^"

    def test_pickles(self) -> None:
        """The error survives pickling (it may cross process boundaries)."""
        err = error_for("1 < 2 < 3")
        copy = pickle.loads(pickle.dumps(err))
        assert (copy.message, copy.position, copy.excerpt) == (err.message, err.position,
                                                              err.excerpt)

    def test_non_string_input(self) -> None:
        """A non-str constraint is a TypeError, not a syntax error."""
        with pytest.raises(TypeError):
            parse_constraint(b"$.a")  # type: ignore[arg-type]


class TestSyntaxErrors:
    """Malformed constraints and where they are reported."""

    @pytest.mark.parametrize("text, offset, fragment", [
        ("1 +", 3, "end of constraint"),
        ("(a", 2, "end of constraint"),
        ("a)", 1, "unexpected ')'"),
        ("and a", 0, "keyword 'and'"),
        ("a == == b", 5, "'=='"),
        ("* 2", 0, "'*'"),
        ("1 < 2 < 3", 6, "comparisons do not chain"),
        ("1 == 2 != 3", 7, "comparisons do not chain"),
        ("a in x in y", 7, "'in' expressions do not chain"),
        ("'a' ~ 'b' ~ 'c'", 10, "'~' expressions do not chain"),
        ("not not a", 4, "not (not"),
        ("- $.a", 2, "sign applies only to a number"),
        ("+ x", 2, "sign applies only to a number"),
        ("x.y == 1", 1, "starts with '$'"),
        ("nv(priority)", 2, "starts with '$'"),
        ("$1.(midterm)", 1, "positional notation needs a dot"),
        ("$in", 3, "$\\in"),
        ("$.(1.5)", 3, "<UnionVal>"),
        ("$.(TRUE)", 3, "<UnionVal>"),
        ("$._d.x", 4, "_d must be the last"),
        ("$._length[0]", 9, "_length must be the last"),
        ("$.a.", 4, "end of constraint"),
        ("$.a[]", 4, "']'"),
        ("$.a[-1]", 4, "'-'"),
        ("$.a[1.5]", 4, "number 1.5"),
        ("$.a(1)", 4, "number 1"),
        ("exist (x)", 6, "'('"),
        ("exist 5", 6, "number 5"),
        ("default x", 8, "identifier 'x'"),
        ("1 2", 2, "number 2"),
        ("'a' 'b'", 4, "string 'b'"),
        ("TRUE FALSE", 5, "keyword 'FALSE'"),
        ("\\$x.\\", 4, "backslash"),
    ])
    def test_rejected(self, text: str, offset: int, fragment: str) -> None:
        """The error points at the first token that cannot continue the constraint."""
        err = error_for(text)
        assert err.position == offset
        assert fragment in err.message

    @pytest.mark.parametrize("text, offset", [
        ("'a' in 5", 7),
        ("'a' in 'abc'", 7),
        ("'a' in (x)", 7),
        ("'a' in ($.x)", 7),
        ("'a' in x + 1", 7),
        ("'a' in x ~ y", 7),
        ("'a' in not x", 7),
        ("'a' in exist $.x", 7),
        ("'a' in -1", 7),
    ])
    def test_in_needs_sequence_operand(self, text: str, offset: int) -> None:
        """'in' takes only an identifier or a '$' component on the right (Trading B.2, §2.4.8)."""
        err = error_for(text)
        assert err.position == offset
        assert "right operand of 'in'" in err.message

    def test_depth_limit(self) -> None:
        """A tree deeper than MAX_DEPTH is refused; one at the limit is accepted."""
        ok = " + ".join(["1"] * A.MAX_DEPTH)  # a left-deep chain of depth MAX_DEPTH
        assert parse_constraint(ok).depth == A.MAX_DEPTH
        err = error_for(ok + " + 1")
        assert "levels deep" in err.message
        assert err.position == len(ok) + 1

    def test_deep_parentheses_are_fine(self) -> None:
        """Parentheses alone add no depth, so heavy nesting of one value is accepted."""
        assert parse_constraint("(" * 5000 + "1" + ")" * 5000) == A.IntegerLiteral(1)

    def test_long_or_chain_is_flat(self) -> None:
        """A long generated 'or' chain stays one shallow node."""
        node = parse_constraint(" or ".join(f"$.id == {i}" for i in range(2000)))
        assert isinstance(node, A.Or) and len(node.operands) == 2000 and node.depth == 3
