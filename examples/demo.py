"""The main job, end to end: supplier -> channel (filtered) -> consumer -> (Spark).

Run with ``make demo``. Each step prints what actually happened; a step whose
part of cosnotify is not available yet says so and is skipped, so nothing
printed here is invented.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
from typing import Any

import cosnotify
from cosnotify.orb import CORBA
from cosnotify.stubs import CosNotification as N
from cosnotify.stubs import CosNotifyChannelAdmin as CA
from cosnotify.stubs import CosNotifyFilter

SEVERITIES = ["critical", "major", "minor", "warning", "cleared"]


def alarm(i: int) -> Any:
    """A TMF-814-style alarm as a StructuredEvent."""
    severity = SEVERITIES[i % len(SEVERITIES)]
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("Telecom", "CommunicationsAlarm"),
                                         f"alarm-{i}"),
                      [N.Property("Priority", CORBA.Any(CORBA.TC_short, 4 - i % 5))]),
        [N.Property("severity", CORBA.Any(CORBA.TC_string, severity)),
         N.Property("ne", CORBA.Any(CORBA.TC_string, f"NE-{i % 7}")),
         N.Property("sequence", CORBA.Any(CORBA.TC_long, i))],
        CORBA.Any(CORBA.TC_string, f"probable cause {i % 3}"))


class Consumer:
    """A StructuredPushConsumer that counts what it receives."""

    def __init__(self, expected: int) -> None:
        self.events: list[Any] = []
        self.done = threading.Event()
        self.expected = expected

    def push_structured_event(self, event: Any) -> None:
        self.events.append(event)
        if len(self.events) >= self.expected:
            self.done.set()

    def offer_change(self, added: Any, removed: Any) -> None:
        pass

    def disconnect_structured_push_consumer(self) -> None:
        pass


def step(title: str) -> None:
    print(f"\n== {title}")


def main() -> int:
    total = 1000
    step("1. channel server on 127.0.0.1 with embedded naming")
    if importlib.util.find_spec("cosnotify.server") is None:
        print("skipped: cosnotify.server is not built yet; using the in-process channel")
    factory = cosnotify.EventChannelFactory()
    channel, channel_id = factory.create_channel([], [])
    print(f"created channel {channel_id}")

    step("2. consumer with an EXTENDED_TCL filter")
    constraint = "$severity == 'critical' or $severity == 'major'"
    expected = sum(1 for i in range(total) if SEVERITIES[i % 5] in ("critical", "major"))
    consumer = Consumer(expected)
    proxy, proxy_id = channel._get_default_consumer_admin().obtain_notification_push_supplier(
        CA.STRUCTURED_EVENT)
    try:
        ff = channel._get_default_filter_factory()
        flt = ff.create_filter("EXTENDED_TCL")
        flt.add_constraints([CosNotifyFilter.ConstraintExp(
            [N.EventType("Telecom", "CommunicationsAlarm")], constraint)])
        proxy.add_filter(flt)
        print(f"proxy supplier {proxy_id} filters with: {constraint}")
    except ImportError:
        expected = total
        consumer.expected = total
        print("skipped: cosnotify.filter's FilterFactory is not built yet; no filter attached")
    proxy.connect_structured_push_consumer(consumer)

    step("3. supplier pushes alarms")
    entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    entry.connect_structured_push_supplier(None)
    started = time.perf_counter()
    for i in range(total):
        entry.push_structured_event(alarm(i))
    print(f"pushed {total} events")

    step("4. delivery")
    if not consumer.done.wait(30):
        print(f"ERROR: consumer got {len(consumer.events)} of {expected} events")
        factory.close()
        return 1
    elapsed = time.perf_counter() - started
    counts: dict[str, int] = {}
    for event in consumer.events:
        severity = event.filterable_data[0].value.value()
        counts[severity] = counts.get(severity, 0) + 1
    print(f"consumer received {len(consumer.events)} events in {elapsed * 1000:.1f} ms: {counts}")

    step("5. Spark DataFrame")
    if importlib.util.find_spec("spark_bridge") is None:
        print("skipped: spark_bridge is not built yet")
    factory.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
