"""A channel as the Event Heap's tuple space (docs/history.md, "The Event Heap tuple space").

Strategy: one :class:`TupleSpace` per channel, made on first use
(``TupleSpace.of(channel)``) and kept by the channel, which hands it every
event it accepts -- whatever supplier brought it, "their clients and CORBA
clients share one channel" -- beside its retention hook (``accepted``, which
never raises). Each event becomes a live tuple until its expiry: the
channel's own (``Timeout``, which is TimeToLive in the EVENTHEAP grammar,
and StopTime, as resolved for the event), else the seed's TimeToLive
default of 120000 ms. ``put_event`` supplies an event into the channel (its
consumers receive it, past the channel's admission: MaxQueueLength) with an
id taken first, and the hook keeps it under that id.

The seed's operations run under one lock per space, so two concurrent
removeEvent calls never take the same tuple; a long search lets the lock
go a slice at a time (search.py), so the channel's pushes never wait behind
it. Retrieval is narrowed by the index (index.py) and decided by the
EVENTHEAP grammar's compiled matchers, oldest tuple first: the seed does not
say which of several matching events getEvent and removeEvent return ("A
wire bundle with exactly one event that matches one or more of the events
passed as templates"), and the oldest is the one a queue-like use of
removeEvent expects. Expired tuples are swept from a heap at the start of
each operation and on each accepted event. The space is bounded in tuples
(MAX_TUPLES) and in bytes (MAX_BYTES, sizes.py). Waits are waits.py's;
clients and sequencing clients.py's and sequencing.py's; notification
streams streams.py's. A destroyed channel ends its space, and so does the
service stopping: waiters are woken with OBJECT_NOT_EXIST, and so are later
calls; a channel never gets a second space.

A retrieval may carry ``accept``, a test of a stored event its caller's
transport applies (an Event Heap front end: can the wire carry it?): a
match it refuses is passed over -- not received, not taken -- and the next
match is returned, so one event a transport cannot carry does not stop its
clients' retrievals (search.py). It must give one answer per event.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from omniORB import CORBA

from cosnotify.channel.event import apply_qos, from_structured
from cosnotify.store.interface import StoreError
from cosnotify.tuplespace import streams
from cosnotify.tuplespace.clients import Client
from cosnotify.tuplespace.events import check_event, stamp
from cosnotify.tuplespace.fields import read_event
from cosnotify.tuplespace.ids import IdAllocator
from cosnotify.tuplespace.index import TupleTable
from cosnotify.tuplespace.limits import (
    DEFAULT_TIME_TO_LIVE,
    MAX_BYTES,
    MAX_TUPLES,
    MAX_WAITERS,
    WAIT_GRACE,
)
from cosnotify.tuplespace.records import Live, Tuple, bad_param, gone, invalid_event, limit_exceeded
from cosnotify.tuplespace.registry import ClientRegistry
from cosnotify.tuplespace.search import Search
from cosnotify.tuplespace.sizes import event_size
from cosnotify.tuplespace.templates import CompiledTemplate, compile_templates, texts_of
from cosnotify.tuplespace.waits import Accept, Cancel, Waiter, max_results_of, wait_seconds

__all__ = ["TupleSpace"]

log = logging.getLogger("cosnotify.tuplespace")

_NO_EXPLICIT: frozenset[str] = frozenset()


def _yield() -> None:
    """Let other threads run while a search has let the lock go (search.py)."""
    time.sleep(0)


class TupleSpace(ClientRegistry):
    """The Event Heap's server operations on one channel (module docstring); its clients
    are registry.py's."""

    def __init__(self, channel: Any, max_tuples: int = MAX_TUPLES,
                 max_bytes: int = MAX_BYTES) -> None:
        self._channel = channel
        self._service = channel._service
        self._clock = self._service.clock
        self._ids = IdAllocator.of(self._service)
        self._lock = threading.Lock()
        #: Notified when the waiters change (``wait_for_waiters``).
        self._changed = threading.Condition(self._lock)
        self._table = TupleTable()
        self._waiters: list[Waiter] = []
        #: The connected clients, the least recently heard from first.
        self._clients: OrderedDict[str, Client] = OrderedDict()
        # put_event calls between their check and their tuple: how many, and their bytes.
        self._reserved = self._reserved_bytes = 0
        self._local = threading.local()  # the put_event in progress in this thread
        self._closed = False
        self._housekeeping = 0.0  # when idle indexes are looked for next
        #: Live tuples at most (a put beyond it is LimitExceeded), and their bytes.
        self.max_tuples = max_tuples
        self.max_bytes = max_bytes
        #: Events not kept: the space was full of tuples (``refused``), or no id could be
        #: had from the store (``failed``); tuples that expired (``expired``); old tuples
        #: dropped for a new one's bytes (``dropped``).
        self.refused = self.failed = self.expired = self.dropped = 0
        #: Times a client was told its connection closed (``Client.connection_lost``).
        self.connections_lost = 0

    @classmethod
    def of(cls, channel: Any, max_tuples: int | None = None,
           max_bytes: int | None = None) -> TupleSpace:
        """``channel``'s space, made now if it has none (OBJECT_NOT_EXIST if the channel
        was destroyed or its service stopped). The limits apply when it is made."""
        space: TupleSpace | None = channel._tuplespace
        if space is not None and not space._closed:
            return space
        with channel._lock:
            channel._check_alive()
            space = channel._tuplespace
            if space is not None:
                if space._closed:  # its service stopped: a space would have no timers
                    raise gone(f"the tuple space of channel {channel.channel_id}")
                return space
            if getattr(channel._service, "_closed", False):
                raise gone(f"the service of channel {channel.channel_id}")
            space = channel._tuplespace = cls(channel, max_tuples or MAX_TUPLES,
                                              max_bytes or MAX_BYTES)
        return space

    @property
    def channel(self) -> Any:
        return self._channel

    @property
    def channel_id(self) -> int:
        return int(self._channel.channel_id)

    @property
    def live_count(self) -> int:
        """Live tuples now."""
        with self._lock:
            self._sweep()
            return len(self._table)

    def __len__(self) -> int:
        return self.live_count

    @property
    def live_bytes(self) -> int:
        """The estimated bytes of the live tuples now (sizes.py)."""
        with self._lock:
            self._sweep()
            return self._table.bytes

    # -- the channel's hook ----------------------------------------------------------------
    def accepted(self, events: list[Any]) -> None:
        """The channel accepted ``events`` (envelopes): each becomes a live tuple, or goes
        to the first waitToRemoveEvent waiter it matches. Never raises."""
        try:
            self._accept(events)
        except Exception:
            log.exception("%r: accepted events could not be kept as tuples", self)

    def _accept(self, events: list[Any]) -> None:
        if self._closed:
            return
        put = getattr(self._local, "put", None)
        own, own_id, own_size = None, 0, 0
        if put is not None:
            own = next((e for e in events if e is put[0]), None)
            if own is not None:
                own_id, own_size = put[1], put[2]
                self._local.put = None  # taken: put_event's reservation is this tuple's
        others = len(events) - (own is not None)
        try:
            ids = iter(self._ids.take(others)) if others else iter(())
        except StoreError as exc:
            log.error("%r: no tuple ids from the store, %d events not kept: %s", self,
                      others, exc)
            with self._lock:
                self.failed += others
            ids = None
        lives: list[tuple[Live, bool]] = []
        for event in events:
            if event is own:
                tuple_id = own_id
            elif ids is None:
                continue
            else:
                tuple_id = next(ids)
            deadline = event.deadline
            expires = deadline if deadline is not None else event.arrival + DEFAULT_TIME_TO_LIVE
            live = Live(tuple_id, event, event.arrival, expires)
            live.size = own_size if event is own else event_size(event)
            read_event(live)
            lives.append((live, event is own))
        with self._lock:
            if own is not None:
                self._reserved -= 1
                self._reserved_bytes -= own_size
            if self._closed:
                return
            now = self._sweep(reap=False)
            table = self._table
            for live, mine in lives:
                if live.expires <= now:
                    continue
                table.prepare(live)
                placeable = mine or self._placeable(live)
                if self._waiters and self._offer(live, placeable):
                    continue
                if not placeable:
                    self.refused += 1
                    continue
                self._make_room(live.size)
                table.add(live)

    def _placeable(self, live: Live) -> bool:
        """Can ``live`` be kept, beside the puts in progress (a full space of tuples
        refuses it; one of bytes drops its oldest tuples for it: ``_make_room``)?"""
        return (len(self._table) + self._reserved < self.max_tuples
                and live.size + self._reserved_bytes <= self.max_bytes)

    def _make_room(self, size: int) -> None:
        """Drop the oldest tuples until ``size`` more bytes fit (the lock is held)."""
        table = self._table
        while table.bytes + self._reserved_bytes + size > self.max_bytes:
            oldest = table.oldest()
            if oldest is None:
                return
            table.drop(oldest)
            self.dropped += 1

    def _offer(self, live: Live, placed: bool) -> bool:
        """Hand ``live`` to the waiters that want it, in the order they began; True if a
        waitToRemoveEvent waiter took it (it is not kept). Not ``placed`` (the space
        cannot keep it): waitForEvent waiters are not offered it. The lock is held."""
        for waiter in list(self._waiters):
            if (waiter.remove or placed) and waiter.wants(live):
                self._waiters.remove(waiter)
                client = waiter.client
                waiter.end(live, receipt=client.seen.note(live) if client is not None else None)
                self._changed.notify_all()
                if waiter.remove:
                    return True
        return False

    def _sweep(self, now: float | None = None, reap: bool = True) -> float:
        """Expired tuples go; now and then idle indexes, and idle clients unless not
        ``reap`` (the push path). The time. The lock is held."""
        if now is None:
            now = self._clock.now()
        self.expired += self._table.sweep(now)
        if now >= self._housekeeping:
            self._housekeeping = now + 1.0
            self._table.evict_idle(now)
        if reap and self._clients:
            self._reap(now)
        return now

    # -- checks ------------------------------------------------------------------------------
    def _check_open(self, client: Client | None = None) -> None:
        """The lock is held."""
        if self._closed:
            raise gone(f"the tuple space of channel {self._channel.channel_id}")
        if client is not None and (client.space is not self or not client.active):
            raise gone(f"client {client.source!r}")

    def _begin(self, client: Client | None = None) -> None:
        """A call begins: the space and ``client`` must be there; ``client`` is heard
        from. The lock is held."""
        self._check_open(client)
        if client is not None:
            client.heard = self._clock.now()
            client.calls += 1
            if self._clients.get(client.source) is client:
                self._clients.move_to_end(client.source)

    def _check_client(self, client: Client | None) -> None:
        with self._lock:
            self._begin(client)

    def _pauser(self, client: Client | None) -> Callable[[], float]:
        """What a search calls to let the lock go for a moment (search.py)."""
        def pause() -> float:
            self._lock.release()
            try:
                _yield()
            finally:
                self._lock.acquire()
            self._check_open(client)
            now: float = self._clock.now()
            return now
        return pause

    # -- putEvent ----------------------------------------------------------------------------
    def put_event(self, event: Any, *, client: Client | None = None) -> int:
        """putEvent: supply ``event`` (a StructuredEvent) into the channel, and keep it as
        a tuple; its id. InvalidEvent for an event the Event Heap does not take,
        LimitExceeded when the space is full: then nothing is supplied."""
        if client is None:
            return self._put(check_event(event), None)
        self._check_client(client)
        with client.put_lock:  # the Source's numbers reach the space in order
            return self._put(check_event(stamp(event, client.stamped_fields(),
                                               client.session_id, client.next_number())),
                             client)

    def _put(self, event: Any, client: Client | None) -> int:
        channel = self._channel
        now = self._clock.now()
        envelope = from_structured(event, now)
        try:
            apply_qos(envelope, channel._qos, _NO_EXPLICIT, channel._event_log is not None)
        except CORBA.BAD_QOS as exc:
            raise invalid_event(f"its header QoS: {getattr(exc, '_info', exc)}") from None
        if envelope.deadline is not None and envelope.deadline <= now:
            raise invalid_event("its StopTime or Timeout has passed: it would never be "
                                "retrievable (Table 1, TimeToLive)")
        size = event_size(envelope)
        with self._lock:
            self._check_open(client)
            self._sweep()
            if len(self._table) + self._reserved >= self.max_tuples:
                raise limit_exceeded(f"the tuple space holds its limit of {self.max_tuples} "
                                     "live tuples", self.max_tuples)
            if self._table.bytes + self._reserved_bytes + size > self.max_bytes:
                raise limit_exceeded(f"the tuple space holds {self._table.bytes} bytes of "
                                     f"tuples, and this event's {size} would pass its limit "
                                     f"of {self.max_bytes} (MAX_BYTES)", self.max_bytes)
            self._reserved += 1
            self._reserved_bytes += size
        taken = False
        try:
            try:
                tuple_id = self._ids.take(1)[0]
            except StoreError as exc:
                raise CORBA.NO_RESOURCES(0, CORBA.COMPLETED_NO,
                                         f"no tuple id from the store: {exc}") from None
            self._local.put = (envelope, tuple_id, size)
            try:
                channel._check_alive()
                channel._forward(envelope)
            finally:
                taken = self._local.put is None
                self._local.put = None
        finally:
            if not taken:
                with self._lock:
                    self._reserved -= 1
                    self._reserved_bytes -= size
        return tuple_id

    # -- retrieval ---------------------------------------------------------------------------
    def _retrieve(self, templates: Any, client: Client | None, remove: bool,
                  accept: Accept | None) -> Tuple | None:
        compiled = compile_templates(templates)
        with self._lock:
            self._begin(client)
            return self._take(compiled, client, remove, self._sweep(), accept)

    def _take(self, compiled: tuple[CompiledTemplate, ...], client: Client | None,
              remove: bool, now: float, accept: Accept | None = None) -> Tuple | None:
        """The oldest match fresh for ``client`` (and ``accept``-ed), received (and taken
        if ``remove``). The lock is held (and let go a moment now and then: search.py)."""
        seen = client.seen if client is not None else None
        live = Search(self._table, compiled, now, self._pauser(client), seen, accept).first()
        if live is None:
            return None
        receipt = seen.note(live) if seen is not None else None
        if remove:
            self._table.drop(live)
        return live.as_tuple((client, receipt, remove))

    def get_event(self, templates: Any, *, client: Client | None = None,
                  accept: Accept | None = None) -> Tuple | None:
        """getEvent: the oldest live tuple one of ``templates`` matches (it stays), or
        None; for a client, only one it has not received; with ``accept``, only one it
        accepts (module docstring)."""
        return self._retrieve(templates, client, False, accept)

    def remove_event(self, templates: Any, *, client: Client | None = None,
                     accept: Accept | None = None) -> Tuple | None:
        """removeEvent: as getEvent, but the tuple is taken: "no others may retrieve it
        after this call returns"."""
        return self._retrieve(templates, client, True, accept)

    def wait_for_event(self, templates: Any, timeout: float | None = None, *,
                       client: Client | None = None, cancel: Cancel | None = None,
                       accept: Accept | None = None) -> Tuple | None:
        """waitForEvent: as getEvent, or else the first matching event to arrive within
        ``timeout`` seconds (None: MAX_WAIT; 0: no wait), "both returned to the requester
        and placed into the Event Heap". None when the wait ends without one."""
        return self._wait(templates, timeout, client, cancel, False, accept)

    def wait_to_remove_event(self, templates: Any, timeout: float | None = None, *,
                             client: Client | None = None, cancel: Cancel | None = None,
                             accept: Accept | None = None) -> Tuple | None:
        """waitToRemoveEvent: as removeEvent, or else the first matching event to arrive,
        which "will not be placed into the Event Heap" (the channel's consumers still
        receive it: it was accepted)."""
        return self._wait(templates, timeout, client, cancel, True, accept)

    def _wait(self, templates: Any, timeout: float | None, client: Client | None,
              cancel: Cancel | None, remove: bool, accept: Accept | None) -> Tuple | None:
        compiled = compile_templates(templates)
        seconds = wait_seconds(timeout)
        with self._lock:
            self._begin(client)
            if cancel is not None and cancel.cancelled:
                return None  # its caller is gone: nothing is taken, nothing received
            found = self._take(compiled, client, remove, self._sweep(), accept)
            if found is not None or seconds == 0:
                return found
            if len(self._waiters) >= MAX_WAITERS:
                raise limit_exceeded(f"{MAX_WAITERS} calls are waiting on this tuple space",
                                     MAX_WAITERS)
            waiter = Waiter(compiled, client, remove, accept)
            self._waiters.append(waiter)
            if client is not None:
                client.waiting += 1
            self._changed.notify_all()
        end = functools.partial(self._end_waiter, waiter)
        timer = self._clock.call_later(seconds, end)
        if timer.cancelled:  # the clock was closed: the service has stopped
            self._end_waiter(waiter, gone(f"the service of channel {self.channel_id}"))
        attached = cancel is not None and cancel.attach(end)
        try:
            if cancel is not None and not attached:
                end()  # cancelled meanwhile
            waiter.done.wait(seconds + WAIT_GRACE)
        finally:
            timer.cancel()
            if attached:
                cancel.detach(end)  # type: ignore[union-attr]
            self._end_waiter(waiter)
            if client is not None:
                with self._lock:
                    client.waiting -= 1
                    client.heard = self._clock.now()
        # The timer holds the waiter until it is due: not the tuple (nor its receipt).
        live, receipt, waiter.live, waiter.receipt = waiter.live, waiter.receipt, None, None
        if waiter.error is not None:
            raise waiter.error
        if live is None:
            return None
        found = live.as_tuple((client, receipt, remove))
        if cancel is not None and cancel.cancelled:
            self.give_back(found)  # its caller went as it was found: nothing is taken
            return None
        return found

    def _end_waiter(self, waiter: Waiter, error: Exception | None = None) -> None:
        """End ``waiter`` without a tuple, unless it has ended already."""
        with self._lock:
            if waiter.done.is_set():
                return
            self._waiters.remove(waiter)
            waiter.end(None, error)
            self._changed.notify_all()

    def wait_for_waiters(self, count: int, timeout: float) -> bool:
        """Block until ``count`` calls are waiting (for tests and tools); False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self._waiters) == count, timeout)

    @property
    def waiting(self) -> int:
        """Calls waiting now."""
        with self._lock:
            return len(self._waiters)

    def snoop_events(self, templates: Any, max_results: int | None = None) -> list[Tuple]:
        """snoopEvents: copies of the live tuples one of ``templates`` matches, oldest
        first, at most ``max_results`` (None: MAX_RESULTS); "Sequencing is ignored"."""
        compiled = compile_templates(templates)
        limit = max_results_of(max_results)
        with self._lock:
            self._begin()
            now = self._sweep()
            lives = Search(self._table, compiled, now, self._pauser(None)).every(limit)
            return [live.as_tuple() for live in lives]

    def get_all(self, max_results: int | None = None) -> list[Tuple]:
        """getAll: copies of the live tuples, oldest first, at most ``max_results``."""
        limit = max_results_of(max_results)
        found: list[Tuple] = []
        with self._lock:
            self._begin()
            now = self._sweep()
            for live in self._table.all.lives():
                if len(found) >= limit:
                    break
                if live.expires > now:
                    found.append(live.as_tuple())
        return found

    # -- notification streams ------------------------------------------------------------------
    def register_for_events(self, templates: Any, consumer: Any, *,
                            client: Client | None = None) -> int:
        """registerForEvents: each event the channel accepts from now on that one of
        ``templates`` matches is pushed to ``consumer`` (streams.py); the stream's id.
        A client's stream is its own: only it deregisters it."""
        texts = texts_of(templates)
        self._check_client(client)
        return streams.register(self._channel, texts, consumer, client.source if client else None)

    def register_for_all(self, consumer: Any, *, client: Client | None = None) -> int:
        """registerForAll: each event the channel accepts from now on, to ``consumer``."""
        self._check_client(client)
        return streams.register(self._channel, None, consumer, client.source if client else None)

    def deregister(self, stream: int, *, client: Client | None = None) -> bool:
        """deregister: stream ``stream`` ends; False if there is none (of this client's,
        or anonymous ones for an anonymous call)."""
        self._check_client(client)
        return streams.deregister(self._channel, stream, client.source if client else None)

    # -- deleteEvent, clear ----------------------------------------------------------------------
    def delete_event(self, tuple_or_id: Any) -> bool:
        """deleteEvent: the live tuple of this id (or this :class:`Tuple`'s) goes; False
        if there is none ("An internally set ID is used by the server")."""
        tuple_id = getattr(tuple_or_id, "id", tuple_or_id)
        if isinstance(tuple_id, bool) or not isinstance(tuple_id, int):
            raise bad_param(f"a tuple id is an integer, not {tuple_id!r:.100}")
        with self._lock:
            self._begin()
            self._sweep()
            live = self._table.by_id.get(tuple_id)
            if live is None:
                return False
            self._table.drop(live)
            return True

    def clear(self) -> int:
        """clear: every live tuple goes; how many."""
        with self._lock:
            self._begin()
            return self._table.clear()

    # -- the end --------------------------------------------------------------------------------
    def close(self) -> None:
        """The channel is gone: waiters end with OBJECT_NOT_EXIST, tuples and clients go,
        and every later call is OBJECT_NOT_EXIST."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            waiters, self._waiters = self._waiters, []
            for waiter in waiters:
                waiter.end(None, gone(f"the tuple space of channel {self._channel.channel_id}"))
            clients, self._clients = list(self._clients.values()), OrderedDict()
            for client in clients:
                self._retire(client)
            self._table.clear()
            self._changed.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed

    def give_back(self, found: Tuple) -> None:
        """Undo a tuple's retrieval whose caller is gone (corba.py): its client has not
        received it, and, if it was taken, it is live again at its place, under its id
        and sequencing -- or first goes to a waiter that wants it -- unless it has
        expired, is live, or the space is full."""
        live = found._live
        if not isinstance(live, Live):
            raise bad_param(f"not a tuple this space handed out: {found!r:.100}")
        client, receipt, taken = found._receipt or (None, None, True)
        with self._lock:
            if self._closed:
                return
            if client is not None and receipt is not None:
                client.seen.unnote(receipt)
            if not taken or live.id in self._table.by_id or live.expires <= self._clock.now():
                return
            placeable = self._placeable(live)
            if self._waiters and self._offer(live, placeable):
                return
            if not placeable:
                self.refused += 1
                return
            self._make_room(live.size)
            self._table.restore(live)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            self._sweep()
            return {**self._table.stats(), "waiting": len(self._waiters),
                    "clients": len(self._clients), "refused": self.refused,
                    "failed": self.failed, "expired": self.expired, "dropped": self.dropped,
                    "max_tuples": self.max_tuples, "max_bytes": self.max_bytes}

    def __repr__(self) -> str:
        return f"<TupleSpace of channel {self._channel.channel_id}>"

