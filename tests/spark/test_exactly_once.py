"""Exactly-once reads through an acknowledging subscription (docs/spark.md).

The server runs in the test process with a SQLite store, as in
``test_source.py``; Spark's Python processes reach it over IIOP. The proof
with real crashes (the driver and the server killed with SIGKILL) is
``test_kills_lose_and_repeat_nothing`` at the end.
"""

from __future__ import annotations

import collections
import json
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pytest
from omniORB import CORBA
from pyspark.errors import StreamingQueryException
from pyspark.sql.streaming.datasource import ReadMaxRows

import CosNotification as N
import CosNotifyChannelAdmin as CA

import spark_bridge
from cosnotify.server import NotificationServer, ServerConfig
from spark_bridge import ChannelError, row_to_event
from spark_bridge.acked import numbers_text, parse_numbers
from spark_bridge.ackstream import AckStreamReader
from spark_bridge.source import SourceOptions
from tests.spark.conftest import WAIT, alarm, number

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

DURABLE_QOS = [N.Property("ConnectionReliability", CORBA.Any(CORBA.TC_short, N.Persistent)),
               N.Property("EventReliability", CORBA.Any(CORBA.TC_short, N.Persistent))]


@pytest.fixture(scope="module")
def durable(omniorb: Any, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[NotificationServer]:
    """A server with a store, in this process (its calls from Spark travel over IIOP)."""
    db = tmp_path_factory.mktemp("exactly-once") / "store.db"
    srv = NotificationServer(ServerConfig(port=0, call_timeout=30.0, db=db,
                                          db_sync="NORMAL")).start()
    yield srv
    srv.stop()


class Durable:
    """A persistent channel of ``durable`` and an in-process sequence supplier."""

    def __init__(self, server: NotificationServer, qos: list[Any] = DURABLE_QOS) -> None:
        self.server = server
        self.core, self.id = server.factory.create_channel(qos, [])
        self.url = server.factory_url
        entry, _ = self.core._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.SEQUENCE_EVENT)
        entry.connect_sequence_push_supplier(None)
        self.entry = entry

    def push(self, numbers: range) -> None:
        self.entry.push_structured_events([alarm(i, header=[]) for i in numbers])
        assert self.server.factory.service.dispatcher.wait_idle()

    def proxy(self, sub: spark_bridge.AckSubscription) -> Any:
        return self.core.get_consumeradmin(sub.admin_id)._lookup(sub.proxy_id)


@pytest.fixture
def channel(durable: NotificationServer) -> Iterator[Durable]:
    made = Durable(durable)
    yield made
    made.core.destroy()


def parquet_numbers(spark: Any, path: Path) -> list[int]:
    """The event numbers in a file sink's output (its committed files only)."""
    return sorted(number(row_to_event(r)) for r in spark.read.parquet(str(path)).collect())


def available_now(spark: Any, sub: spark_bridge.AckSubscription, out: Path,
                  **options: Any) -> Any:
    """Start a Trigger.AvailableNow query of ``sub`` into Parquet under ``out``."""
    return (spark.readStream.format("cosnotify").options(**sub.options())
            .options(**{k: str(v) for k, v in options.items()}).load()
            .writeStream.format("parquet").option("path", str(out / "data"))
            .option("checkpointLocation", str(out / "checkpoint"))
            .trigger(availableNow=True).start())


def drain_to_parquet(spark: Any, sub: spark_bridge.AckSubscription, out: Path,
                     **options: Any) -> None:
    query = available_now(spark, sub, out, **options)
    assert query.awaitTermination(WAIT * 2)
    assert query.exception() is None


class TestNumbers:
    def test_offsets_carry_numbers_as_ranges(self) -> None:
        assert numbers_text([9, 3, 4, 5, 12, 13, 4]) == "3-5,9,12-13"
        assert parse_numbers("3-5,9,12-13") == {3, 4, 5, 9, 12, 13}
        assert parse_numbers("") == set() and numbers_text([]) == ""


class TestSubscription:
    def test_a_best_effort_channel_is_refused(self, durable: NotificationServer) -> None:
        """Exactly once needs events that outlive the server: the at-most-once path
        (create_subscription) is the one for best-effort channels."""
        best_effort = Durable(durable, qos=[])
        try:
            with pytest.raises(ChannelError, match="persistent channel"):
                spark_bridge.create_ack_subscription(best_effort.url,
                                                     channel_id=best_effort.id)
            assert best_effort.core.get_all_consumeradmins() == [0]  # nothing left behind
        finally:
            best_effort.core.destroy()

    def test_made_read_and_dropped(self, registered: Any, channel: Durable) -> None:
        sub = spark_bridge.create_ack_subscription(channel.url, "$n < 5", channel_id=channel.id)
        assert sub.admin_id != 0
        assert sub.options() == {"channel": channel.url, "channel_id": str(channel.id),
                                 "admin_id": str(sub.admin_id), "proxy_id": str(sub.proxy_id)}
        channel.push(range(10))
        rows = registered.read.format("cosnotify").options(**sub.options()).load().collect()
        assert sorted(number(row_to_event(r)) for r in rows) == [0, 1, 2, 3, 4]
        # The SequenceNumber is the channel's delivery mark, not part of the event.
        assert all(p["name"] != "SequenceNumber" for r in rows for p in r["variable_header"])
        sub.drop()
        assert sub.admin_id not in channel.core.get_all_consumeradmins()


