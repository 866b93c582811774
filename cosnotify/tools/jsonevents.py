"""JSON lines <-> ``CosNotification::StructuredEvent``: what ``publish`` reads and ``tail`` writes.

Strategy: pure functions, no I/O and no ORB call (h11's rule): :func:`loads`
turns one line of text into an event or raises :class:`JsonEventError`;
the reverse, :func:`cosnotify.tools.eventjson.dumps`, turns an event into
one line. A line is converted completely
before anything is done with it, so a caller never holds half an event.
The schema and the value mapping are in docs/json-events.md; in short, one
object per line::

    {"domain": "Telescope", "type": "Alarm", "name": "dome-3",
     "header": {"Priority": 2}, "filterable": {"severity": 3}, "body": [1, 2]}

JSON values take the CORBA type their JSON kind suggests (true/false:
boolean; integers: long, else long long, else unsigned long long; other
numbers: double; strings: string; null: an empty Any; lists: a sequence of
the one scalar type they hold, else sequence<any>; objects: a nested
``CosNotification::PropertySeq``), and ``{"$type": T, "value": V}`` names
the type. The header's standard QoS fields (section 2.2, Table 2-4) take
their standard types and must hold values the channel takes (section
2.5.5), since it refuses anything else with ``BAD_QOS``. The reverse
mapping writes the plain form wherever it reads back as the same type and
the ``$type`` form otherwise, so
``tail --format json | publish -`` re-creates each event it can express;
values of other types (enums, structs, unions...) are rendered readably by
the Spark bridge's VARIANT encoder (``spark_bridge.anycodec``) and do not
come back as they were.

Limits are explicit: a line of more than :data:`MAX_LINE_BYTES` and a value
nested deeper than :data:`MAX_DEPTH` are errors, as is anything a CORBA
marshaller would refuse later: a string holding NUL, a number out of its
type's range, a CORBA ``string`` (names and keys included) holding a
character outside ISO-8859-1, which is omniORB's native char code set on
both sides, so its marshaller raises ``DATA_CONVERSION`` for it (other text
goes in a ``wstring``), and a ``sequence<unsigned long long>`` holding an
item >= 2**63, which omniORBpy 4.3.3 marshals as 2**64 - 1 or fails on
(docs/orb.md; such items fit in a ``sequence<any>``). An error message is always one line: unusual keys
are quoted and long ones cut.
"""

from __future__ import annotations

import datetime
import functools
import json
import math
import re
from collections.abc import Callable
from typing import Any, Final, TypeGuard

from omniORB import CORBA

import CosNotification as N
import TimeBase

from cosnotify.channel.clock import TIMET_EPOCH_OFFSET, seconds_to_timet
from cosnotify.corba import descriptors as D

__all__ = ["MAX_DEPTH", "MAX_LINE_BYTES", "JsonEventError", "any_from_json", "from_json",
           "loads"]

#: The longest line :func:`loads` takes, in bytes of UTF-8 (the newline not counted).
MAX_LINE_BYTES: Final = 1 << 20
#: How deep lists and objects may nest in one value (the value itself counts as 1).
MAX_DEPTH: Final = 32

#: The least unsigned long long omniORBpy 4.3.3 cannot marshal in a sequence or array.
_BIG_ULONGLONG: Final = 1 << 63

_FIELDS: Final = ("domain", "type", "name", "header", "filterable", "body")
_PROPERTY_ID: Final = "IDL:omg.org/CosNotification/Property:1.0"
_UTCT_ID: Final = "IDL:omg.org/TimeBase/UtcT:1.0"
_UNITS: Final = 10_000_000  # TimeT units (100 ns) per second


class JsonEventError(ValueError):
    """A line that is no event: ``field`` names where (``filterable.severity``,
    ``body[2]``; empty for the line as a whole), ``reason`` says what is wrong."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}" if field else reason)
        self.field = field
        self.reason = reason


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as read: its members in order, repeated keys kept (to be refused)."""


# -- scalar types: the JSON value each accepts and the omniORB value it becomes ----------------

