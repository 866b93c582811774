"""Builders for filter tests: events in the three forms, and filters."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from cosnotify.filter.factory import FilterFactory
from cosnotify.orb import CORBA
from cosnotify.stubs import CosNotification as N
from cosnotify.stubs import CosNotifyFilter

#: A fixed ``$curtime`` for deterministic tests: 2024-01-01T00:00Z as a TimeBase::TimeT.
NOW = (1704067200 + 12219292800) * 10_000_000


def clock() -> int:
    return NOW


def any_of(value: Any) -> Any:
    """``value`` in an Any, with the obvious TypeCode for Python scalars."""
    if isinstance(value, CORBA.Any):
        return value
    if isinstance(value, bool):
        return CORBA.Any(CORBA.TC_boolean, value)
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return CORBA.Any(CORBA.TC_long, value)
        if -(2**63) <= value < 2**63:
            return CORBA.Any(CORBA.TC_longlong, value)
        return CORBA.Any(CORBA.TC_ulonglong, value)
    if isinstance(value, float):
        return CORBA.Any(CORBA.TC_double, value)
    if isinstance(value, str):
        return CORBA.Any(CORBA.TC_string, value)
    raise TypeError(f"give an explicit Any for {value!r}")


def props(pairs: dict[str, Any] | Iterable[tuple[str, Any]]) -> list[Any]:
    items = pairs.items() if isinstance(pairs, dict) else pairs
    return [N.Property(name, any_of(value)) for name, value in items]


def structured(domain: str = "Telecom", type_name: str = "CommunicationsAlarm",
               event_name: str = "", variable: Any = (), filterable: Any = (),
               body: Any = None) -> Any:
    """A StructuredEvent; ``variable``/``filterable`` map names to values or Anys."""
    header = N.EventHeader(N.FixedEventHeader(N.EventType(domain, type_name), event_name),
                           props(variable))
    remainder = body if body is not None else CORBA.Any(CORBA.TC_null, None)
    return N.StructuredEvent(header, props(filterable), remainder)


def make_filter(*constraints: str | tuple[list[tuple[str, str]], str],
                factory: FilterFactory | None = None) -> Any:
    """An EXTENDED_TCL filter holding ``constraints`` (text, or (types, text))."""
    f = (factory or FilterFactory(clock=clock)).create_filter("EXTENDED_TCL")
    f.add_constraints([expression(c) for c in constraints])
    return f


def expression(constraint: str | tuple[list[tuple[str, str]], str]) -> Any:
    if isinstance(constraint, str):
        return CosNotifyFilter.ConstraintExp([], constraint)
    types, text = constraint
    return CosNotifyFilter.ConstraintExp([N.EventType(d, t) for d, t in types], text)


def matcher(text: str) -> Callable[[Any], bool]:
    """``match`` for Anys and ``match_structured`` for structured events, of one constraint."""
    f = make_filter(text)

    def match(event: Any) -> bool:
        if isinstance(event, CORBA.Any):
            result = f.match(event)
        elif isinstance(event, list):
            result = f.match_typed(event)
        else:
            result = f.match_structured(event)
        assert isinstance(result, bool)
        return result
    return match
