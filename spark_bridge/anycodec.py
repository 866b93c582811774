"""IDL values <-> VARIANT bytes, guided by the TypeCode (one compiled codec per TypeCode).

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
float / double, long double   float / double (NaN and infinities kept)
boolean                       boolean
char, wchar, string, wstring  string
fixed<d, s>                   decimal with scale s
enum                          the enumerator's name (its ordinal when the
                              TypeCode has no member names)
struct, exception             object keyed by member name (an array in
                              member order when names are missing or repeat)
union                         object ``{"_d": discriminator, member: value}``
sequence, array               array; ``bytes`` octet sequences as binary,
                              ``str`` char sequences as a string
alias                         as its content
any                           object ``{"type": TypeCode text, "value": ...}``
TypeCode                      string (its text)
null, void, nil reference     variant null
object reference              string (``object_to_string``; needs an ORB)
Principal                     binary
============================  ===========================================

Encoders and decoders are compiled once per TypeCode (cached by identity)
and look their member codecs up lazily, so recursive TypeCodes compile.
Decoding reads the VARIANT into plain Python values first (``variant.read``,
which accepts any valid encoding) and then rebuilds IDL values from them.
"""

from __future__ import annotations

import decimal as _decimal
import threading
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Protocol

from cosnotify.orb import CORBA
from cosnotify.orb import typecode as T
from cosnotify.orb.validate import fixed_value_fits
from spark_bridge import variant as V
from spark_bridge.typetext import decode_typecode, encode_typecode

__all__ = ["ConversionError", "Raw", "References", "decode_any", "encode_any"]

_CACHE_LIMIT = 4096

Raw = tuple[str, bytes, bytes]  # (TypeCode text, variant value, variant metadata)
Encoder = Callable[[Any, Any], bytes]  # (value, _Writer or None for scalars)
Decoder = Callable[[Any, "References | None"], Any]


class ConversionError(ValueError):
    """A value that does not fit its TypeCode, or cannot be stored without an ORB."""

    def __init__(self, detail: str, typecode: Any = None) -> None:
        super().__init__(detail if typecode is None else f"{detail} (TypeCode {typecode!r})")
        self.detail = detail
        self.typecode = typecode


class References(Protocol):
    """What storing object references needs: an ORB's string conversions."""

    def object_to_string(self, obj: Any) -> str: ...

    def string_to_object(self, text: str) -> Any: ...


class _Writer(V.Writer):
    __slots__ = ("references",)

    def __init__(self, references: References | None) -> None:
        super().__init__()
        self.references = references


def encode_any(value: Any, references: References | None = None) -> Raw:
    """``(type text, variant value bytes, variant metadata bytes)`` for a CORBA Any."""
    tc = value.typecode()
    cell = _cells.get(id(tc))
    if cell is None or cell[0] is not tc:
        cell = _cell(tc)
    _, text, encode, scalar = cell
    if scalar:  # no object keys and no references: skip the writer
        return text, encode(value.value(), None), V.EMPTY_METADATA
    writer = _Writer(references)
    data = encode(value.value(), writer)
    return text, data, writer.metadata()


def decode_any(type_text: str, data: bytes, metadata: bytes,
               references: References | None = None) -> Any:
    """The CORBA Any of a TypeCode text and VARIANT bytes.

    The value must fit the TypeCode (the VARIANT type its kind is written as,
    integer ranges, bounds, one-character chars, fixed digits): a VARIANT made
    by other means than this bridge (``parse_json`` in SQL, another writer) is
    checked, not coerced, so a row never turns into an event it does not describe.
    """
    tc = decode_typecode(type_text)
    try:
        value = _decoder(tc)(V.read(data, metadata), references)
    except ConversionError:
        raise
    except (V.VariantError, KeyError, IndexError, TypeError, ValueError, AttributeError,
            ArithmeticError) as exc:
        raise ConversionError(f"the VARIANT does not hold a value of this type: {exc!r}",
                              tc) from exc
    return CORBA.Any(tc, value)


# -- compiled encoders -------------------------------------------------------------------------

_encoders: dict[int, tuple[T.TypeCode, Encoder]] = {}
_decoders: dict[int, tuple[T.TypeCode, Decoder]] = {}
_lock = threading.Lock()


def _cached(cache: dict[int, tuple[T.TypeCode, Any]], tc: T.TypeCode,
            build: Callable[[T.TypeCode], Any]) -> Any:
    hit = cache.get(id(tc))
    if hit is not None and hit[0] is tc:
        return hit[1]
    fn = build(tc)
    with _lock:
        if len(cache) >= _CACHE_LIMIT:
            cache.clear()
        cache[id(tc)] = (tc, fn)  # keeps tc alive, so the id is not reused
    return fn


