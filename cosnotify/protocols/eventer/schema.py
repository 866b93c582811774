"""The ``HatEventer`` SBS module: hat-event's published schema, and a bounds check for it.

Strategy: the messages are hat-event 0.8.17's own (``hat/event/common/sbs_repo.json``,
the module the Eventer seed prints under "Chatter messages"), written out here in
SBS text so the service needs only its runtime dependencies ``hat-sbs`` and
``hat-chatter`` (whose ``sbs_repo`` brings the ``Hat`` module: ``Hat.Msg``, the
Chatter frame, and ``Hat.Data``, an ``sbs`` payload). A test checks this text against
hat-event's own repository, definition by definition.

hat-sbs decodes with its C serializer, which allocates an ``Array``'s list from the
count before it reads one element: a 5-byte count of 2**31 costs seconds of CPU and
gigabytes of address space for a 10-byte frame. :func:`check` walks the same
schema (hat-sbs's evaluated types) over the bytes first, cheaply, and refuses a
count larger than the bytes left (every array element of these modules takes at
least one byte), a length past the end, an integer longer than
:data:`MAX_INTEGER_BYTES`, an unknown choice, and more than :data:`MAX_ITEMS`
array items in one message; only then does hat-sbs decode. The last bounds
the decode's time: hat-sbs spends ~1-4 us per item (a list or a dict made)
in one C call that holds the GIL, so a frame of a million one-byte items
(an empty EventType each) held the service's loop -- every front end's --
for about a second.
The walk is generated code, one function per message type (the schema
unrolled into loops and branches), ~0.6 us per registered event; the
closures of :func:`_compile` are the reference it is tested against.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from hat import chatter, sbs
from hat.sbs import common as T

__all__ = ["HAT_EVENTER", "MAX_INTEGER_BYTES", "MAX_ITEMS", "REPOSITORY", "SchemaError",
           "check", "integer", "walk"]

#: The HatEventer module (the Eventer seed's "Chatter messages"; hat-event 0.8.17).
HAT_EVENTER = """module HatEventer

MsgSubscribe = Array(EventType)

MsgNotify = Array(Event)

MsgRegisterReq = Array(RegisterEvent)

MsgRegisterRes = Array(Choice {
    event:    Event
    failure:  None
})

MsgQueryReq = QueryData

MsgQueryRes = Array(Event)

Timestamp = Record {
    s:   Integer
    us:  Integer
}

EventId = Record {
    server:    Integer
    session:   Integer
    instance:  Integer
}

Order = Choice {
    descending:  None
    ascending:   None
}

OrderBy = Choice {
    timestamp:        None
    sourceTimestamp:  None
}

EventType = Array(String)

EventPayload = Choice {
    binary:  Bytes
    json:    String
    sbs:     Hat.Data
}

Event = Record {
    id:               EventId
    type:             EventType
    timestamp:        Timestamp
    sourceTimestamp:  Optional(Timestamp)
    payload:          Optional(EventPayload)
}

RegisterEvent = Record {
    type:             EventType
    sourceTimestamp:  Optional(Timestamp)
    payload:          Optional(EventPayload)
}

