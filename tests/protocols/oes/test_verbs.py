"""Each verb over a socket, on the tree of the front end's channel.

Source: /work/shared/seeds/object-eventing-service.txt, "Processing Logic": the
LIST, GET, POST, REMOVE, LEASECONTRACT, CANCELCONTRACT, SUBSCRIBE, UNSUBSCRIBE
and NOTIFY verbs and their status codes; the CONTRACT and SUBSCRIPTION tables.
Requests are written by tests/protocols/oes/client.py from the seed's grammar.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from cosnotify.oes import Tree
from cosnotify.protocols.oes import OESFrontEnd
from tests.protocols.oes.client import Client, Contact, content_of, node_body, number_of

FIGURE_1 = [r"\Asia\India\Bombay", r"\Asia\India\Calcutta", r"\Asia\India\New Delhi",
            r"\Europe\France\Nice", r"\Europe\France\Paris", r"\Europe\Ireland\Cork",
            r"\Europe\Ireland\Dublin"]


@pytest.fixture
def world(tree: Tree) -> Tree:
    """Figure 1's tree, made in process."""
    for path in FIGURE_1:
        tree.create(path, parents=True)
    return tree


def lease(client: Client, contact: Contact, *headers: tuple[str, str]) -> str:
    reply = client.call("LEASECONTRACT", contact.info, headers)
    assert reply.status == 200, reply
    return reply.xml().attrib["contractid"]


class TestList:
    """LIST: "an enumeration of the names of all immediate children of the node"."""

    def test_children(self, world: Tree, client: Client) -> None:
        """A <node> for the node, a child <node nodename=...> per child; Content-Type and
        Content-Length headers."""
        reply = client.call("LIST", r"\Asia\India")
        assert (reply.status, reply.reason) == (200, "OK")
        assert reply.headers["content-type"].startswith("text/xml")
        root = reply.xml()
        assert (root.tag, root.get("nodename"), root.get("nodepath")) == (
            "node", "India", r"\Asia\India")
        assert [c.get("nodename") for c in root] == ["Bombay", "Calcutta", "New Delhi"]

    def test_no_children_is_200(self, world: Tree, client: Client) -> None:
        """"Even if there are no child nodes enumerated, status code 200 is returned"."""
        reply = client.call("LIST", r"\Asia\India\Bombay")
        assert reply.status == 200 and len(reply.xml()) == 0

    def test_the_root(self, world: Tree, client: Client) -> None:
        """The root's pathname is "\\"; a request line without a URI names it too."""
        assert [c.get("nodename") for c in client.call("LIST", "\\").xml()] == [
            "Asia", "Europe"]
        assert [c.get("nodename") for c in client.call("LIST", None).xml()] == [
            "Asia", "Europe"]

    def test_missing_node(self, world: Tree, client: Client) -> None:
        """No matching node: 404 with no header lines (the reply grammar's Status-Code)."""
        reply = client.call("LIST", r"\Africa")
        assert reply.status == 404 and reply.reason == "Not found"

    def test_missing_node_402(self, world: Tree, serve: Callable[..., OESFrontEnd]) -> None:
        """``read_not_found=402``: the LIST and GET verbs' own "status code 402"."""
        other = Client(serve(read_not_found=402).address)
        try:
            assert other.call("LIST", r"\Africa").status == 402
            assert other.call("GET", r"\Africa").status == 402
            assert other.call("REMOVE", r"\Africa").status == 404
        finally:
            other.close()


class TestGet:
    """GET: "the properties and content of OES tree node"."""

    def test_node_and_content(self, world: Tree, client: Client) -> None:
        """Every attribute of the pseudo-code, and <content> of base64."""
        world.post(r"\Asia\India", b"\x00India\xff", upl=1, barricade=True)
        root = client.call("GET", r"\Asia\India").xml()
        assert root.attrib == {"nodename": "India", "nodepath": r"\Asia\India", "upl": "1",
                               "guaranteed": "0", "barricade": "1"}
        assert content_of(root.find("content")) == b"\x00India\xff"

    def test_empty_content(self, world: Tree, client: Client) -> None:
        """"will have a <content> element as a child -- even if the content is empty"."""
        root = client.call("GET", r"\Asia").xml()
        assert root.find("content") is not None and content_of(root.find("content")) == b""

    def test_a_name_outside_ascii(self, tree: Tree, client: Client) -> None:
        """Names are Unicode ("UCS-2"), carried as UTF-7 in the line and in the XML."""
        tree.create("\\Europe\\K\u00f8benhavn \U0001f3f0", b"x", parents=True)
        reply = client.call("GET", "\\Europe\\K\u00f8benhavn \U0001f3f0")
        assert reply.xml().get("nodename") == "K\u00f8benhavn \U0001f3f0"


