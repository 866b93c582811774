"""Every server operation of the seed over a real socket (seed, "Event Heap Server Operations")."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import pytest

from cosnotify.protocols.eventheap import EventHeapFrontEnd
from cosnotify.protocols.eventheap.codec import (
    ACTUAL,
    FORMAL,
    Field,
    Tuple,
    Value,
    WireBundle,
    encode_bundle,
    encode_utf,
)
from tests.protocols.eventheap.client import WAIT, EventHeapClient, field_of

Connect = Callable[..., EventHeapClient]


def _streams(front_end: EventHeapFrontEnd) -> list[int]:
    """The channel's consumer admins that are notification streams."""
    channel = front_end.server.channel
    return [a for a in channel.get_all_consumeradmins()
            if str(getattr(channel.get_consumeradmin(a), "_name", "")).startswith(
                "EventHeap stream")]


def _eventually(predicate: Callable[[], bool]) -> bool:
    """Poll ``predicate`` until it holds or WAIT passes (no fixed sleeps)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def _one(reply: WireBundle) -> Tuple:
    assert reply.tuples is not None and len(reply.tuples) == 1, reply
    return reply.tuples[0]


class TestHandshake:
    def test_server_sends_its_version(self, front_end: EventHeapFrontEnd) -> None:
        """The server's first bytes are "EHWPv1" as a UTF-8 String ("Initial Hand-Shake")."""
        with socket.create_connection(front_end.address, timeout=WAIT) as sock:
            expected = encode_utf("EHWPv1")
            got = b""
            while len(got) < len(expected):
                got += sock.recv(64)
            assert got == expected

    def test_other_version_is_closed(self, front_end: EventHeapFrontEnd) -> None:
        """"If the versions are different ---Exit": the server closes the connection."""
        client = EventHeapClient(front_end.address, handshake=False)
        try:
            client.sock.sendall(encode_utf("EHWPv2") + encode_bundle(WireBundle("getAll", "t")))
            assert client._next() == "EHWPv1"
            assert client._next() is None  # closed, no reply to the bundle
        finally:
            client.close()


class TestPutAndGet:
    def test_put_is_acked(self, client: EventHeapClient) -> None:
        """Table 13: the ACK has the request's return tag as destination, nothing else."""
        tag = client.send("putEvent", [client.event("Job")])
        assert client.receive() == WireBundle(tag, None, None, None)

    def test_get_returns_the_event_with_every_type(self, client: EventHeapClient) -> None:
        """Table 5: the event comes back with an ID (its serial) and its fields' values."""
        client.put(client.event("Job", flag=True, n=-7, x=0.5, host="h\u00e9\u20ac",
                                big=Field("big", "long", Value(ACTUAL, 2**40),
                                          Value(ACTUAL, 2**40)),
                                f=Field("f", "float", Value(ACTUAL, 1.5), Value(FORMAL))))
        found = _one(client.call("getEvent", [client.template("Job")]))
        assert found.serial > 0
        values = {f.name: (f.type, f.post.value) for f in found.fields}
        assert values["EventType"] == ("string", "Job")
        assert values["TimeToLive"] == ("int", 120000)
        assert values["Source"] == ("string", "test-client")
        assert values["flag"] == ("boolean", True)
        assert values["n"] == ("int", -7)
        assert values["big"] == ("long", 2**40)
        assert values["f"] == ("float", 1.5)
        assert values["x"] == ("double", 0.5)
        assert values["host"] == ("string", "h\u00e9\u20ac")
        assert "Target" not in values  # its post value was formal: the space keeps none

    def test_get_without_match_is_null(self, client: EventHeapClient) -> None:
        """Table 4: "Null if the retrieval request operation ... found no matching events"."""
        client.put(client.event("Job"))
        assert client.call("getEvent", [client.template("Other")]).tuples is None

    def test_template_values_match(self, client: EventHeapClient) -> None:
        """"Tuple Matching": actual values must be equivalent, formal ones match by type."""
        client.put(client.event("Job", priority=1))
        client.put(client.event("Job", priority=2))
        found = _one(client.call("getEvent", [client.template("Job", priority=2)]))
        assert field_of(found, "priority") == 2
        formal = Field("priority", "string", Value(FORMAL), Value(FORMAL))
        assert client.call("getEvent", [client.template("Job", priority=formal)]).tuples is None

    def test_any_of_several_templates(self, client: EventHeapClient) -> None:
        """"one or more of the events passed as templates": any template may match."""
        client.put(client.event("B"))
        found = _one(client.call("getEvent", [client.template("A"), client.template("B")]))
        assert field_of(found, "EventType") == "B"

    def test_oldest_first(self, client: EventHeapClient) -> None:
        """removeEvent serves matches oldest first (docs/history.md, "Which event")."""
        for i in range(3):
            client.put(client.event("Q", i=i))
        got = [field_of(_one(client.call("removeEvent", [client.template("Q")])), "i")
               for _ in range(3)]
        assert got == [0, 1, 2]

    def test_platform_field_moves_undisturbed(self, client: EventHeapClient) -> None:
        """Platform types: "move them around with the tuple undisturbed"."""
        point = Field("p", "EHJava.java.awt.Point", Value(ACTUAL, b"\xac\xed\x00\x05"),
                      Value(2))
        client.put(client.event("Obj", p=point))
        found = _one(client.call("getEvent", [client.template("Obj")])).field("p")
        assert found is not None
        assert (found.type, found.post.value) == ("EHJava.java.awt.Point", b"\xac\xed\x00\x05")


