"""EXTENDED_TCL constraints as index terms (``cosnotify.routing.terms``).

Strategy: walk the AST for a *necessary* condition. A constraint is TRUE only
when its body evaluates to TRUE without error (an error ends the whole
constraint with FALSE, §2.4.3), so:

- ``component == literal`` (either way round) needs the component to equal
  the literal: an ``EQ`` term; ``<``, ``<=``, ``>``, ``>=`` give range terms
  (when such a comparison is the whole constraint, its term is marked
  ``exact``: ``Term.exact``);
  ``literal in component`` an ``IN`` term;
- ``a or b`` needs a term of ``a`` or one of ``b``: the union of both;
- ``a and b`` needs both, so either one's terms will do: the cheapest is
  kept (a key costs 1, a range 16: a range returns every bound on one side);
- ``FALSE`` is never TRUE: no terms;
- everything else (``!=``, ``not``, ``~``, ``exist``, arithmetic, two
  components compared, ``TRUE``, ``$curtime`` whose value moves between the
  lookup and the match) gives no access, and the constraint is evaluated for
  every event of its types.

Comparison semantics (numbers as doubles, characters as numbers, booleans as
0/1) are folded into the keys by :func:`cosnotify.routing.terms.keys_of`.
"""

from __future__ import annotations

from typing import Any, Final

from cosnotify.filter import ast
from cosnotify.filter.paths import CURTIME
from cosnotify.routing.terms import MAX_KEYS, Access, Kind, Term, keys_of

__all__ = ["decompose"]

_OP = ast.BinaryOperator
_FLIPPED: Final = {_OP.EQ: _OP.EQ, _OP.LT: _OP.GT, _OP.LE: _OP.GE,
                   _OP.GT: _OP.LT, _OP.GE: _OP.LE}
_KIND: Final = {_OP.EQ: Kind.EQ, _OP.GT: Kind.LOWER, _OP.GE: Kind.LOWER,
                _OP.LT: Kind.UPPER, _OP.LE: Kind.UPPER}
_LITERALS: Final = (ast.IntegerLiteral, ast.FloatLiteral, ast.StringLiteral, ast.BooleanLiteral)


def decompose(tree: ast.Expression) -> Access | None:
    """The access of a constraint (None: it cannot be indexed).

    Raises ValueError when the access would need more than ``MAX_KEYS`` keys:
    ``compile_entry`` then keeps the constraint unindexed (it is still valid).
    """
    found = _comparison(tree, whole=True) if isinstance(tree, ast.BinaryOp) else _necessary(tree)
    if found is not None and sum(len(term.keys) for term in found) > MAX_KEYS:
        raise ValueError(f"the constraint needs more than {MAX_KEYS} index keys "
                         "(docs/routing.md, Limits); split it into several constraints")
    return found


def _component(node: ast.Expression) -> ast.Component | None:
    if isinstance(node, ast.Identifier):
        node = ast.Component(node.name, node.escaped, ())
    if not isinstance(node, ast.Component):
        return None
    if node.variable == CURTIME and not node.escaped:
        return None
    return node


def _comparison(node: ast.BinaryOp, whole: bool = False) -> Access | None:
    """The term of ``component OP literal`` (either way round); ``whole``: the
    comparison is the whole constraint, so the term is its exact test too."""
    operator = node.operator
    if operator not in _KIND:
        return None
    component, literal = _component(node.left), node.right
    if component is None or not isinstance(literal, _LITERALS):
        component, literal = _component(node.right), node.left
        operator = _FLIPPED[operator]
        if component is None or not isinstance(literal, _LITERALS):
            return None
    keys = keys_of(literal.value)
    if not keys:
        return None
    exact = (operator.value, literal.value) if whole else None
    return (Term(_KIND[operator], component, keys, exact),)


#: What a range term costs against one equality key: a range lookup returns every
#: bound on one side of the value, an equality key only the constraints with it.
_RANGE_COST: Final = 16


def _cost(access: Access) -> int:
    return sum(_RANGE_COST if term.kind in (Kind.LOWER, Kind.UPPER)
               else 2 if term.kind is Kind.BETWEEN else len(term.keys) for term in access)


def _necessary(node: ast.Expression) -> Access | None:
    if isinstance(node, ast.BooleanLiteral):
        return None if node.value else ()
    if isinstance(node, ast.BinaryOp):
        return _comparison(node)
    if isinstance(node, ast.In):
        component = _component(node.collection)
        if component is None or not isinstance(node.element, _LITERALS):
            return None
        keys = keys_of(node.element.value)
        return (Term(Kind.IN, component, keys),) if keys else None
    if isinstance(node, ast.Or):
        terms: list[Term] = []
        for operand in node.operands:
            found = _necessary(operand)
            if found is None:
                return None
            terms.extend(found)
        return tuple(terms)
    if isinstance(node, ast.And):
        options = [found for found in map(_necessary, node.operands) if found is not None]
        options.extend(_windows(options))
        return min(options, key=_cost) if options else None
    return None


def _windows(options: list[Access]) -> list[Access]:
    """``$x >= a and $x < b`` with numbers: one BETWEEN term, which finds only the
    windows around a value, where either bound alone finds every window on one
    side of it. Only single numeric keys: a one-character literal also compares
    as a string, which a window of numbers would not cover."""
    lowers: dict[Any, Any] = {}
    uppers: dict[Any, Any] = {}
    for access in options:
        if len(access) != 1 or len(access[0].keys) != 1 or access[0].keys[0][0] != "n":
            continue
        term = access[0]
        if term.kind is Kind.LOWER:
            lowers.setdefault(term.component, term.keys[0])
        elif term.kind is Kind.UPPER:
            uppers.setdefault(term.component, term.keys[0])
    return [(Term(Kind.BETWEEN, component, (low, uppers[component])),)
            for component, low in lowers.items() if component in uppers]


def access_of(compiled: Any) -> Access | None:
    """The access of a compiled EXTENDED_TCL constraint (its ``source`` is the AST)."""
    return decompose(compiled.source)
