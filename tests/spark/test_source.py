"""The ``cosnotify`` data source and the remote sink against a server on loopback.

The server runs in the test process; Spark's Python processes (the planner,
the streaming source runner, executor workers) reach it over IIOP like any
remote client (omniORB allows one ORB per process, so the server shares the
test's). Pushing into the channel goes through the in-process core. The
remote sink is checked against a ``cosnotify serve`` child, so that channel
really calls it over IIOP.
Waits are on conditions with a generous bound: the test channel's consumer
admin notifies a condition whenever one of its proxies connects or goes away
(its ``_connection_changed`` hook), and what reaches a channel is recorded by
a push consumer under a condition. Streaming queries stop after the expected
rows arrive (a channel always may have more data, so ``processAllAvailable``
is not used).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

import CosNotifyChannelAdmin as CA

import spark_bridge
from cosnotify.server import NotificationServer
from spark_bridge import ChannelError, connect, event_schema, event_to_row, row_to_event
from tests.spark.channels import Channel
from tests.spark.compare import same_events
from tests.spark.conftest import WAIT, alarm, number

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


class TestResolution:
    def test_channel_and_factory_urls(self, server: NotificationServer,
                                      channel: Channel) -> None:
        """A channel IOR, or the factory's corbaname plus channel_id, name the channel;
        a factory with several channels and no channel_id is refused."""
        orb = connect.client_orb()
        by_ior = connect.resolve_channel(
            orb, connect.ChannelAddress(channel.ior))
        by_factory = connect.resolve_channel(
            orb, connect.ChannelAddress(channel.url, channel.id))
        assert by_ior._is_equivalent(by_factory)
        assert by_factory._is_equivalent(orb.string_to_object(channel.url)._narrow(
            connect.CA.EventChannelFactory).get_event_channel(channel.id))
        other = Channel(server)
        try:
            with pytest.raises(ChannelError, match="channel_id"):
                connect.resolve_channel(
                    orb, connect.ChannelAddress(channel.url))
        finally:
            other.core.destroy()
        with pytest.raises(ChannelError, match="only"):
            connect.resolve_channel(
                orb, connect.ChannelAddress(channel.ior, channel.id + 1))


class TestBatchRead:
    def test_drains_a_subscription(self, registered: Any, channel: Channel) -> None:
        """spark.read drains the events queued for a subscription, filtered in the channel."""
        proxy_id = spark_bridge.create_subscription(channel.url, "$n >= 5 and $n < 15",
                                                    channel_id=channel.id)
        channel.push([alarm(i) for i in range(20)])
        reader = registered.read.format("cosnotify").option("channel", channel.ior) \
            .option("proxy_id", proxy_id)
        rows = reader.load().collect()
        assert sorted(number(row_to_event(r)) for r in rows) == list(range(5, 15))
        assert rows[0]["domain_name"] == "Telecom"
        assert reader.load().count() == 0  # drained
        assert proxy_id in channel.pull_proxies()  # a subscription outlives the read
        spark_bridge.drop_subscription(channel.url, proxy_id, channel_id=channel.id)
        assert proxy_id not in channel.pull_proxies()

    def test_bad_options_fail_at_load(self, registered: Any, channel: Channel) -> None:
        """A malformed constraint or a missing channel is reported when the query is built."""
        with pytest.raises(Exception, match="constraint|unexpected"):
            registered.read.format("cosnotify").option("channel", channel.ior) \
                .option("constraint", "$n >>> 1").load()
        with pytest.raises(Exception, match="channel"):
            registered.read.format("cosnotify").load()


class TestStreamRead:
    def test_micro_batches_follow_the_channel(self, registered: Any, channel: Channel) -> None:
        """readStream gets the matching events in batches of at most max_events_per_batch;
        stopping the query disconnects its proxy."""
        batches: list[list[int]] = []
        cond = threading.Condition()

        def collect(df: Any, batch_id: int) -> None:
            rows = [number(row_to_event(r)) for r in df.collect()]
            with cond:
                batches.append(rows)
                cond.notify_all()

        before = channel.connected_pull_proxies()
        query = (registered.readStream.format("cosnotify")
                 .option("channel", channel.url).option("channel_id", channel.id)
                 .option("constraint", "$n < 3 or $n >= 10")
                 .option("max_events_per_batch", 4)
                 .load().writeStream.foreachBatch(collect).start())
        try:
            assert channel.wait_for_pull_proxies(lambda ids: len(ids) > len(before))
            channel.push([alarm(i) for i in range(20)])
            with cond:
                assert cond.wait_for(lambda: sum(map(len, batches)) >= 13, WAIT), batches
        finally:
            query.stop()
        got = [n for batch in batches for n in batch]
        assert got == [0, 1, 2, *range(10, 20)]
        assert max(map(len, batches)) <= 4
        assert channel.wait_for_pull_proxies(lambda ids: ids == before)

    def test_partitions_by_a_property(self, registered: Any, channel: Channel) -> None:
        """The at-most-once reader splits a micro-batch by partition_by too: every event
        of one key in the Spark partition of one index, in channel order."""
        from pyspark.sql.functions import spark_partition_id

        proxy_id = spark_bridge.create_subscription(channel.url, channel_id=channel.id)
        channel.push([alarm(i) for i in range(30)])
        got: list[tuple[int, str, int]] = []

        def collect(df: Any, batch_id: int) -> None:
            for r in df.withColumn("pid", spark_partition_id()).collect():
                event = row_to_event(r)
                severity = str(event.filterable_data[0].value.value())
                got.append((r["pid"], severity, number(event)))

        query = (registered.readStream.format("cosnotify").option("channel", channel.url)
                 .option("channel_id", channel.id).option("proxy_id", proxy_id)
                 .option("max_events_per_batch", 10)
                 .option("partitions", 3).option("partition_by", "$severity").load()
                 .writeStream.foreachBatch(collect).trigger(availableNow=True).start())
        assert query.awaitTermination(WAIT * 2)
        assert sorted(n for _, _, n in got) == list(range(30))
        severities = {severity for _, severity, _ in got}
        assert len(severities) == 5
        for severity in severities:
            mine = [(pid, n) for pid, key, n in got if key == severity]
            assert len({pid for pid, _ in mine}) == 1  # one index, in every batch
            assert [n for _, n in mine] == sorted(n for _, n in mine)
        assert len({pid for pid, _, _ in got}) > 1
        spark_bridge.drop_subscription(channel.url, proxy_id, channel_id=channel.id)

    def test_available_now_and_the_sink(self, registered: Any, channel: Channel,
                                        server: NotificationServer, tmp_path: Any) -> None:
        """A subscription read with Trigger.AvailableNow, written to another channel
        with writeStream: the events arrive there unchanged."""
        proxy_id = spark_bridge.create_subscription(channel.url, channel_id=channel.id)
        events = [alarm(i, header=[]) for i in range(7)]
        channel.push(events)
        target = Channel(server)
        try:
            out = target.collector()
            query = (registered.readStream.format("cosnotify")
                     .option("channel", channel.ior).option("proxy_id", proxy_id)
                     .load().writeStream.format("cosnotify")
                     .option("channel", target.ior).option("batch_size", 3)
                     .option("checkpointLocation", str(tmp_path / "checkpoint"))
                     .trigger(availableNow=True).start())
            assert query.awaitTermination(WAIT * 2)
            assert query.exception() is None
            assert same_events(out.wait(7), events)
        finally:
            target.core.destroy()


class TestWrite:
    def test_batch_write(self, registered: Any, channel: Channel) -> None:
        """df.write pushes every row as a StructuredEvent."""
        out = channel.collector()
        events = [alarm(i) for i in range(5)]
        df = registered.createDataFrame([event_to_row(e, arrival=0.0) for e in events],
                                        event_schema())
        df.write.format("cosnotify").mode("append").option("channel", channel.ior).save()
        assert same_events(sorted(out.wait(5), key=number), events)


class TestRemoteSink:
    def test_sink_attached_to_a_remote_channel(self, spark: Any, served: Any) -> None:
        """SparkSinkProxy.attach_remote: a channel in another process pushes to a served
        consumer over IIOP, filtered by the constraint; close() releases the proxy."""
        orb = connect.client_orb()  # the process's ORB: it serves the sink's consumer
        factory = orb.string_to_object(served.ior)._narrow(CA.EventChannelFactory)
        channel, channel_id = factory.create_channel([], [])
        rows: list[Any] = []
        done = threading.Event()

        def land(df: Any, batch_id: int) -> None:
            rows.extend(df.collect())
            if len(rows) >= 4:
                done.set()

        try:
            sink = spark_bridge.SparkSinkProxy.attach_remote(
                served.ior, spark, channel_id=channel_id, constraint="$n >= 6",
                callback=land, max_batch_size=2, pacing_interval=0.2)
            admin = channel._get_default_consumer_admin()
            try:
                assert len(admin._get_push_suppliers()) == 1
                supplier, _ = channel._get_default_supplier_admin() \
                    .obtain_notification_push_consumer(CA.SEQUENCE_EVENT)
                supplier = supplier._narrow(CA.SequenceProxyPushConsumer)
                supplier.connect_sequence_push_supplier(None)
                supplier.push_structured_events([alarm(i) for i in range(10)])
                assert done.wait(WAIT)
            finally:
                sink.close()
            assert sorted(number(row_to_event(r)) for r in rows) == [6, 7, 8, 9]
            assert admin._get_push_suppliers() == []
        finally:
            channel.destroy()
