"""Fixtures for the filter tests: the example IDL, compiled once per session."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def idl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """FilterExamples and TelecomNotification, generated from tests/filter/data with
    ``python -m cosnotify.idl FILE -o OUTDIR`` and imported from there."""
    outdir = tmp_path_factory.mktemp("filter_idl")
    subprocess.run([sys.executable, "-m", "cosnotify.idl", str(DATA / "FilterExamples.idl"),
                    "-o", str(outdir)], check=True, capture_output=True)
    sys.path.insert(0, str(outdir))
    try:
        modules: dict[str, Any] = {}
        for name in ("FilterExamples", "TelecomNotification"):
            sys.modules.pop(name, None)
            modules[name] = importlib.import_module(name)
        yield SimpleNamespace(FE=modules["FilterExamples"],
                              TN=modules["TelecomNotification"])
    finally:
        sys.path.remove(str(outdir))