QueryData = Record {
    serverId:           Optional(Integer)
    ids:                Optional(Array(EventId))
    types:              Optional(Array(EventType))
    tFrom:              Optional(Timestamp)
    tTo:                Optional(Timestamp)
    sourceTFrom:        Optional(Timestamp)
    sourceTTo:          Optional(Timestamp)
    payload:            Optional(EventPayload)
    order:              Order
    orderBy:            OrderBy
    uniqueType:         Boolean
    maxResults:         Optional(Integer)
}
"""

#: Chatter's modules (Hat, HatPing) and HatEventer, as hat-sbs evaluates them.
REPOSITORY = sbs.Repository(chatter.sbs_repo, HAT_EVENTER)

#: The longest integer accepted: 10 bytes of 7 bits hold any 64-bit value (ids,
#: timestamps); hat-sbs's C decoder keeps 64 bits of a longer one anyway.
MAX_INTEGER_BYTES = 10
#: The most array items (events, types, type segments, ids) one message may hold, all
#: arrays counted together: hat-sbs decodes 65,536 in ~0.1 s (module docstring).
MAX_ITEMS = 65_536


class SchemaError(ValueError):
    """The bytes do not hold a value of the type: ``what`` went wrong ``at`` an offset."""

    def __init__(self, what: str, at: int) -> None:
        super().__init__(f"{what} at byte {at}")
        self.what = what
        self.at = at


_REFS: dict[Any, Any] = REPOSITORY._refs
#: How deeply a generated check may nest (the modules here nest 6 deep).
_MAX_DEPTH = 32

#: A compiled check: (bytes, offset) -> the offset past one value; SchemaError if none.
Walker = Callable[[bytes, int], int]


def check(module: str | None, name: str, data: bytes) -> None:
    """Raise SchemaError unless ``data`` starts with a bounded value of ``module.name``
    (module docstring); hat-sbs may then decode it."""
    walker = _WALKERS.get((module, name))
    if walker is None:
        walker = _WALKERS[(module, name)] = _generated(T.Ref(module, name))
    try:
        walker(data, 0)
    except IndexError:  # a fixed-size value (boolean, choice index) past the end
        raise SchemaError("a value runs past the end", len(data)) from None


def walk(module: str | None, name: str, data: bytes, at: int) -> int:
    """The offset past the value of ``module.name`` at ``at`` (SchemaError if none)."""
    walker = _WALKERS.get((module, name))
    if walker is None:
        walker = _WALKERS[(module, name)] = _generated(T.Ref(module, name))
    try:
        return walker(data, at)
    except IndexError:
        raise SchemaError("a value runs past the end", len(data)) from None


def integer(data: bytes, at: int) -> tuple[int, int]:
    """The SBS integer at ``at`` and the offset past it (SchemaError if none)."""
    return _integer(data, at)


def _generated(ref: Any) -> Walker:
    """The walker of ``ref`` as one generated Python function: the schema's structure
    unrolled into nested loops and branches, integers of one byte read inline (the
    closures of :func:`_compile` cost a call per value: 3x slower). A recursive type
    (none in these modules) falls back to them. The :data:`MAX_ITEMS` budget is this
    walker's own (the closures check the structure only)."""
    lines = ["def walk(data, at):", "    n = len(data)", f"    budget = {MAX_ITEMS}"]
    names = itertools.count()

    def integer(target: str, pad: str) -> None:
        lines.extend([f"{pad}b = data[at]",
                      f"{pad}if b & 0x80:",
                      f"{pad}    {target} = (b & 0x3f) - (b & 0x40)",
                      f"{pad}    at += 1",
                      f"{pad}else:",
                      f"{pad}    {target}, at = _integer(data, at)"])

    def emit(t: Any, depth: int, stack: frozenset[Any]) -> None:
        pad = "    " * depth
        while isinstance(t, T.Ref):
            if t in stack or t not in _REFS:
                raise _Fallback
            stack = stack | {t}
            t = _REFS[t]
        if depth > _MAX_DEPTH:
            raise _Fallback
        if isinstance(t, T.NoneType):
            lines.append(f"{pad}pass")
        elif isinstance(t, T.BooleanType):
            lines.extend([f"{pad}if at >= n:", (f"{pad}    raise SchemaError('a boolean past "
                          "the end', at)"), f"{pad}at += 1"])
        elif isinstance(t, T.IntegerType):
            lines.extend([f"{pad}if data[at] & 0x80:", f"{pad}    at += 1", f"{pad}else:",
                          f"{pad}    at = _integer(data, at)[1]"])
        elif isinstance(t, T.FloatType):
            lines.extend([f"{pad}if at + 8 > n:", (f"{pad}    raise SchemaError('a float past "
                          "the end', at)"), f"{pad}at += 8"])
        elif isinstance(t, (T.StringType, T.BytesType)):
            integer("size", pad)
            lines.extend([f"{pad}if size < 0 or at + size > n:",
                          f"{pad}    raise SchemaError(f'a length of {{size}} past the end', at)",
                          f"{pad}at += size"])
        elif isinstance(t, T.ArrayType):
            count = f"c{next(names)}"
            integer(count, pad)
            lines.extend([f"{pad}if {count} < 0 or {count} > n - at:",
                          (f"{pad}    raise SchemaError(f'an array of {{{count}}} items in "
                          f"{{n - at}} bytes', at)"),
                          f"{pad}budget -= {count}",
                          f"{pad}if budget < 0:",
                          (f"{pad}    raise SchemaError(f'more than {MAX_ITEMS} array items in "
                           "one message', at)"),
                          f"{pad}for _ in range({count}):"])
            emit(t.t, depth + 1, stack)
        elif isinstance(t, T.RecordType):
            for _, entry in t.entries:
                emit(entry, depth, stack)
        elif isinstance(t, T.ChoiceType):
            index = f"k{next(names)}"
            integer(index, pad)
            for number, (_, entry) in enumerate(t.entries):
                lines.append(f"{pad}{'if' if number == 0 else 'elif'} {index} == {number}:")
                emit(entry, depth + 1, stack)
            lines.extend([f"{pad}else:" if t.entries else f"{pad}if True:",
                          (f"{pad}    raise SchemaError(f'choice {{{index}}} of "
                          f"{len(t.entries)}', at)")])
        else:
            raise _Fallback

    try:
        emit(ref, 1, frozenset())
    except _Fallback:
        return _compile(ref, {})
    lines.append("    return at")
    scope: dict[str, Any] = {"SchemaError": SchemaError, "_integer": _integer}
    exec(compile("\n".join(lines), f"<sbs check {ref.module}.{ref.name}>", "exec"), scope)  # noqa: S102
    walker: Walker = scope["walk"]
    return walker


