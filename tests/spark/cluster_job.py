"""The bridge on a standalone cluster: the driver program that tests/spark/test_cluster.py runs.

Strategy: a process has one SparkContext, and the suite's other Spark tests
keep a ``local[2]`` one per xdist worker, so this job runs in a Python
process of its own: ``python -m tests.spark.cluster_job MASTER_URL IOR
SCRATCH``. It makes a SparkSession on the cluster (``cluster.cluster_session``
waits until both executors have registered), its own ORB on first use (the
bridge's ``client_orb``), one channel per scenario in the ``cosnotify serve``
whose factory IOR it is given, and runs:

- ``probe``: where tasks run (pid and working directory of the Python worker;
  an executor's working directory is ``<worker work dir>/<app id>/<executor id>``);
- ``batch_read``: ``spark.read.format("cosnotify")`` of a subscription;
- ``stream_read``: ``readStream.format("cosnotify")`` into a Parquet sink,
  stopped once a StreamingQueryListener has seen every row go through;
- ``write``: ``df.write.format("cosnotify")`` in two tasks, received by a
  subscription of the target channel;
- ``sink``: ``SparkSinkProxy.attach_remote`` writing Parquet.

For each it reports the event numbers that came out, whether the events are
the ones sent (``tests.spark.compare.same_events``), and how many tasks each
executor ran for it (from the driver's status store). It prints one line
``RESULT <json>`` on stdout; the test asserts on it. Waits are on conditions
or on the bridge's own bounded waits, never sleeps.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import omniORB  # noqa: F401 - before the COS stubs it puts on sys.path

import CosNotifyChannelAdmin as CA

import spark_bridge
from spark_bridge import connect, event_schema, event_to_row, row_to_event
from tests.spark.cluster import cluster_session, executor_tasks
from tests.spark.compare import same_events
from tests.spark.conftest import WAIT, alarm, number


def where(partition: Any) -> list[dict[str, Any]]:
    """Run in an executor's Python worker: who ran this partition."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return [{"pid": os.getpid(), "cwd": os.getcwd(),
             "partition": context.partitionId() if context else None}]


