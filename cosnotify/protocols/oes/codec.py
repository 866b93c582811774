"""The OES wire protocol's messages, without I/O: UTF-7 lines, headers, a body.

Strategy: the h11 model. A :class:`Reader` is fed the bytes a peer sent
(``feed``) and hands back whole messages (``next_message``: a
:class:`Request` or a :class:`Reply`, or None while it needs more bytes);
:func:`encode_request` and :func:`encode_reply` turn messages into bytes.
Nothing here touches a socket. Anything malformed raises
:class:`ProtocolError`, whose ``fatal`` says whether the stream can go on (the
message's extent was known and it was skipped whole) or must be closed (where
the next message starts is unknown); any other exception from a Reader is a
bug.

The seed's "Wire Protocol" section, /work/shared/seeds/object-eventing-service.txt:

- "Communication is conducted using UTF-7 encoded character streams. Lines
  of text are exchanged. Each line is delimited by a carriage-return ...
  /linefeed ... pair." Each line is split on CRLF in the byte stream (CR and
  LF never occur inside a UTF-7 shifted run, whose alphabet is base64's) and
  decoded with the UTF-7 codec, strictly: a byte above 0x7F, a broken
  shifted run or a lone surrogate is a 400. Leading empty lines before a
  request are skipped (RFC 2068's robustness rule, which the seed follows).
- ``OES-Request-Line = Verb SP [ Verb-URI SP ] "OES/1.0" CRLF``: the verb is
  what precedes the first space, the version what follows the last; the
  Verb-URI is everything between, spaces included (nodenames hold spaces:
  "New Delhi"), taken literally (no percent-decoding). The grammar's lines
  say ``OES/1.0`` while its ``OES-Version`` rule says ``OES/0.1``: both are
  accepted; replies say ``OES/1.0``.
- ``OES-Reply-Line = "OES/1.0" SP Status-Code SP Reason-Phrase CRLF``.
- ``message-header = field-name ":" field-value CRLF``: names are tokens,
  matched without regard to case (as in HTTP, which the seed follows);
  values are stripped of surrounding blanks.
- The body: the seed's replies carry "at least the Content-Type and
  Content-Length message headers", the HTTP rule: a message has a body of
  ``Content-Length`` octets (of the UTF-7 stream) when it says so, none
  otherwise.

Limits (docs/protocols.md, "OES", "Limits"): a line holds at most
:data:`MAX_LINE` octets, a message at most :data:`MAX_HEADERS` headers, a
body at most :data:`MAX_BODY` octets, a whole message at most the Reader's
``max_frame``.
"""

from __future__ import annotations

import re
from typing import Final, Literal

import attrs

__all__ = [
    "MAX_BODY",
    "MAX_HEADERS",
    "MAX_LINE",
    "REASONS",
    "VERSION",
    "VERSIONS",
    "ProtocolError",
    "Reader",
    "Reply",
    "Request",
    "decode_text",
    "encode_reply",
    "encode_request",
]

#: The version replies and requests this side makes carry (OES-Request-Line, OES-Reply-Line).
VERSION: Final = "OES/1.0"
#: The versions a message may carry: the lines' ``OES/1.0`` and the ``OES-Version`` rule's
#: ``OES/0.1``.
VERSIONS: Final = frozenset({"OES/1.0", "OES/0.1"})
#: Octets in one line (the request or reply line, a header), CRLF excluded.
MAX_LINE: Final = 8192
#: Header lines in one message.
MAX_HEADERS: Final = 32
#: Octets in one body (Content-Length): a node's content is at most 7,680 bytes (NODE table,
#: ``Char[10240]`` of base64), whose base64 is at most 20,480 octets of UTF-7.
MAX_BODY: Final = 65536
#: The seed's Reason-Phrase for each Status-Code it names; 402 is the code its LIST and GET
#: verbs give for "no matching node"; 503 is cosnotify's (module docs of session.py).
REASONS: Final = {200: "OK", 400: "Bad request", 402: "Not found", 404: "Not found",
                  500: "Internal error", 503: "Service unavailable"}

_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
_CONTROL: Final = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_SURROGATE: Final = re.compile(r"[\ud800-\udfff]")
_STATUS: Final = re.compile(r"[0-9]{3}\Z")
_DIGITS: Final = re.compile(r"[0-9]+\Z")
_HEAD_END: Final = b"\r\n\r\n"


class ProtocolError(ValueError):
    """A malformed message: ``reason`` says what is wrong, ``offset`` where the message
    began in the stream (octets fed before it), ``fatal`` whether the stream must be
    closed (True: where the next message starts is unknown)."""

    def __init__(self, reason: str, *, offset: int = 0, fatal: bool = False) -> None:
        super().__init__(f"{reason} (message at octet {offset}"
                         f"{', the stream cannot go on' if fatal else ''})")
        self.reason = reason
        self.offset = offset
        self.fatal = fatal