class TestStream:
    def test_each_event_once_across_runs(self, registered: Any, channel: Durable,
                                         tmp_path: Path) -> None:
        """Runs of one query (same checkpoint): every event once in the output. Spark
        commits a batch when it plans the next one, so a run's last batch stays
        unacknowledged in the channel until the next run starts from it."""
        sub = spark_bridge.create_ack_subscription(channel.url, channel_id=channel.id)
        channel.push(range(300))
        drain_to_parquet(registered, sub, tmp_path, max_events_per_batch=70)
        assert parquet_numbers(registered, tmp_path / "data") == list(range(300))
        channel.push(range(300, 450))
        drain_to_parquet(registered, sub, tmp_path, max_events_per_batch=70)
        assert parquet_numbers(registered, tmp_path / "data") == list(range(450))
        proxy = channel.proxy(sub)
        with proxy._lock:
            assert 0 < len(proxy._unacked) <= 70 and len(proxy._queue) == 0
        drain_to_parquet(registered, sub, tmp_path, max_events_per_batch=70)  # nothing new
        assert parquet_numbers(registered, tmp_path / "data") == list(range(450))
        with proxy._lock:
            assert not proxy._unacked and len(proxy._queue) == 0

    def test_partitions_keep_the_order_of_each_key(self, registered: Any,
                                                   channel: Durable) -> None:
        """partitions=3, partition_by=$severity: each batch is read by up to three Spark
        partitions; every event of one severity is in one of them, in channel order."""
        from pyspark.sql.functions import spark_partition_id

        sub = spark_bridge.create_ack_subscription(channel.url, channel_id=channel.id)
        channel.push(range(60))
        batches: list[list[tuple[int, str, int]]] = []

        def collect(df: Any, batch_id: int) -> None:
            rows = df.withColumn("pid", spark_partition_id()).collect()
            batches.append([(r["pid"], str(row_to_event(r).filterable_data[0].value.value()),
                             number(row_to_event(r))) for r in rows])

        query = (registered.readStream.format("cosnotify").options(**sub.options())
                 .option("max_events_per_batch", 25).option("partitions", 3)
                 .option("partition_by", "$severity").load()
                 .writeStream.foreachBatch(collect).trigger(availableNow=True).start())
        assert query.awaitTermination(WAIT * 2)
        assert sorted(n for batch in batches for _, _, n in batch) == list(range(60))
        assert all(len(batch) <= 25 for batch in batches)
        used = set()
        where: dict[str, set[int]] = {}
        for batch in batches:
            for pid, severity, _ in batch:
                where.setdefault(severity, set()).add(pid)
                used.add(pid)
        assert all(len(pids) == 1 for pids in where.values()), where  # across batches too
        for batch in batches:
            for severity in where:  # rows of a partition come in order: n grows per key
                ns = [n for _, key, n in batch if key == severity]
                assert ns == sorted(ns)
        assert len(used) > 1

    def test_partitions_need_a_key(self, registered: Any, channel: Durable) -> None:
        sub = spark_bridge.create_ack_subscription(channel.url, channel_id=channel.id)
        with pytest.raises(Exception, match="partition_by"):
            registered.readStream.format("cosnotify").options(**sub.options()) \
                .option("partitions", 2).load()
        with pytest.raises(Exception, match="partition_by"):
            registered.readStream.format("cosnotify").options(**sub.options()) \
                .option("partitions", 2).option("partition_by", "severity").load()
        with pytest.raises(Exception, match="partitions"):
            registered.readStream.format("cosnotify").options(**sub.options()) \
                .option("partition_by", "$severity").load()


def rows_of(parts: list[Any]) -> list[int]:
    """The event numbers in a reader's partitions, in order."""
    got = []
    for part in parts:
        for batch in part.batches():
            got += [number(row_to_event(r)) for r in pa.Table.from_batches([batch]).to_pylist()]
    return got


