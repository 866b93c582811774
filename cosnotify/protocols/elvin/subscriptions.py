"""An Elvin client's subscriptions: SubAddRqst, SubModRqst, SubDelRqst (seed §7.4.17 - §7.4.20).

Strategy: a part of :class:`~cosnotify.protocols.elvin.session.Session`, kept
apart as the seed keeps the chapter: each subscription is compiled by the
ELVIN4 grammar (on the executor: a long expression takes a while) and
becomes one constraint of the session's one ELVIN4 filter, on its one
structured proxy push supplier (session.py says why one). What a session
may hold is bounded: Subscription.Max-Count and Subscription.Max-Length are
the negotiated options (QOS_LIMIT), and :data:`MAX_EXPRESSION_BYTES` of
expressions and ``keys.MAX_KEYS`` keys a subscription are cosnotify's own
(IMPL_LIMIT, §7.4.17: "exceeds some other internal limit").
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Final

import attrs
from omniORB import CORBA

import CosNotifyChannelAdmin as CA
import CosNotifyFilter as F

from cosnotify.filter.elvin4 import SubscriptionError, compile_program
from cosnotify.filter.elvin4.values import Int64
from cosnotify.protocols.elvin import keys as K
from cosnotify.protocols.elvin import packets as P
from cosnotify.protocols.elvin.nacks import (
    IMPL_LIMIT,
    NO_SUCH_SUB,
    QOS_LIMIT,
    subscription_nack_args,
)
from cosnotify.protocols.elvin.router import CLOSING_DOWN

if TYPE_CHECKING:
    from cosnotify.protocols.elvin.router import Router

__all__ = ["MAX_EXPRESSION_BYTES", "Subscription", "Subscriptions"]

#: Bytes of subscription expressions one session may hold in all (cosnotify's limit:
#: Subscription.Max-Count 65536 of Subscription.Max-Length 32 KiB would be 2 GiB).
MAX_EXPRESSION_BYTES: Final = 4 * 1024 * 1024


@attrs.define
class Subscription:
    """One SubAddRqst's registration (§7.4.17)."""

    id: int
    expression: str
    program: Any
    accept_insecure: bool
    keys: set[K.RawKey]
    public: K.PublicKeys          # its own keys (with the connection's: K.matches_either)
    constraint_id: int


