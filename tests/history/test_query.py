"""History queries with the Eventer seed's semantics (cosnotify/history/query.py).

Provenance: ../shared/seeds/eventer-protocol.txt, "query events" (each
condition of ``QueryData``) and "Chatter messages" (``QueryData``, ``Event``,
``EventId``, ``Order``, ``OrderBy``). Events are made as the seed describes
them: a type path, a server timestamp, an optional source timestamp and an
optional payload.
"""

from __future__ import annotations

from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import TimeBase

from cosnotify.channel.clock import seconds_to_timet
from cosnotify.history.payload import same_payload
from cosnotify.history.query import (
    DEFAULT_MAX_RESULTS,
    MAX_RESULTS_LIMIT,
    EventId,
    Order,
    OrderBy,
    Query,
    Retained,
    from_fields,
    select,
)
from cosnotify.history.records import path_and_source, retain, source_timestamp
from cosnotify.history.types import matches, pattern_prefix, type_path


def event(path: tuple[str, ...], source: float | None = None, payload: Any = None,
          **fields: int) -> Any:
    """A Structured Event of type path ``path`` (``Subtype`` past two segments)."""
    from omniORB import tcInternal

    header = []
    if len(path) > 2:
        strings = tcInternal.createTypeCode((tcInternal.tv_sequence, tcInternal.tv_string, 0))
        header.append(N.Property("Subtype", CORBA.Any(strings, list(path[2:]))))
    if source is not None:
        header.append(N.Property("SourceTimestamp", CORBA.Any(
            TimeBase._tc_UtcT, TimeBase.UtcT(seconds_to_timet(source), 0, 0, 0))))
    body = payload if payload is not None else CORBA.Any(CORBA.TC_null, None)
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType(path[0], path[1]), ""), header),
        [N.Property(k, CORBA.Any(CORBA.TC_long, v)) for k, v in fields.items()], body)


def kept(instance: int, path: tuple[str, ...], t: float, source: float | None = None,
         payload: Any = None, server: int = 1, session: int = 0, **fields: int) -> Retained:
    return retain(event(path, source, payload, **fields), EventId(server, session, instance), t)


STORE = [
    kept(1, ("a", "b"), 10.0, source=5.0),
    kept(2, ("a", "b", "c"), 20.0),
    kept(3, ("a", "x"), 30.0, source=1.0, payload=CORBA.Any(CORBA.TC_string, "p")),
    kept(4, ("b", "b"), 40.0, source=9.0),
    kept(5, ("a", "b"), 50.0, server=2),
]


def ids(found: list[Retained]) -> list[int]:
    return [e.id.instance for e in found]


class TestTypes:
    """"Matching is done as defined in event's type property description - including
    the ? and * options": ``?`` one segment, ``*`` (last) any number."""

    @pytest.mark.parametrize(("pattern", "path", "expected"), [
        (("a", "b"), ("a", "b"), True),
        (("a", "?"), ("a", "b"), True),
        (("a", "?"), ("a", "b", "c"), False),
        (("a", "*"), ("a",), True),
        (("a", "*"), ("a", "b", "c"), True),
        (("*",), ("x", "y"), True),
        (("?", "b", "*"), ("z", "b"), True),
        (("a", "b"), ("a", "b", "c"), False),
    ])
    def test_patterns(self, pattern: tuple[str, ...], path: tuple[str, ...],
                      expected: bool) -> None:
        assert matches(pattern, path) is expected

    def test_the_path_of_a_notification_event(self) -> None:
        assert type_path(event(("Telecom", "Alarm"))) == ("Telecom", "Alarm")
        assert type_path(event(("gateway", "device", "data", "x"))) == (
            "gateway", "device", "data", "x")

    def test_a_prefix_for_the_index(self) -> None:
        assert pattern_prefix(("a", "b", "?", "c")) == ("a", "b")
        assert pattern_prefix(("*",)) == ()

    def test_a_star_that_is_not_last_is_bad_param(self) -> None:
        with pytest.raises(CORBA.BAD_PARAM, match="last segment"):
            Query(event_types=(("a", "*", "b"),))


