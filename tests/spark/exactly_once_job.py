"""The processes of tests/spark/test_exactly_once.py's kill test.

``python -m tests.spark.exactly_once_job driver OPTIONS_JSON OUT [--until N]``
is a Spark driver (``local[2]``, its own JVM): it streams an acknowledging
subscription into a Parquet file sink with a checkpoint under ``OUT`` and
prints ``batch=ID rows=N`` as each micro-batch completes (a
StreamingQueryListener). With ``--until N`` it stops the query once the
sink's committed output holds N rows, prints ``output=N`` and exits;
without, it runs until it is killed.

``python -m tests.spark.exactly_once_job supplier IOR COUNT RATE`` pushes
events numbered 0..COUNT-1 (``tests.spark.conftest.alarm``) at about RATE
per second, through an acknowledging structured push consumer
(tests/durability/peer.py's supplier: a push refused while the server
restarts is pushed again, and the channel drops a resend by its
SequenceNumber), printing ``accepted=N`` and, at the end, ``done``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import omniORB  # noqa: F401 - before the COS stubs it puts on sys.path
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA

from tests.spark.conftest import WAIT, alarm


def driver(options: dict[str, str], out: Path, until: int | None) -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.listener import StreamingQueryListener

    import spark_bridge

    spark = (SparkSession.builder.master("local[2]").appName("exactly-once")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark_bridge.register(spark)
    data = out / "data"
    cond = threading.Condition()
    progress = {"batches": 0}

    class Progress(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            print(f"batch={event.progress.batchId} rows={event.progress.numInputRows}",
                  flush=True)
            with cond:
                progress["batches"] += 1
                cond.notify_all()

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            with cond:
                cond.notify_all()

    spark.streams.addListener(Progress())
    query = (spark.readStream.format("cosnotify").options(**options)
             .option("max_events_per_batch", "100").load()
             .writeStream.format("parquet").option("path", str(data))
             .option("checkpointLocation", str(out / "checkpoint"))
             .trigger(processingTime="200 milliseconds").start())
    print("started", flush=True)
    if until is None:
        query.awaitTermination()
        return

    def output() -> int:
        return spark.read.parquet(str(data)).count() if (data / "_spark_metadata").exists() \
            else 0

    seen = -1
    while True:
        with cond:  # a new batch has completed (or the query ended)
            cond.wait_for(lambda: progress["batches"] != seen  # noqa: B023 - waited here
                          or not query.isActive, WAIT)
            seen = progress["batches"]
        if not query.isActive:
            raise RuntimeError(f"the query ended: {query.exception()}")
        rows = output()
        if rows >= until:
            break
    query.stop()
    print(f"output={output()}", flush=True)
    spark.stop()


def supplier(ior: str, count: int, rate: float) -> None:
    import CosNotifyCommAck

    from tests.durability.peer import _orb, again

    orb = _orb()
    try:
        channel = orb.string_to_object(ior)._narrow(CA.EventChannel)
        admin = again(channel._get_default_supplier_admin)
        proxy = again(lambda: admin.obtain_notification_push_consumer(CA.STRUCTURED_EVENT)[0])
        proxy = proxy._narrow(CA.StructuredProxyPushConsumer)
        again(lambda: proxy.set_qos([N.Property(
            "DeliveryReliability", CORBA.Any(CORBA.TC_short,
                                             CosNotifyCommAck.Acknowledgment))]))
        again(lambda: proxy.connect_structured_push_supplier(None))
        start = time.monotonic()
        for n in range(count):
            event = alarm(n, header=[N.Property("SequenceNumber", CORBA.Any(CORBA.TC_long, n))])
            again(lambda: proxy.push_structured_event(event))  # noqa: B023 - called at once
            print(f"accepted={n}", flush=True)
            ahead = start + (n + 1) / rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)  # the pace of a live source, not a synchronisation
        print("done", flush=True)
    finally:
        orb.destroy()


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="role", required=True)
    d = sub.add_parser("driver")
    d.add_argument("options")
    d.add_argument("out", type=Path)
    d.add_argument("--until", type=int)
    s = sub.add_parser("supplier")
    s.add_argument("ior")
    s.add_argument("count", type=int)
    s.add_argument("rate", type=float)
    args = parser.parse_args()
    if args.role == "driver":
        driver(json.loads(args.options), args.out, args.until)
    else:
        supplier(args.ior, args.count, args.rate)
    return 0


if __name__ == "__main__":
    sys.exit(main())
