"""Regressions from the adversarial review of the ORB: hostile input must only ever give
CORBA exceptions or MessageError, cost bounded memory and time, and starve nobody."""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from typing import Any

import pytest

from cosnotify.orb import CORBA, cdr_compile, transport
from cosnotify.orb import giop_messages as gm
from cosnotify.orb import typecode as T
from cosnotify.orb.any import Any as CorbaAny
from cosnotify.orb.cdr import Codec, Decoder, Encoder
from cosnotify.orb.cdr_core import DecodeState, Minor
from cosnotify.orb.cdr_typecode import encode_typecode
from cosnotify.orb.fastpath import Framer
from cosnotify.orb.giop import (
    MAX_CANCELLED,
    MAX_FRAGMENT_CHAINS,
    NEED_DATA,
    GIOPConnection,
    RemoteProtocolError,
    Role,
)
from cosnotify.orb.values import EnumItem
from cosnotify.orb.workers import WorkerPool

LE = Codec(True)


def any_bytes(tc: T.TypeCode, value: bytes) -> bytes:
    """An Any as a peer would send it: ``tc`` (built by us, sent as is) then raw value octets."""
    data = encode_typecode(tc, LE)
    return data + bytes(-len(data) & 3) + value


def reencode(value: CorbaAny) -> bytes:
    encoder = Encoder(LE)
    encoder.write_any(value)
    return encoder.getvalue()


def header(kind: int, size: int, minor: int = 2, flags: int = 1) -> bytes:
    return b"GIOP" + bytes((1, minor, flags, kind)) + struct.pack("<I", size)


class TestGeneratedSource:
    """Names and ids from received TypeCodes never become Python source."""

    EVIL = "x' + __import__('os').environ.__setitem__('COSNOTIFY_REVIEW_PWNED', '1') + '"

    def test_enum_id_in_a_received_any_is_not_executed(self) -> None:
        """An enum repository id that closes a string literal is data, not code (decoding)."""
        os.environ.pop("COSNOTIFY_REVIEW_PWNED", None)
        data = any_bytes(T.enum_tc(self.EVIL, "E", ["a", "b"]), struct.pack("<I", 5))
        with pytest.raises(CORBA.MARSHAL) as caught:
            Decoder(data, LE).read_any()
        assert caught.value.minor == Minor.INVALID_ENUM
        assert "COSNOTIFY_REVIEW_PWNED" not in os.environ

    def test_enum_id_is_not_executed_when_encoding(self) -> None:
        """The same id in an enum TypeCode used for encoding is not executed either."""
        os.environ.pop("COSNOTIFY_REVIEW_PWNED", None)
        with pytest.raises(CORBA.BAD_PARAM):
            Encoder(LE).write(T.enum_tc(self.EVIL + "2", "E", ["a"]), EnumItem("other", 0))
        assert "COSNOTIFY_REVIEW_PWNED" not in os.environ

    def test_nul_in_a_repository_id(self) -> None:
        """A NUL in a struct's id does not break compiling its marshaller."""
        tc = T.struct_tc("IDL:a\0b:1.0", "S", [("a", T.TC_long)])
        value = Decoder(any_bytes(tc, struct.pack("<i", 7)), LE).read_any()
        assert value.value().a == 7


