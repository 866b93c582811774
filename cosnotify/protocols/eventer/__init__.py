"""The Eventer front end: hat-event's clients on a cosnotify channel (docs/protocols.md, "Eventer").

Strategy: the Eventer seed's protocol -- Chatter framing of the ``HatEventer``
SBS module, ``tcp+sbs`` -- as a listener of the shared transport
(``cosnotify/protocols/listener.py``). :mod:`.schema` holds hat-event's
published module and a bounds check, :mod:`.codec` the sans-IO Chatter side
(hat-sbs encodes and decodes), :mod:`.mapping` the events, ids and queries on
the core's terms, :mod:`.session` the connections. :func:`start` opens the
channel -- made with retention (``RetainCount``) when the front end creates it
and a store is there, so queries have a history to read -- and listens.
"""

from __future__ import annotations

import logging
from typing import Any

from omniORB import CORBA

import CosNotification as N

from cosnotify.protocols import Context
from cosnotify.protocols.eventer.session import EventerService, EventerSession
from cosnotify.protocols.listener import Connection, FrontEnd, Limits

__all__ = ["DEFAULT_PORT", "DEFAULT_RETAIN_COUNT", "EventerFrontEnd", "start"]

log = logging.getLogger("cosnotify.protocols.eventer")

#: hat-event's Eventer port (its server's default ``tcp+sbs://127.0.0.1:23012``).
DEFAULT_PORT = 23012
#: The RetainCount a channel this front end creates gets (docs/qos.md).
DEFAULT_RETAIN_COUNT = 1_000_000


class EventerFrontEnd(FrontEnd):
    """The Eventer listener: a FrontEnd that also lets go of its channel proxy."""

    service: EventerService

    def close(self) -> None:
        super().close()
        self.service.close()


def _store_of(context: Context) -> Any:
    if context.store is not None:
        return context.store
    topology = getattr(getattr(context.factory, "_service", None), "topology", None)
    return None if topology is None else topology.store


def start(context: Context, host: str = "127.0.0.1", port: int = DEFAULT_PORT, *,
          channel: str | None = None, limits: Limits | None = None,
          retain_count: int = DEFAULT_RETAIN_COUNT) -> FrontEnd:
    """Listen for Eventer clients on ``host:port``, serving ``channel`` (an id, or a name
    made on first use; None: the channel named "default"). With a store, the channel
    retains events: one made here gets ``RetainCount`` ``retain_count``, and one that
    exists without retention (made first by another front end, say) is given it
    (``set_admin``), so queries have a history; ``retain_count`` 0 leaves channels as
    they are."""
    store = _store_of(context)
    admin = [] if store is None or not retain_count else [
        N.Property("RetainCount", CORBA.Any(CORBA.TC_long, retain_count))]
    served = context.channel(channel, admin)
    if admin and getattr(served, "_retention", None) is None:
        log.warning("eventer: channel %s kept no history; RetainCount %d set for queries",
                    channel or "default", retain_count)
        served.set_admin(admin)
    limits = limits or Limits()
    # A query's reply is one message: at most half the bytes a client may have queued.
    service = EventerService(served, context.loop, context.server_id, store,
                             max_reply=limits.max_pending // 4)
    holder: list[EventerFrontEnd] = []

    def session(connection: Connection) -> EventerSession:
        return EventerSession(service, limits, holder[0].counters)

    try:
        front_end = EventerFrontEnd("eventer", context.loop, host, port, session, limits)
    except BaseException:
        service.close()
        raise
    front_end.service = service
    holder.append(front_end)
    return front_end
