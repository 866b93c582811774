"""The seed's server operations on a channel's tuple space, in process.

Provenance: the Event Heap wire protocol appendix (B. Johanson, 2003),
"Event Heap Server Operations" (Tables 5-16), "Event Heap Server
Responsibilities", "Tuple Matching" and "Events versus Tuples" (Tables 1-3);
issue 21, item 3.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

import CosNotification as N
import CosNotifyChannelAdmin as CA
import TimeBase

from cosnotify.channel.clock import ManualClock, seconds_to_timet
from cosnotify.tuplespace import Tuple, TupleSpace
from tests.tuplespace.conftest import WAIT, event, field, supplier, type_of


def ids(found: list[Tuple]) -> list[int]:
    return [t.id for t in found]


class TestPutEvent:
    """Table 13 (putEvent) and "Event Heap Server Responsibilities"."""

    def test_the_event_is_placed_under_a_new_id(self, space: TupleSpace) -> None:
        """Table 13: putEvent "Places the included event into the Event Heap"; the server
        assigns "each event placed into the Event Heap with the putEvent call an ID"."""
        first = space.put_event(event("Alarm", n=1))
        second = space.put_event(event("Alarm", n=2))
        assert first != second and first > 0 and second > 0  # serial number 0: never placed
        assert ids(space.get_all()) == [first, second]
        assert [field(t, "n") for t in space.get_all()] == [1, 2]

    def test_an_event_put_again_gets_another_id(self, space: TupleSpace) -> None:
        """Server Responsibilities: "This must be assigned even if the event being placed
        was formerly removed from the Event Heap and already has an ID"."""
        first = space.put_event(event("Alarm", n=1))
        taken = space.remove_event('EventType = "Alarm"')
        assert taken is not None and taken.id == first
        again = space.put_event(taken.event)
        assert again != first
        assert ids(space.get_all()) == [again]

    def test_the_channels_consumers_receive_a_put_event(self, channel: Any,
                                                        space: TupleSpace) -> None:
        """Issue 21: Event Heap clients and CORBA clients share one channel: a put event is
        supplied into it (Table 13's event reaches a structured pull consumer)."""
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        space.put_event(event("Alarm", n=7))
        received, has = proxy.try_pull_structured_event()
        assert has and type_of(received) == "Alarm" and field(received, "n") == 7

    def test_events_a_notification_supplier_pushes_are_tuples(self, channel: Any,
                                                              space: TupleSpace) -> None:
        """Issue 21: every event the channel accepts, from any supplier, is a live tuple
        (with an id deleteEvent can use, Table 14)."""
        supplier(channel).push_structured_events([event("Alarm", n=1), event("Log", n=2)])
        found = space.get_all()
        assert [type_of(t) for t in found] == ["Alarm", "Log"]
        assert len(set(ids(found))) == 2 and all(i > 0 for i in ids(found))
        assert space.delete_event(found[0].id)


