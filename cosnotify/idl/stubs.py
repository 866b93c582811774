"""Keeping ``cosnotify/stubs/`` in step with the repository's ``idl/`` files.

Strategy: `expected_stubs` compiles every ``idl/*.idl`` (sorted, each as the
main file, with ``idl/`` on the include path) in stubs mode and merges the
results; `check_stubs` compares them with the committed files and
`regen_stubs` rewrites the directory. ``cosnotify/stubs/__init__.py`` is not
generated: it is kept as it is. A module generated from two IDL files is an
error, since one package cannot come from two sources.
"""

from __future__ import annotations

from pathlib import Path

from cosnotify.idl.codegen import generate
from cosnotify.idl.errors import IDLError
from cosnotify.idl.frontend import parse_file

#: The hand-written package file of cosnotify.stubs, never regenerated.
KEEP = "__init__.py"


def expected_stubs(idl_dir: Path) -> dict[str, str]:
    """``{path relative to cosnotify/stubs: text}`` generated from ``idl_dir``."""
    if not idl_dir.is_dir():
        raise FileNotFoundError(f"IDL directory {idl_dir} does not exist")
    files: dict[str, str] = {}
    owners: dict[str, str] = {}
    for source in sorted(idl_dir.glob("*.idl")):
        spec = parse_file(source, [idl_dir])
        label = f"{idl_dir.name}/{source.name}"
        for rel, text in generate(spec, label, stubs_mode=True, idl_dir=idl_dir).items():
            if rel in files:
                raise IDLError(
                    str(source), 1, 1, f"{rel} is generated both from {owners[rel]} and {label}"
                )
            files[rel] = text
            owners[rel] = label
    return files


def committed_stubs(stubs_dir: Path) -> dict[str, str]:
    """The generated files currently under ``stubs_dir``."""
    found: dict[str, str] = {}
    if not stubs_dir.is_dir():
        return found
    for path in sorted(stubs_dir.rglob("*.py")):
        rel = path.relative_to(stubs_dir).as_posix()
        if rel == KEEP or "__pycache__" in path.parts:
            continue
        found[rel] = path.read_text(encoding="utf-8")
    return found


def check_stubs(idl_dir: Path, stubs_dir: Path) -> list[str]:
    """Descriptions of every difference between the committed and expected stubs."""
    expected = expected_stubs(idl_dir)
    actual = committed_stubs(stubs_dir)
    problems = []
    for rel in sorted(set(expected) | set(actual)):
        if rel not in actual:
            problems.append(f"missing: {rel}")
        elif rel not in expected:
            problems.append(f"not generated from idl/ (stale): {rel}")
        elif actual[rel] != expected[rel]:
            problems.append(f"differs: {rel}")
    return problems


def regen_stubs(idl_dir: Path, stubs_dir: Path) -> list[str]:
    """Rewrite ``stubs_dir`` from ``idl_dir``; return the files written or removed."""
    expected = expected_stubs(idl_dir)
    changed = []
    for rel in committed_stubs(stubs_dir):
        if rel not in expected:
            (stubs_dir / rel).unlink()
            changed.append(f"removed {rel}")
    for rel, text in sorted(expected.items()):
        target = stubs_dir / rel
        if target.is_file() and target.read_text(encoding="utf-8") == text:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        changed.append(f"wrote {rel}")
    for directory in sorted(stubs_dir.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if directory.is_dir() and directory.name != "__pycache__":
            remaining = [p for p in directory.iterdir() if p.name != "__pycache__"]
            if not remaining:
                for cache in directory.glob("__pycache__"):
                    for item in cache.iterdir():
                        item.unlink()
                    cache.rmdir()
                directory.rmdir()
    return changed
