"""``format("cosnotify_history")``: a channel's history as a Spark batch read (docs/spark.md).

Issue 21: "in Spark, as a batch read of history, with time range and types
pushed down to the store". The server (with a store) runs in this process;
Spark's Python workers ask its ``CosNotifyHistory`` over IIOP.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F
from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual, In, LessThan

import CosNotifyChannelAdmin as CA

from cosnotify.history.query import EventId, Retained
from cosnotify.server import NotificationServer, ServerConfig
from spark_bridge import ChannelError
from spark_bridge.history import HistoryOptions, HistoryReader, _history, _table, history_schema
from tests.history.test_channel import event, retain

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

#: Events in the retained channel: D/a, D/b and E/a in turn, 3 supply calls.
EVENTS = 90


@pytest.fixture(scope="module")
def server(omniorb: Any, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[NotificationServer]:
    """A server with a store (retention needs one), on the session ORB."""
    db = tmp_path_factory.mktemp("history") / "store.db"
    srv = NotificationServer(ServerConfig(port=0, call_timeout=30.0, db=Path(db))).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def retained(server: NotificationServer) -> int:
    """A retained channel: event n is of type (D, a), (D, b) or (E, a) by n % 3, with
    source timestamp 1000 + n; pushed in three calls of 30."""
    channel, cid = server.factory.create_channel([], retain(count=10_000))
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.SEQUENCE_EVENT)
    proxy.connect_sequence_push_supplier(None)
    kinds = [("D", "a"), ("D", "b"), ("E", "a")]
    for start in range(0, EVENTS, 30):
        proxy.push_structured_events([event(*kinds[n % 3], n, source=1000.0 + n)
                                      for n in range(start, start + 30)])
    return int(cid)


def options(server: NotificationServer, cid: int, **more: Any) -> dict[str, str]:
    return {"channel": server.factory_url, "channel_id": str(cid),
            **{k: str(v) for k, v in more.items()}}


def read(spark: Any, opts: dict[str, str]) -> Any:
    return spark.read.format("cosnotify_history").options(**opts).load()


def numbers(rows: list[Any]) -> list[int]:
    return sorted(r.n for r in rows)


def with_n(frame: Any) -> Any:
    """The events' filterable ``n`` (tests/history/test_channel.event) as a column."""
    return frame.withColumn("n", F.expr("variant_get(filterable_data[0].value, '$', 'int')"))


def test_every_retained_event_once_with_its_id_and_type(registered: Any, server: Any,
                                                        retained: int) -> None:
    """Eventer's Event: id (server, session, instance), type path, timestamp, source
    timestamp -- each a column; every event exactly once."""
    rows = with_n(read(registered, options(server, retained))).collect()
    assert numbers(rows) == list(range(EVENTS))
    assert len({r.event_instance for r in rows}) == EVENTS
    assert len({r.event_session for r in rows}) == 3  # one session per supply call
    first = min(rows, key=lambda r: r.n)
    assert first.event_type == ["D", "a"]
    assert first.source_time == datetime.datetime(1970, 1, 1, 0, 16, 40)  # 1000 s
    assert first.domain_name == "D" and first.type_name == "a"


def test_filters_on_time_and_type_are_pushed_down(server: Any, retained: int) -> None:
    """pushFilters turns arrival_time/source_time comparisons and domain/type equalities
    into the query's tFrom/tTo, sourceTFrom/sourceTTo and type patterns; Spark keeps
    every filter to check the rows."""
    reader = HistoryReader(HistoryOptions(options(server, retained)))
    moment = datetime.datetime(2020, 1, 1)
    filters = [EqualTo(("domain_name",), "D"), In(("type_name",), ("a", "b")),
               GreaterThanOrEqual(("arrival_time",), moment),
               LessThan(("source_time",), datetime.datetime(1970, 1, 1, 0, 17))]
    left = list(reader.pushFilters(filters))
    assert left == filters
    fields = reader.query_fields()
    assert fields["types"] == [("D", "a", "*"), ("D", "b", "*")]
    # widened by a microsecond: a row's timestamp is rounded to one
    assert fields["tFrom"] == moment.replace(tzinfo=datetime.UTC).timestamp() - 1e-6
    assert fields["sourceTTo"] == 1020.0 + 1e-6


def test_a_filtered_read_matches_the_filtered_table(registered: Any, server: Any,
                                                    retained: int) -> None:
    """Pushed down or not, the rows are those the filters select."""
    frame = with_n(read(registered, options(server, retained)))
    picked = frame.where((F.col("domain_name") == "D") & (F.col("type_name") == "b")
                         & (F.col("source_time") < datetime.datetime(1970, 1, 1, 0, 17)))
    assert numbers(picked.collect()) == [n for n in range(20) if n % 3 == 1]


def test_slices_and_small_pages_lose_and_repeat_nothing(registered: Any, server: Any,
                                                        retained: int) -> None:
    """Partitions split the time range; pages of 7 go on after the last event read,
    though 30 events share each supply call's arrival."""
    whole = read(registered, options(server, retained)).collect()
    arrivals = sorted(r.arrival_time for r in whole)
    low = arrivals[0].replace(tzinfo=datetime.UTC).timestamp()
    high = arrivals[-1].replace(tzinfo=datetime.UTC).timestamp()
    frame = with_n(read(registered, options(server, retained, page_size=7, partitions=3,
                                            **{"from": low - 1, "to": high + 1})))
    assert numbers(frame.collect()) == list(range(EVENTS))


