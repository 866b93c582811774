"""Generate the Python stubs omniORB does not ship, from ``idl/``, with omniidl.

Strategy: omniORB's wheel bundles the COS modules (CosNotification,
CosNotifyComm, ...) but not the Ack modules of section 3.7, nor
cosnotify's own CosNotifyGrammars (docs/grammars/). They are generated here by the wheel's own ``omniidl -bpython``, with one
``-Wbextern=<file>`` per included COS file so the output imports the bundled
modules instead of defining a second copy of them (two copies of a module
break omniORB's type tables, see docs/orb.md). The output is committed in
``cosnotify/corba/generated``; ``--check`` regenerates into a temporary
directory and fails if anything differs (``make test`` runs it, like
httpcore's ``unasync --check``).

Usage::

    python -m cosnotify.corba.stubgen           # regenerate
    python -m cosnotify.corba.stubgen --check   # fail if stale
"""

from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["EXTERN", "MODULES", "ROOT", "StaleStubs", "check", "generate", "omniidl"]

#: The repository root: omniidl runs there with relative paths, so the
#: generated files record ``idl/...`` and do not depend on the checkout's path.
ROOT = Path(__file__).resolve().parents[2]
#: The IDL files generated (omniORB ships no Python stubs for these).
#: Order matters: a module comes after the generated modules it includes.
MODULES = ("CosNotifyCommAck", "CosNotifyChannelAdminAck", "CosNotifyGrammars", "NotifyExt",
           "NotifyMonitoringExt", "CosNotifyHistory", "CosNotifyEventHeap", "CosNotifyOES",
           "CosNotifyMonitor")
#: Included IDL files whose stubs omniORB bundles: referred to, never generated.
EXTERN = ("TimeBase", "CosEventComm", "CosEventChannelAdmin", "CosNotification", "CosNotifyComm",
          "CosNotifyFilter", "CosNotifyChannelAdmin")


class StaleStubs(Exception):
    """The committed stubs differ from what omniidl generates from ``idl/``."""

    def __init__(self, differences: Sequence[str]) -> None:
        super().__init__("stale generated stubs: " + ", ".join(differences))
        self.differences = list(differences)


def omniidl(arguments: Sequence[str], cwd: Path | None = None) -> None:
    """Run the wheel's omniidl (with its Python back end) under this interpreter.

    Debian's ``/usr/bin/omniidl`` has no Python back end, so the one on PATH
    will not do; the wheel's omnicpp, which omniidl runs, is put first on PATH.
    Raises RuntimeError with omniidl's message if it fails.
    """
    program = "import sys; from omniidl.main import main; sys.argv[0] = 'omniidl'; sys.exit(main())"
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run([sys.executable, "-c", program, *arguments], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"omniidl failed ({done.returncode}): {done.stderr.strip()}")


def generate(out: Path) -> None:
    """Run omniidl on :data:`MODULES` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    omniidl(["-bpython", "-Iidl", *(f"-Wbextern={e}" for e in EXTERN), "-C", str(out),
             *(f"idl/{m}.idl" for m in MODULES)], cwd=ROOT)


def _files(top: Path) -> set[str]:
    return {str(p.relative_to(top)) for p in top.rglob("*.py") if "__pycache__" not in p.parts}


def check(committed: Path) -> None:
    """Raise :class:`StaleStubs` unless ``committed`` is what omniidl generates now."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp)
        generate(fresh)
        want, have = _files(fresh), _files(committed) - {"__init__.py"}
        differences = sorted(want ^ have)
        differences += sorted(name for name in want & have
                              if not filecmp.cmp(fresh / name, committed / name, shallow=False))
        if differences:
            raise StaleStubs(differences)


def main(argv: Sequence[str] | None = None) -> int:
    from cosnotify.corba import GENERATED

    parser = argparse.ArgumentParser(prog="python -m cosnotify.corba.stubgen",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="fail if the committed stubs are stale")
    args = parser.parse_args(argv)
    if args.check:
        try:
            check(GENERATED)
        except StaleStubs as exc:
            print(f"{exc}; run `python -m cosnotify.corba.stubgen`", file=sys.stderr)
            return 1
        print(f"generated stubs up to date ({', '.join(MODULES)})")
        return 0
    generate(GENERATED)
    print(f"generated {', '.join(MODULES)} into {GENERATED.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