class TestGetEvent:
    """Table 5 (getEvent) and "Tuple Matching"."""

    def test_the_event_stays(self, space: TupleSpace) -> None:
        """Table 5: "The retrieved event will remain in the Event Heap for others to
        retrieve"."""
        put = space.put_event(event("Alarm", n=1))
        first = space.get_event('EventType = "Alarm"')
        second = space.get_event('EventType = "Alarm"')
        assert first is not None and second is not None
        assert first.id == second.id == put
        assert ids(space.get_all()) == [put]

    def test_nothing_matching_returns_none(self, space: TupleSpace) -> None:
        """Table 5: "Zero events will be returned if no matching event is in the Event Heap
        at the time the request is received"."""
        space.put_event(event("Alarm", n=1))
        assert space.get_event('EventType = "Other"') is None
        assert space.get_event("n: int = 2") is None

    def test_any_one_of_several_templates(self, space: TupleSpace) -> None:
        """Table 5: an event "that satisfies template value fields of one or more of the
        events included in the request"."""
        log = space.put_event(event("Log", n=1))
        found = space.get_event(['EventType = "Alarm"', 'EventType = "Log"'])
        assert found is not None and found.id == log

    def test_the_oldest_match_is_returned(self, space: TupleSpace) -> None:
        """Table 5 says "exactly one event that matches"; which one is cosnotify's choice,
        documented in docs/history.md: the oldest (so removeEvent works as a queue)."""
        space.put_event(event("Other", n=0))
        first = space.put_event(event("Alarm", n=1))
        space.put_event(event("Alarm", n=2))
        found = space.get_event(["n: int = 2", 'EventType = "Alarm"'])
        assert found is not None and found.id == first

    @pytest.mark.parametrize(("template", "matches"), [
        # "The template tuple field's template value is formal": any value of its type.
        ('EventType = "Alarm", host: string = ?', True),
        # A formal value "matches any field with the same name and type".
        ("host: int = ?", False),
        # "Virtual: This field is inert and will be ignored in any matching".
        ("missing: int = ~, n: int = 1", True),
        # "every field in the template tuple with a non-virtual template value is present".
        ("missing: int = ?", False),
        # Both actual "and are equivalent".
        ('host: string = "h1", n: int = 1', True),
        ('host: string = "h2"', False),
    ])
    def test_tuple_matching(self, space: TupleSpace, template: str, matches: bool) -> None:
        """"Tuple Matching": a template matches iff every non-virtual field is present and
        formal, or actual and equivalent."""
        space.put_event(event("Alarm", n=1, host="h1"))
        assert (space.get_event(template) is not None) is matches


class TestRemoveEvent:
    """Table 6 (removeEvent)."""

    def test_the_event_is_taken(self, space: TupleSpace) -> None:
        """Table 6: "The retrieved event will be removed from the Event Heap, so no others
        may retrieve it after this call returns"."""
        first = space.put_event(event("Job", n=1))
        second = space.put_event(event("Job", n=2))
        taken = space.remove_event('EventType = "Job"')
        assert taken is not None and taken.id == first and field(taken, "n") == 1
        assert ids(space.get_all()) == [second]
        again = space.remove_event('EventType = "Job"')
        assert again is not None and again.id == second
        assert space.remove_event('EventType = "Job"') is None
        assert space.get_all() == []

    def test_nothing_matching_takes_nothing(self, space: TupleSpace) -> None:
        """Table 6: "Zero tuples will be returned if no matching event is in the Event
        Heap"."""
        put = space.put_event(event("Job", n=1))
        assert space.remove_event('EventType = "Other"') is None
        assert ids(space.get_all()) == [put]

    def test_two_removes_never_take_the_same_event(self, space: TupleSpace) -> None:
        """Issue 21: "two concurrent removeEvent calls never take the same event" (Table 6:
        "no others may retrieve it after this call returns"): 8 threads released together
        by a barrier, 40 removes each, over 250 tuples."""
        for n in range(250):
            space.put_event(event("Job", n=n))
        barrier = threading.Barrier(8)
        taken: list[list[int]] = [[] for _ in range(8)]

        def worker(k: int) -> None:
            barrier.wait(WAIT)
            for _ in range(40):
                found = space.remove_event('EventType = "Job", n: int = ?')
                if found is not None:
                    taken[k].append(found.id)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(WAIT)
        every = [i for ids_ in taken for i in ids_]
        assert len(every) == 250 and len(set(every)) == 250
        assert space.get_all() == []