def test_constraint_and_types_options(registered: Any, server: Any, retained: int) -> None:
    """The options say the query in words: types patterns and a constraint in a grammar."""
    frame = with_n(read(registered, options(server, retained, types="E/*",
                                            constraint="$n < 30")))
    assert numbers(frame.collect()) == [n for n in range(30) if n % 3 == 2]


def test_bad_options_fail_the_load(registered: Any, server: Any, retained: int) -> None:
    """Issue 21, "Bad input": a reversed range, an unknown option, a channel that keeps
    no history: a clear error when the read is built, not in a worker."""
    with pytest.raises(ValueError, match="after"):
        HistoryOptions(options(server, retained, **{"from": 20, "to": 10}))
    with pytest.raises(ValueError, match="colour"):
        HistoryOptions(options(server, retained, colour="red"))
    _, plain = server.factory.create_channel([], [])
    with pytest.raises(ChannelError, match="keeps no history"):
        _history(HistoryOptions(options(server, plain)))


class TestReviewFindings:
    """An adversarial review of the Spark history read found these."""

    def test_negations_and_literal_wildcards(self, registered: Any, server: Any,
                                             retained: int) -> None:
        """`!=` reaches pushFilters as Not (no column of its own); a type_name that is
        literally "*" is not a pattern: neither fails the read."""
        frame = with_n(read(registered, options(server, retained)))
        assert numbers(frame.where(F.col("type_name") != "a").collect()) == \
            [n for n in range(EVENTS) if n % 3 == 1]
        assert frame.where(F.col("type_name") == "*").collect() == []

    def test_equality_on_a_timestamp_read_back(self, registered: Any, server: Any,
                                               retained: int) -> None:
        """A row's arrival_time is the channel's double rounded to the microsecond: `=`
        on a value read back finds its supply call's 30 events."""
        frame = with_n(read(registered, options(server, retained)))
        moment = frame.orderBy("n").first().arrival_time
        assert numbers(frame.where(F.col("arrival_time") == moment).collect()) == \
            list(range(30))
        assert len(frame.where(F.col("arrival_time") >= moment).collect()) == EVENTS

    def test_contradictory_filters_read_nothing(self, registered: Any, server: Any,
                                                retained: int) -> None:
        frame = read(registered, options(server, retained))
        picked = frame.where((F.col("arrival_time") > datetime.datetime(2021, 1, 1))
                             & (F.col("arrival_time") < datetime.datetime(2020, 1, 1)))
        assert picked.collect() == []

    def test_many_partitions_over_a_tiny_range(self, registered: Any, server: Any,
                                               retained: int) -> None:
        """16 partitions over 2 us (less than 16 doubles apart at today's times) lose no
        row. The range is a microsecond either side of the first arrival read back: the
        channel's double is within half a microsecond of it, and half a microsecond at
        1.7e9 s is only two doubles, so +-0.5 us missed it now and then."""
        whole = read(registered, options(server, retained)).collect()
        low = min(r.arrival_time for r in whole).replace(tzinfo=datetime.UTC).timestamp()
        frame = with_n(read(registered, options(server, retained, partitions=16,
                                                **{"from": low - 1e-6, "to": low + 1e-6})))
        assert numbers(frame.collect()) == list(range(30))

    def test_many_domains_and_types_push_no_cross_product(self, server: Any,
                                                          retained: int) -> None:
        reader = HistoryReader(HistoryOptions(options(server, retained)))
        domains = tuple(f"d{i}" for i in range(100))
        list(reader.pushFilters([In(("domain_name",), domains),
                                 In(("type_name",), tuple(f"t{i}" for i in range(100)))]))
        assert "types" not in reader.pushed  # 100 domains: past what a store narrows by
        reader = HistoryReader(HistoryOptions(options(server, retained)))
        list(reader.pushFilters([In(("domain_name",), ("D", "E")),
                                 In(("type_name",), tuple(f"t{i}" for i in range(100)))]))
        assert reader.pushed["types"] == [("D", "*"), ("E", "*")]


def test_times_past_year_9999_are_null(spark: Any, omniorb: Any) -> None:
    """A SourceTimestamp or an expiry past 9999-12-31T23:59:59.999999Z (~year 59000 here)
    is a NULL source_time or expiry_time, and the row reads back (review 128: it was
    written, and every collect() of it failed with "year out of range")."""
    far = 1.8e12  # seconds: a TimeT of 1.8e19, near its largest
    events = [Retained(EventId(1, 1, 0), ("D", "a"), 1000.0, far,
                       event=event("D", "a", 0, timeout=far)),
              Retained(EventId(1, 1, 1), ("D", "a"), 1000.0, 1000.0,
                       event=event("D", "a", 1, timeout=5.0))]
    table = _table(events)
    assert table.num_rows == 2
    rows = spark.createDataFrame(table, history_schema()).orderBy("event_instance").collect()
    assert [(r.source_time is None, r.expiry_time is None) for r in rows] == [
        (True, True), (False, False)]
