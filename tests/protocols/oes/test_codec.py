"""The OES codec without sockets: UTF-7 lines, request and reply lines, headers, bodies.

Source: /work/shared/seeds/object-eventing-service.txt, "Wire Protocol" (the
augmented BNF: OES-Request-Line, message-header, OES-Reply-Line; "UTF-7
encoded character streams"; "Each line is delimited by a carriage-return
... /linefeed ... pair"); "Processing Logic" ("If the request is not a
syntactically valid and complete request, status code 400 is returned").
Reader tests feed each input whole, one byte at a time, and with trailing bytes.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cosnotify.protocols.oes.codec import (
    MAX_BODY,
    MAX_HEADERS,
    MAX_LINE,
    ProtocolError,
    Reader,
    Reply,
    Request,
    encode_reply,
    encode_request,
)
from tests.protocols.oes.client import node_body, request

WAYS = ["whole", "bytewise", "trailing"]


def read(data: bytes, way: str, kind: str = "request") -> list[Request | Reply]:
    """Every message in ``data``, fed one of three ways (the trailing bytes begin another
    message, which must wait)."""
    reader = Reader(kind)  # type: ignore[arg-type]
    found: list[Request | Reply] = []

    def drain() -> None:
        while (message := reader.next_message()) is not None:
            found.append(message)

    if way == "bytewise":
        for index in range(len(data)):
            reader.feed(data[index:index + 1])
            drain()
    else:
        reader.feed(data + (b"GET \\A OES/1." if way == "trailing" else b""))
        drain()
        if way == "trailing":
            assert reader.in_frame
    return found


class TestRequestLine:
    """OES-Request-Line = Verb SP [ Verb-URI SP ] "OES/1.0" CRLF."""

    @pytest.mark.parametrize("way", WAYS)
    def test_a_list_request(self, way: str) -> None:
        """A LIST of a node: the verb, the URI (a pathname, "\\" UTF-7 encoded as +AFw-) and
        the version, no headers, no body."""
        data = request("LIST", r"\Asia\India")
        assert b"+AFw-Asia+AFw-India" in data  # "\" is not a direct character of UTF-7
        assert read(data, way) == [Request("LIST", r"\Asia\India", "OES/1.0", (), None)]

    @pytest.mark.parametrize("way", WAYS)
    def test_a_post_with_its_body(self, way: str) -> None:
        """POST: "The message body of the request must be a XML document"; its length is
        the Content-Length header's, in octets of the UTF-7 stream."""
        body = node_body(b"\x00\xff city", upl="1")
        data = request("POST", r"\Asia\India\New Delhi", [("Content-Type", "text/xml")], body)
        [found] = read(data, way)
        assert isinstance(found, Request)
        assert (found.verb, found.uri, found.body) == ("POST", r"\Asia\India\New Delhi", body)
        assert found.header("content-type") == "text/xml"

    @pytest.mark.parametrize("way", WAYS)
    def test_the_uri_holds_spaces(self, way: str) -> None:
        """Verb SP Verb-URI SP "OES/1.0": the URI is what lies between the first and the last
        space ("New Delhi" is a nodename of Figure 1)."""
        [found] = read(b"GET \\Asia\\India\\New Delhi OES/1.0\r\n\r\n", way)
        assert isinstance(found, Request) and found.uri == "\\Asia\\India\\New Delhi"

    def test_the_uri_is_optional(self) -> None:
        """"[ Verb-URI SP ]": a request line may have no URI."""
        [found] = read(b"LIST OES/1.0\r\n\r\n", "whole")
        assert isinstance(found, Request) and (found.verb, found.uri) == ("LIST", None)

    def test_both_versions_are_read(self) -> None:
        """The lines say "OES/1.0", the OES-Version rule "OES/0.1": both are read."""
        found = read(b"GET \\A OES/0.1\r\n\r\nGET \\A OES/1.0\r\n\r\n", "whole")
        assert [m.version for m in found] == ["OES/0.1", "OES/1.0"]

    def test_leading_empty_lines_are_skipped(self) -> None:
        """Empty lines before a request line are ignored (RFC 2068 4.1, the model the seed
        follows) and do not count as a message begun."""
        reader = Reader()
        reader.feed(b"\r\n\r\n")
        assert reader.next_message() is None and not reader.in_frame
        reader.feed(b"GET \\A OES/1.0\r\n\r\n")
        assert isinstance(reader.next_message(), Request)

    def test_several_requests_in_one_read(self) -> None:
        """"any number of request-reply exchanges may occur": requests sent back to back
        come out in order."""
        data = request("GET", "\\A") + request("LIST", "\\") + request("REMOVE", "\\A")
        assert [m.verb for m in read(data, "whole")] == ["GET", "LIST", "REMOVE"]  # type: ignore[union-attr]


