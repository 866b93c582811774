"""A test client and a contact listener for the OES wire protocol, written from the seed.

Source: /work/shared/seeds/object-eventing-service.txt, "Wire Protocol": "Lines
of text are exchanged. Each line is delimited by a carriage-return (character
code: U+000D)/linefeed (character code: U+000A) pair"; "Communication is
conducted using UTF-7 encoded character streams"; ``OES-Request-Line = Verb SP
[ Verb-URI SP ] "OES/1.0" CRLF``, ``message-header = field-name ":"
field-value CRLF``, then CRLF and the message body; ``OES-Reply-Line =
"OES/1.0" SP Status-Code SP Reason-Phrase CRLF``. The body's length is the
Content-Length header's ("The response includes at least the Content-Type
and Content-Length message headers"). Independent of cosnotify's codec on
purpose: what one side sends, the other must read unchanged.
"""

from __future__ import annotations

import base64
import socket
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from typing import Any

import attrs

CRLF = b"\r\n"


def request(verb: str, uri: str | None, headers: Iterable[tuple[str, str]] = (),
            body: str | None = None) -> bytes:
    """An OES-Request, as the seed's grammar writes it, UTF-7 encoded."""
    line = f"{verb} {uri} OES/1.0" if uri is not None else f"{verb} OES/1.0"
    lines = [line.encode("utf-7")]
    data = body.encode("utf-7") if body is not None else b""
    for name, value in headers:
        lines.append(f"{name}: {value}".encode("utf-7"))
    if body is not None:
        lines.append(b"Content-Length: %d" % len(data))
    return CRLF.join(lines) + CRLF + CRLF + data


def node_body(content: bytes | None = None, **attributes: str) -> str:
    """A POST's body: "a XML document, with a single <node> element as the document
    element" and an optional <content> child of base64 (``dt:type='bin.base64'``)."""
    attrs_text = "".join(f' {name}="{value}"' for name, value in attributes.items())
    inner = "" if content is None else \
        f"<content>{base64.b64encode(content).decode('ascii')}</content>"
    return f'<?xml version="1.0"?><node{attrs_text}>{inner}</node>'


@attrs.frozen
class Message:
    """A reply (``status``, ``reason``) or a request (``verb``, ``uri``) read off a socket."""

    first: str
    headers: dict[str, str]
    body: str | None

    @property
    def status(self) -> int:
        return int(self.first.split(" ")[1])

    @property
    def reason(self) -> str:
        return self.first.split(" ", 2)[2]

    @property
    def verb(self) -> str:
        return self.first.split(" ", 1)[0]

    @property
    def uri(self) -> str:
        return self.first[self.first.find(" ") + 1:self.first.rfind(" ")]

    def xml(self) -> ET.Element:
        assert self.body is not None
        return ET.fromstring(self.body)


def read_message(sock: socket.socket, buffer: bytearray) -> Message | None:
    """One message off ``sock`` (bytes past it stay in ``buffer``); None at its end."""
    while CRLF + CRLF not in buffer:
        data = sock.recv(65536)
        if not data:
            return None
        buffer += data
    end = buffer.find(CRLF + CRLF)
    lines = bytes(buffer[:end]).split(CRLF)
    del buffer[:end + 4]
    text = [line.decode("utf-7") for line in lines]
    headers = {}
    for line in text[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(buffer) < length:
        data = sock.recv(65536)
        if not data:
            return None
        buffer += data
    body = bytes(buffer[:length]).decode("utf-7") if length else None
    del buffer[:length]
    return Message(text[0], headers, body)


class Client:
    """One connection to the front end: send requests, read replies."""

    def __init__(self, address: tuple[str, int], timeout: float = 10.0) -> None:
        self.sock = socket.create_connection(address, timeout=timeout)
        self.buffer = bytearray()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read(self) -> Message | None:
        return read_message(self.sock, self.buffer)

    def call(self, verb: str, uri: str | None, headers: Iterable[tuple[str, str]] = (),
             body: str | None = None) -> Message:
        self.send(request(verb, uri, headers, body))
        reply = self.read()
        assert reply is not None, "the server closed the connection"
        return reply

    def closed(self) -> bool:
        """The server closed the connection (reads nothing more within the timeout)."""
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return True
                self.buffer += data
        except (TimeoutError, ConnectionError):
            return False

    def close(self) -> None:
        self.sock.close()


class Contact:
    """A client's "incoming notification receiving process": a listener on 127.0.0.1
    that reads NOTIFY requests and answers each (200 unless ``status`` says otherwise;
    ``answer=False`` reads and never answers: a contact that hangs; ``answers=N``
    answers the first N and then hangs; ``close_after`` closes the connection after
    each answer)."""

    def __init__(self, status: int = 200, answer: bool = True,
                 close_after: bool = False, answers: int | None = None) -> None:
        self.status = status
        self.answer = answer
        self.answers = answers
        self.close_after = close_after
        self.notifications: list[Message] = []
        self.connections = 0
        self.cond = threading.Condition()
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.2)
        self.port = self._server.getsockname()[1]
        self._open: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def info(self) -> str:
        """The contact information: "a string of the form 'tcp:<ip-address>:<port>'"."""
        return f"tcp:127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self.cond:
                self.connections += 1
                self._open.append(sock)
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        buffer = bytearray()
        try:
            while True:
                message = read_message(sock, buffer)
                if message is None:
                    return
                with self.cond:
                    self.notifications.append(message)
                    self.cond.notify_all()
                    answer = self.answer and (self.answers is None
                                              or len(self.notifications) <= self.answers)
                if answer:
                    reason = "OK" if self.status == 200 else "Bad request"
                    sock.sendall(f"OES/1.0 {self.status} {reason}".encode("utf-7") + CRLF + CRLF)
                if self.close_after:
                    sock.close()
                    return
        except OSError:
            return

    def wait_for(self, count: int, timeout: float = 10.0) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: len(self.notifications) >= count, timeout)

    def seen(self) -> list[tuple[str, str]]:
        """(operation, node path) of each NOTIFY so far."""
        with self.cond:
            return [(m.xml().get("operation", ""), m.uri) for m in self.notifications]

    def close(self) -> None:
        self._stop.set()
        self._server.close()
        with self.cond:
            for sock in self._open:
                try:
                    sock.close()
                except OSError:
                    pass
        self._thread.join(5)


def eventually(condition: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Poll ``condition`` until it is true (returned) or ``timeout`` passes (False)."""
    deadline = time.monotonic() + timeout
    while True:
        found = condition()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.01)


def number_of(contract_id: str) -> int:
    """The tree's contract number of a ``contractid`` (a UUID, ``dt:type='uuid'``)."""
    return int(contract_id.replace("-", ""), 16)


def content_of(element: ET.Element | None) -> bytes:
    assert element is not None
    return base64.b64decode(element.text or "")
