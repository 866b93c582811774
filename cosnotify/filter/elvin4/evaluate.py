"""Run-time operators of compiled ELVIN4 expressions (Elvin 4 client protocol §6.1-6.3).

Strategy: the generated code (``compiler``) inlines the common tests and calls
these helpers for the rest. Every helper takes Elvin values (``values``) and
returns a value, or None for bottom; none raises for any input.

- Numeric promotion (§6.2): "real64 > int64 > int32"; the result of an
  operator has the promoted type "even if the result would fit in a smaller
  type".
- §6.3.1: an operand of the wrong type, or integer division by zero, is
  bottom; floating-point errors give the IEEE 754 value (Python raises on a
  zero divisor, so ``div`` maps that case itself). Integer overflow, which
  §6.3.1 item 2 leaves open ("or do we define it to be wrapped to 32 or 64
  bits?"), wraps to the promoted type's width, two's complement, as Java does.
- Shifts (§6.1.12 FIXME "Need to pin down 5- and 6-bit shifts ... as Java
  does"): the count is masked to 5 bits for int32 and 6 for int64. ``/``
  truncates toward zero and ``%`` takes the dividend's sign (C99, Java).
- Equality (§6.1.11): "Two real64 values are defined to be equal if their
  sign, mantissa and exponent are all equal", so 0.0 and -0.0 differ and a
  NaN equals a NaN with the same bits; strings compare by code points. A
  string against a number, or an opaque value anywhere, is bottom.
- ``equals(a, b, ...)`` (§6.1.7: "Returns true if the type and value of the
  first parameter match those of any of the subsequent parameters") is its
  own predicate, not ``a == b || ...``: no promotion, so ``equals(x, 2.0)``
  is false for an int32 2 and ``equals(x, "a")`` false for a number; reals
  compare bitwise. It is bottom only when the first argument has no value
  (missing, unmapped, or an undefined expression).
- Ordering of strings is bottom: "There are no predicates for string
  comparison" (§6.1.8).
"""

from __future__ import annotations

import math
import struct
import unicodedata
from typing import Any, Final

from cosnotify.filter.elvin4.values import Int64

__all__ = ["NUMBERS", "add", "bit_and", "bit_not", "bit_or", "bit_xor", "decompose",
           "decompose_compat", "div", "eq", "equals", "fold_case", "ge", "gt", "le", "lshift", "lt",
           "mod", "mul", "neg", "pos", "rshift", "size", "sub", "urshift"]

#: The Python types of Elvin's numeric values.
NUMBERS: Final = frozenset({int, Int64, float})
_PACK: Final = struct.Struct("<d").pack


def _wrap32(x: int) -> int:
    return ((x + 0x80000000) & 0xFFFFFFFF) - 0x80000000


def _wrap64(x: int) -> Int64:
    return Int64(((x + 0x8000000000000000) & 0xFFFFFFFFFFFFFFFF) - 0x8000000000000000)


def _promoted(a: Any, b: Any) -> type | None:
    """The promoted Python type of two numeric operands (§6.2), or None."""
    ta, tb = type(a), type(b)
    if ta not in NUMBERS or tb not in NUMBERS:
        return None
    if ta is float or tb is float:
        return float
    if ta is Int64 or tb is Int64:
        return Int64
    return int


def _integral(a: Any, b: Any) -> type | None:
    t = _promoted(a, b)
    return None if t is float else t


def _wrap(t: type, x: int) -> int:
    return _wrap32(x) if t is int else _wrap64(x)


def add(a: Any, b: Any) -> Any:
    t = _promoted(a, b)
    if t is None:
        return None
    return float(a) + float(b) if t is float else _wrap(t, a + b)


def sub(a: Any, b: Any) -> Any:
    t = _promoted(a, b)
    if t is None:
        return None
    return float(a) - float(b) if t is float else _wrap(t, a - b)


def mul(a: Any, b: Any) -> Any:
    t = _promoted(a, b)
    if t is None:
        return None
    return float(a) * float(b) if t is float else _wrap(t, a * b)


def div(a: Any, b: Any) -> Any:
    t = _promoted(a, b)
    if t is None:
        return None
    if t is float:
        x, y = float(a), float(b)
        if y == 0.0:  # §6.3.1 item 3: the IEEE 754 value, not an error
            if x == 0.0 or math.isnan(x):
                return math.nan
            return math.copysign(math.inf, x) * math.copysign(1.0, y)
        return x / y
    if b == 0:
        return None  # §6.3.1: "Integer division by zero" is bottom
    q = abs(a) // abs(b)
    return _wrap(t, q if (a < 0) == (b < 0) else -q)