class _Fallback(Exception):
    """The type cannot be unrolled (recursive): use the closures."""


_WALKERS: dict[tuple[str | None, str], Walker] = {}


def _integer(data: bytes, at: int) -> tuple[int, int]:
    """An SBS integer (big-endian 7-bit groups, the last flagged 0x80) and the offset past it."""
    start = at
    end = min(len(data), at + MAX_INTEGER_BYTES)
    while at < end:
        byte = data[at]
        at += 1
        if byte & 0x80:
            if at - start == 1:
                return (byte & 0x7F) - (0x80 if byte & 0x40 else 0), at
            value = -1 if data[start] & 0x40 else 0
            for byte in data[start:at]:
                value = (value << 7) | (byte & 0x7F)
            return value, at
    if end < len(data):
        raise SchemaError("an integer longer than 10 bytes", start)
    raise SchemaError("an integer runs past the end", start)


def _skip_integer(data: bytes, at: int) -> int:
    return _integer(data, at)[1]


def _skip_none(data: bytes, at: int) -> int:
    return at


def _skip_boolean(data: bytes, at: int) -> int:
    if at >= len(data):
        raise SchemaError("a boolean past the end", at)
    return at + 1


def _skip_float(data: bytes, at: int) -> int:
    if at + 8 > len(data):
        raise SchemaError("a float past the end", at)
    return at + 8


def _skip_sized(data: bytes, at: int) -> int:
    size, after = _integer(data, at)
    if size < 0 or after + size > len(data):
        raise SchemaError(f"a length of {size} past the end", at)
    return after + size


def _compile(t: Any, made: dict[Any, Walker]) -> Walker:
    """A walker for type ``t`` (references compiled once, through ``made``)."""
    if isinstance(t, T.Ref):
        if t in made:
            return made[t]
        if t not in _REFS:
            raise SchemaError(f"unknown type {t.module}.{t.name}", 0)
        target: list[Walker] = []

        def by_ref(data: bytes, at: int) -> int:
            return target[0](data, at)

        made[t] = by_ref
        target.append(_compile(_REFS[t], made))
        made[t] = target[0]
        return target[0]
    if isinstance(t, T.NoneType):
        return _skip_none
    if isinstance(t, T.BooleanType):
        return _skip_boolean
    if isinstance(t, T.IntegerType):
        return _skip_integer
    if isinstance(t, T.FloatType):
        return _skip_float
    if isinstance(t, (T.StringType, T.BytesType)):
        return _skip_sized
    if isinstance(t, T.ArrayType):
        item = _compile(t.t, made)

        def array(data: bytes, at: int) -> int:
            count, at = _integer(data, at)
            if count < 0 or count > len(data) - at:
                raise SchemaError(f"an array of {count} items in {len(data) - at} bytes", at)
            for _ in range(count):
                at = item(data, at)
            return at
        return array
    if isinstance(t, T.RecordType):
        entries = tuple(_compile(entry, made) for _, entry in t.entries)

        def record(data: bytes, at: int) -> int:
            for entry in entries:
                at = entry(data, at)
            return at
        return record
    if isinstance(t, T.ChoiceType):
        options = tuple(_compile(entry, made) for _, entry in t.entries)

        def choice(data: bytes, at: int) -> int:
            index, after = _integer(data, at)
            if not 0 <= index < len(options):
                raise SchemaError(f"choice {index} of {len(options)}", at)
            return options[index](data, after)
        return choice
    raise SchemaError(f"unsupported type {type(t).__name__}", 0)
