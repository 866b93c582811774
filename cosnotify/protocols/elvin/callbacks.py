"""The in-process objects an Elvin client's proxies call (session.py).

Strategy: a client is a proxy consumer (its NotifyEmits) and a proxy supplier
(its deliveries) on the channel. Each proxy is connected to one of these small
objects, which hand what the channel says to the session: subscription
changes (quench), events (with the producer's keys, verified), and the
channel disconnecting the client (Disconn reason 1, §7.4.7).
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from cosnotify.protocols.elvin import keys as K
from cosnotify.protocols.elvin.mapping import event_keys

__all__ = ["Consumer", "Supplier"]

log = logging.getLogger("cosnotify.protocols.elvin")


class _Session(Protocol):
    router: Any

    def attributes_changed(self, added: list[Any], removed: list[Any]) -> None: ...

    def deliver(self, event: Any, public: K.PublicKeys, insecure: bool) -> None: ...

    def disconnect(self, reason: int, args: str) -> None: ...


class Supplier:
    """The in-process supplier of the client's proxy consumer: hears subscription_change."""

    def __init__(self, session: _Session) -> None:
        self._session = session

    def subscription_change(self, added: list[Any], removed: list[Any]) -> None:
        self._session.attributes_changed(added, removed)

    def disconnect_structured_push_supplier(self) -> None:
        self._session.disconnect(1, "")


class Consumer:
    """The in-process structured push consumer of the client's proxy supplier."""

    def __init__(self, session: _Session) -> None:
        self._session = session

    def push_structured_event(self, event: Any) -> None:
        session = self._session
        try:
            session.deliver(event, event_keys(event, session.router.secret), insecure=True)
        except Exception:  # one event the session cannot take costs that event, not the
            # client: raised, the channel would retry it and then disconnect the client
            stats = session.router.stats
            stats.delivery_errors += 1
            log.log(logging.ERROR if stats.delivery_errors == 1 else logging.DEBUG,
                    "elvin: an event could not be delivered to a session; dropped (%d so "
                    "far: Stats.delivery_errors)", stats.delivery_errors, exc_info=True)

    def offer_change(self, added: list[Any], removed: list[Any]) -> None:
        pass

    def disconnect_structured_push_consumer(self) -> None:
        self._session.disconnect(1, "")
