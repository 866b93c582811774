"""Compiled CDR marshallers: one encoder and one decoder per (TypeCode, codec).

Strategy: interpreting a TypeCode for every value is the slow part of a
Python ORB, so each TypeCode is turned, once, into Python source that is
``exec``-ed into a plain function and cached by the TypeCode's identity:

* decoders are ``f(data, pos, st) -> (value, pos)`` over immutable ``bytes``;
* encoders are ``f(buf, value, st) -> None`` appending to a ``bytearray``.

The source (written by :mod:`cosnotify.orb.cdr_codegen`) inlines what is
hot: strings, nested structs and sequences, and runs of primitives, which
become a single ``struct.Struct`` call with the padding computed at compile
time whenever the alignment is statically known. Unions, Anys, TypeCodes,
object references, fixed, long double and wide characters get functions of
their own; this module holds the hand-written ones (Anys with a fast path
for basic-type values, wide characters per GIOP version) and the caches.

Recursive TypeCodes compile to a trampoline that counts nesting in the
per-call state ``st``, so hostile input cannot recurse past ``max_depth``.
Decoders raise :class:`CDRError` (and let ``struct.error``/``IndexError``
signal truncation, ``UnicodeDecodeError`` bad text); encoders raise whatever
the value provokes, and :mod:`cosnotify.orb.cdr` turns that into
``BAD_PARAM`` (naming the member path) or ``DATA_CONVERSION``.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable
from itertools import count
from typing import Any

from cosnotify.orb import cdr_core as C
from cosnotify.orb import typecode as T
from cosnotify.orb.any import Any as CorbaAny
from cosnotify.orb.cdr_codegen import BULK_KINDS, RUN_KINDS, SIZES, Source, min_size
from cosnotify.orb.cdr_core import CDRError, Codec, EncodeMismatch, Minor
from cosnotify.orb.cdr_typecode import decode_typecode, encode_typecode
from cosnotify.orb.cdr_typecode import encoded_cache as _encoded_typecodes
from cosnotify.orb.exceptions import (
    BAD_PARAM,
    COMPLETED_NO,
    DATA_CONVERSION,
    MARSHAL,
    OMGVMCID,
    SystemException,
)
from cosnotify.orb.values import member_value

__all__ = ["EncodeMismatch", "decoder_for", "encoder_for", "min_size"]

Decoder = Callable[[bytes, int, Any], tuple[Any, int]]
Encoder = Callable[[bytearray, Any, Any], None]

#: Elements of zero minimum size (empty structs) one message may claim.
EMPTY_ELEMENT_LIMIT = C.DecodeState.EMPTY_LIMIT
_CACHE_LIMIT = 4096


def _data_conversion(detail: str) -> SystemException:
    return DATA_CONVERSION(OMGVMCID | 1, COMPLETED_NO, detail)


def _string_error(data: bytes, pos: int, length: int) -> CDRError:
    if length == 0:
        return CDRError(Minor.STRING_NOT_NUL_TERMINATED, "string of length 0 (no NUL)", pos - 4)
    if pos + length > len(data):
        return CDRError(Minor.PASS_END, f"string of {length} octets runs past the end", pos - 4)
    return CDRError(Minor.STRING_NOT_NUL_TERMINATED, "string does not end with NUL", pos - 4)


def _utf16(raw: bytes, offset: int) -> str:
    """UTF-16 with an optional byte order mark; big-endian without one (RFC 2781)."""
    if len(raw) % 2:
        raise CDRError(Minor.INVALID_WCHAR, "UTF-16 data of odd length", offset)
    if raw[:2] == b"\xfe\xff":
        raw, encoding = raw[2:], "utf-16-be"
    elif raw[:2] == b"\xff\xfe":
        raw, encoding = raw[2:], "utf-16-le"
    else:
        encoding = "utf-16-be"
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError:
        raise CDRError(Minor.INVALID_CHAR_DATA, "invalid UTF-16", offset) from None


def _helpers(codec: Codec) -> dict[str, Any]:
    """Functions and constants every generated function of this codec may use."""
    little = codec.little_endian
    ulong = C.packer(little, "I")
    ushort = C.packer(little, "H")
    stream_utf16 = "utf-16-le" if little else "utf-16-be"

    def wide_check() -> None:
        if codec.giop < (1, 1):
            raise CDRError(Minor.WCHAR_GIOP10, "wchar data cannot travel over GIOP 1.0")
        if not codec.wchar_set:
            raise CDRError(Minor.WCHAR_TCS_UNKNOWN, "no wchar code set was negotiated")

    def wide_encode_check() -> None:
        if codec.giop < (1, 1):
            raise MARSHAL(Minor.WCHAR_GIOP10, COMPLETED_NO, "wchar data cannot travel over GIOP 1.0")
        if not codec.wchar_set:
            raise BAD_PARAM(OMGVMCID | 23, COMPLETED_NO, "no wchar code set was negotiated")

    def dec_wchar(data: bytes, pos: int, st: Any) -> tuple[str, int]:
        wide_check()
        if codec.giop >= (1, 2):
            size = data[pos]
            raw = data[pos + 1:pos + 1 + size]
            if len(raw) != size:
                raise CDRError(Minor.PASS_END, "wchar runs past the end", pos)
            text = _utf16(raw, pos)
            pos += 1 + size
        else:
            pos += pos & 1
            (unit,) = ushort.unpack_from(data, pos)
            text = chr(unit)
            pos += 2
        if len(text) != 1 or 0xD800 <= ord(text) < 0xE000:
            raise CDRError(Minor.INVALID_WCHAR, f"wchar of {len(text)} characters", pos)
        return text, pos

    def enc_wchar(buf: bytearray, value: Any, st: Any) -> None:
        wide_encode_check()
        if not isinstance(value, str) or len(value) != 1:
            raise EncodeMismatch("wchar must be a 1-character string")
        if ord(value) > 0xFFFF or 0xD800 <= ord(value) < 0xE000:
            raise _data_conversion(f"{value!r} is not one UTF-16 code unit")
        if codec.giop >= (1, 2):
            buf.append(2)
            buf += value.encode("utf-16-be")
        else:
            buf += C.PAD[2][len(buf) & 1]
            buf += ushort.pack(ord(value))

    def dec_wstring(data: bytes, pos: int, st: Any) -> tuple[str, int]:
        wide_check()
        pos += -pos & 3
        (length,) = ulong.unpack_from(data, pos)
        pos += 4
        if codec.giop >= (1, 2):
            raw = data[pos:pos + length]
            if len(raw) != length:
                raise CDRError(Minor.PASS_END, "wstring runs past the end", pos - 4)
            return _utf16(raw, pos), pos + length
        raw = data[pos:pos + 2 * length]
        if length == 0 or len(raw) != 2 * length:
            raise CDRError(Minor.PASS_END, "wstring runs past the end", pos - 4)
        if raw[-2:] != b"\0\0":
            raise CDRError(Minor.STRING_NOT_NUL_TERMINATED, "wstring does not end with NUL", pos - 4)
        try:
            return raw[:-2].decode(stream_utf16), pos + 2 * length
        except UnicodeDecodeError:
            raise CDRError(Minor.INVALID_CHAR_DATA, "invalid UTF-16", pos) from None

    def enc_wstring(buf: bytearray, value: Any, st: Any) -> None:
        wide_encode_check()
        if not isinstance(value, str):
            raise EncodeMismatch("wstring must be a str")
        try:
            raw = value.encode("utf-16-be" if codec.giop >= (1, 2) else stream_utf16)
        except UnicodeEncodeError:
            raise _data_conversion("wstring with unpaired surrogates") from None
        buf += C.PAD[4][len(buf) & 3]
        if codec.giop >= (1, 2):
            buf += ulong.pack(len(raw))
            buf += raw
        else:
            buf += ulong.pack(len(raw) // 2 + 1)
            buf += raw
            buf += b"\0\0"

    def count_error(n: int, left: int, size: int, pos: int) -> CDRError:
        return CDRError(Minor.SEQUENCE_TOO_LONG,
                        f"sequence of {n} elements cannot fit in {left} octets", pos - 4)

    def check_count(n: int, left: int, size: int, pos: int) -> None:
        if n * size > left:
            raise count_error(n, left, size, pos)

    def check_empty(n: int, st: Any, pos: int) -> None:
        """Elements of no size: charge them to the message's allowance (DecodeState.empty)."""
        st.empty -= n
        if st.empty < 0:
            raise CDRError(Minor.TOO_MANY_ELEMENTS, f"{n} elements of no size: more than "
                           f"{C.DecodeState.EMPTY_LIMIT} in one message", pos - 4)

    return {
        "_E": CDRError, "_V": EncodeMismatch, "_DC": _data_conversion, "_strerr": _string_error,
        "_chk": check_count, "_chk0": check_empty, "CHARS": C.CHARS, "PAD2": C.PAD[2],
        "PAD4": C.PAD[4], "PAD8": C.PAD[8], "UL": ulong.unpack_from, "PUL": ulong.pack, "Z": b"\0",
        "_unpack_from": struct.unpack_from, "_pack": struct.pack, "NUL": "\0",
        "dec_wchar": dec_wchar, "enc_wchar": enc_wchar, "dec_wstring": dec_wstring,
        "enc_wstring": enc_wstring, "LITTLE": little,
        "_pack_ld": C.pack_longdouble, "_unpack_ld": C.unpack_longdouble,
        "_to_bcd": C.fixed_to_bcd, "_from_bcd": C.bcd_to_fixed, "_new": object.__new__,
        "_member": member_value,
    }


