"""The Eventer protocol without I/O: Chatter frames of HatEventer messages, in and out.

Strategy: sans-IO, as h11 is. :class:`ChatterConnection` is one side of a
Chatter connection: :meth:`~ChatterConnection.receive_data` feeds it the bytes
a socket read, :meth:`~ChatterConnection.next_message` returns the next whole
:class:`Msg` (or None: more bytes are needed), and the ``reply``/``notify``/``pong``
methods return the bytes of a message to send. Nothing here touches a socket.
:meth:`~ChatterConnection.next_frame` and :func:`decode_frame` split
``next_message`` in two, so a session can decode a big message elsewhere
(off its loop, in parts).

The framing is hat-chatter's (``hat/chatter/__init__.py``, ``_TcpTransport``):
one byte N, then the frame's length L in N big-endian bytes, then L bytes of an
SBS-encoded ``Hat.Msg`` -- ``{id, first, owner, token, last, data: {module, type,
data}}``, whose ``data.data`` is the message itself, SBS-encoded in its module
(the Eventer seed's "Chatter messages"). Encoding and decoding are hat-sbs's
(:mod:`.schema` holds the module and checks untrusted bytes before hat-sbs reads
them); conversations follow hat-chatter: a reply carries the ``first`` id of the
message it answers and the opposite ``owner`` flag; ids this side sends count
from 1. The seed's table of messages fixes who sends what: a client sends
MsgSubscribe, MsgRegisterReq and MsgQueryReq (and Chatter's ``HatPing``
MsgPing/MsgPong), the server MsgNotify, MsgRegisterRes and MsgQueryRes.

Any malformed input -- a length of more than :data:`MAX_LENGTH_BYTES` bytes, a
frame past ``max_frame`` bytes (refused as soon as its length is read), SBS
that does not decode or holds more than ``schema.MAX_ITEMS`` array items,
invalid UTF-8, an unknown module or message type, a message a client may
not send -- raises :class:`EventerProtocolError` with the
reason and where; any other exception from this module is a bug.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import attrs
from hat import sbs

from cosnotify.protocols.eventer.schema import REPOSITORY, SchemaError, check, integer, walk

__all__ = [
    "CLIENT_MESSAGES",
    "MAX_LENGTH_BYTES",
    "PART_ITEMS",
    "ChatterConnection",
    "Event",
    "EventId",
    "EventerProtocolError",
    "Frame",
    "Msg",
    "Order",
    "OrderBy",
    "Payload",
    "PayloadKind",
    "QueryData",
    "RegisterEvent",
    "Timestamp",
    "decode_frame",
    "encode_event",
    "encode_frame",
    "event_to_sbs",
    "payload_to_sbs",
    "query_to_sbs",
    "register_event_to_sbs",
]

#: A frame's length takes at most this many bytes (4: up to 4 GiB; max_frame is smaller).
MAX_LENGTH_BYTES = 4

#: What a client may send (the seed's table: direction c > s; and Chatter's ping).
CLIENT_MESSAGES = frozenset({("HatEventer", "MsgSubscribe"), ("HatEventer", "MsgRegisterReq"),
                             ("HatEventer", "MsgQueryReq"), ("HatPing", "MsgPing"),
                             ("HatPing", "MsgPong")})


class EventerProtocolError(ValueError):
    """Malformed Eventer input: ``reason``, at byte ``offset`` of the stream (or of the
    frame's message, ``in_frame``), for the message ``msg_type`` when it was known."""

    def __init__(self, reason: str, offset: int | None = None,
                 msg_type: tuple[str | None, str] | None = None) -> None:
        where = f" (byte {offset})" if offset is not None else ""
        kind = f" in {msg_type[0]}.{msg_type[1]}" if msg_type is not None else ""
        super().__init__(f"{reason}{kind}{where}")
        self.reason = reason
        self.offset = offset
        self.msg_type = msg_type


# -- the HatEventer values ---------------------------------------------------------------------


@attrs.frozen(order=True)
class Timestamp:
    """``Timestamp {s, us}``: seconds since 1970 and microseconds."""

    s: int
    us: int

    def seconds(self) -> float:
        return self.s + self.us / 1e6

    @classmethod
    def of(cls, seconds: float) -> Timestamp:
        """The timestamp of Unix ``seconds``, rounded to the microsecond."""
        micros = round(seconds * 1_000_000)
        return cls(micros // 1_000_000, micros % 1_000_000)


@attrs.frozen(order=True)
class EventId:
    server: int
    session: int
    instance: int


class PayloadKind(enum.Enum):
    BINARY = "binary"
    JSON = "json"
    SBS = "sbs"


@attrs.frozen
class Payload:
    """``EventPayload``: ``binary`` bytes, ``json`` text (kept as sent), or ``sbs``
    (``Hat.Data``: ``module`` (None: none), ``type``, ``data``)."""

    kind: PayloadKind
    data: bytes | str
    module: str | None = None
    type: str = ""


@attrs.frozen
class RegisterEvent:
    type: tuple[str, ...]
    source_timestamp: Timestamp | None = None
    payload: Payload | None = None


@attrs.frozen
class Event:
    id: EventId
    type: tuple[str, ...]
    timestamp: Timestamp
    source_timestamp: Timestamp | None = None
    payload: Payload | None = None


class Order(enum.Enum):
    DESCENDING = "descending"
    ASCENDING = "ascending"


class OrderBy(enum.Enum):
    TIMESTAMP = "timestamp"
    SOURCE_TIMESTAMP = "sourceTimestamp"


@attrs.frozen
class QueryData:
    """``QueryData``: every field of the seed's "query events"."""

    server_id: int | None = None
    event_ids: tuple[EventId, ...] | None = None
    event_types: tuple[tuple[str, ...], ...] | None = None
    t_from: Timestamp | None = None
    t_to: Timestamp | None = None
    source_t_from: Timestamp | None = None
    source_t_to: Timestamp | None = None
    payload: Payload | None = None
    order: Order = Order.DESCENDING
    order_by: OrderBy = OrderBy.TIMESTAMP
    unique_type: bool = False
    max_results: int | None = None


@attrs.frozen
class Msg:
    """One Chatter message as received: its header and its decoded ``value`` -- the
    patterns of MsgSubscribe, the RegisterEvents of MsgRegisterReq, the QueryData of
    MsgQueryReq, None for a ping."""

    id: int
    first: int
    owner: bool
    token: bool
    last: bool
    module: str | None
    type: str
    value: Any


# -- SBS data <-> values ------------------------------------------------------------------------


def _optional(data: Any) -> Any:
    return data[1] if data[0] == "value" else None


def _some(value: Any) -> tuple[str, Any]:
    return ("value", value) if value is not None else ("none", None)


def _timestamp(data: Any) -> Timestamp | None:
    return None if data is None else Timestamp(data["s"], data["us"])


def _payload(data: Any) -> Payload | None:
    if data is None:
        return None
    kind, value = data
    if kind == "sbs":
        return Payload(PayloadKind.SBS, bytes(value["data"]), _optional(value["module"]),
                       value["type"])
    return Payload(PayloadKind(kind), bytes(value) if kind == "binary" else value)


def _event_id(data: Any) -> EventId:
    return EventId(data["server"], data["session"], data["instance"])


def _register_event(data: Any) -> RegisterEvent:
    return RegisterEvent(tuple(data["type"]), _timestamp(_optional(data["sourceTimestamp"])),
                         _payload(_optional(data["payload"])))


def _query(data: Any) -> QueryData:
    ids = _optional(data["ids"])
    types = _optional(data["types"])
    return QueryData(
        server_id=_optional(data["serverId"]),
        event_ids=None if ids is None else tuple(_event_id(i) for i in ids),
        event_types=None if types is None else tuple(tuple(t) for t in types),
        t_from=_timestamp(_optional(data["tFrom"])),
        t_to=_timestamp(_optional(data["tTo"])),
        source_t_from=_timestamp(_optional(data["sourceTFrom"])),
        source_t_to=_timestamp(_optional(data["sourceTTo"])),
        payload=_payload(_optional(data["payload"])),
        order=Order(data["order"][0]),
        order_by=OrderBy(data["orderBy"][0]),
        unique_type=bool(data["uniqueType"]),
        max_results=_optional(data["maxResults"]))


def _timestamp_to_sbs(t: Timestamp) -> dict[str, int]:
    return {"s": t.s, "us": t.us}


def payload_to_sbs(payload: Payload) -> tuple[str, Any]:
    if payload.kind is PayloadKind.SBS:
        return "sbs", {"module": _some(payload.module), "type": payload.type,
                       "data": payload.data}
    return payload.kind.value, payload.data


def event_to_sbs(event: Event) -> dict[str, Any]:
    return {"id": {"server": event.id.server, "session": event.id.session,
                   "instance": event.id.instance},
            "type": list(event.type),
            "timestamp": _timestamp_to_sbs(event.timestamp),
            "sourceTimestamp": _some(None if event.source_timestamp is None
                                     else _timestamp_to_sbs(event.source_timestamp)),
            "payload": _some(None if event.payload is None else payload_to_sbs(event.payload))}


def encode_event(event: Event) -> bytes:
    """One ``HatEventer.Event``'s SBS bytes (an item of :meth:`ChatterConnection.query_res_encoded`);
    OverflowError, ValueError or TypeError when SBS cannot carry it."""
    data: bytes = REPOSITORY.encode("HatEventer", "Event", event_to_sbs(event))
    return data


def register_event_to_sbs(event: RegisterEvent) -> dict[str, Any]:
    """A RegisterEvent as SBS data (what a client sends; for tests and tools)."""
    return {"type": list(event.type),
            "sourceTimestamp": _some(None if event.source_timestamp is None
                                     else _timestamp_to_sbs(event.source_timestamp)),
            "payload": _some(None if event.payload is None else payload_to_sbs(event.payload))}


def query_to_sbs(query: QueryData) -> dict[str, Any]:
    """A QueryData as SBS data (what a client sends; for tests and tools)."""
    def stamp(t: Timestamp | None) -> tuple[str, Any]:
        return _some(None if t is None else _timestamp_to_sbs(t))

    return {"serverId": _some(query.server_id),
            "ids": _some(None if query.event_ids is None else [
                {"server": i.server, "session": i.session, "instance": i.instance}
                for i in query.event_ids]),
            "types": _some(None if query.event_types is None else [
                list(t) for t in query.event_types]),
            "tFrom": stamp(query.t_from), "tTo": stamp(query.t_to),
            "sourceTFrom": stamp(query.source_t_from), "sourceTTo": stamp(query.source_t_to),
            "payload": _some(None if query.payload is None else payload_to_sbs(query.payload)),
            "order": (query.order.value, None), "orderBy": (query.order_by.value, None),
            "uniqueType": query.unique_type, "maxResults": _some(query.max_results)}


_READERS: dict[tuple[str, str], Any] = {
    ("HatEventer", "MsgSubscribe"): lambda d: tuple(tuple(t) for t in d),
    ("HatEventer", "MsgRegisterReq"): lambda d: tuple(_register_event(e) for e in d),
    ("HatEventer", "MsgQueryReq"): _query,
    ("HatPing", "MsgPing"): lambda d: None,
    ("HatPing", "MsgPong"): lambda d: None,
}


def _decode_check(module: str | None, name: str, data: bytes) -> None:
    try:
        check(module, name, data)
    except SchemaError as exc:
        raise EventerProtocolError(exc.what, exc.at, (module, name)) from None


def _decode(module: str | None, name: str, data: bytes, checked: bool = False) -> Any:
    """``data`` as a value of ``module.name``: checked (schema.check), then hat-sbs's."""
    if not checked:
        _decode_check(module, name, data)
    try:
        return REPOSITORY.decode(module, name, data)
    except UnicodeDecodeError as exc:
        raise EventerProtocolError("invalid UTF-8", exc.start, (module, name)) from None
    except Exception as exc:  # noqa: BLE001 - hat-sbs's C decoder: SystemError, IndexError...
        raise EventerProtocolError(f"undecodable SBS ({type(exc).__name__})", None,
                                   (module, name)) from None


def encode_frame(msg: dict[str, Any]) -> bytes:
    """A ``Hat.Msg`` (SBS data) framed as hat-chatter writes it."""
    body: bytes = REPOSITORY.encode("Hat", "Msg", msg)
    size = len(body)
    length = size.to_bytes(max((size.bit_length() + 7) // 8, 1), "big")
    return bytes([len(length)]) + length + body


#: A message decoded in parts (:func:`decode_frame`) is decoded PART_ITEMS items a call.
PART_ITEMS = 1024
#: The messages that are one array, and their item's type (what is decoded in parts).
_ITEMS = {("HatEventer", "MsgRegisterReq"): "RegisterEvent",
          ("HatEventer", "MsgSubscribe"): "EventType"}
_COUNT = sbs.Repository("module Count\n\nCount = Integer\n")


@attrs.frozen
class Frame:
    """One Chatter frame of a client's message, the message not decoded yet: the
    ``Hat.Msg`` header, the message's ``module`` and ``type``, its SBS ``data`` and the
    frame's offset ``at`` in the stream."""

    id: int
    first: int
    owner: bool
    token: bool
    last: bool
    module: str | None
    type: str
    data: bytes
    at: int


def _frame(body: bytes, at: int) -> Frame:
    try:
        frame = _decode("Hat", "Msg", body)
    except EventerProtocolError as exc:
        raise EventerProtocolError(exc.reason, at, exc.msg_type) from None
    data = frame["data"]
    module, name = _optional(data["module"]), data["type"]
    if (module, name) not in CLIENT_MESSAGES or (module or "", name) not in _READERS:
        raise EventerProtocolError(f"a client may not send {module}.{name}", at)
    return Frame(frame["id"], frame["first"], bool(frame["owner"]), bool(frame["token"]),
                 bool(frame["last"]), module, name, bytes(data["data"]), at)


def decode_frame(frame: Frame, parts: bool = False) -> Msg:
    """The frame's message decoded (EventerProtocolError if it does not decode).
    ``parts``: a message that is one array (MsgRegisterReq, MsgSubscribe) is decoded
    :data:`PART_ITEMS` items a hat-sbs call, not in one: a call holds the GIL, and a
    big message decoded on the executor so lets the loop's thread run between parts."""
    module, name = frame.module, frame.type
    reader = _READERS[(module or "", name)]
    item = _ITEMS.get((module or "", name)) if parts else None
    try:
        if item is None:
            data = _decode(module, name, frame.data)
        else:
            data = _decode_parts(module or "", name, item, frame.data)
    except EventerProtocolError as exc:
        raise EventerProtocolError(exc.reason, frame.at, exc.msg_type) from None
    return Msg(frame.id, frame.first, frame.owner, frame.token, frame.last, module, name,
               reader(data))


def _decode_parts(module: str, name: str, item: str, data: bytes) -> list[Any]:
    """An array message's items, checked whole, then decoded PART_ITEMS at a time."""
    _decode_check(module, name, data)
    count, at = integer(data, 0)
    items: list[Any] = []
    while count:
        part = min(count, PART_ITEMS)
        start = at
        for _ in range(part):
            at = walk(module, item, data, at)
        chunk = _COUNT.encode("Count", "Count", part) + data[start:at]
        items.extend(_decode(module, name, chunk, checked=True))
        count -= part
    return items


# -- one side of a connection ------------------------------------------------------------------


class ChatterConnection:
    """The server's side of one Chatter connection, sans-IO (module docstring)."""

    def __init__(self, max_frame: int = 1 << 20) -> None:
        self.max_frame = max_frame
        self._buffer = bytearray()
        self._consumed = 0          # stream offset of the buffer's first byte
        self._last_id = 0

    @property
    def pending(self) -> bool:
        """Has a frame begun that has not arrived whole?"""
        return bool(self._buffer)

    def receive_data(self, data: bytes) -> None:
        self._buffer += data

    def next_message(self) -> Msg | None:
        """The next whole message, or None until more bytes come (EventerProtocolError
        for malformed input: the connection cannot go on after it)."""
        frame = self.next_frame()
        return None if frame is None else decode_frame(frame)

    def next_frame(self) -> Frame | None:
        """The next whole frame, its message not decoded yet (:func:`decode_frame`), or
        None until more bytes come; EventerProtocolError as :meth:`next_message`."""
        buffer = self._buffer
        if not buffer:
            return None
        size_bytes = buffer[0]
        if not 1 <= size_bytes <= MAX_LENGTH_BYTES:
            raise EventerProtocolError(f"a length of {size_bytes} bytes (1 to "
                                       f"{MAX_LENGTH_BYTES})", self._consumed)
        if len(buffer) < 1 + size_bytes:
            return None
        size = int.from_bytes(buffer[1:1 + size_bytes], "big")
        if size == 0 or size > self.max_frame:
            raise EventerProtocolError(f"a frame of {size} bytes (1 to {self.max_frame})",
                                       self._consumed)
        end = 1 + size_bytes + size
        if len(buffer) < end:
            return None
        body = bytes(buffer[1 + size_bytes:end])
        del buffer[:end]
        at = self._consumed
        self._consumed += end
        return _frame(body, at)

    # -- what this side sends ------------------------------------------------------------------
    def _send(self, module: str, name: str, data: Any, first: int | None, owner: bool,
              last: bool = True) -> bytes:
        return self._send_encoded(module, name, REPOSITORY.encode(module, name, data),
                                  first, owner, last)

    def _send_encoded(self, module: str, name: str, data: bytes, first: int | None,
                      owner: bool, last: bool = True) -> bytes:
        self._last_id += 1
        return encode_frame({
            "id": self._last_id, "first": self._last_id if first is None else first,
            "owner": owner, "token": True, "last": last,
            "data": {"module": ("value", module), "type": name, "data": data}})

    def reply(self, msg: Msg, module: str, name: str, data: Any) -> bytes:
        """The last message of ``msg``'s conversation (hat-chatter: its ``first``, the
        opposite ``owner``)."""
        return self._send(module, name, data, msg.first, not msg.owner)

    def register_res(self, msg: Msg, events: Sequence[Event | None]) -> bytes:
        """MsgRegisterRes: per RegisterEvent its Event, or ``failure``."""
        return self.reply(msg, "HatEventer", "MsgRegisterRes", [
            ("event", event_to_sbs(e)) if e is not None else ("failure", None)
            for e in events])

    def query_res(self, msg: Msg, events: Sequence[Event]) -> bytes:
        return self.reply(msg, "HatEventer", "MsgQueryRes", [event_to_sbs(e) for e in events])

    def query_res_encoded(self, msg: Msg, events: Sequence[bytes]) -> bytes:
        """:meth:`query_res` of events already encoded (:func:`encode_event`): the same
        bytes, the array put together here -- its count, then its items (hat-sbs's
        ``Array``), so an event encoded once is not encoded again."""
        data = _COUNT.encode("Count", "Count", len(events)) + b"".join(events)
        return self._send_encoded("HatEventer", "MsgQueryRes", data, msg.first,
                                  not msg.owner)

    def pong(self, msg: Msg) -> bytes:
        """Chatter's answer to a MsgPing."""
        return self.reply(msg, "HatPing", "MsgPong", None)

    def notify(self, events: Sequence[Event]) -> bytes:
        """MsgNotify: a conversation of its own, first and last."""
        return self._send("HatEventer", "MsgNotify", [event_to_sbs(e) for e in events],
                          None, True)
