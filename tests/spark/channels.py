"""A channel of a test server, seen from the test process (tests/spark)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import omniORB  # noqa: F401 - before the COS stubs it puts on sys.path

import CosNotifyChannelAdmin as CA

from cosnotify.server import NotificationServer
from tests.spark.conftest import WAIT


class Channel:
    """A channel of the test server: its id, URLs and an in-process supplier."""

    def __init__(self, server: NotificationServer) -> None:
        self.server = server
        self.core, self.id = server.factory.create_channel([], [])
        self.url = server.factory_url  # with option channel_id
        self.ior = server.orb.object_to_string(server.servants.to_reference(self.core))
        entry, _ = self.core._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.SEQUENCE_EVENT)
        entry.connect_sequence_push_supplier(None)
        self.entry = entry
        self.changed = threading.Condition()
        admin = self.core._get_default_consumer_admin()
        hook = admin._connection_changed

        def connection_changed(proxy: Any) -> None:
            hook(proxy)
            with self.changed:
                self.changed.notify_all()

        admin._connection_changed = connection_changed

    def wait_for_pull_proxies(self, predicate: Callable[[list[int]], bool]) -> bool:
        """Wait until the connected pull proxies' ids satisfy ``predicate``."""
        with self.changed:
            return self.changed.wait_for(lambda: predicate(self.connected_pull_proxies()),
                                         WAIT)

    def connected_pull_proxies(self) -> list[int]:
        admin = self.core._get_default_consumer_admin()
        return [i for i in admin._get_pull_suppliers() if admin._lookup(i)._connected]

    def push(self, events: list[Any]) -> None:
        self.entry.push_structured_events(events)
        assert self.server.factory.service.dispatcher.wait_idle()

    def pull_proxies(self) -> list[int]:
        return list(self.core._get_default_consumer_admin()._get_pull_suppliers())

    def collector(self) -> Collector:
        """An in-process push consumer, to see what reaches the channel."""
        proxy, _ = self.core._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        collector = Collector()
        proxy.connect_structured_push_consumer(collector)
        return collector


class Collector:
    """A StructuredPushConsumer that records events under a condition."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.cond = threading.Condition()

    def push_structured_event(self, event: Any) -> None:
        with self.cond:
            self.events.append(event)
            self.cond.notify_all()

    def offer_change(self, added: Any, removed: Any) -> None:
        pass

    def disconnect_structured_push_consumer(self) -> None:
        pass

    def wait(self, count: int) -> list[Any]:
        """The first ``count`` events, once they arrived (all there are after WAIT)."""
        with self.cond:
            self.cond.wait_for(lambda: len(self.events) >= count, WAIT)
            return list(self.events)
