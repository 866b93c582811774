"""Builders for the ELVIN4 tests: Elvin-typed attributes as CORBA Anys, tri-state results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omniORB import CORBA

import CosNotification as N
import CosNotifyFilter

from cosnotify.filter.elvin4 import compile_program
from cosnotify.filter.factory import FilterFactory
from tests.filter.events import structured

VECTORS = Path(__file__).parent / "vectors"

#: The CORBA TypeCode used for each Elvin type (docs/grammars/elvin4.md mapping).
TYPECODES = {"int32": CORBA.TC_long, "int64": CORBA.TC_longlong, "real64": CORBA.TC_double,
             "string": CORBA.TC_string, "opaque": CORBA._tc_OctetSeq}


def load(name: str) -> list[dict[str, Any]]:
    vectors: list[dict[str, Any]] = json.loads((VECTORS / name).read_text("utf-8"))["vectors"]
    return vectors


def elvin_any(kind: str, value: Any) -> Any:
    """A CORBA.Any holding ``value`` as the CORBA type of Elvin type ``kind``."""
    if kind == "real64":
        value = float(value)
    elif kind == "opaque":
        value = bytes.fromhex(value)
    return CORBA.Any(TYPECODES[kind], value)


def event_of(attributes: dict[str, tuple[str, Any]] | dict[str, list[Any]]) -> Any:
    """A structured event whose filterable data holds the typed ``attributes``."""
    return structured(filterable={name: elvin_any(kind, value)
                                  for name, (kind, value) in attributes.items()})


def tri(text: str, event: Any) -> bool | None:
    """The tri-state value of ``text`` for ``event``: True, False or None (bottom).

    Strict matchers: a helper that raises fails the test instead of reading as bottom.
    """
    if compile_program(text, strict=True).structured(event):
        return True
    if compile_program(f"!({text})", strict=True).structured(event):
        return False
    return None


def elvin_filter(*texts: str) -> Any:
    """An ELVIN4 filter of the default factory holding ``texts``."""
    f = FilterFactory().create_filter("ELVIN4")
    f.add_constraints([CosNotifyFilter.ConstraintExp([], t) for t in texts])
    return f


def prop(name: str, value: Any) -> Any:
    return N.Property(name, value)