class TestSequencing:
    def test_client_sequence_info_hides_seen_events(self, connect: Connect) -> None:
        """Table 5 "Sequence Info Needed? Yes": events at or below the client's SourceInfo
        are not returned, newer ones are."""
        alice, bob = connect("alice"), connect("bob")
        alice.put(alice.event("T", n=1))
        first = _one(bob.call("getEvent", [bob.template("T")], sequence=True))
        assert field_of(first, "n") == 1
        assert bob.call("getEvent", [bob.template("T")], sequence=True).tuples is None
        alice.put(alice.event("T", n=2))
        assert field_of(_one(bob.call("getEvent", [bob.template("T")], sequence=True)),
                        "n") == 2

    def test_sequence_info_alone_is_honoured(self, connect: Connect) -> None:
        """A new connection whose SequenceInfo says it saw alice's event gets nothing."""
        alice = connect("alice")
        alice.put(alice.event("T"))
        carol = connect("carol")
        carol.seen = {"T": {"alice": (alice.session_id, 1)}}
        assert carol.call("getEvent", [carol.template("T")], sequence=True).tuples is None
        dave = connect("dave")
        assert dave.call("getEvent", [dave.template("T")], sequence=True).tuples is not None

    def test_target_names_the_requester(self, connect: Connect) -> None:
        """Table 1: the template's Target is the requester's Source; each keeps its own."""
        alice = connect("alice")
        alice.put(alice.event("T"))
        one = alice.template("T", target_me=True)
        assert alice.call("getEvent", [one]).tuples is not None
        assert alice.call("getEvent", [one]).tuples is None  # the server kept what it gave
        other = connect("zed")
        assert other.call("getEvent", [other.template("T", target_me=True)]).tuples is not None


class TestRemoveDeleteClear:
    def test_remove_takes_it(self, connect: Connect) -> None:
        """Table 6: "no others may retrieve it after this call returns"."""
        a, b = connect("a"), connect("b")
        a.put(a.event("J"))
        assert a.call("removeEvent", [a.template("J")]).tuples is not None
        assert b.call("getEvent", [b.template("J")]).tuples is None

    def test_delete_by_serial(self, client: EventHeapClient, front_end: EventHeapFrontEnd
                              ) -> None:
        """Table 14: the event returned is deleted by its ID; no response."""
        client.put(client.event("J"))
        found = _one(client.call("getEvent", [client.template("J")]))
        client.send("deleteEvent", [found])
        assert client.call("getAll").tuples == ()

    def test_clear(self, client: EventHeapClient) -> None:
        """Table 15: every event goes; no response."""
        for _ in range(3):
            client.put(client.event("J"))
        client.send("clear")
        assert client.call("getAll").tuples == ()


class TestSnoopAndGetAll:
    def test_snoop_returns_every_match(self, client: EventHeapClient) -> None:
        """Table 9: all matching events, copies stay; sequencing ignored."""
        for i in range(3):
            client.put(client.event("S", i=i))
        client.put(client.event("Other"))
        got = client.call("snoopEvents", [client.template("S")], sequence=True).tuples
        assert got is not None and [field_of(t, "i") for t in got] == [0, 1, 2]
        again = client.call("snoopEvents", [client.template("S")], sequence=True).tuples
        assert again is not None and len(again) == 3

    def test_get_all(self, client: EventHeapClient) -> None:
        """Table 10: copies of all events; included events are ignored."""
        client.put(client.event("A"))
        client.put(client.event("B"))
        got = client.call("getAll", [client.template("Z")]).tuples
        assert got is not None and [field_of(t, "EventType") for t in got] == ["A", "B"]


