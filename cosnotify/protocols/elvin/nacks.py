"""Nack error codes (seed §7.4.2) and the arguments of a subscription error.

Strategy: the codes are the rows of §7.4.2's table the router sends, as
constants; :func:`subscription_nack_args` gives a SubscriptionError of the
ELVIN4 grammar the arguments its row lists ("offset, int32; token, string"
and so on), so a client can fill the message template's ``%n``;
:func:`encode_nack` cuts a message (which may quote the request) so the Nack
fits the client's Packet.Max-Length (§8.2.1).
"""

from __future__ import annotations

import re
from typing import Final

import attrs

from cosnotify.filter.elvin4 import SubscriptionError
from cosnotify.protocols.elvin.codec import encode_packet
from cosnotify.protocols.elvin.packets import Nack, Value

__all__ = ["IMPL_LIMIT", "KEY_EXISTS", "NO_SUCH_KEY", "NO_SUCH_SUB", "PROT_ERROR",
           "PROT_INCOMPAT", "QOS_LIMIT", "encode_nack", "subscription_nack_args"]

PROT_INCOMPAT: Final = 1
PROT_ERROR: Final = 1001
NO_SUCH_SUB: Final = 1002
NO_SUCH_KEY: Final = 2001
KEY_EXISTS: Final = 2002
QOS_LIMIT: Final = 2005
IMPL_LIMIT: Final = 2006


def _word(text: str, offset: int) -> str:
    rest = text[offset:offset + 64].split()
    return rest[0] if rest else ""


def subscription_nack_args(error: SubscriptionError, text: str) -> tuple[Value, ...]:
    """The §7.4.2 arguments of a subscription error (offset first, then a token)."""
    if error.name in ("EXP_IS_TRIVIAL",):
        return ()
    if error.name == "QOS_LIMIT":
        return ("Subscription.Max-Length",)
    if error.name in ("UNTERM_STRING", "NESTING_TOO_DEEP"):
        return (error.offset,)
    token = _word(text, error.offset)
    if error.name in ("UNKNOWN_FUNC", "TOO_FEW_ARGS", "TOO_MANY_ARGS"):
        token = token.split("(")[0]
    if error.name == "TYPE_MISMATCH":
        # Its arguments are "offset, int32; expr, string; type, string" (§7.4.2).
        found = re.search(r"not an? (\w+)", error.message)
        return (error.offset, token, found.group(1) if found else error.message)
    return (error.offset, token)


#: The longest string argument a Nack carries (a token: _word's 64 characters).
MAX_ARGUMENT: Final = 64
_CUT: Final = "..."


def encode_nack(nack: Nack, limit: int) -> bytes:
    """``nack`` framed, its message cut (ending ``...``) so the packet is at most ``limit``
    bytes, the client's Packet.Max-Length: §8.2.1, "After reading a header preceding a
    packet exceeding that length, the implementation MUST reset the TCP connection"
    (review 130: a message quoting a 900-byte expression passed 1024)."""
    data = encode_packet(nack)
    over = len(data) - 4 - limit
    if over <= 0:
        return data
    raw = nack.message.encode("utf-8")
    # 3 bytes of XDR padding may appear, and the cut mark takes its own
    keep = max(0, len(raw) - over - 3 - len(_CUT))
    message = raw[:keep].decode("utf-8", "ignore") + _CUT
    args = tuple(arg[:MAX_ARGUMENT] if type(arg) is str else arg for arg in nack.args)
    return encode_packet(attrs.evolve(nack, message=message, args=args))