class TestReceivedMemberNames:
    """Member names from the wire never reach Python attributes they could subvert."""

    @pytest.mark.parametrize("kind", [T.K_STRUCT, T.K_EXCEPT])
    @pytest.mark.parametrize("names", [("__class__", "__init__"), ("__dict__", "_tuple"),
                                       ("__weakref__", "args"), ("\ufb01eld", "field"),
                                       ("__getattribute__", "__repr__")])
    def test_hostile_names_decode_and_round_trip(self, kind: int, names: tuple[str, ...]) -> None:
        """Dunder, reserved and non-ASCII member names decode, print and re-encode unchanged."""
        tc = T.StructTC(kind, f"IDL:review/{kind}/{'/'.join(names)}:1.0", "S", names,
                        (T.TC_long, T.TC_long))
        data = any_bytes(tc, struct.pack("<ii", 1, 2))
        value = Decoder(data, LE).read_any()
        assert "S(" in repr(value)
        assert reencode(value) == data

    def test_compact_typecode_round_trips(self) -> None:
        """A compact TypeCode (all member names empty) is accepted and re-sent as received."""
        tc = T.struct_tc("IDL:review/Compact:1.0", "C",
                         [("a", T.TC_long), ("b", T.TC_string)]).get_compact_typecode()
        data = any_bytes(tc, struct.pack("<iI", 3, 2) + b"x\0")
        value = Decoder(data, LE).read_any()
        assert reencode(value) == data

    def test_known_id_with_other_members(self, interop: Any) -> None:
        """A TypeCode reusing a generated struct's id with other members gets a class that fits."""
        tc = T.struct_tc(interop.Small._NP_RepositoryId, "Small", [("a", T.TC_long)])
        data = any_bytes(tc, struct.pack("<i", 9))
        value = Decoder(data, LE).read_any()
        assert not isinstance(value.value(), interop.Small)
        assert reencode(value) == data


