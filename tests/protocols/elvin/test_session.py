"""Elvin 4 sessions over TCP: connection, options, notifications, subscriptions (seed §5.4, §7.4)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import cosnotify
from cosnotify.__main__ import _parser
from cosnotify.protocols.elvin import start
from cosnotify.protocols.listener import Limits
from cosnotify.protocols.serve import FrontEnds, elvin_limits, front_end_config
from tests.protocols.elvin.client import (
    I64,
    Client,
    conn_rqst,
    frame,
    notify_emit,
    qos_rqst,
    sub_add,
    sub_del,
    sub_mod,
    u32,
    unotify,
    wait_until,
)

Make = Callable[[], Client]


def connected(make: Make, options: Any = ()) -> Client:
    c = make()
    c.connect(options)
    return c


class TestConnect:
    """ConnRqst / ConnRply and the options of §7.5."""

    def test_requested_options_are_answered(self, client: Make) -> None:
        """§7.5 (a): an accepted value comes back as asked; the router's own options
        (Supported-Key-Schemes, Vendor-Identification) are always included (§7.5.1)."""
        reply = client().connect([("Packet.Max-Length", 4096), ("Subscription.Max-Count", 8)])
        assert reply["options"]["Packet.Max-Length"] == 4096
        assert reply["options"]["Subscription.Max-Count"] == 8
        assert "SHA-1-Producer" in reply["options"]["Supported-Key-Schemes"]
        assert reply["options"]["Vendor-Identification"].startswith("cosnotify")

    def test_unknown_options_are_not_returned(self, client: Make) -> None:
        """§7.4.4: "Unrecognised options MUST NOT be returned by the router"."""
        reply = client().connect([("Bogus.Option", 1), ("Attribute.Max-Count", 64)])
        assert "Bogus.Option" not in reply["options"]
        assert reply["options"]["Attribute.Max-Count"] == 64

    def test_refused_values_come_back_with_the_routers_value(self, client: Make) -> None:
        """§7.5 (b): out of range or of the wrong type, the entry holds what the router
        provides, which differs from the request."""
        reply = client().connect([("Packet.Max-Length", 1 << 30), ("Attribute.Max-Count", "x"),
                                  ("Send-Queue.Drop-Policy", "largest")])
        opts = reply["options"]
        assert opts["Packet.Max-Length"] == 1 << 16          # the listener's max_frame
        assert opts["Attribute.Max-Count"] == 256
        assert opts["Send-Queue.Drop-Policy"] == "newest"

    def test_compatibility_names(self, client: Make) -> None:
        """§7.5.3: the compatibility names are understood and answered under that name."""
        reply = client().connect([("router.subscription.max-count", 3)])
        assert reply["options"]["router.subscription.max-count"] == 3

    def test_other_major_version_is_nacked(self, client: Make) -> None:
        """§7.4.2: PROT_INCOMPAT (1) refuses a ConnRqst of another protocol version;
        the client may then connect properly."""
        c = client()
        c.send(conn_rqst(1, major=3))
        nack = c.expect("Nack")
        assert (nack["xid"], nack["error"]) == (1, 1)
        c.connect()

    def test_packets_before_connecting_close_the_channel(self, client: Make) -> None:
        """§7.3.2: a packet "not expected at the current point" is a violation."""
        c = client()
        c.send(sub_add(1, "x > 1"))
        assert c.closed()

    def test_disconnect(self, client: Make) -> None:
        """§7.4.5/§7.4.6: DisconnRply answers DisconnRqst and is the last packet."""
        c = connected(client)
        c.subscribe("require(x)")
        c.send(frame("DisconnRqst", u32(99)))
        assert c.expect("DisconnRply")["xid"] == 99
        assert c.closed()

    def test_closing_the_front_end_sends_disconn(self, client: Make, front_end: Any) -> None:
        """§7.4.7: reason 1, "Router is closing down"."""
        c = connected(client)
        front_end.close()
        packet = c.recv()
        assert packet is not None and (packet["type"], packet["reason"]) == ("Disconn", 1)

    def test_destroying_the_channel_sends_disconn(self, client: Make, channel: Any) -> None:
        """The channel disconnecting the client's proxies ends its session with Disconn
        reason 1 (§7.4.7), not a silent close."""
        c = connected(client)
        c.subscribe("require(x)")
        channel.destroy()
        packet = c.recv()
        assert packet is not None and (packet["type"], packet["reason"]) == ("Disconn", 1)
        assert c.closed()

    def test_test_conn_gets_conf_conn(self, client: Make) -> None:
        """§7.4.14: a TestConn with nothing else queued is answered by ConfConn."""
        c = connected(client)
        c.send(frame("TestConn"))
        c.expect("ConfConn")

    def test_an_idle_client_is_tested(self, core: Any) -> None:
        """§7.4.13: after idle_timeout of silence the router sends TestConn; a client
        answering ConfConn (§7.4.14) stays, one that does not is closed after the read
        timeout."""
        fe = start(core[2], "127.0.0.1", 0,
                   limits=Limits(idle_timeout=0.3, read_timeout=0.5))
        try:
            good, bad = Client(fe.address), Client(fe.address)
            good.connect()
            bad.connect()
            good.expect("TestConn")
            good.send(frame("ConfConn"))
            bad.expect("TestConn")
            assert bad.closed()
            good.expect("TestConn")         # still open: tested again after more silence
            good.close()
        finally:
            fe.close()

    def test_the_test_conn_period_is_a_serve_option(self) -> None:
        """§7.4.13: "This period MUST be configurable, sending MUST be able to be
        disabled": ``cosnotify serve --elvin-test-conn SECONDS`` sets the front end's
        idle_timeout; 0 turns TestConn (and closing a silent session) off."""
        factory = cosnotify.EventChannelFactory()
        try:
            args = _parser().parse_args(["serve", "--elvin", "127.0.0.1:0",
                                         "--elvin-test-conn", "0.3"])
            running = FrontEnds((front_end_config("elvin", args.elvin,
                                                  limits=elvin_limits(args.elvin_test_conn)),),
                                factory)
            try:
                c = Client(running.address("elvin"))
                c.connect()
                c.expect("TestConn")
                c.close()
            finally:
                running.close()
            args = _parser().parse_args(["serve", "--elvin", "127.0.0.1:0",
                                         "--elvin-test-conn", "0"])
            running = FrontEnds((front_end_config("elvin", args.elvin,
                                                  limits=elvin_limits(args.elvin_test_conn)),),
                                factory)
            try:
                assert running.running[0][1].limits.idle_timeout is None
            finally:
                running.close()
        finally:
            factory.close(wait=False)

    def test_qos_renegotiation(self, client: Make) -> None:
        """§7.4.10/§7.4.11: QosRqst is answered by QosRply, and the new limit applies."""
        c = connected(client)
        reply = c.request(qos_rqst, [("Subscription.Max-Count", 1)])
        assert reply["type"] == "QosRply"
        assert reply["options"]["Subscription.Max-Count"] == 1
        c.subscribe("x > 1")
        nack = c.request(sub_add, "y > 1")
        assert (nack["type"], nack["error"], nack["args"]) == ("Nack", 2005,
                                                               ["Subscription.Max-Count"])


class TestNotifications:
    """NotifyEmit -> NotifyDeliver (§5.4.3, §7.4.15, §7.4.16)."""

    def test_every_type_round_trips(self, client: Make) -> None:
        """int32, int64, real64, string and opaque arrive with their types and values."""
        sub = connected(client)
        sid = sub.subscribe("require(n)")
        pub = connected(client)
        attrs = {"n": 7, "big": I64(2**40), "r": -0.25, "s": "héllo wörld", "o": b"\0\xff"}
        pub.send(notify_emit(attrs))
        got = sub.expect("NotifyDeliver")
        assert got["attributes"] == attrs
        assert isinstance(got["attributes"]["big"], I64)
        assert not isinstance(got["attributes"]["n"], I64)
        assert (got["secure"], got["insecure"]) == ([], [sid])

    def test_only_matching_subscriptions(self, client: Make) -> None:
        """A notification matching one of two subscriptions names that one only; one
        matching both is one NotifyDeliver naming both (§5.4.3)."""
        sub = connected(client)
        low = sub.subscribe("x < 10")
        any_x = sub.subscribe("require(x)")
        pub = connected(client)
        pub.send(notify_emit({"x": 50}))
        pub.send(notify_emit({"x": 5}))
        first, second = sub.expect("NotifyDeliver"), sub.expect("NotifyDeliver")
        assert (first["attributes"], first["insecure"]) == ({"x": 50}, [any_x])
        assert (second["attributes"], sorted(second["insecure"])) == ({"x": 5},
                                                                     sorted([low, any_x]))

    def test_nothing_before_a_subscription(self, client: Make, front_end: Any) -> None:
        """§5.4.4: no NotifyDeliver until the client has added a subscription."""
        quiet = connected(client)
        pub = connected(client)
        pub.send(notify_emit({"x": 1}))
        assert wait_until(lambda: front_end.router.stats.notifications_in == 1)
        quiet.send(frame("TestConn"))
        quiet.expect("ConfConn")    # the next packet is ConfConn: no delivery came first

    def test_the_producer_gets_its_own(self, client: Make) -> None:
        """A client subscribed to what it emits receives it (one session, both roles)."""
        c = connected(client)
        c.subscribe('s == "me"')
        c.send(notify_emit({"s": "me"}))
        assert c.expect("NotifyDeliver")["attributes"] == {"s": "me"}

    def test_limits_make_a_notification_ignored(self, client: Make, front_end: Any) -> None:
        """§7.3.3: a NotifyEmit over the negotiated limits is ignored, with no Nack,
        and the session goes on."""
        sub = connected(client)
        sub.subscribe("require(n)")
        pub = connected(client, [("Attribute.Max-Count", 16)])
        pub.send(notify_emit({f"a{i}": i for i in range(17)} | {"n": 1}))
        pub.send(notify_emit({"n": 2}))
        assert sub.expect("NotifyDeliver")["attributes"] == {"n": 2}
        assert front_end.router.stats.notifications_ignored == 1

    def test_unotify(self, client: Make, front_end: Any) -> None:
        """§7.4.1: UNotify without a session is delivered; "The router MUST NOT send any
        data to the client"; an incompatible version is "silently discarded"."""
        sub = connected(client)
        sub.subscribe("require(u)")
        anon = client()
        anon.send(unotify({"u": 1}, major=5))
        anon.send(unotify({"u": 2}))
        assert sub.expect("NotifyDeliver")["attributes"] == {"u": 2}
        anon.sock.settimeout(0.2)
        assert not anon.closed() and anon.buffer == b""

    def test_unotify_then_a_session_packet_is_a_violation(self, client: Make) -> None:
        """§5.4.1: "No other packets are allowed during session-less operation"."""
        anon = client()
        anon.send(unotify({"u": 1}) + conn_rqst(1))
        assert anon.closed()


