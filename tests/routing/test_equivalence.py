"""The predicate index routes exactly as the scan does (docs/routing.md, "Exact results").

Two kinds of property:

- one filter, random constraints and events: the index's ``match`` finds the
  filter exactly when the filter's own ``match``/``match_structured`` is TRUE;
- two in-process channels, one per ``ServiceConfig.routing``, built with the
  same random topology (AND, OR and Event Service admins, admin and proxy
  filters, shared, opaque and destroyed filters, unconnected proxies,
  subscription_change, priority mapping filters) and fed the same events,
  with topology and constraint changes between pushes: every proxy supplier
  receives the same events in both.

Pull proxies are read synchronously (a push is routed in the supplier's
thread), in queue order; push consumers are read once the dispatcher is idle,
and compared without their order within one batch of pushes (a priority
filter reorders only what is queued when the worker looks).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter as F

from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.service import ServiceConfig
from cosnotify.filter.constraints import ANY_EVENT_TYPE, holds_structured_event, structured_type
from cosnotify.filter.factory import FilterFactory
from cosnotify.filter.paths import Form
from cosnotify.routing.router import Router
from tests.channel.conftest import StructuredPushConsumer
from tests.strategies import (
    routing_any_events,
    routing_constraint_exps,
    routing_dense_constraint_texts,
    routing_dense_events,
    routing_sequence_tc,
    routing_structured_events,
)

_STRING_SEQ = routing_sequence_tc(CORBA.TC_string)
_SE_TC = N._tc_StructuredEvent


# -- one filter: the index's match is the filter's match ---------------------------------------


class _Owner:
    """Stands for the admin or proxy a filter is attached to."""


def _index_match(router: Router, event: Any) -> bool:
    """What the router's index says of ``event`` (a StructuredEvent or an Any)."""
    if isinstance(event, CORBA.Any):
        inner = holds_structured_event(event)
        if inner is None:
            return bool(router.index.match(event, Form.ANY, ANY_EVENT_TYPE))
        event = inner
    return bool(router.index.match(event, Form.STRUCTURED, structured_type(event)))


def _filter_match(flt: Any, event: Any) -> bool:
    if isinstance(event, CORBA.Any):
        return bool(flt.match(event))
    return bool(flt.match_structured(event))