def mod(a: Any, b: Any) -> Any:
    t = _integral(a, b)
    if t is None or b == 0:
        return None
    r = abs(a) % abs(b)
    return _wrap(t, -r if a < 0 else r)


def lshift(a: Any, b: Any) -> Any:
    t = _integral(a, b)
    if t is None:
        return None
    return _wrap(t, a << (b & (31 if t is int else 63)))


def rshift(a: Any, b: Any) -> Any:
    t = _integral(a, b)
    if t is None:
        return None
    return _wrap(t, a >> (b & (31 if t is int else 63)))


def urshift(a: Any, b: Any) -> Any:
    t = _integral(a, b)
    if t is None:
        return None
    if t is int:
        return _wrap32((a & 0xFFFFFFFF) >> (b & 31))
    return _wrap64((a & 0xFFFFFFFFFFFFFFFF) >> (b & 63))


def bit_and(a: Any, b: Any) -> Any:
    t = _integral(a, b)
    return None if t is None else _wrap(t, a & b)


def bit_or(a: Any, b: Any) -> Any:
    t = _integral(a, b)
    return None if t is None else _wrap(t, a | b)


def bit_xor(a: Any, b: Any) -> Any:
    t = _integral(a, b)
    return None if t is None else _wrap(t, a ^ b)


def bit_not(a: Any) -> Any:
    t = type(a)
    if t is int:
        return ~a
    if t is Int64:
        return Int64(~a)
    return None


def neg(a: Any) -> Any:
    t = type(a)
    if t is int:
        return _wrap32(-a)
    if t is Int64:
        return _wrap64(-a)
    if t is float:
        return -a
    return None


def pos(a: Any) -> Any:
    return a if type(a) in NUMBERS else None


# -- predicates: True, False or None (bottom) --------------------------------------------------


def _ordered(a: Any, b: Any) -> tuple[Any, Any] | None:
    t = _promoted(a, b)
    if t is None:
        return None
    if t is float:
        return float(a), float(b)
    return a, b


def lt(a: Any, b: Any) -> bool | None:
    pair = _ordered(a, b)
    return None if pair is None else pair[0] < pair[1]


def le(a: Any, b: Any) -> bool | None:
    pair = _ordered(a, b)
    return None if pair is None else pair[0] <= pair[1]


def gt(a: Any, b: Any) -> bool | None:
    pair = _ordered(a, b)
    return None if pair is None else pair[0] > pair[1]


def ge(a: Any, b: Any) -> bool | None:
    pair = _ordered(a, b)
    return None if pair is None else pair[0] >= pair[1]


def eq(a: Any, b: Any) -> bool | None:
    """``a == b`` (§6.1.7, §6.1.11); see the module docstring."""
    ta, tb = type(a), type(b)
    if ta is str and tb is str:
        return bool(a == b)
    t = _promoted(a, b)
    if t is None:
        return None
    if t is float:
        return _PACK(float(a)) == _PACK(float(b))
    return bool(a == b)


def equals(a: Any, *others: Any) -> bool | None:
    """``equals(a, b, ...)`` (§6.1.7); see the module docstring."""
    ta = type(a)
    if ta not in _VALUE_TYPES:
        return None
    for b in others:
        if type(b) is ta and (_PACK(a) == _PACK(b) if ta is float else a == b):
            return True
    return False


_VALUE_TYPES: Final = frozenset({int, Int64, float, str, bytes})


# -- string functions (§6.1.9, §6.1.10) ---------------------------------------------------------


def size(a: Any) -> Any:
    """Bytes of a string (UTF-8) or opaque value (§6.1.9), as an int32."""
    if type(a) is bytes:
        return len(a)
    if type(a) is str:
        return len(a.encode("utf-8", "surrogatepass"))
    return None


def fold_case(a: Any) -> Any:
    """Unicode case folding (§6.1.10.2): ``str.casefold``."""
    return a.casefold() if type(a) is str else None


def decompose(a: Any) -> Any:
    """Canonical decomposition, NFD (§6.1.10.1)."""
    return unicodedata.normalize("NFD", a) if type(a) is str else None


def decompose_compat(a: Any) -> Any:
    """Compatibility decomposition, NFKD (§6.1.10.1)."""
    return unicodedata.normalize("NFKD", a) if type(a) is str else None