_cells: dict[int, tuple[T.TypeCode, str, Encoder, bool]] = {}
_SCALAR_KINDS = frozenset({T.K_SHORT, T.K_OCTET, T.K_LONG, T.K_USHORT, T.K_LONGLONG, T.K_ULONG,
                           T.K_ULONGLONG, T.K_FLOAT, T.K_DOUBLE, T.K_LONGDOUBLE, T.K_BOOLEAN,
                           T.K_CHAR, T.K_WCHAR, T.K_STRING, T.K_WSTRING, T.K_NULL, T.K_VOID,
                           T.K_TYPECODE, T.K_PRINCIPAL, T.K_FIXED, T.K_ENUM})


def _cell(tc: T.TypeCode) -> tuple[T.TypeCode, str, Encoder, bool]:
    """(tc, its text, its encoder, whether it needs no writer), cached by identity."""
    base = T.resolve(tc).unalias()
    cell = (tc, encode_typecode(tc), _encoder(tc), base._k in _SCALAR_KINDS)
    with _lock:
        if len(_cells) >= _CACHE_LIMIT:
            _cells.clear()
        _cells[id(tc)] = cell
    return cell


def _encoder(tc: T.TypeCode) -> Encoder:
    return _cached(_encoders, tc, _build_encoder)  # type: ignore[no-any-return]


def _decoder(tc: T.TypeCode) -> Decoder:
    return _cached(_decoders, tc, _build_decoder)  # type: ignore[no-any-return]


def _lazy(table: Callable[[T.TypeCode], Any], tc: T.TypeCode) -> Callable[[], Any]:
    """A getter that compiles ``tc`` on first use (so recursive TypeCodes terminate)."""
    cell: list[Any] = []

    def get() -> Any:
        if not cell:
            cell.append(table(tc))
        return cell[0]
    return get


def _checked_int(lo: int, hi: int, kind: str, pack: Callable[[int], bytes]) -> Encoder:
    def encode(value: Any, w: _Writer) -> bytes:
        if not (isinstance(value, int) and lo <= value <= hi):
            raise ConversionError(f"{value!r} is not a {kind}")
        return pack(value)
    return encode


def _enc_float(value: Any, w: _Writer) -> bytes:
    return V.float32(float(value))


def _enc_double(value: Any, w: _Writer) -> bytes:
    return V.double(float(value))


def _enc_bool(value: Any, w: _Writer) -> bytes:
    return V.boolean(value)


def _enc_string(value: Any, w: _Writer) -> bytes:
    if not isinstance(value, str):
        raise ConversionError(f"{value!r} is not a string")
    return V.string(value)


def _enc_null(value: Any, w: _Writer) -> bytes:
    return V.null()


def _enc_binary(value: Any, w: _Writer) -> bytes:
    return V.binary(bytes(value))


def _enc_ulonglong(value: Any, w: _Writer) -> bytes:
    if not (isinstance(value, int) and 0 <= value <= 2**64 - 1):
        raise ConversionError(f"{value!r} is not an unsigned long long")
    return V.decimal(value, 0, 20)


def _enc_typecode(value: Any, w: _Writer) -> bytes:
    return V.string(encode_typecode(value))


def _enc_any(value: Any, w: _Writer) -> bytes:
    tc = value.typecode()
    return w.object([("type", V.string(encode_typecode(tc))),
                     ("value", _encoder(tc)(value.value(), w))])


def _enc_objref(value: Any, w: _Writer) -> bytes:
    if value is None:
        return V.null()
    if w.references is None:
        raise ConversionError("an object reference needs an ORB (pass references=orb) to be stored")
    return V.string(w.references.object_to_string(value))


