"""Event persistence (EventReliability=Persistent): stored before the push returns.

Strategy: a channel whose ConnectionReliability is Persistent, in a factory
with a store, has an :class:`EventLog`. An event that is to be persistent --
the header's EventReliability, else the channel's (spec section 2.5.5.1:
"the EventReliability property can be set per-channel, or per-message to
override the per-channel setting") -- is routed as usual, except that the
proxy suppliers whose ConnectionReliability is Persistent do not queue their
copy at once: they *stage* it. The log then writes the event once, naming
those proxies (``Store.add_events``; concurrent pushes share one commit),
and only then queues the staged copies, so no consumer is given an event
the store does not hold. Best-effort proxies on the same channel queue their
copies directly and lose them on a restart, as BestEffort promises.

A copy leaves the store when it leaves its queue for good (``release``):
delivered (the consumer's push returned, or a pull returned it), expired,
or discarded by the queue's limits. When the proxy is destroyed, all it
still holds goes (``drop_consumer``). A release may be lost in a crash, so
after a restart a consumer may be given again what it had already received
in the last moments (the duplicate window, docs/persistence.md).

Memory stays bounded: a proxy keeps at most ``window`` stored copies in
memory (queued, in flight, or waiting for a retry); past that, copies stay
on disk only (the proxy is *spilled*) and are read back a page at a time,
in arrival order, as the queue drains. After a restart every durable proxy
starts spilled, so restarting costs nothing per stored event.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Iterable
from typing import Any

from omniORB import CORBA

from cosnotify.channel import codec
from cosnotify.channel.event import from_any, from_structured, typed_sequence
from cosnotify.channel.queue import Entry
from cosnotify.channel.topology import store_failures
from cosnotify.store.interface import Store, StoreError

__all__ = ["DurableQueue", "EventLog"]

log = logging.getLogger("cosnotify.channel")

#: Stored copies a proxy keeps in memory at most (the rest wait on disk).
WINDOW = 4096
_PAGE = 512
#: Seconds a delivery's release may wait for an event's commit to share before it is
#: written on its own; and how many may wait at most.
RELEASE_DELAY = 0.02
#: Seconds before a release the store refused is written again (if no event stored
#: meanwhile carried it).
RETRY_RELEASE = 1.0
_DEFER_LIMIT = 1024
_READ_BACK = 1 << 62  # seq of an event read back: its store id, below live events
_MAX_PAGES = 64  # pages one refill reads looking for copies not already in memory


class DurableQueue:
    """The store side of one durable proxy supplier's queue (guarded by the proxy's lock)."""

    __slots__ = ("admitting", "cursor", "epoch", "first_live", "generation", "held", "path",
                 "refilling", "resident", "restored", "small_ids", "spilled")

    def __init__(self, path: str, spilled: bool = False, restored: bool = False) -> None:
        self.path = path
        #: Made by a restart for a proxy that held stored copies: what it gave before
        #: the restart has store ids below :attr:`first_live` (ack_state.py).
        self.restored = restored
        #: The lowest store id admitted since this process started (None: none yet).
        self.first_live: int | None = None
        #: Whether every id it held at the first late acknowledge was below 2^30
        #: (None: not looked at yet; ack_state.py).
        self.small_ids: bool | None = None
        #: Counts releases of copies on disk only (begin_release): a refill that read
        #: a page while one began reads it again.
        self.epoch = 0
        #: Store ids of the copies in memory (queued, in flight, to retry).
        self.resident: set[int] = set()
        #: Of those, the copies the proxy holds out of its queue for a while (a typed
        #: pull supplier's calls kept for another operation): resident, so never read
        #: back, but not counted against the memory window (``in_window``).
        self.held: set[int] = set()
        #: Some copies are on disk only; read them back before taking new ones.
        self.spilled = spilled
        #: Counts spills, so a refill knows whether one happened while it read.
        self.generation = 0
        #: The refill's position in the store (ids below are resident or released).
        self.cursor = -1
        #: Copies being stored for this proxy (staged, not yet admitted): while any
        #: are, a refill may read them back but must not end the spill.
        self.admitting = 0
        #: A refill is reading: others wait their turn (one at a time per proxy).
        self.refilling = False

    def in_window(self) -> int:
        """Copies in memory that count against the proxy's memory window."""
        return len(self.resident) - len(self.held)


