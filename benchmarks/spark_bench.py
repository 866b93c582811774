"""Benchmark: channel -> SparkSinkProxy -> DataFrame against createDataFrame; stream reads.

Run: ``.venv/bin/python benchmarks/spark_bench.py [--events 100000] [--batch 10000]
[--stream-events 20000] [--stream-batch 2000] [--no-stream] [--no-cluster]``.

Strategy: one run, one workload (TMF-814-style alarms: six filterable
fields of five IDL kinds, a Priority header, a string body), three parts
printed side by side with the machine. Everything is warmed up once before
it is timed.

1. **Pipeline vs floor, local[2].**

   * **pipeline**: a supplier pushes every event into an in-process channel;
     a sink attached with MaximumBatchSize = ``--batch`` turns each sequence
     into a DataFrame through pyarrow; timed from the first push until the
     sink has handed the last DataFrame to its callback.
   * **floor**: ``spark.createDataFrame(rows, event_schema())`` of the same
     rows, built beforehand with ``event_to_row`` (so conversion is free), in
     batches of ``--batch``, with Arrow off and on; the faster is the floor.

   Each figure is the best of ``--repeat`` runs, measured twice: *created*
   (the DataFrame exists; for Arrow input the data is already in the JVM) and
   *materialized* (each DataFrame is also written to Spark's ``noop`` sink,
   which forces every row and column; without Arrow, createDataFrame defers
   the conversion to that action). The goal is pipeline >= 50% of the floor.
   A breakdown of one batch follows: converting events to Arrow, Arrow to
   DataFrame, and the pandas alternative.
2. **Stream reads, local[2]** (``spark_stream.py``): ``--stream-events``
   events queued in a subscription of a persistent channel of ``cosnotify
   serve --db``, read by a ``Trigger.AvailableNow`` query to ``noop`` with
   ``max_events_per_batch`` = ``--stream-batch``: at most once (a sequence
   pull subscription) against exactly once (an acknowledging one). Goal:
   exactly once >= 50% of at most once. Spark's per-phase durations and the
   bare pulls without Spark show where the time goes.
3. **Pipeline vs floor on a standalone cluster** (``--no-cluster`` skips
   it): the local session is stopped (one SparkContext per process), a
   master and two one-core workers start on 127.0.0.1 from the pyspark
   wheel, and part 1 runs again on a session there. Goal: pipeline >= 50%
   of the floor on the same cluster.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import spark_stream  # benchmarks/spark_stream.py: the parts with other processes
from machine import cpu_model  # benchmarks/machine.py, beside this script
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA

import cosnotify
from cosnotify.corba import descriptors

SEVERITY = descriptors.enum_tc("IDL:bench/Severity:1.0", "Severity",
                               ["CLEARED", "WARNING", "MINOR", "MAJOR", "CRITICAL"])


def alarm(i: int) -> Any:
    severity = SEVERITY._d[3][i % 5]
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("Telecom", "CommunicationsAlarm"),
                                         f"alarm-{i}"),
                      [N.Property("Priority", CORBA.Any(CORBA.TC_short, i % 5))]),
        [N.Property("severity", CORBA.Any(SEVERITY, severity)),
         N.Property("ne", CORBA.Any(CORBA.TC_string, f"NE-{i % 97}")),
         N.Property("probable_cause", CORBA.Any(CORBA.TC_string, "LOSS_OF_SIGNAL")),
         N.Property("sequence", CORBA.Any(CORBA.TC_long, i)),
         N.Property("raised_at", CORBA.Any(CORBA.TC_ulonglong, 138_000_000_000_000_000 + i)),
         N.Property("acknowledged", CORBA.Any(CORBA.TC_boolean, i % 2 == 0))],
        CORBA.Any(CORBA.TC_string, f"alarm text {i}"))


def machine() -> str:
    cpu = cpu_model()
    import pyarrow
    import pyspark

    try:
        java = subprocess.run(["java", "-version"], capture_output=True, text=True,
                              timeout=30, check=False).stderr.splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        java = "java: unknown"
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"CPU: {cpu} ({os.cpu_count()} logical cores), load average {load}\n"
            f"Python {platform.python_version()}, pyspark {pyspark.__version__}, "
            f"pyarrow {pyarrow.__version__}, {java}")


def session() -> Any:
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("spark_bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def materialize(df: Any) -> None:
    df.write.format("noop").mode("overwrite").save()


def pipeline(spark: Any, events: list[Any], batch: int, action: Callable[[Any], None] | None
             ) -> float:
    """Seconds from the first push to the last DataFrame handed over."""
    from spark_bridge import SparkSinkProxy

    factory = cosnotify.EventChannelFactory()
    channel, _ = factory.create_channel([], [])
    sink = SparkSinkProxy.attach(channel._get_default_consumer_admin(), spark,
                                 callback=lambda df, batch_id: action and action(df),
                                 max_batch_size=batch, pacing_interval=0, max_buffered=2 * batch)
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_push_supplier(None)
    start = time.perf_counter()
    for event in events:
        proxy.push_structured_event(event)
    if not sink.wait(lambda s: s.written >= len(events) or s.failed, 600):
        raise RuntimeError(f"pipeline stalled: {sink.stats()}")
    elapsed = time.perf_counter() - start
    if sink.failure is not None:
        raise sink.failure
    sink.close()
    factory.close()
    return elapsed


def floor(spark: Any, rows: list[Any], batch: int, arrow: bool,
          action: Callable[[Any], None] | None) -> float:
    from spark_bridge import event_schema

    spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", str(arrow).lower())
    schema = event_schema()
    start = time.perf_counter()
    for i in range(0, len(rows), batch):
        df = spark.createDataFrame(rows[i:i + batch], schema)
        if action is not None:
            action(df)
    elapsed = time.perf_counter() - start
    spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "false")
    return elapsed


def breakdown(spark: Any, events: list[Any], batch: int) -> list[tuple[str, float]]:
    """Milliseconds per batch for each stage of the sink, and the pandas alternative."""
    import pandas as pd

    from spark_bridge import event_schema, event_to_row
    from spark_bridge.arrow import events_to_arrow

    items = [(e, 1_700_000_000.0 + i) for i, e in enumerate(events[:batch])]
    schema = event_schema()
    out = []
    start = time.perf_counter()
    table, _ = events_to_arrow(items)
    out.append(("events -> pyarrow Table (convert.py + pa.array)", time.perf_counter() - start))
    start = time.perf_counter()
    spark.createDataFrame(table, schema=schema)
    out.append(("pyarrow Table -> DataFrame (createDataFrame)", time.perf_counter() - start))
    rows = [event_to_row(e, t) for e, t in items]
    start = time.perf_counter()
    pdf = pd.DataFrame.from_records(rows, columns=schema.fieldNames())
    spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")
    try:
        spark.createDataFrame(pdf, schema=schema)
        out.append(("rows -> pandas -> DataFrame (the pandas path)", time.perf_counter() - start))
    except Exception as exc:  # noqa: BLE001 - report, do not abort the benchmark
        out.append((f"pandas path failed: {type(exc).__name__}", float("nan")))
    finally:
        spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "false")
    return out


def compare(spark: Any, events: list[Any], rows: list[Any], batch: int, repeat: int,
            where: str) -> None:
    """Warm up, then print the pipeline against the floor on ``spark`` (module docstring)."""
    n = len(events)
    pipeline(spark, events[:batch], batch, materialize)
    for arrow in (False, True):
        floor(spark, rows[:batch], batch, arrow, materialize)

    print(f"\n{n:,} events in batches of {batch:,}, {where}; events/s, best of {repeat} "
          "(higher is better)")
    print(f"{'':38}{'created':>12}{'materialized':>14}")

    def rate(run: Callable[[], float]) -> float:
        return n / min(run() for _ in range(repeat))

    results: dict[str, tuple[float, float]] = {}
    results["pipeline: channel -> sink -> DataFrame"] = (
        rate(lambda: pipeline(spark, events, batch, None)),
        rate(lambda: pipeline(spark, events, batch, materialize)))
    for arrow in (False, True):
        label = f"floor: createDataFrame(rows), Arrow {'on' if arrow else 'off'}"
        results[label] = (rate(lambda arrow=arrow: floor(spark, rows, batch, arrow, None)),
                          rate(lambda arrow=arrow: floor(spark, rows, batch, arrow, materialize)))
    for label, (created, materialized) in results.items():
        print(f"{label:38}{created:12,.0f}{materialized:14,.0f}")
    floors = [v for k, v in results.items() if k.startswith("floor")]
    best = (max(f[0] for f in floors), max(f[1] for f in floors))
    mine = results["pipeline: channel -> sink -> DataFrame"]
    print(f"{'pipeline / best floor':38}{mine[0] / best[0]:12.0%}{mine[1] / best[1]:14.0%}"
          "   (goal: >= 50%)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=2, help="runs per figure; the best is kept")
    parser.add_argument("--stream-events", type=int, default=20_000,
                        help="events per stream read (through cosnotify serve)")
    parser.add_argument("--stream-batch", type=int, default=2_000,
                        help="max_events_per_batch of both stream reads (at most 2,048: "
                             "the exactly-once reader's cap)")
    parser.add_argument("--no-stream", action="store_true", help="skip the stream reads")
    parser.add_argument("--no-cluster", action="store_true",
                        help="skip the standalone cluster")
    args = parser.parse_args()
    n, batch = args.events - args.events % args.batch, args.batch
    print(machine())
    t0 = time.perf_counter()
    spark = session()
    print(f"SparkSession start: {time.perf_counter() - t0:.1f} s")

    from spark_bridge import event_to_row

    events = [alarm(i) for i in range(max(n, args.stream_events))]
    start = time.perf_counter()
    rows = [event_to_row(e, 1_700_000_000.0 + i) for i, e in enumerate(events[:n])]
    convert_rate = n / (time.perf_counter() - start)
    gc.freeze()  # the inputs live all run: keep the cyclic GC from rescanning them

    compare(spark, events[:n], rows, batch, args.repeat, "local[2]")
    print(f"\nevent_to_row alone (pure Python): {convert_rate:,.0f} events/s")
    print(f"One batch of {batch:,}, milliseconds:")
    for label, seconds in breakdown(spark, events, batch):
        print(f"  {label:52}{seconds * 1000:8.0f}")

    if not args.no_stream:
        spark_stream.stream_report(spark, events[:args.stream_events], args.stream_batch,
                                   args.repeat)
    spark.stop()
    if not args.no_cluster:
        with spark_stream.on_cluster() as (cluster, seconds):
            print(f"\n== standalone cluster: a master and 2 workers (1 core, 1 GiB each; one "
                  f"512 MiB executor each) on 127.0.0.1, from the pyspark wheel; cluster and "
                  f"SparkSession start: {seconds:.1f} s")
            compare(cluster, events[:n], rows, batch, args.repeat,
                    f"{cluster.sparkContext.master}")
            tasks = spark_stream.executor_tasks(cluster)
            print("tasks run per executor: " + ", ".join(
                f"{executor} {count}" for executor, count in sorted(tasks.items())))
            if not args.no_stream:
                spark_stream.partitions_report(cluster, events[:args.stream_events],
                                               args.stream_batch, args.repeat)
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
