"""TypeCode marshalling (CORBA 3.0 section 15.3.5.1).

Strategy: a TypeCode is a ulong kind followed by its parameters: none for the
basic kinds, a bound for strings, digits and scale for fixed, and an
*encapsulation* (its own byte order, alignment restarting at 0) for the
complex kinds. Both directions keep a table of where each TypeCode of the
current top-level TypeCode starts, in absolute buffer positions, so that a
TypeCode met again, whether recursively (a struct inside itself) or merely
repeated, is written as the indirection ``0xffffffff`` plus a negative offset
from the offset field to the earlier occurrence (15.3.5.1, "Indirection:
Recursive and Repeated TypeCodes"). The offsets stay right across nested
encapsulations because writer and reader both work in one buffer with an
alignment origin per encapsulation, never in copies.

A top-level TypeCode does not depend on where it sits in the stream (only its
first two ulongs follow the outer alignment, and it always starts 4-aligned),
so encoded TypeCodes are cached per codec, and decoded complex TypeCodes are
cached by their encapsulation bytes. Hot Anys (event properties) therefore
cost one dict lookup for their TypeCode and reuse one compiled decoder.
"""

from __future__ import annotations

from typing import Any

from cosnotify.orb import typecode as T
from cosnotify.orb.cdr_core import CDRError, Codec, Minor, packer
from cosnotify.orb.exceptions import SystemException
from cosnotify.orb.values import EnumItem

__all__ = ["SIMPLE_KINDS", "decode_typecode", "encode_typecode"]

INDIRECTION = 0xFFFFFFFF
SIMPLE_KINDS = frozenset({T.K_NULL, T.K_VOID, T.K_SHORT, T.K_LONG, T.K_USHORT, T.K_ULONG,
                          T.K_FLOAT, T.K_DOUBLE, T.K_BOOLEAN, T.K_CHAR, T.K_OCTET, T.K_ANY,
                          T.K_TYPECODE, T.K_PRINCIPAL, T.K_LONGLONG, T.K_ULONGLONG,
                          T.K_LONGDOUBLE, T.K_WCHAR})
_SIMPLE_TCS: dict[int, T.TypeCode] = {k: T._SIMPLE[k] for k in SIMPLE_KINDS}
_NAMED_ONLY = frozenset({T.K_OBJREF, T.K_ABSTRACT_INTERFACE, T.K_LOCAL_INTERFACE})
COMPLEX_KINDS = frozenset({T.K_OBJREF, T.K_STRUCT, T.K_UNION, T.K_ENUM, T.K_SEQUENCE, T.K_ARRAY,
                           T.K_ALIAS, T.K_EXCEPT, T.K_ABSTRACT_INTERFACE, T.K_LOCAL_INTERFACE})
_INTEGER_FORMATS = {T.K_SHORT: ("h", 2), T.K_USHORT: ("H", 2), T.K_LONG: ("i", 4),
                    T.K_ULONG: ("I", 4), T.K_LONGLONG: ("q", 8), T.K_ULONGLONG: ("Q", 8),
                    T.K_ENUM: ("I", 4)}
_CACHE_LIMIT = 1024

_encoded: dict[Codec, dict[int, tuple[T.TypeCode, bytes]]] = {}
_decoded: dict[Codec, dict[tuple[int, bytes], T.TypeCode]] = {}


# -- writing ----------------------------------------------------------------------------


def encoded_cache(codec: Codec) -> dict[int, tuple[T.TypeCode, bytes]]:
    """The cache of encoded TypeCodes for ``codec``: id(tc) -> (tc, bytes)."""
    cache = _encoded.get(codec)
    if cache is None:
        cache = _encoded.setdefault(codec, {})
    return cache


def encode_typecode(tc: T.TypeCode, codec: Codec) -> bytes:
    """The CDR of ``tc`` as a top-level TypeCode starting at a 4-aligned offset."""
    cache = encoded_cache(codec)
    hit = cache.get(id(tc))
    if hit is not None:
        return hit[1]
    writer = _Writer(codec)
    writer.typecode(tc, 0)
    data = bytes(writer.buf)
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[id(tc)] = (tc, data)
    return data


