"""Review 97's findings: what one Elvin client may hold (keys, quenches, subscription
text) is bounded and Nacked past its bound; a seal covers all an ELVIN4 filter reads;
an empty header field is an absent attribute; the secure route runs off the loop."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N

from cosnotify.filter.elvin4 import compile_program
from cosnotify.protocols.elvin import keys as K
from cosnotify.protocols.elvin import quench as Q
from cosnotify.protocols.elvin import subscriptions as S
from cosnotify.protocols.elvin.mapping import event_keys, from_event, to_event
from tests.protocols.elvin.client import (
    conn_rqst,
    frame,
    notify_emit,
    qnch_add,
    qnch_mod,
    sec_rqst,
    sub_add,
    sub_del,
    sub_mod,
)
from tests.protocols.elvin.test_review import Make, connected, corba_supplier, event, sha1

IMPL_LIMIT = 2006


@pytest.fixture
def router(front_end: Any) -> Any:
    return front_end.router


def producer_keys(count: int, tag: bytes = b"k") -> list[tuple[int, list[list[bytes]]]]:
    """``count`` SHA-1-Producer keys (scheme 2, one key set)."""
    return [(K.PRODUCER, [[tag + str(n).encode() for n in range(count)]])]


class TestKeysAreBounded:
    """K.MAX_KEYS a holder; past it IMPL_LIMIT (§7.4.17: "exceeds some other internal
    limit"), and nothing changes (review 97: 400,000 keys were taken, and each
    notification then carried them all)."""

    def test_sec_rqst_past_the_bound_is_refused_and_changes_nothing(
            self, client: Make) -> None:
        c = connected(client)
        c.send(sec_rqst(5, add_nfn=producer_keys(K.MAX_KEYS)))
        assert c.expect("SecRply")["xid"] == 5
        c.send(sec_rqst(6, add_nfn=producer_keys(1, b"more"), add_sub=producer_keys(1)))
        nack = c.expect("Nack")
        assert (nack["xid"], nack["error"]) == (6, IMPL_LIMIT)
        c.send(sec_rqst(7, add_sub=producer_keys(1)))        # the refused one added nothing
        assert c.expect("SecRply")["xid"] == 7

    def test_conn_rqst_sub_add_and_sub_mod_past_the_bound(self, client: Make) -> None:
        c = client()
        c.send(conn_rqst(1, nfn=producer_keys(K.MAX_KEYS + 1)))
        assert (c.expect("Nack")["error"]) == IMPL_LIMIT
        c.connect()
        c.send(sub_add(2, "require(x)", k=producer_keys(K.MAX_KEYS + 1)))
        assert c.expect("Nack")["error"] == IMPL_LIMIT
        sid = c.subscribe("require(x)", k=producer_keys(K.MAX_KEYS))
        c.send(sub_mod(3, sid, "require(y)", add=producer_keys(1, b"more")))
        assert c.expect("Nack")["error"] == IMPL_LIMIT
        pub = connected(client)                                # still require(x), unchanged
        pub.send(notify_emit({"x": 1, "y": 2}))
        assert c.expect("NotifyDeliver")["insecure"] == [sid]

    def test_a_notification_with_too_many_keys_is_ignored(self, client: Make,
                                                          router: Any) -> None:
        sub = connected(client)
        sub.subscribe("require(x)")
        pub = connected(client)
        pub.send(notify_emit({"x": 1}, k=producer_keys(K.MAX_KEYS + 1)))
        pub.send(notify_emit({"x": 2}, k=producer_keys(K.MAX_KEYS)))
        assert sub.expect("NotifyDeliver")["attributes"] == {"x": 2}
        assert router.stats.notifications_ignored == 1

    def test_connection_keys_are_not_copied_into_each_subscription(self, client: Make,
                                                                   router: Any) -> None:
        """A subscription's keys are its own and its connection's; the connection's are
        matched where they are, not copied into every subscription (review 97: 200
        subscriptions made 640 KB of connection keys cost 423 MiB)."""
        c = connected(client, sub=[(K.PRODUCER, [[sha1(b"conn")]])])
        own = c.subscribe("require(x)", insecure=False, k=[(K.PRODUCER, [[sha1(b"own")]])])
        bare = c.subscribe("require(x)", insecure=False)
        [session] = [s for s in router.sessions if s.subscriptions]
        assert all(len(s.public.producer) <= 1 for s in session.subscriptions.values())
        for private, matched in ((b"conn", [own, bare]), (b"own", [own])):
            connected(client).send(notify_emit({"x": 1}, insecure=False,
                                               k=[(K.PRODUCER, [[private]])]))
            assert sorted(c.expect("NotifyDeliver")["secure"]) == sorted(matched)

    def test_dual_keys_match_across_the_connections_and_the_subscriptions(self) -> None:
        """SHA-1-Dual needs both sets to match; one may be the connection's and the other
        the subscription's, as with the union the seed describes."""
        notification = K.public({(K.DUAL, 0, b"p"), (K.DUAL, 1, sha1(b"c"))},
                                producer_side=True)
        connection = K.public({(K.DUAL, 0, sha1(b"p"))}, producer_side=False)
        subscription = K.public({(K.DUAL, 1, b"c")}, producer_side=False)
        assert K.matches(notification, connection.union(subscription))
        assert K.matches_either(notification, connection, subscription)
        assert not K.matches_either(notification, connection, K.NO_KEYS)


