"""Review 124's findings on the Eventer front end, each pinned by a test: json payloads
that are not JSON, a NUL in a query's payload, a ``*`` that is not a subscription
pattern's last segment, JSON payloads compared as values, source timestamps out of
range (docs/protocols.md, "Eventer")."""

from __future__ import annotations

import asyncio
from typing import Any

import hat.event.common as hc
import pytest
from hat import chatter
from hat.event.eventer import client as hat_client

from tests.protocols.eventer.conftest import WAIT, Served, run


def J(value: Any) -> hc.EventPayload:
    return hc.EventPayload(hc.EventPayloadType.JSON, value)


def _register_raw(address: str, events: list[dict[str, Any]]) -> list[Any]:
    """A MsgRegisterReq sent as SBS data (hat-event's client would not send bad JSON):
    its MsgRegisterRes's items."""
    async def go() -> list[Any]:
        conn = await chatter.connect(hc.sbs_repo, address)
        try:
            conn.send(chatter.Data("HatEventer", "MsgRegisterReq", events), last=False)
            msg = await asyncio.wait_for(conn.receive(), WAIT)
            assert msg.data.type == "MsgRegisterRes"
            return list(msg.data.data)
        finally:
            await conn.async_close()
    return run(go)


def _raw_event(event_type: tuple[str, ...], payload: Any) -> dict[str, Any]:
    return {"type": list(event_type), "sourceTimestamp": ("none", None),
            "payload": ("value", payload)}


class TestJsonThatIsNotJson:
    """Seed: a json payload is ``Json`` -- hat-event's server decodes it on arrival."""

    def test_it_fails_its_registration_and_is_never_stored(self, served: Served) -> None:
        res = _register_raw(served.address, [
            _raw_event(("poison", "x"), ("json", "{not json")),
            _raw_event(("poison", "y"), ("json", '{"a": 1}'))])
        assert res[0] == ("failure", None)
        assert res[1][0] == "event"

        async def go() -> list[Any]:
            client = await hat_client.connect(served.address)
            found = await client.query(hc.QueryData(event_types=[("poison", "*")]))
            await client.async_close()
            return found
        assert [(tuple(e.event_type), e.payload.data) for e in run(go)] == \
            [(("poison", "y"), {"a": 1})]

    def test_a_subscriber_is_not_sent_it(self, served: Served) -> None:
        async def go() -> list[Any]:
            good = await hat_client.connect(served.address, [("poison", "*")])
            await good.query(hc.QueryData(max_results=1))  # the subscription is in place
            await asyncio.get_running_loop().run_in_executor(None, _register_raw, served.address,
                                                             [_raw_event(("poison", "x"),
                                                                         ("json", "[1,"))])
            await good.register_with_response([hc.RegisterEvent(("poison", "ok"), None, None)])
            got = await asyncio.wait_for(good.receive(), WAIT)  # ConnectionError when broken
            await good.async_close()
            return got
        assert [tuple(e.event_type) for e in run(go)] == [("poison", "ok")]


def _query_with_payload(payload: Any) -> dict[str, Any]:
    data = hc.query_to_sbs(hc.QueryData(event_types=[("a", "*")]))
    data["payload"] = ("value", payload)
    return data


@pytest.mark.parametrize("payload", [
    ("json", '"a\x00b"'),
    ("sbs", {"module": ("none", None), "type": "T\x00", "data": b""}),
    ("sbs", {"module": ("value", "M\x00"), "type": "T", "data": b""}),
])
def test_a_query_with_nul_in_its_payload_is_answered_empty(served: Served, payload: Any) -> None:
    """docs/protocols.md: "A query that cannot be answered ... is answered with no
    events" -- and the session goes on (a query after it is answered)."""
    async def go() -> tuple[Any, ...]:
        conn = await chatter.connect(hc.sbs_repo, served.address)
        try:
            conn.send(chatter.Data("HatEventer", "MsgQueryReq", _query_with_payload(payload)),
                      last=False)
            msg = await asyncio.wait_for(conn.receive(), WAIT)  # ConnectionError if closed
            again = hc.query_to_sbs(hc.QueryData(max_results=1))
            conn.send(chatter.Data("HatEventer", "MsgQueryReq", again), last=False)
            after = await asyncio.wait_for(conn.receive(), WAIT)
            return msg.data.type, msg.data.data, after.data.type
        finally:
            await conn.async_close()
    assert run(go) == ("MsgQueryRes", [], "MsgQueryRes")


class TestStarNotLast:
    """A ``*`` that is not a subscription pattern's last segment: hat-event 0.8.17's
    Subscription raises ValueError('invalid query event type') and its server closes
    the connection; so does the front end (it read ("s", "*", "b") as ("s", "*"))."""

    @pytest.mark.parametrize("pattern", [("s", "*", "b"), ("*", "x"), ("s", "?", "*", "*")])
    def test_the_subscription_refuses_it_as_hat_events(self, pattern: tuple[str, ...]) -> None:
        from hat.event.common.subscription import PySubscription

        from cosnotify.protocols.eventer.mapping import Subscription

        with pytest.raises(ValueError, match="invalid query event type"):
            PySubscription([pattern])
        with pytest.raises(ValueError, match="invalid query event type"):
            Subscription([("s", "a"), pattern])

    def test_the_connection_is_closed_and_nothing_delivered(self, served: Served) -> None:
        async def go() -> list[Any]:
            bad = await hat_client.connect(served.address, [("s", "*", "b")])
            outcome: list[Any] = []
            try:
                outcome.append(await asyncio.wait_for(bad.receive(), WAIT))
            except ConnectionError:
                outcome.append("closed")
            await bad.async_close()
            client = await hat_client.connect(served.address)  # the front end serves on
            await client.register_with_response([hc.RegisterEvent(("s", "a"), None, None)])
            outcome.append(len(await client.query(hc.QueryData(event_types=[("s", "*")]))))
            await client.async_close()
            return outcome
        assert run(go) == ["closed", 1]
        assert served.front_end.counters.closed_bad >= 1


