"""Compiled CDR marshallers: one encoder and one decoder per (TypeCode, codec).

Strategy: interpreting a TypeCode for every value is the slow part of a
Python ORB, so each TypeCode is turned, once, into Python source that is
``exec``-ed into a plain function and cached by the TypeCode's identity:

* decoders are ``f(data, pos, st) -> (value, pos)`` over immutable ``bytes``;
* encoders are ``f(buf, value, st) -> None`` appending to a ``bytearray``.

The source inlines what is hot: strings, nested structs and sequences, and
runs of primitives, which become a single ``struct.Struct`` call with the
padding computed at compile time whenever the alignment is statically known
(CORBA 3.0 15.3.1.1 alignment, relative to buffer index 0, which the streams
keep 8-aligned). Unions, Anys, TypeCodes, object references, fixed, long
double and wide characters get functions of their own.

Recursive TypeCodes compile to a trampoline that counts nesting in the
per-call state ``st``, so hostile input cannot recurse past ``max_depth``.
Decoders raise :class:`CDRError` (and let ``struct.error``/``IndexError``
signal truncation, ``UnicodeDecodeError`` bad text); encoders raise whatever
the value provokes, and :mod:`cosnotify.orb.cdr` turns that into
``BAD_PARAM`` (naming the member path) or ``DATA_CONVERSION``.
"""

from __future__ import annotations

import keyword
import struct
import threading
from itertools import count
from typing import Any, Callable

from cosnotify.orb import cdr_core as C
from cosnotify.orb import typecode as T
from cosnotify.orb.any import Any as CorbaAny
from cosnotify.orb.cdr_core import CDRError, Codec, Minor
from cosnotify.orb.cdr_typecode import decode_typecode, encode_typecode
from cosnotify.orb.cdr_typecode import encoded_cache as _encoded_typecodes
from cosnotify.orb.values import StructBase
from cosnotify.orb.exceptions import (
    BAD_PARAM,
    COMPLETED_NO,
    DATA_CONVERSION,
    MARSHAL,
    OMGVMCID,
    SystemException,
)

__all__ = ["decoder_for", "encoder_for", "EncodeMismatch", "min_size"]

Decoder = Callable[[bytes, int, Any], tuple[Any, int]]
Encoder = Callable[[bytearray, Any, Any], None]

_RUN_KINDS = {T.K_SHORT: "h", T.K_USHORT: "H", T.K_LONG: "i", T.K_ULONG: "I", T.K_LONGLONG: "q",
              T.K_ULONGLONG: "Q", T.K_FLOAT: "f", T.K_DOUBLE: "d", T.K_OCTET: "B",
              T.K_BOOLEAN: "B", T.K_CHAR: "B", T.K_ENUM: "I"}
