"""QoS negotiation: checking requests, context rules, and validate_qos.

Strategy: a request (a PropertySeq) is checked property by property in the
order of Table 2-6's error codes: unknown name (BAD_PROPERTY), not allowed at
this level (UNSUPPORTED_PROPERTY), wrong Any type (BAD_TYPE), outside the
legal values (BAD_VALUE), legal but not implemented here (UNSUPPORTED_VALUE),
then the context rules of section 2.5.5.1 (UNAVAILABLE_VALUE). Every problem
is collected, so one ``UnsupportedQoS`` lists them all, and nothing changes
unless the whole request is good (``set_qos`` is atomic, section 2.5.6.1).

``additional_qos`` implements section 2.5.6.4: it offers only properties the
request does not name, each with the values that would also be accepted, and
drops any two that depend on each other, as the second worked example of
section 2.5.6.8 requires.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
from omniORB import CORBA

import CosNotification
import TimeBase

from cosnotify.corba import descriptors as D
from cosnotify.qos.properties import (
    ADMIN_PROPERTIES,
    BEST_EFFORT,
    PERSISTENT,
    QOS_PROPERTIES,
    TRANSACTION_ADMIN_PROPERTIES,
    Level,
    PropertyDef,
    ValueType,
)

__all__ = [
    "Capabilities",
    "Target",
    "additional_qos",
    "check_admin",
    "check_qos",
    "from_any",
    "legal",
    "to_any",
    "to_property_seq",
]

CONNECTION_RELIABILITY = "ConnectionReliability"
EVENT_RELIABILITY = "EventReliability"
_RELIABILITY = (CONNECTION_RELIABILITY, EVENT_RELIABILITY)


@attrs.frozen
class Capabilities:
    """What this channel can do beyond the defaults."""

    persistent: bool = False     # ConnectionReliability=Persistent (needs the store)
    persistent_events: bool = False  # EventReliability=Persistent (needs the store)
    transactions: bool = False   # EnableTransaction TRUE (needs an OTS)
    acknowledgment: bool = True  # DeliveryReliability=Acknowledgment (Ack proxies)


@attrs.frozen
class Target:
    """The object whose QoS is being negotiated, as the context rules see it."""

    level: Level
    #: The parent's effective QoS (None for a channel).
    parent: Mapping[str, Any] | None = None
    #: True once children exist, which freezes the reliability settings.
    has_children: bool = False
    #: For a message (``validate_event_qos``): whether the channel keeps an event whose
    #: header asks EventReliability=Persistent (it has an event log), as push judges it.
    persistent_header: bool = False


_TC = {
    ValueType.SHORT: CORBA.TC_short,
    ValueType.LONG: CORBA.TC_long,
    ValueType.BOOLEAN: CORBA.TC_boolean,
    ValueType.ULONGLONG: CORBA.TC_ulonglong,
}


def _tc_for(value_type: ValueType) -> Any:
    if value_type is ValueType.TIMET:
        return TimeBase._tc_TimeT
    if value_type is ValueType.UTCT:
        return TimeBase._tc_UtcT
    return _TC[value_type]


def to_any(definition: PropertyDef, value: Any) -> Any:
    """A property value as the Any the IDL expects."""
    if definition.type is ValueType.NODE_LIMITS:
        return _node_limits_any(value or ())
    return CORBA.Any(_tc_for(definition.type), value)


#: A NodeLimitSeq whose entries are not valid limits (a BAD_VALUE, not a BAD_TYPE).
_INVALID = object()
_NODE_LIMIT_ID = "IDL:CosNotifyGrammars/NodeLimit:1.0"


def _node_limits_any(limits: Any) -> Any:
    import CosNotifyGrammars

    from cosnotify.filter.oes.limits import NodeLimits

    return CORBA.Any(CosNotifyGrammars._tc_NodeLimitSeq, NodeLimits(limits).to_seq())


def _node_limits_value(value: Any) -> tuple[bool, Any]:
    """(True, tuple of NodeLimit) for a NodeLimitSeq Any; (True, _INVALID) when an
    entry is out of range; (False, None) for another type."""
    from cosnotify.filter.oes.limits import NodeLimits

    d = D.unalias(value._t._d)
    if not (type(d) is tuple and d[0] == D.SEQUENCE):
        return False, None
    element = D.unalias(d[1])
    if not (type(element) is tuple and element[0] == D.STRUCT
            and D.repo_id(element) == _NODE_LIMIT_ID):
        return False, None
    try:
        return True, tuple(NodeLimits.from_seq(value._v))
    except (ValueError, TypeError, AttributeError):
        return True, _INVALID


#: The TCKind each value type's TypeCode has once aliases are unwound (TimeT is an alias).
_KIND_OF = {ValueType.SHORT: D.SHORT, ValueType.LONG: D.LONG,
            ValueType.BOOLEAN: D.BOOLEAN, ValueType.TIMET: D.ULONGLONG,
            ValueType.ULONGLONG: D.ULONGLONG}
_UTCT_ID = "IDL:omg.org/TimeBase/UtcT:1.0"


def from_any(definition: PropertyDef, value: Any) -> tuple[bool, Any]:
    """(True, python value) if the Any has the property's type, else (False, None).

    The TypeCode is read through its descriptor (``cosnotify.corba.descriptors``),
    so an Any that came from the wire, indirections and all, is judged the same
    way as one made in process; a UtcT is recognised by its repository id.
    """
    if not isinstance(value, CORBA.Any):
        return False, None
    if definition.type is ValueType.NODE_LIMITS:
        return _node_limits_value(value)
    d = D.unalias(value._t._d)
    if definition.type is ValueType.UTCT:
        if type(d) is tuple and d[0] == D.STRUCT and D.repo_id(d) == _UTCT_ID:
            return _utct_value(value._v)
        return False, None
    if type(d) is not int or d != _KIND_OF[definition.type]:
        return False, None
    inner = value._v
    if definition.type is ValueType.BOOLEAN:
        return isinstance(inner, int), bool(inner)
    return isinstance(inner, int) and not isinstance(inner, bool), inner


#: TimeBase::UtcT's members and their ranges: TimeT, ulong, ushort, short.
_UTCT_FIELDS = (("time", 0, 2**64 - 1), ("inacclo", 0, 2**32 - 1),
                ("inacchi", 0, 2**16 - 1), ("tdf", -(2**15), 2**15 - 1))


def _utct_value(inner: Any) -> tuple[bool, Any]:
    """An Any with the UtcT TypeCode made in process holds whatever it was given (a
    marshalled one cannot): not a UtcT of integers is the wrong type, a member
    outside its IDL type's range an illegal value (``_INVALID``)."""
    if not isinstance(inner, TimeBase.UtcT):
        return False, None
    legal_members = True
    for name, low, high in _UTCT_FIELDS:
        member = getattr(inner, name, None)
        if not isinstance(member, int) or isinstance(member, bool):
            return False, None
        legal_members = legal_members and low <= member <= high
    return True, inner if legal_members else _INVALID


