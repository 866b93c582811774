"""What the sessions of one Event Heap front end share: its limits, its errors, the server.

Strategy: session.py runs one connection; this module holds what outlives a
connection or spans them -- the bounds of docs/protocols.md, "Event Heap"
("Limits"), :class:`RequestError` (a refusal the session answers with an
error bundle), :class:`EventHeapServer` (the channel, its tuple space, the
wait pool and the count of Sources its connections hold), and
:func:`merge_sequence_info`, the bounded merge of a request's SequenceInfo
into the server-side record of its Source (seed, "Event Heap Client
Responsibilities"; cosnotify/tuplespace/sequencing.py).
"""

from __future__ import annotations

import concurrent.futures
import itertools
import logging
import threading
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Final

from cosnotify.protocols.eventheap.codec import EventHeapWireError, WireBundle
from cosnotify.protocols.eventheap.mapping import MappingError
from cosnotify.protocols.listener import Connection, Limits
from cosnotify.tuplespace import Client, TupleSpace
from cosnotify.tuplespace.limits import MAX_NAME_LENGTH

if TYPE_CHECKING:
    from cosnotify.protocols.eventheap.session import EventHeapSession

__all__ = [
    "DEREGISTER_EVENT",
    "MAX_CLIENTS_PER_CONNECTION",
    "MAX_CLIENTS_PER_FRONT_END",
    "MAX_MERGED_NAME",
    "MAX_MERGED_PAIRS",
    "MAX_REASON",
    "MAX_SEQUENCE_SOURCES",
    "MAX_STREAMS_PER_CONNECTION",
    "MAX_WAITS",
    "MAX_WAITS_PER_CONNECTION",
    "EventHeapServer",
    "RequestError",
    "merge_sequence_info",
    "refusal",
]

log = logging.getLogger("cosnotify.protocols.eventheap")

#: Waits (waitForEvent, waitToRemoveEvent) in progress on one front end: its wait pool's
#: threads. One more is answered ``ERROR LimitExceeded``.
MAX_WAITS: Final = 256
#: Waits in progress on one connection.
MAX_WAITS_PER_CONNECTION: Final = 32
#: Notification streams one connection may hold.
MAX_STREAMS_PER_CONNECTION: Final = 64
#: Sources (clients of the space, for sequencing) one connection may act for.
MAX_CLIENTS_PER_CONNECTION: Final = 16
#: Sources (clients of the space) the front end's connections hold at once, counting those
#: in the space's CLIENT_GRACE after their connection closed: the space's MAX_CLIENTS
#: (10,000) is shared with its CORBA clients, and each holds its sequencing record.
MAX_CLIENTS_PER_FRONT_END: Final = 1024
#: SourceInfo objects one request's SequenceInfo may carry; more is ``ERROR LimitExceeded``.
MAX_SEQUENCE_SOURCES: Final = 1024
#: The longest EventType or source a merged SourceInfo may name; a longer one is ignored.
MAX_MERGED_NAME: Final = 256
#: (EventType, source) pairs a client's SequenceInfo may add to its Source's record; past
#: them only pairs already there are updated (the rest is ignored).
MAX_MERGED_PAIRS: Final = 256
#: A SequenceNum below every Int: ``Seen.fresh`` of it asks whether a pair's session is
#: recorded at all.
_BELOW: Final = -(2**63)
#: The longest reason an error bundle carries (its return tag is a UTF-8 String).
MAX_REASON: Final = 1000
#: deregister's event (Table 16).
DEREGISTER_EVENT: Final = "EHS_DeregisterEvent"


class RequestError(Exception):
    """A request refused: ``name`` and ``reason`` go into the error bundle."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


def refusal(exc: BaseException) -> RequestError:
    """The error bundle's name and reason of what the space or the mapping raised."""
    if isinstance(exc, RequestError):
        return exc
    if isinstance(exc, MappingError):
        return RequestError(exc.kind, exc.reason)
    if isinstance(exc, EventHeapWireError):
        return RequestError("Unencodable", exc.detail)
    repo = getattr(exc, "_NP_RepositoryId", "") or ""
    name = repo.rsplit("/", 1)[-1].split(":", 1)[0] or type(exc).__name__
    reason = getattr(exc, "reason", None) or getattr(exc, "_info", None) or str(exc)
    return RequestError(name, str(reason))


class _Received:
    """What ``Seen.note`` reads of a tuple: a SourceInfo the client sent, as received."""

    __slots__ = ("seq_key", "type_name")

    def __init__(self, type_name: str, source: str, session: int, number: int) -> None:
        self.type_name = type_name
        self.seq_key = (source, session, number)


