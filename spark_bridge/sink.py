"""SparkSinkProxy: a push consumer that lands delivered events in DataFrames.

Strategy: the sink is an ordinary CosNotifyComm consumer. It offers both
``push_structured_event`` (StructuredPushConsumer) and
``push_structured_events`` (SequencePushConsumer) and touches the channel
only through IDL operations, so the same object serves an in-process proxy
now and, wrapped in a servant, a remote one later.

``push`` only appends (event, arrival time) to a bounded buffer; one writer
thread turns micro-batches into DataFrames. A batch is cut when
``max_batch_size`` events are waiting, when the pacing window that opened
with the first waiting event ends (``pacing_interval``), when a sequence push
ends (the channel already batched by MaximumBatchSize/PacingInterval, section
2.5.5), or on ``flush()``/``close()``. Each batch goes to pyarrow
(``arrow.py``), then ``spark.createDataFrame(table, event_schema())``, then
to the target: a callback ``(df, batch_id)``, ``saveAsTable`` or a path.

Backpressure: events waiting plus events being written never exceed
``max_buffered``; a push that finds the buffer full blocks (on the channel's
worker for this consumer only) until the writer frees room, so the channel
queues and, past its limits, discards by its DiscardPolicy.

Delivery is at least once: a batch leaves the buffer only after its write
succeeded. A failed write is retried with the same ``batch_id`` after
``retry_interval`` seconds, doubling up to ``max_backoff``, ``write_retries``
times; then the sink fails: it disconnects from its proxy (when attached),
every later push raises ``CosEventComm.Disconnected`` (which makes any
channel destroy the proxy, section 3.3.7.1), ``failure`` holds a
:class:`SinkWriteError`, and ``unwritten()`` returns every accepted event not
yet written, the failed batch first. Events still queued in the channel when
it disconnects are the channel's, and go with the proxy. A retry after a
partly applied write can write a batch twice; writers that must not
duplicate can key on ``batch_id``, as with Structured Streaming's
``foreachBatch``.

Time (pacing windows and backoff) comes from an injectable clock
(``cosnotify.channel.clock``), so tests drive it with ``ManualClock``.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Self

import attrs
from omniORB import CORBA

import CosEventComm
import CosNotification as N
import CosNotifyChannelAdmin as CA
import TimeBase

from cosnotify.channel.clock import Clock, SystemClock
from spark_bridge.arrow import Rejected, events_to_arrow
from spark_bridge.connect import CALL_TIMEOUT
from spark_bridge.convert import References
from spark_bridge.schema import event_schema

__all__ = ["SinkStats", "SinkWriteError", "SparkSinkProxy", "backoff_delays"]

log = logging.getLogger("spark_bridge.sink")

BatchCallback = Callable[[Any, int], None]


class SinkWriteError(RuntimeError):
    """A batch could not be written after every retry; the sink has disconnected.

    ``batch_id`` and ``rows`` identify the batch, ``attempts`` counts the
    writes tried, and ``__cause__`` is the last error. The events are in
    ``SparkSinkProxy.unwritten()``.
    """

    def __init__(self, batch_id: int, rows: int, attempts: int, error: BaseException) -> None:
        super().__init__(f"batch {batch_id} ({rows} events) failed {attempts} times; "
                         f"the sink disconnected. Last error: {type(error).__name__}: {error}")
        self.batch_id = batch_id
        self.rows = rows
        self.attempts = attempts
        self.error = error


@attrs.frozen
class SinkStats:
    """A consistent snapshot of a sink's counters."""

    received: int  #: events accepted by push
    written: int  #: events in batches written successfully
    rejected: int  #: events that could not become rows (see ``rejected()``)
    batches: int  #: batches written successfully
    buffered: int  #: events waiting for a batch
    in_flight: int  #: events in the batch being written
    blocked_pushes: int  #: pushes waiting for room (backpressure)
    attempts: int  #: write attempts, including retries
    retrying: bool  #: a failed write waits for its backoff to end
    failed: bool  #: the sink gave up and disconnected


