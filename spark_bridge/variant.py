"""The binary encoding of Spark's VARIANT type, written and read in pure Python.

Strategy: a VARIANT value is two byte strings, ``value`` and ``metadata``
(the Parquet Variant encoding, which Spark 4 uses in memory, in Arrow and in
Parquet). ``metadata`` is a dictionary of object keys; ``value`` is a tree of
primitives, short strings, objects (fields sorted by key name) and arrays,
each with a one-byte header. The CORBA side knows every value's TypeCode, so
we write the variant types directly from Python values (int16/32/64,
float, double, decimal4/8/16, binary, string, ...) instead of going through
JSON text: that keeps float vs double, binary, NaN and infinities, which
JSON (and ``parse_json``) cannot, and it is ~50x faster than pyspark's
``VariantVal.parseJson`` (a JSON parser written in Python).

:class:`Writer` builds one variant; :func:`read` turns one back into plain
Python values (None, bool, int, float, Decimal, str, bytes, list, dict),
accepting every encoding the specification allows, so values Spark rewrote
(other integer widths, shredded Parquet reassembled) read back the same.
The TypeCode-guided mapping between those plain values and IDL values lives
in ``convert.py``.

Specification: the Variant binary encoding of Apache Parquet
(``VariantEncoding.md``), also ``common/variant/README.md`` in Apache Spark.
"""

from __future__ import annotations

import struct
from decimal import Context, Decimal
from typing import Any

__all__ = [
    "EMPTY_METADATA",
    "VariantError",
    "Writer",
    "binary",
    "boolean",
    "decimal",
    "double",
    "float32",
    "int16",
    "int32",
    "int64",
    "null",
    "read",
    "string",
]

# Basic types (the low two bits of every header byte).
_PRIMITIVE, _SHORT_STR, _OBJECT, _ARRAY = 0, 1, 2, 3
# Primitive type ids (the high six bits of a primitive's header byte).
_NULL, _TRUE, _FALSE, _INT8, _INT16, _INT32, _INT64, _DOUBLE = range(8)
_DECIMAL4, _DECIMAL8, _DECIMAL16 = 8, 9, 10
_DATE, _TIMESTAMP, _TIMESTAMP_NTZ, _FLOAT, _BINARY, _LONG_STR = 11, 12, 13, 14, 15, 16
_MAX_SHORT_STR = 63
_EXACT = Context(prec=80)  # decimal16 holds 38 digits; never round them

#: The metadata of a variant with no object keys (version 1, empty dictionary).
EMPTY_METADATA = b"\x01\x00\x00"

_pack_h = struct.Struct("<h").pack
_pack_i = struct.Struct("<i").pack
_pack_q = struct.Struct("<q").pack
_pack_f = struct.Struct("<f").pack
_pack_d = struct.Struct("<d").pack
_pack_I = struct.Struct("<I").pack

_H_NULL = bytes([_NULL << 2])
_H_TRUE = bytes([_TRUE << 2])
_H_FALSE = bytes([_FALSE << 2])
_H_INT16 = bytes([_INT16 << 2])
_H_INT32 = bytes([_INT32 << 2])
_H_INT64 = bytes([_INT64 << 2])
_H_DOUBLE = bytes([_DOUBLE << 2])
_H_FLOAT = bytes([_FLOAT << 2])
_H_BINARY = bytes([_BINARY << 2])
_H_LONG_STR = bytes([_LONG_STR << 2])
_H_DECIMAL = {4: bytes([_DECIMAL4 << 2]), 8: bytes([_DECIMAL8 << 2]),
              16: bytes([_DECIMAL16 << 2])}
_SHORT_STR_HEADERS = [bytes([(n << 2) | _SHORT_STR]) for n in range(_MAX_SHORT_STR + 1)]


class VariantError(ValueError):
    """A variant's bytes are malformed or hold something this reader does not know."""

    def __init__(self, detail: str, offset: int = -1) -> None:
        super().__init__(detail if offset < 0 else f"{detail} (at byte {offset})")
        self.detail = detail
        self.offset = offset


