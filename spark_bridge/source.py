"""The ``cosnotify`` Python data source: channels as Spark streams and tables.

Strategy: Spark's Python Data Source API runs a streaming reader's
``initialOffset``/``latestOffset``/``partitions``/``commit``/``stop`` in one
long-lived Python process beside the driver (the *source runner*), and
``read(partition)`` in executor workers; the reader object is also built and
pickled by a separate planner process. So the reader connects lazily, in the
runner only, and drops its connection when pickled; the ORB too is made in the
process that first needs it (``connect.client_orb``), never before Spark forks
a worker.

A notification channel has no replayable log: an event pulled from a proxy is
gone from the channel. The stream reader is therefore a pull consumer that
*buffers what it pulled until Spark commits it*:

- ``latestOffset(start, limit)`` pulls up to ``limit.max_rows`` events
  (``MAX_PULL`` with ``ReadAllAvailable``: never without end) from
  the proxy with ``try_pull_structured_events``, converts them at once into
  an Arrow table (``arrow.py``) and appends it to a backlog. Offsets are
  ``{"events": n}``: how many events this query's consumer has received.
- ``partitions(start, end)`` slices the backlog and ships the rows inside
  the partition (Arrow IPC bytes), so ``read`` in a worker only decodes them
  and a retried task reads the very same rows.
- ``commit(end)`` drops the backlog up to ``end``; ``stop()`` disconnects the
  proxy (if the query made it) and destroys its filter.

A ``DataSourceStreamReader`` was chosen over ``SimpleDataSourceStreamReader``
(both measured, docs/spark.md): the simple reader's wrapper never forwards
``stop()``, so the channel's proxy would outlive the query, and it ignores
Spark's read limits; StructuredEvents cannot in general be pickled (omniORB
makes the classes of values without stubs at run time, and ``CORBA.fixed``
refuses pickling), so rows go to the workers as Arrow either way.

A batch read drains: ``read`` (in a worker) pulls what the proxy holds, then
waits ``idle_timeout`` seconds for more.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from spark_bridge.arrow import events_to_arrow
from spark_bridge.connect import (
    ChannelAddress,
    ChannelError,
    PullSubscription,
    _float_option,
    _int_option,
    check_channel,
    check_option_names,
    release_client_orb,
)
from spark_bridge.partitioning import partition_options, split
from spark_bridge.schema import arrow_schema, event_schema

__all__ = ["BatchReader", "CosNotifyDataSource", "EventPartition", "SourceOptions",
           "StreamReader", "register"]

log = logging.getLogger("spark_bridge.source")

NAME = "cosnotify"
#: Most events one ``latestOffset`` pulls when the read limit is ``ReadAllAvailable``
#: (``max_events_per_batch`` 0), and most that ``Trigger.AvailableNow``'s drain takes:
#: a channel fed faster than the reader pulls would otherwise keep a pull that stops
#: only at a short batch going, and the backlog growing, without end.
MAX_PULL = 100_000
#: The options a read takes (docs/spark.md, Options).
READ_OPTIONS = frozenset({"channel", "channel_id", "admin_id", "call_timeout", "constraint",
                          "proxy_id", "max_events_per_batch", "pull_size", "idle_timeout",
                          "max_events", "replay_timeout", "partitions", "partition_by"})


class SourceOptions:
    """The reader's options, parsed and checked once (in whichever process builds it)."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        check_option_names(options, READ_OPTIONS, 'format("cosnotify") reads')
        self.address = ChannelAddress.from_options(options)
        constraint = options.get("constraint")
        self.constraint: str | None = str(constraint) if constraint else None
        self.proxy_id = _int_option(options, "proxy_id", None)
        self.max_events_per_batch = _int_option(options, "max_events_per_batch", 10_000, 0)
        self.pull_size: int = _int_option(options, "pull_size", 1000, 1) or 1000
        self.idle_timeout = _float_option(options, "idle_timeout", 0.0)
        self.max_events = _int_option(options, "max_events", None, 1)
        #: Seconds a restarted exactly-once query waits for a replayed batch's events
        #: (None: twice the subscription's RetryInterval, plus 30).
        self.replay_timeout: float | None = (
            _float_option(options, "replay_timeout", 0.0)
            if options.get("replay_timeout") not in (None, "") else None)
        self.partitions, self.partition_by = partition_options(options)
        if self.constraint is not None:
            from cosnotify.filter import parse_constraint

            parse_constraint(self.constraint)  # ConstraintSyntaxError now, not in a worker
        if self.constraint is not None and self.proxy_id is not None:
            raise ValueError('"constraint" and "proxy_id" do not go together: a subscription '
                             "has its filter (spark_bridge.create_subscription)")

    def check_channel(self) -> None:
        """Reach the channel, its consumer admin and the subscription now (ChannelError)."""
        check_channel(self.address, consumer=True, proxy_id=self.proxy_id)

    @property
    def source(self) -> str:
        """What a checkpoint of this read is bound to: the channel (URL, channel_id and
        admin_id as given) and, for a subscription, its proxy_id."""
        a = self.address
        return (f"{a.url}|channel_id={a.channel_id}|admin_id={a.admin_id}"
                f"|proxy_id={self.proxy_id}")

    def check_offset(self, offset: Mapping[str, Any]) -> None:
        """Refuse an offset (from a checkpoint) of another channel or subscription:
        its numbering means nothing here. Offsets written before offsets named their
        source have no ``source`` and are taken."""
        recorded = offset.get("source")
        if recorded is not None and recorded != self.source:
            raise ChannelError(self.address.url,
                               f"the checkpoint is of another read ({recorded}), not of this "
                               f"one ({self.source}): start the query with a new "
                               "checkpointLocation, or read what the checkpoint was made of")

    def event_partitions(self, first: int, table: pa.Table) -> list[EventPartition]:
        """A micro-batch's rows as Spark partitions: one, or ``partitions`` split by
        ``partition_by`` (partitioning.py)."""
        return [EventPartition(first, part.num_rows, _ipc(part.combine_chunks()))
                for part in split(table, self.partitions, self.partition_by)]

    def acknowledging(self) -> bool:
        """Whether ``proxy_id`` names an acknowledging subscription (read exactly once)."""
        if self.proxy_id is None:
            return False
        from spark_bridge.acked import subscription_is_acknowledging

        return subscription_is_acknowledging(self.address, self.proxy_id)

    def subscribe(self) -> PullSubscription:
        return PullSubscription.open(self.address, self.constraint, self.proxy_id,
                                     self.pull_size)


