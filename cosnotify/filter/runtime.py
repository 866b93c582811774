"""Run-time operands and operators of compiled EXTENDED_TCL constraints (§2.4.3).

Strategy: compiled constraints (``compiler``) work on plain Python values, so
the common cases need no wrapping at all:

- every CORBA integer kind (and ``octet``) is an exact Python ``int``; 64-bit
  values never pass through ``float`` unless the other operand is floating;
- ``float`` and ``double`` are Python ``float``; ``fixed`` (omniORB's
  ``CORBA.fixed``) becomes an exact ``Decimal``;
- ``boolean`` is ``bool``; ``char``, ``wchar``, ``string`` and ``wstring`` are
  ``str`` (a one-character string is also numeric, §2.4.3);
- an enum value (omniORB's ``EnumItem``) becomes an :class:`EnumVal` (label,
  ordinal and the enumerators of its TypeCode, so it can be compared with a
  bare label, §2.4.7);
- a bare identifier that resolves to nothing becomes a :class:`Label`, usable
  only against an enum.

Values are typed by omniORB *descriptors* (``any._t._d``, read with
:mod:`cosnotify.corba.descriptors`), never by ``CORBA.TypeCode`` methods, so
TypeCodes that came over the wire work whatever the 4.3.3 wheel's defects,
and so do values of types this process has no stubs for (``UnknownStruct``,
``UnknownUnion``, ``EnumItem``): they are read by attribute like generated
ones.

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

import decimal
from decimal import Decimal
from typing import Any, Final, TypeAlias

from omniORB import CORBA, tcInternal

from cosnotify.corba import descriptors as D
from cosnotify.corba.descriptors import Descriptor

__all__ = [
    "DIRECT_KINDS",
    "EnumVal",
    "Fail",
    "Label",
    "any_operand",
    "as_bool",
    "base_kind",
    "operand",
    "strip",
]

CorbaAny: Final = CORBA.Any
#: The class of omniORB's fixed-point values (``CORBA.fixed`` is a factory function).
FIXED_TYPE: Final[type] = type(CORBA.fixed(0))

INTEGER_KINDS: Final = frozenset({D.SHORT, D.LONG, D.USHORT, D.ULONG, D.LONGLONG,
                                  D.ULONGLONG, D.OCTET})
#: ``long double`` stays here though omniORBpy cannot carry one: an Any built in
#: process with ``CORBA.TC_longdouble`` still holds a Python float.
FLOAT_KINDS: Final = frozenset({D.FLOAT, D.DOUBLE, D.LONGDOUBLE})
STRING_KINDS: Final = frozenset({D.CHAR, D.WCHAR, D.STRING, D.WSTRING})
#: Descriptors (bare ints: the basic kinds) whose Python value is itself the operand.
DIRECT_KINDS: Final = INTEGER_KINDS | FLOAT_KINDS | frozenset({D.BOOLEAN, D.CHAR, D.WCHAR})
#: Kinds of the tuple descriptors ``(kind, bound)`` whose value is the operand.
TEXT_KINDS: Final = frozenset({D.STRING, D.WSTRING})
#: The TypeCode objects of those kinds. omniORB keeps one TypeCode per basic kind
#: (and unbounded string and wstring), in process and for Anys from the wire
#: (``tcInternal.createTypeCode`` looks them up), and TypeCodes hash by identity:
#: a property's value is recognised without reading its descriptor.
DIRECT_TYPECODES: Final = frozenset(
    tc for key, tc in tcInternal.basicTypeCodes.items()
    if key in DIRECT_KINDS or (type(key) is tuple and key[0] in TEXT_KINDS))
_INDIRECTIONS: Final = frozenset({D.INDIRECT, D.WIRE_INDIRECT})
_FOLLOW: Final = _INDIRECTIONS | {D.ALIAS}


class Fail(Exception):
    """An operand or resolution error: the match returns FALSE at once (§2.4.3)."""


class EnumVal:
    """An enum operand: its label, ordinal and the enumerators of its enum type.

    ``items`` is the enum descriptor's tuple of ``EnumItem``; the labels are
    read from it only when needed (comparisons with a bare label or with
    another enum's value).
    """

    __slots__ = ("items", "label", "ordinal")

    def __init__(self, label: str, ordinal: int, items: tuple[Any, ...]) -> None:
        self.label = label
        self.ordinal = ordinal
        self.items = items

    @property
    def labels(self) -> tuple[str, ...]:
        """The enumerator names of the value's type, in ordinal order."""
        return tuple(item._n for item in self.items)

    def ordinal_of(self, label: str) -> int:
        """The ordinal of enumerator ``label`` of the value's type; Fail if it has none."""
        for item in self.items:
            if item._n == label:
                return int(item._v)
        raise Fail

    def same_type(self, other: EnumVal) -> bool:
        """Do both values belong to one enum type (the same enumerators)?"""
        return self.items is other.items or self.labels == other.labels

    def __repr__(self) -> str:
        return f"EnumVal({self.label!r}, {self.ordinal})"


class Label:
    """A bare identifier that resolved to nothing: an enum label, or an error (§2.4.7)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Label({self.name!r})"


# -- values and descriptors ------------------------------------------------------------------


def base_kind(d: Descriptor) -> int:
    """The kind of ``d`` with indirections and aliases followed."""
    if type(d) is int:
        return d
    k: int = d[0]
    if k in _FOLLOW:
        return D.kind(D.unalias(d))
    return k


#: The most Any layers :func:`strip` passes over; a deeper value has no operand.
MAX_NESTED_ANYS: Final = 64


def strip(value: Any, d: Descriptor) -> tuple[Any, Descriptor, Descriptor] | None:
    """Pass over unnamed Any layers (§2.4.2): ``(value, declared, base)`` descriptors.

    The declared descriptor keeps a typedef's name (for ``_type_id``); the base
    one has indirections and aliases followed. None when an Any-typed slot
    does not hold a ``CORBA.Any``, or when more than :data:`MAX_NESTED_ANYS`
    Anys are nested (an Any built in process may hold itself; such a value is
    no operand, never a hang).
    """
    anys = 0
    while True:
        if type(d) is int:
            if d != D.ANY:
                return value, d, d
            if type(value) is not CorbaAny or anys >= MAX_NESTED_ANYS:
                return None
            anys += 1
            value, d = value._v, value._t._d
            continue
        k = d[0]
        if k in _INDIRECTIONS:
            d = D.resolve(d)
            continue
        if k != D.ALIAS:
            return value, d, d
        base = D.unalias(d)
        if base != D.ANY:
            return value, d, base
        d = base


def fixed_operand(value: Any) -> Decimal:
    """A ``fixed`` value as an exact Decimal (omniORB's ``CORBA.fixed`` prints exactly)."""
    t = type(value)
    if t is FIXED_TYPE:
        return Decimal(str(value))
    if t is Decimal:
        return value  # type: ignore[no-any-return]
    if t is int:
        return Decimal(value)
    raise Fail


def _base_operand(value: Any, base: Descriptor) -> Any:
    """The operand of a value whose descriptor ``base`` is stripped (no Any, alias)."""
    if type(base) is int:
        if base in DIRECT_KINDS:
            return value
        raise Fail
    k = base[0]
    if k in TEXT_KINDS:
        return value
    if k == D.ENUM:
        # The label is the descriptor's: what the TypeCode (from stubs or from
        # the wire) calls the enumerator at the value's ordinal.
        items = base[3]
        try:
            ordinal = value._v
            return EnumVal(items[ordinal]._n, ordinal, items)
        except (AttributeError, IndexError, TypeError):
            raise Fail from None
    if k == D.FIXED:
        return fixed_operand(value)
    raise Fail


def operand(value: Any, d: Descriptor) -> Any:
    """The operand for a value of descriptor ``d``; Fail if it is not a simple value."""
    if type(d) is int:
        if d in DIRECT_KINDS:
            return value
    elif d[0] in TEXT_KINDS:
        return value
    found = strip(value, d)
    if found is None:
        raise Fail
    return _base_operand(found[0], found[2])


def any_operand(value: Any) -> Any:
    """The operand held by a ``CORBA.Any`` (the common property-value case)."""
    if type(value) is not CorbaAny:
        raise Fail
    if value._t in DIRECT_TYPECODES:
        return value._v
    return operand(value._v, value._t._d)


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


#: ``fixed`` arithmetic never uses the thread's decimal context (another library's
#: ``decimal.getcontext()`` changes must not change filter results; Python's default
#: rounds to 28 digits where CORBA ``fixed`` has up to 31). Sums, differences and
#: products are exact: unlimited precision, which is safe because their exact result
#: is finite and only as long as the operands need (a ``fixed<31>`` product has 62
#: digits) (docs/filters.md decision 24).
_EXACT: Final = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX,
                                Emin=decimal.MIN_EMIN, rounding=decimal.ROUND_HALF_EVEN)
#: Quotients may not terminate (1/3), so they get a finite precision: 128 significant
#: digits, enough for every terminating quotient of two ``fixed<31>`` values to be
#: exact (the longest, (10**31 - 1) / 2**102, has 103 digits); a longer one is rounded
#: half-even at the 128th digit.
DIVISION_DIGITS: Final = 128
_QUOTIENT: Final = decimal.Context(prec=DIVISION_DIGITS, Emax=decimal.MAX_EMAX,
                                   Emin=decimal.MIN_EMIN, rounding=decimal.ROUND_HALF_EVEN)


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
    if type(a) is Decimal:
        return _EXACT.add(a, b)
    return a + b


def sub(a: Any, b: Any) -> Any:
    if type(a) is int and type(b) is int:
        return a - b
    a, b = _numbers(a, b)
    if type(a) is Decimal:
        return _EXACT.subtract(a, b)
    return a - b


def mul(a: Any, b: Any) -> Any:
    if type(a) is int and type(b) is int:
        return a * b
    a, b = _numbers(a, b)
    if type(a) is Decimal:
        return _EXACT.multiply(a, b)
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
    if type(a) is Decimal:
        return _QUOTIENT.divide(a, b)
    return a / b


# -- comparisons ---------------------------------------------------------------------------


def _enum_pair(a: Any, b: Any) -> tuple[int, int]:
    """Ordinals for comparing an enum with an enum, a label or an integer (§2.4.6-2.4.7)."""
    if type(a) is not EnumVal:
        b_ord, a_ord = _enum_pair(b, a)
        return a_ord, b_ord
    tb = type(b)
    if tb is EnumVal:
        if not a.same_type(b):
            raise Fail
        return a.ordinal, b.ordinal
    if tb is Label:
        return a.ordinal, a.ordinal_of(b.name)
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


#: A located sequence or array: its value, element descriptor and element base kind.
SequenceView: TypeAlias = tuple[Any, Descriptor, int]
_SEQUENCES: Final = frozenset({D.SEQUENCE, D.ARRAY})


def sequence_view(found: tuple[Any, Descriptor] | None) -> SequenceView:
    """The right operand of ``in``: a located sequence or array, with its element
    descriptor and (unaliased) element kind; Fail for anything else (§2.4.3)."""
    if found is None:
        raise Fail
    seq, base = found
    if type(base) is not tuple or base[0] not in _SEQUENCES:
        located = strip(seq, base)
        if located is None:
            raise Fail
        seq, _, base = located
        if type(base) is not tuple or base[0] not in _SEQUENCES:
            raise Fail
    content = base[1]
    if type(content) is int:
        return seq, content, content
    kind = content[0]
    if kind in _FOLLOW:
        kind = base_kind(content)
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