class TestSnoopAndGetAll:
    """Tables 9 (snoopEvents) and 10 (getAll)."""

    def test_snoop_returns_every_match_and_they_stay(self, space: TupleSpace) -> None:
        """Table 9: "Retrieves all events currently stored on the server that satisfy the
        template value fields of one or more of the events ... copies of the retrieved
        events remain on the server"."""
        a = space.put_event(event("A", n=1))
        space.put_event(event("B", n=2))
        c = space.put_event(event("C", n=3))
        assert ids(space.snoop_events(['EventType = "C"', 'EventType = "A"'])) == [a, c]
        assert ids(space.snoop_events(['EventType = "C"', "n: int = ?"])) == ids(
            space.get_all())
        assert len(space.get_all()) == 3
        assert space.snoop_events('EventType = "D"') == []

    def test_get_all_returns_every_event(self, space: TupleSpace) -> None:
        """Table 10: getAll "Returns copies of all events currently in the Event Heap"."""
        put = [space.put_event(event(t, n=n)) for n, t in enumerate("XYZ")]
        assert ids(space.get_all()) == put
        assert ids(space.get_all()) == put

    def test_results_are_capped(self, space: TupleSpace) -> None:
        """docs/history.md: snoopEvents and getAll return at most max_results (MAX_RESULTS
        by default), oldest first, so no call can exhaust memory."""
        put = [space.put_event(event("A", n=n)) for n in range(5)]
        assert ids(space.get_all(2)) == put[:2]
        assert ids(space.snoop_events("n: int = ?", 3)) == put[:3]


class TestDeleteAndClear:
    """Tables 14 (deleteEvent) and 15 (clear)."""

    def test_delete_by_the_id_of_a_returned_event(self, space: TupleSpace) -> None:
        """Table 14: "Deletes the specified event from the Event Heap ... An internally set
        ID is used by the server to determine which event to delete"."""
        first = space.put_event(event("A", n=1))
        second = space.put_event(event("A", n=2))
        returned = space.get_event("n: int = 2")
        assert returned is not None and space.delete_event(returned)
        assert ids(space.get_all()) == [first]
        assert space.delete_event(first)
        assert not space.delete_event(first)
        assert not space.delete_event(second)
        assert space.get_all() == []

    def test_an_unknown_id_deletes_nothing(self, space: TupleSpace) -> None:
        """Table 14: "Expected Response from Server: Nothing": an unknown id is FALSE."""
        put = space.put_event(event("A", n=1))
        assert not space.delete_event(put + 10_000)
        assert ids(space.get_all()) == [put]

    def test_clear_empties_the_heap(self, space: TupleSpace) -> None:
        """Table 15: "Deletes all events currently in the Event Heap, after which it will be
        empty"."""
        for n in range(3):
            space.put_event(event("A", n=n))
        assert space.clear() == 3
        assert space.get_all() == [] and space.live_count == 0
        later = space.put_event(event("A", n=9))
        assert ids(space.get_all()) == [later]


class TestTimeToLive:
    """Table 1: TimeToLive, "The amount of time after placement in the Event Heap until
    the event expires and becomes no longer retrievable"."""

    def test_an_event_expires_after_its_time_to_live(self, space: TupleSpace,
                                                      clock: ManualClock) -> None:
        """TimeToLive 5000 ms (the Timeout QoS): retrievable until 5 s after placement."""
        space.put_event(event("A", ttl_ms=5_000, n=1))
        clock.advance(4.999)
        assert space.get_event("n: int = 1") is not None
        clock.advance(0.001)
        assert space.get_event("n: int = 1") is None
        assert space.get_all() == [] and space.live_count == 0

    def test_the_default_is_120000_ms(self, space: TupleSpace, clock: ManualClock) -> None:
        """Table 1: TimeToLive's post value is "120000 ms" when the event sets none."""
        put = space.put_event(event("A", n=1))
        found = space.get_event("n: int = 1")
        assert found is not None and found.expires - found.arrival == 120.0
        clock.advance(119.9)
        assert ids(space.get_all()) == [put]
        clock.advance(0.1)
        assert space.get_all() == []

    def test_stop_time_ends_a_tuple(self, space: TupleSpace, clock: ManualClock) -> None:
        """Issue 21: expiry honours StopTime (Notification §2.5.5) as well."""
        stop = N.Property("StopTime", CORBA_utc(clock.now() + 2.0))
        ev = event("A", n=1)
        ev.header.variable_header.append(stop)
        space.put_event(ev)
        clock.advance(1.9)
        assert space.get_event("n: int = 1") is not None
        clock.advance(0.2)
        assert space.get_event("n: int = 1") is None

    def test_an_event_a_supplier_pushes_expires_too(self, channel: Any, space: TupleSpace,
                                                     clock: ManualClock) -> None:
        """Table 1's TimeToLive applies to every tuple, whoever supplied its event."""
        supplier(channel).push_structured_events([event("A", ttl_ms=1_000, n=1),
                                                  event("A", n=2)])
        clock.advance(1.0)
        assert [field(t, "n") for t in space.get_all()] == [2]


