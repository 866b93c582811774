"""The front ends a server runs: ``cosnotify serve --elvin/--eventer/--eventheap/--oes``.

Strategy: a server's configuration lists the front ends it runs
(:class:`FrontEndConfig`: the protocol, where it listens, the channel it
serves); :class:`FrontEnds` starts them on one :class:`~listener.Loop` once
the server's topology is back, and closes them before the channels go, so
no client of a seed protocol talks to a destroyed channel. Each protocol's
package is imported only when asked for, so a server without front ends
loads none of them. Front ends are off by default and listen on 127.0.0.1
unless told otherwise (docs/protocols.md).
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

import attrs

from cosnotify.protocols import Context
from cosnotify.protocols.listener import FrontEnd, Limits, Loop, parse_address

__all__ = ["DEFAULT_PORTS", "PROTOCOLS", "FrontEndConfig", "FrontEnds", "elvin_limits",
           "front_end_config"]

log = logging.getLogger("cosnotify.protocols")

#: The protocols, by the name of their package and flag.
PROTOCOLS = ("elvin", "eventer", "eventheap", "oes")

#: Each protocol's port when a flag gives only a host: the seed's where it names one
#: (Elvin 4 section 8: 2917), else cosnotify's choice (docs/protocols.md).
DEFAULT_PORTS = {"elvin": 2917, "eventer": 23012, "eventheap": 4535, "oes": 7900}


def _protocol(instance: Any, attribute: Any, value: str) -> None:
    if value not in PROTOCOLS:
        raise ValueError(f"unknown protocol {value!r} (known: {', '.join(PROTOCOLS)})")


@attrs.frozen
class FrontEndConfig:
    """One front end of a server: ``--PROTOCOL HOST:PORT``, ``--PROTOCOL-channel`` and the
    protocol's own options (``--elvin-test-conn``)."""

    protocol: str = attrs.field(validator=_protocol)
    host: str = "127.0.0.1"
    port: int = 0
    #: A channel id, or a name made on first use; None: the channel named "default".
    channel: str | None = None
    #: The listener's limits; None: ``Limits()``.
    limits: Limits | None = None


def front_end_config(protocol: str, address: str, channel: str | None = None,
                     limits: Limits | None = None) -> FrontEndConfig:
    """The configuration ``--PROTOCOL ADDRESS`` asks for (ValueError if it is malformed)."""
    host, port = parse_address(address, DEFAULT_PORTS.get(protocol, 0))
    return FrontEndConfig(protocol, host, port, channel, limits)


def elvin_limits(test_conn: float) -> Limits:
    """``--elvin-test-conn SECONDS``: the Elvin front end's ``idle_timeout``, the silence
    after which it sends TestConn (§7.4.13: "This period MUST be configurable, sending
    MUST be able to be disabled"); 0: never, and a silent session is never closed."""
    return Limits(idle_timeout=test_conn or None)


class FrontEnds:
    """The running front ends of one server, on one loop thread."""

    def __init__(self, configs: tuple[FrontEndConfig, ...], factory: Any,
                 server_id: int = 0, store: Any = None) -> None:
        self.loop = Loop()
        self.running: list[tuple[FrontEndConfig, FrontEnd]] = []
        context = Context(factory, self.loop, server_id, store)
        try:
            for config in configs:
                module = importlib.import_module(f"cosnotify.protocols.{config.protocol}")
                front_end = module.start(context, config.host, config.port,
                                         channel=config.channel, limits=config.limits)
                self.running.append((config, front_end))
                log.warning("%s front end at %s:%d", config.protocol, *front_end.address)
        except BaseException:
            self.close()
            raise

    def stats(self) -> list[dict[str, Any]]:
        """Each front end's address and counters (cosnotify.stats, ``ls``, ``top``, metrics)."""
        return [{"protocol": config.protocol, "host": front_end.address[0],
                 "port": front_end.address[1], "channel": config.channel,
                 **front_end.snapshot()}
                for config, front_end in self.running]

    def address(self, protocol: str) -> tuple[str, int]:
        """Where the front end of ``protocol`` listens (KeyError if none runs)."""
        for config, front_end in self.running:
            if config.protocol == protocol:
                return front_end.address
        raise KeyError(protocol)

    def close(self) -> None:
        """Close every front end (their connections too), then the loop: one that fails
        to close is logged, and the others and the loop are closed all the same (the
        server's stop goes on to its channels)."""
        running, self.running = self.running, []
        for config, front_end in running:
            try:
                front_end.close()
            except Exception:
                log.exception("closing the %s front end failed", config.protocol)
        self.loop.close()
