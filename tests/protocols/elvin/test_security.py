"""Elvin 4 security: keys, deliver_insecure and accept_insecure (seed §7.4.8, §7.4.15, §7.4.17).

The key schemes are those keys.py documents (the seed's section on them was
never written): 1 SHA-1-Dual, 2 SHA-1-Producer, 3 SHA-1-Consumer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import pytest

import CosNotifyChannelAdmin as CA

from tests.channel.conftest import StructuredPushConsumer
from tests.protocols.elvin.client import Client, conn_rqst, notify_emit, sec_rqst, sub_add, sub_mod

Make = Callable[[], Client]


def sha1(key: bytes) -> bytes:
    return hashlib.sha1(key).digest()


PRIVATE = b"producer secret"
PRODUCER = [(2, [[PRIVATE]])]                 # what the producer holds
PRODUCER_PUBLIC = [(2, [[sha1(PRIVATE)]])]    # what its consumers hold
MARK = {"mark": 1}


def connected(make: Make, **kw: Any) -> Client:
    c = make()
    c.connect(**kw)
    return c


def next_attributes(c: Client) -> dict[str, Any]:
    return c.expect("NotifyDeliver")["attributes"]


def corba_consumer(channel: Any) -> StructuredPushConsumer:
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
        CA.STRUCTURED_EVENT)
    consumer = StructuredPushConsumer()
    proxy.connect_structured_push_consumer(consumer)
    return consumer


class TestProducerScheme:
    """SHA-1-Producer: the notification's private key hashes to the consumer's key."""

    def test_secure_notification_reaches_only_key_holders(self, client: Make,
                                                          channel: Any) -> None:
        """deliver_insecure unset: "requiring the consumer to have a matching key"
        (§7.4.15). A keyless subscriber and a CORBA consumer do not get it."""
        corba = corba_consumer(channel)
        holder = connected(client)
        sid = holder.subscribe("require(x)", insecure=False, k=PRODUCER_PUBLIC)
        keyless = connected(client)
        keyless.subscribe("require(x) || require(mark)")
        pub = connected(client)
        pub.send(notify_emit({"x": 1}, insecure=False, k=PRODUCER))
        got = holder.expect("NotifyDeliver")
        assert (got["secure"], got["insecure"]) == ([sid], [])
        pub.send(notify_emit(MARK))
        assert next_attributes(keyless) == MARK        # the secure one never came first
        assert corba.wait_for(1)
        assert [p.name for p in corba.received[0].filterable_data] == ["mark"]

    def test_insecure_notification_with_keys(self, client: Make, channel: Any) -> None:
        """deliver_insecure set with keys: key holders get a secure match, others that
        accept insecure get an insecure one; a CORBA consumer sees only public keys."""
        corba = corba_consumer(channel)
        holder = connected(client)
        secure_id = holder.subscribe("require(x)", insecure=True, k=PRODUCER_PUBLIC)
        other = connected(client)
        loose_id = other.subscribe("require(x)")
        connected(client).send(notify_emit({"x": 1}, insecure=True, k=PRODUCER))
        assert holder.expect("NotifyDeliver")["secure"] == [secure_id]
        assert other.expect("NotifyDeliver")["insecure"] == [loose_id]
        assert corba.wait_for(1)
        carried = b"".join(bytes(p.value.value()) for p in
                           corba.received[0].header.variable_header)
        assert sha1(PRIVATE) in carried and PRIVATE not in carried

    def test_accept_insecure_unset_wants_keys(self, client: Make) -> None:
        """A subscription with accept_insecure unset ignores keyless notifications."""
        sub = connected(client)
        sub.subscribe("require(x)", insecure=False, k=PRODUCER_PUBLIC)
        sub.subscribe("require(mark)")
        pub = connected(client)
        pub.send(notify_emit({"x": 1}) + notify_emit(MARK))
        assert next_attributes(sub) == MARK

    def test_a_wrong_key_does_not_match(self, client: Make) -> None:
        """A private key whose SHA-1 is not the subscription's key gives no match."""
        sub = connected(client)
        sub.subscribe("require(x) || require(mark)", insecure=False, k=PRODUCER_PUBLIC)
        pub = connected(client)
        pub.send(notify_emit({"x": 1}, insecure=False, k=[(2, [[b"wrong"]])]))
        pub.send(notify_emit(MARK, insecure=False, k=PRODUCER))
        assert next_attributes(sub) == MARK


