"""Run-time operands and operators of compiled EXTENDED_TCL constraints (§2.4.3).

Strategy: compiled constraints (``compiler``) work on plain Python values, so
the common cases need no wrapping at all:

- every CORBA integer kind (and ``octet``) is an exact Python ``int``; 64-bit
  values never pass through ``float`` unless the other operand is floating;
- ``float``, ``double`` and ``long double`` are Python ``float``; ``fixed`` is
  a ``Decimal``;
- ``boolean`` is ``bool``; ``char``, ``wchar``, ``string`` and ``wstring`` are
  ``str`` (a one-character string is also numeric, §2.4.3);
- an enum value becomes an :class:`EnumVal` (label, ordinal and the labels of
  its type, so it can be compared with a bare label, §2.4.7);
- a bare identifier that resolves to nothing becomes a :class:`Label`, usable
  only against an enum.

Any other value (struct, union, sequence, object reference ...) is not an
operand. Every rule violation (wrong operand types, division by zero, a missing
component) raises :class:`Fail`; the compiled constraint catches it and the
whole match is FALSE (§2.4.3). Helpers here never catch Fail themselves.

Operators follow §2.4.3 with one deliberate simplification, recorded in
docs/filters.md: integer arithmetic is exact (Python ints do not overflow), so
the "cast back to the most capacious operand type" rule only decides between
integer and floating arithmetic, and integer division truncates toward zero
as in C.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Final, TypeAlias

from cosnotify.orb.any import Any as CorbaAny
from cosnotify.orb.typecode import (
    K_ALIAS,
    K_ANY,
    K_BOOLEAN,
    K_CHAR,
    K_DOUBLE,
    K_ENUM,
    K_FIXED,
    K_FLOAT,
    K_LONG,
    K_LONGDOUBLE,
    K_LONGLONG,
    K_OCTET,
    K_SHORT,
    K_STRING,
    K_ULONG,
    K_ULONGLONG,
    K_USHORT,
    K_WCHAR,
    K_WSTRING,
    EnumTC,
    RecursiveTC,
    SequenceTC,
    TypeCode,
)

__all__ = [
    "DIRECT_KINDS",
    "EnumVal",
    "Fail",
    "Label",
    "any_operand",
    "as_bool",
    "operand",
    "strip",
]

#: TypeCode kinds whose Python value is itself the operand (no conversion).
DIRECT_KINDS: Final = frozenset({
    K_SHORT, K_LONG, K_USHORT, K_ULONG, K_LONGLONG, K_ULONGLONG, K_OCTET,
    K_FLOAT, K_DOUBLE, K_LONGDOUBLE, K_BOOLEAN, K_CHAR, K_WCHAR, K_STRING, K_WSTRING,
    K_FIXED,
})
INTEGER_KINDS: Final = frozenset({K_SHORT, K_LONG, K_USHORT, K_ULONG, K_LONGLONG,
                                  K_ULONGLONG, K_OCTET})
FLOAT_KINDS: Final = frozenset({K_FLOAT, K_DOUBLE, K_LONGDOUBLE})
STRING_KINDS: Final = frozenset({K_CHAR, K_WCHAR, K_STRING, K_WSTRING})


class Fail(Exception):
    """An operand or resolution error: the match returns FALSE at once (§2.4.3)."""


class EnumVal:
    """An enum operand: its label, ordinal and the labels of its enum type."""

    __slots__ = ("label", "labels", "ordinal")

    def __init__(self, label: str, ordinal: int, labels: tuple[str, ...]) -> None:
        self.label = label
        self.ordinal = ordinal
        self.labels = labels

    def __repr__(self) -> str:
        return f"EnumVal({self.label!r}, {self.ordinal})"


class Label:
    """A bare identifier that resolved to nothing: an enum label, or an error (§2.4.7)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Label({self.name!r})"


# -- values and TypeCodes ----------------------------------------------------------------


