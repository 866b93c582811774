"""MsgQueryReq/MsgQueryRes: every QueryData field of the Eventer seed's "query events",
asked by hat-event 0.8.17's client of four stored events (conftest.stored: E1..E4)."""

from __future__ import annotations

from typing import Any

import hat.event.common as hc
import pytest
from hat.event.eventer import client as hat_client

from tests.protocols.eventer.conftest import SERVER_ID, Served, binary, run


def query(served: Served, **fields: Any) -> list[Any]:
    fields.setdefault("event_types", [("q", "*")])

    async def go() -> list[Any]:
        client = await hat_client.connect(served.address)
        found = await client.query(hc.QueryData(**fields))
        await client.async_close()
        return found

    found: list[Any] = run(go)
    return found


def names(stored: list[Any], found: list[Any]) -> list[str]:
    """E1..E4 for the stored events found, in the order found."""
    return [f"E{stored.index(e) + 1}" for e in found]


class TestFields:
    def test_server_id(self, served: Served, stored: list[Any]) -> None:
        """server_id: only events with event_id.server equal to it."""
        assert names(stored, query(served, server_id=SERVER_ID)) == ["E4", "E3", "E2", "E1"]
        assert query(served, server_id=SERVER_ID + 1) == []

    def test_event_ids(self, served: Served, stored: list[Any]) -> None:
        """event_ids: only events with ids defined in the condition."""
        found = query(served, event_ids=[stored[1].event_id, stored[3].event_id,
                                         hc.EventId(SERVER_ID, 1, 10**6)])
        assert names(stored, found) == ["E4", "E2"]
        assert query(served, event_ids=[hc.EventId(SERVER_ID + 1, 1, 1)]) == []

    @pytest.mark.parametrize(("types", "expected"), [
        ([("q", "a", "?")], ["E4", "E2", "E1"]),
        ([("q", "?", "x")], ["E4", "E3", "E1"]),
        ([("q", "*")], ["E4", "E3", "E2", "E1"]),
        ([("q", "b", "x"), ("q", "a", "y")], ["E3", "E2"]),
        ([("q",)], []),
    ])
    def test_event_types(self, served: Served, stored: list[Any], types: list[Any],
                         expected: list[str]) -> None:
        """event_types: the type matches at least one, including the ? and * options."""
        assert names(stored, query(served, event_types=types)) == expected

    def test_t_from_and_t_to(self, served: Served, stored: list[Any]) -> None:
        """t_from/t_to: timestamp greater than or equal / lower than or equal; a returned
        timestamp as a bound includes its event."""
        assert names(stored, query(served, t_from=stored[1].timestamp)) == ["E4", "E3", "E2"]
        assert names(stored, query(served, t_to=stored[1].timestamp)) == ["E2", "E1"]
        assert names(stored, query(served, t_from=stored[1].timestamp,
                                   t_to=stored[1].timestamp)) == ["E2"]

    def test_source_t_from_and_to(self, served: Served, stored: list[Any]) -> None:
        """source_t_from/to: only events with a source timestamp, >= / <= the bound."""
        assert names(stored, query(served, source_t_from=hc.Timestamp(100, 0))) == ["E3", "E1"]
        assert names(stored, query(served, source_t_to=hc.Timestamp(100, 0))) == ["E4", "E1"]

    def test_payload(self, served: Served, stored: list[Any]) -> None:
        """payload: only events with a payload that is the same as the query's."""
        assert names(stored, query(served, payload=binary(b"1"))) == ["E4", "E1"]
        assert names(stored, query(served, payload=stored[2].payload)) == ["E3"]
        assert names(stored, query(served, payload=stored[1].payload)) == ["E2"]
        assert query(served, payload=binary(b"2")) == []

    def test_order(self, served: Served, stored: list[Any]) -> None:
        """order: ascending from the earliest to the latest, descending reversed."""
        assert names(stored, query(served, order=hc.Order.ASCENDING)) == ["E1", "E2", "E3",
                                                                          "E4"]
        assert names(stored, query(served, order=hc.Order.DESCENDING)) == ["E4", "E3", "E2",
                                                                           "E1"]

    def test_order_by_source_timestamp(self, served: Served, stored: list[Any]) -> None:
        """order_by source timestamp: events without one are returned last."""
        assert names(stored, query(served, order=hc.Order.ASCENDING,
                                   order_by=hc.OrderBy.SOURCE_TIMESTAMP)) == [
            "E4", "E1", "E3", "E2"]
        assert names(stored, query(served, order_by=hc.OrderBy.SOURCE_TIMESTAMP)) == [
            "E3", "E1", "E4", "E2"]

    def test_unique_type(self, served: Served, stored: list[Any]) -> None:
        """unique_type: one event per type, the latest under descending order, the
        earliest under ascending."""
        assert names(stored, query(served, unique_type=True)) == ["E4", "E3", "E2"]
        assert names(stored, query(served, unique_type=True,
                                   order=hc.Order.ASCENDING)) == ["E1", "E2", "E3"]

    def test_max_results(self, served: Served, stored: list[Any]) -> None:
        """max_results: at most that many, in the query's order."""
        assert names(stored, query(served, max_results=2)) == ["E4", "E3"]
        assert names(stored, query(served, max_results=2,
                                   order=hc.Order.ASCENDING)) == ["E1", "E2"]
        assert query(served, max_results=0) == []

    def test_a_query_returns_what_the_register_returned(self, served: Served,
                                                        stored: list[Any]) -> None:
        """Queried events equal the registered ones: id, type, timestamps, payload."""
        assert query(served, order=hc.Order.ASCENDING) == stored

    def test_a_malformed_query_is_answered_empty(self, served: Served,
                                                 stored: list[Any]) -> None:
        """A '*' that is not last matches nothing (the protocol has no error to answer)."""
        assert query(served, event_types=[("*", "q")]) == []
