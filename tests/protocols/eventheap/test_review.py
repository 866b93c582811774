"""Review findings: sequencing bounds, clients released with their connection, and a
reconnected Source kept by the new connection (seed, "Event Heap Client
Responsibilities"; issue 22, "Bad input")."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from cosnotify.protocols.eventheap import EventHeapFrontEnd
from cosnotify.protocols.eventheap.codec import SequenceInfo, SourceInfo, WireBundle, encode_bundle
from cosnotify.protocols.eventheap.session import (
    MAX_MERGED_NAME,
    MAX_MERGED_PAIRS,
    MAX_SEQUENCE_SOURCES,
    EventHeapSession,
    RequestError,
)
from tests.protocols.eventheap.client import WAIT, EventHeapClient, field_of

Connect = Callable[..., EventHeapClient]


def _eventually(predicate: Callable[[], bool]) -> bool:
    """Poll ``predicate`` until it holds or WAIT passes (no fixed sleeps)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def _session(front_end: EventHeapFrontEnd, count: int = 1) -> EventHeapSession:
    assert _eventually(lambda: len(front_end.server.sessions) == count)
    return max(front_end.server.sessions, key=lambda s: s.name.rsplit("#", 1)[1])


def _get(client: EventHeapClient, event_type: str, infos: tuple[SequenceInfo, ...],
         tag: str = "g") -> WireBundle:
    """getEvent for ``event_type`` as the client's Source, with ``infos`` as SequenceInfo."""
    client.sock.sendall(encode_bundle(WireBundle(
        "getEvent", tag, infos, (client.template(event_type, target_me=True),))))
    reply = client.receive()
    assert reply.destination_tag == tag
    return reply


def _infos(event_type: str, sources: list[str], session: int = 1,
           number: int = 1) -> tuple[SequenceInfo, ...]:
    return (SequenceInfo(event_type, tuple(SourceInfo(s, session, number) for s in sources)),)


class TestSequenceInfoBounds:
    def test_too_many_source_infos_refused(self, client: EventHeapClient,
                                           front_end: EventHeapFrontEnd) -> None:
        """A request's SequenceInfo past MAX_SEQUENCE_SOURCES is ERROR LimitExceeded and
        leaves nothing in the Source's record."""
        names = [f"s{i}" for i in range(MAX_SEQUENCE_SOURCES + 1)]
        reply = _get(client, "T", _infos("T", names))
        assert reply.return_tag is not None
        assert reply.return_tag.startswith("ERROR LimitExceeded")
        record = _session(front_end).clients.get(client.source)
        assert record is None or len(record.seen) == 0

    def test_merged_pairs_are_bounded(self, client: EventHeapClient,
                                      front_end: EventHeapFrontEnd) -> None:
        """Bundle after bundle of new sources cannot grow the server's record of a Source
        past MAX_MERGED_PAIRS (it outlives the connection)."""
        for batch in range(4):
            names = [f"b{batch}-{i}" for i in range(MAX_SEQUENCE_SOURCES)]
            assert _get(client, "T", _infos("T", names)).return_tag is None
        assert len(_session(front_end).clients[client.source].seen) == MAX_MERGED_PAIRS

    def test_long_names_are_not_kept(self, client: EventHeapClient,
                                     front_end: EventHeapFrontEnd) -> None:
        """A SourceInfo naming a source or EventType past MAX_MERGED_NAME characters
        (up to 65,535 bytes each on the wire) is not kept."""
        long = "x" * (MAX_MERGED_NAME + 1)
        infos = _infos("T", [long, "short"]) + _infos(long, ["short"])
        assert _get(client, "T", infos).return_tag is None
        assert len(_session(front_end).clients[client.source].seen) == 1

    def test_known_pairs_still_advance_past_the_bound(self, connect: Connect,
                                                      front_end: EventHeapFrontEnd) -> None:
        """With the record full, a SourceInfo of a pair already in it still hides the
        events it says were seen ("the SessionID and SequenceNum values from the most
        recently received event")."""
        pub, reader = connect("pub"), connect("reader")
        pub.put(pub.event("T", n=1))
        pub.put(pub.event("T", n=2))
        pub.put(pub.event("T", n=3))
        known = _infos("T", ["pub"], pub.session_id, 0)
        reply = _get(reader, "T", known, "first")
        assert reply.tuples is not None and field_of(reply.tuples[0], "n") == 1
        filler = [f"f{i}" for i in range(MAX_SEQUENCE_SOURCES)]
        assert _get(reader, "Other", _infos("Other", filler), "fill").return_tag is None
        assert len(_session(front_end, 2).clients["reader"].seen) == MAX_MERGED_PAIRS
        reply = _get(reader, "T", _infos("T", ["pub"], pub.session_id, 2), "after")
        assert reply.tuples is not None and field_of(reply.tuples[0], "n") == 3


