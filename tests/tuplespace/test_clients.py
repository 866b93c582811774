"""Clients of a space: the seed's EventHeap object, its stamped fields and sequencing.

Provenance: the Event Heap wire protocol appendix, "Event Heap Client
Responsibilities", "Events versus Tuples" (Tables 1-3), and the "Sequence
Info Needed?" rows of Tables 5-12; issue 21, item 3 ("per-source sequencing
with SessionID/SequenceNum").
"""

from __future__ import annotations

from typing import Any

import pytest
from omniORB import CORBA

import CosNotifyEventHeap as EH

from cosnotify.tuplespace import ClientInfo, TupleSpace
from tests.tuplespace.conftest import event, field, supplier
from tests.tuplespace.test_waits import Call, waiting


def sequenced(type_name: str, source: str, session: int, number: int, **fields: Any) -> Any:
    """An event as another Event Heap client posted it (Tables 1 and 3)."""
    return event(type_name, Source=source, SessionID=session, SequenceNum=number, **fields)


class TestStamping:
    """Tables 1-3: what the EventHeap object sets "on posting"."""

    def test_a_client_stamps_source_session_and_number(self, space: TupleSpace) -> None:
        """Table 1: Source "Set to Source of EventHeap object on posting"; Table 3:
        SessionID and SequenceNum "Set by EventHeap object on posting"."""
        client = space.connect("sensor-1", application="thermo", device="pc7")
        for n in range(3):
            client.put_event(event("Temp", n=n))
        found = space.get_all()
        assert [field(t, "Source") for t in found] == ["sensor-1"] * 3
        assert [field(t, "SourceApplication") for t in found] == ["thermo"] * 3
        assert [field(t, "SourceDevice") for t in found] == ["pc7"] * 3
        assert {field(t, "SessionID") for t in found} == {client.session_id}
        assert 0 <= client.session_id < 2**31
        assert [field(t, "SequenceNum") for t in found] == [1, 2, 3]
        with pytest.raises(KeyError):
            field(found[0], "SourcePerson")  # "Virtual, or set ... if non-null"

    def test_a_source_in_the_event_is_replaced(self, space: TupleSpace) -> None:
        """Table 1: Source "Can be Overridden? Template value only": the post value is
        always the client's; Table 3: SessionID and SequenceNum "No."."""
        client = space.connect("me")
        client.put_event(event("T", Source="someone-else", SessionID=5, SequenceNum=99))
        found = space.get_all()[0]
        assert field(found, "Source") == "me"
        assert field(found, "SessionID") == client.session_id
        assert field(found, "SequenceNum") == 1

    def test_a_client_event_has_the_default_time_to_live(self, space: TupleSpace) -> None:
        """Table 1: TimeToLive's post value is 120000 ms, set on posting (a Timeout, so the
        channel's consumers see it too); an anonymous put is not stamped, and its tuple
        lives the same default."""
        space.connect("me").put_event(event("T", n=1))
        space.put_event(event("T", n=2))  # anonymous: nothing stamped
        found = space.snoop_events("TimeToLive = ?")
        assert [field(t, "n") for t in found] == [1, 2]
        assert field(found[0], "Timeout") == 120_000 * 10_000
        with pytest.raises(KeyError):
            field(found[1], "Timeout")
        assert [t.expires - t.arrival for t in found] == [120.0, 120.0]

    def test_the_given_event_is_not_changed(self, space: TupleSpace) -> None:
        """put_event stamps a copy: the caller's event keeps its own fields."""
        ev = event("T", n=1)
        space.connect("me").put_event(ev)
        assert [p.name for p in ev.filterable_data] == ["n"]
        assert ev.header.variable_header == []