class TestQuenchesAreBounded:
    def test_quench_names_past_the_bound_are_refused(self, client: Make,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(Q, "MAX_QUENCH_NAMES", 5)
        c = connected(client)
        c.send(qnch_add(1, ["a", "b", "c"]))
        quench_id = c.expect("QnchRply")["id"]
        c.send(qnch_add(2, ["d", "e", "f"]))
        assert c.expect("Nack")["error"] == IMPL_LIMIT
        c.send(qnch_mod(3, quench_id, add=["d", "e", "f"]))
        assert c.expect("Nack")["error"] == IMPL_LIMIT
        c.send(qnch_mod(4, quench_id, add=["d", "e"]))
        assert c.expect("QnchRply")["xid"] == 4

    def test_quenches_past_the_bound_are_refused(self, client: Make,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(Q, "MAX_QUENCHES", 2)
        c = connected(client)
        for xid in (1, 2):
            c.send(qnch_add(xid, [f"n{xid}"]))
            assert c.expect("QnchRply")["xid"] == xid
        c.send(qnch_add(3, ["n3"]))
        assert c.expect("Nack")["error"] == IMPL_LIMIT


class TestSubscriptionText:
    def test_expression_bytes_are_bounded_per_connection(
            self, client: Make, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(S, "MAX_EXPRESSION_BYTES", 40)
        c = connected(client)
        first = c.subscribe("require(aaaaaaaaaa)")              # 19 bytes
        c.subscribe("require(bbbbbbbbbb)")
        c.send(sub_add(7, "require(c)"))
        assert c.expect("Nack")["error"] == IMPL_LIMIT
        c.send(sub_mod(8, first, "require(a)"))                 # a shorter one replaces it
        assert c.expect("SubRply")["xid"] == 8
        c.send(sub_add(9, "require(c)"))
        assert c.expect("SubRply")["xid"] == 9


class TestTheSealCoversAllAFilterReads:
    """Review 97: a sealed keys property copied onto an event that also holds what the
    Elvin mapping leaves out (a struct, a NUL string, a second property of a name) still
    verified, and ELVIN4 filters read the added property: a forged secure match."""

    SECRET = b"s" * 32

    @pytest.mark.parametrize("added", [
        N.Property("admin", CORBA.Any(N._tc_EventType, N.EventType("a", "b"))),
        N.Property("cmd", CORBA.Any(CORBA.TC_string, "rm -rf\0")),
        N.Property("x", CORBA.Any(CORBA.TC_long, 2)),
    ], ids=["struct", "nul", "second-x"])
    def test_a_copied_seal_on_more_content_is_no_key(self, added: Any) -> None:
        public = K.public({(K.PRODUCER, 0, b"private")}, producer_side=True)
        made = to_event((("x", 1),), public, self.SECRET)
        assert event_keys(made, self.SECRET) == public
        made.filterable_data.append(added)
        assert event_keys(made, self.SECRET) == K.NO_KEYS

    def test_a_copied_seal_with_another_body_or_header_property_is_no_key(self) -> None:
        public = K.public({(K.PRODUCER, 0, b"private")}, producer_side=True)
        for change in ("body", "header"):
            made = to_event((("x", 1),), public, self.SECRET)
            if change == "body":
                made.remainder_of_body = CORBA.Any(CORBA.TC_long, 7)
            else:
                made.header.variable_header.append(
                    N.Property("admin", CORBA.Any(CORBA.TC_long, 1)))
            assert event_keys(made, self.SECRET) == K.NO_KEYS


class TestReview99:
    def test_a_repeated_attribute_keeps_the_keys(self, client: Make) -> None:
        """A notification may repeat a name (the seed does not forbid it): the first is
        the attribute, and the keys still verify (review 99: a repeat left the event with
        a property the seal did not cover, so a keys-only subscription heard nothing)."""
        made = to_event((("x", 1), ("x", 2), ("type_name", "a"), ("type_name", "b")),
                        K.public({(K.PRODUCER, 0, b"p")}, producer_side=True), b"s" * 32)
        assert dict(from_event(made)) == {"x": 1, "type_name": "a"}
        assert event_keys(made, b"s" * 32) != K.NO_KEYS
        sub = connected(client)
        sid = sub.subscribe("require(x)", insecure=False, k=[(K.PRODUCER, [[sha1(b"p")]])])
        connected(client).send(frame("NotifyEmit", repeated_x()))
        got = sub.expect("NotifyDeliver")
        assert (got["attributes"], got["secure"]) == ({"x": 1}, [sid])

    def test_a_string_that_is_not_text_costs_that_event_only(self, client: Make,
                                                             channel: Any) -> None:
        """A CORBA event with a keys property and a string UTF-8 cannot encode (a lone
        surrogate, possible in process) gets no keys; the Elvin client is not
        disconnected and hears the next event (review 99: the seal's encoding raised,
        the channel retried and then disconnected the client)."""
        sub = connected(client)
        sub.subscribe("require(y)")
        supplier = corba_supplier(channel)
        keys = N.Property("elvin:keys", CORBA.Any(CORBA._tc_OctetSeq, b"k" * 40))
        bad = event({"y": 1, "s": "\udc80"}, (keys,))
        supplier.push_structured_event(bad)
        supplier.push_structured_event(event({"y": 2}))
        got = [sub.expect("NotifyDeliver")["attributes"] for _ in range(2)]
        assert got == [{"y": 1}, {"y": 2}]
        assert event_keys(bad, b"s" * 32) == K.NO_KEYS


def repeated_x() -> bytes:
    """A NotifyEmit body of x = 1, x = 2, deliver_insecure set, one SHA-1-Producer key."""
    from tests.protocols.elvin.client import keys, nvs, u32

    return nvs([("x", 1), ("x", 2)]) + u32(1) + keys([(K.PRODUCER, [[b"p"]])])


class TestHeaderNames:
    """§6.1.6: "require(attribute) Returns true if the notification contains an attribute
    whose name exactly matches". A structured event's empty header field is no attribute
    (the Elvin mapping leaves it out), so a property may carry the name (review 97)."""

    @pytest.mark.parametrize(("attributes", "expression", "expected"), [
        ({"x": 1}, "require(type_name)", False),
        ({"x": 1}, "!require(domain_name)", True),
        ({"x": 1}, "size(event_name) == 0", False),
        ({"domain_name": 5, "y": 1}, "domain_name == 5", True),
        ({"domain_name": 5, "y": 1}, "int32(domain_name)", True),
        ({"domain_name": "", "y": 1}, "domain_name == ''", True),
        ({"domain_name": "ops", "y": 1}, "domain_name == 'ops'", True),
    ])
    def test_what_a_filter_sees_of_a_notification(self, attributes: dict[str, Any],
                                                  expression: str,
                                                  expected: bool | None) -> None:
        made = to_event(tuple(attributes.items()))
        assert compile_program(expression).structured(made) is expected
        assert dict(from_event(made)) == attributes          # and it goes back whole

    def test_a_header_field_that_is_there_wins_over_a_property(self) -> None:
        made = event({"type_name": "property"})
        made.header.fixed_header.event_type.type_name = "header"
        assert compile_program("type_name == 'header'").structured(made) is True

    def test_over_the_wire(self, client: Make) -> None:
        sub = connected(client)
        sid = sub.subscribe("domain_name == 5")
        connected(client).send(notify_emit({"domain_name": 5, "y": 1}))
        got = sub.expect("NotifyDeliver")
        assert (got["attributes"], got["insecure"]) == ({"domain_name": 5, "y": 1}, [sid])


class TestSecureRouteOffTheLoop:
    def test_a_slow_secure_route_does_not_stall_other_clients(
            self, client: Make, router: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        """A NotifyEmit without deliver_insecure is matched against every session's
        subscriptions off the loop (review 97: on the loop, 50 of them against 20,000
        subscriptions held every client for 2 s)."""
        release, entered = threading.Event(), threading.Event()
        real = router.deliver_secure

        def slow(*args: Any) -> None:
            entered.set()
            assert release.wait(10)
            real(*args)

        monkeypatch.setattr(router, "deliver_secure", slow)
        sub = connected(client)
        sid = sub.subscribe("require(x)", insecure=False, k=[(K.PRODUCER, [[sha1(b"p")]])])
        connected(client).send(notify_emit({"x": 1}, insecure=False,
                                           k=[(K.PRODUCER, [[b"p"]])]))
        assert entered.wait(10)
        other = connected(client)
        other.send(frame("TestConn"))
        try:
            other.expect("ConfConn")        # answered while the secure route still runs
        finally:
            release.set()
        assert sub.expect("NotifyDeliver")["secure"] == [sid]


class _Gate:
    """A subscription's program whose first evaluation waits to be released."""

    def __init__(self, program: Any) -> None:
        self.program = program
        self.entered = threading.Event()
        self.release = threading.Event()

    def structured(self, ev: Any) -> Any:
        self.entered.set()
        assert self.release.wait(10)
        return self.program.structured(ev)


class TestReview100:
    """A delivery matched on the subscriptions before a SubDelRqst, SubModRqst or SecRqst
    was answered is not sent after the answer (review 100): the client never hears of
    what it was told is gone. Each holds a delivery inside a subscription's evaluation
    while the change is answered, then lets it go, and then asks one more request: its
    reply must be the next packet."""

    @staticmethod
    def _gate(front_end: Any, sid: int) -> _Gate:
        [session] = [s for s in front_end.router.sessions if sid in s.subscriptions]
        sub = session.subscriptions[sid]
        gate = sub.program = _Gate(sub.program)   # the object session._subs holds
        return gate

    @staticmethod
    def _next_is_the_reply(sub: Any) -> None:
        sub.send(sub_add(sub.next_xid(), "require(zzz)"))
        assert sub.recv()["type"] == "SubRply"

    @pytest.mark.parametrize("change", ["SubDelRqst", "SubModRqst accept_insecure=0"])
    def test_through_the_channel(self, client: Make, channel: Any, front_end: Any,
                                 change: str) -> None:
        sub = connected(client)
        sid = sub.subscribe("require(y)", insecure=True)
        gate = self._gate(front_end, sid)
        corba_supplier(channel).push_structured_event(event({"y": 1}))
        assert gate.entered.wait(10)                  # matched on the old subscriptions
        xid = sub.next_xid()
        sub.send(sub_del(xid, sid) if change == "SubDelRqst"
                 else sub_mod(xid, sid, "", insecure=False))
        assert sub.expect("SubRply")["xid"] == xid
        gate.release.set()
        assert channel._service.dispatcher.wait_idle()
        self._next_is_the_reply(sub)

    def test_a_removed_key_gives_no_secure_match(self, client: Make,
                                                 front_end: Any) -> None:
        sub = connected(client)
        sid = sub.subscribe("require(y)", insecure=False, k=[(K.PRODUCER, [[sha1(b"p")]])])
        gate = self._gate(front_end, sid)
        producer = connected(client)
        producer.send(notify_emit({"y": 1}, insecure=False, k=[(K.PRODUCER, [[b"p"]])]))
        assert gate.entered.wait(10)
        xid = sub.next_xid()
        sub.send(sub_mod(xid, sid, "", insecure=False, delete=[(K.PRODUCER, [[sha1(b"p")]])]))
        assert sub.expect("SubRply")["xid"] == xid
        gate.release.set()
        producer.send(frame("TestConn"))              # answered once its secure route ended
        producer.expect("ConfConn")
        self._next_is_the_reply(sub)

    def test_an_event_a_session_cannot_take_is_dropped_and_counted(
            self, client: Make, channel: Any, front_end: Any,
            monkeypatch: pytest.MonkeyPatch) -> None:
        """A delivery that raises costs that event, counted, not the client (the channel
        would retry it and then disconnect the client)."""
        sub = connected(client)
        sub.subscribe("require(y)")
        [session] = [s for s in front_end.router.sessions if s.subscriptions]
        real = session._delivery

        def broken(event: Any, *args: Any) -> Any:
            if from_event(event) == (("y", 1),):
                raise RuntimeError("a bug")
            return real(event, *args)

        monkeypatch.setattr(session, "_delivery", broken)
        supplier = corba_supplier(channel)
        supplier.push_structured_event(event({"y": 1}))
        supplier.push_structured_event(event({"y": 2}))
        assert sub.expect("NotifyDeliver")["attributes"] == {"y": 2}
        assert front_end.router.stats.delivery_errors == 1
