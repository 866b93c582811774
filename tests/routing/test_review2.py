"""Reproducers from the second review (after 6187400): slow lane, routing=auto,
the per-event answer cache, lock order. Each test states the expected behaviour."""

from __future__ import annotations

from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter as F

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.service import ServiceConfig
from cosnotify.filter.factory import FilterFactory
from tests.channel.conftest import StructuredPushConsumer, structured, structured_supplier

WAIT = 5.0


def prop(name: str, value: Any, tc: Any) -> Any:
    return N.Property(name, CORBA.Any(tc, value))


class DisconnectingSlowConsumer(StructuredPushConsumer):
    """Its first push is slow (50 ms on the manual clock) and, meanwhile, the
    consumer disconnects (as a slow client that gives up would)."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__()
        self.clock = clock
        self.proxy: Any = None

    def push_structured_event(self, event: Any) -> None:
        if not self.received:
            self.clock.advance(0.05)
            self.proxy.disconnect_structured_push_supplier()
        super().push_structured_event(event)


def test_slowed_batch_of_a_disconnected_consumer_is_released() -> None:
    """A consumer that disconnects during a slow push: the rest of its batch
    must leave the channel's MaxQueueLength count like every other queued copy.
    Observed: _deliver's _Slowed branch puts the rest back in _retry of the
    torn-down proxy (no connected/destroyed check as _stopped has), so the
    copies are never released: the count stays up and RejectNewEvents refuses
    new events with no consumer holding anything."""
    clock = ManualClock()
    factory = EventChannelFactory(ServiceConfig(slow_push=0.01), clock=clock)
    try:
        channel, _ = factory.create_channel(
            [], [prop("MaxQueueLength", 3, CORBA.TC_long),
                 prop("RejectNewEvents", True, CORBA.TC_boolean)])
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        consumer = DisconnectingSlowConsumer(clock)
        consumer.proxy = proxy
        proxy.connect_structured_push_consumer(consumer)
        proxy.suspend_connection()
        supplier = structured_supplier(channel)
        for n in range(3):
            supplier.push_structured_event(structured(fields={"n": n}))
        proxy.resume_connection()  # one batch of 3: the first push is slow
        assert consumer.wait_for(1)
        assert factory._service.dispatcher.wait_idle()
        assert proxy._destroyed
        leaked = len(proxy._retry)
        try:
            for n in (8, 9):  # nobody is connected: nothing is queued, nothing counts
                supplier.push_structured_event(structured(fields={"n": n}))
            refused = False
        except CORBA.IMP_LIMIT:
            refused = True
        assert (leaked, channel._account.count, refused) == (0, 0, False)
    finally:
        factory.close()


def _pull_proxy(admin: Any) -> Any:
    proxy, _ = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
    proxy.connect_structured_pull_consumer(None)
    return proxy


def _drain(proxy: Any) -> int:
    got = 0
    while proxy.try_pull_structured_event()[1]:
        got += 1
    return got


def _curtime_filter(clock_value: int) -> Any:
    flt = FilterFactory(clock=lambda: clock_value).create_filter("EXTENDED_TCL")
    flt.add_constraints([F.ConstraintExp([], "$curtime.time > 1000")])
    return flt


@pytest.mark.parametrize("routing", ["scan", "index"])
def test_equal_text_from_factories_with_different_clocks(routing: str) -> None:
    """Two filters with the same text, made by FilterFactories whose clocks differ
    ($curtime): one matches, one does not. Observed with the index: Entry.signature
    (grammar, text, types) ignores the CompileContext, so the answer of the first
    evaluated is reused for the other (both or neither receive the event)."""
    factory = EventChannelFactory(ServiceConfig(routing=routing))
    try:
        channel, _ = factory.create_channel([], [])
        admin = channel._get_default_consumer_admin()
        early, late = _pull_proxy(admin), _pull_proxy(admin)
        early.add_filter(_curtime_filter(10))      # $curtime 10: not > 1000
        late.add_filter(_curtime_filter(10**9))    # $curtime 1e9: > 1000
        structured_supplier(channel).push_structured_event(structured(fields={"n": 1}))
        assert (_drain(early), _drain(late)) == (0, 1)
    finally:
        factory.close()


def test_filter_change_on_an_admin_being_destroyed_breaks_routing() -> None:
    """remove_filter on a (non-default, AND) admin while destroy() is tearing its
    proxies down: refresh_admin sees admin._destroyed and pops the admin's routes
    while a FILTERED proxy of it is still placed; Router.receivers then does
    ``admins[admin]`` -> KeyError, so the supplier's push fails and the event is
    lost for every consumer of the channel (a bystander on another admin too)."""
    factory = EventChannelFactory(ServiceConfig(routing="index"))
    try:
        channel, _ = factory.create_channel([], [])
        ffactory = channel._get_default_filter_factory()

        def flt(text: str) -> Any:
            made = ffactory.create_filter("EXTENDED_TCL")
            made.add_constraints([F.ConstraintExp([], text)])
            return made

        bystander = _pull_proxy(channel._get_default_consumer_admin())
        admin, _ = channel.new_for_consumers(CA.AND_OP)
        admin_filter = admin.add_filter(flt("$n >= 0"))
        first, second = _pull_proxy(admin), _pull_proxy(admin)
        second.add_filter(flt("$n == 1"))
        supplier = structured_supplier(channel)
        errors: list[BaseException] = []
        real = first._destroy

        def destroy_first(*args: Any, **kwargs: Any) -> None:
            # Meanwhile (admin._destroyed already set), another client removes the
            # admin's filter and a supplier pushes.
            admin.remove_filter(admin_filter)
            try:
                supplier.push_structured_event(structured(fields={"n": 1}))
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)
            real(*args, **kwargs)

        first._destroy = destroy_first
        admin.destroy()
        assert errors == []
        assert _drain(bystander) == 1
    finally:
        factory.close()
