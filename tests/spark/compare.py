"""Comparing omniORB TypeCodes and values, independently of the code under test.

omniORB's struct, union and Any classes do not define ``==`` (they compare by
identity), and ``TypeCode.equal`` compares descriptors with ``==``, which
tells two ``UnknownStruct`` classes of the same type apart and cannot follow a
wire indirection. So the tests compare by walking descriptors: ``same_typecode``
is CORBA 2.6 section 10.7.1's ``equal()`` (ids, names, member names, labels,
default index, bounds, aliases) and ``same_value`` compares values member by
member, with NaN equal to itself, fixed by numeric value (the 4.3.3 wheel's
``CORBA.fixed(8, 2, 1250) != CORBA.fixed("12.5")``) and each kind's Python
type checked.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import omniORB
from omniORB import CORBA

import CosNotification

from cosnotify.corba import descriptors as D

_FIXED = type(CORBA.fixed(0))


def same_typecode(a: Any, b: Any) -> bool:
    """CORBA ``equal()`` of two TypeCodes (or descriptors), either indirection marker."""
    return _same_tc(getattr(a, "_d", a), getattr(b, "_d", b), set())


def _label(value: Any) -> Any:
    return (value._n, value._v) if isinstance(value, omniORB.EnumItem) else (type(value), value)


def _same_tc(a: Any, b: Any, assumed: set[tuple[int, int]]) -> bool:
    a, b = D.resolve(a), D.resolve(b)
    if type(a) is int or type(b) is int:
        return bool(a == b)
    if a[0] != b[0]:
        return False
    pair = (id(a), id(b))
    if pair in assumed:
        return True
    assumed.add(pair)
    k = a[0]
    if k in (D.STRUCT, D.EXCEPT):
        return (a[2:4] == b[2:4] and a[4::2] == b[4::2]
                and all(_same_tc(x, y, assumed) for x, y in zip(a[5::2], b[5::2], strict=True)))
    if k == D.UNION:
        if a[2:4] != b[2:4] or a[5] != b[5] or len(a[6]) != len(b[6]) \
                or not _same_tc(a[4], b[4], assumed):
            return False
        return all(x[1] == y[1] and (i == a[5] or _label(x[0]) == _label(y[0]))
                   and _same_tc(x[2], y[2], assumed)
                   for i, (x, y) in enumerate(zip(a[6], b[6], strict=True)))
    if k == D.ENUM:
        return a[1:3] == b[1:3] and [i._n for i in a[3]] == [i._n for i in b[3]]
    if k in (D.SEQUENCE, D.ARRAY):
        return a[2] == b[2] and _same_tc(a[1], b[1], assumed)
    if k == D.ALIAS:
        return a[1:3] == b[1:3] and _same_tc(a[3], b[3], assumed)
    return bool(a == b)  # string, wstring, fixed, object references: plain tuples


def same_any(a: Any, b: Any) -> bool:
    """Same TypeCode (``equal()``) and same value."""
    return (isinstance(a, CORBA.Any) and isinstance(b, CORBA.Any)
            and same_typecode(a._t, b._t) and same_value(a._t._d, a._v, b._v))


def same_value(d: Any, a: Any, b: Any) -> bool:
    """Are ``a`` and ``b`` the same value of the type ``d`` describes?"""
    d = D.unalias(d)
    if type(d) is int:
        if d in (D.FLOAT, D.DOUBLE):
            return type(a) is type(b) is float and (a == b or (math.isnan(a) and math.isnan(b)))
        if d == D.ANY:
            return same_any(a, b)
        if d == D.TYPECODE:
            return same_typecode(a, b)
        return type(a) is type(b) and bool(a == b)
    k = d[0]
    if k in (D.STRUCT, D.EXCEPT):
        names = d[4::2]
        if all(names):
            return all(same_value(t, getattr(a, n), getattr(b, n))
                       for n, t in zip(names, d[5::2], strict=True))
        return all(same_value(t, x, y)
                   for t, x, y in zip(d[5::2], a._tuple(), b._tuple(), strict=True))
    if k == D.UNION:
        if type(a._d) is not type(b._d) or a._d != b._d:
            return False
        selected = D.union_select(d, a._d)
        return (a._v is None and b._v is None) if selected is None \
            else same_value(selected[2], a._v, b._v)
    if k == D.ENUM:
        return isinstance(a, omniORB.EnumItem) and isinstance(b, omniORB.EnumItem) \
            and (a._n, a._v) == (b._n, b._v)
    if k in (D.SEQUENCE, D.ARRAY):
        content = D.kind(d[1])  # bytes and str only for octet and char themselves
        if content in (D.OCTET, D.CHAR):
            return type(a) is type(b) and bool(a == b)
        return isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) \
            and len(a) == len(b) and all(
            same_value(d[1], x, y) for x, y in zip(a, b, strict=True))
    if k == D.FIXED:  # by value: the wheel's fixed(8, 2, 1250) != fixed("12.5")
        return type(a) is type(b) is _FIXED and Decimal(str(a)) == Decimal(str(b))
    if k in (D.OBJREF, D.ABSTRACT_INTERFACE, D.LOCAL_INTERFACE):
        return (a is None and b is None) or (a is not None and b is not None
                                             and bool(a._is_equivalent(b)))
    if k in (D.STRING, D.WSTRING):
        return type(a) is type(b) is str and a == b
    raise NotImplementedError(repr(d))


def same_events(got: Any, want: Any) -> bool:
    """Two lists of StructuredEvents, the same events in the same order."""
    event = CosNotification._tc_StructuredEvent._d
    return len(got) == len(want) and all(
        same_value(event, a, b) for a, b in zip(got, want, strict=True))


def assert_same_any(got: Any, want: Any) -> None:
    """``got`` and ``want`` are the same Any; a readable message when not."""
    assert same_typecode(got._t, want._t), f"TypeCodes differ: {got._t._d!r} != {want._t._d!r}"
    assert same_value(want._t._d, got._v, want._v), f"values differ: {got._v!r} != {want._v!r}"
