"""Property tests: AST -> text -> AST round trips; arbitrary text fails only cleanly."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from cosnotify.filter import ConstraintSyntaxError, parse_constraint
from cosnotify.filter import ast as A
from tests.strategies import tcl_components, tcl_expressions, tcl_token_soup


def _check_error(err: ConstraintSyntaxError, text: str) -> None:
    assert 0 <= err.position <= len(text)
    assert err.line == text.count("\n", 0, err.position) + 1
    assert err.column >= 1
    _source, caret = err.excerpt.split("\n")
    assert caret.endswith("^") and caret.strip(" \t") == "^"
    assert str(err).endswith(err.excerpt)


class TestRoundTrip:
    """Every AST writes out as text that parses back to an equal AST."""

    @given(tcl_expressions)
    @settings(max_examples=400)
    def test_ast_text_ast(self, node: A.Expression) -> None:
        """parse(node.to_text()) == node for any generated tree."""
        text = node.to_text()
        assert parse_constraint(text) == node, text

    @given(tcl_components())
    def test_components(self, node: A.Component) -> None:
        """Every component path round-trips, keywords and implicit names included."""
        assert parse_constraint(node.to_text()) == node

    @given(st.integers(-A.MAX_INTEGER, A.MAX_INTEGER))
    def test_integers(self, value: int) -> None:
        """Integer literals round-trip exactly over the whole 64-bit range."""
        assert parse_constraint(A.IntegerLiteral(value).to_text()) == A.IntegerLiteral(value)

    @given(st.floats(allow_nan=False, allow_infinity=False))
    def test_floats(self, value: float) -> None:
        """Float literals round-trip bit for bit (sign of zero aside)."""
        parsed = parse_constraint(A.FloatLiteral(value).to_text())
        assert isinstance(parsed, A.FloatLiteral) and parsed.value == value

    @given(st.text(st.characters(exclude_characters="\0", exclude_categories=["Cs"])))
    def test_strings(self, value: str) -> None:
        """Any NUL-free string survives escaping and decoding."""
        assert parse_constraint(A.StringLiteral(value).to_text()) == A.StringLiteral(value)


class TestArbitraryText:
    """Random text either parses (and then round-trips) or raises ConstraintSyntaxError."""

    @given(st.text(max_size=40))
    @settings(max_examples=400)
    @example("$.a[")
    @example("'\\")
    @example("$.(")
    def test_random_text(self, text: str) -> None:
        """No other exception escapes, and error fields are consistent."""
        try:
            node = parse_constraint(text)
        except ConstraintSyntaxError as err:
            _check_error(err, text)
        else:
            assert parse_constraint(node.to_text()) == node

    @given(tcl_token_soup)
    @settings(max_examples=1000)
    def test_token_soup(self, text: str) -> None:
        """Constraint-like fragments glued at random parse or fail cleanly."""
        try:
            node = parse_constraint(text)
        except ConstraintSyntaxError as err:
            _check_error(err, text)
        else:
            assert parse_constraint(node.to_text()) == node
