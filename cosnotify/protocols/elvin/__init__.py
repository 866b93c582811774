"""The Elvin 4 front end: Elvin clients on a cosnotify channel (docs/protocols.md, "Elvin 4").

Strategy: the seed's standard protocol (seeds/elvin-client-protocol-4.0.txt
§8.2: XDR marshalling over TCP with a 4-byte length per packet, default port
2917) as a listener of ``cosnotify serve --elvin HOST:PORT``. Subsets A
(UNotify), B (sessions, notifications, subscriptions, keys) and C (QoS and
quench) of §7.2 are implemented. The layers, each in its module: ``xdr``
(base types, the codec's error), ``packets`` (the §7.4 packets as frozen
attrs classes and the table that encodes them), ``codec`` (the sans-IO
framing), ``options`` (§7.5 negotiation), ``keys`` (the key schemes),
``mapping`` (notification <-> structured event), ``nacks`` (Nack codes and
arguments), ``outbox`` (what one client is sent, drops and DropWarn),
``callbacks`` (what the client's proxies call), ``session`` (one client: its
packets, its proxies), ``router`` (what the sessions share).
"""

from __future__ import annotations

from typing import Final

from cosnotify.protocols import Context
from cosnotify.protocols.elvin.codec import NEED_DATA, Decoder, encode_packet
from cosnotify.protocols.elvin.router import ElvinFrontEnd, Router
from cosnotify.protocols.elvin.session import Session
from cosnotify.protocols.elvin.xdr import ElvinCodecError
from cosnotify.protocols.listener import Connection, Limits

__all__ = ["DEFAULT_PORT", "NEED_DATA", "Decoder", "ElvinCodecError", "ElvinFrontEnd",
           "encode_packet", "start"]

#: "The IANA-assigned port number for Elvin client protocol is 2917" (§8.2.1).
DEFAULT_PORT: Final = 2917


def start(context: Context, host: str = "127.0.0.1", port: int = DEFAULT_PORT, *,
          channel: str | None = None, limits: Limits | None = None) -> ElvinFrontEnd:
    """Listen for Elvin 4 clients on ``host:port``, serving ``channel`` (an id or a name;
    None: the channel named "default"). Returns the running front end."""
    router = Router(context.channel(channel), context.loop)

    def session(connection: Connection) -> Session:
        return Session(router, connection)

    front_end = ElvinFrontEnd("elvin", context.loop, host, port, session, limits)
    front_end.router = router
    return front_end
