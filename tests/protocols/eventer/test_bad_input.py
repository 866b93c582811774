"""Hostile input over the socket (issue 22, "Bad input"): each bad connection is closed,
the service goes on, and another hat-event client keeps working meanwhile."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

import hat.event.common as hc
import pytest
from hat.event.eventer import client as hat_client

from tests.protocols.eventer.conftest import WAIT, Served, closed_by_peer, raw, run
from tests.protocols.eventer.test_codec import REGISTER, SUBSCRIBE, hat_frame


def frame(body: bytes) -> bytes:
    return bytes([1, len(body)]) + body


def invalid_utf8() -> bytes:
    body = hc.sbs_repo.encode("Hat", "Msg", {
        "id": 1, "first": 1, "owner": True, "token": True, "last": True,
        "data": {"module": ("value", "HatEventer"), "type": "MsgSubscribe",
                 "data": b"\x81\x81\x82\xff\xfe"}})
    return frame(body)


BAD: dict[str, Callable[[], bytes]] = {
    "oversize length": lambda: b"\x04\x00\x10\x00\x00" + b"x" * 64,
    "a 5-byte length": lambda: b"\x05" + b"\x00" * 5,
    "garbage SBS": lambda: frame(b"\xff" * 40),
    "unknown message type": lambda: hat_frame("HatEventer", "MsgNotify", []),
    "unknown module": lambda: frame(hc.sbs_repo.encode("Hat", "Msg", {
        "id": 1, "first": 1, "owner": True, "token": True, "last": True,
        "data": {"module": ("value", "Nope"), "type": "X", "data": b""}})),
    "invalid UTF-8": invalid_utf8,
    "a huge array count": lambda: frame(hc.sbs_repo.encode("Hat", "Msg", {
        "id": 1, "first": 1, "owner": True, "token": True, "last": True,
        "data": {"module": ("value", "HatEventer"), "type": "MsgSubscribe",
                 "data": b"\x08\x00\x00\x00\x80\x80"}})),  # 2**31 types
}


class TestHostileInput:
    @pytest.mark.parametrize("name", list(BAD))
    def test_bad_input_closes_only_its_connection(self, strict: Served, name: str) -> None:
        """The bad connection is closed; a hat-event client connected before registers and
        queries before and after, and a new one connects."""
        async def go() -> list[Any]:
            good = await hat_client.connect(strict.address, [("ok", "*")])
            before = await good.register_with_response([hc.RegisterEvent(("ok", "1"), None,
                                                                         None)])
            loop = asyncio.get_running_loop()
            with raw(strict) as sock:
                await loop.run_in_executor(None, sock.sendall, BAD[name]())
                closed = await loop.run_in_executor(None, closed_by_peer, sock)
            assert closed, "the bad connection stayed open"
            after = await good.register_with_response([hc.RegisterEvent(("ok", "2"), None, None)])
            notified = [await good.receive(), await good.receive()]
            fresh = await hat_client.connect(strict.address)
            found = await fresh.query(hc.QueryData(event_types=[("ok", "*")]))
            await good.async_close()
            await fresh.async_close()
            assert notified == [before, after]
            return found

        found = run(go)
        assert [e.event_type for e in found] == [("ok", "2"), ("ok", "1")]
        assert strict.front_end.counters.closed_bad >= 1


    def test_a_truncated_frame_then_close_loses_nothing(self, strict: Served) -> None:
        """A client that sends half a frame and goes: the others are not disturbed."""
        with raw(strict) as sock:
            sock.sendall(REGISTER[: len(REGISTER) // 2])
        async def go() -> list[Any]:
            client = await hat_client.connect(strict.address)
            made = await client.register_with_response([hc.RegisterEvent(("t", "x"), None, None)])
            await client.async_close()
            return made

        assert run(go)[0] is not None


    def test_a_slow_loris_is_closed_after_the_read_timeout(self, strict: Served) -> None:
        """A started frame that does not complete within read_timeout (0.5 s) is closed."""
        with raw(strict) as sock:
            sock.sendall(SUBSCRIBE[:3])
            assert closed_by_peer(sock, timeout=WAIT)
        assert strict.front_end.counters.closed_bad >= 1


    def test_a_trickled_frame_is_closed_by_its_deadline(self, strict: Served) -> None:
        """A frame whose bytes trickle in, each well within read_timeout (0.5 s), is
        closed once read_timeout has passed since it began: the whole frame must arrive
        in time (issue 22, "slow-loris connections")."""
        import threading
        import time

        big = hat_frame("HatEventer", "MsgRegisterReq", [hc.register_event_to_sbs(
            hc.RegisterEvent(("a", "b"), None, hc.EventPayload(hc.EventPayloadType.BINARY,
                                                              b"x" * 3000)))], last=False)
        stop = threading.Event()
        with raw(strict) as sock:
            def trickle() -> None:  # a byte every 20 ms: the frame would take a minute
                for at in range(len(big)):
                    if stop.wait(0.02):
                        return
                    try:
                        sock.sendall(big[at:at + 1])
                    except OSError:
                        return

            sender = threading.Thread(target=trickle, daemon=True)
            started = time.monotonic()
            sender.start()
            try:
                assert closed_by_peer(sock, timeout=WAIT)
                assert time.monotonic() - started < 5.0
            finally:
                stop.set()
                sender.join(WAIT)


    def test_a_frame_over_max_frame_is_refused_as_its_length_arrives(self, strict: Served) -> None:
        """max_frame (4 KiB here): a longer frame's length alone closes the connection,
        before its body is read."""
        with raw(strict) as sock:
            sock.sendall(b"\x02\x10\x01")  # 4097 bytes announced, none sent
            assert closed_by_peer(sock, timeout=WAIT)


    def test_many_bad_clients_at_once(self, strict: Served) -> None:
        """Twenty garbage clients at once are all closed and a good client is answered."""
        socks = [socket.create_connection(("127.0.0.1", strict.front_end.address[1]),
                                          timeout=WAIT) for _ in range(20)]
        try:
            for sock in socks:
                sock.sendall(b"\xff\xff\xff")
            async def go() -> list[Any]:
                client = await hat_client.connect(strict.address)
                found = await client.query(hc.QueryData(max_results=1))
                await client.async_close()
                return found

            assert run(go) == []
            assert all(closed_by_peer(sock) for sock in socks)
        finally:
            for sock in socks:
                sock.close()
