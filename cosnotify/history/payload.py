"""Eventer payloads on notification events: the remainder of body, compared by value.

Strategy: the Eventer seed matches "only events with payload defined and whose
payload is the same as the query's payload". A notification event's payload is
its ``remainder_of_body`` (an Any of ``tk_null`` is none); two are the same when
their TypeCodes are equivalent and their values equal, member by member. Not by
their CDR bytes: omniORB leaves alignment padding unset, so equal values may
encode to different bytes.
"""

from __future__ import annotations

from typing import Any

from omniORB import CORBA

from cosnotify.corba import descriptors as D

__all__ = ["payload_of", "same_payload"]


def payload_of(body: Any) -> Any:
    """The remainder of body as a payload: the Any, or None for an Any of tk_null."""
    if not isinstance(body, CORBA.Any) or body.typecode().kind() == CORBA.tk_null:
        return None
    return body


def same_payload(a: Any, b: Any) -> bool:
    """Are two payloads (Anys) "the same": equivalent TypeCodes holding equal values?
    (Not their CDR bytes: omniORB leaves alignment padding unset.)"""
    d = a.typecode()._d
    if not D.equivalent(d, b.typecode()._d):
        return False
    try:
        return bool(_canonical(a.value(), d) == _canonical(b.value(), d))
    except RecursionError:
        return False


def _canonical(value: Any, d: Any, depth: int = 0) -> Any:
    """``value`` (of descriptor ``d``) as plain, comparable Python data."""
    if depth > 64:
        raise RecursionError("payload nested too deeply")
    d = D.unalias(D.resolve(d))
    k = D.kind(d)
    if k == D.ANY:
        inner = value.typecode()._d
        return ("any", D.repo_id(D.unalias(inner)) or D.kind(inner),
                _canonical(value.value(), inner, depth + 1))
    if k in (D.STRUCT, D.EXCEPT):
        return tuple(_canonical(getattr(value, name), member, depth + 1)
                     for name, member in D.members(d))
    if k == D.UNION:
        entry = D.union_select(d, value._d)
        inner = _canonical(value._v, entry[2], depth + 1) if entry is not None else None
        return (_canonical(value._d, d[4], depth + 1), inner)
    if k == D.ENUM:
        return value._v
    if k in (D.SEQUENCE, D.ARRAY):
        if isinstance(value, (bytes, str)):
            return value
        return tuple(_canonical(item, d[1], depth + 1) for item in value)
    if k == D.TYPECODE:
        return ("typecode", D.repo_id(D.unalias(value._d)) or D.kind(value._d))
    if k == D.FIXED:
        return str(value)
    if k in (D.OBJREF, D.VALUE, D.VALUE_BOX):
        return ("object", id(value)) if value is not None else None
    return value