def _legal_range(definition: PropertyDef) -> Any:
    """The range a BAD_VALUE returns: the property's legal values."""
    if definition.type is ValueType.UTCT:
        return _range(definition, _utc(0), _utc(2**64 - 1))
    return _range(definition, definition.low, definition.high)


def _range(definition: PropertyDef, low: Any, high: Any) -> Any:
    return CosNotification.PropertyRange(to_any(definition, low), to_any(definition, high))


_NO_RANGE = CosNotification.PropertyRange(CORBA.Any(CORBA.TC_null, None),
                                          CORBA.Any(CORBA.TC_null, None))


def _error(code: Any, name: str, available: Any = _NO_RANGE) -> Any:
    return CosNotification.PropertyError(code, name, available)


def legal(definition: PropertyDef, value: Any) -> bool:
    """Is ``value`` (from :func:`from_any`) in the property's range or choices?"""
    if value is _INVALID:
        return False
    if definition.choices is not None:
        return value in definition.choices
    if definition.low is not None and value < definition.low:
        return False
    return definition.high is None or value <= definition.high


def _supported(definition: PropertyDef, value: Any, caps: Capabilities) -> bool:
    if definition.name == CONNECTION_RELIABILITY and caps.persistent:
        return True
    if definition.name == EVENT_RELIABILITY and caps.persistent_events:
        return True
    if definition.name == "EnableTransaction" and caps.transactions:
        return True
    if definition.name == "DeliveryReliability":
        return value == 0 or caps.acknowledgment
    return definition.supported is None or value in definition.supported


def _supported_range(definition: PropertyDef, caps: Capabilities) -> Any:
    values = definition.supported
    if values is None or _supported(definition, PERSISTENT, caps) and definition.name in _RELIABILITY:
        return _range(definition, definition.low, definition.high)
    return _range(definition, min(values), max(values))


