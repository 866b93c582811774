"""A batch of delivered events as one pyarrow Table of ``event_schema()``.

Strategy: Spark's fastest way in from Python is a pyarrow Table whose schema
is exactly the Arrow form of the Spark schema (``createDataFrame`` then only
slices it into record batches). We convert each event with ``convert.py``
into plain tuples and let ``pa.array`` build each nested column in C++;
times go in as integer microseconds, so no ``datetime`` is made per event.
An event that cannot be converted (a value that does not fit its TypeCode,
an object reference without an ORB) is set aside with its error instead of
failing the whole batch; the caller decides what to do with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]

from spark_bridge.convert import (
    ConversionError,
    References,
    encode_event,
    resolve_qos,
    timestamp_micros,
)
from spark_bridge.schema import arrow_schema

__all__ = ["Rejected", "events_to_arrow"]

_SCHEMA: pa.Schema | None = None
_SHORT = (-(2**15), 2**15 - 1)


class Rejected(Exception):
    """An event that could not become a row; ``event`` and ``arrival`` say which."""

    def __init__(self, event: Any, arrival: float, error: Exception) -> None:
        super().__init__(f"event {_describe(event)} cannot be stored: {error}")
        self.event = event
        self.arrival = arrival
        self.error = error


def _describe(event: Any) -> str:
    try:
        fixed = event.header.fixed_header
        return f"{fixed.event_type.domain_name}/{fixed.event_type.type_name}/{fixed.event_name}"
    except AttributeError:
        return repr(event)


def _schema() -> pa.Schema:
    global _SCHEMA
    if _SCHEMA is None:
        _SCHEMA = arrow_schema()
    return _SCHEMA


def events_to_arrow(items: Sequence[tuple[Any, float]], references: References | None = None,
                    default_priority: int = 0, default_timeout: float = 0.0
                    ) -> tuple[pa.Table, list[Rejected]]:
    """(table, rejected) for ``items`` of (StructuredEvent, arrival in Unix seconds)."""
    domains: list[str] = []
    types: list[str] = []
    names: list[str] = []
    headers: list[Any] = []
    data: list[Any] = []
    bodies: list[Any] = []
    arrivals: list[int] = []
    priorities: list[int] = []
    expiries: list[int | None] = []
    rejected: list[Rejected] = []
    for event, arrival in items:
        try:
            domain, type_name, name, header, fields, body = encode_event(event, references)
            priority, expiry = resolve_qos(event, arrival, default_priority, default_timeout)
            if not _SHORT[0] <= priority <= _SHORT[1]:
                raise ConversionError(f"Priority {priority} does not fit a short")
            # Past Spark's last timestamp: NULL, never (convert.timestamp_micros).
            expiry_micros = None if expiry is None else timestamp_micros(expiry, "expiry")
        except Exception as exc:  # noqa: BLE001 - any bad event is set aside, never fatal
            rejected.append(Rejected(event, arrival, exc))
            continue
        domains.append(domain)
        types.append(type_name)
        names.append(name)
        headers.append(header)
        data.append(fields)
        bodies.append(body)
        arrivals.append(round(arrival * 1_000_000))
        priorities.append(priority)
        expiries.append(expiry_micros)
    schema = _schema()
    columns = [domains, types, names, headers, data, bodies, arrivals, priorities, expiries]
    arrays = [pa.array(column, type=field.type) for column, field in zip(columns, schema)]
    return pa.Table.from_arrays(arrays, schema=schema), rejected
