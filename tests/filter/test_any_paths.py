"""The Any-path data set (tests/filter/any_paths.py) in process and over the wire.

Every check runs twice with the same expected result: on Anys built here from
stubs of data/FilterExamples.idl, and on the same Anys as a process that never
compiled that IDL received them over IIOP from an omniORBpy client
(tests/filter/wire_evaluator.py): TypeCodes with the 4.3.3 wheel's
``0xffffffff`` indirections, ``UnknownStruct``/``UnknownUnion``/``EnumItem``
values.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from omniORB import CORBA

from cosnotify.corba import descriptors as D
from tests.filter import any_paths
from tests.filter.any_paths import CHECKS, Check
from tests.filter.events import has_wire_indirection, make_filter

ROOT = Path(__file__).resolve().parents[2]
_IDS = [check.id for check in CHECKS]


@pytest.fixture(scope="session")
def local_events(idl: SimpleNamespace) -> dict[str, Any]:
    """The data set's events, built in this process from the compiled stubs."""
    return dict(any_paths.cases(CORBA, {"FilterExamples": idl.FE,
                                        "TelecomNotification": idl.TN}))


@pytest.fixture(scope="session")
def wire_report() -> dict[str, Any]:
    """The pristine evaluator's report (it runs the client and every check once)."""
    done = subprocess.run([sys.executable, "-m", "tests.filter.wire_evaluator"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


_filters: dict[str, Any] = {}


def _match(constraint: str, event: Any) -> Any:
    f = _filters.get(constraint)
    if f is None:
        f = _filters[constraint] = make_filter(constraint)
    return f.match(event)


class TestInProcess:
    """Each check on Anys built from stubs in this process."""

    @pytest.mark.parametrize("check", CHECKS, ids=_IDS)
    def test_check(self, local_events: dict[str, Any], check: Check) -> None:
        """The constraint gives the result the spec (see check.source) requires."""
        assert _match(check.constraint, local_events[check.event]) is check.expected, \
            check.source


class TestOverTheWire:
    """Each check on the same Anys, received by a process without the IDL."""

    @pytest.mark.parametrize("check", CHECKS, ids=_IDS)
    def test_check(self, wire_report: dict[str, Any], check: Check) -> None:
        """The constraint gives the same result on the Any that crossed the wire."""
        assert wire_report["results"][check.id] is check.expected, check.source

    def test_evaluator_never_saw_the_idl(self, wire_report: dict[str, Any]) -> None:
        """The evaluating process had neither the stubs nor the types, before or after."""
        assert wire_report["pristine"] == {"before": True, "after": True}
        ours = [f for f in wire_report["facts"].values()
                if f["repo_id"].startswith(("IDL:FilterExamples/", "IDL:TelecomNotification/"))]
        assert not any(f["known_here"] for f in ours)
        assert {f["value_class"] for f in ours} == {"UnknownStruct", "UnknownUnion", "EnumItem"}

    def test_values_have_no_stubs(self, wire_report: dict[str, Any]) -> None:
        """Structs, unions and enums arrived as omniORB's Unknown* values."""
        facts = wire_report["facts"]
        assert facts["segment"]["value_class"] == "UnknownStruct"
        assert facts["expr"]["value_class"] == "UnknownUnion"
        assert facts["p_Q"]["value_class"] == "EnumItem"
        assert facts["price"]["value_class"] == "UnknownStruct"

    def test_repeated_and_recursive_types_carry_the_wire_marker(
            self, wire_report: dict[str, Any]) -> None:
        """The types that repeat or recurse came with the wheel's 0xffffffff indirection,
        so the checks on them ran through the workaround."""
        facts = wire_report["facts"]
        assert [name for name in any_paths.WIRE_INDIRECT_EVENTS
                if not facts[name]["wire_indirection"]] == []
        assert facts["numbers"]["wire_indirection"] is False

    def test_every_check_ran(self, wire_report: dict[str, Any]) -> None:
        """The report has a result for each check and nothing else."""
        assert sorted(wire_report["results"]) == sorted(_IDS)


class TestDataSet:
    """The data set covers what the wire run is for."""

    def test_events_exist(self, local_events: dict[str, Any]) -> None:
        """Every check names an event the builder makes."""
        assert {check.event for check in CHECKS} <= set(local_events)

    def test_both_outcomes_per_path_kind(self) -> None:
        """Repeated, default-union and recursive paths are checked TRUE and FALSE."""
        for event in ("segment", "drawing_dot", "drawing_line", "node", "expr"):
            outcomes = {c.expected for c in CHECKS if c.event == event}
            assert outcomes == {True, False}, event

    def test_in_process_descriptors_use_the_standard_marker(
            self, local_events: dict[str, Any]) -> None:
        """Built here, the recursive Node refers to itself with tv__indirect (-1), never
        with the wire marker: the in-process run exercises the other kind."""
        node = local_events["node"]._t._d
        kids = D.unalias(dict(D.members(node))["kids"])
        assert kids[0] == D.SEQUENCE and kids[1][0] == D.INDIRECT
        assert D.resolve(kids[1]) is node
        assert not has_wire_indirection(node)
