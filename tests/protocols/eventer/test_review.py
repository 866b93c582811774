"""Review findings on the Eventer front end, each pinned by a test: register order,
ids of other suppliers' events, subscription matching cost, what hat-sbs may be made
to decode, and query answers cut short (docs/protocols.md, "Eventer")."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

import hat.event.common as hc
import pytest
from hat.event.eventer import client as hat_client
from hypothesis import given, settings
from hypothesis import strategies as st

import CosNotifyChannelAdmin as CA

from cosnotify.history.types import matches
from cosnotify.protocols.eventer import codec, schema, session
from cosnotify.protocols.eventer.mapping import FOREIGN_SESSION, Subscription
from tests.protocols.eventer.conftest import (
    WAIT,
    Recorder,
    Served,
    binary,
    closed_by_peer,
    raw,
    run,
)
from tests.protocols.eventer.test_codec import hat_frame
from tests.protocols.eventer.test_interplay import corba_event

SEGMENTS = st.sampled_from(["a", "b", "", "?", "*"])


class TestRegisterOrder:
    def test_concurrent_registers_are_notified_in_session_and_timestamp_order(
            self, served: Served) -> None:
        """Events that are notified by single MsgNotify are part of same event processing
        session (seed, "subscribe"): registers of four clients at once (each on the
        executor) reach a subscriber in the order of their sessions and timestamps, as
        from hat-event's one register loop; a register that took its timestamp first
        entering the channel second showed the subscriber time going back."""
        batch = session.INLINE_EVENTS + 44

        async def go() -> list[Any]:
            subscriber = await hat_client.connect(served.address, [("o", "*")])
            await subscriber.query(hc.QueryData(max_results=0))
            clients = [await hat_client.connect(served.address) for _ in range(4)]

            async def register(client: Any, k: int) -> None:
                for _ in range(8):
                    await client.register_with_response(
                        [hc.RegisterEvent(("o", str(k)), None, None)] * batch)

            await asyncio.gather(*(register(c, k) for k, c in enumerate(clients)))
            got: list[Any] = []
            while len(got) < 4 * 8 * batch:
                got.extend(await subscriber.receive())
            for client in [*clients, subscriber]:
                await client.async_close()
            return got

        got = run(go)
        keys = [(e.timestamp, e.event_id.session) for e in got]
        assert keys == sorted(keys)


    def test_a_register_that_took_its_timestamp_first_enters_first(
            self, served: Served, monkeypatch: Any) -> None:
        """Deterministically: register A takes its session and timestamp and is held
        before it enters the channel while register B runs; the channel receives A
        before B (B waits for A), so time never goes back for a consumer."""
        service = served.front_end.service  # type: ignore[attr-defined]
        recorder = Recorder()
        proxy, _ = served.channel._get_default_consumer_admin() \
            .obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(recorder)
        a_in, b_done = threading.Event(), threading.Event()
        real = session._push_at

        def push(proxy: Any, notifications: Any, arrival: float) -> None:
            if threading.current_thread().name == "A":
                a_in.set()
                b_done.wait(1.0)  # B overtakes A here unless registers are serialised
            real(proxy, notifications, arrival)

        monkeypatch.setattr(session, "_push_at", push)
        event = (codec.RegisterEvent(("r", "x")),)
        a = threading.Thread(target=service.register, args=(event,), name="A")
        a.start()
        assert a_in.wait(WAIT)
        b = threading.Thread(target=lambda: (service.register(event), b_done.set()), name="B")
        b.start()
        a.join(WAIT)
        b.join(WAIT)
        assert recorder.wait_for(2)
        stamps = [next(p.value.value() for p in e.header.variable_header
                       if p.name == "EventerTimestamp") for e in recorder.received]
        assert stamps == sorted(stamps)

    def test_registers_stop_running_inline_once_half_the_history_buffer_is_full(
            self, served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
        """A register runs on the loop's thread only while its push cannot block on the
        history writer's flow control (EventerService.inline): counted in events, not in
        supply calls (review 63: calls of 256 events each kept it inline past the bound,
        and the loop's thread then encoded the whole buffer itself)."""
        from cosnotify.channel import retention as module
        from cosnotify.channel.event import from_structured

        writer = served.channel._retention
        assert writer is not None
        # Nothing is written meanwhile: no writer task, no linger timer.
        monkeypatch.setattr(writer._service, "submit", lambda task, lane=None: None)
        monkeypatch.setattr(writer._service.clock, "call_later", lambda delay, fn: None)
        service = session.EventerService(served.channel, served.loop, 7, served.store, 1 << 20)
        calls = module.MAX_BUFFERED // 2 // session.INLINE_EVENTS + 1
        made = [from_structured(corba_event(), 1.0) for _ in range(session.INLINE_EVENTS)]
        assert service.inline(session.INLINE_EVENTS)
        for _ in range(calls):
            writer.keep(list(made))
        assert writer._buffered >= module.MAX_BUFFERED // 2
        assert not service.inline(1)


class TestUnencodable:
    def test_an_event_sbs_cannot_carry_is_left_out_of_its_message_alone(self) -> None:
        """Should an event ever reach a message that SBS cannot encode (an id past 2**63:
        the reading of ids is bounded, so none is known), the message goes with the
        others (session._encodable), not the connection (review 65)."""
        good = codec.Event(codec.EventId(7, 1, 1), ("a", "b"), codec.Timestamp(1, 0),
                           None, None)
        bad = codec.Event(codec.EventId(7, 1, 2**64), ("a", "b"), codec.Timestamp(1, 0),
                          None, None)
        with pytest.raises(OverflowError):
            codec.ChatterConnection().notify([good, bad])
        assert session._encodable([good, bad, good]) == [good, good]


class TestForeignIds:
    def test_a_corba_events_queried_id_is_no_eventer_clients_id(self, served: Served) -> None:
        """Event ids are unique (issue 22): a CORBA supplier's event, queried, has the
        store's session with FOREIGN_SESSION set; without it, history session 2 and
        store id 2 were the id of the second event of the second MsgRegisterReq."""
        proxy, _ = served.channel._get_default_supplier_admin() \
            .obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_supplier(None)

        async def go() -> list[Any]:
            client = await hat_client.connect(served.address)
            await client.register_with_response([hc.RegisterEvent(("q", "a"), None, None)])
            proxy.push_structured_event(corba_event())
            await client.register_with_response([hc.RegisterEvent(("q", "b"), None, None)] * 2)
            found = await client.query(hc.QueryData(event_types=[("*",)]))
            await client.async_close()
            return found

        found = run(go)
        ids = [e.event_id for e in found]
        assert len(found) == 4
        assert len(set(ids)) == 4
        foreign = [e.event_id for e in found if e.event_type[0] == "corba"]
        assert foreign[0].session & FOREIGN_SESSION


class TestSubscriptionTree:
    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.lists(SEGMENTS, max_size=4).map(tuple)
                    .filter(lambda p: "*" not in p[:-1]), max_size=5),
           st.lists(SEGMENTS, max_size=5).map(tuple))
    def test_the_tree_matches_as_the_patterns_do(self, patterns: list[tuple[str, ...]],
                                                 path: tuple[str, ...]) -> None:
        """Matching is done as described in event's type property including the ? and *
        options (seed): the tree agrees with history.types.matches over every pattern."""
        expected = any(matches(p, path) for p in patterns)
        assert Subscription(patterns).matches(path) == expected

    def test_many_patterns_cost_a_type_not_a_scan(self) -> None:
        """16,000 patterns (what a frame may hold) and 20,000 types matched in well under
        a second: the session matched every delivered event against every pattern on
        the loop's thread (~8 ms an event, each subscriber), stalling every front end."""
        patterns = [("?", "y", f"k{i}") for i in range(16_000)] + [("a", "*")]
        tree = Subscription(patterns)
        start = time.perf_counter()
        found = sum(tree.matches(("b", "y", f"k{i % 20_000}")) for i in range(20_000))
        assert time.perf_counter() - start < 1.0
        assert found == 16_000

    def test_a_long_pattern_and_type(self) -> None:
        """A pattern and a type of 20,000 segments match without recursion."""
        long = tuple("s" for _ in range(20_000))
        assert Subscription([(*long[:-1], "?")]).matches(long)
        assert not Subscription([long]).matches(long[:-1])


