"""One Elvin client's quench registrations (seed §5.3.3, §7.4.21 - §7.4.27).

Strategy: cosnotify's quench data is what the ELVIN4 grammar reports
(docs/grammars/elvin4.md, "Quench"): every ELVIN4 constraint on the channel
-- an Elvin client's subscription or a CORBA consumer's filter -- adds the
subscription type ``("%ATTRIBUTE", name)`` for each attribute it tests, and
the channel tells every supplier (here, the client's proxy consumer) with
``subscription_change`` when the first constraint testing a name appears and
when the last one goes. :class:`Quenches` keeps the names active on the
channel -- only while the client holds a quench (review 130: every session
kept its own copy of every tested name): the first quench reads them from
the channel (:meth:`Quenches.track`), with the changes heard meanwhile
applied on top, in order, and the last one going forgets them -- and the
client's registrations, and turns each change into the seed's packets: a SubAddNotify whose ``sub_expr`` is the term
``require(name)`` (func_require_tc over name_tc, §8.2.3.4) with a
``term_id`` per name, and a SubDelNotify when the name goes.

This is coarser than the seed, which sends the quencher each subscription's
syntax tree: the channel aggregates names, not trees. Keys: the channel's
subscriptions carry none, so a term is reported only to quenches with
``deliver_insecure`` set, as insecure matches (§7.4.25: "the insecure
quenches did not have matching keys but both the subscription's
accept_insecure and the quench's deliver_insecure flags were set").
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Final

import attrs
from omniORB import CORBA

import CosNotifyChannelAdmin as CA

from cosnotify.eventtypes import ATTRIBUTE_DOMAIN
from cosnotify.filter.elvin4.values import Int64
from cosnotify.protocols.elvin import keys as K
from cosnotify.protocols.elvin.codec import encode_packet
from cosnotify.protocols.elvin.nacks import IMPL_LIMIT
from cosnotify.protocols.elvin.packets import (
    Packet,
    QnchAddRqst,
    QnchModRqst,
    SubAddNotify,
    SubAST,
    SubDelNotify,
    Value,
)
from cosnotify.protocols.elvin.router import Router

__all__ = ["Quench", "Quenches", "Refused"]

#: Nack codes (§7.4.2).
NO_SUCH_QUENCH, EMPTY_QUENCH, ATTR_EXISTS, NO_SUCH_ATTR = 1003, 2201, 2202, 2203
#: Quenches one session may hold (cosnotify's limit; the seed sets none).
MAX_QUENCHES: Final = 1024
#: Attribute names one session's quenches may hold in all (review 97: unbounded, one
#: client held 789 MiB of names, scanned at every change of the channel's subscriptions).
MAX_QUENCH_NAMES: Final = 4096
#: SubAST type codes (§8.2.3.4).
NAME_TC: Final = 1
REQUIRE_TC: Final = 64


class Refused(Exception):
    """A quench request the router Nacks: ``code``, ``message`` and ``nack_args``."""

    def __init__(self, code: int, message: str, args: tuple[Value, ...] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.nack_args = args


@attrs.define
class Quench:
    """One QnchAddRqst's registration (§7.4.21)."""

    id: int
    names: set[str]
    deliver_insecure: bool
    keys: set[K.RawKey]
    #: Added or modified, its report not yet sent (after the QnchRply): the channel's
    #: changes skip it meanwhile, and the report tells it the names as they are then.
    pending: bool = False


def _names(types: list[Any]) -> set[str]:
    """The attribute names among ``("%ATTRIBUTE", name)`` subscription types."""
    return {t.type_name for t in types if t.domain_name == ATTRIBUTE_DOMAIN}


def term(name: str) -> SubAST:
    """The quench term reported for attribute ``name``: ``require(name)``."""
    return SubAST(REQUIRE_TC, None, (SubAST(NAME_TC, name),))


def _signed(value: int) -> int:
    return value - (1 << 64) if value >> 63 else value


def _keys(*all_keys: Any) -> None:
    try:
        for keys in all_keys:
            K.check(keys)
    except K.BadKeys as exc:
        raise Refused(exc.code, f"{exc}: %1", exc.nack_args) from None


def _bounded_keys(keys: set[K.RawKey]) -> set[K.RawKey]:
    if len(keys) > K.MAX_KEYS:
        raise Refused(IMPL_LIMIT, f"Request exceeds implementation limit: {K.MAX_KEYS} keys "
                      "a quench")
    return keys


