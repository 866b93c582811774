"""Regressions found by reviewing the data source, the writer, the remote sink and tcl.

Each test names the input that went wrong. The data source tests run against
a ``NotificationServer`` on loopback, like ``test_source.py``; the rest need
no channel, and several no JVM. Nothing sleeps: waits are on conditions.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
from typing import Any

import pytest
from omniORB import CORBA
from pyspark.sql.streaming.datasource import ReadAllAvailable
from pyspark.sql.types import VariantVal

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyChannelAdmin__POA
import CosNotifyComm__POA

import spark_bridge
from cosnotify.filter import ConstraintSyntaxError
from cosnotify.server import NotificationServer
from spark_bridge import ChannelError, ConversionError, connect, event_schema, event_to_row
from spark_bridge import source as source_module
from spark_bridge.source import SourceOptions, StreamReader
from tests.spark.channels import Channel
from tests.spark.conftest import WAIT, alarm, number
from tests.spark.test_tcl import POINT, a, assert_same, ev

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

#: A source runner's life in brief (argv[1]: the channel's IOR; argv[2]: "worker"
#: for a SIGTERM while it waits for the JVM, then another while stop() disconnects;
#: "eof" for stop() after the JVM closed the socket, with a SIGTERM mid-stop).
SIGTERM_TWICE = """
import signal, sys
from spark_bridge import connect
from spark_bridge.source import SourceOptions, StreamReader

real_close = connect.PullSubscription.close

def close(self):
    signal.raise_signal(signal.SIGTERM)  # the factory's SIGTERM, mid-stop (handled now)
    real_close(self)
    print("closed", flush=True)

connect.PullSubscription.close = close
reader = StreamReader(SourceOptions({"channel": sys.argv[1], "constraint": "$n > 1"}))
reader.initialOffset()
print(reader._subscription.proxy_id, flush=True)
if sys.argv[2] == "eof":
    reader.stop()
    print("not deferred", flush=True)
try:
    try:
        signal.raise_signal(signal.SIGTERM)  # the worker's SIGTERM: the handler runs now
        print("not unwound", flush=True)
    except SystemExit:
        print("unwound", flush=True)
        raise
finally:
    reader.stop()
"""

#: A SIGTERM that arrives while the runner waits in an ORB call (argv[2]: a consumer in
#: the test process that holds the call until the test has sent the signal).
SIGTERM_IN_A_CALL = """
import atexit, sys
import omniORB
from omniORB import CORBA
import CosNotification as N, CosNotifyComm
from spark_bridge import connect
from spark_bridge.source import SourceOptions, StreamReader

real_close = connect.PullSubscription.close

def close(self):
    real_close(self)
    print("closed", flush=True)

connect.PullSubscription.close = close
atexit.register(lambda: print("ORB released:", omniORB.orb is None, flush=True))
reader = StreamReader(SourceOptions({"channel": sys.argv[1]}))
reader.initialOffset()
print(reader._subscription.proxy_id, flush=True)
gate = connect.client_orb().string_to_object(sys.argv[2])._narrow(
    CosNotifyComm.StructuredPushConsumer)
event = N.StructuredEvent(N.EventHeader(N.FixedEventHeader(N.EventType("d", "t"), "e"), []),
                          [], CORBA.Any(CORBA.TC_null, None))
try:
    try:
        gate.push_structured_event(event)
        print("no signal", flush=True)
    except SystemExit:
        print("unwound after the call returned", flush=True)
        raise
finally:
    reader.stop()
"""


#: A process that made its ORB, then forks: the child must not get the broken copy.
FORKED = """
import os
from spark_bridge import connect
connect.client_orb()
pid = os.fork()
if pid == 0:
    try:
        connect.client_orb()
        print("child got the inherited ORB", flush=True)
    except connect.InheritedORBError:
        print("child refused", flush=True)
    os._exit(0)
os.waitpid(pid, 0)
print("parent still served:", connect.client_orb() is connect.client_orb(), flush=True)
"""

#: A client whose channel factory never answers (argv[1]); the call timeout is 0.3 s.
HUNG_FACTORY = """
import sys
from spark_bridge import connect
try:
    connect.resolve_channel(connect.client_orb(),
                            connect.ChannelAddress(sys.argv[1], call_timeout=0.3))
except connect.ChannelError as exc:
    print(exc.detail, flush=True)
