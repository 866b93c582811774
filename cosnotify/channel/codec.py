"""CORBA values as bytes for the store: events, Anys, property lists, references.

Strategy: the store keeps opaque bytes (cosnotify/store); this module makes
them, with omniORB's own marshalling (``cdrMarshal``: a CDR encapsulation,
byte order included), so a stored value reads back exactly as it went in,
TypeCodes from the wire included. An event record is a small fixed header
(the per-event QoS resolved at entry: arrival, priority, lifetime, StopTime,
StartTime, with where priority and lifetime came from) followed by the CDR of the StructuredEvent or the Any. Topology
records are JSON, whose CORBA values (QoS and admin properties, mapping
filter values) are base64 CDR.

``cdrMarshal`` needs an initialised ORB. A process that uses a store without
an ORB of its own gets one initialised on first use, listening on loopback
only (``ensure_orb``); an application should initialise its ORB before
making a factory with a store, or its options are ignored (omniORB allows
one ORB per process).

References are stored as their IOR strings and read back with
``string_to_object``; an in-process client (a plain Python object) has no
reference to store, so its connection is not persistent (docs/persistence.md).
"""

from __future__ import annotations

import base64
import json
import math
import struct
from typing import Any

import _omnipy  # omniORBpy's C module (encode_event)
import omniORB
from omniORB import CORBA

import CosNotification

from cosnotify.corba.marshal import REASON

__all__ = [
    "decode_any",
    "decode_event",
    "decode_properties",
    "decode_value",
    "dumps",
    "encode_any",
    "encode_event",
    "encode_properties",
    "ensure_orb",
    "loads",
    "reference_from_text",
    "reference_text",
]

_TC_STRUCTURED = CosNotification._tc_StructuredEvent
_TC_PROPERTIES = CosNotification._tc_PropertySeq
#: Event record header: version, flags, arrival, priority and its source, lifetime
#: and its source, StopTime, StartTime (NaN: none).
_HEADER = struct.Struct("<BBdhBdBdd")
_VERSION = 2
#: Version 1 (the first commits of the store): version, flags, arrival, priority,
#: deadline, start; flags 2 and 4 say whether deadline and start are set.
_HEADER_1 = struct.Struct("<BBdhdd")
_STRUCTURED = 1
_TYPED = 2  # version 2: the event is a typed call (channel.event.typed_sequence)
_pack = _HEADER.pack
_marshal = _omnipy.cdrMarshal  # (descriptor, value, endian): what omniORB.cdrMarshal calls
_ALL_ONES = b"\xff" * 8
_unmarshal = _omnipy.cdrUnmarshal  # (descriptor, bytes, endian): omniORB.cdrUnmarshal's
_D_STRUCTURED = _TC_STRUCTURED._d
_D_ANY = CORBA.TC_any._d
_NAN = math.nan


def ensure_orb() -> Any:
    """The process's ORB, initialised on loopback if the process has none yet."""
    orb = omniORB.orb
    if orb is None:
        orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)
    return orb


# -- values --------------------------------------------------------------------------------


def encode_any(value: Any) -> bytes:
    ensure_orb()
    return bytes(omniORB.cdrMarshal(CORBA.TC_any, value))


def decode_any(data: bytes) -> Any:
    ensure_orb()
    return omniORB.cdrUnmarshal(CORBA.TC_any, data)


def encode_properties(properties: list[Any]) -> bytes:
    ensure_orb()
    return bytes(omniORB.cdrMarshal(_TC_PROPERTIES, list(properties)))


def decode_properties(data: bytes) -> list[Any]:
    ensure_orb()
    return list(omniORB.cdrUnmarshal(_TC_PROPERTIES, data))


def reference_text(reference: Any) -> str | None:
    """The IOR of an object reference; None for anything else (an in-process object)."""
    if not isinstance(reference, CORBA.Object):
        return None
    return str(ensure_orb().object_to_string(reference))


def reference_from_text(text: str | None) -> Any:
    return None if text is None else ensure_orb().string_to_object(text)


# -- events ----------------------------------------------------------------------------------


