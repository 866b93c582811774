"""waitForEvent and waitToRemoveEvent: what they return, and how every wait ends.

Provenance: the Event Heap wire protocol appendix, Tables 7 (waitToRemoveEvent)
and 8 (waitForEvent); issue 21, item 3 and "Bad input" ("Tuple-space waits
have a documented upper bound and end cleanly when the client disconnects").
Waits time out on the channel's clock (a ManualClock here): nothing sleeps.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyEventHeap as EH

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.store import MemoryStore
from cosnotify.tuplespace import Cancel, TupleSpace
from cosnotify.tuplespace import limits as L
from tests.tuplespace.conftest import WAIT, event, field


class Call:
    """``fn(*args, **kwargs)`` in a thread; ``result()`` joins and returns or raises."""

    def __init__(self, fn: Any, *args: Any, **kwargs: Any) -> None:
        self._out: list[Any] = []
        self._error: list[BaseException] = []

        def run() -> None:
            try:
                self._out.append(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - handed to the test
                self._error.append(exc)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def result(self) -> Any:
        self._thread.join(WAIT)
        assert not self._thread.is_alive(), "the call did not end"
        if self._error:
            raise self._error[0]
        return self._out[0]


def waiting(space: TupleSpace, count: int) -> None:
    assert space.wait_for_waiters(count, WAIT)


class TestWaitForEvent:
    """Table 8."""

    def test_a_stored_event_is_returned_at_once(self, space: TupleSpace) -> None:
        """Table 8: "Get an event currently stored on the server ... The retrieved event
        will remain in the Event Heap"."""
        put = space.put_event(event("A", n=1))
        found = space.wait_for_event("n: int = 1", 0)
        assert found is not None and found.id == put
        found = space.wait_for_event("n: int = 1", 30)
        assert found is not None and found.id == put
        assert [t.id for t in space.get_all()] == [put]

    def test_the_incoming_event_is_returned_and_placed(self, space: TupleSpace) -> None:
        """Table 8: "the incoming event which eventually satisfies the request will be both
        returned to the requester and placed into the Event Heap"."""
        call = Call(space.wait_for_event, 'EventType = "A", n: int = 2', 30)
        waiting(space, 1)
        other = space.put_event(event("A", n=1))  # not a match: the wait goes on
        assert space.waiting == 1
        put = space.put_event(event("A", n=2))
        found = call.result()
        assert found is not None and found.id == put and field(found, "n") == 2
        assert [t.id for t in space.get_all()] == [other, put]
        assert space.waiting == 0

    def test_an_event_from_a_supplier_ends_a_wait(self, channel: Any,
                                                   space: TupleSpace) -> None:
        """Table 8's "incoming event", whatever supplier brings it (issue 21: one channel
        for Event Heap and CORBA clients)."""
        from tests.tuplespace.conftest import supplier

        call = Call(space.wait_for_event, 'EventType = "A"', 30)
        waiting(space, 1)
        supplier(channel).push_structured_events([event("A", n=5)])
        found = call.result()
        assert found is not None and field(found, "n") == 5


class TestWaitToRemoveEvent:
    """Table 7."""

    def test_a_stored_event_is_taken_at_once(self, space: TupleSpace) -> None:
        """Table 7: "Remove an event currently stored on the server ... The retrieved event
        will be removed from the Event Heap"."""
        put = space.put_event(event("A", n=1))
        found = space.wait_to_remove_event("n: int = 1", 30)
        assert found is not None and found.id == put
        assert space.get_all() == []

    def test_the_incoming_event_is_not_placed(self, channel: Any, space: TupleSpace) -> None:
        """Table 7: "In the case when no event is found, the incoming event which eventually
        satisfies the request will not be placed into the Event Heap". The channel's
        consumers still receive it (docs/history.md: it was accepted by the channel)."""
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        call = Call(space.wait_to_remove_event, 'EventType = "Job"', 30)
        waiting(space, 1)
        put = space.put_event(event("Job", n=3))
        found = call.result()
        assert found is not None and found.id == put and field(found, "n") == 3
        assert space.get_all() == [] and space.get_event('EventType = "Job"') is None
        received, has = proxy.try_pull_structured_event()
        assert has and field(received, "n") == 3

    def test_waiters_are_served_in_the_order_they_began(self, space: TupleSpace) -> None:
        """Table 7: the event goes to the request it "eventually satisfies": each incoming
        event to the earliest waiting request it matches, and only one takes it."""
        first = Call(space.wait_to_remove_event, 'EventType = "Job"', 30)
        waiting(space, 1)
        second = Call(space.wait_to_remove_event, 'EventType = "Job"', 30)
        waiting(space, 2)
        a = space.put_event(event("Job", n=1))
        assert first.result().id == a
        waiting(space, 1)
        b = space.put_event(event("Job", n=2))
        assert second.result().id == b
        assert space.get_all() == []

    def test_a_wait_for_before_a_wait_to_remove_gets_a_copy(self, space: TupleSpace) -> None:
        """Tables 7 and 8 together: a waitForEvent that began first is "returned to the
        requester before being placed"; then the waitToRemoveEvent takes it, so it is not
        placed."""
        reader = Call(space.wait_for_event, 'EventType = "Job"', 30)
        waiting(space, 1)
        taker = Call(space.wait_to_remove_event, 'EventType = "Job"', 30)
        waiting(space, 2)
        put = space.put_event(event("Job", n=1))
        assert reader.result().id == put
        assert taker.result().id == put
        assert space.get_all() == []


