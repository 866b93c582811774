"""CDR streams: the sans-IO encoder and decoder of CORBA 3.0 section 15.3.

Strategy: :class:`Encoder` appends to a ``bytearray``; :class:`Decoder` reads
an immutable ``bytes``. Neither touches a socket. Values are marshalled by
functions compiled once per TypeCode (:mod:`cosnotify.orb.cdr_compile`);
TypeCodes themselves by :mod:`cosnotify.orb.cdr_typecode`. A stream may start
at any offset of a message (``offset``): alignment is always relative to the
stream start, as GIOP requires (15.3.1.1; GIOP 1.2 bodies start 8-aligned,
1.0/1.1 bodies wherever the header ends; encapsulations restart at 0 after
their byte-order octet, 15.3.3).

This module is the error boundary. Malformed input raises ``CORBA.MARSHAL``
with a minor code from :class:`cosnotify.orb.cdr_core.Minor` (built from the
local :class:`CDRError`; a truncated buffer, invalid UTF-8/UTF-16, or nesting
past ``max_depth`` are translated here); any other exception escaping a
decoder is a bug. Encoding a value that does not fit its TypeCode raises
``BAD_PARAM`` naming the member path (via :func:`cosnotify.orb.validate.check`)
or ``DATA_CONVERSION`` when a character has no representation in the
negotiated code set; the stream is left as it was before the failed write.

Object references use two hooks, which the ORB layer supplies:
``objref_factory(ior, repo_id)`` turns a received non-nil IOR into an object
(default: the :class:`cosnotify.orb.ior.IOR` itself; nil references always
decode to None), and ``objref_encoder(value) -> IOR`` (default: accepts IOR
values, None for nil, and stubs whose ``_NP_delegate`` has an ``ior``).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from typing import Any

from cosnotify.orb import cdr_compile, validate
from cosnotify.orb import typecode as T
from cosnotify.orb.any import Any as CorbaAny
from cosnotify.orb.cdr_core import (
    DEFAULT_MAX_DEPTH,
    ISO_8859_1,
    PAD,
    UTF_8,
    UTF_16,
    CDRError,
    Codec,
    DecodeState,
    EncodeState,
    Minor,
    packer,
)
from cosnotify.orb.exceptions import (
    BAD_PARAM,
    COMPLETED_NO,
    DATA_CONVERSION,
    MARSHAL,
    OMGVMCID,
    SystemException,
)

__all__ = [
    "DEFAULT_CODEC",
    "DEFAULT_MAX_DEPTH",
    "ISO_8859_1",
    "UTF_8",
    "UTF_16",
    "CDRError",
    "Codec",
    "Decoder",
    "Encoder",
    "Minor",
    "decode",
    "decode_encapsulation",
    "default_objref_encoder",
    "default_objref_factory",
    "encode",
    "encode_encapsulation",
]

log = logging.getLogger("cosnotify.orb")

DEFAULT_CODEC = Codec()
_BAD_VALUE_MINOR = OMGVMCID | 41


def default_objref_factory(ior: Any, repo_id: str) -> Any:
    """The decoder's default object-reference hook: the IOR value itself."""
    return ior


def default_objref_encoder(value: Any) -> Any:
    """The encoder's default hook: IOR values, None (nil), or stubs with a delegate IOR."""
    from cosnotify.orb.ior import IOR, NIL_IOR

    if value is None:
        return NIL_IOR
    if isinstance(value, IOR):
        return value
    found = getattr(getattr(value, "_NP_delegate", None), "ior", None)
    if isinstance(found, IOR):
        return found
    raise BAD_PARAM(_BAD_VALUE_MINOR, COMPLETED_NO, f"cannot marshal {value!r} as an object reference")


