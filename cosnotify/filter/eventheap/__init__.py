"""The EVENTHEAP constraint grammar: Event Heap templates as Notification filters.

Strategy: a constraint is an Event Heap template (Event Heap wire protocol,
"Tuple Matching" and "Events versus Tuples"), written in the text form of
``syntax`` or built as a ``CosNotifyGrammars::Template`` and rendered to it
(``corba``). The text is parsed into frozen values (``model``) and compiled
into one straight-line function per event form (``compiler``); nothing is
interpreted per event. Importing the package registers the grammar as
``EVENTHEAP``. docs/grammars/eventheap.md has the grammar and the rules.
"""

from __future__ import annotations

from cosnotify.filter.eventheap.compiler import compile_template
from cosnotify.filter.eventheap.corba import render_template, template_from_idl, template_to_idl
from cosnotify.filter.eventheap.model import FieldMode, Template, TemplateField
from cosnotify.filter.eventheap.syntax import TemplateSyntaxError, parse_template, render
from cosnotify.filter.registry import CompileContext, CompiledConstraint, register_grammar

__all__ = [
    "FieldMode",
    "Template",
    "TemplateField",
    "TemplateSyntaxError",
    "compile_eventheap",
    "parse_template",
    "render",
    "render_template",
    "template_from_idl",
    "template_to_idl",
]


def compile_eventheap(text: str, context: CompileContext) -> CompiledConstraint:
    """Compile one EVENTHEAP constraint; TemplateSyntaxError if the text is not one."""
    template = parse_template(text)
    structured, any_, typed = compile_template(template)
    return CompiledConstraint(structured, any_, typed, template)


register_grammar("EVENTHEAP", compile_eventheap)
