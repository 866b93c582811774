"""SparkSinkProxy's bookkeeping, with a stand-in for Spark (no JVM): fast and exact.

``FakeSpark.createDataFrame`` hands the pyarrow Table straight to the
target, so these tests see exactly what would become each DataFrame.
"""

from __future__ import annotations

import threading
from typing import Any

import pyarrow as pa
import pytest
from omniORB import CORBA, tcInternal

import CosEventComm
import CosNotification as N
import TimeBase

from cosnotify.channel.clock import ManualClock
from spark_bridge import ConversionError, SparkSinkProxy, event_to_row, row_to_event
from spark_bridge.arrow import events_to_arrow
from spark_bridge.schema import arrow_schema
from spark_bridge.sink import backoff_delays
from tests.filter.events import structured
from tests.spark.conftest import WAIT, alarm

ARRIVAL = 1_700_000_000.0


class FakeSpark:
    """Just enough of a SparkSession: the 'DataFrame' is the Arrow table."""

    def createDataFrame(self, table: Any, schema: Any = None) -> Any:
        return table


class Tables:
    """A callback recording each table's row count and batch id; can fail N times."""

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.seen: list[tuple[int, int]] = []
        self.cond = threading.Condition()

    def __call__(self, table: Any, batch_id: int) -> None:
        if self.failures:
            self.failures -= 1
            raise OSError("write refused")
        with self.cond:
            self.seen.append((batch_id, table.num_rows))
            self.cond.notify_all()


def sink(callback: Any, **options: Any) -> SparkSinkProxy:
    options.setdefault("pacing_interval", 0)
    options.setdefault("clock", ManualClock())
    return SparkSinkProxy(FakeSpark(), callback=callback, **options)


class TestConstruction:
    """Bad configurations are refused up front."""

    @pytest.mark.parametrize("options", [
        {}, {"callback": print, "path": "/tmp/x"}, {"callback": print, "max_batch_size": 0},
        {"callback": print, "max_batch_size": 10, "max_buffered": 5},
        {"callback": print, "pacing_interval": -1},
    ])
    def test_refused(self, options: dict[str, Any]) -> None:
        """No target, two targets, or impossible sizes raise ValueError."""
        with pytest.raises(ValueError):
            SparkSinkProxy(FakeSpark(), clock=ManualClock(), **options)

    def test_backoff_doubles_and_caps(self) -> None:
        """The retry waits double from retry_interval up to max_backoff."""
        assert backoff_delays(5, 1.0, 6.0) == [1.0, 2.0, 4.0, 6.0, 6.0]
        assert backoff_delays(0, 1.0, 6.0) == []


class TestBatches:
    """What goes into each batch."""

    def test_close_writes_what_is_left(self) -> None:
        """close() flushes a short batch before stopping."""
        tables = Tables()
        s = sink(tables, max_batch_size=10)
        s.push_structured_event(alarm(1))
        s.close()
        assert tables.seen == [(0, 1)]
        with pytest.raises(CosEventComm.Disconnected):
            s.push_structured_event(alarm(2))

    def test_flush_writes_everything_in_batches_of_max_size(self) -> None:
        """flush() cuts as many batches as needed, none larger than max_batch_size."""
        tables = Tables()
        with sink(tables, max_batch_size=4, max_buffered=20) as s:
            for i in range(10):
                s.push_structured_event(alarm(i))
            s.flush(WAIT)
            assert [rows for _, rows in tables.seen] == [4, 4, 2]
            assert s.stats().written == 10

    def test_channel_disconnect_keeps_accepted_events(self) -> None:
        """When the channel disconnects the sink, what it accepted is still written."""
        tables = Tables()
        with sink(tables, max_batch_size=10) as s:
            s.push_structured_event(alarm(1))
            s.disconnect_structured_push_consumer()
            assert s.wait(lambda st: st.written == 1, WAIT)

    def test_unconvertible_event_is_set_aside(self) -> None:
        """An event that cannot become a row is rejected with its error; the rest are written."""
        tables = Tables()
        bad = alarm(2)
        bad.filterable_data.append(N.Property("ref", CORBA.Any(CORBA.TC_Object, object())))
        with sink(tables, max_batch_size=3) as s:
            s.push_structured_events([alarm(1), bad, alarm(3)])
            assert s.wait(lambda st: st.written == 2 and st.rejected == 1, WAIT)
            (rejected,) = s.rejected()
            assert rejected.event is bad and "ORB" in str(rejected.error)
            assert tables.seen == [(0, 2)]

    def test_batch_of_only_rejects_is_not_written(self) -> None:
        """A batch with no convertible event calls no target and uses no batch id."""
        tables = Tables()
        bad = alarm(1)
        bad.remainder_of_body = CORBA.Any(CORBA.TC_long, "not a long")
        with sink(tables, max_batch_size=1) as s:
            s.push_structured_event(bad)
            s.push_structured_event(alarm(2))
            assert s.wait(lambda st: st.written == 1, WAIT)
        assert tables.seen == [(0, 1)]


