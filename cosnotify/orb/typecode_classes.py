"""The Python classes values of struct, exception and union TypeCodes are built with.

Strategy: a generated class registered under the TypeCode's repository id
(:mod:`cosnotify.orb.registry`) is used when it has the TypeCode's members;
otherwise a dynamic class is made from the TypeCode (cached in
:mod:`cosnotify.orb.values`). TypeCodes come from the wire, so dynamic
classes only get attribute names :func:`cosnotify.orb.values.safe_attributes`
allows: a peer cannot name a member ``__class__`` or ``__init__``, and a
TypeCode that reuses a known id with other members does not get a generated
class its values would not fit. The TypeCode methods ``python_class`` and
``implicit_default`` call these functions and cache the result.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cosnotify.orb import registry
from cosnotify.orb.exceptions import UserException
from cosnotify.orb.typecode import (
    DEFAULT_LABEL,
    INTEGER_RANGES,
    K_BOOLEAN,
    K_CHAR,
    K_ENUM,
    K_EXCEPT,
    K_WCHAR,
    StructTC,
    UnionTC,
    resolve,
)
from cosnotify.orb.values import (
    UNION_ATTRIBUTES,
    StructBase,
    attr_name,
    make_exception_class,
    make_struct_class,
    make_union_class,
    safe_attributes,
)

__all__ = ["implicit_default", "struct_class", "union_class"]


def struct_class(tc: StructTC) -> type:
    """The class of ``tc``'s values; caches it in ``tc._cls``."""
    found = registry.lookup_type(tc._id) if tc._id else None
    if isinstance(found, type) and _fits(tc, found):
        tc._cls[0] = (found, None)
        return found
    if tc._k == K_EXCEPT:
        cls = make_exception_class(tc._id, tc._name, tc._safe)
    else:
        cls = make_struct_class(tc._id, tc._name, tc._safe)
    tc._cls[0] = (cls, registry.generation)
    return cls


def _fits(tc: StructTC, cls: type) -> bool:
    """Does the class registered for ``tc``'s id have its members (empty names match any)?"""
    fields: Any = None
    if issubclass(cls, StructBase):
        fields = cls.__slots__
    elif issubclass(cls, UserException):
        from cosnotify.orb.interface import exception_typecode

        known = exception_typecode(cls)
        fields = None if known is None else getattr(resolve(known), "_attrs", None)
    if fields is None:
        return True
    return len(fields) == len(tc._attrs) and all(
        not name or attr == field for name, attr, field in zip(tc._names, tc._attrs, fields))


def union_class(tc: UnionTC) -> type:
    """The class of ``tc``'s values; caches it in ``tc._cls``."""
    found = registry.lookup_type(tc._id) if tc._id else None
    if isinstance(found, type):
        tc._cls[0] = (found, None)
        return found
    names = safe_attributes(tuple(attr_name(n) for n in tc._names), UNION_ATTRIBUTES)
    pairs = tuple((n, label) for n, label in zip(names, tc._labels) if label is not DEFAULT_LABEL)
    def_m = names[tc._default] if tc._default >= 0 else None
    cls = make_union_class(tc._id, tc._name, pairs, def_m, implicit_default(tc))
    tc._cls[0] = (cls, registry.generation)
    return cls


def implicit_default(tc: UnionTC) -> Any:
    """A discriminator value no explicit label uses, or None if the labels cover all."""
    used = {label for label in tc._labels if label is not DEFAULT_LABEL}
    disc = tc._disc.unalias()
    if disc._k == K_BOOLEAN:
        candidates: Iterable[Any] = (False, True)
    elif disc._k == K_ENUM:
        candidates = disc.enum_items()  # type: ignore[attr-defined]
    elif disc._k in (K_CHAR, K_WCHAR):
        candidates = (chr(i) for i in range(0x10000 if disc._k == K_WCHAR else 256))
    else:
        lo, hi = INTEGER_RANGES[disc._k]
        candidates = (lo + i for i in range(min(hi - lo + 1, len(used) + 1)))
    for value in candidates:
        if value not in used:
            return value
    return None
