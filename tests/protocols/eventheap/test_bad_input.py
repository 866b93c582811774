"""Hostile input over the socket: the protocol's error or a closed connection, never a
crash or a hang, and the other clients keep working (issue 22, "Bad input")."""

from __future__ import annotations

import random
import socket
import struct
from collections.abc import Callable

import pytest

from cosnotify.protocols.eventheap import EventHeapFrontEnd, start
from cosnotify.protocols.eventheap.codec import BundleReader, WireBundle, encode_bundle
from cosnotify.protocols.listener import Limits
from tests.protocols.eventheap.client import WAIT, EventHeapClient

Connect = Callable[..., EventHeapClient]


def _still_serves(client: EventHeapClient) -> None:
    client.put(client.event("Alive"))
    reply = client.call("getEvent", [client.template("Alive")])
    assert reply.tuples is not None


def _error_then_close(raw: bytes, connect: Connect) -> str:
    """Send ``raw`` after the handshake; the error bundle's text (the connection closes)."""
    bad = connect("bad")
    bad.sock.sendall(raw)
    reply = bad._next()
    assert isinstance(reply, WireBundle) and reply.destination_tag is None
    assert reply.return_tag is not None
    assert bad._next() is None
    return reply.return_tag


class TestHostileBundles:
    def test_unknown_mask_bits(self, connect: Connect) -> None:
        """A mask with bits the seed does not define ("WireBundle Transfer") is refused."""
        good = connect("good")
        assert _error_then_close(b"\xf0", connect).startswith("ERROR MalformedBundle")
        _still_serves(good)

    def test_oversize_length(self, connect: Connect, limits: Limits) -> None:
        """A tuple length past max_frame is refused at once, not buffered."""
        good = connect("good")
        raw = b"\x08" + struct.pack(">ii", 1, limits.max_frame * 4)
        assert _error_then_close(raw, connect).startswith("ERROR BundleTooLarge")
        _still_serves(good)

    def test_invalid_utf8(self, connect: Connect) -> None:
        """A destination tag that is not the seed's UTF-8 String is refused."""
        good = connect("good")
        raw = b"\x01" + struct.pack(">H", 2) + b"\xff\xfe"
        assert _error_then_close(raw, connect).startswith("ERROR MalformedBundle")
        _still_serves(good)

    def test_truncated_bundle_then_gone(self, connect: Connect,
                                        front_end: EventHeapFrontEnd) -> None:
        """A client that leaves mid-bundle is cleaned up; the others go on."""
        good = connect("good")
        bad = connect("bad")
        bad.sock.sendall(encode_bundle(WireBundle("putEvent", "t", None, (
            bad.event("X"),)))[:-5])
        bad.close()
        _still_serves(good)
        assert good.call("getEvent", [good.template("X")]).tuples is None

    def test_slow_loris(self, context: object) -> None:
        """A bundle begun and never finished is closed after read_timeout; meanwhile
        another client is served."""
        fe = start(context, "127.0.0.1", 0, limits=Limits(read_timeout=0.3))  # type: ignore[arg-type]
        try:
            slow = EventHeapClient(fe.address, "slow")
            good = EventHeapClient(fe.address, "good")
            slow.sock.sendall(b"\x01\x00\x08getE")
            _still_serves(good)
            assert slow._next(timeout=WAIT) is None  # closed by the server
            assert fe.counters.closed_bad >= 1
            _still_serves(good)
            slow.close()
            good.close()
        finally:
            fe.close()

    def test_a_trickled_bundle_is_closed_by_its_deadline(self, context: object) -> None:
        """A bundle whose bytes trickle in, each well within read_timeout, is closed once
        read_timeout has passed since it began: the whole bundle must arrive in time, not
        each read (issue 22, "slow-loris connections")."""
        import threading
        import time

        fe = start(context, "127.0.0.1", 0, limits=Limits(read_timeout=0.5))  # type: ignore[arg-type]
        try:
            slow = EventHeapClient(fe.address, "slow")
            event = slow.event("Big", note="x" * 2000)
            data = encode_bundle(WireBundle("putEvent", None, None, (event,)))
            stop = threading.Event()

            def trickle() -> None:  # a byte every 20 ms: the bundle would take ~40 s
                for at in range(len(data)):
                    if stop.wait(0.02):
                        return
                    try:
                        slow.sock.sendall(data[at:at + 1])
                    except OSError:
                        return

            sender = threading.Thread(target=trickle, daemon=True)
            started = time.monotonic()
            sender.start()
            assert slow.closed_by_peer(timeout=WAIT)
            assert time.monotonic() - started < 5.0
            stop.set()
            sender.join(WAIT)
            slow.close()
        finally:
            fe.close()

    def test_bad_handshake(self, front_end: EventHeapFrontEnd, connect: Connect) -> None:
        """A handshake that is not a UTF-8 String is refused and closed."""
        good = connect("good")
        with socket.create_connection(front_end.address, timeout=WAIT) as sock:
            sock.sendall(b"\x00\x02\xc0\x00")
            reader = BundleReader()
            events: list[object] = []
            while True:
                data = sock.recv(4096)
                if not data:
                    break
                reader.feed(data)
                while (event := reader.next_event()) is not None:
                    events.append(event)
            assert events[0] == "EHWPv1"
        _still_serves(good)

    @pytest.mark.parametrize("seed", range(20))
    def test_random_bytes_over_the_socket(self, seed: int, connect: Connect,
                                          front_end: EventHeapFrontEnd) -> None:
        """Seeded random bytes after the handshake: an error and a close, a wait, or
        replies -- and a good client is served throughout (a bounded socket fuzz)."""
        rng = random.Random(seed)
        good = connect("good")
        bad = connect("bad")
        bad.sock.sendall(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400))))
        _still_serves(good)
        bad.close()
        _still_serves(good)
        assert front_end.counters.open >= 1


class TestIdle:
    def test_listening_client_is_not_idle(self, context: object) -> None:
        """idle_timeout closes a silent connection, but not one with a stream open."""
        fe = start(context, "127.0.0.1", 0, limits=Limits(idle_timeout=0.3))  # type: ignore[arg-type]
        try:
            listener = EventHeapClient(fe.address, "listener")
            tag = listener.send("registerForAll")
            listener.call("getAll")
            silent = EventHeapClient(fe.address, "silent")
            assert silent._next(timeout=WAIT) is None  # closed for idleness
            putter = EventHeapClient(fe.address, "putter")
            putter.put(putter.event("Late"))
            assert listener.receive().destination_tag == tag
            for client in (listener, silent, putter):
                client.close()
        finally:
            fe.close()
