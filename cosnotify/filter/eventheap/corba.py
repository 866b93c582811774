"""The Any form of Event Heap templates: ``CosNotifyGrammars::Template`` values.

Strategy: ``CosNotifyFilter::ConstraintExp.constraint_expr`` is a string, so
a template sent as a CORBA value is first rendered to the text form
(:func:`render_template`) and the text is what a filter holds; clients in
other languages build the text themselves (the grammar is one line of
docs/grammars/eventheap.md). The IDL value mirrors the seed's field
("Semantics for Field Transfer": name, type, value with its ACTUAL/FORMAL/
VIRTUAL byte) and is read by attribute, so an ``UnknownStruct`` from a peer
without our stubs reads the same; the ``value`` Any is read with
:mod:`cosnotify.filter.runtime` helpers, never ``CORBA.TypeCode`` methods.
Checking is the text parser's: a bad value becomes a
:class:`TemplateSyntaxError` of the rendered text, or of the field.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any, Final

from omniORB import CORBA

import cosnotify.corba  # noqa: F401  (puts the generated stubs on sys.path)
from cosnotify.corba import descriptors as D
from cosnotify.filter.eventheap.compiler import kind_and_value
from cosnotify.filter.eventheap.model import FieldMode, Template, java_integer
from cosnotify.filter.eventheap.syntax import (
    parse_template,
    render,
    render_literal,
    render_name,
)

__all__ = ["grammars_module", "render_template", "template_from_idl", "template_to_idl"]

_MODES: Final = {0: FieldMode.ACTUAL, 1: FieldMode.FORMAL, 2: FieldMode.VIRTUAL}
#: Event Heap type -> the TypeCode of an actual value in ``TemplateField.value``.
_TYPECODES: Final = {"boolean": CORBA.TC_boolean, "int": CORBA.TC_long,
                     "long": CORBA.TC_longlong, "float": CORBA.TC_float,
                     "double": CORBA.TC_double, "string": CORBA.TC_string}


def grammars_module() -> Any:
    """The generated ``CosNotifyGrammars`` stub module."""
    return importlib.import_module("CosNotifyGrammars")


def _mode(value: Any) -> FieldMode:
    ordinal = getattr(value, "_v", value)
    if type(ordinal) is not int or ordinal < 0:
        raise ValueError(f"not a CosNotifyGrammars::FieldMode: {value!r}")
    return _MODES.get(ordinal, FieldMode.VIRTUAL)


def render_template(template: Iterable[Any]) -> str:
    """The EVENTHEAP text of a ``CosNotifyGrammars::Template`` (a sequence of
    TemplateField), checked by parsing it back.

    Raises ValueError (TemplateSyntaxError for what the text form refuses)
    when a field is malformed: an unknown type, a value of the wrong kind, a
    repeated name.
    """
    parts = []
    for field in template:
        name, ftype, mode = field.name, field.type, _mode(field.mode)
        if type(name) is not str or type(ftype) is not str:
            raise ValueError(f"not a CosNotifyGrammars::TemplateField: {field!r}")
        if mode is FieldMode.FORMAL:
            literal = "?"
        elif mode is FieldMode.VIRTUAL:
            literal = "~"
        else:
            literal = _literal(field.value, name)
        if not ftype.isidentifier():
            raise ValueError(f"field {name!r}: unknown field type {ftype!r}")
        parts.append(f"{render_name(name)}: {ftype} = {literal}")
    return render(parse_template(", ".join(parts)))


def _literal(value: Any, name: str) -> str:
    """The literal of an ACTUAL field's Any, as written in the text form (an
    unsigned integer as its Java value: unsigned long 4294967295 is -1)."""
    found = kind_and_value(value)
    if found is None:
        raise ValueError(f"field {name!r}: the value is not an Any")
    kind, inner = found
    if kind in (D.NULL, D.VOID):
        return "null"
    if inner is True or inner is False or type(inner) in (int, float, str):
        return render_literal(java_integer(kind, inner))
    raise ValueError(f"field {name!r}: an Event Heap value is a boolean, an integer, a "
                     f"floating-point number or a string, not {inner!r}")


def template_from_idl(template: Iterable[Any]) -> Template:
    """A ``CosNotifyGrammars::Template`` as a :class:`Template` value."""
    return parse_template(render_template(template))


def template_to_idl(template: Template) -> list[Any]:
    """``template`` as a ``CosNotifyGrammars::Template`` (a list of TemplateField)."""
    module = grammars_module()
    fields = []
    for f in template.fields:
        if f.mode is FieldMode.ACTUAL and f.value is not None:
            value = CORBA.Any(_TYPECODES[f.type], f.value)
        else:
            value = CORBA.Any(CORBA.TC_null, None)
        mode = getattr(module, f.mode.name)
        fields.append(module.TemplateField(f.name, f.type, mode, value))
    return fields
