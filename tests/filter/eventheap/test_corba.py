"""The Any form: CosNotifyGrammars::Template values rendered to EVENTHEAP text."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from omniORB import CORBA

import CosNotification as N

from cosnotify.filter.eventheap import (
    FieldMode,
    Template,
    TemplateField,
    parse_template,
    render_template,
    template_from_idl,
    template_to_idl,
)
from cosnotify.filter.eventheap.corba import grammars_module
from tests.filter.eventheap.test_syntax import templates


@pytest.fixture(scope="module")
def G() -> Any:
    return grammars_module()


class TestIdl:
    """The generated CosNotifyGrammars module."""

    def test_field_modes_follow_the_wire_byte(self, G: Any) -> None:
        """FieldMode's ordinals are the seed's ACTUAL=0, FORMAL=1, VIRTUAL=2."""
        assert (G.ACTUAL._v, G.FORMAL._v, G.VIRTUAL._v) == (0, 1, 2)

    def test_repository_ids(self, G: Any) -> None:
        """The structs have unprefixed repository ids in module CosNotifyGrammars."""
        assert G.TemplateField._NP_RepositoryId == "IDL:CosNotifyGrammars/TemplateField:1.0"
        assert G.NodeLimit._NP_RepositoryId == "IDL:CosNotifyGrammars/NodeLimit:1.0"


class TestRender:
    """Template values to text."""

    def test_seed_example(self, G: Any) -> None:
        """A Template of the three modes renders to the text form."""
        value = [G.TemplateField("EventType", "string", G.ACTUAL, CORBA.Any(CORBA.TC_string, "a")),
                 G.TemplateField("host", "string", G.FORMAL, CORBA.Any(CORBA.TC_null, None)),
                 G.TemplateField("n", "int", G.VIRTUAL, CORBA.Any(CORBA.TC_null, None))]
        assert render_template(value) == 'EventType: string = "a", host: string = ?, n: int = ~'

    def test_null_actual(self, G: Any) -> None:
        """A null Any in an ACTUAL field is the seed's NULL value."""
        value = [G.TemplateField("n", "string", G.ACTUAL, CORBA.Any(CORBA.TC_null, None))]
        assert render_template(value) == "n: string = null"

    def test_wrong_value_kind_is_refused(self, G: Any) -> None:
        """A string value in an int field is a ValueError (InvalidConstraint material)."""
        value = [G.TemplateField("n", "int", G.ACTUAL, CORBA.Any(CORBA.TC_string, "3"))]
        with pytest.raises(ValueError):
            render_template(value)

    def test_nested_any_and_non_any(self, G: Any) -> None:
        """An inner Any is read through; a non-Any or a struct value is refused."""
        value = [G.TemplateField("n", "string", G.ACTUAL, CORBA.Any(CORBA.TC_any,
                                                                    CORBA.Any(CORBA.TC_null,
                                                                              None)))]
        assert render_template(value) == "n: string = null"
        for bad in (3, CORBA.Any(N._tc_EventType, N.EventType("d", "t"))):
            with pytest.raises(ValueError):
                render_template([G.TemplateField("n", "string", G.ACTUAL, bad)])

    def test_unknown_type_is_refused(self, G: Any) -> None:
        """A platform type (EHJava.*) is refused."""
        value = [G.TemplateField("n", "EHJava.java.awt.Point", G.FORMAL,
                                 CORBA.Any(CORBA.TC_null, None))]
        with pytest.raises(ValueError):
            render_template(value)

    def test_float_value(self, G: Any) -> None:
        """A CORBA float value keeps its single-precision value."""
        value = [G.TemplateField("f", "float", G.ACTUAL, CORBA.Any(CORBA.TC_float, 0.5))]
        assert template_from_idl(value) == Template(
            (TemplateField("f", "float", FieldMode.ACTUAL, 0.5),))


class TestRoundTrip:
    """Template -> IDL value -> Template."""

    @given(templates)
    def test_idl_round_trip(self, template: Template) -> None:
        """Every template survives the trip through CosNotifyGrammars::Template."""
        assert template_from_idl(template_to_idl(template)) == template

    def test_text_of_idl_parses(self) -> None:
        """render_template output is valid EVENTHEAP text."""
        template = parse_template('a: long = 5, b: boolean = ?, c: double = ~')
        assert parse_template(render_template(template_to_idl(template))) == template


class TestUnsignedValues:
    """An unsigned IDL value in a Template renders as its Java value."""

    def test_ulong_renders_as_java_int(self, G: Any) -> None:
        """unsigned long 4294967295 in an int field is the Java int -1."""
        value = [G.TemplateField("u", "int", G.ACTUAL, CORBA.Any(CORBA.TC_ulong, 4294967295))]
        assert render_template(value) == "u: int = -1"
        value = [G.TemplateField("w", "long", G.ACTUAL,
                                 CORBA.Any(CORBA.TC_ulonglong, 2 ** 64 - 2))]
        assert render_template(value) == "w: long = -2"
