"""Event -> JSON line: what ``cosnotify tail --format json`` prints.

Strategy: the inverse of :mod:`cosnotify.tools.jsonevents` (whose docstring
and docs/json-events.md give the mapping), pure functions again: a value is
written in the plain JSON form wherever :func:`~cosnotify.tools.jsonevents.loads`
reads it back as the same type, in the ``{"$type": T, "value": V}`` form
otherwise, and values of types the mapping has no form for (enums, structs,
unions...) are rendered readably by the Spark bridge's VARIANT encoder and
do not come back as they were. Nesting is cut where ``loads`` stops
reading, :data:`~cosnotify.tools.jsonevents.MAX_DEPTH` lists and objects
deep in a property's value or the body: an Any whose rendering would nest
deeper is written as the string ``"<nested too deep>"`` (inside a readable
rendering, the part too deep is), so every line written reads back.
"""

from __future__ import annotations

import datetime
import json
import math
from decimal import Decimal
from typing import Any

import omniORB
from omniORB import CORBA

from cosnotify.channel.clock import TIMET_EPOCH_OFFSET
from cosnotify.corba import descriptors as D
from cosnotify.tools.jsonevents import (
    _INTEGERS,
    _MAX_TIMET,
    _PROPERTY_ID,
    _UNITS,
    _UNIX_EPOCH,
    _UTCT_ID,
    MAX_DEPTH,
    JsonEventError,
    _list_name,
    _scalar_name,
    _scalar_of,
)

__all__ = ["any_to_json", "dumps", "to_json"]

#: The integers a plain JSON number may be for loads: long long's low end to unsigned
#: long long's high end.
_LOWEST = -(1 << 63)
_HIGHEST = (1 << 64) - 1


def dumps(event: Any) -> str:
    """One JSON line (no newline) for ``event``, in the schema :func:`loads` reads."""
    return json.dumps(to_json(event), ensure_ascii=False, allow_nan=False,
                      separators=(",", ":"))


def to_json(event: Any) -> dict[str, Any]:
    """``event`` as a JSON-ready dict with the keys domain, type, name, header,
    filterable and body."""
    fixed = event.header.fixed_header
    return {"domain": fixed.event_type.domain_name, "type": fixed.event_type.type_name,
            "name": fixed.event_name,
            "header": _properties_json(event.header.variable_header, 0, header=True),
            "filterable": _properties_json(event.filterable_data, 0),
            "body": any_to_json(event.remainder_of_body)}


def _properties_json(props: Any, depth: int, header: bool = False) -> Any:
    """An object, or a list of {"name", "value"} when names repeat."""
    rendered = [(p.name, _header_json(p) if header else any_to_json(p.value, depth))
                for p in props]
    names = [name for name, _ in rendered]
    if len(set(names)) == len(names) and sorted(names) != ["$type", "value"]:
        return dict(rendered)
    return [{"name": name, "value": value} for name, value in rendered]


def _header_json(prop: Any) -> Any:
    d = D.unalias(prop.value._t._d)
    if prop.name in ("Priority", "EventReliability") and d == D.SHORT:
        return prop.value._v
    if prop.name == "Timeout" and d == D.ULONGLONG:
        return prop.value._v
    if prop.name in ("StartTime", "StopTime") and D.repo_id(d) == _UTCT_ID:
        return _iso(prop.value._v.time)
    return any_to_json(prop.value)


def _iso(timet: int) -> str | int | float:
    """ISO-8601 UTC; past year 9999 (no ISO form), Unix seconds (which loads refuses)."""
    if timet > _MAX_TIMET:
        unix = timet - TIMET_EPOCH_OFFSET * _UNITS
        return unix // _UNITS if unix % _UNITS == 0 else unix / _UNITS
    seconds, fraction = divmod(timet, _UNITS)
    when = _UNIX_EPOCH + datetime.timedelta(seconds=seconds - TIMET_EPOCH_OFFSET)
    digits = f".{fraction:07d}".rstrip("0") if fraction else ""
    return when.strftime("%Y-%m-%dT%H:%M:%S") + digits + "Z"


#: What an Any nested deeper than ``loads`` reads is written as.
_CUT = "<nested too deep>"


def any_to_json(value: Any, depth: int = 0) -> Any:
    """A CORBA Any as JSON: plain where that reads back as the same type, else
    ``{"$type": T, "value": V}``, else (other types) a readable rendering.
    ``depth``: the lists and objects around it in its property value or body; a
    rendering nesting deeper than MAX_DEPTH in all is the string ``_CUT``."""
    if depth > MAX_DEPTH:  # even a scalar's container is cut: do not go on
        return _CUT
    rendered = _any_json(value, depth)
    room = MAX_DEPTH - depth
    return _CUT if _nesting(rendered, room) > room else rendered