class TestHeaders:
    """message-header = field-name ":" field-value CRLF."""

    @pytest.mark.parametrize("way", WAYS)
    def test_headers_in_order_any_case(self, way: str) -> None:
        """Header names are matched without regard to case; values lose surrounding blanks."""
        data = request("SUBSCRIBE", "\\Asia", [("Contract-id", " 7 "),
                                               ("Cache-last-notification", "cache")])
        [found] = read(data, way)
        assert isinstance(found, Request)
        assert found.header("CONTRACT-ID") == "7" and found.header("cache-last-notification") \
            == "cache"
        assert found.header("Depth") is None

    def test_a_header_value_in_utf7(self) -> None:
        """Header values are UTF-7 text like every line."""
        [found] = read("GET \\A OES/1.0\r\nX-Note: Dublin ~ \u00e9\r\n\r\n".encode("utf-7"),
                       "whole")
        assert isinstance(found, Request) and found.header("x-note") == "Dublin ~ \u00e9"


class TestReplies:
    """OES-Reply-Line = "OES/1.0" SP Status-Code SP Reason-Phrase CRLF."""

    @pytest.mark.parametrize("way", WAYS)
    def test_a_reply_with_a_body(self, way: str) -> None:
        """A GET's reply: "at least the Content-Type and Content-Length message headers"."""
        data = encode_reply(200, (("Content-Type", "text/xml"),), "<node nodename=\"\"/>")
        assert data.startswith(b"OES/1.0 200 OK\r\n") and b"Content-Length: 19\r\n" in data
        [found] = read(data, way, "reply")
        assert isinstance(found, Reply)
        assert (found.status, found.reason, found.body) == (200, "OK", "<node nodename=\"\"/>")

    def test_the_seeds_reason_phrases(self) -> None:
        """Reason-Phrase = "OK" | "Bad request" | "Not found"; 400 has "no header lines,
        and no content lines"."""
        assert encode_reply(400) == b"OES/1.0 400 Bad request\r\n\r\n"
        assert encode_reply(404) == b"OES/1.0 404 Not found\r\n\r\n"
        assert encode_reply(200) == b"OES/1.0 200 OK\r\n\r\n"

    @settings(max_examples=200, deadline=None)
    @given(st.text(max_size=50).filter(lambda t: "\r" not in t and "\n" not in t),
           st.one_of(st.none(), st.text(max_size=200)))
    def test_request_round_trip(self, uri: str, body: str | None) -> None:
        """What encode_request writes, a Reader reads back unchanged (UTF-7 both ways)."""
        uri = "\\" + uri.replace(" ", "_")
        body = None if body == "" else body
        if any("\ud800" <= c <= "\udfff" or c < " " and c != "\t" or c == "\x7f"
               for c in uri) or (body is not None and any("\ud800" <= c <= "\udfff"
                                                          for c in body)):
            return
        data = encode_request("POST", uri, (("Content-Type", "text/xml"),), body)
        [found] = read(data, "whole")
        assert isinstance(found, Request) and (found.uri, found.body) == (uri, body)


