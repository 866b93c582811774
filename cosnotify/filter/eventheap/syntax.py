"""The text form of Event Heap templates: tokenizer, parser and renderer.

Strategy: the seed sends templates only as binary wire bundles (Event Heap
wire protocol, "Semantics for Tuple Transfer" to "Semantics for Value
Transfer"); a Notification constraint is a string, so templates get a text
form (docs/grammars/eventheap.md)::

    EventType = "alarm", severity: int = 3, host: string = ?, note: string = ~

A template is a comma-separated list of fields ``name [":" type] "=" value``;
a value is a literal (ACTUAL), ``?`` (FORMAL) or ``~`` (VIRTUAL). The
language is regular and flat (no nesting, no operators, no precedence), so
one regular-expression scanner and a loop do the work; a PLY grammar would
add table building and nothing else. Every error is a
:class:`TemplateSyntaxError` with the offset of the fault (the h11 rule: one
local error type, turned into ``InvalidConstraint`` by the filter).

:func:`render` is the inverse: ``parse_template(render(t)) == t`` for every
template without NaN values whose names and strings are Unicode text (no
surrogate code points, which :func:`render` refuses with ValueError).
"""

from __future__ import annotations

import math
import re
from typing import Any, Final

from cosnotify.filter.ast import MAX_LENGTH
from cosnotify.filter.errors import ConstraintSyntaxError
from cosnotify.filter.eventheap.model import (
    FIELD_TYPES,
    INT_RANGE,
    LONG_RANGE,
    RESERVED,
    FieldMode,
    Template,
    TemplateField,
    to_float32,
)

__all__ = ["KEYWORDS", "TemplateSyntaxError", "parse_template", "render", "render_literal",
           "render_name"]


class TemplateSyntaxError(ConstraintSyntaxError):
    """A constraint string is not a valid EVENTHEAP template (docs/grammars/eventheap.md).

    Carries ``position`` (0-based offset), ``line``, ``column`` and a caret
    ``excerpt`` like every constraint syntax error.
    """


#: Words that are literals, not field names (quote a field so named).
KEYWORDS: Final = frozenset({"true", "false", "null", "NaN", "Infinity"})
#: More digits than any Java long has (19) plus a sign and zeros: refused before int().
_MAX_DIGITS: Final = 40

_TOKEN: Final = re.compile(r"""
    (?P<ws>\s+)
  | (?P<string>"(?:[^"\\]|\\[\s\S])*")
  | (?P<number>[+-]?(?:Infinity(?![A-Za-z0-9_.])|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?))
  | (?P<ident>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<punct>[,:=?~])
""", re.VERBOSE)
_ESCAPE: Final = re.compile(r"\\(u[0-9A-Fa-f]{4}|[\"\\/bfnrt])")
_SIMPLE_ESCAPES: Final = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f",
                          "n": "\n", "r": "\r", "t": "\t"}
_BARE_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")

#: A token: (kind, text, value, position). Kinds: string number ident punct end.
Token = tuple[str, str, Any, int]


def _tokens(text: str) -> list[Token]:
    """Scan ``text`` into tokens, ending with ``("end", "", None, len(text))``."""
    tokens: list[Token] = []
    pos, end = 0, len(text)
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None:
            if text[pos] == '"':
                raise TemplateSyntaxError("unterminated string", text, pos)
            raise TemplateSyntaxError(f"unexpected character {text[pos]!r}", text, pos)
        kind = m.lastgroup or ""
        lexeme = m.group()
        if kind == "string":
            tokens.append(("string", lexeme, _unescape(lexeme, text, pos), pos))
        elif kind == "number":
            tokens.append(("number", lexeme, _number(lexeme, text, pos), pos))
        elif kind == "ident" and lexeme == "NaN":
            tokens.append(("number", lexeme, math.nan, pos))
        elif kind != "ws":
            tokens.append((kind, lexeme, lexeme, pos))
        pos = m.end()
    tokens.append(("end", "", None, end))
    return tokens


def _unescape(lexeme: str, text: str, pos: int) -> str:
    """The value of a quoted string: JSON's escapes (``\\uXXXX`` for any UTF-16 unit)."""
    body = lexeme[1:-1]
    for m in re.finditer(r"\\[\s\S]", body):
        if _ESCAPE.match(body, m.start()) is None:
            raise TemplateSyntaxError(f"invalid escape {m.group()!r}", text, pos + 1 + m.start())

    def one(m: re.Match[str]) -> str:
        code = m.group(1)
        return chr(int(code[1:], 16)) if code[0] == "u" else _SIMPLE_ESCAPES[code]
    value = _ESCAPE.sub(one, body)
    # \uD83D\uDE00 pairs become one code point, as Java's UTF-16 strings mean them.
    try:
        return value.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError:
        raise TemplateSyntaxError("unpaired surrogate in string", text, pos) from None


