"""PLY plumbing shared by the grammars that PLY parses (EXTENDED_TCL, ELVIN4).

Strategy: PLY's tables are built once per grammar, in memory, with an error
log that raises (``errors.RaisingLogger``), so a grammar conflict or a lexer
warning fails loudly at import rather than parsing oddly later (style.md,
"Build the parser once"). A built PLY parser keeps per-parse state, so
:class:`SerialParser` serialises its use with a lock; the grammar object
sees the text being parsed as ``_text`` (for error excerpts) only during the
parse.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable
from typing import Any

from ply import lex, yacc

from cosnotify.filter.errors import RaisingLogger

__all__ = ["SerialParser", "build_tables", "master_lexer"]


def build_tables(grammar: Any, start: str, *, debug: bool = False, errorlog: Any = None) -> Any:
    """Build the LR tables of ``grammar`` (a PLY grammar object) into ``grammar.lr``.

    With ``debug=True`` PLY also reports conflicts to ``errorlog`` (the grammar
    listing goes to a null log). ``errorlog`` defaults to ``RaisingLogger``.
    """
    grammar.lr = yacc.yacc(
        module=grammar, start=start, debug=debug, write_tables=False,
        debuglog=yacc.NullLogger() if debug else None,
        errorlog=errorlog if errorlog is not None else RaisingLogger())
    return grammar


@functools.cache
def master_lexer(lexer_class: type) -> Any:
    """The PLY lexer of ``lexer_class``, built once; callers clone it per text."""
    return lex.lex(module=lexer_class(), reflags=int(re.DOTALL), optimize=False,
                   errorlog=RaisingLogger())


class SerialParser:
    """A built grammar plus the lock that serialises its use."""

    def __init__(self, grammar: Any, tokens: Callable[[str], Any]) -> None:
        self.grammar = grammar
        self.tokens = tokens
        self.lock = threading.Lock()

    def parse(self, text: str) -> Any:
        """The parse of ``text``: whatever the grammar's start rule builds."""
        with self.lock:
            self.grammar._text = text
            try:
                return self.grammar.lr.parse(lexer=self.tokens(text), tracking=True)
            finally:
                self.grammar._text = ""
