"""NOTIFY: notifications delivered by connecting to the contract's contact.

Source: /work/shared/seeds/object-eventing-service.txt -- "Wire Protocol"
("During notification delivery, the client and server roles are swapped");
the NOTIFY verb; SUBSCRIBE ("only one notification will be delivered for a
given contract"); Figure 2 (depth); "Quality of Service" ("a subscription
contract immediately and implicitly expires upon failure to deliver a
notification", unless keep-alive); "Subscription Contracts" (lease expiry).
Contacts are listeners on 127.0.0.1 (tests/protocols/oes/client.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N

import cosnotify
from cosnotify.channel.clock import ManualClock
from cosnotify.oes import Tree
from cosnotify.protocols import Context
from cosnotify.protocols.listener import Loop
from cosnotify.protocols.oes import OESFrontEnd, start
from cosnotify.store import MemoryStore
from tests.protocols.oes.client import (
    Client,
    Contact,
    content_of,
    eventually,
    node_body,
    number_of,
)


def subscribe(client: Client, contact: Contact, *paths: str, depth: str | None = None,
              keep_alive: bool = False) -> str:
    """A contract to ``contact`` with a subscription on each path; its contractid."""
    headers = [("Quality-of-service", "keep-alive")] if keep_alive else []
    reply = client.call("LEASECONTRACT", contact.info, headers)
    assert reply.status == 200, reply
    cid = reply.xml().attrib["contractid"]
    for path in paths:
        extra = [("Depth", depth)] if depth is not None else []
        assert client.call("SUBSCRIBE", path, [("Contract-id", cid), *extra]).status == 200
    return cid


class TestDelivery:
    """NOTIFY requests, as the seed writes them."""

    def test_a_post_is_notified(self, tree: Tree, client: Client, contact: Contact) -> None:
        """NOTIFY's URI is "the path of the node that generated the subscription
        notification"; <notify contract-id=...> has a <presentValue> for a POST."""
        cid = subscribe(client, contact, "\\")
        client.call("POST", r"\Europe\France\Paris", body=node_body(b"Paris"))
        assert contact.wait_for(3)
        notify = contact.notifications[-1]
        assert (notify.verb, notify.uri) == ("NOTIFY", r"\Europe\France\Paris")
        assert notify.first.endswith(" OES/1.0") and notify.headers["contract-id"] == cid
        root = notify.xml()
        assert (root.tag, root.get("contract-id"), root.get("operation")) == (
            "notify", cid, "create")
        assert content_of(root.find("presentValue")) == b"Paris"
        # "Node creation always results in a notification": the ancestors made, first
        assert contact.seen() == [("create", r"\Europe"), ("create", r"\Europe\France"),
                                  ("create", r"\Europe\France\Paris")]

    def test_a_remove_is_notified_per_node(self, tree: Tree, client: Client,
                                           contact: Contact) -> None:
        """"A notification is always generated for each node in the tree that was removed";
        each NOTIFY has a <lastValue>."""
        tree.create(r"\Asia\India\Bombay", b"city", parents=True)
        subscribe(client, contact, r"\Asia")
        assert client.call("REMOVE", r"\Asia\India").status == 200
        assert contact.wait_for(2)
        assert contact.seen() == [("remove", r"\Asia\India\Bombay"), ("remove", r"\Asia\India")]
        assert content_of(contact.notifications[0].xml().find("lastValue")) == b"city"

    def test_the_connection_is_kept(self, tree: Tree, client: Client, contact: Contact) -> None:
        """"any number of request-reply exchanges may occur" on one connection: the
        contract's NOTIFYs share it."""
        subscribe(client, contact, "\\")
        for index in range(5):
            tree.post(r"\a", str(index).encode())
        assert contact.wait_for(5) and contact.connections == 1

    def test_a_closed_connection_is_opened_again(self, tree: Tree, client: Client,
                                                 contacts: Callable[..., Contact]) -> None:
        """A contact that closes the connection after each reply still gets every NOTIFY
        (the next one connects again)."""
        contact = contacts(close_after=True)
        subscribe(client, contact, "\\")
        for index in range(3):
            tree.post(r"\a", str(index).encode())
            assert contact.wait_for(index + 1)
        assert contact.connections == 3
        assert [content_of(m.xml().find("presentValue")) for m in contact.notifications] == [
            b"0", b"1", b"2"]


