"""The call hot path: framing, the common GIOP headers, and per-operation marshalling plans.

Strategy: the general, validating GIOP machinery (:mod:`cosnotify.orb.giop`,
:mod:`cosnotify.orb.giop_messages`) builds a value object per message and a
CDR stream per header field; that costs more than a whole call should. This
module handles only the overwhelmingly common shapes, as bytes:

* :class:`Framer` cuts a byte stream into whole messages by their 12-octet
  header (magic, version 1.0-1.2, type, size within the limit). A header that
  is not sane stops the framer: from then on the connection gives every byte
  to the sans-IO ``GIOPConnection``, which reports the error properly.
* :func:`parse_request` reads a GIOP 1.2 Request addressed by key
  (15.4.2.2); :func:`parse_reply` a Reply without service contexts in any
  version (its body then starts at octet 24, 8-aligned, 15.4.3). Anything
  else (fragments, GIOP 1.0/1.1 requests, LocateRequest, odd flags) returns
  None and takes the general path.
* :func:`request_prefix` is the cached octets of a Request up to its body,
  with the request id and size patched in per call; :func:`reply_prefix` the
  24 octets in front of a reply body (no service contexts, any version).
* :class:`OperationPlan` holds the compiled CDR encoders and decoders
  (:mod:`cosnotify.orb.cdr_compile`) for one operation under one codec, and
  calls them on one buffer whose index 0 is the message start (so alignment
  is right for every GIOP version, 15.3.1.1). Their errors are translated by
  the same functions the :class:`cosnotify.orb.cdr.Encoder`/``Decoder``
  boundary uses (``BAD_PARAM``/``DATA_CONVERSION`` encoding, ``MARSHAL``
  decoding).

Every function here is pure and sans-IO.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from cosnotify.orb import cdr_compile
from cosnotify.orb.cdr import translate_decode_error, translate_encode_error
from cosnotify.orb.cdr_core import Codec, DecodeState, EncodeState
from cosnotify.orb.giop_messages import KeyAddr, Request, encode_message
from cosnotify.orb.interface import Operation
from cosnotify.orb.typecode import K_VOID, TypeCode

__all__ = [
    "STOP",
    "FastRequest",
    "Framer",
    "OperationPlan",
    "RawReply",
    "RequestParser",
    "parse_reply",
    "parse_request",
    "reply_prefix",
    "request_prefix",
]

MAGIC = b"GIOP"
_LE = struct.Struct("<I")
_BE = struct.Struct(">I")
_LE3 = struct.Struct("<III")
_BE3 = struct.Struct(">III")
_LE2 = struct.Struct("<II")
_BE2 = struct.Struct(">II")


class _Stop:
    """The framer met a header that is not sane: hand the rest to the GIOP connection."""

    def __repr__(self) -> str:
        return "STOP"


STOP = _Stop()


class Framer:
    """Whole GIOP messages out of a byte stream, by their 12-octet header."""

    __slots__ = ("_buffer", "max_size", "stopped")

    def __init__(self, max_size: int) -> None:
        self._buffer = b""
        self.max_size = max_size
        self.stopped = False

    def feed(self, data: bytes) -> None:
        self._buffer = self._buffer + data if self._buffer else data

    def take_rest(self) -> bytes:
        rest, self._buffer = self._buffer, b""
        return rest

    def pending(self) -> bool:
        """True while part of a message is buffered."""
        return bool(self._buffer)

    def next(self) -> bytes | _Stop | None:
        """The next whole message, None if more data is needed, or STOP."""
        buffer = self._buffer
        if len(buffer) < 12:
            return None
        if buffer[:4] != MAGIC or buffer[4] != 1 or buffer[5] > 2 or buffer[7] > 7:
            self.stopped = True
            return STOP
        size = (_LE if buffer[6] & 1 else _BE).unpack_from(buffer, 8)[0]
        if size > self.max_size:
            self.stopped = True
            return STOP
        end = 12 + size
        if len(buffer) < end:
            return None
        if len(buffer) == end:
            self._buffer = b""
            return buffer
        self._buffer = buffer[end:]
        return buffer[:end]


# -- requests -----------------------------------------------------------------------------------


class FastRequest:
    """A GIOP 1.2 Request read by :func:`parse_request` (the fields the server needs)."""

    __slots__ = ("data", "little_endian", "object_key", "operation", "pos",
                 "request_id", "response_expected", "service_contexts", "version")

    def __init__(self, request_id: int, response_expected: bool, object_key: bytes,
                 operation: str, service_contexts: tuple[tuple[int, bytes], ...], data: bytes,
                 body_start: int, little_endian: bool) -> None:
        self.request_id = request_id
        self.response_expected = response_expected
        self.object_key = object_key
        self.operation = operation
        self.service_contexts = service_contexts
        self.data = data
        self.pos = body_start  #: where the body starts in ``data`` (index 0 is 8-aligned)
        self.little_endian = little_endian
        self.version = (1, 2)

    def service_context(self, context_id: int) -> bytes | None:
        return next((d for i, d in self.service_contexts if i == context_id), None)


def parse_request(raw: bytes) -> FastRequest | None:
    """A GIOP 1.2, unfragmented, key-addressed Request; None for anything else."""
    if raw[5] != 2 or raw[7] != 0 or raw[6] & 2:
        return None
    little = raw[6] & 1
    one = _LE if little else _BE
    size = len(raw)
    try:
        request_id = one.unpack_from(raw, 12)[0]
        flags = raw[16]
        if raw[20:22] != b"\0\0":  # disposition 0: KeyAddr
            return None
        key_length = one.unpack_from(raw, 24)[0]
        pos = 28 + key_length
        key = raw[28:pos]
        pos += -pos & 3
        name_length = one.unpack_from(raw, pos)[0]
        start = pos + 4
        pos = start + name_length
        if name_length == 0 or pos > size or raw[pos - 1] != 0:
            return None
        operation = raw[start:pos - 1].decode("latin-1")
        pos += -pos & 3
        count = one.unpack_from(raw, pos)[0]
        pos += 4
        contexts: tuple[tuple[int, bytes], ...] = ()
        if count:
            if count * 8 > size - pos:
                return None
            found = []
            for _ in range(count):
                pos += -pos & 3
                context_id, length = (_LE2 if little else _BE2).unpack_from(raw, pos)
                pos += 8
                if pos + length > size:
                    return None
                found.append((context_id, raw[pos:pos + length]))
                pos += length
            contexts = tuple(found)
    except struct.error:
        return None
    if key_length > size:
        return None
    pos += -pos & 7 if pos < size else 0
    return FastRequest(request_id, bool(flags & 1), key, operation, contexts, raw,
                       min(pos, size), bool(little))


class RequestParser:
    """:func:`parse_request` with a memory of the last header it read.

    A client calling the same operation on the same object sends the same
    octets from offset 16 (after the request id) to the body every time
    (flags, target, operation, service contexts, padding), so an equal run of
    octets means equal fields and only the request id is read anew.
    """

    __slots__ = ("_header", "_last", "_lead")

    def __init__(self) -> None:
        self._lead = b""
        self._header = b""
        self._last: FastRequest | None = None

    def parse(self, raw: bytes) -> FastRequest | None:
        last = self._last
        header = self._header
        end = 16 + len(header)
        if last is not None and len(raw) > end and raw[4:8] == self._lead \
                and raw[16:end] == header:
            return FastRequest((_LE if last.little_endian else _BE).unpack_from(raw, 12)[0],
                               last.response_expected, last.object_key, last.operation,
                               last.service_contexts, raw, end, last.little_endian)
        request = parse_request(raw)
        if request is not None and request.pos < len(raw):
            self._last, self._lead, self._header = request, raw[4:8], raw[16:request.pos]
        return request


_prefixes: dict[tuple[bytes, str, int, tuple[Any, ...], tuple[int, int], bool],
                tuple[bytes, int]] = {}


def request_prefix(key: bytes, operation: str, flags: int, contexts: tuple[Any, ...],
                   version: tuple[int, int], little: bool = True) -> tuple[bytes, int]:
    """(the octets of a Request up to its body, the offset of the request id in them).

    The size field (octets 8-11) and request id are placeholders to patch.
    GIOP 1.2 prefixes are padded to 8 so the body starts aligned (15.4.2.2).
    """
    cache_key = (key, operation, flags, contexts, version, little)
    found = _prefixes.get(cache_key)
    if found is None:
        def encoded(request_id: int) -> bytes:
            return encode_message(Request(request_id, KeyAddr(key), operation, b"", flags, contexts,
                                          b"", version, little))

        zero, ones = encoded(0), encoded(0xFFFFFFFF)
        at = next(i for i in range(12, len(zero)) if zero[i] != ones[i])
        prefix = zero
        if version >= (1, 2):
            prefix += bytes(-len(prefix) & 7)
        found = (prefix, at)
        if len(_prefixes) > 4096:
            _prefixes.clear()
        _prefixes[cache_key] = found
    return found


def finish_message(buffer: bytearray, request_id: int, rid_at: int, little: bool = True) -> None:
    """Patch the size and request id into a message built on a prefix."""
    one = _LE if little else _BE
    one.pack_into(buffer, 8, len(buffer) - 12)
    one.pack_into(buffer, rid_at, request_id)


# -- replies ------------------------------------------------------------------------------------


class RawReply:
    """A Reply without service contexts read by :func:`parse_reply`; the body is at ``data[24:]``."""

    __slots__ = ("data", "little_endian", "reply_status", "request_id", "version")
    body_start = 24

    def __init__(self, request_id: int, reply_status: int, data: bytes, little_endian: bool,
                 version: tuple[int, int]) -> None:
        self.request_id = request_id
        self.reply_status = reply_status
        self.data = data
        self.little_endian = little_endian
        self.version = version


def parse_reply(raw: bytes) -> RawReply | None:
    """An unfragmented Reply with no service contexts (any version); None for anything else."""
    if raw[7] != 1 or raw[6] & 2 or len(raw) < 24:
        return None
    little = raw[6] & 1
    minor = raw[5]
    first, second, third = (_LE3 if little else _BE3).unpack_from(raw, 12)
    if minor >= 2:
        request_id, status, count = first, second, third
        if status > 5:
            return None
    else:
        count, request_id, status = first, second, third
        if status > 3:
            return None
    if count:
        return None
    return RawReply(request_id, status, raw, bool(little), (1, minor))


_REPLY_HEADERS = {(little, minor): (MAGIC + bytes((1, minor, 1 if little else 0, 1)))
                  for little in (False, True) for minor in (0, 1, 2)}


def reply_prefix(request_id: int, status: int, version: tuple[int, int], little: bool = True
                 ) -> bytearray:
    """The 24 octets before a reply body (no service contexts); size patched later."""
    buffer = bytearray(_REPLY_HEADERS[(little, version[1])])
    three = _LE3 if little else _BE3
    buffer += b"\0\0\0\0"
    if version >= (1, 2):
        buffer += three.pack(request_id, status, 0)
    else:
        buffer += three.pack(0, request_id, status)
    return buffer


def finish_reply(buffer: bytearray, little: bool = True) -> bytearray:
    (_LE if little else _BE).pack_into(buffer, 8, len(buffer) - 12)
    return buffer


# -- per-operation marshalling plans ---------------------------------------------------------------


Encode = Callable[[bytearray, Any, EncodeState], None]
Decode = Callable[[bytes, int, DecodeState], tuple[Any, int]]


class OperationPlan:
    """Compiled marshallers for one operation's requests and replies under one codec."""

    __slots__ = ("codec", "in_decoders", "in_encoders", "in_types", "operation", "out_decoders",
                 "out_encoders", "out_types", "shape", "void")

    def __init__(self, operation: Operation, codec: Codec) -> None:
        self.operation = operation
        self.codec = codec
        self.in_types = tuple(p.tc for p in operation.in_params)
        out: list[TypeCode] = [] if operation.result._k == K_VOID else [operation.result]
        out.extend(p.tc for p in operation.out_params)
        self.out_types = tuple(out)
        self.in_encoders = tuple(cdr_compile.encoder_for(t, codec) for t in self.in_types)
        self.in_decoders = tuple(cdr_compile.decoder_for(t, codec) for t in self.in_types)
        self.out_encoders = tuple(cdr_compile.encoder_for(t, codec) for t in self.out_types)
        self.out_decoders = tuple(cdr_compile.decoder_for(t, codec) for t in self.out_types)
        self.void = operation.result._k == K_VOID
        #: 0: nothing comes back; 1: a single value (result, or the only out); 2: a tuple
        self.shape = min(len(out), 2)

    @staticmethod
    def encode(buffer: bytearray, encoders: tuple[Encode, ...], types: tuple[TypeCode, ...],
               values: Any, state: EncodeState) -> None:
        """Append ``values``; a value that does not fit is BAD_PARAM (or DATA_CONVERSION)."""
        index = 0
        try:
            for index, encode in enumerate(encoders):
                encode(buffer, values[index], state)
        except Exception as exc:
            raise translate_encode_error(types[index], values[index], exc) from exc

    @staticmethod
    def decode(data: bytes, pos: int, decoders: tuple[Decode, ...], state: DecodeState
               ) -> tuple[list[Any], int]:
        """Values from ``data`` at ``pos`` (index 0 of ``data`` is 8-aligned); MARSHAL if malformed."""
        values = []
        try:
            for decode in decoders:
                value, pos = decode(data, pos, state)
                values.append(value)
        except Exception as exc:  # anything but a CORBA exception becomes MARSHAL
            error = translate_decode_error(exc, pos)
            if error is exc:
                raise
            raise error from exc
        return values, pos

    def pack(self, values: list[Any]) -> Any:
        """Reply values (result first unless void, then outs) as the mapping returns them."""
        shape = self.shape
        if shape == 1:
            return values[0]
        return tuple(values) if shape else None

    def unpack(self, value: Any) -> Any:
        """A servant's return value as the sequence of reply values to encode."""
        shape = self.shape
        if shape == 1:
            return (value,)
        return tuple(value) if shape else ()


_plans: dict[tuple[int, Codec], OperationPlan] = {}


def plan_for(operation: Operation, codec: Codec) -> OperationPlan:
    """The cached plan for ``operation`` under ``codec``."""
    key = (id(operation), codec)
    found = _plans.get(key)
    if found is None or found.operation is not operation:
        found = _plans[key] = OperationPlan(operation, codec)
    return found