class TestWaits:
    def test_wait_for_event_returns_and_places(self, connect: Connect,
                                               front_end: EventHeapFrontEnd) -> None:
        """Table 8: the incoming match is "both returned to the requester and placed"."""
        waiter, putter = connect("w"), connect("p")
        tag = waiter.send("waitForEvent", [waiter.template("Late")])
        assert front_end.space.wait_for_waiters(1, WAIT)
        putter.put(putter.event("Late", n=5))
        reply = waiter.receive()
        assert reply.destination_tag == tag and field_of(_one(reply), "n") == 5
        assert putter.call("getEvent", [putter.template("Late")]).tuples is not None

    def test_wait_to_remove_does_not_place(self, connect: Connect,
                                           front_end: EventHeapFrontEnd) -> None:
        """Table 7: the incoming match "will not be placed into the Event Heap"."""
        waiter, putter = connect("w"), connect("p")
        waiter.send("waitToRemoveEvent", [waiter.template("Late")])
        assert front_end.space.wait_for_waiters(1, WAIT)
        putter.put(putter.event("Late"))
        assert waiter.receive().tuples is not None
        assert putter.call("getEvent", [putter.template("Late")]).tuples is None

    def test_stored_match_returns_at_once(self, client: EventHeapClient) -> None:
        """Table 8: an event already stored is returned without waiting."""
        client.put(client.event("Now"))
        assert client.call("waitForEvent", [client.template("Now")]).tuples is not None

    def test_wait_does_not_hold_the_connection(self, client: EventHeapClient,
                                               front_end: EventHeapFrontEnd) -> None:
        """"multiple simultaneous outstanding requests": a waiting call does not delay
        the next request's reply on the same connection."""
        wait_tag = client.send("waitForEvent", [client.template("Never")])
        assert front_end.space.wait_for_waiters(1, WAIT)
        reply = client.call("getAll")
        assert reply.destination_tag != wait_tag
        put_tag = client.send("putEvent", [client.event("Never")])
        # The put wakes the wait: the two replies may come in either order.
        tags = {client.receive().destination_tag, client.receive().destination_tag}
        assert tags == {wait_tag, put_tag}

    def test_disconnect_ends_the_wait(self, connect: Connect,
                                      front_end: EventHeapFrontEnd) -> None:
        """A client that goes ends its waits; a later event stays in the heap."""
        waiter, putter = connect("w"), connect("p")
        waiter.send("waitToRemoveEvent", [waiter.template("Gone")])
        assert front_end.space.wait_for_waiters(1, WAIT)
        waiter.close()
        assert front_end.space.wait_for_waiters(0, WAIT)
        putter.put(putter.event("Gone"))
        assert putter.call("getEvent", [putter.template("Gone")]).tuples is not None


class TestStreams:
    def test_register_for_events(self, connect: Connect) -> None:
        """Table 11: each later match comes in its own bundle to the registration's return
        tag, with the stream id as back-channel return tag; others do not."""
        sub, pub = connect("sub"), connect("pub")
        tag = sub.send("registerForEvents", [sub.template("News")])
        sub.call("getAll")  # the registration is done when the next reply comes
        pub.put(pub.event("Noise"))
        pub.put(pub.event("News", n=1))
        reply = sub.receive()
        assert reply.destination_tag == tag and reply.return_tag is not None
        assert reply.return_tag.isdigit()
        assert field_of(_one(reply), "n") == 1

    def test_deregister_by_stream_id(self, connect: Connect,
                                     front_end: EventHeapFrontEnd) -> None:
        """Table 16: an EHS_DeregisterEvent with StreamID ends the stream."""
        sub, pub = connect("sub"), connect("pub")
        sub.send("registerForAll")
        sub.call("getAll")
        pub.put(pub.event("One"))
        stream = sub.receive().return_tag
        assert stream is not None
        dereg = Tuple(0, (Field("EventType", "string", Value(ACTUAL, "EHS_DeregisterEvent"),
                                Value(ACTUAL, "EHS_DeregisterEvent")),
                          Field("StreamID", "string", Value(ACTUAL, stream), Value(FORMAL))))
        sub.send("deregister", [dereg], tag=None)
        sub.call("getAll")
        pub.put(pub.event("Two"))
        reply = sub.call("getAll")  # the next bundle is this reply, not a streamed event
        assert reply.tuples is not None and len(reply.tuples) == 2
        assert _streams(front_end) == []

    @pytest.mark.parametrize("stream", ["\u00b2", "1" * 5000])
    def test_a_stream_id_that_is_no_number_deregisters_nothing(
            self, connect: Connect, front_end: EventHeapFrontEnd, stream: str) -> None:
        """A StreamID of superscript digits (str.isdigit passes them, int does not) or
        of 5,000 digits (int refuses past 4,300; review 65) names no stream: the
        registration stays and the session answers on."""
        sub = connect("sub")
        sub.send("registerForAll")
        sub.call("getAll")
        assert len(_streams(front_end)) == 1
        dereg = Tuple(0, (Field("EventType", "string", Value(ACTUAL, "EHS_DeregisterEvent"),
                                Value(ACTUAL, "EHS_DeregisterEvent")),
                          Field("StreamID", "string", Value(ACTUAL, stream), Value(FORMAL))))
        sub.send("deregister", [dereg], tag=None)
        assert sub.call("getAll").tuples is not None
        assert len(_streams(front_end)) == 1

    def test_deregister_by_return_tag(self, connect: Connect,
                                      front_end: EventHeapFrontEnd) -> None:
        """Notification Streams: deregister "with a Return Tag that is the same as the one
        used for the initial registration call"."""
        sub, pub = connect("sub"), connect("pub")
        tag = sub.send("registerForEvents", [sub.template("X")])
        sub.call("getAll")
        assert len(_streams(front_end)) == 1
        sub.send("deregister", [], tag=tag)
        sub.call("getAll")
        assert _streams(front_end) == []
        pub.put(pub.event("X"))
        assert sub.call("getAll").tuples is not None

    def test_streams_end_with_the_connection(self, connect: Connect,
                                             front_end: EventHeapFrontEnd) -> None:
        """A connection's streams end when it closes (nothing piles up on the channel)."""
        sub = connect("sub")
        sub.send("registerForAll")
        sub.call("getAll")
        assert len(_streams(front_end)) == 1
        sub.close()
        assert _eventually(lambda: _streams(front_end) == [])


