"""Lexer of the ELVIN4 subscription language (Elvin 4 client protocol §6.1.4-6.1.5, App. A).

Strategy: a PLY lexer class owning ``tokens``; the master lexer is built once
(cached) and cloned per expression. Decisions the seed leaves to us:

- Names (Appendix A ``id-literal``): a letter, ``_`` or ``\\`` + character,
  then any of the ``id-char`` set, where ``\\`` escapes the next character.
  ``id-char`` contains most operator characters, so "Names must be separated
  from operators by whitespace" (§6.1.5): ``a==b`` is one name. Appendix A also
  lists ``(`` (%x28) as an ``id-char``; §6.1.2 says "parentheses need not be
  separated from attribute identifiers", so we read %x28 as an erratum and
  end a name at ``(``. Unescaped name characters are ASCII ("Attribute names
  are restricted to a subset of the ASCII character set", App. A).
- A name followed (after optional whitespace) by ``(`` is a function call
  token ``FUNC``; any other name is an attribute, so an attribute may be
  called ``size``.
- Integer literals (§6.1.4): decimal, ``0x`` hex, ``0`` octal, optional
  ``l``/``L`` for int64. The lexer keeps the magnitude; the parser applies a
  leading minus and the OVERFLOW rule (so ``-2147483648`` is an int32). A
  literal with more significant digits than any int64 has is not converted
  (Python limits int <-> str conversion to 4300 digits): its magnitude is
  ``TOO_LARGE``, which overflows either type, negated or not.
- Real literals need both parts: ``1.5``, ``1.0e10``; an exponent too large
  is OVERFLOW (§6.1.4); underflow rounds to zero or a subnormal.
- Strings (§6.1.4): ``"..."`` or ``'...'``; a backslash escapes the next
  character, which stands for itself ("All escaped characters except the
  quotes represent themselves"). NUL is not a ``safe-utf8-char``.
- Errors: a character no token starts with is INVALID_TOKEN, an opening quote
  without its closing one UNTERM_STRING (§6.3).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final, TypeVar

from cosnotify.filter.elvin4.errors import SubscriptionError
from cosnotify.filter.plytools import master_lexer

__all__ = ["ElvinLexer", "TokenStream", "tokenize"]

INT32_MAX: Final = 2**31 - 1
INT64_MAX: Final = 2**63 - 1
#: The magnitude of an integer literal with more than ``_MAX_DIGITS`` significant digits.
TOO_LARGE: Final = 2**64
#: More significant digits than int64's largest magnitude has in any base (octal: 22).
_MAX_DIGITS: Final = 24

_OPERATORS: Final = {
    ">>>": "URSHIFT", ">>": "RSHIFT", "<<": "LSHIFT", ">=": "GE", "<=": "LE", "==": "EQ",
    "!=": "NE", "&&": "AND", "||": "OR", "^^": "XOR", "!": "NOT", "<": "LT", ">": "GT",
    "&": "BITAND", "|": "BITOR", "^": "BITXOR", "+": "PLUS", "-": "MINUS", "*": "TIMES",
    "/": "DIVIDE", "%": "MOD", "~": "TILDE", "(": "LPAREN", ")": "RPAREN", ",": "COMMA",
}
_ID = r"(?:[A-Za-z_]|\\[^\x00])(?:[!#-&*+\--Z^-~]|\\[^\x00])*"
_ESCAPE: Final = re.compile(r"\\(.)", re.DOTALL)
_NAME: Final = re.compile(_ID, re.DOTALL)
_HINTS: Final = {
    "=": " (equality is '==')",
    ".": " (a real literal needs digits on both sides of '.', §6.1.4)",
}


_F = TypeVar("_F", bound=Callable[..., Any])


def _token(pattern: str) -> Callable[[_F], _F]:
    """``ply.lex.TOKEN``, typed: the rule's regular expression when it is not a literal."""
    def set_regex(rule: _F) -> _F:
        rule.regex = pattern  # type: ignore[attr-defined]
        return rule
    return set_regex


def unescape(body: str) -> str:
    """Drop each escaping backslash: ``\\x`` stands for ``x`` (§6.1.4, App. A)."""
    return _ESCAPE.sub(r"\1", body) if "\\" in body else body