"""


class HungFactory(CosNotifyChannelAdmin__POA.EventChannelFactory):  # type: ignore[misc]
    """An EventChannelFactory whose get_all_channels waits for ``release``."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def get_all_channels(self) -> list[int]:
        self.release.wait(WAIT)
        return []


class Gate(CosNotifyComm__POA.StructuredPushConsumer):  # type: ignore[misc]
    """A consumer whose push waits for ``release``: a call the test holds open."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.returned = threading.Event()

    def push_structured_event(self, event: Any) -> None:
        self.entered.set()
        self.release.wait(WAIT)
        self.returned.set()

    def offer_change(self, added: Any, removed: Any) -> None:
        pass

    def disconnect_structured_push_consumer(self) -> None:
        pass


def error_text(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    """An exception and its causes, as one text (Spark wraps Python errors)."""
    parts, exc = [], excinfo.value
    while exc is not None:
        parts.append(str(exc))
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return "\n".join(parts)


class TestTclSqlText:
    def test_dollar_brace_in_a_literal_is_not_substituted(self, spark: Any) -> None:
        """'${spark.sql.session.timeZone}' in a constraint is text, not the conf's value:
        Spark substitutes ${...} in SQL text, so the literal must not reach it raw."""
        events = [ev(ne=a(CORBA.TC_string, "UTC")),
                  ev(ne=a(CORBA.TC_string, "${spark.sql.session.timeZone}")),
                  ev(ne=a(CORBA.TC_string, "${env:HOME}"))]
        assert_same(spark, ["$ne == '${spark.sql.session.timeZone}'", "$ne == '${env:HOME}'",
                            "$ne ~ '${spark.sql.session.timeZone}!'",
                            "$.filterable_data(ne) != '${spark.sql.session.timeZone}'"], events)

    def test_udf_rebuilds_events_holding_object_references(self, spark: Any) -> None:
        """A constraint left to the UDF over a row holding an object reference: the UDF
        rebuilt the event without an ORB and failed the whole query."""
        orb = connect.client_orb()
        ref = orb.string_to_object("corbaloc::127.0.0.1:1/Anything")
        events = [ev(r=a(CORBA.TC_Object, ref), n=a(CORBA.TC_long, 5)),
                  ev(r=a(CORBA.TC_Object, None), n=a(CORBA.TC_long, 6))]
        df = spark.createDataFrame([event_to_row(e, 0.0, references=orb) for e in events],
                                   event_schema())
        constraint = "$curtime.time > 0 and $n == 5 and exist $r"
        assert spark_bridge.translate(constraint).mode == "udf"
        matched = spark_bridge.tcl_filter(df, constraint).collect()
        assert [number_of(row) for row in matched] == [5]


def number_of(row: Any) -> int:
    event = spark_bridge.row_to_event(row, references=connect.client_orb())
    return int(next(p.value.value() for p in event.filterable_data if p.name == "n"))


class FakeProxy:
    """A SequenceProxyPullSupplier holding ``events`` that hands out at most ``batch``."""

    def __init__(self, events: list[Any], batch: int) -> None:
        self.events = list(events)
        self.batch = batch

    def get_qos(self) -> list[Any]:
        return [N.Property("MaximumBatchSize", CORBA.Any(CORBA.TC_long, self.batch))]

    def try_pull_structured_events(self, most: int) -> tuple[list[Any], bool]:
        n = min(most, self.batch)
        taken, self.events = self.events[:n], self.events[n:]
        return taken, bool(taken)


class EndlessProxy(FakeProxy):
    """A proxy fed faster than it is pulled: every pull comes back full, without end
    (``calls`` bounds the test instead of hanging it when a pull never stops)."""

    def __init__(self, batch: int, calls: int = 1000) -> None:
        super().__init__([], batch)
        self.calls, self.pulled = calls, 0

    def try_pull_structured_events(self, most: int) -> tuple[list[Any], bool]:
        self.calls -= 1
        if self.calls < 0:
            raise AssertionError(f"{self.pulled} events pulled and still pulling")
        n = min(most, self.batch)
        self.pulled += n
        return [alarm(1)] * n, True


def fake_reader(proxy: FakeProxy, pull_size: int = 1000) -> StreamReader:
    reader = StreamReader(SourceOptions({"channel": "IOR:", "pull_size": str(pull_size)}))
    reader._subscription = connect.PullSubscription(None, proxy, 7, False, pull_size)
    return reader


class TestStreamOffsets:
    def test_available_now_restart_numbers_from_the_checkpoint(self) -> None:
        """Trigger.AvailableNow restarted from a checkpoint at offset 5: the events pulled
        before Spark gave the start offset were numbered from 0 and then dropped."""
        reader = fake_reader(FakeProxy([alarm(i) for i in range(3)], batch=1000))
        reader.prepareForTriggerAvailableNow()
        # Spark replays the unfinished batch [3, 5) first: nothing of it is buffered here.
        assert reader.partitions({"events": 3}, {"events": 5}) == []
        reader.commit({"events": 5})
        end = reader.latestOffset({"events": 5}, ReadAllAvailable())
        assert end == {"events": 8, "source": reader.options.source}
        (part,) = reader.partitions({"events": 5}, end)
        rows = [r for batch in reader.read(part) for r in batch.to_pylist()]
        assert [r["event_name"] for r in rows] == ["alarm-0", "alarm-1", "alarm-2"]

    def test_a_subscription_with_a_smaller_batch_is_drained(self) -> None:
        """pull_size 100 on a subscription whose MaximumBatchSize is 2: the first short
        pull looked like an empty queue, so AvailableNow served 2 of 5 events."""
        proxy = FakeProxy([alarm(i) for i in range(5)], batch=2)
        reader = fake_reader(proxy, pull_size=100)
        reader.prepareForTriggerAvailableNow()
        assert reader.latestOffset({"events": 0}, ReadAllAvailable())["events"] == 5
        assert proxy.events == []

    def test_reading_all_available_pulls_at_most_the_cap(self, monkeypatch: Any) -> None:
        """max_events_per_batch 0 (ReadAllAvailable) on a channel fed faster than the
        reader pulls: one latestOffset pulls at most MAX_PULL events, and the backlog
        holds no more than a batch (review 128: it pulled, and grew, without end);
        Trigger.AvailableNow's drain stops at the cap too."""
        monkeypatch.setattr(source_module, "MAX_PULL", 50)
        proxy = EndlessProxy(batch=10)
        reader = fake_reader(proxy, pull_size=10)
        start = reader.initialOffset()
        for _ in range(3):
            end = reader.latestOffset(start, ReadAllAvailable())
            assert end["events"] - start["events"] == 50
            assert sum(t.num_rows for _, t in reader._backlog) == 50
            assert sum(p.rows for p in reader.partitions(start, end)) == 50
            reader.commit(end)
            start = end
        assert proxy.pulled == 150
        frozen = fake_reader(EndlessProxy(batch=10), pull_size=10)
        frozen.prepareForTriggerAvailableNow()
        assert frozen.latestOffset({"events": 0}, ReadAllAvailable())["events"] == 50
        assert frozen.latestOffset({"events": 50}, ReadAllAvailable())["events"] == 50

    def test_a_checkpoint_of_another_read_is_refused(self) -> None:
        """Offsets name the read they count (issue 16: a checkpoint from a different
        subscription or channel is refused, never read silently); offsets written
        before they did are taken."""
        reader = fake_reader(FakeProxy([alarm(i) for i in range(3)], batch=1000))
        mine = reader.initialOffset()
        assert mine == {"events": 0, "source": "IOR:|channel_id=None|admin_id=None|proxy_id=None"}
        other = {"events": 4, "source": "IOR:|channel_id=3|admin_id=None|proxy_id=12"}
        with pytest.raises(connect.ChannelError, match="the checkpoint is of another read"):
            reader.latestOffset(other, ReadAllAvailable())
        with pytest.raises(connect.ChannelError, match="proxy_id=12"):
            reader.partitions(other, {**other, "events": 6})
        assert reader.latestOffset({"events": 0}, ReadAllAvailable())["events"] == 3

    def test_restarted_query_reads_what_the_subscription_queued(
            self, registered: Any, channel: Channel, tmp_path: Any) -> None:
        """The same, end to end: two AvailableNow runs on one checkpoint get every event."""
        proxy_id = spark_bridge.create_subscription(channel.url, channel_id=channel.id,
                                                    pull_size=2)
        got: list[int] = []

        def collect(df: Any, batch_id: int) -> None:
            got.extend(number(spark_bridge.row_to_event(r)) for r in df.collect())

        def run() -> None:
            query = (registered.readStream.format("cosnotify").option("channel", channel.ior)
                     .option("proxy_id", proxy_id).option("pull_size", 100).load()
                     .writeStream.foreachBatch(collect)
                     .option("checkpointLocation", str(tmp_path / "checkpoint"))
                     .trigger(availableNow=True).start())
            assert query.awaitTermination(WAIT * 2)
            assert query.exception() is None

        channel.push([alarm(i) for i in range(5)])
        run()
        assert sorted(got) == list(range(5))
        channel.push([alarm(i) for i in range(5, 9)])
        run()
        assert sorted(got) == list(range(9))
        spark_bridge.drop_subscription(channel.url, proxy_id, channel_id=channel.id)

    def test_a_query_restarted_on_another_subscription_fails(
            self, registered: Any, channel: Channel, tmp_path: Any) -> None:
        """The checkpoint of a read of one subscription, given to a read of another:
        the restarted query fails with the reason instead of counting on."""
        first = spark_bridge.create_subscription(channel.url, channel_id=channel.id)
        second = spark_bridge.create_subscription(channel.url, channel_id=channel.id)

        def run(proxy_id: int) -> Any:
            query = (registered.readStream.format("cosnotify").option("channel", channel.ior)
                     .option("proxy_id", proxy_id).load()
                     .writeStream.foreachBatch(lambda df, batch_id: df.count())
                     .option("checkpointLocation", str(tmp_path / "checkpoint"))
                     .trigger(availableNow=True).start())
            with contextlib.suppress(Exception):  # StreamingQueryException: read below
                query.awaitTermination(WAIT * 2)
            return query

        channel.push([alarm(i) for i in range(3)])
        assert run(first).exception() is None
        failed = run(second).exception()
        assert failed is not None
        assert "the checkpoint is of another read" in str(failed)
        assert f"proxy_id={first}" in str(failed)
        for proxy_id in (first, second):
            spark_bridge.drop_subscription(channel.url, proxy_id, channel_id=channel.id)


