"""The EXTENDED_TCL lexer: tokens, numbers, strings and their escapes."""

from __future__ import annotations

from typing import Any

import pytest

from cosnotify.filter import ConstraintSyntaxError
from cosnotify.filter.lexer import ConstraintLexer, tokenize


def kinds(text: str) -> list[str]:
    return [tok.type for tok in tokenize(text)]


def values(text: str) -> list[Any]:
    return [tok.value for tok in tokenize(text)]


class TestKeywords:
    """The reserved-word table."""

    def test_reserved_words(self) -> None:
        """Exactly the Trading keywords Notification keeps, plus 'default'."""
        assert set(ConstraintLexer.reserved) == {
            "and", "or", "not", "exist", "in", "TRUE", "FALSE", "default"}

    @pytest.mark.parametrize("word", ["true", "false", "True", "AND", "Or", "NOT", "Default",
                                      "min", "max", "with", "random", "first"])
    def test_not_keywords(self, word: str) -> None:
        """Keywords are case-sensitive; Trading preference words are plain identifiers."""
        assert kinds(word) == ["IDENT"]

    def test_keyword_after_dot_is_identifier(self) -> None:
        """Inside a path, after '.', a keyword spells a member name (§2.4.7 '$_.in')."""
        assert kinds("$_.in == in") == ["DOLLAR", "IDENT", "DOT", "IDENT", "EQ", "IN"]

    def test_escaped_identifier(self) -> None:
        """'\\ident' is one token carrying the bare name."""
        assert [(t.type, t.value) for t in tokenize("\\in \\x1")] == [
            ("ESCAPED_IDENT", "in"), ("ESCAPED_IDENT", "x1")]

    def test_escaped_variable(self) -> None:
        """'\\$curtime' is one token (the §2.4.2 example's spelling)."""
        assert [(t.type, t.value) for t in tokenize("\\$curtime")] == [
            ("ESCAPED_VARIABLE", "curtime")]


class TestNumbers:
    """Trading B.2 <Number>, and digits inside component paths."""

    @pytest.mark.parametrize("text, kind, value", [
        ("0", "INTEGER", 0),
        ("007", "INTEGER", 7),
        ("18446744073709551615", "INTEGER", 2 ** 64 - 1),
        ("5.", "FLOAT", 5.0),
        ("5.25", "FLOAT", 5.25),
        ("1e+3", "FLOAT", 1000.0),
        ("2.5E-1", "FLOAT", 0.25),
        (".5e+1", "FLOAT", 5.0),
        (".5", "DOT_DIGITS", "5"),
        (".05", "DOT_DIGITS", "05"),
    ])
    def test_literals(self, text: str, kind: str, value: Any) -> None:
        """Each mantissa/exponent form gets its token type and value."""
        [tok] = tokenize(text)
        assert (tok.type, tok.value) == (kind, value)

    def test_integers_are_exact(self) -> None:
        """Integer literals stay Python ints, never floats."""
        assert values("9007199254740993") == [9007199254740993]

    def test_positions_after_dollar(self) -> None:
        """'$.3' is '$' then DOT_DIGITS, never the float .3 alone."""
        assert kinds("$.3.4[2]") == ["DOLLAR", "DOT_DIGITS", "DOT_DIGITS", "LBRACKET", "INTEGER",
                                     "RBRACKET"]

    def test_digits_after_a_dot_token(self) -> None:
        """After a '.' token only <Digits> are read: '$. 3.5' is positions 3 and 5."""
        assert [(t.type, t.value) for t in tokenize("$. 3.5")] == [
            ("DOLLAR", "$"), ("DOT", "."), ("INTEGER", 3), ("DOT_DIGITS", "5")]

    def test_exponent_needs_sign(self) -> None:
        """Trading B.2 <Exponent> has a mandatory sign: '1e5' is an error at 'e'."""
        with pytest.raises(ConstraintSyntaxError, match="exponent needs a sign") as info:
            tokenize("1e5")
        assert info.value.position == 1

    def test_integer_too_large(self) -> None:
        """An integer beyond 64 bits is rejected where it starts."""
        with pytest.raises(ConstraintSyntaxError, match="64 bits") as info:
            tokenize("x == 18446744073709551616")
        assert info.value.position == 5

    def test_float_overflow(self) -> None:
        """A float literal that overflows a double is rejected."""
        with pytest.raises(ConstraintSyntaxError, match="out of range"):
            tokenize("1e+400")


