"""Check a Python value against a TypeCode.

Strategy: a recursive walk that carries the member path (``event.header.
fixed_header.event_type.domain_name``) so a mismatch raises ``BAD_PARAM``
naming exactly where the value went wrong. Accepted Python forms follow the
IDL-to-Python mapping: ints for integer kinds (with range checks), ints or
floats for floating kinds, 1-character strings for char/wchar, ``bytes`` (or
a list of ints) for octet sequences, lists or tuples for other sequences and
arrays, ``decimal.Decimal`` for fixed, ``CORBA.Any`` for any.
"""

from __future__ import annotations

from decimal import Context, Decimal
from typing import Any

from cosnotify.orb import typecode as T
from cosnotify.orb.any import Any as CorbaAny
from cosnotify.orb.exceptions import BAD_PARAM, COMPLETED_NO, OMGVMCID, UserException
from cosnotify.orb.values import EnumItem, StructBase, Union, member_value

__all__ = ["MAX_DEPTH", "check"]

#: Maximum nesting of values (and of Anys within Anys) that ``check`` follows.
MAX_DEPTH = 64

_BAD_VALUE_MINOR = OMGVMCID | 41


def check(tc: T.TypeCode, value: Any, path: str = "value") -> None:
    """Raise ``BAD_PARAM`` naming the member path if ``value`` does not fit ``tc``."""
    _check(tc, value, path, 0)


def _fail(path: str, expected: str, value: Any) -> BAD_PARAM:  # type: ignore[valid-type]
    got = type(value).__name__
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return BAD_PARAM(_BAD_VALUE_MINOR, COMPLETED_NO, f"{path}: expected {expected}, got {got} {shown}")