class TestConditions:
    """Each of QueryData's filter conditions; "ALL must be met"."""

    def test_server_id(self) -> None:
        assert ids(select(STORE, Query(server_id=2))) == [5]

    def test_event_ids(self) -> None:
        wanted = (EventId(1, 0, 3), EventId(1, 0, 1), EventId(9, 9, 9))  # unknown: nothing
        assert sorted(ids(select(STORE, Query(event_ids=wanted)))) == [1, 3]

    def test_event_types_any_of_the_list(self) -> None:
        found = select(STORE, Query(event_types=(("a", "b"), ("?", "x"))))
        assert sorted(ids(found)) == [1, 3, 5]

    def test_timestamp_range_inclusive(self) -> None:
        # "greater than or equal" / "lower than or equal"
        assert sorted(ids(select(STORE, Query(t_from=20.0, t_to=40.0)))) == [2, 3, 4]

    def test_source_timestamp_range_needs_a_source_timestamp(self) -> None:
        # "only events with source timestamp defined, and greater than or equal"
        assert sorted(ids(select(STORE, Query(source_t_from=1.0)))) == [1, 3, 4]
        assert sorted(ids(select(STORE, Query(source_t_to=5.0)))) == [1, 3]

    def test_payload_the_same(self) -> None:
        # "only events with payload defined and whose payload is the same"
        assert ids(select(STORE, Query(payload=CORBA.Any(CORBA.TC_string, "p")))) == [3]
        assert ids(select(STORE, Query(payload=CORBA.Any(CORBA.TC_string, "q")))) == []
        assert ids(select(STORE, Query(payload=CORBA.Any(CORBA.TC_wstring, "p")))) == []

    def test_payloads_compare_by_value(self) -> None:
        def alarm(severity: int, name: str) -> Any:
            return CORBA.Any(N._tc_PropertySeq, [
                N.Property("severity", CORBA.Any(CORBA.TC_short, severity)),
                N.Property("name", CORBA.Any(CORBA.TC_string, name))])

        assert same_payload(alarm(3, "x"), alarm(3, "x"))
        assert not same_payload(alarm(3, "x"), alarm(4, "x"))
        assert not same_payload(alarm(3, "x"), CORBA.Any(CORBA.TC_short, 3))

    def test_all_conditions_must_hold(self) -> None:
        query = Query(event_types=(("a", "*"),), t_from=15.0, server_id=1)
        assert sorted(ids(select(STORE, query))) == [2, 3]

    def test_a_constraint_in_a_grammar(self) -> None:
        numbered = [kept(i, ("n", "n"), float(i), n=i) for i in range(1, 6)]
        import CosNotifyFilter

        from cosnotify.filter.factory import FilterFactory

        flt = FilterFactory().create_filter("EXTENDED_TCL")
        flt.add_constraints([CosNotifyFilter.ConstraintExp([], "$n >= 4")])
        assert sorted(ids(select(numbered, Query(), flt.match_structured))) == [4, 5]


class TestOrder:
    def test_descending_by_timestamp_is_the_default(self) -> None:
        assert ids(select(STORE, Query())) == [5, 4, 3, 2, 1]

    def test_ascending(self) -> None:
        assert ids(select(STORE, Query(order=Order.ASCENDING))) == [1, 2, 3, 4, 5]

    def test_by_source_timestamp_undefined_last(self) -> None:
        # "Ordering events by source timestamp has events with source timestamp
        # undefined returned last in an arbitrary order."
        found = ids(select(STORE, Query(order_by=OrderBy.SOURCE_TIMESTAMP)))
        assert found[:3] == [4, 1, 3] and sorted(found[3:]) == [2, 5]
        found = ids(select(STORE, Query(order_by=OrderBy.SOURCE_TIMESTAMP,
                                        order=Order.ASCENDING)))
        assert found[:3] == [3, 1, 4] and sorted(found[3:]) == [2, 5]

    def test_unique_type_keeps_the_latest_under_descending(self) -> None:
        # "With the query order set to descending, only one event with the greatest
        # timestamp ... Setting the order to ascending will match the event with the
        # lowest timestamp"
        assert ids(select(STORE, Query(unique_type=True, event_types=(("a", "b"),)))) == [5]
        assert ids(select(STORE, Query(unique_type=True, event_types=(("a", "b"),),
                                       order=Order.ASCENDING))) == [1]

    def test_max_results_follows_the_order(self) -> None:
        assert ids(select(STORE, Query(max_results=2))) == [5, 4]
        assert ids(select(STORE, Query(max_results=2, order=Order.ASCENDING))) == [1, 2]