class EventLog:
    """The persistent events of one channel."""

    def __init__(self, channel: Any, store: Store, window: int = WINDOW) -> None:
        self._channel = channel
        self._store = store
        self.window = window
        self._release_lock = threading.Lock()
        #: Releases of deliveries not yet written, by consumer path (released(defer)).
        self._deferred: dict[str, list[int]] = {}
        self._deferred_count = 0
        self._flush_due = False
        #: Releases being written (taken from _deferred), by path.
        self._releasing: dict[str, list[list[int]]] = {}
        #: Events read back from the store, by id, while some queue holds them: an
        #: event stored for many proxies is decoded once and shared, as when it came.
        self._read: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
        #: Refills the store could not read (a damaged store fails every one); logged
        #: at ERROR once per proxy path until a read of it succeeds again.
        self.read_failures = 0
        self._unreadable: set[str] = set()
        self._unreadable_lock = threading.Lock()

    def wants(self, event: Any) -> bool:
        """Is ``event`` to be persistent (its header's EventReliability, else the channel's)?"""
        reliability = event.reliability
        if reliability is None:
            reliability = self._channel._qos.get("EventReliability", 0)
        return bool(reliability == 1)

    # -- entry ------------------------------------------------------------------------------
    def admit(self, items: list[tuple[Any, list[tuple[Any, Entry]]]]) -> None:
        """Store each ``(event, staged)`` -- in one commit -- for the proxies that
        staged a copy, then queue the copies.

        A store failure is raised as the CORBA exception the supplier gets
        (NO_RESOURCES): the events were not accepted by those proxies.
        """
        rows: list[tuple[bytes, list[str]]] = []
        marks: dict[str, int] = {}
        # Each proxy's copies, in id order: one call per proxy, not one per copy.
        copies: dict[Any, tuple[str, list[tuple[int, Entry]]]] = {}
        try:
            for at, (event, staged) in enumerate(items):
                paths = []
                for proxy, entry in staged:
                    path = proxy._durable_path()
                    paths.append(path)
                    held = copies.get(proxy)
                    if held is None:
                        copies[proxy] = (path, [(at, entry)])
                    else:
                        held[1].append((at, entry))
                rows.append((codec.encode_event(event), paths))
                if event.mark is not None:
                    name, value = event.mark
                    marks[name] = max(value, marks.get(name, value))
        except BaseException:
            self._not_admitted(items, admitting=False)
            raise
        for proxy, (path, entries) in copies.items():
            proxy._admitting(path, len(entries))
        releases = self._take_deferred()  # deliveries since: in the same commit
        try:
            with store_failures():
                ids = self._store.add_events(rows, marks or None, releases or None)
        except BaseException:
            for path, released in releases.items():
                self.release_ids(path, released)  # on their own, then
            self._not_admitted(items)
            raise
        finally:
            self._settled(releases)
        for event, _ in items:
            event.mark = None
        for proxy, (path, entries) in copies.items():
            admitted = []
            for at, entry in entries:
                event_id = ids[at]
                entry.stored = event_id
                entry.seq = event_id - _READ_BACK  # as it will be if read back
                admitted.append(entry)
            refused = proxy._admit_stored(admitted, path)
            if refused:
                self.release_ids(path, refused)

    def _not_admitted(self, items: list[tuple[Any, list[tuple[Any, Entry]]]],
                      admitting: bool = True) -> None:
        """The events were not stored: undo what staging (and ``_admitting``) counted."""
        account = self._channel._account
        for _, staged in items:
            for proxy, entry in staged:
                with proxy._lock:
                    if admitting and proxy._queue.durable is not None:
                        proxy._queue.durable.admitting -= 1
                if account.limit:
                    account.release([entry])

    # -- leaving -------------------------------------------------------------------------------
    def released(self, entries: Iterable[Entry], defer: bool = False) -> None:
        """These copies left their queues for good: the store need not keep them.

        ``defer`` (deliveries): the release is written with the next event stored,
        or at most ``RELEASE_DELAY`` seconds later, not in a commit of its own.
        """
        by_path: dict[str, list[int]] = {}
        owners: list[tuple[Any, int]] = []
        for entry in entries:
            stored = entry.stored
            if stored:
                durable = entry.owner.durable if entry.owner is not None else None
                if durable is not None:
                    owners.append((durable, stored))
                    by_path.setdefault(durable.path, []).append(stored)
        if not by_path:
            return
        # Registered as released before they stop being resident: a refill in
        # between skips them either way (unreleased), never reads them back.
        with self._release_lock:
            if defer:
                for path, ids in by_path.items():
                    self._deferred.setdefault(path, []).extend(ids)
                    self._deferred_count += len(ids)
                flush = self._deferred_count >= _DEFER_LIMIT
                timer = not flush and not self._flush_due
                if timer:
                    self._flush_due = True
            else:
                for path, ids in by_path.items():
                    self._releasing.setdefault(path, []).append(ids)
        for durable, stored in owners:
            durable.resident.discard(stored)
            durable.held.discard(stored)
        if not defer:
            try:
                for path, ids in by_path.items():
                    self.release_ids(path, ids)
            finally:
                self._settled(by_path)
        elif flush:
            self.flush_releases()
        elif timer:
            self._channel._service.clock.call_later(RELEASE_DELAY, self._flush_timer)

    def _flush_timer(self) -> None:
        """On the clock's thread, which must not wait: the write goes to a worker."""
        with self._release_lock:
            self._flush_due = False
        self._channel._service.call_soon(self.flush_releases)

    def _take_deferred(self) -> dict[str, list[int]]:
        """The deferred releases, now in flight (refills still skip them)."""
        with self._release_lock:
            taken, self._deferred, self._deferred_count = self._deferred, {}, 0
            for path, ids in taken.items():
                self._releasing.setdefault(path, []).append(ids)
        return taken

    def _settled(self, taken: dict[str, list[int]]) -> None:
        """``taken`` is in the store now: the store's reads reflect it."""
        with self._release_lock:
            for path, ids in taken.items():
                flights = self._releasing[path]
                flights.remove(ids)
                if not flights:
                    del self._releasing[path]

    def unreleased(self, path: str) -> set[int]:
        """Ids released for ``path`` that the store may not reflect yet."""
        with self._release_lock:
            gone = set(self._deferred.get(path, ()))
            for ids in self._releasing.get(path, ()):
                gone.update(ids)
        return gone

    def flush_releases(self) -> None:
        """Write every deferred release (idle, closing, too many waiting)."""
        taken = self._take_deferred()
        try:
            for path, ids in taken.items():
                self.release_ids(path, ids)
        finally:
            self._settled(taken)

    def begin_release(self, durable: DurableQueue, ids: list[int]) -> None:
        """Copies on disk only (not in memory) are to be released: from now on no
        refill reads them back. Call with the proxy's lock held (a refill adds what it
        read under that lock, and drops a page read while a release began), and
        :meth:`finish_release` after it."""
        durable.epoch += 1
        with self._release_lock:
            self._releasing.setdefault(durable.path, []).append(ids)

    def finish_release(self, path: str, ids: list[int]) -> None:
        """Write the release :meth:`begin_release` announced (durable on return)."""
        try:
            self.release_ids(path, ids)
        finally:
            self._settled({path: ids})

    def all_below(self, path: str, bound: int) -> bool:
        """Whether every copy ``path`` holds in the store has an id below ``bound``
        (False if the store cannot say)."""
        try:
            return not self._store.pending(path, after=bound - 1, limit=1)
        except StoreError as exc:
            log.error("the store could not be read for %s: %s", path, exc)
            return False

    def release_ids(self, path: str, ids: list[int]) -> None:
        """Write a release; one the store refuses waits to be written again (with the
        next event stored, or RETRY_RELEASE later), and until then no refill reads
        those copies back: delivered, they are not given again in this process (at
        worst after a restart, if it never gets written)."""
        try:
            self._store.release(path, ids)
        except StoreError as exc:
            log.error("the store could not release %d event(s) of %s (tried again in %g s):"
                      " %s", len(ids), path, RETRY_RELEASE, exc)
            with self._release_lock:  # before the caller's _settled: never unregistered
                # Not counted towards _DEFER_LIMIT: while the store keeps refusing, each
                # delivery would otherwise write them all again, and log it.
                self._deferred.setdefault(path, []).extend(ids)
                timer = not self._flush_due
                if timer:
                    self._flush_due = True
            if timer:
                self._channel._service.clock.call_later(RETRY_RELEASE, self._flush_timer)

    def dropped(self, path: str) -> None:
        """The proxy at ``path`` was destroyed: everything it held goes."""
        with self._unreadable_lock:
            self._unreadable.discard(path)
        try:
            self._store.drop_consumer(path)
        except StoreError as exc:
            log.error("the store could not drop %s: %s", path, exc)

    # -- reading back -----------------------------------------------------------------------------
    def refill(self, proxy: Any) -> int:
        """Read the next copies of a spilled proxy back into its queue; how many came.

        0 with the proxy still spilled means the store could not be read (or the
        memory window is full): the caller tries again later.
        """
        queue = proxy._queue
        with proxy._lock:
            durable = queue.durable
            if durable is None or durable.refilling:
                return 0  # another refill is reading: it queues what it finds
            durable.refilling = True
        try:
            for _ in range(_MAX_PAGES):
                added, more = self._refill_page(proxy)
                if added or not more:
                    return added
            return 0
        finally:
            with proxy._lock:
                durable.refilling = False

    def _refill_page(self, proxy: Any) -> tuple[int, bool]:
        queue = proxy._queue
        with proxy._lock:
            durable = queue.durable
            if durable is None or not durable.spilled:
                return 0, False
            room = proxy._window() - durable.in_window()
            generation, cursor, epoch = durable.generation, durable.cursor, durable.epoch
            resident = set(durable.resident)
        resident |= self.unreleased(durable.path)  # delivered: not to be read back
        if room <= 0:
            return 0, False
        try:
            page = self._store.pending(durable.path, after=cursor, limit=min(room, _PAGE))
        except StoreError as exc:
            with self._unreadable_lock:
                self.read_failures += 1
                first = durable.path not in self._unreadable
                self._unreadable.add(durable.path)
            if first:  # every later try fails alike: counted in read_failures, not logged
                log.error("%r: the store could not be read (tried again at each delivery,"
                          " not logged again until it can be): %s", proxy, exc)
            return 0, False
        if durable.path in self._unreadable:
            with self._unreadable_lock:
                self._unreadable.discard(durable.path)
            log.warning("%r: the store can be read again", proxy)
        entries = []
        for stored in page:
            if stored.id in resident:
                continue
            try:
                event = self._read.get(stored.id)
                if event is None:
                    event = self._read[stored.id] = _event(stored.data, stored.id)
                entry = _entry(proxy, event)
            except Exception:  # one unreadable record loses only itself
                log.exception("%r: stored event %d is unreadable: dropped", proxy, stored.id)
                self.release_ids(durable.path, [stored.id])
                continue
            entry.stored = stored.id
            entries.append(entry)
        now = proxy._service.clock.now()
        added = 0
        dropped: list[Entry] = []
        with proxy._lock:
            if queue.durable is not durable or not proxy._connected:
                return 0, False
            if durable.epoch != epoch:
                return 0, True  # copies on disk were released while we read: read again
            for entry in entries:
                if entry.stored not in durable.resident:
                    durable.resident.add(entry.stored)
                    dropped.extend(queue.put(entry, now))
                    added += 1
            if len(page) == min(room, _PAGE):
                durable.cursor = page[-1].id  # more may follow
            elif durable.generation == generation and not durable.admitting:
                durable.spilled, durable.cursor = False, -1  # all read, none spilled since
            else:
                durable.cursor = -1  # spilled meanwhile, maybe below the cursor: rescan
            more = durable.spilled
            if added:
                proxy._enqueued()
        if dropped:
            self._channel._released(dropped)
        return added, more


def _entry(proxy: Any, event: Any) -> Entry:
    """A stored event as ``proxy``'s queue copy (its QoS and mapping filters applied)."""
    if proxy._fast:
        return Entry(event, event.priority, event.deadline)
    return Entry(event, *proxy._resolve(event))


def _event(data: bytes, event_id: int) -> Any:
    """An event record as the channel's Event, as it was resolved at entry.

    Its ``seq`` (the queues' arrival order) comes from its store id, below every
    event made in this process: an event read back for one proxy and shared
    with another keeps its place among the events that proxy reads after it,
    and events read back go before the live ones that came after them.
    """
    value, fields = codec.decode_event(data)
    arrival = fields.pop("arrival")
    event = from_any(value, arrival) if isinstance(value, CORBA.Any) else from_structured(
        value, arrival)
    if fields.pop("typed"):
        event.typed = typed_sequence(value)  # mapping filters read it as they did
    for name, field in fields.items():
        setattr(event, name, field)
    lifetime, stop = event.lifetime, event.stop_time
    if lifetime:
        expiry = arrival + lifetime
        event.deadline = expiry if stop is None else min(stop, expiry)
    else:
        event.deadline = stop
    event.seq = event_id - _READ_BACK
    return event
