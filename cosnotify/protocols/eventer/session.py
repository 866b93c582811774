"""The Eventer front end's sessions: one Chatter connection each, over one channel.

Strategy: the thin layer between the transport (``listener.Connection``), the
sans-IO codec (:mod:`.codec`) and the core. :class:`EventerService` is what
the connections share: the channel, one sequence proxy consumer through which
every MsgRegisterReq enters it, the session numbers and the server id.
:class:`EventerSession` reads bytes, feeds the codec and answers each message
in order (the seed's "Actions"):

- MsgSubscribe replaces the connection's subscriptions ("each new subscription
  message implicitly invalidates previous subscriptions"); a connection with
  subscriptions has a structured proxy push supplier on the channel, whose
  events it matches against them (``?``/``*``, docs/history.md) and sends as
  MsgNotify, consecutive events of one session delivered together in one
  message (never two sessions in one: one session's events delivered apart
  may take two);
- MsgRegisterReq: one session, one timestamp -- the events' arrival in the
  channel -- for all its events, which enter the channel as one supplier's
  sequence; MsgRegisterRes answers it unless its ``last`` flag is set ("If a
  client doesn't end Chatter conversation ..."), an event that cannot be
  mapped being a ``failure``;
- MsgQueryReq is answered from the channel's history (``channel.query``), in
  one MsgQueryRes (cut at ``max_reply`` bytes: logged at warning), each event
  encoded once for all the answers that hold it (:mod:`.replies`);
- MsgPing is answered with MsgPong (hat-chatter's ping).

Calls into the core run on the loop's executor (``Loop.call``), but for a
register whose push cannot block (:meth:`EventerService.inline`): a thread
round trip would cost more than it. Registers are serialised
(``EventerService.registering``; the loop's own only tries the lock), so
sessions and timestamps enter the channel in order. A message of more than
:data:`INLINE_BYTES` is decoded on the executor, in parts (hat-sbs holds the
GIL for a whole call). Deliveries come on the channel's threads and only
queue the events; the loop matches them against the subscription's tree
(``mapping.Subscription``) and sends them.
Malformed input closes the connection (the codec's error, logged at info and
counted in ``closed_bad``): the Eventer protocol has no error message.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import attrs
from omniORB import CORBA

import CosNotifyChannelAdmin as CA

from cosnotify.protocols.eventer.codec import (
    ChatterConnection,
    Event,
    EventerProtocolError,
    EventId,
    Msg,
    QueryData,
    RegisterEvent,
    Timestamp,
    decode_frame,
)
from cosnotify.protocols.eventer.mapping import (
    Sessions,
    Subscription,
    Unmappable,
    event_of_structured,
    to_queries,
    to_structured,
)
from cosnotify.protocols.eventer.replies import EncodedEvents
from cosnotify.protocols.listener import Connection, Counters, Limits, Loop

__all__ = ["EventerService", "EventerSession"]

log = logging.getLogger("cosnotify.protocols.eventer")

#: The most events a MsgRegisterReq may have to be registered on the loop's thread.
INLINE_EVENTS = 256
#: A message of more bytes is decoded on the executor, in parts (codec.decode_frame):
#: hat-sbs decodes 64 KiB of the worst items in ~20 ms, holding the GIL.
INLINE_BYTES = 64 * 1024


class EventerService:
    """What the Eventer connections of one front end share (module docstring)."""

    def __init__(self, channel: Any, loop: Loop, server_id: int, store: Any,
                 max_reply: int) -> None:
        self.channel = channel
        self.loop = loop
        self.server_id = server_id
        self.sessions = Sessions(store)
        self.max_reply = max_reply
        self.clock = channel._service.clock
        #: Queries whose answer was cut short of what they asked (a warning each).
        self.truncated = 0
        #: The events answered with, encoded (a next answer holding them reuses them).
        self.encoded = EncodedEvents(server_id)
        #: Held while a MsgRegisterReq gets its session and timestamp and enters the channel.
        self.registering = threading.Lock()
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.SEQUENCE_EVENT)
        proxy.connect_sequence_push_supplier(None)
        self.supplier = proxy

    def close(self) -> None:
        try:
            self.supplier.disconnect_sequence_push_consumer()
        except CORBA.Exception:  # the channel went first
            pass

    # -- register -----------------------------------------------------------------------------
    def inline(self, count: int) -> bool:
        """May a register of ``count`` events run on the loop's thread (no executor
        round trip)? Only when its push cannot block: a best-effort channel (no event
        log, so no commit to wait for) whose history writer is far from its flow control
        (retention.MAX_BUFFERED), and a request of at most :data:`INLINE_EVENTS`."""
        from cosnotify.channel.retention import MAX_BUFFERED

        channel = self.channel
        if count > INLINE_EVENTS or getattr(channel, "_event_log", True) is not None:
            return False
        retention = getattr(channel, "_retention", None)
        return retention is None or getattr(retention, "_buffered", 0) < MAX_BUFFERED // 2

    def register(self, events: tuple[RegisterEvent, ...]) -> list[Event | None]:
        """The events of one MsgRegisterReq, in the channel: one session, one timestamp.
        Registers are serialised (:attr:`registering`), as hat-event's engine's one
        register loop: the channel takes them in the order of their sessions and
        timestamps, so MsgNotify brings them in that order too."""
        with self.registering:
            return self._register(events)

    def register_inline(self, events: tuple[RegisterEvent, ...]) -> list[Event | None] | None:
        """:meth:`register` on the loop's thread, or None (nothing done) when another
        register holds the lock: the loop never waits for one."""
        if not self.registering.acquire(blocking=False):
            return None
        try:
            return self._register(events)
        finally:
            self.registering.release()

    def _register(self, events: tuple[RegisterEvent, ...]) -> list[Event | None]:
        timestamp = Timestamp.of(self.clock.now())
        session = self.sessions.next()
        made: list[Event | None] = []
        structured = []
        for instance, event in enumerate(events, 1):
            event_id = EventId(self.server_id, session, instance)
            try:
                structured.append(to_structured(event, event_id, timestamp))
            except Unmappable as exc:
                log.info("eventer: registration of %s failed: %s", list(event.type), exc)
                made.append(None)
                continue
            made.append(Event(event_id, event.type, timestamp,
                              _normalised(event.source_timestamp), event.payload))
        if structured:
            try:
                _push_at(self.supplier, structured, timestamp.seconds())
            except CORBA.Exception as exc:
                log.warning("eventer: the channel refused a registration: %s", exc)
                return [None] * len(events)
        return made

    # -- query (on the executor) -------------------------------------------------------------
    def query(self, data: QueryData) -> list[bytes]:
        """A MsgQueryReq's events from the channel's history, each encoded
        (:class:`~.replies.EncodedEvents`); none when the channel keeps none or the
        query is malformed (the protocol has no error to say so: logged). Ids past
        one constraint's length are asked in several queries, merged."""
        from cosnotify.history.query import MAX_RESULTS_LIMIT, select
        from cosnotify.history.reader import query_page

        try:
            queries = to_queries(data, self.server_id)
            pages = [query_page(self.channel, query, {}, max_bytes=self.max_reply)
                     for query in queries]
        except (CORBA.BAD_PARAM, CORBA.BAD_INV_ORDER, Unmappable) as exc:
            log.info("eventer: query answered with no events: %.300s", exc)
            return []
        if not pages:
            return []
        retained = pages[0].events
        more = any(page.more for page in pages)
        if len(pages) > 1:  # each the first of its ids: the first of all are among them
            retained = select([e for page in pages for e in page.events],
                              attrs.evolve(queries[0], constraint=None))
        # The reader bounds the stored records' bytes; the answer's own bytes are
        # bounded here (a JSON payload may be larger than its record).
        events, cut = self.encoded.encode(retained, self.max_reply)
        more = more or cut
        wanted = data.max_results
        if more and (wanted is None or len(events) < wanted):
            # Cut short of what the client asked: by the reply's bytes (max_reply), the
            # reader's scan bound or MAX_RESULTS_LIMIT. The protocol cannot say so
            # (no paging, no error); the operator sees it.
            self.truncated += 1
            log.warning("eventer: a query's answer was cut at %d events (a reply holds at "
                        "most %d bytes and %d events); the client gets the first found, "
                        "in its order", len(events), self.max_reply, MAX_RESULTS_LIMIT)
        return events

    # -- subscriptions -------------------------------------------------------------------------
    def subscribe(self, consumer: Any, patterns: tuple[tuple[str, ...], ...]) -> Any:
        """A structured proxy push supplier delivering to ``consumer`` the events whose
        domain and type names ``patterns`` allow (its filter; the session checks the
        whole pattern)."""
        proxy, _ = self.channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        self.refilter(proxy, patterns)
        proxy.connect_structured_push_consumer(consumer)
        return proxy

    def refilter(self, proxy: Any, patterns: tuple[tuple[str, ...], ...]) -> None:
        """Give ``proxy`` the EXTENDED_TCL filter of ``patterns`` (:func:`prefilter`), so
        the channel's index drops what no pattern can match before it is delivered."""
        import CosNotifyFilter

        old = [proxy.get_filter(i) for i in proxy.get_all_filters()]
        proxy.remove_all_filters()
        for made in old:  # a filter is an object of its own: removed is not destroyed
            made.destroy()
        constraint = prefilter(patterns)
        if constraint is None:
            return
        made = self.channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        try:
            made.add_constraints([CosNotifyFilter.ConstraintExp([], constraint)])
        except CosNotifyFilter.InvalidConstraint:  # a segment TCL cannot say: no prefilter
            made.destroy()
            return
        proxy.add_filter(made)

    @staticmethod
    def unsubscribe(proxy: Any) -> None:
        try:
            filters = [proxy.get_filter(i) for i in proxy.get_all_filters()]
            proxy.disconnect_structured_push_supplier()
            for made in filters:
                made.destroy()
        except CORBA.Exception:
            pass


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def prefilter(patterns: tuple[tuple[str, ...], ...]) -> str | None:
    """An EXTENDED_TCL constraint that every event a pattern matches passes: the pattern's
    first two segments, unless wildcards, on ``$domain_name`` and ``$type_name``. None
    when a pattern passes everything (``*`` first, or ``?`` then ``*``)."""
    terms = []
    for pattern in patterns:
        parts = []
        for segment, name in zip(pattern[:2], ("$domain_name", "$type_name"), strict=False):
            if segment == "*":
                break
            if segment != "?":
                parts.append(f"{name} == {_literal(segment)}")
        else:
            if len(pattern) < 2:  # a path of one segment: no event on a channel has one
                continue
        if not parts:
            return None
        terms.append("(" + " and ".join(parts) + ")")
    return " or ".join(terms) if terms else "FALSE"