def _register_and_query(served: Served, stored: Any, asked: hc.EventPayload) -> tuple[Any, Any]:
    async def go() -> tuple[Any, Any]:
        client = await hat_client.connect(served.address)
        made = await client.register_with_response([hc.RegisterEvent(("j", "x"), None, stored)])
        found = await client.query(hc.QueryData(payload=asked))
        await client.async_close()
        return made, found
    return run(go)


class TestJsonComparedAsValues:
    """Seed, "query events": "only events with payload defined and whose payload is the
    same as the query's payload"; hat-event 0.8.17 decodes a json payload on arrival
    and compares the decoded values (``event.payload != payload``)."""

    @pytest.mark.parametrize(("stored", "asked"), [
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
        (1.0, 1),
        (1, 1.0),
        ([1, {"x": "é", "y": None}], [1, {"y": None, "x": "é"}]),
    ])
    def test_equal_json_values_match(self, served: Served, stored: Any, asked: Any) -> None:
        made, found = _register_and_query(served, J(stored), J(asked))
        assert found == made

    @pytest.mark.parametrize(("stored", "asked"), [
        (J({"a": 1}), J({"a": 2})),
        (J([1, 2]), J([2, 1])),
        (J("1"), J(1)),
        (hc.EventPayload(hc.EventPayloadType.BINARY, b"1"), J(1)),
    ])
    def test_different_values_do_not(self, served: Served, stored: Any, asked: Any) -> None:
        assert _register_and_query(served, stored, asked)[1] == []

    def test_spacing_of_the_text_does_not_matter(self, served: Served) -> None:
        res = _register_raw(served.address, [_raw_event(("j", "x"), ("json", '{ "a" : [1, 2] }'))])
        assert res[0][0] == "event"
        assert _register_and_query(served, None, J({"a": [1, 2]}))[1] == \
            [hc.event_from_sbs(res[0][1])]

    def test_a_query_json_that_is_not_json_finds_nothing(self, served: Served) -> None:
        _register_and_query(served, J({"a": 1}), J({"a": 1}))

        async def go() -> tuple[Any, ...]:
            conn = await chatter.connect(hc.sbs_repo, served.address)
            try:
                conn.send(chatter.Data("HatEventer", "MsgQueryReq",
                                       _query_with_payload(("json", '{"a": 1'))), last=False)
                msg = await asyncio.wait_for(conn.receive(), WAIT)
                return msg.data.type, msg.data.data
            finally:
                await conn.async_close()
        assert run(go) == ("MsgQueryRes", [])


def test_a_corba_payload_is_found_by_the_json_it_was_shown_as(served: Served) -> None:
    """A CORBA supplier's ``long`` 42 is answered as json 42 (docs/protocols.md, "any
    other Any as json"); a query with that very payload finds it."""
    import CosNotifyChannelAdmin as CA

    from tests.protocols.eventer.test_interplay import corba_event

    proxy, _ = served.channel._get_default_supplier_admin() \
        .obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
    proxy.connect_structured_push_supplier(None)
    proxy.push_structured_event(corba_event())

    async def go() -> tuple[Any, Any, Any]:
        client = await hat_client.connect(served.address)
        first = await client.query(hc.QueryData(event_types=[("corba", "*")]))
        again = await client.query(hc.QueryData(event_types=[("corba", "*")],
                                                payload=first[0].payload))
        other = await client.query(hc.QueryData(payload=J(43)))
        await client.async_close()
        return first, again, other
    first, again, other = run(go)
    assert first[0].payload.data == 42
    assert again == first
    assert other == []


@pytest.mark.parametrize(("given", "kept"), [((5, 1_500_000), (6, 500_000)),
                                             ((5, -1), (4, 999_999)),
                                             ((5, 7), (5, 7))])
def test_a_source_timestamp_is_the_same_in_register_query_and_notify(
        served: Served, given: tuple[int, int], kept: tuple[int, int]) -> None:
    """The seed's Timestamp is {s: Integer, us: Integer}: a us outside 0..999999 is
    carried into s, and MsgRegisterRes, MsgNotify and MsgQueryRes agree on it."""
    async def go() -> tuple[Any, Any, Any]:
        client = await hat_client.connect(served.address, [("u", "*")])
        await client.query(hc.QueryData(max_results=1))  # the subscription is in place
        made = await client.register_with_response(
            [hc.RegisterEvent(("u", "a"), hc.Timestamp(*given), None)])
        notified = await asyncio.wait_for(client.receive(), WAIT)
        found = await client.query(hc.QueryData(event_types=[("u", "*")]))
        await client.async_close()
        return made, notified, found
    made, notified, found = run(go)
    assert [tuple(e.source_timestamp) for e in (*made, *notified, *found)] == [kept] * 3
