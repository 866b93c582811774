"""Events omniORBpy 4.3.3 cannot marshal, received from a peer (docs/orb.md).

A C++ supplier may send an unsigned long long >= 2**63 in a sequence; the
server's ORB unmarshals it (``tests.corba.peer_cdr`` builds the same value, as
no omniORBpy client can send it), and pushes it here through the server's
reference. omniORBpy would send each such element to a consumer as 2**64 - 1:
silently when an Any follows it in the event, else with a SystemError after
the call went out, which the channel took for the consumer's failure (retried,
the consumer given the garbled event again, then disconnected). Such an event
is now not given to a consumer reached through the ORB, pushed or pulled,
counted ``unsendable``; the consumer keeps its proxy and gets what follows.
"""

from __future__ import annotations

from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import TimeBase

from cosnotify.channel.counters import proxy_counts
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.ops.stats import stats
from cosnotify.tools.ls import format_tree
from tests.channel.conftest import StructuredPushConsumer, number, structured, structured_supplier
from tests.corba.peer_cdr import BIG, received_ulonglongs
from tests.ops.test_metrics import labels, scrape
from tests.peers.harness import Peer
from tests.server.test_remote import (
    AnyConsumer,
    SequenceConsumer,
    StructuredConsumer,
    push_entry,
)

#: Quick retries, so a consumer wrongly blamed would be given up on at once.
QUICK_RETRIES = [N.Property("Retries", CORBA.Any(CORBA.TC_long, 1)),
                 N.Property("RetryInterval", CORBA.Any(TimeBase._tc_TimeT, 10_000))]


def poisoned(n: int, where: str = "fields") -> Any:
    """Event ``n`` holding the peer's big values in its filterable data (an Any follows
    it: omniORBpy garbles it silently) or in its body (last: omniORBpy raises)."""
    if where == "fields":
        return structured(fields={"n": n, "big": received_ulonglongs()})
    event = structured(fields={"n": n})
    event.remainder_of_body = received_ulonglongs()
    return event


@pytest.fixture
def made(remote_factory: Any) -> tuple[Any, int]:
    """A channel of the in-process server, and its id."""
    return tuple(remote_factory.create_channel([], []))  # type: ignore[return-value]


def counters(server: Any, channel_id: int, proxy_id: int) -> dict[str, int]:
    """The counters of a consumer proxy of the default admin, read in the core."""
    core = server.factory.get_event_channel(channel_id)
    return proxy_counts(core._get_default_consumer_admin().get_proxy_supplier(proxy_id))


class TestPushedToARemoteConsumer:
    def test_structured(self, peer: Peer, server: Any, made: tuple[Any, int]) -> None:
        """Neither placement reaches the consumer; the event after them does, and the
        consumer is not blamed (no failure, no retry, no disconnect)."""
        consumer = StructuredConsumer()
        remote_channel, channel_id = made
        admin = remote_channel._get_default_consumer_admin()
        proxy, proxy_id = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        proxy = proxy._narrow(CA.StructuredProxyPushSupplier)
        proxy.set_qos(QUICK_RETRIES)
        proxy.connect_structured_push_consumer(peer.remote(consumer))
        entry = push_entry(remote_channel)
        entry.push_structured_event(poisoned(0, "fields"))
        entry.push_structured_event(poisoned(1, "body"))
        entry.push_structured_event(structured(fields={"n": 2}))
        assert consumer.wait_for(1)
        assert server.factory.service.dispatcher.wait_idle()
        assert [number(e) for e in consumer.items] == [2]
        assert proxy_id in admin._get_push_suppliers()
        counts = counters(server, channel_id, proxy_id)
        assert (counts["unsendable"], counts["failed"], counts["delivered"]) == (2, 0, 1)

    def test_any(self, peer: Peer, server: Any, made: tuple[Any, int]) -> None:
        """An Any event holding the values itself (omniORBpy raised SystemError after
        the call: the channel retried and disconnected the consumer)."""
        consumer = AnyConsumer()
        remote_channel, channel_id = made
        admin = remote_channel._get_default_consumer_admin()
        proxy, proxy_id = admin.obtain_notification_push_supplier(CA.ANY_EVENT)
        proxy = proxy._narrow(CA.ProxyPushSupplier)
        proxy.set_qos(QUICK_RETRIES)
        proxy.connect_any_push_consumer(peer.remote(consumer))
        entry = push_entry(remote_channel, CA.ANY_EVENT)
        entry.push(received_ulonglongs())
        entry.push(CORBA.Any(CORBA.TC_long, 7))
        assert consumer.wait_for(1)
        assert server.factory.service.dispatcher.wait_idle()
        assert [item.value() for item in consumer.items] == [7]
        assert proxy_id in admin._get_push_suppliers()
        counts = counters(server, channel_id, proxy_id)
        assert (counts["unsendable"], counts["failed"]) == (1, 0)

    def test_seen_in_ls_and_metrics(self, peer: Peer, server: Any,
                                    made: tuple[Any, int]) -> None:
        """`cosnotify ls` says how many were not sendable; a scrape counts them as
        discarded for the reason "unmarshallable"."""
        remote_channel, channel_id = made
        consumer = AnyConsumer()
        admin = remote_channel._get_default_consumer_admin()
        proxy, proxy_id = admin.obtain_notification_push_supplier(CA.ANY_EVENT)
        proxy._narrow(CA.ProxyPushSupplier).connect_any_push_consumer(peer.remote(consumer))
        entry = push_entry(remote_channel, CA.ANY_EVENT)
        entry.push(received_ulonglongs())
        entry.push(CORBA.Any(CORBA.TC_long, 7))
        assert consumer.wait_for(1)
        assert server.factory.service.dispatcher.wait_idle()
        lines = list(format_tree(stats(server.factory, [channel_id])))
        assert any("failed 0, not sendable 1" in line for line in lines)
        got = scrape(server.factory)
        assert got[("cosnotify_supplier_discarded_total",
                    labels(str(channel_id), "0", str(proxy_id), reason="unmarshallable"))] == 1

    def test_sequence(self, peer: Peer, server: Any, made: tuple[Any, int]) -> None:
        """A batch goes without the event; the others of the batch arrive."""
        consumer = SequenceConsumer()
        remote_channel, channel_id = made
        admin = remote_channel._get_default_consumer_admin()
        proxy, proxy_id = admin.obtain_notification_push_supplier(CA.SEQUENCE_EVENT)
        proxy = proxy._narrow(CA.SequenceProxyPushSupplier)
        proxy.set_qos([*QUICK_RETRIES,
                       N.Property("MaximumBatchSize", CORBA.Any(CORBA.TC_long, 3))])
        proxy.connect_sequence_push_consumer(peer.remote(consumer))
        entry = push_entry(remote_channel, CA.SEQUENCE_EVENT)
        entry.push_structured_events([structured(fields={"n": 0}), poisoned(1),
                                      structured(fields={"n": 2})])
        entry.push_structured_events([structured(fields={"n": n}) for n in (3, 4, 5)])
        assert consumer.wait_for(5)
        assert server.factory.service.dispatcher.wait_idle()
        assert [number(e) for e in consumer.items] == [0, 2, 3, 4, 5]
        counts = counters(server, channel_id, proxy_id)
        assert (counts["unsendable"], counts["failed"]) == (1, 0)


