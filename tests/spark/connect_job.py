"""The bridge over Spark Connect: the client program that tests/spark/test_spark_connect.py runs.

Strategy: a process has one SparkSession kind at a time in practice (the
suite's xdist worker may hold a classic ``local[2]`` session, and pyspark
then hands that one out), so the client runs in a Python process of its own:
``python -m tests.spark.connect_job sc://127.0.0.1:PORT IOR SCRATCH``. It makes
a Connect session (``SparkSession.builder.remote(url)``), registers the
``cosnotify`` source over it, makes one channel per scenario in the
``cosnotify serve`` whose factory IOR it is given, and runs:

- ``options``: a misspelt option and a bad constraint, and when Connect reports them;
- ``batch_read``: ``spark.read.format("cosnotify")`` of a subscription;
- ``stream_read``: ``readStream.format("cosnotify")`` with
  ``trigger(availableNow=True)`` into a Parquet sink;
- ``write``: ``df.write.format("cosnotify")``, received by a subscription;
- ``tcl``: ``tcl_filter`` on a Connect DataFrame, in SQL and in UDF mode (the
  UDF registered once per Connect session, by its session id);
- ``sink``: ``SparkSinkProxy.attach_remote`` writing Parquet through the
  Connect session (``createDataFrame`` of a pyarrow Table, then a write).

Each scenario's outcome is reported, an exception included (its type and
message), so the test tells what Connect supports from what it does not. It
prints one line ``RESULT <json>``. Waits are the bridge's own bounded waits or
Spark's (``awaitTermination``), never sleeps.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import omniORB  # noqa: F401 - before the COS stubs it puts on sys.path

import CosNotifyChannelAdmin as CA

import spark_bridge
from spark_bridge import connect, event_schema, event_to_row, row_to_event
from tests.spark.compare import same_events
from tests.spark.conftest import WAIT, alarm, number


def _events(rows: list[Any]) -> list[Any]:
    return sorted((row_to_event(r) for r in rows), key=number)


def _outcome(got: list[Any], sent: list[Any]) -> dict[str, Any]:
    return {"numbers": [number(e) for e in got], "same": same_events(got, sent)}


def _push(ior: str, events: list[Any]) -> None:
    proxy = connect.open_push_proxy(connect.ChannelAddress(ior))
    try:
        proxy.push_structured_events(events)
    finally:
        proxy.disconnect_sequence_push_consumer()


def options(spark: Any, ior: str) -> dict[str, Any]:
    """A misspelt option: classic Spark refuses it at ``load()``; Connect plans lazily."""
    df = spark.read.format("cosnotify").option("channel", ior).option("constrant", "$n > 1")
    loaded = True
    try:
        frame = df.load()
    except Exception:  # noqa: BLE001 - reported
        loaded = False
        frame = None
    error = None
    if frame is not None:
        try:
            frame.schema  # noqa: B018 - analysis happens here under Connect
        except Exception as exc:  # noqa: BLE001 - reported
            error = f"{type(exc).__name__}: {exc}"
    bad = (spark.read.format("cosnotify").option("channel", ior).option("constraint", "$n >")
           .load())
    constraint_error = None
    try:
        bad.schema  # noqa: B018
    except Exception as exc:  # noqa: BLE001 - reported
        constraint_error = f"{type(exc).__name__}: {exc}"
    return {"load_returned": loaded, "schema_error": error,
            "constraint_error": constraint_error}


def batch_read(spark: Any, ior: str) -> dict[str, Any]:
    proxy_id = spark_bridge.create_subscription(ior, "$n >= 5")
    sent = [alarm(i) for i in range(20)]
    _push(ior, sent)
    rows = (spark.read.format("cosnotify").option("channel", ior).option("proxy_id", proxy_id)
            .option("max_events", 15).option("idle_timeout", WAIT).load().collect())
    return _outcome(_events(rows), sent[5:])


def stream_read(spark: Any, ior: str, scratch: Path) -> dict[str, Any]:
    proxy_id = spark_bridge.create_subscription(ior, "$n < 3 or $n >= 10")
    sent = [alarm(i) for i in range(20)]
    _push(ior, sent)  # queued by the subscription until the query pulls it
    out = scratch / "stream-out"
    query = (spark.readStream.format("cosnotify").option("channel", ior)
             .option("proxy_id", proxy_id).option("max_events_per_batch", 5).load()
             .writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(scratch / "stream-checkpoint"))
             .trigger(availableNow=True).start())
    try:
        ended = query.awaitTermination(WAIT)
    finally:
        query.stop()
    batches = sum(1 for p in query.recentProgress if p.numInputRows)
    error = query.exception()
    rows = spark.read.parquet(str(out)).collect()
    result = _outcome(_events(rows), [*sent[:3], *sent[10:]])
    result.update(ended=bool(ended), batches=batches,
                  error=str(error) if error else None)
    return result


def write(spark: Any, ior: str) -> dict[str, Any]:
    proxy_id = spark_bridge.create_subscription(ior)
    sent = [alarm(i) for i in range(10)]
    df = spark.createDataFrame([event_to_row(e, arrival=0.0) for e in sent],
                               event_schema()).repartition(2)
    df.write.format("cosnotify").mode("append").option("channel", ior) \
        .option("batch_size", 3).save()
    subscription = connect.PullSubscription.open(connect.ChannelAddress(ior), proxy_id=proxy_id)
    try:
        got = subscription.drain(len(sent), idle_timeout=WAIT)
    finally:
        subscription.close()
    return _outcome(sorted(got, key=number), sent)


def _tcl_run(spark: Any) -> dict[str, Any]:
    from spark_bridge import tcl_filter, translate

    sent = [alarm(i) for i in range(10)]
    df = spark.createDataFrame([event_to_row(e, arrival=0.0) for e in sent], event_schema())
    result: dict[str, Any] = {}
    for name, constraint in {"sql": "$n >= 5 and $ne == 'NE-2'",
                             "udf": "$where.rack >= 7"}.items():
        rows = tcl_filter(df, constraint).collect()
        result[name] = {"mode": translate(constraint).mode,
                        "numbers": [number(e) for e in _events(rows)]}
    return result


def tcl(spark: Any) -> dict[str, Any]:
    """tcl_filter on a Connect DataFrame, as the bridge is: one constraint Spark SQL
    decides, one for the bridge's UDF (a path into a property's value)."""
    return _tcl_run(spark)


def sink(spark: Any, ior: str, scratch: Path) -> dict[str, Any]:
    out = scratch / "sink-out"
    proxy = spark_bridge.SparkSinkProxy.attach_remote(
        ior, spark, constraint="$n >= 6", path=str(out), max_batch_size=2,
        pacing_interval=0.2, write_retries=0)
    sent = [alarm(i) for i in range(10)]
    try:
        _push(ior, sent)
        arrived = proxy.wait(lambda s: s.written >= 4 or s.failed, WAIT)
    finally:
        proxy.close(WAIT)
    stats = proxy.stats()
    failure = proxy.failure
    result: dict[str, Any] = {"arrived": arrived, "batches": stats.batches,
                              "written": stats.written, "failed": stats.failed,
                              "failure": (f"{type(failure.error).__name__}: {failure.error}"
                                          if failure else None)}
    if out.exists():
        result.update(_outcome(_events(spark.read.parquet(str(out)).collect()), sent[6:]))
    return result


def _run(scenario: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return scenario()
    except Exception as exc:  # noqa: BLE001 - reported, the test decides
        return {"exception": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc()[-3000:]}


def main(url: str, factory_ior: str, scratch: Path) -> dict[str, Any]:
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote(url).getOrCreate()
    try:
        result: dict[str, Any] = {"session": f"{type(spark).__module__}.{type(spark).__name__}",
                                  "client_pid": os.getpid()}
        spark_bridge.register(spark)
        orb = connect.client_orb()
        factory = orb.string_to_object(factory_ior)._narrow(CA.EventChannelFactory)
        channels = []
        try:
            def channel() -> str:
                made, _ = factory.create_channel([], [])
                channels.append(made)
                return str(orb.object_to_string(made))

            result["options"] = _run(lambda: options(spark, channel()))
            result["batch_read"] = _run(lambda: batch_read(spark, channel()))
            result["stream_read"] = _run(lambda: stream_read(spark, channel(), scratch))
            result["write"] = _run(lambda: write(spark, channel()))
            result["tcl"] = _run(lambda: tcl(spark))
            result["sink"] = _run(lambda: sink(spark, channel(), scratch))
        finally:
            for made in channels:
                made.destroy()
        return result
    finally:
        spark.stop()


if __name__ == "__main__":
    outcome = main(sys.argv[1], sys.argv[2], Path(sys.argv[3]))
    print("RESULT " + json.dumps(outcome), flush=True)