def _integer(low: int, high: int, name: str) -> Callable[[Any, str], Any]:
    def check(value: Any, where: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise JsonEventError(where, f"expected an integer for {name}, got {_show(value)}")
        if not low <= value <= high:
            raise JsonEventError(where, f"{_show(value)} does not fit {name}")
        return value
    return check


_SPECIAL_FLOATS: Final = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_FLOAT_MAX: Final = 3.4028234663852886e38


def _real(name: str, limit: float) -> Callable[[Any, str], Any]:
    def check(value: Any, where: str) -> Any:
        if isinstance(value, str) and value in _SPECIAL_FLOATS:
            return _SPECIAL_FLOATS[value]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise JsonEventError(where, f"expected a number for {name}, got {_show(value)}")
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):  # 1e400 parses as inf
            raise JsonEventError(where, f"a number out of the range of {name}")
        if abs(number) > limit:
            raise JsonEventError(where, f"{_show(value)} does not fit {name}")
        return number
    return check


def _boolean(value: Any, where: str) -> Any:
    if not isinstance(value, bool):
        raise JsonEventError(where, f"expected true or false for boolean, got {_show(value)}")
    return value


def _string(value: Any, where: str) -> Any:
    if not isinstance(value, str):
        raise JsonEventError(where, f"expected a string, got {_show(value)}")
    return _text(value, where, wide=True)


def _name(value: Any, where: str) -> str:
    """A string that names something (domain, type, event, property): no wstring for it."""
    if not isinstance(value, str):
        raise JsonEventError(where, f"expected a string, got {_show(value)}")
    return _text(value, where)


def _wstring(value: Any, where: str) -> Any:
    if not isinstance(value, str):
        raise JsonEventError(where, f"expected a string for wstring, got {_show(value)}")
    if "\0" in value:
        raise JsonEventError(where, "a CORBA wstring cannot hold NUL (\\u0000)")
    _no_surrogate(value, where)
    return value


def _char(value: Any, where: str) -> Any:
    if not isinstance(value, str) or len(value) != 1 or ord(value) > 0xFF or value == "\0":
        raise JsonEventError(where, f"expected one ISO-8859-1 character for char, got "
                                    f"{_show(value)}")
    return value


#: IDL name -> (TypeCode kind, check). Kinds are what the reverse mapping looks up.
_SCALARS: Final[dict[str, tuple[int, Callable[[Any, str], Any]]]] = {
    "short": (D.SHORT, _integer(-(1 << 15), (1 << 15) - 1, "short")),
    "unsigned short": (D.USHORT, _integer(0, (1 << 16) - 1, "unsigned short")),
    "long": (D.LONG, _integer(-(1 << 31), (1 << 31) - 1, "long")),
    "unsigned long": (D.ULONG, _integer(0, (1 << 32) - 1, "unsigned long")),
    "long long": (D.LONGLONG, _integer(-(1 << 63), (1 << 63) - 1, "long long")),
    "unsigned long long": (D.ULONGLONG, _integer(0, (1 << 64) - 1, "unsigned long long")),
    "float": (D.FLOAT, _real("float", _FLOAT_MAX)),
    "double": (D.DOUBLE, _real("double", math.inf)),
    "boolean": (D.BOOLEAN, _boolean),
    "char": (D.CHAR, _char),
    "octet": (D.OCTET, _integer(0, 255, "octet")),
    "string": (D.STRING, _string),
    "wstring": (D.WSTRING, _wstring),
}
_NAME_OF_KIND: Final = {kind: name for name, (kind, _) in _SCALARS.items()}
_INTEGERS: Final = ("long", "long long", "unsigned long long")  # plain ints, narrowest first
_RANGES: Final = {"long": (-(1 << 31), (1 << 31) - 1), "long long": (-(1 << 63), (1 << 63) - 1),
                  "unsigned long long": (0, (1 << 64) - 1)}
_TYPE_NAMES: Final = (*_SCALARS, *(f"sequence<{n}>" for n in (*_SCALARS, "any")), "PropertySeq")


