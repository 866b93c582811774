"""The Spark bridge: structured events as Spark rows (docs/spark.md).

Strategy: ``schema`` defines the one event schema; ``convert`` maps events
to rows and back as pure functions (TypeCode text + VARIANT per CORBA Any);
``arrow`` builds a batch as a pyarrow Table; ``sink`` is the consumer that
lands delivered events in DataFrames. ``source`` is the ``cosnotify`` data
source (``register(spark)``, docs/public-api.md section 5) that reads a
remote channel over IIOP (``connect``) and writes to it (``writer``);
``tcl`` applies EXTENDED_TCL constraints to DataFrames of events.
"""

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
from spark_bridge.tcl import Translation, tcl_column, tcl_filter, tcl_match, tcl_matches, translate
from spark_bridge.typetext import decode_typecode, encode_typecode

__all__ = [
    "ChannelError",
    "ConversionError",
    "SinkStats",
    "SinkWriteError",
    "SparkSinkProxy",
    "Translation",
    "any_to_cell",
    "cell_to_any",
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