class TestOtherSchemes:
    """SHA-1-Consumer and SHA-1-Dual."""

    def test_consumer_scheme(self, client: Make) -> None:
        """The consumer's private key hashes to the notification's key."""
        sub = connected(client)
        sid = sub.subscribe("require(x)", insecure=False, k=[(3, [[b"consumer"]])])
        connected(client).send(notify_emit({"x": 1}, insecure=False,
                                           k=[(3, [[sha1(b"consumer")]])]))
        assert sub.expect("NotifyDeliver")["secure"] == [sid]

    def test_dual_scheme_needs_both_halves(self, client: Make) -> None:
        """Dual: the producer set and the consumer set must both match."""
        sub = connected(client)
        sid = sub.subscribe("require(x) || require(mark)", insecure=False,
                            k=[(1, [[sha1(b"p")], [b"c"]])])
        pub = connected(client)
        pub.send(notify_emit({"x": 1}, insecure=False, k=[(1, [[b"p"], [b"other"]])]))
        pub.send(notify_emit(MARK, insecure=False, k=[(1, [[b"p"], [sha1(b"c")]])]))
        got = sub.expect("NotifyDeliver")
        assert (got["attributes"], got["secure"]) == (MARK, [sid])


class TestSessionKeys:
    """ConnRqst's keys and SecRqst (§7.4.3, §7.4.8, §7.4.9)."""

    def test_connection_keys_apply(self, client: Make) -> None:
        """nfn_keys sign every notification; sub_keys join every subscription's keys."""
        sub = client()
        sub.connect(sub=PRODUCER_PUBLIC)
        sid = sub.subscribe("require(x)", insecure=False)
        pub = client()
        pub.connect(nfn=PRODUCER)
        pub.send(notify_emit({"x": 1}, insecure=False))
        assert sub.expect("NotifyDeliver")["secure"] == [sid]

    def test_sec_rqst_applies_before_the_next_packet(self, client: Make) -> None:
        """§7.4.8: "A notification sent immediately after a SecRqst within the same
        session MUST match a subscription requiring the updated keys"."""
        sub = connected(client)
        sid = sub.subscribe("require(x)", insecure=False, k=PRODUCER_PUBLIC)
        pub = connected(client)
        xid = pub.next_xid()
        pub.send(sec_rqst(xid, add_nfn=PRODUCER) + notify_emit({"x": 1}, insecure=False))
        assert pub.expect("SecRply")["xid"] == xid
        assert sub.expect("NotifyDeliver")["secure"] == [sid]

    def test_sec_rqst_errors(self, client: Make) -> None:
        """Adding a key held is KEY_EXISTS (2002), removing one not held NO_SUCH_KEY
        (2001); an unknown scheme BAD_KEY_SCHEME (1004); a wrong number of key sets
        BAD_KEY_INDEX (1005)."""
        c = client()
        c.connect(nfn=PRODUCER)
        assert c.request(sec_rqst, add_nfn=PRODUCER)["error"] == 2002
        assert c.request(sec_rqst, del_sub=PRODUCER_PUBLIC)["error"] == 2001
        assert c.request(sec_rqst, add_nfn=[(9, [[b"k"]])])["error"] == 1004
        assert c.request(sec_rqst, add_nfn=[(2, [[b"k"], [b"j"]])])["error"] == 1005
        assert c.request(sec_rqst, del_nfn=PRODUCER)["type"] == "SecRply"

    @pytest.mark.parametrize(("scheme", "sets", "index"), [
        (1, 1, 1), (1, 0, 0), (1, 3, 2), (2, 0, 0), (2, 2, 1), (3, 4, 1)])
    def test_bad_key_index_names_the_first_wrong_index(self, client: Make, scheme: int,
                                                       sets: int, index: int) -> None:
        """§7.4.2: BAD_KEY_INDEX (1005) has arguments "scheme_id, id32; index, int32":
        the first key set index missing or extra (review 130: the last one given)."""
        c = client()
        c.connect()
        nack = c.request(sec_rqst, add_nfn=[(scheme, [[b"k"]] * sets)])
        assert (nack["error"], nack["args"]) == (1005, [scheme, index])

    def test_bad_scheme_in_conn_rqst(self, client: Make) -> None:
        """ConnRqst with an unknown scheme is Nacked BAD_KEY_SCHEME with the scheme id."""
        c = client()
        c.send(conn_rqst(4, nfn=[(7, [[b"k"]])]))
        nack = c.expect("Nack")
        assert (nack["xid"], nack["error"], nack["args"]) == (4, 1004, [7])

    def test_sub_mod_adds_keys(self, client: Make) -> None:
        """SubModRqst's add_keys make a subscription match secure notifications
        (§7.4.18), and an empty expression keeps the expression."""
        sub = connected(client)
        sid = sub.subscribe("require(x)", insecure=False)
        assert sub.request(sub_mod, sid, "", False, add=PRODUCER_PUBLIC)["type"] == "SubRply"
        connected(client).send(notify_emit({"x": 1}, insecure=False, k=PRODUCER))
        assert sub.expect("NotifyDeliver")["secure"] == [sid]

    def test_sub_add_with_a_bad_scheme(self, client: Make) -> None:
        """SubAddRqst keys of an unknown scheme: BAD_KEY_SCHEME."""
        assert connected(client).request(sub_add, "require(x)", True,
                                         [(5, [[b"k"]])])["error"] == 1004
