"""GIOP 1.0, 1.1 and 1.2 messages as values (CORBA 3.0 sections 15.4.1-15.4.9).

Strategy: each message type is a frozen attrs class holding its header
fields plus, for Request, Reply and LocateReply, the body as raw bytes.
:func:`encode_message` turns one into wire bytes and :func:`decode_message`
turns one complete (already reassembled) message back, so the connection in
:mod:`cosnotify.orb.giop` only frames, reassembles and keeps state. Bodies
are never interpreted here: the ORB marshals arguments with
:mod:`cosnotify.orb.cdr`, starting at :func:`body_offset` of the message (GIOP
1.2 Request and Reply bodies start 8-aligned, 15.4.2.2 and 15.4.3.2; other
bodies follow their header directly). Received messages carry
``body_offset`` so the body decodes with the right alignment.

Decoding raises :class:`MessageFormatError` (a local error with a minor code
and offset); the connection turns it into its protocol error.
"""

from __future__ import annotations

import enum
import struct

import attrs

from cosnotify.orb.cdr import Decoder, Encoder
from cosnotify.orb.cdr_core import COSNOTIFY_VMCID, ISO_8859_1, Codec
from cosnotify.orb.codesets import SERVICE_CONTEXT_ID, CodeSetContext
from cosnotify.orb.exceptions import (
    COMPLETED_MAYBE,
    COMPLETED_NO,
    SYSTEM_EXCEPTIONS,
    UNKNOWN,
    CompletionStatus,
    SystemException,
)
from cosnotify.orb.ior import IOR, Profile, decode_profile, read_ior, write_ior

__all__ = [
    "CancelRequest", "CloseConnection", "KeyAddr", "LocateReply", "LocateRequest",
    "LocateStatus", "Message", "MessageError", "MessageFormatError", "MsgType", "ProfileAddr",
    "ReferenceAddr", "Reply", "ReplyStatus", "Request", "ServiceContext", "body_offset",
    "decode_message", "encode_message", "fragment_message", "location_forward_reply",
    "system_exception_reply",
]

MAGIC = b"GIOP"
HEADER_SIZE = 12
VERSIONS = ((1, 0), (1, 1), (1, 2))
#: Request response_flags in GIOP 1.2 (15.4.2.2): no reply, a reply once
#: delivered (SYNC_WITH_SERVER), a reply with results (SYNC_WITH_TARGET).
RESPONSE_NONE, RESPONSE_SYNC_WITH_SERVER, RESPONSE_EXPECTED = 0, 1, 3


class MsgType(enum.IntEnum):
    """``GIOP::MsgType_1_1`` (15.4.1)."""

    REQUEST = 0
    REPLY = 1
    CANCEL_REQUEST = 2
    LOCATE_REQUEST = 3
    LOCATE_REPLY = 4
    CLOSE_CONNECTION = 5
    MESSAGE_ERROR = 6
    FRAGMENT = 7


class ReplyStatus(enum.IntEnum):
    """``GIOP::ReplyStatusType_1_2`` (15.4.3.1); the last two are GIOP 1.2 only."""

    NO_EXCEPTION = 0
    USER_EXCEPTION = 1
    SYSTEM_EXCEPTION = 2
    LOCATION_FORWARD = 3
    LOCATION_FORWARD_PERM = 4
    NEEDS_ADDRESSING_MODE = 5


class LocateStatus(enum.IntEnum):
    """``GIOP::LocateStatusType_1_2`` (15.4.6.1); the last three are GIOP 1.2 only."""

    UNKNOWN_OBJECT = 0
    OBJECT_HERE = 1
    OBJECT_FORWARD = 2
    OBJECT_FORWARD_PERM = 3
    LOC_SYSTEM_EXCEPTION = 4
    LOC_NEEDS_ADDRESSING_MODE = 5


class FormatMinor:
    """Minor codes of malformed-message errors (COMM_FAILURE on the ORB side)."""

    BAD_MAGIC = COSNOTIFY_VMCID | 16
    BAD_VERSION = COSNOTIFY_VMCID | 17
    BAD_TYPE = COSNOTIFY_VMCID | 18
    TOO_LARGE = COSNOTIFY_VMCID | 19
    TRUNCATED = COSNOTIFY_VMCID | 20
    BAD_HEADER = COSNOTIFY_VMCID | 21
    BAD_FRAGMENT = COSNOTIFY_VMCID | 22
    UNEXPECTED = COSNOTIFY_VMCID | 23
    UNKNOWN_REQUEST = COSNOTIFY_VMCID | 24
    PEER_ERROR = COSNOTIFY_VMCID | 25


