"""NodeLimits: the per-channel table of upward propagation limits and barricades."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cosnotify.filter.oes import NodeLimit, NodeLimits, format_path, split_path
from cosnotify.filter.oes.limits import (
    CACHE_BUDGET_CHARS,
    CACHE_PATH_CHARS,
    MAX_UPL,
    _barricades,
    _reach,
)

_names = st.sampled_from(["a", "b", "c"])
_paths = st.lists(_names, max_size=5).map(tuple)


def reference_reach(limits: dict[tuple[str, ...], NodeLimit], path: tuple[str, ...]) -> int:
    """The seed's rules walked one ancestor at a time (Figures 3 and 4, NODE table)."""
    own = limits.get(path)
    upl = -1 if own is None else own.upl
    length, climbed = len(path), 0
    while length > 0:
        here = limits.get(path[:length])
        if here is not None and here.barricade:
            break  # "will not propagate up the tree beyond this node"
        if upl != -1 and climbed >= upl:
            break  # "controls how far up the tree subscriptions are evaluated"
        length -= 1
        climbed += 1
    return length


class TestTable:
    """Setting and reading limits."""

    def test_defaults(self) -> None:
        """An unlisted node has the NODE table's defaults: Upl -1, no barricade."""
        assert NodeLimits().get("\\Asia") == NodeLimit("\\Asia", -1, False)

    def test_set_and_remove(self) -> None:
        """Setting the defaults removes a node from the table."""
        limits = NodeLimits()
        limits.set("\\Asia", 2)
        assert len(limits) == 1 and limits.get(("Asia",)).upl == 2
        limits.set("\\Asia")
        assert len(limits) == 0

    @pytest.mark.parametrize("path", ["Asia", "\\Asia\\", "\\a\\\\b", ("a", ""), ("a\\b",), 3])
    def test_bad_paths(self, path: Any) -> None:
        """Malformed paths are ValueError."""
        with pytest.raises(ValueError):
            NodeLimit(path)

    def test_limit_below_minus_one(self) -> None:
        """NODE.Upl constraint [Upl] >= -1."""
        with pytest.raises(ValueError):
            NodeLimit("\\a", -2)

    def test_change_invalidates_cached_reach(self) -> None:
        """A reach computed before a change is not served after it."""
        limits = NodeLimits()
        path = ("Asia", "India", "Bombay")
        assert limits.reach(path) == 0
        limits.set("\\Asia\\India\\Bombay", 0)
        assert limits.reach(path) == 3
        limits.clear()
        assert limits.reach(path) == 0

    def test_paths_round_trip(self) -> None:
        """format_path and split_path are inverse; the root is "\\" or ""."""
        assert split_path(format_path(("Asia", "New Delhi"))) == ("Asia", "New Delhi")
        assert split_path("") == () == split_path("\\") and format_path(()) == "\\"


class TestReach:
    """The reach against a step-by-step reading of the seed."""

    @given(st.dictionaries(_paths, st.tuples(st.integers(-1, 4), st.booleans()), max_size=8),
           _paths)
    def test_matches_reference(self, spec: dict[tuple[str, ...], tuple[int, bool]],
                               path: tuple[str, ...]) -> None:
        """The computed reach equals the walk up the tree for random tables."""
        limits = {p: NodeLimit(p, upl, bar) for p, (upl, bar) in spec.items()}
        assert _reach(limits, _barricades(limits), path) == reference_reach(limits, path)
        assert NodeLimits(limits.values()).reach(path) == reference_reach(limits, path)


class TestIdl:
    """CosNotifyGrammars::NodeLimitSeq."""

    def test_round_trip(self) -> None:
        """to_seq then from_seq gives the same table, sorted by path."""
        limits = NodeLimits([NodeLimit("\\Asia\\India", -1, True), NodeLimit("\\Asia", 0)])
        seq = limits.to_seq()
        assert [(x.path, x.upl, x.barricade) for x in seq] == [
            ("\\Asia", 0, False), ("\\Asia\\India", -1, True)]
        assert list(NodeLimits.from_seq(seq)) == list(limits)

    def test_from_seq_refuses_bad_entries(self) -> None:
        """A malformed path or limit in the sequence is ValueError."""
        import CosNotifyGrammars

        for bad in (CosNotifyGrammars.NodeLimit("Asia", 0, False),
                    CosNotifyGrammars.NodeLimit("\\Asia", -5, False)):
            with pytest.raises(ValueError):
                NodeLimits.from_seq([bad])


