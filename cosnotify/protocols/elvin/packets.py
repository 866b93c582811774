"""Elvin 4 packets (seed section 7.4) and their XDR encoding (section 8.2.3).

Strategy: each packet of §7.1's table is a frozen attrs class whose fields
are those of its §7.4 struct, in order; :data:`LAYOUT` gives, per pkt_id of
§8.2.3.1, the class and the kind of each field, so one generic reader and
one generic writer (driven by that table of data) cover every packet. The
kinds are the §7.4 types: ``id32`` (xid and other 32-bit ids), ``id64``,
``uint8``, ``uint16``, ``bool``, ``string``, ``nvs`` (NameValue[]),
``values`` (Value[]), ``keys`` (Keys), ``id64s`` (id64[]), ``strings``
(string[]) and ``subast`` (SubAST, §8.2.3.4).

Values: an int32 is a Python ``int``, an int64 an
:class:`~cosnotify.filter.elvin4.values.Int64`, a real64 a ``float``, a
string a ``str`` and an opaque ``bytes`` -- the ELVIN4 grammar's own
representation, so a decoded notification can be matched as it is.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, Final

import attrs

from cosnotify.filter.elvin4.values import Int64
from cosnotify.protocols.elvin.xdr import (
    ElvinCodecError,
    Reader,
    w_bool,
    w_int32,
    w_int64,
    w_opaque,
    w_real64,
    w_string,
    w_uint32,
)

__all__ = ["LAYOUT", "ConfConn", "ConnRply", "ConnRqst", "Disconn", "DisconnRply",
           "DisconnRqst", "DropWarn", "KeySetList", "Nack", "NotifyDeliver", "NotifyEmit",
           "Packet", "QnchAddRqst", "QnchDelRqst", "QnchModRqst", "QnchRply", "QosRply",
           "QosRqst", "SecRply", "SecRqst", "SubAST", "SubAddNotify", "SubAddRqst",
           "SubDelNotify", "SubDelRqst", "SubModNotify", "SubModRqst", "SubRply", "TestConn",
           "UNotify", "Value", "decode_body", "encode_attributes", "encode_body"]

Value = int | float | str | bytes
NameValues = tuple[tuple[str, Value], ...]

#: value_typecode (§8.2.3.2).
XDR_INT32, XDR_INT64, XDR_REAL64, XDR_STRING, XDR_OPAQUE = 1, 2, 3, 4, 5
#: How deep a SubAST may nest when read (the ELVIN4 grammar's ast.MAX_NESTING).
MAX_AST_DEPTH: Final = 64
_ID64_MASK: Final = (1 << 64) - 1


@attrs.frozen
class KeySetList:
    """One key scheme's key sets (§7.4 ``struct Keys``)."""

    scheme: int
    key_sets: tuple[tuple[bytes, ...], ...]


Keys = tuple[KeySetList, ...]


@attrs.frozen
class SubAST:
    """A subscription syntax tree node (§7.4 ``union SubAST``, codes of §8.2.3.4):
    a leaf holds ``value``; an operator node its ``children``."""

    code: int
    value: Any = None
    children: tuple[SubAST, ...] = ()


# -- the packets of §7.4, in the order of §7.1 ------------------------------------------------
@attrs.frozen
class UNotify:
    client_major_version: int
    client_minor_version: int
    attributes: NameValues
    deliver_insecure: bool
    keys: Keys = ()


@attrs.frozen
class Nack:
    xid: int
    error: int
    message: str
    args: tuple[Value, ...] = ()


@attrs.frozen
class ConnRqst:
    xid: int
    client_major_version: int
    client_minor_version: int
    options: NameValues = ()
    nfn_keys: Keys = ()
    sub_keys: Keys = ()


@attrs.frozen
class ConnRply:
    xid: int
    options: NameValues = ()


@attrs.frozen
class DisconnRqst:
    xid: int


@attrs.frozen
class DisconnRply:
    xid: int


@attrs.frozen
class Disconn:
    reason: int
    args: str = ""


@attrs.frozen
class SecRqst:
    xid: int
    add_nfn_keys: Keys = ()
    del_nfn_keys: Keys = ()
    add_sub_keys: Keys = ()
    del_sub_keys: Keys = ()


@attrs.frozen
class SecRply:
    xid: int


@attrs.frozen
class NotifyEmit:
    attributes: NameValues
    deliver_insecure: bool = True
    keys: Keys = ()


@attrs.frozen
class NotifyDeliver:
    attributes: NameValues
    secure_matches: tuple[int, ...] = ()
    insecure_matches: tuple[int, ...] = ()


@attrs.frozen
class SubAddRqst:
    xid: int
    expression: str
    accept_insecure: bool = True
    keys: Keys = ()