class TestIndexMatchesTheFilter:
    """PredicateIndex.match finds a filter exactly when the filter matches (§2.3)."""

    @pytest.mark.parametrize(("tc", "values"), [
        (CORBA.TC_long, [1, 2, 3, 50, 98]), (CORBA.TC_double, [1.5, 2.0, 2.5, 98.0]),
        (CORBA.TC_char, ["1", "2", "3", "b"]), (CORBA.TC_string, ["2", "22", "b", "ba", ""]),
        (CORBA.TC_boolean, [False, True])])
    def test_bounds_are_inclusive_where_the_operator_is(self, tc: Any, values: list[Any]) -> None:
        """Each comparison with a literal, either way round, at and around its bound,
        for numbers, chars (as numbers and as strings), strings and booleans."""
        for op, literal in itertools.product(["==", "<", "<=", ">", ">="],
                                             ["2", "2.0", "'2'", "'b'", "TRUE"]):
            flt = FilterFactory().create_filter("EXTENDED_TCL")
            flt.add_constraints([F.ConstraintExp([], f"$a {op} {literal}"),
                                 F.ConstraintExp([], f"{literal} {op} $b")])
            router = Router()
            router.attach(_Owner(), flt)
            for value, name in itertools.product(values, ["a", "b"]):
                event = N.StructuredEvent(
                    N.EventHeader(N.FixedEventHeader(N.EventType("D", "T"), "e"), []),
                    [N.Property(name, CORBA.Any(tc, value))], CORBA.Any(CORBA.TC_null, None))
                assert _index_match(router, event) is _filter_match(flt, event), (
                    op, literal, name, value)

    @given(st.lists(routing_constraint_exps(), min_size=1, max_size=3),
           st.lists(st.one_of(routing_structured_events, routing_structured_events,
                              routing_any_events), min_size=1, max_size=6),
           st.sampled_from([0, 64]))
    @settings(max_examples=400, deadline=None)
    def test_same_answer_for_every_event(self, constraints: list[Any], events: list[Any],
                                         combine_after: int) -> None:
        """For random constraints (comparisons of every literal kind with and, or,
        not, over event type patterns) and events, index and filter agree."""
        flt = FilterFactory(combine_after=combine_after).create_filter("EXTENDED_TCL")
        flt.add_constraints(constraints)
        router = Router()
        router.attach(_Owner(), flt)
        for event in events:
            assert _index_match(router, event) is _filter_match(flt, event), event

    @given(st.lists(routing_dense_constraint_texts, min_size=1, max_size=3),
           st.lists(routing_dense_events(), min_size=1, max_size=6))
    @settings(max_examples=300, deadline=None)
    def test_same_answer_for_and_or_not(self, texts: list[str], events: list[Any]) -> None:
        """For constraints of and, or and not over a few properties, TRUE for about half
        the events, index and filter agree (decomposition keeps a necessary condition)."""
        flt = FilterFactory().create_filter("EXTENDED_TCL")
        flt.add_constraints([F.ConstraintExp([], text) for text in texts])
        router = Router()
        router.attach(_Owner(), flt)
        for event in events:
            assert _index_match(router, event) is _filter_match(flt, event), event

    @given(st.lists(routing_constraint_exps(), min_size=1, max_size=3),
           st.lists(routing_constraint_exps(), min_size=1, max_size=2),
           st.lists(routing_structured_events | routing_any_events, min_size=1, max_size=4))
    @settings(max_examples=150, deadline=None)
    def test_same_answer_after_changes(self, first: list[Any], second: list[Any],
                                       events: list[Any]) -> None:
        """After modify_constraints, a deletion and remove_all_constraints the index
        still answers as the filter does (it follows each published version)."""
        flt = FilterFactory().create_filter("EXTENDED_TCL")
        infos = flt.add_constraints(first)
        router = Router()
        router.attach(_Owner(), flt)
        flt.modify_constraints([infos[0].constraint_id], [
            F.ConstraintInfo(exp, info.constraint_id) for exp, info in zip(second, infos[1:])])
        flt.add_constraints(second)
        for event in events:
            assert _index_match(router, event) is _filter_match(flt, event), event
        flt.remove_all_constraints()
        assert len(router.index) == 0
        assert not any(_index_match(router, event) for event in events)


# -- two channels: plans ------------------------------------------------------------------------
# A scenario is plain data; each channel builds its own CORBA objects from it, and every
# event is built once and pushed into both channels.

#: Constraint texts the index decomposes.
INDEXED = [
    "$n == 3", "$n > 2", "$n <= 1.5", "$s == 'a'", "'x' in $tags", "$type_name == 'T1'",
    "$domain_name == 'D'", "$ == 3", "$ > 2", "$n == 'a'", "$n == TRUE", "$s >= 'b'",
    "'a' in $tags or $n == 1", "$n >= 2 and $s == 'a'", "$n < 3 and $n != 0",
    "$s == 'ab' or $n == 2.0", "$event_name == 'x'", "2 < $n and 'y' in $tags",
    "$n == 3 or $s == 'a'", "$ == 3 or $n == 3", "3 in $tags", "$n >= 'a'", "FALSE or $n < 0",
]
#: Constraint texts it does not: they are asked for every event of their types.
UNINDEXED = [
    "not ($n == 3)", "$n != 3", "'a' ~ $s", "exist $tags", "$n + 1 == 4", "TRUE", "FALSE",
    "$n == 3 or exist $s", "$curtime > 0", "$n == $s", "$n > $s or $n == 1",
]
TYPE_LISTS: list[tuple[tuple[str, str], ...]] = [
    (), (), (), (("D*", "*"),), (("", "T1"),), (("*", "%ALL"),), (("D", "T1"),),
    (("D", "T2"), ("E", "T1")), (("", "%ANY"),), (("*", "T2"),), (("D", "%ALL"),),
    (("D", "T*"),), (("**", "*"),), (("*", "%ANY"), ("E", "")), (("%ALL", ""),),
]
SUBSCRIPTIONS: list[tuple[tuple[str, str], ...]] = [
    (("D", "T1"),), (("*", "%ALL"),), (("", "T2"),), (("D*", "*"),), (("", "%ANY"),), (),
]
KINDS = ["structured", "any", "sequence", "push"]
_CONNECT = {"structured": "connect_structured_pull_consumer", "any": "connect_any_pull_consumer",
            "es": "connect_pull_consumer",
            "sequence": "connect_sequence_pull_consumer", "push": "connect_structured_push_consumer"}