class TestPulledByARemoteConsumer:
    """The consumer pulls through a peer process, so the server marshals the reply."""

    def relayed(self, peer: Peer, proxy: Any, interface: Any) -> Any:
        return peer.control.relay(proxy, interface._NP_RepositoryId)._narrow(interface)

    def test_structured(self, peer: Peer, server: Any, made: tuple[Any, int]) -> None:
        """pull and try_pull give the events after them, as if they were not queued."""
        remote_channel, channel_id = made
        admin = remote_channel._get_default_consumer_admin()
        proxy, proxy_id = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy = proxy._narrow(CA.StructuredProxyPullSupplier)
        proxy.connect_structured_pull_consumer(None)
        pull = self.relayed(peer, proxy, CA.StructuredProxyPullSupplier)
        entry = push_entry(remote_channel)
        for event in (poisoned(0), poisoned(1, "body"), structured(fields={"n": 2}),
                      poisoned(3), structured(fields={"n": 4})):
            entry.push_structured_event(event)
        assert number(pull.pull_structured_event()) == 2
        event, has_event = pull.try_pull_structured_event()
        assert has_event and number(event) == 4
        _, has_event = pull.try_pull_structured_event()
        assert not has_event
        counts = counters(server, channel_id, proxy_id)
        assert (counts["unsendable"], counts["delivered"], counts["depth"]) == (3, 2, 0)

    def test_any_and_sequence(self, peer: Peer, server: Any, made: tuple[Any, int]) -> None:
        """An Any pull and a sequence pull leave them out too."""
        remote_channel, channel_id = made
        admin = remote_channel._get_default_consumer_admin()
        anys, any_id = admin.obtain_notification_pull_supplier(CA.ANY_EVENT)
        anys = anys._narrow(CA.ProxyPullSupplier)
        anys.connect_any_pull_consumer(None)
        batches, batch_id = admin.obtain_notification_pull_supplier(CA.SEQUENCE_EVENT)
        batches = batches._narrow(CA.SequenceProxyPullSupplier)
        batches.connect_sequence_pull_consumer(None)
        batches.set_qos([N.Property("MaximumBatchSize", CORBA.Any(CORBA.TC_long, 10))])
        entry = push_entry(remote_channel, CA.ANY_EVENT)
        entry.push(received_ulonglongs())
        entry.push(CORBA.Any(CORBA.TC_long, 7))
        assert self.relayed(peer, anys, CA.ProxyPullSupplier).pull().value() == 7
        pulled, has_events = self.relayed(
            peer, batches, CA.SequenceProxyPullSupplier).try_pull_structured_events(10)
        assert has_events and [e.remainder_of_body.value() for e in pulled] == [7]
        assert counters(server, channel_id, any_id)["unsendable"] == 1
        assert counters(server, channel_id, batch_id)["unsendable"] == 1


def test_an_in_process_consumer_gets_it_intact(omniorb: Any) -> None:
    """Nothing is marshalled for a consumer in the process: it gets the values as sent."""
    factory = EventChannelFactory()
    try:
        channel, _ = factory.create_channel([], [])
        consumer = StructuredPushConsumer()
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(consumer)
        structured_supplier(channel).push_structured_event(poisoned(0))
        assert consumer.wait_for(1)
        fields = {p.name: p.value.value() for p in consumer.received[0].filterable_data}
        assert fields["big"] == BIG
        assert proxy_counts(proxy)["unsendable"] == 0
    finally:
        factory.close()
