"""Reproducers from the review of the predicate index (routing="index" vs "scan").

Each test states what the scan (the old per-proxy evaluation) does; the
``index`` parametrisations fail where the router departs from it. Races are
made deterministic by widening the window at the exact point where another
thread can run (an instance attribute that wraps the real method and runs the
other thread's operation, or waits for it).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter as F

from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.service import ServiceConfig
from cosnotify.filter import decompose as decompose_module
from tests.channel.conftest import ClientFilter

WAIT = 5.0
ROUTINGS = ["scan", "index"]


def _event(**props: int) -> Any:
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("D", "T"), "e"), []),
        [N.Property(k, CORBA.Any(CORBA.TC_long, v)) for k, v in props.items()],
        CORBA.Any(CORBA.TC_null, None))


class World:
    def __init__(self, routing: str) -> None:
        self.factory = EventChannelFactory(ServiceConfig(routing=routing))
        self.channel, _ = self.factory.create_channel([], [])
        self.admin = self.channel._get_default_consumer_admin()  # AND_OP
        supplier_admin = self.channel._get_default_supplier_admin()
        self.supplier, _ = supplier_admin.obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
        self.supplier.connect_structured_push_supplier(None)
        self.any_supplier, _ = supplier_admin.obtain_notification_push_consumer(CA.ANY_EVENT)
        self.any_supplier.connect_any_push_supplier(None)

    def proxy(self, admin: Any = None) -> Any:
        proxy, _ = (admin or self.admin).obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        return proxy

    def filter(self, *texts: str) -> Any:
        flt = self.channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        flt.add_constraints([F.ConstraintExp([], text) for text in texts])
        return flt

    def push(self, **props: int) -> None:
        self.supplier.push_structured_event(_event(**props))

    @staticmethod
    def drain(proxy: Any) -> list[dict[str, Any]]:
        got = []
        while True:
            event, ok = proxy.try_pull_structured_event()
            if not ok:
                return got
            got.append({p.name: p.value.value() for p in event.filterable_data})


class Paused:
    """Wraps ``obj.name`` so that a call waits, once inside, until ``release`` is set:
    ``entered`` tells another thread that the window is open."""

    def __init__(self, obj: Any, name: str) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        real = getattr(obj, name)

        def paused(*args: Any) -> Any:
            self.entered.set()
            self.release.wait(WAIT)
            return real(*args)
        setattr(obj, name, paused)


@pytest.fixture(params=ROUTINGS)
def world(request: pytest.FixtureRequest) -> Iterator[World]:
    made = World(request.param)
    try:
        yield made
    finally:
        made.factory.close()


# 1 -------------------------------------------------------------------------------------------------


class ForeignFilter(ClientFilter):
    """A client's filter in another ORB (the router cannot index it). It answers the two
    operations by its own rules: here an Any event is matched as an Any (%ANY), so
    ``match`` is TRUE and ``match_structured`` FALSE for the same event."""

    def match_structured(self, filterable_data: Any) -> bool:
        self.calls.append("match_structured")
        return False


def test_opaque_filter_is_asked_the_operation_the_scan_asks(world: World) -> None:
    """An Any holding an Any holding a StructuredEvent is not unwrapped by the channel
    (event.from_any unwraps one layer), so the scan calls ``match(any)`` on the proxy's
    filters. The router once asked an opaque filter ``match_structured(inner)`` instead
    (holds_structured_event, then the inner event matched); it now asks as the scan
    does (router.py receivers: admin_mixins.match_any on the event)."""
    proxy = world.proxy()
    foreign = ForeignFilter()
    proxy.add_filter(foreign)
    wrapped = CORBA.Any(CORBA.TC_any, CORBA.Any(N._tc_StructuredEvent, _event(n=1)))
    world.any_supplier.push(wrapped)
    _, ok = proxy.try_pull_structured_event()
    assert foreign.calls == ["match"]
    assert ok


# 2 -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("world", ["index"], indirect=True)  # scan: the router keeps nothing
def test_add_filter_that_returned_is_in_force(world: World) -> None:
    """Proxy A adds filter f; while A's attach is posting f's constraints, proxy B adds f
    too. B's add_filter must not return before f is posted: an event pushed after it
    returned is matched against f for B, as the scan does. (Before the fix, B's attach
    found f's record and returned at once, with nothing posted.)"""
    a, b = world.proxy(), world.proxy()
    flt = world.filter("$n == 1")
    router = world.channel._router
    pause = Paused(flt, "_watch")
    entered, release = pause.entered, pause.release
    posted_when_b_returned: list[int] = []

    def add_to_b() -> None:
        b.add_filter(flt)
        posted_when_b_returned.append(len(router.index))

    first = threading.Thread(target=a.add_filter, args=(flt,))
    first.start()
    second = threading.Thread(target=add_to_b)
    try:
        assert entered.wait(WAIT)
        second.start()
        # A holds f's lock while it posts: B's attach waits for it.
        assert not flt._lock.acquire(blocking=False)
    finally:
        release.set()
        first.join(WAIT)
        second.join(WAIT)
    assert posted_when_b_returned == [1]
    world.push(n=1)
    assert world.drain(b) == [{"n": 1}]


# 3 -------------------------------------------------------------------------------------------------


def test_remove_all_filters_racing_add_filter_leaves_no_ghost(world: World) -> None:
    """add_filter(f) on the admin publishes f in admin._filters, then runs _filter_added;
    a remove_all_filters in between detaches f before it was attached. The router then
    attaches f for good: f is no longer the admin's filter, but counts as one. Once the
    admin gains a real filter g, f's events pass the admin too (AND admin, proxy without
    filters: the scan delivers n == 2 only)."""
    proxy = world.proxy()
    f, g = world.filter("$n == 1"), world.filter("$n == 2")
    admin = world.admin
    pause = Paused(admin, "_filter_added")
    entered, release = pause.entered, pause.release
    adding = threading.Thread(target=admin.add_filter, args=(f,))
    adding.start()
    try:
        assert entered.wait(WAIT)
        admin.remove_all_filters()  # another client, at the same time
    finally:
        release.set()
        adding.join(WAIT)
        del admin._filter_added
    admin.add_filter(g)
    assert [admin.get_filter(i) for i in admin.get_all_filters()] == [g]
    for n in (1, 2, 3):
        world.push(n=n)
    assert world.drain(proxy) == [{"n": 2}]


# 4 -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("world", ["index"], indirect=True)  # scan: the router keeps nothing
def test_proxy_connecting_while_admin_gains_its_first_filter(world: World) -> None:
    """Router.refresh_admin lists the admin's proxies, then takes the router's lock and
    sets has_filters. A proxy that connects in between is placed (refresh) with the
    old has_filters, and refresh_admin does not place it again: it stays *open* and
    gets every event, where the scan gives it only what the admin's filter passes."""
    world.proxy()  # the admin has a connected proxy: its routes exist
    admin = world.admin
    late: list[Any] = []
    real = admin._all_proxies

    def listing() -> list[Any]:
        found = real()
        if not late and _called_from("refresh_admin"):
            late.append(world.proxy())  # another client connects now
        return found

    admin._all_proxies = listing
    try:
        admin.add_filter(world.filter("$n == 1"))
    finally:
        del admin._all_proxies
    assert late
    world.push(n=1)
    world.push(n=2)
    assert world.drain(late[0]) == [{"n": 1}]


def _called_from(name: str) -> bool:
    import sys

    return sys._getframe(2).f_code.co_name == name


# 5 -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("world", ["index"], indirect=True)  # scan: the router keeps nothing
def test_detach_racing_attach_withdraws_every_posting(world: World) -> None:
    """remove_filter on A (the filter's last holder) withdraws f's postings while
    add_filter on B attaches f afresh. Before the fix A released the router's lock
    before f._unwatch, B's fresh record replaced the router in f._watchers, and A's
    _unwatch then withdrew nothing: the postings stayed for ever. Now a detach holds
    f's lock until its withdrawal is done, so B's attach comes after it."""
    a, b = world.proxy(), world.proxy()
    flt = world.filter("$n == 1", "$n == 2")
    a_id = a.add_filter(flt)
    pause = Paused(flt, "_unwatch")
    entered, release = pause.entered, pause.release
    removing = threading.Thread(target=a.remove_filter, args=(a_id,))
    b_ids: list[int] = []
    adding = threading.Thread(target=lambda: b_ids.append(b.add_filter(flt)))
    removing.start()
    try:
        assert entered.wait(WAIT)
        adding.start()
        assert not flt._lock.acquire(blocking=False)  # held by the withdrawal
    finally:
        release.set()
        removing.join(WAIT)
        adding.join(WAIT)
    router = world.channel._router
    assert (router.stats()["filters"], len(router.index)) == (1, 2)
    world.push(n=2)
    assert world.drain(b) == [{"n": 2}]
    b.remove_filter(b_ids[0])
    assert router.stats()["filters"] == 0
    assert len(router.index) == 0, "postings of a filter no holder has"


# 6 -------------------------------------------------------------------------------------------------

_BIG_OR = " or ".join(f"$a == {i}" for i in range(1100))


@pytest.mark.parametrize("text", [
    f"$b > 5 and ({_BIG_OR})",       # one conjunct (1 key) is a necessary condition
    f"{_BIG_OR} or exist $x",        # not indexable at all: no keys
])
def test_constraint_with_a_small_access_is_accepted(world: World, text: str) -> None:
    """decompose's And keeps the option with the fewest *ranges* first, so a 1,100-key
    equality alternative wins over a 1-key range (decompose.py _cost / _necessary And);
    an Or stops at MAX_KEYS before it meets an operand without access. Either way the
    constraint is valid and accepted (review 114: beyond the key limit it is kept
    unindexed), with routing="scan" and "index" alike."""
    flt = world.filter()
    flt.add_constraints([F.ConstraintExp([], text)])


def test_constraint_beyond_the_key_limit_routes_as_the_scan(world: World) -> None:
    """Review 114: a valid constraint that needs more than MAX_KEYS index keys is
    accepted (§3.2.1.2: InvalidConstraint only for "not a valid expression within the
    supported constraint grammar") and kept unindexed; the index delivers what the scan
    delivers."""
    proxy = world.proxy()
    proxy.add_filter(world.filter("$b == 1", _BIG_OR))
    for a, b in ((0, 0), (5, 0), (1099, 0), (1100, 0), (2000, 1), (-1, 2)):
        world.push(a=a, b=b)
    assert world.drain(proxy) == [{"a": 0, "b": 0}, {"a": 5, "b": 0}, {"a": 1099, "b": 0},
                                  {"a": 2000, "b": 1}]


def test_filter_stored_by_the_previous_version_comes_back(tmp_path: Any) -> None:
    """A filter with a 1,100-alternative constraint (made here with the limit lifted, as
    a version before the index stored it) comes back at restore, its constraint kept
    unindexed like any constraint beyond the key limit (review 114)."""
    from cosnotify.store.sqlite import SQLiteStore

    persistent = [N.Property("ConnectionReliability", CORBA.Any(CORBA.TC_short, N.Persistent))]
    store_path = tmp_path / "store.db"
    factory = EventChannelFactory(store=SQLiteStore(store_path))
    lifted = pytest.MonkeyPatch()
    try:
        channel, channel_id = factory.create_channel(persistent, [])
        proxy, proxy_id = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        lifted.setattr(decompose_module, "MAX_KEYS", 10**6)
        flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        flt.add_constraints([F.ConstraintExp([], _BIG_OR)])
        proxy.add_filter(flt)
    finally:
        lifted.undo()
        factory.close()
    factory = EventChannelFactory(store=SQLiteStore(store_path))
    try:
        channel = factory.get_event_channel(channel_id)
        proxy = channel._get_default_consumer_admin().get_proxy_supplier(proxy_id)
        assert proxy.get_all_filters() == [1]
        [kept] = proxy.get_filter(1).get_all_constraints()
        assert kept.constraint_expression.constraint_expr == _BIG_OR
    finally:
        factory.close()


# 7 -------------------------------------------------------------------------------------------------


def test_a_second_admin_filter_does_not_replace_every_proxy() -> None:
    """docs/routing.md, Topology changes: only the first filter added to an admin (or the
    last removed) re-places its proxies. ConsumerAdmin._filter_added/_filter_removed
    call Router.refresh_admin on every change, which re-places all of them with the
    router's lock held (no event is routed meanwhile)."""
    world = World("index")
    try:
        for _ in range(500):
            world.proxy()
        world.admin.add_filter(world.filter("$n == 1"))
        router = world.channel._router
        placed = []
        real = router._place
        router._place = lambda proxy: (placed.append(proxy), real(proxy))[1]
        second = world.admin.add_filter(world.filter("$n == 2"))
        world.admin.remove_filter(second)
        assert len(placed) <= 2
    finally:
        world.factory.close()


def test_an_empty_type_field_is_a_name_not_a_wildcard() -> None:
    """Review 116 F09: the index files a constraint for ("", "Alarm") under that exact
    pair, not under every domain's Alarm (§3.2.1: "strings that will be matched for
    equality against the domain_name and type_name fields of each event"; only "*"
    is a wildcard)."""
    from cosnotify.filter.factory import FilterFactory
    from cosnotify.routing.index import PredicateIndex

    flt = FilterFactory().create_filter("EXTENDED_TCL")
    flt.add_constraints([F.ConstraintExp([N.EventType("", "Alarm")], "$a == $b"),
                         F.ConstraintExp([N.EventType("Telecom", "")], "$a == $b")])
    index = PredicateIndex()
    index.add(flt, flt._state.entries)
    assert index.fallback_count == 2
    assert index._by_type.lookup(("Finance", "Alarm")) == ()
    assert index._by_type.lookup(("Telecom", "Alarm")) == ()
    assert len(index._by_type.lookup(("", "Alarm"))) == 1
    assert len(index._by_type.lookup(("Telecom", ""))) == 1