class TestSequencing:
    """"Event Heap Client Responsibilities": a sequenced retrieval returns only events
    the client has not received."""

    def test_get_event_returns_each_event_once(self, space: TupleSpace) -> None:
        """getEvent (Table 5, "Sequence Info Needed? Yes"): "Retrieved events will satisfy
        the sequencing constraints derived from the sequence information"."""
        poster = space.connect("poster")
        put = [poster.put_event(event("T", n=n)) for n in range(3)]
        reader = space.connect("reader")
        got = [reader.get_event('EventType = "T"') for _ in range(4)]
        assert [t.id if t else None for t in got] == [*put, None]
        # Anonymous calls keep no sequencing: the oldest, every time.
        assert space.get_event('EventType = "T"').id == put[0]  # type: ignore[union-attr]
        # Another client has its own.
        other = space.connect("other")
        assert other.get_event('EventType = "T"').id == put[0]  # type: ignore[union-attr]

    def test_events_without_sequencing_are_numbered_by_the_space(
            self, channel: Any, space: TupleSpace) -> None:
        """Events a Notification supplier pushes carry no SessionID or SequenceNum; the space
        numbers them in arrival order (docs/history.md), so a client still receives each
        once."""
        supplier(channel).push_structured_events([event("T", n=n) for n in range(3)])
        reader = space.connect("reader")
        got = [reader.get_event('EventType = "T"') for _ in range(4)]
        assert [field(t, "n") if t else None for t in got] == [0, 1, 2, None]

    def test_an_older_number_of_a_source_is_not_returned(self, channel: Any,
                                                         space: TupleSpace) -> None:
        """"For each of these sources, the SessionID and SequenceNum values from the most
        recently received event must be stored": an event of that source and type with a
        number at or below it is not returned."""
        supplier(channel).push_structured_events([
            sequenced("T", "S", 7, 5, n=1), sequenced("T", "S", 7, 3, n=2),
            sequenced("U", "S", 7, 4, n=3)])
        reader = space.connect("reader")
        assert field(reader.get_event('EventType = "T"'), "n") == 1
        assert reader.get_event('EventType = "T"') is None  # number 3 < 5: seen
        assert field(reader.get_event('EventType = "U"'), "n") == 3  # another EventType

    def test_a_new_session_is_fresh_and_an_old_one_is_not_seen_twice(
            self, channel: Any, space: TupleSpace) -> None:
        """A source's new SessionID starts its numbers again; and (docs/history.md) the
        highest number is kept per session, so the old session's events are not returned
        twice after the new one's."""
        push = supplier(channel)
        push.push_structured_events([sequenced("T", "S", 7, 5, n=1)])
        push.push_structured_events([sequenced("T", "S", 8, 1, n=2)])
        reader = space.connect("reader")
        got = [reader.get_event('EventType = "T"') for _ in range(3)]
        assert [field(t, "n") if t else None for t in got] == [1, 2, None]

    def test_remove_and_waits_are_sequenced_too(self, space: TupleSpace) -> None:
        """Tables 6-8: removeEvent, waitToRemoveEvent and waitForEvent need sequence info:
        a wait does not return an event its client already received; it waits for a new
        one."""
        put = space.put_event(event("T", n=1))
        reader = space.connect("reader")
        assert reader.wait_for_event('EventType = "T"', 0).id == put  # type: ignore[union-attr]
        assert reader.wait_for_event('EventType = "T"', 0) is None
        assert reader.remove_event('EventType = "T"') is None
        call = Call(reader.wait_for_event, 'EventType = "T"', 30)
        waiting(space, 1)
        newer = space.put_event(event("T", n=2))
        assert call.result().id == newer
        assert reader.wait_to_remove_event('EventType = "T"', 0) is None
        assert [t.id for t in space.get_all()] == [put, newer]

    def test_snoop_and_get_all_ignore_sequencing(self, space: TupleSpace) -> None:
        """Tables 9 and 10: snoopEvents and getAll: "Sequencing is ignored"."""
        put = space.put_event(event("T", n=1))
        reader = space.connect("reader")
        reader.get_event('EventType = "T"')
        assert [t.id for t in reader.snoop_events('EventType = "T"')] == [put]
        assert [t.id for t in reader.get_all()] == [put]


