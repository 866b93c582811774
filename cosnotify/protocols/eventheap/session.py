"""An Event Heap connection: the seed's server operations on a channel's tuple space.

Strategy: a thin layer (what connections share -- the limits, the wait pool,
the bounded SequenceInfo merge -- is server.py). :class:`EventHeapSession` reads bytes from its
:class:`~cosnotify.protocols.listener.Connection`, feeds the sans-IO
:class:`~cosnotify.protocols.eventheap.codec.BundleReader`, and runs each
bundle's operation (the seed's "Event Heap Server Operations", picked by the
bundle's destination tag from :data:`OPERATIONS`, a table) on the channel's
:class:`~cosnotify.tuplespace.TupleSpace` through ``await loop.call(...)``,
so the loop never blocks on the core. The mapping of tuples to events and
templates, the encoding of replies (up to MAX_RESULTS tuples for getAll),
and the parsing of a big bundle's tuples (past DECODE_INLINE bytes) run in
that executor call too: the loop serves every front end, and a client's
large request must not hold it. Replies go to the request's return tag
("The return tag field from the request that caused this response to be
generated", Table 4).

- **Handshake** (seed, "Initial Hand-Shake"): the server sends "EHWPv1" and
  reads the client's version; "If the versions are different ---Exit": the
  connection is closed.
- **Sequencing** ("Sequence Info Needed? Yes": getEvent, removeEvent,
  waitForEvent, waitToRemoveEvent): the space keeps, per client Source, the
  events it has returned (cosnotify/tuplespace/sequencing.py); the bundle's
  SequenceInfo is merged into it before the call, so an event is returned
  only when it is above both what the client says it has seen and what the
  server gave it. The client's Source is the template's Target template
  value (Table 1: "Set to Source of EventHeap object on template
  submission"), else one name per connection.
- **Waits** (waitForEvent, waitToRemoveEvent) block in the space; each runs
  on a thread of the front end's own wait pool (bounded: MAX_WAITS, and
  MAX_WAITS_PER_CONNECTION), as a task, so the connection goes on serving
  other requests ("clients who can handle multiple simultaneous outstanding
  requests"). The seed's waits have no timeout: a wait is renewed each
  MAX_WAIT until an event comes or the client goes; the client going cancels
  it (``Cancel``), and an event found as it went is given back.
- **Notification streams** (registerForEvents, registerForAll) are the
  space's streams with a callback that encodes each event and
  ``connection.send``-s it (thread-safe, never blocks) with the request's
  return tag as destination and the stream id as return tag ("Empty, or may
  contain back channel information"). deregister names the stream by its
  "StreamID" field (Table 16), or else by the registration's return tag; a
  connection ends only its own streams, and all of them when it closes.
- **Idleness.** The seed has no keep-alive, and a client with a stream or a
  wait outstanding is listening, not idle: ``Limits.idle_timeout`` closes
  only a connection with neither.
- **Errors.** The seed has no error reply. A request the space or the
  mapping refuses is answered, when it has a return tag, as the seed
  answers an unknown opcode: a bundle to the return tag whose return tag is
  the back-channel text ``ERROR <Name>: <reason>`` (<Name>: InvalidEvent,
  InvalidTemplate, LimitExceeded, BAD_PARAM...). Bytes that are not a bundle
  get such a bundle without a destination, and the connection is closed:
  the stream has no frame boundary to resume at.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Final

from omniORB import CORBA

from cosnotify.protocols.eventheap.codec import (
    PROTOCOL_VERSION,
    BundleReader,
    EventHeapWireError,
    Tuple,
    Undecoded,
    WireBundle,
    encode_bundle,
    encode_bundle_of,
    encode_tuple,
    encode_version,
)
from cosnotify.protocols.eventheap.mapping import MappingError, event_of, template_of, tuple_of
from cosnotify.protocols.eventheap.server import (
    DEREGISTER_EVENT,
    MAX_CLIENTS_PER_CONNECTION,
    MAX_CLIENTS_PER_FRONT_END,
    MAX_MERGED_NAME,
    MAX_MERGED_PAIRS,
    MAX_REASON,
    MAX_SEQUENCE_SOURCES,
    MAX_STREAMS_PER_CONNECTION,
    MAX_WAITS,
    MAX_WAITS_PER_CONNECTION,
    EventHeapServer,
    RequestError,
    merge_sequence_info,
    refusal,
)
from cosnotify.protocols.listener import Connection, ReadTimeout
from cosnotify.tuplespace import Cancel, Client
from cosnotify.tuplespace.limits import MAX_WAIT

__all__ = ["DEREGISTER_EVENT", "MAX_CLIENTS_PER_CONNECTION", "MAX_CLIENTS_PER_FRONT_END",
           "MAX_MERGED_NAME", "MAX_MERGED_PAIRS", "MAX_SEQUENCE_SOURCES",
           "MAX_STREAMS_PER_CONNECTION", "MAX_WAITS", "MAX_WAITS_PER_CONNECTION", "OPERATIONS",
           "EventHeapServer", "EventHeapSession", "RequestError"]

log = logging.getLogger("cosnotify.protocols.eventheap")

#: A bundle whose tuples are more bytes than this has them parsed in the executor, not
#: on the loop every front end shares (a smaller one is not worth the hop).
DECODE_INLINE: Final = 16 * 1024

Handler = Callable[["EventHeapSession", WireBundle], Awaitable[None]]


class EventHeapSession:
    """One connection (module docstring)."""

    def __init__(self, server: EventHeapServer, connection: Connection, number: int) -> None:
        self.server = server
        self.space = server.space
        self.connection = connection
        self.cancel = Cancel()
        self.name = f"EHWP {connection.peer[0]}:{connection.peer[1]} #{number}"
        self.clients: dict[str, Client] = {}
        #: Guards ``clients`` (the executor's and the wait pool's threads use it).
        self._clients_lock = threading.Lock()
        #: Stream id -> the return tag it was registered with.
        self.streams: dict[int, str | None] = {}
        self.waits = 0
        self._tasks: set[asyncio.Task[None]] = set()

    # -- the connection ------------------------------------------------------------------------
    async def run(self, connection: Connection) -> None:
        server = self.server
        server.sessions.add(self)
        connection.on_close(self._closed)
        reader = BundleReader(connection.limits.max_frame, defer=True)
        connection.send(encode_version(), frames=0)
        versioned = False  # "Read a UTF-8 String ... that is the protocol version"
        # Before the client's version, silence is a handshake not arriving (read_timeout),
        # not idleness between bundles (idle_timeout); a bundle begun must be whole by
        # its deadline, however its bytes trickle in.
        deadline: float | None = connection.frame_deadline()
        try:
            while True:
                idle = versioned and reader.pending == 0
                if idle:
                    deadline = None
                elif deadline is None:
                    deadline = connection.frame_deadline()
                try:
                    data = await connection.read_some(idle=idle, deadline=deadline)
                except ReadTimeout:
                    if idle and (self.streams or self.waits):
                        continue  # a listening client is not idle (module docstring)
                    raise
                reader.feed(data)
                while True:
                    try:
                        event = reader.next_event()
                        if isinstance(event, Undecoded):  # its tuples: off the loop if big
                            event = (await self.call(event.decode)
                                     if event.size > DECODE_INLINE else event.decode())
                    except EventHeapWireError as exc:
                        connection.counters.closed_bad += 1
                        self._send(WireBundle(None, f"ERROR {_kind(exc)}: {exc}"[:MAX_REASON]))
                        log.info("%s: closed: %s", self.name, exc)
                        return
                    if event is None:
                        break
                    deadline = None  # the next bundle's starts when it does
                    if isinstance(event, str):
                        if event != PROTOCOL_VERSION:
                            log.info("%s: speaks %r, not %r: closed", self.name, event,
                                     PROTOCOL_VERSION)
                            return
                        versioned = True
                        continue
                    connection.counters.frames_in += 1
                    await self.handle(event)
        finally:
            server.sessions.discard(self)

    def _closed(self) -> None:
        """The connection closed (the loop's thread): waits end, streams and clients go."""
        self.cancel.cancel()
        streams, self.streams = list(self.streams), {}
        with self._clients_lock:
            clients, self.clients = list(self.clients.values()), {}
        if streams or clients:
            try:
                self.server.loop.loop.run_in_executor(None, self._release, streams, clients)
            except RuntimeError:  # the server is stopping: its channels go with it
                pass

    def _release(self, streams: list[int], clients: list[Client]) -> None:
        for stream in streams:
            try:
                self.space.deregister(stream)
            except Exception as exc:  # noqa: BLE001 - the space may have ended meanwhile
                log.info("%s: stream %d not ended: %s", self.name, stream, exc)
        for client in clients:
            try:
                if client.source == self.name:
                    # The connection's own Source: no later connection can carry it on,
                    # so it goes now rather than after the space's CLIENT_GRACE.
                    client.close()
                else:
                    self.server.lingering(client)
            except Exception as exc:  # noqa: BLE001
                log.info("%s: %r not released: %s", self.name, client, exc)

    def _send(self, bundle: WireBundle) -> bool:
        return self.connection.send(encode_bundle(bundle))

    def _reply(self, request: WireBundle, tuples: tuple[Tuple, ...] | None = None) -> bool:
        """The response: to the request's return tag (Table 4), ``tuples`` or null; False
        if the connection is gone."""
        return self._send(WireBundle(request.return_tag, None, None, tuples))

    def _encodable(self, event: Any) -> bool:
        """Can the wire carry ``event``? The space's ``accept`` test for this
        connection's retrievals (in its lock): one it cannot carry (a string past 65,535
        bytes) is passed over, neither taken nor received, and the next match returned
        -- "A wire bundle with exactly one event that matches" (Tables 5-8) -- as
        snoopEvents, getAll and the streams leave it out. A refusal is remembered (by
        the event's identity, ``EventHeapServer.unencodable``)."""
        server = self.server
        with server._count_lock:
            if event in server.unencodable:
                return False
        try:
            encode_tuple(tuple_of(event))
        except (EventHeapWireError, MappingError) as exc:
            with server._count_lock:
                server.unencodable[event] = True
            log.info("%s: an event passed over: %s", self.name, exc)
            return False
        return True

    def _retrieved(self, request: WireBundle, found: Any) -> tuple[Any, bytes | None]:
        """``found`` and its reply's bytes, made off the loop (the executor or the wait
        pool); one the wire cannot carry after all is given back and refused."""
        if found is None:
            return None, None
        try:
            return found, encode_bundle(WireBundle(request.return_tag, None, None,
                                                   (self._out(found),)))
        except (EventHeapWireError, MappingError):
            self.space.give_back(found)
            raise

    async def _hand_out(self, found: Any, data: bytes) -> None:
        """Send one retrieved tuple's reply; one that cannot be sent (the client went, or
        the reply dropped it as too slow) is given back -- live again if it was taken,
        and not received by the client (``TupleSpace.give_back``): nothing is lost."""
        sent = self.connection.send(data)
        # On the loop's thread a send writes at once: a connection closed now was closed
        # by this very reply (past Limits.max_pending), which was not written.
        if not sent or self.connection.closed:
            await self.call(self.space.give_back, found)

    def _refuse(self, request: WireBundle, error: RequestError) -> None:
        log.info("%s: %s refused: %s", self.name, request.destination_tag, error)
        if request.return_tag is not None:
            text = f"ERROR {error.name}: {error.reason}"
            self._send(WireBundle(request.return_tag, text[:MAX_REASON]))

    async def handle(self, bundle: WireBundle) -> None:
        """Run one request (an unknown opcode is answered as the seed says)."""
        op = OPERATIONS.get(bundle.destination_tag or "")
        if op is None:
            # "If the return tag is set for a wire bundle request with unknown opcode in the
            # destination field, an ACK with return tag set to 'UNKNOWN' is sent. If there
            # is no return tag in the request, no response is given."
            if bundle.return_tag is not None:
                self._send(WireBundle(bundle.return_tag, "UNKNOWN"))
            return
        try:
            await op(self, bundle)
        except (CORBA.Exception, MappingError, RequestError, EventHeapWireError) as exc:
            self._refuse(bundle, refusal(exc))

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await self.server.loop.call(fn, *args)

    # -- what requests carry --------------------------------------------------------------------
    @staticmethod
    def _templates(bundle: WireBundle) -> list[Any]:
        if not bundle.tuples:
            raise RequestError("InvalidTemplate", "no template event in the request (\"The "
                               "template value fields in each included event will be used\")")
        return [template_of(t) for t in bundle.tuples]

    @staticmethod
    def _single(bundle: WireBundle, what: str) -> Tuple:
        if not bundle.tuples or len(bundle.tuples) != 1:
            count = len(bundle.tuples) if bundle.tuples else 0
            raise RequestError("BAD_PARAM", f"{what} takes a single event, not {count}")
        return bundle.tuples[0]

    def _requester(self, bundle: WireBundle) -> str:
        """The Source sequencing is kept for (module docstring)."""
        for tup in bundle.tuples or ():
            target = tup.field("Target")
            if (target is not None and target.type == "string" and target.template.is_actual
                    and isinstance(target.template.value, str) and target.template.value):
                return target.template.value
        return self.name

    def _client(self, source: str, take: bool = True) -> Client:
        """The space's client for ``source`` (connected on first use; in the executor).

        Ours no longer active: with ``take`` (a request the client sent) the Source is
        connected again, replacing whoever holds it; without (a wait renewing itself,
        or a retry) only if nobody does -- a connection that went quiet must not take
        the Source back from the client that reconnected ("Only one Source of a given
        name may be active"). OBJECT_NOT_EXIST once the connection has closed (``_closed``).
        """
        with self._clients_lock:
            if self.cancel.cancelled:  # closed: a client made now would never be released
                raise RequestError("OBJECT_NOT_EXIST", "the connection is closed")
            client = self.clients.get(source)
            if client is None and len(self.clients) >= MAX_CLIENTS_PER_CONNECTION:
                raise RequestError("LimitExceeded", f"{MAX_CLIENTS_PER_CONNECTION} Sources "
                                   "(Target template values) on this connection "
                                   "(MAX_CLIENTS_PER_CONNECTION)")
            if client is None or not client.active:
                if client is not None and not take and source in self.space.clients:
                    raise RequestError("OBJECT_NOT_EXIST", f"the Source {source!r:.100} is "
                                       "connected again on another connection")
                client = self.server.connect(source)
                self.clients[source] = client
            return client

    def _sequenced(self, bundle: WireBundle, call: Callable[[Client], Any],
                   take: bool = True) -> Any:
        """``call(client)`` after the bundle's SequenceInfo is merged (in the executor);
        once more with a new client if the old one was reaped (not if it was replaced:
        ``_client``)."""
        source = self._requester(bundle)
        for attempt in (0, 1):
            client = self._client(source, take=take and attempt == 0)
            merge_sequence_info(self.space, client, bundle)
            try:
                return call(client)
            except CORBA.OBJECT_NOT_EXIST:
                if attempt or client.active or self.space.closed:
                    raise
        return None

    def _out(self, found: Any) -> Tuple:
        ttl = round((found.expires - found.arrival) * 1000)
        return tuple_of(found.event, found.id, ttl)

    # -- the operations (seed, "Event Heap Server Operations") ------------------------------
    # Mapping tuples to events and templates, and encoding replies, happen in the
    # executor call that does the space's work, never on the loop every front end shares.
    async def put_event(self, bundle: WireBundle) -> None:
        """Table 13: an ACK once the event is in the Event Heap."""
        def put() -> None:
            self.space.put_event(event_of(self._single(bundle, "putEvent")))

        await self.call(put)
        self._reply(bundle)

    async def _retrieve(self, bundle: WireBundle, remove: bool) -> None:
        def work() -> tuple[Any, bytes | None]:
            templates = self._templates(bundle)

            def run(client: Client) -> Any:
                op = client.remove_event if remove else client.get_event
                return op(templates, self._encodable)

            return self._retrieved(bundle, self._sequenced(bundle, run))

        found, data = await self.call(work)
        if found is None or data is None:
            self._reply(bundle)
        else:
            await self._hand_out(found, data)

    async def get_event(self, bundle: WireBundle) -> None:
        """Table 5."""
        await self._retrieve(bundle, remove=False)

    async def remove_event(self, bundle: WireBundle) -> None:
        """Table 6."""
        await self._retrieve(bundle, remove=True)

    async def _wait(self, bundle: WireBundle, remove: bool) -> None:
        templates = await self.call(self._templates, bundle)
        server = self.server
        with server._lock:
            if server.waits >= MAX_WAITS or self.waits >= MAX_WAITS_PER_CONNECTION:
                raise RequestError("LimitExceeded", f"{MAX_WAITS} waits on this front end, "
                                   f"or {MAX_WAITS_PER_CONNECTION} on this connection, are "
                                   "in progress (MAX_WAITS)")
            server.waits += 1
            self.waits += 1
        task = asyncio.ensure_future(self._waiting(bundle, templates, remove))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _wait_call(self, bundle: WireBundle, templates: list[Any], remove: bool
                   ) -> tuple[Any, bytes | None]:
        cancel = self.cancel

        def run(client: Client) -> Any:
            wait = client.wait_to_remove_event if remove else client.wait_for_event
            return wait(templates, MAX_WAIT, cancel, self._encodable)

        take = True  # the request takes its Source; a renewal does not (``_client``)
        while not cancel.cancelled:
            found = self._sequenced(bundle, run, take)
            if found is not None:
                return self._retrieved(bundle, found)
            take = False
        return None, None

    async def _waiting(self, bundle: WireBundle, templates: list[Any], remove: bool) -> None:
        server = self.server
        try:
            future = server.pool.submit(self._wait_call, bundle, templates, remove)
            found, data = await asyncio.wrap_future(future)
            if found is None or data is None:
                return
            await self._hand_out(found, data)  # given back if it cannot be sent
        except (CORBA.Exception, MappingError, RequestError, EventHeapWireError) as exc:
            self._refuse(bundle, refusal(exc))
        except (RuntimeError, concurrent.futures.CancelledError):  # the front end closed
            pass
        finally:
            with server._lock:
                server.waits -= 1
                self.waits -= 1

    async def wait_for_event(self, bundle: WireBundle) -> None:
        """Table 8."""
        await self._wait(bundle, remove=False)

    async def wait_to_remove_event(self, bundle: WireBundle) -> None:
        """Table 7."""
        await self._wait(bundle, remove=True)

    async def snoop_events(self, bundle: WireBundle) -> None:
        """Table 9: every match, "Sequencing is ignored"."""
        def snoop() -> bytes:
            return self._many(bundle, self.space.snoop_events(self._templates(bundle)))

        self.connection.send(await self.call(snoop))

    async def get_all(self, bundle: WireBundle) -> None:
        """Table 10: "any events sent are ignored"."""
        def get_all() -> bytes:
            return self._many(bundle, self.space.get_all())

        self.connection.send(await self.call(get_all))

    def _many(self, request: WireBundle, found: list[Any]) -> bytes:
        """The reply of snoopEvents and getAll (in the executor): the copies the wire can
        carry, oldest first, in at most half ``Limits.max_pending`` bytes (a reply past
        it would drop the client as too slow). An event no tuple can carry (a string
        past 65,535 bytes) is left out, as a stream leaves it out: one such event must
        not cost every client its snoopEvents and getAll."""
        budget = self.connection.limits.max_pending // 2
        raws: list[bytes] = []
        for live in found:
            try:
                raw = encode_tuple(self._out(live))
            except (EventHeapWireError, MappingError) as exc:
                log.info("%s: tuple %s left out of a reply: %s", self.name,
                         getattr(live, "id", "?"), exc)
                continue
            budget -= len(raw) + 4
            if budget < 0:
                break
            raws.append(raw)
        return encode_bundle_of(WireBundle(request.return_tag), raws)

    async def _register(self, bundle: WireBundle, templates: list[Any] | None) -> None:
        if len(self.streams) >= MAX_STREAMS_PER_CONNECTION:
            raise RequestError("LimitExceeded", f"{MAX_STREAMS_PER_CONNECTION} streams on "
                               "this connection (MAX_STREAMS_PER_CONNECTION)")
        ready = threading.Event()
        holder: list[str | None] = [None]
        push = functools.partial(self._stream_push, bundle.return_tag, holder, ready)
        space = self.space

        def register() -> int:
            """In the executor: the stream id is known to ``push`` as soon as the space
            returns it, without waiting for the loop (a channel delivery thread does)."""
            try:
                made: int = (space.register_for_all(push) if templates is None
                             else space.register_for_events(templates, push))
                holder[0] = str(made)
                return made
            finally:
                ready.set()

        stream = await self.call(register)
        if self.connection.closed:
            await self.call(self.space.deregister, stream)
            return
        self.streams[stream] = bundle.return_tag

    def _stream_push(self, tag: str | None, holder: list[str | None], ready: threading.Event,
                     event: Any) -> None:
        """A stream's event (a channel delivery thread): one bundle to the client."""
        ready.wait(10.0)  # its registration is returning now (``_register``)
        try:
            data = encode_bundle(WireBundle(tag, holder[0], None, (tuple_of(event),)))
        except (EventHeapWireError, MappingError, AttributeError, TypeError) as exc:
            log.warning("%s: a streamed event not sent: %s", self.name, exc)
            return
        self.connection.send(data)

    async def register_for_events(self, bundle: WireBundle) -> None:
        """Table 11."""
        await self._register(bundle, await self.call(self._templates, bundle))

    async def register_for_all(self, bundle: WireBundle) -> None:
        """Table 12."""
        await self._register(bundle, None)

    async def deregister(self, bundle: WireBundle) -> None:
        """Table 16: the stream its StreamID names, else the registration's return tag."""
        ids: list[int] = []
        for tup in bundle.tuples or ():
            named = tup.field("StreamID")
            if named is not None and named.post.is_actual and named.post.value is not None:
                text = str(named.post.value).strip()
                # ASCII digits, and few: int() refuses superscripts and 4,300+ digits.
                if text.isascii() and text.isdigit() and len(text) <= 19 \
                        and int(text) in self.streams:
                    ids.append(int(text))
        if not ids and bundle.return_tag is not None:
            ids = [s for s, tag in self.streams.items() if tag == bundle.return_tag]
        for stream in ids:
            self.streams.pop(stream, None)
            await self.call(self.space.deregister, stream)

    async def delete_event(self, bundle: WireBundle) -> None:
        """Table 14: by the serial number the server gave the event."""
        serial = self._single(bundle, "deleteEvent").serial
        if serial > 0:
            await self.call(self.space.delete_event, serial)

    async def clear(self, bundle: WireBundle) -> None:
        """Table 15."""
        await self.call(self.space.clear)


def _kind(exc: EventHeapWireError) -> str:
    return {"too_large": "BundleTooLarge", "version": "Version"}.get(exc.kind,
                                                                      "MalformedBundle")


#: The seed's opcodes (destination tags) -> their operation.
OPERATIONS: Final[dict[str, Handler]] = {
    "putEvent": EventHeapSession.put_event,
    "getEvent": EventHeapSession.get_event,
    "removeEvent": EventHeapSession.remove_event,
    "waitForEvent": EventHeapSession.wait_for_event,
    "waitToRemoveEvent": EventHeapSession.wait_to_remove_event,
    "snoopEvents": EventHeapSession.snoop_events,
    "getAll": EventHeapSession.get_all,
    "registerForEvents": EventHeapSession.register_for_events,
    "registerForAll": EventHeapSession.register_for_all,
    "deregister": EventHeapSession.deregister,
    "deleteEvent": EventHeapSession.delete_event,
    "clear": EventHeapSession.clear,
}
