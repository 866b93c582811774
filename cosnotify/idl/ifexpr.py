"""Evaluation of ``#if``/``#elif`` expressions for the IDL preprocessor.

Strategy: the C preprocessor's integer expression language is small, so it is
evaluated directly: a regex tokenizer, ``defined NAME``/``defined(NAME)``
resolved first, object-like macros expanded (a macro is not expanded inside
its own expansion), identifiers left over become 0 (C99 6.10.1), and then a
precedence-climbing evaluator over C's operators, including ``?:``. Values are
unbounded Python ints; division truncates toward zero as in C. Every problem
raises `IDLError` at the directive.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from cosnotify.idl.errors import IDLError, Location

_TOKEN_RE = re.compile(
    r"""\s*(?:
        (?P<num>0[xX][0-9a-fA-F]+|\d+)[uUlL]*
      | (?P<char>'(?:\\.|[^\\'])')
      | (?P<ident>[A-Za-z_]\w*)
      | (?P<op>\|\||&&|==|!=|<=|>=|<<|>>|[-+*/%<>!~&|^()?:])
    )""",
    re.VERBOSE,
)

#: Binary operators by precedence, loosest first.
_BINARY: list[tuple[str, ...]] = [
    ("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="),
    ("<", ">", "<=", ">="), ("<<", ">>"), ("+", "-"), ("*", "/", "%"),
]  # fmt: skip
_PRECEDENCE = {op: level for level, ops in enumerate(_BINARY) for op in ops}
_MAX_EXPANSION = 10_000


def _tokenize(text: str, loc: Location) -> list[str | int]:
    out: list[str | int] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None or m.end() == pos:
            raise IDLError.at(loc, f"invalid token in #if expression: {text[pos:].strip()!r}")
        pos = m.end()
        if m.group("num") is not None:
            num = m.group("num")
            base = 16 if num[:2] in ("0x", "0X") else 8 if len(num) > 1 and num[0] == "0" else 10
            try:
                out.append(int(num, base))
            except ValueError:
                raise IDLError.at(loc, f"invalid number '{num}' in #if expression") from None
        elif m.group("char") is not None:
            body = m.group("char")[1:-1]
            escapes = {"n": 10, "t": 9, "r": 13, "0": 0, "a": 7, "b": 8, "f": 12, "v": 11}
            out.append(escapes.get(body[1], ord(body[1])) if body[0] == "\\" else ord(body))
        else:
            out.append(m.group("ident") or m.group("op"))
    return out


def _expand(
    tokens: list[str | int], macros: Mapping[str, str], loc: Location, busy: frozenset[str]
) -> list[str | int]:
    out: list[str | int] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if tok == "defined":
            if i < len(tokens) and tokens[i] == "(":
                if i + 2 >= len(tokens) or tokens[i + 2] != ")":
                    raise IDLError.at(loc, "defined( expects a macro name and ')'")
                name, i = tokens[i + 1], i + 3
            elif i < len(tokens):
                name, i = tokens[i], i + 1
            else:
                raise IDLError.at(loc, "defined expects a macro name")
            if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]\w*", name):
                raise IDLError.at(loc, "defined expects a macro name")
            out.append(1 if name in macros else 0)
        elif isinstance(tok, str) and re.fullmatch(r"[A-Za-z_]\w*", tok):
            if tok in macros and tok not in busy:
                out.extend(_expand(_tokenize(macros[tok], loc), macros, loc, busy | {tok}))
            else:
                out.append(0)
        else:
            out.append(tok)
        if len(out) > _MAX_EXPANSION:
            raise IDLError.at(loc, "#if expression too large after macro expansion")
    return out


class _Evaluator:
    def __init__(self, tokens: list[str | int], loc: Location) -> None:
        self.tokens = tokens
        self.pos = 0
        self.loc = loc

    def fail(self, message: str) -> IDLError:
        return IDLError.at(self.loc, f"invalid #if expression: {message}")

    def peek(self) -> str | int | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str | int:
        tok = self.peek()
        if tok is None:
            raise self.fail("unexpected end of expression")
        self.pos += 1
        return tok

    def expect(self, op: str) -> None:
        if self.take() != op:
            raise self.fail(f"expected '{op}'")

    def conditional(self, depth: int = 0) -> int:
        if depth > 200:
            raise self.fail("nested too deeply")
        cond = self.binary(0, depth)
        if self.peek() != "?":
            return cond
        self.pos += 1
        yes = self.conditional(depth + 1)
        self.expect(":")
        no = self.conditional(depth + 1)
        return yes if cond else no

    def binary(self, level: int, depth: int) -> int:
        if level == len(_BINARY):
            return self.unary(depth)
        left = self.binary(level + 1, depth)
        while True:
            op = self.peek()
            if not isinstance(op, str) or _PRECEDENCE.get(op) != level:
                return left
            self.pos += 1
            if op == "||":
                right = self.binary(level + 1, depth)
                left = int(bool(left) or bool(right))
            elif op == "&&":
                right = self.binary(level + 1, depth)
                left = int(bool(left) and bool(right))
            else:
                left = self.apply(op, left, self.binary(level + 1, depth))

    def apply(self, op: str, a: int, b: int) -> int:
        if op in ("/", "%"):
            if b == 0:
                raise self.fail("division by zero")
            quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
            return quotient if op == "/" else a - quotient * b
        if op in ("<<", ">>"):
            if not 0 <= b < 64:
                raise self.fail("shift count out of range")
            return a << b if op == "<<" else a >> b
        results = {
            "|": a | b, "^": a ^ b, "&": a & b, "==": int(a == b), "!=": int(a != b),
            "<": int(a < b), ">": int(a > b), "<=": int(a <= b), ">=": int(a >= b),
            "+": a + b, "-": a - b, "*": a * b,
        }  # fmt: skip
        return results[op]

    def unary(self, depth: int) -> int:
        if depth > 200:
            raise self.fail("nested too deeply")
        tok = self.take()
        if isinstance(tok, int):
            return tok
        if tok == "(":
            value = self.conditional(depth + 1)
            self.expect(")")
            return value
        if tok == "-":
            return -self.unary(depth + 1)
        if tok == "+":
            return self.unary(depth + 1)
        if tok == "!":
            return int(not self.unary(depth + 1))
        if tok == "~":
            return ~self.unary(depth + 1)
        raise self.fail(f"unexpected '{tok}'")


def evaluate(text: str, macros: Mapping[str, str], loc: Location) -> int:
    """Evaluate the ``#if`` expression ``text`` with the given macro bodies."""
    tokens = _expand(_tokenize(text, loc), macros, loc, frozenset())
    if not tokens:
        raise IDLError.at(loc, "#if with no expression")
    ev = _Evaluator(tokens, loc)
    value = ev.conditional()
    if ev.peek() is not None:
        raise ev.fail(f"unexpected '{ev.peek()}'")
    return value