class TestClientsGoWithTheConnection:
    def test_connection_source_is_released_at_close(self, connect: Connect,
                                                    front_end: EventHeapFrontEnd) -> None:
        """A connection's own Source (a template without Target) cannot be carried on by
        another connection, so it leaves the space when the connection closes, not
        CLIENT_GRACE later (connect/disconnect cycles must not fill MAX_CLIENTS)."""
        space = front_end.space
        for i in range(8):
            c = connect(f"cycle{i}")
            assert c.call("getEvent", [c.template("X")]).tuples is None
            c.close()
        named = connect("named")
        assert named.call("getEvent", [named.template("X", target_me=True)]).tuples is None
        named.close()
        assert _eventually(lambda: space.clients == ["named"])

    def test_no_client_made_after_close(self, client: EventHeapClient,
                                        front_end: EventHeapFrontEnd) -> None:
        """A sequenced call still running as its connection closes (a wait renewing
        itself, a getEvent in the executor) makes no client that nothing would release."""
        session = _session(front_end)
        client.close()
        assert _eventually(lambda: session.cancel.cancelled)
        errors: list[BaseException] = []

        def late() -> None:
            try:
                session._client("late")
            except RequestError as exc:
                errors.append(exc)

        thread = threading.Thread(target=late)
        thread.start()
        thread.join(WAIT)
        assert len(errors) == 1 and errors[0].name == "OBJECT_NOT_EXIST"
        assert "late" not in front_end.space.clients


class TestReconnect:
    def test_sequencing_carries_over_a_reconnect(self, connect: Connect) -> None:
        """A Source that reconnects (within CLIENT_GRACE) is not given again what it
        received before, even without SequenceInfo ("Clients should automatically
        reconnect")."""
        pub = connect("pub")
        for n in (1, 2):
            pub.put(pub.event("Seq", n=n))
        first = connect("me")
        got = first.call("getEvent", [first.template("Seq", target_me=True)])
        assert got.tuples is not None and field_of(got.tuples[0], "n") == 1
        first.close()
        again = connect("me")
        got = again.call("getEvent", [again.template("Seq", target_me=True)])
        assert got.tuples is not None and field_of(got.tuples[0], "n") == 2
        assert again.call("getEvent", [again.template("Seq", target_me=True)]).tuples is None

    @pytest.mark.parametrize("old_waits", [1, 3])
    def test_quiet_connection_does_not_take_the_source_back(
            self, connect: Connect, front_end: EventHeapFrontEnd, old_waits: int) -> None:
        """"Clients should automatically reconnect": the new connection's wait keeps its
        Source; the old connection's waits end (ERROR OBJECT_NOT_EXIST) instead of
        connecting the Source again and ending the new one's ("Only one Source of a
        given name may be active")."""
        space = front_end.space
        old, new, putter = connect("me"), connect("me"), connect("p")
        for _ in range(old_waits):
            old.send("waitForEvent", [old.template("X", target_me=True)])
        assert space.wait_for_waiters(old_waits, WAIT)
        tag = new.send("waitForEvent", [new.template("Y", target_me=True)])
        for _ in range(old_waits):
            ended = old.receive()
            assert ended.return_tag is not None
            assert ended.return_tag.startswith("ERROR OBJECT_NOT_EXIST")
        assert space.wait_for_waiters(1, WAIT)
        putter.put(putter.event("Y", n=7))
        reply = new.receive()
        assert reply.destination_tag == tag and reply.tuples is not None
        assert field_of(reply.tuples[0], "n") == 7


def _push_corba(front_end: EventHeapFrontEnd, type_name: str, text: str) -> None:
    """A CORBA supplier's event of ``type_name`` with a string property ``s``."""
    from omniORB import CORBA

    import CosNotification as N
    import CosNotifyChannelAdmin as CA

    proxy, _ = front_end.server.channel._get_default_supplier_admin(
    ).obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
    proxy.connect_structured_push_supplier(None)
    proxy.push_structured_event(N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("d", type_name), ""), []),
        [N.Property("s", CORBA.Any(CORBA.TC_string, text))],
        CORBA.Any(CORBA.TC_null, None)))