class TestRefused:
    """"If the request is not a syntactically valid and complete request, status code 400
    is returned": ProtocolError, fatal only when the next message cannot be found."""

    @pytest.mark.parametrize(("data", "why"), [
        (b"GET \\A HTTP/1.1\r\n\r\n", "OES/1.0"),
        (b"GET\r\n\r\n", "request line"),
        (b"G(T \\A OES/1.0\r\n\r\n", "token"),
        (b"GET \\\xff OES/1.0\r\n\r\n", "UTF-7"),
        (b"GET +2AA- OES/1.0\r\n\r\n", "surrogate"),
        (b"GET +AAA- OES/1.0\r\n\r\n", "control"),
        (b"GET \\A OES/1.0\r\nno colon\r\n\r\n", "header"),
        (b"GET \\A OES/1.0\r\nBad Name: x\r\n\r\n", "header"),
        (b"GET \\A\nx OES/1.0\r\n\r\n", "CRLF"),
        (b"POST \\A OES/1.0\r\nContent-Length: 2\r\n\r\n\xff\xff", "UTF-7"),
    ])
    def test_skipped_and_the_next_is_read(self, data: bytes, why: str) -> None:
        """A malformed request whose extent is known is refused alone; the next one on the
        stream is read."""
        reader = Reader()
        reader.feed(b"GET \\ok OES/1.0\r\n\r\n" + data + b"LIST \\B OES/1.0\r\n\r\n")
        assert isinstance(reader.next_message(), Request)
        with pytest.raises(ProtocolError) as caught:
            reader.next_message()
        assert why in caught.value.reason and not caught.value.fatal
        assert caught.value.offset == len(b"GET \\ok OES/1.0\r\n\r\n")
        found = reader.next_message()
        assert isinstance(found, Request) and found.uri == "\\B"

    @pytest.mark.parametrize(("data", "why"), [
        (b"POST \\A OES/1.0\r\nContent-Length: x\r\n\r\n", "Content-Length"),
        (b"POST \\A OES/1.0\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "two"),
        (b"POST \\A OES/1.0\r\nContent-Length: %d\r\n\r\n" % (MAX_BODY + 1), "limit"),
        (b"GET \\" + b"A" * (MAX_LINE + 1), "line"),
        (b"GET \\A OES/1.0\r\n" + b"X: y\r\n" * (MAX_HEADERS + 1) + b"\r\n", "headers"),
    ])
    def test_fatal_when_the_extent_is_unknown(self, data: bytes, why: str) -> None:
        """A body length that cannot be trusted, a line or head that never ends: the
        stream cannot go on (the session answers 400 and closes)."""
        reader = Reader()
        reader.feed(data)
        with pytest.raises(ProtocolError) as caught:
            reader.next_message()
        assert why in caught.value.reason and caught.value.fatal

    def test_the_frame_limit(self) -> None:
        """A Reader's ``max_frame`` (Limits.max_frame) bounds a whole message."""
        reader = Reader(max_frame=100)
        reader.feed(b"POST \\A OES/1.0\r\nContent-Length: 90\r\n\r\n")
        with pytest.raises(ProtocolError, match="limit|over 100"):
            reader.next_message()

    def test_a_reply_line_is_checked(self) -> None:
        """A reply must start "OES/1.0" SP Status-Code (three digits)."""
        reader = Reader("reply")
        reader.feed(b"OES/1.0 2000 OK\r\n\r\n")
        with pytest.raises(ProtocolError, match="reply line"):
            reader.next_message()


def _valid() -> list[bytes]:
    return [request("GET", r"\Asia\India"),
            request("POST", r"\Europe\France\Paris", [("Content-Type", "text/xml")],
                    node_body(b"Paris", upl="-1", barricade="1")),
            request("SUBSCRIBE", "\\Europe", [("Contract-id", "1"), ("Depth", "2")]),
            request("LEASECONTRACT", "tcp:127.0.0.1:9", [("Quality-of-service", "keep-alive")])]


class TestFuzz:
    """Random and mutated bytes into a Reader raise only ProtocolError."""

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.binary(max_size=600), st.integers(1, 64))
    def test_random_bytes(self, data: bytes, chunk: int) -> None:
        """Any bytes, in any chunks: messages, None, or ProtocolError; nothing else."""
        reader = Reader(max_frame=4096)
        for index in range(0, len(data), chunk):
            reader.feed(data[index:index + chunk])
            for _ in range(8):
                try:
                    if reader.next_message() is None:
                        break
                except ProtocolError as exc:
                    if exc.fatal:
                        return

    @settings(max_examples=200, deadline=None)
    @given(st.integers(0, 2 ** 32), st.integers(0, 3), st.integers(1, 8))
    def test_mutated_requests(self, seed: int, which: int, flips: int) -> None:
        """Valid requests with bytes flipped, dropped or doubled: only ProtocolError."""
        rng = random.Random(seed)
        data = bytearray(_valid()[which])
        for _ in range(flips):
            at = rng.randrange(len(data))
            action = rng.randrange(3)
            if action == 0:
                data[at] = rng.randrange(256)
            elif action == 1:
                del data[at]
            else:
                data.insert(at, data[at])
        reader = Reader(kind=rng.choice(["request", "reply"]))
        reader.feed(bytes(data) + _valid()[0])
        for _ in range(4):
            try:
                if reader.next_message() is None:
                    break
            except ProtocolError as exc:
                if exc.fatal:
                    break