class Tasks:
    """Tasks per executor since the last call."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.last = executor_tasks(spark)

    def delta(self) -> dict[str, int]:
        now = executor_tasks(self.spark)
        change = {k: v - self.last.get(k, 0) for k, v in now.items()}
        self.last = now
        return {k: v for k, v in change.items() if v}


def _events(rows: list[Any]) -> list[Any]:
    return sorted((row_to_event(r) for r in rows), key=number)


def _outcome(got: list[Any], sent: list[Any], tasks: Tasks) -> dict[str, Any]:
    return {"numbers": [number(e) for e in got], "same": same_events(got, sent),
            "tasks": tasks.delta()}


def _push(ior: str, events: list[Any]) -> None:
    proxy = connect.open_push_proxy(connect.ChannelAddress(ior))
    try:
        proxy.push_structured_events(events)
    finally:
        proxy.disconnect_sequence_push_consumer()


def batch_read(spark: Any, ior: str, tasks: Tasks) -> dict[str, Any]:
    proxy_id = spark_bridge.create_subscription(ior, "$n >= 5")
    sent = [alarm(i) for i in range(20)]
    _push(ior, sent)
    # max_events: the read returns once the 15 matching events have been pulled;
    # idle_timeout bounds the wait for the channel to deliver them.
    rows = (spark.read.format("cosnotify").option("channel", ior).option("proxy_id", proxy_id)
            .option("max_events", 15).option("idle_timeout", WAIT).load().collect())
    return _outcome(_events(rows), sent[5:], tasks)


def stream_read(spark: Any, ior: str, scratch: Path, tasks: Tasks) -> dict[str, Any]:
    from pyspark.sql.streaming.listener import StreamingQueryListener

    proxy_id = spark_bridge.create_subscription(ior, "$n < 3 or $n >= 10")
    sent = [alarm(i) for i in range(20)]
    _push(ior, sent)  # queued by the subscription until the query pulls it
    cond = threading.Condition()
    seen = {"rows": 0, "batches": 0}

    class Progress(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            with cond:
                seen["rows"] += event.progress.numInputRows
                seen["batches"] += 1 if event.progress.numInputRows else 0
                cond.notify_all()

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    listener = Progress()
    spark.streams.addListener(listener)
    out = scratch / "stream-out"
    query = (spark.readStream.format("cosnotify").option("channel", ior)
             .option("proxy_id", proxy_id).option("max_events_per_batch", 5).load()
             .writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(scratch / "stream-checkpoint"))
             .trigger(processingTime="100 milliseconds").start())
    try:
        with cond:
            arrived = cond.wait_for(lambda: seen["rows"] >= 13 or query.exception(), WAIT)
    finally:
        query.stop()
        spark.streams.removeListener(listener)
    rows = spark.read.parquet(str(out)).collect()
    result = _outcome(_events(rows), [*sent[:3], *sent[10:]], tasks)
    result.update(arrived=bool(arrived), batches=seen["batches"],
                  error=str(query.exception()) if query.exception() else None)
    return result


def write(spark: Any, ior: str, tasks: Tasks) -> dict[str, Any]:
    proxy_id = spark_bridge.create_subscription(ior)
    sent = [alarm(i) for i in range(10)]
    df = spark.createDataFrame([event_to_row(e, arrival=0.0) for e in sent], event_schema())
    partitions = df.rdd.getNumPartitions()
    df.write.format("cosnotify").mode("append").option("channel", ior) \
        .option("batch_size", 3).save()
    subscription = connect.PullSubscription.open(connect.ChannelAddress(ior), proxy_id=proxy_id)
    try:
        got = subscription.drain(len(sent), idle_timeout=WAIT)
    finally:
        subscription.close()
    result = _outcome(sorted(got, key=number), sent, tasks)
    result["partitions"] = partitions
    return result


def sink(spark: Any, ior: str, scratch: Path, tasks: Tasks) -> dict[str, Any]:
    out = scratch / "sink-out"
    proxy = spark_bridge.SparkSinkProxy.attach_remote(
        ior, spark, constraint="$n >= 6", path=str(out), max_batch_size=2,
        pacing_interval=0.2)
    sent = [alarm(i) for i in range(10)]
    try:
        _push(ior, sent)
        arrived = proxy.wait(lambda s: s.written >= 4 or s.failed, WAIT)
    finally:
        proxy.close(WAIT)
    stats = proxy.stats()
    rows = spark.read.parquet(str(out)).collect()
    result = _outcome(_events(rows), sent[6:], tasks)
    result.update(arrived=arrived, batches=stats.batches, failed=stats.failed)
    return result


def main(master: str, factory_ior: str, scratch: Path) -> dict[str, Any]:
    spark = cluster_session(master, str(scratch))
    try:
        spark_bridge.register(spark)
        sc = spark.sparkContext
        tasks = Tasks(spark)
        result: dict[str, Any] = {
            "driver_pid": os.getpid(), "master": sc.master,
            "executors": sorted(k for k in tasks.last if k != "driver"),
            "block_managers": int(sc._jsc.sc().getExecutorMemoryStatus().size()),
        }
        result["probe"] = {"places": sc.parallelize(range(4), 4).mapPartitions(where).collect(),
                           "tasks": tasks.delta()}
        orb = connect.client_orb()
        factory = orb.string_to_object(factory_ior)._narrow(CA.EventChannelFactory)
        channels = []
        try:
            def channel() -> str:
                made, _ = factory.create_channel([], [])
                channels.append(made)
                return str(orb.object_to_string(made))

            result["batch_read"] = batch_read(spark, channel(), tasks)
            result["stream_read"] = stream_read(spark, channel(), scratch, tasks)
            result["write"] = write(spark, channel(), tasks)
            result["sink"] = sink(spark, channel(), scratch, tasks)
        finally:
            for made in channels:
                made.destroy()
        return result
    finally:
        spark.stop()


if __name__ == "__main__":
    outcome = main(sys.argv[1], sys.argv[2], Path(sys.argv[3]))
    print("RESULT " + json.dumps(outcome), flush=True)