def backoff_delays(retries: int, interval: float, max_backoff: float) -> list[float]:
    """The waits before each retry: ``interval`` doubling per retry, capped."""
    return [min(interval * 2 ** i, max_backoff) for i in range(retries)]


def _timet(seconds: float) -> Any:
    return CORBA.Any(TimeBase._tc_TimeT, round(seconds * 10_000_000))


class SparkSinkProxy:
    """A StructuredPushConsumer and SequencePushConsumer writing events to Spark.

    Give exactly one target: ``callback(df, batch_id)``, ``table`` (appended
    with ``saveAsTable``) or ``path`` (appended in ``format``, Parquet by
    default). ``pacing_interval`` is in seconds; 0 flushes by size (and by
    sequence) only. ``max_buffered`` defaults to twice ``max_batch_size``.
    """

    def __init__(self, spark: Any, *, callback: BatchCallback | None = None,
                 table: str | None = None, path: str | None = None, format: str = "parquet",
                 max_batch_size: int = 10_000, pacing_interval: float = 1.0,
                 max_buffered: int | None = None, flush_each_sequence: bool = True,
                 write_retries: int = 3, retry_interval: float = 1.0, max_backoff: float = 30.0,
                 clock: Clock | None = None, references: References | None = None,
                 default_priority: int = 0, default_timeout: float = 0.0) -> None:
        if sum(x is not None for x in (callback, table, path)) != 1:
            raise ValueError("give exactly one of callback, table or path")
        if max_batch_size < 1:
            raise ValueError("max_batch_size must be at least 1")
        if max_buffered is None:
            max_buffered = 2 * max_batch_size
        if max_buffered < max_batch_size:
            raise ValueError("max_buffered must be at least max_batch_size")
        if pacing_interval < 0 or write_retries < 0 or retry_interval < 0:
            raise ValueError("pacing_interval, write_retries and retry_interval must be >= 0")
        self._spark = spark
        self._callback = callback
        self._table = table
        self._path = path
        self._format = format
        self.max_batch_size = max_batch_size
        self.pacing_interval = pacing_interval
        self.max_buffered = max_buffered
        self.flush_each_sequence = flush_each_sequence
        self._delays = backoff_delays(write_retries, retry_interval, max_backoff)
        self._own_clock = clock is None
        self._clock: Clock = SystemClock() if clock is None else clock
        self._references = references
        self.default_priority = default_priority
        self.default_timeout = default_timeout
        self._schema = event_schema()

        self._cond = threading.Condition()
        self._buffer: deque[tuple[Any, float]] = deque()
        self._in_flight: list[tuple[Any, float]] = []
        self._received = 0
        self._taken = 0  # events handed to the writer, ever
        self._flush_upto = 0  # the writer must keep cutting batches until _taken reaches this
        self._written = 0
        self._batches = 0
        self._attempts = 0
        self._next_batch_id = 0
        self._blocked = 0
        self._retrying = False
        self._rejected: list[Rejected] = []
        self._failure: SinkWriteError | None = None
        self._closing = False
        self._closed = False
        self._timer: Any = None
        self._proxy: Any = None
        self._on_close: list[Callable[[], Any]] = []  # run after close (remote servants)
        self._writer = threading.Thread(target=self._run, name="spark-sink-writer", daemon=True)
        self._writer.start()

    # -- attaching to a channel ----------------------------------------------------------------
    @classmethod
    def attach(cls, admin: Any, spark: Any, *, max_batch_size: int = 10_000,
               pacing_interval: float = 1.0, as_reference: Callable[[Any], Any] | None = None,
               filters: Sequence[Any] = (), timed: Callable[[Any], Any] | None = None,
               **options: Any) -> SparkSinkProxy:
        """A sink connected to a new sequence push proxy of ``admin`` (a ConsumerAdmin).

        The proxy gets MaximumBatchSize = ``max_batch_size`` and PacingInterval
        = ``pacing_interval``, so the channel cuts the micro-batches, and
        ``filters`` (added before it connects); the proxy's Priority and Timeout
        QoS become the defaults for events whose header has none.
        ``as_reference`` turns the sink into what the proxy accepts as a
        consumer (an object reference, for a remote channel); by default the
        sink itself is passed; ``timed`` is applied to the proxy's reference
        (a call timeout, for a remote channel). Other options go to the
        constructor. For a channel in another process, see :meth:`attach_remote`.
        """
        if max_batch_size < 1 or pacing_interval < 0:  # before the channel makes a proxy
            raise ValueError("max_batch_size must be at least 1 and pacing_interval >= 0")
        proxy, _ = admin.obtain_notification_push_supplier(CA.SEQUENCE_EVENT)
        if isinstance(proxy, CORBA.Object):  # a remote channel's proxy
            if timed is not None:
                proxy = timed(proxy)
            proxy = proxy._narrow(CA.SequenceProxyPushSupplier)
            if timed is not None:
                proxy = timed(proxy)
        qos = [N.Property("MaximumBatchSize", CORBA.Any(CORBA.TC_long, max_batch_size)),
               N.Property("PacingInterval", _timet(pacing_interval))]
        sink: SparkSinkProxy | None = None
        try:
            for flt in filters:
                proxy.add_filter(flt)
            proxy.set_qos(qos)
            effective = {p.name: p.value._v for p in proxy.get_qos()}
            options.setdefault("default_priority", effective.get("Priority", 0))
            options.setdefault("default_timeout", effective.get("Timeout", 0) / 1e7)
            sink = cls(spark, max_batch_size=max_batch_size, pacing_interval=pacing_interval,
                       **options)
            sink._proxy = proxy
            consumer = sink if as_reference is None else as_reference(sink)
            proxy.connect_sequence_push_consumer(consumer)
        except BaseException:
            if sink is not None:
                sink.close()  # also disconnects the proxy
            else:
                _quietly(proxy.disconnect_sequence_push_supplier)
            raise
        return sink

    @classmethod
    def attach_remote(cls, channel: str, spark: Any, *, orb: Any = None,
                      channel_id: int | None = None, admin_id: int | None = None,
                      constraint: str | None = None, call_timeout: float = CALL_TIMEOUT,
                      **options: Any) -> SparkSinkProxy:
        """A sink fed by a channel in another process, by URL (``spark_bridge.remote``).

        ``channel`` is an IOR, corbaloc or corbaname URL of an EventChannel, or
        of an EventChannelFactory with ``channel_id`` (docs/spark.md). The sink
        is served by ``orb``, the process's omniORB ORB (default: the one the
        process has, or the bridge's, made now with a loopback endpoint unless
        the ``ORBendPoint`` environment variable names one), as a
        ``SequencePushConsumer``; ``constraint`` becomes an EXTENDED_TCL filter
        on its proxy; each call to the channel may take ``call_timeout``
        seconds. ``close()`` also deactivates the servant and destroys the filter.
        """
        from spark_bridge.remote import attach_remote

        sink: SparkSinkProxy = attach_remote(cls, channel, spark, orb=orb, channel_id=channel_id,
                                             admin_id=admin_id, constraint=constraint,
                                             call_timeout=call_timeout, **options)
        return sink

    # -- CosNotifyComm::StructuredPushConsumer / SequencePushConsumer -------------------------
    def push_structured_event(self, notification: Any) -> None:
        self._accept([notification], end_of_batch=False)

    def push_structured_events(self, notifications: list[Any]) -> None:
        self._accept(notifications, end_of_batch=self.flush_each_sequence)

    def offer_change(self, added: list[Any], removed: list[Any]) -> None:
        """Offers do not change what the sink stores."""

    def disconnect_structured_push_consumer(self) -> None:
        self._channel_disconnected()

    def disconnect_sequence_push_consumer(self) -> None:
        self._channel_disconnected()

    # -- inspection ------------------------------------------------------------------------------
    @property
    def failure(self) -> SinkWriteError | None:
        """The error that made the sink give up, or None."""
        with self._cond:
            return self._failure

    def stats(self) -> SinkStats:
        with self._cond:
            return self._stats()

    def wait(self, predicate: Callable[[SinkStats], bool], timeout: float | None = None) -> bool:
        """Wait until ``predicate(stats)`` holds; False on timeout. Every change wakes it."""
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self._stats()), timeout)

    def unwritten(self) -> list[tuple[Any, float]]:
        """Accepted events not written yet, as (StructuredEvent, arrival): the batch being
        written (or that failed) first, then those waiting."""
        with self._cond:
            return list(self._in_flight) + list(self._buffer)

    def rejected(self) -> list[Rejected]:
        """Events that could not become rows, each with its error."""
        with self._cond:
            return list(self._rejected)

    # -- control -------------------------------------------------------------------------------
    def flush(self, timeout: float | None = None) -> None:
        """Write every event accepted so far; raise SinkWriteError if the sink failed."""
        with self._cond:
            target = self._received
            self._request_flush(target)
            done = self._cond.wait_for(
                lambda: self._failure is not None or self._written + len(self._rejected) >= target
                or (self._closed and not self._buffer), timeout)
            if self._failure is not None:
                raise self._failure
            if not done:
                raise TimeoutError(f"flush: {target - self._written} events still unwritten")

    def close(self, timeout: float | None = None) -> None:
        """Flush, stop the writer and disconnect from the proxy (when attached)."""
        with self._cond:
            if self._closed:
                return
            self._closing = True
            self._request_flush(self._received)
        self._writer.join(timeout)
        with self._cond:
            self._closed = True
            self._cancel_timer()
            self._cond.notify_all()
        self._disconnect_proxy()
        if self._own_clock:
            self._clock.close()
        for release in self._on_close:
            _quietly(release)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the push side ---------------------------------------------------------------------------
    def _accept(self, events: list[Any], end_of_batch: bool) -> None:
        arrival = self._clock.now()
        with self._cond:
            for event in events:
                while (self._failure is None and not self._closing
                       and len(self._buffer) + len(self._in_flight) >= self.max_buffered):
                    self._blocked += 1
                    self._cond.notify_all()
                    try:
                        self._cond.wait()
                    finally:
                        self._blocked -= 1
                if self._failure is not None or self._closing:
                    raise CosEventComm.Disconnected()
                self._buffer.append((event, arrival))
                self._received += 1
                if self._timer is None and self.pacing_interval > 0:
                    self._timer = self._clock.call_later(self.pacing_interval, self._pacing_due)
            if end_of_batch:
                self._flush_upto = self._received
            self._cond.notify_all()

    def _pacing_due(self) -> None:
        with self._cond:
            self._timer = None
            self._request_flush(self._received)

    def _request_flush(self, upto: int) -> None:
        """Ask the writer to cut batches until ``upto`` events were taken (lock held)."""
        self._flush_upto = max(self._flush_upto, upto)
        self._cond.notify_all()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _channel_disconnected(self) -> None:
        """The channel ended the connection: what was accepted is still written."""
        with self._cond:
            self._proxy = None
            self._request_flush(self._received)

    # -- the writer ------------------------------------------------------------------------------
    def _ready(self) -> bool:
        if self._failure is not None:
            return True
        if self._buffer:
            return len(self._buffer) >= self.max_batch_size or self._taken < self._flush_upto
        return self._closing

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(self._ready)
                if self._failure is not None or not self._buffer:
                    return  # failed, or closing with nothing left
                count = min(len(self._buffer), self.max_batch_size)
                batch = [self._buffer.popleft() for _ in range(count)]
                self._in_flight = batch
                self._taken += count
                batch_id = self._next_batch_id
                self._cancel_timer()
                if self._buffer and self.pacing_interval > 0 and self._taken >= self._flush_upto:
                    self._timer = self._clock.call_later(self.pacing_interval, self._pacing_due)
                self._cond.notify_all()
            if not self._write_batch(batch, batch_id):
                self._disconnect_proxy()
                return

    def _write_batch(self, batch: list[tuple[Any, float]], batch_id: int) -> bool:
        try:
            table, rejected = events_to_arrow(batch, self._references, self.default_priority,
                                              self.default_timeout)
        except Exception as exc:  # noqa: BLE001 - no known event does this (each bad one
            # is set aside); if one did, the sink fails as on a write error, never its thread
            self._fail(SinkWriteError(batch_id, len(batch), 1, exc))
            return False
        for item in rejected:
            log.warning("%s", item)
        attempt = 0
        while True:
            attempt += 1
            with self._cond:
                self._attempts += 1
            try:
                if table.num_rows:
                    self._deliver(self._spark.createDataFrame(table, schema=self._schema), batch_id)
                break
            except Exception as exc:  # noqa: BLE001 - any write error is retried, then fatal
                if attempt > len(self._delays):
                    self._fail(SinkWriteError(batch_id, table.num_rows, attempt, exc))
                    return False
                delay = self._delays[attempt - 1]
                log.warning("batch %d: write failed (%s: %s); retry %d of %d in %.2fs", batch_id,
                            type(exc).__name__, exc, attempt, len(self._delays), delay)
                self._backoff(delay)
        with self._cond:
            self._rejected.extend(rejected)
            self._written += table.num_rows
            self._in_flight = []
            if table.num_rows:
                self._batches += 1
                self._next_batch_id += 1
            self._cond.notify_all()
        return True

    def _deliver(self, df: Any, batch_id: int) -> None:
        if self._callback is not None:
            self._callback(df, batch_id)
        elif self._table is not None:
            df.write.mode("append").saveAsTable(self._table)
        else:
            df.write.mode("append").format(self._format).save(self._path)

    def _backoff(self, delay: float) -> None:
        if delay <= 0:
            return
        woken = [False]

        def wake() -> None:
            with self._cond:
                woken[0] = True
                self._cond.notify_all()

        with self._cond:
            self._retrying = True
            self._clock.call_later(delay, wake)
            self._cond.notify_all()
            self._cond.wait_for(lambda: woken[0])
            self._retrying = False

    def _fail(self, error: SinkWriteError) -> None:
        log.error("%s", error)
        with self._cond:
            self._failure = error
            self._cancel_timer()
            self._cond.notify_all()

    def _disconnect_proxy(self) -> None:
        with self._cond:
            proxy, self._proxy = self._proxy, None
        if proxy is not None:
            _quietly(proxy.disconnect_sequence_push_supplier)

    # -- helpers -------------------------------------------------------------------------------
    def _stats(self) -> SinkStats:
        return SinkStats(received=self._received, written=self._written,
                         rejected=len(self._rejected), batches=self._batches,
                         buffered=len(self._buffer), in_flight=len(self._in_flight),
                         blocked_pushes=self._blocked, attempts=self._attempts,
                         retrying=self._retrying,
                         failed=self._failure is not None)

    def __repr__(self) -> str:
        s = self.stats()
        state = "failed" if s.failed else "closed" if self._closed else "open"
        return (f"<SparkSinkProxy {state} received={s.received} written={s.written} "
                f"buffered={s.buffered}>")


def _quietly(operation: Callable[[], Any]) -> None:
    try:
        operation()
    except Exception as exc:  # noqa: BLE001 - the proxy may already be gone
        log.debug("%s failed: %s", getattr(operation, "__name__", operation), exc)
