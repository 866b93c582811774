"""Property tests: constraints through filter objects, on generated events."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omniORB import CORBA

import CosNotification as N
import CosNotifyFilter as F

from cosnotify.corba import descriptors as D
from cosnotify.filter import ast as A
from cosnotify.filter.compiler import compile_tree
from cosnotify.filter.factory import FilterFactory
from cosnotify.filter.paths import SE_TC, Form, component_locator
from tests.filter.events import clock, same_value
from tests.strategies import (
    filter_any_events,
    filter_components,
    filter_expressions,
    filter_properties,
    filter_structured_events,
    tcl_expressions,
    tcl_token_soup,
)

_SETTINGS = settings(max_examples=200, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])


def _filter(combine_after: int = 64) -> Any:
    return FilterFactory(clock=clock, combine_after=combine_after).create_filter("EXTENDED_TCL")


class TestAddConstraintsText:
    """Arbitrary text either compiles or raises InvalidConstraint, nothing else."""

    @given(st.one_of(st.text(max_size=40), tcl_token_soup))
    @_SETTINGS
    def test_only_invalid_constraint(self, text: str) -> None:
        """add_constraints of any text raises only InvalidConstraint, and adds all or none."""
        f = _filter()
        try:
            infos = f.add_constraints([F.ConstraintExp([], text)])
        except F.InvalidConstraint as exc:
            assert exc.constr.constraint_expr == text
            assert f.get_all_constraints() == []
        else:
            assert [i.constraint_expression.constraint_expr for i in infos] == [text]

    @given(tcl_expressions)
    @_SETTINGS
    def test_every_valid_tree_compiles(self, node: A.Expression) -> None:
        """Whatever the grammar accepts, the compiler turns into three functions."""
        f = _filter()
        f.add_constraints([F.ConstraintExp([], node.to_text())])
        assert f.match_structured(N.StructuredEvent(
            N.EventHeader(N.FixedEventHeader(N.EventType("", ""), ""), []), [],
            CORBA.Any(CORBA.TC_null, None))) in (True, False)


class TestMatchNeverRaises:
    """For a valid constraint, every match returns a bool, whatever the event."""

    @given(filter_expressions, filter_structured_events)
    @_SETTINGS
    def test_structured(self, node: A.Expression, event: Any) -> None:
        """match_structured returns a bool."""
        f = _filter()
        f.add_constraints([F.ConstraintExp([], node.to_text())])
        assert type(f.match_structured(event)) is bool

    @given(filter_expressions, filter_any_events)
    @_SETTINGS
    def test_any(self, node: A.Expression, event: Any) -> None:
        """match returns a bool."""
        f = _filter()
        f.add_constraints([F.ConstraintExp([], node.to_text())])
        assert type(f.match(event)) is bool

    @given(filter_expressions, filter_properties)
    @_SETTINGS
    def test_typed(self, node: A.Expression, event: list[Any]) -> None:
        """match_typed returns a bool."""
        f = _filter()
        f.add_constraints([F.ConstraintExp([], node.to_text())])
        assert type(f.match_typed(event)) is bool


class TestCombinedConstraints:
    """A filter's constraints, compiled together, mean their OR (§2.3)."""

    @given(st.lists(filter_expressions, min_size=2, max_size=4), filter_structured_events)
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def test_combined_is_or(self, nodes: list[A.Expression], event: Any) -> None:
        """The combined function is TRUE iff one of the separate ones is, in every form."""
        f = _filter(combine_after=0)
        f.add_constraints([F.ConstraintExp([], n.to_text()) for n in nodes])
        separate = [compile_tree(n, clock) for n in nodes]
        wrapped = CORBA.Any(CORBA.TC_any, CORBA.Any(CORBA.TC_string, "x"))
        typed = [N.Property("a", CORBA.Any(CORBA.TC_long, 1))]
        assert f.match_structured(event) is any(s(event) for s, _, _ in separate)
        assert f.match(wrapped) is any(a(wrapped) for _, a, _ in separate)
        assert f.match_typed(typed) is any(t(typed) for _, _, t in separate)


class TestFastPathsAgree:
    """The structured-event fast paths mean what the generic lookups mean."""

    @given(filter_expressions, filter_structured_events)
    @_SETTINGS
    def test_structured_equals_generic(self, node: A.Expression, event: Any) -> None:
        """A StructuredEvent matched by the structured function and by the generic
        (Any-form) function over the same value gives the same answer."""
        structured, any_form, _ = compile_tree(node, clock)
        assert structured(event) is any_form(CORBA.Any(N._tc_StructuredEvent, event))

    @given(filter_components(), filter_structured_events)
    @_SETTINGS
    def test_locators_agree(self, component: A.Component, event: Any) -> None:
        """Component lookup on a StructuredEvent finds the same value through the
        static structured path as through the generic one."""
        fast = component_locator(component, Form.STRUCTURED, clock)(event)
        slow = component_locator(component, Form.ANY, clock)((event, SE_TC))
        assert (fast is None) == (slow is None)
        if fast is not None and slow is not None:
            assert same_value(fast[0], slow[0])
            assert D.equivalent(fast[1], slow[1])