class TestDecodeBoundary:
    def test_unexpected_exception_becomes_marshal(self) -> None:
        """Any exception escaping a decoder reaches the caller as MARSHAL."""
        def factory(ior: Any, repo_id: str) -> Any:
            raise ValueError("a bug")

        encoder = Encoder(LE)
        encoder.write_string("IDL:x:1.0")
        encoder.write_ulong(1)
        encoder.write_ulong(99)
        encoder.write_octet_sequence(b"opaque")
        data = encoder.getvalue()
        with pytest.raises(CORBA.MARSHAL) as caught:
            Decoder(data, LE, objref_factory=factory).read(T.objref_tc("IDL:x:1.0", "x"))
        assert caught.value.minor == Minor.UNEXPECTED

    def test_write_to_a_peer_that_never_reads_gives_up(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A write the peer never takes fails (WriteError) instead of blocking for ever."""
        monkeypatch.setattr(transport, "SEND_TIMEOUT", 0.2)
        monkeypatch.setattr(transport, "MIN_SEND_RATE", 1 << 30)
        outcome: list[BaseException] = []
        with socket.create_server(("127.0.0.1", 0)) as listener, \
                socket.create_connection(listener.getsockname()[:2]) as never_reads:
            sock, _ = listener.accept()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
            writer = transport.TCPTransport(sock)

            def write() -> None:
                try:
                    writer.write(bytes(16 << 20))
                except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                    outcome.append(exc)

            thread = threading.Thread(target=write, daemon=True)
            thread.start()
            thread.join(20)
            finished = not thread.is_alive()
            writer.close()  # unblocks a writer that did not give up
            thread.join(20)
            assert never_reads.fileno() >= 0
        assert finished
        assert len(outcome) == 1 and isinstance(outcome[0], transport.WriteError)

    @pytest.mark.parametrize("data", [struct.pack("<I", 4) + b"a\0b\0",
                                      struct.pack("<II", 18, 0) + struct.pack("<I", 4) + b"a\0b\0"])
    def test_nul_inside_a_string_is_marshal(self, data: bytes) -> None:
        """A string with a NUL before its end is refused (it could never be sent on)."""
        tc = T.TC_string if len(data) == 8 else T.TC_any
        with pytest.raises(CORBA.MARSHAL) as caught:
            Decoder(data, LE).read(tc)
        assert caught.value.minor == Minor.INVALID_CHAR_DATA

    def test_empty_elements_are_bounded_per_message(self) -> None:
        """Nested sequences of empty structs cannot claim more than the per-message allowance."""
        empty = T.struct_tc("IDL:review/Empty:1.0", "Empty", [])
        tc = T.sequence_tc(0, T.sequence_tc(0, empty))
        data = struct.pack("<I", 300) + struct.pack("<I", 65536) * 300  # 1204 octets
        with pytest.raises(CORBA.MARSHAL) as caught:
            Decoder(data, LE).read(tc)
        assert caught.value.minor == Minor.TOO_MANY_ELEMENTS
        within = struct.pack("<I", 2) + struct.pack("<I", DecodeState.EMPTY_LIMIT // 2) * 2
        assert sum(map(len, Decoder(within, LE).read(tc))) == DecodeState.EMPTY_LIMIT

    def test_union_discriminator_pointing_at_its_union(self) -> None:
        """A union whose discriminator is an indirection to itself is MARSHAL, not BAD_TYPECODE."""
        body = (b"\x01\0\0\0" + struct.pack("<I", 10) + b"IDL:u:1.0\0\0\0" + struct.pack("<I", 2)
                + b"U\0\0\0" + struct.pack("<Ii", 0xFFFFFFFF, -40) + struct.pack("<iI", -1, 0))
        data = struct.pack("<II", T.K_UNION, len(body)) + body
        with pytest.raises(CORBA.MARSHAL):
            Decoder(data, LE).read_any()

    def test_failed_recursive_compile_does_not_poison_equal_types(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A recursive type whose compile failed midway decodes once compiled again."""
        def node() -> Any:
            rid = "IDL:review/Node:1.0"
            return T.struct_tc(rid, "Node", [("kids", T.sequence_tc(0, T.recursive_tc(rid))),
                                             ("label", T.TC_string)])

        codec = Codec(True, giop=(1, 1))  # a compiler of its own for this test
        compiler = cdr_compile._compiler(codec, False)
        real = compiler._compile

        def fail_after_the_sequence(tc: Any) -> Any:
            if T.resolve(tc)._k == T.K_STRUCT:
                compiler.get(tc._types[0])  # compiled, and cached, before the failure
                raise RecursionError("as deep inside received data")
            return real(tc)

        monkeypatch.setattr(compiler, "_compile", fail_after_the_sequence)
        with pytest.raises(RecursionError):
            cdr_compile.decoder_for(node(), codec)
        monkeypatch.setattr(compiler, "_compile", real)
        data = struct.pack("<III", 1, 0, 2) + b"x\0"
        (value,) = Decoder(data, codec).read(T.sequence_tc(0, node()))
        assert (value.kids, value.label) == ([], "x")


class TestFragmentLimits:
    def chain(self, request_id: int, payload: int = 0) -> bytes:
        """The first message of a GIOP 1.2 fragmented Request (just its request id and padding)."""
        return header(0, 8 + payload, flags=3) + struct.pack("<I", request_id) + bytes(4 + payload)

    def test_concurrent_chains_are_limited(self) -> None:
        """More GIOP 1.2 fragmented messages under way than the limit is a protocol error."""
        connection = GIOPConnection(Role.SERVER)
        for request_id in range(MAX_FRAGMENT_CHAINS):
            connection.receive_data(self.chain(request_id))
            assert connection.next_event() is NEED_DATA
        connection.receive_data(self.chain(MAX_FRAGMENT_CHAINS))
        with pytest.raises(RemoteProtocolError):
            connection.next_event()

    def test_chains_share_one_size_limit(self) -> None:
        """Unfinished chains together may hold at most the message size limit."""
        connection = GIOPConnection(Role.SERVER, max_message_size=4096)
        connection.receive_data(self.chain(1, 3000))
        assert connection.next_event() is NEED_DATA
        connection.receive_data(self.chain(2, 3000))  # each alone is within the limit
        with pytest.raises(RemoteProtocolError):
            connection.next_event()

    def test_cancel_releases_a_chain(self) -> None:
        """A CancelRequest drops its chain's octets from the allowance."""
        connection = GIOPConnection(Role.SERVER, max_message_size=4096)
        for request_id in range(1, 5):
            connection.receive_data(self.chain(request_id, 3000))
            assert connection.next_event() is NEED_DATA
            connection.receive_data(gm.encode_message(gm.CancelRequest(request_id)))
            assert isinstance(connection.next_event(), gm.CancelRequest)
        assert not connection.pending()

    def test_cancelled_ids_are_forgotten(self) -> None:
        """Late replies read on the hot path clear their cancelled id; the set stays bounded."""
        client = GIOPConnection(Role.CLIENT)
        for request_id in range(1, MAX_CANCELLED + 100):
            client.send(gm.Request(request_id, gm.KeyAddr(b"k"), "op"))
            client.send(gm.CancelRequest(request_id))
        assert len(client._cancelled) == MAX_CANCELLED
        assert client.reply_arrived(MAX_CANCELLED + 50) is False
        assert MAX_CANCELLED + 50 not in client._cancelled


class TestWorkerPool:
    def test_a_task_queued_while_full_keeps_its_worker_busy(self) -> None:
        """A worker that takes a queued task is counted busy (it used to be counted idle)."""
        pool = WorkerPool(2, name="review")
        release = [threading.Event() for _ in range(3)]
        started = [threading.Event() for _ in range(3)]

        def task(index: int) -> None:
            started[index].set()
            release[index].wait(10)

        try:
            pool.submit(task, 0)
            pool.submit(task, 1)
            assert started[0].wait(10) and started[1].wait(10)
            pool.submit(task, 2)  # the pool is full: queued
            release[0].set()
            assert started[2].wait(10)  # the first worker took it
            assert pool.busy() == 2
        finally:
            for event in release:
                event.set()
            pool.stop()


class TestServerConnections:
    def test_idle_connections_do_not_starve_other_clients(self, make_orb: Any, client_orb: Any,
                                                           peer: Any, interop: Any) -> None:
        """More silent half-header connections than threads: another client is still served."""
        orb = make_orb("-ORBendPoint", "giop:tcp:127.0.0.1:0", "-ORBmaxServerThreadPoolSize", "4")
        poa = orb.resolve_initial_references("RootPOA")
        poa.the_POAManager.activate()
        remote = interop.Thing._narrow(client_orb.string_to_object(
            orb.object_to_string(poa.servant_to_reference(peer.Thing(orb)))))
        port = orb._core.addresses[0][1]
        silent = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(8)]
        try:
            for sock in silent:
                sock.sendall(b"GIOP\x01\x02")
            assert remote._get_name() == "py-thing"
        finally:
            for sock in silent:
                sock.close()

    def test_stalled_message_is_closed(self, server_orb: Any) -> None:
        """A peer silent in the middle of a message is disconnected after the stall timeout."""
        server = server_orb._core.server
        server.idle_timeout, server.stall_timeout = 0.05, 0.2
        server._watcher.scan_interval = 0.05
        port = server_orb._core.addresses[0][1]
        with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
            sock.sendall(header(0, 1 << 20) + b"x" * 1000)
            started = time.monotonic()
            assert sock.recv(100) == b""  # closed by the server, well before the 20 s timeout
        assert time.monotonic() - started < 15

    @pytest.mark.parametrize("data", [
        header(0, 0xFFFFFFFF),
        header(7, 4) + struct.pack("<I", 1),
        b"GIOX" + bytes(8),
        header(0, 24) + struct.pack("<IB3xhxxI", 1, 3, 0, 0) + struct.pack("<I", 2) + b"x\0\0\0"
        + struct.pack("<I", 0xFFFFFFFF),
        header(0, 16) + struct.pack("<IB3xhxxI", 1, 3, 0, 0xFFFFFFF0),
        b"".join(header(0, 8, flags=3) + struct.pack("<II", i, 0) for i in range(100)),
    ], ids=["huge-size", "stray-fragment", "bad-magic", "contexts-2**32-1", "huge-key",
            "many-chains"])
    def test_malformed_giop_gets_message_error(self, server_orb: Any, thing: Any, interop: Any,
                                               data: bytes) -> None:
        """Malformed GIOP over TCP: MessageError, the connection closed, other clients served."""
        port = server_orb._core.addresses[0][1]
        with socket.create_connection(("127.0.0.1", port), timeout=20) as rogue:
            rogue.sendall(data)
            assert thing.echo_small(interop.Small(1, 1.0, "ok")).c == "ok"
            answer = b""
            while chunk := rogue.recv(4096):
                answer += chunk
        framer = Framer(1 << 20)
        framer.feed(answer)
        raw = framer.next()
        assert isinstance(raw, bytes) and isinstance(gm.decode_message(raw), gm.MessageError)


