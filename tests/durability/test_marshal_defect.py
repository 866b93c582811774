"""Stored and retained events omniORBpy 4.3.3 cannot marshal (docs/orb.md).

An unsigned long long >= 2**63 in a sequence (as a C++ peer sends it) would be
encoded for the store as 2**64 - 1, without an error when an Any follows it in
the event: a persistent event came back garbled after a restart, and a
retained one was kept garbled in the history. A persistent channel now refuses
such an event before routing it, with BAD_PARAM (COMPLETED_NO): nothing of it is
queued or stored. A retained one is delivered and left out of the history,
counted (codec.encode_event refuses the garbled encoding).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from omniORB import CORBA

import CosNotifyChannelAdmin as CA

from cosnotify.channel.factory import EventChannelFactory
from cosnotify.store import MemoryStore
from tests.channel.conftest import number, structured
from tests.corba.peer_cdr import received_ulonglongs
from tests.durability.conftest import DURABLE_QOS, StructuredConsumer, reference, supplier_of
from tests.history.test_channel import retain


def poisoned(n: int) -> Any:
    """Event ``n`` holding a peer's big values, an Any after them (garbled silently)."""
    return structured(fields={"big": received_ulonglongs(), "n": n})


def refused(push: Callable[[], Any]) -> None:
    with pytest.raises(CORBA.BAD_PARAM) as info:
        push()
    assert info.value.completed == CORBA.COMPLETED_NO
    assert "2**63" in str(info.value)


class TestPersistentEvents:
    def test_refused_and_not_stored(self, reopen: Callable[[], EventChannelFactory],
                                    omniorb: Any) -> None:
        """The supplier is told; after a restart only the events accepted come back."""
        factory = reopen()
        channel, channel_id = factory.create_channel(DURABLE_QOS, [])
        consumer = StructuredConsumer()
        proxy, proxy_id = channel._get_default_consumer_admin(
        ).obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(reference(omniorb, consumer))
        proxy.suspend_connection()
        supplier = supplier_of(channel)
        supplier.push_structured_event(structured(fields={"n": 0}))
        refused(lambda: supplier.push_structured_event(poisoned(1)))
        supplier.push_structured_event(structured(fields={"n": 2}))

        factory = reopen()
        proxy = factory.get_event_channel(channel_id)._get_default_consumer_admin(
        ).get_proxy_supplier(proxy_id)
        proxy.resume_connection()
        assert consumer.wait_for(2)
        assert factory.service.dispatcher.wait_idle()
        with consumer.cond:
            assert [number(e) for e in consumer.items] == [0, 2]

    def test_a_batch_keeps_what_came_before(self, omniorb: Any) -> None:
        """In a sequence, the events before it are accepted, as with any refused event;
        those after it are not taken."""
        with EventChannelFactory(store=MemoryStore()) as factory:
            channel, _ = factory.create_channel(DURABLE_QOS, [])
            consumer = StructuredConsumer()
            proxy, _ = channel._get_default_consumer_admin(
            ).obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
            proxy.connect_structured_push_consumer(reference(omniorb, consumer))
            entry, _ = channel._get_default_supplier_admin(
            ).obtain_notification_push_consumer(CA.SEQUENCE_EVENT)
            entry.connect_sequence_push_supplier(None)
            refused(lambda: entry.push_structured_events(
                [structured(fields={"n": 0}), poisoned(1), structured(fields={"n": 2})]))
            assert consumer.wait_for(1)
            assert factory.service.dispatcher.wait_idle()
            with consumer.cond:
                assert [number(e) for e in consumer.items] == [0]


class TestRetainedEvents:
    def test_delivered_and_left_out_of_the_history(self, omniorb: Any) -> None:
        """A retained channel takes the event (its in-process consumer gets it intact)
        but keeps nothing garbled: the history leaves it out, counted in ``dropped``.
        The check runs on the encoding (a body holding 2**64 - 1), not at the door."""
        with EventChannelFactory(store=MemoryStore()) as factory:
            channel, _ = factory.create_channel([], retain(count=10))
            consumer = StructuredConsumer()
            proxy, _ = channel._get_default_consumer_admin(
            ).obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
            proxy.connect_structured_push_consumer(consumer)
            supplier = supplier_of(channel)
            supplier.push_structured_event(poisoned(0))
            supplier.push_structured_event(structured(fields={"n": 1}))
            assert consumer.wait_for(2)
            with consumer.cond:
                assert [number(e) for e in consumer.items] == [0, 1]
            channel._retention.flush()
            assert [number(found.event) for found in channel.query()] == [1]
            assert channel._retention.dropped == 1


class TestEncoding:
    def test_a_garbled_encoding_is_refused(self, omniorb: Any) -> None:
        """codec.encode_event never returns what omniORBpy garbled: BAD_PARAM instead."""
        from cosnotify.channel import codec
        from cosnotify.channel.event import from_structured

        with pytest.raises(CORBA.BAD_PARAM) as info:
            codec.encode_event(from_structured(poisoned(0), 0.0))
        assert "2**63" in str(info.value)

    def test_all_ones_alone_is_no_defect(self, omniorb: Any) -> None:
        """Eight 0xff bytes from a value that is really 2**64 - 1 (a scalar) encode."""
        from cosnotify.channel import codec
        from cosnotify.channel.event import from_structured

        event = from_structured(structured(fields={"top": CORBA.Any(CORBA.TC_ulonglong,
                                                                    2**64 - 1)}), 0.0)
        assert b"\xff" * 8 in codec.encode_event(event)
