"""``cosnotify tail``: being written (a placeholder so the command line parses)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("tail", help="(not yet)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    print("cosnotify tail: not yet", file=sys.stderr)
    return 1