_DISCONNECT = {"structured": "disconnect_structured_pull_supplier", "es": "disconnect_pull_supplier",
               "any": "disconnect_pull_supplier", "sequence": "disconnect_sequence_pull_supplier",
               "push": "disconnect_structured_push_supplier"}

Constraint = tuple[tuple[tuple[str, str], ...], str]


@attrs.frozen
class FilterPlan:
    constraints: tuple[Constraint, ...]
    opaque: bool  # wrapped so the router cannot index it (another process's filter)
    combine_after: int


@attrs.frozen
class ProxyPlan:
    admin: int
    kind: str
    connected: bool


@attrs.frozen
class Scenario:
    filters: tuple[FilterPlan, ...]
    #: Admins after the default (AND) one: "and", "or", or "es" (an Event Service
    #: style admin, OR with anonymous proxies; its proxies are all Any pull suppliers).
    admins: tuple[str, ...]
    proxies: tuple[ProxyPlan, ...]
    setup: tuple[tuple[Any, ...], ...]  # operations before the first event
    segments: tuple[tuple[tuple[tuple[Any, ...], ...], tuple[tuple[Any, ...], ...]], ...]


constraint_plans: st.SearchStrategy[Constraint] = st.tuples(
    st.sampled_from(TYPE_LISTS),
    st.one_of(st.sampled_from(INDEXED), st.sampled_from(UNINDEXED)))

filter_plans = st.builds(
    FilterPlan, st.lists(constraint_plans, min_size=1, max_size=3).map(tuple),
    st.sampled_from([False, False, False, True]), st.sampled_from([0, 64]))

# Event plans: ("structured", domain, type, name, filterable, variable) or ("any", kind, value)
# or ("wrapped", layers, structured plan). Properties are (name, kind, value).
_n_values = st.one_of(
    st.tuples(st.just("long"), st.integers(-1, 4)),
    st.tuples(st.just("double"), st.sampled_from([0.5, 1.5, 2.0, 3.0])),
    st.tuples(st.just("string"), st.sampled_from(["3", "a", "ab"])),
    st.tuples(st.just("char"), st.sampled_from(["a", "3"])),
    st.tuples(st.just("boolean"), st.booleans()),
)
_s_values = st.one_of(
    st.tuples(st.just("string"), st.sampled_from(["a", "b", "ab", "x", ""])),
    st.tuples(st.just("char"), st.sampled_from(["a", "b"])),
    st.tuples(st.just("long"), st.integers(0, 3)),
)
_tags_values = st.one_of(
    st.tuples(st.just("strings"), st.lists(st.sampled_from(["x", "y", "a"]), max_size=3)
              .map(tuple)),
    st.tuples(st.just("long"), st.integers(0, 3)),
)


