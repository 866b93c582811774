"""The Prometheus collector over ``cosnotify.stats``: families, labels and the cap."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

import CosNotifyChannelAdmin as CA

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.ops.metrics import StatsCollector
from tests.channel.conftest import structured, structured_supplier


@pytest.fixture
def factory() -> Iterator[EventChannelFactory]:
    made = EventChannelFactory(clock=ManualClock())
    yield made
    made.close(wait=False)


def scrape(factory: Any, max_proxies: int = 200) -> dict[tuple[str, tuple[Any, ...]], float]:
    """Samples by (name, sorted labels), through the text format and its parser."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StatsCollector(factory, max_proxies))
    text = generate_latest(registry).decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def pull_proxies(channel: Any, count: int) -> list[Any]:
    made = []
    for _ in range(count):
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        made.append(proxy)
    return made


def labels(channel: str, admin: str, proxy: str, **more: str) -> tuple[Any, ...]:
    return tuple(sorted({"channel": channel, "admin": admin, "proxy": proxy, **more}.items()))


class TestCollector:
    """What a scrape shows after events went through."""

    def test_channel_and_proxy_counters(self, factory: Any) -> None:
        """Three events in, one pulled: the counters and gauges say so."""
        channel = factory.create_channel([], [])[0]
        [proxy] = pull_proxies(channel, 1)
        supplier = structured_supplier(channel)
        for i in range(3):
            supplier.push_structured_event(structured(name=f"e{i}"))
        assert proxy.try_pull_structured_event()[1]
        got = scrape(factory)
        assert got[("cosnotify_channel_events_in_total", (("channel", "0"),))] == 3
        assert got[("cosnotify_supplier_queued_total", labels("0", "0", "0"))] == 3
        assert got[("cosnotify_supplier_delivered_total", labels("0", "0", "0"))] == 1
        assert got[("cosnotify_supplier_queue_depth", labels("0", "0", "0"))] == 2
        assert got[("cosnotify_consumer_received_total", labels("0", "0", "0"))] == 3
        assert got[("cosnotify_supplier_discarded_total",
                    labels("0", "0", "0", reason="max_events_per_consumer"))] == 0

    def test_proxies_past_the_cap_are_summed_as_other(self, factory: Any) -> None:
        """With a cap of 2, the deepest queues keep their series; the rest are "other"."""
        channel = factory.create_channel([], [])[0]
        deep = pull_proxies(channel, 4)
        supplier = structured_supplier(channel)
        supplier.push_structured_event(structured(name="a"))
        for proxy in deep[:2]:  # proxies 0 and 1 take the event; 2 and 3 keep it
            assert proxy.try_pull_structured_event()[1]
        got = scrape(factory, max_proxies=2)
        depths = {dict(key)["proxy"]: value for (name, key), value in got.items()
                  if name == "cosnotify_supplier_queue_depth"}
        assert depths == {"2": 1, "3": 1, "other": 0}
        assert got[("cosnotify_supplier_queued_total", labels("other", "other", "other"))] == 2
        # The cap is over both families: no room is left for the proxy consumer.
        assert got[("cosnotify_consumer_received_total",
                    labels("other", "other", "other"))] == 1


def test_channel_failures_and_discards_outlive_their_proxies(factory: Any) -> None:
    """A consumer the channel gave up on leaves the proxy families, but its failures stay
    in the channel's counter (a counter never goes down while its channel lives)."""
    from omniORB import CORBA

    import CosNotification as N

    from tests.ops.test_stats import FailingConsumer

    channel = factory.create_channel([], [])[0]
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
        CA.STRUCTURED_EVENT)
    proxy.set_qos([N.Property("Retries", CORBA.Any(CORBA.TC_long, 0))])
    consumer = FailingConsumer()
    proxy.connect_structured_push_consumer(consumer)
    structured_supplier(channel).push_structured_event(structured())
    assert consumer.wait_for(1)
    assert factory.service.dispatcher.wait_idle(10.0)
    samples = scrape(factory)
    assert samples[("cosnotify_channel_failed_total", (("channel", "0"),))] == 1.0
    assert samples[("cosnotify_channel_discarded_total", (("channel", "0"),))] == 0.0
    assert not [key for key in samples if key[0] == "cosnotify_supplier_failed_total"]
