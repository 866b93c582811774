"""The service hosted in an ordinary omniORBpy application's own ORB (cosnotify.host)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from omniORB import CORBA

import CosNotifyChannelAdmin as CA

from cosnotify.server import hosted_server
from tests.channel.conftest import number, structured
from tests.peers.harness import Peer
from tests.server.test_remote import StructuredConsumer, push_entry

EXAMPLE = Path(__file__).parents[2] / "examples" / "python" / "hosted_service.py"


@pytest.fixture
def application() -> Iterator[str]:
    """examples/python/hosted_service.py running; yields the factory's IOR it printed."""
    process = subprocess.Popen([sys.executable, str(EXAMPLE)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdin is not None
    line = process.stdout.readline().split()
    try:
        assert line[0] == "factory" and line[1].startswith("IOR:")
        yield line[1]
    finally:
        process.stdin.close()
        assert process.wait(timeout=30) == 0


class TestHostedInAnApplication:
    def test_remote_client_uses_the_applications_channel(
            self, omniorb: Any, peer: Peer, application: str) -> None:
        """A remote client makes a channel in the application and gets events through it."""
        factory = omniorb.string_to_object(application)._narrow(CA.EventChannelFactory)
        channel, channel_id = factory.create_channel([], [])
        assert channel_id in factory.get_all_channels()
        consumer = StructuredConsumer()
        proxy = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)[0]._narrow(CA.StructuredProxyPushSupplier)
        proxy.connect_structured_push_consumer(peer.remote(consumer))
        entry = push_entry(channel)
        for n in range(3):
            entry.push_structured_event(structured(fields={"n": n}))
        assert consumer.wait_for(3)
        assert [number(e) for e in consumer.items] == [0, 1, 2]

    def test_host_in_this_process(self, omniorb: Any) -> None:
        """host() under this process's RootPOA returns a working factory reference."""
        import cosnotify

        poa = omniorb.resolve_initial_references("RootPOA")
        factory = cosnotify.host(poa)
        try:
            assert isinstance(factory, CA._objref_EventChannelFactory)
            channel, channel_id = factory.create_channel([], [])
            assert factory.get_event_channel(channel_id)._is_equivalent(channel)
        finally:
            hosted_server(factory).stop()
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            factory.get_all_channels()
