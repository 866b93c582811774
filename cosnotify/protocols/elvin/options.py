"""Elvin 4 connection options (seed §7.5) and their negotiation (ConnRqst, QosRqst).

Strategy: every option the router understands is one row of :data:`OPTIONS`
(data, not code): its type, its default, and the range the router accepts.
:func:`negotiate` answers a request as §7.5 requires, option by option:
(a) a value understood and accepted is returned as asked; (b) one
understood but refused (out of range, wrong type) is returned with the
value the router will provide instead; (c) "Unrecognised options MUST NOT
be returned by the router" (§7.4.4) -- they are left out. The
compatibility names of §7.5.3 (``router.attribute.max-count`` ...) are
understood too, and answered under the name the client used. Every other
option is returned too, with the value in force: a QosRply specifies "the
active option values" (§7.4.10), a ConnRply must carry every non-default
value (§7.4.4) and the seed sets no defaults, and Supported-Key-Schemes
"SHOULD always" be included (§7.5.1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

import cosnotify
from cosnotify.filter.elvin4 import MAX_LENGTH
from cosnotify.protocols.elvin import keys
from cosnotify.protocols.elvin.packets import NameValues, Value

__all__ = ["COMPATIBILITY", "DROP_POLICIES", "OPTIONS", "Option", "defaults", "negotiate"]

#: Receive/Send-Queue.Drop-Policy's legal values (§7.5.1).
DROP_POLICIES: Final = ("oldest", "newest", "largest", "none")


@attrs.frozen
class Option:
    """One connection option: ``kind`` is ``int32`` or ``string``."""

    kind: str
    default: Value
    low: int = 0
    high: int = 0
    #: For strings: the values accepted; for the router's own options, empty.
    accepted: tuple[str, ...] = ()
    #: The router's value whatever is asked (Supported-Key-Schemes, ...).
    dictated: bool = False


def _options(max_packet: int, send_queue: int) -> dict[str, Option]:
    """The table of §7.5, with this router's ranges (docs/protocols.md, "Elvin 4", "Limits")."""
    return {
        "Attribute.Max-Count": Option("int32", 256, 16, 4096),
        "Attribute.Name.Max-Length": Option("int32", 1024, 64, 1024),
        "Attribute.Opaque.Max-Length": Option("int32", max_packet, 1024, max_packet),
        "Attribute.String.Max-Length": Option("int32", max_packet, 1024, max_packet),
        "Packet.Max-Length": Option("int32", max_packet, 1024, max_packet),
        # No queue of received packets: "it MUST accept any legal value" (§7.5.1).
        "Receive-Queue.Drop-Policy": Option("string", "oldest", accepted=DROP_POLICIES),
        "Receive-Queue.Max-Length": Option("int32", 1 << 20, 0, 2**31 - 1),
        # The send queue drops the newest packet, or (none) never drops and the
        # listener closes a client that falls max_pending bytes behind.
        "Send-Queue.Drop-Policy": Option("string", "newest", accepted=("newest", "none")),
        "Send-Queue.Max-Length": Option("int32", send_queue, 1024, send_queue),
        "Subscription.Max-Count": Option("int32", 1024, 1, 65536),
        "Subscription.Max-Length": Option("int32", 2048, 64, MAX_LENGTH),
        "TCP.Send-Immediately": Option("int32", 1, 1, 1),   # §8.2.1.1; asyncio sets NODELAY
        "Supported-Key-Schemes": Option(
            "string", " ".join(name for name, _ in keys.SCHEMES.values()), dictated=True),
        "Vendor-Identification": Option("string", f"cosnotify {cosnotify.__version__}",
                                        dictated=True),
    }


#: The standard names (with a 1 MiB packet limit and 8 MiB send queue, for documentation).
OPTIONS: Final = _options(1 << 20, 8 << 20)

#: §7.5.3: compatibility name -> standard name.
COMPATIBILITY: Final = {
    "router.attribute.max-count": "Attribute.Max-Count",
    "router.attribute.name.max-length": "Attribute.Name.Max-Length",
    "router.attribute.opaque.max-length": "Attribute.Opaque.Max-Length",
    "router.attribute.string.max-length": "Attribute.String.Max-Length",
    "router.packet.max-length": "Packet.Max-Length",
    "router.recv-queue.drop-policy": "Receive-Queue.Drop-Policy",
    "router.recv-queue.max-length": "Receive-Queue.Max-Length",
    "router.send-queue.drop-policy": "Send-Queue.Drop-Policy",
    "router.send-queue.max-length": "Send-Queue.Max-Length",
    "router.subscription.max-count": "Subscription.Max-Count",
    "router.subscription.max-length": "Subscription.Max-Length",
    "router.supported-keyschemes": "Supported-Key-Schemes",
    "router.vendor-identification": "Vendor-Identification",
}


def defaults(max_packet: int, send_queue: int) -> dict[str, Value]:
    """A new session's option values."""
    return {name: o.default for name, o in _options(max_packet, send_queue).items()}


def _answer(option: Option, asked: Value) -> Value:
    if option.dictated:
        return option.default
    if option.kind == "int32":
        if type(asked) is int and option.low <= asked <= option.high:
            return asked
        if isinstance(asked, int) and type(asked) is not bool:  # an int64, or out of range
            return max(option.low, min(option.high, int(asked)))
        return option.default
    if type(asked) is str and asked in option.accepted:
        return asked
    return option.default


def negotiate(current: Mapping[str, Value], requested: NameValues, max_packet: int,
              send_queue: int) -> tuple[dict[str, Value], NameValues]:
    """The session's new options and the ConnRply/QosRply table answering ``requested``."""
    table = _options(max_packet, send_queue)
    values: dict[str, Any] = dict(current)
    answered: dict[str, str] = {}     # the name the client used -> the standard name
    for name, asked in requested:
        standard = COMPATIBILITY.get(name, name)
        option = table.get(standard)
        if option is None:
            continue          # (c): not recognised, not returned
        values[standard] = _answer(option, asked)
        answered[name] = standard
    # Built from the final values: an option asked twice (or under both of its names)
    # is answered with the one value that is in force, never a value overridden later.
    reply: dict[str, Value] = {name: values[standard] for name, standard in answered.items()}
    # Then every other option in force: QosRply "MUST respond with a QosRply specifying
    # the active option values" (§7.4.10), and in a ConnRply "where the router
    # implementation uses a non-default value, it MUST be sent to the client" (§7.4.4) --
    # the seed sets no defaults, so every limit is sent (§8.2.3.3: "connection replys
    # SHOULD also provide such limitations").
    covered = set(answered.values())
    for name, option in table.items():
        if name not in covered:
            reply[name] = option.default if option.dictated else values[name]
    return values, tuple(reply.items())
