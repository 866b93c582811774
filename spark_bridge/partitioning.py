"""Parallel reads: a micro-batch split into Spark partitions by a hash of a property.

Strategy: a subscription is one ordered stream of events, pulled by one
source runner (every pull goes through the channel's one proxy, and the
offsets must say which events a batch holds). What can run in parallel is
everything after the pull: decoding the rows in the executors and the rest of
the query. So the stream readers split each micro-batch into ``partitions``
Spark partitions by a hash of one property, ``partition_by``, written as in
EXTENDED_TCL: ``$type_name``, ``$domain_name`` or ``$event_name`` (the fixed
header), or ``$name`` (the first property ``name`` of ``variable_header``,
else of ``filterable_data``, as EXTENDED_TCL looks a ``$name`` up: section
2.4.5 and ``cosnotify.filter.compiler``). Every event of one key lands in
the partition of the same index, in every batch, in the order the channel
gave them, so order per key is kept; an event without the property hashes
as an empty value. Every batch has ``partitions`` partitions, empty ones
included, so a partition's index means the same keys in every batch.

The hash is CRC-32 of the cell's type text and VARIANT bytes (the bridge
writes a VARIANT the same way for the same value, docs/spark.md), so a key
goes to the same partition in every batch and every run.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]

__all__ = ["PartitionKey", "partition_options", "split"]

_HEADER = ("domain_name", "type_name", "event_name")
_NAME = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)\Z")
#: Partitions a read may ask for at most.
MAX_PARTITIONS = 1024


class PartitionKey:
    """A parsed ``partition_by``: a fixed header column, or a property name."""

    def __init__(self, text: str) -> None:
        match = _NAME.match(text.strip())
        if match is None:
            raise ValueError(f"option 'partition_by' must be $type_name, $domain_name, "
                             f"$event_name or $name (a property), got {text!r}")
        self.text = text.strip()
        self.name = match.group(1)
        self.column = self.name if self.name in _HEADER else None

    def values(self, table: pa.Table) -> list[bytes]:
        """One key per row of ``table`` (an ``event_schema()`` table), as bytes."""
        if self.column is not None:
            return [(v or "").encode() for v in table.column(self.column).to_pylist()]
        keys = []
        for data, header in zip(table.column("filterable_data").to_pylist(),
                                table.column("variable_header").to_pylist(), strict=True):
            keys.append(_property(header, self.name) or _property(data, self.name) or b"")
        return keys


def _property(properties: list[dict[str, Any]] | None, name: str) -> bytes | None:
    for prop in properties or ():
        if prop["name"] == name:
            value = prop["value"] or {}
            return b"%s\0%s\0%s" % (prop["type"].encode(), value.get("value") or b"",
                                     value.get("metadata") or b"")
    return None


def partition_options(options: Mapping[str, Any]) -> tuple[int, PartitionKey | None]:
    """``partitions`` (at least 1) and ``partition_by`` (needed with more than one)."""
    from spark_bridge.connect import _int_option

    count = _int_option(options, "partitions", 1, 1, MAX_PARTITIONS) or 1
    text = options.get("partition_by")
    key = PartitionKey(str(text)) if text else None
    if count > 1 and key is None:
        raise ValueError("option 'partitions' above 1 needs 'partition_by' (a property whose "
                         "events keep their order within one partition), e.g. $type_name")
    if key is not None and count == 1:
        raise ValueError("option 'partition_by' needs 'partitions' above 1 (with one "
                         "partition there is nothing to split)")
    return count, key


def split(table: pa.Table, count: int, key: PartitionKey | None) -> list[pa.Table]:
    """``table``'s rows in ``count`` tables by the hash of ``key`` (empty ones too, so
    an index is a bucket), each in the order of ``table``."""
    if count <= 1 or key is None:
        return [table]
    buckets = [zlib.crc32(value) % count for value in key.values(table)]
    return [table.filter(pa.array([b == bucket for b in buckets], type=pa.bool_()))
            for bucket in range(count)]
