"""The service's timer thread (cosnotify/channel/clock.py, SystemClock).

Provenance: a supplier may put any StartTime in an event's header, and a
proxy any PacingInterval up to TimeBase::TimeT's range (section 2.5.5,
Table 2-4); the timers that follow must not stop the others. Review 66 found
a wait past ``threading.TIMEOUT_MAX`` raising OverflowError in the one timer
thread every channel of a factory shares.
"""

from __future__ import annotations

import threading
import time

from cosnotify.channel.clock import SystemClock

WAIT = 10.0


def test_a_timer_centuries_away_leaves_the_near_ones_firing() -> None:
    clock = SystemClock()
    try:
        far_fired = threading.Event()
        clock.call_at(time.time() + 2 * threading.TIMEOUT_MAX, far_fired.set)
        near = threading.Event()
        clock.call_later(0.01, near.set)
        assert near.wait(WAIT), "a near timer did not fire after a far one was set"
        later = threading.Event()
        clock.call_later(0.01, later.set)  # and the thread is still there for the next
        assert later.wait(WAIT)
        assert not far_fired.is_set()
    finally:
        clock.close()


def test_a_far_start_time_in_a_header_delays_only_its_event() -> None:
    """Through a channel: an event whose StartTime is centuries away waits; those pushed
    after it with a StartTime a moment away are delivered (section 2.5.5: StartTime)."""
    from omniORB import CORBA

    import CosNotification as N
    import CosNotifyChannelAdmin as CA
    import TimeBase

    from cosnotify.channel.clock import seconds_to_timet
    from cosnotify.channel.factory import EventChannelFactory

    class Sink:
        def __init__(self) -> None:
            self.got: list[str] = []
            self.arrived = threading.Event()

        def push_structured_event(self, event: object) -> None:
            self.got.append(event.header.fixed_header.event_name)  # type: ignore[attr-defined]
            self.arrived.set()

        def offer_change(self, added: object, removed: object) -> None:
            pass

        def disconnect_structured_push_consumer(self) -> None:
            pass

    def starting(name: str, at: float) -> object:
        utc = TimeBase.UtcT(min(seconds_to_timet(at), 2**64 - 1), 0, 0, 0)
        return N.StructuredEvent(
            N.EventHeader(N.FixedEventHeader(N.EventType("d", "t"), name),
                          [N.Property("StartTime", CORBA.Any(TimeBase._tc_UtcT, utc))]),
            [], CORBA.Any(CORBA.TC_null, None))

    with EventChannelFactory() as factory:
        channel, _ = factory.create_channel([], [])
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        sink = Sink()
        proxy.connect_structured_push_consumer(sink)
        supplier, _ = channel._get_default_supplier_admin() \
            .obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
        supplier.connect_structured_push_supplier(None)
        supplier.push_structured_event(starting("far", time.time() + 1e12))
        supplier.push_structured_event(starting("soon", time.time() + 0.05))
        assert sink.arrived.wait(WAIT)
        sink.arrived.clear()
        # By now the timer thread has looked at the far StartTime, whatever the order it
        # saw the two in: the next wake-up shows it is still there.
        supplier.push_structured_event(starting("later", time.time() + 0.05))
        assert sink.arrived.wait(WAIT)
        assert sink.got == ["soon", "later"]