class TestOptions:
    @pytest.mark.parametrize(("options", "message"), [
        ({"constriant": "$n == 1"}, "unknown option"),
        ({"path": "/tmp/x"}, "not in a path"),
        ({"idle_timeout": "nan"}, "finite"),
        ({"idle_timeout": "inf"}, "finite"),
        ({"idle_timeout": "-1"}, "finite"),
        ({"pull_size": "0"}, "pull_size"),
        ({"pull_size": str(2**31)}, "pull_size"),
        ({"max_events": "0"}, "max_events"),
        ({"max_events_per_batch": "-1"}, "max_events_per_batch"),
        ({"channel_id": "x"}, "integer"),
    ])
    def test_bad_read_options(self, options: dict[str, str], message: str) -> None:
        """Each was accepted: a typo read unfiltered, NaN made a batch read wait forever,
        0 silently became the default."""
        with pytest.raises(ValueError, match=message):
            SourceOptions({"channel": "IOR:", **options})

    def test_channel_problems_fail_at_load(self, registered: Any, channel: Channel) -> None:
        """An unreachable channel or a missing subscription failed a task or the running
        query later; an unknown option was ignored."""
        reader = registered.read.format("cosnotify")
        with pytest.raises(Exception) as excinfo:
            reader.option("channel", "corbaloc::127.0.0.1:1/NotifyEventChannelFactory").load()
        assert "cannot resolve" in error_text(excinfo)
        with pytest.raises(Exception) as excinfo:
            reader.option("channel", channel.ior).option("proxy_id", 4242).load()
        assert "no proxy 4242" in error_text(excinfo)
        with pytest.raises(Exception) as excinfo:
            registered.readStream.format("cosnotify").option("channel", channel.ior) \
                .option("constriant", "$n == 1").load()
        assert "constriant" in error_text(excinfo)
        df = registered.createDataFrame([event_to_row(alarm(0), 0.0)], event_schema())
        with pytest.raises(Exception) as excinfo:
            df.write.format("cosnotify").mode("append").option("channel", channel.ior) \
                .option("constraint", "$n == 1").save()
        assert "unknown option" in error_text(excinfo)
        assert channel.pull_proxies() == []


