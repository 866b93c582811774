"""Builders for filter tests: events in the three forms, filters, ad-hoc TypeCodes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import omniORB
from omniORB import CORBA, tcInternal

import CosNotification as N
import CosNotifyFilter

from cosnotify.corba import descriptors as D
from cosnotify.filter.factory import FilterFactory

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


def struct_tc(repo_id: str, name: str, members: Sequence[tuple[str, Any]]) -> Any:
    """A struct TypeCode no IDL declares; omniORB gives it an UnknownStruct class."""
    return tcInternal.createStructTC(repo_id, name,
                                     [CORBA.StructMember(n, t, None) for n, t in members])


def value(typecode: Any, *args: Any) -> Any:
    """A CORBA.Any of a struct or union, built with its descriptor's class."""
    return CORBA.Any(typecode, typecode._d[1](*args))


def same_any(a: Any, b: Any) -> bool:
    """Do two Anys hold equal values of equal TypeCodes? (omniORB's Any has no ``==``)."""
    return bool(a._t.equal(b._t) and a._v == b._v)


def same_value(a: Any, b: Any) -> bool:
    """Structural equality of omniORB values (its structs, unions and Anys have no ``==``)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, CORBA.Any):
        return bool(a._t.equal(b._t)) and same_value(a._v, b._v)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, omniORB.Union):
        return same_value(a._d, b._d) and same_value(a._v, b._v)
    if isinstance(a, (omniORB.StructBase, CORBA.UserException)):
        return vars(a).keys() == vars(b).keys() and all(
            same_value(v, vars(b)[k]) for k, v in vars(a).items())
    return bool(a == b)


def has_wire_indirection(d: Any, seen: set[int] | None = None) -> bool:
    """Does descriptor ``d`` hold the 4.3.3 wheel's 0xffffffff marker anywhere?"""
    seen = set() if seen is None else seen
    if type(d) not in (tuple, list) or id(d) in seen:
        return False
    seen.add(id(d))
    if type(d) is tuple and d and d[0] == D.WIRE_INDIRECT:
        return True
    return any(has_wire_indirection(item, seen) for item in d)


def exp_key(constraint: Any) -> tuple[tuple[tuple[str, str], ...], str]:
    """A ConstraintExp as comparable data (omniORB's structs have no ``==``)."""
    return (tuple((t.domain_name, t.type_name) for t in constraint.event_types),
            constraint.constraint_expr)


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
