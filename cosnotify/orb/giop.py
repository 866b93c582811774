"""A sans-IO GIOP connection (CORBA 3.0 chapter 15), in the style of h11.

Strategy: :class:`GIOPConnection` never touches a socket. The transport feeds
received bytes to :meth:`~GIOPConnection.receive_data` (``b""`` for end of
file) and drains :meth:`~GIOPConnection.next_event`, which returns one
message value from :mod:`cosnotify.orb.giop_messages`, :data:`NEED_DATA`, or
:class:`ConnectionClosed`; :meth:`~GIOPConnection.send` turns a message into
bytes to write. In between, the connection frames messages by their 12-octet
header (checking magic, version, type and size before buffering a body, so a
hostile size costs nothing), reassembles fragments (15.4.9: GIOP 1.1 chains
follow their first message; GIOP 1.2 fragments carry the request id and may
interleave), tracks request ids (a client's unanswered requests, a server's
unreplied ones) and keeps the connection state.

The state machine is data: :data:`TRANSITIONS` maps (state, trigger) to the
next state, :data:`CAN_SEND` and :data:`CAN_RECEIVE` say which messages each
role may send or accept. Anything malformed or out of place raises
:class:`RemoteProtocolError` (its ``to_system()`` is the ``COMM_FAILURE`` for
pending calls) and moves the connection to ERROR, where the only thing left
to do is ``send(MessageError())`` and close. Calling ``send`` with a message
the state forbids raises :class:`LocalProtocolError`. No other exception
escapes the receive path; one that did would be a bug.
"""

from __future__ import annotations

import enum
import struct

import attrs

from cosnotify.orb.exceptions import COMM_FAILURE, COMPLETED_MAYBE, SystemException
from cosnotify.orb.giop_messages import (
    FRAGMENTABLE,
    HEADER_SIZE,
    MAGIC,
    CancelRequest,
    CloseConnection,
    FormatMinor,
    LocateReply,
    LocateRequest,
    Message,
    MessageError,
    MessageFormatError,
    MsgType,
    Reply,
    Request,
    decode_message,
    encode_message,
    fragment_message,
)

__all__ = [
    "CAN_RECEIVE",
    "CAN_SEND",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "MAX_CANCELLED",
    "MAX_FRAGMENT_CHAINS",
    "NEED_DATA",
    "TRANSITIONS",
    "ConnState",
    "ConnectionClosed",
    "GIOPConnection",
    "GIOPError",
    "LocalProtocolError",
    "RemoteProtocolError",
    "Role",
    "Trigger",
]

DEFAULT_MAX_MESSAGE_SIZE = 16 * 1024 * 1024
#: GIOP 1.2 fragmented messages one connection may have under way at once.
MAX_FRAGMENT_CHAINS = 64
#: Cancelled requests whose late replies a client connection remembers to drop.
MAX_CANCELLED = 4096


class Sentinel(enum.Enum):
    """Markers ``next_event`` returns instead of a message."""

    NEED_DATA = "NEED_DATA"


NEED_DATA = Sentinel.NEED_DATA


@attrs.frozen
class ConnectionClosed:
    """The peer closed the byte stream (or the connection is already closed)."""


Event = Message | ConnectionClosed | Sentinel


class Role(enum.Enum):
    CLIENT = "client"
    SERVER = "server"


class ConnState(enum.Enum):
    OPEN = "open"
    ERROR = "error"    # the peer broke the protocol; send MessageError, then close
    CLOSED = "closed"


class Trigger(enum.Enum):
    SEND_CLOSE = "send CloseConnection"
    RECEIVE_CLOSE = "receive CloseConnection"
    SEND_MESSAGE_ERROR = "send MessageError"
    RECEIVE_MESSAGE_ERROR = "receive MessageError"
    PROTOCOL_ERROR = "protocol error"
    EOF = "end of file"


#: (state, trigger) -> next state; pairs not listed leave the state unchanged.
TRANSITIONS: dict[tuple[ConnState, Trigger], ConnState] = {
    (ConnState.OPEN, Trigger.SEND_CLOSE): ConnState.CLOSED,
    (ConnState.OPEN, Trigger.RECEIVE_CLOSE): ConnState.CLOSED,
    (ConnState.OPEN, Trigger.SEND_MESSAGE_ERROR): ConnState.CLOSED,
    (ConnState.OPEN, Trigger.RECEIVE_MESSAGE_ERROR): ConnState.CLOSED,
    (ConnState.OPEN, Trigger.PROTOCOL_ERROR): ConnState.ERROR,
    (ConnState.OPEN, Trigger.EOF): ConnState.CLOSED,
    (ConnState.ERROR, Trigger.SEND_MESSAGE_ERROR): ConnState.CLOSED,
    (ConnState.ERROR, Trigger.EOF): ConnState.CLOSED,
}

