"""VARIANT bytes -> omniORB values, guided by the TypeCode; what both directions share.

Strategy: ``decode_any`` reads the VARIANT into plain Python values first
(``variant.read``, which accepts any valid encoding) and then rebuilds
omniORB values from them with a decoder compiled once per descriptor of the
TypeCode ``typetext`` decodes (cached by identity; member decoders are looked
up lazily, so recursive TypeCodes compile). Each value is checked against its
TypeCode, not coerced: a VARIANT made by other means than this bridge
(``parse_json`` in SQL, another writer) must hold exactly what the type text
says, in one of the forms ``anycodec`` writes or Spark's JSON makes for it
(decimals for numbers). Values come back in the forms omniORB marshals:
generated classes for types with stubs (``typetext`` returns their
descriptors), ``UnknownStruct``/``UnknownUnion``/``UnknownUserException``
otherwise, ``EnumItem``, ``CORBA.fixed``, ``bytes`` for octet and ``str``
for char sequences.

The error type, the References protocol and the small helpers the encoders
in ``anycodec`` use too live here, so ``anycodec`` depends on this module and
not the other way round.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final, Protocol

from omniORB import CORBA

from cosnotify.corba import descriptors as D
from spark_bridge import variant as V
from spark_bridge.typetext import decode_typecode, idl_name

__all__ = ["ConversionError", "Decoder", "References", "decode_any"]

_CACHE_LIMIT = 4096
_EXACT: Final = V._EXACT
_lock = threading.Lock()
#: A character no ``char`` holds (a char is one octet, ISO 8859-1: U+0000..U+00FF).
BEYOND_CHAR: Final = re.compile("[^\x00-\xff]")
CHAR_LIMIT: Final = 0x100  # char: below U+0100
WCHAR_LIMIT: Final = 0x10000  # wchar: below U+10000 (UTF-16, one unit)

Decoder = Callable[[Any, "References | None"], Any]


class ConversionError(ValueError):
    """A value that does not fit its TypeCode, or cannot be stored without an ORB."""

    def __init__(self, detail: str, typecode: Any = None) -> None:
        super().__init__(detail if typecode is None else f"{detail} (TypeCode {typecode})")
        self.detail = detail
        self.typecode = typecode


class References(Protocol):
    """What storing object references needs: an ORB's string conversions."""

    def object_to_string(self, obj: Any) -> str: ...

    def string_to_object(self, text: str) -> Any: ...


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
        value = _decoder(tc._d)(V.read(data, metadata), references)
    except ConversionError:
        raise
    except (V.VariantError, KeyError, IndexError, TypeError, ValueError, AttributeError,
            ArithmeticError) as exc:
        raise ConversionError(f"the VARIANT does not hold a value of this type: {exc!r}",
                              type_text) from exc
    return CORBA.Any(tc, value)


# -- helpers shared with the encoders -----------------------------------------------------

def _remember(cache: dict[int, Any], key: Any, entry: Any) -> None:
    with _lock:
        if len(cache) >= _CACHE_LIMIT:
            cache.clear()
        cache[id(key)] = entry  # the entry holds key, so its id is not reused


def _lazy(table: Callable[[Any], Any], d: Any) -> Callable[[], Any]:
    """A getter that compiles ``d`` on first use (so recursive TypeCodes terminate)."""
    cell: list[Any] = []

    def get() -> Any:
        if not cell:
            cell.append(table(D.resolve(d)))
        return cell[0]
    return get


_FIXED_TYPE: Final = type(CORBA.fixed(0))


def _unscaled(value: Any, scale: int) -> int | None:
    """``value`` times 10**scale, if that is an integer (CORBA.fixed, Decimal or int)."""
    if type(value) is _FIXED_TYPE:
        shift: int = scale - value.decimals()
        digits: int = value.value()
        if shift >= 0:
            return int(digits * 10 ** shift)
        unscaled, rest = divmod(digits, 10 ** -shift)
        return None if rest else unscaled
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int(value * 10 ** scale)
    if isinstance(value, Decimal) and value.is_finite():
        shifted = value.scaleb(scale, _EXACT)
        return int(shifted) if shifted == shifted.to_integral_value() else None
    return None


