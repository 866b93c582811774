"""The Eventer front end with hat-event 0.8.17's own client (the Eventer seed's "Actions":
subscribe, register event, query events; Chatter's ping), over real sockets."""

from __future__ import annotations

import time
from typing import Any

import hat.event.common as hc
import pytest
from hat import chatter
from hat.event.eventer import client as hat_client

from cosnotify.protocols.eventer.mapping import EVENTER_ID
from cosnotify.protocols.eventer.session import prefilter
from tests.protocols.eventer.conftest import SERVER_ID, WAIT, Served, binary, raw, run
from tests.protocols.eventer.test_codec import PING, hat_frame


def json_payload(data: Any) -> hc.EventPayload:
    return hc.EventPayload(hc.EventPayloadType.JSON, data)


def read_frame(sock: Any) -> dict[str, Any]:
    """One frame from the server, decoded with hat-event's repository."""
    sock.settimeout(WAIT)

    def exactly(size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = sock.recv(size - len(data))
            assert chunk, "the server closed the connection"
            data += chunk
        return data

    size_bytes = exactly(1)[0]
    size = int.from_bytes(exactly(size_bytes), "big")
    msg = hc.sbs_repo.decode("Hat", "Msg", exactly(size))
    module, name = msg["data"]["module"][1], msg["data"]["type"]
    msg["value"] = hc.sbs_repo.decode(module, name, msg["data"]["data"])
    return dict(msg)


class TestRegister:
    def test_one_request_has_one_session_and_timestamp(self, served: Served) -> None:
        """All events created based on a single MsgRegisterReq have the same timestamp and
        same session identifier (seed, "register event"); each answer is its event."""
        async def go() -> tuple[list[Any], list[Any]]:
            client = await hat_client.connect(served.address)
            first = await client.register_with_response([
                hc.RegisterEvent(("a", "b", str(n)), hc.Timestamp(100 + n, n), binary(b"%d" % n))
                for n in range(3)])
            second = await client.register_with_response([hc.RegisterEvent(("a", "b"), None,
                                                                           None)])
            await client.async_close()
            return first, second

        first, second = run(go)
        assert {e.event_id.session for e in first} == {first[0].event_id.session}
        assert {e.timestamp for e in first} == {first[0].timestamp}
        assert [e.event_id.instance for e in first] == [1, 2, 3]
        assert {e.event_id.server for e in first + second} == {SERVER_ID}
        assert second[0].event_id.session != first[0].event_id.session
        assert second[0].timestamp > first[0].timestamp
        assert [e.event_type for e in first] == [("a", "b", "0"), ("a", "b", "1"), ("a", "b", "2")]
        assert first[2].source_timestamp == hc.Timestamp(102, 2)
        assert first[2].payload == binary(b"2")

    def test_an_event_a_channel_cannot_carry_is_a_failure(self, served: Served) -> None:
        """For each register event, MsgRegisterRes contains the new event or information
        about registration failure (seed): a type of one segment has no type_name."""
        async def go() -> list[Any]:
            client = await hat_client.connect(served.address)
            made = await client.register_with_response([
                hc.RegisterEvent(("lonely",), None, None),
                hc.RegisterEvent(("a", "b"), None, None)])
            await client.async_close()
            return made

        made = run(go)
        assert made[0] is None and made[1] is not None

    def test_a_request_ending_its_conversation_gets_no_answer(self, served: Served) -> None:
        """MsgRegisterReq with last set: the events are made, no MsgRegisterRes is sent;
        a later query on the same connection finds them."""
        sock = raw(served)
        with sock:
            sock.sendall(hat_frame("HatEventer", "MsgRegisterReq", [hc.register_event_to_sbs(
                hc.RegisterEvent(("silent", "one"), None, None))], last=True))
            query = hc.query_to_sbs(hc.QueryData(event_types=[("silent", "*")]))
            sock.sendall(hat_frame("HatEventer", "MsgQueryReq", query, msg_id=2, last=False))
            reply = read_frame(sock)
        assert reply["data"]["type"] == "MsgQueryRes"  # the first frame back: no register res
        assert [e["type"] for e in reply["value"]] == [["silent", "one"]]


class TestSubscribe:
    def test_question_mark_and_star(self, served: Served) -> None:
        """A subscription notifies the events its types match, with ? (one segment) and *
        (any rest) (seed, "subscribe"). "Events that are notified by single MsgNotify are
        part of same event processing session": never two sessions in one message; one
        session's events may come in two, as the channel delivers them."""
        async def go() -> tuple[list[Any], list[Any], list[Any]]:
            one = await hat_client.connect(served.address, [("s", "?")])
            every = await hat_client.connect(served.address, [("s", "*")])
            for subscribed in (one, every):  # messages are handled in order: subscribed
                await subscribed.query(hc.QueryData(max_results=0))
            client = await hat_client.connect(served.address)
            made = await client.register_with_response([
                hc.RegisterEvent(("s", "a"), None, None),
                hc.RegisterEvent(("s", "a", "b"), None, json_payload({"x": 1})),
                hc.RegisterEvent(("t", "a"), None, None)])
            got_one = await one.receive()
            got_every: list[Any] = []
            while len(got_every) < 2:
                notified = await every.receive()
                assert len({e.event_id.session for e in notified}) == 1
                got_every += notified
            for c in (one, every, client):
                await c.async_close()
            return made, got_one, got_every

        made, got_one, got_every = run(go)
        assert got_one == [made[0]]
        assert got_every == made[:2]

    def test_a_new_subscription_replaces_the_old(self, served: Served) -> None:
        """Each new subscription message implicitly invalidates previous subscriptions
        (seed); an empty one stops notifications."""
        async def go() -> list[Any]:
            listener = await hat_client.connect(served.address, [("old", "*")])
            listener._conn.send(chatter.Data("HatEventer", "MsgSubscribe", [["new", "*"]]))
            client = await hat_client.connect(served.address)
            await listener.query(hc.QueryData(max_results=1))  # the subscribe was handled
            await client.register_with_response([hc.RegisterEvent(("old", "x"), None, None),
                                                 hc.RegisterEvent(("new", "x"), None, None)])
            got = await listener.receive()
            await listener.async_close()
            await client.async_close()
            return got

        got = run(go)
        assert [e.event_type for e in got] == [("new", "x")]


class TestPing:
    def test_ping_is_answered_with_pong(self, served: Served) -> None:
        """Chatter's MsgPing gets MsgPong in its conversation (hat-chatter's ping)."""
        with raw(served) as sock:
            sock.sendall(PING)
            reply = read_frame(sock)
        assert (reply["data"]["module"], reply["data"]["type"]) == (("value", "HatPing"),
                                                                    "MsgPong")
        assert (reply["first"], reply["owner"]) == (4, False)

    def test_a_pinging_client_stays_connected(self, served: Served) -> None:
        """hat-event's client pinging every 0.05 s is answered and keeps its connection."""
        async def go() -> bool:
            client = await hat_client.connect(served.address, ping_timeout=0.05)
            deadline = time.monotonic() + WAIT
            while served.front_end.counters.frames_in < 5 and time.monotonic() < deadline:
                await client.query(hc.QueryData(max_results=0))
            still = client.is_open
            await client.async_close()
            return still

        assert run(go)


class TestRestart:
    def test_ids_are_unique_across_a_restart(self, tmp_path: Any) -> None:
        """Event ids {server, session, instance} are not given twice, also after the service
        restarts on its store (issue 22): the session epoch comes from the store."""
        ids: list[Any] = []
        for _ in range(2):
            made = Served(tmp_path / "store.db")
            try:
                async def go(address: str = made.address) -> list[Any]:
                    client = await hat_client.connect(address)
                    events = await client.register_with_response(
                        [hc.RegisterEvent(("r", "x"), None, None)] * 3)
                    await client.async_close()
                    return events

                ids.extend(e.event_id for e in run(go))
            finally:
                made.close()
        assert len(set(ids)) == 6
        assert ids[0].session != ids[3].session


class TestChannelSide:
    def test_events_carry_their_eventer_id(self, served: Served) -> None:
        """A registered event's Structured Event has the id the register returned (EventerId)."""
        async def go() -> Any:
            client = await hat_client.connect(served.address)
            made = await client.register_with_response([hc.RegisterEvent(("e", "i"), None, None)])
            await client.async_close()
            return made[0]

        made = run(go)
        found = served.channel.query(types=[["e", "i"]])
        header = {p.name: p.value.value() for p in found[0].event.header.variable_header}
        assert header[EVENTER_ID] == f"{SERVER_ID}:{made.event_id.session}:{made.event_id.instance}"


class TestPrefilter:
    @pytest.mark.parametrize(("patterns", "expected"), [
        ((("a", "*"), ("x", "?", "z")), "($domain_name == 'a') or ($domain_name == 'x')"),
        ((("?", "b"),), "($type_name == 'b')"),
        ((("a", "*"), ("*",)), None),
        ((("?", "*"),), None),
        ((("q",), ("?",)), "FALSE"),
        ((("it's", "b\\c"),), "($domain_name == 'it\\'s' and $type_name == 'b\\\\c')"),
    ])
    def test_the_channel_filter_of_a_subscription(self, patterns: Any, expected: Any) -> None:
        """A subscription's EXTENDED_TCL prefilter tests the fixed first two segments; a
        pattern starting with * (or ?, *) passes all; one-segment paths pass none."""
        assert prefilter(patterns) == expected

    def test_a_segment_with_quotes_subscribes_and_is_notified(self, served: Served) -> None:
        """Quotes and backslashes in a subscribed type reach the channel's filter escaped."""
        kind = ("it's", "b\\c")

        async def go() -> tuple[Any, Any]:
            listener = await hat_client.connect(served.address, [kind])
            await listener.query(hc.QueryData(max_results=0))
            client = await hat_client.connect(served.address)
            made = await client.register_with_response([hc.RegisterEvent(("other", "x"), None,
                                                                         None),
                                                        hc.RegisterEvent(kind, None, None)])
            got = await listener.receive()
            await listener.async_close()
            await client.async_close()
            return made, got

        made, got = run(go)
        assert got == [made[1]]


class TestLimits:
    def test_a_large_request_runs_on_the_executor_alike(self, served: Served) -> None:
        """A MsgRegisterReq of more than INLINE_EVENTS events (on the executor) is one
        session and one timestamp too."""
        from cosnotify.protocols.eventer.session import INLINE_EVENTS

        async def go() -> list[Any]:
            client = await hat_client.connect(served.address)
            made = await client.register_with_response(
                [hc.RegisterEvent(("big", str(n)), None, None) for n in range(INLINE_EVENTS + 44)])
            await client.async_close()
            return made

        made = run(go)
        assert len(made) == INLINE_EVENTS + 44
        assert len({(e.event_id.session, e.timestamp) for e in made}) == 1

    def test_a_query_reply_is_bounded(self, tmp_path: Any) -> None:
        """A MsgQueryRes holds at most max_pending / 4 bytes of stored events: a query
        that would pass it returns the events found until then."""
        from cosnotify.protocols.listener import Limits

        made = Served(tmp_path / "store.db", Limits(max_pending=256 * 1024))
        try:
            async def go() -> list[Any]:
                client = await hat_client.connect(made.address)
                for _ in range(4):
                    await client.register_with_response(
                        [hc.RegisterEvent(("bulk", "x"), None, binary(b"x" * 1000))] * 25)
                found = await client.query(hc.QueryData(event_types=[("bulk", "*")]))
                await client.async_close()
                return found

            found = run(go)
        finally:
            made.close()
        assert 0 < len(found) < 100