class ElvinLexer:
    """PLY token rules for ELVIN4; see the module docstring for the decisions."""

    tokens: Final = ("FUNC", "NAME", "INT", "REAL", "STRING", *sorted(set(_OPERATORS.values())))

    t_ignore = " \t\r\n"  # App. A swsp = SP / HTAB / CR / LF

    def t_STRING(self, t: Any) -> Any:
        r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'"""
        body = t.value[1:-1]
        nul = body.find("\0")
        if nul >= 0:
            raise _error(t.lexer, "INVALID_TOKEN", "a string may not contain NUL",
                         t.lexpos + 1 + nul)
        t.value = unescape(body)
        return t

    def t_UNTERM(self, t: Any) -> Any:
        r"""["']"""
        raise _error(t.lexer, "UNTERM_STRING",
                     f"string literal starting with {t.value} has no closing {t.value}",
                     t.lexpos)

    def t_REAL(self, t: Any) -> Any:
        r"[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?"
        value = float(t.value)
        if value == float("inf"):
            raise _error(t.lexer, "OVERFLOW",
                         f"real literal {_shorten(t.value)} is too large for real64", t.lexpos)
        t.value = (value, t.value)
        return t

    def t_INT(self, t: Any) -> Any:
        r"0[xX][0-9A-Fa-f]+[lL]?|[0-9]+[lL]?"
        text = t.value
        is64 = text[-1] in "lL"
        digits = text[:-1] if is64 else text
        if digits[:2] in ("0x", "0X"):
            digits, base = digits[2:], 16
        elif len(digits) > 1 and digits[0] == "0":
            if not digits.isdigit() or any(c in "89" for c in digits):
                raise _error(t.lexer, "INVALID_TOKEN",
                             f"{_shorten(text)} is not an octal literal", t.lexpos)
            base = 8
        else:
            base = 10
        digits = digits.lstrip("0") or "0"
        magnitude = TOO_LARGE if len(digits) > _MAX_DIGITS else int(digits, base)
        t.value = (magnitude, is64, text)
        return t

    @_token(_ID + r"[ \t\r\n]*\(")
    def t_FUNC(self, t: Any) -> Any:
        name = _NAME.match(t.value)
        assert name is not None  # the token starts with _ID
        t.value = unescape(name.group())  # an escaped space stays in the name
        return t

    @_token(_ID)
    def t_NAME(self, t: Any) -> Any:
        t.value = unescape(t.value)
        return t

    def t_OPERATOR(self, t: Any) -> Any:
        r">>>|>>|<<|>=|<=|==|!=|&&|\|\||\^\^|[!<>&|^+\-*/%~(),]"
        t.type = _OPERATORS[t.value]
        return t

    def t_error(self, t: Any) -> None:
        ch = t.value[0]
        shown = repr(ch) if ch.isprintable() else f"U+{ord(ch):04X}"
        raise _error(t.lexer, "INVALID_TOKEN",
                     f"unexpected character {shown}{_HINTS.get(ch, '')}", t.lexpos)


def _shorten(text: str, width: int = 24) -> str:
    if len(text) <= width:
        return text
    return f"{text[:width // 2]}...{text[-(width // 2):]} ({len(text)} characters)"


def _error(lexer: Any, name: str, message: str, position: int) -> SubscriptionError:
    return SubscriptionError(name, message, lexer.lexdata, position)


class TokenStream:
    """The token source the parser reads for one expression."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._lexer = master_lexer(ElvinLexer).clone()
        self._lexer.input(text)

    @property
    def lexpos(self) -> int:
        return int(self._lexer.lexpos)

    @property
    def lineno(self) -> int:
        return int(self._lexer.lineno)

    def token(self) -> Any:
        return self._lexer.token()


def tokenize(text: str) -> list[tuple[str, Any, int]]:
    """``(type, value, offset)`` of every token; SubscriptionError on a lexical error."""
    stream = TokenStream(text)
    out: list[tuple[str, Any, int]] = []
    while (tok := stream.token()) is not None:
        out.append((tok.type, tok.value, tok.lexpos))
    return out
