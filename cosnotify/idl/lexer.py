"""Lexer for OMG IDL 2.x (CORBA 2.6 chapter 3).

Strategy: a PLY class-based lexer that owns the token list and the reserved
word table. The preprocessor hands it one run of already comment-free,
directive-free text at a time (`IDLLexer.tokenize`), together with the file
name and first line number, and gets back tokens that carry a `Location`.

Identifier rules (CORBA 2.6 section 3.2.3/3.2.4):

* keywords are case sensitive, and an identifier that matches a keyword
  ignoring case (``Module``, ``OBJECT``) is an error;
* a leading underscore escapes an identifier: ``_EventType`` is the
  identifier ``EventType``, even if the rest is a keyword.

Literal values are decoded here (numbers to int/float/Decimal, escapes in
char and string literals) so the parser only builds nodes.
"""

from __future__ import annotations

import decimal
import re
from typing import Any

import ply.lex

from cosnotify.idl.errors import IDLError, Location

#: IDL keywords (CORBA 2.6 table 3-6) mapped to token names. Keywords for
#: valuetypes and other constructs this compiler rejects are still reserved,
#: so using them fails with "unexpected keyword" rather than as identifiers.
RESERVED: dict[str, str] = {
    kw: kw.upper()
    for kw in (
        "abstract", "any", "attribute", "boolean", "case", "char", "const", "context",
        "custom", "default", "double", "enum", "exception", "factory", "fixed", "float",
        "in", "inout", "interface", "local", "long", "module", "native", "octet",
        "oneway", "out", "private", "public", "raises", "readonly", "sequence", "short",
        "string", "struct", "supports", "switch", "truncatable", "typedef", "unsigned",
        "union", "valuetype", "void", "wchar", "wstring",
    )
}
RESERVED.update({"Object": "OBJECT", "ValueBase": "VALUEBASE", "TRUE": "TRUE", "FALSE": "FALSE"})

#: Lower-cased keyword -> keyword, for the case-insensitive collision rule.
#: The valuetype keywords of CORBA 2.3 are left out: IDL written before them
#: uses names such as ``Factory`` (omniORB's CosLifeCycle).
_KEYWORD_FOLD = {
    kw.lower(): kw
    for kw in RESERVED
    if kw not in ("abstract", "custom", "factory", "local", "private", "public", "supports",
                  "truncatable", "valuetype", "ValueBase")
}  # fmt: skip

#: How tokens are named in error messages.
PUNCTUATION = {
    "SEMI": ";", "LBRACE": "{", "RBRACE": "}", "COLON": ":", "COMMA": ",",
    "EQUALS": "=", "PLUS": "+", "MINUS": "-", "STAR": "*", "SLASH": "/",
    "PERCENT": "%", "TILDE": "~", "LPAREN": "(", "RPAREN": ")", "LT": "<",
    "GT": ">", "LBRACKET": "[", "RBRACKET": "]", "PIPE": "|", "CARET": "^",
    "AMP": "&", "LSHIFT": "<<", "RSHIFT": ">>", "SCOPE": "::",
}  # fmt: skip

_ESCAPES = {
    "n": "\n", "t": "\t", "v": "\v", "b": "\b", "r": "\r", "f": "\f",
    "a": "\a", "\\": "\\", "?": "?", "'": "'", '"': '"',
}  # fmt: skip
_ESCAPE_RE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|[0-7]{1,3}|.)", re.DOTALL)


def describe_token(tok_type: str, value: object = None) -> str:
    """Name a token the way error messages show it."""
    if tok_type in PUNCTUATION:
        return f"'{PUNCTUATION[tok_type]}'"
    if tok_type == "IDENTIFIER":
        return f"identifier '{value}'" if value is not None else "identifier"
    if tok_type in RESERVED.values():
        kw = next(k for k, v in RESERVED.items() if v == tok_type)
        return f"keyword '{kw}'"
    return tok_type.lower().replace("_", " ")


