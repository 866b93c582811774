"""Parser of the ELVIN4 subscription language (Elvin 4 client protocol Appendix A).

Strategy: a PLY LALR grammar over one ``expr`` nonterminal with an explicit
precedence table; the predicate/value distinction of Appendix A (``sub-exp``
vs ``value``) and every other rule the grammar cannot state are checked
afterwards by :mod:`cosnotify.filter.elvin4.check`. Precedence, lowest first:

    ||   ^^   &&   !   == != < <= > >=   |   ^   &   << >> >>>   + -   * / %   unary - + ~

§6.1.3 fixes the logical operators ("Logical NOT has highest precedence,
followed by AND, XOR and then OR"); Appendix A makes every math operator bind
tighter than a comparison (``bool-exp = value "==" value``, ``value = math-exp``)
and makes ``!`` take a whole ``bool-exp`` (``! a == b`` is ``!(a == b)``). The
relative order of the math operators is not given; we use C's.

Actions only build nodes (:mod:`...elvin4.ast`), apply a leading minus to a
bare integer literal (so ``-2147483648`` fits int32, §6.1.4), flatten chains
of one logical operator, and enforce the nesting limit (§6.1.2) as each node
is reduced, so no later pass recurses deeper than ``MAX_NESTING``.
"""

from __future__ import annotations

import functools
from typing import Any

import attrs

from cosnotify.filter.elvin4 import ast
from cosnotify.filter.elvin4.errors import SubscriptionError
from cosnotify.filter.elvin4.lexer import INT32_MAX, INT64_MAX, ElvinLexer, TokenStream
from cosnotify.filter.plytools import SerialParser, build_tables

__all__ = ["ElvinParser", "build_parser", "parse"]