class TestManyResults:
    def test_unencodable_event_is_left_out(self, client: EventHeapClient,
                                           front_end: EventHeapFrontEnd) -> None:
        """One event no tuple can carry (a CORBA supplier's string past 65,535 bytes)
        does not cost every client its getAll and snoopEvents (Tables 9, 10): the
        others are returned."""
        _push_corba(front_end, "Big", "x" * 70000)
        assert _eventually(lambda: front_end.space.live_count == 1)
        client.put(client.event("Ok", n=1))
        got = client.call("getAll").tuples
        assert got is not None and [field_of(t, "EventType") for t in got] == ["Ok"]
        got = client.call("snoopEvents", [client.template()]).tuples
        assert got is not None and [field_of(t, "EventType") for t in got] == ["Ok"]
        assert front_end.space.live_count == 2

    def test_reply_fits_the_clients_queue(self, context: object) -> None:
        """A getAll whose copies pass Limits.max_pending is cut to what fits, oldest
        first, instead of dropping the client as too slow."""
        from cosnotify.protocols.eventheap import start
        from cosnotify.protocols.listener import Limits

        front_end = start(context, "127.0.0.1", 0,  # type: ignore[arg-type]
                          limits=Limits(read_timeout=2.0, max_frame=1 << 16,
                                        max_pending=1 << 16))
        try:
            client = EventHeapClient(front_end.address, "big")
            try:
                for i in range(40):
                    client.put(client.event("Fat", n=i, s="y" * 4000))
                got = client.call("getAll").tuples
                assert got is not None and 0 < len(got) < 40
                assert [field_of(t, "n") for t in got] == list(range(len(got)))
                assert client.call("getEvent", [client.template("Fat")]).tuples is not None
            finally:
                client.close()
        finally:
            front_end.close()


class TestEncodeBundleOf:
    def test_same_bytes_as_encode_bundle(self, client: EventHeapClient) -> None:
        """A reply assembled from encoded tuples is the bundle encode_bundle writes
        ("Semantics for WireBundle Transfer")."""
        from cosnotify.protocols.eventheap.codec import encode_bundle_of, encode_tuple

        tuples = (client.event("A", n=1), client.event("B", s="é\0"))
        for bundle in (WireBundle("d", "r"), WireBundle(None, None), WireBundle("d", None)):
            expected = encode_bundle(WireBundle(bundle.destination_tag, bundle.return_tag,
                                                None, tuples))
            assert encode_bundle_of(bundle, [encode_tuple(t) for t in tuples]) == expected
        assert encode_bundle_of(WireBundle("d"), []) == encode_bundle(WireBundle("d",
                                                                                 tuples=()))