def encode_event(event: Any) -> bytes:
    """``event`` (a channel.event.Event) with the per-event QoS resolved at entry
    (priority and lifetime with where they came from, StopTime, StartTime), so a
    proxy can resolve its own copy again when it reads it back (durable.py).

    Every persistent or retained event passes here, so it calls omniORBpy's C
    marshaller directly: ``omniORB.cdrMarshal`` is that call behind a check of
    the ORB (done here once) and of the TypeCode's class (ours)."""
    if omniORB.orb is None:
        ensure_orb()
    body: bytes
    try:
        if event.is_structured:
            flags = _STRUCTURED | (_TYPED if event.typed is not None else 0)
            body = _marshal(_D_STRUCTURED, event.structured, -1)
        else:
            flags = 0
            body = _marshal(_D_ANY, event.any, -1)
    except SystemError:
        if not event.holds_unmarshallable():
            raise
        body = _ALL_ONES  # omniORBpy's defect, below
    # omniORBpy 4.3.3 writes an unsigned long long >= 2**63 of a sequence or array as
    # 2**64 - 1, often without an error (docs/orb.md): eight 0xff bytes are then in the
    # body. Only a body holding them is walked (rare: 2**64 - 1, -1 as long long).
    if _ALL_ONES in body and event.holds_unmarshallable():
        raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO, f"not encoded: the event holds {REASON}")
    lifetime, stop, start = event.lifetime, event.stop_time, event.start
    return _pack(_VERSION, flags, event.arrival, event.priority, event.priority_source,
                 _NAN if lifetime is None else lifetime, event.lifetime_source,
                 _NAN if stop is None else stop, _NAN if start is None else start) + body


def decode_event(data: bytes) -> tuple[Any, dict[str, Any]]:
    """(StructuredEvent or Any, the Event attributes encode_event kept) of a record;
    ``typed``: whether it was a typed call (its filters' sequence is made again)."""
    ensure_orb()
    if data[:1] == b"\x01":
        version, flags, arrival, priority, deadline, start = _HEADER_1.unpack_from(data)
        priority_source, lifetime, lifetime_source = 2, math.nan, 2
        stop = deadline if flags & 2 else math.nan
        start = start if flags & 4 else math.nan
        body = data[_HEADER_1.size:]
    else:
        (version, flags, arrival, priority, priority_source, lifetime, lifetime_source, stop,
         start) = _HEADER.unpack_from(data)
        if version != _VERSION:
            raise ValueError(f"event record version {version} is not {_VERSION}")
        body = data[_HEADER.size:]
    tc = _TC_STRUCTURED if flags & _STRUCTURED else CORBA.TC_any
    value = omniORB.cdrUnmarshal(tc, body)
    return value, {"arrival": arrival, "typed": version == _VERSION and bool(flags & _TYPED),
                   "priority": priority,
                   "priority_source": priority_source, "lifetime": _none(lifetime),
                   "lifetime_source": lifetime_source, "stop_time": _none(stop),
                   "start": _none(start)}


def decode_value(data: bytes) -> Any:
    """The StructuredEvent or Any of a record, without the attributes
    :func:`decode_event` also gives (a history query reads these from its rows)."""
    if omniORB.orb is None:
        ensure_orb()
    version, flags = data[0], data[1]
    if version == 1:
        body = data[_HEADER_1.size:]
    elif version == _VERSION:
        body = data[_HEADER.size:]
    else:
        raise ValueError(f"event record version {version} is not {_VERSION}")
    return _unmarshal(_D_STRUCTURED if flags & _STRUCTURED else _D_ANY, body, -1)


def _none(value: float) -> float | None:
    return None if math.isnan(value) else value


# -- JSON with CORBA values ----------------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def dumps(record: dict[str, Any]) -> bytes:
    """A topology record as JSON; ``bytes`` values become ``{"b64": ...}``."""
    return json.dumps(record, default=_default, separators=(",", ":"), sort_keys=True).encode()


def _default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return {"b64": _b64(bytes(value))}
    raise TypeError(f"cannot store {value!r}")


def loads(data: bytes) -> dict[str, Any]:
    def hook(obj: dict[str, Any]) -> Any:
        if set(obj) == {"b64"}:
            return base64.b64decode(obj["b64"])
        return obj

    result = json.loads(data.decode(), object_hook=hook)
    if not isinstance(result, dict):
        raise TypeError("a topology record is not a JSON object")
    return result
