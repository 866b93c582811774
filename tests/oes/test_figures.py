"""Figures 2-5 of the seed, through a tree's subscription contracts.

Source: /work/shared/seeds/object-eventing-service.txt, "Basic Concepts":
Figure 2 (subscription depth), Figure 3 (upward propagation limit), Figure 4
(notification barricade), Figure 5 (subscription pools), on the Figure 1 tree.
Each case runs with the channel's routing index and with the scan (every
proxy's filter asked): both must give the seed's answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.service import ServiceConfig
from cosnotify.oes import Tree
from tests.oes.conftest import FIGURE_1, Recorder, figure_1, settle


@pytest.fixture(params=["index", "scan"])
def routed(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Tree]]:
    """A channel and its Figure 1 tree, routed by the index or by the scan."""
    with EventChannelFactory(ServiceConfig(routing=request.param),
                             clock=ManualClock()) as made:
        channel, _ = made.create_channel([], [])
        tree = Tree.of(channel)
        figure_1(tree)
        yield channel, tree


def watch(tree: Tree, where: str, depth: int = -1) -> Recorder:
    """A contract with one subscription, and its consumer."""
    recorder = Recorder()
    contract = tree.lease_contract(recorder, 3600)
    tree.subscribe(contract.contract_id, where, depth)
    return recorder


def touch_all(channel: Any, tree: Tree, paths: list[str]) -> None:
    for path in paths:
        tree.post(path)
    settle(channel)


class TestFigure2:
    """Figure 2: "Subscription depth"."""

    def test_depth_zero_on_asia(self, routed: tuple[Any, Tree]) -> None:
        """Figure 2: "Subscription with depth d≤0 placed on Asia receives notifications
        for changes to Asia only"."""
        channel, tree = routed
        asia = watch(tree, r"\Asia", 0)
        touch_all(channel, tree, FIGURE_1)
        assert asia.nodes() == {r"\Asia"}

    def test_depth_one_on_india(self, routed: tuple[Any, Tree]) -> None:
        """Figure 2: "Subscription with depth d≤1 placed on India receives notification for
        changes to India, Bombay, Calcutta, and New Delhi"."""
        channel, tree = routed
        india = watch(tree, r"\Asia\India", 1)
        touch_all(channel, tree, FIGURE_1)
        assert india.nodes() == {r"\Asia\India", r"\Asia\India\Bombay",
                                 r"\Asia\India\Calcutta", r"\Asia\India\New Delhi"}

    def test_infinite_depth_on_europe(self, routed: tuple[Any, Tree]) -> None:
        """Figure 2: "Subscription with depth d≤∞ placed on Europe receives notification for
        changes to Europe, France, Nice, Paris, Ireland, Cork, and Dublin"."""
        channel, tree = routed
        europe = watch(tree, r"\Europe")
        touch_all(channel, tree, FIGURE_1)
        assert europe.nodes() == {p for p in FIGURE_1 if p.startswith(r"\Europe")}
        assert len(europe.events) == 7

    def test_depth_counts_from_the_subscription(self, routed: tuple[Any, Tree]) -> None:
        """Figure 2's text: "If the process places a subscription with depth one on the node
        named 'India', then it will receive notification events for operations that
        affect that node, plus its immediate children" -- a grandchild is not one."""
        channel, tree = routed
        tree.create(r"\Asia\India\Bombay\Colaba")
        india = watch(tree, r"\Asia\India", 1)
        touch_all(channel, tree, [r"\Asia\India\Bombay\Colaba", r"\Asia\India\Bombay"])
        assert india.nodes() == {r"\Asia\India\Bombay"}


def ladder(tree: Tree) -> dict[str, Recorder]:
    """Infinite-depth subscriptions on the root and on each node of the Asia branch."""
    return {where: watch(tree, where) for where in
            ["\\", r"\Asia", r"\Asia\India", r"\Asia\India\Bombay", r"\Asia\India\Calcutta",
             r"\Asia\India\New Delhi"]}


def reached(watchers: dict[str, Recorder], node: str) -> set[str]:
    return {where for where, recorder in watchers.items() if node in recorder.nodes()}