def _number(lexeme: str, text: str, pos: int) -> int | float:
    """The value of a numeric literal: int without a point or exponent, else float."""
    if "Infinity" in lexeme:
        return -math.inf if lexeme[0] == "-" else math.inf
    if "." in lexeme or "e" in lexeme or "E" in lexeme:
        value = float(lexeme)
        if math.isinf(value):
            raise TemplateSyntaxError("floating-point literal out of range", text, pos)
        return value
    if len(lexeme) > _MAX_DIGITS:
        raise TemplateSyntaxError("integer literal out of range", text, pos)
    return int(lexeme)


class _Parser:
    """One pass over the tokens of one template text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0

    def peek(self) -> Token:
        return self.tokens[self.i]

    def take(self) -> Token:
        token = self.tokens[self.i]
        if token[0] != "end":
            self.i += 1
        return token

    def fail(self, message: str, token: Token) -> TemplateSyntaxError:
        return TemplateSyntaxError(message, self.text, token[3])

    def expect(self, lexeme: str, what: str) -> Token:
        token = self.take()
        if token[0] != "punct" or token[1] != lexeme:
            raise self.fail(f"expected {what}, found {_describe(token)}", token)
        return token

    def template(self) -> Template:
        fields: list[TemplateField] = []
        seen: set[str] = set()
        if self.peek()[0] != "end":
            while True:
                start = self.peek()
                field = self.field()
                if field.name in seen:
                    raise self.fail(f"field {field.name!r} appears twice", start)
                seen.add(field.name)
                fields.append(field)
                token = self.take()
                if token[0] == "end":
                    break
                if token[0] != "punct" or token[1] != ",":
                    raise self.fail(f"expected ',' or the end, found {_describe(token)}", token)
        return Template(tuple(fields))

    def field(self) -> TemplateField:
        start = self.take()
        if start[0] == "string":
            name = start[2]
        elif start[0] == "ident" and start[1] not in KEYWORDS:
            name = start[1]
        else:
            raise self.fail(f"expected a field name, found {_describe(start)}", start)
        declared: Token | None = None
        if self.peek()[:2] == ("punct", ":"):
            self.take()
            declared = self.take()
            if declared[0] != "ident" or declared[1] in KEYWORDS:
                raise self.fail(f"expected a field type, found {_describe(declared)}",
                                declared)
        self.expect("=", "'='")
        value = self.take()
        return _field(name, declared, value, start[3], self.fail)


_MODE_WORDS: Final = {FieldMode.FORMAL: ("Formal", "?"), FieldMode.VIRTUAL: ("Virtual", "~")}


def _field(name: str, declared: Token | None, value: Token, position: int,
           fail: Any) -> TemplateField:
    """One field, checked: its type and value against each other and the reserved
    table, and its template value against the table's "Can be Overridden?" column."""
    field = _typed_field(name, declared, value, position, fail)
    reserved = RESERVED.get(name)
    if reserved is not None and reserved.template is not None \
            and field.mode is not reserved.template:
        word, symbol = _MODE_WORDS[reserved.template]
        raise fail(f"{name}'s template value is {word} and cannot be overridden "
                   f"({reserved.table} of the Event Heap protocol, \"Can be Overridden?\": "
                   f"{reserved.overridable!r}); write `{name} = {symbol}`"
                   + (" or leave the field out" if symbol == "~" else ""), value)
    return field