def _to_arrow(subscription: PullSubscription, events: list[Any]) -> pa.Table:
    arrival = time.time()
    table, rejected = events_to_arrow([(event, arrival) for event in events],
                                      references=subscription.orb,
                                      default_priority=subscription.default_priority,
                                      default_timeout=subscription.default_timeout)
    for item in rejected:
        log.warning("dropped: %s", item)
    return table


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())


class EventPartition(InputPartition):
    """Rows ``[first, first + rows)`` of a micro-batch, carried as Arrow IPC bytes."""

    def __init__(self, first: int, rows: int, data: bytes) -> None:
        super().__init__(first)
        self.first = first
        self.rows = rows
        self.data = data

    def batches(self) -> list[pa.RecordBatch]:
        if not self.rows:
            return []
        batches: list[pa.RecordBatch] = pa.ipc.open_stream(self.data).read_all().to_batches()
        return batches

    def __repr__(self) -> str:
        return f"EventPartition(first={self.first}, rows={self.rows})"


#: Set by the SIGTERM handler: the runner is ending. Plain flags, not
#: threading.Events: a second signal may run the handler inside the first, and an
#: Event's lock cannot be taken twice.
_terminating = False
#: A SIGTERM arrived while ``StreamReader.stop`` ran: acted on when it returns.
_deferred = False