class TestThreads:
    """Readers and writers at once."""

    def test_concurrent_reads_and_writes(self) -> None:
        """Reaches read while another thread flips a barricade are always one of the two."""
        limits = NodeLimits()
        path = ("a", "b", "c")
        stop = threading.Event()
        seen: set[int] = set()

        def flip() -> None:
            while not stop.is_set():
                limits.set("\\a\\b", barricade=True)
                limits.set("\\a\\b")

        writer = threading.Thread(target=flip)
        writer.start()
        try:
            for _ in range(20000):
                seen.add(limits.reach(path))
        finally:
            stop.set()
            writer.join()
        assert seen <= {0, 2}
        limits.set("\\a\\b")
        assert limits.reach(path) == 0


class _CountingNodes(dict[tuple[str, ...], NodeLimit]):
    """A node table that counts the path names its lookups hash."""

    hashed = 0

    def get(self, key: Any, default: Any = None) -> Any:
        self.hashed += len(key)
        return super().get(key, default)


class TestReachIsLinear:
    """Review finding: the reach looked up every prefix of the path (quadratic)."""

    def test_one_lookup_of_the_whole_path(self) -> None:
        """A 64,000-name path costs one table lookup of its own length, not one per prefix."""
        spec = [NodeLimit("\\z", 0, True), NodeLimit("\\a", -1, True),
                NodeLimit("\\a\\a\\a", 2, True), NodeLimit("\\a\\b", 1)]
        nodes = _CountingNodes({limit.path: limit for limit in spec})
        path = ("a",) * 64_000
        assert _reach(nodes, _barricades(nodes), path) == 3
        assert nodes.hashed == len(path)

    def test_barricade_walk_stops_where_the_path_leaves_the_trie(self) -> None:
        """Only barricaded nodes are in the trie; the walk follows the path no deeper."""
        limits = {p.path: p for p in (NodeLimit("\\a\\b", barricade=True),
                                      NodeLimit("\\a\\b\\c\\d", 3))}
        trie = _barricades(limits)
        assert list(trie) == ["a"] and list(trie["a"][1]) == ["b"]
        assert trie["a"][1]["b"] == (True, {})

    def test_long_paths_agree_with_the_reference(self) -> None:
        """Barricades and a limit on a deep path give the step-by-step walk's answer."""
        deep = ("a",) * 300
        spec = [NodeLimit(deep[:100], barricade=True), NodeLimit(deep[:250], barricade=True),
                NodeLimit(deep, 20)]
        table = NodeLimits(spec)
        limits = {limit.path: limit for limit in spec}
        for path in (deep, deep[:260], deep[:249], ("a", "b") * 150, deep[:100]):
            assert table.reach(path) == reference_reach(limits, path)