class TestOneSourceAtATime:
    """Table 1, Source: "Only one Source of a given name may be active in an Event Heap
    at one time"; "Clients should automatically reconnect to the server"."""

    def test_connecting_again_replaces_and_carries_on(self, space: TupleSpace) -> None:
        """A second client of a Source replaces the first (its calls and waits end with
        OBJECT_NOT_EXIST) and keeps its session and what it received."""
        first = space.connect(ClientInfo("me"))
        seen = space.put_event(event("T", n=1))
        assert first.get_event('EventType = "T"').id == seen  # type: ignore[union-attr]
        call = Call(first.wait_for_event, 'EventType = "T"', 30)
        waiting(space, 1)
        second = space.connect("me")
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            call.result()
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            first.get_event('EventType = "T"')
        assert second.session_id == first.session_id
        assert second.get_event('EventType = "T"') is None  # received before the reconnect
        assert space.clients == ["me"]

    def test_a_closed_client_is_gone(self, space: TupleSpace) -> None:
        """close() drops the client's state: a later client of its Source starts afresh."""
        put = space.put_event(event("T", n=1))
        client = space.connect("me")
        client.get_event('EventType = "T"')
        client.close()
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            client.put_event(event("T", n=2))
        assert space.clients == []
        again = space.connect("me")
        assert again.get_event('EventType = "T"').id == put  # type: ignore[union-attr]

    def test_clients_are_bounded(self, space: TupleSpace,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
        """docs/history.md: at most MAX_CLIENTS Sources are connected at once; reconnecting
        one that is connected is always possible."""
        from cosnotify.tuplespace import registry as module

        monkeypatch.setattr(module, "MAX_CLIENTS", 2)
        space.connect("a")
        space.connect("b")
        with pytest.raises(EH.LimitExceeded) as raised:
            space.connect("c")
        assert raised.value.limit == 2
        assert space.connect("a").active


class TestOnePutAtATime:
    """Review finding 7: "Two concurrent puts by one client can hide an event from
    readers" -- Table 3's SequenceNum is "Set by EventHeap object on posting", and a
    reader that received number 2 takes number 1 as received ("Event Heap Client
    Responsibilities")."""

    def test_a_sources_numbers_reach_the_space_in_order(self, channel: Any,
                                                        space: TupleSpace) -> None:
        """Two threads put as one client; the first is held inside the channel: the
        second waits for it (it is not numbered before the first is kept), so a reader
        receives both, in their order."""
        import threading

        from tests.tuplespace.conftest import WAIT

        writer = space.connect("writer")
        reader = space.connect("reader")

        class Watched:
            """The Source's put lock, saying when a second put waits for it."""

            def __init__(self) -> None:
                self._lock = threading.Lock()
                self.contended = threading.Event()

            def __enter__(self) -> None:
                if not self._lock.acquire(blocking=False):
                    self.contended.set()
                    self._lock.acquire()

            def __exit__(self, *exc: object) -> None:
                self._lock.release()

        lock = Watched()
        writer._state.put_lock = lock  # type: ignore[assignment]
        forward = channel._forward
        inside, gate = threading.Event(), threading.Event()

        def held_forward(envelope: Any) -> None:
            named = {p.name: p.value.value() for p in envelope.structured.filterable_data}
            if named["n"] == "first":
                inside.set()
                gate.wait(WAIT)
            forward(envelope)

        channel._forward = held_forward
        first = threading.Thread(target=writer.put_event, args=(event("Job", n="first"),))
        first.start()
        assert inside.wait(WAIT)
        second = threading.Thread(target=writer.put_event, args=(event("Job", n="second"),))
        second.start()
        assert lock.contended.wait(WAIT), "the second put did not wait for the first"
        assert reader.get_event('EventType = "Job"') is None
        gate.set()
        first.join(WAIT)
        second.join(WAIT)
        got = [reader.get_event('EventType = "Job"') for _ in range(3)]
        assert [field(t, "n") if t else None for t in got] == ["first", "second", None]
        assert [field(t, "SequenceNum") for t in got[:2]] == [1, 2]
