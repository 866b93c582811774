"""The IDL preprocessor: includes, macros, conditionals and pragmas.

Strategy: instead of producing text for a separate lexer (as cpp does), the
preprocessor drives the lexer itself and produces the token stream the parser
reads. Each file is read, its comments are blanked out (keeping every other
character where it was, so columns stay exact), and its lines are walked:

* directive lines are handled here;
* runs of ordinary lines in active regions are lexed with `IDLLexer`, whose
  tokens carry their own file:line:column, and identifiers naming an
  object-like macro are replaced by the macro's tokens (located at the use);
* ``#include`` recurses into the included file in place.

Pragmas do not become tokens. They become `Event`s stamped with the index of
the next token in the stream; the semantic pass replays them in token order
as it walks the tree, which is how it knows the prefix in effect at each
definition (CORBA 2.6 section 10.7.5). Entering and leaving an included file
are events too, because an included file starts with an empty prefix and the
includer's prefix comes back when it ends.

Include guards are honoured through ``#ifndef``/``#define``; a file included
twice without a guard is read twice (and its definitions then collide).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs
import ply.lex

from cosnotify.idl.errors import IDLError, Location
from cosnotify.idl.ifexpr import evaluate
from cosnotify.idl.lexer import IDLLexer

MAX_INCLUDE_DEPTH = 64


@attrs.frozen
class PragmaPrefix:
    """``#pragma prefix "x"``."""

    index: int
    loc: Location
    prefix: str


@attrs.frozen
class PragmaID:
    """``#pragma ID <scoped_name> "repository id"``."""

    index: int
    loc: Location
    name: tuple[str, ...]
    absolute: bool
    repo_id: str


@attrs.frozen
class PragmaVersion:
    """``#pragma version <scoped_name> <major>.<minor>``."""

    index: int
    loc: Location
    name: tuple[str, ...]
    absolute: bool
    version: str


@attrs.frozen
class FileEnter:
    """The tokens from ``index`` on come from the included ``file``."""

    index: int
    file: str


@attrs.frozen
class FileExit:
    """The tokens from ``index`` on come from the includer again."""

    index: int
    file: str


Event = PragmaPrefix | PragmaID | PragmaVersion | FileEnter | FileExit


@attrs.frozen
class Preprocessed:
    """The preprocessor's output: the token stream and the pragma/file events."""

    main_file: str
    tokens: tuple[Any, ...]
    events: tuple[Event, ...]
    sources: Mapping[str, tuple[str, ...]]

    def source_line(self, file: str, line: int) -> str | None:
        """The text of ``line`` of ``file``, for error excerpts."""
        lines = self.sources.get(file)
        if lines is None or not 1 <= line <= len(lines):
            return None
        return lines[line - 1]


@attrs.define
class _Macro:
    name: str
    text: str
    tokens: list[Any]


@attrs.define
class _Cond:
    """One level of #if nesting."""

    loc: Location
    outer_active: bool
    active: bool
    taken: bool
    seen_else: bool = False


_COMMENT_RE = re.compile(
    r"""//[^\n]*|/\*.*?\*/|(?P<open>/\*)|L?"(?:\\.|[^"\\\n])*"?|L?'(?:\\.|[^'\\\n])*'?""",
    re.DOTALL,
)
_DIRECTIVE_RE = re.compile(r"\s*#\s*([A-Za-z_]\w*)?(.*)\Z", re.DOTALL)
_IDENT_RE = re.compile(r"[A-Za-z_]\w*")
_SCOPED_RE = r"\s*(?P<abs>::)?\s*(?P<name>[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)"
_PRAGMA_ID_RE = re.compile(_SCOPED_RE + r'\s+"(?P<id>[^"]*)"\s*\Z')
_PRAGMA_VERSION_RE = re.compile(_SCOPED_RE + r"\s+(?P<major>\d+)\.(?P<minor>\d+)\s*\Z")
_PRAGMA_PREFIX_RE = re.compile(r'\s*"(?P<prefix>[^"]*)"\s*\Z')
_INCLUDE_RE = re.compile(r'\s*(?:"(?P<q>[^"]+)"|<(?P<a>[^>]+)>)\s*\Z')
_DEFINE_RE = re.compile(r"\s*(?P<name>[A-Za-z_]\w*)(?P<paren>\()?(?P<body>.*)\Z", re.DOTALL)


def strip_comments(text: str, filename: str) -> str:
    """Blank out ``//`` and ``/* */`` comments, keeping newlines and columns."""

    def blank(m: re.Match[str]) -> str:
        chunk = m.group(0)
        if m.group("open") is not None:
            line = text.count("\n", 0, m.start()) + 1
            column = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
            raise IDLError(filename, line, column, "unterminated /* comment")
        if chunk[0] in "/":
            return re.sub(r"[^\n]", " ", chunk)
        return chunk

    return _COMMENT_RE.sub(blank, text)


