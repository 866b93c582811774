"""The EVENTHEAP text form: seed-derived vectors, errors with positions, round trips, fuzz."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosnotify.filter.ast import MAX_LENGTH
from cosnotify.filter.errors import ConstraintSyntaxError
from cosnotify.filter.eventheap import (
    FieldMode,
    Template,
    TemplateField,
    TemplateSyntaxError,
    parse_template,
    render,
)
from cosnotify.filter.eventheap.model import FIELD_TYPES, RESERVED, to_float32
from tests.filter.eventheap.support import VECTORS

VALID = [v for v in VECTORS["syntax"] if v["valid"]]
INVALID = [v for v in VECTORS["syntax"] if not v["valid"]]


def error_for(text: str) -> TemplateSyntaxError:
    with pytest.raises(TemplateSyntaxError) as caught:
        parse_template(text)
    return caught.value


class TestVectors:
    """Templates written from the seed's text."""

    @pytest.mark.parametrize("vector", VALID, ids=[v["text"][:40] for v in VALID])
    def test_valid(self, vector: dict[str, Any]) -> None:
        """Each valid vector parses to the fields it lists (name, type, mode, value)."""
        fields = [(f.name, f.type, f.mode.name, f.value)
                  for f in parse_template(vector["text"]).fields]
        assert fields == [tuple(f) for f in vector["fields"]]

    @pytest.mark.parametrize("vector", INVALID, ids=[v["text"][:40] for v in INVALID])
    def test_invalid(self, vector: dict[str, Any]) -> None:
        """Each invalid vector is refused at its pinned offset."""
        assert error_for(vector["text"]).position == vector["error_offset"]


class TestErrors:
    """What a refused template reports."""

    def test_is_a_constraint_syntax_error(self) -> None:
        """The error is a ConstraintSyntaxError, so a ValueError the filter turns into
        InvalidConstraint."""
        assert issubclass(TemplateSyntaxError, ConstraintSyntaxError)
        assert issubclass(TemplateSyntaxError, ValueError)

    def test_message_has_line_column_and_caret(self) -> None:
        """str() names the line, column and offset and shows a caret."""
        err = error_for("a: int = 1,\n  b: int = @")
        assert (err.line, err.column, err.position) == (2, 12, 23)
        assert err.excerpt.endswith("^")

    def test_too_long(self) -> None:
        """Texts longer than the EXTENDED_TCL limit are refused."""
        text = "a: int = 1" + " " * MAX_LENGTH
        assert error_for(text).position == MAX_LENGTH

    def test_keyword_names_need_quotes(self) -> None:
        """A field named like a literal (true, null ...) must be quoted."""
        error_for("true: int = 1")
        assert parse_template('"true": int = 1').fields[0].name == "true"

    def test_invalid_escape(self) -> None:
        """An unknown escape in a string is refused at the backslash."""
        assert error_for('s = "a\\qb"').position == 6

    def test_out_of_range_floats(self) -> None:
        """A double literal beyond the double range, or a float beyond the single range."""
        assert error_for("d: double = 1e999").position == 12
        assert error_for("f: float = 1e39").position == 11

    def test_unpaired_surrogate(self) -> None:
        """A \\u escape of half a surrogate pair is refused at the string."""
        assert error_for('s = "\\ud800"').position == 4

    def test_untyped_null(self) -> None:
        """A null needs a written type (it has none of its own)."""
        assert error_for("n = null").position == 4

    def test_huge_integer(self) -> None:
        """An integer literal with hundreds of digits is refused, not converted."""
        error_for("a: long = " + "9" * 5000)


