"""The supplier's side of Event Acknowledgment: numbered batches (docs/persistence.md,
"The supplier's side" and "The duplicate window").

A numbered batch (the supplier's DeliveryReliability Acknowledgment) refused
part-way is resumed from the refused event when sent again in the same
process (review 72); across a restart, and in the crash windows before its
number is written, a resend is taken whole: a duplicate, never a loss
(review 79, which undid review 78's move of the number). Time is a
ManualClock.
"""

from __future__ import annotations

from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.store import MemoryStore
from tests.channel.conftest import number, structured
from tests.durability.conftest import ACK_QOS, DURABLE_QOS, supplier_of


def _pull_all(proxy: Any) -> list[int]:
    got = []
    while True:
        event, ok = proxy.try_pull_structured_event()
        if not ok:
            return got
        got.append(number(event))


def _numbered_sequence_proxy(channel: Any) -> Any:
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.SEQUENCE_EVENT)
    proxy.set_qos(ACK_QOS[:1])
    proxy.connect_sequence_push_supplier(None)
    return proxy


SEQ_0 = [N.Property("SequenceNumber", CORBA.Any(CORBA.TC_long, 0))]


def test_a_numbered_batch_refused_part_way_is_resumed_not_retaken() -> None:
    """Review 72: a numbered batch refused at its third event (MaxQueueLength with
    RejectNewEvents: IMP_LIMIT) kept its first two, but not its number, so the
    supplier's resend was taken whole and the consumer got those two twice
    (docs/persistence.md: a numbered resend under Acknowledgment is not)."""
    with EventChannelFactory(clock=ManualClock(), store=MemoryStore()) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        channel.set_admin([N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 3)),
                           N.Property("RejectNewEvents", CORBA.Any(CORBA.TC_boolean, True))])
        out, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        out.connect_structured_pull_consumer(None)
        supplier_of(channel).push_structured_event(structured(fields={"n": 99}))
        proxy = _numbered_sequence_proxy(channel)
        batch = [structured(fields={"n": 0}, header=SEQ_0), structured(fields={"n": 1}),
                 structured(fields={"n": 2})]
        with pytest.raises(CORBA.IMP_LIMIT):
            proxy.push_structured_events(batch)
        got = _pull_all(out)
        assert got == [99, 0, 1]
        proxy.push_structured_events(batch)  # the resend (section 3.7.5.2)
        assert got + _pull_all(out) == [99, 0, 1, 2]
        proxy.push_structured_events(batch)  # once more: a duplicate now, dropped
        assert _pull_all(out) == []


def test_a_numbered_batch_the_store_refused_at_its_end_is_resumed_there() -> None:
    """The same with the store full at the batch's last persistent event, after a
    best-effort one: what came before it is kept, the refused one is not (nor kept
    in the channel's history as if it were), and the resend takes only it."""
    store = MemoryStore(max_events=2)
    with EventChannelFactory(clock=ManualClock(), store=store) as factory:
        channel, _ = factory.create_channel(DURABLE_QOS, [
            N.Property("RetainCount", CORBA.Any(CORBA.TC_long, 100))])
        out, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        out.connect_structured_pull_consumer(None)
        supplier_of(channel).push_structured_event(structured(fields={"n": 99}))
        proxy = _numbered_sequence_proxy(channel)
        best = [N.Property("EventReliability", CORBA.Any(CORBA.TC_short, N.BestEffort))]
        batch = [structured(fields={"n": 0}, header=SEQ_0),
                 structured(fields={"n": 1}, header=best), structured(fields={"n": 2})]
        with pytest.raises(CORBA.NO_RESOURCES):
            proxy.push_structured_events(batch)
        channel._retention.flush()
        kept = [number(e.event) for e in channel.query(None) or []]
        got = _pull_all(out)
        assert got == [99, 0, 1] and sorted(kept) == [0, 1, 99]
        proxy.push_structured_events(batch)
        assert got + _pull_all(out) == [99, 0, 1, 2]


class _Crash(BaseException):
    """The process dies here."""


BEST_EFFORT = [N.Property("EventReliability", CORBA.Any(CORBA.TC_short, N.BestEffort))]


