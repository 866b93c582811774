"""Review findings: each test pins a defect found against the seed
(seeds/elvin-client-protocol-4.0.txt) or issue 22, and the guards written with them."""

from __future__ import annotations

import gc
import hashlib
import logging
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA

from cosnotify.filter.filter import Filter
from cosnotify.protocols.elvin import keys as K
from cosnotify.protocols.elvin import start
from cosnotify.protocols.elvin.codec import Decoder, encode_packet
from cosnotify.protocols.elvin.mapping import KEYS_PROPERTY
from cosnotify.protocols.elvin.nacks import encode_nack
from cosnotify.protocols.elvin.outbox import DROPWARN, Outbox
from cosnotify.protocols.elvin.packets import Nack
from cosnotify.protocols.listener import Limits
from tests.protocols.elvin.client import (
    I64,
    WAIT,
    Client,
    conn_rqst,
    frame,
    notify_emit,
    qnch_del,
    qos_rqst,
    sub_add,
    unotify,
    wait_until,
)

Make = Callable[[], Client]


def connected(make: Make, options: Any = (), **kw: Any) -> Client:
    c = make()
    c.connect(options, **kw)
    return c


def sha1(key: bytes) -> bytes:
    return hashlib.sha1(key).digest()


@pytest.fixture
def no_bugs(caplog: pytest.LogCaptureFixture) -> Iterator[Any]:
    """Fails the test if the listener logged a session failure (a bug, not bad input)."""
    caplog.set_level(logging.INFO, logger="cosnotify.protocols")
    yield caplog
    bugs = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not bugs, [r.getMessage() for r in bugs]


def corba_supplier(channel: Any) -> Any:
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_push_supplier(None)
    return proxy


def event(data: dict[str, Any], variable: tuple[Any, ...] = ()) -> Any:
    """A structured event with ``data`` as long (int) or string properties."""
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("", ""), ""), list(variable)),
        [N.Property(k, CORBA.Any(CORBA.TC_long if type(v) is int else CORBA.TC_string, v))
         for k, v in data.items()],
        CORBA.Any(CORBA.TC_null, None))


def packets_until_closed(c: Client) -> list[str]:
    kinds = []
    while (packet := c.recv()) is not None:
        kinds.append(packet["type"])
    return kinds


class TestKeysThroughTheChannel:
    """The producer's keys an event carries through the channel (§7.4.15)."""

    def test_a_corba_supplier_cannot_forge_keys(self, client: Make, channel: Any) -> None:
        """A CORBA supplier writing the keys property itself gets no secure match:
        the secure match means "the consumer [has] a matching key" of an Elvin producer
        (§7.4.15), which only the producer's private key can give."""
        sub = connected(client)
        sid = sub.subscribe("require(x)", insecure=True, k=[(2, [[sha1(b"p")]])])
        forged = K.pack(K.PublicKeys(producer=frozenset([sha1(b"p")])))
        corba_supplier(channel).push_structured_event(event({"x": 1}, (N.Property(
            KEYS_PROPERTY, CORBA.Any(CORBA._tc_OctetSeq, forged)),)))
        got = sub.expect("NotifyDeliver")
        assert (got["secure"], got["insecure"]) == ([], [sid])

    def test_keys_copied_onto_other_content_are_refused(self, client: Make,
                                                        channel: Any) -> None:
        """A sealed keys property a CORBA consumer saw, replayed on other content, is no
        key: the seal binds the keys to the notification's attributes."""
        captured: list[Any] = []
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(SimpleNamespace(
            push_structured_event=captured.append, offer_change=lambda a, r: None,
            disconnect_structured_push_consumer=lambda: None))
        sub = connected(client)
        sid = sub.subscribe("require(x)", insecure=True, k=[(2, [[sha1(b"p")]])])
        connected(client).send(notify_emit({"x": 1}, insecure=True, k=[(2, [[b"p"]])]))
        assert sub.expect("NotifyDeliver")["secure"] == [sid]     # the genuine one
        assert wait_until(lambda: captured)
        sealed = [p for p in captured[0].header.variable_header if p.name == KEYS_PROPERTY]
        corba_supplier(channel).push_structured_event(event({"x": 666}, tuple(sealed)))
        got = sub.expect("NotifyDeliver")
        assert (got["attributes"], got["secure"], got["insecure"]) == ({"x": 666}, [], [sid])

    def test_a_value_past_int32_from_a_corba_supplier_is_left_out(self, client: Make,
                                                                    channel: Any) -> None:
        """An Any made in process is not marshalled, so a long may hold 2**40. No Elvin
        int32 carries it: the attribute is left out of the delivery, and the session
        lives on (review 67: the delivery's encoding raised, and after four tries the
        channel disconnected the Elvin session)."""
        sub = connected(client)
        sub.subscribe("require(y)")
        supplier = corba_supplier(channel)
        supplier.push_structured_event(event({"x": 2**40, "y": 1}))
        supplier.push_structured_event(event({"y": 2}))
        assert sub.expect("NotifyDeliver")["attributes"] == {"y": 1}
        assert sub.expect("NotifyDeliver")["attributes"] == {"y": 2}

    def test_an_attribute_named_like_the_keys_property_is_kept(self, client: Make) -> None:
        """A notification's attributes reach the subscriber, whatever their (legal) name."""
        sub = connected(client)
        sub.subscribe("require(x)")
        connected(client).send(notify_emit({"x": 1, KEYS_PROPERTY: 5}))
        assert sub.expect("NotifyDeliver")["attributes"] == {"x": 1, KEYS_PROPERTY: 5}