class TestReader:
    """The exactly-once reader driven as Spark's source runner drives it, without Spark
    (its calls go to the server in this process)."""

    def reader(self, sub: spark_bridge.AckSubscription, **extra: str) -> AckStreamReader:
        return AckStreamReader(SourceOptions({**sub.options(), **extra}))

    def test_copies_given_again_do_not_take_the_next_batch(self, channel: Durable) -> None:
        """RetryInterval passes while Spark works on a batch (it commits a batch when it
        plans the next one): the copies the channel gives again are pulled past, and
        the next batch holds new events -- or the query would never commit again."""
        sub = spark_bridge.create_ack_subscription(channel.url, channel_id=channel.id,
                                                   retry_interval=0.2)
        channel.push(range(30))
        reader = self.reader(sub)
        start = reader.initialOffset()
        first = reader.latestOffset(start, ReadMaxRows(10))
        assert rows_of(reader.partitions(start, first)) == list(range(10))
        proxy = channel.proxy(sub)
        with proxy._cond:  # the channel puts the ten back for a pull again
            assert proxy._cond.wait_for(lambda: len(proxy._requeued) == 10, WAIT)
        second = reader.latestOffset(first, ReadMaxRows(10))
        assert rows_of(reader.partitions(first, second)) == list(range(10, 20))
        reader.commit(first)
        third = reader.latestOffset(second, ReadMaxRows(10))
        assert rows_of(reader.partitions(second, third)) == list(range(20, 30))

    def test_a_short_pull_is_planned(self, channel: Durable) -> None:
        """The subscription holds fewer than a batch: what it gave is the batch (found in
        review: a short pull ended the pulling before its events were planned)."""
        sub = spark_bridge.create_ack_subscription(channel.url, channel_id=channel.id)
        channel.push(range(15))
        reader = self.reader(sub)
        start = reader.initialOffset()
        first = reader.latestOffset(start, ReadMaxRows(10))
        second = reader.latestOffset(first, ReadMaxRows(10))
        assert rows_of(reader.partitions(first, second)) == list(range(10, 15))
        assert reader.latestOffset(second, ReadMaxRows(10)) == second  # nothing more

    def test_asked_twice_from_one_start_the_same_batch(self, channel: Durable) -> None:
        sub = spark_bridge.create_ack_subscription(channel.url, channel_id=channel.id)
        channel.push(range(20))
        reader = self.reader(sub)
        start = reader.initialOffset()
        first = reader.latestOffset(start, ReadMaxRows(10))
        assert reader.latestOffset(start, ReadMaxRows(10)) == first
        second = reader.latestOffset(first, ReadMaxRows(10))
        reader.commit(first)
        assert rows_of(reader.partitions(first, second)) == list(range(10, 20))
        proxy = channel.proxy(sub)
        with proxy._lock:
            assert len(proxy._unacked) == 10  # the second batch's, not committed

    def test_available_now_ends_after_max_events_under_a_steady_feed(
            self, channel: Durable) -> None:
        sub = spark_bridge.create_ack_subscription(channel.url, channel_id=channel.id)
        channel.push(range(30))
        reader = self.reader(sub, max_events="30")
        reader.prepareForTriggerAvailableNow()
        start, got, fed = reader.initialOffset(), [], 30
        for _ in range(10):
            end = reader.latestOffset(start, ReadMaxRows(10))
            if end == start:
                break
            got += rows_of(reader.partitions(start, end))
            channel.push(range(fed, fed + 10))  # the feed keeps up with the query
            fed += 10
            start = end
        assert got == list(range(30))


class TestBadInput:
    def test_a_checkpoint_of_another_subscription_is_refused(
            self, registered: Any, channel: Durable, tmp_path: Path) -> None:
        """Its numbers mean nothing to this subscription: the query fails at start,
        reading nothing, and the subscription keeps its events."""
        first = spark_bridge.create_ack_subscription(channel.url, channel_id=channel.id)
        second = spark_bridge.create_ack_subscription(channel.url, channel_id=channel.id)
        channel.push(range(5))
        drain_to_parquet(registered, first, tmp_path)
        query = available_now(registered, second, tmp_path)
        with pytest.raises(StreamingQueryException, match="checkpoint is of another read"):
            query.awaitTermination(WAIT)
        assert parquet_numbers(registered, tmp_path / "data") == list(range(5))
        assert len(channel.proxy(second)._queue) == 5

    def test_the_subscription_destroyed_under_a_running_query(
            self, registered: Any, channel: Durable) -> None:
        """The query fails with ChannelError, saying the proxy is gone."""
        sub = spark_bridge.create_ack_subscription(channel.url, channel_id=channel.id)
        seen: list[int] = []
        cond = threading.Condition()

        def collect(df: Any, batch_id: int) -> None:
            with cond:
                seen.extend(number(row_to_event(r)) for r in df.collect())
                cond.notify_all()

        query = (registered.readStream.format("cosnotify").options(**sub.options()).load()
                 .writeStream.foreachBatch(collect).trigger(processingTime="100 milliseconds")
                 .start())
        try:
            channel.push(range(3))
            with cond:
                assert cond.wait_for(lambda: len(seen) >= 3, WAIT)
            spark_bridge.drop_subscription(channel.url, sub.proxy_id, channel_id=channel.id,
                                           admin_id=sub.admin_id)
            with pytest.raises(StreamingQueryException,
                               match=r"ChannelError: proxy \d+ no longer exists"):
                query.awaitTermination(WAIT)
        finally:
            query.stop()
        assert sorted(seen) == [0, 1, 2]


