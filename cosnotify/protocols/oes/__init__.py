"""OES clients on a channel's tree: the seed's request/reply text protocol (``--oes``).

Strategy: the Object Eventing Service seed's "Wire Protocol"
(/work/shared/seeds/object-eventing-service.txt) is HTTP-like: UTF-7 lines,
headers, XML bodies with base64 content, and a reply per request. ``codec``
turns bytes into requests and replies and back, without I/O; ``bodies``
parses and writes the XML (defusedxml: no DTD, no entities, bounded depth);
``session`` maps each verb onto the OES tree of the front end's channel
(``Tree.of(channel)``, cosnotify/oes), as the CORBA front does; ``contacts``
delivers NOTIFY to a contract's ``tcp:<host>:<port>`` contact by connecting
to it from the front end's loop. A wire client's POST is a tree operation,
so its notification reaches every consumer of the channel (CORBA ones with
EXTENDED_TCL filters included), and a wire contract's subscriptions are
OES_SUBTREE filters of the channel, so changes made through the Tree API, over
CORBA or by a structured supplier of ``OES`` events reach its contact.
docs/protocols.md, "OES" documents the mapping.
"""

from __future__ import annotations

from typing import Literal

from cosnotify.oes import Tree
from cosnotify.protocols import Context
from cosnotify.protocols.listener import Connection, FrontEnd, Limits
from cosnotify.protocols.oes.session import Options, Service, Session

__all__ = ["DEFAULT_PORT", "OESFrontEnd", "Options", "start"]

#: The seed names no port: by default the system picks one (``--oes HOST:PORT`` sets it).
DEFAULT_PORT = 0


class OESFrontEnd(FrontEnd):
    """The OES listener; ``service`` holds its tree, contracts and NOTIFY counters."""

    service: Service

    def close(self) -> None:
        """Stop listening, close the connections, cancel the contracts leased here."""
        super().close()
        self.service.close()

    def snapshot(self) -> dict[str, int]:
        """The listener's counters and the NOTIFY deliveries (sent, failed)."""
        return {**self.counters.snapshot(), **self.service.tally.snapshot(),
                "contracts": len(self.service.contracts())}


def start(context: Context, host: str = "127.0.0.1", port: int = DEFAULT_PORT, *,
          channel: str | None = None, limits: Limits | None = None,
          lease: float = 600.0, notify_timeout: float = 10.0,
          read_not_found: Literal[402, 404] = 404, explain: bool = False,
          contacts: Literal["peer", "any"] = "peer",
          contact_connections: int = 256, contracts_per_connection: int = 1_000,
          contracts_per_host: int = 5_000) -> OESFrontEnd:
    """Serve the OES tree of ``channel`` (an id, a name, None: ``default``) on
    ``host:port``; the keyword options are :class:`Options`'."""
    options = Options(lease, notify_timeout, read_not_found, explain, contacts,
                      contact_connections, contracts_per_connection, contracts_per_host)
    tree = Tree.of(context.channel(channel))
    service = Service(context.loop, tree, options)

    def session(connection: Connection) -> Session:
        return Session(service, connection)

    front_end = OESFrontEnd("oes", context.loop, host, port, session, limits)
    front_end.service = service
    return front_end
