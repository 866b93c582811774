"""Client connections over the mock transport: replies, interleaving, timeouts, failures."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from cosnotify.orb import CORBA
from cosnotify.orb import giop_messages as gm
from cosnotify.orb.connection import ClientConnection, ConnectionPool
from cosnotify.orb.fastpath import RawReply, request_prefix
from cosnotify.orb.giop import NEED_DATA, GIOPConnection, Role
from cosnotify.orb.transport import ConnectError, MockTransport


class Peer:
    """The server end of a mock connection, driven by the test."""

    def __init__(self, transport: MockTransport) -> None:
        self.transport = transport
        self.giop = GIOPConnection(Role.SERVER)

    def next_message(self) -> Any:
        while True:
            event = self.giop.next_event()
            if event is not NEED_DATA:
                return event
            self.giop.receive_data(self.transport.read())

    def reply(self, request: gm.Request, body: bytes = b"", status: int = 0) -> None:
        reply = gm.Reply(request.request_id, gm.ReplyStatus(status), body, (), request.version)
        self.transport.write(self.giop.send(reply))


def connect() -> tuple[ClientConnection, Peer]:
    client_end, server_end = MockTransport.pair()
    return ClientConnection(client_end, ("mock", 1), max_message_size=1 << 20), Peer(server_end)


def raw_request(operation: str = "op", body: bytes = b"") -> tuple[bytearray, int]:
    prefix, rid_at = request_prefix(b"key", operation, 3, (), (1, 2))
    return bytearray(prefix) + body, rid_at


def call_in_thread(connection: ClientConnection, operation: str, timeout: float | None = 30.0,
                   ) -> tuple[threading.Thread, list[Any]]:
    result: list[Any] = []

    def run() -> None:
        buffer, rid_at = raw_request(operation)
        try:
            result.append(connection.call_raw(buffer, rid_at, (1, 2), True, timeout))
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            result.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, result


class TestCalls:
    def test_reply_comes_back(self) -> None:
        """A request goes out whole and its reply comes back as a RawReply."""
        connection, peer = connect()
        thread, result = call_in_thread(connection, "hello")
        request = peer.next_message()
        assert request.operation == "hello" and request.response_expected
        peer.reply(request, b"\x01\x00\x00\x00")
        thread.join(30)
        (reply,) = result
        assert isinstance(reply, RawReply)
        assert reply.request_id == request.request_id and reply.data[24:] == b"\x01\x00\x00\x00"

    def test_oneway_returns_at_once(self) -> None:
        """A request with no reply expected returns None without reading."""
        connection, peer = connect()
        prefix, rid_at = request_prefix(b"key", "poke", 0, (), (1, 2))
        assert connection.call_raw(bytearray(prefix), rid_at, (1, 2), False, 1.0) is None
        assert not peer.next_message().response_expected

    def test_general_path_call(self) -> None:
        """call() with a message builder works too (LocateRequest here)."""
        connection, peer = connect()
        result: list[Any] = []
        thread = threading.Thread(target=lambda: result.append(connection.call(
            lambda rid: gm.LocateRequest(rid, gm.KeyAddr(b"k")), 30.0)))
        thread.start()
        locate = peer.next_message()
        peer.transport.write(peer.giop.send(gm.LocateReply(locate.request_id,
                                                           gm.LocateStatus.OBJECT_HERE)))
        thread.join(30)
        assert result[0].locate_status is gm.LocateStatus.OBJECT_HERE

    def test_concurrent_calls_interleave_and_replies_may_come_out_of_order(self) -> None:
        """Several threads share one connection; each gets its own reply by request id."""
        connection, peer = connect()
        calls = [call_in_thread(connection, f"op{i}") for i in range(5)]
        requests = [peer.next_message() for _ in range(5)]
        assert len({r.request_id for r in requests}) == 5
        for request in reversed(requests):
            peer.reply(request, request.operation.encode().ljust(8, b"\0"))
        for thread, result in calls:
            thread.join(30)
        for (thread, result), index in zip(calls, range(5)):
            (reply,) = result
            assert reply.data[24:].rstrip(b"\0").decode().startswith("op")
        got = sorted(r[0].data[24:].rstrip(b"\0").decode() for _, r in calls)
        assert got == [f"op{i}" for i in range(5)]


class TestFailures:
    def test_timeout_raises_timeout_and_cancels(self) -> None:
        """No reply in time: TIMEOUT (COMPLETED_MAYBE), then a CancelRequest goes out."""
        connection, peer = connect()
        thread, result = call_in_thread(connection, "slow", timeout=0.05)
        request = peer.next_message()
        thread.join(30)
        assert isinstance(result[0], CORBA.TIMEOUT)
        assert result[0].completed == CORBA.COMPLETED_MAYBE
        cancel = peer.next_message()
        assert isinstance(cancel, gm.CancelRequest) and cancel.request_id == request.request_id
        # the late reply is dropped; the connection still works
        peer.reply(request, b"late")
        thread, result = call_in_thread(connection, "next")
        peer.reply(peer.next_message(), b"ok")
        thread.join(30)
        assert result[0].data[24:] == b"ok"

    def test_close_connection_is_retryable_transient(self) -> None:
        """CloseConnection fails waiting calls with TRANSIENT COMPLETED_NO, marked retryable."""
        connection, peer = connect()
        thread, result = call_in_thread(connection, "op")
        peer.next_message()
        peer.transport.write(gm.encode_message(gm.CloseConnection()))
        thread.join(30)
        assert isinstance(result[0], CORBA.TRANSIENT)
        assert result[0].completed == CORBA.COMPLETED_NO and result[0].retryable
        assert connection.closed

    def test_lost_connection_is_comm_failure_maybe(self) -> None:
        """The peer vanishing with a call in flight: COMM_FAILURE, COMPLETED_MAYBE."""
        connection, peer = connect()
        thread, result = call_in_thread(connection, "op")
        peer.next_message()
        peer.transport.close()
        thread.join(30)
        assert isinstance(result[0], CORBA.COMM_FAILURE)
        assert result[0].completed == CORBA.COMPLETED_MAYBE

    def test_garbage_is_comm_failure_and_message_error(self) -> None:
        """Bytes that are not GIOP: COMM_FAILURE for the caller, MessageError to the peer."""
        connection, peer = connect()
        thread, result = call_in_thread(connection, "op")
        peer.next_message()
        peer.transport.write(b"HTTP/1.1 400 Bad Request\r\n\r\n")
        thread.join(30)
        assert isinstance(result[0], CORBA.COMM_FAILURE)
        assert isinstance(peer.next_message(), gm.MessageError)

    def test_message_error_from_peer(self) -> None:
        """The peer's MessageError fails the call with COMM_FAILURE."""
        connection, peer = connect()
        thread, result = call_in_thread(connection, "op")
        peer.next_message()
        peer.transport.write(gm.encode_message(gm.MessageError()))
        thread.join(30)
        assert isinstance(result[0], CORBA.COMM_FAILURE)

    def test_close_noticed_while_idle(self) -> None:
        """A CloseConnection that arrived while idle makes the next call a retryable TRANSIENT."""
        connection, peer = connect()
        peer.transport.write(gm.encode_message(gm.CloseConnection()))
        buffer, rid_at = raw_request()
        with pytest.raises(CORBA.TRANSIENT) as caught:
            connection.call_raw(buffer, rid_at, (1, 2), True, 5.0)
        assert caught.value.retryable and caught.value.completed == CORBA.COMPLETED_NO

    def test_write_failure_is_retryable_transient(self) -> None:
        """A request that cannot be written: TRANSIENT COMPLETED_NO, retryable."""
        connection, peer = connect()
        peer.transport.close()
        buffer, rid_at = raw_request()
        with pytest.raises(CORBA.TRANSIENT) as caught:
            connection.call_raw(buffer, rid_at, (1, 2), True, 5.0)
        assert caught.value.retryable

    def test_close_says_close_connection(self) -> None:
        """Closing an idle connection sends CloseConnection."""
        connection, peer = connect()
        connection.close()
        assert isinstance(peer.next_message(), gm.CloseConnection)


class TestPool:
    def test_one_connection_per_endpoint(self) -> None:
        """The pool makes one connection per endpoint and replaces a closed one."""
        made: list[MockTransport] = []

        def connector(host: str, port: int, timeout: float | None) -> MockTransport:
            a, _ = MockTransport.pair()
            made.append(a)
            return a

        pool = ConnectionPool(connect_timeout=1.0, max_message_size=1 << 20, connector=connector)
        first = pool.get("h", 1)
        assert pool.get("h", 1) is first and pool.get("h", 2) is not first
        first.close()
        assert pool.get("h", 1) is not first
        assert len(made) == 3
        pool.close()
        with pytest.raises(CORBA.TRANSIENT):
            pool.get("h", 3)

    def test_connect_failure_is_transient(self) -> None:
        """A failed connect is TRANSIENT, COMPLETED_NO."""
        def connector(host: str, port: int, timeout: float | None) -> MockTransport:
            raise ConnectError("refused")

        pool = ConnectionPool(connect_timeout=1.0, max_message_size=1 << 20, connector=connector)
        with pytest.raises(CORBA.TRANSIENT) as caught:
            pool.get("h", 1)
        assert caught.value.completed == CORBA.COMPLETED_NO