@st.composite
def _properties(draw: Any) -> tuple[tuple[str, str, Any], ...]:
    found = []
    for name, values in (("n", _n_values), ("s", _s_values), ("tags", _tags_values)):
        if draw(st.integers(0, 3)):
            kind, value = draw(values)
            found.append((name, kind, value))
    return tuple(found)


_structured_plans = st.tuples(
    st.just("structured"), st.sampled_from(["D", "Dx", "E", ""]),
    st.sampled_from(["T1", "T2", "", "%ANY"]), st.sampled_from(["x", "y"]),
    _properties(), st.sampled_from([(), (), (("n", "long", 3),)]))
event_plans = st.one_of(
    _structured_plans, _structured_plans,
    st.tuples(st.just("any"), st.just("long"), st.sampled_from([-1, 2, 3, 4])),
    st.tuples(st.just("any"), st.just("double"), st.sampled_from([2.5, 3.0])),
    st.tuples(st.just("any"), st.just("string"), st.sampled_from(["3", "x"])),
    st.tuples(st.just("any"), st.just("strings"),
              st.lists(st.sampled_from(["x", "y"]), max_size=2).map(tuple)),
    st.tuples(st.just("wrapped"), st.integers(1, 2), _structured_plans),
)


def _operations(filters: int, admins: int, proxies: int) -> st.SearchStrategy[tuple[Any, ...]]:
    """Changes of constraints, filters and topology, by index into the scenario."""
    f, a, p = st.integers(0, filters - 1), st.integers(0, admins - 1), st.integers(0, proxies - 1)
    target = st.one_of(st.tuples(st.just("admin"), a), st.tuples(st.just("proxy"), p))
    types = st.sampled_from(SUBSCRIPTIONS)
    return st.one_of(
        st.tuples(st.just("add_constraints"), f, constraint_plans),
        st.tuples(st.just("modify_constraint"), f, st.integers(0, 3), constraint_plans),
        st.tuples(st.just("delete_constraint"), f, st.integers(0, 3)),
        st.tuples(st.just("remove_all_constraints"), f),
        st.tuples(st.just("destroy_filter"), f),
        st.tuples(st.just("add_filter"), target, f),
        st.tuples(st.just("remove_filter"), target, st.integers(0, 2)),
        st.tuples(st.just("remove_all_filters"), target),
        st.tuples(st.just("subscription_change"), p, types, types),
        st.tuples(st.just("priority_filter"), p),
        st.tuples(st.just("connect"), p),
        st.tuples(st.just("disconnect"), p),
        st.tuples(st.just("destroy_admin"), a),
        st.tuples(st.just("semantics"), st.sampled_from([0, 1])),
    )


@st.composite
def scenarios(draw: Any) -> Scenario:
    """A topology, the filters it starts with, and events with changes between them."""
    filters = tuple(draw(st.lists(filter_plans, min_size=1, max_size=4)))
    kinds = tuple(draw(st.lists(st.sampled_from(["and", "or", "or", "es"]), max_size=2)))
    admins = 1 + len(kinds)
    proxies = tuple(draw(st.lists(st.builds(
        ProxyPlan, st.integers(0, admins - 1), st.sampled_from(KINDS),
        st.sampled_from([True, True, True, False])), min_size=1, max_size=5)))
    f = st.integers(0, len(filters) - 1)
    setup: list[tuple[Any, ...]] = []
    if draw(st.booleans()):  # TAO's reading of empty filter groups (docs/filters.md)
        setup.append(("semantics", 1))
    for admin in range(admins):
        setup += [("add_filter", ("admin", admin), i) for i in draw(st.lists(f, max_size=2))]
    for proxy in range(len(proxies)):
        setup += [("add_filter", ("proxy", proxy), i) for i in draw(st.lists(f, max_size=2))]
        if draw(st.integers(0, 4)) == 0:
            setup.append(("subscription_change", proxy, draw(st.sampled_from(SUBSCRIPTIONS)),
                          draw(st.sampled_from(SUBSCRIPTIONS))))
        if draw(st.integers(0, 3)) == 0:
            setup.append(("priority_filter", proxy))
    operations = _operations(len(filters), admins, len(proxies))
    segments = tuple(draw(st.lists(st.tuples(
        st.lists(event_plans, min_size=1, max_size=10).map(tuple),
        st.lists(operations, max_size=4).map(tuple)), min_size=1, max_size=3)))
    return Scenario(filters, kinds, proxies, tuple(setup), segments)