_TYPECODES: Final = {D.SHORT: CORBA.TC_short, D.USHORT: CORBA.TC_ushort, D.LONG: CORBA.TC_long,
                     D.ULONG: CORBA.TC_ulong, D.LONGLONG: CORBA.TC_longlong,
                     D.ULONGLONG: CORBA.TC_ulonglong, D.FLOAT: CORBA.TC_float,
                     D.DOUBLE: CORBA.TC_double, D.BOOLEAN: CORBA.TC_boolean,
                     D.CHAR: CORBA.TC_char, D.OCTET: CORBA.TC_octet, D.STRING: CORBA.TC_string,
                     D.WSTRING: CORBA.TC_wstring}


@functools.cache
def _sequence_tc(kind: int) -> Any:
    return D.typecode((D.SEQUENCE, _TYPECODES[kind]._d if kind in _TYPECODES else kind, 0))


def _scalar_of(d: Any) -> str | None:
    """The IDL name of a scalar type's (unaliased) descriptor; bounded strings count."""
    if type(d) is tuple and d[0] in (D.STRING, D.WSTRING):
        return "string" if d[0] == D.STRING else "wstring"
    return _NAME_OF_KIND.get(d) if type(d) is int else None


# -- JSON -> event ----------------------------------------------------------------------------

