"""Hostile input over the socket: refused with Nack, Disconn or a closed connection, never
a crash or a hang, and other clients keep working (issue 22, "Bad input"; seed §7.3)."""

from __future__ import annotations

import logging
import socket
import struct
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.protocols.elvin.client import (
    Client,
    frame,
    notify_emit,
    string,
    u32,
    wait_until,
)

Make = Callable[[], Client]


def connected(make: Make, options: Any = ()) -> Client:
    c = make()
    c.connect(options)
    return c


def still_works(make: Make) -> None:
    """A fresh pair of clients can subscribe and deliver: nothing was lost for others."""
    sub = connected(make)
    sub.subscribe("require(ok)")
    connected(make).send(notify_emit({"ok": 1}))
    assert sub.expect("NotifyDeliver")["attributes"] == {"ok": 1}


@pytest.fixture
def no_bugs(caplog: pytest.LogCaptureFixture) -> Any:
    """Fails the test if the listener logged a session failure (a bug, not bad input)."""
    caplog.set_level(logging.INFO, logger="cosnotify.protocols")
    yield caplog
    bugs = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not bugs, [r.getMessage() for r in bugs]


class TestFraming:
    """§8.2.1 framing attacks."""

    def test_oversize_length_resets(self, client: Make, no_bugs: Any) -> None:
        """A header over Packet.Max-Length: "MUST reset the TCP connection"."""
        c = connected(client)
        c.send(struct.pack(">I", 1 << 30) + b"\0" * 16)
        assert c.closed()
        still_works(client)

    def test_zero_length_frame(self, client: Make, no_bugs: Any) -> None:
        """A frame too short for a pkt_id closes the connection."""
        c = connected(client)
        c.send(struct.pack(">I", 0))
        assert c.closed()

    def test_truncated_frame_then_close(self, client: Make, front_end: Any, channel: Any,
                                        no_bugs: Any) -> None:
        """A client that goes mid-packet is a communications error (§7.3.1): "a router
        implementation SHOULD clean up all state associated with the channel" -- its
        proxies go -- and nothing else is affected."""
        c = connected(client)
        c.subscribe("require(x)")
        c.send(notify_emit({"x": 1})[:9])
        c.close()
        consumers = channel._get_default_consumer_admin()
        suppliers = channel._get_default_supplier_admin()
        assert wait_until(lambda: not front_end.router.sessions
                          and not consumers._get_push_suppliers()
                          and not suppliers._get_push_consumers())
        still_works(client)

    def test_unknown_packet_type_closes(self, client: Make, no_bugs: Any) -> None:
        """§7.3.2: a packet that "cannot be unmarshalled" may end the channel at once."""
        c = connected(client)
        c.send(frame(99, b"\0" * 8))
        assert c.closed()
        still_works(client)

    def test_slow_loris(self, client: Make, no_bugs: Any) -> None:
        """A frame that never completes is closed after the read timeout, and another
        client is served meanwhile."""
        slow = connected(client)
        slow.send(struct.pack(">I", 100) + b"\0\0\0")
        still_works(client)
        slow.sock.settimeout(10)
        assert slow.closed()

    def test_silence_before_conn_rqst(self, client: Make, no_bugs: Any) -> None:
        """§7.4.3: "A router SHOULD close a channel from which it has received neither a
        ConnRqst or a UNotify within a reasonable time period" (the read timeout)."""
        silent = client()
        silent.sock.settimeout(10)
        assert silent.closed()


