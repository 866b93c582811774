"""Server connections over the mock transport: dispatch, protocol errors, and fuzzing."""

from __future__ import annotations

import itertools
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cosnotify.orb import CORBA
from cosnotify.orb import giop_messages as gm
from cosnotify.orb.cdr import Decoder, Encoder
from cosnotify.orb.fastpath import Framer
from cosnotify.orb.server import ServerConnection
from cosnotify.orb.transport import MockTransport


@pytest.fixture
def served(server_orb: Any, peer: Any, interop: Any) -> Any:
    """(server, object key, Interop module) for a Thing served by ``server_orb``."""
    poa = server_orb.resolve_initial_references("RootPOA")
    reference = poa.servant_to_reference(peer.Thing(server_orb))
    return server_orb._core.server, reference._NP_delegate.ior.object_key, interop


def request(key: bytes, operation: str, body: bytes = b"", request_id: int = 1,
            version: tuple[int, int] = (1, 2), flags: int = 3) -> bytes:
    return gm.encode_message(gm.Request(request_id, gm.KeyAddr(key), operation, body, flags,
                                        (), b"", version, True))


def encode_args(interop: Any, operation: str, *args: Any, offset: int = 0) -> bytes:
    encoder = Encoder(offset=offset)
    for param, arg in zip(interop.Thing._NP_operations[operation].in_params, args):
        encoder.write(param.tc, arg)
    return encoder.getvalue()


def serve_script(server: Any, chunks: list[bytes]) -> list[Any]:
    """Run a server connection over ``chunks`` (then end of stream), in this thread.

    Returns the messages the server wrote. Any exception is a test failure.
    """
    transport = MockTransport.scripted(chunks)
    connection = ServerConnection(transport, server)
    for _ in range(10 * len(chunks) + 10):
        messages = connection.read_messages()
        if messages is None:
            break
        for message in messages:
            connection.handle(message)
    else:
        pytest.fail("the server connection did not finish")
    assert connection.closed
    framer = Framer(1 << 30)
    framer.feed(b"".join(bytes(d) for d in transport.written))
    out: list[Any] = []
    while True:
        raw = framer.next()
        if raw is None:
            assert not framer.take_rest(), "the server wrote a partial message"
            return out
        assert isinstance(raw, bytes), "the server wrote something that is not GIOP"
        out.append(gm.decode_message(raw))


class TestDispatch:
    def test_two_way_call(self, served: Any) -> None:
        """A request runs the servant and the reply carries its result."""
        server, key, interop = served
        body = encode_args(interop, "echo_small", interop.Small(7, 0.5, "hi"))
        (reply,) = serve_script(server, [request(key, "echo_small", body)])
        assert reply.reply_status is gm.ReplyStatus.NO_EXCEPTION
        value = Decoder(reply.body, offset=reply.body_offset).read(interop._tc_Small)
        assert value == interop.Small(7, 0.5, "hi")

    @pytest.mark.parametrize("version", [(1, 0), (1, 1)])
    def test_older_giop_versions(self, served: Any, version: tuple[int, int]) -> None:
        """GIOP 1.0 and 1.1 requests (the general path) get replies in their version."""
        server, key, interop = served
        shell = gm.Request(5, gm.KeyAddr(key), "echo_small", b"", 3, (), b"", version, True)
        body = encode_args(interop, "echo_small", interop.Small(1, 2.0, "x"),
                           offset=gm.body_offset(shell))
        (reply,) = serve_script(server, [gm.encode_message(
            gm.Request(5, gm.KeyAddr(key), "echo_small", body, 3, (), b"", version, True))])
        assert reply.version == version and reply.reply_status is gm.ReplyStatus.NO_EXCEPTION

    def test_oneway_gets_no_reply(self, served: Any) -> None:
        """A oneway request runs and nothing is written back."""
        server, key, interop = served
        body = encode_args(interop, "poke", 3)
        assert serve_script(server, [request(key, "poke", body, flags=0)]) == []

    def test_unknown_key_is_object_not_exist(self, served: Any) -> None:
        """A key no POA knows gets OBJECT_NOT_EXIST."""
        server, _, _ = served
        (reply,) = serve_script(server, [request(b"CNT\x01nothing!", "op")])
        assert isinstance(reply.system_exception(), CORBA.OBJECT_NOT_EXIST)

    def test_unknown_operation_is_bad_operation(self, served: Any) -> None:
        """An operation the servant lacks gets BAD_OPERATION."""
        server, key, _ = served
        (reply,) = serve_script(server, [request(key, "no_such_op")])
        assert isinstance(reply.system_exception(), CORBA.BAD_OPERATION)

    def test_bad_arguments_are_marshal_and_the_connection_lives(self, served: Any) -> None:
        """Arguments that do not decode get MARSHAL; the next request is still served."""
        server, key, interop = served
        good = encode_args(interop, "poked")
        replies = serve_script(server, [request(key, "echo_small", b"\xff" * 3, 1),
                                        request(key, "poked", good, 2)])
        assert isinstance(replies[0].system_exception(), CORBA.MARSHAL)
        assert replies[1].reply_status is gm.ReplyStatus.NO_EXCEPTION

    def test_pseudo_operations(self, served: Any) -> None:
        """_is_a, _non_existent and _repository_id are answered for every servant."""
        server, key, _ = served
        is_a = Encoder()
        is_a.write_string("IDL:cosnotify.test/Interop/Thing:1.0")
        replies = serve_script(server, [request(key, "_is_a", is_a.getvalue(), 1),
                                        request(key, "_non_existent", b"", 2),
                                        request(b"CNT\x01gone....", "_non_existent", b"", 3)])
        results = [Decoder(r.body, offset=r.body_offset).read_boolean() for r in replies]
        assert results == [True, False, True]

    def test_locate_request(self, served: Any) -> None:
        """LocateRequest answers OBJECT_HERE or UNKNOWN_OBJECT."""
        server, key, _ = served
        replies = serve_script(server, [gm.encode_message(gm.LocateRequest(1, gm.KeyAddr(key))),
                                        gm.encode_message(gm.LocateRequest(2, gm.KeyAddr(b"x")))])
        assert [r.locate_status for r in replies] == [gm.LocateStatus.OBJECT_HERE,
                                                      gm.LocateStatus.UNKNOWN_OBJECT]

    def test_user_and_system_exceptions(self, served: Any) -> None:
        """A declared user exception is USER_EXCEPTION; a system exception keeps its fields."""
        server, key, interop = served
        user, system = serve_script(server, [
            request(key, "fail_user", encode_args(interop, "fail_user", "why"), 1),
            request(key, "fail_system", b"", 2)])
        assert user.reply_status is gm.ReplyStatus.USER_EXCEPTION
        decoder = Decoder(user.body, offset=user.body_offset)
        assert decoder.read_string() == interop.Oops._NP_RepositoryId
        assert decoder.read(interop._tc_Oops) == interop.Oops("why", 42)
        exc = system.system_exception()
        assert isinstance(exc, CORBA.BAD_OPERATION)
        assert (exc.minor, exc.completed) == (77, CORBA.COMPLETED_YES)