class TestNackArguments:
    """The arguments of §7.4.2's table, with their types."""

    def test_bad_key_scheme_with_a_large_id(self, client: Make, no_bugs: Any) -> None:
        """BAD_KEY_SCHEME's argument is "scheme_id, id32": any 32 bits, not a crash."""
        c = client()
        c.send(conn_rqst(1, nfn=[(0xFFFFFFF0, [[b"k"]])]))
        nack = c.expect("Nack")
        assert (nack["error"], nack["args"]) == (1004, [0xFFFFFFF0 - (1 << 32)])
        c.connect()                                         # and the session goes on

    def test_no_such_quench_is_an_int64(self, client: Make, no_bugs: Any) -> None:
        """NO_SUCH_QUENCH's argument is "quench_id, id64" (an int64 Value)."""
        c = connected(client)
        nack = c.request(qnch_del, 1 << 40)
        assert (nack["error"], nack["args"]) == (1003, [1 << 40])
        assert isinstance(nack["args"][0], I64)

    def test_type_mismatch_has_three_arguments(self, client: Make) -> None:
        """TYPE_MISMATCH: "offset, int32; expr, string; type, string"."""
        nack = connected(client).request(sub_add, 'x + "a" > 1')
        assert nack["error"] == 2106
        assert [type(a) for a in nack["args"]] == [int, str, str]
        assert nack["args"][2] == "string"

    def test_a_nack_fits_the_clients_packet_max_length(self, client: Make) -> None:
        """§8.2.1: "After reading a header preceding a packet exceeding that length, the
        implementation MUST reset the TCP connection": a Nack quoting a long expression
        is cut to the client's Packet.Max-Length (review 130: 1,000-odd bytes to a
        client of 1024)."""
        c = connected(client, [("Packet.Max-Length", 1024), ("Subscription.Max-Length", 1000)])
        c.send(sub_add(c.next_xid(), "b" * 900 + "(x)"))
        assert c._fill(4)
        assert struct.unpack(">I", c.buffer[:4])[0] <= 1024
        nack = c.expect("Nack")
        assert (nack["error"], nack["args"][0]) == (2104, 0)
        assert nack["message"].endswith("...") and "bbbb" in nack["message"]
        c.send(frame("TestConn"))
        c.expect("ConfConn")

    @pytest.mark.parametrize("size", [0, 990, 1003, 1004, 1005, 1006, 1007, 5000])
    def test_encode_nack_cuts_the_message_only(self, size: int) -> None:
        """§7.4.2: a Nack has "a message" and "arguments"; cut to fit, the message keeps
        whole characters, the arguments stay."""
        message = ("\u20ac" * size)[:size]
        nack = Nack(7, 2104, message, (3, "b" * 64))
        data = encode_nack(nack, 1024)
        assert len(data) - 4 <= 1024
        back = Decoder(1 << 20)
        back.receive_data(data)
        got = back.next_packet()
        assert (got.xid, got.error, got.args) == (7, 2104, (3, "b" * 64))  # type: ignore
        if data == encode_packet(nack):
            assert got.message == message  # type: ignore[union-attr]
        else:
            assert got.message.endswith("...")  # type: ignore[union-attr]
            assert message.startswith(got.message[:-3])  # type: ignore[union-attr]
            assert len(data) - 4 > 1024 - 12            # cut no more than it must


