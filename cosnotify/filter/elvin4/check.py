"""Compile-time checks of an ELVIN4 tree (Elvin 4 client protocol §6.1, §6.3).

Strategy: one recursive pass (trees are at most ``ast.MAX_NESTING`` deep)
computes each node's *static type* and raises the first §6.3 error:

- ``bool`` (a predicate) vs value types: a logical operand, ``!`` operand or
  the whole expression must be a predicate, a comparison or math operand a
  value (Appendix A ``sub-exp``/``value``); otherwise PARSE_ERROR.
- values: ``int32``, ``int64``, ``real64``, ``string`` for literals and
  functions whose result type is known, ``numeric`` for math on unknowns,
  None for an attribute (its type is known only per notification).
- OVERFLOW for an integer literal out of range (§6.1.4);
- TYPE_MISMATCH "The type of a literal value in the expression does not
  match its usage": a string in math or in ``<``/``>``, a real64 under an
  integer-only operator (§6.1.12), a string compared for equality with a
  number, a non-string constant for a string predicate, a literal where
  §6.1.6 wants an attribute name;
- UNKNOWN_FUNC, TOO_FEW_ARGS, TOO_MANY_ARGS for calls (Appendix A arities);
- EXP_IS_TRIVIAL "When compiled, the expression reduced to a constant
  value": a predicate none of whose operands refers to an attribute (§6.1.7:
  "comparing two literal values is pointless and SHOULD return an error");
- INVALID_REGEXP / REGEXP_TOO_COMPLEX from compiling ``regex`` and
  ``wildcard`` patterns (done by the code generator, which owns them).
"""

from __future__ import annotations

import re
from typing import Final

from cosnotify.filter.elvin4 import ast
from cosnotify.filter.elvin4.errors import SubscriptionError

__all__ = ["check", "has_attribute"]

BOOL: Final = "bool"
NUMERIC_TYPES: Final = frozenset({"int32", "int64", "real64", "numeric"})
_RANK: Final = {"int32": 0, "int64": 1, "real64": 2}
_STRING_VALUED: Final = frozenset({"fold-case", "decompose", "decompose-compat"})
_INT_TEXT: Final = re.compile(r"-?[ \t\r\n]*(?:0[xX][0-9A-Fa-f]+|[0-9]+)[lL]?")


def check(tree: ast.Node, text: str) -> None:
    """Raise the first §6.3 error of ``tree`` (parsed from ``text``), if any."""
    result = _Checker(text).type_of(tree)
    if result != BOOL:
        raise SubscriptionError("PARSE_ERROR", "the expression is a value, not a predicate "
                                "(numbers need an explicit test, e.g. x != 0, §6.1.1)"
                                + _hint(tree), text, _pos(tree))


def _hint(node: ast.Node) -> str:
    """A reminder of §6.1.5 when a name swallowed an operator (``a==1`` is one name)."""
    if isinstance(node, ast.Name) and any(c in node.name for c in "=<>!&|^"):
        return f"; {node.name!r} is one name: separate operators from names with spaces"
    return ""


def has_attribute(node: ast.Node) -> bool:
    """Does ``node`` refer to at least one attribute?"""
    return bool(ast.names_of(node))


def _pos(node: ast.Node) -> int:
    return node.pos


def promote(a: str | None, b: str | None) -> str | None:
    """§6.2: "real64 > int64 > int32"; unknown operands give ``numeric`` at best."""
    if a in _RANK and b in _RANK:
        return a if _RANK[a] >= _RANK[b] else b
    if a == "real64" or b == "real64":
        return "real64"
    return "numeric"