Headers = tuple[tuple[str, str], ...]


def _header(headers: Headers, name: str) -> str | None:
    wanted = name.lower()
    for key, value in headers:
        if key.lower() == wanted:
            return value
    return None


@attrs.frozen
class Request:
    """An OES-Request: the verb, the Verb-URI (None when the line has none), the
    version, the headers in order, and the body (decoded text; None: no body)."""

    verb: str
    uri: str | None
    version: str = VERSION
    headers: Headers = ()
    body: str | None = None

    def header(self, name: str) -> str | None:
        """The first header of that name (any case), or None."""
        return _header(self.headers, name)


@attrs.frozen
class Reply:
    """An OES-Reply: the status, the reason phrase, the version, headers and body."""

    status: int
    reason: str = ""
    version: str = VERSION
    headers: Headers = ()
    body: str | None = None

    def header(self, name: str) -> str | None:
        return _header(self.headers, name)


def decode_text(data: bytes, what: str) -> str:
    """``data`` decoded from UTF-7, strictly; ValueError (with ``what``) if it is not."""
    try:
        text = data.decode("utf-7")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what} is not UTF-7: {exc.reason} at octet {exc.start}") from None
    if _SURROGATE.search(text):
        raise ValueError(f"{what} is not UTF-7 of Unicode text: it holds a lone surrogate")
    return text


def _encode(text: str) -> bytes:
    return text.encode("utf-7")


def _head_lines(first: str, headers: Headers, body: bytes | None) -> list[str]:
    lines = [first]
    for name, value in headers:
        if not _TOKEN.match(name) or "\r" in value or "\n" in value:
            raise ValueError(f"not a header: {name!r}: {value!r}")
        lines.append(f"{name}: {value}")
    if body is not None and _header(headers, "Content-Length") is None:
        lines.append(f"Content-Length: {len(body)}")
    return lines


def _message(lines: list[str], body: bytes | None) -> bytes:
    head = _encode("\r\n".join(lines) + "\r\n\r\n")
    return head + body if body is not None else head


def encode_request(verb: str, uri: str | None, headers: Headers = (),
                   body: str | None = None, version: str = VERSION) -> bytes:
    """An OES-Request as UTF-7 bytes; a body gets its Content-Length (in octets)."""
    if not _TOKEN.match(verb) or (uri is not None and ("\r" in uri or "\n" in uri)):
        raise ValueError(f"not a request line: {verb!r} {uri!r}")
    data = _encode(body) if body is not None else None
    first = f"{verb} {uri} {version}" if uri is not None else f"{verb} {version}"
    return _message(_head_lines(first, headers, data), data)


def encode_reply(status: int, headers: Headers = (), body: str | None = None,
                 reason: str | None = None) -> bytes:
    """An OES-Reply as UTF-7 bytes (the seed's reason phrase for ``status`` unless given)."""
    data = _encode(body) if body is not None else None
    first = f"{VERSION} {status} {reason if reason is not None else REASONS.get(status, '')}"
    return _message(_head_lines(first, headers, data), data)


