"""OES_SUBTREE: Figures 2-4 on the Figure 1 tree, the text form, events, filters, fuzz."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from omniORB import CORBA

import CosNotification as N
import CosNotifyFilter

from cosnotify.filter import FilterFactory
from cosnotify.filter.ast import MAX_LENGTH
from cosnotify.filter.oes import (
    NodeLimit,
    NodeLimits,
    Subscription,
    SubtreeSyntaxError,
    compile_oes_subtree,
    current_limits,
    event_path,
    parse_subscription,
    render_subscription,
    reset_limits,
    set_limits,
    using,
)
from cosnotify.filter.registry import CompileContext, CompiledConstraint
from tests.filter.events import structured

VECTORS = json.loads((Path(__file__).parent / "vectors.json").read_text())
TREE: list[str] = VECTORS["tree"]
VALID = [v for v in VECTORS["syntax"] if v["valid"]]
INVALID = [v for v in VECTORS["syntax"] if not v["valid"]]


def compiled(text: str) -> CompiledConstraint:
    return compile_oes_subtree(text, CompileContext())


def at(node: str, **more: Any) -> Any:
    """A structured event at ``node`` (the ``node`` property, in filterable_data)."""
    return structured("OES", "NodeChanged", filterable={"node": node, **more})


def table(limits: list[dict[str, Any]]) -> NodeLimits:
    return NodeLimits(NodeLimit(x["path"], x["upl"], x["barricade"]) for x in limits)


def processed(event_node: str, limits: NodeLimits) -> set[str]:
    """The tree nodes whose infinite-depth subscriptions an event at ``event_node`` reaches."""
    subscriptions = {node: compiled(f'"{node}" depth *') for node in TREE}
    with using(limits):
        return {node for node, c in subscriptions.items() if c.structured(at(event_node))}


class TestFigure2:
    """Figure 2: subscription depth."""

    @pytest.mark.parametrize("case", VECTORS["figure2"], ids=lambda c: c["constraint"])
    def test_caption(self, case: dict[str, Any]) -> None:
        """The subscription is notified for exactly the nodes the caption lists."""
        c = compiled(case["constraint"])
        assert {node for node in TREE if c.structured(at(node))} == set(case["notified"])


class TestFigure3:
    """Figure 3: the upward propagation limit of the node that changed."""

    @pytest.mark.parametrize("case", VECTORS["figure3"]["cases"], ids=lambda c: c["event"])
    def test_caption(self, case: dict[str, Any]) -> None:
        """The event reaches exactly the subscriptions the caption lists."""
        limits = table(VECTORS["figure3"]["limits"])
        assert processed(case["event"], limits) == set(case["processed"])

    def test_no_limits_reach_every_ancestor(self) -> None:
        """Without a table every ancestor's subscription is processed (the default, -1)."""
        assert processed("\\Asia\\India\\Bombay", NodeLimits()) == {
            "", "\\Asia", "\\Asia\\India", "\\Asia\\India\\Bombay"}

    def test_limit_of_an_ancestor_does_not_apply(self) -> None:
        """Only the generating node's limit counts: India's limit 0 leaves Bombay alone."""
        limits = NodeLimits([NodeLimit("\\Asia\\India", 0)])
        assert "\\Asia" in processed("\\Asia\\India\\Bombay", limits)


class TestFigure4:
    """Figure 4: notification barricades."""

    @pytest.mark.parametrize("case", VECTORS["figure4"]["cases"], ids=lambda c: c["event"])
    def test_caption(self, case: dict[str, Any]) -> None:
        """With a barricade on India, events reach exactly the listed subscriptions."""
        limits = table(VECTORS["figure4"]["limits"])
        assert processed(case["event"], limits) == set(case["processed"])

    def test_depth_and_barricade_combine(self) -> None:
        """A depth-1 subscription on Asia misses New Delhi by depth, whatever the limits."""
        assert not compiled("\\Asia depth 1").structured(at("\\Asia\\India\\New Delhi"))


