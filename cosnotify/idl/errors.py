"""Errors and source locations of the IDL compiler.

Strategy: every bad input, whatever stage finds it (preprocessor, lexer,
parser, semantic analysis, code generation), raises the one documented
exception `IDLError`. It carries the file, line and column of the offending
text beside the message, and (once the driver fills it in) a caret excerpt of
the source line. Anything else escaping the compiler is a bug.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class Location:
    """A position in an IDL source file (line and column are 1-based)."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class IDLError(ValueError):
    """Bad IDL: the single error type the compiler raises for any bad input.

    ``str(err)`` is ``file:line:column: message``, followed by the source line
    and a caret under the column when the excerpt is known.
    """

    def __init__(
        self, file: str, line: int, column: int, message: str, excerpt: str | None = None
    ) -> None:
        super().__init__(file, line, column, message)
        self.file = file
        self.line = line
        self.column = column
        self.message = message
        self.excerpt = excerpt

    @classmethod
    def at(cls, loc: Location, message: str) -> IDLError:
        """Build an error located at ``loc``."""
        return cls(loc.file, loc.line, loc.column, message)

    @property
    def location(self) -> Location:
        """The error's position as a `Location`."""
        return Location(self.file, self.line, self.column)

    def with_source(self, source_line: str | None) -> IDLError:
        """Attach a caret excerpt made from the text of the error's line."""
        if source_line is not None and self.excerpt is None:
            text = source_line.rstrip("\r\n").expandtabs(1)
            caret = " " * max(self.column - 1, 0) + "^"
            self.excerpt = f"    {text}\n    {caret}"
        return self

    def __str__(self) -> str:
        head = f"{self.file}:{self.line}:{self.column}: {self.message}"
        return f"{head}\n{self.excerpt}" if self.excerpt else head

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.file, self.line, self.column, self.message, self.excerpt))
