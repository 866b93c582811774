"""The live tuples of one space, indexed, with expiry by a heap.

Strategy: tuples are numbered in arrival order (``Live.seq``) and kept in
*buckets*: lists sorted by that number, so a scan can start anywhere by
bisection (a sequenced client's cursor, a scan resumed after the space's
lock was let go: search.py). One bucket holds every live tuple, one each
EventType, and one each key (fields.py) of each indexed property name --
by actual value, or, for templates with formal fields only, by Event Heap
type (a *formal* index: one of MAX_INDEXED_NAMES too). Removal is lazy: a dropped tuple is flagged, counted out
of its buckets and skipped by scans; a bucket is compacted when its dead
entries outnumber its live ones (amortised over the drops), and a scan from
the oldest moves the bucket's start past its dead head. A template is
narrowed to the smallest bucket among its actual and formal fields (an
empty one means no match, at once); with none, every live tuple is a
candidate.

Property names are indexed on first use by a template, at most
MAX_INDEXED_NAMES of them, so an event costs only the names templates ask
about. A new index covers the tuples that come after it at once, and is
*backfilled* over the older ones a slice at a time (``backfill``), so its
making never holds the lock for a pass over every tuple; it narrows once it
is complete. An index no template has used for INDEX_IDLE seconds is
dropped (``evict_idle``), so names a template asked about once do not cost
every later event. Expiry is a heap of (expires, id): a sweep pops what is
due, and an entry whose tuple went meanwhile is skipped (the heap is
rebuilt when stale entries outnumber the live ones). The space's lock
guards every method.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import operator
from collections.abc import Iterator
from typing import Any

from cosnotify.tuplespace.fields import (
    FORMAL,
    SEQUENCING,
    Key,
    first_values,
    prop_keys,
    props_of,
    sequencing_of,
)
from cosnotify.tuplespace.limits import INDEX_IDLE, MAX_INDEXED_NAMES
from cosnotify.tuplespace.records import Live
from cosnotify.tuplespace.templates import CompiledTemplate

__all__ = ["Bucket", "NameIndex", "TupleTable"]

_SEQ = operator.attrgetter("seq")
#: Dead entries a bucket keeps beyond its live ones before it is compacted.
_SLACK = 64


class Bucket:
    """Live tuples oldest first: a list sorted by arrival number, dropped ones flagged
    (``Live.dropped``) and skipped. ``items[:start]`` are all dropped."""

    __slots__ = ("count", "items", "start")

    def __init__(self, items: list[Live] | None = None) -> None:
        self.items: list[Live] = items if items is not None else []
        self.start = 0
        #: Live tuples in it.
        self.count = len(self.items)

    def __len__(self) -> int:
        return self.count

    def append(self, live: Live) -> None:
        self.items.append(live)
        self.count += 1

    def discard(self) -> None:
        """One of its tuples was dropped (and flagged)."""
        self.count -= 1
        if len(self.items) - self.start > 2 * self.count + _SLACK:
            self.items = [live for live in itertools.islice(self.items, self.start, None)
                          if not live.dropped]
            self.start = 0

    def insert(self, live: Live) -> None:
        """``live`` (not dropped now) at its place by arrival number, unless it is there."""
        items = self.items
        at = bisect.bisect_left(items, live.seq, key=_SEQ)
        if at >= len(items) or items[at] is not live:
            items.insert(at, live)
        self.start = min(self.start, at)
        self.count += 1

    def after(self, seq: int) -> int:
        """The position of its first entry newer than ``seq`` (0: the oldest live one)."""
        items, at = self.items, self.start
        if seq > 0:
            return bisect.bisect_right(items, seq, lo=at, key=_SEQ)
        end = len(items)
        while at < end and items[at].dropped:
            at += 1
        self.start = at
        return at

    def lives(self) -> Iterator[Live]:
        """Its live tuples, oldest first (it must not change meanwhile)."""
        return (live for live in itertools.islice(self.items, self.after(0), None)
                if not live.dropped)


class NameIndex:
    """The buckets of one property name, by key (fields.prop_keys; by type alone if
    ``formal``). Tuples that came after it was made are in ``buckets`` at once; older
    ones (arrival number up to ``upto``) are added by backfilling, into ``backfill``
    lists merged in when done."""

    __slots__ = ("alive", "backfill", "buckets", "done", "formal", "name", "position", "upto",
                 "used")

    def __init__(self, name: str, formal: bool, upto: int, now: float) -> None:
        self.name = name
        self.formal = formal
        self.buckets: dict[Key, Bucket] = {}
        #: Tuples up to this arrival number are the backfill's; it has passed ``position``.
        self.upto, self.position = upto, 0
        self.backfill: dict[Key, list[Live]] = {}
        self.done = True
        #: False once dropped: tuples still naming it in ``Live.keys`` skip it.
        self.alive = True
        #: When a template last used it (the channel's clock).
        self.used = now

    def holds(self, live: Live) -> bool:
        """Is ``live``'s entry counted in ``buckets`` (not in a backfill list)?"""
        return self.done or live.seq > self.upto