class TestFigure3:
    """Figure 3: "Subscription notification upward propagation limit"."""

    def test_the_three_limits(self, routed: tuple[Any, Tree]) -> None:
        """Figure 3: "if the limit on the node named 'Bombay' is zero, then only
        subscriptions placed directly on that node are evaluated. If the limit on the node
        'Calcutta' is one then subscriptions placed on that node and ... ('India') are
        evaluated. If the limit on the node 'New Delhi' is infinity, then subscriptions
        placed on any node along the path ... 'New Delhi', 'India', 'Asia', and the root"."""
        channel, tree = routed
        tree.post(r"\Asia\India\Bombay", upl=0)
        tree.post(r"\Asia\India\Calcutta", upl=1)
        tree.post(r"\Asia\India\New Delhi", upl=-1)
        watchers = ladder(tree)
        touch_all(channel, tree, [r"\Asia\India\Bombay", r"\Asia\India\Calcutta",
                                  r"\Asia\India\New Delhi"])
        assert reached(watchers, r"\Asia\India\Bombay") == {r"\Asia\India\Bombay"}
        assert reached(watchers, r"\Asia\India\Calcutta") == {r"\Asia\India\Calcutta",
                                                              r"\Asia\India"}
        assert reached(watchers, r"\Asia\India\New Delhi") == {
            r"\Asia\India\New Delhi", r"\Asia\India", r"\Asia", "\\"}

    def test_only_the_generating_node_limit_counts(self, routed: tuple[Any, Tree]) -> None:
        """Figure 3: the limit "controls how far up the tree subscriptions are evaluated"
        for notifications the node generates; India's limit of 0 does not stop
        Bombay's notifications."""
        channel, tree = routed
        tree.post(r"\Asia\India", upl=0)
        watchers = ladder(tree)
        touch_all(channel, tree, [r"\Asia\India\Bombay", r"\Asia\India"])
        assert reached(watchers, r"\Asia\India\Bombay") == {
            r"\Asia\India\Bombay", r"\Asia\India", r"\Asia", "\\"}
        assert reached(watchers, r"\Asia\India") == {r"\Asia\India"}

    def test_a_changed_limit_applies_at_once(self, routed: tuple[Any, Tree]) -> None:
        """NODE table, Upl: the node's present limit decides; setting it back to -1
        ("infinite") lets the notifications up again."""
        channel, tree = routed
        asia = watch(tree, r"\Asia")
        tree.post(r"\Asia\India\Bombay", upl=0)
        touch_all(channel, tree, [r"\Asia\India\Bombay"])
        tree.post(r"\Asia\India\Bombay", upl=-1)
        touch_all(channel, tree, [r"\Asia\India\Bombay"])
        assert [op for op, node in asia.seen if node == r"\Asia\India\Bombay"] == [
            "post", "touch"]  # the post setting -1, then the touch; not the first touch


class TestFigure4:
    """Figure 4: "Notification barricade"."""

    def test_barricade_on_india(self, routed: tuple[Any, Tree]) -> None:
        """Figure 4: "if a barricade is placed at the node named 'India' then notifications
        from the node named 'New Delhi' will no longer make it to subscribers on the node
        'Asia.' Notifications from the nodes 'Bombay' and 'Calcutta' are unaffected"."""
        channel, tree = routed
        tree.post(r"\Asia\India\Bombay", upl=0)
        tree.post(r"\Asia\India\Calcutta", upl=1)
        tree.post(r"\Asia\India", barricade=True)
        watchers = ladder(tree)
        touch_all(channel, tree, [r"\Asia\India\Bombay", r"\Asia\India\Calcutta",
                                  r"\Asia\India\New Delhi"])
        assert reached(watchers, r"\Asia\India\New Delhi") == {r"\Asia\India\New Delhi",
                                                               r"\Asia\India"}
        assert reached(watchers, r"\Asia\India\Bombay") == {r"\Asia\India\Bombay"}
        assert reached(watchers, r"\Asia\India\Calcutta") == {r"\Asia\India\Calcutta",
                                                              r"\Asia\India"}

    def test_regardless_of_the_limit(self, routed: tuple[Any, Tree]) -> None:
        """NODE table, Barricade: "notifications will not propagate up the tree beyond this
        node, regardless of the value of the generating node's upward propagation
        limit" -- and a barricade's own notifications stay at it."""
        channel, tree = routed
        tree.post(r"\Asia\India", barricade=True)
        tree.post(r"\Asia\India\New Delhi", upl=5)
        watchers = ladder(tree)
        touch_all(channel, tree, [r"\Asia\India\New Delhi", r"\Asia\India"])
        assert reached(watchers, r"\Asia\India\New Delhi") == {r"\Asia\India\New Delhi",
                                                               r"\Asia\India"}
        assert reached(watchers, r"\Asia\India") == {r"\Asia\India"}


@pytest.fixture
def pooled(routed: tuple[Any, Tree]) -> tuple[Any, Tree]:
    """Figure 5's tree: Countries, and Malaysia beside India; France, India, Ireland and
    Malaysia pooled to Countries."""
    channel, tree = routed
    tree.create(r"\Countries")
    tree.create(r"\Asia\Malaysia")
    for node in (r"\Europe\France", r"\Asia\India", r"\Europe\Ireland", r"\Asia\Malaysia"):
        tree.post(node, subscription_pool=r"\Countries")
    return channel, tree


