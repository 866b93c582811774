"""Writing rows to a channel: ``df.write`` / ``df.writeStream.format("cosnotify")``.

Strategy: each Spark task (in an executor's Python worker) opens its own
``SequenceProxyPushConsumer`` on the channel's supplier admin, turns its rows
back into StructuredEvents with ``row_to_event`` and pushes them with
``push_structured_events`` in sequences of ``batch_size``, then disconnects.
The channel does the rest (its filters, QoS and queues).

Delivery is at least once. A push is an IDL call that returns once the
channel has accepted the sequence; nothing can take it back. So ``abort``
cannot undo the sequences a failed task pushed before failing, and Spark's
retry of that task (or of the whole micro-batch after a driver restart)
pushes them again. ``commit`` has nothing left to do; the commit messages
only count what was pushed. A row that is not an event fails its task before
the sequence holding it is pushed (``row_to_event`` checks, never coerces).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from spark_bridge.connect import (
    ChannelAddress,
    _int_option,
    _quietly,
    check_channel,
    check_option_names,
    client_orb,
    open_push_proxy,
)
from spark_bridge.convert import ConversionError, row_to_event

__all__ = ["EventStreamWriter", "EventWriter", "Pushed", "SinkOptions", "push_rows"]

log = logging.getLogger("spark_bridge.writer")

#: Columns a DataFrame needs to be written as events (``event_schema()``'s first six).
REQUIRED = ("domain_name", "type_name", "event_name", "variable_header", "filterable_data",
            "remainder_of_body")
#: The options a write takes (docs/spark.md, Options).
WRITE_OPTIONS = frozenset({"channel", "channel_id", "admin_id", "batch_size", "call_timeout"})


class SinkOptions:
    """The writer's options, checked against the DataFrame's schema."""

    def __init__(self, options: Mapping[str, Any], schema: StructType) -> None:
        check_option_names(options, WRITE_OPTIONS, 'format("cosnotify") writes')
        self.address = ChannelAddress.from_options(options)
        self.batch_size: int = _int_option(options, "batch_size", 1000, 1) or 1000
        names = set(schema.fieldNames())
        missing = [name for name in REQUIRED if name not in names]
        if missing:
            raise ValueError(f"cannot write events without columns {missing}: write rows of "
                             "spark_bridge.event_schema()")

    def checked(self) -> SinkOptions:
        """These options, once the channel and its supplier admin were reached (ChannelError)."""
        check_channel(self.address, consumer=False)
        return self


@attrs.frozen
class Pushed(WriterCommitMessage):
    """What one task pushed: ``events`` in ``sequences`` push calls."""

    events: int
    sequences: int


def push_rows(options: SinkOptions, rows: Iterator[Any]) -> Pushed:
    """Push ``rows`` (of ``event_schema()``) to the channel as StructuredEvents."""
    orb = client_orb()
    proxy = open_push_proxy(options.address, orb)
    events = sequences = 0
    try:
        batch: list[Any] = []
        for index, row in enumerate(rows):
            try:
                batch.append(row_to_event(row, references=orb))
            except ConversionError as exc:
                raise ConversionError(f"row {index} of this task is not an event ({exc}); "
                                      f"{events} events of the task were pushed before it, "
                                      f"{len(batch)} after them were not") from exc
            if len(batch) >= options.batch_size:
                proxy.push_structured_events(batch)
                events += len(batch)
                sequences += 1
                batch = []
        if batch:
            proxy.push_structured_events(batch)
            events += len(batch)
            sequences += 1
    finally:
        _quietly(proxy.disconnect_sequence_push_consumer)
    return Pushed(events, sequences)


def _total(messages: list[Any]) -> int:
    return sum(m.events for m in messages if isinstance(m, Pushed))


class EventWriter(DataSourceWriter):
    """``df.write.format("cosnotify")``: each task pushes its partition."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Any]) -> Pushed:
        return push_rows(self.options, iterator)

    def commit(self, messages: list[Any]) -> None:
        log.info("pushed %d events", _total(messages))

    def abort(self, messages: list[Any]) -> None:
        log.warning("write failed; %d events already pushed stay pushed", _total(messages))


class EventStreamWriter(DataSourceStreamWriter):
    """``df.writeStream.format("cosnotify")``: each micro-batch task pushes its rows."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Any]) -> Pushed:
        return push_rows(self.options, iterator)

    def commit(self, messages: list[Any], batchId: int) -> None:
        log.info("batch %d: pushed %d events", batchId, _total(messages))

    def abort(self, messages: list[Any], batchId: int) -> None:
        log.warning("batch %d failed; %d events already pushed stay pushed (at least once)",
                    batchId, _total(messages))
