"""The ELVIN4 abstract syntax tree (Elvin 4 client protocol §6.1, Appendix A).

Strategy: frozen attrs nodes, built by the parser's actions only. Every node
keeps ``pos``, the 0-based offset of its first token (or operator), for the
errors of §6.3, and ``depth``, the height of the tree under it, so the parser
enforces the nesting limit of §6.1.2 as it reduces, before anything recurses.
``&&``, ``||`` and ``^^`` chains are n-ary (``Logic``): a long flat chain is
one level, not a deep tree. ``!=`` is not a node: §6.1.7 defines it as
``!(A == B)``.
"""

from __future__ import annotations

from typing import Final, TypeAlias

import attrs

__all__ = [
    "BOOL_FUNCTIONS", "FUNCTIONS", "MATH_OPERATORS", "MAX_NESTING", "STRING_FUNCTIONS",
    "VALUE_FUNCTIONS", "Binary", "Call", "Compare", "Literal", "Logic", "Name", "Node",
    "Not", "Unary", "names_of",
]

#: Deepest tree accepted (§6.1.2 "An implementation MAY limit the depth of nesting");
#: deeper ones raise NESTING_TOO_DEEP. It also keeps the generated Python well
#: inside CPython's limit of 200 nested parentheses.
MAX_NESTING: Final = 64

#: §6.1.6 general predicates: one attribute name, a boolean result.
BOOL_FUNCTIONS: Final = frozenset({"require", "int32", "int64", "real64", "nan", "string",
                                   "opaque"})
#: §6.1.8 string predicates (an attribute and string constants) and §6.1.7 ``equals``.
STRING_FUNCTIONS: Final = frozenset({"contains", "begins-with", "ends-with", "wildcard",
                                     "regex"})
#: Functions with a value result: §6.1.9 ``size`` and the §6.1.10 string functions.
VALUE_FUNCTIONS: Final = frozenset({"size", "fold-case", "decompose", "decompose-compat"})
#: Every function of Appendix A (``function-pred`` and ``bool-pred``).
FUNCTIONS: Final = BOOL_FUNCTIONS | STRING_FUNCTIONS | VALUE_FUNCTIONS | {"equals"}

#: §6.1.12 numeric operators (binary).
MATH_OPERATORS: Final = frozenset({"+", "-", "*", "/", "%", "<<", ">>", ">>>", "&", "|", "^"})
#: Operators defined only on int32 and int64 (§6.1.12).
INTEGER_OPERATORS: Final = frozenset({"%", "<<", ">>", ">>>", "&", "|", "^", "~"})

#: Static types: the four literal types, "numeric" (some numeric type), None (unknown).
StaticType: TypeAlias = "str | None"


@attrs.frozen
class Name:
    """An attribute reference (§6.1.5)."""

    name: str
    pos: int
    depth: int = 1


@attrs.frozen
class Literal:
    """A literal of type ``int32``, ``int64``, ``real64`` or ``string`` (§6.1.4).

    ``bare`` marks an unsigned integer literal straight from the lexer (a
    leading minus may still negate it, which changes its range); ``overflow``
    marks one outside its type's range, reported as OVERFLOW unless negation
    brings it back in.
    """

    value: int | float | str
    type: str
    pos: int
    bare: bool = False
    overflow: bool = False
    depth: int = 1


@attrs.frozen
class Unary:
    """``-x``, ``+x`` or ``~x`` (§6.1.12)."""

    op: str
    operand: Node
    pos: int
    depth: int = 1


@attrs.frozen
class Binary:
    """A numeric operator (§6.1.12)."""

    op: str
    left: Node
    right: Node
    pos: int
    depth: int = 1


@attrs.frozen
class Compare:
    """``==``, ``<``, ``<=``, ``>``, ``>=`` (§6.1.7, §6.1.11)."""

    op: str
    left: Node
    right: Node
    pos: int
    depth: int = 1


@attrs.frozen
class Logic:
    """``&&``, ``^^`` or ``||`` over two or more operands (§6.1.3)."""

    op: str
    operands: tuple[Node, ...]
    pos: int
    depth: int = 1


@attrs.frozen
class Not:
    """``! operand`` (§6.1.3)."""

    operand: Node
    pos: int
    depth: int = 1


@attrs.frozen
class Call:
    """A function or predicate call (§6.1.6-6.1.10); ``pos`` is the name's offset."""

    name: str
    args: tuple[Node, ...]
    pos: int
    depth: int = 1


Node: TypeAlias = "Name | Literal | Unary | Binary | Compare | Logic | Not | Call"


def children(node: Node) -> tuple[Node, ...]:
    """The direct sub-nodes of ``node``."""
    if isinstance(node, (Unary, Not)):
        return (node.operand,)
    if isinstance(node, (Binary, Compare)):
        return (node.left, node.right)
    if isinstance(node, Logic):
        return node.operands
    if isinstance(node, Call):
        return node.args
    return ()


def names_of(node: Node) -> frozenset[str]:
    """Every attribute name ``node`` refers to (iterative: trees are bounded anyway)."""
    found: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Name):
            found.add(item.name)
        stack.extend(children(item))
    return frozenset(found)