def _nil_aware(factory: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    def objref(ior: Any, repo_id: str) -> Any:
        return None if not ior.profiles else factory(ior, repo_id)
    return objref


def translate_decode_error(exc: BaseException, offset: int = -1) -> SystemException:
    """The ``MARSHAL`` for an error raised while decoding (see the module docstring).

    Received data must never raise anything but a CORBA exception, so an
    exception of an unexpected type (a bug) becomes ``MARSHAL`` too, logged.
    """
    if isinstance(exc, CDRError):
        return exc.to_system()
    if isinstance(exc, SystemException):
        return exc
    if isinstance(exc, (struct.error, IndexError)):
        return MARSHAL(Minor.PASS_END, COMPLETED_NO, f"data ended early (reading from offset {offset})")
    if isinstance(exc, UnicodeDecodeError):
        return MARSHAL(Minor.INVALID_CHAR_DATA, COMPLETED_NO, f"invalid text: {exc.reason}")
    if isinstance(exc, RecursionError):
        return MARSHAL(Minor.TOO_DEEP, COMPLETED_NO, "data nests too deeply")
    log.warning("unexpected %s decoding CDR at offset %d", type(exc).__name__, offset, exc_info=exc)
    return MARSHAL(Minor.UNEXPECTED, COMPLETED_NO, f"undecodable data: {type(exc).__name__}: {exc}")


def translate_encode_error(tc: T.TypeCode, value: Any, exc: BaseException) -> SystemException:
    """The ``BAD_PARAM``/``DATA_CONVERSION`` for a value the encoder refused."""
    if isinstance(exc, SystemException):
        return exc
    bad = _validation_error(tc, value)
    if bad is not None:
        return bad
    if isinstance(exc, UnicodeEncodeError):
        return DATA_CONVERSION(OMGVMCID | 1, COMPLETED_NO,
                               f"{value!r} has characters outside the transmission code set")
    return BAD_PARAM(_BAD_VALUE_MINOR, COMPLETED_NO, f"value does not fit {tc!r}: {exc}")


def _validation_error(tc: T.TypeCode, value: Any) -> SystemException | None:
    """validate.check's BAD_PARAM (with the member path), or None if it finds nothing."""
    try:
        validate.check(tc, value)
    except SystemException as bad:
        return bad
    except Exception:  # noqa: BLE001 - the validator's own trouble must not hide ours
        return None
    return None


class Encoder:
    """An output CDR stream whose first byte sits at stream offset ``offset``."""

    __slots__ = ("_buf", "_little", "_offset", "_shift", "_state", "codec")

    def __init__(self, codec: Codec | None = None, *, offset: int = 0,
                 objref_encoder: Callable[[Any], Any] | None = None,
                 max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        self.codec = codec or DEFAULT_CODEC
        self._little = self.codec.little_endian
        self._shift = offset % 8
        self._offset = offset
        self._buf = bytearray(self._shift)
        self._state = EncodeState(objref_encoder or default_objref_encoder, max_depth)

    @classmethod
    def encapsulation(cls, codec: Codec | None = None, **kwargs: Any) -> Encoder:
        """A stream for an encapsulation: starts with its byte-order octet (15.3.3)."""
        encoder = cls(codec, offset=0, **kwargs)
        encoder._buf.append(1 if encoder._little else 0)
        return encoder

    def getvalue(self) -> bytes:
        """The bytes written so far."""
        return bytes(self._buf[self._shift:])

    def tell(self) -> int:
        """The stream offset of the next byte."""
        return self._offset + len(self._buf) - self._shift

    def __len__(self) -> int:
        return len(self._buf) - self._shift

    # -- primitives ------------------------------------------------------------------------
    def align(self, n: int) -> None:
        self._buf += PAD[n][len(self._buf) & (n - 1)]

    def _put(self, fmt: str, size: int, value: Any) -> None:
        try:
            packed = packer(self._little, fmt).pack(value)
        except (struct.error, TypeError) as exc:
            raise BAD_PARAM(_BAD_VALUE_MINOR, COMPLETED_NO, f"{value!r} is not a valid {fmt}: {exc}") from None
        self._buf += PAD[size][len(self._buf) & (size - 1)]
        self._buf += packed

    def write_octet(self, value: int) -> None:
        self._put("B", 1, value)

    def write_boolean(self, value: Any) -> None:
        self._buf.append(1 if value else 0)

    def write_short(self, value: int) -> None:
        self._put("h", 2, value)

    def write_ushort(self, value: int) -> None:
        self._put("H", 2, value)

    def write_long(self, value: int) -> None:
        self._put("i", 4, value)

    def write_ulong(self, value: int) -> None:
        self._put("I", 4, value)

    def write_longlong(self, value: int) -> None:
        self._put("q", 8, value)

    def write_ulonglong(self, value: int) -> None:
        self._put("Q", 8, value)

    def write_float(self, value: float) -> None:
        self._put("f", 4, value)

    def write_double(self, value: float) -> None:
        self._put("d", 8, value)

    def write_string(self, value: str) -> None:
        try:
            raw = value.encode(self.codec.char_encoding)
        except (AttributeError, UnicodeEncodeError) as exc:
            raise translate_encode_error(T.TC_string, value, exc) from exc
        if b"\0" in raw:
            raise BAD_PARAM(_BAD_VALUE_MINOR, COMPLETED_NO, f"string {value!r} contains NUL")
        self._buf += PAD[4][len(self._buf) & 3]
        self._buf += packer(self._little, "I").pack(len(raw) + 1)
        self._buf += raw
        self._buf.append(0)

    def write_octets(self, data: bytes) -> None:
        """Raw octets, no length and no alignment."""
        self._buf += data

    def write_octet_sequence(self, data: bytes) -> None:
        """A ``sequence<octet>``: ulong length then the octets (also encapsulations)."""
        self.write_ulong(len(data))
        self._buf += data

    write_encapsulation = write_octet_sequence

    # -- typed values ----------------------------------------------------------------------
    def write(self, tc: T.TypeCode, value: Any) -> None:
        """Marshal ``value`` as a value of ``tc``."""
        mark = len(self._buf)
        try:
            cdr_compile.encoder_for(tc, self.codec)(self._buf, value, self._state)
        except Exception as exc:
            del self._buf[mark:]
            self._state.depth = 0
            raise translate_encode_error(tc, value, exc) from exc

    def write_any(self, value: CorbaAny) -> None:
        self.write(T.TC_any, value)

    def write_typecode(self, tc: T.TypeCode) -> None:
        self.write(T.TC_TypeCode, tc)


class Decoder:
    """An input CDR stream over ``data``, whose byte 0 sits at stream offset ``offset``.

    Reading starts at index ``pos`` of ``data``.
    """

    __slots__ = ("_data", "_little", "_offset", "_pos", "_shift", "_state", "codec")

    def __init__(self, data: bytes | bytearray | memoryview, codec: Codec | None = None, *,
                 pos: int = 0, offset: int = 0,
                 objref_factory: Callable[[Any, str], Any] | None = None,
                 max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        self.codec = codec or DEFAULT_CODEC
        self._little = self.codec.little_endian
        raw = data if type(data) is bytes else bytes(data)
        self._shift = offset % 8
        if self._shift:
            raw = bytes(self._shift) + raw
        self._data = raw
        self._pos = pos + self._shift
        self._offset = offset
        self._state = DecodeState(_nil_aware(objref_factory or default_objref_factory), max_depth)

    @classmethod
    def from_encapsulation(cls, data: bytes, codec: Codec | None = None, **kwargs: Any) -> Decoder:
        """A stream over an encapsulation, byte order taken from its first octet."""
        if not data:
            raise MARSHAL(Minor.PASS_END, COMPLETED_NO, "empty encapsulation")
        if data[0] > 1:
            raise MARSHAL(Minor.INVALID_BYTE_ORDER, COMPLETED_NO, f"encapsulation byte order {data[0]}")
        base = (codec or DEFAULT_CODEC).with_order(data[0] == 1)
        return cls(data, base, pos=1, offset=0, **kwargs)

    @property
    def pos(self) -> int:
        """The index in ``data`` of the next byte to read."""
        return self._pos - self._shift

    def tell(self) -> int:
        """The stream offset of the next byte."""
        return self._offset + self._pos - self._shift

    def remaining(self) -> int:
        return len(self._data) - self._pos

    def at_end(self) -> bool:
        return self._pos >= len(self._data)

    def rest(self) -> bytes:
        """The unread bytes (without consuming them)."""
        return self._data[self._pos:]

    # -- primitives ------------------------------------------------------------------------
    def _get(self, fmt: str, size: int) -> Any:
        pos = self._pos + (-self._pos & (size - 1))
        try:
            (value,) = packer(self._little, fmt).unpack_from(self._data, pos)
        except struct.error:
            raise MARSHAL(Minor.PASS_END, COMPLETED_NO, f"data ended early at offset {pos}") from None
        self._pos = pos + size
        return value

    def read_octet(self) -> int:
        return int(self._get("B", 1))

    def read_boolean(self) -> bool:
        value = self.read_octet()
        if value > 1:
            raise MARSHAL(Minor.INVALID_BOOLEAN, COMPLETED_NO, f"boolean octet {value}")
        return value == 1

    def read_short(self) -> int:
        return int(self._get("h", 2))

    def read_ushort(self) -> int:
        return int(self._get("H", 2))

    def read_long(self) -> int:
        return int(self._get("i", 4))

    def read_ulong(self) -> int:
        return int(self._get("I", 4))

    def read_longlong(self) -> int:
        return int(self._get("q", 8))

    def read_ulonglong(self) -> int:
        return int(self._get("Q", 8))

    def read_float(self) -> float:
        return float(self._get("f", 4))

    def read_double(self) -> float:
        return float(self._get("d", 8))

    def read_string(self) -> str:
        start = self._pos
        length = self.read_ulong()
        end = self._pos + length
        if not length or self._data[end - 1:end] != b"\0":
            self._pos = start
            raise CDRError(Minor.STRING_NOT_NUL_TERMINATED if end <= len(self._data) and length
                           else Minor.PASS_END, "bad string", start - self._shift).to_system()
        try:
            text = self._data[self._pos:end - 1].decode(self.codec.char_encoding)
        except UnicodeDecodeError as exc:
            self._pos = start
            raise translate_decode_error(exc, start - self._shift) from exc
        self._pos = end
        return text

    def read_octets(self, n: int) -> bytes:
        """``n`` raw octets."""
        if n > len(self._data) - self._pos:
            raise MARSHAL(Minor.PASS_END, COMPLETED_NO, f"{n} octets wanted, {self.remaining()} left")
        data = self._data[self._pos:self._pos + n]
        self._pos += n
        return data

    def read_octet_sequence(self) -> bytes:
        """A ``sequence<octet>`` (also the body of an encapsulation)."""
        start = self._pos
        length = self.read_ulong()
        if length > len(self._data) - self._pos:
            raise MARSHAL(Minor.SEQUENCE_TOO_LONG, COMPLETED_NO,
                          f"sequence<octet> of {length} at offset {start} runs past the end")
        return self.read_octets(length)

    def read_encapsulation(self) -> Decoder:
        """Read a ``sequence<octet>`` holding an encapsulation and open it."""
        return Decoder.from_encapsulation(self.read_octet_sequence(), self.codec,
                                          objref_factory=self._state.objref_factory,
                                          max_depth=self._state.max_depth)

    # -- typed values ----------------------------------------------------------------------
    def read(self, tc: T.TypeCode) -> Any:
        """Unmarshal a value of ``tc``."""
        start = self._pos
        try:
            value, self._pos = cdr_compile.decoder_for(tc, self.codec)(self._data, start, self._state)
        except Exception as exc:
            self._state.depth = 0
            self._state.empty = DecodeState.EMPTY_LIMIT
            error = translate_decode_error(exc, start - self._shift)
            if error is exc:
                raise
            raise error from exc
        return value

    def read_any(self) -> CorbaAny:
        value: CorbaAny = self.read(T.TC_any)
        return value

    def read_typecode(self) -> T.TypeCode:
        value: T.TypeCode = self.read(T.TC_TypeCode)
        return value


def encode(tc: T.TypeCode, value: Any, codec: Codec | None = None, *, offset: int = 0,
           objref_encoder: Callable[[Any], Any] | None = None) -> bytes:
    """The CDR of one value, as a stream starting at ``offset``."""
    encoder = Encoder(codec, offset=offset, objref_encoder=objref_encoder)
    encoder.write(tc, value)
    return encoder.getvalue()


def decode(tc: T.TypeCode, data: bytes | bytearray | memoryview, codec: Codec | None = None, *,
           offset: int = 0, exact: bool = False,
           objref_factory: Callable[[Any, str], Any] | None = None,
           max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """Decode one value; with ``exact``, bytes left over raise MARSHAL too."""
    decoder = Decoder(data, codec, offset=offset, objref_factory=objref_factory, max_depth=max_depth)
    value = decoder.read(tc)
    if exact and not decoder.at_end():
        raise MARSHAL(Minor.TRAILING_DATA, COMPLETED_NO, f"{decoder.remaining()} octets left over")
    return value


def encode_encapsulation(tc: T.TypeCode, value: Any, codec: Codec | None = None) -> bytes:
    """An encapsulation (byte-order octet then the value) of one value."""
    encoder = Encoder.encapsulation(codec)
    encoder.write(tc, value)
    return encoder.getvalue()


def decode_encapsulation(tc: T.TypeCode, data: bytes, codec: Codec | None = None) -> Any:
    """The value inside an encapsulation, in the byte order it declares."""
    return Decoder.from_encapsulation(data, codec).read(tc)