def check_qos(request: Sequence[Any], target: Target, current: Mapping[str, Any],
              caps: Capabilities) -> tuple[dict[str, Any], list[Any]]:
    """Check a QoS request against ``target``.

    Returns ``(changes, errors)``: the Python values to apply, and a
    PropertyErrorSeq (empty when the whole request can be honoured).
    """
    changes: dict[str, Any] = {}
    errors: list[Any] = []
    for prop in request:
        definition = QOS_PROPERTIES.get(prop.name)
        if definition is None:
            errors.append(_error(CosNotification.BAD_PROPERTY, prop.name))
            continue
        if not definition.levels & target.level:
            errors.append(_error(CosNotification.UNSUPPORTED_PROPERTY, prop.name))
            continue
        ok, value = from_any(definition, prop.value)
        if not ok:
            errors.append(_error(CosNotification.BAD_TYPE, prop.name))
            continue
        if not legal(definition, value):
            errors.append(_error(CosNotification.BAD_VALUE, prop.name, _legal_range(definition)))
            continue
        if not _supported(definition, value, caps):
            errors.append(_error(CosNotification.UNSUPPORTED_VALUE, prop.name,
                                 _supported_range(definition, caps)))
            continue
        changes[prop.name] = value
    if not errors:
        errors.extend(_context_errors(changes, target, current))
    return changes, errors


#: The per-message times and the flags that allow them (section 2.5.5.3).
_TIME_FLAGS = {"StartTime": "StartTimeSupported", "StopTime": "StopTimeSupported"}


def _context_errors(changes: Mapping[str, Any], target: Target,
                    current: Mapping[str, Any]) -> list[Any]:
    """Section 2.5.5.1's rules on reliability, as UNAVAILABLE_VALUE errors. Only
    properties the request names are blamed (section 2.5.6.6: "Only properties from
    the request that were in error are returned")."""
    if target.level == Level.MESSAGE:
        return _message_context_errors(changes, target, current)
    errors = []
    merged = {**current, **changes}
    definition = QOS_PROPERTIES[CONNECTION_RELIABILITY]
    # A child may not be Persistent under a BestEffort parent.
    if (target.parent is not None and changes.get(CONNECTION_RELIABILITY) == PERSISTENT
            and target.parent.get(CONNECTION_RELIABILITY, BEST_EFFORT) == BEST_EFFORT):
        errors.append(_error(CosNotification.UNAVAILABLE_VALUE, CONNECTION_RELIABILITY,
                             _range(definition, BEST_EFFORT, BEST_EFFORT)))
    # Reliability is frozen once children exist.
    if target.has_children:
        for name in _RELIABILITY:
            if name in changes and changes[name] != current.get(name, BEST_EFFORT):
                fixed = current.get(name, BEST_EFFORT)
                errors.append(_error(CosNotification.UNAVAILABLE_VALUE, name,
                                     _range(QOS_PROPERTIES[name], fixed, fixed)))
    # EventReliability=Persistent with ConnectionReliability=BestEffort has no meaning,
    # where EventReliability is set: on the channel. A BestEffort admin or proxy of
    # such a channel simply keeps nothing (docs/persistence.md).
    if (QOS_PROPERTIES[EVENT_RELIABILITY].levels & target.level
            and merged.get(EVENT_RELIABILITY) == PERSISTENT
            and merged.get(CONNECTION_RELIABILITY, BEST_EFFORT) == BEST_EFFORT):
        for name in _RELIABILITY:
            wanted = PERSISTENT if name == CONNECTION_RELIABILITY else BEST_EFFORT
            if name in changes and not any(e.name == name for e in errors):
                errors.append(_error(CosNotification.UNAVAILABLE_VALUE, name,
                                     _range(QOS_PROPERTIES[name], wanted, wanted)))
    return errors


def _message_context_errors(changes: Mapping[str, Any], target: Target,
                            current: Mapping[str, Any]) -> list[Any]:
    """A header's context is its proxy's QoS (``current``) and the channel: StartTime
    and StopTime need StartTimeSupported and StopTimeSupported (section 2.5.5.3), and
    EventReliability=Persistent a channel that keeps events, as push decides
    (event.apply_qos)."""
    errors = []
    for name in changes:
        if name in _TIME_FLAGS and not current.get(_TIME_FLAGS[name], True):
            errors.append(_error(CosNotification.UNAVAILABLE_PROPERTY, name))
        elif (name == EVENT_RELIABILITY and changes[name] == PERSISTENT
              and not target.persistent_header):
            errors.append(_error(CosNotification.UNAVAILABLE_VALUE, name,
                                 _range(QOS_PROPERTIES[name], BEST_EFFORT, BEST_EFFORT)))
    return errors