class _Checker:
    def __init__(self, text: str) -> None:
        self.text = text

    def literal(self, node: ast.Literal) -> str:
        """An integer literal as written (shortened: it may have thousands of digits,
        more than Python converts to int)."""
        found = _INT_TEXT.match(self.text, node.pos)
        text = "".join(found.group().split()) if found else "?"
        if len(text) > 24:
            text = f"{text[:10]}...{text[-10:]} ({len(text)} characters)"
        return text

    def fail(self, name: str, message: str, node: ast.Node | int) -> SubscriptionError:
        pos = node if isinstance(node, int) else _pos(node)
        return SubscriptionError(name, message, self.text, pos)

    def type_of(self, node: ast.Node) -> str | None:
        if isinstance(node, ast.Name):
            return None
        if isinstance(node, ast.Literal):
            if node.overflow:
                raise self.fail("OVERFLOW", f"integer literal {self.literal(node)} is too "
                                f"large for {node.type}" + ("" if node.type == "int64" else
                                                  " (add an L suffix for int64)"), node)
            return node.type
        if isinstance(node, ast.Logic):
            for operand in node.operands:
                self.predicate(operand, f"an operand of {node.op}")
            return BOOL
        if isinstance(node, ast.Not):
            self.predicate(node.operand, "the operand of !")
            return BOOL
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.Unary):
            t = self.value(node.operand, f"the operand of unary {node.op}")
            self.numeric(t, node.operand, node.op)
            if node.op == "~" and t == "real64":
                raise self.fail("TYPE_MISMATCH", "~ is defined on int32 and int64 only "
                                "(§6.1.12)", node.operand)
            return t if t in _RANK else "numeric"
        if isinstance(node, ast.Binary):
            left = self.value(node.left, f"an operand of {node.op}")
            right = self.value(node.right, f"an operand of {node.op}")
            for t, side in ((left, node.left), (right, node.right)):
                self.numeric(t, side, node.op)
                if node.op in ast.INTEGER_OPERATORS and t == "real64":
                    raise self.fail("TYPE_MISMATCH", f"{node.op} is defined on int32 and "
                                    "int64 only (§6.1.12)", side)
            return promote(left, right)
        return self.call(node)

    def predicate(self, node: ast.Node, where: str) -> None:
        if self.type_of(node) != BOOL:
            raise self.fail("PARSE_ERROR", f"{where} must be a predicate, not a value "
                            "(§6.1.1: there is no implicit truth value)" + _hint(node), node)

    def value(self, node: ast.Node, where: str) -> str | None:
        t = self.type_of(node)
        if t == BOOL:
            raise self.fail("PARSE_ERROR", f"{where} must be a value, not a predicate", node)
        return t

    def numeric(self, t: str | None, node: ast.Node, op: str) -> None:
        if t is not None and t not in NUMERIC_TYPES:
            raise self.fail("TYPE_MISMATCH", f"{op} needs numbers, not a {t}", node)

    def trivial(self, node: ast.Node, what: str) -> None:
        if not has_attribute(node):
            raise self.fail("EXP_IS_TRIVIAL", f"{what} refers to no attribute, so it is "
                            "constant (§6.1.7)", node)

    def compare(self, node: ast.Compare) -> str:
        left = self.value(node.left, f"an operand of {node.op}")
        right = self.value(node.right, f"an operand of {node.op}")
        if node.op == "==":
            kinds = {("string" if t == "string" else "number") for t in (left, right)
                     if t is not None}
            if len(kinds) > 1:
                raise self.fail("TYPE_MISMATCH", "a string is never equal to a number",
                                node.right if right == "string" else node.left)
        else:
            # §6.1.8 "There are no predicates for string comparison"
            for t, side in ((left, node.left), (right, node.right)):
                self.numeric(t, side, node.op)
        self.trivial(node, f"the comparison {node.op}")
        return BOOL

    def call(self, node: ast.Call) -> str | None:
        name, args = node.name, node.args
        if name not in ast.FUNCTIONS:
            raise self.fail("UNKNOWN_FUNC", f"unknown function {name}()", node)
        low, high = _ARITY[name]
        if len(args) < low:
            raise self.fail("TOO_FEW_ARGS", f"{name}() takes at least {low} argument"
                            f"{'s' if low > 1 else ''}, got {len(args)}", node)
        if high is not None and len(args) > high:
            raise self.fail("TOO_MANY_ARGS", f"{name}() takes at most {high} argument"
                            f"{'s' if high > 1 else ''}, got {len(args)}", args[high])
        if name in ast.BOOL_FUNCTIONS:
            if not isinstance(args[0], ast.Name):
                raise self.fail("TYPE_MISMATCH", f"{name}() takes an attribute name "
                                "(§6.1.6)", args[0])
            return BOOL
        if name == "equals":
            first = self.value(args[0], "the first argument of equals()")
            for arg in args[1:]:
                t = self.value(arg, "an argument of equals()")
                if first is not None and t is not None and (first == "string") != (
                        t == "string"):
                    raise self.fail("TYPE_MISMATCH", "a string is never equal to a number",
                                    arg)
            self.trivial(node, "equals()")
            return BOOL
        subject = self.value(args[0], f"the first argument of {name}()")
        if subject is not None and subject != "string":
            raise self.fail("TYPE_MISMATCH", f"{name}() applies to a string, not a "
                            f"{subject}", args[0])
        if name in ast.STRING_FUNCTIONS:
            for arg in args[1:]:
                if not (isinstance(arg, ast.Literal) and arg.type == "string"):
                    raise self.fail("TYPE_MISMATCH", f"{name}() takes string constants "
                                    "after the attribute (§6.1.8)", arg)
            self.trivial(args[0], f"{name}()")
            return BOOL
        if name == "size":
            if not (isinstance(args[0], ast.Name) or (
                    isinstance(args[0], ast.Call) and args[0].name in _STRING_VALUED)):
                raise self.fail("TYPE_MISMATCH", "size() takes an attribute name (§6.1.9)",
                                args[0])
            return "int32"
        return "string"  # fold-case, decompose, decompose-compat (§6.1.10)


#: (fewest, most or None) arguments of each function (§6.1.6-6.1.10, Appendix A).
_ARITY: Final[dict[str, tuple[int, int | None]]] = {
    **{name: (1, 1) for name in ast.BOOL_FUNCTIONS},
    **{name: (2, None) for name in ("contains", "begins-with", "ends-with", "wildcard",
                                    "equals")},
    "regex": (2, 2),
    "size": (1, 1), "fold-case": (1, 1), "decompose": (1, 1), "decompose-compat": (1, 1),
}
