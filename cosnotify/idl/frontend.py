"""The compiler's front end: preprocess, parse and check an IDL file.

Strategy: a thin pipeline over `preprocessor`, `parser` and `analyzer`, and
the one place where errors get their caret excerpt (the preprocessor holds
the text of every file it read). A ``RecursionError`` can only come from
absurdly nested input, so it too becomes an `IDLError` rather than a crash.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping

from cosnotify.idl import analyzer, model
from cosnotify.idl.errors import IDLError, Location
from cosnotify.idl.parser import parse_tokens
from cosnotify.idl.preprocessor import Preprocessed, Preprocessor

PathLike = str | os.PathLike[str]


def parse_file(
    path: PathLike, include_dirs: Iterable[PathLike] = (),
    defines: Mapping[str, str] | None = None,
) -> model.Specification:  # fmt: skip
    """Preprocess, parse and check the IDL file at ``path``; raise `IDLError` if bad."""
    pp = Preprocessor(include_dirs, defines)
    main = os.path.normpath(str(path))
    return _front_end(lambda: pp.run(path), pp, main)


def parse_string(
    text: str, filename: str = "<string>", include_dirs: Iterable[PathLike] = (),
    defines: Mapping[str, str] | None = None,
) -> model.Specification:  # fmt: skip
    """Like `parse_file`, for IDL text (``#include`` resolves against ``filename``'s dir)."""
    pp = Preprocessor(include_dirs, defines)
    return _front_end(lambda: pp.run_string(text, filename), pp, filename)


def _front_end(
    preprocess: Callable[[], Preprocessed], pp: Preprocessor, main: str
) -> model.Specification:
    try:
        pre = preprocess()
        spec = parse_tokens(pre.tokens, _end_of(pre))
        return analyzer.analyze(pre, spec)
    except IDLError as err:
        raise _with_excerpt(err, pp) from None
    except RecursionError:
        raise IDLError(main, 1, 1, "input nested too deeply") from None


def _end_of(pre: Preprocessed) -> Location:
    lines = pre.sources.get(pre.main_file, ("",))
    return Location(pre.main_file, len(lines), len(lines[-1]) + 1)


def _with_excerpt(err: IDLError, pp: Preprocessor) -> IDLError:
    return err.with_source(pp.source_line(err.file, err.line))