class TestRetries:
    """Backoff waits on the injected clock."""

    def test_retry_waits_for_the_clock(self) -> None:
        """A failed write is retried only when the clock reaches the backoff deadline."""
        clock = ManualClock()
        tables = Tables(failures=1)
        with sink(tables, max_batch_size=2, clock=clock, write_retries=1,
                  retry_interval=2.0) as s:
            s.push_structured_events([alarm(1), alarm(2)])
            assert s.wait(lambda st: st.retrying, WAIT)
            clock.advance(1.9)
            assert s.stats().attempts == 1 and s.stats().retrying
            clock.advance(0.1)
            assert s.wait(lambda st: st.written == 2, WAIT)
            assert tables.seen == [(0, 2)]

    def test_failed_sink_keeps_waiting_events(self) -> None:
        """unwritten() returns the failed batch and the events queued behind it, in order."""
        s = sink(Tables(failures=-1), max_batch_size=2, max_buffered=10, write_retries=0)
        s.push_structured_events([alarm(i) for i in range(5)])  # buffered under one lock
        assert s.wait(lambda st: st.failed, WAIT)
        assert [e.header.fixed_header.event_name for e, _ in s.unwritten()] == \
            [f"alarm-{i}" for i in range(5)]
        assert s.stats().in_flight == 2
        s.close()