class TestFigure5:
    """Figure 5: "Subscription pools"."""

    def test_the_normal_bubbling_is_short_circuited(self, pooled: tuple[Any, Tree]) -> None:
        """Figure 5: a pool "short-circuits the normal upward bubbling of a notification
        event generated at that node": France's changes no longer reach Europe; the
        subscriptions on France itself still see them (cosnotify's reading: the
        short-circuit is of the *upward* bubbling)."""
        channel, tree = pooled
        europe, france = watch(tree, r"\Europe"), watch(tree, r"\Europe\France", 0)
        touch_all(channel, tree, [r"\Europe\France"])
        assert europe.nodes() == set() and france.nodes() == {r"\Europe\France"}

    def test_countries_covers_the_pooled_sub_trees(self, pooled: tuple[Any, Tree]) -> None:
        """Figure 5: "changes to any of France, India, Ireland, or Malaysia result in
        subscriptions on the node name Countries to be processed", and (review finding 7)
        the caption: "Subscription pools placed on France, India, Ireland, and Malaysia to
        Countries: subscriptions need only be placed on Countries to cover all these
        independent sub-trees" -- Paris, Calcutta, Cork... reach Countries too (even a
        depth-0 subscription: the redirected notification "appears it was generated from"
        Countries), and their bubbling is short-circuited at the pooled node, so Europe
        and Asia hear only themselves."""
        channel, tree = pooled
        countries, countries_0 = watch(tree, r"\Countries"), watch(tree, r"\Countries", 0)
        europe, asia, root = watch(tree, r"\Europe"), watch(tree, r"\Asia"), watch(tree, "\\")
        every = [*FIGURE_1, r"\Asia\Malaysia", r"\Countries"]
        touch_all(channel, tree, every)
        pooled_sub_trees = set(every) - {r"\Asia", r"\Europe"}
        assert countries.nodes() == pooled_sub_trees == countries_0.nodes()
        assert europe.nodes() == {r"\Europe"} and asia.nodes() == {r"\Asia"}
        assert root.nodes() == set(every)

    def test_the_sub_tree_bubbles_up_to_the_pooled_node(
            self, pooled: tuple[Any, Tree]) -> None:
        """Figure 5 with Figure 2: below the pooled node a notification bubbles as usual
        ("subscriptions are evaluated not just on the node where an operation takes place,
        but also all of the ancestors that lie on its path") up to France, whose pool then
        redirects it; France's own subscriptions count depth from France."""
        channel, tree = pooled
        france_1, france_0 = watch(tree, r"\Europe\France", 1), watch(tree, r"\Europe\France", 0)
        touch_all(channel, tree, [r"\Europe\France\Paris", r"\Europe\France"])
        assert france_1.nodes() == {r"\Europe\France\Paris", r"\Europe\France"}
        assert france_0.nodes() == {r"\Europe\France"}

    def test_the_generating_node_limit_decides_whether_it_reaches_the_pool(
            self, pooled: tuple[Any, Tree]) -> None:
        """Figures 3-5: Paris's notification reaches France's pool only if "its upward
        propagation limit" lets it reach France: with limit 0 ("only subscriptions placed
        directly on that node are evaluated") or a barricade on Paris, Countries does not
        hear it; Nice, unlimited, still reaches it."""
        channel, tree = pooled
        tree.post(r"\Europe\France\Paris", upl=0)
        tree.post(r"\Europe\France\Nice", barricade=True)
        tree.create(r"\Europe\France\Lyon")
        countries = watch(tree, r"\Countries")
        touch_all(channel, tree, [r"\Europe\France\Paris", r"\Europe\France\Nice",
                                  r"\Europe\France\Lyon"])
        assert countries.nodes() == {r"\Europe\France\Lyon"}

    def test_bubbling_continues_from_the_pool(self, routed: tuple[Any, Tree]) -> None:
        """Figure 5: "Normal bubbling of the redirected notification event continues upward
        from this other node" -- within that node's own upward propagation limit."""
        channel, tree = routed
        tree.create(r"\World\Countries", parents=True)
        tree.post(r"\Europe\France", subscription_pool=r"\World\Countries")
        world, root = watch(tree, r"\World"), watch(tree, "\\")
        touch_all(channel, tree, [r"\Europe\France"])
        assert world.nodes() == {r"\Europe\France"} and root.nodes() == {r"\Europe\France"}
        tree.post(r"\World\Countries", upl=0)
        touch_all(channel, tree, [r"\Europe\France"])
        assert [n for _, n in world.seen].count(r"\Europe\France") == 1

    def test_pools_chain(self, pooled: tuple[Any, Tree]) -> None:
        """Figure 5: the redirected notification "appears it was generated from" the pool
        node, so that node's own pool redirects it again."""
        channel, tree = pooled
        tree.create(r"\Hub")
        tree.post(r"\Countries", subscription_pool=r"\Hub")
        hub = watch(tree, r"\Hub", 0)
        touch_all(channel, tree, [r"\Europe\Ireland"])
        assert hub.nodes() == {r"\Europe\Ireland"}

    def test_one_notification_however_many_subscriptions(
            self, pooled: tuple[Any, Tree]) -> None:
        """SUBSCRIBE: "for a given notification-generating operation in the OES tree, only
        one notification will be delivered for a given contract, regardless of how many
        subscriptions placed with that contract may absorb the notification"."""
        channel, tree = pooled
        recorder = Recorder()
        contract = tree.lease_contract(recorder, 3600)
        for where in (r"\Countries", r"\Europe\France", "\\"):
            tree.subscribe(contract.contract_id, where)
        touch_all(channel, tree, [r"\Europe\France"])
        assert recorder.seen == [("touch", r"\Europe\France")]