def loads(line: str | bytes) -> Any:
    """The StructuredEvent one JSON line describes (JsonEventError if none).

    Besides the JSON itself, everything a push would fail on is an error
    here: every CORBA ``string`` (domain, type and name, property names,
    string values, items of string sequences) must be ISO-8859-1 without
    NUL, a ``sequence<unsigned long long>`` may not hold an item >= 2**63
    (omniORBpy 4.3.3 cannot marshal it), and the header's standard QoS fields
    must have their standard types and values the channel takes
    (docs/json-events.md).
    """
    if isinstance(line, bytes):
        if len(line) > MAX_LINE_BYTES:
            raise JsonEventError("", f"line longer than {MAX_LINE_BYTES} bytes")
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonEventError("", f"not UTF-8 (byte {exc.start + 1})") from None
    elif (len(line) > MAX_LINE_BYTES // 4
          and len(line.encode("utf-8", "surrogatepass")) > MAX_LINE_BYTES):
        raise JsonEventError("", f"line longer than {MAX_LINE_BYTES} bytes")
    try:
        parsed = json.loads(line, object_pairs_hook=_Pairs, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise JsonEventError("", f"malformed JSON at column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise JsonEventError("", f"nesting deeper than {MAX_DEPTH}") from None
    except ValueError as exc:  # a constant (NaN) or an integer of over 4300 digits
        raise JsonEventError("", f"malformed JSON: {exc}") from None
    return from_json(parsed)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (write {{\"$type\": \"double\", \"value\": "
                     f"\"{name}\"}})")


def from_json(obj: Any) -> Any:
    """The StructuredEvent of a parsed JSON object (a dict, or pairs from :func:`loads`)."""
    pairs = _members(obj, "", "an event object")
    for key, _ in pairs:
        if key not in _FIELDS:
            raise JsonEventError(_key(key), f"unknown field (expected {', '.join(_FIELDS)})")
    fields = dict(pairs)
    names = [_name(fields.get(key, ""), key) for key in ("domain", "type", "name")]
    header = _properties(fields.get("header", []), "header", header=True)
    filterable = _properties(fields.get("filterable", []), "filterable")
    body = any_from_json(fields.get("body"), "body")
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType(names[0], names[1]), names[2]), header),
        filterable, body)


def _members(obj: Any, where: str, what: str) -> list[tuple[str, Any]]:
    """An object's (key, value) pairs; repeated keys refused."""
    if isinstance(obj, dict):
        return list(obj.items())
    if not isinstance(obj, _Pairs):
        raise JsonEventError(where, f"expected {what}, got {_show(obj)}")
    seen: set[str] = set()
    for key, _ in obj:
        if key in seen:
            raise JsonEventError(_join(where, key), "repeated key")
        seen.add(key)
    return list(obj)


def _properties(obj: Any, where: str, header: bool = False, depth: int = 0) -> list[Any]:
    """A PropertySeq from an object, or from a list of {"name": ..., "value": ...}."""
    if _is_list(obj):
        pairs = []
        for i, item in enumerate(obj):
            at = f"{where}[{i}]"
            members = dict(_members(item, at, 'an object {"name": ..., "value": ...}'))
            if set(members) != {"name", "value"}:
                raise JsonEventError(at, 'expected exactly the keys "name" and "value"')
            pairs.append((_name(members["name"], f"{at}.name"), members["value"]))
    else:
        pairs = _members(obj, where, "an object of properties")
    made = []
    for key, value in pairs:
        at = _join(where, key)
        text = _text(key, at)
        special = _HEADER_FIELDS.get(key) if header else None
        if special is not None:
            made.append(N.Property(text, special(value, at)))
        else:
            made.append(N.Property(text, any_from_json(value, at, depth)))
    return made


def any_from_json(value: Any, where: str = "value", depth: int = 0) -> Any:
    """The CORBA Any of a JSON value (``where`` names it in errors; ``depth``: its nesting)."""
    if value is None:
        return CORBA.Any(CORBA.TC_null, None)
    if isinstance(value, (list, _Pairs, dict)):
        depth += 1
        if depth > MAX_DEPTH:
            raise JsonEventError(where, f"nesting deeper than {MAX_DEPTH}")
        if _is_list(value):
            return _list(value, where, depth)
        if _is_explicit(value):
            return _explicit(dict(value), where, depth)
        return CORBA.Any(N._tc_PropertySeq, _properties(value, where, depth=depth))
    name = _scalar_name(value, where)
    kind, check = _SCALARS[name]
    return CORBA.Any(_TYPECODES[kind], check(value, where))


def _scalar_name(value: Any, where: str) -> str:
    """The IDL type a plain JSON scalar maps to."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        for name in _INTEGERS:
            low, high = _RANGES[name]
            if low <= value <= high:
                return name
        kind = "long long" if value < 0 else "unsigned long long"
        raise JsonEventError(where, f"{_show(value)} does not fit {kind}")
    if isinstance(value, float):
        if not math.isfinite(value):  # 1e400 parses as inf
            raise JsonEventError(where, "a number out of the range of double")
        return "double"
    if isinstance(value, str):
        return "string"
    raise JsonEventError(where, f"no CORBA type for {_show(value)}")


def _list_name(values: list[Any]) -> str | None:
    """The scalar type every item of a plain list shares, or None (then: sequence<any>)."""
    if not values or not all(isinstance(v, (bool, int, float, str)) for v in values):
        return None
    kinds = {type(v) for v in values}
    if kinds == {bool}:
        return "boolean"
    if kinds == {float} and all(math.isfinite(v) for v in values):
        return "double"
    if kinds == {str}:
        return "string"
    if kinds == {int}:
        low, high = min(values), max(values)
        for name in _INTEGERS:
            if _RANGES[name][0] <= low and high <= _RANGES[name][1]:
                return name
    return None


def _list(values: list[Any], where: str, depth: int) -> Any:
    name = _list_name(values)
    if name is None:
        items = [any_from_json(v, f"{where}[{i}]", depth) for i, v in enumerate(values)]
        return CORBA.Any(_sequence_tc(D.ANY), items)
    return _sequence(name, values, where)


def _sequence(name: str, values: Any, where: str) -> Any:
    if not _is_list(values):
        raise JsonEventError(where, f"expected a list for sequence<{name}>, got {_show(values)}")
    kind, check = _SCALARS[name]
    items = [check(v, f"{where}[{i}]") for i, v in enumerate(values)]
    if kind == D.ULONGLONG:
        for i, item in enumerate(items):
            if item >= _BIG_ULONGLONG:  # docs/orb.md, "The wheel's defects"
                raise JsonEventError(
                    f"{where}[{i}]", f"{item} in a sequence<unsigned long long>: omniORBpy "
                    f"4.3.3 cannot marshal an item >= 2**63 (write the list as "
                    f'{{"$type": "sequence<any>", "value": [...]}})')
    if kind == D.OCTET:
        return CORBA.Any(_sequence_tc(kind), bytes(items))  # omniORB's sequence<octet>
    if kind == D.CHAR:
        return CORBA.Any(_sequence_tc(kind), "".join(items))  # and sequence<char>
    return CORBA.Any(_sequence_tc(kind), items)


def _is_explicit(value: Any) -> bool:
    if isinstance(value, _Pairs):
        return [key for key, _ in value] in (["$type", "value"], ["value", "$type"])
    return isinstance(value, dict) and set(value) == {"$type", "value"}


def _explicit(members: dict[str, Any], where: str, depth: int) -> Any:
    """``{"$type": T, "value": V}``: V as type T."""
    name, value = members["$type"], members["value"]
    if not isinstance(name, str):
        raise JsonEventError(where, f"$type must be a string, got {_show(name)}")
    if name in _SCALARS:
        kind, check = _SCALARS[name]
        return CORBA.Any(_TYPECODES[kind], check(value, where))
    if name == "sequence<any>":
        if not _is_list(value):
            raise JsonEventError(where, f"expected a list for sequence<any>, got {_show(value)}")
        items = [any_from_json(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
        return CORBA.Any(_sequence_tc(D.ANY), items)
    if name.startswith("sequence<") and name.endswith(">") and name[9:-1] in _SCALARS:
        return _sequence(name[9:-1], value, where)
    if name == "PropertySeq":
        return CORBA.Any(N._tc_PropertySeq, _properties(value, where, depth=depth + 1))
    raise JsonEventError(where, f"unknown $type {_show(name)} (one of: {', '.join(_TYPE_NAMES)})")


# -- the header's standard fields: their standard types, values the channel takes ---------------
# Section 2.2 (Table 2-4) and 2.5.5; the channel's checks are channel/event.py's apply_qos.

def _standard(value: Any, where: str, type_name: str) -> Any:
    """The value of a standard field, given plain or as ``$type`` of its own type."""
    if not _is_explicit(value):
        return value
    members = dict(value)
    if members["$type"] != type_name:
        raise JsonEventError(where, f"a standard header field of type {type_name}, not "
                                    f"$type {_show(members['$type'])} (the channel refuses "
                                    f"other types with BAD_QOS)")
    return members["value"]


def _priority(value: Any, where: str) -> Any:
    number = _SCALARS["short"][1](_standard(value, where, "short"), where)
    if not -32767 <= number <= 32767:  # section 2.5.5.4: -32767 (lowest) .. 32767
        raise JsonEventError(where, f"{number} is outside the Priority range -32767..32767")
    return CORBA.Any(CORBA.TC_short, number)


def _reliability(value: Any, where: str) -> Any:
    number = _SCALARS["short"][1](_standard(value, where, "short"), where)
    if number not in (0, 1):  # section 2.5.5.1: BestEffort or Persistent
        raise JsonEventError(where, f"{number} is not an EventReliability (0: BestEffort, "
                                    f"1: Persistent)")
    return CORBA.Any(CORBA.TC_short, number)


def _timet(value: Any, where: str) -> Any:
    number = _SCALARS["unsigned long long"][1](_standard(value, where, "unsigned long long"),
                                               where)
    return CORBA.Any(TimeBase._tc_TimeT, number)


_ISO: Final = re.compile(r"^(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d)(?:\.(\d{1,7}))?"
                         r"(Z|[+-]\d\d:?\d\d)?$")
_UNIX_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
#: The span of times read and written as ISO-8601: the TimeBase epoch (1582-10-15T00:00:00Z)
#: to 9999-12-31T23:59:59.9999999Z, in Unix seconds and in TimeT.
_FIRST_SECOND: Final = -TIMET_EPOCH_OFFSET
_LAST_SECOND: Final = 253402300799
_MAX_TIMET: Final = (_LAST_SECOND + TIMET_EPOCH_OFFSET + 1) * _UNITS - 1
_SPAN: Final = "1582-10-15T00:00:00Z (the TimeBase epoch) and 9999-12-31T23:59:59Z"


def _utct(value: Any, where: str) -> Any:
    """A TimeBase::UtcT from an ISO-8601 time (UTC unless it says) or Unix seconds."""
    if _is_explicit(value):
        raise JsonEventError(where, "a standard header field of type TimeBase::UtcT: write "
                                    "an ISO-8601 time or Unix seconds, not a $type")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # Compared before any conversion: 1e305 or a 310-digit integer is no time.
        if not (isinstance(value, int) or math.isfinite(value)) \
                or not _FIRST_SECOND <= value < _LAST_SECOND + 1:
            raise JsonEventError(where, f"{_show(value)} (Unix seconds) is not between {_SPAN}")
        timet = seconds_to_timet(value)
    elif isinstance(value, str) and (match := _ISO.match(value)) is not None:
        try:
            when = datetime.datetime.fromisoformat(match.group(1) + (match.group(3) or "Z"))
        except ValueError as exc:
            raise JsonEventError(where, f"not a time: {exc}") from None
        seconds = (when - _UNIX_EPOCH) // datetime.timedelta(seconds=1)
        fraction = int((match.group(2) or "").ljust(7, "0"))
        timet = (seconds + TIMET_EPOCH_OFFSET) * _UNITS + fraction
    else:
        raise JsonEventError(where, f"expected an ISO-8601 time or Unix seconds, got "
                                    f"{_show(value)}")
    if not 0 <= timet <= _MAX_TIMET:
        raise JsonEventError(where, f"{_show(value)} is not between {_SPAN}")
    return CORBA.Any(TimeBase._tc_UtcT, TimeBase.UtcT(timet, 0, 0, 0))


_HEADER_FIELDS: Final[dict[str, Callable[[Any, str], Any]]] = {
    "Priority": _priority, "EventReliability": _reliability, "Timeout": _timet,
    "StartTime": _utct, "StopTime": _utct,
}


# -- helpers ----------------------------------------------------------------------------------

def _text(value: str, where: str, wide: bool = False) -> str:
    """A string a CORBA string carries: no NUL, only ISO-8859-1 (omniORB's native char
    code set; anything else is DATA_CONVERSION when marshalled). ``wide``: suggest
    a wstring for other text."""
    if "\0" in value:
        raise JsonEventError(where, "a CORBA string cannot hold NUL (\\u0000)")
    try:
        value.encode("latin-1")
    except UnicodeEncodeError as exc:
        _no_surrogate(value, where)
        hint = ' (for other text write {"$type": "wstring", "value": ...})' if wide else ""
        raise JsonEventError(where, f"{_character(value[exc.start])} is not in ISO-8859-1, "
                                    f"the character set of a CORBA string{hint}") from None
    return value


def _no_surrogate(value: str, where: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise JsonEventError(where, "holds a lone surrogate (not UTF-8)") from None


def _character(char: str) -> str:
    """``"€" (U+20AC)``: a character as an error message shows it."""
    code = f"U+{ord(char):04X}"
    return f"{json.dumps(char, ensure_ascii=False)} ({code})" if char.isprintable() else code


def _is_list(value: Any) -> TypeGuard[list[Any]]:
    """A JSON array (not an object as :func:`loads` reads it)."""
    return isinstance(value, list) and not isinstance(value, _Pairs)


def _join(where: str, key: str) -> str:
    return f"{where}.{_key(key)}" if where else _key(key)


_PLAIN_KEY: Final = re.compile(r"[\w$@/:+-]{1,80}")
_KEY_CUT: Final = 80


def _key(key: str) -> str:
    """A key as an error's field shows it: as is when plain, else quoted (JSON-style,
    escaped if unprintable) and cut, so that the message stays one short line."""
    if _PLAIN_KEY.fullmatch(key):
        return key
    if len(key) > _KEY_CUT:
        key = key[:_KEY_CUT - 1] + "\u2026"
    return json.dumps(key, ensure_ascii=not key.isprintable())


def _show(value: Any) -> str:
    """A value as the error message shows it (long ones cut)."""
    if isinstance(value, _Pairs):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, int) and value.bit_length() > 256:
        return f"an integer of {value.bit_length()} bits"
    if value is None:
        return "null"
    text = json.dumps(value) if isinstance(value, (bool, str, float)) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."