class MessageFormatError(ValueError):
    """Bytes that are not a well-formed GIOP message."""

    def __init__(self, minor: int, reason: str, offset: int = -1) -> None:
        super().__init__(f"{reason} (at offset {offset})" if offset >= 0 else reason)
        self.minor = minor
        self.reason = reason
        self.offset = offset


# -- header pieces -----------------------------------------------------------------------------


@attrs.frozen
class ServiceContext:
    """``IOP::ServiceContext``: an id and opaque data (13.7)."""

    context_id: int
    context_data: bytes


@attrs.frozen
class KeyAddr:
    """TargetAddress by object key (GIOP 1.2; the only form in 1.0/1.1)."""

    object_key: bytes


@attrs.frozen
class ProfileAddr:
    """TargetAddress by the profile the client used (GIOP 1.2)."""

    profile: Profile


@attrs.frozen
class ReferenceAddr:
    """TargetAddress by the whole IOR and the index of the profile used (GIOP 1.2)."""

    selected_profile_index: int
    ior: IOR


TargetAddress = KeyAddr | ProfileAddr | ReferenceAddr


def target_key(target: TargetAddress) -> bytes | None:
    """The object key a TargetAddress designates, if it has one."""
    if isinstance(target, KeyAddr):
        return target.object_key
    if isinstance(target, ProfileAddr):
        profile = target.profile
    else:
        profiles = target.ior.profiles
        if not 0 <= target.selected_profile_index < len(profiles):
            return None
        profile = profiles[target.selected_profile_index]
    return getattr(profile, "object_key", None)


class _Contexts:
    __slots__ = ()
    service_contexts: tuple[ServiceContext, ...]

    def service_context(self, context_id: int) -> bytes | None:
        """The data of the first service context with ``context_id``, or None."""
        return next((c.context_data for c in self.service_contexts if c.context_id == context_id), None)

    def codesets(self) -> CodeSetContext | None:
        """The CodeSets service context (id 1), decoded; MARSHAL if malformed."""
        data = self.service_context(SERVICE_CONTEXT_ID)
        return None if data is None else CodeSetContext.decode(data)


@attrs.frozen
class Request(_Contexts):
    """A Request (15.4.2). ``response_flags``: 0 oneway, 1 sync-with-server, 3 normal."""

    request_id: int
    target: TargetAddress
    operation: str
    body: bytes = b""
    response_flags: int = RESPONSE_EXPECTED
    service_contexts: tuple[ServiceContext, ...] = ()
    requesting_principal: bytes = b""
    version: tuple[int, int] = (1, 2)
    little_endian: bool = True
    body_offset: int = attrs.field(default=0, eq=False)

    @property
    def response_expected(self) -> bool:
        return bool(self.response_flags & 1)

    @property
    def object_key(self) -> bytes | None:
        return target_key(self.target)


@attrs.frozen
class Reply(_Contexts):
    """A Reply (15.4.3)."""

    request_id: int
    reply_status: ReplyStatus = ReplyStatus.NO_EXCEPTION
    body: bytes = b""
    service_contexts: tuple[ServiceContext, ...] = ()
    version: tuple[int, int] = (1, 2)
    little_endian: bool = True
    body_offset: int = attrs.field(default=0, eq=False)

    def system_exception(self) -> SystemException:
        """The system exception a SYSTEM_EXCEPTION reply carries (15.4.3.2)."""
        return _read_system_exception(self)

    def forward_ior(self) -> IOR:
        """The IOR of a LOCATION_FORWARD(_PERM) reply."""
        return read_ior(_body_decoder(self))


@attrs.frozen
class CancelRequest:
    """A CancelRequest (15.4.4)."""

    request_id: int
    version: tuple[int, int] = (1, 2)
    little_endian: bool = True


@attrs.frozen
class LocateRequest:
    """A LocateRequest (15.4.5)."""

    request_id: int
    target: TargetAddress
    version: tuple[int, int] = (1, 2)
    little_endian: bool = True

    @property
    def object_key(self) -> bytes | None:
        return target_key(self.target)


@attrs.frozen
class LocateReply:
    """A LocateReply (15.4.6); the body holds an IOR, system exception or disposition."""

    request_id: int
    locate_status: LocateStatus
    body: bytes = b""
    version: tuple[int, int] = (1, 2)
    little_endian: bool = True
    body_offset: int = attrs.field(default=0, eq=False)

    def system_exception(self) -> SystemException:
        return _read_system_exception(self)

    def forward_ior(self) -> IOR:
        return read_ior(_body_decoder(self))