_SIMPLE_ENCODERS: dict[int, Encoder] = {
    T.K_SHORT: _checked_int(-(2**15), 2**15 - 1, "short", V.int16),
    T.K_OCTET: _checked_int(0, 255, "octet", V.int16),
    T.K_LONG: _checked_int(-(2**31), 2**31 - 1, "long", V.int32),
    T.K_USHORT: _checked_int(0, 2**16 - 1, "unsigned short", V.int32),
    T.K_LONGLONG: _checked_int(-(2**63), 2**63 - 1, "long long", V.int64),
    T.K_ULONG: _checked_int(0, 2**32 - 1, "unsigned long", V.int64),
    T.K_ULONGLONG: _enc_ulonglong,
    T.K_FLOAT: _enc_float, T.K_DOUBLE: _enc_double, T.K_LONGDOUBLE: _enc_double,
    T.K_BOOLEAN: _enc_bool, T.K_CHAR: _enc_string, T.K_WCHAR: _enc_string,
    T.K_STRING: _enc_string, T.K_WSTRING: _enc_string,
    T.K_NULL: _enc_null, T.K_VOID: _enc_null, T.K_ANY: _enc_any, T.K_TYPECODE: _enc_typecode,
    T.K_PRINCIPAL: _enc_binary, T.K_OBJREF: _enc_objref, T.K_ABSTRACT_INTERFACE: _enc_objref,
    T.K_LOCAL_INTERFACE: _enc_objref,
}


def _keyed(names: tuple[str, ...]) -> bool:
    """Can these member names key a variant object? (Compact TypeCodes have none.)"""
    return all(names) and len(set(names)) == len(names)


def _build_encoder(tc: T.TypeCode) -> Encoder:
    tc = T.resolve(tc)
    k = tc._k
    simple = _SIMPLE_ENCODERS.get(k)
    if simple is not None:
        return simple
    if isinstance(tc, T.AliasTC):
        return _encoder(tc._content)
    if isinstance(tc, T.FixedTC):
        return _fixed_encoder(tc)
    if isinstance(tc, T.EnumTC):
        return _enum_encoder(tc)
    if isinstance(tc, T.SequenceTC):
        return _sequence_encoder(tc)
    if isinstance(tc, T.StructTC):
        return _struct_encoder(tc)
    if isinstance(tc, T.UnionTC):
        return _union_encoder(tc)
    raise ConversionError("no VARIANT form for this TypeCode kind", tc)


def _fixed_encoder(tc: T.FixedTC) -> Encoder:
    digits, scale = tc._digits, tc._scale
    quantum = Decimal(1).scaleb(-scale)
    context = _decimal.Context(prec=64)

    def encode(value: Any, w: _Writer) -> bytes:
        if isinstance(value, bool) or not isinstance(value, (Decimal, int)):
            raise ConversionError(f"{value!r} is not a fixed<{digits},{scale}>")
        exact = Decimal(value).quantize(quantum, context=context)
        unscaled = int(exact.scaleb(scale, context=context))
        if abs(unscaled) >= 10 ** digits:
            raise ConversionError(f"{value!r} does not fit fixed<{digits},{scale}>")
        return V.decimal(unscaled, scale, digits)
    return encode


def _enum_encoder(tc: T.EnumTC) -> Encoder:
    names = tc._names
    by_name = _keyed(names)
    count = len(names)

    def encode(value: Any, w: _Writer) -> bytes:
        ordinal = getattr(value, "_v", None)
        if not isinstance(ordinal, int) or not 0 <= ordinal < count:
            raise ConversionError(f"{value!r} is not an item of enum {tc._id}")
        return V.string(names[ordinal]) if by_name else V.int32(ordinal)
    return encode


def _sequence_encoder(tc: T.SequenceTC) -> Encoder:
    element = _lazy(_encoder, tc._content)
    content_kind = T.resolve(tc._content).unalias()._k

    def encode(value: Any, w: _Writer) -> bytes:
        if content_kind == T.K_OCTET and isinstance(value, (bytes, bytearray, memoryview)):
            return V.binary(bytes(value))
        if content_kind in (T.K_CHAR, T.K_WCHAR) and isinstance(value, str):
            return V.string(value)
        if not isinstance(value, (list, tuple)):
            raise ConversionError(f"{type(value).__name__} is not a sequence", tc)
        enc = element()
        return w.array([enc(item, w) for item in value])
    return encode


def _struct_encoder(tc: T.StructTC) -> Encoder:
    attrs_ = tc._attrs
    names = tc._names
    members = [_lazy(_encoder, t) for t in tc._types]
    keyed = _keyed(names)

    def encode(value: Any, w: _Writer) -> bytes:
        try:
            items = [getattr(value, a) for a in attrs_] if keyed else _positional(value)
        except AttributeError as exc:
            raise ConversionError(f"{value!r} lacks a member: {exc}", tc) from exc
        if len(items) != len(members):
            raise ConversionError(f"{value!r} has {len(items)} members, not {len(members)}", tc)
        encoded = [get()(item, w) for get, item in zip(members, items)]
        if keyed:
            return w.object(list(zip(names, encoded)))
        return w.array(encoded)
    return encode