class TupleTable:
    """See the module docstring."""

    def __init__(self) -> None:
        #: Every live tuple, oldest first.
        self.all = Bucket()
        self.by_id: dict[int, Live] = {}
        self._by_type: dict[str | None, Bucket] = {}
        self._by_name: dict[tuple[str, bool], NameIndex] = {}
        #: The names read from each event as it is added: sequencing's and the indexed.
        self._wanted: frozenset[str] = frozenset(SEQUENCING)
        self._expiry: list[tuple[float, int]] = []
        self._seqs = itertools.count(1)
        #: The newest arrival number given.
        self.last_seq = 0
        #: Bumped when a tuple comes back at its old place (``restore``): positions
        #: remembered across calls (sequencing cursors) are void then.
        self.epoch = 0
        #: The estimated encoded bytes of the live tuples (sizes.py).
        self.bytes = 0

    def __len__(self) -> int:
        return self.all.count

    # -- adding and dropping ----------------------------------------------------------------
    def prepare(self, live: Live) -> None:
        """Number ``live`` (read by fields.read_event) as the newest arrival and read what
        sequencing and the indexes need. Then :meth:`add` it, or not (a wait took it)."""
        seq = live.seq = self.last_seq = next(self._seqs)
        values = first_values(props_of(live), self._wanted)
        live.seq_key = sequencing_of(values) or (None, 0, seq)  # fields.py; else the space's
        keys = []
        for index in self._by_name.values():
            value = values.get(index.name)
            if value is not None:
                keys += [(index, key) for key in prop_keys(value, index.formal)]
        live.keys = tuple(keys)

    def add(self, live: Live) -> None:
        """Add ``live``, prepared (no index made since), as the newest tuple."""
        for index, key in live.keys:
            bucket = index.buckets.get(key)
            if bucket is None:
                bucket = index.buckets[key] = Bucket()
            bucket.append(live)
        bucket = self._by_type.get(live.type_name)
        if bucket is None:
            bucket = self._by_type[live.type_name] = Bucket()
        bucket.append(live)
        self.all.append(live)
        self.by_id[live.id] = live
        self.bytes += live.size
        heapq.heappush(self._expiry, (live.expires, live.id))

    def drop(self, live: Live) -> None:
        """Remove ``live`` (it must be in the table)."""
        live.dropped = True
        del self.by_id[live.id]
        self.bytes -= live.size
        self.all.discard()
        bucket = self._by_type[live.type_name]
        bucket.discard()
        if not bucket.count:
            del self._by_type[live.type_name]
        for index, key in live.keys:
            if index.alive and index.holds(live):
                bucket = index.buckets[key]
                bucket.discard()
                if not bucket.count:
                    del index.buckets[key]

    def restore(self, live: Live) -> None:
        """Add ``live`` again at its place (a tuple given back): positions past it that
        callers remember are void (``epoch``)."""
        live.dropped = False
        values = first_values(props_of(live), self._wanted)
        keys = []
        for index in self._by_name.values():
            value = values.get(index.name)
            for key in prop_keys(value, index.formal) if value is not None else ():
                if index.holds(live):
                    keys.append((index, key))
                    bucket = index.buckets.get(key)
                    if bucket is None:
                        bucket = index.buckets[key] = Bucket()
                    bucket.insert(live)
                elif live.seq <= index.position:  # the backfill has passed its place
                    keys.append((index, key))
                    found = index.backfill.setdefault(key, [])
                    at = bisect.bisect_left(found, live.seq, key=_SEQ)
                    if at >= len(found) or found[at] is not live:
                        found.insert(at, live)
        live.keys = tuple(keys)
        bucket = self._by_type.get(live.type_name)
        if bucket is None:
            bucket = self._by_type[live.type_name] = Bucket()
        bucket.insert(live)
        self.all.insert(live)
        self.by_id[live.id] = live
        self.bytes += live.size
        heapq.heappush(self._expiry, (live.expires, live.id))
        self.epoch += 1

    def sweep(self, now: float) -> int:
        """Drop the tuples expired by ``now``; how many."""
        heap, by_id = self._expiry, self.by_id
        dropped = 0
        while heap and heap[0][0] <= now:
            expires, tuple_id = heapq.heappop(heap)
            live = by_id.get(tuple_id)
            if live is not None and live.expires == expires:
                self.drop(live)
                dropped += 1
        if len(heap) > 2 * len(by_id) + 1024:
            self._expiry = [(live.expires, live.id) for live in by_id.values()]
            heapq.heapify(self._expiry)
        return dropped

    def oldest(self) -> Live | None:
        """The oldest live tuple."""
        at = self.all.after(0)
        return self.all.items[at] if at < len(self.all.items) else None

    def clear(self) -> int:
        """Drop every tuple; how many were live."""
        count = self.all.count
        self.all, self.by_id, self._by_type = Bucket(), {}, {}
        for index in self._by_name.values():
            index.buckets, index.backfill, index.done = {}, {}, True
            index.upto = index.position = self.last_seq
        self._expiry = []
        self.bytes = 0
        return count

    # -- indexes -----------------------------------------------------------------------------
    def _index_for(self, name: str, formal: bool, now: float) -> NameIndex | None:
        """The index of property ``name`` (by type if ``formal``), begun now if there is
        room (None if not)."""
        index = self._by_name.get((name, formal))
        if index is None:
            if len(self._by_name) >= MAX_INDEXED_NAMES:
                return None
            index = self._by_name[name, formal] = NameIndex(name, formal, self.last_seq, now)
            index.done = not self.all.count
            self._rewant()
        index.used = now
        return index

    def _rewant(self) -> None:
        self._wanted = frozenset(SEQUENCING) | {index.name for index in self._by_name.values()}

    def backfill(self, index: NameIndex, budget: int) -> int:
        """Index up to ``budget`` of the tuples older than ``index``; the work done."""
        if index.done:
            return 0
        wanted = frozenset((index.name,))
        items = self.all.items
        at, end, work = self.all.after(index.position), len(self.all.items), 0
        while at < end and work < budget:
            live = items[at]
            if live.seq > index.upto:
                break
            at += 1
            work += 1
            index.position = live.seq
            if live.dropped:
                continue
            value = first_values(props_of(live), wanted).get(index.name)
            keys = prop_keys(value, index.formal) if value is not None else ()
            if keys:
                live.keys = tuple(k for k in live.keys if k[0].alive) + tuple(
                    (index, key) for key in keys)
                for key in keys:
                    index.backfill.setdefault(key, []).append(live)
        if at >= end or items[at].seq > index.upto:
            self._complete(index)
        return max(work, 1)

    def _complete(self, index: NameIndex) -> None:
        for key, found in index.backfill.items():
            kept = [live for live in found if not live.dropped]
            if not kept:
                continue
            bucket = index.buckets.get(key)
            if bucket is None:
                index.buckets[key] = Bucket(kept)
            else:
                bucket.items = kept + bucket.items[bucket.start:]
                bucket.start = 0
                bucket.count += len(kept)
        index.backfill = {}
        index.done = True

    def evict_idle(self, now: float) -> None:
        """Drop the indexes no template has used for INDEX_IDLE seconds."""
        for name, index in list(self._by_name.items()):
            if now - index.used >= INDEX_IDLE:
                index.alive = False
                index.buckets, index.backfill = {}, {}
                del self._by_name[name]
                self._rewant()

    # -- narrowing ---------------------------------------------------------------------------
    def narrow(self, template: CompiledTemplate, now: float
               ) -> tuple[Bucket | None, NameIndex | None]:
        """The bucket whose tuples are a superset of ``template``'s matches, oldest first
        (None: it has no match), and an index still to backfill before the answer is
        final (None once it is)."""
        if not template.possible:
            return None, None
        best: Bucket | None = None
        for type_name in template.types:
            bucket = self._by_type.get(type_name)
            if not bucket:
                return None, None
            best = bucket
        for name, key in template.props:
            index = self._index_for(name, key[1] is FORMAL, now)
            if index is None:
                continue
            if not index.done:
                return None, index
            bucket = index.buckets.get(key)
            if not bucket:
                return None, None
            if best is None or bucket.count < best.count:
                best = bucket
        return (self.all if best is None else best), None

    @property
    def indexed(self) -> list[str]:
        """The property names indexed now (EventType always is); a formal index's name
        ends with ``?``."""
        return sorted(name + "?" * formal for name, formal in self._by_name)

    def stats(self) -> dict[str, Any]:
        return {"live": self.all.count, "types": len(self._by_type), "indexed": self.indexed,
                "expiry_heap": len(self._expiry), "bytes": self.bytes}
