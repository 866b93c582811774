"""The live tuples of one space, indexed, with expiry by a heap.

Strategy: tuples are kept oldest first (a dict by arrival number, which
Python keeps in insertion order), and in *buckets* -- dicts of the same
shape -- by EventType and by the key (fields.py) of each indexed property
name. A template is narrowed to the smallest bucket among its actual fields
(an empty one means no match, at once), which the grammar's matcher then
checks oldest first; with no actual field to narrow by, every live tuple is
a candidate. Property names are indexed on first use by a template (one
pass over the live tuples), at most MAX_INDEXED_NAMES of them, so an event
costs only the names templates ask about. Expiry is a heap of (expires,
arrival number): a sweep pops what is due, and a tuple removed meanwhile
leaves a stale entry that is skipped (the heap is rebuilt when stale entries
outnumber the live ones). The space's lock guards every method.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable
from typing import Any

from cosnotify.tuplespace.fields import (
    SEQUENCING,
    Key,
    first_values,
    prop_key,
    props_of,
    sequencing_of,
)
from cosnotify.tuplespace.limits import MAX_INDEXED_NAMES
from cosnotify.tuplespace.records import Live
from cosnotify.tuplespace.templates import CompiledTemplate

__all__ = ["TupleTable"]

Bucket = dict[int, Live]


class TupleTable:
    """See the module docstring."""

    def __init__(self) -> None:
        #: Every live tuple by arrival number: oldest first.
        self.by_seq: Bucket = {}
        self.by_id: dict[int, Live] = {}
        self._by_type: dict[str | None, Bucket] = {}
        self._by_name: dict[str, dict[Key, Bucket]] = {}
        #: The names read from each event as it is added: sequencing's and the indexed.
        self._wanted: frozenset[str] = frozenset(SEQUENCING)
        self._expiry: list[tuple[float, int]] = []
        self._seqs = itertools.count(1)
        self._removed = 0

    def __len__(self) -> int:
        return len(self.by_seq)

    # -- adding and dropping ----------------------------------------------------------------
    def prepare(self, live: Live, seq_key: tuple[str | None, int, int] | None = None) -> None:
        """Number ``live`` (read by fields.read_event) as the newest arrival and read what
        sequencing and the indexes need; ``seq_key``: its sequencing key, when it had one
        already (a tuple given back). Then :meth:`add` it, or not (a wait took it)."""
        seq = live.seq = next(self._seqs)
        values = first_values(props_of(live), self._wanted)
        if seq_key is None:
            seq_key = sequencing_of(values) or (None, 0, seq)  # fields.py; else the space's
        live.seq_key = seq_key
        keys = []
        for name in self._by_name:
            value = values.get(name)
            key = prop_key(value) if value is not None else None
            if key is not None:
                keys.append((name, key))
        live.keys = tuple(keys)

    def add(self, live: Live) -> None:
        """Add ``live``, prepared (and no index made since), as the newest tuple."""
        seq = live.seq
        for name, key in live.keys:
            index = self._by_name[name]
            bucket = index.get(key)
            if bucket is None:
                bucket = index[key] = {}
            bucket[seq] = live
        bucket = self._by_type.get(live.type_name)
        if bucket is None:
            bucket = self._by_type[live.type_name] = {}
        bucket[seq] = live
        self.by_seq[seq] = live
        self.by_id[live.id] = live
        heapq.heappush(self._expiry, (live.expires, seq))

    def drop(self, live: Live) -> None:
        """Remove ``live`` (it must be in the table)."""
        seq = live.seq
        del self.by_seq[seq]
        del self.by_id[live.id]
        bucket = self._by_type[live.type_name]
        del bucket[seq]
        if not bucket:
            del self._by_type[live.type_name]
        for name, key in live.keys:
            index = self._by_name[name]
            bucket = index[key]
            del bucket[seq]
            if not bucket:
                del index[key]
        self._removed += 1
        if self._removed > 4096 and self._removed > len(self.by_seq):
            # A dict keeps the slots of what was deleted until it grows again: copy it, so
            # a scan from the oldest does not walk them (amortised over the deletions).
            self.by_seq = dict(self.by_seq)
            self._removed = 0

    def sweep(self, now: float) -> int:
        """Drop the tuples expired by ``now``; how many."""
        heap, by_seq = self._expiry, self.by_seq
        dropped = 0
        while heap and heap[0][0] <= now:
            expires, seq = heapq.heappop(heap)
            live = by_seq.get(seq)
            if live is not None and live.expires == expires:
                self.drop(live)
                by_seq = self.by_seq
                dropped += 1
        if len(heap) > 2 * len(by_seq) + 1024:
            self._expiry = [(live.expires, live.seq) for live in by_seq.values()]
            heapq.heapify(self._expiry)
        return dropped

    def clear(self) -> list[Live]:
        """Drop every tuple; what was live."""
        gone = list(self.by_seq.values())
        self.by_seq, self.by_id, self._by_type = {}, {}, {}
        self._by_name = {name: {} for name in self._by_name}
        self._expiry = []
        self._removed = 0
        return gone

    # -- narrowing ---------------------------------------------------------------------------
    def _index_for(self, name: str) -> dict[Key, Bucket] | None:
        """The index of property ``name``, made now if there is room (None if not)."""
        index = self._by_name.get(name)
        if index is not None or len(self._by_name) >= MAX_INDEXED_NAMES:
            return index
        index = {}
        wanted = frozenset((name,))
        for live in self.by_seq.values():
            value = first_values(props_of(live), wanted).get(name)
            key = prop_key(value) if value is not None else None
            if key is not None:
                live.keys += ((name, key),)
                bucket = index.get(key)
                if bucket is None:
                    bucket = index[key] = {}
                bucket[live.seq] = live
        self._by_name[name] = index
        self._wanted = frozenset(SEQUENCING) | frozenset(self._by_name)
        return index

    def candidates(self, template: CompiledTemplate) -> Iterable[Live]:
        """The tuples ``template`` may match, oldest first: a superset of its matches."""
        if not template.possible:
            return ()
        best: Bucket | None = None
        for type_name in template.types:
            bucket = self._by_type.get(type_name)
            if not bucket:
                return ()
            best = bucket
        for name, key in template.props:
            index = self._index_for(name)
            if index is None:
                continue
            bucket = index.get(key)
            if not bucket:
                return ()
            if best is None or len(bucket) < len(best):
                best = bucket
        return (self.by_seq if best is None else best).values()

    @property
    def indexed(self) -> list[str]:
        """The property names indexed so far (EventType always is)."""
        return sorted(self._by_name)

    def stats(self) -> dict[str, Any]:
        return {"live": len(self.by_seq), "types": len(self._by_type),
                "indexed": self.indexed, "expiry_heap": len(self._expiry)}
