"""Subscription pools in the node limits table (cosnotify/filter/oes/limits.py).

Source: /work/shared/seeds/object-eventing-service.txt, Figure 5 ("A
subscription pool placed on a node short-circuits the normal upward bubbling
of a notification event generated at that node, and redirects so that it
appears it was generated from a different node. Normal bubbling of the
redirected notification event continues upward from this other node"), its
caption ("subscriptions need only be placed on Countries to cover all these
independent sub-trees") and the NODE table's SubscriptionPool column.
"""

from __future__ import annotations

import pytest

from cosnotify.filter.oes import NodeLimit, NodeLimits, compile_subscription, using
from cosnotify.filter.oes.subtree import Subscription
from cosnotify.oes.events import POST, notification

FRANCE = ("Europe", "France")
COUNTRIES = ("World", "Countries")


def event_at(path: tuple[str, ...]) -> object:
    return notification(POST, path, None, None, -1, False, False, None)


def matches(where: tuple[str, ...], depth: int, table: NodeLimits | None,
            path: tuple[str, ...]) -> bool:
    structured = compile_subscription(Subscription(where, depth))[0]
    with using(table):
        return bool(structured(event_at(path)))


class TestOrigins:
    def test_no_pool_one_origin(self) -> None:
        """Without pools an event is evaluated where it was generated, within its reach
        (Figures 3 and 4)."""
        table = NodeLimits([NodeLimit(FRANCE, 1)])
        assert not table.pooled
        assert table.origins(FRANCE) == ((FRANCE, 1),)

    def test_redirected_origins(self) -> None:
        """Figure 5: France's notification stays at France (no upward bubbling), then
        "appears it was generated from" Countries and bubbles from there."""
        table = NodeLimits([NodeLimit(FRANCE, pool=COUNTRIES)])
        assert table.pooled
        assert table.origins(FRANCE) == ((FRANCE, 2), (COUNTRIES, 0))

    def test_the_pool_node_limit_governs_the_redirected_bubbling(self) -> None:
        """Figure 5: "Normal bubbling ... continues upward from this other node": with
        Countries' own limit and the barricades above it."""
        table = NodeLimits([NodeLimit(FRANCE, 0, pool=COUNTRIES),
                            NodeLimit(COUNTRIES, 0)])
        assert table.origins(FRANCE) == ((FRANCE, 2), (COUNTRIES, 2))
        table = NodeLimits([NodeLimit(FRANCE, pool=COUNTRIES), NodeLimit(("World",),
                                                                         barricade=True)])
        assert table.origins(FRANCE) == ((FRANCE, 2), (COUNTRIES, 1))

    def test_a_cycle_ends(self) -> None:
        """A table given a cycle (a tree refuses them) still answers, once per node."""
        table = NodeLimits([NodeLimit(("a",), pool=("b",)), NodeLimit(("b",), pool=("a",))])
        assert table.origins(("a",)) == ((("a",), 1), (("b",), 0))

    def test_changes_are_seen(self) -> None:
        """A new pool (or none) is used at once: the cached origins go with the snapshot."""
        table = NodeLimits()
        assert table.origins(FRANCE) == ((FRANCE, 0),)
        table.set(FRANCE, pool=COUNTRIES)
        assert table.origins(FRANCE)[1] == (COUNTRIES, 0)
        table.set(FRANCE)
        assert table.origins(FRANCE) == ((FRANCE, 0),) and len(table) == 0


class TestMatching:
    @pytest.mark.parametrize(("where", "depth", "expected"), [
        (COUNTRIES, 0, True),        # "subscriptions on the node name Countries"
        (("World",), 1, True),       # bubbling continues from Countries
        ((), -1, True),
        (FRANCE, 0, True),           # France's own subscriptions (the bubbling reaches it)
        (("Europe",), -1, False),    # the upward bubbling from France is short-circuited
        (("World", "Countries", "x"), -1, False),
    ])
    def test_figure_5(self, where: tuple[str, ...], depth: int, expected: bool) -> None:
        """Figure 5: which subscriptions a change to France reaches when France's pool is
        Countries."""
        table = NodeLimits([NodeLimit(FRANCE, pool=COUNTRIES)])
        assert matches(where, depth, table, FRANCE) is expected

    def test_the_pooled_sub_tree_is_redirected(self) -> None:
        """Review finding 7; Figure 5's caption: "subscriptions need only be placed on
        Countries to cover all these independent sub-trees": Paris, below France, bubbles
        to France (its subscriptions count depth from France), is redirected there, and
        reaches Countries, not Europe."""
        table = NodeLimits([NodeLimit(FRANCE, pool=COUNTRIES)])
        paris = (*FRANCE, "Paris")
        assert table.origins(paris) == ((paris, 2), (COUNTRIES, 0))
        assert matches(COUNTRIES, 0, table, paris)
        assert matches(FRANCE, 1, table, paris) and not matches(FRANCE, 0, table, paris)
        assert not matches(("Europe",), -1, table, paris)

    def test_the_redirect_happens_only_within_the_generating_node_reach(self) -> None:
        """Figures 3 and 5: a sub-tree node whose limit stops it below the pooled node is
        not redirected (``(path, reach)`` alone); a barricade between it and the pooled
        node stops it too."""
        paris = (*FRANCE, "Paris")
        table = NodeLimits([NodeLimit(FRANCE, pool=COUNTRIES), NodeLimit(paris, 0)])
        assert table.origins(paris) == ((paris, 3),)
        deeper = (*paris, "Louvre")
        table = NodeLimits([NodeLimit(FRANCE, pool=COUNTRIES), NodeLimit(paris, barricade=True)])
        assert table.origins(deeper) == ((deeper, 3),)

    def test_the_pool_of_an_ancestor_of_the_pool_node_redirects_again(self) -> None:
        """Figure 5: "Normal bubbling of the redirected notification event continues upward
        from this other node" -- and a pooled node on that way redirects it in turn."""
        table = NodeLimits([NodeLimit(FRANCE, pool=COUNTRIES), NodeLimit(("World",),
                                                                         pool=("Hub",))])
        assert table.origins(FRANCE) == ((FRANCE, 2), (COUNTRIES, 1), (("Hub",), 0))


def test_pools_are_not_in_the_idl_form() -> None:
    """CosNotifyGrammars::NodeLimit has no pool: ``to_seq`` gives the other columns, and a
    node with only a pool is not a default entry (NODE table default: null)."""
    limit = NodeLimit(FRANCE, pool=COUNTRIES)
    assert not limit.is_default and NodeLimit(FRANCE).is_default
    (entry,) = NodeLimits([limit]).to_seq()
    assert (entry.path, entry.upl, entry.barricade) == ("\\Europe\\France", -1, False)
    with pytest.raises(ValueError):
        NodeLimit(FRANCE, pool="Countries")  # not a pathname
