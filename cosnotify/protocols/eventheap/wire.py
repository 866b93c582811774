"""The Event Heap wire protocol's fundamental types: Int, Long, Float, Double, Boolean, UTF.

Strategy: the seed's "Transfer of Fundamental Types" (Event Heap wire
protocol, B. Johanson 2003) is Java's ``DataOutput``: big-endian integers
and IEEE floats, a Boolean as one byte ("true is given by a non-zero
value"), and a "UTF-8 String" that is Java's *modified* UTF-8 -- a two-byte
length, U+0000 as the two bytes ``C0 80``, and every UTF-16 code unit on
its own (a character beyond U+FFFF is a surrogate pair, three bytes a
half). This module reads them from a :class:`Cursor` over bytes and writes
them to a bytearray; it never touches a socket. Every fault is an
:class:`EventHeapWireError` with the offset and what was expected.

One correction to the seed's text: its three-byte form writes the lead
byte as ``(byte)(0xc0 | (0x0f & (c >> 12)))``, which a reader could not
tell from a two-byte lead; Java's ``DataOutputStream.writeUTF`` (the
reference implementation's encoder) writes ``0xe0 | ...``, and so does
this module. A ``0xc_`` lead followed by two continuation bytes is refused
(tests/protocols/eventheap/vectors.json records the seed's literal bytes as
an expected-invalid vector).

Receiving is "the inverse operations" of sending (seed, "The Wire Bundle
Protocol"), so a reader accepts exactly what the writer produces: a raw
``00`` byte, an overlong form other than ``C0 80``, a four-byte form, a
stray continuation byte or an unpaired surrogate is an error (a string
with an unpaired surrogate is not Unicode text, and no CORBA string can
carry it).
"""

from __future__ import annotations

import struct
from typing import Final

__all__ = [
    "MAX_UTF_BYTES",
    "Cursor",
    "EventHeapWireError",
    "NeedData",
    "decode_utf",
    "encode_utf",
    "write_boolean",
    "write_double",
    "write_float",
    "write_int",
    "write_long",
    "write_utf",
]

#: The most bytes a UTF-8 String's two-byte length can give (seed: "two bytes indicating
#: the length of the coming string").
MAX_UTF_BYTES: Final = 0xFFFF

_INT: Final = struct.Struct(">i")
_LONG: Final = struct.Struct(">q")
_FLOAT: Final = struct.Struct(">f")
_DOUBLE: Final = struct.Struct(">d")
_USHORT: Final = struct.Struct(">H")


class EventHeapWireError(ValueError):
    """Bytes that are not the Event Heap wire protocol, or a value it cannot carry.

    ``offset``: where in the bundle (or the handshake) the fault is (-1 when encoding);
    ``kind``: ``"malformed"``, ``"too_large"``, ``"version"`` or ``"unencodable"``;
    ``detail``: what was expected and what was found.
    """

    def __init__(self, detail: str, offset: int = -1, kind: str = "malformed") -> None:
        super().__init__(f"{detail} (at byte {offset})" if offset >= 0 else detail)
        self.detail = detail
        self.offset = offset
        self.kind = kind


class NeedData(Exception):
    """The bytes end before the value does (internal: the reader waits for more).

    ``need``: how many bytes from the start of the buffer are needed at least.
    """

    def __init__(self, need: int) -> None:
        super().__init__(need)
        self.need = need


