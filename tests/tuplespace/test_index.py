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