class TestSubscriptions:
    """SubAddRqst, SubModRqst, SubDelRqst and their Nacks (§7.4.17 - §7.4.20, §6.3)."""

    @pytest.mark.parametrize("text,code", [("x >", 2101), ("x == 'a", 2103),
                                           ("nosuch(x)", 2104), ("x == 2147483648", 2105),
                                           ("1 == 1", 2110)])
    def test_parse_errors_are_nacked_with_the_seeds_codes(self, client: Make, text: str,
                                                          code: int) -> None:
        """§7.4.17: "If the subscription expression fails to parse, the router MUST return
        a Nack with an appropriate error code" (§7.4.2's table)."""
        nack = connected(client).request(sub_add, text)
        assert (nack["type"], nack["error"]) == ("Nack", code)

    def test_the_offset_argument(self, client: Make) -> None:
        """PARSE_ERROR's arguments are the offset (int32) and the token (§7.4.2)."""
        nack = connected(client).request(sub_add, "x > 1 &&& y")
        assert nack["error"] == 2101 and isinstance(nack["args"][0], int)

    def test_modify_changes_what_matches(self, client: Make) -> None:
        """SubModRqst replaces the expression and keeps the id (§7.4.18)."""
        sub = connected(client)
        sid = sub.subscribe("x == 1")
        reply = sub.request(sub_mod, sid, "x == 2")
        assert (reply["type"], reply["id"]) == ("SubRply", sid)
        pub = connected(client)
        pub.send(notify_emit({"x": 1}) + notify_emit({"x": 2}))
        assert sub.expect("NotifyDeliver")["attributes"] == {"x": 2}

    def test_an_invalid_modification_changes_nothing(self, client: Make) -> None:
        """§7.4.18: "An invalid expression MUST NOT alter the current state"."""
        sub = connected(client)
        sid = sub.subscribe("x == 1")
        assert sub.request(sub_mod, sid, "x ==")["error"] == 2101
        connected(client).send(notify_emit({"x": 1}))
        assert sub.expect("NotifyDeliver")["insecure"] == [sid]

    def test_delete(self, client: Make) -> None:
        """After SubDelRqst nothing more is delivered for that subscription."""
        sub = connected(client)
        sid = sub.subscribe("x == 1")
        assert sub.request(sub_del, sid)["type"] == "SubRply"
        connected(client).send(notify_emit({"x": 1}))
        sub.send(frame("TestConn"))
        sub.expect("ConfConn")

    @pytest.mark.parametrize("build", [lambda x: sub_del(x, 999), lambda x: sub_mod(x, 999)])
    def test_unknown_ids_are_no_such_sub(self, client: Make, build: Any) -> None:
        """§7.4.18/§7.4.19: NO_SUCH_SUB (1002) with the id as argument."""
        c = connected(client)
        c.send(build(77))
        nack = c.expect("Nack")
        assert (nack["xid"], nack["error"], nack["args"]) == (77, 1002, [999])

    def test_the_expression_length_limit(self, client: Make) -> None:
        """Subscription.Max-Length (§7.5.1): a longer expression is QOS_LIMIT."""
        c = connected(client, [("Subscription.Max-Length", 64)])
        nack = c.request(sub_add, "x == " + "1 + " * 30 + "1")
        assert (nack["error"], nack["args"]) == (2005, ["Subscription.Max-Length"])

    def test_a_request_of_the_wrong_direction_is_nacked(self, client: Make) -> None:
        """A router-to-client packet with an xid (SecRply) from a client: PROT_ERROR."""
        c = connected(client)
        c.send(frame("SecRply", u32(9)))
        nack = c.expect("Nack")
        assert (nack["xid"], nack["error"]) == (9, 1001)