class TestLiterals:
    """Values as the seed's fundamental types hold them."""

    def test_float_rounds_to_single(self) -> None:
        """A float field's literal is rounded to an IEEE single (Transfer of Fundamental Types)."""
        assert parse_template("f: float = 0.1").fields[0].value == to_float32(0.1)

    def test_integer_literal_in_a_double_field(self) -> None:
        """An integer literal may stand for a double value."""
        assert parse_template("d: double = 3").fields[0].value == 3.0

    def test_untyped_literals_infer_their_type(self) -> None:
        """Without a type: strings, booleans, ints (long beyond 32 bits) and doubles."""
        fields = parse_template('s = "x", b = false, i = 5, l = 5000000000, d = 1.5').fields
        assert [f.type for f in fields] == ["string", "boolean", "int", "long", "double"]

    def test_special_floats(self) -> None:
        """NaN and (-)Infinity are written as in Java."""
        template = parse_template("a: double = NaN, b: double = -Infinity")
        assert math.isnan(template.fields[0].value) and template.fields[1].value == -math.inf
        assert render(template) == "a: double = NaN, b: double = -Infinity"

    def test_unicode_escapes(self) -> None:
        """\\u escapes, surrogate pairs included, give code points."""
        assert parse_template('s = "\\u00e9\\ud83d\\ude00"').fields[0].value == "é😀"

    def test_reserved_fields_take_their_table_type(self) -> None:
        """Every reserved field of Tables 1-3 gets its type when none is written."""
        for name, reserved in RESERVED.items():
            assert parse_template(f"{name} = ?").fields[0].type == reserved.type


_names = st.one_of(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True),
                   st.text(min_size=1, max_size=6))


@st.composite
def fields(draw: Any) -> TemplateField:
    name = draw(_names)
    ftype = RESERVED[name].type if name in RESERVED else draw(st.sampled_from(FIELD_TYPES))
    mode = draw(st.sampled_from(list(FieldMode)))
    value = None
    if mode is FieldMode.ACTUAL and draw(st.booleans()):
        value = draw({
            "boolean": st.booleans(), "int": st.integers(-(2 ** 31), 2 ** 31 - 1),
            "long": st.integers(-(2 ** 63), 2 ** 63 - 1),
            "float": st.floats(width=32, allow_nan=False),
            "double": st.floats(allow_nan=False), "string": st.text(max_size=8),
        }[ftype])
    return TemplateField(name, ftype, mode, value)


templates = st.lists(fields(), max_size=6, unique_by=lambda f: f.name).map(
    lambda fs: Template(tuple(fs)))


class TestRoundTrip:
    """Text -> template -> text."""

    @given(templates)
    def test_render_parses_back(self, template: Template) -> None:
        """Rendering a template and parsing the text gives the same template."""
        assert parse_template(render(template)) == template

    def test_render_is_canonical(self) -> None:
        """Rendering writes every type and quotes names that are not identifiers."""
        text = render(parse_template('EventType="a",  "n m" : int=?'))
        assert text == 'EventType: string = "a", "n m": int = ?'


_alphabet = st.sampled_from(list('ab:=?~,"\\ .-+0123456789eEnulltruefalseNaNInfinity\n'))


class TestFuzz:
    """Random text only ever gives TemplateSyntaxError."""

    @settings(max_examples=400)
    @given(st.one_of(st.text(), st.text(_alphabet)))
    def test_random_text(self, text: str) -> None:
        """Any string parses or raises TemplateSyntaxError with a position inside it."""
        try:
            parse_template(text)
        except TemplateSyntaxError as err:
            assert 0 <= err.position <= len(text)

    @settings(max_examples=200)
    @given(templates, st.integers(0, 200), st.text(max_size=3))
    def test_mutated_templates(self, template: Template, at: int, junk: str) -> None:
        """Valid text with junk spliced in parses or raises TemplateSyntaxError."""
        text = render(template)
        at = min(at, len(text))
        try:
            parse_template(text[:at] + junk + text[at:])
        except TemplateSyntaxError:
            pass


class TestPathologicalText:
    """Long texts at the length limit."""

    @pytest.mark.parametrize("text", [
        '"' + "\\\\" * 16000,
        "a" * 32000,
        "s = \"" + "x" * 32000,
        ", ".join(f"f{i}: int = {i}" for i in range(1800)),
        " " * 32000,
    ], ids=["backslashes", "one-name", "unterminated", "1800-fields", "spaces"])
    def test_finishes(self, text: str) -> None:
        """Each parses or raises TemplateSyntaxError without a hang."""
        try:
            parse_template(text)
        except TemplateSyntaxError:
            pass
