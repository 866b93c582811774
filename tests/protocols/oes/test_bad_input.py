"""Hostile input over the socket: answered with 400 or a closed connection, never a crash
or a hang, and other clients keep working.

Source: issue 22, "Bad input" ("truncated frames, oversize lengths, unknown packet
types, invalid UTF-8/UTF-7, deep XML and entity bombs, and slow-loris
connections; each is refused with the protocol's own error (Nack, failure,
400) or a closed connection"); /work/shared/seeds/object-eventing-service.txt,
"Processing Logic" ("If the request is not a syntactically valid and
complete request, status code 400 is returned").
"""

from __future__ import annotations

import logging
import random
import socket
from collections.abc import Callable

import pytest

from cosnotify.oes import Tree
from cosnotify.protocols.listener import Limits
from cosnotify.protocols.oes import OESFrontEnd
from cosnotify.protocols.oes.codec import MAX_BODY, MAX_LINE
from tests.protocols.oes.client import Client, eventually, node_body, request

BOMB = ('<?xml version="1.0"?><!DOCTYPE node [<!ENTITY a "aaaaaaaaaa">'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;">'
        ']><node><content>&c;</content></node>')


def works(fe: OESFrontEnd) -> bool:
    """Another client gets its answer (the front end is alive)."""
    other = Client(fe.address, timeout=5)
    try:
        return other.call("LIST", "\\").status == 200
    finally:
        other.close()


class TestAnsweredWith400:
    """Malformed requests whose extent is known: 400, and the connection goes on."""

    @pytest.mark.parametrize("data", [
        b"FROB \\A OES/1.0\r\n\r\n",                             # an unknown verb
        b"GET \\\xff\xfe OES/1.0\r\n\r\n",                       # not UTF-7 (nor ASCII)
        b"GET +2D3-x OES/1.0\r\n\r\n",                           # a lone surrogate
        b"GET \\A OES/9.9\r\n\r\n",                              # another version
        b"GET \\A OES/1.0\r\nno-colon\r\n\r\n",                  # not a header
        request("POST", "\\A", body=BOMB),                       # an entity bomb
        request("POST", "\\A", body="<node>" + "<x>" * 5000 + "</x>" * 5000 + "</node>"),
        request("POST", "\\A", body="<node><content>@@@</content></node>"),
        request("POST", "\\A", body="<node"),                    # truncated XML
    ])
    def test_refused_and_the_connection_goes_on(self, tree: Tree, client: Client,
                                                data: bytes) -> None:
        """The request is refused (400), nothing changes, the next request is answered."""
        client.send(data)
        reply = client.read()
        assert reply is not None and reply.status == 400 and reply.body is None
        assert len(tree) == 1
        assert client.call("POST", "\\A", body=node_body(b"ok")).status == 200
        assert tree.get("\\A").content == b"ok"


class TestClosed:
    """Where the next request would start is unknown: 400, then the connection closes."""

    @pytest.mark.parametrize("data", [
        b"POST \\A OES/1.0\r\nContent-Length: %d\r\n\r\n" % (MAX_BODY + 1),   # oversize
        b"POST \\A OES/1.0\r\nContent-Length: 99999999999999\r\n\r\n",
        b"POST \\A OES/1.0\r\nContent-Length: -1\r\n\r\n",
        b"GET \\" + b"A" * (MAX_LINE + 10),                                    # endless line
        b"GET \\A OES/1.0\r\n" + b"X: 1\r\n" * 40 + b"\r\n",                   # too many headers
    ])
    def test_answered_then_closed(self, fe: OESFrontEnd, client: Client, data: bytes) -> None:
        """400, then the server closes; other clients are served meanwhile."""
        client.send(data)
        reply = client.read()
        assert reply is not None and reply.status == 400
        assert client.closed()
        assert works(fe)

    def test_truncated_request(self, fe: OESFrontEnd, tree: Tree) -> None:
        """A request cut short by the client's close changes nothing."""
        sock = socket.create_connection(fe.address)
        sock.sendall(request("POST", "\\A", body=node_body(b"x"))[:-5])
        sock.close()
        assert works(fe) and len(tree) == 1

    def test_slow_loris(self, serve: Callable[..., OESFrontEnd]) -> None:
        """A request begun and never finished is closed after Limits.read_timeout; another
        client is served meanwhile."""
        fe = serve(limits=Limits(read_timeout=0.5))
        slow = Client(fe.address, timeout=10)
        try:
            slow.send(b"GET \\Asia OES/1.0\r\nX-Slow: ")
            assert works(fe)
            assert slow.closed()
            assert eventually(lambda: fe.counters.closed_bad == 1)
        finally:
            slow.close()

    def test_silent_connections_are_closed_after_read_timeout(
            self, serve: Callable[..., OESFrontEnd]) -> None:
        """Review 118: a connection that never sent a byte counted as idle and was kept
        for idle_timeout (an hour), so a peer's silent sockets held every connection
        slot. Before its first request a connection is held to Limits.read_timeout,
        as a request begun is; then the slots are free for other clients."""
        fe = serve(limits=Limits(read_timeout=0.3, max_connections=4))  # idle: an hour
        silent = [Client(fe.address, timeout=10) for _ in range(4)]
        try:
            assert all(s.closed() for s in silent)  # the peer closes them: no sleep
            assert eventually(lambda: fe.counters.open == 0)
            assert fe.counters.closed_bad == 4
            assert works(fe)
        finally:
            for s in silent:
                s.close()

    def test_connection_limit(self, serve: Callable[..., OESFrontEnd]) -> None:
        """Limits.max_connections: the next connection is closed at once."""
        fe = serve(limits=Limits(max_connections=1))
        first = Client(fe.address)
        try:
            assert first.call("LIST", "\\").status == 200
            second = Client(fe.address, timeout=5)
            try:
                assert second.closed()
            finally:
                second.close()
            assert fe.counters.refused == 1
            assert first.call("LIST", "\\").status == 200
        finally:
            first.close()


class TestPipelined:
    """Requests sent back to back are answered in order."""

    def test_in_order(self, client: Client, tree: Tree) -> None:
        """Three requests in one write, three replies in order."""
        client.send(request("POST", "\\A", body=node_body(b"a")) + request("GET", "\\A")
                    + request("GET", "\\B"))
        replies = [client.read() for _ in range(3)]
        assert [r.status for r in replies if r is not None] == [200, 200, 404]


def test_random_bytes_over_the_socket(fe: OESFrontEnd, caplog: pytest.LogCaptureFixture) -> None:
    """Seeded random and mutated requests, each on its own connection: every one is
    answered (400 or other) or closed, none hangs, no session fails with a bug, and the
    front end still serves."""
    rng = random.Random(22)
    valid = [request("LIST", "\\"), request("POST", "\\Z", body=node_body(b"z", upl="2")),
             request("LEASECONTRACT", "tcp:127.0.0.1:9"),
             request("SUBSCRIBE", "\\", [("Contract-id", "1")])]
    caplog.set_level(logging.ERROR, logger="cosnotify.protocols")
    for _ in range(40):
        if rng.random() < 0.5:
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
        else:
            data = bytearray(rng.choice(valid))
            for _ in range(rng.randrange(1, 6)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            data = bytes(data)
        sock = socket.create_connection(fe.address, timeout=10)
        try:
            sock.sendall(data + b"\r\n\r\n")
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(65536):  # answered, then closed when the client's side ends
                pass
        finally:
            sock.close()
    assert works(fe)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert eventually(lambda: fe.counters.open == 0)
