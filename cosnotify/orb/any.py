"""``CORBA.Any``: a value paired with its TypeCode.

Strategy: an Any is an immutable pair. It does not validate on construction
(that would cost every event); :func:`cosnotify.orb.validate.check` does so on
demand and the CDR encoder checks as it marshals. Equality uses TypeCode
equivalence (aliases ignored) and value equality, which is what filter and
QoS code need when comparing property values.
"""

from __future__ import annotations

from typing import Any as _PyAny

from cosnotify.orb.typecode import TypeCode

__all__ = ["Any"]


class Any:
    """``CORBA.Any(typecode, value)``."""

    __slots__ = ("_t", "_v")

    def __init__(self, typecode: TypeCode, value: _PyAny) -> None:
        if not isinstance(typecode, TypeCode):
            from cosnotify.orb.exceptions import BAD_PARAM, COMPLETED_NO

            raise BAD_PARAM(0, COMPLETED_NO, f"CORBA.Any needs a TypeCode, got {typecode!r}")
        self._t = typecode
        self._v = value

    def typecode(self) -> TypeCode:
        return self._t

    def value(self) -> _PyAny:
        return self._v

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Any):
            return NotImplemented
        if self._t is not other._t and not self._t.equivalent(other._t):
            return False
        return bool(self._v == other._v)

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"CORBA.Any({self._t!r}, {self._v!r})"

    def __reduce__(self) -> _PyAny:
        return (Any, (self._t, self._v))