class IDLLexer:
    """PLY lexer for IDL text; see the module docstring."""

    tokens = (
        "IDENTIFIER", "INTEGER_LITERAL", "FLOATING_PT_LITERAL", "FIXED_PT_LITERAL",
        "CHAR_LITERAL", "WCHAR_LITERAL", "STRING_LITERAL", "WSTRING_LITERAL",
        *PUNCTUATION,
        *sorted(set(RESERVED.values())),
    )  # fmt: skip

    t_ignore = " \t\r\f\v"

    t_SEMI = r";"
    t_LBRACE = r"\{"
    t_RBRACE = r"\}"
    t_COMMA = r","
    t_EQUALS = r"="
    t_PLUS = r"\+"
    t_MINUS = r"-"
    t_STAR = r"\*"
    t_SLASH = r"/"
    t_PERCENT = r"%"
    t_TILDE = r"~"
    t_LPAREN = r"\("
    t_RPAREN = r"\)"
    t_LBRACKET = r"\["
    t_RBRACKET = r"\]"
    t_PIPE = r"\|"
    t_CARET = r"\^"
    t_AMP = r"&"

    def __init__(self, filename: str = "<string>") -> None:
        self.filename = filename
        self._text = ""
        self._first_line = 1
        self._lexer = ply.lex.lex(module=self, reflags=int(re.VERBOSE))

    # -- driver ---------------------------------------------------------

    def tokenize(self, text: str, filename: str, first_line: int = 1) -> list[Any]:
        """Lex ``text`` (which starts at line ``first_line`` of ``filename``)."""
        self.filename = filename
        self._text = text
        self._first_line = first_line
        self._lexer.lineno = first_line
        self._lexer.input(text)
        out: list[Any] = []
        while True:
            tok = self._lexer.token()
            if tok is None:
                return out
            tok.loc = self._location(tok.lexpos, tok.lineno)
            out.append(tok)

    def _location(self, lexpos: int, lineno: int) -> Location:
        line_start = self._text.rfind("\n", 0, lexpos) + 1
        return Location(self.filename, lineno, lexpos - line_start + 1)

    def _fail(self, t: Any, message: str) -> IDLError:
        return IDLError.at(self._location(t.lexpos, t.lexer.lineno), message)

    # -- rules (order matters: PLY tries function rules in definition order)

    def t_newline(self, t: Any) -> None:
        r"\n+"
        t.lexer.lineno += len(t.value)

    def t_SCOPE(self, t: Any) -> Any:
        r"::"
        return t

    def t_COLON(self, t: Any) -> Any:
        r":"
        return t

    def t_LSHIFT(self, t: Any) -> Any:
        r"<<"
        return t

    def t_RSHIFT(self, t: Any) -> Any:
        r">>"
        return t

    def t_LT(self, t: Any) -> Any:
        r"<"
        return t

    def t_GT(self, t: Any) -> Any:
        r">"
        return t

    def t_WCHAR_LITERAL(self, t: Any) -> Any:
        r"L'(\\.|[^\\'\n])*'"
        t.value = self._char_value(t, t.value[2:-1])
        return t

    def t_WSTRING_LITERAL(self, t: Any) -> Any:
        r'L"(\\.|[^\\"\n])*"'
        t.value = self._string_value(t, t.value[2:-1])
        return t

    def t_CHAR_LITERAL(self, t: Any) -> Any:
        r"'(\\.|[^\\'\n])*'"
        t.value = self._char_value(t, t.value[1:-1])
        if ord(t.value) > 0xFF:
            raise self._fail(t, "character literal is not an 8-bit character")
        return t

    def t_STRING_LITERAL(self, t: Any) -> Any:
        r'"(\\.|[^\\"\n])*"'
        t.value = self._string_value(t, t.value[1:-1])
        return t

    def t_FIXED_PT_LITERAL(self, t: Any) -> Any:
        r"(\d+\.?\d*|\.\d+)[dD]"
        t.value = decimal.Decimal(t.value[:-1])
        return t

    def t_FLOATING_PT_LITERAL(self, t: Any) -> Any:
        r"(\d+\.\d*|\.\d+)([eE][+-]?\d+)?|\d+[eE][+-]?\d+"
        t.value = float(t.value)
        return t

    def t_INTEGER_LITERAL(self, t: Any) -> Any:
        r"0[xX][0-9a-fA-F]+|\d+"
        text = t.value
        if text[:2] in ("0x", "0X"):
            t.value = int(text, 16)
        elif len(text) > 1 and text[0] == "0":
            if not set(text) <= set("01234567"):
                raise self._fail(t, f"invalid octal literal '{text}'")
            t.value = int(text, 8)
        else:
            t.value = int(text)
        return t

    def t_IDENTIFIER(self, t: Any) -> Any:
        r"[A-Za-z_][A-Za-z0-9_]*"
        text = t.value
        t.raw = text
        if text in RESERVED:
            t.type = RESERVED[text]
            return t
        if text.startswith("_"):
            # Escaped identifier (CORBA 2.6 section 3.2.3.2).
            if len(text) == 1 or text[1] == "_":
                raise self._fail(t, f"invalid identifier '{text}'")
            t.value = text[1:]
            return t
        keyword = _KEYWORD_FOLD.get(text.lower())
        if keyword is not None:
            raise self._fail(t, f"identifier '{text}' collides with keyword '{keyword}'")
        return t

    def t_error(self, t: Any) -> None:
        char = t.value[0]
        if char in "'\"":
            raise self._fail(t, "unterminated character or string literal")
        raise self._fail(t, f"unexpected character {char!r}")

    # -- literal decoding -----------------------------------------------

    def _unescape(self, t: Any, body: str) -> str:
        def one(m: re.Match[str]) -> str:
            esc = m.group(1)
            if esc[0] in "xu" and len(esc) > 1:
                return chr(int(esc[1:], 16))
            if esc[0] in "01234567":
                value = int(esc, 8)
                if value > 0xFF:
                    raise self._fail(t, f"octal escape '\\{esc}' out of range")
                return chr(value)
            if esc in _ESCAPES:
                return _ESCAPES[esc]
            raise self._fail(t, f"unknown escape sequence '\\{esc}'")

        return _ESCAPE_RE.sub(one, body)

    def _char_value(self, t: Any, body: str) -> str:
        value = self._unescape(t, body)
        if len(value) != 1:
            raise self._fail(t, "a character literal must hold exactly one character")
        return value

    def _string_value(self, t: Any, body: str) -> str:
        value = self._unescape(t, body)
        if "\0" in value:
            raise self._fail(t, "string literals may not contain a nul character")
        return value
