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
