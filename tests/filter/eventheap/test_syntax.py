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
from cosnotify.filter.eventheap.model import RESERVED, to_float32
from tests.filter.eventheap.support import VECTORS
from tests.strategies import eventheap_templates as templates

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
            value = {None: "?", FieldMode.FORMAL: "?", FieldMode.VIRTUAL: "~"}[reserved.template]
            assert parse_template(f"{name} = {value}").fields[0].type == reserved.type


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


class TestReservedTemplateValues:
    """Review finding: Tables 1-3's "Can be Overridden?" column was ignored."""

    @pytest.mark.parametrize(("text", "offset"), [
        ("TimeToLive = 120000", 13), ("TimeToLive: int = ~", 18), ("TimeToLive: int = null", 18),
        ("SessionID = ?", 12), ("SessionID = 4", 12), ("a: int = 1, SequenceNum = 17", 26),
        ("SequenceNum: int = ?", 19),
    ])
    def test_fixed_template_values_cannot_be_overridden(self, text: str, offset: int) -> None:
        """TimeToLive is Formal only ("Post value only"); SessionID and SequenceNum are
        Virtual only ("No"): anything else is refused at the value, naming the rule."""
        err = error_for(text)
        assert err.position == offset
        assert "cannot be overridden" in str(err) and "Table" in str(err)

    @pytest.mark.parametrize("text", ["TimeToLive = ?", "TimeToLive: int = ?", "SessionID = ~",
                                      "SequenceNum: int = ~", "EventHeapVersion = 3",
                                      "EventHeapVersion = ?", "Source = \"s\"", "Target = ?"])
    def test_table_values_and_overridable_fields_are_accepted(self, text: str) -> None:
        """The table's own template values, and fields whose template value may be
        given (EventHeapVersion: the client's version, which a filter writer supplies)."""
        assert len(parse_template(text).fields) == 1

    def test_refused_through_the_filter(self) -> None:
        """A filter refuses such a template with InvalidConstraint."""
        import CosNotifyFilter

        from cosnotify.filter import FilterFactory

        f = FilterFactory().create_filter("EVENTHEAP")
        with pytest.raises(CosNotifyFilter.InvalidConstraint):
            f.add_constraints([CosNotifyFilter.ConstraintExp([], "TimeToLive = 120000")])


class TestRenderSurrogates:
    """Review finding: render wrote text that does not parse back for a lone surrogate."""

    @pytest.mark.parametrize("text", ["\ud800", "a\udfffb", "\ud83d\ude00"])
    def test_surrogate_code_points_are_refused(self, text: str) -> None:
        """A name or string holding a surrogate code point is ValueError, not bad text."""
        with pytest.raises(ValueError, match="surrogate"):
            render(Template((TemplateField("s", "string", FieldMode.ACTUAL, text),)))
        with pytest.raises(ValueError, match="surrogate"):
            render(Template((TemplateField(text, "int", FieldMode.FORMAL),)))

    def test_astral_characters_round_trip(self) -> None:
        """A character beyond the BMP (one code point) renders and parses back."""
        template = Template((TemplateField("x\U0001F600", "string", FieldMode.ACTUAL,
                                           "\U0001F600\u2028"),))
        assert parse_template(render(template)) == template