class TestSubscriptions:
    """Subtree subscriptions on changes made in process through the Tree API."""

    def test_depth(self, tree: Tree, client: Client, contact: Contact) -> None:
        """Figure 2: "a subscription with depth one on the node named 'India' ... will receive
        notification events for operations that affect that node, plus its immediate
        children"."""
        for path in (r"\Asia\India\Bombay", r"\Europe"):
            tree.create(path, parents=True)
        subscribe(client, contact, r"\Asia\India", depth="1")
        tree.create(r"\Asia\India\Bombay\Colaba")      # depth 2: not seen
        tree.post(r"\Europe", b"e")                    # elsewhere: not seen
        tree.post(r"\Asia\India\Bombay", b"b")
        tree.post(r"\Asia\India", b"i")
        assert contact.wait_for(2)
        tree.post(r"\Asia\India", b"sentinel")
        assert contact.wait_for(3)
        assert contact.seen() == [("post", r"\Asia\India\Bombay"), ("post", r"\Asia\India"),
                                  ("post", r"\Asia\India")]

    def test_one_notification_per_contract(self, tree: Tree, client: Client,
                                           contact: Contact) -> None:
        """"for a given notification-generating operation in the OES tree, only one
        notification will be delivered for a given contract, regardless of how many
        subscriptions placed with that contract may absorb the notification"."""
        tree.create(r"\Asia\India\Bombay", parents=True)
        subscribe(client, contact, "\\", r"\Asia", r"\Asia\India")
        tree.post(r"\Asia\India\Bombay", b"once")
        tree.post(r"\Asia", b"sentinel")
        assert contact.wait_for(2)
        assert contact.seen() == [("post", r"\Asia\India\Bombay"), ("post", r"\Asia")]

    def test_touch(self, tree: Tree, client: Client, contact: Contact) -> None:
        """POST "touching" a node "so as to trigger a notification, without actually
        changing the node's contents or properties"."""
        tree.create(r"\a", b"same")
        subscribe(client, contact, r"\a")
        assert client.call("POST", r"\a", body="<node/>").status == 200
        assert contact.wait_for(1) and contact.seen() == [("touch", r"\a")]
        assert content_of(contact.notifications[0].xml().find("presentValue")) == b"same"

    def test_unsubscribe_and_cancel_stop_notifications(
            self, tree: Tree, client: Client, contacts: Callable[..., Contact]) -> None:
        """UNSUBSCRIBE: "No further notifications will be processed for this subscription";
        CANCELCONTRACT "immediately removes all subscriptions"."""
        first, witness = contacts(), contacts()
        tree.create(r"\a")
        tree.create(r"\b")
        cid = subscribe(client, first, r"\a", r"\b")
        subscribe(client, witness, "\\")
        client.call("UNSUBSCRIBE", r"\a", [("Contract-id", cid)])
        tree.post(r"\a", b"1")
        tree.post(r"\b", b"2")
        assert first.wait_for(1) and witness.wait_for(2)
        assert client.call("CANCELCONTRACT", cid).status == 200
        tree.post(r"\b", b"3")
        assert witness.wait_for(3)
        assert first.seen() == [("post", r"\b")]


class TestFailures:
    """"a subscription contract immediately and implicitly expires upon failure to
    deliver a notification", unless leased keep-alive."""

    def test_a_dead_contact_ends_the_contract(self, tree: Tree, client: Client,
                                              contacts: Callable[..., Contact],
                                              fe: OESFrontEnd) -> None:
        """No one listens at the contact: the contract expires; its id then finds nothing
        (404)."""
        dead = contacts()
        cid = subscribe(client, dead, "\\")
        dead.close()
        tree.create(r"\a")
        assert eventually(lambda: tree.contract_ids() == [])
        assert client.call("SUBSCRIBE", "\\", [("Contract-id", cid)]).status == 404
        assert fe.snapshot()["notify_failed"] >= 1

    def test_a_refusing_contact_ends_the_contract(self, tree: Tree, client: Client,
                                                  contacts: Callable[..., Contact]) -> None:
        """A contact that answers other than 200 did not take the notification."""
        refusing = contacts(status=400)
        subscribe(client, refusing, "\\")
        tree.create(r"\a")
        assert refusing.wait_for(1)
        assert eventually(lambda: tree.contract_ids() == [])

    def test_keep_alive_survives(self, tree: Tree, client: Client,
                                 contacts: Callable[..., Contact]) -> None:
        """keep-alive: "the contract remains intact until its stated expiration time, even if
        a subscription notification could not be delivered"; the notification is dropped
        ("undeliverable notifications are discarded"); a renewal may name a new contact."""
        dead, alive = contacts(), contacts()
        cid = subscribe(client, dead, "\\", keep_alive=True)
        dead.close()
        tree.create(r"\lost")
        assert eventually(lambda: tree.channel._service.dispatcher.wait_idle())
        assert tree.contract_ids() == [number_of(cid)]
        reply = client.call("LEASECONTRACT", alive.info, [("Contract-id", cid)])
        assert reply.status == 200 and reply.xml().get("contactinfo") == alive.info
        tree.create(r"\found")
        assert alive.wait_for(1) and alive.seen() == [("create", r"\found")]

    def test_a_hanging_contact_stalls_no_one(self, serve: Callable[..., OESFrontEnd],
                                             tree: Tree,
                                             contacts: Callable[..., Contact]) -> None:
        """A contact that never answers holds its own contract only: another contract's
        NOTIFYs and the front end's clients go on."""
        front_end = serve(notify_timeout=30.0)
        client = Client(front_end.address)
        try:
            hanging, good = contacts(answer=False), contacts()
            subscribe(client, hanging, "\\")
            subscribe(client, good, "\\")
            for index in range(5):
                assert client.call("POST", rf"\n{index}", body="<node/>").status == 200
            assert good.wait_for(5, timeout=5.0)
            assert hanging.wait_for(1) and len(hanging.notifications) == 1
            assert client.call("LIST", "\\").status == 200
        finally:
            client.close()