class Compiler:
    """Compiles and caches the functions of one direction for one codec."""

    def __init__(self, codec: Codec, encode: bool) -> None:
        self.codec = codec
        self.encode = encode
        self.cache: dict[int, tuple[T.TypeCode, Any]] = {}
        self.building: dict[int, Any] = {}
        self.by_value: dict[T.TypeCode, Any] = {}
        self.lock = threading.RLock()
        self.base = _helpers(codec)
        self.base["_any"] = self._any_function()
        self.base["_tc"] = self._typecode_function()
        self.names = count()

    def get(self, tc: T.TypeCode) -> Any:
        tc = T.resolve(tc)
        hit = self.cache.get(id(tc))
        if hit is not None:
            return hit[1]
        with self.lock:
            hit = self.cache.get(id(tc))
            if hit is not None:
                return hit[1]
            trampoline = self.building.get(id(tc))
            if trampoline is not None:
                return trampoline
            if len(self.cache) >= _CACHE_LIMIT:
                self.cache.clear()
                self.by_value.clear()
            # An equal TypeCode built separately (a fresh struct_tc per call) shares
            # the function compiled for the first one: equal() implies the same layout
            # and the same Python classes (both come from the repository id).
            function = self.by_value.get(tc) if not self.building else None
            if function is None:
                cell: list[Any] = []
                self.building[id(tc)] = _trampoline(cell, self.encode, lambda: self.get(tc))
                try:
                    function = self._compile(tc)
                finally:
                    del self.building[id(tc)]
                cell.append(function)
                self.by_value[tc] = function
            self.cache[id(tc)] = (tc, function)
            return function

    def _compile(self, tc: T.TypeCode) -> Any:
        k = tc._k
        if k == T.K_ANY:
            return self.base["_any"]
        if k == T.K_TYPECODE:
            return self.base["_tc"]
        source = Source(self, tc)
        if self.encode:
            source.enc(tc, "v", 1, top=True)
            source.flush(1)
            header = "def f(buf, v, st):"
            footer = "    return None"
        else:
            source.dec(tc, "v", 1, top=True)
            source.flush(1)
            header = "def f(data, pos, st):"
            footer = "    return v, pos"
        text = "\n".join([header, *source.lines, footer]) + "\n"
        namespace = source.ns
        # The file name is for tracebacks only; TypeCode ids from the wire stay out of it.
        label = repr(tc).encode("ascii", "backslashreplace").decode("ascii").replace("\0", "?")
        code = compile(text, f"<cdr {'enc' if self.encode else 'dec'} {label[:200]}>", "exec")
        exec(code, namespace)  # noqa: S102 - compiling generated marshallers is the point
        function = namespace["f"]
        function.__cdr_source__ = text
        return function

    def _any_function(self) -> Any:
        codec = self.codec
        get = self.get
        cache = self.cache
        pad4 = C.PAD[4]
        new = object.__new__

        little = codec.little_endian
        tc_cache = _encoded_typecodes(codec)
        if self.encode:
            pack_ulong = C.packer(little, "I").pack
            fast = {id(T._SIMPLE[k]): (pack_ulong(k), C.packer(little, RUN_KINDS[k]).pack,
                                       SIZES[RUN_KINDS[k]]) for k in BULK_KINDS | {T.K_OCTET}}

            string_tc, encoding = T.TC_string, codec.char_encoding
            string_kind = pack_ulong(T.K_STRING) + pack_ulong(0)

            def enc_any(buf: bytearray, value: Any, st: Any) -> None:
                tc = value._t
                buf += pad4[len(buf) & 3]
                found = fast.get(id(tc))
                if found is not None:
                    kind, pack, size = found
                    buf += kind
                    buf += C.PAD[size][len(buf) & (size - 1)]
                    buf += pack(value._v)
                    return
                if tc is string_tc:
                    raw = value._v.encode(encoding)
                    if b"\0" in raw:
                        raise EncodeMismatch("strings cannot contain NUL")
                    buf += string_kind
                    buf += pack_ulong(len(raw) + 1)
                    buf += raw
                    buf.append(0)
                    return
                coded = tc_cache.get(id(tc))
                buf += coded[1] if coded is not None else encode_typecode(tc, codec)
                compiled = cache.get(id(tc))
                function = compiled[1] if compiled is not None else get(tc)
                st.depth += 1
                if st.depth > st.max_depth:
                    raise EncodeMismatch(f"Anys nested deeper than {st.max_depth}")
                function(buf, value._v, st)
                st.depth -= 1
            return enc_any

        # Anys of numeric basic types skip the TypeCode reader and the value call.
        ulong = C.packer(codec.little_endian, "I").unpack_from
        numeric = {k: (T._SIMPLE[k], C.packer(codec.little_endian, RUN_KINDS[k]).unpack_from,
                       SIZES[RUN_KINDS[k]]) for k in BULK_KINDS | {T.K_OCTET}}

        string_tc, encoding = T.TC_string, codec.char_encoding

        def dec_any(data: bytes, pos: int, st: Any) -> tuple[Any, int]:
            pos += -pos & 3
            kind = ulong(data, pos)[0]
            found = numeric.get(kind)
            if found is not None:
                basic, unpack, size = found
                pos += 4
                pos += -pos & (size - 1)
                result = new(CorbaAny)
                result._t = basic
                result._v = unpack(data, pos)[0]
                return result, pos + size
            if kind == T.K_STRING and not ulong(data, pos + 4)[0]:
                pos += 12
                length = ulong(data, pos - 4)[0]
                end = pos + length
                if not length or data[end - 1:end] != b"\0":
                    raise _string_error(data, pos, length)
                text = data[pos:end - 1].decode(encoding)
                if "\0" in text:
                    raise CDRError(Minor.INVALID_CHAR_DATA, "string contains NUL", pos)
                result = new(CorbaAny)
                result._t = string_tc
                result._v = text
                return result, end
            tc, pos = decode_typecode(data, pos, codec, st.max_depth)
            hit = cache.get(id(tc))
            function = hit[1] if hit is not None else get(tc)
            st.depth += 1
            if st.depth > st.max_depth:
                raise CDRError(Minor.TOO_DEEP, f"Anys nested deeper than {st.max_depth}", pos)
            value, pos = function(data, pos, st)
            st.depth -= 1
            result = new(CorbaAny)
            result._t = tc
            result._v = value
            return result, pos
        return dec_any

    def _typecode_function(self) -> Any:
        codec = self.codec
        pad4 = C.PAD[4]
        if self.encode:
            def enc_tc(buf: bytearray, value: Any, st: Any) -> None:
                if not isinstance(value, T.TypeCode):
                    raise EncodeMismatch("expected a TypeCode")
                buf += pad4[len(buf) & 3]
                buf += encode_typecode(value, codec)
            return enc_tc

        def dec_tc(data: bytes, pos: int, st: Any) -> tuple[Any, int]:
            return decode_typecode(data, pos, codec, st.max_depth)
        return dec_tc