def _push_at(proxy: Any, notifications: list[Any], arrival: float) -> None:
    """``push_structured_events`` with the arrival given: the MsgRegisterReq's timestamp
    is the events' arrival in the channel (what a query's tFrom/tTo compare), so it
    must be known before they enter. The proxy's own batch path with ``arrival`` for
    its clock's reading (SequenceProxyPushConsumer._inject_batch)."""
    from cosnotify.channel.event import from_structured

    inject = getattr(proxy, "_inject", None)
    if inject is None or getattr(proxy, "_supplier_ack", False):
        proxy.push_structured_events(notifications)
        return
    proxy._require_connected()
    batch: list[Any] = []
    for notification in notifications:
        inject(from_structured(notification, arrival), batch)
    proxy._channel._forward_all(batch, proxy._channel_in if proxy._counting else None)


class _Consumer:
    """The connection's StructuredPushConsumer: queues deliveries for the loop."""

    def __init__(self, deliver: Callable[[Any], None]) -> None:
        self.push_structured_event = deliver

    def disconnect_structured_push_consumer(self) -> None:
        pass

    def offer_change(self, added: Any, removed: Any) -> None:
        pass


class EventerSession:
    """One Eventer client (module docstring)."""

    def __init__(self, service: EventerService, limits: Limits, counters: Counters) -> None:
        self.service = service
        self.codec = ChatterConnection(limits.max_frame)
        self.counters = counters
        self.patterns: tuple[tuple[str, ...], ...] = ()
        self.subscription = Subscription(())
        self.proxy: Any = None
        self._pending: list[Any] = []
        self._lock = threading.Lock()
        self._scheduled = False
        self._connection: Connection | None = None

    async def run(self, connection: Connection) -> None:
        self._connection = connection
        connection.on_close(self._closed)
        codec = self.codec
        # A frame begun must be whole by its deadline, however its bytes trickle in.
        deadline: float | None = None
        try:
            while True:
                if not codec.pending:
                    deadline = None
                elif deadline is None:
                    deadline = connection.frame_deadline()
                codec.receive_data(await connection.read_some(idle=not codec.pending,
                                                              deadline=deadline))
                while (frame := codec.next_frame()) is not None:
                    deadline = None  # the next frame's starts when it does
                    self.counters.frames_in += 1
                    if len(frame.data) > INLINE_BYTES:  # decoded in parts, off the loop
                        msg = await self.service.loop.call(decode_frame, frame, True)
                    else:
                        msg = decode_frame(frame)
                    await self._handle(connection, msg)
        except EventerProtocolError as exc:
            self.counters.closed_bad += 1
            log.info("eventer: %s:%d closed: %s", *connection.peer, exc)
        finally:
            await self._unsubscribe()

    async def _handle(self, connection: Connection, msg: Msg) -> None:
        key = (msg.module, msg.type)
        service = self.service
        if key == ("HatEventer", "MsgRegisterReq"):
            made = service.register_inline(msg.value) if service.inline(len(msg.value)) \
                else None
            if made is None:
                made = await service.loop.call(service.register, msg.value)
            if not msg.last:
                connection.send(self.codec.register_res(msg, made))
        elif key == ("HatEventer", "MsgQueryReq"):
            found = await service.loop.call(service.query, msg.value)
            connection.send(self.codec.query_res_encoded(msg, found))
        elif key == ("HatEventer", "MsgSubscribe"):
            try:  # a "*" not last: hat-event's server closes the connection, as here
                subscription = Subscription(msg.value)
            except ValueError as exc:
                raise EventerProtocolError(str(exc), None, key) from None
            self.patterns = tuple(msg.value)
            self.subscription = subscription
            if not self.patterns:
                await self._unsubscribe()
            elif self.proxy is None:
                self.proxy = await service.loop.call(service.subscribe,
                                                     _Consumer(self._delivered), self.patterns)
            else:
                await service.loop.call(service.refilter, self.proxy, self.patterns)
        elif key == ("HatPing", "MsgPing"):
            connection.send(self.codec.pong(msg))
        # HatPing.MsgPong: the answer to a ping this side never sends; nothing to do.

    async def _unsubscribe(self) -> None:
        proxy, self.proxy = self.proxy, None
        if proxy is not None:
            await self.service.loop.call(self.service.unsubscribe, proxy)

    def _closed(self) -> None:
        with self._lock:
            self._pending.clear()

    # -- deliveries (the channel's threads, then the loop) ------------------------------------
    def _delivered(self, structured: Any) -> None:
        with self._lock:
            self._pending.append(structured)
            if self._scheduled:
                return
            self._scheduled = True
        try:
            self.service.loop.loop.call_soon_threadsafe(self._send_pending)
        except RuntimeError:  # the loop is closed: the server is stopping
            pass

    def _send_pending(self) -> None:
        with self._lock:
            taken, self._pending = self._pending, []
            self._scheduled = False
        connection = self._connection
        if connection is None or connection.closed or not self.patterns:
            return
        now = Timestamp.of(self.service.clock.now())
        server = self.service.server_id
        subscription = self.subscription
        group: list[Event] = []
        foreign: int | None = None  # the session given to CORBA suppliers' events here
        instance = 0
        for structured in taken:
            event = event_of_structured(structured, EventId(server, -1, 0), now)
            if not subscription.matches(event.type):
                continue
            if event.id.session == -1:
                if foreign is None:
                    foreign = self.service.sessions.next()
                instance += 1
                event = _with_id(event, EventId(server, foreign, instance))
            if group and group[-1].id.session != event.id.session:
                self._notify(connection, group)
                group = []
            group.append(event)
        if group:
            self._notify(connection, group)

    def _notify(self, connection: Connection, group: list[Event]) -> None:
        try:
            message = self.codec.notify(group)
        except (OverflowError, ValueError, TypeError):
            group = _encodable(group)
            if not group:
                return
            message = self.codec.notify(group)
        connection.send(message)