def _exit_on_sigterm() -> None:
    """Make SIGTERM unwind the source runner, so its ``finally: reader.stop()`` runs.

    pyspark 4.3.0 stops a query's source runner with ``Process.destroy()``
    (SIGTERM), and Python's default action would kill it before ``stop()``,
    leaving the channel's proxy connected. The JVM sends SIGTERM more than once
    (the worker, then its factory), so only the first one unwinds, and none
    interrupts ``stop()`` while it disconnects the proxy: a signal that finds
    ``stop()`` on the stack is acted on when ``stop()`` returns. Only the
    runner's main thread, and only while SIGTERM still has its default action,
    is changed.

    The handler never runs in the middle of an ORB call: omniORB waits for a
    reply in C++ with the GIL released, so Python runs the handler once the
    call has returned (``SystemExit`` then comes out of the stub, the reply
    consumed), and ``stop()`` can use the same ORB to disconnect.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def terminate(signum: int, frame: Any) -> None:
        global _terminating, _deferred
        first = not _terminating
        _terminating = True
        if _in_stop(frame):
            _deferred = True
        elif first:
            raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminate)


def _in_stop(frame: Any) -> bool:
    """Whether ``StreamReader.stop`` is on the stack of ``frame`` (from its first line)."""
    stop = StreamReader.stop.__code__
    while frame is not None:
        if frame.f_code is stop:
            return True
        frame = frame.f_back
    return False


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of the events a pull proxy receives (see the module docstring)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._subscription: PullSubscription | None = None
        self._backlog: deque[tuple[int, pa.Table]] = deque()  # (first offset, rows)
        self._next: int | None = None  # offset of the next event to be pulled
        self._unnumbered: list[pa.Table] = []  # pulled before the start offset was known
        self._frozen = False  # Trigger.AvailableNow: serve the backlog, pull no more

    # The planner process pickles the reader for the workers, which only call read().
    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options, "_subscription": None, "_backlog": deque(),
                "_next": None, "_unnumbered": [], "_frozen": False}

    def _connected(self) -> PullSubscription:
        if self._subscription is None:
            _exit_on_sigterm()
            self._subscription = self.options.subscribe()
            log.info("pulling from proxy %d", self._subscription.proxy_id)
        return self._subscription

    # -- offsets ---------------------------------------------------------------------------
    def initialOffset(self) -> dict[str, Any]:
        self._connected()  # connect as the query starts, so events from now on queue
        return {"events": 0, "source": self.options.source}

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.options.max_events_per_batch
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        self.options.check_offset(start)
        begin = int(start["events"])
        if self._next is None or self._next < begin:
            # A new runner (or a restart from a checkpoint): continue the numbering, and
            # number what Trigger.AvailableNow pulled before the start was known.
            self._next = begin
            self._backlog.clear()
            for table in self._unnumbered:
                self._backlog.append((self._next, table))
                self._next += table.num_rows
            self._unnumbered.clear()
        most = getattr(limit, "max_rows", None)  # ReadMaxRows; ReadAllAvailable has none
        held = self._next - begin
        if not self._frozen and (most is None or held < most):
            self._pull(MAX_PULL if most is None else most - held)
        end = self._next if most is None else min(self._next, begin + most)
        return {"events": end, "source": self.options.source}

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return (None if self._next is None
                else {"events": self._next, "source": self.options.source})

    def prepareForTriggerAvailableNow(self) -> None:
        """Take everything queued now into the backlog; later batches serve only that.

        Spark calls this before it knows the start offset (a restart from a
        checkpoint starts past 0), so these events are numbered by the first
        ``latestOffset``; a batch replayed from the checkpoint before that
        cannot take them. At most ``MAX_PULL`` events: a channel fed faster than
        they are pulled would keep the drain going without end.
        """
        self._pull(MAX_PULL)
        self._frozen = True

    def _pull(self, limit: int) -> None:
        subscription = self._connected()
        events = subscription.pull(limit)
        if not events:
            return
        table = _to_arrow(subscription, events)
        if not table.num_rows:
            return
        if self._next is None:
            self._unnumbered.append(table)
        else:
            self._backlog.append((self._next, table))
            self._next += table.num_rows

    # -- planning and reading --------------------------------------------------------------
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[EventPartition]:
        self.options.check_offset(start)
        self.options.check_offset(end)
        first, last = int(start["events"]), int(end["events"])
        if first >= last:
            return []
        pieces = []
        for offset, table in self._backlog:
            lo, hi = max(first, offset), min(last, offset + table.num_rows)
            if lo < hi:
                pieces.append(table.slice(lo - offset, hi - lo))
        rows = sum(piece.num_rows for piece in pieces)
        if rows != last - first:
            # Only after a restart: the events of an unfinished batch left the channel
            # with the process that pulled them (at most once, docs/spark.md).
            log.warning("events %d..%d are not buffered here (query restarted?): %d of %d "
                        "rows replayed", first, last, rows, last - first)
        if not rows:
            return []
        return self.options.event_partitions(first, pa.concat_tables(pieces))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, EventPartition)
        return iter(partition.batches())

    def commit(self, end: dict[str, Any]) -> None:
        done = int(end["events"])
        while self._backlog and self._backlog[0][0] + self._backlog[0][1].num_rows <= done:
            self._backlog.popleft()

    def stop(self) -> None:
        global _deferred
        subscription, self._subscription = self._subscription, None
        if subscription is not None:
            subscription.close()
            log.info("stopped; proxy %d %s", subscription.proxy_id,
                     "disconnected" if subscription.owned else "left connected")
        if _terminating:
            # The runner exits: close the ORB's connections and threads cleanly (it was
            # made here, after any fork; an ORB the process had before is left alone).
            release_client_orb()
        if _deferred:
            _deferred = False
            raise SystemExit(128 + signal.SIGTERM)  # the SIGTERM that arrived meanwhile


class BatchReader(DataSourceReader):
    """``spark.read``: drain the proxy (see the module docstring)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(0)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if self.options.acknowledging():
            return self._read_acknowledging()
        subscription = self.options.subscribe()
        try:
            events = subscription.drain(self.options.max_events, self.options.idle_timeout)
            table = _to_arrow(subscription, events)
        finally:
            subscription.close()
        return iter(table.to_batches())

    def _read_acknowledging(self) -> Iterator[pa.RecordBatch]:
        from spark_bridge.acked import AckPuller

        assert self.options.proxy_id is not None
        puller = AckPuller.open(self.options.address, self.options.proxy_id)
        given = puller.drain(self.options.max_events, self.options.idle_timeout)
        table = _to_arrow(puller, [event for _, event in given])  # type: ignore[arg-type]
        return iter(table.to_batches())