class TestFormalPostValues:
    """"Tuple Matching": fields match if "The comparison tuple field's post value is
    formal" -- and Tables 1 and 2 give Target, TargetApplication, TargetDevice,
    TargetPerson and TargetGroup the post value "Formal", and every event a TimeToLive
    ("Post Value: 120000 ms") -- review finding 13."""

    @pytest.mark.parametrize("name", ["Target", "TargetApplication", "TargetDevice",
                                      "TargetPerson", "TargetGroup"])
    def test_an_untargeted_event_is_for_anyone(self, channel: Any, space: TupleSpace,
                                               name: str) -> None:
        """An event that does not set the field has its formal post value: it matches a
        template's actual or formal value; an event that sets it matches only its own
        value ("Yes." it "Can be Overridden"). Whoever put it: a client, an anonymous
        put, a Notification supplier."""
        space.connect("me").put_event(event("Msg", n=1))
        space.put_event(event("Msg", n=2))
        supplier(channel).push_structured_events([event("Msg", n=3),
                                                  event("Msg", n=4, **{name: "me"}),
                                                  event("Msg", n=5, **{name: "other"})])
        found = space.snoop_events(f'EventType = "Msg", {name} = "me"')
        assert [field(t, "n") for t in found] == [1, 2, 3, 4]
        found = space.snoop_events(f'EventType = "Msg", {name} = ?')
        assert [field(t, "n") for t in found] == [1, 2, 3, 4, 5]
        found = space.snoop_events([f'{name} = "other", n: int = 5', f'{name} = "x", n: int = 1'])
        assert [field(t, "n") for t in found] == [1, 5]
        assert field(space.remove_event(f'{name} = "other"'), "n") == 1

    def test_a_wait_for_a_target_gets_an_untargeted_event(self, space: TupleSpace) -> None:
        """Table 8's incoming event is matched by the same rule."""
        from tests.tuplespace.test_waits import Call, waiting

        call = Call(space.wait_for_event, 'EventType = "Msg", Target = "me"', 30)
        waiting(space, 1)
        space.put_event(event("Msg", Target="other"))
        put = space.put_event(event("Msg"))
        assert call.result().id == put

    def test_every_tuple_has_a_time_to_live(self, channel: Any, space: TupleSpace) -> None:
        """Table 1: TimeToLive, "Post Value 120000 ms", "Template Value Formal": the only
        template value, `TimeToLive = ?`, matches every tuple -- one with a Timeout, and one
        living the default 120000 ms -- anonymous, a client's, a supplier's."""
        space.put_event(event("A", n=1))
        space.put_event(event("A", ttl_ms=5_000, n=2))
        space.connect("me").put_event(event("A", n=3))
        supplier(channel).push_structured_events([event("A", n=4)])
        found = space.snoop_events('TimeToLive = ?, EventType = "A"')
        assert [field(t, "n") for t in found] == [1, 2, 3, 4]


def CORBA_utc(seconds: float) -> Any:
    from omniORB import CORBA

    return CORBA.Any(TimeBase._tc_UtcT, TimeBase.UtcT(seconds_to_timet(seconds), 0, 0, 0))


def test_one_space_per_channel(channel: Any) -> None:
    """Issue 21: the space is the channel's (made on first use and kept by it)."""
    assert TupleSpace.of(channel) is TupleSpace.of(channel)
    assert TupleSpace.of(channel).channel_id == channel.channel_id