class TestPost:
    """POST: creation, update, and "touching" a node."""

    def test_creates_node_and_ancestors(self, tree: Tree, client: Client) -> None:
        """"If any of the node's ancestors do not exist, they are also created ... Status
        code 200 is returned; there are no message headers and no content"."""
        reply = client.call("POST", r"\Asia\India\Calcutta", body=node_body(b"city", upl="1"))
        assert (reply.status, reply.headers, reply.body) == (200, {}, None)
        node = tree.get(r"\Asia\India\Calcutta")
        assert (node.content, node.upl) == (b"city", 1)
        assert tree.get(r"\Asia\India").content is None and tree.get(r"\Asia\India").upl == -1

    def test_updates_only_what_is_given(self, world: Tree, client: Client) -> None:
        """"Only those attributes explicitly present in the request XML are updated"."""
        world.post(r"\Asia\India", b"old", upl=2)
        assert client.call("POST", r"\Asia\India", body=node_body(barricade="1")).status == 200
        node = world.get(r"\Asia\India")
        assert (node.content, node.upl, node.barricade) == (b"old", 2, True)
        assert client.call("POST", r"\Asia\India", body=node_body(b"new")).status == 200
        assert world.get(r"\Asia\India").content == b"new"

    def test_pool(self, world: Tree, client: Client) -> None:
        """subscriptionPool names the pool node; an empty one removes it."""
        world.create(r"\Countries")
        client.call("POST", r"\Europe\France", body=node_body(subscriptionPool=r"\Countries"))
        assert world.get(r"\Europe\France").subscription_pool == r"\Countries"
        client.call("POST", r"\Europe\France", body=node_body(subscriptionPool=""))
        assert world.get(r"\Europe\France").subscription_pool is None

    @pytest.mark.parametrize(("uri", "body"), [
        (r"\Asia\India", None),                                   # "must be a XML document"
        (r"\Asia\India", "<node upl='-2'/>"),                     # Upl >= -1
        (r"\Asia\India", "<node subscriptionPool='\\Nowhere'/>"), # not a node
        (r"Asia", "<node/>"),                                     # not a pathname
        (r"\Asia\\India", "<node/>"),                             # an empty nodename
        ("\\" + "x" * 65, "<node/>"),                             # Char[64]
        (r"\Asia", "<node><content>" + "A" * 10244 + "</content></node>"),  # Char[10240]
    ])
    def test_refused_with_400(self, world: Tree, client: Client, uri: str,
                              body: str | None) -> None:
        """A request the tree refuses is 400 and changes nothing."""
        before = world.get(r"\Asia\India")
        reply = client.call("POST", uri, body=body)
        assert reply.status == 400 and reply.reason == "Bad request" and reply.body is None
        assert reply.headers.get("error")  # the fixture's front end explains
        assert world.get(r"\Asia\India") == before and len(world) == 1 + 2 + 3 + 3 + 2 + 2


class TestRemove:
    """REMOVE: "removing a particular node removes that node, its associated content,
    plus the descendant nodes"."""

    def test_subtree(self, world: Tree, client: Client) -> None:
        """200, no headers; the sub-tree is gone."""
        reply = client.call("REMOVE", r"\Asia\India")
        assert (reply.status, reply.headers) == (200, {})
        assert not world.exists(r"\Asia\India\Bombay") and world.list(r"\Asia") == []

    def test_missing_is_404(self, world: Tree, client: Client) -> None:
        """"If the node specified by the argument URI does not exist, status code 404"."""
        assert client.call("REMOVE", r"\Africa").status == 404

    def test_not_the_root(self, world: Tree, client: Client) -> None:
        """"It is not possible to remove the root of the entire OES tree": 400."""
        assert client.call("REMOVE", "\\").status == 400 and len(world) > 1