def _check(tc: T.TypeCode, value: Any, path: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise BAD_PARAM(_BAD_VALUE_MINOR, COMPLETED_NO, f"{path}: nesting deeper than {MAX_DEPTH}")
    tc = T.resolve(tc)
    k = tc._k
    if k in T.INTEGER_RANGES:
        if not isinstance(value, int):
            raise _fail(path, T._KIND_NAMES[k][3:], value)
        lo, hi = T.INTEGER_RANGES[k]
        if not lo <= value <= hi:
            raise _fail(path, f"{T._KIND_NAMES[k][3:]} in [{lo}, {hi}]", value)
    elif k in (T.K_FLOAT, T.K_DOUBLE, T.K_LONGDOUBLE):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise _fail(path, T._KIND_NAMES[k][3:], value)
    elif k == T.K_BOOLEAN:
        if not isinstance(value, int):
            raise _fail(path, "boolean", value)
    elif k in (T.K_CHAR, T.K_WCHAR):
        limit = 0x100 if k == T.K_CHAR else 0x10000
        if not isinstance(value, str) or len(value) != 1 or ord(value) >= limit:
            raise _fail(path, "char" if k == T.K_CHAR else "wchar (BMP)", value)
    elif k in (T.K_STRING, T.K_WSTRING):
        _check_string(tc, value, path)
    elif k == T.K_SEQUENCE or k == T.K_ARRAY:
        _check_sequence(tc, value, path, depth)
    elif k in (T.K_STRUCT, T.K_EXCEPT):
        _check_struct(tc, value, path, depth)
    elif k == T.K_UNION:
        _check_union(tc, value, path, depth)
    elif k == T.K_ENUM:
        items = tc.enum_items()  # type: ignore[attr-defined]
        if not isinstance(value, EnumItem) or not (0 <= value._v < len(items)) \
                or value != items[value._v]:
            raise _fail(path, f"an item of enum {tc.id()}", value)
    elif k == T.K_ALIAS:
        _check(tc.content_type(), value, path, depth)
    elif k == T.K_ANY:
        if not isinstance(value, CorbaAny):
            raise _fail(path, "CORBA.Any", value)
        _check(value.typecode(), value.value(), f"{path}<any>", depth + 1)
    elif k == T.K_TYPECODE:
        if not isinstance(value, T.TypeCode):
            raise _fail(path, "CORBA.TypeCode", value)
    elif k in (T.K_OBJREF, T.K_ABSTRACT_INTERFACE, T.K_LOCAL_INTERFACE):
        _check_objref(tc, value, path)
    elif k == T.K_FIXED:
        _check_fixed(tc, value, path)
    elif k in (T.K_NULL, T.K_VOID):
        if value is not None:
            raise _fail(path, "None", value)
    else:
        raise BAD_PARAM(_BAD_VALUE_MINOR, COMPLETED_NO, f"{path}: unsupported kind {tc.kind()}")


def _check_string(tc: T.TypeCode, value: Any, path: str) -> None:
    if not isinstance(value, str):
        raise _fail(path, "string", value)
    bound = tc.length()
    if bound and len(value) > bound:
        raise _fail(path, f"string of at most {bound} characters", value)
    if "\0" in value:
        raise _fail(path, "string without NUL characters", value)
    if tc._k == T.K_STRING and any(ord(c) > 0x10FFFF for c in value):  # pragma: no cover
        raise _fail(path, "string", value)


def _check_sequence(tc: T.TypeCode, value: Any, path: str, depth: int) -> None:
    content = T.resolve(tc.content_type())
    bound = tc.length()
    is_array = tc._k == T.K_ARRAY
    if content.unalias()._k == T.K_OCTET and isinstance(value, (bytes, bytearray, memoryview)):
        n = len(value)
    elif isinstance(value, (list, tuple)):
        n = len(value)
        for index, item in enumerate(value):
            _check(content, item, f"{path}[{index}]", depth + 1)
    elif content.unalias()._k in (T.K_CHAR, T.K_WCHAR) and isinstance(value, str):
        n = len(value)
    else:
        raise _fail(path, "array" if is_array else "sequence", value)
    if is_array and n != bound:
        raise _fail(path, f"array of exactly {bound} elements", value)
    if not is_array and bound and n > bound:
        raise _fail(path, f"sequence of at most {bound} elements", value)


def _check_struct(tc: T.TypeCode, value: Any, path: str, depth: int) -> None:
    expected = "exception" if tc._k == T.K_EXCEPT else "struct"
    base = UserException if tc._k == T.K_EXCEPT else StructBase
    rid = tc.id()
    if not isinstance(value, base) or (rid and value._NP_RepositoryId and value._NP_RepositoryId != rid):
        raise _fail(path, f"{expected} {rid or tc.name()}", value)
    fields = zip(tc._attrs, tc._safe, tc._types)  # type: ignore[attr-defined]
    for index, (attr, safe, member_tc) in enumerate(fields):
        try:
            member = getattr(value, attr) if attr == safe else member_value(value, index, attr)
        except AttributeError:
            raise BAD_PARAM(_BAD_VALUE_MINOR, COMPLETED_NO,
                            f"{path}.{attr}: member is missing") from None
        _check(member_tc, member, f"{path}.{attr}", depth + 1)


def _check_union(tc: T.TypeCode, value: Any, path: str, depth: int) -> None:
    rid = tc.id()
    if not isinstance(value, Union) or (rid and value._NP_RepositoryId != rid):
        raise _fail(path, f"union {rid or tc.name()}", value)
    assert isinstance(tc, T.UnionTC)
    _check(tc._disc, value._d, f"{path}._d", depth + 1)
    index = _selected_member(tc, value._d)
    if index is None:
        return  # implicit default: no member, no value
    _check(tc._types[index], value._v, f"{path}.{tc._names[index]}", depth + 1)


def _selected_member(tc: T.UnionTC, discriminator: Any) -> int | None:
    """The index of the member ``discriminator`` selects, or None."""
    return tc.select(discriminator)


selected_member = _selected_member


def _check_objref(tc: T.TypeCode, value: Any, path: str) -> None:
    if value is None:
        return
    from cosnotify.orb.interface import Object

    if isinstance(value, Object):
        return
    from cosnotify.orb.PortableServer import Servant

    if isinstance(value, Servant):
        return
    raise _fail(path, f"object reference {tc.id()}", value)


def _check_fixed(tc: T.TypeCode, value: Any, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (Decimal, int)):
        raise _fail(path, f"fixed<{tc.fixed_digits()},{tc.fixed_scale()}> (Decimal)", value)
    if isinstance(value, Decimal) and not value.is_finite():
        raise _fail(path, "a finite fixed value", value)
    assert isinstance(tc, T.FixedTC)
    if not fixed_value_fits(tc, Decimal(value)):
        raise _fail(path, f"fixed<{tc.fixed_digits()},{tc.fixed_scale()}>", value)


_FIXED_CONTEXT = Context(prec=64)  # fixed<31,s> needs more than the default 28 digits


def fixed_value_fits(tc: T.FixedTC, value: Decimal) -> bool:
    """True when ``value`` has at most digits-scale integer digits (after rounding)."""
    if value.adjusted() > 40:  # far too large for any fixed<31,s>
        return False
    quantized = value.quantize(Decimal(1).scaleb(-tc._scale), context=_FIXED_CONTEXT)
    _, digits, exponent = quantized.as_tuple()
    integer_digits = len(digits) + int(exponent) if quantized != 0 else 0
    return integer_digits <= tc._digits - tc._scale