# -- two channels: building and running ---------------------------------------------------------

_ANY_TC = {"long": CORBA.TC_long, "double": CORBA.TC_double, "string": CORBA.TC_string,
           "char": CORBA.TC_char, "boolean": CORBA.TC_boolean, "strings": _STRING_SEQ}


def _value(kind: str, value: Any) -> Any:
    return CORBA.Any(_ANY_TC[kind], list(value) if kind == "strings" else value)


class Events:
    """The events of a run, built once from their plans, and who is who on delivery.

    Each event gets a fresh body Any; the channel hands consumers the objects it
    was given (or wraps them), so a delivered event is known by the identity of
    itself or its body.
    """

    def __init__(self) -> None:
        self._serials: dict[int, int] = {}
        self._keep: list[Any] = []
        self._count = 0

    def _known(self, serial: int, *objects: Any) -> None:
        for obj in objects:
            self._serials[id(obj)] = serial
            self._keep.append(obj)

    def _structured(self, plan: tuple[Any, ...], serial: int) -> Any:
        _, domain, type_name, name, filterable, variable = plan
        body = CORBA.Any(CORBA.TC_long, serial)
        event = N.StructuredEvent(
            N.EventHeader(N.FixedEventHeader(N.EventType(domain, type_name), name),
                          [N.Property(p, _value(k, v)) for p, k, v in variable]),
            [N.Property(p, _value(k, v)) for p, k, v in filterable], body)
        self._known(serial, event, body)
        return event

    def build(self, plan: tuple[Any, ...]) -> Any:
        """A StructuredEvent or an Any for ``plan``, with the next serial number."""
        serial = self._count
        self._count += 1
        if plan[0] == "structured":
            return self._structured(plan, serial)
        if plan[0] == "any":
            value = _value(plan[1], plan[2])
            self._known(serial, value)
            return value
        _, layers, inner = plan
        value = CORBA.Any(_SE_TC, self._structured(inner, serial))
        if layers == 2:
            value = CORBA.Any(CORBA.TC_any, value)
        self._known(serial, value)
        return value

    def serial(self, delivered: Any) -> int:
        """The serial number of a delivered StructuredEvent or Any."""
        for candidate in self._candidates(delivered):
            found = self._serials.get(id(candidate))
            if found is not None:
                return found
        raise AssertionError(f"delivered an event that was never pushed: {delivered!r}")

    @staticmethod
    def _candidates(delivered: Any) -> Iterator[Any]:
        yield delivered
        if isinstance(delivered, CORBA.Any):
            inner = holds_structured_event(delivered)
            if inner is not None:
                yield inner
                yield inner.remainder_of_body
        else:
            yield delivered.remainder_of_body


