"""Abstract syntax tree for EXTENDED_TCL constraints (Notification §2.4).

Strategy: every node is a frozen attrs class that validates its fields, so a
node that exists can always be written back as constraint text; ``to_text()``
does that, adding parentheses only where the grammar needs them, and the
parser reads the text back to an equal tree (tests/filter check the round trip
with Hypothesis). Nodes carry no source positions: two constraints that mean
the same thing syntactically compare equal.

Shapes chosen for the compiler that will turn a tree into Python closures:

- ``or`` and ``and`` are n-ary (``Or``/``And`` hold a flat tuple, never a
  nested node of the same kind): both are associative with the same
  left-to-right short-circuit order (§2.4.3), and a flat tuple keeps long
  generated chains (``$.id == 1 or $.id == 2 or ...``) shallow.
- A component path is one ``Component`` node: an optional run-time variable
  (``$name``) and a tuple of steps applied left to right.
- A sign before a number is folded into the literal (the Trading BNF allows a
  sign only there: ``- <Number>``, and §2.4.1 adds ``+ <Number>``), so
  ``-2147483648`` is one ``IntegerLiteral`` that fits a ``long``.

Each node caches its ``depth`` (not part of equality) so the parser can refuse
trees too deep for recursive walkers (``MAX_DEPTH``).
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Iterable
from typing import Any, TypeAlias

import attrs

__all__ = [
    "EXPRESSION_TYPES",
    "IDENT_PATTERN",
    "KEYWORDS",
    "MAX_DEPTH",
    "MAX_INTEGER",
    "MAX_LENGTH",
    "And",
    "Assoc",
    "BinaryOp",
    "BinaryOperator",
    "BooleanLiteral",
    "Component",
    "Default",
    "Exist",
    "Expression",
    "FloatLiteral",
    "Identifier",
    "Implicit",
    "ImplicitMember",
    "In",
    "Index",
    "IntegerLiteral",
    "Member",
    "Node",
    "Not",
    "Or",
    "Position",
    "Step",
    "StringLiteral",
    "UnionArm",
    "UnionEnumLabel",
]

#: Keywords of the constraint language (Trading B.2 plus ``default``, §2.4.2).
#: Case-sensitive: ``true`` is an identifier, not a boolean.
KEYWORDS = frozenset({"and", "or", "not", "exist", "in", "TRUE", "FALSE", "default"})

#: Largest magnitude of an integer anywhere in a constraint: CORBA has no
#: integer type wider than 64 bits (``unsigned long long``).
MAX_INTEGER = 2 ** 64 - 1

#: Deepest tree the parser accepts; keeps recursive walkers (``to_text``, the
#: compiler) far from Python's recursion limit.
MAX_DEPTH = 200

#: Longest constraint text (in characters) the parser accepts. Parsing and
#: compiling are linear in the length; this bounds the time and memory one
#: constraint can cost (about a second to compile the longest).
MAX_LENGTH = 32768

#: Trading B.2 ``<Ident>``: ``<Leader> <FollowSeq>``, ASCII letters, digits, ``_``.
IDENT_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# Unparser precedence levels (higher binds tighter); see docs/filters.md.
_OR, _AND, _COMPARE, _IN, _TWIDDLE, _ADD, _MUL, _NOT, _PRIMARY = range(1, 10)


class Node:
    """Base of every AST node and path step."""

    __slots__ = ()

    def to_text(self) -> str:
        """Constraint text that parses back to a node equal to this one."""
        raise NotImplementedError

    @property
    def depth(self) -> int:
        """Height of the tree rooted here (a leaf has depth 1)."""
        return 1


# -- validators ----------------------------------------------------------------------


def _identifier(_: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    if not isinstance(value, str) or not IDENT_PATTERN.match(value):
        raise ValueError(f"{attribute.name} must be a TCL identifier, got {value!r}")


def _unsigned(_: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if type(value) is not int or not 0 <= value <= MAX_INTEGER:
        raise ValueError(f"{attribute.name} must be an int in [0, 2**64), got {value!r}")


def _expression(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, EXPRESSION_TYPES):
        raise TypeError(f"{attribute.name} must be an expression node, got {value!r}")


def _depth_of(*children: Node) -> int:
    return 1 + max(child.depth for child in children)


def _set_depth(node: Node, *children: Node) -> None:
    object.__setattr__(node, "_depth", _depth_of(*children))


def _wrap(node: Expression, parent_level: int, *, same_level_ok: bool = False) -> str:
    """``node`` as an operand of an operator at ``parent_level``."""
    level = _level(node)
    if level > parent_level or (level == parent_level and same_level_ok):
        return node.to_text()
    return f"({node.to_text()})"


def _escape_name(name: str) -> str:
    """A name as constraint text: keywords need a leading backslash (§2.4.1)."""
    return "\\" + name if name in KEYWORDS else name


# -- literals --------------------------------------------------------------------------


@attrs.frozen
class IntegerLiteral(Node):
    """An integer constant: a weakly typed ``long`` when it fits (§2.4.3), kept exact."""

    value: int = attrs.field()

    @value.validator
    def _check(self, attribute: attrs.Attribute[int], value: int) -> None:
        if type(value) is not int or abs(value) > MAX_INTEGER:
            raise ValueError(f"integer literal must be an int within 64 bits, got {value!r}")

    def to_text(self) -> str:
        return str(self.value)


@attrs.frozen
class FloatLiteral(Node):
    """A floating-point constant: a weakly typed ``double`` (§2.4.3)."""

    value: float = attrs.field()

    @value.validator
    def _check(self, attribute: attrs.Attribute[float], value: float) -> None:
        if type(value) is not float or not math.isfinite(value):
            raise ValueError(f"float literal must be a finite float, got {value!r}")

    def to_text(self) -> str:
        # repr() always writes the exponent sign (1e+16), as Trading B.2 requires,
        # and always has a '.' or an exponent, so it never reads back as an int.
        return repr(self.value)


_STRING_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t", "\v": "\\v",
                   "\b": "\\b", "\r": "\\r", "\f": "\\f", "\a": "\\a"}


@attrs.frozen
class StringLiteral(Node):
    """A string constant; one character long, it may stand for a ``char`` (§2.4.1)."""

    value: str = attrs.field()

    @value.validator
    def _check(self, attribute: attrs.Attribute[str], value: str) -> None:
        if not isinstance(value, str) or "\0" in value:
            raise ValueError(f"string literal must be a str without NUL, got {value!r}")

    def to_text(self) -> str:
        out = []
        for ch in self.value:
            if ch in _STRING_ESCAPES:
                out.append(_STRING_ESCAPES[ch])
            elif ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0:
                out.append(f"\\x{ord(ch):02x}")
            else:
                out.append(ch)
        return "'" + "".join(out) + "'"


@attrs.frozen
class BooleanLiteral(Node):
    """``TRUE`` or ``FALSE``. The empty constraint parses to ``BooleanLiteral(True)``."""

    value: bool = attrs.field(validator=attrs.validators.instance_of(bool))

    def to_text(self) -> str:
        return "TRUE" if self.value else "FALSE"


# -- names and component paths ------------------------------------------------------------


@attrs.frozen
class Identifier(Node):
    """A bare ``<Ident>``: a property name (``severity``) or an enum label (``HOUSE``).

    ``escaped`` records ``\\ident``: like ``$\\curtime``, ``\\curtime`` is the property,
    not the reserved variable (§2.4.2, decisions 1 and 16). A keyword is always escaped.
    """

    name: str = attrs.field(validator=_identifier)
    escaped: bool = attrs.field(
        default=attrs.Factory(lambda self: self.name in KEYWORDS, takes_self=True),
        validator=attrs.validators.instance_of(bool))

    @escaped.validator
    def _check_escaped(self, attribute: attrs.Attribute[bool], value: bool) -> None:
        if not value and self.name in KEYWORDS:
            raise ValueError(f"identifier {self.name!r} spells a keyword: it must be escaped")

    def to_text(self) -> str:
        return ("\\" if self.escaped else "") + self.name


@attrs.frozen
class Member(Node):
    """``.name``: a struct, union or Any member by name (§2.4.2)."""

    name: str = attrs.field(validator=_identifier)

    def to_text(self) -> str:
        if self.name in KEYWORDS or self.name in _IMPLICIT_NAMES:
            return ".\\" + self.name
        return "." + self.name


@attrs.frozen
class Position(Node):
    """``.3``: a struct member or enum value by 0-based position (§2.4.6)."""

    index: int = attrs.field(validator=_unsigned)

    def to_text(self) -> str:
        return f".{self.index}"


@attrs.frozen
class UnionArm(Node):
    """``.(5)``, ``.(-1)``, ``.('c')``, ``.()``: a union member by case label (§2.4.6).

    ``label`` is an int, a str (``<String>`` label), or None for ``()``, the
    default member.
    """

    label: int | str | None = attrs.field()

    @label.validator
    def _check(self, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is None:
            return
        if type(value) is int:
            if abs(value) > MAX_INTEGER:
                raise ValueError(f"union label out of 64-bit range: {value!r}")
        elif isinstance(value, str):
            StringLiteral(value)  # same rules as a string literal
        else:
            raise TypeError(f"union label must be int, str or None, got {value!r}")

    def to_text(self) -> str:
        if self.label is None:
            return ".()"
        if isinstance(self.label, str):
            return f".({StringLiteral(self.label).to_text()})"
        return f".({self.label})"


@attrs.frozen
class UnionEnumLabel(Node):
    """``.(e5)``: a union member by the *enumerator name* of a case label (omniNotify).

    Not in the OMG grammar (``<UnionVal>`` has no identifier form); omniNotify
    accepts it for unions with an enum discriminator and its clients use it
    (docs/filters.md, "omniNotify extension"). ``name`` is an enumerator of the
    discriminator's enum, not a member name: ``.(e5)`` is ``.(5)`` when ``e5``
    is the enumerator of ordinal 5. A keyword is written escaped, ``.(\\in)``.
    """

    name: str = attrs.field(validator=_identifier)

    def to_text(self) -> str:
        return f".({_escape_name(self.name)})"


@attrs.frozen
class Index(Node):
    """``[2]``: an array or sequence element (§2.4.2)."""

    index: int = attrs.field(validator=_unsigned)

    def to_text(self) -> str:
        return f"[{self.index}]"


@attrs.frozen
class Assoc(Node):
    """``(name)``: the value for ``name`` in a name-value pair list (§2.4.4)."""

    name: str = attrs.field(validator=_identifier)

    def to_text(self) -> str:
        return f"({_escape_name(self.name)})"


class Implicit(enum.Enum):
    """The implicit members of a component (§2.4.2); each ends a path."""

    LENGTH = "_length"
    DISCRIMINATOR = "_d"
    TYPE_ID = "_type_id"
    REPOSITORY_ID = "_repos_id"


_IMPLICIT_NAMES = frozenset(item.value for item in Implicit)


@attrs.frozen
class ImplicitMember(Node):
    """``._length``, ``._d``, ``._type_id`` or ``._repos_id`` (§2.4.2)."""

    kind: Implicit = attrs.field(validator=attrs.validators.instance_of(Implicit))

    def to_text(self) -> str:
        return "." + self.kind.value


Step: TypeAlias = (Member | Position | UnionArm | UnionEnumLabel | Index | Assoc
                  | ImplicitMember)
_STEP_TYPES = (Member, Position, UnionArm, UnionEnumLabel, Index, Assoc, ImplicitMember)


def _to_steps(steps: Iterable[Step]) -> tuple[Step, ...]:
    return tuple(steps)


@attrs.frozen
class Component(Node):
    """``$`` followed by a path: the current event or a run-time variable (§2.4.2).

    ``variable`` is None for the event itself (``$``, ``$.a.b``) or the name
    of a run-time variable (``$priority``, ``$curtime``), resolved by the
    rules of §2.4.5. ``escaped`` records ``$\\name`` (or ``\\$name``): a
    reserved variable such as ``curtime`` is then not special (§2.4.2).
    ``steps`` apply left to right; an implicit member can only be last.
    """

    variable: str | None = attrs.field(default=None)
    escaped: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    steps: tuple[Step, ...] = attrs.field(default=(), converter=_to_steps)

    @variable.validator
    def _check_variable(self, attribute: attrs.Attribute[Any], value: str | None) -> None:
        if value is not None:
            _identifier(self, attribute, value)

    @escaped.validator
    def _check_escaped(self, attribute: attrs.Attribute[bool], value: bool) -> None:
        if value and self.variable is None:
            raise ValueError("only a run-time variable can be escaped")
        if not value and self.variable in KEYWORDS:
            raise ValueError(f"run-time variable {self.variable!r} spells a keyword: "
                             "it must be escaped")

    @steps.validator
    def _check_steps(self, attribute: attrs.Attribute[Any], value: tuple[Any, ...]) -> None:
        for i, step in enumerate(value):
            if not isinstance(step, _STEP_TYPES):
                raise TypeError(f"not a component step: {step!r}")
            if isinstance(step, ImplicitMember) and i != len(value) - 1:
                raise ValueError(f"{step.kind.value} must end the component")

    def to_text(self) -> str:
        head = "$"
        if self.variable is not None:
            head += ("\\" if self.escaped else "") + self.variable
        return head + "".join(step.to_text() for step in self.steps)


# -- operators ------------------------------------------------------------------------


class BinaryOperator(enum.Enum):
    """The binary operators other than ``and``, ``or`` and ``in``."""

    EQ = "=="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    TWIDDLE = "~"
    ADD = "+"
    SUB = "-"
    MUL = "*"
    DIV = "/"

    @property
    def level(self) -> int:
        """Precedence level for the unparser (higher binds tighter)."""
        return _OPERATOR_LEVELS[self]

    @property
    def is_comparison(self) -> bool:
        return _OPERATOR_LEVELS[self] == _COMPARE


_OPERATOR_LEVELS = {
    BinaryOperator.EQ: _COMPARE, BinaryOperator.NE: _COMPARE, BinaryOperator.LT: _COMPARE,
    BinaryOperator.LE: _COMPARE, BinaryOperator.GT: _COMPARE, BinaryOperator.GE: _COMPARE,
    BinaryOperator.TWIDDLE: _TWIDDLE,
    BinaryOperator.ADD: _ADD, BinaryOperator.SUB: _ADD,
    BinaryOperator.MUL: _MUL, BinaryOperator.DIV: _MUL,
}
_LEFT_ASSOCIATIVE = frozenset({BinaryOperator.ADD, BinaryOperator.SUB,
                               BinaryOperator.MUL, BinaryOperator.DIV})


@attrs.frozen
class BinaryOp(Node):
    """``left op right`` for comparisons, ``~`` (left contained in right, §2.4.1)
    and arithmetic."""

    operator: BinaryOperator = attrs.field(
        validator=attrs.validators.instance_of(BinaryOperator))
    left: Expression = attrs.field(validator=_expression)
    right: Expression = attrs.field(validator=_expression)
    _depth: int = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        _set_depth(self, self.left, self.right)

    @property
    def depth(self) -> int:
        return self._depth

    def to_text(self) -> str:
        level = self.operator.level
        left = _wrap(self.left, level, same_level_ok=self.operator in _LEFT_ASSOCIATIVE)
        return f"{left} {self.operator.value} {_wrap(self.right, level)}"


def _to_operands(operands: Iterable[Expression]) -> tuple[Expression, ...]:
    return tuple(operands)


def _operands(kind: type[Node]) -> Any:
    def check(_: Any, attribute: attrs.Attribute[Any], value: tuple[Any, ...]) -> None:
        if len(value) < 2:
            raise ValueError(f"{kind.__name__} needs at least two operands")
        for operand in value:
            _expression(None, attribute, operand)
            if isinstance(operand, kind):
                raise ValueError(  # noqa: TRY004 - a well-typed but unflattened treef"{kind.__name__} operands must be flat (no nested "
                                 f"{kind.__name__})")
    return check


@attrs.frozen
class Or(Node):
    """``a or b or ...``, evaluated left to right with short-circuit (§2.4.3)."""

    operands: tuple[Expression, ...] = attrs.field(converter=_to_operands)
    _depth: int = attrs.field(init=False, eq=False, repr=False)

    @operands.validator
    def _check(self, attribute: attrs.Attribute[Any], value: tuple[Any, ...]) -> None:
        _operands(Or)(self, attribute, value)

    def __attrs_post_init__(self) -> None:
        _set_depth(self, *self.operands)

    @property
    def depth(self) -> int:
        return self._depth

    def to_text(self) -> str:
        return " or ".join(_wrap(operand, _OR) for operand in self.operands)


@attrs.frozen
class And(Node):
    """``a and b and ...``, evaluated left to right with short-circuit (§2.4.3)."""

    operands: tuple[Expression, ...] = attrs.field(converter=_to_operands)
    _depth: int = attrs.field(init=False, eq=False, repr=False)

    @operands.validator
    def _check(self, attribute: attrs.Attribute[Any], value: tuple[Any, ...]) -> None:
        _operands(And)(self, attribute, value)

    def __attrs_post_init__(self) -> None:
        _set_depth(self, *self.operands)

    @property
    def depth(self) -> int:
        return self._depth

    def to_text(self) -> str:
        return " and ".join(_wrap(operand, _AND) for operand in self.operands)


@attrs.frozen
class Not(Node):
    """``not <factor>`` (Trading B.2 ``<factor_not>``)."""

    operand: Expression = attrs.field(validator=_expression)
    _depth: int = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        _set_depth(self, self.operand)

    @property
    def depth(self) -> int:
        return self._depth

    def to_text(self) -> str:
        return "not " + _wrap(self.operand, _NOT)


@attrs.frozen
class In(Node):
    """``element in collection``; the collection is an identifier or a component
    (Trading B.2 ``<expr_in>``, extended in §2.4.8)."""

    element: Expression = attrs.field(validator=_expression)
    collection: Identifier | Component = attrs.field(
        validator=attrs.validators.instance_of((Identifier, Component)))
    _depth: int = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        _set_depth(self, self.element, self.collection)

    @property
    def depth(self) -> int:
        return self._depth

    def to_text(self) -> str:
        return f"{_wrap(self.element, _IN)} in {self.collection.to_text()}"


@attrs.frozen
class Exist(Node):
    """``exist <Ident>`` or ``exist $<Component>``: never an error itself (§2.4.2)."""

    operand: Identifier | Component = attrs.field(
        validator=attrs.validators.instance_of((Identifier, Component)))

    def to_text(self) -> str:
        return "exist " + self.operand.to_text()


@attrs.frozen
class Default(Node):
    """``default $<Component>``: the union's default member is active (§2.4.2)."""

    operand: Component = attrs.field(validator=attrs.validators.instance_of(Component))

    def to_text(self) -> str:
        return "default " + self.operand.to_text()


Expression: TypeAlias = (IntegerLiteral | FloatLiteral | StringLiteral | BooleanLiteral
                         | Identifier | Component | Not | Exist | Default | In | BinaryOp | Or
                         | And)
EXPRESSION_TYPES = (IntegerLiteral, FloatLiteral, StringLiteral, BooleanLiteral, Identifier,
                     Component, Not, Exist, Default, In, BinaryOp, Or, And)


def _level(node: Expression) -> int:
    if isinstance(node, Or):
        return _OR
    if isinstance(node, And):
        return _AND
    if isinstance(node, In):
        return _IN
    if isinstance(node, BinaryOp):
        return node.operator.level
    if isinstance(node, Not):
        return _NOT
    return _PRIMARY
