"""``cosnotify serve --metrics``: a Prometheus endpoint read over HTTP."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from omniORB import CORBA
from prometheus_client.parser import text_string_to_metric_families

import CosNotification as N
import CosNotifyChannelAdmin as CA

from tests.server.conftest import ServeProcess


@pytest.fixture
def metered(tmp_path: Path, omniorb: Any) -> Iterator[ServeProcess]:
    """A `cosnotify serve` child with metrics on a free loopback port."""
    made = ServeProcess(tmp_path, "--metrics", "127.0.0.1:0")
    yield made
    assert made.stop() == 0, "".join(made.log)


def metrics_url(served: ServeProcess) -> str:
    found = re.search(r"metrics (http://\S+/metrics)", "".join(served.log))
    assert found, "".join(served.log)
    return found.group(1)


def event(name: str) -> Any:
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("Telecom", "Alarm"), name), []), [],
        CORBA.Any(CORBA.TC_null, None))


class TestMetricsEndpoint:
    """The endpoint serves the service's counters in the text format."""

    def test_a_scrape_shows_the_events(self, omniorb: Any, metered: ServeProcess) -> None:
        """Three events pushed and one pulled over IIOP are in the next scrape."""
        factory = omniorb.string_to_object(metered.ior)._narrow(CA.EventChannelFactory)
        channel, channel_id = factory.create_channel([], [])
        puller = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)[0]._narrow(CA.StructuredProxyPullSupplier)
        puller.connect_structured_pull_consumer(None)
        pusher = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)[0]._narrow(CA.StructuredProxyPushConsumer)
        pusher.connect_structured_push_supplier(None)
        for i in range(3):
            pusher.push_structured_event(event(f"e{i}"))
        assert puller.try_pull_structured_event()[1]
        with urllib.request.urlopen(metrics_url(metered), timeout=10) as reply:
            text = reply.read().decode()
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                   for family in text_string_to_metric_families(text) for s in family.samples}
        ids = (("admin", "0"), ("channel", str(channel_id)), ("proxy", "0"))
        assert samples[("cosnotify_channel_events_in_total",
                        (("channel", str(channel_id)),))] == 3
        assert samples[("cosnotify_supplier_delivered_total", ids)] == 1
        assert samples[("cosnotify_supplier_queue_depth", ids)] == 2
        assert samples[("cosnotify_consumer_received_total", ids)] == 3
        channel.destroy()


class TestMetricsPortInUse:
    """A metrics port already taken stops the server from starting."""

    def test_the_server_exits_with_the_reason(self, tmp_path: Path) -> None:
        """Non-zero status and one line on stderr naming the metrics address."""
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            done = subprocess.run(
                [sys.executable, "-m", "cosnotify", "serve", "--endpoint", "127.0.0.1:0",
                 "--metrics", f"127.0.0.1:{port}"],
                check=False, capture_output=True, text=True, timeout=60)
        assert done.returncode != 0
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert f"metrics at 127.0.0.1:{port}" in lines[0]
        assert "in use" in lines[0]
