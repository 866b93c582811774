"""The parts of ``spark_bench.py`` that need other processes: stream reads and a cluster.

Strategy: ``spark_bench.py`` imports this module; it is not run by itself.

* **Stream reads.** ``cosnotify serve --db STORE --db-sync normal`` runs as a
  child process on 127.0.0.1 (port 0; ready once it logs "serving"), started
  with ``tests/spark/cluster.py``'s :class:`Daemon` (its output read in a
  thread, a deadline on readiness, the process group stopped with SIGTERM).
  Each run makes a new channel with ConnectionReliability and
  EventReliability Persistent and, in it, one subscription: a
  ``SequenceProxyPullSupplier`` (``create_subscription``, read at most once)
  or an acknowledging ``StructuredProxyPullSupplierAck``
  (``create_ack_subscription``, read exactly once). This process then pushes
  the events over IIOP (sequences of ``PUSH_BATCH``, one
  ``SequenceProxyPushConsumer``) and waits, on the server's
  ``CosNotifyMonitor`` snapshot, until the subscription has them all.
  Only the query is timed: from ``readStream...load()`` until a
  ``Trigger.AvailableNow`` query to the ``noop`` sink terminates; it must
  have read every event. The channel is destroyed after each run, so every
  run starts on the same server with one channel and one subscription.
* **Without Spark.** The same pulls made by this process with the readers'
  own clients (``PullSubscription.pull`` and ``AckPuller.pull`` /
  ``acknowledge``), to show what the IIOP calls cost apart from Spark.
* **A standalone cluster.** A master and two one-core workers on 127.0.0.1
  from the pyspark wheel, and a session on it, made by
  ``tests/spark/cluster.py`` (``SparkCluster``, ``cluster_session``), as the
  test suite makes them. A process has one SparkContext: the caller stops its
  ``local[2]`` session first.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # tests/spark/cluster.py

from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA

import spark_bridge
from spark_bridge.connect import ChannelAddress, PullSubscription, client_orb
from tests.spark.cluster import Daemon, SparkCluster, cluster_session, executor_tasks

__all__ = ["DURABLE_QOS", "PUSH_BATCH", "Run", "Served", "StreamBench", "executor_tasks",
           "on_cluster", "stream_report"]

DURABLE_QOS = [N.Property("ConnectionReliability", CORBA.Any(CORBA.TC_short, N.Persistent)),
               N.Property("EventReliability", CORBA.Any(CORBA.TC_short, N.Persistent))]
#: Events per push_structured_events call of the supplier (not timed).
PUSH_BATCH = 500
#: Seconds to wait for the server to start, and for pushed events to reach a subscription.
WAIT = 120.0
READS = ("at most once", "exactly once")


@attrs.frozen
class Run:
    """One timed stream read: seconds, micro-batches with rows, and the seconds of each
    phase Spark reports per trigger (``durationMs``), summed over the triggers."""

    seconds: float
    batches: int
    phases: dict[str, float]


class Served:
    """``cosnotify serve --db`` on 127.0.0.1, as a child process (module docstring)."""

    def __init__(self, workdir: Path) -> None:
        self.ior_file = workdir / "factory.ior"
        self.daemon = Daemon("cosnotify serve", [
            sys.executable, "-m", "cosnotify", "serve", "--endpoint", "127.0.0.1:0",
            "--ior-file", str(self.ior_file), "--db", str(workdir / "store.db"),
            "--db-sync", "normal"], dict(os.environ), ROOT)
        try:
            self.daemon.wait_for(r"cosnotify: serving ", WAIT)
        except BaseException:
            self.daemon.stop()
            raise
        self.ior = self.ior_file.read_text().strip()

    def stop(self) -> None:
        self.daemon.stop()


class StreamBench:
    """Channels, subscriptions and pushes on one :class:`Served` (module docstring)."""

    def __init__(self, server: Served) -> None:
        import CosNotifyMonitor  # cosnotify's own stubs: importable once cosnotify.corba is

        self.url = server.ior
        self.orb = client_orb()
        factory = self.orb.string_to_object(self.url)
        self.factory = factory._narrow(CA.EventChannelFactory)
        self.monitor = factory._narrow(CosNotifyMonitor.EventChannelFactory)
        #: Read options added to every read (partitions_report).
        self.extra: dict[str, str] = {}

    @contextmanager
    def subscription(self, read: str) -> Iterator[tuple[int, dict[str, str]]]:
        """A new persistent channel with one subscription of ``read`` (one of READS):
        ``(channel id, the read's options)``; the channel is destroyed afterwards."""
        channel, channel_id = self.factory.create_channel(DURABLE_QOS, [])
        try:
            if read == READS[0]:
                proxy_id = spark_bridge.create_subscription(self.url, channel_id=channel_id)
                options = {"channel": self.url, "channel_id": str(channel_id),
                           "proxy_id": str(proxy_id)}
            else:
                options = spark_bridge.create_ack_subscription(
                    self.url, channel_id=channel_id).options()
            yield channel_id, options
        finally:
            channel.destroy()

    def push(self, channel_id: int, events: list[Any]) -> None:
        """Push ``events`` into the channel; return once its subscription holds them."""
        channel = self.factory.get_event_channel(channel_id)
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.SEQUENCE_EVENT)
        proxy = proxy._narrow(CA.SequenceProxyPushConsumer)
        proxy.connect_sequence_push_supplier(None)
        for at in range(0, len(events), PUSH_BATCH):
            proxy.push_structured_events(events[at:at + PUSH_BATCH])
        proxy.disconnect_sequence_push_consumer()
        self._settle(channel_id, len(events))

    def _settle(self, channel_id: int, count: int) -> None:
        """Wait until ``count`` events are in and routed (no dispatch work left): a
        persistent event is stored, and so queued or spilled, before its push returns."""
        give_up = time.monotonic() + WAIT
        while True:
            snapshot = json.loads(self.monitor.snapshot([channel_id]))
            counters = snapshot["channels"][0]["counters"]
            workers = snapshot["workers"]
            if counters["events_in"] >= count and not workers["busy"] and not workers["queued"]:
                return
            if time.monotonic() > give_up:
                raise RuntimeError(f"the events did not settle in {WAIT} s: {counters}")
            time.sleep(0.05)

    def read(self, spark: Any, options: dict[str, str], batch: int, count: int,
             checkpoint: Path) -> Run:
        """A ``Trigger.AvailableNow`` query to ``noop`` that must read ``count`` events."""
        start = time.perf_counter()
        query = (spark.readStream.format("cosnotify").options(**options, **self.extra)
                 .option("max_events_per_batch", str(batch)).load()
                 .writeStream.format("noop").option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        if not query.awaitTermination(WAIT * 5):
            query.stop()
            raise RuntimeError("the stream read did not end")
        elapsed = time.perf_counter() - start
        if query.exception() is not None:
            raise RuntimeError(f"the stream read failed: {query.exception()}")
        progress = query.recentProgress
        rows = sum(p.numInputRows for p in progress)
        if rows != count:
            raise RuntimeError(f"the stream read {rows} rows, not {count}")
        phases: dict[str, float] = {}
        for p in progress:
            for phase, millis in p.durationMs.items():
                phases[phase] = phases.get(phase, 0.0) + millis / 1000
        return Run(elapsed, sum(1 for p in progress if p.numInputRows), phases)

    def stream_run(self, spark: Any, read: str, events: list[Any], batch: int) -> Run:
        """One run: a new subscription, ``events`` pushed (not timed), one timed read."""
        scratch = Path(tempfile.mkdtemp(prefix="spark_bench-"))
        try:
            with self.subscription(read) as (channel_id, options):
                self.push(channel_id, events)
                return self.read(spark, options, batch, len(events), scratch / "checkpoint")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def pull_seconds(self, read: str, events: list[Any], batch: int
                     ) -> tuple[float, float]:
        """Without Spark: seconds to pull ``events`` with the reader's client, in steps
        of ``batch``; and, of those, the seconds spent acknowledging (exactly once)."""
        from spark_bridge.acked import AckPuller

        with self.subscription(read) as (channel_id, options):
            self.push(channel_id, events)
            admin = int(options["admin_id"]) if "admin_id" in options else None
            address = ChannelAddress(self.url, channel_id, admin, 60.0)
            pulled, acking = 0, 0.0
            start = time.perf_counter()
            if read == READS[0]:
                subscription = PullSubscription.open(address, None, int(options["proxy_id"]))
                while pulled < len(events):
                    pulled += len(subscription.pull(batch))
                return time.perf_counter() - start, 0.0
            puller = AckPuller.open(address, int(options["proxy_id"]))
            while pulled < len(events):
                given = puller.pull(batch)
                mark = time.perf_counter()
                puller.acknowledge([number for number, _ in given])
                acking += time.perf_counter() - mark
                pulled += len(given)
            return time.perf_counter() - start, acking


#: Spark's trigger phases (StreamingQueryProgress.durationMs) and what runs in them here.
#: Spark commits a source's previous batch inside walCommit, after the offset log write.
PHASES = (("latestOffset", "latestOffset: pull + convert to Arrow (source runner)"),
          ("addBatch", "addBatch: partitions (Arrow IPC) + the tasks"),
          ("walCommit", "walCommit: offset log + commit (exactly once: ack)"),
          ("commitOffsets", "commitOffsets: commit log"),
          ("queryPlanning", "queryPlanning"),
          ("getBatch", "getBatch"))


def stream_report(spark: Any, events: list[Any], batch: int, repeat: int) -> None:
    """Print the stream-read section of spark_bench.py (module docstring)."""
    n = len(events)
    workdir = Path(tempfile.mkdtemp(prefix="spark_bench-serve-"))
    t0 = time.perf_counter()
    server = Served(workdir)
    try:
        bench = StreamBench(server)
        spark_bridge.register(spark)
        for read in READS:  # warm-up: the source runner, the planner, both readers
            bench.stream_run(spark, read, events[:2 * batch], batch)
        runs: dict[str, list[Run]] = {read: [] for read in READS}
        for _ in range(repeat):  # in turns, so drift on a shared machine hits both
            for read in READS:
                runs[read].append(bench.stream_run(spark, read, events, batch))
        pulls = {read: bench.pull_seconds(read, events, batch) for read in READS}
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    fastest = {read: min(runs[read], key=lambda r: r.seconds) for read in READS}
    rates = {read: n / fastest[read].seconds for read in READS}
    print(f"\n== stream read: cosnotify serve --db (SQLite, --db-sync normal) on 127.0.0.1, "
          f"persistent channel\n{n:,} events queued in one subscription, then read by "
          f"readStream ... trigger(availableNow) -> noop, max_events_per_batch {batch:,}; "
          f"events/s, best of {repeat} (every run)")
    for read, kind in zip(READS, ("create_subscription: SequenceProxyPullSupplier",
                                  "create_ack_subscription: StructuredProxyPullSupplierAck")):
        every = ", ".join(f"{n / r.seconds:,.0f}" for r in runs[read])
        print(f"  {read + ' (' + kind + ')':80}{rates[read]:8,.0f}   ({every})")
    ratio = rates[READS[1]] / rates[READS[0]]
    print(f"  {'exactly once / at most once':80}{ratio:8.0%}   (goal: >= 50%)")
    print("Where the time of the fastest runs went, seconds (Spark's durationMs, summed over "
          "the triggers):")
    print(f"  {'':56}{'at most once':>14}{'exactly once':>14}")
    for key, label in PHASES:
        print(f"  {label:56}" + "".join(f"{fastest[r].phases.get(key, 0.0):14.2f}"
                                       for r in READS))
    print(f"  {'other (query start, AvailableNow drain, stop)':56}" + "".join(
        f"{fastest[r].seconds - fastest[r].phases.get('triggerExecution', 0.0):14.2f}"
        for r in READS))
    print(f"  {'total':56}" + "".join(f"{fastest[r].seconds:14.2f}" for r in READS)
          + f"   ({', '.join(str(fastest[r].batches) for r in READS)} batches)")
    print(f"Without Spark: this process pulls {n:,} with the reader's client, "
          f"{batch:,} at a time:")
    amo, _ = pulls[READS[0]]
    ack, acking = pulls[READS[1]]
    print(f"  at most once: try_pull_structured_events, 1,000 per call {n / amo:10,.0f} "
          f"events/s {amo / n * 1e6:6.0f} us/event")
    print(f"  exactly once: try_pull_structured_event, 1 per call      {n / ack:10,.0f} "
          f"events/s {ack / n * 1e6:6.0f} us/event (acknowledge: {acking / n * 1e6:.0f} us)")
    print(f"(stream section: {time.perf_counter() - t0:.0f} s)")


def partitions_report(spark: Any, events: list[Any], batch: int, repeat: int,
                      counts: tuple[int, ...] = (1, 2, 4)) -> None:
    """Exactly-once stream reads split into 1, 2 and 4 partitions by ``$ne`` (docs/spark.md,
    "Parallel reads"), on ``spark`` (the cluster): events/s, against one partition."""
    n = len(events)
    workdir = Path(tempfile.mkdtemp(prefix="spark_bench-serve-"))
    server = Served(workdir)
    try:
        bench = StreamBench(server)
        spark_bridge.register(spark)
        bench.stream_run(spark, READS[1], events[:2 * batch], batch)  # warm-up
        runs: dict[int, list[Run]] = {count: [] for count in counts}
        for _ in range(repeat):  # in turns
            for count in counts:
                bench.extra = {"partitions": str(count), "partition_by": "$ne"}
                runs[count].append(bench.stream_run(spark, READS[1], events, batch))
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    rates = {count: n / min(r.seconds for r in runs[count]) for count in counts}
    print(f"\nexactly-once stream read on the cluster, {n:,} events, max_events_per_batch "
          f"{batch:,}, split by $ne; events/s, best of {repeat} (every run)")
    for count in counts:
        every = ", ".join(f"{n / r.seconds:,.0f}" for r in runs[count])
        print(f"  partitions {count}: {rates[count]:10,.0f}   {rates[count] / rates[1]:5.0%} "
              f"of 1 partition   ({every})")


@contextmanager
def on_cluster(workers: int = 2) -> Iterator[tuple[Any, float]]:
    """A SparkSession on a new standalone cluster of ``workers`` one-core workers, and the
    seconds the cluster and session took to start; the cluster is stopped afterwards."""
    scratch = Path(tempfile.mkdtemp(prefix="spark_bench-cluster-"))
    start = time.perf_counter()
    cluster = SparkCluster(scratch, workers=workers).start()
    spark = None
    try:
        spark = cluster_session(cluster.master_url, str(scratch), executors=workers,
                                name="spark_bench")
        yield spark, time.perf_counter() - start
    finally:
        if spark is not None:
            spark.stop()
        cluster.stop()
        shutil.rmtree(scratch, ignore_errors=True)
