"""Constraint changes while events are routed (§3.2.1.2: changes are atomic).

Every version a filter publishes here passes the events with ``k == 0`` and
none of those with ``k >= 4``; versions differ on ``k`` in 1..3, and move
the constraint that passes ``k == 0`` between the index's tables (equality,
ranges, by type only for ``not``, with and without an event type). So
whatever version an event sees, a proxy supplier gets every ``k == 0`` event
and no ``k >= 4`` event. A router that dropped a constraint before its
replacement was posted loses ``k == 0`` events; one that passed an event no
version passes delivers a ``k >= 4`` one.

Two tests: one thread pushes while another changes the constraints (any
interleaving), and events pushed from inside a change, at each point where
the filter tells the router what it posts and withdraws (every interleaving
that matters, deterministically).
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter as F

from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.service import ServiceConfig

WAIT = 10.0  # upper bound for a condition that should hold almost at once

ALWAYS = frozenset({0})
SOMETIMES = frozenset({1, 2, 3})
NEVER = frozenset({4, 5, 6, 7})
KS = sorted(ALWAYS | SOMETIMES | NEVER)

#: Texts of the constraint that stays (by id) in every version: each passes k == 0
#: and at most k in SOMETIMES.
FIRST = [
    "$k == 0", "$k == 0 or $k == 1", "$k < 1 and $k > -1", "not ($k != 0)",
    "$k <= 0 and $k >= 0", "$k == 0 or (exist $k and $k == 2)", "$k == 0.0",
]
#: Constraints added and removed again around it.
EXTRA = ["$k == 2", "$k >= 1 and $k <= 3", "$k == 3 or $k == 1", "$k + 0 == 1", "FALSE"]

BATCHES = 30
PER_BATCH = 8 * len(KS)


def _event(k: int) -> Any:
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("D", "T"), "e"), []),
        [N.Property("k", CORBA.Any(CORBA.TC_long, k))], CORBA.Any(CORBA.TC_null, None))


def _expression(text: str, typed: bool = False) -> Any:
    return F.ConstraintExp([N.EventType("D", "T")] if typed else [], text)


def _k(event: Any) -> int:
    [prop] = event.filterable_data
    return int(prop.value.value())


class Mutator:
    """Changes the filter's constraints until told to stop; counts its changes."""

    def __init__(self, flt: Any) -> None:
        self.flt = flt
        [info] = flt.add_constraints([_expression(FIRST[0])])
        self.first_id = info.constraint_id
        self.changes = 0
        self.cond = threading.Condition()
        self.stop = threading.Event()
        self.errors: list[BaseException] = []

    def _changed(self) -> None:
        with self.cond:
            self.changes += 1
            self.cond.notify_all()

    def steps(self) -> Iterator[None]:
        """Make the changes, one per ``next()``, for ever."""
        flt, first = self.flt, self.first_id
        for turn in itertools.count():
            typed = turn % 3 == 0
            flt.modify_constraints(
                [], [F.ConstraintInfo(_expression(FIRST[turn % len(FIRST)], typed), first)])
            yield
            infos = flt.add_constraints([_expression(EXTRA[turn % len(EXTRA)]),
                                         _expression(EXTRA[(turn + 1) % len(EXTRA)], typed)])
            yield
            flt.modify_constraints([infos[0].constraint_id], [])
            yield
            flt.modify_constraints([infos[1].constraint_id], [F.ConstraintInfo(
                _expression(FIRST[(turn + 3) % len(FIRST)]), first)])
            yield

    def run(self) -> None:
        try:
            for _ in self.steps():
                self._changed()
                if self.stop.is_set():
                    return
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(exc)
            with self.cond:
                self.cond.notify_all()

    def wait_past(self, seen: int) -> int:
        """Wait until more than ``seen`` changes were made; the count now."""
        with self.cond:
            assert self.cond.wait_for(lambda: self.changes > seen or self.errors, WAIT)
            return self.changes


def _pull_all(proxy: Any) -> list[int]:
    found: list[int] = []
    while True:
        event, ok = proxy.try_pull_structured_event()
        if not ok:
            return found
        found.append(_k(event))


@attrs.define
class Setup:
    """A channel whose filter ``flt`` sits in three places, each with a pull proxy."""

    channel: Any
    flt: Any
    proxies: dict[str, Any]
    supplier: Any

    def push(self, k: int) -> None:
        self.supplier.push_structured_event(_event(k))


