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

Two reserved fields match differently in the space than in a Notification
filter, because a tuple is an Event Heap *event* ("Events versus Tuples":
"Events are a specific type of tuple with required fields") with the post
values of Tables 1 and 2 where it sets none, and "Tuple Matching" says
fields match if "The comparison tuple field's post value is formal":

- **Target, TargetApplication, TargetDevice** (Table 1) **, TargetPerson and
  TargetGroup** (Table 2) have the post value "Formal": a tuple without the
  property matches any template value of it (actual or formal); a tuple
  with it is matched by the grammar. These fields do not narrow the index.
- **TimeToLive** has the post value "120000 ms": every tuple has one (its
  Timeout, StopTime, or that default), and its only template value is
  formal (Table 1, "Post value only."), so a template's TimeToLive matches
  every tuple and is left out of matching -- and out of a stream's filter
  (``filter_text``), since every event the channel accepts is one.

A stream's filter is the grammar's: it cannot say "absent", so a stream's
Target fields match only events that carry them (docs/history.md).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any, Final

import attrs

from cosnotify.filter.eventheap.compiler import compile_template
from cosnotify.filter.eventheap.corba import render_template
from cosnotify.filter.eventheap.model import Place, Template
from cosnotify.filter.eventheap.syntax import parse_template, render
from cosnotify.tuplespace.fields import Key, first_values, props_of, template_keys
from cosnotify.tuplespace.limits import MAX_TEMPLATES
from cosnotify.tuplespace.records import Live, invalid_template, limit_exceeded

__all__ = ["FORMAL_POST", "CompiledTemplate", "compile_templates", "texts_of"]

Matcher = Callable[[Any], bool]

#: The reserved fields whose post value is "Formal" (Tables 1 and 2).
FORMAL_POST: Final = frozenset({"Target", "TargetApplication", "TargetDevice", "TargetPerson",
                                "TargetGroup"})


@attrs.frozen(eq=False)
class FormalPost:
    """A template field on a FORMAL_POST name: the grammar's matchers of it alone."""

    names: frozenset[str]
    structured: Matcher
    typed: Matcher
    any: Matcher

    def matches(self, live: Live) -> bool:
        """A tuple without the field has its formal post value: a match."""
        if not first_values(props_of(live), self.names):
            return True
        return bool(getattr(self, live.form)(live.subject))


@attrs.frozen(eq=False)
class CompiledTemplate:
    """One template: its canonical text, the grammar's matcher for each event form (of
    its fields but the module docstring's), the FORMAL_POST fields apart, the EventType
    values and property keys an index narrows it by, and a stream filter's text."""

    text: str
    structured: Matcher
    typed: Matcher
    any: Matcher
    types: tuple[str, ...]
    props: tuple[tuple[str, Key], ...]
    possible: bool
    formal_posts: tuple[FormalPost, ...] = ()
    filter_text: str = ""

    def matches(self, live: Live) -> bool:
        form = live.form
        if form == "structured":
            found = self.structured(live.subject)
        elif form == "typed":
            found = self.typed(live.subject)
        else:
            found = self.any(live.subject)
        if not found or not self.formal_posts:
            return bool(found)
        return all(field.matches(live) for field in self.formal_posts)


@functools.lru_cache(maxsize=1024)
def _compile_text(text: str) -> CompiledTemplate:
    template = parse_template(text)
    timeless = Template(tuple(f for f in template.fields if f.place is not Place.TIMEOUT))
    posts = tuple(f for f in timeless.active if f.name in FORMAL_POST)
    matched = Template(tuple(f for f in timeless.fields if f not in posts))
    structured, any_, typed = compile_template(matched)
    formal_posts = []
    for post in posts:
        one_structured, one_any, one_typed = compile_template(Template((post,)))
        formal_posts.append(FormalPost(frozenset((post.name,)), one_structured, one_typed,
                                        one_any))
    types, props, possible = template_keys(matched)
    return CompiledTemplate(render(template), structured, typed, any_, types, props, possible,
                            tuple(formal_posts), render(timeless))


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
    """The texts of a stream's filter for ``templates`` (checked as
    :func:`compile_templates`): canonical, without TimeToLive (module docstring)."""
    return [c.filter_text for c in compile_templates(templates)]
