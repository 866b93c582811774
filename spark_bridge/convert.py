"""StructuredEvent <-> row of ``event_schema()``, as pure functions.

Strategy: a row is the event's three names, its two property sequences as
lists of (name, TypeCode text, VARIANT) and its body as (TypeCode text,
VARIANT), plus arrival time, priority and expiry. Each CORBA Any goes
through ``anycodec.py`` (the value, typed and nested, in a VARIANT; the
TypeCode as text beside it), so ``row_to_event(event_to_row(e, t))`` is
``e`` again: the same values (omniORB's structs compare by identity, so
tests compare them member by member) with TypeCodes of the same text. Rows may come back from Spark as ``Row``
objects, tuples in schema order or mappings; VARIANTs as ``VariantVal``,
(value, metadata) pairs or dicts. Events are omniORB's
``CosNotification.StructuredEvent`` values, as a proxy delivers them or as
they arrive from the wire. Nothing here touches a SparkSession or an ORB;
``VariantVal`` is only a value class.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import omniORB  # noqa: F401 - before the COS stubs it puts on sys.path
from pyspark.sql.types import VariantVal

import CosNotification as N

from cosnotify.channel.clock import utc_to_seconds
from spark_bridge.anycodec import ConversionError, Raw, References, decode_any, encode_any

__all__ = [
    "ConversionError",
    "References",
    "any_to_cell",
    "cell_to_any",
    "encode_any",
    "encode_event",
    "event_to_row",
    "resolve_qos",
    "row_qos",
    "row_to_event",
]

_UTC = UTC
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: Spark's timestamps run from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z.
_FIRST_SECONDS = -62_135_596_800.0
_END_SECONDS = 253_402_300_800.0  # 10000-01-01T00:00:00Z
_LAST_MICROS = 253_402_300_799_999_999


# -- Any <-> cell ------------------------------------------------------------------------------

def any_to_cell(value: Any, references: References | None = None) -> tuple[str, VariantVal]:
    """The ``struct<type, value>`` cell for a CORBA Any."""
    text, data, metadata = encode_any(value, references)
    return text, VariantVal(data, metadata)


def cell_to_any(type_text: str, variant: Any, references: References | None = None) -> Any:
    """The CORBA Any of a cell; ``variant`` is a VariantVal, (value, metadata) or a dict."""
    data, metadata = _variant_bytes(variant)
    return decode_any(type_text, data, metadata, references)


def _variant_bytes(variant: Any) -> tuple[bytes, bytes]:
    if isinstance(variant, VariantVal):
        return bytes(variant.value), bytes(variant.metadata)
    if isinstance(variant, Mapping):
        return bytes(variant["value"]), bytes(variant["metadata"])
    data, metadata = variant
    return bytes(data), bytes(metadata)


# -- events <-> rows --------------------------------------------------------------------------

def resolve_qos(event: Any, arrival: float, default_priority: int = 0,
                default_timeout: float = 0.0) -> tuple[int, float | None]:
    """(priority, expiry in Unix seconds or None) of an event that arrived at ``arrival``.

    Header fields win over the defaults (Notification Service section 2.2,
    Table 2-4): ``Priority`` (short), ``Timeout`` (TimeT, relative, 100 ns),
    ``StopTime`` (UtcT, absolute). The expiry is the earlier of StopTime and
    arrival + Timeout; ``default_timeout`` is in seconds (0 = none). A header
    Timeout of 0 is "no timeout" and overrides ``default_timeout`` too.
    """
    priority = default_priority
    lifetime = default_timeout
    stop: float | None = None
    for prop in event.header.variable_header:
        name = prop.name
        if name == "Priority":
            priority = int(prop.value._v)
        elif name == "Timeout":
            # Table 2-4: zero means no timeout, and the header overrides the proxy's
            # (the channel's event._apply_header_field).
            lifetime = prop.value._v / 1e7
        elif name == "StopTime":
            stop = utc_to_seconds(prop.value._v)
    expiry = arrival + lifetime if lifetime else None
    if stop is not None:
        expiry = stop if expiry is None else min(stop, expiry)
    return priority, expiry


def timestamp_micros(seconds: float, what: str) -> int | None:
    """Unix seconds as a Spark timestamp's microseconds, or None past Spark's last
    timestamp (9999-12-31T23:59:59.999999Z): an expiry there is never (a StopTime or
    Timeout of 2**64-1 is ~year 60000), a source time not held. A time before year 1
    (no header field gives one: TimeT and UtcT start in 1582) is a ConversionError."""
    if not seconds >= _FIRST_SECONDS:  # NaN too
        raise ConversionError(f"{what} {seconds!r} is before 0001-01-01T00:00:00Z, "
                              "the first Spark timestamp")
    if seconds >= _END_SECONDS:
        return None
    micros = round(seconds * 1_000_000)
    return micros if micros <= _LAST_MICROS else None


Cell = tuple[str, tuple[bytes, bytes]]  # (TypeCode text, (variant value, variant metadata))
PropertyCell = tuple[str, str, tuple[bytes, bytes]]  # (name, TypeCode text, (value, metadata))


def encode_event(event: Any, references: References | None = None
                 ) -> tuple[str, str, str, list[PropertyCell], list[PropertyCell], Cell]:
    """The first six columns of a row, with variants as (value, metadata) byte pairs.
    ConversionError if a name is no text UTF-8 can hold (a lone surrogate: an event
    made in process is not marshalled) or holds NUL (``row_to_event`` refuses it, as
    CORBA strings exclude it), so the event is set aside, not its batch."""
    fixed = event.header.fixed_header
    return (_name(fixed.event_type.domain_name, "domain_name"),
            _name(fixed.event_type.type_name, "type_name"),
            _name(fixed.event_name, "event_name"),
            _properties(event.header.variable_header, references),
            _properties(event.filterable_data, references),
            _pair(encode_any(event.remainder_of_body, references)))


def _name(value: Any, what: str) -> str:
    if type(value) is str and "\0" not in value and (value.isascii() or _utf8(value)):
        return value
    raise ConversionError(f"{what} {value!r:.80} is not text UTF-8 can hold, or holds NUL")


def _utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _properties(props: list[Any], references: References | None) -> list[PropertyCell]:
    out: list[PropertyCell] = []
    append = out.append
    for prop in props:
        text, data, metadata = encode_any(prop.value, references)
        append((_name(prop.name, "a property name"), text, (data, metadata)))
    return out


def _pair(raw: Raw) -> Cell:
    return raw[0], (raw[1], raw[2])


def event_to_row(event: Any, arrival: float, priority: int | None = None,
                 expiry: float | None = None, *, references: References | None = None
                 ) -> tuple[Any, ...]:
    """A row of ``event_schema()`` for ``spark.createDataFrame(rows, event_schema())``.

    ``arrival`` is in Unix seconds. ``priority`` and ``expiry`` (Unix seconds)
    default to what :func:`resolve_qos` finds in the header. An expiry past
    9999-12-31T23:59:59.999999Z is NULL, never (:func:`timestamp_micros`).
    """
    if priority is None or expiry is None:
        found_priority, found_expiry = resolve_qos(event, arrival)
        priority = found_priority if priority is None else priority
        expiry = found_expiry if expiry is None else expiry
    expiry_micros = None if expiry is None else timestamp_micros(expiry, "expiry")
    domain, type_name, name, header, data, body = encode_event(event, references)
    return (domain, type_name, name,
            [(n, t, VariantVal(*v)) for n, t, v in header],
            [(n, t, VariantVal(*v)) for n, t, v in data],
            (body[0], VariantVal(*body[1])),
            datetime.fromtimestamp(arrival, _UTC), priority,
            None if expiry_micros is None else _EPOCH + timedelta(microseconds=expiry_micros))


def row_to_event(row: Any, references: References | None = None) -> Any:
    """The StructuredEvent of a row (a pyspark Row, a tuple in schema order or a mapping).

    A row that describes no event (a NULL name, type or value; a VARIANT that
    does not fit its type text) raises ConversionError naming the column.
    """
    get = _getter(row)
    try:
        names = [_text(get(i, column), column) for i, column in enumerate(_NAMES)]
        header = _properties_of(get(3, "variable_header"), "variable_header", references)
        data = _properties_of(get(4, "filterable_data"), "filterable_data", references)
        body = _cell(get(5, "remainder_of_body"), "remainder_of_body", references)
    except (KeyError, IndexError) as exc:
        raise ConversionError(f"the row lacks a column of event_schema(): {exc}") from exc
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType(names[0], names[1]), names[2]), header),
        data, body)


_NAMES = ("domain_name", "type_name", "event_name")


def _text(value: Any, column: str) -> str:
    if not isinstance(value, str) or "\0" in value:
        raise ConversionError(f"{column} must be a string without NUL, not {value!r:.60}")
    return value


def _properties_of(items: Any, column: str, references: References | None) -> list[Any]:
    if items is None or isinstance(items, (str, bytes, Mapping)):
        raise ConversionError(f"{column} must be an array of properties, not {items!r:.60}")
    out = []
    for index, item in enumerate(items):
        where = f"{column}[{index}]"
        if item is None:
            raise ConversionError(f"{where} is NULL")
        name = item["name"] if isinstance(item, Mapping) else item[0]
        out.append(N.Property(_text(name, f"{where}.name"),
                              _cell(item, where, references, first=1)))
    return out


def _cell(item: Any, where: str, references: References | None, first: int = 0) -> Any:
    """The Any of a ``struct<type, value>`` cell (or of a property's type and value)."""
    if item is None:
        raise ConversionError(f"{where} is NULL")
    if isinstance(item, Mapping):
        type_text, variant = item["type"], item["value"]
    else:
        type_text, variant = item[first], item[first + 1]
    if not isinstance(type_text, str):
        raise ConversionError(f"{where}.type must be a TypeCode text, not {type_text!r:.60}")
    if variant is None:
        raise ConversionError(f"{where}.value is NULL (a null value is a VARIANT null)")
    try:
        return cell_to_any(type_text, variant, references)
    except ConversionError as exc:
        raise ConversionError(f"{where}: {exc}") from exc
    except (ValueError, TypeError) as exc:  # a bad type text or VARIANT form
        raise ConversionError(f"{where}: {exc}") from exc


def row_qos(row: Any) -> tuple[float, int, float | None]:
    """(arrival, priority, expiry) of a row, times in Unix seconds."""
    get = _getter(row)
    expiry = get(8, "expiry_time")
    return _seconds(get(6, "arrival_time")), int(get(7, "priority")), \
        None if expiry is None else _seconds(expiry)


def _seconds(value: Any) -> float:
    if isinstance(value, datetime):
        # Aware, or naive in the local zone as pyspark's Row collection hands it back.
        return value.timestamp()
    return float(value)


def _getter(row: Any) -> Callable[[int, str], Any]:
    if isinstance(row, Mapping):
        return lambda index, name: row[name]
    if hasattr(row, "__fields__"):  # pyspark Row: by name, whatever the column order
        return lambda index, name: row[name]
    return lambda index, name: row[index]
