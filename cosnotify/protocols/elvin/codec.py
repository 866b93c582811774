"""The Elvin 4 TCP framing (seed section 8.2.1) over the packet codec: sans-IO.

Strategy: as h11 does, :class:`Decoder` never touches a socket. The session
feeds it bytes (:meth:`Decoder.receive_data`) and takes packets
(:meth:`Decoder.next_packet`) until it answers :data:`NEED_DATA`. Each packet
is "preceded by a 4-octet framing header ... an unsigned 2's complement
integer in network byte order, specifying the length of the contained
packet" (§8.2.1). A header announcing more than ``max_packet`` bytes raises
a *fatal* ElvinCodecError before any of that packet is buffered: "After
reading a header preceding a packet exceeding that length, the
implementation MUST reset the TCP connection". A frame whose body does not
decode is consumed whole before its error is raised, so the stream stays in
step and the router can answer with a Nack (§7.3.3) and read on.
:func:`encode_packet` is the other direction.
"""

from __future__ import annotations

import enum
import struct
from typing import Final

from cosnotify.protocols.elvin.packets import Packet, decode_body, encode_body
from cosnotify.protocols.elvin.xdr import ElvinCodecError

__all__ = ["NEED_DATA", "Decoder", "NeedData", "encode_packet"]

_LENGTH: Final = struct.Struct(">I")


class NeedData(enum.Enum):
    """:meth:`Decoder.next_packet`'s answer when no whole packet is buffered."""

    NEED_DATA = "NEED_DATA"


NEED_DATA: Final = NeedData.NEED_DATA


class Decoder:
    """Framed bytes in, packets out (§8.2.1, §8.2.3)."""

    def __init__(self, max_packet: int) -> None:
        #: The largest packet accepted (Packet.Max-Length, §7.5); settable.
        self.max_packet = max_packet
        self._buffer = bytearray()
        self._at = 0

    def receive_data(self, data: bytes) -> None:
        """Append bytes read from the peer."""
        if self._at:
            del self._buffer[:self._at]
            self._at = 0
        self._buffer += data

    @property
    def in_frame(self) -> bool:
        """Is part of a packet buffered (so its rest is due within the read timeout)?"""
        return len(self._buffer) > self._at

    def next_packet(self) -> Packet | NeedData:
        """The next whole packet, NEED_DATA, or ElvinCodecError (fatal for a bad length)."""
        buffer, at = self._buffer, self._at
        if len(buffer) - at < 4:
            return NEED_DATA
        (length,) = _LENGTH.unpack_from(buffer, at)
        if length > self.max_packet:
            raise ElvinCodecError(f"a packet of {length} bytes is over the {self.max_packet}-byte "
                                  "limit (Packet.Max-Length)", fatal=True)
        if length < 4:
            raise ElvinCodecError(f"a {length}-byte packet cannot hold a pkt_id (§8.2.3.1)",
                                  fatal=True)
        end = at + 4 + length
        if len(buffer) < end:
            return NEED_DATA
        body = bytes(buffer[at + 4:end])
        self._at = end
        if end == len(buffer):
            buffer.clear()
            self._at = 0
        return decode_body(body)


def encode_packet(packet: Packet) -> bytes:
    """``packet`` framed for TCP: its length, then its XDR encoding (§8.2.1)."""
    body = encode_body(packet)
    return _LENGTH.pack(len(body)) + body
