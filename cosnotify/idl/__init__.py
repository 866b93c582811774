"""The cosnotify IDL compiler: OMG IDL 2.x to Python (omniORBpy-style mapping).

Strategy: a classic pipeline of small modules. `preprocessor` (includes,
macros, conditionals, pragmas) drives `lexer` and yields tokens plus pragma
events; `parser` (PLY, LALR) builds the `ast`; `analyzer` (with
`interfaces`, `unions`, `consteval`) resolves names, evaluates constants,
assigns repository ids and checks the IDL rules into a `model`; `codegen`
(with `codegen_types`) writes Python packages. `signatures` summarises a
model for comparisons, and ``python -m cosnotify.idl`` is the command line.

Every bad input raises `IDLError` (file, line, column, message); nothing else
escapes for bad IDL.

Public entry points:

* `parse_file` / `parse_string`: front end only, returning a
  `model.Specification`;
* `compile_file`: front end and code generation into an output directory;
* `generate`: code generation to a ``{path: text}`` mapping;
* `IDLError`, `Location`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from cosnotify.idl.codegen import generate, write_files
from cosnotify.idl.errors import IDLError, Location
from cosnotify.idl.frontend import parse_file, parse_string

__all__ = [
    "IDLError",
    "Location",
    "compile_file",
    "generate",
    "parse_file",
    "parse_string",
    "repo_idl_dir",
]


def repo_idl_dir() -> Path:
    """cosnotify's own ``idl/`` directory (next to the package, in a source checkout)."""
    import cosnotify

    return Path(cosnotify.__file__).resolve().parent.parent / "idl"


def compile_file(
    path: str | os.PathLike[str],
    outdir: str | os.PathLike[str],
    include_dirs: Iterable[str | os.PathLike[str]] = (),
    defines: Mapping[str, str] | None = None,
) -> list[Path]:
    """Compile the IDL file ``path`` into Python packages under ``outdir``.

    cosnotify's own ``idl/`` directory is searched after ``include_dirs``, and
    modules defined there are imported from ``cosnotify.stubs``. Only the
    definitions of ``path`` itself are generated (as omniidl does). Returns
    the files written; raises `IDLError` for bad IDL.
    """
    idl_dir = repo_idl_dir()
    dirs = [*include_dirs, *([idl_dir] if idl_dir.is_dir() else [])]
    spec = parse_file(path, dirs, defines)
    files = generate(spec, Path(path).name, stubs_mode=False, idl_dir=idl_dir)
    return write_files(files, outdir)