# -- primitives: each returns the value bytes of one element ----------------------------

def null() -> bytes:
    return _H_NULL


def boolean(value: Any) -> bytes:
    return _H_TRUE if value else _H_FALSE


def int16(value: int) -> bytes:
    return _H_INT16 + _pack_h(value)


def int32(value: int) -> bytes:
    return _H_INT32 + _pack_i(value)


def int64(value: int) -> bytes:
    return _H_INT64 + _pack_q(value)


def float32(value: float) -> bytes:
    return _H_FLOAT + _pack_f(value)


def double(value: float) -> bytes:
    return _H_DOUBLE + _pack_d(value)


def string(value: str) -> bytes:
    data = value.encode("utf-8")
    if len(data) <= _MAX_SHORT_STR:
        return _SHORT_STR_HEADERS[len(data)] + data
    return _H_LONG_STR + _pack_I(len(data)) + data


def binary(value: bytes) -> bytes:
    return _H_BINARY + _pack_I(len(value)) + bytes(value)


def decimal(unscaled: int, scale: int, digits: int) -> bytes:
    """A decimal with the given unscaled integer and scale, sized for ``digits`` digits."""
    width = 4 if digits <= 9 else 8 if digits <= 18 else 16
    return _H_DECIMAL[width] + bytes([scale]) + unscaled.to_bytes(width, "little", signed=True)


def _size(n: int) -> int:
    """Bytes needed for the unsigned integer ``n`` (1 to 4)."""
    return 1 if n < 0x100 else 2 if n < 0x10000 else 3 if n < 0x1000000 else 4


class Writer:
    """Builds one variant: object keys go to a shared dictionary (the metadata)."""

    __slots__ = ("keys",)

    def __init__(self) -> None:
        self.keys: dict[str, int] = {}

    def array(self, elements: list[bytes]) -> bytes:
        """An array of already-encoded elements."""
        n = len(elements)
        data = b"".join(elements)
        offset_size = _size(len(data))
        large = n > 0xFF
        offsets = [0]
        total = 0
        for element in elements:
            total += len(element)
            offsets.append(total)
        header = bytes([(large << 4) | ((offset_size - 1) << 2) | _ARRAY])
        count = n.to_bytes(4 if large else 1, "little")
        return header + count + _offsets(offsets, offset_size) + data

    def object(self, fields: list[tuple[str, bytes]]) -> bytes:
        """An object from (key, encoded value) pairs; keys must be distinct."""
        keys = self.keys
        fields = sorted(fields, key=lambda f: f[0])
        ids = []
        offsets = []
        total = 0
        for key, element in fields:
            key_id = keys.get(key)
            if key_id is None:
                key_id = keys[key] = len(keys)
            ids.append(key_id)
            offsets.append(total)
            total += len(element)
        offsets.append(total)
        n = len(fields)
        large = n > 0xFF
        id_size = _size(max(ids, default=0))
        offset_size = _size(total)
        header = bytes([(large << 6) | ((id_size - 1) << 4) | ((offset_size - 1) << 2) | _OBJECT])
        count = n.to_bytes(4 if large else 1, "little")
        return (header + count + _offsets(ids, id_size) + _offsets(offsets, offset_size)
                + b"".join(element for _, element in fields))

    def metadata(self) -> bytes:
        """The metadata for every key used so far."""
        if not self.keys:
            return EMPTY_METADATA
        encoded = [key.encode("utf-8") for key in self.keys]  # insertion order = id order
        total = sum(len(k) for k in encoded)
        offset_size = _size(max(total, len(encoded)))
        offsets = [0]
        for key in encoded:
            offsets.append(offsets[-1] + len(key))
        header = bytes([0x01 | ((offset_size - 1) << 6)])
        return (header + len(encoded).to_bytes(offset_size, "little")
                + _offsets(offsets, offset_size) + b"".join(encoded))


def _offsets(values: list[int], size: int) -> bytes:
    if size == 1:
        return bytes(values)
    return b"".join(v.to_bytes(size, "little") for v in values)


# -- reading -------------------------------------------------------------------------------

