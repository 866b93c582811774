"""Event builders for the EVENTHEAP tests: property values written as [kind, value]."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omniORB import CORBA

import CosNotification as N
import TimeBase

from tests.filter.events import structured

VECTORS = json.loads((Path(__file__).parent / "vectors.json").read_text())

TYPECODES = {
    "boolean": CORBA.TC_boolean, "short": CORBA.TC_short, "ushort": CORBA.TC_ushort,
    "long": CORBA.TC_long, "ulong": CORBA.TC_ulong, "longlong": CORBA.TC_longlong,
    "ulonglong": CORBA.TC_ulonglong, "octet": CORBA.TC_octet, "float": CORBA.TC_float,
    "double": CORBA.TC_double, "string": CORBA.TC_string, "wstring": CORBA.TC_wstring,
    "null": CORBA.TC_null, "TimeT": TimeBase._tc_TimeT,
}


def typed_any(kind: str, value: Any) -> Any:
    """An Any of the named kind (``TimeT`` is the TimeBase alias)."""
    return CORBA.Any(TYPECODES[kind], value)


def properties(spec: dict[str, list[Any]]) -> dict[str, Any]:
    return {name: typed_any(kind, value) for name, (kind, value) in spec.items()}


def event_of(spec: dict[str, Any]) -> Any:
    """A structured event from a vector's ``event`` entry."""
    return structured("EventHeap", spec.get("type_name", "Event"),
                      variable=properties(spec.get("variable", {})),
                      filterable=properties(spec.get("filterable", {})))


def property_seq(spec: dict[str, list[Any]]) -> list[Any]:
    return [N.Property(name, value) for name, value in properties(spec).items()]
