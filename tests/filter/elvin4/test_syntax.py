"""ELVIN4 lexing, parsing and compile-time errors (Elvin 4 client protocol §6.1, §6.3, App. A)."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from cosnotify.filter.ast import MAX_LENGTH
from cosnotify.filter.elvin4 import SubscriptionError, compile_program
from cosnotify.filter.elvin4 import ast as east
from cosnotify.filter.elvin4.errors import ERROR_CODES
from cosnotify.filter.elvin4.lexer import tokenize
from cosnotify.filter.elvin4.parser import build_parser, parse
from cosnotify.filter.errors import CapturingLogger
from tests.filter.elvin4.helpers import load


def error_of(text: str) -> SubscriptionError:
    with pytest.raises(SubscriptionError) as info:
        compile_program(text)
    return info.value


class TestVectors:
    """tests/filter/elvin4/vectors/compile.json, each citing the seed."""

    @pytest.mark.parametrize("vector", load("compile.json"),
                             ids=lambda v: v["expression"][:40])
    def test_vector(self, vector: dict[str, Any]) -> None:
        """The expression compiles, or fails with the vector's error name and offset."""
        if vector["valid"]:
            compile_program(vector["expression"])
            return
        error = error_of(vector["expression"])
        assert error.name == vector["error"], str(error)
        if "offset" in vector:
            assert error.offset == vector["offset"], str(error)


class TestGrammar:
    def test_builds_without_conflicts(self) -> None:
        """The PLY grammar has no shift/reduce or reduce/reduce conflicts."""
        log = CapturingLogger()
        build_parser(debug=True, errorlog=log)
        assert log.messages == []

    def test_not_binds_tighter_than_and_xor_or(self) -> None:
        """§6.1.3: NOT, then AND, then XOR, then OR."""
        tree = parse("!a > 1 && b > 1 ^^ c > 1 || d > 1")
        assert isinstance(tree, east.Logic) and tree.op == "||"
        xor = tree.operands[0]
        assert isinstance(xor, east.Logic) and xor.op == "^^"
        conj = xor.operands[0]
        assert isinstance(conj, east.Logic) and conj.op == "&&"
        assert isinstance(conj.operands[0], east.Not)

    def test_not_takes_a_comparison(self) -> None:
        """App. A ``"!" bool-exp``: ``! a == b`` is ``!(a == b)``."""
        tree = parse("! a == 1")
        assert isinstance(tree, east.Not) and isinstance(tree.operand, east.Compare)

    def test_math_binds_tighter_than_comparison(self) -> None:
        """App. A ``value "==" value`` with ``value = math-exp``: ``a & 1 == 1``."""
        tree = parse("a & 1 == 1")
        assert isinstance(tree, east.Compare) and isinstance(tree.left, east.Binary)

    def test_multiplication_before_addition(self) -> None:
        """C precedence among the math operators: ``a + b * c``."""
        tree = parse("a + b * c > 1")
        assert isinstance(tree, east.Compare)
        assert isinstance(tree.left, east.Binary) and tree.left.op == "+"

    def test_chains_are_flat(self) -> None:
        """A chain of one logical operator is one n-ary node (one nesting level)."""
        tree = parse(" && ".join(f"a{i} > 1" for i in range(500)))
        assert isinstance(tree, east.Logic) and len(tree.operands) == 500

    def test_ne_is_not_equals(self) -> None:
        """§6.1.7: != "is defined to be implemented as !(A == B)"."""
        tree = parse("a != 1")
        assert isinstance(tree, east.Not) and tree.operand.op == "=="  # type: ignore[union-attr]