def read(value: bytes, metadata: bytes) -> Any:
    """The plain Python value a variant holds.

    Objects become dicts and arrays lists; decimals are ``Decimal``; binary is
    ``bytes``; dates and timestamps (which this bridge never writes) are
    returned as their raw integers.
    """
    try:
        return _read(memoryview(value), 0, _keys(metadata))
    except (IndexError, struct.error) as exc:
        raise VariantError("variant value is truncated") from exc


def _keys(metadata: bytes) -> list[str]:
    if not metadata or metadata[0] & 0x0F != 1:
        raise VariantError("unsupported variant metadata version", 0)
    size = ((metadata[0] >> 6) & 0x03) + 1
    count = int.from_bytes(metadata[1:1 + size], "little")
    start = 1 + (count + 2) * size
    offsets = [int.from_bytes(metadata[1 + (i + 1) * size:1 + (i + 2) * size], "little")
               for i in range(count + 1)]
    raw = bytes(metadata)
    return [raw[start + offsets[i]:start + offsets[i + 1]].decode("utf-8") for i in range(count)]


def _read(value: memoryview, pos: int, keys: list[str]) -> Any:
    header = value[pos]
    basic = header & 0x03
    info = header >> 2
    if basic == _SHORT_STR:
        return bytes(value[pos + 1:pos + 1 + info]).decode("utf-8")
    if basic == _PRIMITIVE:
        return _read_primitive(value, pos, info)
    large = (info >> (4 if basic == _OBJECT else 2)) & 0x01
    count_size = 4 if large else 1
    n = int.from_bytes(value[pos + 1:pos + 1 + count_size], "little")
    offset_size = (info & 0x03) + 1
    if basic == _ARRAY:
        start = pos + 1 + count_size
        data = start + (n + 1) * offset_size
        return [_read(value, data + _int(value, start + i * offset_size, offset_size), keys)
                for i in range(n)]
    id_size = ((info >> 2) & 0x03) + 1
    ids_start = pos + 1 + count_size
    offsets_start = ids_start + n * id_size
    data = offsets_start + (n + 1) * offset_size
    result = {}
    for i in range(n):
        key = keys[_int(value, ids_start + i * id_size, id_size)]
        result[key] = _read(value, data + _int(value, offsets_start + i * offset_size, offset_size),
                            keys)
    return result


def _int(value: memoryview, pos: int, size: int) -> int:
    return int.from_bytes(value[pos:pos + size], "little")


_FIXED_PRIMITIVES = {
    _INT8: struct.Struct("<b"), _INT16: struct.Struct("<h"), _INT32: struct.Struct("<i"),
    _INT64: struct.Struct("<q"), _DOUBLE: struct.Struct("<d"), _FLOAT: struct.Struct("<f"),
    _DATE: struct.Struct("<i"), _TIMESTAMP: struct.Struct("<q"),
    _TIMESTAMP_NTZ: struct.Struct("<q"),
}


def _read_primitive(value: memoryview, pos: int, type_id: int) -> Any:
    if type_id == _NULL:
        return None
    if type_id == _TRUE:
        return True
    if type_id == _FALSE:
        return False
    fmt = _FIXED_PRIMITIVES.get(type_id)
    if fmt is not None:
        return fmt.unpack_from(value, pos + 1)[0]
    if type_id in (_DECIMAL4, _DECIMAL8, _DECIMAL16):
        width = {_DECIMAL4: 4, _DECIMAL8: 8, _DECIMAL16: 16}[type_id]
        scale = value[pos + 1]
        unscaled = int.from_bytes(value[pos + 2:pos + 2 + width], "little", signed=True)
        return Decimal(unscaled).scaleb(-scale, _EXACT)
    if type_id in (_BINARY, _LONG_STR):
        length = _int(value, pos + 1, 4)
        data = bytes(value[pos + 5:pos + 5 + length])
        if len(data) != length:
            raise VariantError("variant string or binary is truncated", pos)
        return data if type_id == _BINARY else data.decode("utf-8")
    raise VariantError(f"unsupported variant primitive type {type_id}", pos)