@pytest.fixture
def manual() -> Iterator[tuple[ManualClock, OESFrontEnd, Tree]]:
    clock = ManualClock(1_000_000.0)
    factory = cosnotify.EventChannelFactory(clock=clock)
    loop = Loop(workers=2)
    front_end = start(Context(factory, loop), lease=60.0)
    tree = Tree.of(Context(factory, loop).channel(None))
    yield clock, front_end, tree
    front_end.close()
    loop.close()
    factory.close()


class TestLease:
    """"If the lease expires, however, all subscriptions associated with the expired
    contract are immediately cancelled"."""

    def test_the_lease_ends(self, manual: tuple[ManualClock, OESFrontEnd, Tree],
                            contact: Contact) -> None:
        """On the service's clock: the contract's expiry is the front end's lease from now;
        once past, its id is meaningless (404) and its contact hears nothing more."""
        clock, front_end, tree = manual
        client = Client(front_end.address)
        try:
            cid = subscribe(client, contact, "\\")
            assert client.call("LEASECONTRACT", contact.info, [("Contract-id", cid)]).xml() \
                .get("expiry") == "1970-01-12T13:47:40Z"  # 1,000,060 s
            clock.advance(61)
            assert eventually(lambda: tree.contract_ids() == [])
            assert client.call("SUBSCRIBE", "\\", [("Contract-id", cid)]).status == 404
            assert eventually(lambda: front_end.service.contracts() == [])
        finally:
            client.close()


def test_front_end_close_cancels_its_contracts(serve: Callable[..., Any], tree: Tree,
                                               contact: Contact) -> None:
    """Closing the front end cancels the contracts leased through it (no contact could be
    told any more); the tree stays."""
    front_end = serve()
    client = Client(front_end.address)
    subscribe(client, contact, "\\")
    client.close()
    assert len(tree.contract_ids()) == 1
    front_end.close()
    assert tree.contract_ids() == []


@pytest.fixture
def durable() -> Iterator[tuple[OESFrontEnd, Tree]]:
    """A front end on a persistent channel in a factory with a store."""
    factory = cosnotify.EventChannelFactory(store=MemoryStore())
    persistent = [N.Property("ConnectionReliability", CORBA.Any(CORBA.TC_short, N.Persistent))]
    factory.create_named_channel(persistent, [], "durable")
    loop = Loop(workers=2)
    context = Context(factory, loop)
    front_end = start(context, channel="durable")
    yield front_end, Tree.of(context.channel("durable"))
    front_end.close()
    loop.close()
    factory.close()


class TestCache:
    """SUBSCRIBE's 'Cache-last-notification: cache': "latest notification is cached for
    delivery when client unreachable" (SUBSCRIPTION table, QoS)."""

    def test_kept_until_the_contact_is_back(self, durable: tuple[OESFrontEnd, Tree],
                                            contacts: Callable[..., Contact]) -> None:
        """A keep-alive contract's cached subscription: a notification its contact could not
        take is kept and delivered once a renewal names a contact that listens."""
        front_end, tree = durable
        tree.create(r"\a")
        client = Client(front_end.address)
        try:
            dead, back = contacts(), contacts()
            reply = client.call("LEASECONTRACT", dead.info, [("Quality-of-service",
                                                              "keep-alive")])
            cid = reply.xml().attrib["contractid"]
            assert client.call("SUBSCRIBE", r"\a", [("Contract-id", cid),
                                                    ("Cache-last-notification",
                                                     "cache")]).status == 200
            dead.close()
            tree.post(r"\a", b"while away")
            assert eventually(lambda: front_end.snapshot()["notify_failed"] >= 1)
            assert client.call("LEASECONTRACT", back.info,
                               [("Contract-id", cid)]).status == 200
            assert back.wait_for(1)
            assert content_of(back.notifications[0].xml().find("presentValue")) == \
                b"while away"
            assert tree.contract_ids() == [number_of(cid)]
        finally:
            client.close()