class _Opaque:
    """A Filter seen through another object, as a remote filter is: the router cannot
    index it and asks it as a whole."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class World:
    """One channel built from a scenario, with its proxies' deliveries so far."""

    def __init__(self, routing: str, scenario: Scenario) -> None:
        self.factory = EventChannelFactory(ServiceConfig(routing=routing))
        channel, _ = self.factory.create_channel([], [])
        self.channel = channel
        self.filter_factory = channel._get_default_filter_factory()
        self.filters = [self._filter(plan) for plan in scenario.filters]
        self.admins = [channel._get_default_consumer_admin()] + [
            channel.for_consumers() if kind == "es"
            else channel.new_for_consumers(CA.OR_OP if kind == "or" else CA.AND_OP)[0]
            for kind in scenario.admins]
        #: Each proxy's kind: the plan's, or "es" on an Event Service admin.
        self.kinds = [("es" if plan.admin and scenario.admins[plan.admin - 1] == "es"
                       else plan.kind) for plan in scenario.proxies]
        self.proxies = [self._proxy(plan, kind) for plan, kind in zip(scenario.proxies, self.kinds)]
        self.received: list[list[Any]] = [[] for _ in scenario.proxies]
        supplier_admin = channel._get_default_supplier_admin()
        self.structured_supplier, _ = supplier_admin.obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        self.structured_supplier.connect_structured_push_supplier(None)
        self.any_supplier, _ = supplier_admin.obtain_notification_push_consumer(CA.ANY_EVENT)
        self.any_supplier.connect_any_push_supplier(None)

    def close(self) -> None:
        self.factory.close()

    def _filter(self, plan: FilterPlan) -> Any:
        factory = (self.filter_factory if plan.combine_after == 64
                   else FilterFactory(combine_after=plan.combine_after))
        made = factory.create_filter("EXTENDED_TCL")
        made.add_constraints([_expression(c) for c in plan.constraints])
        return _Opaque(made) if plan.opaque else made

    def _proxy(self, plan: ProxyPlan, kind: str) -> tuple[Any, Any]:
        admin = self.admins[plan.admin]
        if kind == "es":
            proxy = admin.obtain_pull_supplier()
        elif kind == "push":
            proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        else:
            ctype = {"structured": CA.STRUCTURED_EVENT, "any": CA.ANY_EVENT,
                     "sequence": CA.SEQUENCE_EVENT}[kind]
            proxy, _ = admin.obtain_notification_pull_supplier(ctype)
        sink = StructuredPushConsumer() if kind == "push" else None
        if plan.connected:
            self._connect(proxy, kind, sink)
        return proxy, sink

    @staticmethod
    def _connect(proxy: Any, kind: str, sink: Any) -> None:
        getattr(proxy, _CONNECT[kind])(sink)

    # -- events ------------------------------------------------------------------------------
    def push(self, event: Any) -> None:
        if isinstance(event, CORBA.Any):
            self.any_supplier.push(event)
        else:
            self.structured_supplier.push_structured_event(event)

    def drain(self, events: Events) -> None:
        """Move what each proxy has queued (or pushed) into ``received``."""
        assert self.channel._service.dispatcher.wait_idle()
        for i, (proxy, sink) in enumerate(self.proxies):
            kind = self.kinds[i]
            try:
                got = self._pull_all(proxy, kind) if sink is None else self._pushed(sink)
            except Exception as exc:  # noqa: BLE001 - disconnected or destroyed: same in both
                self.received[i].append(f"! {type(exc).__name__}")
                continue
            serials = [events.serial(e) for e in got]
            if sink is not None:
                # A push consumer's worker may take an event before the next one is
                # queued, or after: with a priority filter the order is the timing's.
                serials.sort()
            self.received[i].extend(serials)

    @staticmethod
    def _pull_all(proxy: Any, kind: str) -> list[Any]:
        pulled: list[Any] = []
        while True:
            if kind == "structured":
                event, ok = proxy.try_pull_structured_event()
                batch = [event] if ok else []
            elif kind in ("any", "es"):
                event, ok = proxy.try_pull()
                batch = [event] if ok else []
            else:
                batch, ok = proxy.try_pull_structured_events(10)
            if not ok:
                return pulled
            pulled.extend(batch)

    @staticmethod
    def _pushed(sink: StructuredPushConsumer) -> list[Any]:
        with sink.cond:
            taken = list(sink.received)
            sink.received.clear()
        return taken

    # -- operations -----------------------------------------------------------------------------
    def apply(self, operation: tuple[Any, ...]) -> str:
        """Run one operation; its outcome ("ok", "skip" or the exception's name)."""
        try:
            done = _OPERATIONS[operation[0]](self, *operation[1:])
        except Exception as exc:  # noqa: BLE001 - compared between the two channels
            return type(exc).__name__
        return "skip" if done is False else "ok"

    def _target(self, target: tuple[str, int]) -> Any:
        kind, index = target
        return self.admins[index] if kind == "admin" else self.proxies[index][0]

    def _constraint_id(self, f: int, which: int) -> int | None:
        ids = [info.constraint_id for info in self.filters[f].get_all_constraints()]
        return ids[which % len(ids)] if ids else None