def unalias(tc: TypeCode) -> TypeCode:
    """``tc`` without aliases or recursive placeholders."""
    while True:
        if type(tc) is RecursiveTC:
            tc = tc._bound()
        if tc._k != K_ALIAS:
            return tc
        tc = tc.content_type()


def strip(value: Any, tc: TypeCode) -> tuple[Any, TypeCode, TypeCode] | None:
    """Pass over unnamed Any layers (§2.4.2): ``(value, declared tc, unaliased tc)``.

    The declared TypeCode keeps a typedef's name (for ``_type_id``); None when
    an Any-typed slot does not hold a ``CORBA.Any``.
    """
    while True:
        if type(tc) is RecursiveTC:
            tc = tc._bound()
        k = tc._k
        if k == K_ANY:
            if type(value) is not CorbaAny:
                return None
            value, tc = value._v, value._t
            continue
        if k != K_ALIAS:
            return value, tc, tc
        base = unalias(tc)
        if base._k != K_ANY:
            return value, tc, base
        tc = base


def operand(value: Any, tc: TypeCode) -> Any:
    """The operand for a value of TypeCode ``tc``; Fail if it is not a simple value."""
    if tc._k in DIRECT_KINDS:
        return value
    found = strip(value, tc)
    if found is None:
        raise Fail
    value, _, base = found
    k = base._k
    if k in DIRECT_KINDS:
        return value
    if k == K_ENUM and type(base) is EnumTC:
        try:
            return EnumVal(value._n, value._v, base._names)
        except AttributeError:
            raise Fail from None
    raise Fail


def any_operand(value: Any) -> Any:
    """The operand held by a ``CORBA.Any`` (the common property-value case)."""
    if type(value) is not CorbaAny:
        raise Fail
    tc = value._t
    if tc._k in DIRECT_KINDS:
        return value._v
    return operand(value._v, tc)


def as_bool(value: Any) -> bool:
    """A boolean operand; a number may not stand in for a boolean (§2.4.3)."""
    if value is True or value is False:
        return value is True
    raise Fail


# -- numbers ------------------------------------------------------------------------------


def number(value: Any) -> Any:
    """A numeric operand: int, float or Decimal. Booleans are 0/1 and one-character
    strings are chars (§2.4.3); anything else fails."""
    t = type(value)
    if t is int or t is float or t is Decimal:
        return value
    if t is bool:
        return int(value)
    if t is str and len(value) == 1:
        return ord(value)
    raise Fail


def _numbers(a: Any, b: Any) -> tuple[Any, Any]:
    """Both operands as numbers of one kind: float if either is floating (§2.4.3)."""
    a, b = number(a), number(b)
    ta, tb = type(a), type(b)
    if ta is tb:
        return a, b
    if ta is float or tb is float:
        return float(a), float(b)
    if ta is Decimal or tb is Decimal:
        return Decimal(a), Decimal(b)
    return a, b


def add(a: Any, b: Any) -> Any:
    if type(a) is int and type(b) is int:
        return a + b
    a, b = _numbers(a, b)
    return a + b


def sub(a: Any, b: Any) -> Any:
    if type(a) is int and type(b) is int:
        return a - b
    a, b = _numbers(a, b)
    return a - b


def mul(a: Any, b: Any) -> Any:
    if type(a) is int and type(b) is int:
        return a * b
    a, b = _numbers(a, b)
    return a * b


def div(a: Any, b: Any) -> Any:
    """``a / b``: integer division truncates toward zero as in C (§2.4.1 example);
    a zero denominator is an error (§2.4.3)."""
    a, b = _numbers(a, b)
    if not b:
        raise Fail
    if type(a) is int:
        q = a // b
        if q < 0 and q * b != a:
            q += 1
        return q
    return a / b


# -- comparisons ---------------------------------------------------------------------------


