"""The Spark bridge: structured events as Spark rows (docs/spark.md).

Strategy: ``schema`` defines the one event schema; ``convert`` maps events
to rows and back as pure functions (TypeCode text + VARIANT per CORBA Any);
``arrow`` builds a batch as a pyarrow Table; ``sink`` is the consumer that
lands delivered events in DataFrames. The streaming data source
(``register(spark)``, docs/public-api.md section 5) comes with the ORB and
the filter compiler; it is not defined yet, on purpose, rather than stubbed.
"""

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
from spark_bridge.typetext import decode_typecode, encode_typecode

__all__ = [
    "ConversionError",
    "SinkStats",
    "SinkWriteError",
    "SparkSinkProxy",
    "any_to_cell",
    "cell_to_any",
    "decode_typecode",
    "encode_typecode",
    "event_schema",
    "event_to_row",
    "property_value",
    "resolve_qos",
    "row_qos",
    "row_to_event",
]