def _positional(value: Any) -> list[Any]:
    """Member values in IDL order, for TypeCodes that do not name the members."""
    if hasattr(value, "_tuple"):
        return list(value._tuple())
    if hasattr(value, "_members"):
        return list(value._members().values())
    raise AttributeError("members in order")


def _union_encoder(tc: T.UnionTC) -> Encoder:
    disc = _lazy(_encoder, tc._disc)
    members = [_lazy(_encoder, t) for t in tc._types]
    names = tc._names

    def encode(value: Any, w: _Writer) -> bytes:
        d = value._d
        fields = [("_d", disc()(d, w))]
        index = tc.select(d)
        if index is not None:
            key = names[index] if names[index] and names[index] != "_d" else "_v"
            fields.append((key, members[index]()(value._v, w)))
        return w.object(fields)
    return encode


# -- compiled decoders -------------------------------------------------------------------------

# The scalar decoders take the VARIANT types this bridge writes and the ones Spark
# makes for the same JSON (decimals for numbers), and refuse the rest: no coercion.

def _mismatch(plain: Any, expected: str) -> ValueError:
    return ValueError(f"{expected} expected, the VARIANT holds {type(plain).__name__} "
                      f"{plain!r:.60}")


def _dec_int(plain: Any, refs: References | None) -> int:
    if type(plain) is int:
        return plain
    if isinstance(plain, Decimal) and plain.is_finite() and plain == plain.to_integral_value():
        return int(plain)
    raise _mismatch(plain, "an integer")


def _dec_float(plain: Any, refs: References | None) -> float:
    if type(plain) is float or type(plain) is int or isinstance(plain, Decimal):
        return float(plain)
    raise _mismatch(plain, "a number")


def _dec_bool(plain: Any, refs: References | None) -> bool:
    if type(plain) is bool:
        return plain
    raise _mismatch(plain, "a boolean")


def _dec_str(plain: Any, refs: References | None) -> str:
    if type(plain) is str:
        return plain
    raise _mismatch(plain, "a string")


def _ranged(lo: int, hi: int) -> Decoder:
    def decode(plain: Any, refs: References | None) -> int:
        value = _dec_int(plain, refs)
        if not lo <= value <= hi:
            raise ValueError(f"{value} is outside [{lo}, {hi}]")
        return value
    return decode


def _chars(limit: int) -> Decoder:
    def decode(plain: Any, refs: References | None) -> str:
        value = _dec_str(plain, refs)
        if len(value) != 1 or ord(value) >= limit:
            raise ValueError(f"{value!r:.60} is not one character below U+{limit:04X}")
        return value
    return decode


def _bounded(bound: int) -> Decoder:
    def decode(plain: Any, refs: References | None) -> str:
        value = _dec_str(plain, refs)
        if "\0" in value or (bound and len(value) > bound):
            raise ValueError(f"{value!r:.60} is longer than {bound} or holds NUL")
        return value
    return decode


def _fixed(tc: T.FixedTC) -> Decoder:
    def decode(plain: Any, refs: References | None) -> Decimal:
        if type(plain) is int:
            plain = Decimal(plain)
        if not isinstance(plain, Decimal) or not plain.is_finite() \
                or not fixed_value_fits(tc, plain):
            raise _mismatch(plain, f"a decimal fitting fixed<{tc._digits},{tc._scale}>")
        return plain
    return decode


def _sequence(tc: T.SequenceTC) -> Decoder:
    element = _lazy(_decoder, tc._content)
    exact = tc._k == T.K_ARRAY
    bound = tc.length()
    content = T.resolve(tc._content).unalias()._k
    raw = (bytes,) if content == T.K_OCTET else (str,) if content in (T.K_CHAR, T.K_WCHAR) \
        else ()

    def decode(plain: Any, refs: References | None) -> Any:
        value: Any
        if isinstance(plain, raw):
            value = plain
        elif isinstance(plain, list):
            value = [element()(item, refs) for item in plain]
        else:
            raise _mismatch(plain, "an array")
        if (exact and len(value) != bound) or (bound and len(value) > bound):
            raise ValueError(f"{len(value)} elements do not fit {tc!r}")
        return value
    return decode


def _dec_none(plain: Any, refs: References | None) -> None:
    return None


def _dec_bytes(plain: Any, refs: References | None) -> bytes:
    if isinstance(plain, (bytes, bytearray)):
        return bytes(plain)
    raise _mismatch(plain, "binary")