class TestLastPacket:
    """Disconn and DisconnRply are "the last packet sent by a router" (§7.4.6, §7.4.7)."""

    def test_one_disconn_when_the_channel_goes(self, client: Make, channel: Any) -> None:
        """The channel disconnecting both proxies of a client at once sends one Disconn."""
        clients = []
        for _ in range(10):
            c = connected(client)
            c.subscribe("require(x)")
            clients.append(c)
        channel.destroy()
        for c in clients:
            assert packets_until_closed(c) == ["Disconn"]

    def test_a_unotify_channel_is_sent_nothing(self, client: Make, front_end: Any) -> None:
        """§7.4.1: "The router MUST NOT send any data to the client over the channel",
        not even Disconn when the router closes down."""
        sub = connected(client)
        sub.subscribe("require(u)")
        anon = client()
        anon.send(unotify({"u": 1}))
        sub.expect("NotifyDeliver")
        front_end.close()
        assert anon.sock.recv(100) == b""


class _Connection:
    """A Connection for the outbox alone: in the loop, with settable unsent bytes."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.unsent = 0

    def in_loop(self) -> bool:
        return True

    def pending(self) -> int:
        return self.unsent

    def send(self, data: bytes, frames: int = 1) -> bool:
        self.sent.append(data)
        return True


class TestDrops:
    """Dropped packets and DropWarn (§5.4.6, §7.4.12, §7.5.1)."""

    def outbox(self, **options: Any) -> tuple[Outbox, _Connection, Any]:
        connection, stats = _Connection(), SimpleNamespace(dropped=0)
        values: dict[str, Any] = {"Packet.Max-Length": 1 << 16,
                                  "Send-Queue.Drop-Policy": "newest",
                                  "Send-Queue.Max-Length": 1024} | options
        box = Outbox(connection, None, stats, lambda: values)  # type: ignore[arg-type]
        return box, connection, stats

    def test_dropwarn_is_sent_when_nothing_follows(self) -> None:
        """"the router is obliged to send a DropWarn packet" (§5.4.6), "from this place
        in the data stream" (§7.4.12): at the first drop, not with a later packet."""
        box, connection, stats = self.outbox()
        connection.unsent = 4096
        box.flush()                    # the outbox learns how much the socket holds
        assert not box.queue(b"d" * 40, droppable=True)
        assert not box.queue(b"e" * 40, droppable=True)
        assert (connection.sent, stats.dropped) == ([DROPWARN], 2)
        connection.unsent = 0
        box.flush()
        assert box.queue(b"f" * 40, droppable=True)
        connection.unsent = 4096
        box.flush()
        assert not box.queue(b"g" * 40, droppable=True)
        assert connection.sent == [DROPWARN, b"f" * 40, DROPWARN]

    def test_nothing_after_the_final_packet(self) -> None:
        """A final packet ends the outbox; a second one is refused."""
        box, connection, _ = self.outbox()
        assert box.queue(b"disconn", final=True)
        assert not box.queue(b"disconn", final=True)
        assert not box.queue(b"reply")
        assert connection.sent == [b"disconn"]

    def test_a_delivery_over_the_clients_packet_limit(self, client: Make) -> None:
        """A client that negotiated Packet.Max-Length resets the connection on a longer
        packet (§8.2.1), so a longer NotifyDeliver is dropped and a DropWarn sent."""
        sub = connected(client, [("Packet.Max-Length", 1024)])
        sub.subscribe("require(b) || require(mark)")
        connected(client).send(notify_emit({"b": b"x" * 2000}) + notify_emit({"mark": 1}))
        sub.expect("DropWarn")
        assert sub.expect("NotifyDeliver")["attributes"] == {"mark": 1}


