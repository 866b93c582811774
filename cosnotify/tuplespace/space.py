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
removeEvent calls never take the same tuple. Retrieval is narrowed by the
index (index.py) and decided by the EVENTHEAP grammar's compiled matchers,
oldest tuple first: the seed does not say which of several matching events
getEvent and removeEvent return ("A wire bundle with exactly one event that
matches one or more of the events passed as templates"), and the oldest is
the one a queue-like use of removeEvent expects. Expired tuples are swept
from a heap at the start of each operation and on each accepted event.
Waits are waits.py's; clients and sequencing clients.py's and
sequencing.py's; notification streams streams.py's. A destroyed channel
ends its space: waiters are woken with OBJECT_NOT_EXIST, and so are later
calls.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import logging
import math
import threading
from typing import Any

from omniORB import CORBA

from cosnotify.channel.event import apply_qos, from_structured
from cosnotify.store.interface import StoreError
from cosnotify.tuplespace import streams
from cosnotify.tuplespace.clients import Client, SourceState, check_info
from cosnotify.tuplespace.events import check_event, stamp
from cosnotify.tuplespace.fields import read_event
from cosnotify.tuplespace.ids import IdAllocator
from cosnotify.tuplespace.index import TupleTable
from cosnotify.tuplespace.limits import (
    DEFAULT_TIME_TO_LIVE,
    MAX_CLIENTS,
    MAX_RESULTS,
    MAX_TUPLES,
    MAX_WAIT,
    MAX_WAITERS,
    WAIT_GRACE,
)
from cosnotify.tuplespace.records import (
    ClientInfo,
    Live,
    Tuple,
    bad_param,
    gone,
    invalid_event,
    limit_exceeded,
)
from cosnotify.tuplespace.templates import CompiledTemplate, compile_templates, texts_of
from cosnotify.tuplespace.waits import Cancel, Waiter

__all__ = ["TupleSpace"]

log = logging.getLogger("cosnotify.tuplespace")

_NO_EXPLICIT: frozenset[str] = frozenset()


class TupleSpace:
    """The Event Heap's server operations on one channel (module docstring)."""

    def __init__(self, channel: Any, max_tuples: int = MAX_TUPLES) -> None:
        self._channel = channel
        self._service = channel._service
        self._clock = self._service.clock
        self._ids = IdAllocator.of(self._service)
        self._lock = threading.Lock()
        #: Notified when the waiters change (``wait_for_waiters``).
        self._changed = threading.Condition(self._lock)
        self._table = TupleTable()
        self._waiters: list[Waiter] = []
        self._clients: dict[str, Client] = {}
        self._reserved = 0  # put_event calls between their check and their tuple
        self._local = threading.local()  # the put_event in progress in this thread
        self._closed = False
        #: Live tuples at most (a put beyond it is LimitExceeded).
        self.max_tuples = max_tuples
        #: Events not kept: the space was full (``refused``), or no id could be had
        #: from the store (``failed``); tuples that expired (``expired``).
        self.refused = self.failed = self.expired = 0

    @classmethod
    def of(cls, channel: Any, max_tuples: int | None = None) -> TupleSpace:
        """``channel``'s space, made now if it has none (OBJECT_NOT_EXIST if the
        channel was destroyed). ``max_tuples`` applies when it is made."""
        space: TupleSpace | None = channel._tuplespace
        if space is not None and not space._closed:
            return space
        with channel._lock:
            channel._check_alive()
            space = channel._tuplespace
            if space is None or space._closed:
                space = channel._tuplespace = cls(channel, max_tuples or MAX_TUPLES)
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
        own, own_id = None, 0
        if put is not None:
            own = next((e for e in events if e is put[0]), None)
            if own is not None:
                own_id = put[1]
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
        now = self._clock.now()
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
            lives.append((Live(tuple_id, event, event.arrival, expires), event is own))
        with self._lock:
            if own is not None:
                self._reserved -= 1
            if self._closed:
                return
            self._sweep(now)
            table = self._table
            for live, mine in lives:
                if live.expires <= now:
                    continue
                read_event(live)
                table.prepare(live)
                if self._waiters and self._offer(live):
                    continue
                if not mine and len(table) + self._reserved >= self.max_tuples:
                    self.refused += 1
                    continue
                table.add(live)

    def _offer(self, live: Live) -> bool:
        """Hand ``live`` to the waiters that want it, in the order they began; True if a
        waitToRemoveEvent waiter took it (it is not kept). The lock is held."""
        for waiter in list(self._waiters):
            if waiter.wants(live):
                self._waiters.remove(waiter)
                if waiter.client is not None:
                    waiter.client.seen.note(live)
                waiter.end(live)
                self._changed.notify_all()
                if waiter.remove:
                    return True
        return False

    def _sweep(self, now: float | None = None) -> None:
        self.expired += self._table.sweep(self._clock.now() if now is None else now)

    # -- checks ------------------------------------------------------------------------------
    def _check_open(self, client: Client | None = None) -> None:
        """The lock is held."""
        if self._closed:
            raise gone(f"the tuple space of channel {self._channel.channel_id}")
        if client is not None and (client.space is not self or not client.active):
            raise gone(f"client {client.source!r}")

    def _check_client(self, client: Client) -> None:
        with self._lock:
            self._check_open(client)

    # -- putEvent ----------------------------------------------------------------------------
    def put_event(self, event: Any, *, client: Client | None = None) -> int:
        """putEvent: supply ``event`` (a StructuredEvent) into the channel, and keep it as
        a tuple; its id. InvalidEvent for an event the Event Heap does not take,
        LimitExceeded when the space is full: then nothing is supplied."""
        if client is not None:
            self._check_client(client)
            event = stamp(event, client.stamped_fields(), client.session_id,
                          client.next_number())
        event = check_event(event)
        channel = self._channel
        with self._lock:
            self._check_open(client)
            self._sweep()
            if len(self._table) + self._reserved >= self.max_tuples:
                raise limit_exceeded(f"the tuple space holds its limit of {self.max_tuples} "
                                     "live tuples", self.max_tuples)
            self._reserved += 1
        taken = False
        try:
            try:
                tuple_id = self._ids.take(1)[0]
            except StoreError as exc:
                raise CORBA.NO_RESOURCES(0, CORBA.COMPLETED_NO,
                                         f"no tuple id from the store: {exc}") from None
            envelope = from_structured(event, self._clock.now())
            try:
                apply_qos(envelope, channel._qos, _NO_EXPLICIT, channel._event_log is not None)
            except CORBA.BAD_QOS as exc:
                raise invalid_event(f"its header QoS: {getattr(exc, '_info', exc)}") from None
            self._local.put = (envelope, tuple_id)
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
        return tuple_id

    # -- retrieval ---------------------------------------------------------------------------
    def _find(self, templates: tuple[CompiledTemplate, ...], client: Client | None) -> Live | None:
        """The oldest live tuple one of ``templates`` matches, fresh for ``client``."""
        best: Live | None = None
        seen = client.seen if client is not None else None
        for template in templates:
            for live in self._table.candidates(template):
                if best is not None and live.seq >= best.seq:
                    break
                if template.matches(live) and (seen is None or seen.fresh(live)):
                    best = live
                    break
        return best

    def _retrieve(self, templates: Any, client: Client | None, remove: bool) -> Tuple | None:
        compiled = compile_templates(templates)
        with self._lock:
            self._check_open(client)
            self._sweep()
            live = self._take(compiled, client, remove)
            return live.as_tuple() if live is not None else None

    def _take(self, compiled: tuple[CompiledTemplate, ...], client: Client | None,
              remove: bool) -> Live | None:
        """The lock is held."""
        live = self._find(compiled, client)
        if live is not None:
            if client is not None:
                client.seen.note(live)
            if remove:
                self._table.drop(live)
        return live

    def get_event(self, templates: Any, *, client: Client | None = None) -> Tuple | None:
        """getEvent: the oldest live tuple one of ``templates`` matches (it stays), or
        None; for a client, only one it has not received."""
        return self._retrieve(templates, client, remove=False)

    def remove_event(self, templates: Any, *, client: Client | None = None) -> Tuple | None:
        """removeEvent: as getEvent, but the tuple is taken: "no others may retrieve it
        after this call returns"."""
        return self._retrieve(templates, client, remove=True)

    def wait_for_event(self, templates: Any, timeout: float | None = None, *,
                       client: Client | None = None, cancel: Cancel | None = None
                       ) -> Tuple | None:
        """waitForEvent: as getEvent, or else the first matching event to arrive within
        ``timeout`` seconds (None: MAX_WAIT; 0: no wait), "both returned to the requester
        and placed into the Event Heap". None when the wait ends without one."""
        return self._wait(templates, timeout, client, cancel, remove=False)

    def wait_to_remove_event(self, templates: Any, timeout: float | None = None, *,
                             client: Client | None = None, cancel: Cancel | None = None
                             ) -> Tuple | None:
        """waitToRemoveEvent: as removeEvent, or else the first matching event to arrive,
        which "will not be placed into the Event Heap" (the channel's consumers still
        receive it: it was accepted)."""
        return self._wait(templates, timeout, client, cancel, remove=True)

    def _wait(self, templates: Any, timeout: float | None, client: Client | None,
              cancel: Cancel | None, remove: bool) -> Tuple | None:
        compiled = compile_templates(templates)
        seconds = _wait_seconds(timeout)
        with self._lock:
            self._check_open(client)
            self._sweep()
            live = self._take(compiled, client, remove)
            if live is not None:
                return live.as_tuple()
            if seconds == 0 or (cancel is not None and cancel.cancelled):
                return None
            if len(self._waiters) >= MAX_WAITERS:
                raise limit_exceeded(f"{MAX_WAITERS} calls are waiting on this tuple space",
                                     MAX_WAITERS)
            waiter = Waiter(compiled, client, remove)
            self._waiters.append(waiter)
            self._changed.notify_all()
        end = functools.partial(self._end_waiter, waiter)
        timer = self._clock.call_later(seconds, end)
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
        if waiter.error is not None:
            raise waiter.error
        return waiter.live.as_tuple() if waiter.live is not None else None

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
        limit = _max_results(max_results)
        with self._lock:
            self._check_open()
            self._sweep()
            matches = [_matching(self._table.candidates(t), t) for t in compiled]
            merged = matches[0] if len(matches) == 1 else _unique(
                heapq.merge(*matches, key=lambda live: live.seq))
            return [live.as_tuple() for live in itertools.islice(merged, limit)]

    def get_all(self, max_results: int | None = None) -> list[Tuple]:
        """getAll: copies of the live tuples, oldest first, at most ``max_results``."""
        limit = _max_results(max_results)
        with self._lock:
            self._check_open()
            self._sweep()
            return [live.as_tuple()
                    for live in itertools.islice(self._table.by_seq.values(), limit)]

    # -- notification streams ------------------------------------------------------------------
    def register_for_events(self, templates: Any, consumer: Any) -> int:
        """registerForEvents: each event the channel accepts from now on that one of
        ``templates`` matches is pushed to ``consumer`` (streams.py); the stream's id."""
        texts = texts_of(templates)
        self._check_usable()
        return streams.register(self._channel, texts, consumer)

    def register_for_all(self, consumer: Any) -> int:
        """registerForAll: each event the channel accepts from now on, to ``consumer``."""
        self._check_usable()
        return streams.register(self._channel, None, consumer)

    def deregister(self, stream: int) -> bool:
        """deregister: stream ``stream`` ends; False if there is none."""
        self._check_usable()
        return streams.deregister(self._channel, stream)

    def _check_usable(self) -> None:
        with self._lock:
            self._check_open()

    # -- deleteEvent, clear ----------------------------------------------------------------------
    def delete_event(self, tuple_or_id: Any) -> bool:
        """deleteEvent: the live tuple of this id (or this :class:`Tuple`'s) goes; False
        if there is none ("An internally set ID is used by the server")."""
        tuple_id = getattr(tuple_or_id, "id", tuple_or_id)
        if isinstance(tuple_id, bool) or not isinstance(tuple_id, int):
            raise bad_param(f"a tuple id is an integer, not {tuple_id!r:.100}")
        with self._lock:
            self._check_open()
            self._sweep()
            live = self._table.by_id.get(tuple_id)
            if live is None:
                return False
            self._table.drop(live)
            return True

    def clear(self) -> int:
        """clear: every live tuple goes; how many."""
        with self._lock:
            self._check_open()
            return len(self._table.clear())

    # -- clients ------------------------------------------------------------------------------
    def connect(self, source: str | ClientInfo, application: str = "", device: str = "",
                person: str = "", group: str = "") -> Client:
        """A client of this space with these names (clients.py): a client already
        connected with this Source is replaced, and the new one carries on its state."""
        info = source if isinstance(source, ClientInfo) else ClientInfo(
            source, application, device, person, group)
        check_info(info)
        with self._lock:
            self._check_open()
            old = self._clients.get(info.source)
            if old is None and len(self._clients) >= MAX_CLIENTS:
                raise limit_exceeded(f"{MAX_CLIENTS} clients are connected to this tuple "
                                     "space", MAX_CLIENTS)
            client = Client(self, info, old._state if old is not None else SourceState())
            self._clients[info.source] = client
            if old is not None:
                self._retire(old)
        return client

    def _disconnect(self, client: Client) -> None:
        with self._lock:
            if self._clients.get(client.source) is client:
                del self._clients[client.source]
            self._retire(client)

    def _retire(self, client: Client) -> None:
        """``client`` is no longer active: its waits end (the lock is held)."""
        client.active = False
        for waiter in [w for w in self._waiters if w.client is client]:
            self._waiters.remove(waiter)
            waiter.end(None, gone(f"client {client.source!r}"))
        self._changed.notify_all()

    @property
    def clients(self) -> list[str]:
        """The Sources connected now."""
        with self._lock:
            return sorted(self._clients)

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
            for client in self._clients.values():
                client.active = False
            self._clients.clear()
            self._table.clear()
            self._changed.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed

    def give_back(self, found: Tuple) -> None:
        """Put back a tuple a wait took whose caller is gone (corba.py): it is live again,
        as the newest, under its id and sequencing, unless it has expired or is live."""
        live = found._live
        if not isinstance(live, Live):
            raise bad_param(f"not a tuple this space handed out: {found!r:.100}")
        with self._lock:
            if self._closed or live.id in self._table.by_id or live.expires <= self._clock.now():
                return
            self._table.prepare(live, live.seq_key)
            self._table.add(live)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            self._sweep()
            return {**self._table.stats(), "waiting": len(self._waiters),
                    "clients": len(self._clients), "refused": self.refused,
                    "failed": self.failed, "expired": self.expired,
                    "max_tuples": self.max_tuples}

    def __repr__(self) -> str:
        return f"<TupleSpace of channel {self._channel.channel_id}>"


def _matching(candidates: Any, template: CompiledTemplate) -> Any:
    return (live for live in candidates if template.matches(live))


def _unique(lives: Any) -> Any:
    last = None
    for live in lives:
        if live is not last:
            yield live
        last = live


def _wait_seconds(timeout: float | None) -> float:
    if timeout is None:
        return MAX_WAIT
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
            or math.isnan(timeout) or timeout < 0:
        raise bad_param(f"a wait's timeout is a number of seconds >= 0, not {timeout!r:.100}")
    if timeout > MAX_WAIT:
        raise limit_exceeded(f"a wait lasts at most {MAX_WAIT:g} s (MAX_WAIT), not "
                             f"{timeout:g} s", int(MAX_WAIT * 1000))
    return float(timeout)


def _max_results(max_results: int | None) -> int:
    if max_results is None or max_results == 0:
        return MAX_RESULTS
    if isinstance(max_results, bool) or not isinstance(max_results, int) or max_results < 0:
        raise bad_param(f"max_results is an integer >= 0, not {max_results!r:.100}")
    if max_results > MAX_RESULTS:
        raise limit_exceeded(f"at most {MAX_RESULTS} tuples a call (MAX_RESULTS), not "
                             f"{max_results}", MAX_RESULTS)
    return max_results
