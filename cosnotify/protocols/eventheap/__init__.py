"""The Event Heap wire protocol front end: ``cosnotify serve --eventheap HOST:PORT``.

Strategy: the seed (Event Heap wire protocol, B. Johanson 2003;
docs/protocols.md, "Event Heap") in three layers that never import a sibling
protocol: ``wire`` (the fundamental types and Java's modified UTF-8) and
``codec`` (wire bundles, sans IO), ``mapping`` (tuples as Notification
events and EVENTHEAP templates), and ``session`` (one connection: the
server operations on the channel's tuple space, cosnotify/tuplespace) with
``server`` (what its connections share: limits, the wait pool).
:func:`start` opens the listener on the shared transport
(cosnotify/protocols/listener.py). The seed names no port; cosnotify takes
4535 (``serve.DEFAULT_PORTS``).
"""

from __future__ import annotations

from typing import Any, Final

from cosnotify.protocols import Context
from cosnotify.protocols.eventheap.server import EventHeapServer
from cosnotify.protocols.listener import FrontEnd, Limits

__all__ = ["DEFAULT_PORT", "EventHeapFrontEnd", "start"]

#: The port ``--eventheap HOST`` listens on (the seed names none).
DEFAULT_PORT: Final = 4535


class EventHeapFrontEnd(FrontEnd):
    """The listener, which also ends its waits and their threads when it closes."""

    def __init__(self, server: EventHeapServer, host: str, port: int, limits: Limits) -> None:
        self.server = server
        super().__init__("eventheap", server.loop, host, port, server.session, limits)

    @property
    def space(self) -> Any:
        """The tuple space it serves."""
        return self.server.space

    def close(self) -> None:
        super().close()
        self.server.close()


def start(context: Context, host: str = "127.0.0.1", port: int = DEFAULT_PORT, *,
          channel: str | None = None, limits: Limits | None = None) -> EventHeapFrontEnd:
    """Listen for Event Heap clients on ``host:port``, serving ``channel``'s tuple space
    (a channel id, or a name made on first use; None: the channel named "default")."""
    limits = limits or Limits()
    server = EventHeapServer(context, context.channel(channel), limits)
    try:
        return EventHeapFrontEnd(server, host, port, limits)
    except BaseException:
        server.close()
        raise