def _split_name(text: str) -> tuple[str, ...]:
    parts = [p.strip() for p in text.split("::")]
    return tuple(p.removeprefix("_") for p in parts)


class Preprocessor:
    """Turns an IDL file into tokens and pragma events; see the module docstring."""

    def __init__(
        self, include_dirs: Iterable[str | os.PathLike[str]] = (),
        defines: Mapping[str, str] | None = None,
    ) -> None:  # fmt: skip
        self.include_dirs = [str(d) for d in include_dirs]
        self._lexer = IDLLexer()
        self._macros: dict[str, _Macro] = {}
        self._tokens: list[Any] = []
        self._events: list[Event] = []
        self._sources: dict[str, tuple[str, ...]] = {}
        self._depth = 0
        for name, value in (defines or {}).items():
            self._define(name, value, Location("<command line>", 1, 1))

    # -- entry points -----------------------------------------------------

    def run(self, path: str | os.PathLike[str]) -> Preprocessed:
        """Preprocess the file at ``path``."""
        name = os.path.normpath(str(path))
        text = self._read(name, Location(name, 1, 1), missing=f"cannot read IDL file '{name}'")
        return self.run_string(text, name)

    def run_string(self, text: str, filename: str = "<string>") -> Preprocessed:
        """Preprocess ``text`` as though it were the contents of ``filename``."""
        self._process(text, filename)
        return Preprocessed(filename, tuple(self._tokens), tuple(self._events), self._sources)

    def source_line(self, file: str, line: int) -> str | None:
        """The text of ``line`` of ``file`` if the preprocessor read it."""
        lines = self._sources.get(file)
        if lines is None or not 1 <= line <= len(lines):
            return None
        return lines[line - 1]

    # -- files ----------------------------------------------------------------

    def _read(self, name: str, loc: Location, missing: str) -> str:
        try:
            data = Path(name).read_bytes()
        except OSError as exc:
            raise IDLError.at(loc, f"{missing}: {exc.strerror or exc}") from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return data.decode("latin-1")

    def _process(self, text: str, filename: str) -> None:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        self._sources[filename] = tuple(text.split("\n"))
        lines = strip_comments(text, filename).split("\n")
        conds: list[_Cond] = []
        pending: list[str] = []
        pending_start = 1
        lineno = 0
        while lineno < len(lines):
            line = lines[lineno]
            lineno += 1
            start = lineno
            m = _DIRECTIVE_RE.match(line)
            if m is None:
                if not pending:
                    pending_start = start
                active = not conds or conds[-1].active
                pending.append(line if active else "")
                continue
            while line.endswith("\\") and lineno < len(lines):
                line = line[:-1] + " " + lines[lineno]
                lineno += 1
            m = _DIRECTIVE_RE.match(line)
            assert m is not None
            self._flush(pending, filename, pending_start)
            pending = []
            loc = Location(filename, start, line.index("#") + 1)
            self._directive(m.group(1) or "", m.group(2), loc, conds, filename)
            # Directives that span continuation lines are replaced by blanks so
            # that the next run of text starts on the right line.
            pending_start = lineno + 1
        self._flush(pending, filename, pending_start)
        if conds:
            raise IDLError.at(conds[-1].loc, "unterminated conditional directive (missing #endif)")

    def _flush(self, lines: list[str], filename: str, first_line: int) -> None:
        if not any(line.strip() for line in lines):
            return
        for tok in self._lexer.tokenize("\n".join(lines), filename, first_line):
            self._emit(tok, frozenset())

    def _emit(self, tok: Any, expanding: frozenset[str]) -> None:
        if tok.type == "IDENTIFIER":
            macro = self._macros.get(tok.raw)
            if macro is not None and macro.name not in expanding:
                for body_tok in macro.tokens:
                    self._emit(_relocated(body_tok, tok.loc), expanding | {macro.name})
                return
        tok.index = len(self._tokens)
        self._tokens.append(tok)

    # -- directives -------------------------------------------------------

    def _directive(
        self, name: str, rest: str, loc: Location, conds: list[_Cond], filename: str
    ) -> None:
        active = not conds or conds[-1].active
        if name in ("if", "ifdef", "ifndef"):
            if not active:
                conds.append(_Cond(loc, False, False, True))
                return
            if name == "if":
                value = self._eval_if(rest, loc)
            else:
                macro = self._single_name(name, rest, loc)
                value = (macro in self._macros) == (name == "ifdef")
            conds.append(_Cond(loc, True, value, value))
            return
        if name in ("elif", "else", "endif"):
            self._conditional(name, rest, loc, conds)
            return
        if not active:
            return
        if name == "include":
            self._include(rest, loc, filename)
        elif name == "define":
            self._define_directive(rest, loc)
        elif name == "undef":
            self._macros.pop(self._single_name(name, rest, loc), None)
        elif name == "pragma":
            self._pragma(rest, loc)
        elif name == "error":
            raise IDLError.at(loc, f"#error {rest.strip()}")
        elif name in ("warning", "line", "ident", ""):
            return
        else:
            raise IDLError.at(loc, f"unknown preprocessor directive '#{name}'")

    def _conditional(self, name: str, rest: str, loc: Location, conds: list[_Cond]) -> None:
        if not conds:
            raise IDLError.at(loc, f"#{name} without matching #if")
        cond = conds[-1]
        if name == "endif":
            conds.pop()
            return
        if cond.seen_else:
            raise IDLError.at(loc, f"#{name} after #else")
        if name == "else":
            cond.seen_else = True
            cond.active = cond.outer_active and not cond.taken
            cond.taken = True
            return
        if cond.outer_active and not cond.taken:
            cond.active = self._eval_if(rest, loc)
            cond.taken = cond.active
        else:
            cond.active = False

    def _single_name(self, directive: str, rest: str, loc: Location) -> str:
        words = rest.split()
        if len(words) != 1 or not _IDENT_RE.fullmatch(words[0]):
            raise IDLError.at(loc, f"#{directive} expects a single macro name")
        return words[0]

    def _include(self, rest: str, loc: Location, filename: str) -> None:
        m = _INCLUDE_RE.match(rest)
        if m is None:
            raise IDLError.at(loc, '#include expects "FILE" or <FILE>')
        target = m.group("q") or m.group("a")
        # Both forms search the including file's directory first, then the -I list.
        for directory in [os.path.dirname(filename) or ".", *self.include_dirs]:
            candidate = os.path.normpath(os.path.join(directory, target))
            if os.path.isfile(candidate):
                break
        else:
            raise IDLError.at(loc, f"cannot find include file '{target}'")
        if self._depth >= MAX_INCLUDE_DEPTH:
            raise IDLError.at(loc, "#include nested too deeply (recursive include?)")
        text = self._read(candidate, loc, missing=f"cannot read include file '{target}'")
        self._events.append(FileEnter(len(self._tokens), candidate))
        self._depth += 1
        self._process(text, candidate)
        self._depth -= 1
        self._events.append(FileExit(len(self._tokens), candidate))

    def _define_directive(self, rest: str, loc: Location) -> None:
        m = _DEFINE_RE.match(rest)
        if m is None:
            raise IDLError.at(loc, "#define expects a macro name")
        if m.group("paren"):
            raise IDLError.at(loc, f"function-like macro '{m.group('name')}' is not supported")
        self._define(m.group("name"), m.group("body").strip(), loc)

    def _define(self, name: str, text: str, loc: Location) -> None:
        if not _IDENT_RE.fullmatch(name):
            raise IDLError.at(loc, f"invalid macro name '{name}'")
        tokens = self._lexer.tokenize(text, loc.file, loc.line) if text else []
        for tok in tokens:
            tok.loc = loc
        self._macros[name] = _Macro(name, text, tokens)

    def _pragma(self, rest: str, loc: Location) -> None:
        words = rest.split(None, 1)
        if not words:
            return
        kind, args = words[0], (words[1] if len(words) > 1 else "")
        index = len(self._tokens)
        if kind == "prefix":
            m = _PRAGMA_PREFIX_RE.match(args)
            if m is None:
                raise IDLError.at(loc, '#pragma prefix expects a string literal: "prefix"')
            self._events.append(PragmaPrefix(index, loc, m.group("prefix")))
        elif kind == "ID":
            m = _PRAGMA_ID_RE.match(args)
            if m is None:
                raise IDLError.at(loc, '#pragma ID expects a scoped name and "repository id"')
            name = _split_name(m.group("name"))
            self._events.append(PragmaID(index, loc, name, bool(m.group("abs")), m.group("id")))
        elif kind == "version":
            m = _PRAGMA_VERSION_RE.match(args)
            if m is None:
                raise IDLError.at(loc, "#pragma version expects a scoped name and major.minor")
            name = _split_name(m.group("name"))
            version = f"{int(m.group('major'))}.{int(m.group('minor'))}"
            self._events.append(PragmaVersion(index, loc, name, bool(m.group("abs")), version))
        # Any other pragma (omniORB's "hh", "once", vendor pragmas) is ignored.

    # -- #if expressions --------------------------------------------------

    def _eval_if(self, text: str, loc: Location) -> bool:
        return evaluate(text, {k: m.text for k, m in self._macros.items()}, loc) != 0


def _relocated(tok: Any, loc: Location) -> Any:
    new = ply.lex.LexToken()
    new.type, new.value, new.lineno, new.lexpos = tok.type, tok.value, loc.line, 0
    new.raw = getattr(tok, "raw", None)
    new.loc = loc
    return new