class TestProtocolErrors:
    @pytest.mark.parametrize("garbage", [b"GET / HTTP/1.0\r\n\r\n", b"GIOP\x09\x09\x00\x00" + bytes(8),
                                         b"GIOP\x01\x02\x01\x01" + struct.pack("<I", 4) + bytes(4)])
    def test_garbage_gets_message_error_and_close(self, served: Any, garbage: bytes) -> None:
        """Malformed input (not GIOP, bad version, a Reply sent to a server): MessageError, closed."""
        server, _, _ = served
        written = serve_script(server, [garbage])
        assert written and isinstance(written[-1], gm.MessageError)

    def test_oversized_message(self, served: Any) -> None:
        """A message over the size limit is refused before its body arrives."""
        server, _, _ = served
        header = b"GIOP\x01\x02\x01\x00" + struct.pack("<I", server.max_message_size + 1)
        assert isinstance(serve_script(server, [header])[-1], gm.MessageError)

    def test_close_connection_from_client(self, served: Any) -> None:
        """A client's CloseConnection ends the connection quietly, after earlier oneways."""
        server, key, interop = served
        written = serve_script(server, [request(key, "poke", encode_args(interop, "poke", 1),
                                                flags=0),
                                        gm.encode_message(gm.CloseConnection())])
        assert written == []


_VALID: list[bytes] = []


def _valid_inputs(key: bytes, interop: Any) -> list[bytes]:
    if not _VALID:
        _VALID.extend([
            request(key, "echo_small", encode_args(interop, "echo_small", interop.Small(1, 2.0, "s"))),
            request(key, "describe_any", encode_args(
                interop, "describe_any", CORBA.Any(interop._tc_Tree, interop.Tree("a", [])))),
            request(key, "poke", encode_args(interop, "poke", 9), flags=0),
            gm.encode_message(gm.LocateRequest(3, gm.KeyAddr(key))),
            gm.encode_message(gm.CancelRequest(3)),
            request(key, "echo_small", b"", version=(1, 0)),
        ])
    return _VALID


@st.composite
def mutated(draw: Any, key: bytes, interop: Any) -> list[bytes]:
    """A few valid messages, some mutated, cut into random chunks."""
    corpus = _valid_inputs(key, interop)
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        data = bytearray(draw(st.sampled_from(corpus)))
        for _ in range(draw(st.integers(0, 4))):
            action = draw(st.sampled_from(["flip", "cut", "insert", "size"]))
            at = draw(st.integers(0, max(len(data) - 1, 0)))
            if action == "flip" and data:
                data[at] ^= draw(st.integers(1, 255))
            elif action == "cut":
                del data[at:]
            elif action == "insert":
                data[at:at] = draw(st.binary(min_size=1, max_size=8))
            elif action == "size" and len(data) >= 12:
                data[8:12] = struct.pack("<I", draw(st.integers(0, 2**32 - 1)))
        parts.append(bytes(data))
    stream = b"".join(parts) + draw(st.binary(max_size=16))
    cuts = sorted(draw(st.lists(st.integers(0, len(stream)), max_size=4)))
    edges = [0, *cuts, len(stream)]
    return [stream[a:b] for a, b in itertools.pairwise(edges)]


class TestFuzz:
    @settings(max_examples=150, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(data=st.data())
    def test_mutated_input_only_gets_giop_answers(self, served: Any, data: Any) -> None:
        """Mutated and random input never raises: the server replies, or MessageError and closes."""
        server, key, interop = served
        chunks = data.draw(st.one_of(mutated(key, interop), st.lists(st.binary(max_size=64),
                                                                      max_size=4)))
        written = serve_script(server, chunks)
        for message in written:
            assert isinstance(message, (gm.Reply, gm.LocateReply, gm.MessageError))