class TestLexer:
    def test_names_take_operator_characters(self) -> None:
        """§6.1.5 "Names must be separated from operators by whitespace"."""
        assert tokenize("a==b") == [("NAME", "a==b", 0)]

    def test_hyphenated_names(self) -> None:
        """Elvin names like Message-Id are single names (App. A id-char has '-')."""
        assert tokenize("Message-Id")[0] == ("NAME", "Message-Id", 0)

    def test_parentheses_end_names(self) -> None:
        """§6.1.2: parentheses need no whitespace next to names."""
        assert [t[0] for t in tokenize("(a)")] == ["LPAREN", "NAME", "RPAREN"]

    def test_escaped_name(self) -> None:
        """App. A id-first/id-char: backslash escapes any character in a name."""
        assert tokenize(r"\1a\ b")[0] == ("NAME", "1a b", 0)

    def test_function_token(self) -> None:
        """A name followed by ``(`` (spaces allowed) is a call."""
        assert tokenize("size (x)")[0] == ("FUNC", "size", 0)

    def test_attribute_may_be_called_like_a_function(self) -> None:
        """An attribute named ``size`` is usable when not called."""
        assert compile_program("size > 1").names == frozenset({"size"})

    @pytest.mark.parametrize(("text", "value"), [
        ("10", 10), ("0x1F", 31), ("017", 15), ("0", 0), ("10L", 10), ("0x10l", 16)])
    def test_integer_literals(self, text: str, value: int) -> None:
        """§6.1.4: decimal, 0x hexadecimal, 0 octal, l/L suffix."""
        tok = tokenize(text)[0]
        assert tok[0] == "INT" and tok[1][0] == value
        assert tok[1][1] == text.lower().endswith("l")

    def test_string_escapes(self) -> None:
        """§6.1.4: backslash escapes the next character, which stands for itself."""
        assert tokenize(r'"a\"b\\c\n"')[0][1] == 'a"b\\cn'
        assert tokenize(r"'it\'s'")[0][1] == "it's"
        assert tokenize("'say \"hi\"'")[0][1] == 'say "hi"'

    def test_nul_in_string(self) -> None:
        """NUL is not a safe-utf8-char (App. A)."""
        assert error_of('x == "a\0"').name == "INVALID_TOKEN"

    def test_bad_octal(self) -> None:
        """An octal literal with 8 or 9 is not a token."""
        assert error_of("x == 09").name == "INVALID_TOKEN"


class TestOverflow:
    """§6.1.4: literals too large for their type MUST cause an OVERFLOW error."""

    @pytest.mark.parametrize("literal", ["2147483647", "-2147483648", "0x7FFFFFFF",
                                         "017777777777", "9223372036854775807L",
                                         "-9223372036854775808L", "1.7976931348623157e308"])
    def test_largest_fit(self, literal: str) -> None:
        """The extreme values of int32, int64 and real64 are accepted."""
        compile_program(f"x == {literal}")

    @pytest.mark.parametrize("literal", ["2147483648", "-2147483649", "0x80000000",
                                         "020000000000", "9223372036854775808L",
                                         "-9223372036854775809L", "0x8000000000000000L",
                                         "99999999999999999999999L", "1.0e309", "-1.0e400"])
    def test_too_large(self, literal: str) -> None:
        """One past each extreme is OVERFLOW, at the literal."""
        error = error_of(f"x == {literal}")
        assert error.name == "OVERFLOW"
        assert error.offset in (5, 6)  # the minus, or the real literal the lexer rejects

    def test_parenthesised_magnitude_is_checked_alone(self) -> None:
        """``-(2147483648)`` negates an expression, not a literal: OVERFLOW."""
        assert error_of("x == -(2147483648)").name == "OVERFLOW"

    def test_underflow_is_not_overflow(self) -> None:
        """§6.1.4 names only exponents too large; a tiny real rounds to zero."""
        compile_program("x == 1.0e-400")