class Cursor:
    """Reads fundamental types from ``data[start:end]``.

    ``complete``: the bytes are a whole serialized array (a tuple or a field), so
    running out is a malformed array, not a reason to wait for more.
    """

    __slots__ = ("base", "complete", "data", "end", "pos")

    def __init__(self, data: bytes | memoryview, start: int = 0, end: int | None = None,
                 complete: bool = False, base: int = 0) -> None:
        self.data = data
        self.pos = start
        self.end = len(data) if end is None else end
        self.complete = complete
        #: Added to positions in errors (where ``data`` starts in the bundle).
        self.base = base

    @property
    def offset(self) -> int:
        return self.base + self.pos

    def fail(self, detail: str, at: int | None = None) -> EventHeapWireError:
        return EventHeapWireError(detail, self.base + (self.pos if at is None else at))

    def take(self, count: int, what: str) -> int:
        """Claim ``count`` bytes; their start."""
        start = self.pos
        if self.end - start < count:
            if self.complete:
                raise self.fail(f"{what}: {count} bytes expected, {self.end - start} left "
                                "in the serialized array")
            raise NeedData(start + count)
        self.pos = start + count
        return start

    def read_byte(self, what: str) -> int:
        return self.data[self.take(1, what)]

    def read_boolean(self, what: str) -> bool:
        return self.read_byte(what) != 0  # seed: "true is given by a non-zero value"

    def read_int(self, what: str) -> int:
        value: int = _INT.unpack_from(self.data, self.take(4, what))[0]
        return value

    def read_long(self, what: str) -> int:
        value: int = _LONG.unpack_from(self.data, self.take(8, what))[0]
        return value

    def read_float(self, what: str) -> float:
        value: float = _FLOAT.unpack_from(self.data, self.take(4, what))[0]
        return value

    def read_double(self, what: str) -> float:
        value: float = _DOUBLE.unpack_from(self.data, self.take(8, what))[0]
        return value

    def read_count(self, what: str, smallest: int, limit: int) -> int:
        """An Int that counts elements of at least ``smallest`` bytes each: it must be
        >= 0, and the elements must fit in ``limit`` bytes."""
        at = self.pos
        value = self.read_int(what)
        if value < 0:
            raise self.fail(f"{what}: a negative count {value}", at)
        if value * smallest > limit:
            raise EventHeapWireError(f"{what}: {value} elements of {smallest}+ bytes cannot "
                                     f"fit in {limit} bytes", self.base + at,
                                     "too_large" if not self.complete else "malformed")
        return value

    def read_length(self, what: str, limit: int) -> int:
        """An Int that is the length of a coming byte array: 0 to ``limit``."""
        at = self.pos
        value = self.read_int(what)
        if value < 0:
            raise self.fail(f"{what}: a negative length {value}", at)
        if value > limit:
            raise EventHeapWireError(f"{what}: {value} bytes, more than the {limit} "
                                     "allowed", self.base + at,
                                     "too_large" if not self.complete else "malformed")
        return value

    def read_utf(self, what: str) -> str:
        """A UTF-8 String (seed: "Transfer of Fundamental Types")."""
        pos, data = self.pos, self.data
        if self.end - pos >= 2:  # the common case, without two take() calls
            size: int = (data[pos] << 8) | data[pos + 1]
            start = pos + 2
            if self.end - start >= size:
                self.pos = start + size
                raw = bytes(data[start:start + size])
                if raw.isascii() and 0 not in raw:
                    return raw.decode("ascii")
                return decode_utf(raw, self.base + start, what)
        size = _USHORT.unpack_from(data, self.take(2, what))[0]
        start = self.take(size, what)
        return decode_utf(bytes(data[start:start + size]), self.base + start, what)


def _decode_slow(raw: bytes, offset: int, what: str) -> str:
    units: list[int] = []
    i, end = 0, len(raw)
    while i < end:
        b = raw[i]
        if 0 < b < 0x80:
            units.append(b)
            i += 1
        elif 0xC0 <= b < 0xE0:
            if i + 1 >= end or raw[i + 1] & 0xC0 != 0x80:
                raise EventHeapWireError(f"{what}: a two-byte character is cut or has no "
                                         "continuation byte", offset + i)
            c = ((b & 0x1F) << 6) | (raw[i + 1] & 0x3F)
            if 0 < c < 0x80:
                raise EventHeapWireError(f"{what}: an overlong form of U+{c:04X} (only "
                                         "U+0000 takes two bytes below U+0080)", offset + i)
            units.append(c)
            i += 2
        elif 0xE0 <= b < 0xF0:
            if i + 2 >= end or raw[i + 1] & 0xC0 != 0x80 or raw[i + 2] & 0xC0 != 0x80:
                raise EventHeapWireError(f"{what}: a three-byte character is cut or has no "
                                         "continuation bytes", offset + i)
            c = ((b & 0x0F) << 12) | ((raw[i + 1] & 0x3F) << 6) | (raw[i + 2] & 0x3F)
            if c < 0x800:
                raise EventHeapWireError(f"{what}: an overlong form of U+{c:04X}", offset + i)
            units.append(c)
            i += 3
        else:
            kind = "a raw 00 byte (U+0000 is C0 80)" if b == 0 else f"the byte {b:02X}"
            raise EventHeapWireError(f"{what}: {kind} starts no character of the seed's "
                                     "UTF-8 String", offset + i)
    out: list[str] = []
    j, n = 0, len(units)
    while j < n:
        u = units[j]
        if 0xD800 <= u < 0xDC00 and j + 1 < n and 0xDC00 <= units[j + 1] < 0xE000:
            out.append(chr(0x10000 + ((u - 0xD800) << 10) + (units[j + 1] - 0xDC00)))
            j += 2
            continue
        if 0xD800 <= u < 0xE000:
            raise EventHeapWireError(f"{what}: an unpaired surrogate U+{u:04X}", offset)
        out.append(chr(u))
        j += 1
    return "".join(out)