class EventHeapServer:
    """What the sessions of one front end share: the channel, its space, the wait pool."""

    def __init__(self, context: Any, channel: Any, limits: Limits) -> None:
        self.context = context
        self.loop = context.loop
        self.channel = channel
        self.space: TupleSpace = TupleSpace.of(channel)
        self.limits = limits
        self.pool = concurrent.futures.ThreadPoolExecutor(MAX_WAITS, "eventheap-wait")
        self.waits = 0
        self.sessions: set[EventHeapSession] = set()
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        #: Active clients of the space its sessions connected (MAX_CLIENTS_PER_FRONT_END).
        self.clients = 0
        self._count_lock = threading.Lock()
        #: Clients whose connection closed (in the space's CLIENT_GRACE), oldest first,
        #: each with its count of calls then: at the limit the oldest still silent goes.
        #: Guarded by _count_lock; an entry goes when its client ends.
        self._lingering: OrderedDict[Client, int] = OrderedDict()
        #: Clients ended early for a new Source at the limit.
        self.evicted = 0
        #: Stored events the wire cannot carry (EventHeapSession._encodable), by identity
        #: and guarded by _count_lock: each is encoded once, however often retrievals
        #: pass it over, and forgotten with the event.
        self.unencodable: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()

    def connect(self, source: str) -> Client:
        """``space.connect(source)``, counted until the client ends (its ``on_end``). At
        MAX_CLIENTS_PER_FRONT_END a client only in its grace after its connection
        closed (no call since, no wait) is ended for the new one, the oldest first; with
        none, ``ERROR LimitExceeded`` (review 98: Sources a closed connection named in
        templates held the limit for a minute, so one peer could lock out new ones)."""
        # Connecting a Source held already replaces its client: no more are held. (The
        # space's lock is not taken under _count_lock: ``ended`` takes them the other way.)
        full = self.clients >= MAX_CLIENTS_PER_FRONT_END
        held = full and source in self.space.clients
        if full and not held and 0 < len(source) <= MAX_NAME_LENGTH:  # else refused anyway
            self._evict_lingering()
        with self._count_lock:
            if self.clients >= MAX_CLIENTS_PER_FRONT_END and not held:
                raise RequestError("LimitExceeded", f"{MAX_CLIENTS_PER_FRONT_END} Sources are "
                                   "held on this front end (MAX_CLIENTS_PER_FRONT_END)")
            self.clients += 1
        try:
            client = self.space.connect(source)
        except BaseException:
            with self._count_lock:
                self.clients -= 1
            raise
        once = threading.Lock()

        def ended() -> None:  # under the space's lock: must not block or call it
            if once.acquire(blocking=False):
                with self._count_lock:
                    self.clients -= 1
                    self._lingering.pop(client, None)

        client.on_end.append(ended)
        if not client.active:  # ended before the callback was in place
            ended()
        return client

    def lingering(self, client: Client) -> None:
        """``client``'s connection closed: it is told (``connection_lost``), and it may be
        ended early at the limit (:meth:`connect`). Kept until it ends (``ended``), so
        at most one entry per client counted."""
        with self._count_lock:
            if client.active:
                self._lingering[client] = client.calls
                self._lingering.move_to_end(client)
        client.connection_lost()

    def _evict_lingering(self) -> None:
        """End the oldest lingering client still silent since its connection closed, if
        any: the check and the end are one step under the space's lock
        (``end_if_silent``; not under _count_lock, which ``ended`` takes inside it)."""
        while True:
            with self._count_lock:
                if not self._lingering:
                    return
                client, calls = self._lingering.popitem(last=False)
            if self.space.end_if_silent(client, calls):
                with self._count_lock:
                    self.evicted += 1
                log.info("eventheap: %r ended early: %d Sources are held on this front "
                         "end (MAX_CLIENTS_PER_FRONT_END)", client, MAX_CLIENTS_PER_FRONT_END)
                return

    def session(self, connection: Connection) -> EventHeapSession:
        from cosnotify.protocols.eventheap.session import EventHeapSession

        return EventHeapSession(self, connection, next(self._numbers))

    def close(self) -> None:
        """End every wait (their clients are gone) and the wait pool."""
        for session in list(self.sessions):
            session.cancel.cancel()
        self.pool.shutdown(wait=False, cancel_futures=True)


def merge_sequence_info(space: TupleSpace, client: Client, bundle: WireBundle) -> None:
    """Merge the bundle's SequenceInfo -- each source's newest event of a type, as the
    client received it -- into ``client``'s record (in the executor).

    Bounded, since it is kept server-side for the Source (and outlives the
    connection): at most MAX_SEQUENCE_SOURCES entries a request (more is
    LimitExceeded), names of at most MAX_MERGED_NAME characters, and new pairs only
    while the record holds fewer than MAX_MERGED_PAIRS; what is ignored can only
    let the client be offered an event again, never hide one."""
    infos = bundle.sequence_info
    if not infos:
        return
    count = sum(len(info.sources) for info in infos)
    if count > MAX_SEQUENCE_SOURCES:
        raise RequestError("LimitExceeded", f"{count} SourceInfo objects in one "
                           f"request: at most {MAX_SEQUENCE_SOURCES} "
                           "(MAX_SEQUENCE_SOURCES)")
    # The space's lock guards a client's Seen (sequencing.py); Seen.note only reads the
    # entry's ``type_name`` and ``seq_key`` and calls nothing back, so holding it is safe.
    with space._lock:
        seen = client.seen
        for info in infos:
            if len(info.event_type) > MAX_MERGED_NAME:
                continue
            for src in info.sources:
                if len(src.source) > MAX_MERGED_NAME:
                    continue
                probe: Any = _Received(info.event_type, src.source, src.session_id,
                                       _BELOW)
                if len(seen) >= MAX_MERGED_PAIRS and seen.fresh(probe):
                    continue  # its pair (or session) is not in the record: not added
                seen.note(_Received(info.event_type, src.source,  # type: ignore[arg-type]
                                    src.session_id, src.sequence_num))