class TestOptionReplies:
    """The ConnRply/QosRply options table (§7.4.4, §7.4.10, §7.5)."""

    def test_one_option_under_two_names(self, client: Make) -> None:
        """An option asked under its name and its compatibility name (§7.5.3) is answered
        with the one value in force under both."""
        reply = client().connect([("Packet.Max-Length", 4096),
                                  ("router.packet.max-length", 2048)])
        assert reply["options"]["Packet.Max-Length"] == 2048
        assert reply["options"]["router.packet.max-length"] == 2048

    def test_qos_reply_carries_the_active_values(self, client: Make) -> None:
        """QosRply specifies "the active option values following its processing of the
        request" (§7.4.10), not only those asked; the ConnRply gives the limits too."""
        c = client()
        assert c.connect()["options"]["Packet.Max-Length"] == 1 << 16
        reply = c.request(qos_rqst, [("Subscription.Max-Count", 5)])
        assert reply["options"]["Subscription.Max-Count"] == 5
        assert reply["options"]["Packet.Max-Length"] == 1 << 16
        assert reply["options"]["Send-Queue.Drop-Policy"] == "newest"


class TestChannelLimits:
    """The channel's proxy limits as Elvin errors, not a failed session."""

    def test_max_consumers_is_impl_limit(self, client: Make, channel: Any,
                                         no_bugs: Any) -> None:
        """§7.4.17: "If the router has too many registered subscriptions, or exceeds some
        other internal limit, it MUST return a Nack with error code IMPL_LIMIT"."""
        channel.set_admin([N.Property("MaxConsumers", CORBA.Any(CORBA.TC_long, 1))])
        connected(client).subscribe("require(x)")
        other = connected(client)
        nack = other.request(sub_add, "require(y)")
        assert (nack["type"], nack["error"]) == ("Nack", 2006)
        other.send(frame("TestConn"))
        other.expect("ConfConn")                            # the session goes on

    def test_max_suppliers_nacks_the_conn_rqst(self, client: Make, channel: Any,
                                               no_bugs: Any) -> None:
        """§7.4.3: "A router receiving a ConnRqst MUST send a ConnRply, a Nack or a
        disconnect in reply"."""
        channel.set_admin([N.Property("MaxSuppliers", CORBA.Any(CORBA.TC_long, 1))])
        connected(client)
        late = client()
        late.send(conn_rqst(5))
        nack = late.expect("Nack")
        assert (nack["xid"], nack["error"]) == (5, 2006)


    def test_a_full_channel_costs_notifications_not_the_session(
            self, client: Make, front_end: Any, channel: Any, no_bugs: Any) -> None:
        """§7.4.7: "The router MUST NOT close the client's session (or channel) without
        sending either a DisconnRply or Disconn packet except in the case of a protocol
        violation" -- the channel's IMP_LIMIT (MaxQueueLength, RejectNewEvents) refuses
        notifications; the producer's session goes on (review 130)."""
        channel.set_admin([N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 1)),
                           N.Property("RejectNewEvents", CORBA.Any(CORBA.TC_boolean, True))])
        gate = _Gate()
        sink, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        sink.connect_structured_push_consumer(gate)
        try:
            producer = connected(client)
            producer.send(b"".join(notify_emit({"n": n}) for n in range(5)))
            producer.send(frame("TestConn"))
            producer.expect("ConfConn")
        finally:
            gate.release.set()
        stats = front_end.router.stats
        assert stats.notifications_in == 5
        assert stats.notifications_refused >= 3       # one delivered, one queued at most

    def test_a_refused_notification_costs_only_itself(self, client: Make, front_end: Any,
                                                      no_bugs: Any) -> None:
        """§7.3.3: "MUST maintain a connection in the face of protocol errors"; one
        refusal loses neither the session nor the rest of the read's notifications."""
        sub = connected(client)
        sub.subscribe("require(n)")
        producer = connected(client)
        _refuse(front_end, CORBA.NO_RESOURCES)
        producer.send(b"".join(notify_emit({"n": n}) for n in range(3)))
        got = [sub.expect("NotifyDeliver")["attributes"]["n"] for _ in range(2)]
        assert got == [0, 2]
        producer.send(frame("TestConn"))
        producer.expect("ConfConn")
        assert front_end.router.stats.notifications_refused == 1

    def test_a_proxy_gone_is_disconn(self, client: Make, front_end: Any) -> None:
        """§7.4.7: Disconn "MUST be the last packet sent by a router", reason 1 ("Router
        is closing down"): the channel no longer has the producer's proxy."""
        producer = connected(client)
        _refuse(front_end, CORBA.OBJECT_NOT_EXIST)
        producer.send(notify_emit({"n": 1}))
        assert producer.expect("Disconn")["reason"] == 1
        assert producer.recv() is None