def _union_key(member_name: str) -> str:
    """The object key of a union member: its IDL name, or ``_v`` when it has none."""
    name = idl_name(member_name)
    return name if name and name != "_d" else "_v"


# -- decoders ------------------------------------------------------------------------------

_decoders: dict[int, tuple[Any, Decoder]] = {}


def _decoder(d: Any) -> Decoder:
    hit = _decoders.get(id(d))
    if hit is not None and hit[0] is d:
        return hit[1]
    fn = _build_decoder(d)
    _remember(_decoders, d, (d, fn))
    return fn


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
    # A char or wchar may be NUL: only strings and wstrings exclude it.
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


def _fixed_decoder(digits: int, scale: int) -> Decoder:
    limit = 10 ** digits

    def decode(plain: Any, refs: References | None) -> Any:
        unscaled = _unscaled(plain, scale) if type(plain) is int or isinstance(plain, Decimal) \
            else None
        if unscaled is None or not -limit < unscaled < limit:
            raise _mismatch(plain, f"a decimal fitting fixed<{digits},{scale}>")
        # From text, as omniORB unmarshals fixed: normalised (12.50 -> 12.5). The 4.3.3
        # wheel's fixed(digits, scale, n) keeps trailing zeros, and then 12.50 != 12.5.
        return CORBA.fixed(format(Decimal(unscaled).scaleb(-scale, _EXACT), "f"))
    return decode


def _sequence_decoder(d: Any) -> Decoder:
    element = _lazy(_decoder, d[1])
    exact = d[0] == D.ARRAY
    bound = d[2]
    content = D.kind(d[1])  # omniORB's bytes and str forms: only for octet and char, unaliased
    base = D.kind(D.unalias(d[1]))

    def check(n: int) -> None:
        if (exact and n != bound) or (bound and n > bound):
            raise ValueError(f"{n} elements do not fit {'array' if exact else 'sequence'}"
                             f"<{bound}>")

    if content == D.OCTET:
        def decode_octets(plain: Any, refs: References | None) -> bytes:
            if isinstance(plain, list):  # an array of octets (written by other means)
                plain = bytes(element()(item, refs) for item in plain)
            if not isinstance(plain, (bytes, bytearray)):
                raise _mismatch(plain, "binary")
            check(len(plain))
            return bytes(plain)
        return decode_octets
    if content == D.CHAR:
        def decode_chars(plain: Any, refs: References | None) -> str:
            if isinstance(plain, list):  # an array of chars (written by other means)
                plain = "".join(element()(item, refs) for item in plain)
            if type(plain) is not str:
                raise _mismatch(plain, "a string of chars")
            if not plain.isascii() and BEYOND_CHAR.search(plain):  # NUL is a char too
                raise ValueError(f"{plain!r:.60} holds characters beyond U+00FF")
            check(len(plain))
            return plain
        return decode_chars

    def decode(plain: Any, refs: References | None) -> list[Any]:
        if (isinstance(plain, bytes) and base == D.OCTET) \
                or (isinstance(plain, str) and base in (D.CHAR, D.WCHAR)):
            plain = list(plain)  # binary or a string (rows written before omniORBpy)
        if not isinstance(plain, list):
            raise _mismatch(plain, "an array")
        check(len(plain))
        dec = element()
        return [dec(item, refs) for item in plain]
    return decode


def _dec_none(plain: Any, refs: References | None) -> None:
    return None


def _dec_bytes(plain: Any, refs: References | None) -> bytes:
    if isinstance(plain, (bytes, bytearray)):
        return bytes(plain)
    raise _mismatch(plain, "binary")


def _dec_typecode(plain: Any, refs: References | None) -> Any:
    return decode_typecode(_dec_str(plain, refs))


def _dec_any(plain: Any, refs: References | None) -> Any:
    if not isinstance(plain, dict) or set(plain) != {"type", "value"}:
        raise _mismatch(plain, "an object of type and value")
    tc = decode_typecode(_dec_str(plain["type"], refs))
    return CORBA.Any(tc, _decoder(tc._d)(plain["value"], refs))


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


