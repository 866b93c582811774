"""NodeLimits: the per-channel table of upward propagation limits and barricades."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cosnotify.filter.oes import NodeLimit, NodeLimits, format_path, split_path
from cosnotify.filter.oes.limits import _reach

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
        assert _reach(limits, path) == reference_reach(limits, path)
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
