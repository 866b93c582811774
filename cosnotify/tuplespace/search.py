"""Finding tuples: the oldest fresh match, or every match, a slice at a time.

Strategy: a call's templates are each narrowed to a bucket (index.py) and
scanned from a position -- an arrival number: the oldest tuple, or a
sequenced client's *cursor* (sequencing.py), past every tuple of that
template it has already received -- so a sequenced read does not rescan
what its client has seen. The scan runs under the space's lock, but never
for more than SCAN_SLICE tuples examined (or indexed, while an index is
being backfilled) at a time: then the call lets the lock go (``pause``),
the channel's pushes and other calls run, and the call resumes by
bisection where it was, so a long read delays a push by one slice at most.

:meth:`Search.first` (getEvent, removeEvent, the waits) returns the oldest
tuple one template matches that is fresh for the client: each template's
scan stops at its first fresh match, or at the best match found so far.
What it found before a pause is checked again after it (another call may
have taken it), and the search ends only with a pass over all templates
that needed no pause: its answer is the space's state in that one hold of
the lock, so a wait that finds nothing and begins to wait in that hold
misses no event. :meth:`Search.every` (snoopEvents) collects up to the
limit per template and merges them oldest first; each tuple it returns was
live when it was examined ("copies of the retrieved events").
"""

from __future__ import annotations

import heapq
import itertools
import operator
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from cosnotify.tuplespace.limits import SCAN_SLICE
from cosnotify.tuplespace.records import Live
from cosnotify.tuplespace.templates import CompiledTemplate

__all__ = ["Search"]

_SEQ = operator.attrgetter("seq")
_NO_BOUND = float("inf")


class _Scan:
    """One template's progress: every candidate up to arrival number ``last`` has been
    examined; ``hits`` are the matches among them (oldest first); ``passed``: the
    oldest fresh match the caller's ``accept`` refused, if any."""

    __slots__ = ("hits", "last", "passed", "template")

    def __init__(self, template: CompiledTemplate, last: int) -> None:
        self.template = template
        self.last = last
        self.hits: list[Live] = []
        self.passed: int | None = None


class Search:
    """One call's search of ``table`` (module docstring), made and run under the space's
    lock; ``pause()`` lets the lock go and takes it again, and returns the time then
    (it raises when the space or the client went meanwhile). ``seen``: the client's
    sequencing (sequencing.Seen), or None for an anonymous call. ``accept``: the caller's
    test of a matching event (space.py); a match it refuses is passed over, not
    received, and the client's cursor stays before it (another caller of the Source,
    without that test, may take it)."""

    def __init__(self, table: Any, templates: Iterable[CompiledTemplate], now: float,
                 pause: Callable[[], float], seen: Any = None,
                 accept: Callable[[Any], bool] | None = None) -> None:
        self._table = table
        self._accept = accept
        self._now = now
        self._pause = pause
        self._seen = seen
        self._epoch = table.epoch
        self._scans = [_Scan(t, seen.cursor(t.text, self._epoch) if seen is not None else 0)
                       for t in templates]
        self._work = SCAN_SLICE

    def first(self) -> Live | None:
        """The oldest live tuple a template matches, fresh for the client; the client's
        cursors move past what it has received."""
        self._run(1)
        best = min((s.hits[0] for s in self._scans if s.hits), key=_SEQ, default=None)
        seen = self._seen
        if seen is not None:
            for s in self._scans:
                upto = s.hits[0].seq - 1 if s.hits else s.last
                if s.passed is not None:
                    upto = min(upto, s.passed - 1)
                seen.set_cursor(s.template.text, self._epoch, upto)
        return best

    def every(self, limit: int) -> list[Live]:
        """Up to ``limit`` tuples one of the templates matches, oldest first."""
        self._run(limit, check=False)
        lists = [s.hits for s in self._scans]
        merged = lists[0] if len(lists) == 1 else _unique(heapq.merge(*lists, key=_SEQ))
        return list(itertools.islice(merged, limit))

    def _run(self, want: int, check: bool = True) -> None:
        while True:
            if self._table.epoch != self._epoch:  # a tuple came back at its old place
                self._epoch = self._table.epoch
                for s in self._scans:
                    s.last, s.hits, s.passed = 0, [], None
            if self._pass(want, check):
                return
            self._now = self._pause()
            self._work = SCAN_SLICE

    def _pass(self, want: int, check: bool) -> bool:
        """One pass over the templates; False when it ran out of work (then pause).
        ``check``: check again what was found before (a search for the first match)."""
        bound = _NO_BOUND
        if check:
            by_id, now, seen = self._table.by_id, self._now, self._seen
            for s in self._scans:
                if s.hits:
                    s.hits = [live for live in s.hits
                              if by_id.get(live.id) is live and live.expires > now
                              and (seen is None or seen.fresh(live))]
                    if s.hits and want == 1:
                        bound = min(bound, s.hits[0].seq)
        for s in self._scans:
            if len(s.hits) >= want:
                continue
            if not self._scan(s, want, bound):
                return False
            if s.hits and want == 1:
                bound = min(bound, s.hits[0].seq)
        return True

    def _scan(self, s: _Scan, want: int, bound: float) -> bool:
        """Scan ``s`` on from where it was, up to (not including) arrival ``bound``, until
        it has ``want`` hits or its bucket ends; False when the work ran out first."""
        table = self._table
        while True:
            bucket, pending = table.narrow(s.template, self._now)
            if pending is None:
                break
            self._work -= table.backfill(pending, self._work)
            if self._work <= 0:
                return False
        if bucket is None:
            return True
        items: list[Live] = bucket.items
        at: int = bucket.after(s.last)
        end = len(items)
        matches, hits, now = s.template.matches, s.hits, self._now
        fresh = self._seen.fresh if self._seen is not None else None
        accept = self._accept
        last, work = s.last, self._work
        try:
            while at < end:
                live = items[at]
                seq = live.seq
                if seq >= bound:
                    return True
                at += 1
                last = seq
                if live.dropped or live.expires <= now:
                    continue
                work -= 1
                if matches(live) and (fresh is None or fresh(live)):
                    if accept is None or accept(live.event.as_structured()):
                        hits.append(live)
                        if len(hits) >= want:
                            return True
                    elif s.passed is None or seq < s.passed:
                        s.passed = seq
                if work <= 0:
                    return at >= end
            return True
        finally:
            s.last, self._work = last, work


def _unique(lives: Iterable[Live]) -> Iterator[Live]:
    last = None
    for live in lives:
        if live is not last:
            yield live
        last = live