class _Writer:
    __slots__ = ("buf", "codec", "little", "origin", "positions")

    def __init__(self, codec: Codec) -> None:
        self.buf = bytearray()
        self.origin = 0
        self.positions: dict[int, int] = {}
        self.codec = codec
        self.little = codec.little_endian

    def put(self, fmt: str, size: int, value: Any) -> None:
        pad = (self.origin - len(self.buf)) % size
        if pad:
            self.buf += bytes(pad)
        self.buf += packer(self.little, fmt).pack(value)

    def string(self, text: str) -> None:
        raw = text.encode(self.codec.char_encoding)
        self.put("I", 4, len(raw) + 1)
        self.buf += raw
        self.buf.append(0)

    def typecode(self, tc: T.TypeCode, depth: int) -> None:
        tc = T.resolve(tc)
        kind = tc._k
        if kind in SIMPLE_KINDS:
            self.put("I", 4, kind)
            return
        if depth > 256:
            raise ValueError("TypeCode nests too deeply to marshal")
        earlier = self.positions.get(id(tc))
        if earlier is not None:
            self.put("I", 4, INDIRECTION)
            self.put("i", 4, earlier - len(self.buf))
            return
        self.put("I", 4, kind)
        if kind in (T.K_STRING, T.K_WSTRING):
            self.put("I", 4, tc.length())
            return
        if kind == T.K_FIXED:
            self.put("H", 2, tc.fixed_digits())
            self.put("h", 2, tc.fixed_scale())
            return
        if kind not in COMPLEX_KINDS:
            raise ValueError(f"cannot marshal a TypeCode of kind {tc.kind()}")
        self.positions[id(tc)] = len(self.buf) - 4
        self.put("I", 4, 0)  # encapsulation length, patched below
        length_at = len(self.buf) - 4
        saved = self.origin
        self.origin = len(self.buf)
        self.buf.append(1 if self.little else 0)
        self._params(tc, kind, depth)
        length = len(self.buf) - self.origin
        self.buf[length_at:length_at + 4] = packer(self.little, "I").pack(length)
        self.origin = saved

    def _params(self, tc: T.TypeCode, kind: int, depth: int) -> None:
        if kind in (T.K_SEQUENCE, T.K_ARRAY):
            self.typecode(tc.content_type(), depth + 1)
            self.put("I", 4, tc.length())
            return
        self.string(tc.id())
        self.string(tc.name())
        if kind in _NAMED_ONLY:
            return
        if kind == T.K_ALIAS:
            self.typecode(tc.content_type(), depth + 1)
        elif kind == T.K_ENUM:
            self.put("I", 4, tc.member_count())
            for index in range(tc.member_count()):
                self.string(tc.member_name(index))
        elif kind in (T.K_STRUCT, T.K_EXCEPT):
            self.put("I", 4, tc.member_count())
            for index in range(tc.member_count()):
                self.string(tc.member_name(index))
                self.typecode(tc.member_type(index), depth + 1)
        else:
            assert isinstance(tc, T.UnionTC)
            disc = T.resolve(tc.discriminator_type())
            self.typecode(disc, depth + 1)
            self.put("i", 4, tc.default_index())
            self.put("I", 4, tc.member_count())
            base = disc.unalias()
            for index in range(tc.member_count()):
                label = tc._labels[index]
                self._label(base, None if label is T.DEFAULT_LABEL else label)
                self.string(tc.member_name(index))
                self.typecode(tc.member_type(index), depth + 1)

    def _label(self, disc: T.TypeCode, label: Any) -> None:
        """A label as a value of the discriminator type; the default member's is zero."""
        kind = disc._k
        if kind in _INTEGER_FORMATS:
            value = 0 if label is None else (label._v if isinstance(label, EnumItem) else label)
            fmt, size = _INTEGER_FORMATS[kind]
            self.put(fmt, size, value)
        elif kind == T.K_BOOLEAN:
            self.buf.append(1 if label else 0)
        elif kind == T.K_CHAR:
            self.buf += (label or "\0").encode(self.codec.char_encoding)[:1]
        else:  # wchar
            unit = (label or "\0").encode("utf-16-be")
            if self.codec.giop >= (1, 2):
                self.buf.append(len(unit))
                self.buf += unit
            else:
                self.put("H", 2, ord(label or "\0"))


# -- reading ----------------------------------------------------------------------------


_ULONG = {True: packer(True, "I").unpack_from, False: packer(False, "I").unpack_from}
_bounded: dict[tuple[int, int], T.TypeCode] = {}
_FIXED_PARAMS = {True: packer(True, "Hh").unpack_from, False: packer(False, "Hh").unpack_from}
_fixed: dict[tuple[int, int], T.TypeCode] = {}


