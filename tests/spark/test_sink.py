"""SparkSinkProxy with the real (session-wide) SparkSession and a real in-process channel.

Every wait is on a condition (the sink's ``wait``, a callback's Condition, the
channel dispatcher's ``wait_idle``); time-based flushing is driven by
``ManualClock``. Nothing sleeps.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from omniORB import CORBA

import CosEventComm
import CosNotification as N
import CosNotifyChannelAdmin as CA

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from spark_bridge import SinkWriteError, SparkSinkProxy, property_value, row_to_event
from spark_bridge.schema import COLUMNS, event_schema
from tests.spark.compare import same_events
from tests.spark.conftest import WAIT, alarm, number

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


class Batches:
    """A ``(df, batch_id)`` callback that collects rows; may fail or hold the writer."""

    def __init__(self, failures: int = 0, gate: threading.Event | None = None) -> None:
        self.failures = failures  # how many calls raise before one succeeds (-1: all)
        self.gate = gate
        self.calls: list[int] = []
        self.batches: list[tuple[int, list[Any]]] = []
        self.cond = threading.Condition()

    def __call__(self, df: Any, batch_id: int) -> None:
        with self.cond:
            self.calls.append(batch_id)
            self.cond.notify_all()
        if self.gate is not None:
            assert self.gate.wait(WAIT)
        if self.failures:
            self.failures -= 1
            raise OSError("disk full")
        rows = df.collect()
        with self.cond:
            self.batches.append((batch_id, rows))
            self.cond.notify_all()

    def wait_rows(self, count: int) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.rows_count() >= count, WAIT)

    def rows_count(self) -> int:
        return sum(len(rows) for _, rows in self.batches)

    def events(self) -> list[Any]:
        with self.cond:
            return [row_to_event(row) for _, rows in self.batches for row in rows]


@pytest.fixture
def factory() -> Iterator[EventChannelFactory]:
    f = EventChannelFactory()
    yield f
    f.close()


@pytest.fixture
def channel(factory: EventChannelFactory) -> Any:
    return factory.create_channel([], [])[0]


def supplier(channel: Any) -> Any:
    """A connected structured push proxy consumer to push events into ``channel``."""
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_push_supplier(None)
    return proxy


class TestChannelToDataFrame:
    """Events pushed into a real channel land in DataFrames with the right columns and values."""

    def test_attach_uses_a_sequence_proxy_batching_by_qos(self, spark: Any, channel: Any) -> None:
        """attach(): MaximumBatchSize cuts the batches; rows carry every column and value."""
        batches = Batches()
        admin = channel._get_default_consumer_admin()
        sink = SparkSinkProxy.attach(admin, spark, callback=batches, max_batch_size=5,
                                     pacing_interval=0)
        try:
            push = supplier(channel).push_structured_event
            events = [alarm(i, [N.Property("Priority", CORBA.Any(CORBA.TC_short, i))])
                      for i in range(10)]
            for event in events:
                push(event)
            assert batches.wait_rows(10)
            assert [(batch_id, len(rows)) for batch_id, rows in batches.batches] == [(0, 5), (1, 5)]
            assert same_events(sorted(batches.events(), key=number), events)
            (row,) = [r for _, rows in batches.batches for r in rows if r.event_name == "alarm-3"]
            assert tuple(row.__fields__) == COLUMNS
            assert (row.domain_name, row.type_name, row.event_name, row.priority) == \
                ("Telecom", "CommunicationsAlarm", "alarm-3", 3)
            assert row.expiry_time is None
            proxy_ids = admin._get_push_suppliers()
            assert len(proxy_ids) == 1
            proxy = admin.get_proxy_supplier(proxy_ids[0])
            qos = {p.name: p.value._v for p in proxy.get_qos()}
            assert qos["MaximumBatchSize"] == 5
        finally:
            sink.close()
        assert admin._get_push_suppliers() == []  # close() disconnected the proxy

    def test_structured_proxy_and_sql_over_the_batch(self, spark: Any, channel: Any) -> None:
        """A structured proxy works too; Spark SQL reads typed, nested values from the VARIANTs."""
        frames: list[Any] = []
        done = threading.Event()

        def keep(df: Any, batch_id: int) -> None:
            frames.append(df)
            done.set()

        sink = SparkSinkProxy(spark, callback=keep, max_batch_size=6, pacing_interval=0)
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(sink)
        try:
            push = supplier(channel).push_structured_event
            for i in range(6):
                push(alarm(i))
            assert done.wait(WAIT)
            df = frames[0]
            assert df.schema == event_schema()
            got = df.select(
                "event_name",
                property_value("severity", as_type="string").alias("severity"),
                property_value("n", as_type="int").alias("n"),
                property_value("counter", as_type="decimal(20,0)").alias("counter"),
                property_value("where").alias("where"),
            ).selectExpr("event_name", "severity", "n", "cast(counter as string) as counter",
                         "variant_get(`where`, '$.site', 'string') as site",
                         "variant_get(`where`, '$.rack', 'int') as rack").orderBy("n").collect()
            assert [r.severity for r in got] == ["CLEARED", "WARNING", "MINOR", "MAJOR",
                                                 "CRITICAL", "CLEARED"]
            assert got[5].counter == str(2**64 - 1 - 5) and got[4].rack == 4
            assert {r.site for r in got} == {"Paris"}
            df.createOrReplaceTempView("alarms")
            (big,) = spark.sql("select count(*) as c from alarms where variant_get(get(filter("
                               "filterable_data, p -> p.name = 'n'), 0).value, '$', 'int') > 3"
                               ).collect()
            assert big.c == 2
        finally:
            sink.close()


class TestFlushing:
    """Batches are cut by size and by time (an injected clock)."""

    def test_size(self, spark: Any) -> None:
        """max_batch_size events make a batch at once; the rest wait for the window."""
        clock = ManualClock()
        batches = Batches()
        with SparkSinkProxy(spark, callback=batches, max_batch_size=3, pacing_interval=10,
                            clock=clock) as sink:
            for i in range(7):
                sink.push_structured_event(alarm(i))
            assert batches.wait_rows(6)
            assert [len(rows) for _, rows in batches.batches] == [3, 3]
            assert sink.stats().buffered == 1
            clock.advance(10)
            assert batches.wait_rows(7)
        assert [number(e) for e in batches.events()] == list(range(7))

    def test_time(self, spark: Any) -> None:
        """A short batch goes when the pacing window that its first event opened ends."""
        clock = ManualClock()
        batches = Batches()
        with SparkSinkProxy(spark, callback=batches, max_batch_size=100, pacing_interval=5,
                            clock=clock) as sink:
            for i in range(3):
                sink.push_structured_event(alarm(i))
            clock.advance(4.9)
            assert sink.stats().batches == 0 and clock.pending() == 1
            clock.advance(0.1)
            assert batches.wait_rows(3)
            sink.push_structured_event(alarm(3))  # a new window opens
            clock.advance(5)
            assert batches.wait_rows(4)
            assert [(batch_id, len(rows)) for batch_id, rows in batches.batches] == [(0, 3), (1, 1)]

    def test_sequence_push_ends_a_batch(self, spark: Any) -> None:
        """A sequence push is already a batch (the channel cut it by QoS): it goes at once."""
        batches = Batches()
        with SparkSinkProxy(spark, callback=batches, max_batch_size=100, pacing_interval=0,
                            clock=ManualClock()) as sink:
            sink.push_structured_events([alarm(i) for i in range(4)])
            assert batches.wait_rows(4)
            assert [len(rows) for _, rows in batches.batches] == [4]


class TestWriteFailures:
    """At least once: failed writes are retried; a batch that keeps failing is kept, not lost."""

    def test_retried_until_it_succeeds(self, spark: Any) -> None:
        """Two failures then success: one batch, written with the same batch_id each time."""
        batches = Batches(failures=2)
        with SparkSinkProxy(spark, callback=batches, max_batch_size=3, pacing_interval=0,
                            write_retries=3, retry_interval=0) as sink:
            sink.push_structured_events([alarm(i) for i in range(3)])
            assert batches.wait_rows(3)
            assert batches.calls == [0, 0, 0]
            assert sink.stats().attempts == 3 and sink.failure is None

    def test_gives_up_and_disconnects(self, spark: Any, channel: Any) -> None:
        """After the retries the sink fails, leaves the channel and keeps the batch."""
        batches = Batches(failures=-1)
        admin = channel._get_default_consumer_admin()
        sink = SparkSinkProxy.attach(admin, spark, callback=batches, max_batch_size=4,
                                     pacing_interval=0, write_retries=2, retry_interval=0)
        push = supplier(channel).push_structured_event
        for i in range(4):
            push(alarm(i))
        assert sink.wait(lambda s: s.failed, WAIT)
        failure = sink.failure
        assert isinstance(failure, SinkWriteError)
        assert (failure.batch_id, failure.rows, failure.attempts) == (0, 4, 3)
        assert isinstance(failure.error, OSError)
        assert batches.calls == [0, 0, 0]
        assert [number(e) for e, _ in sink.unwritten()] == [0, 1, 2, 3]
        assert admin._get_push_suppliers() == []
        with pytest.raises(CosEventComm.Disconnected):
            sink.push_structured_event(alarm(9))
        with pytest.raises(SinkWriteError):
            sink.flush()
        sink.close()

    def test_unattached_sink_raises_disconnected_to_the_channel(self, spark: Any,
                                                                channel: Any) -> None:
        """Not attached: the next push raises Disconnected, so the channel destroys the proxy."""
        batches = Batches(failures=-1)
        sink = SparkSinkProxy(spark, callback=batches, max_batch_size=2, pacing_interval=0,
                              write_retries=0)
        admin = channel._get_default_consumer_admin()
        proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(sink)
        push = supplier(channel).push_structured_event
        push(alarm(0))
        push(alarm(1))
        assert sink.wait(lambda s: s.failed, WAIT)
        push(alarm(2))
        assert channel._service.dispatcher.wait_idle()
        assert admin._get_push_suppliers() == []
        assert [number(e) for e, _ in sink.unwritten()] == [0, 1]
        sink.close()


class TestBackpressure:
    """A full buffer blocks push until the writer frees room."""

    def test_push_blocks_then_resumes(self, spark: Any) -> None:
        """With 4 events held (2 writing, 2 waiting) the fifth push waits; nothing is lost."""
        gate = threading.Event()
        batches = Batches(gate=gate)
        sink = SparkSinkProxy(spark, callback=batches, max_batch_size=2, max_buffered=4,
                              pacing_interval=0)
        pusher = threading.Thread(
            target=lambda: [sink.push_structured_event(alarm(i)) for i in range(8)])
        pusher.start()
        try:
            # The writer holds 2 at the gate; 2 more wait; the fifth push is blocked.
            assert sink.wait(lambda s: s.blocked_pushes == 1 and s.in_flight == 2, WAIT)
            stats = sink.stats()
            assert (stats.received, stats.in_flight, stats.buffered) == (4, 2, 2)
            assert pusher.is_alive()
        finally:
            gate.set()
        pusher.join(WAIT)
        assert not pusher.is_alive()
        sink.flush(WAIT)
        sink.close()
        assert [number(e) for e in batches.events()] == list(range(8))


class TestTargets:
    """Batches can be appended to a Parquet path or a table instead of a callback."""

    def test_parquet_path(self, spark: Any, tmp_path: Any) -> None:
        """Rows appended to Parquet read back into the same events."""
        path = str(tmp_path / "events")
        with SparkSinkProxy(spark, path=path, max_batch_size=2, pacing_interval=0) as sink:
            sink.push_structured_events([alarm(i) for i in range(3)])
            sink.flush(WAIT)
        rows = spark.read.parquet(path).collect()
        assert same_events(sorted((row_to_event(r) for r in rows), key=number),
                           [alarm(i) for i in range(3)])

    def test_table(self, spark: Any) -> None:
        """Rows appended with saveAsTable."""
        spark.sql("drop table if exists cosnotify_sink_test")
        with SparkSinkProxy(spark, table="cosnotify_sink_test", max_batch_size=10,
                            pacing_interval=0) as sink:
            sink.push_structured_events([alarm(i) for i in range(2)])
            sink.push_structured_events([alarm(i) for i in range(2, 3)])
            sink.flush(WAIT)
        assert spark.table("cosnotify_sink_test").count() == 3
        spark.sql("drop table cosnotify_sink_test")