@attrs.frozen
class CloseConnection:
    """CloseConnection (15.4.7): the sender will close; unanswered requests may be retried."""

    version: tuple[int, int] = (1, 2)
    little_endian: bool = True


@attrs.frozen
class MessageError:
    """MessageError (15.4.8): the sender received something it could not parse."""

    version: tuple[int, int] = (1, 2)
    little_endian: bool = True


Message = (Request | Reply | CancelRequest | LocateRequest | LocateReply | CloseConnection
           | MessageError)
_TYPES: dict[type, MsgType] = {
    Request: MsgType.REQUEST, Reply: MsgType.REPLY, CancelRequest: MsgType.CANCEL_REQUEST,
    LocateRequest: MsgType.LOCATE_REQUEST, LocateReply: MsgType.LOCATE_REPLY,
    CloseConnection: MsgType.CLOSE_CONNECTION, MessageError: MsgType.MESSAGE_ERROR,
}
#: Message types that may be fragmented, per GIOP minor version (15.4.9).
FRAGMENTABLE = {1: {MsgType.REQUEST, MsgType.REPLY},
                2: {MsgType.REQUEST, MsgType.REPLY, MsgType.LOCATE_REQUEST, MsgType.LOCATE_REPLY}}


_CODECS = {(little, version): Codec(little, ISO_8859_1, 0, version)
           for little in (False, True) for version in VERSIONS}


def _codec(little_endian: bool, version: tuple[int, int]) -> Codec:
    """Headers are ISO-8859-1 (operation names and ids are ASCII in practice)."""
    found = _CODECS.get((little_endian, version))
    return found if found is not None else Codec(little_endian, ISO_8859_1, 0, version)


def _body_decoder(message: Reply | LocateReply) -> Decoder:
    return Decoder(message.body, _codec(message.little_endian, message.version),
                   offset=message.body_offset)


def _read_system_exception(message: Reply | LocateReply) -> SystemException:
    decoder = _body_decoder(message)
    repo_id = decoder.read_string()
    minor = decoder.read_ulong()
    completed = decoder.read_ulong()
    items = CompletionStatus._items
    status = items[completed] if completed < len(items) else COMPLETED_MAYBE
    cls = SYSTEM_EXCEPTIONS.get(repo_id)
    if cls is None:
        return UNKNOWN(minor, status, f"unknown system exception {repo_id}")
    return cls(minor, status)


# -- encoding ---------------------------------------------------------------------------------


def _write_contexts(encoder: Encoder, contexts: tuple[ServiceContext, ...]) -> None:
    encoder.write_ulong(len(contexts))
    for context in contexts:
        encoder.write_ulong(context.context_id)
        encoder.write_octet_sequence(context.context_data)


def _write_target(encoder: Encoder, target: TargetAddress, version: tuple[int, int]) -> None:
    if version < (1, 2):
        key = target_key(target)
        if key is None:
            raise ValueError(f"GIOP {version} needs an object key, not {target!r}")
        encoder.write_octet_sequence(key)
    elif isinstance(target, KeyAddr):
        encoder.write_short(0)
        encoder.write_octet_sequence(target.object_key)
    elif isinstance(target, ProfileAddr):
        encoder.write_short(1)
        encoder.write_ulong(target.profile.tag)
        encoder.write_octet_sequence(target.profile.encode(encoder.codec.little_endian))
    else:
        encoder.write_short(2)
        encoder.write_ulong(target.selected_profile_index)
        write_ior(encoder, target.ior)


def _encode_header(message: Message) -> Encoder:
    """The message up to (not including) its body, with a placeholder GIOP header."""
    encoder = Encoder(_codec(message.little_endian, message.version))
    encoder.write_octets(bytes(HEADER_SIZE))
    version = message.version
    if isinstance(message, Request):
        if version < (1, 2):
            _write_contexts(encoder, message.service_contexts)
            encoder.write_ulong(message.request_id)
            encoder.write_boolean(message.response_expected)
            if version == (1, 1):
                encoder.write_octets(bytes(3))
            _write_target(encoder, message.target, version)
            encoder.write_string(message.operation)
            encoder.write_octet_sequence(message.requesting_principal)
        else:
            encoder.write_ulong(message.request_id)
            encoder.write_octet(message.response_flags)
            encoder.write_octets(bytes(3))
            _write_target(encoder, message.target, version)
            encoder.write_string(message.operation)
            _write_contexts(encoder, message.service_contexts)
    elif isinstance(message, Reply):
        if version < (1, 2):
            _write_contexts(encoder, message.service_contexts)
            encoder.write_ulong(message.request_id)
            encoder.write_ulong(message.reply_status)
        else:
            encoder.write_ulong(message.request_id)
            encoder.write_ulong(message.reply_status)
            _write_contexts(encoder, message.service_contexts)
    elif isinstance(message, CancelRequest):
        encoder.write_ulong(message.request_id)
    elif isinstance(message, LocateRequest):
        encoder.write_ulong(message.request_id)
        _write_target(encoder, message.target, version)
    elif isinstance(message, LocateReply):
        encoder.write_ulong(message.request_id)
        encoder.write_ulong(message.locate_status)
    return encoder


