"""One Elvin client's outbox: replies and deliveries in order, drops and DropWarn (§7.4.12).

Strategy: every packet the router sends a client goes through one
:class:`Outbox`, so replies and deliveries leave in the order they were
queued. The channel's delivery threads append to it without blocking; the
loop writes it in one ``Connection.send``. A *droppable* packet
(NotifyDeliver, SubAddNotify, SubDelNotify: §5.4.6) is dropped when the
client cannot take it -- it is over the client's Packet.Max-Length (the
client "MUST reset the TCP connection" on it, §8.2.1), or the client has more
than Send-Queue.Max-Length bytes unread under the ``newest`` drop policy
(§7.5.1). The first drop of a run queues a DropWarn in its place, "from this
place in the data stream" (§7.4.12), so a client learns of the loss even when
nothing else follows. A *final* packet (Disconn, DisconnRply: "the last
packet sent by a router in a session", §7.4.6, §7.4.7) ends the outbox:
nothing is queued after it, and a second final packet is refused.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Final

from cosnotify.protocols.elvin.codec import encode_packet
from cosnotify.protocols.elvin.packets import DropWarn, Value
from cosnotify.protocols.listener import Connection

__all__ = ["DROPWARN", "Outbox"]

DROPWARN: Final = encode_packet(DropWarn())


class Outbox:
    """The packets queued for one client (any thread)."""

    def __init__(self, connection: Connection, loop: Any, stats: Any,
                 options: Callable[[], Mapping[str, Value]]) -> None:
        self._connection = connection
        self._loop = loop
        self._stats = stats
        self._options = options                      # the session's current options
        self._lock = threading.Lock()
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._scheduled = False
        self._dropped = False                        # in a run of drops (a DropWarn is out)
        self._pending_seen = 0                       # the transport's unsent bytes, last seen
        #: False once the session is closed or its final packet is queued.
        self.open = True

    def queue(self, data: bytes, droppable: bool = False, final: bool = False) -> bool:
        """Append framed ``data``; False if it was not queued (dropped, or the outbox ended)."""
        queued = True
        with self._lock:
            if not self.open:
                return False
            if droppable and self._refuse(data):
                self._stats.dropped += 1
                if self._dropped:
                    return False
                self._dropped = True
                data, queued = DROPWARN, False
            if queued:
                self._dropped = False
            if final:
                self.open = False
            self._out.append(data)
            self._out_bytes += len(data)
            if self._scheduled:
                return queued
            self._scheduled = True
        if self._connection.in_loop():
            self.flush()
        else:
            try:
                self._loop.call_soon_threadsafe(self.flush)
            except RuntimeError:  # the loop is closed
                pass
        return queued

    def _refuse(self, data: bytes) -> bool:
        """Must droppable ``data`` be dropped (``_lock`` held)?"""
        options = self._options()
        if len(data) - 4 > int(options["Packet.Max-Length"]):
            return True
        if options["Send-Queue.Drop-Policy"] != "newest":
            return False
        limit = int(options["Send-Queue.Max-Length"])
        return self._out_bytes + self._pending_seen > limit and (
            self._out_bytes + self._connection.pending() > limit)

    def flush(self) -> None:
        """Write what is queued (the loop's thread)."""
        with self._lock:
            out, self._out = self._out, []
            self._out_bytes = 0
            self._scheduled = False
        if out:
            self._connection.send(b"".join(out), frames=len(out))
        self._pending_seen = self._connection.pending()

    def idle(self) -> bool:
        """Is nothing waiting to be written (§7.4.14's condition for a ConfConn)?"""
        with self._lock:
            busy = bool(self._out)
        return not busy and not self._connection.pending()
