"""Mapping filters as proxies apply them (section 2.3.1): a priority or lifetime
mapping filter's answer for an event, checked against the values section 2.3.1
types ("of type short", "of type TimeBase::TimeT").

``ProxySupplier._resolve`` and ``_mapping`` (supplier_proxy.py) decide which
filter applies (the proxy's, else its admin's: section 3.4.15.4); this module
asks it.
"""

from __future__ import annotations

import logging
from typing import Any

from omniORB import CORBA

from cosnotify.filter.oes.limits import CURRENT_LIMITS

__all__ = ["GONE", "MAPPED", "gone", "map_event", "mapped"]

log = logging.getLogger("cosnotify.channel")


#: The values a priority and a lifetime mapping filter give, and their type's name
#: (section 2.3.1: "of type short", "of type TimeBase::TimeT").
MAPPED = {"priority": (-32767, 32767, "short"),  # section 2.5.5.2, as headers are
           "lifetime": (0, 2**64 - 1, "TimeBase::TimeT")}


def mapped(proxy: Any, mapping: Any, value: Any, what: str) -> bool:
    """Is ``value`` one a ``what`` mapping filter may give? Section 2.3.1 types the
    values (short, TimeT) but a MappingFilter's value type is its default value's, so
    one of another type (a string, a NaN double) is ignored, as if the filter gave
    none, and logged once per proxy: ordering and expiry never see it."""
    low, high, type_name = MAPPED[what]
    if type(value) is int and low <= value <= high:
        return True
    if not proxy._mapping_warned:
        proxy._mapping_warned = True
        log.warning("%r: its %s mapping filter %r gave %r, not a %s: ignored", proxy, what,
                    mapping, value, type_name)
    return False


#: What ``map_event`` gives for a filter that no longer exists (OBJECT_NOT_EXIST).
GONE: Any = object()


def gone(mapping: Any) -> bool:
    """Is ``mapping`` destroyed (ours) or gone (a client's: server/remote.py)?"""
    return getattr(mapping, "_is_destroyed", False) is True \
        or getattr(mapping, "_gone", False) is True


def map_event(mapping: Any, event: Any, limits: Any) -> tuple[bool, Any]:
    """Apply a mapping filter; returns (matched, python value or None), or
    (False, ``GONE``) when the filter raised OBJECT_NOT_EXIST.

    ``limits`` are the channel's OES node limits, made current for the filter:
    a copy may be resolved outside the channel's routing (read back from the
    store, channel/durable.py)."""
    token = CURRENT_LIMITS.set(limits) if limits is not CURRENT_LIMITS.get() else None
    try:
        if event.typed is not None:  # a typed call: section 2.3.1, as admin_mixins.match_any
            matched, result = mapping.match_typed(event.typed)
        elif event.is_structured:
            matched, result = mapping.match_structured(event.structured)
        else:
            matched, result = mapping.match(event.any)
        return bool(matched), result.value() if result is not None else None
    except CORBA.OBJECT_NOT_EXIST:
        return False, GONE
    except Exception as exc:  # noqa: BLE001 - a failing mapping filter maps nothing
        log.warning("mapping filter %r failed: %s", mapping, exc)
        return False, None
    finally:
        if token is not None:
            CURRENT_LIMITS.reset(token)