_REQUESTS = frozenset({Request, CancelRequest, LocateRequest})
_REPLIES = frozenset({Reply, LocateReply})
_ENDINGS = frozenset({CloseConnection, MessageError})
#: What each role may send in each state. (GIOP 1.2 lets either side send
#: CloseConnection; omniORB clients do, so servers accept it in any version.)
CAN_SEND: dict[tuple[Role, ConnState], frozenset[type]] = {
    (Role.CLIENT, ConnState.OPEN): _REQUESTS | _ENDINGS,
    (Role.SERVER, ConnState.OPEN): _REPLIES | _ENDINGS,
    (Role.CLIENT, ConnState.ERROR): frozenset({MessageError}),
    (Role.SERVER, ConnState.ERROR): frozenset({MessageError}),
}
#: What each role accepts from its peer while open.
CAN_RECEIVE: dict[Role, frozenset[type]] = {
    Role.CLIENT: _REPLIES | _ENDINGS,
    Role.SERVER: _REQUESTS | _ENDINGS,
}
_TRIGGER_ON_SEND = {CloseConnection: Trigger.SEND_CLOSE, MessageError: Trigger.SEND_MESSAGE_ERROR}
_TRIGGER_ON_RECEIVE = {CloseConnection: Trigger.RECEIVE_CLOSE,
                       MessageError: Trigger.RECEIVE_MESSAGE_ERROR}


class GIOPError(Exception):
    """A GIOP protocol violation, with a minor code and the stream offset."""

    def __init__(self, reason: str, minor: int = 0, offset: int = -1) -> None:
        super().__init__(f"{reason} (stream offset {offset})" if offset >= 0 else reason)
        self.reason = reason
        self.minor = minor
        self.offset = offset

    def to_system(self) -> SystemException:
        """The ``COMM_FAILURE`` calls waiting on this connection fail with."""
        return COMM_FAILURE(self.minor, COMPLETED_MAYBE, str(self))


class RemoteProtocolError(GIOPError):
    """The peer sent something GIOP does not allow; answer MessageError and close."""


class LocalProtocolError(GIOPError):
    """Our side tried to send something the connection's state does not allow."""


@attrs.define
class _Chain:
    """A message arriving in fragments (the body so far in one buffer, no per-fragment cost)."""

    version: tuple[int, int]
    little: bool
    kind: int
    body: bytearray