class _Gate:
    """A structured push consumer that holds the channel's delivery until released."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def push_structured_event(self, event: Any) -> None:
        self.release.wait(WAIT)

    def offer_change(self, added: Any, removed: Any) -> None:
        pass

    def disconnect_structured_push_consumer(self) -> None:
        pass


def _refuse(front_end: Any, error: type[Exception]) -> None:
    """The only session's proxy consumer raises ``error`` for the event whose n is 1."""
    [session] = front_end.router.sessions - {s for s in front_end.router.sessions
                                             if s.subscriptions}
    proxy = session._supplier_proxy

    class Refusing:
        def push_structured_event(self, event: Any) -> None:
            if any(p.name == "n" and p.value.value() == 1 for p in event.filterable_data):
                raise error(0, CORBA.COMPLETED_NO)
            proxy.push_structured_event(event)
    session._supplier_proxy = Refusing()


class TestCorbaStrings:
    """CORBA strings that are not Elvin strings (§7.4: UTF-8, "no NUL bytes")."""

    def test_a_bad_string_does_not_end_the_session(self, client: Make, channel: Any) -> None:
        """A lone surrogate or a NUL in a CORBA string is left out of the NotifyDeliver;
        the subscriber is not disconnected and gets what follows."""
        sub = connected(client)
        sid = sub.subscribe("require(s)")
        supplier = corba_supplier(channel)
        for bad in ("\ud800", "a\0b"):
            supplier.push_structured_event(event({"s": "ok", "t": bad}))
        supplier.push_structured_event(event({"s": "last"}))
        got = [sub.expect("NotifyDeliver") for _ in range(3)]
        assert [g["attributes"] for g in got] == [{"s": "ok"}, {"s": "ok"}, {"s": "last"}]
        assert got[0]["insecure"] == [sid]

    def test_names_that_are_not_elvin_names_are_left_out(self, client: Make,
                                                          channel: Any) -> None:
        """§5.3.1: "An attribute name is a string value from a subset of the printable
        ASCII character set. The maximum length of an attribute name is 1024 bytes":
        a CORBA property named otherwise is left out of the NotifyDeliver (review 130)."""
        sub = connected(client)
        sub.subscribe("require(x)")
        bad = ["h\u00e9llo", "line\n", "", "n" * 1025, "tab\there"]
        good = ["n" * 1024, "a b", "~!"]
        supplier = corba_supplier(channel)
        supplier.push_structured_event(event({"x": 1, **{n: 2 for n in bad + good}}))
        got = sub.expect("NotifyDeliver")["attributes"]
        assert sorted(got) == sorted(["x", *good])


