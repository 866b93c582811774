"""The seeds' own wire protocols as front ends of one service (docs/protocols.md).

Strategy: one sub-package per seed protocol -- ``elvin``, ``eventer``,
``eventheap``, ``oes`` -- each a sans-IO codec, a session per connection
over ``listener.py``'s transport, and the mapping of its messages onto the
in-process core: channels, proxies, filters, the store, the tuple space and
the trees. None of them imports another. Their clients and CORBA clients
share channels: a front end's events enter a channel as a supplier's do,
and reach its consumers whatever they speak.

:class:`Context` is what a front end gets from the server: the factory, the
loop, the server id and where its channel is. ``channel`` names the channel
a front end serves: a channel id (digits), or a channel name (TAO's named
channels), made on first use with the front end's QoS when no channel has
it; by default the channel named ``default``.
"""

from __future__ import annotations

import threading
from typing import Any

import attrs

from cosnotify.protocols.listener import Loop

__all__ = ["DEFAULT_CHANNEL", "Context"]

#: The channel every front end serves unless told otherwise.
DEFAULT_CHANNEL = "default"

_made = threading.Lock()


@attrs.frozen
class Context:
    """What the server hands a front end."""

    factory: Any                 # the in-process EventChannelFactory
    loop: Loop
    server_id: int = 0           # Eventer's EventId.server, and the like
    store: Any = None            # the server's store, when it has one

    def channel(self, spec: str | int | None = None,
                initial_admin: list[Any] | None = None) -> Any:
        """The channel ``spec`` names: an id, a name (made on first use), None -> default.

        Raises CosNotifyChannelAdmin.ChannelNotFound for an id no channel has. The
        lock orders the front ends of this process; a CORBA client may make the name
        meanwhile (create_named_channel), and then its channel is the one served.
        """
        import CosNotifyChannelAdmin as CA
        import NotifyMonitoringExt

        if spec is None:
            spec = DEFAULT_CHANNEL
        if isinstance(spec, int) or (spec.isascii() and spec.isdigit()):
            found = self.factory._find_channel(int(spec))
            if found is None:
                raise CA.ChannelNotFound()
            return found
        with _made:
            for _ in range(3):  # the name taken between the look and the make: look again
                found = self._named(spec)
                if found is not None:
                    return found
                try:
                    channel, _ = self.factory.create_named_channel([], initial_admin or [],
                                                                   spec)
                except NotifyMonitoringExt.NameAlreadyUsed:
                    continue
                return channel
            raise NotifyMonitoringExt.NameAlreadyUsed()  # taken and gone, again and again

    def _named(self, name: str) -> Any:
        """The channel named ``name``, or None."""
        for channel_id in self.factory.get_all_channels():
            found = self.factory._find_channel(channel_id)
            if found is not None and getattr(found, "_name", None) == name:
                return found
        return None