def decode_typecode(data: bytes, pos: int, codec: Codec, max_depth: int) -> tuple[T.TypeCode, int]:
    """Read a top-level TypeCode at ``pos`` (buffer index 0 is 8-aligned)."""
    pos += -pos & 3
    unpack = _ULONG[codec.little_endian]
    kind = unpack(data, pos)[0]
    if kind in SIMPLE_KINDS:
        return _SIMPLE_TCS[kind], pos + 4
    if kind == T.K_STRING or kind == T.K_WSTRING:
        bound = unpack(data, pos + 4)[0]
        if not bound:
            return (T.TC_string if kind == T.K_STRING else T.TC_wstring), pos + 8
        found = _bounded.get((kind, bound))
        if found is None:
            if len(_bounded) >= _CACHE_LIMIT:
                _bounded.clear()
            found = _bounded[(kind, bound)] = T.StringTC(kind, bound)
        return found, pos + 8
    if kind == T.K_FIXED:  # parameters inline: cached like bounded strings
        if pos + 8 > len(data):
            raise CDRError(Minor.PASS_END, "fixed TypeCode runs past the end", pos + 4)
        digits_scale = _FIXED_PARAMS[codec.little_endian](data, pos + 4)
        found = _fixed.get(digits_scale)
        if found is None:
            found = _build(T.fixed_tc, *digits_scale)
            if len(_fixed) >= _CACHE_LIMIT:
                _fixed.clear()
            _fixed[digits_scale] = found
        return found, pos + 8
    key = None
    cache: dict[tuple[int, bytes], T.TypeCode] = {}
    if kind in COMPLEX_KINDS:
        length = unpack(data, pos + 4)[0]
        end = pos + 8 + length
        if end > len(data):
            raise CDRError(Minor.PASS_END, "TypeCode encapsulation runs past the end", pos + 4)
        key = (kind, data[pos + 8:end])
        cache = _decoded.get(codec) or _decoded.setdefault(codec, {})
        hit = cache.get(key)
        if hit is not None:
            return hit, end
    reader = _Reader(data, pos, codec, max_depth)
    tc = reader.typecode(0)
    if key is not None:
        if len(cache) >= _CACHE_LIMIT:
            cache.clear()
        cache[key] = tc
    return tc, reader.pos


class _Pending:
    """A complex TypeCode whose parameters are still being read."""

    __slots__ = ("kind", "placeholder", "rid")

    def __init__(self, kind: int) -> None:
        self.kind = kind
        self.rid = ""
        self.placeholder: T.RecursiveTC | None = None