def _aligns_body(message: Message) -> bool:
    return message.version >= (1, 2) and isinstance(message, (Request, Reply))


def body_offset(message: Message) -> int:
    """Where the message's body starts (the stream offset to marshal it at)."""
    encoder = _encode_header(message)
    if _aligns_body(message):
        encoder.align(8)
    return len(encoder)


def encode_message(message: Message, more_fragments: bool = False) -> bytes:
    """The wire bytes of ``message`` (15.4.1 header, then header fields and body)."""
    if message.version not in VERSIONS:
        raise ValueError(f"unsupported GIOP version {message.version}")
    encoder = _encode_header(message)
    body = getattr(message, "body", b"")
    if body and _aligns_body(message):
        encoder.align(8)
    fields = encoder.getvalue()[HEADER_SIZE:]
    flags = (1 if message.little_endian else 0) | (2 if more_fragments else 0)
    size = struct.pack("<I" if message.little_endian else ">I", len(fields) + len(body))
    return b"".join((MAGIC, bytes((1, message.version[1], flags, _TYPES[type(message)])), size,
                     fields, body))


def system_exception_reply(request_id: int, exc: SystemException, *, version: tuple[int, int] = (1, 2),
                           little_endian: bool = True,
                           service_contexts: tuple[ServiceContext, ...] = ()) -> Reply:
    """A SYSTEM_EXCEPTION reply: repository id, minor, completion status (15.4.3.2)."""
    reply = Reply(request_id, ReplyStatus.SYSTEM_EXCEPTION, b"", service_contexts, version,
                  little_endian)
    encoder = Encoder(_codec(little_endian, version), offset=body_offset(reply))
    encoder.write_string(exc._NP_RepositoryId)
    encoder.write_ulong(exc.minor & 0xFFFFFFFF)
    completed = exc.completed._v if hasattr(exc.completed, "_v") else COMPLETED_NO._v
    encoder.write_ulong(completed)
    return attrs.evolve(reply, body=encoder.getvalue())


def location_forward_reply(request_id: int, ior: IOR, *, permanent: bool = False,
                           version: tuple[int, int] = (1, 2), little_endian: bool = True) -> Reply:
    """A LOCATION_FORWARD(_PERM) reply whose body is ``ior``."""
    status = ReplyStatus.LOCATION_FORWARD_PERM if permanent else ReplyStatus.LOCATION_FORWARD
    reply = Reply(request_id, status, b"", (), version, little_endian)
    encoder = Encoder(_codec(little_endian, version), offset=body_offset(reply))
    write_ior(encoder, ior)
    return attrs.evolve(reply, body=encoder.getvalue())