class TestUnknownAndErrors:
    def test_unknown_opcode_with_return_tag(self, client: EventHeapClient) -> None:
        """Unknown Operations: an ACK to the return tag, with return tag 'UNKNOWN'."""
        tag = client.send("teleport", [])
        assert client.receive() == WireBundle(tag, "UNKNOWN", None, None)

    def test_unknown_opcode_without_return_tag(self, client: EventHeapClient) -> None:
        """Unknown Operations: "If return tag in the request is null, no response"."""
        client.send("teleport", tag=None)
        client.send(None, tag=None)
        tag = client.send("getAll")
        assert client.receive().destination_tag == tag

    def test_event_without_type_is_refused(self, client: EventHeapClient) -> None:
        """Table 1 ("all events must have an event type"): an ERROR InvalidEvent bundle."""
        bad = Tuple(0, (Field("x", "int", Value(ACTUAL, 1), Value(ACTUAL, 1)),))
        reply = client.call("putEvent", [bad])
        assert reply.return_tag is not None
        assert reply.return_tag.startswith("ERROR InvalidEvent:")
        assert client.call("getAll").tuples == ()

    def test_bad_template_is_refused(self, client: EventHeapClient) -> None:
        """Table 1 (TimeToLive "Post value only."): an actual template value is refused."""
        bad = Tuple(0, (Field("TimeToLive", "int", Value(ACTUAL, 5), Value(ACTUAL, 5)),))
        reply = client.call("getEvent", [bad])
        assert reply.return_tag is not None
        assert reply.return_tag.startswith("ERROR InvalidTemplate:")

    def test_put_needs_one_event(self, client: EventHeapClient) -> None:
        """Table 13: "A single event to be added": two are refused, none kept."""
        reply = client.call("putEvent", [client.event("A"), client.event("B")])
        assert reply.return_tag is not None and reply.return_tag.startswith("ERROR")
        assert client.call("getAll").tuples == ()

    def test_counters(self, client: EventHeapClient, front_end: EventHeapFrontEnd) -> None:
        """Each decoded bundle is a frame in, each reply a frame out."""
        before = front_end.counters.snapshot()
        client.put(client.event("A"))
        client.call("getAll")
        after = front_end.counters.snapshot()
        assert after["frames_in"] - before["frames_in"] == 2
        assert after["frames_out"] - before["frames_out"] == 2