class TestSyntax:
    """The text form."""

    @pytest.mark.parametrize("vector", VALID, ids=[v["text"] for v in VALID])
    def test_valid(self, vector: dict[str, Any]) -> None:
        """Each valid vector parses to its path and depth."""
        assert parse_subscription(vector["text"]) == Subscription(tuple(vector["path"]),
                                                                  vector["depth"])

    @pytest.mark.parametrize("vector", INVALID, ids=[v["text"] for v in INVALID])
    def test_invalid(self, vector: dict[str, Any]) -> None:
        """Each invalid vector is refused at its pinned offset."""
        with pytest.raises(SubtreeSyntaxError) as caught:
            parse_subscription(vector["text"])
        assert caught.value.position == vector["error_offset"]

    def test_empty_text_is_the_whole_tree(self) -> None:
        """The empty constraint is the root with infinite depth."""
        assert parse_subscription("  ") == Subscription((), -1)

    def test_too_long(self) -> None:
        """Texts longer than the EXTENDED_TCL limit are refused."""
        with pytest.raises(SubtreeSyntaxError):
            parse_subscription("\\" + "a" * MAX_LENGTH)

    @given(st.lists(st.text(st.characters(exclude_characters="\\", exclude_categories=["Cs"]),
                            min_size=1, max_size=6), max_size=5),
           st.one_of(st.just(-1), st.integers(0, 2 ** 31 - 1)))
    def test_render_parses_back(self, names: list[str], depth: int) -> None:
        """Any subscription renders to text that parses back to it."""
        subscription = Subscription(tuple(names), depth)
        assert parse_subscription(render_subscription(subscription)) == subscription

    @settings(max_examples=400)
    @given(st.one_of(st.text(), st.text(st.sampled_from(list('\\ "depth*-0123\n\tx')))))
    def test_random_text(self, text: str) -> None:
        """Random text parses or raises SubtreeSyntaxError with a position inside it."""
        try:
            parse_subscription(text)
        except SubtreeSyntaxError as err:
            assert 0 <= err.position <= len(text)


class TestEvents:
    """Where an event's node comes from."""

    def test_variable_header(self) -> None:
        """``node`` in the variable header counts when filterable_data has none."""
        ev = structured(variable={"node": "\\Asia"})
        assert event_path(ev) == ("Asia",)
        assert compiled("\\Asia").structured(ev) and not compiled("\\Europe").structured(ev)

    def test_filterable_data_first(self) -> None:
        """filterable_data's ``node`` wins over the variable header's."""
        ev = structured(variable={"node": "\\Asia"}, filterable={"node": "\\Europe"})
        assert compiled("\\Europe").structured(ev) and not compiled("\\Asia").structured(ev)

    def test_root_names(self) -> None:
        """The root is "" or "\\" in events."""
        assert event_path(at("")) == () == event_path(at("\\"))

    @pytest.mark.parametrize("node", ["Asia", "\\Asia\\", "\\Asia\\\\India"])
    def test_malformed_path_matches_nothing(self, node: str) -> None:
        """A node value that is not a pathname matches no subscription, not even the root."""
        assert not compiled("\\").structured(at(node))

    def test_non_string_node(self) -> None:
        """A numeric ``node`` matches nothing."""
        assert not compiled("\\").structured(structured(filterable={"node": 3}))

    def test_wstring_and_nested_any(self) -> None:
        """A wstring, or a string inside an inner Any, is read (slow path)."""
        wide = CORBA.Any(CORBA.TC_wstring, "\\Asia")
        nested = CORBA.Any(CORBA.TC_any, CORBA.Any(CORBA.TC_string, "\\Asia"))
        c = compiled("\\Asia")
        assert c.structured(at(wide)) and c.structured(at(nested))

    def test_typed_event(self) -> None:
        """A typed event's ``node`` pair."""
        seq = [N.Property("node", CORBA.Any(CORBA.TC_string, "\\Asia\\India"))]
        assert compiled("\\Asia depth 1").typed(seq)
        assert not compiled("\\Europe").typed(seq)

    def test_unstructured_string_and_property_seq(self) -> None:
        """An unstructured event is a pathname string, or a PropertySeq with ``node``."""
        c = compiled("\\Asia")
        assert c.any(CORBA.Any(CORBA.TC_string, "\\Asia\\India"))
        seq = [N.Property("node", CORBA.Any(CORBA.TC_string, "\\Asia"))]
        assert c.any(CORBA.Any(N._tc_PropertySeq, seq))
        assert not c.any(CORBA.Any(CORBA.TC_long, 1))

    @pytest.mark.parametrize("event", [None, 3, "x", [], object()])
    def test_malformed_events(self, event: Any) -> None:
        """Anything that is not an event is FALSE in every form."""
        c = compiled("\\")
        assert c.structured(event) is False and c.any(event) is False and c.typed(event) is False