class TestWrite:
    def test_rows_that_are_not_events_are_refused(self) -> None:
        """NULLs and VARIANTs that do not fit their type: some became odd errors, others
        (5 as a string, true as a long, 100000 as a short) were coerced or pushed."""
        good = event_to_row(alarm(1), 0.0)

        def with_property(type_text: str, json: str) -> tuple[Any, ...]:
            row = list(good)
            row[4] = [("n", type_text, VariantVal.parseJson(json))]
            return tuple(row)

        def with_column(index: int, value: Any) -> tuple[Any, ...]:
            row = list(good)
            row[index] = value
            return tuple(row)

        bad = {
            "domain_name": with_column(0, None),
            "variable_header": with_column(3, None),
            "remainder_of_body": with_column(5, None),
            "filterable_data\\[0\\].value is NULL": with_column(4, [("n", "long", None)]),
            "filterable_data\\[0\\].name": with_column(
                4, [(None, "long", VariantVal.parseJson("1"))]),
            "a string expected": with_property("string", "5"),
            "an integer expected": with_property("long", "true"),
            "a boolean expected": with_property("boolean", "1"),
            "outside": with_property("short", "100000"),
            "one character": with_property("char", '"AB"'),
            "longer than 3": with_property('{"kind":"string","bound":3}', '"abcd"'),
            "2 members": with_property(spark_bridge.encode_typecode(POINT), "[1]"),
        }
        for message, row in bad.items():
            with pytest.raises(ConversionError, match=message):
                spark_bridge.row_to_event(row)
        assert spark_bridge.row_to_event(with_property("double", "1.5")).filterable_data[0] \
            .value.value() == 1.5  # Spark's own JSON numbers still read as doubles

    def test_write_fails_on_a_bad_row_before_pushing_it(self, registered: Any,
                                                        channel: Channel) -> None:
        """df.write of a row whose VARIANT does not fit: it was pushed, coerced."""
        out = channel.collector()
        row = list(event_to_row(alarm(1), 0.0))
        row[4] = [("n", "string", VariantVal.parseJson("5"))]
        df = registered.createDataFrame([tuple(row)], event_schema())
        with pytest.raises(Exception) as excinfo:
            df.write.format("cosnotify").mode("append").option("channel", channel.ior).save()
        assert "row 0 of this task is not an event" in error_text(excinfo)
        assert channel.server.factory.service.dispatcher.wait_idle()
        assert out.events == []