class TestForwarding:
    def test_forward_after_an_earlier_call_is_followed(self, server_orb: Any, client_orb: Any,
                                                       peer: Any, interop: Any) -> None:
        """A LOCATION_FORWARD to an operation called before is followed, not raised as is."""
        from cosnotify.orb import PortableServer

        poa = server_orb.resolve_initial_references("RootPOA")
        target = poa.servant_to_reference(peer.Thing(server_orb))

        class Moving(peer.Thing):  # type: ignore[misc,name-defined]
            moved = False

            def echo_small(self, small: Any) -> Any:
                if self.moved:
                    raise PortableServer.ForwardRequest(target)
                return small

        moving = Moving(server_orb)
        remote = interop.Thing._narrow(client_orb.string_to_object(
            server_orb.object_to_string(poa.servant_to_reference(moving))))
        assert remote.echo_small(interop.Small(1, 1.0, "here")).c == "here"
        moving.moved = True
        assert remote.echo_small(interop.Small(2, 2.0, "there")).c == "there"
        assert remote._get_name() == "py-thing"


    def test_forward_to_an_unusable_reference_falls_back(self, server_orb: Any, client_orb: Any,
                                                         peer: Any, interop: Any) -> None:
        """A LOCATION_FORWARD to a reference without IIOP profiles goes back to the original."""
        from cosnotify.orb import PortableServer
        from cosnotify.orb.ior import IOR, OpaqueProfile

        nowhere = server_orb.string_to_object(IOR("IDL:x:1.0", (OpaqueProfile(7, b"?"),)).to_string())

        class ForwardsOnce(peer.Thing):  # type: ignore[misc,name-defined]
            forwarded = False

            def echo_small(self, small: Any) -> Any:
                if not self.forwarded:
                    self.forwarded = True
                    raise PortableServer.ForwardRequest(nowhere)
                return small

        poa = server_orb.resolve_initial_references("RootPOA")
        remote = interop.Thing._narrow(client_orb.string_to_object(
            server_orb.object_to_string(poa.servant_to_reference(ForwardsOnce(server_orb)))))
        assert remote.echo_small(interop.Small(1, 1.0, "back")).c == "back"


class TestObjectURLs:
    @pytest.mark.parametrize("url", ["corbaloc::" + "a" * 64 + ".example:1/k",
                                     "corbaloc::a..b:1/k"])
    def test_host_the_resolver_cannot_encode_is_transient(self, client_orb: Any, url: str) -> None:
        """A host name IDNA rejects (from a URL or an IOR) fails the call with TRANSIENT."""
        with pytest.raises(CORBA.TRANSIENT):
            client_orb.string_to_object(url)._non_existent()

    @pytest.mark.parametrize("url", ["corbaloc::h:" + "9" * 5000 + "/k",
                                     "corbaloc:iiop:" + "1" * 5000 + ".2@h:1/k",
                                     "corbaloc:iiop:0.9@h:1/k", "corbaname::h:1#a//b"])
    def test_bad_url_is_bad_param(self, client_orb: Any, url: str) -> None:
        """Overlong numbers, IIOP versions other than 1.x and bad names are BAD_PARAM."""
        with pytest.raises(CORBA.BAD_PARAM):
            client_orb.string_to_object(url)