class TestHowAWaitEnds:
    """Issue 21, "Bad input": waits have a documented upper bound and end cleanly."""

    @pytest.mark.parametrize("remove", [False, True])
    def test_a_wait_times_out_taking_nothing(self, space: TupleSpace, clock: ManualClock,
                                             remove: bool) -> None:
        """A wait ends at its timeout (the channel's clock) with no tuple; an event that
        comes after it stays in the space."""
        op = space.wait_to_remove_event if remove else space.wait_for_event
        call = Call(op, 'EventType = "A"', 5)
        waiting(space, 1)
        clock.advance(4.9)
        assert space.waiting == 1
        clock.advance(0.1)
        assert call.result() is None
        put = space.put_event(event("A", n=1))
        assert [t.id for t in space.get_all()] == [put]

    def test_no_timeout_is_the_upper_bound(self, space: TupleSpace, clock: ManualClock) -> None:
        """docs/history.md: a wait with no timeout lasts MAX_WAIT (300 s) at most."""
        call = Call(space.wait_for_event, 'EventType = "A"')
        waiting(space, 1)
        clock.advance(L.MAX_WAIT - 1)
        assert space.waiting == 1
        clock.advance(1)
        assert call.result() is None

    def test_a_cancelled_wait_takes_nothing(self, space: TupleSpace) -> None:
        """In process, a client that goes cancels its wait: it ends with no tuple, and the
        next matching event stays in the space."""
        cancel = Cancel()
        call = Call(space.wait_to_remove_event, 'EventType = "A"', 60, cancel=cancel)
        waiting(space, 1)
        cancel.cancel()
        assert call.result() is None
        put = space.put_event(event("A", n=1))
        assert [t.id for t in space.get_all()] == [put]
        assert space.wait_to_remove_event('EventType = "B"', 60, cancel=cancel) is None

    def test_destroying_the_channel_ends_waits(self, channel: Any, space: TupleSpace) -> None:
        """Issue 21: a destroyed channel ends its space; its waiters wake with
        OBJECT_NOT_EXIST, as does every later call."""
        call = Call(space.wait_to_remove_event, 'EventType = "A"', 60)
        waiting(space, 1)
        channel.destroy()
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            call.result()
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            space.get_event('EventType = "A"')
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            space.put_event(event("A", n=1))
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            TupleSpace.of(channel)

    def test_the_service_stopping_ends_waits(self, clock: ManualClock) -> None:
        """A persistent channel is not destroyed when its service stops (it comes back at
        the next start), but its space's waits end: tuples live in memory only."""
        persistent = [N.Property("ConnectionReliability",
                                 CORBA.Any(CORBA.TC_short, N.Persistent))]
        made = EventChannelFactory(clock=clock, store=MemoryStore())
        channel, _ = made.create_channel(persistent, [])
        space = TupleSpace.of(channel)
        call = Call(space.wait_for_event, 'EventType = "A"', 60)
        waiting(space, 1)
        made.close()
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            call.result()

    def test_waiters_are_bounded(self, space: TupleSpace,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
        """docs/history.md: at most MAX_WAITERS calls wait on one space; one more is
        LimitExceeded, and the others go on."""
        from cosnotify.tuplespace import space as module

        monkeypatch.setattr(module, "MAX_WAITERS", 2)
        calls = [Call(space.wait_for_event, 'EventType = "A"', 60) for _ in range(2)]
        waiting(space, 2)
        with pytest.raises(EH.LimitExceeded) as raised:
            space.wait_for_event('EventType = "A"', 60)
        assert raised.value.limit == 2 and "waiting" in raised.value.reason
        put = space.put_event(event("A", n=1))
        assert [c.result().id for c in calls] == [put, put]


class TestGiveBack:
    """``give_back``: a tuple a wait took for a caller that is gone is live again
    (docs/history.md; the servants use it, cosnotify/tuplespace/corba.py)."""

    def test_a_tuple_given_back_is_live_under_its_id(self, space: TupleSpace,
                                                     clock: ManualClock) -> None:
        """Its id and expiry stay; it comes back at its place, not as the newest (review
        finding 5: "the tuple goes back as the newest, losing its place"); giving back a
        live tuple does nothing; an expired one does not come back."""
        first = space.put_event(event("A", n=1))
        second = space.put_event(event("A", n=2))
        taken = space.remove_event("n: int = 1")
        assert taken is not None and taken.id == first
        space.give_back(taken)
        space.give_back(taken)
        assert [t.id for t in space.get_all()] == [first, second]
        assert space.remove_event('EventType = "A"').id == first  # type: ignore[union-attr]
        space.give_back(taken)
        again = space.remove_event("n: int = 1")
        assert again is not None and again.expires == taken.expires
        clock.advance(120)
        space.give_back(again)
        assert space.get_event("n: int = 1") is None

    def test_sequencing_survives_a_give_back(self, space: TupleSpace) -> None:
        """A client that received the tuple before it was taken does not receive it again
        when it comes back ("Event Heap Client Responsibilities")."""
        space.put_event(event("A", n=1))
        reader = space.connect("reader")
        assert reader.get_event("n: int = 1") is not None
        taken = space.remove_event("n: int = 1")
        assert taken is not None
        space.give_back(taken)
        assert reader.get_event("n: int = 1") is None
        assert space.get_event("n: int = 1") is not None


class TestACallerThatWent:
    """Review finding 5: "A wait cancelled because its caller left still marks the tuple
    as seen"; "a wait whose call is already cancelled still takes the tuple". The seed's
    sequencing ("Event Heap Client Responsibilities") records what a client *received*."""

    @pytest.mark.parametrize("remove", [False, True])
    def test_a_wait_already_cancelled_takes_and_records_nothing(
            self, space: TupleSpace, remove: bool) -> None:
        """A wait whose caller is gone before it begins returns nothing: the tuple stays
        where it was, and the client has not received it."""
        put = space.put_event(event("Job", n=1))
        worker = space.connect("worker")
        cancel = Cancel()
        cancel.cancel()
        op = worker.wait_to_remove_event if remove else worker.wait_for_event
        assert op('EventType = "Job"', 30, cancel=cancel) is None
        assert [t.id for t in space.get_all()] == [put]
        again = worker.get_event('EventType = "Job"')
        assert again is not None and again.id == put

    @pytest.mark.parametrize("remove", [False, True])
    def test_a_tuple_given_back_was_not_received(self, space: TupleSpace,
                                                 remove: bool) -> None:
        """What the servant does when the caller went as its wait found a tuple
        (corba.py): give_back undoes the retrieval -- the client has not received it, and a
        taken tuple is live again."""
        first = space.put_event(event("Job", n=1))
        second = space.put_event(event("Job", n=2))
        worker = space.connect("worker")
        op = worker.wait_to_remove_event if remove else worker.wait_for_event
        found = op('EventType = "Job"', 0)
        assert found is not None and found.id == first
        space.give_back(found)
        assert [t.id for t in space.get_all()] == [first, second]
        assert [worker.get_event('EventType = "Job"').id for _ in range(2)] == [  # type: ignore[union-attr]
            first, second]

    def test_over_corba_a_gone_callers_wait_records_nothing(
            self, space: TupleSpace, monkeypatch: pytest.MonkeyPatch) -> None:
        """Finding 5's reproduction: the connection of a client's wait closed before the
        wait began; the client reconnects and asks again: the tuple is there for it."""
        import omniORB
        from omniORB import ConnectionInfo

        from cosnotify.tuplespace.corba import ClientServant, ConnectionWatch

        address = "giop:tcp:127.0.0.1:40001"
        monkeypatch.setattr(omniORB, "currentCallInfo",
                            lambda: {"operation": "wait", "peer_address": address})
        put = space.put_event(event("Job", n=1))
        watch = ConnectionWatch()
        watch.connection_event(ConnectionInfo.CLOSED, False, address, None)
        servant = ClientServant(space.connect("worker"), watch)
        spec = [EH.TemplateSpec(text='EventType = "Job"')]
        assert servant.wait_to_remove_event(spec, 10_000) == []
        assert servant.wait_for_event(spec, 10_000) == []
        assert [t.id for t in space.get_all()] == [put]
        again = space.connect("worker").get_event('EventType = "Job"')
        assert again is not None and again.id == put


class TestGiveBackToWaiters:
    """Review finding 6: "A tuple given back is not offered to other waiters"."""

    def test_a_tuple_given_back_goes_to_the_next_waiter(self, space: TupleSpace) -> None:
        """Table 7: a waitToRemoveEvent takes "the first matching incoming event" -- a
        tuple given back comes in again: the next waiting taker gets it, and it is not
        kept."""
        first = Call(space.wait_to_remove_event, 'EventType = "Job"', 100)
        waiting(space, 1)
        second = Call(space.wait_to_remove_event, 'EventType = "Job"', 30)
        waiting(space, 2)
        put = space.put_event(event("Job"))
        taken = first.result()
        assert taken is not None and taken.id == put
        space.give_back(taken)  # first's caller went
        got = second.result()
        assert got is not None and got.id == put
        assert space.get_all() == [] and space.waiting == 0

    def test_a_reader_waiting_gets_a_copy(self, space: TupleSpace) -> None:
        """Table 8: a waitForEvent gets the given-back tuple "both returned to the requester
        and placed into the Event Heap"."""
        put = space.put_event(event("Job"))
        taken = space.remove_event('EventType = "Job"')
        reader = Call(space.wait_for_event, 'EventType = "Job"', 30)
        waiting(space, 1)
        assert taken is not None
        space.give_back(taken)
        assert reader.result().id == put
        assert [t.id for t in space.get_all()] == [put]


class TestTimersKeepNothing:
    """Review finding 10: "A finished wait's timer keeps the taken event alive for the
    full timeout"."""

    def test_a_finished_wait_keeps_no_event(self, space: TupleSpace,
                                            clock: ManualClock) -> None:
        """After a 300 s wait took an event, nothing the space or the clock holds keeps the
        event (before the 300 s are over)."""
        import gc
        import weakref

        call = Call(space.wait_to_remove_event, 'EventType = "Job"', 300)
        waiting(space, 1)
        space.put_event(event("Job", blob="x" * 1000))
        found = call.result()
        assert found is not None
        gone = weakref.ref(found._live.event)
        del found, call
        gc.collect()
        assert gone() is None

    def test_a_cancelled_timer_drops_its_callback(self, clock: ManualClock) -> None:
        """cosnotify/channel/clock.py: ``cancel()`` before it fires drops the timer -- and
        what its callback holds, though the timer waits in the heap until its time."""
        import gc
        import weakref

        class Payload:
            pass

        payload = Payload()
        gone = weakref.ref(payload)
        fired: list[Any] = []
        timer = clock.call_later(300, functools.partial(fired.append, payload))
        del payload
        timer.cancel()
        gc.collect()
        assert gone() is None
        clock.advance(300)
        assert fired == []


class TestAfterTheServiceStopped:
    """Review finding 12: "After the service stops, a new space can be made whose waits
    overrun their timeout"."""

    def test_no_space_is_made_after_the_service_stopped(self) -> None:
        """A persistent channel outlives its service's stop (it comes back at the next
        start), but its space ended with the service: no new one is made."""
        persistent = [N.Property("ConnectionReliability",
                                 CORBA.Any(CORBA.TC_short, N.Persistent))]
        made = EventChannelFactory(store=MemoryStore())
        channel, _ = made.create_channel(persistent, [])
        space = TupleSpace.of(channel)
        made.close()
        assert space.closed
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            TupleSpace.of(channel)
        other = EventChannelFactory(store=MemoryStore())
        never, _ = other.create_channel(persistent, [])
        other.close()
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            TupleSpace.of(never)

    def test_a_wait_without_timers_ends_at_once(self) -> None:
        """A wait on a space whose service's timers have stopped cannot time out: it ends
        at once with OBJECT_NOT_EXIST, rather than running past its timeout."""
        with EventChannelFactory() as made:  # the real clock
            channel, _ = made.create_channel([], [])
            space = TupleSpace.of(channel)
            made.service.clock.close()
            with pytest.raises(CORBA.OBJECT_NOT_EXIST):
                space.wait_for_event('EventType = "Z"', 2)
            assert space.waiting == 0
