"""OES_SUBTREE subscriptions in the channel's routing index (cosnotify/filter/oes/index.py).

Source: /work/shared/seeds/object-eventing-service.txt, "Basic Concepts":
Figure 2 ("subscriptions are evaluated not just on the node where an operation
takes place, but also all of the ancestors that lie on its path"), Figure 3
(upward propagation limits), Figure 4 (barricades), Figure 5 (subscription
pools: "redirects so that it appears it was generated from a different node.
Normal bubbling of the redirected notification event continues upward from
this other node"); issue 21's performance row (1,000 subtree subscriptions
must not cost 1,000 matches per post).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.service import ServiceConfig
from cosnotify.filter.oes.limits import NodeLimits
from cosnotify.oes import InvalidRequest, Tree
from cosnotify.oes.events import POST, notification
from tests.oes.conftest import Recorder, settle

Path = tuple[str, ...]


def index_of(channel: Any) -> Any:
    return channel._router.index


class TestIndexed:
    """The router indexes subscriptions by node pathname."""

    def test_subscriptions_are_indexed_not_opaque(self) -> None:
        """Every subscription is a posting of the index, none asked on every event."""
        with EventChannelFactory(ServiceConfig(routing="index"), clock=ManualClock()) as made:
            channel, _ = made.create_channel([], [])
            tree = Tree.of(channel)
            for n in range(20):
                tree.create(f"\\n{n}")
                tree.subscribe(tree.lease_contract(Recorder(), 60).contract_id, f"\\n{n}")
            stats = channel._router.stats()
            assert (stats["opaque_filters"], stats["fallback_constraints"],
                    stats["constraints"]) == (0, 0, 20)

    def test_candidates_are_the_subscriptions_on_the_path(self) -> None:
        """An event's candidates are the subscriptions on its node and its ancestors (Figure
        2), however many are placed elsewhere; with limits, only those it reaches (Figures
        3 and 4)."""
        from cosnotify.filter.oes.limits import using
        from cosnotify.filter.paths import Form

        with EventChannelFactory(ServiceConfig(routing="index"), clock=ManualClock()) as made:
            channel, _ = made.create_channel([], [])
            tree = Tree.of(channel)
            tree.create(r"\a\b\c", parents=True)
            places = ["\\", r"\a", r"\a\b", r"\a\b\c"] + [f"\\other{n}" for n in range(200)]
            for where in places:
                tree.post(where)
                tree.subscribe(tree.lease_contract(Recorder(), 60).contract_id, where)
            event = notification(POST, ("a", "b", "c"), None, None, -1, False, False, None)
            index = index_of(channel)

            def candidates(limits: NodeLimits | None) -> int:
                with using(limits):
                    return sum(len(p) for p, _, _ in index.candidates(event, Form.STRUCTURED,
                                                                ("OES", "post")))
            assert candidates(None) == 4
            assert candidates(NodeLimits([_limit(("a", "b", "c"), 1)])) == 2
            assert candidates(NodeLimits([_limit(("a", "b"), -1, True)])) == 2  # c and b


def _limit(path: Path, upl: int = -1, barricade: bool = False, pool: Path | None = None) -> Any:
    from cosnotify.filter.oes.limits import NodeLimit

    return NodeLimit(path, upl, barricade, pool)


# -- the seed's walk, as a reference ---------------------------------------------------------


def visits(limits: dict[Path, tuple[int, bool, Path | None]], node: Path) -> list[tuple[Path, int]]:
    """The nodes a notification generated at ``node`` visits, each with its distance from
    the node it appears to come from, walked one ancestor at a time as the seed tells
    it: upward from the generating node while its limit and no barricade stop it
    (Figures 3 and 4); at a node with a pool -- the generating node or one the bubbling
    reaches (Figure 5's caption: the pool covers the "sub-trees") -- on from the pool
    node "as if generated there", with that node's limit."""
    found = [(node, 0)]
    seen = {node}
    origin, here, climbed = node, node, 0
    while True:
        _, barricade, pool = limits.get(here, (-1, False, None))
        if pool is not None and pool not in seen:
            seen.add(pool)
            origin, here, climbed = pool, pool, 0
            found.append((here, 0))
            continue
        if barricade:
            break  # a barricade: "will not propagate up the tree beyond this node"
        upl = limits.get(origin, (-1, False, None))[0]
        if not here or (upl != -1 and climbed >= upl):
            break
        here, climbed = here[:-1], climbed + 1
        found.append((here, climbed))
    return found


def expected(limits: dict[Path, tuple[int, bool, Path | None]], where: Path, depth: int,
             node: Path) -> bool:
    return any(place == where and (depth == -1 or distance <= depth)
               for place, distance in visits(limits, node))


_names = st.sampled_from(["a", "b", "c"])
_paths = st.lists(_names, min_size=1, max_size=3).map(tuple)


@st.composite
def worlds(draw: Any) -> tuple[list[Path], dict[Path, tuple[int, bool, Path | None]],
                                list[tuple[Path, int]]]:
    nodes = sorted(set(draw(st.lists(_paths, min_size=1, max_size=7))), key=len)
    full = sorted({p[:n] for p in nodes for n in range(1, len(p) + 1)}, key=lambda p: (len(p), p))
    order = draw(st.permutations(full))
    limits: dict[Path, tuple[int, bool, Path | None]] = {}
    for i, path in enumerate(order):
        upl = draw(st.sampled_from([-1, -1, 0, 1, 2]))
        barricade = draw(st.booleans()) and draw(st.booleans())
        pool = draw(st.sampled_from([None, None, None, *order[:i]])) if i else None
        limits[path] = (upl, barricade, pool)  # a pool the tree refuses (a cycle) is dropped
    subscriptions = draw(st.lists(st.tuples(st.sampled_from([(), *full]),
                                            st.sampled_from([-1, 0, 1, 2])),
                                  min_size=1, max_size=5))
    return full, limits, subscriptions


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_index_scan_and_the_seed_agree(world: Any) -> None:
    """For random trees, limits, barricades, pools and subscriptions, each notification
    reaches exactly the contracts the seed's walk says (Figures 2-5), with the routing
    index and with the scan alike."""
    full, limits, subscriptions = world
    for routing in ("index", "scan"):
        with EventChannelFactory(ServiceConfig(routing=routing), clock=ManualClock()) as made:
            channel, _ = made.create_channel([], [])
            tree = Tree.of(channel)
            for path in full:
                tree.create("\\" + "\\".join(path))
            for path, (upl, barricade, pool) in list(limits.items()):
                pathname = "\\" + "\\".join(path)
                tree.post(pathname, upl=upl, barricade=barricade)
                if pool is not None:
                    try:
                        tree.post(pathname, subscription_pool="\\" + "\\".join(pool))
                    except InvalidRequest:  # it would redirect for ever: refused
                        limits[path] = (upl, barricade, None)
            watchers = []
            for where, depth in subscriptions:
                recorder = Recorder()
                tree.subscribe(tree.lease_contract(recorder, 60).contract_id,
                               "\\" + "\\".join(where), depth)
                watchers.append((where, depth, recorder))
            for path in full:
                tree.post("\\" + "\\".join(path))  # touches
            settle(channel)
            for where, depth, recorder in watchers:
                got = {node for op, node in recorder.seen if op == "touch"}
                want = {"\\" + "\\".join(p) for p in full if expected(limits, where, depth, p)}
                assert got == want, (routing, where, depth)


def test_reference_walk_figure_5() -> None:
    """The reference walk itself, on Figure 5's words: France pooled to Countries visits
    France, then Countries and what is above it; Paris visits Paris and France first
    (the caption: Countries covers France's "sub-tree")."""
    limits = {("Europe", "France"): (-1, False, ("Countries",))}
    assert visits(limits, ("Europe", "France")) == [
        (("Europe", "France"), 0), (("Countries",), 0), ((), 1)]
    assert visits(limits, ("Europe", "France", "Paris")) == [
        (("Europe", "France", "Paris"), 0), (("Europe", "France"), 1), (("Countries",), 0),
        ((), 1)]