class TestBadInput:
    """The issue's bad input: a reversed range, an unknown field, a negative
    max_results: BAD_PARAM with the reason; unknown ids match nothing (above)."""

    @pytest.mark.parametrize(("fields", "reason"), [
        ({"tFrom": 5, "tTo": 1}, "after"),
        ({"sourceTFrom": 5, "sourceTTo": 1}, "after"),
        ({"maxResults": -1}, "negative"),
        ({"maxResults": MAX_RESULTS_LIMIT + 1}, "over the limit"),
        ({"colour": "red"}, "unknown field 'colour'"),
        ({"order": "sideways"}, "'order'"),
        ({"types": "a.b"}, "'event_types'"),
        ({"uniqueType": "yes"}, "'unique_type'"),
        ({"ids": [[1, 2]]}, "'event_ids'"),
        ({"maxResults": 1, "max_results": 2}, "twice"),
    ])
    def test_bad_fields(self, fields: dict[str, Any], reason: str) -> None:
        with pytest.raises(CORBA.BAD_PARAM, match=reason):
            from_fields(fields)

    def test_no_max_results_is_capped(self) -> None:
        many = [kept(i, ("a", "b"), float(i)) for i in range(DEFAULT_MAX_RESULTS + 5)]
        assert len(select(many, Query())) == DEFAULT_MAX_RESULTS

    def test_the_seed_names_and_snake_case(self) -> None:
        query = from_fields({"serverId": 1, "types": [["a", "?"]], "tFrom": 1,
                             "orderBy": "sourceTimestamp", "uniqueType": True,
                             "max_results": 3, "ids": [{"server": 1, "session": 0,
                                                        "instance": 2}]})
        assert (query.server_id, query.event_types, query.t_from, query.order_by,
                query.unique_type, query.max_results, query.event_ids) == (
            1, (("a", "?"),), 1.0, OrderBy.SOURCE_TIMESTAMP, True, 3, (EventId(1, 0, 2),))


def test_a_source_timestamp_as_utct_or_timet() -> None:
    assert source_timestamp(event(("a", "b"), source=12.5)) == pytest.approx(12.5)
    timet = event(("a", "b"))
    timet.header.variable_header.append(N.Property("SourceTimestamp", CORBA.Any(
        TimeBase._tc_TimeT, seconds_to_timet(7.0))))
    assert source_timestamp(timet) == pytest.approx(7.0)
    assert source_timestamp(event(("a", "b"))) is None


def test_a_row_takes_the_path_and_the_source_timestamp_from_the_header() -> None:
    # Without a variable header: the fixed header's two segments, no source timestamp.
    assert path_and_source(event(("a", "b"))) == (("a", "b"), None)
    # Subtype carries the segments past two; SourceTimestamp the origin.
    path, source = path_and_source(event(("a", "b", "c", "d"), source=12.5))
    assert (path, source) == (("a", "b", "c", "d"), pytest.approx(12.5))
    assert path_and_source(event(("a", "b"), source=3.0)) == (("a", "b"), pytest.approx(3.0))


def test_the_plan_a_store_narrows_by() -> None:
    plan = Query(t_from=1.0, event_types=(("a", "b", "?"), ("c", "*")),
                 event_ids=(EventId(1, 0, 7), EventId(1, 1, 3)),
                 order=Order.ASCENDING).plan()
    assert (plan.t_from, plan.type_prefixes, plan.instances, plan.ascending) == (
        1.0, (("a", "b"), ("c",)), (3, 7), True)
