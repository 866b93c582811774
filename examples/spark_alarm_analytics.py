"""Alarm analytics: TMF-814-style alarms -> channel -> SparkSinkProxy -> Parquet -> counts.

Run: ``.venv/bin/python examples/spark_alarm_analytics.py`` (about a minute,
most of it Spark starting). Needs Java 17.

A supplier raises 2,000 CommunicationsAlarm events over five minutes of
(synthetic) alarm time. A SparkSinkProxy attached to the channel's default
consumer admin lands them, batch by batch, in a Parquet directory; then one
batch query counts the alarms per severity per minute of alarm time. (A
streaming version of the same query comes with the streaming source.)

Each alarm's filterable data holds ``severity`` (an IDL enum), ``ne`` and
``probable_cause`` (strings) and ``event_time`` (a ``TimeBase::UtcT``
struct). In Spark each value is a VARIANT beside its TypeCode, so the query
reads ``event_time.time`` straight out of the nested struct.
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import cosnotify  # noqa: E402
from cosnotify.channel.clock import seconds_to_timet  # noqa: E402
from cosnotify.orb import CORBA, tc  # noqa: E402
from cosnotify.stubs import CosNotification as N  # noqa: E402
from cosnotify.stubs import CosNotifyChannelAdmin as CA  # noqa: E402
from cosnotify.stubs import TimeBase  # noqa: E402

ALARMS = 2_000
START = 1_767_225_600.0  # 2026-01-01T00:00:00Z
SEVERITIES = ["CRITICAL", "MAJOR", "MINOR", "WARNING", "INDETERMINATE", "CLEARED"]
CAUSES = ["LOSS_OF_SIGNAL", "LOSS_OF_FRAME", "POWER_PROBLEM", "EQUIPMENT_MALFUNCTION"]
SEVERITY = tc.enum_tc("IDL:mtnm.tmforum.org/notifications/PerceivedSeverity:1.0",
                      "PerceivedSeverity", SEVERITIES)
_MIX = [0, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 5, 5, 5, 5]  # indexes into SEVERITIES
_OFFSET_100NS = 12219292800 * 10_000_000  # TimeBase epoch (1582-10-15) to 1970, in 100 ns


def alarm(i: int) -> Any:
    """Alarm ``i``: raised ``i * 0.15`` s after START; critical alarms are the rarest."""
    severity = SEVERITY.enum_items()[_MIX[(i * 7 + i // 13 + (i // 400) ** 2) % len(_MIX)]]
    raised = TimeBase.UtcT(seconds_to_timet(START + i * 0.15), 0, 0, 0)
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("Telecom", "CommunicationsAlarm"),
                                         f"alarm-{i}"), []),
        [N.Property("severity", CORBA.Any(SEVERITY, severity)),
         N.Property("ne", CORBA.Any(CORBA.TC_string, f"EMS-1/ME-{i % 40}")),
         N.Property("probable_cause", CORBA.Any(CORBA.TC_string, CAUSES[i % len(CAUSES)])),
         N.Property("event_time", CORBA.Any(TimeBase._tc_UtcT, raised))],
        CORBA.Any(CORBA.TC_string, f"additional text for alarm {i}"))


def main() -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from spark_bridge import SparkSinkProxy, property_value

    spark = (SparkSession.builder.master("local[2]").appName("alarm-analytics")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    factory = cosnotify.EventChannelFactory()
    channel, _ = factory.create_channel([], [])
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "alarms")
        sink = SparkSinkProxy.attach(channel._get_default_consumer_admin(), spark, path=path,
                                     max_batch_size=500, pacing_interval=0.5)
        supplier, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        supplier.connect_structured_push_supplier(None)
        for i in range(ALARMS):
            supplier.push_structured_event(alarm(i))
        if not sink.wait(lambda s: s.written >= ALARMS or s.failed, timeout=300):
            raise SystemExit(f"timed out: {sink.stats()}")
        sink.close()
        if sink.failure is not None:
            raise SystemExit(f"the sink failed: {sink.failure}")
        stats = sink.stats()
        print(f"{stats.written} alarms landed in {stats.batches} Parquet batches")

        alarms = spark.read.parquet(path)
        timet = property_value("event_time", as_type=None)
        raised = F.timestamp_seconds(
            (F.variant_get(timet, "$.time", "decimal(20,0)") - F.lit(_OFFSET_100NS)) / 10_000_000)
        per_minute = (alarms
                      .select(F.date_trunc("minute", raised).alias("minute"),
                              property_value("severity", as_type="string").alias("severity"))
                      .groupBy("minute").pivot("severity", SEVERITIES).count()
                      .na.fill(0).orderBy("minute"))
        print("Alarms per severity per minute of alarm time:")
        per_minute.show(truncate=False)
        total = per_minute.select(sum(F.col(s) for s in SEVERITIES).alias("n")).agg(F.sum("n"))
        print(f"total counted: {total.first()[0]}")
    factory.close()
    spark.stop()


if __name__ == "__main__":
    main()