class TestContext:
    """The per-channel table in the context variable."""

    def test_set_and_reset(self) -> None:
        """set_limits/reset_limits and using() restore the previous table."""
        assert current_limits() is None
        limits = NodeLimits()
        token = set_limits(limits)
        assert current_limits() is limits
        with using(None):
            assert current_limits() is None
        reset_limits(token)
        assert current_limits() is None

    def test_other_thread_sees_no_table(self) -> None:
        """A table made current in one thread does not leak into another."""
        seen: list[Any] = []
        with using(NodeLimits()):
            worker = threading.Thread(target=lambda: seen.append(current_limits()))
            worker.start()
            worker.join()
        assert seen == [None]


class TestFilterObject:
    """End to end through the filter factory."""

    def test_match_structured(self) -> None:
        """create_filter("OES_SUBTREE") + add_constraints + match_structured."""
        f = FilterFactory().create_filter("OES_SUBTREE")
        f.add_constraints([CosNotifyFilter.ConstraintExp([], "\\Asia\\India depth 1")])
        assert f.match_structured(at("\\Asia\\India\\Bombay"))
        assert not f.match_structured(at("\\Asia"))

    def test_limits_apply_through_the_filter(self) -> None:
        """The filter's matchers read the current table (Figure 3, Bombay)."""
        f = FilterFactory().create_filter("OES_SUBTREE")
        f.add_constraints([CosNotifyFilter.ConstraintExp([], "\\Asia")])
        with using(NodeLimits([NodeLimit("\\Asia\\India\\Bombay", 0)])):
            assert not f.match_structured(at("\\Asia\\India\\Bombay"))
        assert f.match_structured(at("\\Asia\\India\\Bombay"))

    @settings(max_examples=100, deadline=None)
    @given(st.text(max_size=60))
    def test_random_text_gives_only_invalid_constraint(self, text: str) -> None:
        """Random constraint text is accepted or refused with InvalidConstraint only."""
        f = FilterFactory().create_filter("OES_SUBTREE")
        try:
            f.add_constraints([CosNotifyFilter.ConstraintExp([], text)])
        except CosNotifyFilter.InvalidConstraint:
            return
        assert f.match_structured(at("\\Asia")) in (True, False)


class TestPathologicalText:
    """Long texts that would be quadratic for a regular-expression search."""

    @pytest.mark.parametrize("text", [
        "\\a" + " " * 32000,
        "\\a" + " \t" * 16000 + "x",
        "\\a" + " depth" * 5000,
        '"' + '""' * 16000 + "x",
        '"\\a"' + " " * 30000 + "depth" + " " * 2000 + "x",
    ], ids=["spaces", "tabs", "depth-words", "quotes", "quoted-spaces"])
    def test_finishes(self, text: str) -> None:
        """Each parses or raises SubtreeSyntaxError (in linear time: no hang)."""
        try:
            parse_subscription(text)
        except SubtreeSyntaxError:
            pass


class TestReviewFindings:
    """The split cache's size, and the path left out before a depth clause."""

    def test_long_pathnames_are_not_cached(self) -> None:
        """Events with pathnames over PATH_CACHE_CHARS match but leave nothing in the cache."""
        from cosnotify.filter.oes import subtree

        c = compiled("\\b depth *")
        long_names = [f"\\x{i}" + "\\a" * 2_500 for i in range(20)]
        for node in long_names:
            assert not c.structured(at(node))
        assert c.structured(at("\\b\\c"))
        assert not any(node in subtree._PATHS for node in long_names)
        assert "\\b\\c" in subtree._PATHS
        assert all(len(key) <= subtree.PATH_CACHE_CHARS for key in subtree._PATHS)

    def test_cache_stays_within_its_character_budget(self) -> None:
        """However many distinct pathnames are seen, the cache holds at most the budget."""
        from cosnotify.filter.oes import subtree

        pad = "p" * 1000
        for i in range(subtree.PATH_CACHE_BUDGET_CHARS // 1000 + 50):
            event_path(at(f"\\{i:08d}{pad}"))
            assert sum(len(key) for key in subtree._PATHS) <= subtree.PATH_CACHE_BUDGET_CHARS

    @pytest.mark.parametrize("text", [" depth 1", "depth 1", "  DEPTH 1  "])
    def test_depth_clause_without_a_path_is_the_root(self, text: str) -> None:
        """The grammar's optional path: ``depth D`` alone subscribes the root with depth D."""
        assert parse_subscription(text) == Subscription((), 1)
        c = compiled(text)
        assert c.structured(at("\\Asia")) and not c.structured(at("\\Asia\\India"))