def _dec_typecode(plain: Any, refs: References | None) -> T.TypeCode:
    return decode_typecode(_dec_str(plain, refs))


def _dec_any(plain: Any, refs: References | None) -> Any:
    tc = decode_typecode(plain["type"])
    return CORBA.Any(tc, _decoder(tc)(plain["value"], refs))


def _dec_objref(plain: Any, refs: References | None) -> Any:
    if plain is None:
        return None
    if refs is None:
        raise ConversionError("an object reference needs an ORB (pass references=orb) to be read")
    try:
        return refs.string_to_object(_dec_str(plain, refs))
    except ValueError:
        raise
    except Exception as exc:  # BAD_PARAM and kin from the ORB's parser
        raise ValueError(f"not an object reference: {type(exc).__name__}: {exc}") from exc


_SIMPLE_DECODERS: dict[int, Decoder] = {
    **{k: _dec_int for k in (T.K_SHORT, T.K_OCTET, T.K_LONG, T.K_USHORT, T.K_LONGLONG,
                             T.K_ULONG, T.K_ULONGLONG)},
    T.K_FLOAT: _dec_float, T.K_DOUBLE: _dec_float, T.K_LONGDOUBLE: _dec_float,
    T.K_BOOLEAN: _dec_bool, T.K_CHAR: _dec_str, T.K_WCHAR: _dec_str, T.K_STRING: _dec_str,
    T.K_WSTRING: _dec_str, T.K_NULL: _dec_none, T.K_VOID: _dec_none, T.K_ANY: _dec_any,
    T.K_TYPECODE: _dec_typecode, T.K_PRINCIPAL: _dec_bytes, T.K_OBJREF: _dec_objref,
    T.K_ABSTRACT_INTERFACE: _dec_objref, T.K_LOCAL_INTERFACE: _dec_objref,
}


def _build_decoder(tc: T.TypeCode) -> Decoder:
    tc = T.resolve(tc)
    k = tc._k
    if k in T.INTEGER_RANGES:
        return _ranged(*T.INTEGER_RANGES[k])
    if k in (T.K_CHAR, T.K_WCHAR):
        return _chars(0x100 if k == T.K_CHAR else 0x10000)
    if k in (T.K_STRING, T.K_WSTRING):
        return _bounded(tc.length())
    simple = _SIMPLE_DECODERS.get(k)
    if simple is not None:
        return simple
    if isinstance(tc, T.AliasTC):
        return _decoder(tc._content)
    if isinstance(tc, T.FixedTC):
        return _fixed(tc)
    if isinstance(tc, T.EnumTC):
        return _enum_decoder(tc)
    if isinstance(tc, T.SequenceTC):
        return _sequence(tc)
    if isinstance(tc, T.StructTC):
        return _struct_decoder(tc)
    if isinstance(tc, T.UnionTC):
        return _union_decoder(tc)
    raise ConversionError("no VARIANT form for this TypeCode kind", tc)


def _enum_decoder(tc: T.EnumTC) -> Decoder:
    index = {name: i for i, name in enumerate(tc._names)}

    def decode(plain: Any, refs: References | None) -> Any:
        items = tc.enum_items()
        ordinal = index.get(plain) if isinstance(plain, str) else _dec_int(plain, refs)
        if ordinal is None or not 0 <= ordinal < len(items):
            raise ConversionError(f"{plain!r} is not an item of enum {tc._id}")
        return items[ordinal]
    return decode


def _struct_decoder(tc: T.StructTC) -> Decoder:
    names = tc._names
    members = [_lazy(_decoder, t) for t in tc._types]

    def decode(plain: Any, refs: References | None) -> Any:
        cls = tc.python_class()
        if isinstance(plain, dict):
            plain = [plain[name] for name in names]
        if not isinstance(plain, list) or len(plain) != len(members):
            raise _mismatch(plain, f"{len(members)} members")
        return cls(*[get()(item, refs) for get, item in zip(members, plain)])
    return decode


def _union_decoder(tc: T.UnionTC) -> Decoder:
    disc = _lazy(_decoder, tc._disc)
    members = [_lazy(_decoder, t) for t in tc._types]

    def decode(plain: Any, refs: References | None) -> Any:
        cls = tc.python_class()
        d = disc()(plain["_d"], refs)
        index = tc.select(d)
        rest = [v for key, v in plain.items() if key != "_d"]
        if len(rest) != (index is not None):
            raise _mismatch(plain, "the discriminator and the member it selects")
        return cls(d, None if index is None else members[index]()(rest[0], refs))
    return decode