_INTEGER_RANGES: Final = {
    D.SHORT: (-(2**15), 2**15 - 1), D.LONG: (-(2**31), 2**31 - 1),
    D.LONGLONG: (-(2**63), 2**63 - 1), D.USHORT: (0, 2**16 - 1), D.ULONG: (0, 2**32 - 1),
    D.ULONGLONG: (0, 2**64 - 1), D.OCTET: (0, 255),
}
_SIMPLE_DECODERS: Final[dict[int, Decoder]] = {
    **{k: _ranged(lo, hi) for k, (lo, hi) in _INTEGER_RANGES.items()},
    D.CHAR: _chars(CHAR_LIMIT), D.WCHAR: _chars(WCHAR_LIMIT),
    D.FLOAT: _dec_float, D.DOUBLE: _dec_float, D.BOOLEAN: _dec_bool,
    D.NULL: _dec_none, D.VOID: _dec_none, D.ANY: _dec_any,
    D.TYPECODE: _dec_typecode, D.PRINCIPAL: _dec_bytes, D.OBJREF: _dec_objref,
    D.ABSTRACT_INTERFACE: _dec_objref, D.LOCAL_INTERFACE: _dec_objref,
}


def _build_decoder(d: Any) -> Decoder:
    d = D.resolve(d)
    if type(d) is int:
        simple = _SIMPLE_DECODERS.get(d)
        if simple is None:
            raise ConversionError(f"no VARIANT form for TypeCode kind {d}")
        return simple
    k = d[0]
    if k == D.STRING or k == D.WSTRING:
        return _bounded(d[1])
    if k == D.ALIAS:
        return _decoder(D.resolve(d[3]))
    if k == D.FIXED:
        return _fixed_decoder(d[1], d[2])
    if k == D.ENUM:
        return _enum_decoder(d)
    if k == D.SEQUENCE or k == D.ARRAY:
        return _sequence_decoder(d)
    if k == D.STRUCT or k == D.EXCEPT:
        return _struct_decoder(d)
    if k == D.UNION:
        return _union_decoder(d)
    if k in _SIMPLE_DECODERS:
        return _SIMPLE_DECODERS[k]
    raise ConversionError(f"no VARIANT form for TypeCode kind {k}")


def _enum_decoder(d: Any) -> Decoder:
    items = d[3]
    index = {item._n: i for i, item in enumerate(items)}

    def decode(plain: Any, refs: References | None) -> Any:
        ordinal = index.get(plain) if isinstance(plain, str) else _dec_int(plain, refs)
        if ordinal is None or not 0 <= ordinal < len(items):
            raise ConversionError(f"{plain!r:.60} is not an item of enum {d[1]}")
        return items[ordinal]
    return decode


def _struct_decoder(d: Any) -> Decoder:
    cls = d[1]
    names = tuple(idl_name(a) for a in d[4::2])
    members = [_lazy(_decoder, t) for t in d[5::2]]

    def decode(plain: Any, refs: References | None) -> Any:
        if isinstance(plain, dict):
            if len(plain) != len(names):
                raise _mismatch(plain, f"the {len(names)} members {', '.join(names)}")
            plain = [plain[name] for name in names]
        if not isinstance(plain, list) or len(plain) != len(members):
            raise _mismatch(plain, f"{len(members)} members")
        return cls(*[get()(item, refs) for get, item in zip(members, plain, strict=True)])
    return decode


def _union_decoder(d: Any) -> Decoder:
    cls = d[1]
    disc = _lazy(_decoder, d[4])
    getters = {member_name: _lazy(_decoder, member) for _, member_name, member in d[6]}
    keys = {member_name: _union_key(member_name) for _, member_name, _ in d[6]}

    def decode(plain: Any, refs: References | None) -> Any:
        if not isinstance(plain, dict) or "_d" not in plain:
            raise _mismatch(plain, "an object with _d")
        discriminator = disc()(plain["_d"], refs)
        selected = D.union_select(d, discriminator)
        if selected is None:
            if len(plain) != 1:
                raise _mismatch(plain, "only the discriminator (it selects no member)")
            return cls(discriminator, None)
        member_name = selected[1]
        key = keys[member_name]
        if len(plain) != 2 or key not in plain:
            raise _mismatch(plain, f"the discriminator and {key}")
        return cls(discriminator, getters[member_name]()(plain[key], refs))
    return decode