class TestErrors:
    def test_str_carries_name_and_position(self) -> None:
        """str() has the Elvin error name, the offset and a caret excerpt."""
        error = error_of("x == 2147483648")
        text = str(error)
        assert text.startswith("OVERFLOW: ")
        assert "offset 5" in text and "column 6" in text and "^" in text
        assert error.code == ERROR_CODES["OVERFLOW"] == 2105

    def test_is_a_value_error(self) -> None:
        """The filter turns ValueError subclasses into InvalidConstraint."""
        assert isinstance(error_of("x =="), ValueError)

    def test_pickles(self) -> None:
        """The error survives pickling with its fields."""
        error = pickle.loads(pickle.dumps(error_of("foo(x)")))
        assert (error.name, error.offset) == ("UNKNOWN_FUNC", 0)

    def test_empty_expression(self) -> None:
        """App. A has no empty sub-exp."""
        assert error_of("  ").name == "PARSE_ERROR"

    def test_length_limit(self) -> None:
        """The EXTENDED_TCL text limit applies, reported as QOS_LIMIT (§6.3)."""
        longest = "x > 1 || " * ((MAX_LENGTH - 5) // 9) + "y > 1"
        longest += " " * (MAX_LENGTH - len(longest))
        assert compile_program(longest).names == frozenset({"x", "y"})
        error = error_of(longest + " ")
        assert (error.name, error.offset) == ("QOS_LIMIT", MAX_LENGTH)

    @pytest.mark.parametrize(("text", "name"), [
        ("require(1)", "TYPE_MISMATCH"),
        ("size(\"abc\") > 1", "TYPE_MISMATCH"),
        ("x == \"a\" && y > 1", None),
        ("x + 1 == \"a\"", "TYPE_MISMATCH"),
        ("~1.5 == x", "TYPE_MISMATCH"),
        ("regex(x, y)", "TYPE_MISMATCH"),
        ("equals(x)", "TOO_FEW_ARGS"),
        ("equals(x, 1, \"a\")", None),
        ("equals(x + 1, \"a\")", "TYPE_MISMATCH"),
        ("fold-case(1) == x", "TYPE_MISMATCH"),
        ("fold-case(\"A\") == \"a\"", "EXP_IS_TRIVIAL"),
        ("begins-with(\"abc\", \"a\")", "EXP_IS_TRIVIAL"),
        ("size(x)", "PARSE_ERROR"),
        ("(x > 1) + 1 > 2", "PARSE_ERROR"),
        ("x > 1 < 2", "PARSE_ERROR"),
        ("x > 1)", "PARSE_ERROR"),
        ("= x", "INVALID_TOKEN"),
        ("x > 1 ; y", "INVALID_TOKEN"),
    ])
    def test_error_names(self, text: str, name: str | None) -> None:
        """Each §6.3 error for the rule it names (None: valid)."""
        if name is None:
            compile_program(text)
        else:
            assert error_of(text).name == name


class TestNesting:
    """§6.1.2: a nesting limit, with NESTING_TOO_DEEP."""

    SHAPES: ClassVar[dict[str, Callable[[int], str]]] = {
        "parentheses": lambda k: "(" * k + "x > 1" + ")" * k,
        "not": lambda k: "!" * k + "require(x)",
        "and-or": lambda k: "".join(f"a{i} > 1 {'&&' if i % 2 else '||'} ("
                                    for i in range(k)) + "z > 1" + ")" * k,
        "xor-not": lambda k: "".join(f"a{i} > 1 ^^ !(" for i in range(k)) + "z > 1" + ")" * k,
        "math": lambda k: "x" + " + 1" * k + " > 0",
        "unary": lambda k: "- " * k + "x > 0",
        "call": lambda k: "size(" + "fold-case(" * k + "x" + ")" * k + ") > 0",
        "equals": lambda k: "".join(f"equals(a{i}, 1, 2) ^^ !(" for i in range(k))
        + "z > 1" + ")" * k,
    }

    @pytest.mark.parametrize("shape", sorted(SHAPES))
    def test_deepest_compiles_deeper_fails(self, shape: str) -> None:
        """The deepest accepted expression of each shape compiles to Python; one more
        level is NESTING_TOO_DEEP with a position inside the text."""
        make = self.SHAPES[shape]
        k = 1
        while True:
            try:
                compile_program(make(k))
            except SubscriptionError as error:
                assert error.name == "NESTING_TOO_DEEP", str(error)
                assert "levels deep" in error.message
                break
            k += 1
        assert k > 15

    def test_limit_is_documented_constant(self) -> None:
        """The limit is ast.MAX_NESTING levels."""
        compile_program("(" * (east.MAX_NESTING - 2) + "x > 1" + ")" * (east.MAX_NESTING - 2))
        assert error_of("(" * east.MAX_NESTING + "x > 1" + ")" * east.MAX_NESTING).name == \
            "NESTING_TOO_DEEP"


class TestLongLiterals:
    @pytest.mark.parametrize("literal", [
        "1" * 5000, "0x" + "F" * 4000, "0x" + "F" * 4000 + "L", "0" + "7" * 6000,
        "-" + "9" * 5000 + "L", "1" * 25,
    ])
    def test_thousands_of_digits_overflow(self, literal: str) -> None:
        """Past Python's 4300-digit int limit: OVERFLOW with a short message, no ValueError."""
        error = error_of(f"x == {literal}")
        assert error.name == "OVERFLOW"
        assert error.offset == 5
        assert len(error.message) < 200
        assert "characters" in error.message or literal in error.message

    def test_leading_zeros_do_not_count(self) -> None:
        """Only significant digits decide OVERFLOW: many leading zeros are still small."""
        compile_program("x == 0" + "0" * 5000 + "7")
        compile_program("x == 0x" + "0" * 5000 + "7FFFFFFFFFFFFFFFL")
        assert error_of("x == 0x" + "0" * 5000 + "80000000").name == "OVERFLOW"


class TestFunctionNames:
    def test_escaped_trailing_space_stays(self) -> None:
        """An escaped space before ``(`` belongs to the function name (App. A)."""
        assert tokenize("size\\ (x)")[0] == ("FUNC", "size ", 0)
        assert tokenize("size (x)")[0] == ("FUNC", "size", 0)
        error = error_of("size\\ (x) > 1")
        assert error.name == "UNKNOWN_FUNC"
        assert "size ()" in error.message