def _subscribe_frame(patterns: list[list[str]]) -> bytes:
    return hat_frame("HatEventer", "MsgSubscribe", patterns)


class TestItemBudget:
    def test_check_refuses_more_than_max_items(self) -> None:
        """A million one-byte items passed the bounds check and cost hat-sbs ~1 s in one
        C call holding the GIL: more than MAX_ITEMS array items are refused first."""
        at_most = hc.sbs_repo.encode("HatEventer", "MsgSubscribe", [[]] * schema.MAX_ITEMS)
        schema.check("HatEventer", "MsgSubscribe", at_most)
        over = hc.sbs_repo.encode("HatEventer", "MsgSubscribe",
                                  [["a"]] * (schema.MAX_ITEMS // 2 + 1))
        with pytest.raises(schema.SchemaError, match="array items"):
            schema.check("HatEventer", "MsgSubscribe", over)

    def test_a_frame_of_too_many_items_closes_only_its_connection(self, served: Served) -> None:
        """A MsgSubscribe of MAX_ITEMS + 1 empty types closes the connection; another
        client registers meanwhile."""
        sock = raw(served)
        sock.sendall(_subscribe_frame([[]] * (schema.MAX_ITEMS + 1)))
        assert closed_by_peer(sock)
        sock.close()

        async def go() -> list[Any]:
            client = await hat_client.connect(served.address)
            made = await client.register_with_response([hc.RegisterEvent(("a", "b"), None,
                                                                         None)])
            await client.async_close()
            return made

        assert run(go)[0] is not None

    @pytest.mark.parametrize("name", ["MsgRegisterReq", "MsgSubscribe"])
    def test_decoding_in_parts_gives_the_same_message(self, name: str) -> None:
        """A message decoded PART_ITEMS items a call equals the one decoded whole."""
        count = 2 * codec.PART_ITEMS + 7
        if name == "MsgRegisterReq":
            value: Any = [hc.register_event_to_sbs(hc.RegisterEvent(
                ("a", str(i)), hc.Timestamp(i, 0), binary(bytes([i % 256])))) for i in range(count)]
        else:
            value = [["a", str(i), "*"] for i in range(count)]
        connection = codec.ChatterConnection()
        connection.receive_data(hat_frame("HatEventer", name, value))
        frame = connection.next_frame()
        assert frame is not None
        whole, parts = codec.decode_frame(frame), codec.decode_frame(frame, True)
        assert parts == whole
        assert len(parts.value) == count

    def test_a_big_message_is_decoded_off_the_loop_in_parts(self, served: Served,
                                                           monkeypatch: Any) -> None:
        """A MsgRegisterReq of more than INLINE_BYTES is decoded on the executor, at
        most PART_ITEMS items a hat-sbs call: the loop's thread (every front end's) ran
        each frame's whole decode, ~0.4 s for 512 KiB of minimal events."""
        calls: list[tuple[str, int]] = []
        real = schema.REPOSITORY.decode

        def spy(module: Any, name: str, data: bytes) -> Any:
            value = real(module, name, data)
            if name == "MsgRegisterReq":
                calls.append((threading.current_thread().name, len(value)))
            return value

        monkeypatch.setattr(schema.REPOSITORY, "decode", spy)
        count = 3 * codec.PART_ITEMS
        events = [hc.RegisterEvent(("big", "x"), None, binary(b"x" * 20))] * count
        assert len(hc.sbs_repo.encode("HatEventer", "MsgRegisterReq",
                                      [hc.register_event_to_sbs(e) for e in events])) \
            > session.INLINE_BYTES

        async def go() -> list[Any]:
            client = await hat_client.connect(served.address)
            made = await client.register_with_response(events)
            await client.async_close()
            return made

        assert len(run(go)) == count
        assert calls and all(size <= codec.PART_ITEMS for _, size in calls)
        assert sum(size for _, size in calls) == count
        assert not any(name == served.loop._thread.name for name, _ in calls)


class TestCutAnswers:
    def test_an_answer_cut_by_the_reply_bound_is_logged(self, tmp_path: Any,
                                                       caplog: Any) -> None:
        """server will provide all available events that match query criteria as part of
        single MsgQueryRes (seed): one cut short by max_pending / 4 was silent; now it
        is a warning and counted (service.truncated); one cut by the client's own
        max_results is not."""
        from cosnotify.protocols.listener import Limits

        made = Served(tmp_path / "store.db", Limits(max_pending=256 * 1024))
        try:
            async def go() -> tuple[list[Any], list[Any]]:
                client = await hat_client.connect(made.address)
                for _ in range(4):
                    await client.register_with_response(
                        [hc.RegisterEvent(("bulk", "x"), None, binary(b"x" * 1000))] * 25)
                found = await client.query(hc.QueryData(event_types=[("bulk", "*")]))
                few = await client.query(hc.QueryData(event_types=[("bulk", "*")],
                                                      max_results=5))
                await client.async_close()
                return found, few

            with caplog.at_level(logging.WARNING, "cosnotify.protocols.eventer"):
                found, few = run(go)
            service = made.front_end.service  # type: ignore[attr-defined]
        finally:
            made.close()
        assert 0 < len(found) < 100
        assert len(few) == 5
        assert service.truncated == 1
        assert [r for r in caplog.records if "cut at" in r.getMessage()]


class TestNoLeaks:
    def test_subscribers_that_come_and_go_leave_no_proxy_or_filter(self,
                                                                   served: Served) -> None:
        """Thirty clients that subscribe, change their subscription and leave take their
        proxy push suppliers with them (the channel's consumer admin has none left)."""
        admin = served.channel._get_default_consumer_admin()

        async def go() -> None:
            for n in range(30):
                client = await hat_client.connect(served.address, [("a", str(n))])
                await client.query(hc.QueryData(max_results=0))
                await client.async_close()

        run(go)
        deadline = time.monotonic() + WAIT
        while admin._get_push_suppliers() and time.monotonic() < deadline:
            time.sleep(0.01)  # the last session's cleanup runs on the executor after close
        assert admin._get_push_suppliers() == []


    def test_resubscribing_leaves_one_live_filter(self, served: Served) -> None:
        """A client that sends MsgSubscribe twenty times ("each new subscription message
        implicitly invalidates previous subscriptions") holds one prefilter at a time,
        and none once it has gone: the replaced ones are destroyed, not only removed."""
        import gc

        from hat import chatter

        from cosnotify.filter.filter import Filter

        def live() -> set[int]:
            gc.collect()
            return {id(o) for o in gc.get_objects()
                    if isinstance(o, Filter) and not o._is_destroyed}

        before = live()
        admin = served.channel._get_default_consumer_admin()

        async def go() -> set[int]:
            client = await hat_client.connect(served.address, [("a", "0")])
            for n in range(1, 20):
                client._conn.send(chatter.Data(module="HatEventer", type="MsgSubscribe",
                                               data=[["a", str(n)]]))
            await client.query(hc.QueryData(max_results=0))  # one connection: in order
            during = live() - before
            await client.async_close()
            return during

        during = run(go)
        assert len(during) == 1
        deadline = time.monotonic() + WAIT
        # The session's cleanup (disconnect, then destroy its filter) runs on the
        # executor after the close.
        while (admin._get_push_suppliers() or live() - before) and \
                time.monotonic() < deadline:
            time.sleep(0.01)
        assert live() - before == set()


class TestManyIds:
    def test_each_constraint_stays_under_the_parsers_limit(self) -> None:
        """10,000 ids of long numbers (MAX_IDS) become queries whose constraints all stay
        under EXTENDED_TCL's 32,768 characters; other conditions are in every one."""
        from cosnotify.protocols.eventer.codec import EventId, QueryData
        from cosnotify.protocols.eventer.mapping import to_queries

        ids = tuple(EventId(7, (5 << 32) + n, n) for n in range(10_000))
        queries = to_queries(QueryData(event_ids=ids, event_types=(("a", "*"),)), 7)
        assert len(queries) > 1
        assert all(q.constraint is not None and len(q.constraint) < 32_768 for q in queries)
        assert all(q.event_types == (("a", "*"),) for q in queries)
        assert sum(q.constraint.count("==") for q in queries if q.constraint) == 10_000

    def test_a_query_of_thousands_of_ids_finds_them(self, served: Served) -> None:
        """event_ids: only events with ids which are defined as part of filter condition
        are matched (seed): 3,000 ids found 3,000 events, with max_results and
        uniqueType applied across them; past ~1,100 ids the constraint was refused
        (longer than 32,768 characters) and the answer was silently empty."""
        async def go() -> tuple[list[Any], list[Any], list[Any], list[Any]]:
            client = await hat_client.connect(served.address)
            made = []
            for _ in range(2):
                made.extend(await client.register_with_response(
                    [hc.RegisterEvent(("u", str(i % 3)), None, None) for i in range(1500)]))
            ids = [e.event_id for e in made]
            every = await client.query(hc.QueryData(event_ids=ids))
            first = await client.query(hc.QueryData(event_ids=ids, order=hc.Order.ASCENDING,
                                                    max_results=1600))
            unique = await client.query(hc.QueryData(event_ids=ids, order=hc.Order.ASCENDING,
                                                     unique_type=True))
            await client.async_close()
            return made, every, first, unique

        made, every, first, unique = run(go)
        assert {e.event_id for e in every} == {e.event_id for e in made}
        assert [e.event_id for e in first] == [e.event_id for e in made[:1600]]
        assert [e.event_id for e in unique] == [e.event_id for e in made[:3]]
