"""Values omniORBpy 4.3.3 cannot marshal: an unsigned long long >= 2**63 in a
sequence or array of unsigned long long (docs/orb.md, "The wheel's defects").

Strategy: omniORBpy unmarshals such a value as a C++ peer sends it, but its
marshaller converts the elements of a ``sequence<unsigned long long>`` (or
an array of them) as *signed* 64-bit integers: each element >= 2**63 goes
out as 2**64 - 1, and the OverflowError is left pending. Whether the caller
then sees it (``SystemError``, after the call was made) depends on what is
marshalled after it, so a failure cannot be relied on to find such a value:
it is looked for before the value leaves (a store's encoding, a remote
consumer's push).

:func:`holds_big_ulonglong` walks the value along its TypeCode's descriptor,
descending only into the parts whose type may hold one (an Any, or a
sequence or array of ``unsigned long long`` itself; an alias of it as
element marshals fine). Which types may is remembered per descriptor, so
the walk of a typical event is a look at each Any's TypeCode.
"""

from __future__ import annotations

from typing import Any, Final

from cosnotify.corba import descriptors as D

__all__ = ["REASON", "any_holds_big_ulonglong", "holds_big_ulonglong",
           "structured_holds_big_ulonglong"]

#: Why such a value is refused or dropped (logs, ``last_failure``, exception text).
REASON: Final = ("an unsigned long long >= 2**63 in a sequence or array, which "
                 "omniORBpy 4.3.3 cannot marshal (docs/orb.md)")

_BIG: Final = 2**63
_SEQUENCES: Final = (D.SEQUENCE, D.ARRAY)
_STRUCTS: Final = (D.STRUCT, D.EXCEPT)
_ANY: Final = D.ANY
#: Whether a descriptor's values may hold such a value, by ``id``: (descriptor, answer),
#: the descriptor kept so its id is not reused. Bounded: wire TypeCodes are new objects.
_may: dict[int, tuple[Any, bool]] = {}
_MAY_KEPT: Final = 4096


def holds_big_ulonglong(d: Any, value: Any) -> bool:
    """Does ``value``, of the type descriptor ``d``, hold an unsigned long long >= 2**63
    in a sequence or array of unsigned long long? A value too deep to walk
    (RecursionError) is not looked into: False."""
    try:
        return _walk(d, value)
    except RecursionError:
        return False


def any_holds_big_ulonglong(value: Any) -> bool:
    """:func:`holds_big_ulonglong` of an Any; an Any of a basic type costs a look."""
    d = value._t._d
    if type(d) is int and d != _ANY:
        return False
    return holds_big_ulonglong(_ANY, value)


def structured_holds_big_ulonglong(event: Any) -> bool:
    """:func:`holds_big_ulonglong` of a StructuredEvent: its Anys, one look each (the
    fixed header holds strings only)."""
    for properties in (event.header.variable_header, event.filterable_data):
        for prop in properties:
            value = prop.value
            d = value._t._d
            if (type(d) is not int or d == _ANY) and holds_big_ulonglong(_ANY, value):
                return True
    return any_holds_big_ulonglong(event.remainder_of_body)


def _walk(d: Any, value: Any) -> bool:
    d = D.resolve(d)
    if type(d) is int:
        if d != D.ANY:
            return False
        inner = value._t._d
        if type(inner) is int and inner != D.ANY:
            return False  # the common case: an Any of a basic type
        return _walk(inner, value._v)
    k = d[0]
    if k in _SEQUENCES:
        element = d[1]
        if type(element) is int and element == D.ULONGLONG:
            return bool(value) and max(value) >= _BIG
        if not _may_hold(element):
            return False
        return any(_walk(element, item) for item in value)
    if k in _STRUCTS:
        for name, member in zip(d[4::2], d[5::2], strict=True):
            if _may_hold(member) and _walk(member, getattr(value, name)):
                return True
        return False
    if k == D.UNION:
        entry = D.union_select(d, value._d)
        return entry is not None and _may_hold(entry[2]) and _walk(entry[2], value._v)
    if k == D.ALIAS:
        return _walk(d[3], value)
    return False  # strings, enums, references, fixed, value types


def _may_hold(d: Any) -> bool:
    """May a value of type ``d`` hold an Any or a sequence or array of unsigned long long?"""
    if type(d) is int:
        return bool(d == _ANY)
    known = _may.get(id(d))
    if known is not None and known[0] is d:
        return known[1]
    answer = _search(d, set())
    if len(_may) >= _MAY_KEPT:
        _may.clear()
    _may[id(d)] = (d, answer)
    return answer


def _search(d: Any, seen: set[int]) -> bool:
    d = D.resolve(d)
    if type(d) is int:
        return bool(d == D.ANY)
    if id(d) in seen:
        return False  # a recursive type: its other members decide
    seen.add(id(d))
    k = d[0]
    if k in _SEQUENCES:
        element = d[1]
        return (type(element) is int and element == D.ULONGLONG) or _search(element, seen)
    if k in _STRUCTS:
        return any(_search(member, seen) for member in d[5::2])
    if k == D.UNION:
        return any(_search(entry[2], seen) for entry in d[6])
    if k == D.ALIAS:
        return _search(d[3], seen)
    return False