def _encodable(events: list[Event]) -> list[Event]:
    """The events of a message that failed to encode that SBS can carry, each alone;
    the others are logged and left out, so one event a supplier made that the protocol
    cannot hold (none is known: ids and times are bounded where they are read) costs
    the client that event, not the message and not the connection."""
    from cosnotify.protocols.eventer.codec import event_to_sbs
    from cosnotify.protocols.eventer.schema import REPOSITORY

    kept = []
    for event in events:
        try:
            REPOSITORY.encode("HatEventer", "Event", event_to_sbs(event))
        except (OverflowError, ValueError, TypeError) as exc:
            log.warning("eventer: event %s left out of a message: SBS cannot carry it: %s",
                        event.id, exc)
            continue
        kept.append(event)
    return kept


def _normalised(t: Timestamp | None) -> Timestamp | None:
    """A source timestamp as a query and MsgNotify return it (read back from its UtcT):
    ``us`` within 0..999999, the rest carried into ``s`` ((5, 1500000) is (6, 500000)),
    so MsgRegisterRes gives the event the same source timestamp they do."""
    if t is None or 0 <= t.us < 1_000_000:
        return t
    s, us = divmod(t.s * 1_000_000 + t.us, 1_000_000)
    return Timestamp(s, us)


def _with_id(event: Event, event_id: EventId) -> Event:
    return Event(event_id, event.type, event.timestamp, event.source_timestamp, event.payload)