class TestSlowLoris:
    """Limits.read_timeout bounds a whole packet, not each read."""

    def test_a_dripping_packet_is_closed(self, core: Any) -> None:
        """A ConnRqst sent a byte at a time, each within the read timeout, is still
        closed once the packet is read_timeout late (§7.4.3: "within a reasonable time
        period"; issue 22: slow-loris connections are refused)."""
        fe = start(core[2], "127.0.0.1", 0, limits=Limits(read_timeout=0.5, idle_timeout=None))
        try:
            c = Client(fe.address)
            c.sock.setblocking(False)      # the peek below must not wait
            began = time.monotonic()
            closed = False
            for byte in conn_rqst(1)[:-1]:
                try:
                    c.send(bytes([byte]))
                    if c.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                        closed = True
                except BlockingIOError:
                    pass
                except OSError:
                    closed = True
                if closed or time.monotonic() - began > 3:
                    break
                time.sleep(0.1)
            assert closed and time.monotonic() - began < 2
            assert fe.counters.closed_bad == 1
        finally:
            fe.close()


    def test_a_steady_stream_of_packets_is_not_cut(self, core: Any) -> None:
        """The deadline is per packet: a producer whose every write ends inside a packet,
        for longer than read_timeout in all, is not closed while each packet is on time."""
        fe = start(core[2], "127.0.0.1", 0, limits=Limits(read_timeout=0.5, idle_timeout=None))
        try:
            sub, pub = Client(fe.address), Client(fe.address)
            sub.connect()
            sub.subscribe("require(n)")
            pub.connect()
            stream = b"".join(notify_emit({"n": i}) for i in range(20))
            step = len(notify_emit({"n": 0})) + 1          # no write ends on a boundary
            began = time.monotonic()
            for at in range(0, len(stream), step):
                pub.send(stream[at:at + step])
                time.sleep(0.1)
            assert time.monotonic() - began > 1.0          # twice the read timeout
            assert [sub.expect("NotifyDeliver")["attributes"]["n"] for _ in range(20)] == list(
                range(20))
            assert fe.counters.closed_bad == 0
        finally:
            fe.close()


class TestCleanup:
    """§7.3.1: "clean up all state associated with the channel (and its client)"."""

    def test_no_proxies_or_filters_are_left(self, client: Make, channel: Any) -> None:
        """After many sessions (ending by DisconnRqst or a dropped socket) the channel has
        the proxies it started with, and no live ELVIN4 filter."""
        suppliers = channel._get_default_supplier_admin()
        consumers = channel._get_default_consumer_admin()
        counts = (len(suppliers._get_push_consumers()), len(consumers._get_push_suppliers()))
        gc.collect()
        # Filters of other tests this worker process ran before may still be alive.
        alive_before = {id(o) for o in gc.get_objects()
                        if isinstance(o, Filter) and not o._is_destroyed}
        for i in range(30):
            c = connected(client)
            c.subscribe(f"require(x{i})")
            c.send(notify_emit({"x": 1}))
            if i % 2:
                c.disconnect()
            c.close()
        assert wait_until(lambda: (len(suppliers._get_push_consumers()),
                                   len(consumers._get_push_suppliers())) == counts)
        gc.collect()
        assert not [o for o in gc.get_objects() if isinstance(o, Filter)
                    and not o._is_destroyed and id(o) not in alive_before]

    def test_a_producer_closing_mid_batch(self, client: Make, channel: Any) -> None:
        """Every whole NotifyEmit read before the close is delivered, in order; the torn
        one is dropped (§8.2.1: a communications error), and its proxy goes."""
        sub = connected(client)
        sub.subscribe("require(n)")
        suppliers = channel._get_default_supplier_admin()
        pub = connected(client)
        before = len(suppliers._get_push_consumers())
        pub.send(b"".join(notify_emit({"n": i}) for i in range(2000))
                 + notify_emit({"n": -1})[:10])
        pub.close()
        assert [sub.expect("NotifyDeliver")["attributes"]["n"] for _ in range(2000)] == list(
            range(2000))
        assert wait_until(lambda: len(suppliers._get_push_consumers()) == before - 1)


class TestLoopNotBlocked:
    """One client's work in the core never stalls the loop every client shares."""

    def test_compiling_a_subscription_does_not_stall_others(
            self, client: Make, monkeypatch: pytest.MonkeyPatch) -> None:
        """A long expression takes a while to compile (0.3 s for 32 KiB); other clients'
        packets are answered meanwhile (issue 22: a slow peer must not stall others)."""
        import threading

        from cosnotify.protocols.elvin import subscriptions as session
        release = threading.Event()
        real = session.compile_program  # type: ignore[attr-defined]

        def slow(text: str) -> Any:
            if "slow" in text:
                assert release.wait(10)
            return real(text)
        monkeypatch.setattr(session, "compile_program", slow)
        busy, other = connected(client), connected(client)
        busy.send(sub_add(7, "require(slow)"))
        other.sock.settimeout(3)
        other.send(frame("TestConn"))
        try:
            other.expect("ConfConn")       # answered while the compile still waits
        finally:
            release.set()
        assert busy.expect("SubRply")["xid"] == 7
