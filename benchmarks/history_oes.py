"""Benchmark: OES posts with many subtree subscriptions (issue 21, docs/history.md).

Run: ``.venv/bin/python benchmarks/history_oes.py [--subscriptions 1000] [--posts 20000]``.

Strategy, in process: one channel and its OES tree. The posted node is on a
6-level path (``\\L0\\...\\L5``); ``subscriptions`` contracts (one consumer
each, in process) hold one subscription of infinite depth each: ``matching``
of them on the posted node's ancestors (so each post notifies that many), the
others spread over sibling sub-trees the posts never reach (each of them
must still not cost a match per post). Timed: from the first ``post`` until
every consumer has received every notification it is due. Side by side, in
the same run and rounds:

* **tree, index**: ``Tree.post`` with the channel's routing index (the
  default; OES_SUBTREE subscriptions are indexed by node pathname);
* **tree, scan**: the same with ``routing="scan"`` (every proxy's filter asked
  for every event: what the index saves);
* **push, index**: the tree's notifications built beforehand and pushed by a
  structured supplier into a channel with the same subscriptions (what the
  tree itself adds to a push);
* **tree, SQLite** (``--store``): a persistent channel in a factory over an
  ``SQLiteStore``: each post writes the node's record before it notifies;
* **tree, all match** and **push, all match** (``--crowd-posts``): every one
  of the ``subscriptions`` is on the posted node's path (spread over its
  levels), so each post notifies all of them: the delivery cost, compared in
  notifications per second.

``run(...)`` returns the report as lines (history_bench.py prints them).
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import sys
import tempfile
import threading
import time
from statistics import median
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import omniORB  # noqa: F401 - puts the COS stubs on sys.path
from machine import cpu_model  # benchmarks/machine.py, beside this script
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA

from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.service import ServiceConfig
from cosnotify.oes import Tree
from cosnotify.oes.events import POST, notification
from cosnotify.store.sqlite import SQLiteStore

LEVELS = 6
POSTED = tuple(f"L{i}" for i in range(LEVELS))


class Tally:
    """What every consumer received, and a wait for a total."""

    def __init__(self) -> None:
        self.count = 0
        self.cond = threading.Condition()
        self.goal = 0

    def wait(self, goal: int, timeout: float = 600.0) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.count >= goal, timeout)


class Consumer:
    """A contract's consumer: counts what it is given."""

    def __init__(self, tally: Tally) -> None:
        self.tally = tally

    def push_structured_event(self, event: Any) -> None:
        tally = self.tally
        with tally.cond:
            tally.count += 1
            if tally.count >= tally.goal:
                tally.cond.notify_all()

    def disconnect_structured_push_consumer(self) -> None:
        pass


def pathname(path: tuple[str, ...]) -> str:
    return "\\" + "\\".join(path)


def build(tree: Tree, subscriptions: int, matching: int, tally: Tally) -> None:
    """The posted path, ``matching`` subscriptions on it (from the node up) and the
    rest on sibling sub-trees (node ``\\L0..\\Lk\\S<n>`` at varying depths)."""
    tree.create(pathname(POSTED), parents=True)
    placed: list[str] = [pathname(POSTED[:LEVELS - i % LEVELS]) for i in range(matching)]
    n = 0
    while len(placed) < subscriptions:
        level = n % LEVELS  # siblings at every level of the posted path
        sibling = pathname((*POSTED[:level], f"S{n}"))
        tree.create(sibling, parents=True)
        placed.append(sibling)
        n += 1
    for where in placed:
        contract = tree.lease_contract(Consumer(tally), 3600)
        tree.subscribe(contract.contract_id, where)


def tree_case(factory: EventChannelFactory, subscriptions: int, matching: int,
              posts: int, rounds: int, qos: list[Any]) -> list[float]:
    channel, _ = factory.create_channel(qos, [])
    tree = Tree.of(channel)
    tally = Tally()
    build(tree, subscriptions, matching, tally)
    target = pathname(POSTED)
    rates = []
    contents = [i.to_bytes(4, "big") for i in range(posts)]
    for _ in range(rounds):
        with tally.cond:
            tally.goal = tally.count + posts * matching
        goal = tally.goal
        start = time.perf_counter()
        for content in contents:
            tree.post(target, content)
        if not tally.wait(goal):
            raise RuntimeError(f"notifications missing: {tally.count} of {goal}")
        rates.append(posts / (time.perf_counter() - start))
    channel.destroy()
    return rates


