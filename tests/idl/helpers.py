"""Helpers shared by the IDL compiler tests."""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from cosnotify.idl import IDLError, model, parse_file

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parents[2]


def write(directory: Path, files: dict[str, str]) -> None:
    """Write ``{relative name: text}`` under ``directory``."""
    for name, text in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def parse(
    tmp_path: Path, text: str, files: dict[str, str] | None = None,
    includes: tuple[str, ...] = (), defines: dict[str, str] | None = None,
) -> model.Specification:  # fmt: skip
    """Parse ``text`` as ``tmp_path/main.idl``; ``files`` are extra files under ``tmp_path``."""
    write(tmp_path, {"main.idl": text, **(files or {})})
    return parse_file(tmp_path / "main.idl", [tmp_path / d for d in includes], defines)


def error(tmp_path: Path, text: str, files: dict[str, str] | None = None) -> IDLError:
    """The `IDLError` that parsing ``text`` raises."""
    with pytest.raises(IDLError) as info:
        parse(tmp_path, text, files)
    return info.value


def decl(spec: model.Specification, scoped: str) -> Any:
    """The declaration with scoped name ``A::B::C`` in ``spec`` (typed Any for brevity)."""
    found = [d for d in spec.walk() if "::".join(d.scoped_name) == scoped]
    found = [d for d in found if not isinstance(d, model.Forward)]
    assert len(found) == 1, f"{scoped}: {found}"
    return found[0]


def ids(spec: model.Specification) -> dict[str, str]:
    """``{scoped name: repository id}`` for every declaration with an id of its own."""
    return {
        "::".join(d.scoped_name): d.repo_id
        for d in spec.walk()
        if not isinstance(d, (model.Forward, model.Enumerator))
    }


@contextlib.contextmanager
def imported(outdir: Path, *names: str) -> Iterator[list[ModuleType]]:
    """Import the generated packages ``names`` from ``outdir``, then forget them."""
    sys.path.insert(0, str(outdir))
    before = set(sys.modules)
    try:
        yield [importlib.import_module(name) for name in names]
    finally:
        sys.path.remove(str(outdir))
        for name in set(sys.modules) - before:
            if not name.startswith("cosnotify"):
                del sys.modules[name]
