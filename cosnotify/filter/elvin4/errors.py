"""Errors of the ELVIN4 subscription language (Elvin 4 client protocol §6.3).

Strategy: one exception type, :class:`SubscriptionError`, for every way a
subscription expression can be rejected at ``add_constraints``. It carries
the seed's error *name* (§6.3, codes from the Nack table of §7.4) and the
0-based *offset* the Nack's ``offset, int32`` argument reports; it extends the
EXTENDED_TCL ``ConstraintSyntaxError`` (a ``ValueError``), so it gets the line,
column and caret excerpt, and the filter turns it into ``InvalidConstraint``
with its ``str()`` (name and position included). Evaluation never raises:
run-time errors are bottom (§6.3.1).
"""

from __future__ import annotations

from typing import Any, Final

from cosnotify.filter.errors import ConstraintSyntaxError

__all__ = ["ERROR_CODES", "SubscriptionError"]

#: The subscription errors of §6.3 with their Nack codes (§7.4, error table).
ERROR_CODES: Final = {
    "QOS_LIMIT": 2005,
    "PARSE_ERROR": 2101,
    "INVALID_TOKEN": 2102,
    "UNTERM_STRING": 2103,
    "UNKNOWN_FUNC": 2104,
    "OVERFLOW": 2105,
    "TYPE_MISMATCH": 2106,
    "TOO_FEW_ARGS": 2107,
    "TOO_MANY_ARGS": 2108,
    "INVALID_REGEXP": 2109,
    "EXP_IS_TRIVIAL": 2110,
    "REGEXP_TOO_COMPLEX": 2111,
    "NESTING_TOO_DEEP": 2112,
}


class SubscriptionError(ConstraintSyntaxError):
    """An ELVIN4 subscription expression is invalid (§6.3).

    Attributes (besides those of ``ConstraintSyntaxError``):
        name: the seed's error name, e.g. ``"OVERFLOW"`` (a key of ERROR_CODES).
        code: its Nack error code (§7.4), e.g. 2105.
        offset: the same as ``position``: 0-based offset of the fault.
    """

    name: str
    code: int

    def __init__(self, name: str, message: str, text: str, position: int) -> None:
        if name not in ERROR_CODES:
            raise AssertionError(f"unknown Elvin error name {name!r}")
        self.name = name
        self.code = ERROR_CODES[name]
        super().__init__(message, text, position)

    @property
    def offset(self) -> int:
        """The Nack's ``offset`` argument (§7.4): the 0-based position."""
        return self.position

    def __str__(self) -> str:
        return f"{self.name}: {super().__str__()}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.name, self.message, self.text, self.position))