def fragment_message(data: bytes, size: int) -> list[bytes]:
    """Split one encoded GIOP 1.1/1.2 message into a message and Fragments (15.4.9).

    Every piece but the last is a multiple of 8 octets long, so the
    concatenated payloads keep their alignment. ``size`` is the largest
    piece wanted (at least 32).
    """
    little = bool(data[6] & 1)
    minor, kind = data[5], data[7]
    if len(data) <= size or minor < 1 or kind not in FRAGMENTABLE.get(minor, set()):
        return [data]
    order = "<I" if little else ">I"
    first = max(16, size // 8 * 8)
    fragment_header = 16 if minor >= 2 else 12
    step = max(8, (size - fragment_header) // 8 * 8)
    chunks = [data[first:][i:i + step] for i in range(0, len(data) - first, step)]
    pieces = [data[:6] + bytes((data[6] | 2, kind)) + struct.pack(order, first - 12) + data[12:first]]
    for index, chunk in enumerate(chunks):
        last = index == len(chunks) - 1
        extra = data[12:16] if minor >= 2 else b""
        flags = (1 if little else 0) | (0 if last else 2)
        pieces.append(MAGIC + bytes((1, minor, flags, MsgType.FRAGMENT))
                      + struct.pack(order, len(extra) + len(chunk)) + extra + chunk)
    return pieces


# -- decoding ---------------------------------------------------------------------------------


def _read_contexts(decoder: Decoder) -> tuple[ServiceContext, ...]:
    count = decoder.read_ulong()
    if count * 8 > decoder.remaining():
        raise MessageFormatError(FormatMinor.BAD_HEADER, f"{count} service contexts cannot fit",
                                 decoder.pos - 4)
    return tuple(ServiceContext(decoder.read_ulong(), decoder.read_octet_sequence())
                 for _ in range(count))


def _read_target(decoder: Decoder, version: tuple[int, int]) -> TargetAddress:
    if version < (1, 2):
        return KeyAddr(decoder.read_octet_sequence())
    disposition = decoder.read_short()
    if disposition == 0:
        return KeyAddr(decoder.read_octet_sequence())
    if disposition == 1:
        tag = decoder.read_ulong()
        return ProfileAddr(decode_profile(tag, decoder.read_octet_sequence()))
    if disposition == 2:
        index = decoder.read_ulong()
        return ReferenceAddr(index, read_ior(decoder))
    raise MessageFormatError(FormatMinor.BAD_HEADER, f"unknown addressing disposition {disposition}",
                             decoder.pos - 2)


def _status(enum_type: type[enum.IntEnum], value: int, version: tuple[int, int], at: int) -> int:
    limit = len(enum_type) if version >= (1, 2) else (4 if enum_type is ReplyStatus else 3)
    if value >= limit:
        raise MessageFormatError(FormatMinor.BAD_HEADER, f"{enum_type.__name__} {value} in GIOP {version}", at)
    return enum_type(value)


def _body(raw: bytes, decoder: Decoder, aligned: bool) -> tuple[bytes, int]:
    start = decoder.pos
    if aligned and start < len(raw):
        start = min(len(raw), start + (-start & 7))
    return raw[start:], start


def decode_message(raw: bytes) -> Message:
    """Parse one complete, unfragmented message (its header already checked)."""
    version = (raw[4], raw[5])
    little = bool(raw[6] & 1)
    kind = raw[7]
    decoder = Decoder(raw, _codec(little, version), pos=HEADER_SIZE)
    try:
        return _decode(raw, decoder, kind, version, little)
    except SystemException as exc:  # MARSHAL from the stream
        raise MessageFormatError(FormatMinor.BAD_HEADER, f"malformed {MsgType(kind).name} header: {exc}",
                                 decoder.pos) from exc


def _decode(raw: bytes, decoder: Decoder, kind: int, version: tuple[int, int], little: bool) -> Message:
    if kind == MsgType.REQUEST:
        if version < (1, 2):
            contexts = _read_contexts(decoder)
            request_id = decoder.read_ulong()
            flags = RESPONSE_EXPECTED if decoder.read_boolean() else RESPONSE_NONE
            if version == (1, 1):
                decoder.read_octets(3)
            target = _read_target(decoder, version)
            operation = decoder.read_string()
            principal = decoder.read_octet_sequence()
        else:
            request_id = decoder.read_ulong()
            flags = decoder.read_octet()
            decoder.read_octets(3)
            target = _read_target(decoder, version)
            operation = decoder.read_string()
            contexts = _read_contexts(decoder)
            principal = b""
        body, offset = _body(raw, decoder, version >= (1, 2))
        return Request(request_id, target, operation, body, flags, contexts, principal, version,
                       little, offset)
    if kind == MsgType.REPLY:
        if version < (1, 2):
            contexts = _read_contexts(decoder)
        request_id = decoder.read_ulong()
        status = _status(ReplyStatus, decoder.read_ulong(), version, decoder.pos - 4)
        if version >= (1, 2):
            contexts = _read_contexts(decoder)
        body, offset = _body(raw, decoder, version >= (1, 2))
        return Reply(request_id, ReplyStatus(status), body, contexts, version, little, offset)
    if kind == MsgType.CANCEL_REQUEST:
        return CancelRequest(decoder.read_ulong(), version, little)
    if kind == MsgType.LOCATE_REQUEST:
        request_id = decoder.read_ulong()
        return LocateRequest(request_id, _read_target(decoder, version), version, little)
    if kind == MsgType.LOCATE_REPLY:
        request_id = decoder.read_ulong()
        status = _status(LocateStatus, decoder.read_ulong(), version, decoder.pos - 4)
        body, offset = _body(raw, decoder, False)
        return LocateReply(request_id, LocateStatus(status), body, version, little, offset)
    if kind == MsgType.CLOSE_CONNECTION:
        return CloseConnection(version, little)
    if kind == MsgType.MESSAGE_ERROR:
        return MessageError(version, little)
    raise MessageFormatError(FormatMinor.BAD_TYPE, f"message type {kind}", 7)

