"""A query's answer as the Eventer front end sends it: each retained event encoded once.

Strategy: a MsgQueryRes is an array of ``HatEventer.Event`` (the Eventer
seed's "Chatter messages"). A retained event's Eventer form never changes:
its id, type, timestamps and payload are fixed when it is stored, and the
store never gives its id to another event (docs/history.md). So
:class:`EncodedEvents` keeps the SBS bytes of the events the front end
answered with, by their store id, and a later answer holding them reuses the
bytes; the codec puts the array together around them
(:meth:`~cosnotify.protocols.eventer.codec.ChatterConnection.query_res_encoded`).
An event not kept is mapped (:func:`~cosnotify.protocols.eventer.mapping.event_of_retained`)
and encoded; only then is its stored record decoded
(:meth:`~cosnotify.history.query.Retained.stored`). What is kept is bounded
by :data:`MAX_EVENTS` and :data:`MAX_BYTES`, the least recently used going
first; the lock is held only to look up and to keep, never to encode.

Where the time went before (``benchmarks/protocols_eventer.py``, a query of
100 of 10,000 stored events, per 100 events): the SQL 0.25 ms, decoding the
records 0.53 ms, the mapping 0.27 ms and the reply's encoding 0.31 ms.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence

from cosnotify.history.query import Retained
from cosnotify.protocols.eventer.codec import encode_event
from cosnotify.protocols.eventer.mapping import event_of_retained

__all__ = ["MAX_BYTES", "MAX_EVENTS", "EncodedEvents"]

log = logging.getLogger("cosnotify.protocols.eventer")

#: Encoded events kept at most.
MAX_EVENTS = 16_384
#: Bytes of encoded events kept at most (an event of more is encoded each time).
MAX_BYTES = 8 * 1024 * 1024


class EncodedEvents:
    """The SBS bytes of the retained events a front end answered with (module
    docstring); ``hits`` and ``misses`` count the events looked up."""

    def __init__(self, server_id: int, max_events: int = MAX_EVENTS,
                 max_bytes: int = MAX_BYTES) -> None:
        self.server_id = server_id
        self.max_events = max_events
        self.max_bytes = max_bytes
        self._kept: OrderedDict[tuple[int, int], bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def size(self) -> int:
        """Bytes kept."""
        return self._bytes

    def encode(self, events: Sequence[Retained], max_bytes: int | None = None
               ) -> tuple[list[bytes], bool]:
        """The first of ``events`` as ``HatEventer.Event``'s bytes, in order, up to
        the one whose bytes reach ``max_bytes`` in all (at least one; None: all), and
        whether any was left for the bound: nothing past it is encoded or kept. One
        that SBS cannot carry (none is known: ids and times are bounded where they
        are read) is logged and left out, costing the client that event, not the
        answer."""
        kept = self._kept
        keys = [(r.id.session, r.id.instance) for r in events]
        with self._lock:
            found = [kept.get(key) for key in keys]
        made: list[tuple[tuple[int, int], bytes]] = []
        used: list[tuple[int, int]] = []
        answer: list[bytes] = []
        size = 0
        cut = False
        missed = 0
        for key, data, event in zip(keys, found, events, strict=True):
            if max_bytes is not None and answer and size >= max_bytes:
                cut = True
                break
            if data is None:
                missed += 1
                mapped = event_of_retained(event, self.server_id)
                try:
                    data = encode_event(mapped)
                except (OverflowError, ValueError, TypeError) as exc:
                    log.warning("eventer: event %s left out of a message: SBS cannot "
                                "carry it: %s", mapped.id, exc)
                    continue
                made.append((key, data))
            else:
                used.append(key)
            answer.append(data)
            size += len(data)
        with self._lock:
            self.hits += len(used)
            self.misses += missed
            for key in used:
                if key in kept:  # not let go meanwhile
                    kept.move_to_end(key)
            for key, data in made:
                self._keep(key, data)
        return answer, cut

    def _keep(self, key: tuple[int, int], data: bytes) -> None:
        """With the lock held: keep ``data`` as ``key``'s, then let the least recently
        used go until within the bounds."""
        if len(data) > self.max_bytes:
            return
        kept = self._kept
        old = kept.pop(key, None)
        if old is not None:  # encoded meanwhile by another answer: the same bytes
            self._bytes -= len(old)
        kept[key] = data
        self._bytes += len(data)
        while len(kept) > self.max_events or self._bytes > self.max_bytes:
            _, gone = kept.popitem(last=False)
            self._bytes -= len(gone)