class GIOPConnection:
    """One GIOP connection's protocol state, for a client or a server."""

    def __init__(self, role: Role, *, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
                 fragment_size: int | None = None, first_request_id: int = 1) -> None:
        self.role = role
        self.state = ConnState.OPEN
        self.max_message_size = max_message_size
        self.fragment_size = fragment_size
        self._buffer = bytearray()
        self._consumed = 0
        self._eof = False
        self._error: RemoteProtocolError | None = None
        self._chain11: _Chain | None = None
        self._chains12: dict[int, _Chain] = {}
        self._held = 0  # octets held by unfinished fragment chains, all together
        #: Client: request id -> GIOP version of each request awaiting a reply.
        #: Server: the same for each received request we still owe a reply.
        self.outstanding: dict[int, tuple[int, int]] = {}
        #: Client: ids of cancelled requests whose late replies are dropped (oldest first).
        self._cancelled: dict[int, None] = {}
        self._next_id = first_request_id

    # -- state -----------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        """True once the connection can no longer carry requests (ERROR or CLOSED)."""
        return self.state is not ConnState.OPEN

    def _fire(self, trigger: Trigger) -> None:
        self.state = TRANSITIONS.get((self.state, trigger), self.state)

    def next_request_id(self) -> int:
        """A request id not in use on this connection (client side)."""
        while True:
            request_id = self._next_id
            self._next_id = (self._next_id + 1) & 0xFFFFFFFF
            if request_id not in self.outstanding and request_id not in self._cancelled:
                return request_id

    # -- sending ---------------------------------------------------------------------------
    def send(self, message: Message) -> bytes:
        """The bytes that send ``message``; ``LocalProtocolError`` if it may not be sent now."""
        kind = type(message)
        if kind not in CAN_SEND.get((self.role, self.state), frozenset()):
            raise LocalProtocolError(f"a {self.role.value} cannot send {kind.__name__} "
                                     f"on a connection that is {self.state.value}")
        if kind is Request and message.response_expected or kind is LocateRequest:  # type: ignore[union-attr]
            self._claim(message.request_id, message.version)  # type: ignore[union-attr]
        elif kind is CancelRequest:
            if self.outstanding.pop(message.request_id, None) is not None:  # type: ignore[union-attr]
                self._cancelled[message.request_id] = None  # type: ignore[union-attr]
                if len(self._cancelled) > MAX_CANCELLED:  # a late reply to the oldest: unknown
                    del self._cancelled[next(iter(self._cancelled))]
        elif kind in _REPLIES:
            request_id = message.request_id  # type: ignore[union-attr]
            version = self.outstanding.get(request_id)
            if version is None:
                raise LocalProtocolError(f"no request {request_id} is waiting for a reply")
            if version != message.version:
                raise LocalProtocolError(f"request {request_id} came in GIOP {version}, "
                                         f"the reply must use it too")
            del self.outstanding[request_id]
        try:
            data = encode_message(message)
        except (ValueError, SystemException) as exc:
            if kind in (Request, LocateRequest):
                self.outstanding.pop(message.request_id, None)  # type: ignore[union-attr]
            raise LocalProtocolError(f"cannot encode {kind.__name__}: {exc}") from exc
        trigger = _TRIGGER_ON_SEND.get(kind)
        if trigger is not None:
            self._fire(trigger)
        if self.fragment_size and len(data) > self.fragment_size:
            return b"".join(fragment_message(data, self.fragment_size))
        return data

    def reply_arrived(self, request_id: int) -> bool:
        """A reply read outside this state machine (the hot path): True if it was awaited.

        False for the late reply to a cancelled request, or any other stray
        reply; the hot path drops those.
        """
        if self.outstanding.pop(request_id, None) is not None:
            return True
        self._cancelled.pop(request_id, None)
        return False

    def _claim(self, request_id: int, version: tuple[int, int]) -> None:
        if request_id in self.outstanding:
            raise LocalProtocolError(f"request id {request_id} is already in use")
        self.outstanding[request_id] = version
        self._cancelled.pop(request_id, None)

    # -- receiving -------------------------------------------------------------------------
    def receive_data(self, data: bytes) -> None:
        """Feed received bytes; ``b""`` means the peer closed its side."""
        if data:
            self._buffer += data
        else:
            self._eof = True

    def pending(self) -> bool:
        """True while part of a message (or of a fragment chain) is buffered."""
        return bool(self._buffer) or self._chain11 is not None or bool(self._chains12)

    def next_event(self) -> Event:
        """The next complete message, ``NEED_DATA``, or ``ConnectionClosed()``."""
        if self._error is not None:
            raise self._error
        if self.state is ConnState.CLOSED:
            return ConnectionClosed()
        try:
            while True:
                event = self._next()
                if event is not None:
                    return event
        except MessageFormatError as exc:
            self._fail(RemoteProtocolError(exc.reason, exc.minor, self._consumed + max(exc.offset, 0)))
        raise AssertionError("unreachable")  # pragma: no cover

    def _fail(self, error: RemoteProtocolError) -> None:
        self._error = error
        self._buffer.clear()
        self._fire(Trigger.PROTOCOL_ERROR)
        raise error

    def _next(self) -> Event | None:
        buffer = self._buffer
        if len(buffer) < HEADER_SIZE:
            if not self._eof:
                return NEED_DATA
            if buffer:
                raise MessageFormatError(FormatMinor.TRUNCATED, "stream ended inside a GIOP header", 0)
            self._fire(Trigger.EOF)
            return ConnectionClosed()
        version, little, more, kind, size = self._header(bytes(buffer[:HEADER_SIZE]))
        total = HEADER_SIZE + size
        if len(buffer) < total:
            if self._eof:
                raise MessageFormatError(FormatMinor.TRUNCATED,
                                         f"stream ended inside a {total}-octet message", 0)
            return NEED_DATA
        raw = bytes(buffer[:total])
        del buffer[:total]
        self._consumed += total
        if kind == MsgType.FRAGMENT:
            return self._fragment(raw, version, little, more)
        if more:
            self._start_chain(raw, version, little, kind)
            return None
        return self._deliver(decode_message(raw))

    def _header(self, header: bytes) -> tuple[tuple[int, int], bool, bool, int, int]:
        """Check a 12-octet GIOP header (15.4.1) before anything is buffered."""
        if header[:4] != MAGIC:
            raise MessageFormatError(FormatMinor.BAD_MAGIC, f"bad magic {header[:4]!r}", 0)
        version = (header[4], header[5])
        if version[0] != 1 or version[1] > 2:
            raise MessageFormatError(FormatMinor.BAD_VERSION, f"unsupported GIOP version {version}", 4)
        flags, kind = header[6], header[7]
        little = bool(flags & 1)
        more = bool(flags & 2) and version >= (1, 1)
        if kind > MsgType.FRAGMENT or (kind == MsgType.FRAGMENT and version < (1, 1)):
            raise MessageFormatError(FormatMinor.BAD_TYPE, f"message type {kind} in GIOP {version}", 7)
        (size,) = struct.unpack_from("<I" if little else ">I", header, 8)
        if size > self.max_message_size:
            raise MessageFormatError(FormatMinor.TOO_LARGE,
                                     f"message of {size} octets exceeds the limit {self.max_message_size}", 8)
        return version, little, more, kind, size

    def _start_chain(self, raw: bytes, version: tuple[int, int], little: bool, kind: int) -> None:
        if kind not in FRAGMENTABLE[version[1]]:
            raise MessageFormatError(FormatMinor.BAD_FRAGMENT,
                                     f"{MsgType(kind).name} cannot be fragmented in GIOP {version}", 6)
        chain = _Chain(version, little, kind, bytearray(raw[HEADER_SIZE:]))
        self._hold(len(chain.body))
        if version == (1, 1):
            if self._chain11 is not None:
                raise MessageFormatError(FormatMinor.BAD_FRAGMENT, "a GIOP 1.1 message started "
                                         "before the previous one's fragments ended", 0)
            self._chain11 = chain
        else:
            request_id = self._request_id(raw, little)
            if request_id in self._chains12:
                raise MessageFormatError(FormatMinor.BAD_FRAGMENT,
                                         f"two fragmented messages with request id {request_id}", 12)
            if len(self._chains12) >= MAX_FRAGMENT_CHAINS:
                raise MessageFormatError(FormatMinor.TOO_LARGE, f"more than {MAX_FRAGMENT_CHAINS} "
                                         "fragmented messages under way at once", 12)
            self._chains12[request_id] = chain

    def _fragment(self, raw: bytes, version: tuple[int, int], little: bool, more: bool) -> Event | None:
        if version == (1, 1):
            chain, payload = self._chain11, raw[HEADER_SIZE:]
            if not more:
                self._chain11 = None
        else:
            request_id = self._request_id(raw, little)
            chain, payload = self._chains12.get(request_id), raw[HEADER_SIZE + 4:]
            if not more:
                self._chains12.pop(request_id, None)
        if chain is None or chain.version != version:
            raise MessageFormatError(FormatMinor.BAD_FRAGMENT, "a Fragment continues no message", 7)
        self._hold(len(payload))
        chain.body += payload
        if more:
            return None
        self._held -= len(chain.body)
        order = "<I" if chain.little else ">I"
        header = MAGIC + bytes((1, version[1], 1 if chain.little else 0, chain.kind))
        return self._deliver(decode_message(header + struct.pack(order, len(chain.body))
                                            + chain.body))

    def _hold(self, size: int) -> None:
        """Count ``size`` more octets of unfinished fragment chains against the limit.

        All chains of a connection together may hold ``max_message_size``
        octets, so neither many chains nor endless fragments grow memory.
        """
        self._held += size
        if self._held > self.max_message_size:
            raise MessageFormatError(FormatMinor.TOO_LARGE, "fragments under way exceed the "
                                     f"limit of {self.max_message_size} octets", 8)

    @staticmethod
    def _request_id(raw: bytes, little: bool) -> int:
        if len(raw) < HEADER_SIZE + 4:
            raise MessageFormatError(FormatMinor.BAD_FRAGMENT, "fragment without a request id", 12)
        (request_id,) = struct.unpack_from("<I" if little else ">I", raw, HEADER_SIZE)
        return int(request_id)

    def _deliver(self, message: Message) -> Message | None:
        """Check a complete message against the role and the request bookkeeping."""
        kind = type(message)
        if kind not in CAN_RECEIVE[self.role]:
            raise MessageFormatError(FormatMinor.UNEXPECTED,
                                     f"a {self.role.value} does not expect {kind.__name__}", 7)
        if kind in _REPLIES:
            request_id = message.request_id  # type: ignore[union-attr]
            if self.outstanding.pop(request_id, None) is None:
                if request_id in self._cancelled:
                    del self._cancelled[request_id]
                    return None  # the reply to a request we cancelled: drop it
                raise MessageFormatError(FormatMinor.UNKNOWN_REQUEST,
                                         f"{kind.__name__} for unknown request id {request_id}", 12)
        elif kind is CancelRequest:
            # 15.4.9: a cancelled request's fragments are not sent on
            dropped = self._chains12.pop(message.request_id, None)  # type: ignore[union-attr]
            if dropped is not None:
                self._held -= len(dropped.body)
        elif kind is LocateRequest or (kind is Request and message.response_expected):  # type: ignore[union-attr]
            request_id = message.request_id  # type: ignore[union-attr]
            if request_id in self.outstanding:
                raise MessageFormatError(FormatMinor.UNKNOWN_REQUEST,
                                         f"request id {request_id} reused before its reply", 12)
            self.outstanding[request_id] = message.version
        trigger = _TRIGGER_ON_RECEIVE.get(kind)
        if trigger is not None:
            self._fire(trigger)
        return message