class TestStrings:
    """Trading B.2 <String> with the IDL escapes of §2.4.8."""

    @pytest.mark.parametrize("text, value", [
        ("''", ""),
        ("'abc'", "abc"),
        (r"'it\'s'", "it's"),
        (r"'a\\b'", "a\\b"),
        (r"'\n\t\v\b\r\f\a\?\"'", "\n\t\v\b\r\f\a?\""),
        (r"'\101\60\7'", "A0\x07"),
        (r"'\x41\x4a\x4'", "AJ\x04"),
        (r"'\x4142'", "A42"),
        (r"'\q\u0041\%'", "qu0041%"),
        ("'two\nlines'", "two\nlines"),
        ("'é'", "é"),
        ("'\"'", "\""),
    ])
    def test_escapes(self, text: str, value: str) -> None:
        """IDL escapes decode; an undefined escape drops its backslash (§2.4.1)."""
        assert values(text) == [value]

    def test_x_without_digits_is_undefined(self) -> None:
        """'\\x' not followed by a hex digit is an undefined escape: it reads as 'x'."""
        assert values(r"'\xg'") == ["xg"]

    @pytest.mark.parametrize("text, offset", [("'abc", 0), ("x == 'abc\\'", 5), ("'a\\", 0)])
    def test_unterminated(self, text: str, offset: int) -> None:
        """An unterminated string is reported at its opening quote."""
        with pytest.raises(ConstraintSyntaxError, match="unterminated string") as info:
            tokenize(text)
        assert info.value.position == offset

    def test_octal_out_of_range(self) -> None:
        """'\\777' does not fit a char and is reported at its backslash."""
        with pytest.raises(ConstraintSyntaxError, match="out of range") as info:
            tokenize(r"'ab\777'")
        assert info.value.position == 3

    @pytest.mark.parametrize("text", [r"'\0'", r"'\x00'", "'a\0'"])
    def test_nul_rejected(self, text: str) -> None:
        """A CORBA string cannot hold NUL, escaped or raw."""
        with pytest.raises(ConstraintSyntaxError, match="NUL"):
            tokenize(text)


class TestCharacters:
    """Characters outside the language are errors with positions, never skipped."""

    @pytest.mark.parametrize("text, offset, hint", [
        ("$a # 3", 3, None),
        ("@", 0, None),
        ("a = b", 2, "=="),
        ("a % 2", 2, "modulo"),
        ("a, b", 1, "comma"),
        ('"x"', 0, "single quotes"),
        ("a && b", 2, "and"),
        ("x\0", 1, None),
        ("x == é", 5, None),
    ])
    def test_unknown_characters(self, text: str, offset: int, hint: str | None) -> None:
        """Each unknown character stops lexing at its own offset, with a hint when useful."""
        with pytest.raises(ConstraintSyntaxError, match="unexpected character") as info:
            tokenize(text)
        assert info.value.position == offset
        if hint:
            assert hint in info.value.message

    def test_vendor_keyword(self) -> None:
        """':name:' is reserved for vendor keywords (§2.4.2); none are defined."""
        with pytest.raises(ConstraintSyntaxError, match="vendor keyword :fast:") as info:
            tokenize("$.a == 1 and :fast:")
        assert info.value.position == 13

    def test_lone_backslash(self) -> None:
        """A backslash not followed by an identifier is an error."""
        with pytest.raises(ConstraintSyntaxError, match="backslash") as info:
            tokenize("$.a \\ 1")
        assert info.value.position == 4

    def test_token_spans(self) -> None:
        """Tokens report their source span."""
        assert [(t.start, t.end) for t in tokenize(" $.ab  <= 'x'")] == [
            (1, 2), (2, 3), (3, 5), (7, 9), (10, 13)]