def decode_utf(raw: bytes, offset: int = 0, what: str = "a string") -> str:
    """The text of a UTF-8 String's bytes (without its length); EventHeapWireError."""
    if raw.isascii():
        if 0 in raw:
            return _decode_slow(raw, offset, what)
        return raw.decode("ascii")
    # Python's strict UTF-8 is the same as modified UTF-8 without C0 80, surrogates
    # (ED A0..ED BF) and four-byte forms, which take the slow path.
    if b"\xc0" not in raw and b"\xed" not in raw and max(raw) < 0xF0 and 0 not in raw:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            pass
    return _decode_slow(raw, offset, what)


def encode_utf(text: str) -> bytes:
    """The bytes of ``text`` as a UTF-8 String, its two-byte length first."""
    if text.isascii() and "\0" not in text:
        raw = text.encode("ascii")
    else:
        raw = _encode_units(text)
    if len(raw) > MAX_UTF_BYTES:
        raise EventHeapWireError(f"a string of {len(raw)} bytes: a UTF-8 String holds at "
                                 f"most {MAX_UTF_BYTES}", kind="unencodable")
    return _USHORT.pack(len(raw)) + raw


def _encode_units(text: str) -> bytes:
    out = bytearray()
    for ch in text:
        c = ord(ch)
        if 0xD800 <= c < 0xE000:
            raise EventHeapWireError(f"an unpaired surrogate U+{c:04X} is not text",
                                     kind="unencodable")
        if c > 0xFFFF:  # a surrogate pair, each half three bytes (as Java's String holds it)
            c -= 0x10000
            units: tuple[int, ...] = (0xD800 + (c >> 10), 0xDC00 + (c & 0x3FF))
        else:
            units = (c,)
        for u in units:
            if 0 < u < 0x80:
                out.append(u)
            elif u < 0x800:  # U+0000 too: "\u0000 ... is represented by two bytes"
                out += bytes((0xC0 | (0x1F & (u >> 6)), 0x80 | (0x3F & u)))
            else:  # Java's 0xE0 lead (the module docstring)
                out += bytes((0xE0 | (0x0F & (u >> 12)), 0x80 | (0x3F & (u >> 6)),
                              0x80 | (0x3F & u)))
    return bytes(out)


def write_utf(out: bytearray, text: str) -> None:
    out += encode_utf(text)


def write_int(out: bytearray, value: int) -> None:
    try:
        out += _INT.pack(value)
    except struct.error:
        raise EventHeapWireError(f"{value!r:.40} is not an Int (32 bits)",
                                 kind="unencodable") from None


def write_long(out: bytearray, value: int) -> None:
    try:
        out += _LONG.pack(value)
    except struct.error:
        raise EventHeapWireError(f"{value!r:.40} is not a Long (64 bits)",
                                 kind="unencodable") from None


def write_float(out: bytearray, value: float) -> None:
    try:
        out += _FLOAT.pack(value)
    except (struct.error, OverflowError):
        raise EventHeapWireError(f"{value!r:.40} is not a Float", kind="unencodable") from None


def write_double(out: bytearray, value: float) -> None:
    try:
        out += _DOUBLE.pack(value)
    except struct.error:
        raise EventHeapWireError(f"{value!r:.40} is not a Double",
                                 kind="unencodable") from None


def write_boolean(out: bytearray, value: bool) -> None:
    out.append(1 if value else 0)
