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

import itertools
import threading
import weakref
from typing import Any

__all__ = ["Counter", "channel_events_in", "read"]

Counter = itertools.count

_lock = threading.Lock()
_channel_in: weakref.WeakKeyDictionary[Any, itertools.count[int]] = weakref.WeakKeyDictionary()


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
