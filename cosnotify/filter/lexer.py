"""Lexer for EXTENDED_TCL, the default filter constraint grammar (Notification §2.4).

Strategy: a PLY lexer class that owns ``tokens`` and the reserved-word table.
The master lexer is built once (``plytools.master_lexer``, cached) and cloned for
each constraint, so lexing is reentrant; every bit of per-run state lives on
the clone. ``TokenStream`` wraps a clone for the parser and remembers the
previous token's type, which two rules need:

- After ``.`` the lexer is inside a component path (a ``.`` token appears
  nowhere else), so a word is always an identifier, even a keyword
  (``$_.in``, §2.4.7), and a number is only ``<Digits>`` (``$. 3.5`` is
  positions 3 then 5, not the float 3.5).
- ``$.3`` must not read as ``$`` and the float ``.3``: ``.`` followed by
  digits (and no exponent) is the one token ``DOT_DIGITS``, which the parser
  takes as a position step inside a component and as a float elsewhere.

Every character the grammar does not know is an error with its position;
nothing is skipped (TAO's ETCL lexer silently drops them).
"""

from __future__ import annotations

import re
from typing import Any, Final

import attrs

from cosnotify.filter.ast import MAX_INTEGER
from cosnotify.filter.errors import ConstraintSyntaxError
from cosnotify.filter.plytools import master_lexer

__all__ = ["ConstraintLexer", "Token", "TokenStream", "digits_value", "shorten", "tokenize"]

# IDL escape sequences (CORBA 3.0 §3.2.5.2.2), adopted as <Special> by §2.4.8.
_SIMPLE_ESCAPES: Final = {"n": "\n", "t": "\t", "v": "\v", "b": "\b", "r": "\r", "f": "\f",
                          "a": "\a", "\\": "\\", "?": "?", "'": "'", '"': '"'}
_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|(.))", re.DOTALL)
_DIGITS = re.compile(r"[0-9]+")
_MAX_INTEGER_DIGITS: Final = len(str(MAX_INTEGER))

# Friendlier words for characters that are not in the language.
_CHARACTER_HINTS: Final = {
    "=": "did you mean '=='?",
    "!": "did you mean '!=' or 'not'?",
    "&": "the conjunction is 'and'",
    "|": "the disjunction is 'or'",
    "%": "there is no modulo operator in the constraint grammar (Trading B.2, §2.4.8)",
    ",": "the comma operator is not part of the grammar (§2.4.1)",
    '"': "strings are quoted with single quotes: '...' (Trading B.2 <String>)",
    ":": "vendor keywords have the form :name: (§2.4.2)",
}


class ConstraintLexer:
    """PLY token rules for EXTENDED_TCL.

    Reserved words are case-sensitive (Trading B.2); ``default`` is added by
    §2.4.2. The Trading preference words (``min max with random first``) are
    not keywords here: Notification does not use them (§2.4.1).
    """

    reserved: Final = {
        "and": "AND", "or": "OR", "not": "NOT", "exist": "EXIST", "in": "IN",
        "TRUE": "TRUE", "FALSE": "FALSE", "default": "DEFAULT",
    }

    tokens: Final = (
        "IDENT", "ESCAPED_IDENT", "ESCAPED_VARIABLE",
        "INTEGER", "FLOAT", "DOT_DIGITS", "STRING",
        "DOLLAR", "DOT", "LPAREN", "RPAREN", "LBRACKET", "RBRACKET",
        "PLUS", "MINUS", "TIMES", "DIVIDE", "TWIDDLE",
        "EQ", "NE", "LT", "LE", "GT", "GE",
        "AND", "OR", "NOT", "EXIST", "IN", "TRUE", "FALSE", "DEFAULT",
    )

    t_ignore = " \t\n\r\f\v"

    t_EQ = r"=="
    t_NE = r"!="
    t_LE = r"<="
    t_GE = r">="
    t_LT = r"<"
    t_GT = r">"
    t_PLUS = r"\+"
    t_MINUS = r"-"
    t_TIMES = r"\*"
    t_DIVIDE = r"/"
    t_TWIDDLE = r"~"
    t_DOLLAR = r"\$"
    t_DOT = r"\."
    t_LPAREN = r"\("
    t_RPAREN = r"\)"
    t_LBRACKET = r"\["
    t_RBRACKET = r"\]"

    # Function rules are tried in this order, before the string rules above.

    def t_ESCAPED_VARIABLE(self, t: Any) -> Any:
        r"\\\$[A-Za-z_][A-Za-z0-9_]*"
        # '\$curtime' as the §2.4.2 example writes it; same as '$\curtime'.
        t.value = t.value[2:]
        return t

    def t_ESCAPED_IDENT(self, t: Any) -> Any:
        r"\\[A-Za-z_][A-Za-z0-9_]*"
        # '\ <Leader> <FollowSeq>' (§2.4.8): an identifier that may spell a keyword.
        t.value = t.value[1:]
        return t

    def t_vendor_keyword(self, t: Any) -> Any:
        r":[A-Za-z_][A-Za-z0-9_]*:"
        # §2.4.2 reserves ':<Ident>:' for vendor keywords; we define none.
        raise _error(t.lexer, t.lexpos, f"unsupported vendor keyword {t.value}")

    def t_INTEGER(self, t: Any) -> Any:
        r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
        # Trading B.2 <Number>: <Mantissa> [<Exponent>]; also DOT_DIGITS and FLOAT.
        text: str = t.value
        if getattr(t.lexer, "last_type", None) == "DOT" and text[0] != ".":
            digits = _DIGITS.match(text)
            assert digits is not None
            text = digits.group()
            t.lexer.lexpos = t.lexpos + len(text)
        exponent = max(text.find("e"), text.find("E"))
        if exponent >= 0 and text[exponent + 1] not in "+-":
            raise _error(t.lexer, t.lexpos + exponent,
                         "an exponent needs a sign, as in 1e+5 (Trading B.2 <Exponent>)")
        if text[0] == "." and exponent < 0:
            t.type, t.value = "DOT_DIGITS", text[1:]
        elif "." in text or exponent >= 0:
            value = float(text)
            if value in (float("inf"), float("-inf")):
                raise _error(t.lexer, t.lexpos,
                             f"floating-point literal {shorten(text)} is out of range")
            t.type, t.value = "FLOAT", value
        else:
            integer = digits_value(text)
            if integer is None:
                raise _error(t.lexer, t.lexpos,
                             f"integer literal {shorten(text)} does not fit in 64 bits")
            t.value = integer
        return t

    def t_IDENT(self, t: Any) -> Any:
        r"[A-Za-z_][A-Za-z0-9_]*"
        if getattr(t.lexer, "last_type", None) != "DOT":
            t.type = self.reserved.get(t.value, "IDENT")
        return t

    def t_STRING(self, t: Any) -> Any:
        r"'(?:[^'\\]|\\.)*'"
        t.value = _decode_string(t.lexer, t.value[1:-1], t.lexpos + 1)
        return t

    def t_error(self, t: Any) -> None:
        char = t.value[0]
        if char == "'":
            raise _error(t.lexer, t.lexpos, "unterminated string literal")
        if char == "\\":
            raise _error(t.lexer, t.lexpos,
                         "a backslash must be followed by an identifier (§2.4.1)")
        hint = _CHARACTER_HINTS.get(char)
        message = f"unexpected character {char!r}"
        raise _error(t.lexer, t.lexpos, f"{message}: {hint}" if hint else message)