def _numbered_channel(store: MemoryStore, clock: ManualClock,
                      admin: list[Any] | None = None) -> tuple[Any, Any, Any, Any]:
    """A durable channel with a pull consumer and a numbered sequence supplier proxy:
    (factory, channel id, consumer proxy id, supplier proxy)."""
    factory = EventChannelFactory(clock=clock, store=store)
    channel, channel_id = factory.create_channel(DURABLE_QOS, admin or [])
    out, out_id = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
        CA.STRUCTURED_EVENT)
    out.connect_structured_pull_consumer(None)
    return factory, channel_id, out_id, _numbered_sequence_proxy(channel)


def _resent_after_restart(store: MemoryStore, clock: ManualClock, channel_id: int,
                          out_id: int, proxy_id: int, batch: list[Any]) -> list[int]:
    """Restart on ``store``, push ``batch`` again on the supplier proxy, and what the
    consumer then pulls."""
    with EventChannelFactory(clock=clock, store=store) as factory:
        channel = factory.get_event_channel(channel_id)
        channel._get_default_supplier_admin().get_proxy_consumer(proxy_id) \
            .push_structured_events(batch)
        return _pull_all(channel._get_default_consumer_admin().get_proxy_supplier(out_id))


@pytest.mark.parametrize("last", ["best-effort", "filtered out", "persistent"])
def test_a_crash_before_a_batch_number_is_written_gives_a_duplicate_not_a_loss(
        last: str) -> None:
    """The number of a batch ending with an event the event log does not keep (best
    effort, or filtered out by the proxy) is written alone after the batch's commit
    (docs/persistence.md, the supplier's side): a crash in between, and the resend
    after the restart is taken whole -- its kept events twice, none lost. A batch
    ending with a kept event has its number in that commit: nothing twice."""
    import CosNotifyFilter as F

    clock, store = ManualClock(), MemoryStore()
    factory, channel_id, out_id, proxy = _numbered_channel(store, clock)
    if last == "filtered out":
        only = factory.get_event_channel(channel_id)._get_default_filter_factory() \
            .create_filter("EXTENDED_TCL")
        only.add_constraints([F.ConstraintExp([], "$n != 9")])
        proxy.add_filter(only)
    tail = {"best-effort": structured(fields={"n": 9}, header=BEST_EFFORT),
            "filtered out": structured(fields={"n": 9}),
            "persistent": structured(fields={"n": 2})}[last]
    batch = [structured(fields={"n": 0}, header=SEQ_0), structured(fields={"n": 1}), tail]
    raise_value = store.raise_value

    def dying(name: str, at_least: int) -> None:
        if name.startswith("ack/") and name.count("/") >= 3:
            raise _Crash(name)  # the number written alone: the process dies first
        raise_value(name, at_least)

    store.raise_value = dying  # type: ignore[method-assign]
    try:
        proxy.push_structured_events(batch)
    except _Crash:
        pass
    store.raise_value = raise_value  # type: ignore[method-assign]
    proxy_id = proxy._id
    factory.close()
    got = _resent_after_restart(store, clock, channel_id, out_id, proxy_id, batch)
    assert got.count(0) == got.count(1) == (1 if last == "persistent" else 2)


def test_a_refused_best_effort_tail_is_taken_after_a_restart() -> None:
    """Review 79: with the number on the batch's last kept event (review 78's change,
    undone), a batch refused at its best-effort tail had its number stored as seen; the
    supplier's resend after a restart was dropped and the tail lost. Now the resend is
    taken whole (its kept part twice: duplicate case 3), the tail delivered."""
    clock, store = ManualClock(), MemoryStore()
    factory, channel_id, out_id, proxy = _numbered_channel(store, clock, [
        N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 2)),
        N.Property("RejectNewEvents", CORBA.Any(CORBA.TC_boolean, True))])
    batch = [structured(fields={"n": 0}, header=SEQ_0), structured(fields={"n": 1}),
             structured(fields={"n": 2}, header=BEST_EFFORT)]
    with pytest.raises(CORBA.IMP_LIMIT):
        proxy.push_structured_events(batch)
    channel = factory.get_event_channel(channel_id)
    first = _pull_all(channel._get_default_consumer_admin().get_proxy_supplier(out_id))
    assert first == [0, 1]
    proxy_id = proxy._id
    factory.close()
    with EventChannelFactory(clock=clock, store=store) as factory:
        channel = factory.get_event_channel(channel_id)
        channel.set_admin([N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 10))])
    got = _resent_after_restart(store, clock, channel_id, out_id, proxy_id, batch)
    assert 2 in got
