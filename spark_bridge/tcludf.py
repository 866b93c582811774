"""The UDF behind ``tcl``: our own filter over events rebuilt from rows.

Strategy: where the SQL translation of a constraint cannot decide a row,
``tcl`` calls the SQL function ``cosnotify_tcl_match(constraint, event)``,
registered once per SparkSession. It rebuilds the StructuredEvent with
``row_to_event`` and runs ``Filter.match_structured`` of a filter compiled
once per constraint and process, so its answer is the channel's by
construction. Rows the SQL decided pass it a NULL event. ``_udf_call``
writes the call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from pyspark.sql.types import BooleanType

from spark_bridge.tclsql import _EVENT_COLUMNS, Sql, _q, _Unsupported

__all__ = ["UDF_NAME"]


_matchers: dict[str, Callable[[Any], bool]] = {}
_matchers_lock = threading.Lock()


def _matcher(constraint: str) -> Callable[[Any], bool]:
    with _matchers_lock:
        match = _matchers.get(constraint)
        if match is None:
            import omniORB  # noqa: F401 - before the COS stub it puts on sys.path

            import CosNotifyFilter

            from cosnotify.filter import FilterFactory

            flt = FilterFactory().create_filter("EXTENDED_TCL")
            flt.add_constraints([CosNotifyFilter.ConstraintExp([], constraint)])
            match = flt.match_structured
            _matchers[constraint] = match
        return match


class _References:
    """Object references for the UDF, read by this process's bridge ORB (made on first use).

    A reference is opaque to the constraint language, but an event holding one
    can only be rebuilt with an ORB; ``string_to_object`` of an IOR does not connect.
    """

    def object_to_string(self, obj: Any) -> str:
        from spark_bridge.connect import client_orb

        return str(client_orb().object_to_string(obj))

    def string_to_object(self, text: str) -> Any:
        from spark_bridge.connect import client_orb

        return client_orb().string_to_object(text)


_REFERENCES = _References()


def _evaluate(constraint, row):  # type: ignore[no-untyped-def]  # unhinted, a plain UDF
    """The UDF body: ``Filter.match_structured`` on the event rebuilt from the row.

    A row that is no event (NULLs, a VARIANT not fitting its type) raises
    ConversionError, which fails the query: it has no answer to give. A
    constraint that is not UTF-8 (a lone surrogate) comes as binary (``_udf_call``).
    """
    if row is None:
        return None
    if isinstance(constraint, (bytes, bytearray)):
        constraint = bytes(constraint).decode("utf-8", "surrogatepass")
    from spark_bridge.convert import row_to_event

    return bool(_matcher(constraint)(row_to_event(row, references=_REFERENCES)))


#: The SQL name of the UDF (registered per SparkSession by :func:`_register`).
UDF_NAME = "cosnotify_tcl_match"
_registered: set[int] = set()


def _register(spark: Any) -> None:
    """Register the UDF with ``spark`` (once per session): a classic session is known
    by its JVM session, a Spark Connect one (which has none) by its session id."""
    session_id = getattr(spark, "session_id", None)
    key: Any = ("connect", session_id) if session_id else id(spark._jsparkSession)
    if key not in _registered:
        spark.udf.register(UDF_NAME, _evaluate, BooleanType())
        _registered.add(key)


_EVENT = "named_struct(" + ", ".join(f"'{c}', `{c}`" for c in _EVENT_COLUMNS) + ")"


def _udf_call(constraint: str, event: Sql = _EVENT, otherwise: Sql = "FALSE") -> Sql:
    """The SQL of the UDF's answer for ``event`` (``otherwise`` where it gives none)."""
    try:
        text = _q(constraint)
    except _Unsupported:  # a lone surrogate: the UDF decodes binary with surrogatepass
        text = f"X'{constraint.encode('utf-8', 'surrogatepass').hex()}'"
    return f"coalesce({UDF_NAME}({text}, {event}), {otherwise})"