class ElvinParser:
    """PLY productions for ELVIN4 (one ``p_`` function per production)."""

    tokens = ElvinLexer.tokens

    precedence = (
        ("left", "OR"),
        ("left", "XOR"),
        ("left", "AND"),
        ("right", "NOT"),
        ("nonassoc", "EQ", "NE", "LT", "LE", "GT", "GE"),
        ("left", "BITOR"),
        ("left", "BITXOR"),
        ("left", "BITAND"),
        ("left", "LSHIFT", "RSHIFT", "URSHIFT"),
        ("left", "PLUS", "MINUS"),
        ("left", "TIMES", "DIVIDE", "MOD"),
        ("right", "UNARY"),
    )

    lr: Any

    def p_expr_logic(self, p: Any) -> None:
        """expr : expr OR expr
                | expr XOR expr
                | expr AND expr"""
        left, op, right = p[1], p[2], p[3]
        parts: list[ast.Node] = []
        for side in (left, right):
            if isinstance(side, ast.Logic) and side.op == op:
                parts.extend(side.operands)
            else:
                parts.append(side)
        depth = max(n.depth for n in parts) + 1
        p[0] = _deep(p, 2, ast.Logic(op, tuple(parts), p.lexpos(2), depth))

    def p_expr_not(self, p: Any) -> None:
        """expr : NOT expr"""
        p[0] = _deep(p, 1, ast.Not(p[2], p.lexpos(1), p[2].depth + 1))

    def p_expr_compare(self, p: Any) -> None:
        """expr : expr EQ expr
                | expr LT expr
                | expr LE expr
                | expr GT expr
                | expr GE expr"""
        p[0] = _deep(p, 2, ast.Compare(p[2], p[1], p[3], p.lexpos(2),
                                       max(p[1].depth, p[3].depth) + 1))

    def p_expr_ne(self, p: Any) -> None:
        """expr : expr NE expr"""
        # §6.1.7: "This operator is defined to be implemented as !(A == B)".
        eq = ast.Compare("==", p[1], p[3], p.lexpos(2), max(p[1].depth, p[3].depth) + 1)
        p[0] = _deep(p, 2, ast.Not(eq, p.lexpos(2), eq.depth + 1))

    def p_expr_math(self, p: Any) -> None:
        """expr : expr PLUS expr
                | expr MINUS expr
                | expr TIMES expr
                | expr DIVIDE expr
                | expr MOD expr
                | expr LSHIFT expr
                | expr RSHIFT expr
                | expr URSHIFT expr
                | expr BITAND expr
                | expr BITOR expr
                | expr BITXOR expr"""
        p[0] = _deep(p, 2, ast.Binary(p[2], p[1], p[3], p.lexpos(2),
                                      max(p[1].depth, p[3].depth) + 1))

    def p_expr_unary(self, p: Any) -> None:
        """expr : MINUS expr %prec UNARY
                | PLUS expr %prec UNARY
                | TILDE expr %prec UNARY"""
        operand = p[2]
        if p[1] == "-" and isinstance(operand, ast.Literal) and operand.bare:
            # "an optional leading minus sign negates the value" (§6.1.4)
            value = -operand.value  # type: ignore[operator]
            limit = INT64_MAX if operand.type == "int64" else INT32_MAX
            if operand.type == "real64":
                p[0] = ast.Literal(value, "real64", p.lexpos(1))
            else:
                p[0] = ast.Literal(value, operand.type, p.lexpos(1),
                                   overflow=value < -limit - 1)
            return
        p[0] = _deep(p, 1, ast.Unary(p[1], operand, p.lexpos(1), operand.depth + 1))

    def p_expr_group(self, p: Any) -> None:
        """expr : LPAREN expr RPAREN"""
        inner = p[2]
        changes: dict[str, Any] = {"depth": inner.depth + 1}  # §6.1.2: grouping nests
        if isinstance(inner, ast.Literal):
            changes["bare"] = False  # "-(2147483648)" negates no literal
        p[0] = _deep(p, 1, attrs.evolve(inner, **changes))

    def p_expr_call(self, p: Any) -> None:
        """expr : FUNC args RPAREN"""
        args = tuple(p[2])
        depth = max(a.depth for a in args) + 1
        p[0] = _deep(p, 1, ast.Call(p[1], args, p.lexpos(1), depth))

    def p_expr_call_empty(self, p: Any) -> None:
        """expr : FUNC RPAREN"""
        p[0] = ast.Call(p[1], (), p.lexpos(1), 1)

    def p_args_one(self, p: Any) -> None:
        """args : expr"""
        p[0] = [p[1]]

    def p_args_more(self, p: Any) -> None:
        """args : args COMMA expr"""
        p[0] = p[1] + [p[3]]

    def p_expr_name(self, p: Any) -> None:
        """expr : NAME"""
        p[0] = ast.Name(p[1], p.lexpos(1))

    def p_expr_int(self, p: Any) -> None:
        """expr : INT"""
        magnitude, is64, _ = p[1]
        limit = INT64_MAX if is64 else INT32_MAX
        p[0] = ast.Literal(magnitude, "int64" if is64 else "int32", p.lexpos(1), bare=True,
                           overflow=magnitude > limit)

    def p_expr_real(self, p: Any) -> None:
        """expr : REAL"""
        p[0] = ast.Literal(p[1][0], "real64", p.lexpos(1), bare=True)

    def p_expr_string(self, p: Any) -> None:
        """expr : STRING"""
        p[0] = ast.Literal(p[1], "string", p.lexpos(1))

    def p_error(self, tok: Any) -> None:
        text = self._text
        if tok is None:
            raise SubscriptionError("PARSE_ERROR", "unexpected end of expression", text,
                                    len(text))
        shown = tok.value if isinstance(tok.value, str) else tok.value[-1]
        hint = ""
        if tok.type == "NAME" and any(op in shown for op in _OPERATORS_IN_NAMES):
            hint = " (names must be separated from operators by whitespace, §6.1.5)"
        raise SubscriptionError("PARSE_ERROR", f"unexpected {shown!r}{hint}", text, tok.lexpos)

    _text = ""


_OPERATORS_IN_NAMES = ("==", "!=", "<", ">", "&&", "||", "^^", "+", "-", "*", "/", "%",
                       "&", "|", "^")


def _deep(p: Any, index: int, node: ast.Node) -> ast.Node:
    """``node``, unless it is deeper than the nesting limit (§6.1.2: NESTING_TOO_DEEP)."""
    if node.depth > ast.MAX_NESTING:
        raise SubscriptionError(
            "NESTING_TOO_DEEP", f"expression nests more than {ast.MAX_NESTING} levels deep",
            p.lexer.text, p.lexpos(index))
    return node


def build_parser(*, debug: bool = False, errorlog: Any = None) -> ElvinParser:
    """Build the PLY tables (``errorlog`` defaults to one that raises on any warning)."""
    made: ElvinParser = build_tables(ElvinParser(), "expr", debug=debug, errorlog=errorlog)
    return made


@functools.lru_cache(maxsize=1)
def _default_parser() -> SerialParser:
    return SerialParser(build_parser(), TokenStream)


def parse(text: str) -> ast.Node:
    """Parse one expression to a tree (syntax only); SubscriptionError if it is not one.

    The empty expression is a PARSE_ERROR: Appendix A has no empty ``sub-exp``.
    """
    if not text.strip(" \t\r\n"):
        raise SubscriptionError("PARSE_ERROR", "empty expression", text, len(text))
    result: ast.Node = _default_parser().parse(text)
    return result