def _nesting(value: Any, limit: int) -> int:
    """How deep lists and objects nest in ``value``, counted up to ``limit + 1``."""
    if limit < 0 or not isinstance(value, (list, dict)):
        return 0 if not isinstance(value, (list, dict)) else 1
    items = value.values() if isinstance(value, dict) else value
    return 1 + max((_nesting(item, limit - 1) for item in items), default=0)


def _any_json(value: Any, depth: int) -> Any:
    d = D.unalias(value._t._d)
    v = value._v
    if d in (D.NULL, D.VOID):
        return None
    name = _scalar_of(d)
    if name is not None:
        return _scalar_json(name, v)
    if type(d) is tuple and d[0] == D.SEQUENCE:
        element = D.unalias(d[1])
        if element == D.ANY:
            items = [any_to_json(item, depth + 1) for item in v]
            return items if _list_name(items) is None else {"$type": "sequence<any>",
                                                              "value": items}
        element_name = _scalar_of(element)
        if element_name is not None:
            return _sequence_json(element_name, v)
        if D.repo_id(element) == _PROPERTY_ID:
            rendered = _properties_json(v, depth + 1)
            if isinstance(rendered, dict):
                return rendered
            return {"$type": "PropertySeq", "value": rendered}
    return _readable(value, depth)


def _real_json(v: Any) -> float | str:
    """A float, or the text ``$type`` takes for NaN and the infinities."""
    if math.isfinite(v):
        return float(v)
    return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")


def _scalar_json(name: str, v: Any) -> Any:
    if name == "double" or name == "float":
        real = _real_json(v)
        return real if name == "double" and isinstance(real, float) else {"$type": name,
                                                                           "value": real}
    if name in ("boolean", "string"):
        return v
    if name == "wstring":
        return {"$type": name, "value": v}
    if name in _INTEGERS:
        try:
            if _scalar_name(v, "") == name:
                return v
        except JsonEventError:
            pass
    return {"$type": name, "value": v}


def _sequence_json(name: str, v: Any) -> Any:
    items = list(v)  # bytes give ints; a str (sequence<char>) gives characters
    if name in ("float", "double"):
        items = [_real_json(x) for x in items]
    if _list_name(items) == name:
        return items
    return {"$type": f"sequence<{name}>", "value": items}


def _readable(value: Any, depth: int = 0) -> Any:
    """Any other type, as the Spark bridge's VARIANT encoder sees it (not read back)."""
    from spark_bridge import variant
    from spark_bridge.anycodec import ConversionError, encode_any

    try:
        _, data, metadata = encode_any(value, omniORB.orb)
        plain = variant.read(data, metadata)
    except RecursionError:  # nested Anys a thousand deep, say
        return f"<{_type_label(value)}: nested too deep>"
    except (ConversionError, variant.VariantError, CORBA.SystemException, TypeError,
            ValueError) as exc:
        return f"<{_type_label(value)}: {exc}>"
    return _jsonable(plain, depth)


def _jsonable(plain: Any, depth: int) -> Any:
    """``plain`` as JSON ``loads`` reads: cut where it would nest deeper than MAX_DEPTH,
    and integers (fixed too) past the range of the mapping's integers as decimal
    strings, as a fraction is written (a bare one would not read back)."""
    if isinstance(plain, (dict, list, tuple)) and depth >= MAX_DEPTH:
        return _CUT
    if isinstance(plain, dict):
        return {str(k): _jsonable(v, depth + 1) for k, v in plain.items()}
    if isinstance(plain, (list, tuple)):
        return [_jsonable(v, depth + 1) for v in plain]
    if isinstance(plain, Decimal):
        if plain != plain.to_integral_value():
            return str(plain)
        plain = int(plain)
    if isinstance(plain, int) and not isinstance(plain, bool) \
            and not _LOWEST <= plain <= _HIGHEST:
        return str(plain)
    if isinstance(plain, (bytes, bytearray, memoryview)):
        return list(bytes(plain))
    if isinstance(plain, float) and not math.isfinite(plain):
        return str(plain)
    if plain is None or isinstance(plain, (bool, int, float, str)):
        return plain
    return str(plain)


def _type_label(value: Any) -> str:
    d = D.resolve(value._t._d)
    if d == D.ANY:
        return "any"
    return D.repo_id(d) or f"TypeCode kind {D.kind(d)}"
