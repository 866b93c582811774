"""Alarm analytics: TMF-814-style alarms -> channel -> streaming DataFrame -> counts per minute.

Run: ``.venv/bin/python examples/spark_alarm_analytics.py`` (about a minute,
most of it Spark starting). Needs Java 17.

A notification server (``cosnotify serve``, here in-process on a free
loopback port, on this process's omniORB ORB) carries a channel. A subscription (``create_subscription``)
is a pull proxy in that channel with the constraint
``$type_name == 'CommunicationsAlarm'`` as its filter, so the channel drops
the heartbeats before they cross the network and queues the alarms until
they are read. A Structured Streaming query reads the subscription with the
``cosnotify`` data source (``spark_bridge.register``): Spark's Python
processes connect over IIOP as its pull consumer. The query counts
alarms per severity per minute of alarm time, and, with ``tcl_match``
evaluating a constraint inside Spark, how many of them were urgent.

Each alarm's filterable data holds ``severity`` (an IDL enum), ``ne`` and
``probable_cause`` (strings) and ``event_time`` (a ``TimeBase::UtcT``
struct). In Spark each value is a VARIANT beside its TypeCode, so the query
reads ``event_time.time`` straight out of the nested struct.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import TimeBase

from cosnotify.channel.clock import seconds_to_timet
from cosnotify.corba import descriptors
from cosnotify.server import NotificationServer, ServerConfig

ALARMS = 2_000
HEARTBEATS = 500
START = 1_767_225_600.0  # 2026-01-01T00:00:00Z
SEVERITIES = ["CRITICAL", "MAJOR", "MINOR", "WARNING", "INDETERMINATE", "CLEARED"]
CAUSES = ["LOSS_OF_SIGNAL", "LOSS_OF_FRAME", "POWER_PROBLEM", "EQUIPMENT_MALFUNCTION"]
SEVERITY = descriptors.enum_tc("IDL:mtnm.tmforum.org/notifications/PerceivedSeverity:1.0",
                               "PerceivedSeverity", SEVERITIES)
_MIX = [0, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 5, 5, 5, 5]  # indexes into SEVERITIES
_OFFSET_100NS = 12219292800 * 10_000_000  # TimeBase epoch (1582-10-15) to 1970, in 100 ns
WAIT = 300.0


def alarm(i: int) -> Any:
    """Alarm ``i``: raised ``i * 0.15`` s after START; critical alarms are the rarest."""
    severity = SEVERITY._d[3][_MIX[(i * 7 + i // 13 + (i // 400) ** 2) % len(_MIX)]]
    raised = TimeBase.UtcT(seconds_to_timet(START + i * 0.15), 0, 0, 0)
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("Telecom", "CommunicationsAlarm"),
                                         f"alarm-{i}"), []),
        [N.Property("severity", CORBA.Any(SEVERITY, severity)),
         N.Property("ne", CORBA.Any(CORBA.TC_string, f"EMS-1/ME-{i % 40}")),
         N.Property("probable_cause", CORBA.Any(CORBA.TC_string, CAUSES[i % len(CAUSES)])),
         N.Property("event_time", CORBA.Any(TimeBase._tc_UtcT, raised))],
        CORBA.Any(CORBA.TC_string, f"additional text for alarm {i}"))


def heartbeat(i: int) -> Any:
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("Telecom", "Heartbeat"), f"hb-{i}"), []),
        [], CORBA.Any(CORBA.TC_null, None))


def wait_until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.2)


def main() -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import spark_bridge
    from spark_bridge import property_value, tcl_match

    spark = (SparkSession.builder.master("local[2]").appName("alarm-analytics")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark_bridge.register(spark)

    server = NotificationServer(ServerConfig(port=0)).start()
    channel, channel_id = server.factory.create_channel([], [])
    print(f"channel {channel_id} at {server.factory_url}")

    # A subscription: a pull proxy in the channel with the constraint as its filter,
    # connected now, so it queues every matching alarm from now on, whether or not
    # a query is reading yet (docs/spark.md, "Subscriptions").
    proxy_id = spark_bridge.create_subscription(
        server.factory_url, "$type_name == 'CommunicationsAlarm'", channel_id=channel_id)
    supplier, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.SEQUENCE_EVENT)
    supplier.connect_sequence_push_supplier(None)
    for start in range(0, ALARMS, 250):  # alarms with heartbeats in between
        supplier.push_structured_events([alarm(i) for i in range(start, start + 250)])
        supplier.push_structured_events(
            [heartbeat(i) for i in range(start // 4, start // 4 + 250 * HEARTBEATS // ALARMS)])
    print(f"pushed {ALARMS} alarms and {HEARTBEATS} heartbeats")

    alarms = (spark.readStream.format("cosnotify")
              .option("channel", server.factory_url).option("channel_id", channel_id)
              .option("proxy_id", proxy_id)
              .load())
    timet = property_value("event_time", as_type=None)
    raised = F.timestamp_seconds(
        (F.variant_get(timet, "$.time", "decimal(20,0)") - F.lit(_OFFSET_100NS)) / 10_000_000)
    urgent = "$severity == CRITICAL or $severity == MAJOR"
    counts = (tcl_match(alarms, urgent, "urgent")
              .select(F.window(raised, "1 minute").start.alias("minute"),
                      property_value("severity", as_type="string").alias("severity"),
                      F.col("urgent").cast("int").alias("urgent"))
              .groupBy("minute", "severity").agg(F.count("*").alias("alarms"),
                                                 F.sum("urgent").alias("urgent")))
    query = (counts.writeStream.outputMode("complete").format("memory")
             .queryName("alarm_counts").start())
    try:
        def counted() -> int:
            return int(spark.sql("select coalesce(sum(alarms), 0) from alarm_counts").first()[0])

        def done() -> bool:
            if query.exception() is not None:
                raise SystemExit(f"the query failed: {query.exception()}")
            return counted() >= ALARMS

        wait_until(done, "every alarm to be counted")
    finally:
        query.stop()
        spark_bridge.drop_subscription(server.factory_url, proxy_id, channel_id=channel_id)
        server.stop()

    table = spark.table("alarm_counts")
    per_minute = (table.groupBy("minute")
                  .agg(*[F.sum(F.when(F.col("severity") == s, F.col("alarms"))).alias(s)
                         for s in SEVERITIES], F.sum("urgent").alias("urgent"))
                  .na.fill(0).orderBy("minute"))
    print("Alarms per severity per minute of alarm time (heartbeats filtered in the channel):")
    per_minute.show(truncate=False)
    total = table.agg(F.sum("alarms")).first()[0]
    print(f"total counted: {total} of {ALARMS} alarms")
    spark.stop()


if __name__ == "__main__":
    main()
