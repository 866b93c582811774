"""ELVIN4 end to end: FilterFactory, add_constraints, matching, quench data (issue 19)."""

from __future__ import annotations

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyFilter

from cosnotify.filter import FilterFactory, elvin4, lookup_grammar
from cosnotify.filter.elvin4 import GRAMMAR, compile_elvin4
from cosnotify.filter.registry import CompileContext, compile_extended_tcl
from tests.filter.elvin4.helpers import elvin_filter
from tests.filter.events import structured

GOAL = 'require(host) && severity > 2 && begins-with(host, "db")'


class TestRegistration:
    def test_registered(self) -> None:
        """ELVIN4 is in the default registry after importing cosnotify.filter."""
        grammar = lookup_grammar("ELVIN4")
        assert grammar is not None and grammar.compile is compile_elvin4
        assert GRAMMAR == "ELVIN4"

    def test_factory_creates_filter(self) -> None:
        """create_filter("ELVIN4") gives a filter reporting its grammar."""
        flt = FilterFactory().create_filter("ELVIN4")
        assert flt._get_constraint_grammar() == "ELVIN4"


class TestMatching:
    def test_goal_expression(self) -> None:
        """The issue's expression matches exactly the events it describes."""
        flt = elvin_filter(GOAL)
        assert flt.match_structured(structured(filterable={"host": "db7", "severity": 3}))
        assert not flt.match_structured(structured(filterable={"host": "web", "severity": 3}))
        assert not flt.match_structured(structured(filterable={"host": "db7", "severity": 2}))
        assert not flt.match_structured(structured(filterable={"severity": 9}))
        assert not flt.match_structured(structured(filterable={"host": 5, "severity": 9}))
        assert flt.match_structured(structured(variable={"host": "db1", "severity": 5}))

    def test_constraints_are_ored(self) -> None:
        """A filter is TRUE when any of its constraints is (Notification §3.2.1)."""
        flt = elvin_filter("a == 1", "b == 2")
        assert flt.match_structured(structured(filterable={"b": 2}))
        assert not flt.match_structured(structured(filterable={"b": 1}))

    def test_event_types_still_apply(self) -> None:
        """ConstraintExp.event_types restrict an ELVIN4 constraint like any other."""
        flt = FilterFactory().create_filter("ELVIN4")
        flt.add_constraints([CosNotifyFilter.ConstraintExp(
            [N.EventType("Finance", "*")], "require(x)")])
        assert flt.match_structured(structured("Finance", "Trade", filterable={"x": 1}))
        assert not flt.match_structured(structured("Telecom", "Trade", filterable={"x": 1}))

    def test_typed_and_any(self) -> None:
        """match_typed and match (Any) use the documented attributes."""
        flt = elvin_filter('x == "v"')
        props = [N.Property("x", CORBA.Any(CORBA.TC_string, "v"))]
        assert flt.match_typed(props)
        assert flt.match(CORBA.Any(N._tc_PropertySeq, props))
        assert not flt.match(CORBA.Any(CORBA.TC_string, "v"))

    def test_any_holding_structured_event(self) -> None:
        """An Any holding a StructuredEvent is matched as the structured event."""
        flt = elvin_filter("severity > 1")
        event = structured(filterable={"severity": 2})
        assert flt.match(CORBA.Any(N._tc_StructuredEvent, event))


class TestInvalidConstraint:
    @pytest.mark.parametrize(("text", "name"), [
        ("x == 2147483648", "OVERFLOW"), ("x ==", "PARSE_ERROR"), ("!" * 80 + "require(x)",
                                                                   "NESTING_TOO_DEEP"),
        ("regex(x, \"(\")", "INVALID_REGEXP"), ("nope(x)", "UNKNOWN_FUNC"),
    ])
    def test_invalid(self, text: str, name: str) -> None:
        """InvalidConstraint carries the Elvin error name and position, and adds nothing."""
        flt = elvin_filter("require(x)")
        with pytest.raises(CosNotifyFilter.InvalidConstraint) as info:
            flt.add_constraints([CosNotifyFilter.ConstraintExp([], "y > 1"),
                                 CosNotifyFilter.ConstraintExp([], text)])
        detail = str(info.value)
        assert name in detail and "offset" in detail
        assert info.value.constr.constraint_expr == text
        assert len(flt.get_all_constraints()) == 1

    def test_modify_constraints(self) -> None:
        """modify_constraints compiles ELVIN4 text too."""
        flt = elvin_filter("a == 1")
        (info,) = flt.get_all_constraints()
        info.constraint_expression.constraint_expr = "a == 2"
        flt.modify_constraints([], [info])
        assert flt.match_structured(structured(filterable={"a": 2}))


class TestTestedAttributes:
    def test_names(self) -> None:
        """tested_attributes gives every attribute name the expression refers to."""
        compiled = compile_elvin4(GOAL + ' || size(blob) > 0 || fold-case(t) == "x" || '
                                  'type_name == "T" || equals(e, f)', CompileContext())
        assert elvin4.tested_attributes(compiled) == frozenset(
            {"host", "severity", "blob", "t", "type_name", "e", "f"})

    def test_escaped_names_are_decoded(self) -> None:
        """Names are reported as attributes are named (escapes removed)."""
        compiled = compile_elvin4(r"require(a\ b) && Message-Id > 1", CompileContext())
        assert elvin4.tested_attributes(compiled) == frozenset({"a b", "Message-Id"})

    def test_other_grammar(self) -> None:
        """A constraint of another grammar is a TypeError."""
        with pytest.raises(TypeError):
            elvin4.tested_attributes(compile_extended_tcl("$a == 1", CompileContext()))