def additional_qos(request: Sequence[Any], target: Target, current: Mapping[str, Any],
                   caps: Capabilities) -> list[Any]:
    """The NamedPropertyRangeSeq ``validate_qos`` returns for a good request.

    Offered: each property allowed at ``target.level`` that the request does
    not name, with the values (other than its current one, for enumerations)
    that would also be accepted; then every pair that is not freely
    combinable is withdrawn (section 2.5.6.4: "all returned properties must
    be independent of one another").
    """
    changes, errors = check_qos(request, target, current, caps)
    if errors:
        return []
    state = {**current, **changes}
    candidates: dict[str, list[Any]] = {}
    for name, definition in QOS_PROPERTIES.items():
        if name in changes or not definition.levels & target.level:
            continue
        values = _acceptable_values(definition, state, target, caps)
        if values:
            candidates[name] = values
    independent = _independent(candidates, state, target)
    result = []
    for name in sorted(independent):
        definition = QOS_PROPERTIES[name]
        values = candidates[name]
        if definition.type is ValueType.UTCT:
            low, high = _utc(0), _utc(2**64 - 1)
        else:
            low, high = min(values), max(values)
        result.append(CosNotification.NamedPropertyRange(name, _range(definition, low, high)))
    return result


def _acceptable_values(definition: PropertyDef, state: Mapping[str, Any], target: Target,
                       caps: Capabilities) -> list[Any]:
    """Values of ``definition`` that a request adding only it would accept."""
    if definition.type is ValueType.UTCT:
        # any time is acceptable, where the proxy supports the property at all
        return [None] if state.get(_TIME_FLAGS[definition.name], True) else []
    if definition.choices is not None or definition.type is ValueType.BOOLEAN:
        domain: Iterable[Any] = definition.choices or (False, True)
        current = state.get(definition.name, definition.default)
        return [v for v in domain if v != current and _supported(definition, v, caps)
                and not _context_errors({definition.name: v}, target, state)]
    if definition.supported is not None:
        return list(definition.supported)
    return [definition.low, definition.high]


def _independent(candidates: Mapping[str, list[Any]], state: Mapping[str, Any],
                 target: Target) -> set[str]:
    names = set(candidates)
    for a in list(candidates):
        for b in list(candidates):
            if a >= b or a not in names or b not in names:
                continue
            if a in _RELIABILITY and b in _RELIABILITY:
                combos_ok = all(not _context_errors({a: va, b: vb}, target, state)
                                for va in candidates[a] for vb in candidates[b])
                if not combos_ok:
                    names.discard(a)
                    names.discard(b)
    return names


def _utc(timet: int) -> Any:
    return TimeBase.UtcT(timet, 0, 0, 0)


def check_admin(request: Sequence[Any]) -> tuple[dict[str, Any], list[Any]]:
    """Check admin properties (section 2.5.7); returns (changes, PropertyErrorSeq)."""
    changes: dict[str, Any] = {}
    errors: list[Any] = []
    for prop in request:
        definition = ADMIN_PROPERTIES.get(prop.name)
        if definition is None:
            code = CosNotification.UNSUPPORTED_PROPERTY \
                if prop.name in TRANSACTION_ADMIN_PROPERTIES else CosNotification.BAD_PROPERTY
            errors.append(_error(code, prop.name))
            continue
        ok, value = from_any(definition, prop.value)
        if not ok:
            errors.append(_error(CosNotification.BAD_TYPE, prop.name))
            continue
        if not legal(definition, value):
            errors.append(_error(CosNotification.BAD_VALUE, prop.name,
                                 _range(definition, definition.low, definition.high)))
            continue
        changes[prop.name] = value
    return changes, errors


def to_property_seq(values: Mapping[str, Any], table: Mapping[str, PropertyDef]) -> list[Any]:
    """A PropertySeq for ``values`` (names in ``table``), in a stable order."""
    return [CosNotification.Property(name, to_any(table[name], values[name]))
            for name in sorted(values) if name in table and values[name] is not None]