def _expression(constraint: Constraint) -> Any:
    types, text = constraint
    return F.ConstraintExp([N.EventType(d, t) for d, t in types], text)


def _add_constraints(world: World, f: int, constraint: Constraint) -> None:
    world.filters[f].add_constraints([_expression(constraint)])


def _modify_constraint(world: World, f: int, which: int, constraint: Constraint) -> bool:
    found = world._constraint_id(f, which)
    if found is None:
        return False
    world.filters[f].modify_constraints([], [F.ConstraintInfo(_expression(constraint), found)])
    return True


def _delete_constraint(world: World, f: int, which: int) -> bool:
    found = world._constraint_id(f, which)
    if found is None:
        return False
    world.filters[f].modify_constraints([found], [])
    return True


def _add_filter(world: World, target: tuple[str, int], f: int) -> None:
    world._target(target).add_filter(world.filters[f])


def _remove_filter(world: World, target: tuple[str, int], which: int) -> bool:
    holder = world._target(target)
    ids = holder.get_all_filters()
    if not ids:
        return False
    holder.remove_filter(ids[which % len(ids)])
    return True


def _subscription_change(world: World, p: int, added: Any, removed: Any) -> None:
    world.proxies[p][0].subscription_change([N.EventType(d, t) for d, t in added],
                                            [N.EventType(d, t) for d, t in removed])


def _priority_filter(world: World, p: int) -> None:
    """A priority mapping filter: it may reorder a queue, never change what is in it."""
    mapping = world.filter_factory.create_mapping_filter(
        "EXTENDED_TCL", CORBA.Any(CORBA.TC_short, 0))
    mapping.add_mapping_constraints([
        F.MappingConstraintPair(F.ConstraintExp([], "$n > 2"), CORBA.Any(CORBA.TC_short, 5)),
        F.MappingConstraintPair(F.ConstraintExp([], "$s == 'a'"), CORBA.Any(CORBA.TC_short, -3)),
    ])
    world.proxies[p][0]._set_priority_filter(mapping)


def _connect(world: World, p: int) -> None:
    proxy, sink = world.proxies[p]
    world._connect(proxy, world.kinds[p], sink)


def _disconnect(world: World, p: int) -> None:
    getattr(world.proxies[p][0], _DISCONNECT[world.kinds[p]])()


_OPERATIONS: dict[str, Callable[..., Any]] = {
    "add_constraints": _add_constraints,
    "modify_constraint": _modify_constraint,
    "delete_constraint": _delete_constraint,
    "remove_all_constraints": lambda w, f: w.filters[f].remove_all_constraints(),
    "destroy_filter": lambda w, f: w.filters[f].destroy(),
    "add_filter": _add_filter,
    "remove_filter": _remove_filter,
    "remove_all_filters": lambda w, target: w._target(target).remove_all_filters(),
    "subscription_change": _subscription_change,
    "priority_filter": _priority_filter,
    "connect": _connect,
    "disconnect": _disconnect,
    "destroy_admin": lambda w, a: w.admins[a].destroy(),
    "semantics": lambda w, value: w.channel.set_admin(
        [N.Property("FilterGroupSemantics", CORBA.Any(CORBA.TC_short, value))]),
}