# -- the proof: real crashes ------------------------------------------------------------------
COUNT = 4000  # events the supplier pushes, at RATE per second
RATE = 100.0
ROOT = Path(__file__).resolve().parents[2]


def job(*args: str) -> Any:
    from tests.interop.notify import harness

    # setsid: the driver, its JVM and their children form a process group to kill.
    return harness.Program(["setsid", sys.executable, "-m", "tests.spark.exactly_once_job",
                            *args], cwd=ROOT)


def kill_group(program: Any) -> None:
    os.killpg(program.proc.pid, signal.SIGKILL)
    program.proc.wait(30)
    for reader in program._readers:  # the pipes end with the group: read to the end
        reader.join(10)
    program.close()


def batches_with_rows(program: Any, count: int, timeout: float) -> None:
    """Wait until ``program`` (a driver) has completed ``count`` batches that read rows."""
    deadline = time.monotonic() + timeout
    seen = 1
    while True:
        lines = program.wait_lines("batch=", seen, max(1.0, deadline - time.monotonic()))
        if sum(1 for line in lines if not line.endswith(" rows=0")) >= count:
            return
        seen += 1


def random_moment(supplier: Any, rng: random.Random) -> None:
    """Return at a random moment of the next half second or so: once the supplier has
    had up to 50 more events accepted (at RATE per second), or has finished."""
    accepted = supplier.count_lines("accepted=")
    target = min(COUNT, accepted + rng.randint(0, int(RATE) // 2))
    supplier.wait_lines("accepted=", target, timeout=60)


def test_kills_lose_and_repeat_nothing(omniorb: Any, spark: Any, tmp_path: Path) -> None:
    """Issue 16's proof: a supplier pushes numbered events without pause; a streaming
    query writes them to Parquet with a checkpoint; its driver (the Python process, its
    JVM and their children) is killed with SIGKILL twice and the server once, each at a
    random moment, and each is restarted. At the end the output holds every number
    exactly once."""
    from tests.interop.peers import free_port
    from tests.server.conftest import ServeProcess

    rng = random.Random()
    port, db = free_port(), tmp_path / "store.db"

    def serve() -> ServeProcess:
        return ServeProcess(tmp_path, "--endpoint", f"127.0.0.1:{port}", "--db", str(db),
                            "--db-sync", "normal", "--call-timeout", "5")

    server = serve()
    programs: list[Any] = []
    try:
        factory = omniorb.string_to_object(server.ior)._narrow(CA.EventChannelFactory)
        channel = omniorb.object_to_string(factory.create_channel(DURABLE_QOS, [])[0])
        sub = spark_bridge.create_ack_subscription(channel, retry_interval=2.0, orb=omniorb)
        options = json.dumps(sub.options())
        supplier = job("supplier", channel, str(COUNT), str(RATE))
        programs.append(supplier)
        supplier.wait_for("accepted")
        for _ in range(2):  # the driver, killed at a random moment of a random batch
            driver = job("driver", options, str(tmp_path / "out"))
            programs.append(driver)
            batches_with_rows(driver, rng.randint(1, 3), timeout=90)
            random_moment(supplier, rng)
            kill_group(driver)
        driver = job("driver", options, str(tmp_path / "out"), "--until", str(COUNT))
        programs.append(driver)
        batches_with_rows(driver, rng.randint(1, 3), timeout=90)
        random_moment(supplier, rng)
        server.process.kill()  # the server, SIGKILL, restarted on its port and store
        server.stop()
        server = serve()
        supplier.wait_line("done", timeout=120)
        driver.finish(timeout=120)
    finally:
        for program in programs:
            if program.proc.poll() is None:
                kill_group(program)
        server.stop()
    got = parquet_numbers(spark, tmp_path / "out" / "data")
    dups = sorted(n for n, c in collections.Counter(got).items() if c > 1)
    missing = sorted(set(range(COUNT)) - set(got))
    assert not dups and not missing, (numbers_text(dups), numbers_text(missing))
    assert got == list(range(COUNT))