PLACEMENTS = ["proxy filter", "AND admin filter", "OR admin filter"]


@pytest.fixture(params=["index", "scan"])
def setup(request: pytest.FixtureRequest) -> Iterator[Setup]:
    """The filter as the proxy filter of an AND admin's proxy, as the admin filter of
    an AND admin, and as the admin filter of an OR admin whose proxy's own filter is
    FALSE: in each place a proxy gets exactly what the filter passes."""
    factory = EventChannelFactory(ServiceConfig(routing=request.param))
    try:
        channel, _ = factory.create_channel([], [])
        filters = channel._get_default_filter_factory()
        flt = filters.create_filter("EXTENDED_TCL")
        never = filters.create_filter("EXTENDED_TCL")
        never.add_constraints([_expression("FALSE")])

        def pull_proxy(admin: Any, own: Any = None) -> Any:
            proxy, _ = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
            proxy.connect_structured_pull_consumer(None)
            if own is not None:
                proxy.add_filter(own)
            return proxy

        and_admin, _ = channel.new_for_consumers(CA.AND_OP)
        and_admin.add_filter(flt)
        or_admin, _ = channel.new_for_consumers(CA.OR_OP)
        or_admin.add_filter(flt)
        proxies = dict(zip(PLACEMENTS, [pull_proxy(channel._get_default_consumer_admin(), flt),
                                        pull_proxy(and_admin), pull_proxy(or_admin, never)]))
        supplier, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        supplier.connect_structured_push_supplier(None)
        yield Setup(channel, flt, proxies, supplier)
    finally:
        factory.close()


@pytest.fixture
def busy_switching() -> Iterator[None]:
    """Switch threads often, so pushes land inside a change's steps, not only between."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(before)


class TestConcurrentChanges:
    """Events routed while the filter changes each see one published version."""

    @pytest.mark.usefixtures("busy_switching")
    def test_pushing_while_another_thread_changes_constraints(self, setup: Setup) -> None:
        """Whatever the interleaving, each placement passes every k == 0 event and
        no k >= 4 event."""
        mutator = Mutator(setup.flt)
        pushed_zero = 0
        thread = threading.Thread(target=mutator.run, name="mutator")
        thread.start()
        try:
            seen = 0
            for _ in range(BATCHES):
                seen = mutator.wait_past(seen)  # changes interleave with every batch
                for i in range(PER_BATCH):
                    k = KS[i % len(KS)]
                    setup.push(k)
                    pushed_zero += k in ALWAYS
        finally:
            mutator.stop.set()
            thread.join(WAIT)
        assert not thread.is_alive()
        assert mutator.errors == []
        assert mutator.changes > BATCHES
        for placement, proxy in setup.proxies.items():
            got = _pull_all(proxy)
            assert not NEVER & set(got), (placement, sorted(set(got)))
            assert got.count(0) == pushed_zero, (placement, got.count(0), pushed_zero)

    @pytest.mark.parametrize("setup", ["index"], indirect=True)  # scan: no router to tell
    def test_events_routed_inside_each_step_of_a_change(self, setup: Setup) -> None:
        """Events pushed from inside a change, at each point where the filter tells the
        router (before and after it posts new constraints, before and after it
        withdraws old ones), still see a published version; deterministic, unlike the
        threaded test."""
        router = setup.channel._router
        probes: list[tuple[str, dict[str, list[int]]]] = []

        def probe(where: str) -> None:
            for k in KS:
                setup.push(k)
            probes.append((where, {p: _pull_all(proxy) for p, proxy in setup.proxies.items()}))

        def hooked(name: str) -> Callable[..., None]:
            real = getattr(router, name)

            def hook(record: Any, entries: list[Any]) -> None:
                probe(f"before {name}")
                real(record, entries)
                probe(f"after {name}")
            return hook

        mutator = Mutator(setup.flt)
        router.posted = hooked("posted")
        router.withdrawn = hooked("withdrawn")
        try:
            steps = mutator.steps()
            for _ in range(4 * len(FIRST) * len(EXTRA)):  # every FIRST with every EXTRA
                next(steps)
        finally:
            del router.posted, router.withdrawn  # the instance's hooks: the methods again
        assert {where for where, _ in probes} == {
            "before posted", "after posted", "before withdrawn", "after withdrawn"}
        for where, deliveries in probes:
            for placement, got in deliveries.items():
                assert 0 in got, (where, placement, got)
                assert not NEVER & set(got), (where, placement, got)