class TestArrowBatch:
    """The Arrow table matches the Spark schema exactly."""

    def test_schema_and_times(self) -> None:
        """Columns and types are event_schema()'s; times are UTC microseconds."""
        table, rejected = events_to_arrow([(alarm(1), ARRIVAL + 0.5)])
        assert rejected == []
        assert table.schema.equals(arrow_schema())
        assert table.column("arrival_time")[0].value == int((ARRIVAL + 0.5) * 1_000_000)
        assert table.column("priority").type == pa.int16()

    def test_a_name_utf8_cannot_hold_rejects_its_event_alone(self) -> None:
        """An event made in process is not marshalled: a lone surrogate in its name, its
        types or a property name rejects that event, and the batch goes on (review 67:
        the whole batch failed, and the sink's writer thread with it)."""
        odd = [alarm(2), alarm(3), alarm(4), alarm(5)]
        odd[0].header.fixed_header.event_name = "\ud800"
        odd[1].header.fixed_header.event_type.domain_name = "T\udfff"
        odd[2].filterable_data[0].name = "sev\ud801"
        odd[3].header.variable_header.append(N.Property("\udc00", CORBA.Any(CORBA.TC_long, 1)))
        table, rejected = events_to_arrow([(alarm(1), ARRIVAL)] + [(e, ARRIVAL) for e in odd])
        assert table.num_rows == 1 and table.column("event_name")[0].as_py() == "alarm-1"
        assert [r.event for r in rejected] == odd

    def test_an_expiry_past_year_9999_is_null(self) -> None:
        """A header Timeout of 2**64-1 (~year 60000), or a default timeout as far, is
        written as a NULL expiry_time: never (review 128: the row was written, and every
        collect() of it failed with "year out of range"; test_history collects one)."""
        event = alarm(1, [N.Property("Timeout", CORBA.Any(TimeBase._tc_TimeT, 2**64 - 1))])
        table, rejected = events_to_arrow([(event, ARRIVAL), (alarm(2), ARRIVAL)],
                                          default_timeout=2**40)
        assert rejected == [] and table.column("expiry_time").to_pylist() == [None, None]

    def test_priority_outside_short_is_rejected(self) -> None:
        """A header Priority that does not fit a short rejects the event."""
        event = alarm(1, [N.Property("Priority", CORBA.Any(CORBA.TC_long, 40000))])
        table, rejected = events_to_arrow([(event, ARRIVAL)])
        assert table.num_rows == 0 and len(rejected) == 1

    @pytest.mark.parametrize("event", [
        structured(filterable=[("s", CORBA.Any(CORBA.TC_string, "a\0b"))]),
        structured(filterable=[("s", CORBA.Any(tcInternal.createStringTC(8), "a\0b"))]),
        structured(filterable=[("s", CORBA.Any(CORBA.TC_wstring, "a\0b"))]),
        structured(filterable=[("c", CORBA.Any(CORBA.TC_char, "\u2603"))]),
        structured(filterable=[("w", CORBA.Any(CORBA.TC_wchar, "\U0001F600"))]),
        structured(filterable=[("q", CORBA.Any(tcInternal.createSequenceTC(0, CORBA.TC_char),
                                               "a\u0100"))]),
        structured(filterable=[("q", CORBA.Any(tcInternal.createSequenceTC(0, CORBA.TC_char),
                                               ["a", "\u2603"]))]),
        structured(event_name="a\0b"), structured(domain="a\0b"),
        structured(filterable=[("a\0b", CORBA.Any(CORBA.TC_long, 1))]),
        structured(variable=[("a\0b", CORBA.Any(CORBA.TC_long, 1))]),
        structured(filterable=[("s", CORBA.Any(CORBA.TC_string, "a\ud800"))]),
        structured(filterable=[("w", CORBA.Any(CORBA.TC_wchar, "\udc00"))]),
    ], ids=["string-NUL", "bounded-NUL", "wstring-NUL", "char", "wchar", "chars", "char-list",
            "event-name", "domain", "property-name", "header-name", "surrogate", "surrogate-w"])
    def test_a_value_no_row_reads_back_rejects_its_event(self, event: Any) -> None:
        """What row_to_event refuses (NUL in a string or a name, a char beyond U+00FF, a
        wchar beyond U+FFFF) is refused on writing too: ConversionError, the event in
        rejected (review 128: the row was written, and never read back); so is a lone
        surrogate in a value (it raised UnicodeEncodeError)."""
        with pytest.raises(ConversionError):
            event_to_row(event, ARRIVAL)
        table, rejected = events_to_arrow([(alarm(1), ARRIVAL), (event, ARRIVAL)])
        assert table.num_rows == 1 and [r.event for r in rejected] == [event]
        assert isinstance(rejected[0].error, ConversionError)

    @pytest.mark.parametrize("event", [
        structured(filterable=[("c", CORBA.Any(CORBA.TC_char, "\xff"))]),
        structured(filterable=[("w", CORBA.Any(CORBA.TC_wchar, "\uffff"))]),
        structured(filterable=[("q", CORBA.Any(tcInternal.createSequenceTC(0, CORBA.TC_char),
                                               "\0\xe9\xff"))]),
        structured(filterable=[("s", CORBA.Any(CORBA.TC_wstring, "\U0001F600"))]),
    ], ids=["char", "wchar", "chars", "wstring"])
    def test_the_largest_chars_still_round_trip(self, event: Any) -> None:
        """The limits are the decoders': U+00FF in a char, U+FFFF in a wchar, NUL among
        chars are kept, and a wstring may hold any character."""
        value = event.filterable_data[0].value
        assert row_to_event(event_to_row(event, ARRIVAL)).filterable_data[0].value._v == \
            value._v
