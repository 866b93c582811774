"""One Elvin 4 client: its packets in, its proxies on the channel, its deliveries out.

Strategy: the session is the thin layer between :class:`~codec.Decoder` and
the core. It reads from the Connection, takes every whole packet the codec
has, checks that the packet is allowed in the session's state (a table,
:data:`ALLOWED`), and runs its handler. A client becomes proxies on the
front end's channel:

* a ``StructuredProxyPushConsumer`` carries its NotifyEmits (and UNotifys)
  into the channel as structured events (mapping.py). The NotifyEmits of
  one read are pushed in one call on the loop's executor, so a busy
  producer costs one thread hop per read, not per notification. Its
  supplier object hears the channel's ``subscription_change``: the
  ``("%ATTRIBUTE", name)`` types ELVIN4 filters report, which feed quench
  (followed only while the client holds a quench: quench.py).
* one ``StructuredProxyPushSupplier`` per client, made at its first
  SubAddRqst, carries one ELVIN4 filter holding one constraint per
  subscription. The channel's filter routes (a notification no subscription
  wants never reaches the session) and reports the tested attributes to
  quenchers everywhere; on delivery the session evaluates its subscriptions'
  compiled programs once more to fill NotifyDeliver's ``secure_matches`` and
  ``insecure_matches`` (§7.4.16) and to apply the keys. One proxy per client
  rather than per subscription gives one NotifyDeliver per notification, as
  §5.4.3 wants, whatever number of subscriptions match.

Replies and deliveries go through one outbox (outbox.py), so they leave in
order; the channel's delivery threads append to it without blocking, and the
loop writes it. Droppable packets the client cannot take are dropped, and a
DropWarn marks the place (§5.4.6, §7.4.12).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Final

from omniORB import CORBA

import CosNotifyChannelAdmin as CA

from cosnotify.protocols.elvin import keys as K
from cosnotify.protocols.elvin import options as O
from cosnotify.protocols.elvin import packets as P
from cosnotify.protocols.elvin.callbacks import Consumer, Supplier
from cosnotify.protocols.elvin.codec import NEED_DATA, Decoder, encode_packet
from cosnotify.protocols.elvin.mapping import elvin_name, from_event, sendable, to_event
from cosnotify.protocols.elvin.nacks import (
    IMPL_LIMIT,
    KEY_EXISTS,
    NO_SUCH_KEY,
    PROT_ERROR,
    PROT_INCOMPAT,
    encode_nack,
)
from cosnotify.protocols.elvin.outbox import Outbox
from cosnotify.protocols.elvin.quench import Quenches, Refused
from cosnotify.protocols.elvin.router import CLOSING_DOWN, PROTOCOL_ERRORS, Router
from cosnotify.protocols.elvin.subscriptions import Subscription, Subscriptions
from cosnotify.protocols.elvin.xdr import ElvinCodecError
from cosnotify.protocols.listener import Connection, ReadTimeout

__all__ = ["ALLOWED", "MAX_PROTOCOL_ERRORS", "Session"]

log = logging.getLogger("cosnotify.protocols.elvin")

#: The protocol version this router speaks (§7.4.3).
MAJOR_VERSION: Final = 4
#: Protocol errors after which a client is disconnected (§7.3.3: "Repeated protocol
#: errors on a channel MAY cause a router implementation to close the client's
#: connection"; Disconn reason 4).
MAX_PROTOCOL_ERRORS: Final = 16
_CONFCONN: Final = encode_packet(P.ConfConn())
_TESTCONN: Final = encode_packet(P.TestConn())

NEW, UNOTIFY, OPEN, CLOSED = "new", "unotify", "open", "closed"
_REQUESTS: Final = frozenset({P.DisconnRqst, P.SecRqst, P.NotifyEmit, P.SubAddRqst,
                              P.SubModRqst, P.SubDelRqst, P.TestConn, P.ConfConn, P.QosRqst,
                              P.QnchAddRqst, P.QnchModRqst, P.QnchDelRqst})
#: Which client packets each state accepts (§5.4, §7.4.1: after a UNotify "No other
#: packets are allowed"). Anything else is a protocol violation (§7.3.2).
ALLOWED: Final[dict[str, frozenset[type[Any]]]] = {
    NEW: frozenset({P.ConnRqst, P.UNotify}), UNOTIFY: frozenset({P.UNotify}), OPEN: _REQUESTS,
    CLOSED: frozenset()}


class Session(Subscriptions):
    """One client connection of the Elvin front end."""

    def __init__(self, router: Router, connection: Connection) -> None:
        self.router = router
        self.connection = connection
        self.state = NEW
        self.options = O.defaults(connection.limits.max_frame, self._send_queue_limit())
        self.decoder = Decoder(connection.limits.max_frame)
        self._handlers: dict[type[Any], Callable[[Any], Coroutine[Any, Any, None]]] = {
            P.ConnRqst: self._conn_rqst, P.UNotify: self._unotify,
            P.DisconnRqst: self._disconn_rqst, P.SecRqst: self._sec_rqst,
            P.SubAddRqst: self._sub_add, P.SubModRqst: self._sub_mod,
            P.SubDelRqst: self._sub_del, P.TestConn: self._test_conn, P.ConfConn: self._ignore,
            P.QosRqst: self._qos_rqst, P.QnchAddRqst: self._qnch_add,
            P.QnchModRqst: self._qnch_mod, P.QnchDelRqst: self._qnch_del}
        self.protocol_errors = 0
        self._closing = False
        self.nfn_keys: set[K.RawKey] = set()
        self.sub_keys: set[K.RawKey] = set()
        self._nfn_public = K.NO_KEYS
        self._sub_public = K.NO_KEYS
        self.subscriptions: dict[int, Subscription] = {}
        self.expression_bytes = 0       # of the subscriptions' expressions (UTF-8)
        self._subs: tuple[Subscription, ...] = ()      # read by delivery threads
        self._subs_lock = threading.Lock()             # subscriptions._publish
        self._supplier_proxy: Any = None
        self._consumer_proxy: Any = None
        self._filter: Any = None
        self._loop = router.loop.loop
        self.outbox = Outbox(connection, self._loop, router.stats, lambda: self.options)
        self.quenches = Quenches(router, self._queue)

    def _send_queue_limit(self) -> int:
        return max(1024, self.connection.limits.max_pending // 2)

    # -- the read loop -------------------------------------------------------------------------
    async def run(self, connection: Connection) -> None:
        self.router.sessions.add(self)
        try:
            await self._read_loop(connection)
        finally:
            self.router.sessions.discard(self)
            self.state = CLOSED
            self.outbox.open = False
            with contextlib.suppress(RuntimeError):   # the executor is gone with the loop
                self._loop.run_in_executor(None, self._teardown)

    async def _read_loop(self, connection: Connection) -> None:
        counters = connection.counters
        deadline: float | None = None
        while self.state != CLOSED:
            # §7.4.3: "A router SHOULD close a channel from which it has received neither a
            # ConnRqst or a UNotify within a reasonable time period": the read timeout.
            idle = self.state != NEW and not self.decoder.in_frame
            if idle:
                deadline = None
            elif deadline is None:
                # The whole packet (or, before it, the first one) is due by read_timeout
                # from its first byte, however slowly it trickles in (a slow loris).
                deadline = self._loop.time() + connection.limits.read_timeout
            try:
                data = await self._read(connection, deadline)
            except ReadTimeout:
                if not idle or self.state != OPEN:
                    raise
                # §7.4.13: after a silent period the router MAY send TestConn; "If, after
                # a TestConn has been sent, no traffic has been received on the channel
                # within a timeout period, the channel is assumed to have failed".
                self._queue(_TESTCONN)
                data = await connection.read_some(idle=False)
            self.decoder.receive_data(data)
            batch: list[Any] = []
            while self.state != CLOSED:
                try:
                    packet = self.decoder.next_packet()
                except ElvinCodecError as exc:
                    counters.frames_in += 1
                    deadline = None
                    await self._push(batch)
                    self._bad_packet(exc)
                    continue
                if packet is NEED_DATA:
                    break
                counters.frames_in += 1
                deadline = None               # a packet came whole: the next has its own
                kind = type(packet)
                if kind is P.NotifyEmit and self.state == OPEN:
                    if not packet.deliver_insecure:  # type: ignore[union-attr]
                        await self._push(batch)      # the secure route keeps the order
                    secure = self._notification(
                        packet.attributes, packet.deliver_insecure,  # type: ignore[union-attr]
                        packet.keys, batch)  # type: ignore[union-attr]
                    if secure is not None:
                        await self._deliver_secure(secure)
                    continue
                await self._push(batch)
                if kind not in ALLOWED[self.state]:
                    self._unexpected(packet)
                    continue
                await self._handlers[kind](packet)
            await self._push(batch)

    @staticmethod
    async def _read(connection: Connection, deadline: float | None) -> bytes:
        """The next bytes: between packets within idle_timeout, else before ``deadline``."""
        if deadline is None:
            return await connection.read_some(idle=True)
        try:
            async with asyncio.timeout_at(deadline):
                return await connection.read_some(idle=False)
        except ReadTimeout:
            raise
        except TimeoutError as exc:
            raise ReadTimeout("a packet did not arrive whole in time") from exc

    def _bad_packet(self, exc: ElvinCodecError) -> None:
        """§7.3.2/§7.3.3: a frame that does not decode."""
        if exc.fatal:
            # §8.2.1: "the implementation MUST reset the TCP connection".
            log.info("elvin %s:%d reset: %s", *self.connection.peer, exc)
            self._close(abort=True)
            return
        if exc.xid and self.state == OPEN:
            self._nack(exc.xid, exc.code, f"%1: {exc.message}", (exc.offset,))
            self._protocol_error()
        elif exc.packet_type == 56 and self.state == OPEN:
            self.router.stats.notifications_ignored += 1   # §7.3.3: ignored
            self._protocol_error()
        else:
            log.info("elvin %s:%d protocol violation: %s", *self.connection.peer, exc)
            self._close(abort=False)

    def _unexpected(self, packet: P.Packet) -> None:
        """A packet the state does not allow: Nack it if it has an xid, else close (§7.3.2)."""
        xid = getattr(packet, "xid", 0)
        if self.state == OPEN and xid:
            self._nack(xid, PROT_ERROR, f"{type(packet).__name__} is not expected here")
            self._protocol_error()
        else:
            log.info("elvin %s:%d: unexpected %s", *self.connection.peer, type(packet).__name__)
            self._close(abort=False)

    def _protocol_error(self) -> None:
        self.protocol_errors += 1
        if self.protocol_errors >= MAX_PROTOCOL_ERRORS:
            self.disconnect(PROTOCOL_ERRORS, "")

    # -- the outbox (outbox.py) -----------------------------------------------------------------
    def _queue(self, data: bytes, droppable: bool = False, final: bool = False) -> bool:
        return self.outbox.queue(data, droppable, final)

    def _send(self, packet: P.Packet) -> None:
        self._queue(encode_packet(packet))

    def _nack(self, xid: int, code: int, message: str, args: tuple[P.Value, ...] = ()) -> None:
        self.router.stats.nacks += 1
        self._queue(encode_nack(P.Nack(xid, code, message, args),
                                int(self.options["Packet.Max-Length"])))

    def _close(self, abort: bool) -> None:
        self.state = CLOSED
        self.outbox.open = False
        if abort:
            self.connection.abort()
        else:
            self.outbox.flush()
            self.connection.close()

    def disconnect(self, reason: int, args: str) -> None:
        """Send Disconn (§7.4.7: "the last packet sent by a router") and close (any thread)."""
        if self.state == CLOSED or self._closing:
            return
        if self.state == UNOTIFY:
            # §7.4.1: "The router MUST NOT send any data to the client over the channel".
            self.connection.close()
            return
        if not self._queue(encode_packet(P.Disconn(reason, args)), final=True):
            return               # closed, or another thread's Disconn is already the last
        if self.connection.in_loop():
            self._close(abort=False)
        else:
            with contextlib.suppress(RuntimeError):   # the loop is closed: nothing to say
                self._loop.call_soon_threadsafe(self._close, False)

    # -- the channel side ---------------------------------------------------------------------
    def _connect_supplier(self) -> None:
        admin = self.router.channel._get_default_supplier_admin()
        proxy, _ = admin.obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_supplier(Supplier(self))
        self._supplier_proxy = proxy

    def _connect_consumer(self) -> None:
        channel = self.router.channel
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        flt = channel._get_default_filter_factory().create_filter("ELVIN4")
        proxy.add_filter(flt)
        proxy.connect_structured_push_consumer(Consumer(self))
        self._consumer_proxy, self._filter = proxy, flt

    def _teardown(self) -> None:
        for target, method in ((self._consumer_proxy, "disconnect_structured_push_supplier"),
                               (self._supplier_proxy, "disconnect_structured_push_consumer"),
                               (self._filter, "destroy")):
            if target is None:
                continue        # never made
            try:
                getattr(target, method)()
            except Exception:
                log.debug("elvin teardown: already gone with the channel", exc_info=True)

    async def _push(self, batch: list[Any]) -> None:
        if not batch:
            return
        events = list(batch)
        batch.clear()
        proxy = self._supplier_proxy
        if proxy is None:                    # a UNotify channel: nothing may be sent back
            try:
                await self.router.loop.call(self._connect_supplier)
            except (CA.AdminLimitExceeded, CORBA.OBJECT_NOT_EXIST):
                self.router.stats.notifications_ignored += len(events)
                self._close(abort=False)
                return
            proxy = self._supplier_proxy
        push = proxy.push_structured_event

        def push_all() -> tuple[int, bool]:
            """(events refused, proxy gone). §7.4.7: the router "MUST NOT close the
            client's session ... without sending either a DisconnRply or Disconn": a
            refusal (MaxQueueLength with RejectNewEvents, the store's NO_RESOURCES)
            costs its notification only (review 130)."""
            refused = 0
            for done, event in enumerate(events):
                try:
                    push(event)
                except CORBA.OBJECT_NOT_EXIST:
                    return refused + len(events) - done, True
                except CORBA.SystemException:
                    refused += 1
            return refused, False
        refused, gone = await self.router.loop.call(push_all)
        self.router.stats.notifications_refused += refused
        if gone:
            self.disconnect(CLOSING_DOWN, "")       # the channel is gone

    # -- notifications in ------------------------------------------------------------------------
    def _valid(self, attributes: P.NameValues) -> bool:
        """§7.5.1's negotiated limits; §8.2.3.5: "n MUST be greater than zero"."""
        o = self.options
        if not attributes or len(attributes) > int(o["Attribute.Max-Count"]):
            return False
        name_max = int(o["Attribute.Name.Max-Length"])
        string_max = int(o["Attribute.String.Max-Length"])
        opaque_max = int(o["Attribute.Opaque.Max-Length"])
        for name, value in attributes:
            if len(name) > name_max or not elvin_name(name):   # §5.3.1
                return False
            kind = type(value)
            if kind is str and len(value) * 4 > string_max and (  # type: ignore[arg-type]
                    len(value.encode("utf-8")) > string_max):  # type: ignore[union-attr]
                return False
            if kind is bytes and len(value) > opaque_max:  # type: ignore[arg-type]
                return False
        return True

    def _notification(self, attributes: P.NameValues, deliver_insecure: bool,
                      keys: Any, batch: list[Any]) -> tuple[Any, K.PublicKeys] | None:
        """A notification in: with ``deliver_insecure``, its event onto ``batch`` (for the
        channel); else its event and keys, for :meth:`_deliver_secure`."""
        stats = self.router.stats
        try:
            K.check(keys)
        except K.BadKeys:
            stats.notifications_ignored += 1
            return None
        raw = K.flatten(keys) if keys else set()
        if len(raw) > K.MAX_KEYS or not self._valid(attributes):
            stats.notifications_ignored += 1
            return None
        stats.notifications_in += 1
        public = self._nfn_public.union(K.public(raw, producer_side=True)) \
            if raw else self._nfn_public
        event = to_event(attributes, public, self.router.secret)
        if deliver_insecure:
            batch.append(event)
            return None
        return event, public

    async def _deliver_secure(self, secure: tuple[Any, K.PublicKeys]) -> None:
        """The secure route (router.py), on the executor: it evaluates every session's
        subscriptions (review 97: on the loop, 50 such notifications against 20,000
        subscriptions held every client of every front end for 2 s)."""
        event, public = secure
        if public:
            sessions = list(self.router.sessions)   # on the loop, which changes the set
            await self.router.loop.call(self.router.deliver_secure, event, public, sessions)

    async def _unotify(self, packet: P.UNotify) -> None:
        """§7.4.1: session-less; an incompatible version "MUST be silently discarded"."""
        self.state = UNOTIFY
        if packet.client_major_version != MAJOR_VERSION:
            return
        batch: list[Any] = []
        secure = self._notification(packet.attributes, packet.deliver_insecure, packet.keys,
                                    batch)
        await self._push(batch)
        if secure is not None:
            await self._deliver_secure(secure)

    # -- notifications out (channel delivery threads, or the executor for the secure route) ------
    def deliver(self, event: Any, public: K.PublicKeys, insecure: bool) -> None:
        """Send ``event`` to the subscriptions it matches (§7.4.15, §7.4.16). Matched on a
        snapshot of them, and queued only if they are still those -- else matched again,
        under the lock that SubRply and SecRply are sent under: no NotifyDeliver follows
        a reply with what the reply changed (review 100: one named a subscription after
        its SubDelRqst's reply, or a secure match after its key was removed)."""
        lock = self._subs_lock
        with lock:
            subs, connection = self._subs, self._sub_public
        data = self._delivery(event, public, insecure, subs, connection)
        if data is None:
            return
        with lock:
            if self._subs is not subs or self._sub_public is not connection:
                data = self._delivery(event, public, insecure, self._subs, self._sub_public)
                if data is None:
                    return
            self.router.stats.deliveries += 1
            self._queue(data, droppable=True)

    @staticmethod
    def _delivery(event: Any, public: K.PublicKeys, insecure: bool,
                  subs: tuple[Subscription, ...], connection: K.PublicKeys) -> bytes | None:
        """The NotifyDeliver of ``event`` to ``subs``, or None when none matches."""
        secure: list[int] = []
        loose: list[int] = []
        for sub in subs:
            if sub.program.structured(event) is not True:
                continue
            if public and (connection or sub.public) and K.matches_either(
                    public, connection, sub.public):
                secure.append(sub.id)
            elif insecure and sub.accept_insecure:
                loose.append(sub.id)
        if not (secure or loose):
            return None
        attributes = from_event(event)
        try:
            data = encode_packet(P.NotifyDeliver(attributes, tuple(secure), tuple(loose)))
        except UnicodeEncodeError:    # a CORBA string that is not Unicode text
            attributes = sendable(attributes)
            data = encode_packet(P.NotifyDeliver(attributes, tuple(secure), tuple(loose)))
        # §8.2.3.5: a notification has "n > 0" attributes
        return data if attributes else None

    # -- session packets ---------------------------------------------------------------------------
    async def _ignore(self, packet: Any) -> None:
        return

    def _checked_keys(self, xid: int, *all_keys: Any) -> bool:
        try:
            for keys in all_keys:
                K.check(keys)
        except K.BadKeys as exc:
            self._nack(xid, exc.code, f"{exc}: %1", exc.nack_args)
            return False
        return True

    def _within_keys(self, xid: int, *held: set[K.RawKey]) -> bool:
        """False, having Nacked IMPL_LIMIT, if a holder would hold more than K.MAX_KEYS
        (§7.4.17: "exceeds some other internal limit")."""
        if any(len(keys) > K.MAX_KEYS for keys in held):
            self._nack(xid, IMPL_LIMIT, f"Request exceeds implementation limit: {K.MAX_KEYS} "
                       "keys a connection's notifications, its subscriptions, or one "
                       "subscription")
            return False
        return True

    async def _conn_rqst(self, packet: P.ConnRqst) -> None:
        """§7.4.3/§7.4.4: version, keys, options; then the supplier proxy."""
        if packet.client_major_version != MAJOR_VERSION:
            self._nack(packet.xid, PROT_INCOMPAT, f"protocol {packet.client_major_version}."
                       f"{packet.client_minor_version} is not supported; this router speaks 4.0")
            return
        if not self._checked_keys(packet.xid, packet.nfn_keys, packet.sub_keys):
            return
        nfn_keys, sub_keys = K.flatten(packet.nfn_keys), K.flatten(packet.sub_keys)
        if not self._within_keys(packet.xid, nfn_keys, sub_keys):
            return
        self.nfn_keys, self.sub_keys = nfn_keys, sub_keys
        self._keys_changed()
        self.options, reply = O.negotiate(self.options, packet.options,
                                          self.connection.limits.max_frame,
                                          self._send_queue_limit())
        self.decoder.max_packet = int(self.options["Packet.Max-Length"])
        try:
            await self.router.loop.call(self._connect_supplier)
        except CA.AdminLimitExceeded:
            # The channel's MaxSuppliers: "a ConnRply, a Nack or a disconnect" (§7.4.3).
            self._nack(packet.xid, IMPL_LIMIT,
                       "Request exceeds implementation limit (the channel's MaxSuppliers)")
            return
        except CORBA.OBJECT_NOT_EXIST:
            self.disconnect(CLOSING_DOWN, "")       # the channel is gone
            return
        self.state = OPEN
        self._send(P.ConnRply(packet.xid, reply))

    async def _qos_rqst(self, packet: P.QosRqst) -> None:
        """§7.4.10: renegotiation, answered like ConnRqst's options."""
        self.options, reply = O.negotiate(self.options, packet.options,
                                          self.connection.limits.max_frame,
                                          self._send_queue_limit())
        self.decoder.max_packet = int(self.options["Packet.Max-Length"])
        self._send(P.QosRply(packet.xid, reply))

    async def _disconn_rqst(self, packet: P.DisconnRqst) -> None:
        """§7.4.5: stop evaluating, flush, DisconnRply last, close."""
        self._subs = ()
        self._closing = True       # the proxies' disconnect callbacks send no Disconn now
        await self.router.loop.call(self._teardown)
        self._queue(encode_packet(P.DisconnRply(packet.xid)), final=True)
        self._close(abort=False)

    async def _test_conn(self, packet: P.TestConn) -> None:
        """§7.4.14: ConfConn only "if there are no other packets waiting"."""
        if self.outbox.idle():
            self._queue(_CONFCONN)

    def _keys_changed(self) -> None:
        self._nfn_public = K.public(self.nfn_keys, producer_side=True)
        self._sub_public = K.public(self.sub_keys, producer_side=False)

    async def _sec_rqst(self, packet: P.SecRqst) -> None:
        """§7.4.8: atomic key changes; adding a key held or removing one not held is a
        protocol error (KEY_EXISTS, NO_SUCH_KEY)."""
        if not self._checked_keys(packet.xid, packet.add_nfn_keys, packet.del_nfn_keys,
                                  packet.add_sub_keys, packet.del_sub_keys):
            return
        changes = ((self.nfn_keys, K.flatten(packet.add_nfn_keys), K.flatten(packet.del_nfn_keys)),
                   (self.sub_keys, K.flatten(packet.add_sub_keys), K.flatten(packet.del_sub_keys)))
        for held, add, remove in changes:
            if add & held:
                self._nack(packet.xid, KEY_EXISTS, "Key already exists")
                return
            if remove - held:
                self._nack(packet.xid, NO_SUCH_KEY, "No such key")
                return
        if not self._within_keys(packet.xid, *((held | add) - remove
                                                for held, add, remove in changes)):
            return
        for held, add, remove in changes:
            held |= add
            held -= remove
        with self._subs_lock:  # as a SubRply: deliveries see the keys before or after it
            self._keys_changed()
            self._send(P.SecRply(packet.xid))

    # -- quench (§5.3.3, §7.4.21 - §7.4.27: quench.py) --------------------------------------------
    def attributes_changed(self, added: list[Any], removed: list[Any]) -> None:
        """The channel's subscription types changed (any thread)."""
        self.quenches.attributes_changed(added, removed)

    async def _qnch_add(self, packet: P.QnchAddRqst) -> None:
        if self.quenches.active is None:     # the first quench: the channel's names now
            await self.router.loop.call(self.quenches.track, self._supplier_proxy)
        try:
            quench_id, report = self.quenches.add(packet)
        except Refused as exc:
            self._nack(packet.xid, exc.code, exc.message, exc.nack_args)
            return
        self._send(P.QnchRply(packet.xid, quench_id))
        report()

    async def _qnch_mod(self, packet: P.QnchModRqst) -> None:
        try:
            report = self.quenches.modify(packet)
        except Refused as exc:
            self._nack(packet.xid, exc.code, exc.message, exc.nack_args)
            return
        self._send(P.QnchRply(packet.xid, packet.quench_id))
        report()

    async def _qnch_del(self, packet: P.QnchDelRqst) -> None:
        try:
            self.quenches.delete(packet.quench_id)
        except Refused as exc:
            self._nack(packet.xid, exc.code, exc.message, exc.nack_args)
            return
        self._send(P.QnchRply(packet.xid, packet.quench_id))