class _Reader:
    __slots__ = ("codec", "data", "little", "max_depth", "origin", "pos", "positions")

    def __init__(self, data: bytes, pos: int, codec: Codec, max_depth: int) -> None:
        self.data = data
        self.pos = pos
        self.origin = 0
        self.little = codec.little_endian
        self.codec = codec
        self.positions: dict[int, T.TypeCode | _Pending] = {}
        self.max_depth = max_depth

    def get(self, fmt: str, size: int) -> Any:
        self.pos += (self.origin - self.pos) % size
        value = packer(self.little, fmt).unpack_from(self.data, self.pos)[0]
        self.pos += size
        return value

    def octet(self) -> int:
        value = self.data[self.pos]
        self.pos += 1
        return value

    def count(self, end: int) -> int:
        start = self.pos
        number: int = self.get("I", 4)
        if number > end - self.pos:
            raise CDRError(Minor.SEQUENCE_TOO_LONG, f"{number} TypeCode members in {end - self.pos} octets", start)
        return number

    def string(self) -> str:
        start = self.pos
        length = self.get("I", 4)
        raw = self.data[self.pos:self.pos + length]
        if length == 0 or len(raw) != length or raw[-1] != 0:
            raise CDRError(Minor.STRING_NOT_NUL_TERMINATED, "bad string in a TypeCode", start)
        self.pos += length
        try:
            return raw[:-1].decode(self.codec.char_encoding)
        except UnicodeDecodeError:
            raise CDRError(Minor.INVALID_CHAR_DATA, "TypeCode string is not valid text", start) from None

    def typecode(self, depth: int) -> T.TypeCode:
        if depth > self.max_depth:
            raise CDRError(Minor.TOO_DEEP, f"TypeCode nested deeper than {self.max_depth}", self.pos)
        self.pos += (self.origin - self.pos) % 4
        start = self.pos
        kind = self.get("I", 4)
        if kind == INDIRECTION:
            return self._indirection()
        if kind in SIMPLE_KINDS:
            result: T.TypeCode = _SIMPLE_TCS[kind]
        elif kind in (T.K_STRING, T.K_WSTRING):
            bound = self.get("I", 4)
            result = T.string_tc(bound) if kind == T.K_STRING else T.wstring_tc(bound)
        elif kind == T.K_FIXED:
            digits, scale = self.get("H", 2), self.get("h", 2)
            result = _build(T.fixed_tc, digits, scale)
        elif kind in COMPLEX_KINDS:
            result = self._complex(kind, start, depth)
        else:
            raise CDRError(Minor.INVALID_TYPECODE_KIND, f"unsupported TypeCode kind {kind}", start)
        self.positions[start] = result
        return result

    def _indirection(self) -> T.TypeCode:
        at = self.pos
        offset = self.get("i", 4)
        target = self.positions.get(at + offset)
        if target is None or offset >= -4:
            raise CDRError(Minor.INVALID_INDIRECTION, f"indirection to {at + offset} hits no TypeCode", at)
        if isinstance(target, _Pending):
            if target.kind not in (T.K_STRUCT, T.K_UNION, T.K_EXCEPT):
                raise CDRError(Minor.INVALID_INDIRECTION, "recursion through a non-struct TypeCode", at)
            if target.placeholder is None:
                target.placeholder = T.RecursiveTC(target.rid)
            return target.placeholder
        return target

    def _complex(self, kind: int, start: int, depth: int) -> T.TypeCode:
        length = self.get("I", 4)
        end = self.pos + length
        if end > len(self.data):
            raise CDRError(Minor.PASS_END, "TypeCode encapsulation runs past the end", self.pos - 4)
        saved = (self.origin, self.little)
        self.origin = self.pos
        order = self.octet() if length else 2
        if order > 1:
            raise CDRError(Minor.INVALID_BYTE_ORDER, f"encapsulation byte order octet {order}", self.origin)
        self.little = order == 1
        pending = _Pending(kind)
        self.positions[start] = pending
        result = self._params(kind, pending, end, depth)
        if self.pos > end:
            raise CDRError(Minor.PASS_END, "TypeCode parameters overrun their encapsulation", end)
        if pending.placeholder is not None and pending.placeholder._target is None:
            pending.placeholder._target = result
        self.pos = end
        self.origin, self.little = saved
        return result

    def _params(self, kind: int, pending: _Pending, end: int, depth: int) -> T.TypeCode:
        if kind in (T.K_SEQUENCE, T.K_ARRAY):
            content = self.typecode(depth + 1)
            bound = self.get("I", 4)
            return _build(T.sequence_tc if kind == T.K_SEQUENCE else T.array_tc, bound, content)
        rid = pending.rid = self.string()
        name = self.string()
        if kind in _NAMED_ONLY:
            return T.ObjrefTC(kind, rid, name)
        if kind == T.K_ALIAS:
            return _build(T.alias_tc, rid, name, self.typecode(depth + 1))
        if kind == T.K_ENUM:
            names = [self.string() for _ in range(self.count(end))]
            return _build(T.enum_tc, rid, name, names)
        if kind in (T.K_STRUCT, T.K_EXCEPT):
            members = [(self.string(), self.typecode(depth + 1)) for _ in range(self.count(end))]
            return _build(T.struct_tc if kind == T.K_STRUCT else T.exception_tc, rid, name, members)
        at = self.pos
        disc = self.typecode(depth + 1)
        if isinstance(disc, T.RecursiveTC) and disc._target is None:
            raise CDRError(Minor.INVALID_TYPECODE, "a union discriminator refers to its union", at)
        default_index = self.get("i", 4)
        base = T.resolve(disc).unalias()
        entries = []
        for index in range(self.count(end)):
            label = self._label(base)
            entries.append((T.DEFAULT_LABEL if index == default_index else label,
                            self.string(), self.typecode(depth + 1)))
        return _build(T.union_tc, rid, name, disc, entries,
                      default_index if 0 <= default_index < len(entries) else -1)

    def _label(self, disc: T.TypeCode) -> Any:
        kind = disc._k
        at = self.pos
        if kind in _INTEGER_FORMATS:
            value = self.get(*_INTEGER_FORMATS[kind])
            if kind == T.K_ENUM:
                items = disc.enum_items()  # type: ignore[attr-defined]
                if value >= len(items):
                    raise CDRError(Minor.INVALID_ENUM, f"union label ordinal {value}", at)
                return items[value]
            return value
        if kind == T.K_BOOLEAN:
            value = self.octet()
            if value > 1:
                raise CDRError(Minor.INVALID_BOOLEAN, f"boolean octet {value}", at)
            return value == 1
        if kind == T.K_CHAR:
            return self._text(bytes([self.octet()]), self.codec.char_encoding, at)
        if kind == T.K_WCHAR:
            if self.codec.giop >= (1, 2):
                size = self.octet()
                raw = self.data[self.pos:self.pos + size]
                self.pos += size
                return self._text(raw, "utf-16-be", at)
            return chr(self.get("H", 2))
        raise CDRError(Minor.INVALID_TYPECODE, f"bad union discriminator kind {kind}", at)

    def _text(self, raw: bytes, encoding: str, at: int) -> str:
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            raise CDRError(Minor.INVALID_CHAR_DATA, "bad character in a union label", at) from None


def _build(builder: Any, *args: Any) -> T.TypeCode:
    """Call a TypeCode builder, turning its BAD_PARAM/BAD_TYPECODE into CDRError."""
    try:
        result: T.TypeCode = builder(*args)
    except SystemException as exc:
        raise CDRError(Minor.INVALID_TYPECODE, f"TypeCode parameters rejected: {exc}") from None
    return result
