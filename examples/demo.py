"""The main job, end to end: supplier -> channel (filtered) -> consumer -> (Spark).

Run with ``make demo``. Each step prints what actually happened; a step whose
part of cosnotify is not available yet says so and is skipped, so nothing
printed here is invented.
"""

from __future__ import annotations

import importlib.util
import os
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


def spark_session() -> Any:
    """A local SparkSession on loopback, using this interpreter for the workers."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    return (SparkSession.builder.master("local[2]").appName("cosnotify-demo")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.session.timeZone", "UTC").getOrCreate())


def main() -> int:
    total = 1000
    step("1. channel server on 127.0.0.1 with embedded naming")
    if importlib.util.find_spec("cosnotify.server") is None:
        print("skipped: cosnotify.server is not built yet; using the in-process channel")
    factory = cosnotify.EventChannelFactory()
    channel, channel_id = factory.create_channel([], [])
    print(f"created channel {channel_id}")

    step("2. a consumer admin with an EXTENDED_TCL filter, shared by its consumers")
    constraint = "$severity == 'critical' or $severity == 'major'"
    expected = sum(1 for i in range(total) if SEVERITIES[i % 5] in ("critical", "major"))
    admin, admin_id = channel.new_for_consumers(CA.AND_OP)
    flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
    flt.add_constraints([CosNotifyFilter.ConstraintExp(
        [N.EventType("Telecom", "CommunicationsAlarm")], constraint)])
    admin.add_filter(flt)
    print(f"consumer admin {admin_id} filters with: {constraint}")
    consumer = Consumer(expected)
    proxy, proxy_id = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
    proxy.connect_structured_push_consumer(consumer)
    print(f"push consumer connected to proxy supplier {proxy_id}")

    frames: list[Any] = []
    sink = spark = None
    if importlib.util.find_spec("spark_bridge") is None:
        print("skipped: spark_bridge is not installed")
    else:
        import spark_bridge

        print("starting a local SparkSession (this takes a few seconds) ...")
        spark = spark_session()
        spark.sparkContext.setLogLevel("ERROR")
        sink = spark_bridge.SparkSinkProxy.attach(
            admin, spark, max_batch_size=100, pacing_interval=0.5,
            callback=lambda df, batch_id: frames.append(df))
        print("SparkSinkProxy connected as a sequence consumer (batches of up to 100)")

    step("3. supplier pushes alarms")
    entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    entry.connect_structured_push_supplier(None)
    started = time.perf_counter()
    for i in range(total):
        entry.push_structured_event(alarm(i))
    print(f"pushed {total} events")

    step("4. delivery to the push consumer")
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

    step("5. the same events in a Spark DataFrame")
    status = 0
    if sink is not None:
        import spark_bridge

        landed = sink.wait(lambda stats: stats.written >= expected, timeout=120)
        sink.close()
        if not landed or not frames:
            print(f"ERROR: the sink wrote {sink.stats().written} of {expected} events")
            status = 1
        else:
            df = frames[0]
            for more in frames[1:]:
                df = df.unionByName(more)
            severity = spark_bridge.property_value("severity", as_type="string")
            print(f"{df.count()} rows in {len(frames)} micro-batches; schema columns: "
                  f"{', '.join(df.columns)}")
            for row in df.groupBy(severity.alias("severity")).count().orderBy("severity").collect():
                print(f"  severity={row['severity']}: {row['count']} rows")
        spark.stop()
    factory.close()
    return status


if __name__ == "__main__":
    sys.exit(main())