class Quenches:
    """The quenches of one session and the attribute names active on the channel."""

    def __init__(self, router: Router, queue: Callable[[bytes, bool], object]) -> None:
        self._router = router
        self._queue = queue
        self._lock = threading.Lock()
        self.table: dict[int, Quench] = {}
        #: The names tested on the channel; None while no quench is held (not followed).
        self.active: set[str] | None = None
        #: Changes heard while :meth:`track` reads the channel's names; else None.
        self._heard: list[tuple[set[str], set[str]]] | None = None
        #: Names the quenches hold, in all (MAX_QUENCH_NAMES).
        self.names = 0

    def _tell(self, names: set[str], quenches: list[Quench], added: bool) -> None:
        for name in sorted(names):
            ids = tuple(q.id for q in quenches if name in q.names and q.deliver_insecure)
            if not ids:
                continue
            term_id = self._router.term_id(name)
            packet: Packet = (SubAddNotify((), ids, term_id, term(name)) if added
                              else SubDelNotify(ids, term_id))
            self._queue(encode_packet(packet), True)   # droppable (§5.4.6)

    def attributes_changed(self, added: list[Any], removed: list[Any]) -> None:
        """The channel's ``("%ATTRIBUTE", name)`` types changed (any thread)."""
        with self._lock:
            if self.active is None:
                if self._heard is None:
                    return                 # no quench: the names are not followed
                self._heard.append((_names(added), _names(removed)))
                return
            new, gone = _names(added), _names(removed)
            new -= self.active
            gone &= self.active
            self.active |= new
            self.active -= gone
            quenches = [q for q in self.table.values() if not q.pending]
        self._tell(new, quenches, True)
        self._tell(gone, quenches, False)

    def track(self, proxy: Any) -> None:
        """Follow the channel's names from now (before a first quench: not the loop's
        thread). The changes heard while they are read are applied on top, in order: the
        channel relays them in order, so one made before the read and heard after it
        changes nothing the later ones do not set right."""
        with self._lock:
            if self.active is not None or self._heard is not None:
                return
            self._heard = []
        try:
            types = proxy.obtain_subscription_types(CA.ALL_NOW_UPDATES_ON)
        except CORBA.SystemException:  # the channel is gone: its callbacks end the session
            types = []
        with self._lock:
            active = _names(types)
            for new, gone in self._heard:
                active |= new
                active -= gone
            self.active, self._heard = active, None

    def add(self, packet: QnchAddRqst) -> tuple[int, Callable[[], None]]:
        """Register a quench: its id, and what to send after the QnchRply (§7.4.21)."""
        try:
            return self._add(packet)
        except Refused:
            with self._lock:
                if not self.table:
                    self.active = None     # still no quench: stop following the names
            raise

    def _add(self, packet: QnchAddRqst) -> tuple[int, Callable[[], None]]:
        if not packet.names:
            raise Refused(EMPTY_QUENCH, "Empty quench")
        _keys(packet.keys)
        names = set(packet.names)
        raw = _bounded_keys(K.flatten(packet.keys))
        with self._lock:
            if len(self.table) >= MAX_QUENCHES:
                raise Refused(IMPL_LIMIT, f"Request exceeds implementation limit: "
                              f"{MAX_QUENCHES} quenches a connection")
            self._check_names(len(names))
            quench = Quench(self._router.new_id(), names, packet.deliver_insecure, raw,
                            pending=True)
            self.table[quench.id] = quench
            self.names += len(names)
        before = Quench(quench.id, set(), quench.deliver_insecure, set())
        return quench.id, lambda: self._report(quench, before, set())

    def _find(self, quench_id: int) -> Quench:
        quench = self.table.get(quench_id)
        if quench is None:
            # §7.4.2: NO_SUCH_QUENCH's argument is "quench_id, id64": an int64 Value.
            raise Refused(NO_SUCH_QUENCH, "No such quench %1", (Int64(_signed(quench_id)),))
        return quench

    def modify(self, packet: QnchModRqst) -> Callable[[], None]:
        """Change a quench's names, flag and keys (§7.4.22); what to send after."""
        quench = self._find(packet.quench_id)
        _keys(packet.add_keys, packet.del_keys)
        for name in packet.names_add:
            if name in quench.names:
                raise Refused(ATTR_EXISTS, "Quench attribute %1 exists", (name,))
        for name in packet.names_del:
            if name not in quench.names:
                raise Refused(NO_SUCH_ATTR, "No such attribute %1", (name,))
        names = (quench.names | set(packet.names_add)) - set(packet.names_del)
        if not names:
            raise Refused(EMPTY_QUENCH, "Empty quench")
        keys = _bounded_keys((quench.keys | K.flatten(packet.add_keys))
                             - K.flatten(packet.del_keys))
        with self._lock:
            self._check_names(len(names) - len(quench.names))
            before = Quench(quench.id, set(quench.names), quench.deliver_insecure, set())
            self.names += len(names) - len(quench.names)
            quench.names, quench.deliver_insecure = names, packet.deliver_insecure
            quench.keys = keys
            quench.pending = True
            active = set(self.active or ())
        return lambda: self._report(quench, before, active)

    def _report(self, quench: Quench, before: Quench, told: set[str]) -> None:
        """After the QnchRply: tell ``quench`` what differs between what it was told
        (``before``'s names among ``told``, the names active then) and what it hears
        now, under the lock, so that the channel's changes, which skipped it while it
        was pending, come after (review 143: a name gone in between was reported as
        added after its removal had gone out, and the client kept it for good)."""
        with self._lock:
            quench.pending = False
            active = self.active or set()
            heard = {n for n in told & before.names if before.deliver_insecure}
            hears = {n for n in active & quench.names if quench.deliver_insecure}
            after = Quench(quench.id, set(quench.names), quench.deliver_insecure, set())
            self._tell(hears - heard, [after], True)
            self._tell(heard - hears, [before], False)

    def delete(self, quench_id: int) -> None:
        """Forget a quench (§7.4.23)."""
        with self._lock:
            self.names -= len(self._find(quench_id).names)
            del self.table[quench_id]
            if not self.table:
                self.active = None         # no quench: stop following the names

    def _check_names(self, more: int) -> None:
        """With the lock held: IMPL_LIMIT if ``more`` names would pass MAX_QUENCH_NAMES."""
        if self.names + more > MAX_QUENCH_NAMES:
            raise Refused(IMPL_LIMIT, f"Request exceeds implementation limit: "
                          f"{MAX_QUENCH_NAMES} quench attribute names a connection")
