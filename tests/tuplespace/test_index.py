"""The index narrows, the grammar decides: retrieval returns exactly what "Tuple
Matching" selects, oldest first.

Provenance: the Event Heap wire protocol appendix, "Tuple Matching" (a template
matches iff every non-virtual field is present and matches) and "Transfer of
Fundamental Types"; the EVENTHEAP grammar's equivalence rules
(docs/grammars/eventheap.md: the first property of a name, filterable data
before the variable header; unsigned values as their Java value; floats as
IEEE singles; NaN equal to NaN, 0.0 not equal to -0.0). Property-based:
random events and templates over a small vocabulary, so values collide.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from omniORB import CORBA

import CosNotification as N

from cosnotify.channel.factory import EventChannelFactory
from cosnotify.filter.eventheap import compile_eventheap
from cosnotify.filter.registry import CompileContext
from cosnotify.tuplespace import TupleSpace
from tests.tuplespace.conftest import supplier

NAMES = ["x", "y", "Source"]

VALUES = [
    (CORBA.TC_long, 1), (CORBA.TC_long, -1), (CORBA.TC_short, 1), (CORBA.TC_octet, 1),
    (CORBA.TC_ulong, 4294967295), (CORBA.TC_ulong, 1), (CORBA.TC_longlong, 1),
    (CORBA.TC_ulonglong, 2**64 - 1), (CORBA.TC_float, 0.1), (CORBA.TC_float, 1.0),
    (CORBA.TC_double, 0.0), (CORBA.TC_double, -0.0), (CORBA.TC_double, float("nan")),
    (CORBA.TC_double, 1.0), (CORBA.TC_double, 0.1), (CORBA.TC_string, "a"),
    (CORBA.TC_string, "b"), (CORBA.TC_boolean, True), (CORBA.TC_boolean, False),
    (CORBA.TC_null, None),
    # "Inner Anys and aliases are read through" (docs/grammars/eventheap.md; review 1):
    (CORBA.TC_any, CORBA.Any(CORBA.TC_long, 1)), (CORBA.TC_any, CORBA.Any(CORBA.TC_string, "a")),
    (CORBA.TC_any, CORBA.Any(CORBA.TC_null, None)),
    (CORBA.TC_any, CORBA.Any(CORBA.TC_any, CORBA.Any(CORBA.TC_double, 1.0))),
]

LITERALS = [
    "int = 1", "int = -1", "long = 1", "long = -1", "float = 0.1", "float = 1",
    "double = 0.0", "double = -0.0", "double = NaN", "double = 1", "double = 0.1",
    'string = "a"', 'string = "b"', "boolean = true", "boolean = false", "int = null",
    "int = ?", "long = ?", "float = ?", "double = ?", "string = ?", "boolean = ?",
    "int = ~",
]

props = st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(VALUES)), max_size=4)
events = st.tuples(st.sampled_from(["A", "B"]), props, props)
SOURCES = ['string = "a"', 'string = "b"', "string = ?", "string = null"]  # Table 1: String
fields = st.fixed_dictionaries({}, optional={
    "x": st.sampled_from(LITERALS), "y": st.sampled_from(LITERALS),
    "Source": st.sampled_from(SOURCES)})
templates = st.tuples(st.sampled_from(["", 'EventType = "A", ', 'EventType = "B", ',
                                       "EventType = ?, "]), fields)


def make(type_name: str, filterable: list[Any], variable: list[Any]) -> Any:
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("D", type_name), ""),
                      [N.Property(n, CORBA.Any(tc, v)) for n, (tc, v) in variable]),
        [N.Property(n, CORBA.Any(tc, v)) for n, (tc, v) in filterable],
        CORBA.Any(CORBA.TC_null, None))


def text(template: tuple[str, dict[str, str]]) -> str:
    head, body = template
    return (head + ", ".join(f"{name}: {literal}" for name, literal in body.items())
            ).rstrip(", ")


@pytest.fixture(scope="module")
def shared() -> Iterator[EventChannelFactory]:
    with EventChannelFactory() as made:
        yield made


def one(filterable: list[Any], variable: list[Any], body: dict[str, str]) -> Any:
    """An @example: one event of type A, one template."""
    return example(batch=[("A", filterable, variable)], chosen=[("", body)])


L_ = CORBA.TC_long
NAN = float("nan")


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(events, min_size=1, max_size=25), st.lists(templates, min_size=1, max_size=3))
# The grammar's equivalence rules, each once for sure (docs/grammars/eventheap.md):
@one([("x", (CORBA.TC_ulong, 4294967295))], [], {"x": "int = -1"})  # unsigned: Java value
@one([("x", (CORBA.TC_ulonglong, 2**64 - 1))], [], {"x": "long = -1"})
@one([("x", (CORBA.TC_short, 1))], [], {"x": "int = 1"})  # short widens to int
@one([("x", (CORBA.TC_longlong, 1))], [], {"x": "int = 1"})  # a long long is no int
@one([("x", (CORBA.TC_double, NAN))], [], {"x": "double = NaN"})  # NaN equals NaN
@one([("x", (CORBA.TC_double, -0.0))], [], {"x": "double = 0.0"})  # -0.0 is not 0.0
@one([("x", (CORBA.TC_double, 0.0))], [], {"x": "double = 0.0"})
@one([("x", (CORBA.TC_float, 0.1))], [], {"x": "float = 0.1"})  # both as singles
@one([("x", (CORBA.TC_null, None))], [], {"x": "int = null"})  # null: any type
@one([("x", (L_, 1))], [("x", (L_, 2))], {"x": "int = 2"})  # the first property counts
@one([], [("y", (L_, 1))], {"y": "int = 1"})  # then the variable header
@one([("Source", (CORBA.TC_string, "a"))], [], {"Source": 'string = "a"'})
def test_retrieval_is_what_matching_selects(shared: EventChannelFactory, batch: list[Any],
                                             chosen: list[Any]) -> None:
    """snoopEvents returns every tuple one of the templates matches (by the grammar's own
    matcher), oldest first; getEvent and removeEvent the oldest of them."""
    channel, _ = shared.create_channel([], [])
    try:
        space = TupleSpace.of(channel)
        texts = [text(t) for t in chosen]
        space.get_event(texts)  # the indexes are made on first use: some now, some later
        supplier(channel).push_structured_events([make(*e) for e in batch])
        matchers = [compile_eventheap(t, CompileContext()).structured for t in texts]
        every = space.get_all()
        expected = [t.id for t in every if any(m(t.event) for m in matchers)]
        assert [t.id for t in space.snoop_events(texts)] == expected
        first = space.get_event(texts)
        assert (first.id if first else None) == (expected[0] if expected else None)
        taken = space.remove_event(texts)
        assert (taken.id if taken else None) == (expected[0] if expected else None)
        assert [t.id for t in space.snoop_events(texts)] == expected[1:]
    finally:
        channel.destroy()


# -- the three event forms (review finding 1: "test_index.py never generates inner Anys,
# Any-form events or typed events") --------------------------------------------------------

FORMS = ["structured", "any", "typed"]


def envelope(form: str, type_name: str, filterable: list[Any], arrival: float) -> Any:
    """The channel's envelope of an event in ``form``: a Structured Event, an Any holding
    a PropertySeq (read "as typed", docs/grammars/eventheap.md), or a typed call (§2.7:
    ``event_type`` first, then the parameters)."""
    from cosnotify.channel.event import from_any, from_structured, typed_sequence

    props = [N.Property(n, CORBA.Any(tc, v)) for n, (tc, v) in filterable]
    if form == "structured":
        return from_structured(make(type_name, filterable, []), arrival)
    if form == "any":
        head = N.Property("event_type", CORBA.Any(N._tc_EventType, N.EventType("D", type_name)))
        return from_any(CORBA.Any(N._tc_PropertySeq, [head, *props]), arrival)
    typed = N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("", "%TYPED"), ""), []),
        [N.Property("operation", CORBA.Any(CORBA.TC_string, f"::D::{type_name}")), *props],
        CORBA.Any(CORBA.TC_null, None))
    made = from_structured(typed, arrival)
    made.typed = typed_sequence(typed)
    return made


def subject(made: Any) -> tuple[str, Any]:
    if made.typed is not None:
        return "typed", made.typed
    if made.is_structured:
        return "structured", made.structured
    return "any", made.any


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(FORMS), st.sampled_from(["A", "B"]), props),
                min_size=1, max_size=20),
       st.lists(templates, min_size=1, max_size=3))
@example(batch=[("any", "A", [("x", (CORBA.TC_any, CORBA.Any(CORBA.TC_long, 1)))])],
         chosen=[("", {"x": "int = 1"})])
@example(batch=[("typed", "A", [("x", (CORBA.TC_any, CORBA.Any(CORBA.TC_long, 1)))])],
         chosen=[('EventType = "A", ', {"x": "int = 1"})])
def test_every_form_is_found_as_matching_selects(shared: EventChannelFactory,
                                                  batch: list[Any], chosen: list[Any]) -> None:
    """Tuple Matching over the three forms an accepted event may have (structured, an
    Any, a typed call): snoopEvents is exactly what the grammar's matcher for that form
    selects, oldest first, and getEvent the oldest of them."""
    channel, _ = shared.create_channel([], [])
    try:
        space = TupleSpace.of(channel)
        texts = [text(t) for t in chosen]
        space.get_event(texts)  # indexes made before the events come
        made = [envelope(form, type_name, filterable, shared.service.clock.now())
                for form, type_name, filterable in batch]
        for one_event in made:
            channel._forward(one_event)
        compiled = [compile_eventheap(t, CompileContext()) for t in texts]
        every = space.get_all()
        assert len(every) == len(made)
        expected = []
        for found, one_event in zip(every, made):
            form, value = subject(one_event)
            if any(getattr(c, form)(value) for c in compiled):
                expected.append(found.id)
        assert [t.id for t in space.snoop_events(texts)] == expected
        first = space.get_event(texts)
        assert (first.id if first else None) == (expected[0] if expected else None)
    finally:
        channel.destroy()


class TestInnerAnys:
    """docs/grammars/eventheap.md: "Inner Anys and aliases are read through" -- by the
    space's index and sequencing as by the grammar (review finding 1)."""

    def test_a_value_in_an_inner_any_is_found(self, space: TupleSpace, channel: Any) -> None:
        """severity = any(any(long 3)) matches `severity: int = 3` for every operation,
        whether the index on severity was made before or after the event came."""
        inner = CORBA.Any(CORBA.TC_any, CORBA.Any(CORBA.TC_any, CORBA.Any(CORBA.TC_long, 3)))
        ev = N.StructuredEvent(
            N.EventHeader(N.FixedEventHeader(N.EventType("D", "Alarm"), ""), []),
            [N.Property("severity", inner)], CORBA.Any(CORBA.TC_null, None))
        space.get_event('EventType = "Alarm", level: int = 3')  # an index made before
        supplier(channel).push_structured_events([ev, ev])
        first, second = (t.id for t in space.get_all())
        assert space.get_event('EventType = "Alarm", severity: int = 3').id == first
        assert [t.id for t in space.snoop_events("severity: int = 3")] == [first, second]
        assert space.remove_event("severity: int = 3").id == first
        assert space.get_event("severity: int = ?").id == second
        assert space.get_event("severity: int = 4") is None

    def test_sequencing_is_read_through_inner_anys(self, space: TupleSpace,
                                                   channel: Any) -> None:
        """"Event Heap Client Responsibilities": Source, SessionID and SequenceNum in inner
        Anys are an event's sequencing; number 3 after number 5 of one session is not
        returned to a client that received 5."""
        def wrapped(value: Any) -> Any:
            return CORBA.Any(CORBA.TC_any, value)

        def sequenced(number: int) -> Any:
            return N.StructuredEvent(
                N.EventHeader(N.FixedEventHeader(N.EventType("D", "T"), ""), []),
                [N.Property("Source", wrapped(CORBA.Any(CORBA.TC_string, "S"))),
                 N.Property("SessionID", wrapped(CORBA.Any(CORBA.TC_long, 7))),
                 N.Property("SequenceNum", wrapped(CORBA.Any(CORBA.TC_long, number)))],
                CORBA.Any(CORBA.TC_null, None))

        supplier(channel).push_structured_events([sequenced(5), sequenced(3)])
        reader = space.connect("reader")
        got = reader.get_event('EventType = "T"')
        assert got is not None and got.event.filterable_data[2].value.value().value() == 5
        assert reader.get_event('EventType = "T"') is None
