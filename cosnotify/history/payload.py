"""Eventer payloads on notification events: the remainder of body, compared by value.

Strategy: the Eventer seed matches "only events with payload defined and whose
payload is the same as the query's payload". A notification event's payload is
its ``remainder_of_body`` (an Any of ``tk_null`` is none); two are the same when
their TypeCodes are equivalent and their values equal, member by member. Not by
their CDR bytes: omniORB leaves alignment padding unset, so equal values may
encode to different bytes.

A query's payload of the Eventer front end's ``Json`` alias (:data:`JSON_ID`, JSON
text) is compared as hat-event compares json payloads: by decoded value (key order
and spacing aside, ``1 == 1.0``), against the JSON value an Eventer client is shown
for the stored payload -- a ``Json`` text decoded, any other Any but ``tk_null``,
``sequence<octet>`` and ``SbsData`` (the front end's binary and sbs kinds) as
cosnotify's JSON form of the value (``tools.eventjson.any_to_json``, what the front
end notifies and answers), so a CORBA supplier's ``long`` 42, shown as json ``42``,
is found by the payload it was shown with.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from omniORB import CORBA

from cosnotify.corba import descriptors as D

__all__ = ["JSON_ID", "SBS_DATA_ID", "payload_of", "same_payload"]

#: The Eventer front end's ``json`` payloads: an alias of string holding JSON text.
JSON_ID = "IDL:cosnotify.org/Eventer/Json:1.0"
#: The Eventer front end's ``sbs`` payloads (``Hat.Data``).
SBS_DATA_ID = "IDL:cosnotify.org/Eventer/SbsData:1.0"
#: Not a JSON value (a payload an Eventer client is shown as binary or sbs, or a text
#: that is not JSON): equal to nothing.
_NOT_JSON = object()


def payload_of(body: Any) -> Any:
    """The remainder of body as a payload: the Any, or None for an Any of tk_null."""
    if not isinstance(body, CORBA.Any) or body.typecode().kind() == CORBA.tk_null:
        return None
    return body


def same_payload(a: Any, b: Any) -> bool:
    """Is payload ``a`` (an event's Any) "the same" as ``b`` (a query's): equivalent
    TypeCodes holding equal values (not their CDR bytes: omniORB leaves alignment
    padding unset); a ``b`` of the ``Json`` alias: equal JSON values (module
    docstring)."""
    if _is_json(b.typecode()._d):
        mine = _json_value(a)
        return mine is not _NOT_JSON and _same_json(mine, _loads(str(b.value())))
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


def _is_json(d: Any) -> bool:
    d = D.resolve(d)
    return bool(D.kind(d) == D.ALIAS and D.repo_id(d) == JSON_ID)


@functools.lru_cache(maxsize=16)
def _loads(text: str) -> Any:
    """``text`` decoded (a query's, decoded once for all the events it is compared
    with; never changed), or :data:`_NOT_JSON`."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _json_value(body: Any) -> Any:
    """The JSON value an Eventer client is shown for ``body`` (module docstring), or
    :data:`_NOT_JSON`."""
    d = D.resolve(body.typecode()._d)
    if _is_json(d):
        try:
            return json.loads(str(body.value()))
        except (ValueError, RecursionError):
            return _NOT_JSON
    base = D.unalias(d)
    k = D.kind(base)
    if k == D.NULL or (k == D.STRUCT and D.repo_id(base) == SBS_DATA_ID) or (
            k == D.SEQUENCE and D.unalias(D.resolve(base[1])) == D.OCTET):
        return _NOT_JSON
    from cosnotify.tools.eventjson import any_to_json

    try:  # through its text, as the front end sends it: tuples are lists, keys strings
        return json.loads(json.dumps(any_to_json(body), ensure_ascii=False))
    except (ValueError, TypeError, RecursionError):
        return _NOT_JSON


def _same_json(a: Any, b: Any) -> bool:
    if b is _NOT_JSON:
        return False
    try:
        return bool(a == b)
    except RecursionError:
        return False