class TestContracts:
    """LEASECONTRACT and CANCELCONTRACT."""

    def test_lease(self, tree: Tree, client: Client, contact: Contact) -> None:
        """"The reply ... <contract> element. All required attributes will be set for this
        element, but it will contain no child <subscription> elements"; the lease is the
        front end's (600 s by default)."""
        reply = client.call("LEASECONTRACT", contact.info)
        root = reply.xml()
        assert root.tag == "contract" and len(root) == 0
        assert root.get("contactinfo") == contact.info and root.get("expiry", "").endswith("Z")
        number = number_of(root.attrib["contractid"])
        contract = tree.get_contract(number)
        assert not contract.keep_alive
        assert contract.expiry == pytest.approx(tree.channel._service.clock.now() + 600, abs=5)

    def test_keep_alive(self, tree: Tree, client: Client, contact: Contact) -> None:
        """"The 'Quality-of-service' header, if present, may take only the value
        'keep-alive'"; another value is 400."""
        cid = lease(client, contact, ("Quality-of-service", "keep-alive"))
        assert tree.get_contract(number_of(cid)).keep_alive
        assert client.call("LEASECONTRACT", contact.info,
                           [("Quality-of-service", "forever")]).status == 400

    def test_renew(self, tree: Tree, client: Client, contact: Contact) -> None:
        """"If this header [Contract-id] is specified, then the given lease is renewed and its
        expiration time is extended further into the future"; an unknown one is 404."""
        cid = lease(client, contact)
        number = number_of(cid)
        first = tree.get_contract(number).expiry
        reply = client.call("LEASECONTRACT", contact.info, [("Contract-id", cid)])
        assert reply.status == 200 and reply.xml().get("contractid") == cid
        assert tree.get_contract(number).expiry >= first
        assert tree.contract_ids() == [number]
        assert client.call("LEASECONTRACT", contact.info,
                           [("Contract-id", "999")]).status == 404

    @pytest.mark.parametrize("uri", ["udp:127.0.0.1:9", "tcp:localhost:9", "tcp:127.0.0.1",
                                     "tcp:127.0.0.1:0", "tcp:127.0.0.1:65536", None])
    def test_bad_contact(self, client: Client, uri: str | None) -> None:
        """The URI is "a string of the form 'tcp:<ip-address>:<port>'" (numeric): 400."""
        assert client.call("LEASECONTRACT", uri).status == 400

    def test_contact_on_another_host(self, client: Client,
                                     serve: Callable[..., OESFrontEnd]) -> None:
        """By default a client names only its own address as contact (the server would
        otherwise connect anywhere it is told); ``contacts="any"`` lifts that."""
        assert client.call("LEASECONTRACT", "tcp:192.0.2.1:9").status == 400
        other = Client(serve(contacts="any").address)
        try:
            assert other.call("LEASECONTRACT", "tcp:192.0.2.1:9").status == 200
        finally:
            other.close()

    def test_renewal_keeps_the_quality_of_service(self, tree: Tree, client: Client,
                                                  contact: Contact) -> None:
        """A renewal cannot turn a contract keep-alive (the CONTRACT table's QoS is the
        lease's): 400, the contract unchanged."""
        cid = lease(client, contact)
        assert client.call("LEASECONTRACT", contact.info, [
            ("Contract-id", cid), ("Quality-of-service", "keep-alive")]).status == 400
        assert not tree.get_contract(number_of(cid)).keep_alive

    def test_cancel(self, tree: Tree, client: Client, contact: Contact) -> None:
        """CANCELCONTRACT: 200 and the contract is gone; again, or never leased: 404."""
        cid = lease(client, contact)
        reply = client.call("CANCELCONTRACT", cid)
        assert (reply.status, reply.headers) == (200, {}) and tree.contract_ids() == []
        assert client.call("CANCELCONTRACT", cid).status == 404
        assert client.call("CANCELCONTRACT", "nonsense").status == 404