class Subscriptions:
    """The subscription packets of a Session (module docstring)."""

    router: Router
    options: dict[str, Any]
    subscriptions: dict[int, Subscription]
    _subs: tuple[Subscription, ...]
    _subs_lock: threading.Lock
    _consumer_proxy: Any
    _filter: Any
    #: Bytes of the subscriptions' expressions, UTF-8 (MAX_EXPRESSION_BYTES).
    expression_bytes: int

    if TYPE_CHECKING:
        def _nack(self, xid: int, code: int, message: str,
                  args: tuple[P.Value, ...] = ()) -> None: ...
        def _send(self, packet: P.Packet) -> None: ...
        def _checked_keys(self, xid: int, *all_keys: Any) -> bool: ...
        def _within_keys(self, xid: int, *held: set[K.RawKey]) -> bool: ...
        def _connect_consumer(self) -> None: ...
        def disconnect(self, reason: int, args: str) -> None: ...

    async def _compile(self, xid: int, text: str, replaces: str = "") -> Any:
        size = len(text.encode("utf-8"))
        if size > int(self.options["Subscription.Max-Length"]):
            self._nack(xid, QOS_LIMIT, "Request exceeds QoS limit %1", ("Subscription.Max-Length",))
            return None
        if self.expression_bytes + size - len(replaces.encode("utf-8")) > MAX_EXPRESSION_BYTES:
            self._nack(xid, IMPL_LIMIT, f"Request exceeds implementation limit: "
                       f"{MAX_EXPRESSION_BYTES} bytes of subscription expressions a connection")
            return None
        try:
            # On the executor: a long expression takes a while (0.3 s for 32 KiB), and
            # the loop serves every client of every front end meanwhile.
            return await self.router.loop.call(compile_program, text)
        except SubscriptionError as exc:
            self._nack(xid, exc.code, f"{exc.name}: {exc.message}",
                       subscription_nack_args(exc, text))
            return None

    async def _sub_add(self, packet: P.SubAddRqst) -> None:
        if len(self.subscriptions) >= int(self.options["Subscription.Max-Count"]):
            self._nack(packet.xid, QOS_LIMIT, "Request exceeds QoS limit %1",
                       ("Subscription.Max-Count",))
            return
        if not self._checked_keys(packet.xid, packet.keys):
            return
        raw = K.flatten(packet.keys)
        if not self._within_keys(packet.xid, raw):
            return
        program = await self._compile(packet.xid, packet.expression)
        if program is None:
            return

        def add() -> int:
            if self._consumer_proxy is None:
                self._connect_consumer()
            [info] = self._filter.add_constraints([F.ConstraintExp([], packet.expression)])
            return int(info.constraint_id)
        try:
            constraint_id = await self.router.loop.call(add)
        except CA.AdminLimitExceeded:
            # §7.4.17: "If the router has too many registered subscriptions, or exceeds
            # some other internal limit, it MUST return a Nack with error code
            # IMPL_LIMIT" -- here the channel's MaxConsumers.
            self._nack(packet.xid, IMPL_LIMIT,
                       "Request exceeds implementation limit (the channel's MaxConsumers)")
            return
        except CORBA.OBJECT_NOT_EXIST:
            self.disconnect(CLOSING_DOWN, "")       # the channel is gone
            return
        sub = Subscription(self.router.new_id(), packet.expression, program,
                           packet.accept_insecure, raw, K.public(raw, producer_side=False),
                           constraint_id)
        self.subscriptions[sub.id] = sub
        self.expression_bytes += len(sub.expression.encode("utf-8"))
        self._publish(packet.xid, sub.id)

    def _publish(self, xid: int, sub_id: int) -> None:
        """The subscriptions as they are now, for deliveries, and the SubRply, as one step
        for the delivery threads (Session.deliver queues under the same lock, matched on
        the subscriptions then): a delivery queued after the reply has the change, one
        queued before it has not (reviews 99 and 100: a NotifyDeliver named an id before
        its SubRply, or after its SubDelRqst's)."""
        with self._subs_lock:
            self._subs = tuple(self.subscriptions.values())
            self._send(P.SubRply(xid, sub_id))

    async def _sub_mod(self, packet: P.SubModRqst) -> None:
        sub = self.subscriptions.get(packet.subscription_id)
        if sub is None:
            self._nack(packet.xid, NO_SUCH_SUB, "No such subscription %1",
                       (Int64(packet.subscription_id - (1 << 64) if packet.subscription_id >> 63
                              else packet.subscription_id),))
            return
        if not self._checked_keys(packet.xid, packet.add_keys, packet.del_keys):
            return
        # §7.4.18: adding a key held, or removing one not held, "MUST be ignored".
        keys = (sub.keys | K.flatten(packet.add_keys)) - K.flatten(packet.del_keys)
        if not self._within_keys(packet.xid, keys):
            return
        program, text = sub.program, sub.expression
        if packet.expression:
            program = await self._compile(packet.xid, packet.expression, sub.expression)
            if program is None:
                return   # §7.4.18: "An invalid expression MUST NOT alter the current state"
            text = packet.expression

            def modify() -> None:
                self._filter.modify_constraints([], [F.ConstraintInfo(
                    F.ConstraintExp([], text), sub.constraint_id)])
            await self.router.loop.call(modify)
            self.expression_bytes += len(text.encode("utf-8")) - len(
                sub.expression.encode("utf-8"))
        # A new Subscription, swapped in whole: delivery threads read one or the other,
        # never a mix of the two (review 99).
        changed = attrs.evolve(sub, expression=text, program=program,
                               accept_insecure=packet.accept_insecure, keys=keys,
                               public=sub.public if keys == sub.keys
                               else K.public(keys, producer_side=False))
        self.subscriptions[sub.id] = changed
        self._publish(packet.xid, sub.id)

    async def _sub_del(self, packet: P.SubDelRqst) -> None:
        sub = self.subscriptions.pop(packet.subscription_id, None)
        if sub is None:
            self._nack(packet.xid, NO_SUCH_SUB, "No such subscription %1",
                       (Int64(packet.subscription_id - (1 << 64) if packet.subscription_id >> 63
                              else packet.subscription_id),))
            return
        self.expression_bytes -= len(sub.expression.encode("utf-8"))
        await self.router.loop.call(self._filter.modify_constraints, [sub.constraint_id], [])
        self._publish(packet.xid, sub.id)