class TestReachCacheSize:
    """Review finding: the reach cache was bounded by count only, so long paths stayed alive."""

    def test_long_paths_are_not_cached(self) -> None:
        """A path whose pathname is over CACHE_PATH_CHARS is computed but never kept."""
        limits = NodeLimits([NodeLimit("\\a", 0)])
        long_path = ("x" * 600, "y" * 600)
        short = ("a", "b")
        assert limits.reach(long_path) == 0 and limits.reach(short) == 0
        cache = limits._snapshot.cache
        assert long_path not in cache and short in cache
        assert all(len(p) + sum(map(len, p)) <= CACHE_PATH_CHARS for p in cache)

    def test_budget_bounds_the_cached_characters(self) -> None:
        """However many distinct paths are reached, the cache holds at most the budget."""
        limits = NodeLimits([NodeLimit("\\a", 0)])
        snapshot = limits._snapshot
        name = "n" * 1000
        for i in range(CACHE_BUDGET_CHARS // 1000 + 50):
            limits.reach((f"{i:08d}", name[:-10]))
            assert snapshot.cached_chars <= CACHE_BUDGET_CHARS
        assert sum(len(p) + sum(map(len, p)) for p in snapshot.cache) == snapshot.cached_chars


class TestValidation:
    """Review finding: NodeLimits accepted duplicate nodes, out-of-range limits and
    non-boolean barricades, and reported default entries that are not in the table."""

    @pytest.mark.parametrize("pair", [("\\Asia\\India", "\\Asia\\India"), ("", "\\"),
                                      (("Asia",), "\\Asia")],
                             ids=["same", "root-two-ways", "tuple-and-text"])
    def test_same_node_twice_is_refused(self, pair: tuple[Any, Any]) -> None:
        """One node given twice in one table (after normalisation) is ValueError."""
        with pytest.raises(ValueError, match="twice"):
            NodeLimits([NodeLimit(pair[0], 0), NodeLimit(pair[1], -1, True)])
        limits = NodeLimits([NodeLimit("\\x", 1)])
        with pytest.raises(ValueError, match="twice"):
            limits.replace([NodeLimit(pair[0], 0), NodeLimit(pair[1], 2)])
        assert list(limits) == [NodeLimit("\\x", 1)]

    def test_same_node_twice_in_a_sequence(self) -> None:
        """from_seq refuses the root given as both "" and "\\", even with default values."""
        import CosNotifyGrammars as G

        with pytest.raises(ValueError):
            NodeLimits.from_seq([G.NodeLimit("", 0, False), G.NodeLimit("\\", 3, False)])
        with pytest.raises(ValueError):
            NodeLimits.from_seq([G.NodeLimit("\\a", -1, False), G.NodeLimit("\\a", 1, False)])

    @pytest.mark.parametrize("upl", [MAX_UPL + 1, 2 ** 40, True, 1.0])
    def test_upl_must_be_an_idl_long(self, upl: Any) -> None:
        """An upward propagation limit above 2**31-1 (or not an int) is ValueError."""
        with pytest.raises(ValueError):
            NodeLimit("\\a", upl)

    def test_largest_upl_is_accepted(self) -> None:
        """2**31-1, the largest IDL long, is a valid limit."""
        assert NodeLimit("\\a", MAX_UPL).upl == MAX_UPL

    @pytest.mark.parametrize("value", ["no", None, 2, -1, 1.0, "True"])
    def test_barricade_must_be_a_boolean(self, value: Any) -> None:
        """A barricade that is not True, False, 1 or 0 is ValueError."""
        import CosNotifyGrammars as G

        with pytest.raises(ValueError):
            NodeLimit("\\a", -1, value)
        with pytest.raises(ValueError):
            NodeLimits.from_seq([G.NodeLimit("\\a", -1, value)])

    @pytest.mark.parametrize(("value", "expected"), [(True, True), (False, False), (1, True),
                                                     (0, False)])
    def test_barricade_booleans_and_zero_one(self, value: Any, expected: bool) -> None:
        """True/False, and the ints 1/0, are accepted and stored as bool."""
        assert NodeLimit("\\a", -1, value).barricade is expected

    def test_default_entries_are_not_reported(self) -> None:
        """An entry equal to the defaults is dropped by the constructor, replace and
        from_seq, so to_seq reports exactly the table."""
        import CosNotifyGrammars as G

        assert len(NodeLimits([NodeLimit("\\Asia")])) == 0
        limits = NodeLimits()
        limits.replace([NodeLimit("\\Asia", -1, False), NodeLimit("\\Europe", 1)])
        assert [x.path for x in limits.to_seq()] == ["\\Europe"]
        table = NodeLimits.from_seq([G.NodeLimit("\\Asia", -1, False)])
        assert table.to_seq() == [] and list(table) == []
