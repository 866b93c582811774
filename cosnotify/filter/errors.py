"""Errors raised by the EXTENDED_TCL lexer and parser.

Strategy: every malformed constraint raises exactly one exception type,
``ConstraintSyntaxError``. It carries the 0-based ``position`` of the fault in
the constraint text, the 1-based ``line`` and ``column`` derived from it, and an
``excerpt``: the offending source line with a caret under the column. The filter
servant wraps it into ``CosNotifyFilter::InvalidConstraint`` at the one boundary
where constraints enter (the h11 rule: internal code raises a local error, the
boundary translates it). Any other exception out of ``parse_constraint`` is a bug.

``GrammarBuildError`` is different: it means the grammar itself is broken (a PLY
warning or a conflict while building tables), which no user input can cause.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CapturingLogger", "ConstraintSyntaxError", "GrammarBuildError", "RaisingLogger"]

# Lines longer than this are cut down to a window around the caret.
_EXCERPT_WIDTH = 100


class ConstraintSyntaxError(ValueError):
    """A constraint string is not valid EXTENDED_TCL (Notification §2.4).

    Attributes:
        message: what is wrong, without the location.
        text: the whole constraint.
        position: 0-based offset of the fault in ``text`` (``len(text)`` for
            an unexpected end).
        line: 1-based line of ``position``.
        column: 1-based column of ``position`` within its line.
        excerpt: the source line and a caret line pointing at ``column``.
    """

    message: str
    text: str
    position: int
    line: int
    column: int
    excerpt: str

    def __init__(self, message: str, text: str, position: int) -> None:
        position = max(0, min(position, len(text)))
        line_start = text.rfind("\n", 0, position) + 1
        line_end = text.find("\n", position)
        if line_end < 0:
            line_end = len(text)
        self.message = message
        self.text = text
        self.position = position
        self.line = text.count("\n", 0, position) + 1
        self.column = position - line_start + 1
        self.excerpt = _excerpt(text[line_start:line_end], position - line_start)
        super().__init__(str(self))

    def __str__(self) -> str:
        return (f"{self.message} at line {self.line}, column {self.column} "
                f"(offset {self.position})\n{self.excerpt}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.text, self.position))


def _excerpt(line: str, offset: int) -> str:
    """The source line with a caret under ``offset`` (tabs kept so it lines up)."""
    if len(line) > _EXCERPT_WIDTH:
        start = max(0, min(offset - _EXCERPT_WIDTH // 2, len(line) - _EXCERPT_WIDTH))
        prefix = "..." if start > 0 else ""
        suffix = "..." if start + _EXCERPT_WIDTH < len(line) else ""
        line = prefix + line[start:start + _EXCERPT_WIDTH] + suffix
        offset = offset - start + len(prefix)
    shown = "".join(ch if ch.isprintable() or ch == "\t" else "?" for ch in line)
    pad = "".join("\t" if ch == "\t" else " " for ch in shown[:offset])
    return f"{shown.rstrip(chr(13))}\n{pad}^"


class GrammarBuildError(RuntimeError):
    """PLY reported a problem while building the lexer or parser tables."""


class RaisingLogger:
    """A PLY error log that turns every warning or error into GrammarBuildError.

    PLY calls ``debug``/``info`` for progress chatter; those are dropped.
    """

    def warning(self, msg: str, *args: Any, **kwargs: Any) -> None:
        raise GrammarBuildError("PLY warning: " + (msg % args if args else msg))

    def error(self, msg: str, *args: Any, **kwargs: Any) -> None:
        raise GrammarBuildError("PLY error: " + (msg % args if args else msg))

    critical = error

    def debug(self, msg: str, *args: Any, **kwargs: Any) -> None:
        return None

    info = debug


class CapturingLogger:
    """A PLY error log that records warnings and errors (used by the grammar tests)."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def warning(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self.messages.append("warning: " + (msg % args if args else msg))

    def error(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self.messages.append("error: " + (msg % args if args else msg))

    critical = error

    def debug(self, msg: str, *args: Any, **kwargs: Any) -> None:
        return None

    info = debug
