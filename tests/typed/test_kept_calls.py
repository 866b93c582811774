"""Calls a TypedProxyPullSupplier keeps for another operation's pull (proxies.py).

Pulling ``op`` reads the queue in channel order; a call of another operation
read meanwhile is kept for that operation's pull. These cases come from a
review: kept calls and MaxQueueLength, expiry, counters, the order of two
pulls on two threads, teardown.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import TimeBase

from cosnotify.channel.clock import ManualClock
from cosnotify.typed.channel import TypedEventChannelFactory
from tests.typed.conftest import DATA
from tests.typed.inprocess import settle, typed_consumer, typed_supplier

MAX_QUEUE = [N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 100))]


@pytest.fixture(scope="module")
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture(scope="module")
def factory(clock: ManualClock) -> Iterator[TypedEventChannelFactory]:
    with TypedEventChannelFactory(idl=[DATA / "Coffee.idl"], clock=clock) as made:
        yield made


def test_kept_calls_are_given_under_max_queue_length(factory: TypedEventChannelFactory
                                                     ) -> None:
    """MaxQueueLength counts a kept call as held; it is given, not taken for discarded."""
    channel, _ = factory.create_typed_channel([], MAX_QUEUE)
    try:
        _, pull = typed_supplier(channel)
        _, coffee = typed_consumer(channel)
        coffee.cancel_coffee("c0")
        coffee.drinking_coffee("d", 1)
        settle(channel)
        assert pull.try_drinking_coffee() == (True, "d", 1)  # c0 read and kept
        assert channel._account.count == 1  # the kept call still counts
        assert pull.try_cancel_coffee() == (True, "c0")
        assert channel._account.count == 0
    finally:
        channel.destroy()


def test_a_kept_call_that_expired_is_not_given(factory: TypedEventChannelFactory,
                                               clock: ManualClock) -> None:
    channel, _ = factory.create_typed_channel([], [])
    try:
        proxy, pull = typed_supplier(channel)
        pusher, coffee = typed_consumer(channel)
        pusher.set_qos([N.Property("Timeout", CORBA.Any(TimeBase._tc_TimeT, 50_000_000))])
        coffee.cancel_coffee("c0")  # lives 5 s
        coffee.drinking_coffee("d", 1)
        settle(channel)
        assert pull.try_drinking_coffee() == (True, "d", 1)  # c0 kept
        clock.advance(10)
        assert pull.try_cancel_coffee() == (False, "")
        assert proxy._queue.expired == 1
    finally:
        channel.destroy()


def test_expired_kept_calls_leave_max_queue_length(factory: TypedEventChannelFactory,
                                                   clock: ManualClock) -> None:
    """Section 2.5.5.3: a kept call past its Timeout leaves MaxQueueLength's count at
    the channel's sweep, not when a pull meets it (review 141: a channel holding only
    expired kept calls refused pushes with IMP_LIMIT)."""
    channel, _ = factory.create_typed_channel([], [
        N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 2)),
        N.Property("RejectNewEvents", CORBA.Any(CORBA.TC_boolean, True))])
    try:
        proxy, pull = typed_supplier(channel)
        pusher, coffee = typed_consumer(channel)
        pusher.set_qos([N.Property("Timeout", CORBA.Any(TimeBase._tc_TimeT, 50_000_000))])
        for name in ("c0", "c1"):  # each lives 5 s
            coffee.cancel_coffee(name)
            settle(channel)
            assert pull.try_drinking_coffee() == (False, "", 0)  # the call read, kept
        assert proxy.kept_calls == 2 and channel._account.count == 2
        clock.advance(10)
        coffee.drinking_coffee("d", 2)  # was IMP_LIMIT: only expired calls held
        settle(channel)
        assert proxy.kept_calls == 0 and proxy._queue.expired == 2
        assert pull.try_cancel_coffee() == (False, "")
        assert pull.try_drinking_coffee() == (True, "d", 2)
        assert channel._account.count == 0
    finally:
        channel.destroy()


def test_a_call_counts_as_delivered_when_given_and_kept_ones_as_depth(
        factory: TypedEventChannelFactory) -> None:
    import cosnotify

    channel, _ = factory.create_typed_channel([], [])
    try:
        _, pull = typed_supplier(channel)
        _, coffee = typed_consumer(channel)
        coffee.cancel_coffee("c0")
        coffee.drinking_coffee("d", 1)
        settle(channel)
        assert pull.try_drinking_coffee() == (True, "d", 1)

        def counters() -> dict[str, int]:
            snapshot = cosnotify.stats(factory, [channel._id])
            [found] = [p["counters"] for a in snapshot["channels"][0]["admins"]
                       for p in a["proxies"] if "not_typed" in p["counters"]]
            return found

        assert (counters()["delivered"], counters()["depth"]) == (1, 1)
        assert pull.try_cancel_coffee() == (True, "c0")
        assert (counters()["delivered"], counters()["depth"]) == (2, 0)
    finally:
        channel.destroy()


def test_a_call_kept_by_another_pull_meanwhile_goes_first(
        factory: TypedEventChannelFactory) -> None:
    """Two pulls on two threads: while ``try_drinking_coffee`` looked at the kept calls
    and found none, another pull read d0 and kept it; this one then reads d1 -- and
    must give d0 first (channel order), keeping d1."""
    channel, _ = factory.create_typed_channel([], [])
    try:
        proxy, pull = typed_supplier(channel)
        _, coffee = typed_consumer(channel)
        coffee.drinking_coffee("d0", 0)
        coffee.drinking_coffee("d1", 1)
        settle(channel)
        take = proxy._take
        interleaved = []

        def take_after_another_pull(limit: int, block: bool, batched: int | None = None) -> Any:
            if not interleaved:  # the other thread's pull of cancel_coffee, first
                interleaved.append(True)
                [entry] = take(1, block=False)
                with proxy._lock:
                    proxy._keep("drinking_coffee", entry, ["d0", 0])
            return take(limit, block, batched)

        proxy._take = take_after_another_pull  # type: ignore[method-assign]
        assert pull.try_drinking_coffee() == (True, "d0", 0)
        assert pull.try_drinking_coffee() == (True, "d1", 1)
    finally:
        channel.destroy()


def test_kept_calls_go_with_their_proxy(factory: TypedEventChannelFactory) -> None:
    """Destroyed, the proxy releases what it kept (MaxQueueLength's count goes down);
    a call read as the proxy goes is released at once, not kept."""
    channel, _ = factory.create_typed_channel([], MAX_QUEUE)
    try:
        proxy, pull = typed_supplier(channel)
        _, coffee = typed_consumer(channel)
        coffee.cancel_coffee("c0")
        coffee.drinking_coffee("d", 1)
        coffee.cancel_coffee("c1")
        settle(channel)
        assert pull.try_drinking_coffee() == (True, "d", 1)
        [entry] = proxy._take(1, block=False)  # c1, read as the proxy goes
        assert channel._account.count == 2
        proxy.disconnect_pull_supplier()
        with proxy._lock:
            assert proxy._keep("cancel_coffee", entry, ["c1"]) == [entry]
        channel._released([entry])
        assert (channel._account.count, proxy.kept_calls) == (0, 0)
    finally:
        channel.destroy()


def test_pull_and_try_pull_give_kept_calls_first(factory: TypedEventChannelFactory) -> None:
    """Review 107: the untyped ``pull``/``try_pull`` read the queue only, so a call kept
    for another operation never came out of them (try_pull said no event with two
    held), and came after later events. They give the kept calls first, oldest first
    (channel order), counted as delivered when given."""
    channel, _ = factory.create_typed_channel([], [])
    try:
        proxy, pull = typed_supplier(channel)
        _, coffee = typed_consumer(channel)
        coffee.drinking_coffee("first", 1)
        coffee.drinking_coffee("second", 2)
        coffee.cancel_coffee("third")
        settle(channel)
        assert pull.try_cancel_coffee() == (True, "third")  # first and second kept

        def names(value: Any) -> list[Any]:
            return [p.value.value() for p in value.value()][1:]

        value, found = proxy.try_pull()
        assert found and names(value) == ["first", 1]
        assert names(proxy.pull()) == ["second", 2]  # a blocking pull: kept, no wait
        assert proxy.try_pull()[1] is False and proxy.kept_calls == 0
    finally:
        channel.destroy()


def test_max_events_per_consumer_bounds_the_kept_calls(
        factory: TypedEventChannelFactory) -> None:
    """Review 107: kept calls had left the queue, so MaxEventsPerConsumer did not weigh
    them: 50 were kept with a limit of 5. They are bounded by it too (on their own),
    the oldest discarded first and counted as discarded."""
    channel, _ = factory.create_typed_channel([], [])
    try:
        proxy, pull = typed_supplier(channel)
        proxy.set_qos([N.Property("MaxEventsPerConsumer", CORBA.Any(CORBA.TC_long, 5))])
        _, coffee = typed_consumer(channel)
        for round_no in range(5):  # five events a round: the queue itself keeps them
            for n in range(4):
                coffee.drinking_coffee(f"r{round_no}i{n}", n)
            coffee.cancel_coffee(f"c{round_no}")
            settle(channel)
            assert pull.try_cancel_coffee() == (True, f"c{round_no}")
        assert proxy.kept_calls == 5
        given = []
        while (call := pull.try_drinking_coffee())[0]:
            given.append(call[1])
        assert given == ["r3i3", "r4i0", "r4i1", "r4i2", "r4i3"]  # the newest five
        assert proxy._queue.discarded == 15
    finally:
        channel.destroy()
