"""CDR fundamentals shared by the streams, the value compiler and TypeCode marshalling.

Strategy: everything here is data or a small pure function. A :class:`Codec`
names the settings that change how bytes look (byte order, the negotiated char
and wchar transmission code sets, the GIOP minor version that fixes the wchar
rules); compiled marshallers are cached per codec. Decoding code raises only
:class:`CDRError`, the local error carrying a minor code and an offset; the
stream boundary in :mod:`cosnotify.orb.cdr` turns it into ``CORBA.MARSHAL``.

Alignment (CORBA 3.0 section 15.3.1.1) is relative to the start of the stream.
Every buffer here is laid out so that index 0 *is* a multiple of 8 in stream
terms (a stream starting at offset 5 gets 5 filler bytes first), which turns
alignment into ``-pos & (n - 1)`` with no per-call origin arithmetic.
"""

from __future__ import annotations

import math
import struct
import sys
from collections.abc import Callable
from decimal import ROUND_HALF_EVEN, Context, Decimal
from typing import Any

import attrs

from cosnotify.orb.exceptions import COMPLETED_NO, MARSHAL, OMGVMCID, SystemException

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "ISO_8859_1",
    "UTF_8",
    "UTF_16",
    "CDRError",
    "Codec",
    "DecodeState",
    "EncodeMismatch",
    "EncodeState",
    "Minor",
]

#: Code set ids from the OSF character and code set registry (CORBA 3.0 13.10.2.4).
ISO_8859_1 = 0x00010001
UTF_8 = 0x05010001
UTF_16 = 0x00010109

#: Maximum nesting of TypeCodes, Anys and recursive values a decoder follows.
DEFAULT_MAX_DEPTH = 64

#: omniORB's vendor minor code id; where omniORB has a minor code for a
#: marshalling failure we use the same number, so logs from both read alike.
OMNIORB_VMCID = 0x41540000
#: Minor codes omniORB has no equivalent for live in this (unregistered) range.
COSNOTIFY_VMCID = 0x434E0000


class Minor:
    """Minor codes of the ``MARSHAL`` exceptions decoding raises."""

    WCHAR_GIOP10 = OMGVMCID | 5              # wchar/wstring over GIOP 1.0 (CORBA 3.0 table)
    WCHAR_TCS_UNKNOWN = OMGVMCID | 23        # no wchar code set negotiated
    PASS_END = OMNIORB_VMCID | 10            # the data ended early
    SEQUENCE_TOO_LONG = OMNIORB_VMCID | 18   # longer than its bound or than the data left
    STRING_TOO_LONG = OMNIORB_VMCID | 19
    WSTRING_TOO_LONG = OMNIORB_VMCID | 20
    STRING_NOT_NUL_TERMINATED = OMNIORB_VMCID | 22
    INVALID_ENUM = OMNIORB_VMCID | 26
    INVALID_FIXED = OMNIORB_VMCID | 42
    INVALID_WCHAR = OMNIORB_VMCID | 47
    INVALID_IOR = OMNIORB_VMCID | 52
    INVALID_INDIRECTION = OMNIORB_VMCID | 90
    INVALID_TYPECODE_KIND = OMNIORB_VMCID | 91
    INVALID_BOOLEAN = COSNOTIFY_VMCID | 1
    INVALID_DISCRIMINATOR = COSNOTIFY_VMCID | 2
    TOO_DEEP = COSNOTIFY_VMCID | 3
    INVALID_CHAR_DATA = COSNOTIFY_VMCID | 4   # bytes not valid in the transmission code set
    INVALID_BYTE_ORDER = COSNOTIFY_VMCID | 5  # an encapsulation's first octet is not 0 or 1
    INVALID_TYPECODE = COSNOTIFY_VMCID | 6    # TypeCode parameters that do not make a TypeCode
    TRAILING_DATA = COSNOTIFY_VMCID | 7
    UNEXPECTED = COSNOTIFY_VMCID | 8          # decoding failed in a way nobody foresaw (a bug)
    TOO_MANY_ELEMENTS = COSNOTIFY_VMCID | 9   # more empty-element items than one message may hold


class CDRError(ValueError):
    """Malformed CDR input: the local error decoding raises.

    ``minor`` is the ``MARSHAL`` minor code, ``offset`` the buffer position
    where the problem was found (-1 when unknown), ``reason`` a short text.
    """

    def __init__(self, minor: int, reason: str, offset: int = -1) -> None:
        super().__init__(f"{reason} (at offset {offset})" if offset >= 0 else reason)
        self.minor = minor
        self.reason = reason
        self.offset = offset

    def to_system(self, completed: Any = COMPLETED_NO) -> SystemException:
        """The ``CORBA.MARSHAL`` this error becomes at the stream boundary."""
        return MARSHAL(self.minor, completed, str(self))


