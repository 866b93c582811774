"""Malformed and oversize GIOP messages: refused, and nobody else notices.

The server is a `cosnotify serve` child (its ORB runs with the options
cosnotify sets, giopMaxMsgSize 16 MiB among them); raw sockets play the
misbehaving clients and an ordinary omniORBpy client checks, after each,
that the server still serves.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA

from cosnotify.corba.addresses import iiop_address
from cosnotify.server.app import MAX_MESSAGE_SIZE
from tests.channel.conftest import structured
from tests.server.conftest import ServeProcess
from tests.server.test_remote import push_entry

GIOP_REQUEST, GIOP_MESSAGE_ERROR = 0, 6


def giop_header(size: int, message_type: int = GIOP_REQUEST) -> bytes:
    """A GIOP 1.2 header, little endian, announcing a body of ``size`` octets."""
    return b"GIOP" + bytes([1, 2, 1, message_type]) + struct.pack("<I", size)


def answer_then_close(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    sock.settimeout(30)
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


@pytest.fixture
def factory(omniorb: Any, served: ServeProcess) -> Any:
    return omniorb.string_to_object(served.ior)._narrow(CA.EventChannelFactory)


@pytest.fixture
def address(omniorb: Any, factory: Any) -> tuple[str, int]:
    found = iiop_address(omniorb, factory)
    assert found is not None
    return found


def still_serving(factory: Any) -> None:
    """A full round trip through a fresh channel: the server is unaffected."""
    channel, _channel_id = factory.create_channel([], [])
    pull = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
        CA.STRUCTURED_EVENT)[0]._narrow(CA.StructuredProxyPullSupplier)
    pull.connect_structured_pull_consumer(None)
    push_entry(channel).push_structured_event(structured(fields={"n": 1}))
    assert pull.pull_structured_event().filterable_data[0].value.value() == 1
    channel.destroy()


#: A client whose own ORB sends up to 64 MiB: it pushes an event of ``size`` characters.
BIG_CLIENT = """
import sys
from omniORB import CORBA
import CosNotification as N, CosNotifyChannelAdmin as CA
orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:", "-ORBgiopMaxMsgSize",
                      str(64 * 1024 * 1024)], CORBA.ORB_ID)
proxy = orb.string_to_object(sys.argv[1])._narrow(CA.StructuredProxyPushConsumer)
value = CORBA.Any(CORBA.TC_string, "x" * int(sys.argv[2]))
event = N.StructuredEvent(N.EventHeader(N.FixedEventHeader(N.EventType("a", "b"), ""), []),
                          [N.Property("blob", value)], CORBA.Any(CORBA.TC_null, None))
try:
    proxy.push_structured_event(event)
    print("accepted")
except CORBA.SystemException as exc:
    print(type(exc).__name__, exc.completed)
orb.destroy()
"""


class TestOversize:
    def test_a_message_over_the_limit_is_refused(self, omniorb: Any, factory: Any) -> None:
        """A client that sends 17 MiB gets MARSHAL (not completed); the channel has nothing."""
        channel, _ = factory.create_channel([], [])
        pull = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)[0]._narrow(CA.StructuredProxyPullSupplier)
        pull.connect_structured_pull_consumer(None)
        entry = push_entry(channel)
        done = subprocess.run([sys.executable, "-c", BIG_CLIENT, omniorb.object_to_string(entry),
                               str(MAX_MESSAGE_SIZE + 1024 * 1024)],
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.stdout.split() == ["MARSHAL", "COMPLETED_NO"], done.stderr
        assert pull.try_pull_structured_event()[1] is False
        still_serving(factory)
        channel.destroy()

    def test_a_header_announcing_4_gib_is_a_message_error(self, factory: Any,
                                                          address: tuple[str, int]) -> None:
        """A size no message can have: GIOP MessageError at once, the server serves on."""
        with socket.create_connection(address) as sock:
            sock.sendall(giop_header(0xFFFFFFFF))
            received = answer_then_close(sock)
        assert received[:4] == b"GIOP" and received[7] == GIOP_MESSAGE_ERROR
        still_serving(factory)

    def test_an_event_above_omniorbs_default_limit_passes(self, factory: Any) -> None:
        """A 3 MiB event (omniORB's default limit is 2 MiB) travels through the server."""
        channel, _ = factory.create_channel([], [])
        pull = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)[0]._narrow(CA.StructuredProxyPullSupplier)
        pull.connect_structured_pull_consumer(None)
        big = "x" * (3 * 1024 * 1024)
        push_entry(channel).push_structured_event(
            structured(fields={"blob": CORBA.Any(CORBA.TC_string, big)}))
        event = pull.pull_structured_event()
        assert event.filterable_data[0].value.value() == big
        channel.destroy()

    def test_an_event_over_the_limit_is_marshal_and_loses_nothing(self, factory: Any) -> None:
        """An event over 16 MiB is MARSHAL; the channel's queue is as it was."""
        channel, _ = factory.create_channel([], [])
        pull = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)[0]._narrow(CA.StructuredProxyPullSupplier)
        pull.connect_structured_pull_consumer(None)
        entry = push_entry(channel)
        entry.push_structured_event(structured(fields={"n": 1}))
        huge = "x" * (MAX_MESSAGE_SIZE + 1024)
        with pytest.raises((CORBA.MARSHAL, CORBA.COMM_FAILURE)):
            entry.push_structured_event(
                structured(fields={"blob": CORBA.Any(CORBA.TC_string, huge)}))
        entry.push_structured_event(structured(fields={"n": 2}))
        got = [pull.pull_structured_event().filterable_data[0].value.value() for _ in range(2)]
        assert got == [1, 2]
        assert pull.try_pull_structured_event()[1] is False
        channel.destroy()