def _typed_field(name: str, declared: Token | None, value: Token, position: int,
                 fail: Any) -> TemplateField:
    """Check one field's type and value against each other and the reserved types."""
    reserved = RESERVED.get(name)
    ftype = declared[1] if declared is not None else None
    if declared is not None and ftype not in FIELD_TYPES:
        platform = " (platform types have no CORBA form)" if ftype and "." in ftype else ""
        raise fail(f"unknown field type {ftype!r}{platform}; the types are "
                   + ", ".join(FIELD_TYPES), declared)
    if reserved is not None:
        if ftype is not None and ftype != reserved.type:
            raise fail(f"{name} is a reserved {reserved.type} field "
                       f"({reserved.table} of the Event Heap protocol)", declared)
        ftype = reserved.type
    kind, lexeme, literal = value[0], value[1], value[2]
    if kind == "punct" and lexeme in ("?", "~"):
        mode = FieldMode.FORMAL if lexeme == "?" else FieldMode.VIRTUAL
        if ftype is None:
            raise fail(f"give the type of field {name!r} (`{name}: int = {lexeme}`)", value)
        return TemplateField(name, ftype, mode, None, position)
    if kind == "ident" and lexeme == "null":
        if ftype is None:
            raise fail(f"give the type of field {name!r} (`{name}: string = null`)", value)
        return TemplateField(name, ftype, FieldMode.ACTUAL, None, position)
    if kind == "ident" and lexeme in ("true", "false"):
        ftype = _check_type(ftype or "boolean", ("boolean",), value, fail)
        return TemplateField(name, ftype, FieldMode.ACTUAL, lexeme == "true", position)
    if kind == "string":
        ftype = _check_type(ftype or "string", ("string",), value, fail)
        return TemplateField(name, ftype, FieldMode.ACTUAL, literal, position)
    if kind != "number":
        raise fail(f"expected a value, '?' or '~', found {_describe(value)}", value)
    if type(literal) is int:
        if ftype is None:
            ftype = "int" if INT_RANGE[0] <= literal <= INT_RANGE[1] else "long"
        ftype = _check_type(ftype, ("int", "long", "float", "double"), value, fail)
        low, high = INT_RANGE if ftype == "int" else LONG_RANGE
        if ftype in ("int", "long"):
            if not low <= literal <= high:
                raise fail(f"{literal} is out of the range of a Java {ftype}", value)
            return TemplateField(name, ftype, FieldMode.ACTUAL, literal, position)
        literal = float(literal)
    ftype = _check_type(ftype or "double", ("float", "double"), value, fail)
    if ftype == "float":
        try:
            literal = to_float32(literal)
        except OverflowError:
            raise fail(f"{lexeme} is out of the range of a float", value) from None
    return TemplateField(name, ftype, FieldMode.ACTUAL, literal, position)


def _check_type(ftype: str, allowed: tuple[str, ...], value: Token, fail: Any) -> str:
    if ftype not in allowed:
        raise fail(f"a {ftype} field cannot hold {value[1]}", value)
    return ftype


def _describe(token: Token) -> str:
    return "the end" if token[0] == "end" else repr(token[1][:40])


def parse_template(text: str) -> Template:
    """Parse the text form of a template; TemplateSyntaxError if it is not one.

    The empty (or all-whitespace) text is the empty template, which every
    event matches. Texts longer than ``MAX_LENGTH`` characters are refused.
    """
    if len(text) > MAX_LENGTH:
        raise TemplateSyntaxError(
            f"constraint is {len(text)} characters long; the limit is {MAX_LENGTH}",
            text, MAX_LENGTH)
    return _Parser(text).template()


# -- rendering ------------------------------------------------------------------------------


def render_name(name: str) -> str:
    """A field name as written: bare when it is an identifier, else quoted."""
    if _BARE_NAME.match(name) and name not in KEYWORDS:
        return name
    return _quote(name)


def _quote(value: str) -> str:
    """``value`` quoted; ValueError when it holds a surrogate code point (U+D800 to
    U+DFFF): that is not Unicode text, and the text form's strings are (an escaped
    pair is one code point, a lone half is refused), so it would not read back."""
    out = []
    for ch in value:
        if "\ud800" <= ch <= "\udfff":
            raise ValueError(f"{value[:40]!r} holds the surrogate code point "
                             f"U+{ord(ch):04X}, which is not Unicode text")
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch.isprintable() or ch == " ":
            out.append(ch)
        else:
            out.extend(f"\\u{unit:04x}" for unit in _utf16(ch))
    return '"' + "".join(out) + '"'


def _utf16(ch: str) -> tuple[int, ...]:
    code = ord(ch)
    if code < 0x10000:
        return (code,)
    code -= 0x10000
    return (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF))


def render_literal(value: Any) -> str:
    """An actual value as written: ``null``, ``true``, a number or a quoted string."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is float:
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if type(value) is str:
        return _quote(value)
    raise ValueError(f"not an Event Heap value: {value!r}")


def render(template: Template) -> str:
    """The text form of ``template``, every field with its type written.

    ValueError when a name or string holds a surrogate code point (see ``_quote``).
    """
    parts = []
    for f in template.fields:
        if f.mode is FieldMode.FORMAL:
            value = "?"
        elif f.mode is FieldMode.VIRTUAL:
            value = "~"
        else:
            value = render_literal(f.value)
        parts.append(f"{render_name(f.name)}: {f.type} = {value}")
    return ", ".join(parts)
