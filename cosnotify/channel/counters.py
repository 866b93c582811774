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

__all__ = ["DEPARTURES_KEPT", "Counter", "calls", "channel_events_in", "departures",
           "failure_reason", "proxy_counts", "read", "record_departure", "retired",
           "supplier_counts"]

#: Proxies that went away, kept per channel for ``cosnotify ls`` and ``top``: at most this
#: many, the latest (with their final counters, the time and the reason).
DEPARTURES_KEPT = 32

Counter = itertools.count

_lock = threading.Lock()
_channel_in: weakref.WeakKeyDictionary[Any, itertools.count[int]] = weakref.WeakKeyDictionary()
_retired: weakref.WeakKeyDictionary[Any, dict[str, int]] = weakref.WeakKeyDictionary()
_departed: weakref.WeakKeyDictionary[Any, collections.deque[tuple[dict[str, Any], Any]]] = (
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
    """Keep what ``proxy`` was (torn down at ``when`` for ``why``; its client was
    ``client``) among ``channel``'s latest departures, and add its final counts to the
    channel's retired totals, so the channel's sums never go down.

    The record is plain values and the client's reference, never the proxy: a proxy
    refers to its channel (a weak key whose value refers to it is never freed), its
    client's worker lane and its filters, none of which a departure should keep alive.
    """
    record: dict[str, Any] = {
        "id": proxy._id, "name": getattr(proxy, "_name", None), "kind": proxy.kind_text(),
        "admin": proxy._admin._id, "admin_kind": proxy.admin_kind(), "time": when,
        "reason": why}
    if hasattr(proxy, "_queue") and hasattr(proxy, "_n_delivered"):
        final, limit, last = supplier_counts(proxy)
        record.update({"queue_limit": limit,
                       "max_events_per_consumer": int(proxy._qos.get("MaxEventsPerConsumer", 0)),
                       "last_failure": None if last is None else {"time": last[0],
                                                                  "reason": last[1]}})
    else:
        final = proxy_counts(proxy)
    record["counters"] = final
    if client is not None and not isinstance(client, CORBA.Object):
        client = "in-process"  # a Python object: not kept alive by the record
    with _lock:
        kept = _departed.get(channel)
        if kept is None:
            kept = _departed[channel] = collections.deque(maxlen=DEPARTURES_KEPT)
        kept.append((record, client))
        totals = _retired.setdefault(channel, {})
        for name, value in final.items():
            if name != "depth":  # a gone proxy holds nothing
                totals[name] = totals.get(name, 0) + value


def retired(channel: Any) -> dict[str, int]:
    """The summed final counts of every proxy ``channel`` has lost (departures recorded)."""
    with _lock:
        return dict(_retired.get(channel, {}))


def supplier_counts(proxy: Any) -> tuple[dict[str, int], int, tuple[float, str] | None]:
    """A proxy supplier's counters, read together under its lock (briefly): the
    counters, the queue's limit and the last failure ``(time, reason)`` or None."""
    with proxy._lock:
        queue = proxy._queue
        # Copies in the inbox (appended to without the lock) go into the queue first,
        # so its counters and MaxEventsPerConsumer's discards are those of now.
        dropped = proxy._fold_inbox(proxy._service.clock.now())
        inbox = len(proxy._inbox)  # appended to since, without the lock
        # A typed pull supplier's calls kept for another operation's pull are held too.
        depth = (len(queue) + inbox + len(getattr(proxy, "_retry", ()))
                 + getattr(proxy, "kept_calls", 0))
        accepted, discarded = queue.accepted, queue.discarded
        expired, removed = queue.expired, queue.removed
        limit = queue.max_events
        delivered = proxy._n_delivered
        # An Ack proxy's entries given, never acknowledged, then expired (ack_state.py).
        given_expired = getattr(proxy, "_n_given_expired", None)
        failed = proxy._n_failed
        unsendable = proxy._n_unsendable
        last = proxy._last_failure
    if dropped:
        proxy._channel._released(dropped)
    # Copies appended to the inbox since the fold are not yet in the queue: queued too.
    counts = {"queued": accepted + inbox, "delivered": delivered, "discarded": discarded,
              "expired": expired, "removed": removed, "failed": failed,
              "unsendable": unsendable, "depth": depth}
    if given_expired is not None:  # an Ack proxy's (ack_state.py)
        counts["unacknowledged_expired"] = given_expired
    for name in _TYPED_COUNTS:  # a typed proxy's (cosnotify/typed/proxies.py)
        value = getattr(proxy, name, None)
        if value is not None:
            counts[name] = value
    return counts, limit, last


#: A typed proxy supplier's own counters: events that were no call of its interface
#: (Table 2-2: not delivered to typed clients), and kept calls dropped past the bound.
_TYPED_COUNTS = ("not_typed", "dropped_calls")


def proxy_counts(proxy: Any) -> dict[str, int]:
    """A proxy's counters: a proxy supplier's (:func:`supplier_counts`), a proxy
    consumer's ``received`` and ``rejected``; none for a proxy that counts nothing."""
    if hasattr(proxy, "_queue") and hasattr(proxy, "_n_delivered"):
        return supplier_counts(proxy)[0]
    if hasattr(proxy, "_received"):
        return {"received": read(proxy._received), "rejected": read(proxy._rejected)}
    return {}


def departures(channel: Any) -> list[tuple[dict[str, Any], Any]]:
    """``(record, client)`` of ``channel``'s latest departures, oldest first: a record
    is a dict of plain values (:func:`record_departure`), ``client`` a reference,
    ``"in-process"`` or None."""
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