def _enum_pair(a: Any, b: Any) -> tuple[int, int]:
    """Ordinals for comparing an enum with an enum, a label or an integer (§2.4.6-2.4.7)."""
    if type(a) is not EnumVal:
        b_ord, a_ord = _enum_pair(b, a)
        return a_ord, b_ord
    tb = type(b)
    if tb is EnumVal:
        if b.labels != a.labels:
            raise Fail
        return a.ordinal, b.ordinal
    if tb is Label:
        try:
            return a.ordinal, a.labels.index(b.name)
        except ValueError:
            raise Fail from None
    if tb is int:
        return a.ordinal, b
    raise Fail


def comparable(a: Any, b: Any) -> tuple[Any, Any]:
    """Both operands in a form Python compares as §2.4.3 requires.

    Strings compare lexicographically, booleans FALSE < TRUE, numbers after
    the arithmetic conversions (a double operand makes both double); an enum
    compares with its own type, a bare label or an ordinal. Anything else fails.
    """
    ta, tb = type(a), type(b)
    if ta is tb and (ta is str or ta is bool or ta is int or ta is float):
        return a, b
    if ta is EnumVal or tb is EnumVal:
        return _enum_pair(a, b)
    if ta is Label or tb is Label:
        raise Fail
    return _numbers(a, b)


def eq(a: Any, b: Any) -> bool:
    a, b = comparable(a, b)
    return bool(a == b)


def ne(a: Any, b: Any) -> bool:
    a, b = comparable(a, b)
    return bool(a != b)


def lt(a: Any, b: Any) -> bool:
    a, b = comparable(a, b)
    return bool(a < b)


def le(a: Any, b: Any) -> bool:
    a, b = comparable(a, b)
    return bool(a <= b)


def gt(a: Any, b: Any) -> bool:
    a, b = comparable(a, b)
    return bool(a > b)


def ge(a: Any, b: Any) -> bool:
    a, b = comparable(a, b)
    return bool(a >= b)


def twiddle(a: Any, b: Any) -> bool:
    """``a ~ b``: string ``a`` is contained in string ``b`` (§2.4.1, §2.4.3)."""
    if type(a) is str and type(b) is str:
        return a in b
    raise Fail


SequenceView: TypeAlias = tuple[Any, TypeCode, int]


def sequence_view(found: tuple[Any, TypeCode] | None) -> SequenceView:
    """The right operand of ``in``: a located sequence or array, with its element
    TypeCode and (unaliased) element kind; Fail for anything else (§2.4.3)."""
    if found is None:
        raise Fail
    seq, base = found
    if type(base) is not SequenceTC:
        located = strip(seq, base)
        if located is None:
            raise Fail
        seq, _, base = located
        if type(base) is not SequenceTC:
            raise Fail
    content = base._content
    kind = content._k
    if kind == K_ALIAS or type(content) is RecursiveTC:
        kind = unalias(content)._k
    return seq, content, kind


def contains(element: Any, view: SequenceView) -> bool:
    """``element in <sequence>`` (§2.4.2): TRUE when an element equals ``element``.

    ``element`` must be a simple operand; an element of the sequence that
    cannot be compared with it is an error (§2.4.3).
    """
    seq, content, kind = view
    te = type(element)
    if te is str:
        if kind in STRING_KINDS and type(seq) is not str:
            return element in seq
    elif te is int:
        if kind in INTEGER_KINDS:
            if isinstance(seq, (bytes, bytearray)):
                # A sequence<octet>: ``300 in b"..."`` would raise, not be FALSE.
                return 0 <= element <= 0xFF and element in seq
            return element in seq
    elif te not in _ELEMENT_TYPES:
        raise Fail
    for item in seq:
        if eq(element, operand(item, content)):
            return True
    return False


#: The operand types ``in`` accepts on its left (§2.4.3: a simple type).
_ELEMENT_TYPES: Final = frozenset({str, int, float, bool, Decimal, EnumVal, Label})