@attrs.frozen
class SubModRqst:
    xid: int
    subscription_id: int
    expression: str = ""
    accept_insecure: bool = True
    add_keys: Keys = ()
    del_keys: Keys = ()


@attrs.frozen
class SubDelRqst:
    xid: int
    subscription_id: int


@attrs.frozen
class SubRply:
    xid: int
    subscription_id: int


@attrs.frozen
class DropWarn:
    pass


@attrs.frozen
class TestConn:
    pass


@attrs.frozen
class ConfConn:
    pass


@attrs.frozen
class QosRqst:
    xid: int
    options: NameValues = ()


@attrs.frozen
class QosRply:
    xid: int
    options: NameValues = ()


@attrs.frozen
class QnchAddRqst:
    xid: int
    names: tuple[str, ...]
    deliver_insecure: bool = True
    keys: Keys = ()


@attrs.frozen
class QnchModRqst:
    xid: int
    quench_id: int
    names_add: tuple[str, ...] = ()
    names_del: tuple[str, ...] = ()
    deliver_insecure: bool = True
    add_keys: Keys = ()
    del_keys: Keys = ()


@attrs.frozen
class QnchDelRqst:
    xid: int
    quench_id: int


@attrs.frozen
class QnchRply:
    xid: int
    quench_id: int


@attrs.frozen
class SubAddNotify:
    secure_quench_ids: tuple[int, ...]
    insecure_quench_ids: tuple[int, ...]
    term_id: int
    sub_expr: SubAST


@attrs.frozen
class SubModNotify:
    secure_quench_ids: tuple[int, ...]
    insecure_quench_ids: tuple[int, ...]
    term_id: int
    sub_expr: SubAST


@attrs.frozen
class SubDelNotify:
    quench_ids: tuple[int, ...]
    term_id: int


Packet = (UNotify | Nack | ConnRqst | ConnRply | DisconnRqst | DisconnRply | Disconn
          | SecRqst | SecRply | NotifyEmit | NotifyDeliver | SubAddRqst | SubModRqst
          | SubDelRqst | SubRply | DropWarn | TestConn | ConfConn | QosRqst | QosRply
          | QnchAddRqst | QnchModRqst | QnchDelRqst | QnchRply | SubAddNotify | SubModNotify
          | SubDelNotify)

#: pkt_id (§8.2.3.1) -> (packet class, field kinds in §7.4's order).
LAYOUT: Final[dict[int, tuple[type[Any], tuple[str, ...]]]] = {
    32: (UNotify, ("uint8", "uint8", "nvs", "bool", "keys")),
    48: (Nack, ("id32", "uint16", "string", "values")),
    49: (ConnRqst, ("id32", "uint8", "uint8", "nvs", "keys", "keys")),
    50: (ConnRply, ("id32", "nvs")),
    51: (DisconnRqst, ("id32",)),
    52: (DisconnRply, ("id32",)),
    53: (Disconn, ("id32", "string")),
    54: (SecRqst, ("id32", "keys", "keys", "keys", "keys")),
    55: (SecRply, ("id32",)),
    56: (NotifyEmit, ("nvs", "bool", "keys")),
    57: (NotifyDeliver, ("nvs", "id64s", "id64s")),
    58: (SubAddRqst, ("id32", "string", "bool", "keys")),
    59: (SubModRqst, ("id32", "id64", "string", "bool", "keys", "keys")),
    60: (SubDelRqst, ("id32", "id64")),
    61: (SubRply, ("id32", "id64")),
    62: (DropWarn, ()),
    63: (TestConn, ()),
    64: (ConfConn, ()),
    70: (QosRqst, ("id32", "nvs")),
    71: (QosRply, ("id32", "nvs")),
    80: (QnchAddRqst, ("id32", "strings", "bool", "keys")),
    81: (QnchModRqst, ("id32", "id64", "strings", "strings", "bool", "keys", "keys")),
    82: (QnchDelRqst, ("id32", "id64")),
    83: (QnchRply, ("id32", "id64")),
    84: (SubAddNotify, ("id64s", "id64s", "id64", "subast")),
    85: (SubModNotify, ("id64s", "id64s", "id64", "subast")),
    86: (SubDelNotify, ("id64s", "id64")),
}
#: packet class -> pkt_id.
PACKET_ID: Final[dict[type[Any], int]] = {cls: pid for pid, (cls, _) in LAYOUT.items()}
#: Packets a client sends that carry an xid first (§7.4: "it MUST include transaction
#: identifier (xid)").
_XID_FIRST: Final = frozenset(pid for pid, (_, kinds) in LAYOUT.items()
                              if kinds[:1] == ("id32",) and pid != 53)