_SIZES = {"h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "Q": 8, "f": 4, "d": 8, "B": 1}
_BULK_KINDS = {T.K_SHORT, T.K_USHORT, T.K_LONG, T.K_ULONG, T.K_LONGLONG, T.K_ULONGLONG,
               T.K_FLOAT, T.K_DOUBLE}
_INLINE_DEPTH = 4
#: Elements of zero minimum size (empty structs) a sequence may claim.
EMPTY_ELEMENT_LIMIT = 65536
_CACHE_LIMIT = 4096


class EncodeMismatch(ValueError):
    """A value that does not fit its TypeCode, found while encoding."""


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


def min_size(tc: T.TypeCode, codec: Codec, seen: frozenset[int] = frozenset()) -> int:
    """A lower bound on the octets any value of ``tc`` occupies (no padding counted)."""
    tc = T.resolve(tc)
    k = tc._k
    if k in _RUN_KINDS:
        return _SIZES[_RUN_KINDS[k]]
    if k == T.K_ALIAS:
        return min_size(tc.content_type(), codec, seen)
    if id(tc) in seen:
        return 0
    inner = seen | {id(tc)}
    if k in (T.K_STRUCT, T.K_EXCEPT):
        members: tuple[T.TypeCode, ...] = tc._types  # type: ignore[attr-defined]
        return sum(min_size(t, codec, inner) for t in members)
    if k == T.K_UNION:
        return min_size(tc.discriminator_type(), codec, inner)
    if k == T.K_ARRAY:
        return tc.length() * min_size(tc.content_type(), codec, inner)
    if k == T.K_WCHAR:
        return 1 if codec.giop >= (1, 2) else 2
    if k == T.K_FIXED:
        return C.fixed_size(tc.fixed_digits())
    return {T.K_LONGDOUBLE: 16, T.K_OBJREF: 8, T.K_ABSTRACT_INTERFACE: 9}.get(
        k, 0 if k in (T.K_NULL, T.K_VOID) else 4)


def _helpers(codec: Codec) -> dict[str, Any]:
    """Functions and constants every generated function of this codec may use."""
    little = codec.little_endian
    ulong = C.packer(little, "I")
    ushort = C.packer(little, "H")
    stream_utf16 = "utf-16-le" if little else "utf-16-be"
    max_empty = EMPTY_ELEMENT_LIMIT

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
        if size:
            if n * size > left:
                raise count_error(n, left, size, pos)
        elif n > max_empty:
            raise count_error(n, left, size, pos)

    return {
        "_E": CDRError, "_V": EncodeMismatch, "_DC": _data_conversion, "_strerr": _string_error,
        "_chk": check_count, "CHARS": C.CHARS, "PAD2": C.PAD[2], "PAD4": C.PAD[4],
        "PAD8": C.PAD[8], "UL": ulong.unpack_from, "PUL": ulong.pack, "Z": b"\0",
        "_unpack_from": struct.unpack_from, "_pack": struct.pack,
        "dec_wchar": dec_wchar, "enc_wchar": enc_wchar, "dec_wstring": dec_wstring,
        "enc_wstring": enc_wstring, "LITTLE": little,
        "_pack_ld": C.pack_longdouble, "_unpack_ld": C.unpack_longdouble,
        "_to_bcd": C.fixed_to_bcd, "_from_bcd": C.bcd_to_fixed, "_new": object.__new__,
    }


class _Compiler:
    """Compiles and caches the functions of one direction for one codec."""

    def __init__(self, codec: Codec, encode: bool) -> None:
        self.codec = codec
        self.encode = encode
        self.cache: dict[int, tuple[T.TypeCode, Any]] = {}
        self.building: dict[int, Any] = {}
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
            cell: list[Any] = []
            self.building[id(tc)] = _trampoline(cell, self.encode)
            try:
                function = self._compile(tc)
            finally:
                del self.building[id(tc)]
            cell.append(function)
            if len(self.cache) >= _CACHE_LIMIT:
                self.cache.clear()
            self.cache[id(tc)] = (tc, function)
            return function

    def _compile(self, tc: T.TypeCode) -> Any:
        k = tc._k
        if k == T.K_ANY:
            return self.base["_any"]
        if k == T.K_TYPECODE:
            return self.base["_tc"]
        source = _Source(self, tc)
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
        exec(compile(text, f"<cdr {'enc' if self.encode else 'dec'} {tc!r}>", "exec"), namespace)
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
            fast = {id(T._SIMPLE[k]): (pack_ulong(k), C.packer(little, _RUN_KINDS[k]).pack,
                                       _SIZES[_RUN_KINDS[k]]) for k in _BULK_KINDS | {T.K_OCTET}}

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
                hit = tc_cache.get(id(tc))
                buf += hit[1] if hit is not None else encode_typecode(tc, codec)
                hit = cache.get(id(tc))
                function = hit[1] if hit is not None else get(tc)
                st.depth += 1
                if st.depth > st.max_depth:
                    raise EncodeMismatch(f"Anys nested deeper than {st.max_depth}")
                function(buf, value._v, st)
                st.depth -= 1
            return enc_any

        # Anys of numeric basic types skip the TypeCode reader and the value call.
        ulong = C.packer(codec.little_endian, "I").unpack_from
        numeric = {k: (T._SIMPLE[k], C.packer(codec.little_endian, _RUN_KINDS[k]).unpack_from,
                       _SIZES[_RUN_KINDS[k]]) for k in _BULK_KINDS | {T.K_OCTET}}

        string_tc, encoding = T.TC_string, codec.char_encoding

        def dec_any(data: bytes, pos: int, st: Any) -> tuple[Any, int]:
            pos += -pos & 3
            kind = ulong(data, pos)[0]
            found = numeric.get(kind)
            if found is not None:
                tc, unpack, size = found
                pos += 4
                pos += -pos & (size - 1)
                result = new(CorbaAny)
                result._t = tc
                result._v = unpack(data, pos)[0]
                return result, pos + size
            if kind == T.K_STRING and not ulong(data, pos + 4)[0]:
                pos += 12
                length = ulong(data, pos - 4)[0]
                end = pos + length
                if not length or data[end - 1:end] != b"\0":
                    raise _string_error(data, pos, length)
                result = new(CorbaAny)
                result._t = string_tc
                result._v = data[pos:end - 1].decode(encoding)
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


def _trampoline(cell: list[Any], encode: bool) -> Any:
    """A recursion point: counts nesting, then calls the function once compiled."""
    if encode:
        def enc_again(buf: bytearray, value: Any, st: Any) -> None:
            st.depth += 1
            if st.depth > st.max_depth:
                raise EncodeMismatch(f"values nested deeper than {st.max_depth}")
            cell[0](buf, value, st)
            st.depth -= 1
        return enc_again

    def dec_again(data: bytes, pos: int, st: Any) -> tuple[Any, int]:
        st.depth += 1
        if st.depth > st.max_depth:
            raise CDRError(Minor.TOO_DEEP, f"values nested deeper than {st.max_depth}", pos)
        result: tuple[Any, int] = cell[0](data, pos, st)
        st.depth -= 1
        return result
    return dec_again


def _python_class(tc: Any) -> type:
    try:
        cls: type = tc.python_class()
    except (TypeError, ValueError) as exc:
        raise CDRError(Minor.INVALID_TYPECODE, f"no Python class for {tc!r}: {exc}") from None
    return cls


def _attribute(var: str, name: str, const: Callable[[Any], str]) -> str:
    if name.isidentifier() and not keyword.iskeyword(name):
        return f"{var}.{name}"
    return f"getattr({var}, {const(name)})"


class _Source:
    """The source of one generated function, with alignment and run bookkeeping."""

    def __init__(self, compiler: _Compiler, top: T.TypeCode) -> None:
        self.compiler = compiler
        self.codec = compiler.codec
        self.little = compiler.codec.little_endian
        self.lines: list[str] = []
        self.ns: dict[str, Any] = dict(compiler.base)
        self.ids = count()
        self.align_to, self.phase = 1, 0  # buffer position == phase (mod align_to)
        self.run: list[tuple[int, str, T.TypeCode]] = []
        self.chain: set[int] = {id(top)}

    # -- bookkeeping -----------------------------------------------------------------------
    def const(self, value: Any) -> str:
        name = f"K{next(self.ids)}"
        self.ns[name] = value
        return name

    def tmp(self, prefix: str = "t") -> str:
        return f"{prefix}{next(self.ids)}"

    def line(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def unknown(self) -> None:
        self.align_to, self.phase = 1, 0

    def align(self, indent: int, n: int) -> None:
        if n == 1:
            return
        if self.align_to >= n:
            pad = -self.phase % n
            if pad:
                self.line(indent, f"buf += {self.const(bytes(pad))}" if self.compiler.encode
                          else f"pos += {pad}")
                self.phase = (self.phase + pad) % self.align_to
        else:
            self.line(indent, f"buf += PAD{n}[len(buf) & {n - 1}]" if self.compiler.encode
                      else f"pos += -pos & {n - 1}")
            self.align_to, self.phase = n, 0

    def advance(self, size: int) -> None:
        self.phase = (self.phase + size) % self.align_to

    def can_inline(self, tc: T.TypeCode) -> bool:
        return (id(tc) not in self.compiler.building and id(tc) not in self.chain
                and len(self.chain) < _INLINE_DEPTH)

    def call(self, tc: T.TypeCode) -> str:
        return self.const(self.compiler.get(tc))

    def flush(self, indent: int) -> None:
        """Emit the pending run of primitives as few struct calls as alignment allows."""
        items, self.run = self.run, []
        i = 0
        while i < len(items):
            fmt, names, total = "", [], 0
            first = _SIZES[_RUN_KINDS[items[i][0]]]
            if first > self.align_to:
                self.align(indent, first)
            while i < len(items):
                letter = _RUN_KINDS[items[i][0]]
                size = _SIZES[letter]
                if size > self.align_to:
                    break
                pad = -self.phase % size
                fmt += "x" * pad + letter
                total += pad + size
                self.phase = (self.phase + pad + size) % self.align_to
                names.append(items[i][1])
                i += 1
            packer = C.packer(self.little, fmt)
            if self.compiler.encode:
                self.line(indent, f"buf += {self.const(packer.pack)}({', '.join(names)})")
            else:
                unpack = self.const(packer.unpack_from)
                if len(names) == 1:
                    self.line(indent, f"{names[0]} = {unpack}(data, pos)[0]")
                else:
                    self.line(indent, f"{', '.join(names)} = {unpack}(data, pos)")
                self.line(indent, f"pos += {total}")
                for kind, name, tc in items[i - len(names):i]:
                    self._after_read(indent, kind, name, tc)

    def _after_read(self, indent: int, kind: int, name: str, tc: T.TypeCode) -> None:
        if kind == T.K_BOOLEAN:
            self.line(indent, f"if {name} > 1: raise _E({Minor.INVALID_BOOLEAN}, "
                              f"'boolean octet %d' % {name}, pos)")
            self.line(indent, f"{name} = {name} == 1")
        elif kind == T.K_CHAR:
            if self.codec.char_encoding == "utf-8":
                self.line(indent, f"if {name} > 127: raise _E({Minor.INVALID_CHAR_DATA}, "
                                  f"'char octet %d is not one UTF-8 character' % {name}, pos)")
            self.line(indent, f"{name} = CHARS[{name}]")
        elif kind == T.K_ENUM:
            items = tc.enum_items()  # type: ignore[attr-defined]
            self.line(indent, f"if {name} >= {len(items)}: raise _E({Minor.INVALID_ENUM}, "
                              f"'enum ordinal %d of {tc.id()}' % {name}, pos)")
            self.line(indent, f"{name} = {self.const(items)}[{name}]")

    # -- decoding --------------------------------------------------------------------------
    def dec(self, tc: T.TypeCode, var: str, ind: int, top: bool = False) -> None:
        tc = T.resolve(tc)
        k = tc._k
        if k == T.K_ALIAS:
            self.dec(tc.content_type(), var, ind, top)
            return
        if k in _RUN_KINDS:
            self.run.append((k, var, tc))
            return
        self.flush(ind)
        if k in (T.K_NULL, T.K_VOID):
            self.line(ind, f"{var} = None")
        elif k == T.K_STRING:
            self.dec_string(tc, var, ind)
        elif k in (T.K_STRUCT, T.K_EXCEPT) and (top or self.can_inline(tc)):
            self.chain.add(id(tc))
            members = [self.tmp("m") for _ in tc._types]  # type: ignore[attr-defined]
            for member_tc, member in zip(tc._types, members):  # type: ignore[attr-defined]
                self.dec(member_tc, member, ind)
            self.flush(ind)
            self.construct(tc, var, members, ind)
            self.chain.discard(id(tc))
        elif k in (T.K_SEQUENCE, T.K_ARRAY) and (top or self.can_inline(tc)):
            self.chain.add(id(tc))
            self.dec_sequence(tc, var, ind)
            self.chain.discard(id(tc))
        elif top and k not in (T.K_ANY, T.K_TYPECODE):
            self.dec_special(tc, k, var, ind)
        else:
            self.line(ind, f"{var}, pos = {self.call(tc)}(data, pos, st)")
            self.unknown()

    def construct(self, tc: T.TypeCode, var: str, members: list[str], ind: int) -> None:
        """Build a struct value; dynamic classes skip their generic ``__init__``."""
        cls = _python_class(tc)
        attrs_: tuple[str, ...] = tc._attrs  # type: ignore[attr-defined]
        if (getattr(cls, "__init__", None) is StructBase.__init__
                and tuple(getattr(cls, "__slots__", ())) == attrs_
                and all(a.isidentifier() and not keyword.iskeyword(a) for a in attrs_)):
            self.line(ind, f"{var} = _new({self.const(cls)})")
            for attr, member in zip(attrs_, members):
                self.line(ind, f"{var}.{attr} = {member}")
        else:
            self.line(ind, f"{var} = {self.const(cls)}({', '.join(members)})")

    def dec_string(self, tc: T.TypeCode, var: str, ind: int) -> None:
        self.align(ind, 4)
        self.line(ind, "n = UL(data, pos)[0]")
        self.line(ind, "pos += 4")
        self.line(ind, "e = pos + n")
        self.line(ind, "if not n or data[e - 1:e] != Z: raise _strerr(data, pos, n)")
        self.line(ind, f"{var} = data[pos:e - 1].decode({self.codec.char_encoding!r})")
        self.line(ind, "pos = e")
        if tc.length():
            self.line(ind, f"if len({var}) > {tc.length()}: raise _E({Minor.STRING_TOO_LONG}, "
                           f"'string longer than its bound {tc.length()}', pos)")
        self.unknown()

    def dec_sequence(self, tc: T.TypeCode, var: str, ind: int) -> None:
        content = T.resolve(tc.content_type())
        ck = content.unalias()._k
        bound = tc.length()
        size = min_size(content, self.codec)
        if tc._k == T.K_SEQUENCE:
            self.align(ind, 4)
            self.line(ind, "n = UL(data, pos)[0]")
            self.line(ind, "pos += 4")
            if bound:
                self.line(ind, f"if n > {bound}: raise _E({Minor.SEQUENCE_TOO_LONG}, "
                               f"'sequence of %d elements, bound {bound}' % n, pos)")
            number = "n"
        else:
            number = str(bound)
        self.line(ind, f"_chk({number}, len(data) - pos, {size}, pos)")
        self.unknown()
        if ck == T.K_OCTET:
            raw = f"data[pos:pos + {number}]"
            self.line(ind, f"{var} = {raw}" if tc._k == T.K_SEQUENCE else f"{var} = list({raw})")
            self.line(ind, f"pos += {number}")
        elif ck in _BULK_KINDS:
            letter = _RUN_KINDS[ck]
            if _SIZES[letter] == 8:
                self.line(ind, f"if {number}: pos += -pos & 7")
            fmt = ("<" if self.little else ">") + "%d" + letter
            self.line(ind, f"{var} = list(_unpack_from({fmt!r} % {number}, data, pos))")
            self.line(ind, f"pos += {number} * {_SIZES[letter]}")
        elif ck == T.K_CHAR:
            encoding = "ascii" if self.codec.char_encoding == "utf-8" else "latin-1"
            self.line(ind, f"{var} = list(data[pos:pos + {number}].decode({encoding!r}))")
            self.line(ind, f"pos += {number}")
        elif ck == T.K_BOOLEAN:
            raw = self.tmp("r")
            self.line(ind, f"{raw} = data[pos:pos + {number}]")
            self.line(ind, f"if {raw}.translate(None, b'\\x00\\x01'): raise _E("
                           f"{Minor.INVALID_BOOLEAN}, 'boolean octet not 0 or 1', pos)")
            self.line(ind, f"{var} = [b == 1 for b in {raw}]")
            self.line(ind, f"pos += {number}")
        else:
            append, item = self.tmp("ap"), self.tmp("x")
            self.line(ind, f"{var} = []")
            self.line(ind, f"{append} = {var}.append")
            self.line(ind, f"for _ in range({number}):")
            self.dec(content, item, ind + 1)
            self.flush(ind + 1)
            self.line(ind + 1, f"{append}({item})")
            self.unknown()

    def dec_special(self, tc: T.TypeCode, k: int, var: str, ind: int) -> None:
        if k == T.K_UNION:
            assert isinstance(tc, T.UnionTC)
            disc = self.tmp("d")
            self.dec(tc.discriminator_type(), disc, ind)
            self.flush(ind)
            index = self.tmp("i")
            self.line(ind, f"{index} = {self.const(dict(tc._index))}.get({disc}, {tc._default})")
            self.line(ind, f"if {index} < 0: {var} = None")
            self.line(ind, "else:")
            members = tuple(self.compiler.get(t) for t in tc._types)
            self.line(ind + 1, f"{var}, pos = {self.const(members)}[{index}](data, pos, st)")
            self.line(ind, f"{var} = {self.const(_python_class(tc))}({disc}, {var})")
        elif k == T.K_WSTRING:
            self.line(ind, f"{var}, pos = dec_wstring(data, pos, st)")
            if tc.length():
                self.line(ind, f"if len({var}) > {tc.length()}: raise _E("
                               f"{Minor.WSTRING_TOO_LONG}, 'wstring longer than its bound', pos)")
        elif k == T.K_WCHAR:
            self.line(ind, f"{var}, pos = dec_wchar(data, pos, st)")
        elif k == T.K_LONGDOUBLE:
            self.line(ind, "pos += -pos & 7")
            self.line(ind, f"{var} = _unpack_ld(data, pos, LITTLE)")
            self.line(ind, "pos += 16")
        elif k == T.K_FIXED:
            digits, scale = tc.fixed_digits(), tc.fixed_scale()
            size = C.fixed_size(digits)
            self.line(ind, f"r = data[pos:pos + {size}]")
            self.line(ind, f"if len(r) != {size}: raise _E({Minor.PASS_END}, 'fixed runs past the end', pos)")
            self.line(ind, f"{var} = _from_bcd(r, {digits}, {scale}, pos)")
            self.line(ind, f"pos += {size}")
        elif k in (T.K_OBJREF, T.K_ABSTRACT_INTERFACE):
            from cosnotify.orb import ior

            self.ns["_read_ior"] = ior.read_ior_at
            codec = self.const(self.codec)
            if k == T.K_ABSTRACT_INTERFACE:
                self.line(ind, "if data[pos] != 1: raise _E("
                               f"{Minor.INVALID_DISCRIMINATOR}, 'abstract interface holds a value', pos)")
                self.line(ind, "pos += 1")
            self.line(ind, f"{var}, pos = _read_ior(data, pos, {codec})")
            self.line(ind, f"{var} = st.objref_factory({var}, {tc.id()!r})")
        elif k == T.K_PRINCIPAL:
            self.dec(T.sequence_tc(0, T.TC_octet), var, ind)
        else:
            raise CDRError(Minor.INVALID_TYPECODE_KIND, f"cannot unmarshal values of {tc!r}")

    # -- encoding --------------------------------------------------------------------------
    def enc(self, tc: T.TypeCode, expr: str, ind: int, top: bool = False) -> None:
        tc = T.resolve(tc)
        k = tc._k
        if k == T.K_ALIAS:
            self.enc(tc.content_type(), expr, ind, top)
            return
        if k in _RUN_KINDS:
            self.enc_run_item(tc, k, expr, ind)
            return
        self.flush(ind)
        if k in (T.K_NULL, T.K_VOID):
            return
        if k == T.K_STRING:
            self.enc_string(tc, expr, ind)
        elif k in (T.K_STRUCT, T.K_EXCEPT) and (top or self.can_inline(tc)):
            self.chain.add(id(tc))
            value = self.tmp()
            self.line(ind, f"{value} = {expr}")
            for attr, member_tc in zip(tc._attrs, tc._types):  # type: ignore[attr-defined]
                self.enc(member_tc, _attribute(value, attr, self.const), ind)
            self.chain.discard(id(tc))
        elif k in (T.K_SEQUENCE, T.K_ARRAY) and (top or self.can_inline(tc)):
            self.chain.add(id(tc))
            self.enc_sequence(tc, expr, ind)
            self.chain.discard(id(tc))
        elif top and k not in (T.K_ANY, T.K_TYPECODE):
            self.enc_special(tc, k, expr, ind)
        else:
            self.line(ind, f"{self.call(tc)}(buf, {expr}, st)")
            self.unknown()

    def enc_run_item(self, tc: T.TypeCode, k: int, expr: str, ind: int) -> None:
        if k == T.K_BOOLEAN:
            expr = f"(1 if {expr} else 0)"
        elif k == T.K_CHAR:
            value = self.tmp()
            limit = 127 if self.codec.char_encoding == "utf-8" else 255
            self.line(ind, f"{value} = ord({expr})")
            self.line(ind, f"if {value} > {limit}: raise _DC('char %r is not in the "
                           f"transmission code set' % chr({value}))")
            expr = value
        elif k == T.K_ENUM:
            value = self.tmp()
            count = len(tc.enum_items())  # type: ignore[attr-defined]
            self.line(ind, f"{value} = {expr}")
            self.line(ind, f"if {value}._parent_id != {tc.id()!r} or not 0 <= {value}._v < {count}: "
                           f"raise _V('not an item of enum {tc.id()}')")
            expr = f"{value}._v"
        self.run.append((k, expr, tc))

    def enc_string(self, tc: T.TypeCode, expr: str, ind: int) -> None:
        bound = tc.length()
        if bound:
            value = self.tmp()
            self.line(ind, f"{value} = {expr}")
            self.line(ind, f"if len({value}) > {bound}: raise _V('string longer than its bound {bound}')")
            expr = value
        self.line(ind, f"b = {expr}.encode({self.codec.char_encoding!r})")
        self.line(ind, "if Z in b: raise _V('strings cannot contain NUL')")
        self.align(ind, 4)
        self.line(ind, "buf += PUL(len(b) + 1)")
        self.line(ind, "buf += b")
        self.line(ind, "buf.append(0)")
        self.unknown()

    def enc_sequence(self, tc: T.TypeCode, expr: str, ind: int) -> None:
        content = T.resolve(tc.content_type())
        ck = content.unalias()._k
        bound = tc.length()
        value = self.tmp()
        self.line(ind, f"{value} = {expr}")
        if ck == T.K_CHAR:
            self.line(ind, f"s = {value} if type({value}) is str else ''.join({value})")
            self.line(ind, f"if len(s) != len({value}): raise _V('char items must be 1-character strings')")
        self.line(ind, f"n = len({value})")
        if tc._k == T.K_SEQUENCE:
            if bound:
                self.line(ind, f"if n > {bound}: raise _V('sequence longer than its bound {bound}')")
            self.align(ind, 4)
            self.line(ind, "buf += PUL(n)")
        else:
            self.line(ind, f"if n != {bound}: raise _V('array needs exactly {bound} elements')")
        self.unknown()
        if ck == T.K_OCTET:
            self.line(ind, f"buf += {value} if type({value}) is bytes else bytes({value})")
        elif ck in _BULK_KINDS:
            letter = _RUN_KINDS[ck]
            if _SIZES[letter] == 8:
                self.line(ind, "if n: buf += PAD8[len(buf) & 7]")
            fmt = ("<" if self.little else ">") + "%d" + letter
            self.line(ind, f"buf += _pack({fmt!r} % n, *{value})")
        elif ck == T.K_CHAR:
            encoding = "ascii" if self.codec.char_encoding == "utf-8" else "latin-1"
            self.line(ind, f"buf += s.encode({encoding!r})")
        elif ck == T.K_BOOLEAN:
            self.line(ind, f"buf += bytes([1 if b else 0 for b in {value}])")
        else:
            item = self.tmp("x")
            self.line(ind, f"for {item} in {value}:")
            self.enc(content, item, ind + 1)
            self.flush(ind + 1)
            self.lines.append("    " * (ind + 1) + "pass")
        self.unknown()

    def enc_special(self, tc: T.TypeCode, k: int, expr: str, ind: int) -> None:
        if k == T.K_UNION:
            assert isinstance(tc, T.UnionTC)
            disc = self.tmp("d")
            self.line(ind, f"{disc} = {expr}._d")
            self.enc(tc.discriminator_type(), disc, ind)
            self.flush(ind)
            index = self.tmp("i")
            self.line(ind, f"{index} = {self.const(dict(tc._index))}.get({disc}, {tc._default})")
            members = tuple(self.compiler.get(t) for t in tc._types)
            self.line(ind, f"if {index} >= 0: {self.const(members)}[{index}](buf, {expr}._v, st)")
        elif k == T.K_WSTRING:
            if tc.length():
                self.line(ind, f"if len({expr}) > {tc.length()}: raise _V('wstring longer than its bound')")
            self.line(ind, f"enc_wstring(buf, {expr}, st)")
        elif k == T.K_WCHAR:
            self.line(ind, f"enc_wchar(buf, {expr}, st)")
        elif k == T.K_LONGDOUBLE:
            self.line(ind, "buf += PAD8[len(buf) & 7]")
            self.line(ind, f"buf += _pack_ld({expr}, LITTLE)")
        elif k == T.K_FIXED:
            self.line(ind, f"buf += _to_bcd({expr}, {tc.fixed_digits()}, {tc.fixed_scale()})")
        elif k in (T.K_OBJREF, T.K_ABSTRACT_INTERFACE):
            from cosnotify.orb import ior

            self.ns["_ior_bytes"] = ior.ior_bytes
            if k == T.K_ABSTRACT_INTERFACE:
                self.line(ind, "buf.append(1)")
            self.line(ind, "buf += PAD4[len(buf) & 3]")
            self.line(ind, f"buf += _ior_bytes(st.objref_encoder({expr}), {self.const(self.codec)})")
        elif k == T.K_PRINCIPAL:
            self.enc(T.sequence_tc(0, T.TC_octet), expr, ind)
        elif k == T.K_LOCAL_INTERFACE:
            raise MARSHAL(OMGVMCID | 4, COMPLETED_NO, "local interfaces cannot be marshalled")
        else:
            raise EncodeMismatch(f"cannot marshal values of {tc!r}")


_compilers: dict[tuple[Codec, bool], _Compiler] = {}
_compilers_lock = threading.Lock()


def _compiler(codec: Codec, encode: bool) -> _Compiler:
    found = _compilers.get((codec, encode))
    if found is None:
        with _compilers_lock:
            found = _compilers.get((codec, encode))
            if found is None:
                found = _compilers[(codec, encode)] = _Compiler(codec, encode)
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