class TestLimitsAndLoss:
    def test_waits_per_connection_are_bounded(self, client: EventHeapClient,
                                              front_end: EventHeapFrontEnd) -> None:
        """MAX_WAITS_PER_CONNECTION waits at once; one more is ERROR LimitExceeded."""
        from cosnotify.protocols.eventheap.session import MAX_WAITS_PER_CONNECTION

        for _ in range(MAX_WAITS_PER_CONNECTION):
            client.send("waitForEvent", [client.template("Never")])
        assert front_end.space.wait_for_waiters(MAX_WAITS_PER_CONNECTION, WAIT)
        reply = client.call("waitForEvent", [client.template("Never")])
        assert reply.return_tag is not None
        assert reply.return_tag.startswith("ERROR LimitExceeded")

    @staticmethod
    def _poison(front_end: EventHeapFrontEnd, client: EventHeapClient) -> int:
        """An event the wire cannot carry (a string of 70,000 characters), as a CORBA
        supplier of the channel can push it; its tuple id."""
        from cosnotify.protocols.eventheap.mapping import event_of

        tup = client.event("Job")
        big = Tuple(0, tup.fields + (Field("blob", "string", Value(ACTUAL, "x" * 70_000),
                                           Value(ACTUAL, "x")),))
        return int(front_end.space.put_event(event_of(big)))

    @staticmethod
    def _fresh(front_end: EventHeapFrontEnd, source: str, tuple_id: int) -> bool:
        """Has the Source's client not received tuple ``tuple_id``?"""
        space = front_end.space
        with space._lock:
            return bool(space._clients[source].seen.fresh(space._table.by_id[tuple_id]))

    def test_unencodable_event_is_passed_over(self, connect: Connect,
                                              front_end: EventHeapFrontEnd) -> None:
        """Review 118: one stored event the wire cannot carry stopped every getEvent and
        removeEvent whose template matched it. Tables 5-6: "A wire bundle with exactly
        one event that matches": it is passed over -- neither taken nor received -- and
        the next match is returned."""
        a = connect("a")
        poison = self._poison(front_end, connect("p"))  # another Source than n's
        a.put(a.event("Job", n=1))
        for op, source in (("getEvent", "g"), ("removeEvent", "r")):
            c = connect(source)
            reply = c.call(op, [c.template("Job", target_me=True)])
            assert reply.tuples and field_of(reply.tuples[0], "n") == 1, (op, reply)
        late = connect("late")
        reply = late.call("removeEvent", [late.template("Job", target_me=True)])
        assert reply.tuples is None and reply.return_tag is None  # nothing it can carry
        assert front_end.space.live_count == 1  # the event it cannot carry stays
        for source in ("g", "r", "late"):
            assert self._fresh(front_end, source, poison)  # and none received it
        # Passed over is not received: the Source's sequencing cursor stays before it,
        # and a caller without the wire's limits (in process, CORBA) still gets it.
        from cosnotify.protocols.eventheap.mapping import template_of

        again = late.call("getEvent", [late.template("Job", target_me=True)])
        assert again.tuples is None
        assert len(front_end.server.unencodable) == 1  # its verdict is kept, not redone
        found = front_end.space._clients["late"].get_event(
            [template_of(late.template("Job", target_me=True))])
        assert found is not None and found.id == poison

    @pytest.mark.parametrize("op", ["waitForEvent", "waitToRemoveEvent"])
    def test_wait_passes_over_unencodable_event(self, op: str, connect: Connect,
                                                front_end: EventHeapFrontEnd) -> None:
        """Tables 7-8: a wait passes over an event the wire cannot carry, stored before
        it began or arriving as it waits, and returns the next match."""
        a, p = connect("a"), connect("p")
        first = self._poison(front_end, p)
        w = connect("w")
        tag = w.send(op, [w.template("Job", target_me=True)])
        assert front_end.space.wait_for_waiters(1, WAIT)
        second = self._poison(front_end, p)
        a.put(a.event("Job", n=2))
        reply = w.receive()
        assert reply.destination_tag == tag
        assert reply.tuples and field_of(reply.tuples[0], "n") == 2, reply
        assert front_end.space.live_count == (2 if op == "waitToRemoveEvent" else 3)
        assert self._fresh(front_end, "w", first) and self._fresh(front_end, "w", second)

    def test_platform_template_refused(self, client: EventHeapClient) -> None:
        """A platform-typed template value cannot be matched: ERROR InvalidTemplate."""
        tmpl = client.template("Obj", p=Field("p", "EHJava.X", Value(FORMAL), Value(FORMAL)))
        reply = client.call("getEvent", [tmpl])
        assert reply.return_tag is not None
        assert reply.return_tag.startswith("ERROR InvalidTemplate")

    def test_formal_post_value_refused(self, client: EventHeapClient) -> None:
        """A formal post value outside the Target fields cannot be kept: ERROR InvalidEvent."""
        reply = client.call("putEvent", [client.event(
            "J", x=Field("x", "int", Value(FORMAL), Value(FORMAL)))])
        assert reply.return_tag is not None
        assert reply.return_tag.startswith("ERROR InvalidEvent")