class Reader:
    """Messages out of a byte stream (module docstring): requests (``kind="request"``,
    the server's side and a contact's) or replies (``kind="reply"``)."""

    def __init__(self, kind: Literal["request", "reply"] = "request", *,
                 max_frame: int = 1 << 20, max_body: int = MAX_BODY) -> None:
        self.kind = kind
        self.max_frame = max_frame
        self.max_body = min(max_body, max_frame)
        self._buffer = bytearray()
        self._consumed = 0          # octets of the stream before the buffer
        self._searched = 0          # where the search for the head's end goes on
        self._head: tuple[int, int] | None = None  # (end of head, body length), once known

    def feed(self, data: bytes) -> None:
        """Bytes the peer sent, in order."""
        self._buffer += data

    @property
    def in_frame(self) -> bool:
        """A message has begun and is not whole yet (its octets must come in time)."""
        return bool(self._buffer.strip(b"\r\n")) if self.kind == "request" \
            else bool(self._buffer)

    def next_message(self) -> Request | Reply | None:
        """The next whole message, or None until more bytes come; ProtocolError for a
        malformed one (skipped whole unless ``fatal``)."""
        buffer = self._buffer
        if self._head is None:
            if self.kind == "request":  # RFC 2068 4.1: empty lines before a request
                start = 0
                while buffer.startswith(b"\r\n", start):
                    start += 2
                if start:
                    self._drop(start)
            end = buffer.find(_HEAD_END, self._searched)
            if end < 0:
                self._searched = max(0, len(buffer) - 3)
                last = buffer.rfind(b"\r\n")
                if len(buffer) - (last + 2 if last >= 0 else 0) > MAX_LINE:
                    self._fail(f"a line is over {MAX_LINE} octets", fatal=True)
                if len(buffer) > self._max_head():
                    self._fail(f"the head of a message is over {self._max_head()} "
                               "octets", fatal=True)
                return None
            self._head = (end, self._content_length(bytes(buffer[:end])))
        end, length = self._head
        total = end + 4 + length
        if len(buffer) < total:
            return None
        head, body = bytes(buffer[:end]), bytes(buffer[end + 4:total])
        offset = self._consumed
        self._head = None
        self._searched = 0
        self._drop(total)
        try:
            return self._parse(head, body if length else None)
        except ValueError as exc:
            raise ProtocolError(str(exc), offset=offset) from None

    # -- helpers -------------------------------------------------------------------------
    def _max_head(self) -> int:
        return min(self.max_frame, (MAX_LINE + 2) * (MAX_HEADERS + 1) + 2)

    def _drop(self, count: int) -> None:
        del self._buffer[:count]
        self._consumed += count

    def _fail(self, reason: str, fatal: bool) -> None:
        offset = self._consumed
        if fatal:  # nothing more is read from this stream
            self._buffer.clear()
            self._head = None
        raise ProtocolError(reason, offset=offset, fatal=fatal)

    def _content_length(self, head: bytes) -> int:
        """The body's octets, from the head's raw lines (fatal when it cannot be known)."""
        found: int | None = None
        if head.count(b"\r\n") > MAX_HEADERS:
            self._fail(f"a message has at most {MAX_HEADERS} headers", fatal=True)
        for line in head.split(b"\r\n")[1:]:
            # the header as _parse will read it: its UTF-7 text (a shifted run may spell
            # any of it), so the body's extent and the header the request carries agree
            try:
                text = line.decode("utf-7")
            except UnicodeDecodeError:  # a 400 from _parse; the octets meanwhile
                text = line.decode("latin-1")
            name, colon, raw = text.partition(":")
            if not colon or name.strip().lower() != "content-length":
                continue
            raw = raw.strip()
            if not _DIGITS.match(raw) or len(raw) > 12:
                self._fail("Content-Length is not a number of octets", fatal=True)
            length = int(raw)
            if found is not None and found != length:
                self._fail("two different Content-Length headers", fatal=True)
            found = length
        length = found or 0
        if length > self.max_body:
            self._fail(f"a body of {length} octets is over the limit of {self.max_body}",
                       fatal=True)
        if len(head) + 4 + length > self.max_frame:
            self._fail(f"a message is over {self.max_frame} octets", fatal=True)
        return length

    def _parse(self, head: bytes, body: bytes | None) -> Request | Reply:
        raw = head.split(b"\r\n")
        for number, octets in enumerate(raw):
            if len(octets) > MAX_LINE:
                raise ValueError(f"line {number + 1} is over {MAX_LINE} octets")
            if b"\r" in octets or b"\n" in octets:
                raise ValueError(f"line {number + 1} holds a CR or LF of its own: lines "
                                 "are delimited by a CRLF pair")
        lines = [decode_text(octets, f"line {number + 1}") for number, octets in enumerate(raw)]
        for number, line in enumerate(lines):
            if _CONTROL.search(line):
                raise ValueError(f"line {number + 1} holds a control character")
        headers = tuple(self._header_line(line, number + 2)
                        for number, line in enumerate(lines[1:]))
        text = decode_text(body, "the body") if body is not None else None
        if self.kind == "request":
            verb, uri, version = _request_line(lines[0])
            return Request(verb, uri, version, headers, text)
        version, status, reason = _reply_line(lines[0])
        return Reply(status, reason, version, headers, text)

    @staticmethod
    def _header_line(line: str, number: int) -> tuple[str, str]:
        name, colon, value = line.partition(":")
        if not colon or not _TOKEN.match(name):
            raise ValueError(f"line {number} is not a header (field-name \":\" field-value)")
        return name, value.strip(" \t")


def _request_line(line: str) -> tuple[str, str | None, str]:
    """Verb SP [ Verb-URI SP ] "OES/1.0"."""
    first, last = line.find(" "), line.rfind(" ")
    if first <= 0:
        raise ValueError("the request line is Verb SP [ Verb-URI SP ] \"OES/1.0\"")
    verb, version = line[:first], line[last + 1:]
    if not _TOKEN.match(verb):
        raise ValueError("the verb is not a token")
    if version not in VERSIONS:
        raise ValueError(f"the request line ends with \"OES/1.0\", not {version[:20]!r}")
    return verb, (line[first + 1:last] if last > first else None), version


def _reply_line(line: str) -> tuple[str, int, str]:
    """"OES/1.0" SP Status-Code SP Reason-Phrase."""
    version, _, rest = line.partition(" ")
    status, _, reason = rest.partition(" ")
    if version not in VERSIONS or not _STATUS.match(status):
        raise ValueError("the reply line is \"OES/1.0\" SP Status-Code SP Reason-Phrase")
    return version, int(status), reason
