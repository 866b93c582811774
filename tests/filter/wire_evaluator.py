"""Evaluate the Any-path checks on Anys that crossed the wire, in a pristine process.

Usage: python -m tests.filter.wire_evaluator   (from the repository root)

Strategy: this process never compiles or imports data/FilterExamples.idl. It
activates a StructuredPushConsumer, has tests/corba/wire_client.py (a
separate omniORBpy client that does compile it) push every event of
tests/filter/any_paths.py over IIOP, then runs every check of that data set
through a real EXTENDED_TCL filter (``Filter.match``) on the Anys as they
arrived: TypeCodes unmarshalled by the 4.3.3 wheel (``0xffffffff``
indirections for repeated and recursive types) and ``UnknownStruct``,
``UnknownUnion`` and ``EnumItem`` values. It prints one JSON object:

- ``results``: check id -> the match result, or the text of an exception;
- ``facts``: per event, what arrived (value class, whether its descriptor
  holds the wire indirection marker, whether this process knows the type);
- ``pristine``: whether the IDL's modules and types were unknown here before
  and after the run.

tests/filter/test_any_paths.py runs it once and asserts on its output.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import omniORB
from omniORB import CORBA

import CosNotifyFilter

from cosnotify.corba import descriptors as D
from cosnotify.filter.factory import FilterFactory
from tests.corba.conftest import received_from_client
from tests.filter.events import clock, has_wire_indirection

HERE = Path(__file__).resolve().parent
DATASET = HERE / "any_paths.py"
IDL_MODULES = ("FilterExamples", "TelecomNotification")
PROBE_IDS = ("IDL:FilterExamples/Bag:1.0", "IDL:FilterExamples/Node:1.0",
             "IDL:FilterExamples/Shape:1.0", "IDL:TelecomNotification/ServiceUserType:1.0")


def load_dataset() -> Any:
    """tests/filter/any_paths.py, loaded by path as the client loads it."""
    spec = importlib.util.spec_from_file_location("any_paths", DATASET)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pristine() -> bool:
    """Has this process no stubs and no registered types of the IDL?"""
    return (not any(name in sys.modules for name in IDL_MODULES)
            and all(omniORB.findType(repo_id) is None for repo_id in PROBE_IDS))


def evaluate(checks: list[Any], events: dict[str, Any]) -> dict[str, Any]:
    """Every check through a filter of its own constraint: id -> bool or error text."""
    factory = FilterFactory(clock=clock)
    filters: dict[str, Any] = {}
    results: dict[str, Any] = {}
    for check in checks:
        f = filters.get(check.constraint)
        if f is None:
            f = factory.create_filter("EXTENDED_TCL")
            f.add_constraints([CosNotifyFilter.ConstraintExp([], check.constraint)])
            filters[check.constraint] = f
        try:
            results[check.id] = f.match(events[check.event])
        except Exception as exc:  # noqa: BLE001 - reported, and the test fails on it
            results[check.id] = f"raised {exc!r}"
    return results


def facts(events: dict[str, Any]) -> dict[str, Any]:
    """What arrived, per event."""
    found = {}
    for name, any_ in events.items():
        repo_id = D.repo_id(any_._t._d)
        found[name] = {"value_class": type(any_._v).__name__,
                       "repo_id": repo_id,
                       "wire_indirection": has_wire_indirection(any_._t._d),
                       "known_here": bool(repo_id) and omniORB.findType(repo_id) is not None}
    return found


def main() -> int:
    dataset = load_dataset()
    before = pristine()
    orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)
    try:
        orb.resolve_initial_references("RootPOA")._get_the_POAManager().activate()
        events = received_from_client(orb, HERE / dataset.IDL, DATASET)
        report = {
            "pristine": {"before": before, "after": pristine()},
            "facts": facts(events),
            "results": evaluate(dataset.CHECKS, events),
        }
    finally:
        orb.destroy()
    json.dump(report, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