class EncodeMismatch(ValueError):
    """A value that does not fit its TypeCode, found while encoding.

    The encoding boundary turns it into ``BAD_PARAM`` naming the member path.
    """


_KNOWN_CHAR_SETS = (UTF_8, ISO_8859_1)
_KNOWN_WCHAR_SETS = (UTF_16, 0)


@attrs.frozen(cache_hash=True)
class Codec:
    """How values look on the wire: byte order, code sets and GIOP version.

    ``wchar_set`` 0 means no wchar code set was negotiated (wchar data then
    cannot be sent). ``giop`` decides the wchar/wstring layout (15.3.1.6).
    """

    little_endian: bool = sys.byteorder == "little"
    char_set: int = UTF_8
    wchar_set: int = UTF_16
    giop: tuple[int, int] = (1, 2)

    def __attrs_post_init__(self) -> None:
        if self.char_set not in _KNOWN_CHAR_SETS or self.wchar_set not in _KNOWN_WCHAR_SETS:
            from cosnotify.orb.exceptions import CODESET_INCOMPATIBLE

            raise CODESET_INCOMPATIBLE(0, COMPLETED_NO,
                                       f"unsupported code sets 0x{self.char_set:08x}/0x{self.wchar_set:08x}")

    @property
    def char_encoding(self) -> str:
        """The Python codec name for char and string data."""
        return "utf-8" if self.char_set == UTF_8 else "latin-1"

    def with_order(self, little_endian: bool) -> Codec:
        """This codec with another byte order (encapsulations carry their own)."""
        if little_endian == self.little_endian:
            return self
        return attrs.evolve(self, little_endian=little_endian)


class EncodeState:
    """Per-call state threaded through compiled encoders."""

    __slots__ = ("depth", "max_depth", "objref_encoder")

    def __init__(self, objref_encoder: Callable[[Any], Any], max_depth: int) -> None:
        self.depth = 0
        self.max_depth = max_depth
        self.objref_encoder = objref_encoder


class DecodeState:
    """Per-call state threaded through compiled decoders.

    ``empty`` is what is left of the allowance for elements that occupy no
    octets (empty structs, null): the data cannot bound how many of those a
    sequence claims, and nested sequences would multiply them, so one
    message may hold :attr:`EMPTY_LIMIT` in all.
    """

    __slots__ = ("depth", "empty", "max_depth", "objref_factory")
    EMPTY_LIMIT = 65536

    def __init__(self, objref_factory: Callable[[Any, str], Any], max_depth: int) -> None:
        self.depth = 0
        self.max_depth = max_depth
        self.objref_factory = objref_factory
        self.empty = self.EMPTY_LIMIT


# -- primitive layouts ------------------------------------------------------------------

#: (struct format letter, size) per primitive kind ordinal.
PRIMITIVE_FORMATS: dict[int, tuple[str, int]] = {
    2: ("h", 2), 3: ("i", 4), 4: ("H", 2), 5: ("I", 4), 6: ("f", 4), 7: ("d", 8),
    8: ("B", 1), 9: ("B", 1), 10: ("B", 1), 17: ("I", 4), 23: ("q", 8), 24: ("Q", 8),
}

_STRUCTS: dict[tuple[bool, str], struct.Struct] = {}


def packer(little: bool, fmt: str) -> struct.Struct:
    """A cached ``struct.Struct`` for ``fmt`` in the given byte order."""
    key = (little, fmt)
    found = _STRUCTS.get(key)
    if found is None:
        found = _STRUCTS[key] = struct.Struct(("<" if little else ">") + fmt)
    return found


#: PAD[n][len(buf) & (n - 1)] is the filler that aligns a buffer to n.
PAD: dict[int, tuple[bytes, ...]] = {n: tuple(bytes(-i % n) for i in range(n)) for n in (1, 2, 4, 8)}

#: The 1-character strings for octet values (char decoding).
CHARS = tuple(chr(i) for i in range(256))


def check_depth(state: EncodeState | DecodeState, offset: int = -1) -> None:
    """Raise when nesting passes the state's limit (call after incrementing depth)."""
    if state.depth > state.max_depth:
        raise CDRError(Minor.TOO_DEEP, f"nesting deeper than {state.max_depth}", offset)


