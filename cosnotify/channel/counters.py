"""Event counters that several threads bump without a lock.

Strategy: most of the core's counters are plain int attributes bumped where
a lock is already held (a proxy supplier's queue, under the proxy's lock) or
by their only writer (the one delivery task a push proxy has in flight). The
counts of events *entering* the channel are different: any number of
supplier threads (ORB threads of one remote supplier, or in-process threads)
push through one proxy consumer, and no lock is held on that path. ``x += 1``
on an attribute is a read, an add and a write; two threads can interleave
and lose a count. ``next()`` on an ``itertools.count`` is one call into C
that the GIL does not release, so it never loses one, and costs about what
the attribute increment costs. Reading it back has no accessor: the count's
``repr`` (``count(N)``) carries it.

The channel's own count of events in is kept here, keyed weakly by the
channel, so the channel needs no field for it.
"""

from __future__ import annotations

import collections
import itertools
import threading
import weakref
from typing import Any

from omniORB import CORBA

__all__ = ["DEPARTURES_KEPT", "Counter", "calls", "channel_events_in", "departures", "failure_reason",
           "read", "record_departure"]

#: Proxies that went away, kept per channel for ``cosnotify ls`` and ``top``: at most this
#: many, the latest (with their final counters, the time and the reason).
DEPARTURES_KEPT = 32

Counter = itertools.count

_lock = threading.Lock()
_channel_in: weakref.WeakKeyDictionary[Any, itertools.count[int]] = weakref.WeakKeyDictionary()
_departed: weakref.WeakKeyDictionary[Any, collections.deque[tuple[float, str, Any, Any]]] = (
    weakref.WeakKeyDictionary())


def read(counter: itertools.count[int]) -> int:
    """The next value ``counter`` would give: how many times it was bumped."""
    text = repr(counter)  # "count(N)"
    return int(text[6:-1])


def channel_events_in(channel: Any) -> itertools.count[int]:
    """The count of events that proxy consumers of ``channel`` handed to it
    (made on first use; proxies are made rarely, so the lock costs nothing)."""
    with _lock:
        counter = _channel_in.get(channel)
        if counter is None:
            counter = _channel_in[channel] = itertools.count()
        return counter


def record_departure(channel: Any, when: float, why: str, proxy: Any, client: Any) -> None:
    """Keep ``proxy`` (torn down at ``when`` for ``why``; its client was ``client``)
    among ``channel``'s latest departures. The destroyed proxy keeps its counters;
    nothing bumps them again."""
    with _lock:
        kept = _departed.get(channel)
        if kept is None:
            kept = _departed[channel] = collections.deque(maxlen=DEPARTURES_KEPT)
        kept.append((when, why, proxy, client))


def departures(channel: Any) -> list[tuple[float, str, Any, Any]]:
    """``(time, reason, proxy, client)`` of ``channel``'s latest departures, oldest first."""
    with _lock:
        return list(_departed.get(channel, ()))


def calls(count: int) -> str:
    """``"1 call"``, ``"4 calls"``."""
    return f"{count} call" if count == 1 else f"{count} calls"


def failure_reason(exc: BaseException) -> str:
    """One line saying why a call to a client failed (for ``cosnotify.stats``)."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    if isinstance(exc, CORBA.SystemException):
        text = f"minor {exc.minor:#x}, {exc.completed}"
    name = type(exc).__name__
    return f"{name}: {text}"[:200] if text else name
