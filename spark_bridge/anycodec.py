"""omniORB values <-> VARIANT bytes, guided by the TypeCode (one compiled codec per type).

Strategy: every CORBA Any becomes its TypeCode's text (``typetext.py``) and a
VARIANT (``variant.py``) whose type follows the IDL kind, so Spark sees
typed, nested values and the TypeCode makes the trip exact:

============================  ===========================================
IDL kind                      VARIANT value
============================  ===========================================
short, octet                  int16
long, unsigned short          int32
long long, unsigned long      int64
unsigned long long            decimal(20, 0)
float / double                float / double (NaN and infinities kept)
boolean                       boolean
char, wchar, string, wstring  string
fixed<d, s>                   decimal with scale s (``CORBA.fixed`` back)
enum                          the enumerator's name (its ordinal when the
                              TypeCode has no member names)
struct, exception             object keyed by IDL member name (an array in
                              member order when names are missing or repeat)
union                         object ``{"_d": discriminator, member: value}``
sequence, array               array; of octet: binary (omniORB's ``bytes``);
                              of char: a string (omniORB's ``str``)
alias                         as its content
any                           object ``{"type": TypeCode text, "value": ...}``
TypeCode                      string (its text)
null, void, nil reference     variant null
object reference              string (``object_to_string``; needs an ORB)
Principal                     binary
============================  ===========================================

long double has no form: omniORBpy does not support it (``typetext.py``).

Values are omniORB's: struct and exception instances with member attributes
(generated classes or ``UnknownStruct``), unions with ``_d``/``_v``,
``EnumItem``\\ s, ``CORBA.fixed``, ``bytes``, ``CORBA.Any``, ``CORBA.TypeCode``.
Only attributes are read, so values of types this process has no stubs for
(as they arrive from the wire) encode like generated ones.

Codecs are compiled once per TypeCode *text*, from the descriptor
``typetext`` decodes for it, and found per Any by the identity of its
descriptor; an Any unmarshalled from the wire brings a new descriptor, whose
text is computed once and leads to the same codec. Member codecs are looked
up lazily, so recursive TypeCodes compile. This module writes; reading
(``decode_any``: the VARIANT into plain values, then checked omniORB values)
is ``anydecode``, re-exported here.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, Final

import omniORB
from omniORB import CORBA

from cosnotify.corba import descriptors as D
from spark_bridge import variant as V
from spark_bridge.anydecode import (
    _CACHE_LIMIT,
    BEYOND_CHAR,
    CHAR_LIMIT,
    WCHAR_LIMIT,
    ConversionError,
    References,
    _lazy,
    _lock,
    _remember,
    _union_key,
    _unscaled,
    decode_any,
)
from spark_bridge.typetext import TypeTextError, decode_descriptor, encode_descriptor, idl_name

__all__ = ["ConversionError", "Raw", "References", "decode_any", "encode_any"]

Raw = tuple[str, bytes, bytes]  # (TypeCode text, variant value, variant metadata)
Encoder = Callable[[Any, Any], bytes]  # (value, _Writer or None for scalars)


class _Writer(V.Writer):
    __slots__ = ("references",)

    def __init__(self, references: References | None) -> None:
        super().__init__()
        self.references = references


def encode_any(value: Any, references: References | None = None) -> Raw:
    """``(type text, variant value bytes, variant metadata bytes)`` for a CORBA Any."""
    d = value._t._d
    cell = _cells.get(id(d))
    if cell is None or cell[0] is not d:
        cell = _cell(d)
    _, text, encode, scalar = cell
    try:
        if scalar:  # no object keys and no references: skip the writer
            return text, encode(value._v, None), V.EMPTY_METADATA
        writer = _Writer(references)
        data = encode(value._v, writer)
    except UnicodeEncodeError as exc:  # a lone surrogate: only made in process
        raise ConversionError(f"{exc.object[exc.start:exc.end]!r} has no UTF-8 form") from exc
    return text, data, writer.metadata()


# -- caches --------------------------------------------------------------------------------

_cells: dict[int, tuple[Any, str, Encoder, bool]] = {}
_by_text: dict[str, tuple[Encoder, bool]] = {}
_encoders: dict[int, tuple[Any, Encoder]] = {}

_SCALAR_KINDS: Final = frozenset({
    D.SHORT, D.OCTET, D.LONG, D.USHORT, D.LONGLONG, D.ULONG, D.ULONGLONG, D.FLOAT, D.DOUBLE,
    D.BOOLEAN, D.CHAR, D.WCHAR, D.STRING, D.WSTRING, D.NULL, D.VOID, D.TYPECODE,
    D.PRINCIPAL, D.FIXED, D.ENUM})


def _cell(d: Any) -> tuple[Any, str, Encoder, bool]:
    """(d, its text, its encoder, whether it needs no writer), cached by identity."""
    try:
        text = encode_descriptor(d)
    except TypeTextError as exc:
        raise ConversionError(f"no VARIANT form: {exc.detail}") from exc
    codec = _by_text.get(text)
    if codec is None:
        canonical = decode_descriptor(text)
        codec = (_encoder(canonical), D.kind(D.unalias(canonical)) in _SCALAR_KINDS)
        with _lock:
            if len(_by_text) >= _CACHE_LIMIT:
                _by_text.clear()
            _by_text[text] = codec
    cell = (d, text, *codec)
    _remember(_cells, d, cell)
    return cell


def _encoder(d: Any) -> Encoder:
    hit = _encoders.get(id(d))
    if hit is not None and hit[0] is d:
        return hit[1]
    fn = _build_encoder(d)
    _remember(_encoders, d, (d, fn))
    return fn


def _keyed(names: tuple[str, ...]) -> bool:
    """Can these member names key a variant object? (Compact TypeCodes have none.)"""
    return all(names) and len(set(names)) == len(names)


# -- encoders ------------------------------------------------------------------------------

def _checked_int(lo: int, hi: int, kind: str, pack: Callable[[int], bytes]) -> Encoder:
    def encode(value: Any, w: _Writer) -> bytes:
        if not (isinstance(value, int) and lo <= value <= hi):
            raise ConversionError(f"{value!r:.60} is not a {kind}")
        return pack(value)
    return encode


def _enc_float(value: Any, w: _Writer) -> bytes:
    if type(value) is not float and not isinstance(value, int):
        raise ConversionError(f"{value!r:.60} is not a float")
    try:
        return V.float32(value)
    except (OverflowError, struct.error) as exc:
        raise ConversionError(f"{value!r} does not fit a float") from exc


def _enc_double(value: Any, w: _Writer) -> bytes:
    if type(value) is not float and not isinstance(value, int):
        raise ConversionError(f"{value!r:.60} is not a double")
    try:
        return V.double(value)
    except OverflowError as exc:
        raise ConversionError(f"{value!r} does not fit a double") from exc


def _enc_bool(value: Any, w: _Writer) -> bytes:
    return V.boolean(value)


# What the decoders (anydecode) refuse is refused here too, so every row written reads
# back: a string or wstring holds no NUL, a char is below U+0100, a wchar below U+10000.

def _enc_string(value: Any, w: _Writer) -> bytes:
    if type(value) is not str or "\0" in value:
        raise ConversionError(f"{value!r:.60} is not a string (or holds NUL)")
    return V.string(value)


def _char_encoder(limit: int) -> Encoder:
    def encode(value: Any, w: _Writer) -> bytes:
        if type(value) is not str or len(value) != 1 or ord(value) >= limit:
            raise ConversionError(f"{value!r:.60} is not one character below U+{limit:04X}")
        return V.string(value)
    return encode


def _enc_null(value: Any, w: _Writer) -> bytes:
    return V.null()


def _enc_binary(value: Any, w: _Writer) -> bytes:
    if not isinstance(value, (bytes, bytearray)):
        raise ConversionError(f"{type(value).__name__} is not bytes")
    return V.binary(bytes(value))


def _enc_ulonglong(value: Any, w: _Writer) -> bytes:
    if not (isinstance(value, int) and 0 <= value <= 2**64 - 1):
        raise ConversionError(f"{value!r:.60} is not an unsigned long long")
    return V.decimal(value, 0, 20)


def _enc_typecode(value: Any, w: _Writer) -> bytes:
    if not isinstance(value, CORBA.TypeCode):
        raise ConversionError(f"{value!r:.60} is not a TypeCode")
    try:
        return V.string(encode_descriptor(value._d))
    except TypeTextError as exc:
        raise ConversionError(f"no text for this TypeCode: {exc.detail}") from exc


def _enc_any(value: Any, w: _Writer) -> bytes:
    if not isinstance(value, CORBA.Any):
        raise ConversionError(f"{value!r:.60} is not an Any")
    d = value._t._d
    cell = _cells.get(id(d))
    if cell is None or cell[0] is not d:
        cell = _cell(d)
    return w.object([("type", V.string(cell[1])), ("value", cell[2](value._v, w))])


def _enc_objref(value: Any, w: _Writer) -> bytes:
    if value is None:
        return V.null()
    if w.references is None:
        raise ConversionError("an object reference needs an ORB (pass references=orb) to be stored")
    return V.string(w.references.object_to_string(value))


_SIMPLE_ENCODERS: Final[dict[int, Encoder]] = {
    D.SHORT: _checked_int(-(2**15), 2**15 - 1, "short", V.int16),
    D.OCTET: _checked_int(0, 255, "octet", V.int16),
    D.LONG: _checked_int(-(2**31), 2**31 - 1, "long", V.int32),
    D.USHORT: _checked_int(0, 2**16 - 1, "unsigned short", V.int32),
    D.LONGLONG: _checked_int(-(2**63), 2**63 - 1, "long long", V.int64),
    D.ULONG: _checked_int(0, 2**32 - 1, "unsigned long", V.int64),
    D.ULONGLONG: _enc_ulonglong,
    D.FLOAT: _enc_float, D.DOUBLE: _enc_double, D.BOOLEAN: _enc_bool,
    D.CHAR: _char_encoder(CHAR_LIMIT), D.WCHAR: _char_encoder(WCHAR_LIMIT),
    D.NULL: _enc_null, D.VOID: _enc_null, D.ANY: _enc_any, D.TYPECODE: _enc_typecode,
    D.PRINCIPAL: _enc_binary, D.OBJREF: _enc_objref, D.ABSTRACT_INTERFACE: _enc_objref,
    D.LOCAL_INTERFACE: _enc_objref,
}


def _build_encoder(d: Any) -> Encoder:
    d = D.resolve(d)
    if type(d) is int:
        simple = _SIMPLE_ENCODERS.get(d)
        if simple is None:
            raise ConversionError(f"no VARIANT form for TypeCode kind {d}")
        return simple
    k = d[0]
    if k == D.STRING or k == D.WSTRING:
        return _string_encoder(d[1])
    if k == D.ALIAS:
        return _encoder(D.resolve(d[3]))
    if k == D.FIXED:
        return _fixed_encoder(d[1], d[2])
    if k == D.ENUM:
        return _enum_encoder(d)
    if k == D.SEQUENCE or k == D.ARRAY:
        return _sequence_encoder(d)
    if k == D.STRUCT or k == D.EXCEPT:
        return _struct_encoder(d)
    if k == D.UNION:
        return _union_encoder(d)
    if k in _SIMPLE_ENCODERS:
        return _SIMPLE_ENCODERS[k]
    raise ConversionError(f"no VARIANT form for TypeCode kind {k}")


def _string_encoder(bound: int) -> Encoder:
    if not bound:
        return _enc_string

    def encode(value: Any, w: _Writer) -> bytes:
        if type(value) is not str or len(value) > bound or "\0" in value:
            raise ConversionError(f"{value!r:.60} is not a string<{bound}> (or holds NUL)")
        return V.string(value)
    return encode


def _fixed_encoder(digits: int, scale: int) -> Encoder:
    limit = 10 ** digits

    def encode(value: Any, w: _Writer) -> bytes:
        unscaled = _unscaled(value, scale)
        if unscaled is None or not -limit < unscaled < limit:
            raise ConversionError(f"{value!r:.60} is not a fixed<{digits},{scale}>")
        return V.decimal(unscaled, scale, digits)
    return encode


def _enum_encoder(d: Any) -> Encoder:
    names = tuple(item._n for item in d[3])
    by_name = _keyed(names)
    count = len(names)

    def encode(value: Any, w: _Writer) -> bytes:
        ordinal = getattr(value, "_v", None)
        if not isinstance(value, omniORB.EnumItem) or not isinstance(ordinal, int) \
                or not 0 <= ordinal < count:
            raise ConversionError(f"{value!r:.60} is not an item of enum {d[1]}")
        return V.string(names[ordinal]) if by_name else V.int32(ordinal)
    return encode


def _sequence_encoder(d: Any) -> Encoder:
    element = _lazy(_encoder, d[1])
    content = D.kind(d[1])  # omniORB's bytes and str forms: only for octet and char, unaliased
    base = D.kind(D.unalias(d[1]))
    bound = d[2]
    exact = d[0] == D.ARRAY

    def check(n: int) -> None:
        if (exact and n != bound) or (bound and n > bound):
            raise ConversionError(f"{n} elements do not fit a {'array' if exact else 'sequence'}"
                                  f"<{bound}>")

    if content == D.OCTET:
        def encode_octets(value: Any, w: _Writer) -> bytes:
            if isinstance(value, (list, tuple)):  # omniORB wants bytes; accept the list form
                try:
                    value = bytes(value)
                except (TypeError, ValueError) as exc:
                    raise ConversionError(f"not octets: {exc}") from exc
            if not isinstance(value, (bytes, bytearray)):
                raise ConversionError(f"{type(value).__name__} is not bytes")
            check(len(value))
            return V.binary(bytes(value))
        return encode_octets
    if content == D.CHAR:
        def encode_chars(value: Any, w: _Writer) -> bytes:
            if isinstance(value, (list, tuple)) and all(
                    type(c) is str and len(c) == 1 for c in value):
                value = "".join(value)  # omniORB wants a str; accept the list form
            if type(value) is not str:
                raise ConversionError(f"{type(value).__name__} is not a string of chars")
            if not value.isascii() and BEYOND_CHAR.search(value):  # NUL is a char too
                raise ConversionError(f"{value!r:.60} holds characters beyond U+00FF")
            check(len(value))
            return V.string(value)
        return encode_chars

    def encode(value: Any, w: _Writer) -> bytes:
        if (isinstance(value, (bytes, bytearray)) and base == D.OCTET) \
                or (isinstance(value, str) and base in (D.CHAR, D.WCHAR)):
            value = list(value)  # omniORB wants a list here; accept the compact form
        if not isinstance(value, (list, tuple)):
            raise ConversionError(f"{type(value).__name__} is not a sequence")
        check(len(value))
        enc = element()
        return w.array([enc(item, w) for item in value])
    return encode


def _struct_encoder(d: Any) -> Encoder:
    attrs = tuple(d[4::2])
    names = tuple(idl_name(a) for a in attrs)
    members = [_lazy(_encoder, t) for t in d[5::2]]
    keyed = _keyed(names)

    def encode(value: Any, w: _Writer) -> bytes:
        try:
            items = [getattr(value, a) for a in attrs] if keyed else list(value._tuple())
        except (AttributeError, CORBA.BAD_PARAM) as exc:
            raise ConversionError(f"{value!r:.60} lacks a member: {exc}", d[2]) from exc
        if len(items) != len(members):
            raise ConversionError(f"{value!r:.60} has {len(items)} members, not {len(members)}",
                                  d[2])
        encoded = [get()(item, w) for get, item in zip(members, items, strict=True)]
        if keyed:
            return w.object(list(zip(names, encoded, strict=True)))
        return w.array(encoded)
    return encode


def _union_encoder(d: Any) -> Encoder:
    disc = _lazy(_encoder, d[4])
    keys = {member_name: _union_key(member_name) for _, member_name, _ in d[6]}
    getters = {member_name: _lazy(_encoder, member) for _, member_name, member in d[6]}

    def encode(value: Any, w: _Writer) -> bytes:
        try:
            discriminator, member_value = value._d, value._v
        except AttributeError as exc:
            raise ConversionError(f"{value!r:.60} is not a union", d[2]) from exc
        fields = [("_d", disc()(discriminator, w))]
        selected = D.union_select(d, discriminator)
        if selected is not None:
            member_name = selected[1]
            fields.append((keys[member_name], getters[member_name]()(member_value, w)))
        return w.object(fields)
    return encode


