"""Table 2-2: typed calls to and from Any and Structured events.

Strategy: pure functions over an :class:`~cosnotify.typed.interfaces.Operation`
and omniORB values, no channel state. The spec's rules (Table 2-2, and
section 2.5.3 on ``%TYPED``):

- a typed call becomes a Structured Event whose ``type_name`` is ``%TYPED``,
  ``domain_name`` the empty string, and whose filterable data is
  ``operation`` (a string: the fully scoped operation name) followed by one
  property per parameter, named as in the IDL, holding the value passed;
- to an Any consumer it is an Any holding that name-value sequence
  (``CosNotification::PropertySeq``);
- the other way, a Structured Event or an Any is a call of ``<I>`` only if it
  follows that convention exactly: ``operation`` first, naming an operation
  of the interface, then its parameters by name, in order, with their IDL
  types. Anything else "will not result in the event being delivered to any
  Typed clients" (Table 2-2): :func:`call_of` returns None and the caller
  counts it.

The ``operation`` string is the operation's absolute name in the Interface
Repository's form, with the leading ``::``
(``::CoffeeModule::Coffee::drinking_coffee``), as JacORB, the one deployed
typed notification channel, writes it; one without the leading ``::`` is
taken too (docs/typed.md records the choice).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import omniORB
from omniORB import CORBA

import CosNotification as N

from cosnotify.channel.codec import ensure_orb
from cosnotify.channel.event import typed_sequence
from cosnotify.corba import descriptors as D
from cosnotify.typed.interfaces import Operation, TypedInterface

__all__ = ["TYPED", "call_of", "call_of_any", "empty_value", "to_any", "to_match_typed",
           "to_structured"]

TYPED = "%TYPED"
OPERATION = "operation"


def _properties(operation: Operation, arguments: Sequence[Any]) -> list[Any]:
    """The name-value sequence of a call; BAD_PARAM for a wrong number of arguments or a
    value its parameter's type cannot hold (checked as omniORB would marshal it: a call
    in process is not unmarshalled, and a bad value must not reach a consumer)."""
    if len(arguments) != len(operation.parameters):
        raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO,
                              f"{operation.scoped} takes {len(operation.parameters)} "
                              f"arguments, not {len(arguments)}")
    ensure_orb()  # cdrMarshal needs one
    for parameter, value in zip(operation.parameters, arguments, strict=True):
        try:
            omniORB.cdrMarshal(parameter.typecode, value)
        except CORBA.BAD_PARAM as exc:
            raise CORBA.BAD_PARAM(exc.minor, CORBA.COMPLETED_NO,
                                  f"{operation.scoped}: {parameter.name}: "
                                  f"{' '.join(map(str, getattr(exc, '_info', None) or [exc]))}") from None
        except (CORBA.SystemException, ValueError, SystemError) as exc:
            # A str omniORB cannot encode (a lone surrogate) comes out of cdrMarshal as a
            # SystemError or UNKNOWN, not BAD_PARAM (review 68): the caller's value still.
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO,
                                  f"{operation.scoped}: {parameter.name}: a value its type "
                                  f"cannot hold ({type(exc).__name__})") from None
    return [N.Property(OPERATION, CORBA.Any(CORBA.TC_string, operation.scoped)),
            *(N.Property(p.name, CORBA.Any(p.typecode, value))
              for p, value in zip(operation.parameters, arguments, strict=True))]


def to_structured(operation: Operation, arguments: Sequence[Any]) -> Any:
    """The Structured Event of a typed call (Table 2-2, "Typed Event" to "Structured")."""
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("", TYPED), ""), []),
        _properties(operation, arguments), CORBA.Any(CORBA.TC_null, None))


def to_any(operation: Operation, arguments: Sequence[Any]) -> Any:
    """The Any of a typed call: the name-value sequence (Table 2-2, "Typed" to "Any")."""
    return CORBA.Any(N._tc_PropertySeq, _properties(operation, arguments))


def to_match_typed(operation: Operation, arguments: Sequence[Any]) -> list[Any]:
    """The name-value sequence a filter's ``match_typed`` gets for a typed call (section
    2.7): ``event_type`` first -- "an event type structure containing the strings that
    are the name of the typed interface, and the name of the operation in that
    interface" (``CoffeeTest::Coffee``, ``drinking_coffee``) -- then the parameters
    (``channel.event.typed_sequence``, which a store's events are read back with)."""
    sequence = typed_sequence(to_structured(operation, arguments))
    assert sequence is not None  # to_structured puts operation first
    return sequence


def _call(interface: TypedInterface, properties: Sequence[Any]
          ) -> tuple[Operation, list[Any]] | None:
    if not properties or properties[0].name != OPERATION:
        return None
    named = properties[0].value
    if not D.equivalent(named.typecode()._d, CORBA.TC_string._d):
        return None
    operation = interface.by_scoped_name(named.value())
    if operation is None or len(properties) != len(operation.parameters) + 1:
        return None
    arguments = []
    for parameter, prop in zip(operation.parameters, properties[1:], strict=True):
        if prop.name != parameter.name \
                or not D.equivalent(prop.value.typecode()._d, parameter.typecode._d):
            return None
        arguments.append(prop.value.value())
    return operation, arguments


def call_of(interface: TypedInterface, event: Any) -> tuple[Operation, list[Any]] | None:
    """The call of ``interface`` a Structured Event stands for, or None (module docstring)."""
    return _call(interface, event.filterable_data)


def call_of_any(interface: TypedInterface, value: Any) -> tuple[Operation, list[Any]] | None:
    """The call of ``interface`` an Any stands for (a name-value sequence), or None."""
    if not D.equivalent(value.typecode()._d, N._tc_PropertySeq._d):
        return None
    return _call(interface, value.value())


def empty_value(typecode: Any) -> Any:
    """A value of ``typecode`` to return beside FALSE: its content is meaningless, but
    over IIOP it must marshal, so it is the type's zero (docs/typed.md)."""
    return _zero(typecode._d)


def _zero(d: Any) -> Any:
    d = D.unalias(D.resolve(d))
    k = D.kind(d)
    if k in (D.SHORT, D.LONG, D.LONGLONG, D.USHORT, D.ULONG, D.ULONGLONG, D.OCTET):
        return 0
    if k in (D.FLOAT, D.DOUBLE):
        return 0.0
    if k == D.BOOLEAN:
        return False
    if k in (D.CHAR, D.WCHAR):
        return "\0"
    if k in (D.STRING, D.WSTRING):
        return ""
    if k == D.ENUM:
        return d[3][0]
    if k == D.STRUCT:
        return d[1](*(_zero(member) for _, member in D.members(d)))
    if k == D.SEQUENCE:
        element = D.kind(D.unalias(D.resolve(d[1])))
        return b"" if element == D.OCTET else ("" if element == D.CHAR else [])
    if k == D.ARRAY:
        element = D.kind(D.unalias(D.resolve(d[1])))
        if element == D.OCTET:
            return bytes(d[2])
        if element == D.CHAR:  # omniORBpy's char[N] is a str, as sequence<char> is
            return "\0" * d[2]
        return [_zero(d[1]) for _ in range(d[2])]
    if k == D.ANY:
        return CORBA.Any(CORBA.TC_null, None)
    if k == D.UNION:  # its first case, holding that member's zero
        label, _, member = d[6][0]
        return d[1](label, _zero(member))
    if k == D.FIXED:
        return CORBA.fixed(d[1], d[2], 0)  # (digits, scale, value)
    if k == D.TYPECODE:
        return CORBA.TC_null
    return None  # object references (nil), valuetypes and value boxes (null)