class TestReleases:
    def test_close_releases_proxy_and_filter(self, channel: Channel) -> None:
        """close() disconnects the query's proxy and destroys its filter. (After a SIGTERM
        the old ORB closed through a second ORB; omniORB has one per process, and a signal
        cannot stop it mid-call, so the same ORB closes.)"""
        subscription = connect.PullSubscription.open(connect.ChannelAddress(channel.ior),
                                                     "$n > 1")
        flt = subscription._filter
        assert subscription.proxy_id in channel.connected_pull_proxies()
        subscription.close()
        assert subscription.proxy_id not in channel.pull_proxies()
        assert flt._non_existent()

    def test_a_sigterm_during_a_call_waits_for_it(self, channel: Channel,
                                                  omniorb: Any) -> None:
        """A SIGTERM that arrives while the runner waits in an ORB call unwinds it once the
        call returned (omniORB runs Python's handler only then): stop() disconnects through
        the same ORB, which the runner then destroys before it exits, with no abort."""
        gate = Gate()
        poa = omniorb.resolve_initial_references("RootPOA")
        gate_ior = omniorb.object_to_string(poa.servant_to_reference(gate))
        child = subprocess.Popen([sys.executable, "-c", SIGTERM_IN_A_CALL, channel.ior, gate_ior],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert gate.entered.wait(WAIT)
            child.send_signal(signal.SIGTERM)  # the child is inside push_structured_event
            gate.release.set()
            out, err = child.communicate(timeout=WAIT)
        finally:
            gate.release.set()
            if child.poll() is None:
                child.kill()
            poa.deactivate_object(poa.servant_to_id(gate))
        assert child.returncode == 128 + signal.SIGTERM, err
        assert gate.returned.is_set()
        proxy_id, *lines = out.splitlines()
        assert lines == ["unwound after the call returned", "closed", "ORB released: True"]
        assert "terminate called" not in err
        assert channel.wait_for_pull_proxies(lambda ids: int(proxy_id) not in ids)
        assert int(proxy_id) not in channel.pull_proxies()

    def test_a_second_sigterm_does_not_interrupt_stop(self, channel: Channel) -> None:
        """pyspark stops a source runner with two SIGTERMs (worker, then factory); the
        second one raised SystemExit inside stop() and left the proxy connected."""
        before = channel.connected_pull_proxies()
        result = subprocess.run([sys.executable, "-c", SIGTERM_TWICE, channel.ior, "worker"],
                                check=False, capture_output=True, text=True, timeout=WAIT)
        assert result.returncode == 128 + signal.SIGTERM, result.stderr
        proxy_id = int(result.stdout.split()[0])
        assert proxy_id not in before
        assert result.stdout.split()[1:] == ["unwound", "closed"]
        assert "terminate called" not in result.stderr
        assert channel.wait_for_pull_proxies(lambda ids: ids == before)
        assert proxy_id not in channel.pull_proxies()

    def test_a_sigterm_during_an_ordinary_stop_waits_for_it(self, channel: Channel) -> None:
        """stop() after end of stream, SIGTERM mid-stop: the proxy is disconnected first,
        then the signal ends the process."""
        before = channel.connected_pull_proxies()
        result = subprocess.run([sys.executable, "-c", SIGTERM_TWICE, channel.ior, "eof"],
                                check=False, capture_output=True, text=True, timeout=WAIT)
        assert result.returncode == 128 + signal.SIGTERM, result.stderr
        proxy_id = int(result.stdout.split()[0])
        assert result.stdout.split()[1:] == ["closed"]
        assert channel.wait_for_pull_proxies(lambda ids: ids == before)
        assert proxy_id not in channel.pull_proxies()

    def test_a_forked_child_gets_an_error_not_a_broken_orb(self) -> None:
        """omniORB's ORB does not survive a fork (lost replies, destroy() aborts): a child
        forked after client_orb() is refused one instead of served a broken copy."""
        result = subprocess.run([sys.executable, "-c", FORKED], check=False,
                                capture_output=True, text=True, timeout=WAIT)
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == ["child refused", "parent still served: True"]

    def test_a_hung_channel_times_out(self, omniorb: Any) -> None:
        """Calls had no timeout: a channel that never answers held the task forever. Each
        reference the bridge obtains now carries call_timeout."""
        factory = HungFactory()
        poa = omniorb.resolve_initial_references("RootPOA")
        ior = omniorb.object_to_string(poa.servant_to_reference(factory))
        try:
            result = subprocess.run([sys.executable, "-c", HUNG_FACTORY, ior], check=False,
                                    capture_output=True, text=True, timeout=WAIT)
        finally:
            factory.release.set()
            poa.deactivate_object(poa.servant_to_id(factory))
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("cannot resolve: TIMEOUT"), result.stdout

    def test_remote_sink_with_a_bad_constraint_leaves_no_filter(
            self, server: NotificationServer, channel: Channel) -> None:
        """attach_remote with a malformed constraint left a filter in the channel per try."""
        kept = len(server.objects._kept)
        with pytest.raises(ConstraintSyntaxError):
            spark_bridge.SparkSinkProxy.attach_remote(
                channel.url, object(), channel_id=channel.id, constraint="$n >>> 1",
                callback=lambda df, batch_id: None)
        with pytest.raises(ValueError, match="pacing_interval"):
            spark_bridge.SparkSinkProxy.attach_remote(
                channel.url, object(), channel_id=channel.id, constraint="$n > 1",
                callback=lambda df, batch_id: None, pacing_interval=-1)
        assert len(server.objects._kept) == kept
        assert channel.core._get_default_consumer_admin()._get_push_suppliers() == []

    def test_drop_subscription_of_another_proxy(self, channel: Channel) -> None:
        """drop_subscription with the id of a push proxy raised AttributeError."""
        admin = channel.core._get_default_consumer_admin()
        _, proxy_id = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        with pytest.raises(ChannelError, match="neither a SequenceProxyPullSupplier"):
            spark_bridge.drop_subscription(channel.url, proxy_id, channel_id=channel.id)

    def test_pull_from_a_destroyed_channel(self, server: NotificationServer) -> None:
        """A channel destroyed under a reader: a bare OBJECT_NOT_EXIST; now it says why."""
        doomed = Channel(server)
        subscription = connect.PullSubscription.open(
            connect.ChannelAddress(doomed.url, doomed.id))
        doomed.core.destroy()
        try:
            with pytest.raises(ChannelError, match="no longer exists"):
                subscription.pull()
        finally:
            subscription.close()
