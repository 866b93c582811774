"""Fixtures for the filter tests: the example IDL, compiled once per session."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cosnotify.corba.stubgen import omniidl

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def idl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """FilterExamples and TelecomNotification, generated from tests/filter/data by the
    wheel's ``omniidl -bpython`` and imported from there (after omniORB)."""
    outdir = tmp_path_factory.mktemp("filter_idl")
    omniidl(["-bpython", "-C", str(outdir), str(DATA / "FilterExamples.idl")])
    sys.path.insert(0, str(outdir))
    try:
        modules: dict[str, Any] = {}
        for name in ("FilterExamples", "TelecomNotification"):
            modules[name] = importlib.import_module(name)
        yield SimpleNamespace(FE=modules["FilterExamples"],
                              TN=modules["TelecomNotification"])
    finally:
        sys.path.remove(str(outdir))


@pytest.fixture(scope="session")
def wire_types(omniorb: Any) -> dict[str, Any]:
    """The Anys of tests/corba/wire_types.py (WireTypes.idl, which this process never
    compiles) as an omniORBpy client pushed them here: TypeCodes from the wire."""
    from tests.corba.conftest import HERE, received_from_client

    return received_from_client(omniorb, HERE / "data" / "WireTypes.idl",
                                HERE / "wire_types.py")