# -- reading ------------------------------------------------------------------------------------
def _value(r: Reader) -> Value:
    code = r.uint32()
    if code == XDR_STRING:
        return r.string()
    if code == XDR_INT32:
        return r.int32()
    if code == XDR_INT64:
        return Int64(r.int64())
    if code == XDR_REAL64:
        return r.real64()
    if code == XDR_OPAQUE:
        return r.opaque()
    raise r.error(f"unknown value type code {code} (§8.2.3.2: 1 to 5)", at=r.pos - 4)


def _nvs_checked(r: Reader) -> NameValues:
    n = r.count(12, "a NameValue array")
    out = []
    for _ in range(n):
        name = r.string()
        out.append((name, _value(r)))
    return tuple(out)


_u32 = struct.Struct(">I").unpack_from
_i32 = struct.Struct(">i").unpack_from
_i64 = struct.Struct(">q").unpack_from
_f64 = struct.Struct(">d").unpack_from


def _nvs(r: Reader) -> NameValues:
    """NameValue[] (§8.2.3.5), the hot path of NotifyEmit: read optimistically without
    the per-value checks; on anything unusual, read again with them for the exact error."""
    data, start = r.data, r.pos
    try:
        (n,) = _u32(data, start)
        pos = start + 4
        if n * 12 > len(data) - pos:
            raise ValueError
        out = []
        for _ in range(n):
            (size,) = _u32(data, pos)
            end = pos + 4 + size
            if end > len(data):
                raise ValueError
            name = data[pos + 4:end].decode("utf-8")
            pos = end + (-size & 3)
            (code,) = _u32(data, pos)
            pos += 4
            if code == 4:
                (size,) = _u32(data, pos)
                end = pos + 4 + size
                if end > len(data):
                    raise ValueError
                value: Value = data[pos + 4:end].decode("utf-8")
                pos = end + (-size & 3)
            elif code == 1:
                (value,) = _i32(data, pos)
                pos += 4
            elif code == 2:
                value = Int64(_i64(data, pos)[0])
                pos += 8
            elif code == 3:
                (value,) = _f64(data, pos)
                pos += 8
            elif code == 5:
                (size,) = _u32(data, pos)
                end = pos + 4 + size
                if end > len(data):
                    raise ValueError
                value = bytes(data[pos + 4:end])
                pos = end + (-size & 3)
            else:
                raise ValueError
            if "\0" in name or (type(value) is str and "\0" in value):
                raise ValueError
            out.append((name, value))
        if pos > len(data):
            raise ValueError
    except (ValueError, struct.error):  # UnicodeDecodeError is a ValueError
        r.pos = start
        return _nvs_checked(r)
    r.pos = pos
    return tuple(out)


def _values(r: Reader) -> tuple[Value, ...]:
    return tuple(_value(r) for _ in range(r.count(8, "a Value array")))


def _keys(r: Reader) -> Keys:
    lists = []
    for _ in range(r.count(8, "a key set list")):
        scheme = r.uint32()
        sets = tuple(tuple(r.opaque() for _ in range(r.count(4, "a key set")))
                     for _ in range(r.count(4, "the key sets of a scheme")))
        lists.append(KeySetList(scheme, sets))
    return tuple(lists)


_LEAVES: Final[dict[int, Callable[[Reader], Any]]] = {
    1: Reader.string, 2: Reader.int32, 3: lambda r: Int64(r.int64()), 4: Reader.real64,
    5: Reader.string}
_NODES: Final = frozenset([*range(8, 14), *range(16, 34), *range(40, 46), *range(48, 53),
                           56, 57, 58, 64, 65, 66])


def _subast(r: Reader, depth: int = 0) -> SubAST:
    if depth > MAX_AST_DEPTH:
        raise r.error(f"SubAST nested deeper than {MAX_AST_DEPTH}")
    code = r.uint32()
    if code == 0:
        return SubAST(0)
    leaf = _LEAVES.get(code)
    if leaf is not None:
        return SubAST(code, leaf(r))
    if code not in _NODES:
        raise r.error(f"unknown SubAST type code {code} (§8.2.3.4)", at=r.pos - 4)
    n = r.count(4, "SubAST children")
    return SubAST(code, None, tuple(_subast(r, depth + 1) for _ in range(n)))


def _xid(r: Reader) -> int:
    r.xid = r.uint32()
    return r.xid


_READ: Final[dict[str, Callable[[Reader], Any]]] = {
    "id32": Reader.uint32,
    "id64": lambda r: r.int64() & _ID64_MASK,
    "uint8": lambda r: r.bounded(0xFF, "uint8"),
    "uint16": lambda r: r.bounded(0xFFFF, "uint16"),
    "bool": Reader.boolean,
    "string": Reader.string,
    "nvs": _nvs,
    "values": _values,
    "keys": _keys,
    "id64s": lambda r: tuple(r.int64() & _ID64_MASK for _ in range(r.count(8, "an id64 array"))),
    "strings": lambda r: tuple(r.string() for _ in range(r.count(4, "a string array"))),
    "subast": _subast,
}
_PLANS: Final = {pid: (cls, tuple(_READ[k] for k in kinds)) for pid, (cls, kinds) in
                 LAYOUT.items()}


