"""The one Spark schema for structured events (docs/spark.md explains the choice).

Strategy: one row per StructuredEvent (Notification Service section 2.2),
flat where Spark queries most (the three names, arrival, priority, expiry)
and nested where the event is nested. Every CORBA Any is a ``struct<type,
value>`` *cell*: ``type`` is the TypeCode as text (``long``, or a JSON object
for constructed types; ``typetext.py``) and ``value`` is a VARIANT holding the
value with its nesting and a Spark type per IDL kind (``convert.py``). The
header and the filterable data are arrays of ``struct<name, type, value>``,
so property order, repeated names and each value's type are all kept.

The same schema serves the sink (``SparkSinkProxy``) and, later, the
streaming source; both build rows with ``convert.py``.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
    VariantType,
)

__all__ = [
    "COLUMNS",
    "any_struct",
    "arrow_schema",
    "event_schema",
    "property_struct",
    "property_value",
]

#: Column names, in row order.
COLUMNS = ("domain_name", "type_name", "event_name", "variable_header", "filterable_data",
           "remainder_of_body", "arrival_time", "priority", "expiry_time")


def any_struct() -> StructType:
    """``struct<type: string, value: variant>``: one CORBA Any."""
    return StructType([StructField("type", StringType(), False),
                       StructField("value", VariantType(), False)])


def property_struct() -> StructType:
    """``struct<name: string, type: string, value: variant>``: one CosNotification::Property."""
    return StructType([StructField("name", StringType(), False),
                       StructField("type", StringType(), False),
                       StructField("value", VariantType(), False)])


def event_schema() -> StructType:
    """The schema of one StructuredEvent row.

    ========================  ===========================================
    domain_name, type_name    ``header.fixed_header.event_type``
    event_name                ``header.fixed_header.event_name``
    variable_header           array of property structs, in order
    filterable_data           array of property structs, in order
    remainder_of_body         an Any struct
    arrival_time              when the event reached the bridge (UTC)
    priority                  resolved Priority (short)
    expiry_time               resolved expiry (UTC), NULL when none (never;
                              also past 9999-12-31T23:59:59.999999Z)
    ========================  ===========================================
    """
    properties = ArrayType(property_struct(), containsNull=False)
    return StructType([
        StructField("domain_name", StringType(), False),
        StructField("type_name", StringType(), False),
        StructField("event_name", StringType(), False),
        StructField("variable_header", properties, False),
        StructField("filterable_data", properties, False),
        StructField("remainder_of_body", any_struct(), False),
        StructField("arrival_time", TimestampType(), False),
        StructField("priority", ShortType(), False),
        StructField("expiry_time", TimestampType(), True),
    ])


def arrow_schema() -> Any:
    """The pyarrow schema Spark expects for ``event_schema()`` (timestamps in UTC)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(event_schema(), timezone="UTC")


def property_value(name: str, column: str = "filterable_data", as_type: str | None = None
                   ) -> Column:
    """The value of the first property called ``name`` (NULL when absent).

    Without ``as_type`` the result is the VARIANT; with it (a Spark SQL type
    such as ``"string"``, ``"bigint"``, ``"double"``) it is
    ``try_variant_get(value, '$', as_type)``. The SQL equivalent is
    ``get(filter(filterable_data, p -> p.name = 'n'), 0).value``.
    """
    found = F.get(F.filter(F.col(column), lambda p: p["name"] == F.lit(name)), 0)["value"]
    if as_type is None:
        return found
    return F.try_variant_get(found, "$", as_type)