def digits_value(digits: str) -> int | None:
    """The value of a run of decimal digits, or None if it exceeds ``MAX_INTEGER``.

    The length is checked before converting, so a literal of any size costs
    linear time and never meets Python's int/str conversion limit.
    """
    significant = digits.lstrip("0")
    if len(significant) > _MAX_INTEGER_DIGITS:
        return None
    value = int(significant or "0")
    return value if value <= MAX_INTEGER else None


def shorten(text: str, width: int = 24) -> str:
    """``text`` for an error message, elided in the middle when it is long."""
    if len(text) <= width:
        return text
    return f"{text[:width // 2]}...{text[-(width // 2):]} ({len(text)} characters)"


def _error(lexer: Any, position: int, message: str) -> ConstraintSyntaxError:
    return ConstraintSyntaxError(message, lexer.lexdata, position)


def _decode_string(lexer: Any, body: str, offset: int) -> str:
    """Apply the IDL escapes of §2.4.8; an undefined escape drops the backslash (§2.4.1)."""
    nul = body.find("\0")
    if nul >= 0:
        raise _error(lexer, offset + nul, "a string may not contain NUL")
    pieces: list[str] = []
    done = 0
    for match in _ESCAPE.finditer(body):
        pieces.append(body[done:match.start()])
        done = match.end()
        octal, hexadecimal, other = match.groups()
        if other is not None:
            pieces.append(_SIMPLE_ESCAPES.get(other, other))
            continue
        code = int(octal, 8) if octal is not None else int(hexadecimal, 16)
        if code > 0xFF:
            raise _error(lexer, offset + match.start(),
                         f"octal escape {match.group()} is out of range (at most \\377)")
        if code == 0:
            raise _error(lexer, offset + match.start(), "a string may not contain NUL")
        pieces.append(chr(code))
    pieces.append(body[done:])
    return "".join(pieces)


class TokenStream:
    """The token source the parser reads for one constraint."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._lexer = master_lexer(ConstraintLexer).clone()
        self._lexer.last_type = None
        self._lexer.input(text)

    @property
    def lexpos(self) -> int:
        """Offset just past the last token (PLY's tracking reads it for empty rules)."""
        return int(self._lexer.lexpos)

    @property
    def lineno(self) -> int:
        return int(self._lexer.lineno)

    def token(self) -> Any:
        """The next PLY token (with an ``end`` offset added), or None at the end."""
        tok = self._lexer.token()
        if tok is not None:
            tok.end = self._lexer.lexpos
            self._lexer.last_type = tok.type
        return tok


@attrs.frozen
class Token:
    """A token as ``tokenize`` reports it: type, decoded value, source span."""

    type: str
    value: Any
    start: int
    end: int


def tokenize(text: str) -> list[Token]:
    """All tokens of ``text``; raises ConstraintSyntaxError on a lexical error."""
    stream = TokenStream(text)
    out: list[Token] = []
    while (tok := stream.token()) is not None:
        out.append(Token(tok.type, tok.value, tok.lexpos, tok.end))
    return out
