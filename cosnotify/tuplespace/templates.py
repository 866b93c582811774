"""Templates for the tuple space: EVENTHEAP text, Template values, IDL values.

Strategy: whatever form a caller gives -- the grammar's text, a parsed
:class:`~cosnotify.filter.eventheap.model.Template`, or a
``CosNotifyGrammars::Template`` value (a sequence of TemplateField) -- it is
turned into the canonical text (the one representation the EVENTHEAP filter
holds, docs/grammars/eventheap.md) and compiled once per text (a bounded
cache) into the grammar's three matchers plus what the index narrows by
(fields.py). Several templates select what any one of them matches, as the
seed's retrieval calls do: "the template value fields of one or more of the
events included in the request". Every malformed template is
``CosNotifyGrammars::InvalidTemplate`` with the grammar's reason; more than
MAX_TEMPLATES is LimitExceeded.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any

import attrs

from cosnotify.filter.eventheap.compiler import compile_template
from cosnotify.filter.eventheap.corba import render_template
from cosnotify.filter.eventheap.model import Template
from cosnotify.filter.eventheap.syntax import parse_template, render
from cosnotify.tuplespace.fields import Key, template_keys
from cosnotify.tuplespace.limits import MAX_TEMPLATES
from cosnotify.tuplespace.records import Live, invalid_template, limit_exceeded

__all__ = ["CompiledTemplate", "compile_templates", "texts_of"]

Matcher = Callable[[Any], bool]


@attrs.frozen(eq=False)
class CompiledTemplate:
    """One template: its canonical text, the grammar's matcher for each event form,
    and the EventType values and property keys an index narrows it by."""

    text: str
    structured: Matcher
    typed: Matcher
    any: Matcher
    types: tuple[str, ...]
    props: tuple[tuple[str, Key], ...]
    possible: bool

    def matches(self, live: Live) -> bool:
        form = live.form
        if form == "structured":
            return self.structured(live.subject)
        if form == "typed":
            return self.typed(live.subject)
        return self.any(live.subject)


@functools.lru_cache(maxsize=1024)
def _compile_text(text: str) -> CompiledTemplate:
    template = parse_template(text)
    structured, any_, typed = compile_template(template)
    types, props, possible = template_keys(template)
    return CompiledTemplate(render(template), structured, typed, any_, types, props, possible)


def _is_idl_template(value: Any) -> bool:
    """A ``CosNotifyGrammars::Template``: a non-empty sequence of TemplateField."""
    return (isinstance(value, (list, tuple)) and bool(value)
            and all(hasattr(f, "mode") and hasattr(f, "name") for f in value))


def _text(item: Any) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, Template):
        return render(item)
    if _is_idl_template(item):
        return render_template(item)
    raise ValueError(f"not an EVENTHEAP template (text, Template or "
                     f"CosNotifyGrammars::Template): {item!r:.200}")


def _items(templates: Any) -> list[Any]:
    if isinstance(templates, (str, Template)) or _is_idl_template(templates):
        return [templates]
    try:
        items = list(itertools.islice(iter(templates), MAX_TEMPLATES + 1))
    except TypeError:
        raise invalid_template(f"not a template or a sequence of templates: "
                               f"{templates!r:.200}") from None
    if len(items) > MAX_TEMPLATES:
        raise limit_exceeded(f"more than {MAX_TEMPLATES} templates in one call",
                             MAX_TEMPLATES)
    if not items:
        raise invalid_template('no template given (the template matching every event is '
                               'the empty text "")')
    return items


def compile_templates(templates: Any) -> tuple[CompiledTemplate, ...]:
    """``templates`` (one template, or a sequence of them) compiled; InvalidTemplate
    with the grammar's reason, or LimitExceeded past MAX_TEMPLATES."""
    compiled = []
    items = _items(templates)
    for at, item in enumerate(items):
        try:
            compiled.append(_compile_text(_text(item)))
        except (ValueError, RecursionError) as exc:  # TemplateSyntaxError is a ValueError
            prefix = f"template {at}: " if len(items) > 1 else ""
            raise invalid_template(f"{prefix}{exc}") from None
    return tuple(compiled)


def texts_of(templates: Any) -> list[str]:
    """The canonical texts of ``templates`` (checked as :func:`compile_templates`)."""
    return [c.text for c in compile_templates(templates)]