def _trampoline(cell: list[Any], encode: bool, late: Callable[[], Any]) -> Any:
    """A recursion point: counts nesting, then calls the function once compiled.

    Functions compiled while the recursive type was being built refer to it
    through here and may be cached (and called, by another thread) before
    that build ends, or after it failed (a RecursionError met while compiling
    deep inside received data). The cell is then empty: ``late`` waits for
    the build (or compiles the type again) and fills it.
    """
    def target() -> Any:
        if not cell:
            function = late()
            if not cell:
                cell.append(function)
        return cell[0]

    if encode:
        def enc_again(buf: bytearray, value: Any, st: Any) -> None:
            st.depth += 1
            if st.depth > st.max_depth:
                raise EncodeMismatch(f"values nested deeper than {st.max_depth}")
            (cell[0] if cell else target())(buf, value, st)
            st.depth -= 1
        return enc_again

    def dec_again(data: bytes, pos: int, st: Any) -> tuple[Any, int]:
        st.depth += 1
        if st.depth > st.max_depth:
            raise CDRError(Minor.TOO_DEEP, f"values nested deeper than {st.max_depth}", pos)
        result: tuple[Any, int] = (cell[0] if cell else target())(data, pos, st)
        st.depth -= 1
        return result
    return dec_again


_compilers: dict[tuple[Codec, bool], Compiler] = {}
_compilers_lock = threading.Lock()


def _compiler(codec: Codec, encode: bool) -> Compiler:
    found = _compilers.get((codec, encode))
    if found is None:
        with _compilers_lock:
            found = _compilers.get((codec, encode))
            if found is None:
                found = _compilers[(codec, encode)] = Compiler(codec, encode)
    return found


def encoder_for(tc: T.TypeCode, codec: Codec) -> Encoder:
    """The compiled encoder ``f(buf, value, state)`` for ``tc`` under ``codec``."""
    compiler = _compiler(codec, True)
    hit = compiler.cache.get(id(tc))
    return hit[1] if hit is not None else compiler.get(tc)  # type: ignore[no-any-return]


def decoder_for(tc: T.TypeCode, codec: Codec) -> Decoder:
    """The compiled decoder ``f(data, pos, state) -> (value, pos)`` for ``tc``."""
    compiler = _compiler(codec, False)
    hit = compiler.cache.get(id(tc))
    return hit[1] if hit is not None else compiler.get(tc)  # type: ignore[no-any-return]