def decode_body(data: bytes) -> Packet:
    """One packet (without its frame header, §8.2.3.1); ElvinCodecError if malformed."""
    r = Reader(data)
    pid = r.int32()
    plan = _PLANS.get(pid)
    if plan is None:
        raise ElvinCodecError(f"unknown packet type {pid} (§8.2.3.1)", offset=0, packet_type=pid)
    cls, readers = plan
    try:
        if pid in _XID_FIRST:
            fields = [_xid(r), *(read(r) for read in readers[1:])]
        else:
            fields = [read(r) for read in readers]
        if r.pos != len(data):
            raise r.error(f"{len(data) - r.pos} bytes after the end of a {cls.__name__}")
    except ElvinCodecError as exc:
        exc.packet_type = pid
        raise
    packet: Packet = cls(*fields)
    return packet


# -- writing ------------------------------------------------------------------------------------
def _w_value(value: Value, out: list[bytes]) -> None:
    kind = type(value)
    if kind is str:
        out += (b"\0\0\0\4", w_string(value))  # type: ignore[arg-type]
    elif kind is int or kind is bool:
        out += (b"\0\0\0\1", w_int32(int(value)))
    elif kind is Int64:
        out += (b"\0\0\0\2", w_int64(value))  # type: ignore[arg-type]
    elif kind is float:
        out += (b"\0\0\0\3", w_real64(value))  # type: ignore[arg-type]
    elif kind is bytes:
        out += (b"\0\0\0\5", w_opaque(value))  # type: ignore[arg-type]
    else:
        raise TypeError(f"not an Elvin value: {value!r}")


def _w_nvs(items: NameValues, out: list[bytes]) -> None:
    out.append(w_uint32(len(items)))
    for name, value in items:
        out.append(w_string(name))
        _w_value(value, out)


def encode_attributes(items: NameValues) -> bytes:
    """A NameValue array's XDR bytes (§8.2.3.5), e.g. to seal a notification's content."""
    out: list[bytes] = []
    _w_nvs(items, out)
    return b"".join(out)


def _w_values(values: tuple[Value, ...], out: list[bytes]) -> None:
    out.append(w_uint32(len(values)))
    for value in values:
        _w_value(value, out)


def _w_keys(keys: Keys, out: list[bytes]) -> None:
    out.append(w_uint32(len(keys)))
    for ksl in keys:
        out += (w_uint32(ksl.scheme), w_uint32(len(ksl.key_sets)))
        for key_set in ksl.key_sets:
            out.append(w_uint32(len(key_set)))
            out += (w_opaque(k) for k in key_set)


def _w_subast(node: SubAST, out: list[bytes]) -> None:
    out.append(w_uint32(node.code))
    code = node.code
    if code == 0:
        return
    if code in (1, 5):
        out.append(w_string(node.value))
    elif code == 2:
        out.append(w_int32(node.value))
    elif code == 3:
        out.append(w_int64(node.value))
    elif code == 4:
        out.append(w_real64(node.value))
    else:
        out.append(w_uint32(len(node.children)))
        for child in node.children:
            _w_subast(child, out)


_WRITE: Final[dict[str, Callable[[Any, list[bytes]], None]]] = {
    "id32": lambda v, out: out.append(w_uint32(v)),
    "id64": lambda v, out: out.append(w_int64(v - (1 << 64) if v >> 63 else v)),
    "uint8": lambda v, out: out.append(w_uint32(v)),
    "uint16": lambda v, out: out.append(w_uint32(v)),
    "bool": lambda v, out: out.append(w_bool(v)),
    "string": lambda v, out: out.append(w_string(v)),
    "nvs": _w_nvs,
    "values": _w_values,
    "keys": _w_keys,
    "id64s": lambda v, out: out.extend(
        [w_uint32(len(v)), *(w_int64(i - (1 << 64) if i >> 63 else i) for i in v)]),
    "strings": lambda v, out: out.extend([w_uint32(len(v)), *(w_string(s) for s in v)]),
    "subast": _w_subast,
}
_WRITERS: Final = {cls: (w_uint32(pid), tuple(zip(attrs.fields(cls), (_WRITE[k] for k in kinds),
                                                  strict=True)))
                   for pid, (cls, kinds) in LAYOUT.items()}


def encode_body(packet: Packet) -> bytes:
    """The XDR bytes of ``packet``, starting with its pkt_id (no frame header)."""
    head, plan = _WRITERS[type(packet)]
    out = [head]
    for field, write in plan:
        write(getattr(packet, field.name), out)
    return b"".join(out)
