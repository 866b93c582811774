"""The Elvin front end's shared state: its channel, its sessions, ids, the secure route.

Strategy: one :class:`Router` per front end. It owns what outlives a session:
the channel the front end serves, the set of open sessions, the allocation
of subscription and quench ids (id64s, never zero, §7.4: "an all zeros
value is reserved", unique across sessions so a log line names one thing),
quench term ids (a keyed hash of the attribute name, so they hold no state:
review 130 found a table of them that only grew),
and the one route that does not go through the channel: a notification
emitted with ``deliver_insecure`` unset may only reach consumers holding a
matching key (§7.4.15), which no CORBA consumer can hold, so it is handed to
the front end's own sessions (:meth:`Router.deliver_secure`) and never enters
the channel. :class:`ElvinFrontEnd` is the listener, which tells every client
"Router is closing down" (Disconn reason 1, §7.4.7) when it closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import os
import threading
from typing import TYPE_CHECKING, Any, Final

from cosnotify.protocols.elvin import keys as K
from cosnotify.protocols.listener import FrontEnd

if TYPE_CHECKING:
    from cosnotify.protocols.elvin.session import Session

__all__ = ["ElvinFrontEnd", "Router", "Stats"]

#: Disconn reasons (§7.4.7).
CLOSING_DOWN: Final = 1
PROTOCOL_ERRORS: Final = 4


class Stats:
    """What the front end did beyond the listener's Counters (tests, metrics)."""

    def __init__(self) -> None:
        self.notifications_in = 0     # NotifyEmit and UNotify accepted
        self.notifications_ignored = 0  # §7.3.3: protocol errors in a NotifyEmit, ignored
        self.notifications_refused = 0  # accepted, but the channel refused them (its limits)
        self.deliveries = 0           # NotifyDeliver packets queued
        self.dropped = 0              # droppable packets dropped (a DropWarn follows)
        self.nacks = 0
        self.delivery_errors = 0      # events a session could not take (a bug): dropped


class Router:
    """State shared by the sessions of one Elvin front end."""

    def __init__(self, channel: Any, loop: Any) -> None:
        self.channel = channel
        self.loop = loop
        self.sessions: set[Session] = set()
        self.stats = Stats()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        #: The key that seals the public keys an Elvin producer's event carries through the
        #: channel (mapping.py), so no CORBA supplier can forge them.
        self.secret = os.urandom(32)

    def new_id(self) -> int:
        """A fresh id64 for a subscription or a quench."""
        with self._lock:
            return next(self._ids)

    def term_id(self, name: str) -> int:
        """The term id of the quench term testing attribute ``name`` (§7.4.25): 64 bits of
        a BLAKE2b of the name keyed with :attr:`secret`, never zero. The same for the name
        for the front end's life, so a SubDelNotify names its SubAddNotify's term, and
        nothing is kept per name; two names share one with odds of 2**-64."""
        digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8,
                                 key=self.secret, person=b"elvin term").digest()
        return int.from_bytes(digest, "big") or 1

    def deliver_secure(self, event: Any, public: K.PublicKeys,
                       sessions: list[Session] | None = None) -> None:
        """A notification for key holders only, to the subscriptions of ``sessions`` (the
        loop's list of them, taken on the loop; None: take it now, on the loop)."""
        if not public:
            return
        for session in list(self.sessions) if sessions is None else sessions:
            session.deliver(event, public, insecure=False)


class ElvinFrontEnd(FrontEnd):
    """The Elvin listener: closing it sends every client Disconn(1) first (§7.4.7)."""

    router: Router

    def close(self) -> None:
        router = getattr(self, "router", None)
        if router is not None:
            async def farewell() -> None:
                for session in list(router.sessions):
                    session.disconnect(CLOSING_DOWN, "")
                await asyncio.sleep(0)
            with contextlib.suppress(Exception):  # the loop may be gone already
                router.loop.submit(farewell()).result(5)
        super().close()