@contextlib.contextmanager
def _worlds(scenario: Scenario) -> Iterator[tuple[World, World]]:
    indexed = World("index", scenario)
    try:
        scanned = World("scan", scenario)
        try:
            yield indexed, scanned
        finally:
            scanned.close()
    finally:
        indexed.close()


def run(scenario: Scenario) -> tuple[World, World]:
    """Build both channels, run every segment, and check they agree after each."""
    events = Events()
    with _worlds(scenario) as (indexed, scanned):
        for operation in scenario.setup:
            assert indexed.apply(operation) == scanned.apply(operation), operation
        for number, (plans, operations) in enumerate(scenario.segments):
            for plan in plans:
                event = events.build(plan)
                indexed.push(event)
                scanned.push(event)
            indexed.drain(events)
            scanned.drain(events)
            for i, proxy in enumerate(scenario.proxies):
                assert indexed.received[i] == scanned.received[i], (
                    f"segment {number}, proxy {i} ({proxy}): index delivered "
                    f"{indexed.received[i]}, scan {scanned.received[i]}")
            for operation in operations:
                assert indexed.apply(operation) == scanned.apply(operation), operation
    return indexed, scanned


class TestChannelsAgree:
    """Index and scan channels deliver the same events to every proxy supplier."""

    @given(scenarios())
    @settings(max_examples=100, deadline=None)
    def test_same_deliveries(self, scenario: Scenario) -> None:
        """Same topology, same events, same changes between pushes: same deliveries."""
        run(scenario)

    @pytest.mark.parametrize(("semantics", "unfiltered"), [
        (0, [1, 4]),                # section 2.3: the OR admin's filter decides alone
        (1, [0, 1, 2, 3, 4, 5]),    # TAO/JacORB: an empty proxy group passes everything
    ])
    def test_the_harness_sees_deliveries(self, semantics: int, unfiltered: list[int]) -> None:
        """A fixed scenario delivers what section 2.3 says, identically in both channels:
        AND admin with a proxy filter, OR admin whose admin filter passes all its
        filtered proxies and decides alone for its unfiltered one, and a
        subscription that narrows a proxy to one type."""
        constraint = ((), "$n == 3")
        scenario = Scenario(
            filters=(FilterPlan((constraint,), False, 64),
                     FilterPlan((((), "$type_name == 'T2'"),), False, 64)),
            admins=("or",),
            proxies=(ProxyPlan(0, "structured", True), ProxyPlan(1, "any", True),
                     ProxyPlan(1, "push", True), ProxyPlan(0, "sequence", True)),
            setup=(("semantics", semantics),
                   ("add_filter", ("proxy", 0), 0), ("add_filter", ("admin", 1), 1),
                   ("add_filter", ("proxy", 1), 0),
                   ("subscription_change", 3, (("D", "T1"),), (("*", "%ALL"),))),
            segments=((
                (("structured", "D", "T1", "x", (("n", "long", 3),), ()),   # 0
                 ("structured", "D", "T2", "x", (("n", "long", 4),), ()),   # 1
                 ("structured", "D", "T1", "x", (("n", "double", 3.0),), ()),  # 2
                 ("any", "long", 3),                                         # 3
                 ("wrapped", 2, ("structured", "E", "T2", "y", (), ()))),    # 4
                (("remove_all_constraints", 0),)),
                ((("structured", "D", "T1", "x", (("n", "long", 3),), ()),), ()),  # 5
            ))
        indexed, scanned = run(scenario)
        expected = [[0, 2], [0, 1, 2, 4], unfiltered, [0, 2, 5]]
        assert indexed.received == scanned.received == expected


@pytest.mark.parametrize("routing", ["index", "scan"])
def test_each_world_is_its_own_channel(routing: str) -> None:
    """A World's channel routes as its config says (the two runs differ in nothing else)."""
    world = World(routing, Scenario((), (), (), (), ()))
    try:
        assert world.channel._scan_below == (0 if routing == "index" else -1)
    finally:
        world.close()