# -- long double: IEEE 754 binary128 <-> Python float (CORBA 3.0 15.3.1.3) ----------------

_D = struct.Struct(">d")


def float_to_binary128(value: float) -> int:
    """The 128-bit pattern of the binary128 number equal to ``value``."""
    bits = int.from_bytes(_D.pack(value), "big")
    sign = bits >> 63
    exponent = (bits >> 52) & 0x7FF
    fraction = bits & ((1 << 52) - 1)
    if exponent == 0x7FF:
        e128, f128 = 0x7FFF, fraction << 60
    elif exponent == 0 and fraction == 0:
        e128, f128 = 0, 0
    elif exponent == 0:  # subnormal double: normal in binary128
        top = fraction.bit_length() - 1
        e128 = top - 1074 + 16383
        f128 = (fraction << (112 - top)) & ((1 << 112) - 1)
    else:
        e128, f128 = exponent - 1023 + 16383, fraction << 60
    return (sign << 127) | (e128 << 112) | f128


def binary128_to_float(bits: int) -> float:
    """The float nearest the binary128 number with pattern ``bits``."""
    sign = -1.0 if bits >> 127 else 1.0
    exponent = (bits >> 112) & 0x7FFF
    fraction = bits & ((1 << 112) - 1)
    if exponent == 0x7FFF:
        return math.nan if fraction else sign * math.inf
    if exponent == 0:
        if fraction == 0:
            return sign * 0.0
        mantissa, power = fraction, 1 - 16383 - 112
    else:
        mantissa, power = fraction | (1 << 112), exponent - 16383 - 112
    try:
        return sign * math.ldexp(float(mantissa), power)
    except OverflowError:
        return sign * math.inf


def pack_longdouble(value: float, little: bool) -> bytes:
    return float_to_binary128(float(value)).to_bytes(16, "little" if little else "big")


def unpack_longdouble(data: bytes, pos: int, little: bool) -> float:
    chunk = data[pos:pos + 16]
    if len(chunk) != 16:
        raise CDRError(Minor.PASS_END, "long double runs past the end of the data", pos)
    return binary128_to_float(int.from_bytes(chunk, "little" if little else "big"))


# -- fixed: packed BCD (CORBA 3.0 15.3.2.8) -------------------------------------------------


#: Enough precision for fixed<31> values (the default context has 28 digits).
_FIXED_CONTEXT = Context(prec=100, rounding=ROUND_HALF_EVEN)


def fixed_size(digits: int) -> int:
    """Octets of a fixed<digits, _> value: one nibble per digit plus a sign nibble."""
    return (digits + 2) // 2


def fixed_to_bcd(value: Any, digits: int, scale: int) -> bytes:
    """Packed BCD of ``value`` scaled by ``scale``; ``ValueError`` if it does not fit."""
    if isinstance(value, bool) or not isinstance(value, (Decimal, int)):
        raise TypeError(f"fixed needs a Decimal, got {type(value).__name__}")
    number = Decimal(value)
    if not number.is_finite():
        raise ValueError("fixed values must be finite")
    quantum = Decimal(1).scaleb(-scale)
    scaled = number.quantize(quantum, context=_FIXED_CONTEXT).scaleb(scale, context=_FIXED_CONTEXT)
    sign, digit_tuple, exponent = scaled.as_tuple()
    text = "".join(map(str, digit_tuple)) + "0" * max(int(exponent), 0)
    text = text.lstrip("0")
    if len(text) > digits:
        raise ValueError(f"{value} has more than {digits} digits at scale {scale}")
    nibbles = text.rjust(fixed_size(digits) * 2 - 1, "0") + ("d" if sign and text else "c")
    return bytes.fromhex(nibbles)


def bcd_to_fixed(chunk: bytes, digits: int, scale: int, offset: int = -1) -> Decimal:
    """The Decimal packed in ``chunk``; ``CDRError`` for bad nibbles or sign."""
    text = chunk.hex()
    sign_nibble = text[-1]
    body = text[:-1]
    if sign_nibble not in "cd" or not body.isdigit():
        raise CDRError(Minor.INVALID_FIXED, f"bad packed BCD {text}", offset)
    if len(body) > digits and body[0] != "0":
        raise CDRError(Minor.INVALID_FIXED, f"fixed<{digits}> with a nonzero pad nibble", offset)
    # From text: the C decimal parser is 3x faster than a digit tuple, same coefficient.
    return Decimal(f"{'-' if sign_nibble == 'd' else ''}{body}E{-scale}")