class TestSubscribe:
    """SUBSCRIBE and UNSUBSCRIBE."""

    def test_subscribe_and_unsubscribe(self, world: Tree, client: Client,
                                       contact: Contact) -> None:
        """The subscription is placed with the contract; UNSUBSCRIBE revokes it; a second
        UNSUBSCRIBE finds no row: 404."""
        cid = lease(client, contact)
        number = number_of(cid)
        reply = client.call("SUBSCRIBE", r"\Asia", [("Contract-id", cid), ("Depth", "1")])
        assert (reply.status, reply.headers) == (200, {})
        [sub] = world.get_contract(number).subscriptions
        assert (sub.nodepath, sub.depth, sub.guaranteed) == (r"\Asia", 1, False)
        assert client.call("UNSUBSCRIBE", r"\Asia", [("Contract-id", cid)]).status == 200
        assert world.get_contract(number).subscriptions == ()
        assert client.call("UNSUBSCRIBE", r"\Asia", [("Contract-id", cid)]).status == 404

    def test_depth_defaults_to_infinite(self, world: Tree, client: Client,
                                        contact: Contact) -> None:
        """The schema: subscription depth "default='-1'" (infinite)."""
        cid = lease(client, contact)
        client.call("SUBSCRIBE", r"\Europe", [("Contract-id", cid)])
        [sub] = world.get_contract(number_of(cid)).subscriptions
        assert sub.depth == -1

    def test_second_subscription_modifies(self, world: Tree, client: Client,
                                          contact: Contact) -> None:
        """"Adding a second subscription for the same node under the same contract results
        in a modification ...; it does not generate an error"."""
        cid = lease(client, contact)
        for depth in ("0", "2"):
            assert client.call("SUBSCRIBE", r"\Asia", [("Contract-id", cid),
                                                       ("Depth", depth)]).status == 200
        [sub] = world.get_contract(number_of(cid)).subscriptions
        assert sub.depth == 2

    @pytest.mark.parametrize(("uri", "headers", "status"), [
        (r"\Africa", [("Contract-id", "{cid}")], 404),          # no node
        (r"\Asia", [("Contract-id", "999")], 404),              # no contract
        (r"\Asia", [], 400),                                    # "must include" Contract-id
        (r"\Asia", [("Contract-id", "{cid}"), ("Depth", "-2")], 400),
        (r"\Asia", [("Contract-id", "{cid}"), ("Depth", "x")], 400),
        (r"\Asia", [("Contract-id", "{cid}"), ("Cache-last-notification", "x")], 400),
        # 'cache' needs a persistent channel in a factory with a store: this one is not
        (r"\Asia", [("Contract-id", "{cid}"), ("Cache-last-notification", "cache")], 400),
    ])
    def test_refused(self, world: Tree, client: Client, contact: Contact, uri: str,
                     headers: list[tuple[str, str]], status: int) -> None:
        """"the server validates that the node ... exists and that the contract ... exists
        ... Either of these conditions is not met, status code 404"; a malformed request
        is 400."""
        cid = lease(client, contact)
        filled = [(name, value.format(cid=cid)) for name, value in headers]
        reply = client.call("SUBSCRIBE", uri, filled)
        assert (reply.status, reply.body) == (status, None)
        assert world.get_contract(number_of(cid)).subscriptions == ()


class TestOther:
    """What is not a verb a client sends, and what the seed has no status for."""

    def test_a_destroyed_channel_is_503(self, tree: Tree, client: Client) -> None:
        """A valid request the service cannot carry out (the channel is gone): 503, which
        the seed does not have (HTTP's)."""
        tree.channel.destroy()
        reply = client.call("GET", "\\")
        assert (reply.status, reply.reason) == (503, "Service unavailable")

    def test_notify_from_a_client(self, client: Client) -> None:
        """"The NOTIFY verb is sent from the OES server to clients": a client's is 400."""
        assert client.call("NOTIFY", r"\Asia", body="<notify/>").status == 400

    @pytest.mark.parametrize("verb", ["PUT", "list", "AUTHENTICATE"])
    def test_unknown_verbs(self, client: Client, verb: str) -> None:
        """A verb the grammar does not list is 400 (AUTHENTICATE is a future one)."""
        assert client.call(verb, "\\").status == 400
        assert client.call("LIST", "\\").status == 200  # and the connection goes on

    def test_errors_are_bare_unless_explained(self, serve: Callable[..., Any]) -> None:
        """"For this status code, there are no header lines, and no content lines": by
        default; ``explain=True`` adds an Error header with the reason."""
        bare = Client(serve().address)
        try:
            reply = bare.call("GET", r"\Africa")
            assert (reply.status, reply.headers, reply.body) == (404, {}, None)
        finally:
            bare.close()
