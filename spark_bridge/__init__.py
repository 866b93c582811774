"""The Spark bridge: structured events as Spark rows (docs/spark.md).

Strategy: ``schema`` defines the one event schema; ``convert`` maps events
to rows and back as pure functions (TypeCode text + VARIANT per CORBA Any);
``arrow`` builds a batch as a pyarrow Table; ``sink`` is the consumer that
lands delivered events in DataFrames. ``source`` is the ``cosnotify`` data
source (``register(spark)``, docs/public-api.md section 5) that reads a
remote channel over IIOP (``connect``) and writes to it (``writer``);
``tcl`` applies EXTENDED_TCL constraints to DataFrames of events.

The names below are imported on first use, so a process that needs one
module (a Spark worker reading rows, a client computing TypeCode text) does
not import the others, nor pyspark's SQL functions, nor an ORB layer it
never uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spark_bridge.acked import AckSubscription, create_ack_subscription
    from spark_bridge.connect import ChannelError, create_subscription, drop_subscription
    from spark_bridge.convert import (
        ConversionError,
        any_to_cell,
        cell_to_any,
        event_to_row,
        resolve_qos,
        row_qos,
        row_to_event,
    )
    from spark_bridge.schema import event_schema, property_value
    from spark_bridge.sink import SinkStats, SinkWriteError, SparkSinkProxy
    from spark_bridge.source import register
    from spark_bridge.tcl import (
        Translation,
        tcl_column,
        tcl_filter,
        tcl_match,
        tcl_matches,
        translate,
    )
    from spark_bridge.typetext import decode_typecode, encode_typecode

_WHERE = {
    "AckSubscription": "acked", "create_ack_subscription": "acked",
    "ChannelError": "connect", "create_subscription": "connect",
    "drop_subscription": "connect",
    "ConversionError": "convert", "any_to_cell": "convert", "cell_to_any": "convert",
    "event_to_row": "convert", "resolve_qos": "convert", "row_qos": "convert",
    "row_to_event": "convert",
    "event_schema": "schema", "property_value": "schema",
    "SinkStats": "sink", "SinkWriteError": "sink", "SparkSinkProxy": "sink",
    "register": "source",
    "Translation": "tcl", "tcl_column": "tcl", "tcl_filter": "tcl", "tcl_match": "tcl",
    "tcl_matches": "tcl", "translate": "tcl",
    "decode_typecode": "typetext", "encode_typecode": "typetext",
}

__all__ = [
    "AckSubscription",
    "ChannelError",
    "ConversionError",
    "SinkStats",
    "SinkWriteError",
    "SparkSinkProxy",
    "Translation",
    "any_to_cell",
    "cell_to_any",
    "create_ack_subscription",
    "create_subscription",
    "decode_typecode",
    "drop_subscription",
    "encode_typecode",
    "event_schema",
    "event_to_row",
    "property_value",
    "register",
    "resolve_qos",
    "row_qos",
    "row_to_event",
    "tcl_column",
    "tcl_filter",
    "tcl_match",
    "tcl_matches",
    "translate",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        # A submodule (spark_bridge.connect ...) imported as an attribute.
        if name in {"anycodec", "arrow", "connect", "convert", "remote", "schema", "sink",
                    "source", "tcl", "tclsql", "tcludf", "typetext", "variant", "writer"}:
            return importlib.import_module(f"spark_bridge.{name}")
        raise AttributeError(f"module 'spark_bridge' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"spark_bridge.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