def push_case(factory: EventChannelFactory, subscriptions: int, matching: int,
              posts: int, rounds: int) -> list[float]:
    """The same notifications, made beforehand, pushed by a structured supplier."""
    channel, _ = factory.create_channel([], [])
    tree = Tree.of(channel)
    tally = Tally()
    build(tree, subscriptions, matching, tally)
    events = [notification(POST, POSTED, None, i.to_bytes(4, "big"), -1, False, False, None)
              for i in range(posts)]
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_push_supplier(None)
    rates = []
    for _ in range(rounds):
        with tally.cond:
            tally.goal = tally.count + posts * matching
        goal = tally.goal
        start = time.perf_counter()
        for event in events:
            proxy.push_structured_event(event)
        if not tally.wait(goal):
            raise RuntimeError(f"notifications missing: {tally.count} of {goal}")
        rates.append(posts / (time.perf_counter() - start))
    channel.destroy()
    return rates


def run(subscriptions: int = 1000, posts: int = 20000, matching: int = 6, rounds: int = 3,
        scan_posts: int = 2000, store: bool = True, crowd_posts: int = 200) -> list[str]:
    """The report, as lines (module docstring)."""
    lines = [(f"OES post: {subscriptions} subtree subscriptions (one contract each), "
              f"{matching} of them on the posted node's {LEVELS}-level path; "
              f"{posts} posts per round, {rounds} rounds; notifications delivered in process"),
             f"  machine: {cpu_model()}, Python {platform.python_version()}"]
    results: dict[str, list[float]] = {}
    crowd: dict[str, list[float]] = {}
    with EventChannelFactory() as factory:
        results["tree, index"] = tree_case(factory, subscriptions, matching, posts, rounds, [])
        results["push, index"] = push_case(factory, subscriptions, matching, posts, rounds)
        if crowd_posts:
            crowd["tree, all match"] = tree_case(factory, subscriptions, subscriptions,
                                                 crowd_posts, rounds, [])
            crowd["push, all match"] = push_case(factory, subscriptions, subscriptions,
                                                 crowd_posts, rounds)
    with EventChannelFactory(ServiceConfig(routing="scan")) as factory:
        results["tree, scan"] = tree_case(factory, subscriptions, matching, scan_posts,
                                          rounds, [])
    if store:
        persistent = [N.Property("ConnectionReliability", CORBA.Any(CORBA.TC_short, 1))]
        with tempfile.TemporaryDirectory() as tmp, EventChannelFactory(
                store=SQLiteStore(str(pathlib.Path(tmp) / "oes.db"))) as factory:
            results["tree, SQLite"] = tree_case(factory, subscriptions, matching,
                                                scan_posts, rounds, persistent)
    best = median(results["tree, index"])
    for label, values in results.items():
        ratio = median(values) / best
        lines.append(f"  {label:14}{median(values):10,.0f} posts/s   ({ratio:5.2f}x tree, "
                     "index)   rounds: " + ", ".join(f"{v:,.0f}" for v in values))
    for label, values in crowd.items():
        rate = median(values) * subscriptions
        lines.append(f"  {label:18}{median(values):8,.0f} posts/s = {rate:10,.0f} "
                     f"notifications/s ({rate / (best * matching):5.2f}x tree, index)   "
                     "rounds: " + ", ".join(f"{v:,.0f}" for v in values))
    goal = "met" if best >= 5000 else "MISSED"
    lines.append(f"  goal >= 5,000 posts/s with notifications delivered: {goal} "
                 f"({best:,.0f}; {best * matching:,.0f} notifications/s)")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--subscriptions", type=int, default=1000)
    parser.add_argument("--posts", type=int, default=20000)
    parser.add_argument("--matching", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scan-posts", type=int, default=2000,
                        help="posts per round of the scan and SQLite cases (slower)")
    parser.add_argument("--no-store", action="store_true", help="skip the SQLite case")
    parser.add_argument("--crowd-posts", type=int, default=200,
                        help="posts per round when every subscription matches (0: skip)")
    args = parser.parse_args()
    for line in run(args.subscriptions, args.posts, args.matching, args.rounds,
                    args.scan_posts, not args.no_store, args.crowd_posts):
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