class CosNotifyDataSource(DataSource):
    """``format("cosnotify")``: read structured events, or write rows as events."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        # Bad options, URLs, ids or an unreachable channel fail load(), not a worker later.
        SourceOptions(self.options).check_channel()
        return event_schema()

    def reader(self, schema: StructType) -> BatchReader:
        options = SourceOptions(self.options)
        if options.partitions > 1:
            raise ValueError("option 'partitions' is for stream reads: a batch read pulls in "
                             "one task")
        return BatchReader(options)

    def streamReader(self, schema: StructType) -> StreamReader:
        options = SourceOptions(self.options)
        if options.acknowledging():
            from spark_bridge.ackstream import AckStreamReader

            return AckStreamReader(options)
        return StreamReader(options)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from spark_bridge.writer import EventWriter, SinkOptions

        return EventWriter(SinkOptions(self.options, schema).checked())

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from spark_bridge.writer import EventStreamWriter, SinkOptions

        return EventStreamWriter(SinkOptions(self.options, schema).checked())


def register(spark: Any) -> None:
    """Register the ``cosnotify`` data source with ``spark`` (docs/public-api.md section 5),
    and ``cosnotify_history`` beside it."""
    arrow_schema()  # fail here, not in a worker, if pyarrow cannot express the schema
    spark.dataSource.register(CosNotifyDataSource)
    from spark_bridge import history

    history.register(spark)  # format("cosnotify_history"): docs/spark.md, "History"