class TestBadPackets:
    """Well-framed packets with bad contents."""

    def test_invalid_utf8_is_nacked(self, client: Make, no_bugs: Any) -> None:
        """BAD_UTF8 (1006) with the offset; the session goes on."""
        c = connected(client)
        c.send(frame("SubAddRqst", u32(5) + u32(2) + b"\xc3\x28\0\0" + u32(1) + u32(0)))
        nack = c.expect("Nack")
        assert (nack["xid"], nack["error"], nack["args"]) == (5, 1006, [12])
        c.subscribe("require(x)")

    def test_a_malformed_request_is_nacked(self, client: Make, no_bugs: Any) -> None:
        """A request whose xid was read but whose body is short: PROT_ERROR (1001)."""
        c = connected(client)
        c.send(frame("SubAddRqst", u32(6) + string("x > 1")))
        nack = c.expect("Nack")
        assert (nack["xid"], nack["error"]) == (6, 1001)

    def test_a_malformed_notify_emit_is_ignored(self, client: Make, front_end: Any,
                                                no_bugs: Any) -> None:
        """§7.3.3: a router "SHOULD ignore" a protocol error in a NotifyEmit."""
        sub = connected(client)
        sub.subscribe("require(x)")
        pub = connected(client)
        pub.send(frame("NotifyEmit", u32(1) + string("x") + u32(9)) + notify_emit({"x": 2}))
        assert sub.expect("NotifyDeliver")["attributes"] == {"x": 2}
        assert front_end.router.stats.notifications_ignored == 1

    def test_repeated_protocol_errors_disconnect(self, client: Make, no_bugs: Any) -> None:
        """§7.3.3 / §7.4.7: repeated protocol errors end in Disconn reason 4."""
        c = connected(client)
        c.send(b"".join(frame("SubAddRqst", u32(i + 1)) for i in range(20)))
        while (packet := c.recv()) is not None and packet["type"] == "Nack":
            assert packet["error"] == 1001
        assert packet is not None and (packet["type"], packet["reason"]) == ("Disconn", 4)
        assert c.closed()

    @settings(max_examples=40, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.binary(min_size=1, max_size=300))
    def test_fuzz_over_the_socket(self, front_end: Any, data: bytes) -> None:
        """Random bytes after a ConnRqst: the router answers, closes or waits -- the
        listener never logs a failed session and the front end keeps serving."""
        c = Client(front_end.address, timeout=0.1)
        try:
            c.connect()
            c.send(data)
            try:
                c.closed()
            except OSError:
                pass
        finally:
            c.close()
        probe = Client(front_end.address)
        try:
            probe.connect()
        finally:
            probe.close()


class TestDropWarn:
    """§5.4.6 / §7.4.12: a client that does not read loses deliveries, and is told."""

    def test_slow_reader_gets_drop_warn(self, front_end: Any, no_bugs: Any) -> None:
        """With Send-Queue.Max-Length 1024 and a client not reading, NotifyDelivers are
        dropped, and a DropWarn stands where they were in the stream; nothing else is
        lost."""
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(front_end.address)
        slow = Client.__new__(Client)
        slow.sock, slow.buffer, slow.xid = sock, b"", 0
        sock.settimeout(10)
        slow.connect([("Send-Queue.Max-Length", 1024)])
        slow.subscribe("require(n)")
        pub = Client(front_end.address)
        pub.connect()
        blob = b"x" * 16000
        total = 600
        pub.send(b"".join(notify_emit({"n": i, "blob": blob}) for i in range(total)))
        router = front_end.router
        assert wait_until(lambda: router.stats.notifications_in == total, 30)
        assert router.stats.dropped > 0
        kinds: list[str] = []
        sock.settimeout(0.5)
        try:
            while (packet := slow.recv()) is not None:
                kinds.append(packet["type"])
        except TimeoutError:
            pass
        sock.settimeout(10)
        pub.send(notify_emit({"n": -1}))
        while (packet := slow.recv()) is not None:
            kinds.append(packet["type"])
            if packet.get("attributes") == {"n": -1}:
                break
        assert set(kinds) == {"NotifyDeliver", "DropWarn"}
        assert kinds.count("NotifyDeliver") - 1 + router.stats.dropped == total
        # Each DropWarn marks the place of a gap: a delivery always follows it.
        assert all(kinds[i + 1] == "NotifyDeliver" for i, k in enumerate(kinds)
                   if k == "DropWarn")
        pub.close()
        sock.close()
