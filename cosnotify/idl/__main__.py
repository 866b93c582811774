"""Command line of the IDL compiler.

Strategy: a thin argparse front over `cosnotify.idl`; the only logic here is
turning outcomes into exit statuses. Bad IDL prints ``file:line:column:
message`` (with a caret excerpt) on stderr and exits 1, never a traceback.

Usage::

    python -m cosnotify.idl FILE.idl [-I DIR]... [-D NAME[=VAL]]... -o OUTDIR
    python -m cosnotify.idl --check    # cosnotify/stubs/ matches idl/? (exit 0/1)
    python -m cosnotify.idl --regen    # rewrite cosnotify/stubs/ from idl/

Only the definitions of FILE itself are generated (as omniidl does); modules
from included files are imported. cosnotify's own ``idl/`` directory is on
the include path, and its modules are imported from ``cosnotify.stubs``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from cosnotify.idl import compile_file, repo_idl_dir
from cosnotify.idl.errors import IDLError
from cosnotify.idl.stubs import check_stubs, regen_stubs


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m cosnotify.idl",
        description="Compile OMG IDL into Python modules (omniORBpy-style mapping).",
    )
    parser.add_argument("file", nargs="?", help="the IDL file to compile")
    parser.add_argument(
        "-I", dest="include", action="append", default=[], metavar="DIR",
        help="add DIR to the #include search path",
    )  # fmt: skip
    parser.add_argument(
        "-D", dest="define", action="append", default=[], metavar="NAME[=VAL]",
        help="define a preprocessor macro (VAL defaults to 1)",
    )  # fmt: skip
    parser.add_argument("-o", dest="outdir", metavar="OUTDIR", help="output directory")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--check", action="store_true", help="verify that cosnotify/stubs/ matches idl/"
    )
    mode.add_argument("--regen", action="store_true", help="rewrite cosnotify/stubs/ from idl/")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the compiler; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.check or args.regen:
            if args.file or args.outdir:
                parser.error("--check and --regen take no FILE or -o")
            return _stubs(regen=args.regen)
        if not args.file or not args.outdir:
            parser.error("FILE and -o OUTDIR are required (or use --check / --regen)")
        defines = dict(_define(d) for d in args.define)
        for path in compile_file(args.file, args.outdir, args.include, defines):
            print(path)
        return 0
    except IDLError as err:
        print(err, file=sys.stderr)
        return 1
    except OSError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


def _define(text: str) -> tuple[str, str]:
    name, _, value = text.partition("=")
    return name, value if "=" in text else "1"


def _stubs(regen: bool) -> int:
    idl_dir = repo_idl_dir()
    stubs_dir = Path(__file__).resolve().parent.parent / "stubs"
    if not idl_dir.is_dir():
        print(
            f"error: the IDL directory {idl_dir} does not exist; --check and --regen need a "
            "source checkout of cosnotify",
            file=sys.stderr,
        )
        return 1
    if regen:
        for line in regen_stubs(idl_dir, stubs_dir):
            print(line)
        return 0
    problems = check_stubs(idl_dir, stubs_dir)
    if problems:
        print("cosnotify/stubs/ does not match idl/ (run python -m cosnotify.idl --regen):",
              file=sys.stderr)  # fmt: skip
        for line in problems:
            print(f"  {line}", file=sys.stderr)
        return 1
    print("cosnotify/stubs/ matches idl/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