class TestTruncated:
    def test_a_truncated_message_is_dropped(self, factory: Any, address: tuple[str, int]) -> None:
        """A request cut short by its client: the server drops it and serves the others."""
        with socket.create_connection(address) as sock:
            sock.sendall(giop_header(1000) + b"\1" * 100)
            sock.shutdown(socket.SHUT_WR)
            received = answer_then_close(sock)
        assert received == b"" or received[7] == GIOP_MESSAGE_ERROR
        still_serving(factory)

    def test_garbage_instead_of_giop(self, factory: Any, address: tuple[str, int]) -> None:
        """Bytes that are not GIOP: MessageError or a close; the server serves on."""
        with socket.create_connection(address) as sock:
            sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
            received = answer_then_close(sock)
        assert received == b"" or received[7] == GIOP_MESSAGE_ERROR
        still_serving(factory)

    def test_a_header_then_silence_does_not_hold_others(self, factory: Any,
                                                        address: tuple[str, int]) -> None:
        """A client that sends half a message and waits: others are served meanwhile."""
        with socket.create_connection(address) as sock:
            sock.sendall(giop_header(1000) + b"\1" * 10)
            still_serving(factory)


def test_bad_qos_is_refused_with_nothing_lost(factory: Any) -> None:
    """Bad QoS over IIOP: UnsupportedQoS, and the channel keeps its old settings."""
    channel, _ = factory.create_channel([], [])
    before = {p.name: p.value.value() for p in channel.get_qos()}
    with pytest.raises(N.UnsupportedQoS):
        channel.set_qos([N.Property("OrderPolicy", CORBA.Any(CORBA.TC_string, "fifo"))])
    assert {p.name: p.value.value() for p in channel.get_qos()} == before
    channel.destroy()


@pytest.mark.xfail(strict=True, reason="omniORBpy 4.3.3 unmarshals nested values by C "
                   "recursion, one call a level, and a deep enough value overflows the "
                   "thread's stack (SIGSEGV) before cosnotify's code runs: docs/orb.md")
def test_a_deeply_nested_any_does_not_crash_the_server(omniorb: Any, tmp_path: Any) -> None:
    """An Any holding an Any ... 300,000 deep (a few MB, within the 16 MiB
    message limit): the server answers, or refuses it, and serves on (review 68)."""
    survives_a_push(omniorb, tmp_path, DEEP_CLIENT, "300000")


def survives_a_push(omniorb: Any, tmp_path: Any, client: str, *args: str) -> None:
    """A ``cosnotify serve`` child, a channel, and ``client`` (a Python script given the
    push consumer's IOR and ``args``) pushing to it: the server must serve on."""
    served = ServeProcess(tmp_path, "--call-timeout", "2")
    try:
        factory = omniorb.string_to_object(served.ior)._narrow(CA.EventChannelFactory)
        channel, _ = factory.create_channel([], [])
        entry = push_entry(channel)
        subprocess.run([sys.executable, "-c", client, omniorb.object_to_string(entry), *args],
                       capture_output=True, text=True, timeout=120, check=False)
        assert served.process.poll() is None, f"the server died: {served.process.returncode}"
        still_serving(factory)
    finally:
        served.stop()


#: A client that pushes an Any nested argv[2] deep, from a thread with a stack to match.
DEEP_CLIENT = """
import sys, threading
from omniORB import CORBA
import CosNotification as N, CosNotifyChannelAdmin as CA
threading.stack_size(512 * 1024 * 1024)
def push():
    orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)
    proxy = orb.string_to_object(sys.argv[1])._narrow(CA.StructuredProxyPushConsumer)
    value = CORBA.Any(CORBA.TC_long, 1)
    for _ in range(int(sys.argv[2])):
        value = CORBA.Any(CORBA.TC_any, value)
    event = N.StructuredEvent(N.EventHeader(N.FixedEventHeader(N.EventType("a", "b"), ""), []),
                              [N.Property("deep", value)], CORBA.Any(CORBA.TC_null, None))
    try:
        proxy.push_structured_event(event)
        print("accepted")
    except CORBA.SystemException as exc:
        print(type(exc).__name__)
thread = threading.Thread(target=push)
thread.start()
thread.join()
"""


#: A client that pushes an Any declared as interface ``Crash::I`` (which the server has no
#: stubs for) holding a reference whose IOR names another type.
REFERENCE_CLIENT = """
import sys
from omniORB import CORBA
import CosNotification as N, CosNotifyChannelAdmin as CA
orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)
proxy = orb.string_to_object(sys.argv[1])._narrow(CA.StructuredProxyPushConsumer)
declared = orb.create_interface_tc("IDL:Crash/I:1.0", "I")
value = CORBA.Any(declared, orb.string_to_object("corbaloc::127.0.0.1:1/elsewhere"))
event = N.StructuredEvent(N.EventHeader(N.FixedEventHeader(N.EventType("a", "b"), ""), []),
                          [N.Property("ref", value)], CORBA.Any(CORBA.TC_null, None))
try:
    proxy.push_structured_event(event)
    print("accepted")
except CORBA.SystemException as exc:
    print(type(exc).__name__)
orb.destroy()
"""


@pytest.mark.xfail(strict=True, reason="omniORBpy 4.3.3 crashes (SIGSEGV in createPyCorbaObjRef) "
                   "unmarshalling such an Any, before cosnotify's code runs: docs/orb.md")
def test_a_reference_of_an_unknown_interface_does_not_crash_the_server(
        omniorb: Any, tmp_path: Any) -> None:
    """An Any holding a reference declared as an interface the server has no stubs for."""
    survives_a_push(omniorb, tmp_path, REFERENCE_CLIENT)