class TestFrontEndClientBound:
    def test_sources_held_are_bounded(self, connect: Connect, front_end: EventHeapFrontEnd,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
        """The Sources a front end's connections act for are bounded
        (MAX_CLIENTS_PER_FRONT_END), not only by the space's MAX_CLIENTS it shares with
        CORBA clients: a new Source past it is ``ERROR LimitExceeded`` while every one
        held is in use, and a Source held already still reconnects ("Clients should
        automatically reconnect")."""
        from cosnotify.protocols.eventheap import server as module

        monkeypatch.setattr(module, "MAX_CLIENTS_PER_FRONT_END", 3)
        held = [connect(f"t{i}") for i in range(3)]
        for c in held:
            assert c.call("getEvent", [c.template("X", target_me=True)]).tuples is None
        late = connect("t3")
        reply = late.call("getEvent", [late.template("X", target_me=True)])
        assert reply.return_tag is not None
        assert reply.return_tag.startswith("ERROR LimitExceeded")
        back = connect("t0")
        assert back.call("getEvent", [back.template("X", target_me=True)]).return_tag is None
        assert front_end.server.clients == 3
        front_end.space.connect("t1").close()  # t1 ends: its place is free
        assert _eventually(lambda: front_end.server.clients == 2)
        assert late.call("getEvent", [late.template("X", target_me=True)]).return_tag is None

    def test_a_closed_connections_sources_give_way_to_new_ones(
            self, connect: Connect, front_end: EventHeapFrontEnd,
            monkeypatch: pytest.MonkeyPatch) -> None:
        """Sources named by a closed connection wait CLIENT_GRACE for their client to
        come back; at the limit the oldest of them that made no call since goes for a
        new Source (review 98: one peer's short connections held the limit for a
        minute, and every new client was refused). One that came back stays."""
        from cosnotify.protocols.eventheap import server as module

        monkeypatch.setattr(module, "MAX_CLIENTS_PER_FRONT_END", 3)
        server = front_end.server
        gone = [connect(f"g{i}") for i in range(3)]
        for c in gone:
            assert c.call("getEvent", [c.template("X", target_me=True)]).tuples is None
            c.close()
        assert _eventually(lambda: front_end.space.connections_lost == 3)
        again = connect("g1")  # g1's client comes back and calls: it is not given away
        assert again.call("getEvent", [again.template("X", target_me=True)]).return_tag \
            is None
        new = [connect(f"n{i}") for i in range(3)]
        replies = [c.call("getEvent", [c.template("X", target_me=True)]).return_tag
                   for c in new]
        assert replies[:2] == [None, None]
        assert replies[2] is not None and replies[2].startswith("ERROR LimitExceeded")
        assert server.evicted == 2 and server.clients == 3
        assert sorted(front_end.space.clients) == ["g1", "n0", "n1"]


    def test_a_source_that_will_be_refused_ends_no_one(
            self, connect: Connect, front_end: EventHeapFrontEnd,
            monkeypatch: pytest.MonkeyPatch) -> None:
        """A new Source the space refuses anyway (longer than MAX_NAME_LENGTH) ends no
        lingering one (review 99)."""
        from cosnotify.protocols.eventheap import server as module

        monkeypatch.setattr(module, "MAX_CLIENTS_PER_FRONT_END", 3)
        self._linger(connect, front_end, ["g0", "g1", "g2"])
        bad = connect("x" * 1100)
        reply = bad.call("getEvent", [bad.template("X", target_me=True)])
        assert reply.return_tag is not None and reply.return_tag.startswith("ERROR")
        assert front_end.server.evicted == 0
        assert sorted(front_end.space.clients) == ["g0", "g1", "g2"]

    def test_a_source_reconnected_over_and_over_leaves_the_others_endable(
            self, connect: Connect, front_end: EventHeapFrontEnd,
            monkeypatch: pytest.MonkeyPatch) -> None:
        """A held Source reconnecting and closing again and again (allowed at the limit)
        does not push the other lingering Sources out of the front end's record of them
        (review 99: it did, and new clients were refused again for CLIENT_GRACE)."""
        from cosnotify.protocols.eventheap import server as module

        monkeypatch.setattr(module, "MAX_CLIENTS_PER_FRONT_END", 3)
        self._linger(connect, front_end, ["a", "b", "c"])
        for n in range(4):
            c = connect("a")
            assert c.call("getEvent", [c.template("X", target_me=True)]).return_tag is None
            c.close()
            assert _eventually(lambda n=n: front_end.space.connections_lost == 4 + n)
        new = [connect(f"n{i}") for i in range(3)]
        assert [c.call("getEvent", [c.template("X", target_me=True)]).return_tag
                for c in new] == [None, None, None]
        assert len(front_end.server._lingering) == 0

    @staticmethod
    def _linger(connect: Connect, front_end: EventHeapFrontEnd, names: list[str]) -> None:
        """Sources ``names``, each named by a connection that then closed."""
        for name in names:
            c = connect(name)
            assert c.call("getEvent", [c.template("X", target_me=True)]).tuples is None
            c.close()
        assert _eventually(lambda: front_end.space.connections_lost == len(names))


class TestHandshakeTimeout:
    def test_silent_connection_is_closed_after_read_timeout(self, context: object) -> None:
        """A connection that never sends its version ("Initial Hand-Shake" 2.) is closed
        after read_timeout, not kept for idle_timeout (here forever): it cannot hold one
        of max_connections as a slow-loris does."""
        from cosnotify.protocols.eventheap import start
        from cosnotify.protocols.listener import Limits

        front_end = start(context, "127.0.0.1", 0,  # type: ignore[arg-type]
                          limits=Limits(read_timeout=0.3, idle_timeout=None))
        try:
            silent = EventHeapClient(front_end.address, "silent", handshake=False)
            try:
                assert silent.closed_by_peer()
            finally:
                silent.close()
            assert front_end.counters.closed_bad == 1
            good = EventHeapClient(front_end.address, "good")
            try:
                assert good.call("getAll").tuples == ()
            finally:
                good.close()
        finally:
            front_end.close()


class TestCycles:
    def test_nothing_left_after_connect_disconnect_cycles(
            self, connect: Connect, front_end: EventHeapFrontEnd) -> None:
        """Connections that wait, stream and retrieve, then go, leave no wait, stream
        (consumer admin), wait slot or connection-own Source behind."""
        channel = front_end.server.channel
        admins = len(channel.get_all_consumeradmins())
        for i in range(12):
            c = connect(f"cycle{i}")
            c.send("registerForEvents", [c.template("S")])
            c.send("waitToRemoveEvent", [c.template("W")])
            c.send("waitForEvent", [c.template("W", target_me=True)])
            assert c.call("getEvent", [c.template("G")]).tuples is None
            assert c.call("getEvent", [c.template("G", target_me=True)]).tuples is None
            c.close()
        space = front_end.space
        assert space.wait_for_waiters(0, WAIT)
        assert _eventually(lambda: len(channel.get_all_consumeradmins()) == admins)
        assert _eventually(lambda: front_end.server.waits == 0)
        assert _eventually(lambda: all(not s.startswith("EHWP") for s in space.clients))
        assert front_end.server.sessions == set()
        # The Target Sources stay for CLIENT_GRACE, counted once each.
        assert sorted(space.clients) == sorted(f"cycle{i}" for i in range(12))
        assert front_end.server.clients == 12


class TestStreamDelivery:
    def test_push_does_not_wait_for_the_loop(self, client: EventHeapClient,
                                             front_end: EventHeapFrontEnd,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
        """A stream's first event, delivered while the loop is still busy after the
        registration, does not hold the channel's delivery thread until the loop
        resumes the registering coroutine: the stream id (its return tag) is known as
        soon as the space returns it."""
        loop = front_end.server.loop.loop
        space = front_end.space
        gate, pushed = threading.Event(), threading.Event()
        register = space.register_for_all

        def register_then_block(consumer: object) -> int:
            stream: int = register(consumer)
            loop.call_soon_threadsafe(gate.wait, WAIT)  # the loop is busy from now on
            return stream

        original = EventHeapSession._stream_push

        def observed(self: EventHeapSession, *args: object) -> None:
            original(self, *args)  # type: ignore[arg-type]
            pushed.set()

        monkeypatch.setattr(space, "register_for_all", register_then_block)
        monkeypatch.setattr(EventHeapSession, "_stream_push", observed)
        channel = front_end.server.channel
        admins = len(channel.get_all_consumeradmins())
        tag = client.send("registerForAll")
        try:
            assert _eventually(lambda: len(channel.get_all_consumeradmins()) == admins + 1)
            _push_corba(front_end, "Early", "e")
            assert pushed.wait(3.0)
        finally:
            gate.set()
        reply = client.receive()
        assert reply.destination_tag == tag and reply.tuples is not None
        assert field_of(reply.tuples[0], "EventType") == "Early"


class TestReplyDroppingTheClient:
    @pytest.mark.parametrize("op", ["removeEvent", "waitToRemoveEvent"])
    def test_taken_event_is_given_back(self, context: object, op: str) -> None:
        """A removed event whose reply drops the client (its unsent bytes would pass
        Limits.max_pending) was never received: it is given back to the heap, not lost
        (Table 6/7: "removed ... so no others may retrieve it" holds only for a reply
        that went out)."""
        from cosnotify.protocols.eventheap import start
        from cosnotify.protocols.listener import Limits

        front_end = start(context, "127.0.0.1", 0,  # type: ignore[arg-type]
                          limits=Limits(read_timeout=2.0, max_frame=1 << 17,
                                        max_pending=1 << 15))
        try:
            putter = EventHeapClient(front_end.address, "putter")
            taker = EventHeapClient(front_end.address, "taker")
            try:
                putter.put(putter.event("Huge", s="z" * 40000))
                taker.send(op, [taker.template("Huge")])
                assert taker.closed_by_peer()
                assert _eventually(lambda: front_end.space.live_count == 1)
                (live,) = front_end.space.get_all()  # its reply would drop putter too
                assert live.event.header.fixed_header.event_type.type_name == "Huge"
            finally:
                putter.close()
                taker.close()
        finally:
            front_end.close()


class TestTrickledBundle:
    def test_bundle_in_pieces_is_read_once(self, context: object,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
        """Review 118: a bundle trickled in pieces was re-parsed from its first byte on
        the loop thread for each piece (docs/protocols.md: "a large bundle arriving in
        pieces is not re-read for each piece"). Each piece is sent once the server has
        read the one before (counted by the reader's ``feed``), and each SourceInfo is
        read once."""
        import socket
        import struct

        from cosnotify.protocols.eventheap import codec, start
        from cosnotify.protocols.eventheap.wire import encode_utf
        from cosnotify.protocols.listener import Limits

        made: list[int] = []
        fed = [0]
        cond = threading.Condition()
        real_feed = codec.BundleReader.feed

        def counting(*args: object) -> SourceInfo:
            made.append(1)
            return SourceInfo(*args)  # type: ignore[arg-type]

        def feed(reader: codec.BundleReader, data: bytes) -> None:
            real_feed(reader, data)
            with cond:
                fed[0] += len(data)
                cond.notify_all()

        monkeypatch.setattr(codec, "SourceInfo", counting)
        monkeypatch.setattr(codec.BundleReader, "feed", feed)
        front_end = start(context, "127.0.0.1", 0,  # type: ignore[arg-type]
                          limits=Limits(read_timeout=WAIT))
        try:
            n = 20_000
            head = bytes([4]) + struct.pack(">i", 1) + encode_utf("T") + struct.pack(">i", n)
            data = head + (encode_utf("") + struct.pack(">ii", 0, 0)) * n
            client = EventHeapClient(front_end.address, "trickle")
            try:
                client.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with cond:
                    sent = fed[0]
                for off in range(0, len(data), 4096):
                    piece = data[off:off + 4096]
                    client.sock.sendall(piece)
                    sent += len(piece)
                    with cond:
                        assert cond.wait_for(lambda s=sent: fed[0] >= s, WAIT)
                assert client.call("getAll").tuples == ()  # the bundle was read
            finally:
                client.close()
            assert len(made) == n
        finally:
            front_end.close()


class TestOffTheLoop:
    def test_mapping_encoding_and_big_bundles_run_off_the_loop(
            self, front_end: EventHeapFrontEnd, connect: Connect, loop: object,
            monkeypatch: pytest.MonkeyPatch) -> None:
        """Review 118: getAll and snoopEvents encoded their whole reply (up to 10,000
        tuples), and a put bundle was parsed and mapped, on the one loop thread that
        serves every connection of every front end (listener.py: "a slow or dead
        consumer never stalls the channel or the other clients"). Each of them now runs
        in the executor: the loop thread runs none of them."""
        from cosnotify.protocols.eventheap import codec, session
        from cosnotify.protocols.eventheap.codec import ACTUAL, Field, Tuple, Value

        ran: list[tuple[str, threading.Thread]] = []

        def watch(module: object, name: str) -> None:
            real = getattr(module, name)

            def wrapped(*args: object, **kw: object) -> object:
                # decode_tuple: only a bundle's tuples past DECODE_INLINE bytes
                if name != "decode_tuple" or len(args[0]) > 16 * 1024:  # type: ignore[arg-type]
                    ran.append((name, threading.current_thread()))
                return real(*args, **kw)

            monkeypatch.setattr(module, name, wrapped)

        for name in ("event_of", "template_of", "tuple_of", "encode_tuple",
                     "encode_bundle_of"):
            watch(session, name)
        watch(codec, "decode_tuple")
        c = connect("c")
        for n in range(3):
            c.put(c.event("Job", n=n))
        big = c.event("Job", n=9)
        big = Tuple(0, big.fields + (Field("blob", "string", Value(ACTUAL, "x" * 30_000),
                                           Value(ACTUAL, "x")),))
        c.put(big)  # past DECODE_INLINE: its tuple is parsed in the executor (a small
        # bundle's tuples are parsed as they come: not worth an executor hop)
        assert len(c.call("getAll").tuples or ()) == 4
        assert len(c.call("snoopEvents", [c.template("Job")]).tuples or ()) == 4
        assert c.call("getEvent", [c.template("Job")]).tuples
        assert c.call("removeEvent", [c.template("Job")]).tuples
        tag = c.send("waitForEvent", [c.template("Later")])
        d = connect("d")
        d.put(d.event("Later"))
        reply = c.receive()
        assert reply.destination_tag == tag and reply.tuples
        names = {name for name, _ in ran}
        assert names >= {"event_of", "template_of", "tuple_of", "encode_tuple",
                         "encode_bundle_of", "decode_tuple"}, names
        on_loop = [name for name, thread in ran if thread is loop._thread]  # type: ignore[attr-defined]
        assert on_loop == [], on_loop
        assert session.DECODE_INLINE == 16 * 1024
