"""XDR primitives for the Elvin 4 standard marshalling (seed section 8.2.3).

Strategy: a :class:`Reader` walks one packet's bytes with an offset and
raises :class:`ElvinCodecError` -- the codec's only error -- for anything it
cannot read: a short packet, a boolean other than 0/1, a uint8 over 255, a
string that is not UTF-8 (``BAD_UTF8``, §7.4.2) or holds NUL ("no NUL
bytes", §7.4), an array whose count cannot fit in what is left. Writing is a
list of byte strings joined once. Base types follow the table of §8.2.3.2:
boolean and uint8 are 4-byte XDR ints, int64 a hyper, real64 a double,
string and opaque a 4-byte length then the bytes zero-padded to 4.
"""

from __future__ import annotations

import struct
from typing import Final

__all__ = ["BAD_UTF8", "PROT_ERROR", "ElvinCodecError", "Reader", "pad", "w_bool",
           "w_int32", "w_int64", "w_opaque", "w_real64", "w_string", "w_uint32"]

#: Nack codes the codec's errors carry (§7.4.2's table).
PROT_ERROR: Final = 1001
BAD_UTF8: Final = 1006

_I = struct.Struct(">i")
_U = struct.Struct(">I")
_Q = struct.Struct(">q")
_D = struct.Struct(">d")
_PADS: Final = (b"", b"\0\0\0", b"\0\0", b"\0")


class ElvinCodecError(ValueError):
    """Bytes that are not an Elvin 4 packet (§7.3.2 protocol violation or §7.3.3 error).

    ``offset``: where in the packet (after the frame header) reading failed;
    ``code``: the §7.4.2 Nack code it deserves (PROT_ERROR, BAD_UTF8);
    ``xid``: the request's transaction id when it was read before the error
    (so the router can Nack it, §7.3.3), else None; ``packet_type``: the
    pkt_id when known; ``fatal``: the stream cannot go on (a bad frame
    length, §8.2.1: "the implementation MUST reset the TCP connection").
    """

    def __init__(self, message: str, *, offset: int = 0, code: int = PROT_ERROR,
                 xid: int | None = None, packet_type: int | None = None,
                 fatal: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.code = code
        self.xid = xid
        self.packet_type = packet_type
        self.fatal = fatal

    def __str__(self) -> str:
        return f"{self.message} (offset {self.offset}, Nack code {self.code})"


class Reader:
    """Reads XDR values from one packet; every failure is an ElvinCodecError."""

    __slots__ = ("data", "pos", "xid")

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos
        self.xid: int | None = None

    def error(self, message: str, code: int = PROT_ERROR, at: int | None = None) -> ElvinCodecError:
        return ElvinCodecError(message, offset=self.pos if at is None else at, code=code,
                               xid=self.xid)

    def _need(self, n: int, what: str) -> int:
        pos = self.pos
        if pos + n > len(self.data):
            raise self.error(f"packet ends inside {what}: {n} bytes needed, "
                             f"{len(self.data) - pos} left")
        self.pos = pos + n
        return pos

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def int32(self) -> int:
        return int(_I.unpack_from(self.data, self._need(4, "an int32"))[0])

    def uint32(self) -> int:
        return int(_U.unpack_from(self.data, self._need(4, "a uint32"))[0])

    def int64(self) -> int:
        return int(_Q.unpack_from(self.data, self._need(8, "an int64"))[0])

    def real64(self) -> float:
        return float(_D.unpack_from(self.data, self._need(8, "a real64"))[0])

    def bounded(self, limit: int, what: str) -> int:
        """A 4-byte unsigned value at most ``limit`` (uint8, uint16, §8.2.3.2)."""
        value = self.uint32()
        if value > limit:
            raise self.error(f"{what} {value} is over {limit}", at=self.pos - 4)
        return value

    def boolean(self) -> bool:
        value = self.uint32()
        if value > 1:
            raise self.error(f"boolean {value} is not 0 or 1", at=self.pos - 4)
        return value == 1

    def opaque(self) -> bytes:
        n = self.uint32()
        start = self._need((n + 3) & ~3, "an opaque value")
        return bytes(self.data[start:start + n])

    def string(self) -> str:
        n = self.uint32()
        start = self._need((n + 3) & ~3, "a string")
        raw = self.data[start:start + n]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.error(f"invalid UTF-8 in a string: {exc.reason}", BAD_UTF8,
                             at=start + exc.start) from None
        if "\0" in text:
            raise self.error("NUL in a string (§7.4: no NUL bytes)", at=start + raw.find(b"\0"))
        return text

    def count(self, smallest: int, what: str) -> int:
        """An array length (§8.2.3.3), refused when that many items cannot fit."""
        n = self.uint32()
        if n * smallest > len(self.data) - self.pos:
            raise self.error(f"{what} of {n} items cannot fit in the "
                             f"{len(self.data) - self.pos} bytes left", at=self.pos - 4)
        return n


def pad(n: int) -> bytes:
    return _PADS[n & 3]


def w_int32(value: int) -> bytes:
    return _I.pack(value)


def w_uint32(value: int) -> bytes:
    return _U.pack(value)


def w_int64(value: int) -> bytes:
    return _Q.pack(value)


def w_real64(value: float) -> bytes:
    return _D.pack(value)


def w_bool(value: bool) -> bytes:
    return _U.pack(1 if value else 0)


def w_opaque(value: bytes) -> bytes:
    return _U.pack(len(value)) + value + _PADS[len(value) & 3]


def w_string(value: str) -> bytes:
    raw = value.encode("utf-8")
    return _U.pack(len(raw)) + raw + _PADS[len(raw) & 3]
