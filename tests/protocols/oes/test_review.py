"""The review's findings on the OES front end, each pinned by a test.

Source: /work/shared/seeds/object-eventing-service.txt -- "Wire Protocol" ("Each
line is delimited by a carriage-return ... /linefeed ... pair"); the NOTIFY verb
("This verb takes, as its argument URI, the path of the node that generated the
subscription notification"); CANCELCONTRACT ("Cancelling a contract immediately
removes all subscriptions associated with the contract"); LEASECONTRACT ("the
given lease is renewed"); "Quality of Service" ("a subscription contract
immediately and implicitly expires upon failure to deliver a notification").
Contacts are listeners on 127.0.0.1 (tests/protocols/oes/client.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA

from cosnotify.oes import Tree
from cosnotify.protocols import Context
from cosnotify.protocols.listener import Limits
from cosnotify.protocols.oes import OESFrontEnd
from tests.protocols.oes.client import Client, Contact, eventually, number_of, request
from tests.protocols.oes.test_bad_input import works
from tests.protocols.oes.test_notify import subscribe


class TestControlCharacters:
    """A nodename may hold a C0 control (made over CORBA or in process); no line can."""

    def test_a_name_with_a_control_character_is_notified(self, tree: Tree, client: Client,
                                                         contact: Contact,
                                                         fe: OESFrontEnd) -> None:
        """NOTIFY's URI is "the path of the node that generated the subscription
        notification": the control shows as U+FFFD (as in LIST and GET), and the contract
        lives on -- it did not fail to deliver."""
        cid = subscribe(client, contact, "\\")
        tree.create("\\a\nb")
        tree.create("\\ok")
        assert contact.wait_for(2)
        assert contact.seen() == [("create", "\\a\ufffdb"), ("create", "\\ok")]
        assert tree.contract_ids() == [number_of(cid)]
        assert fe.snapshot()["notify_failed"] == 0


class TestSuppliedEvents:
    """(``OES``, operation) events pushed by a structured supplier reach wire contracts
    (docs/protocols.md, "OES"); a malformed one is not the contact's failure."""

    def test_odd_fields_do_not_end_the_contract(self, tree: Tree, client: Client,
                                                contact: Contact) -> None:
        """A ``presentValue`` that is not ``sequence<octet>`` is no content: the NOTIFY
        goes without it, and the contract lives on ("expires upon failure to deliver a
        notification" only)."""
        cid = subscribe(client, contact, "\\")
        proxy, _ = tree.channel._get_default_supplier_admin() \
            .obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_supplier(None)
        proxy.push_structured_event(N.StructuredEvent(
            N.EventHeader(N.FixedEventHeader(N.EventType("OES", "post"), ""), []),
            [N.Property("node", CORBA.Any(CORBA.TC_wstring, r"\x")),
             N.Property("presentValue", CORBA.Any(CORBA.TC_long, 5))],
            CORBA.Any(CORBA.TC_null, None)))
        tree.create(r"\ok")
        assert contact.wait_for(2)
        assert contact.seen() == [("post", r"\x"), ("create", r"\ok")]
        assert contact.notifications[0].xml().find("presentValue").text is None
        assert tree.contract_ids() == [number_of(cid)]


class TestEndedInFlight:
    """A contract that ends or moves while one of its NOTIFYs waits for the contact."""

    def test_cancel_sends_nothing_more(self, serve: Callable[..., OESFrontEnd], tree: Tree,
                                       contacts: Callable[..., Contact]) -> None:
        """"Cancelling a contract immediately removes all subscriptions": the NOTIFY in
        flight is given up, not sent again on a new connection that nothing closes."""
        front_end = serve(notify_timeout=30.0)
        client = Client(front_end.address)
        try:
            stalls = contacts(answers=1)
            cid = subscribe(client, stalls, "\\")
            tree.create(r"\x")
            tree.create(r"\y")
            assert stalls.wait_for(2)
            assert client.call("CANCELCONTRACT", cid).status == 200
            assert eventually(lambda: front_end.snapshot()["notify_failed"] == 1)
            assert stalls.connections == 1
            assert stalls.seen() == [("create", r"\x"), ("create", r"\y")]
        finally:
            client.close()

    def test_renewal_to_another_contact_takes_it(self, serve: Callable[..., OESFrontEnd],
                                                 tree: Tree,
                                                 contacts: Callable[..., Contact]) -> None:
        """A renewal naming another contact while a NOTIFY hangs at the old one: the
        notification goes to the new contact, and the contract, which did not fail to
        deliver, lives on."""
        front_end = serve(notify_timeout=30.0)
        client = Client(front_end.address)
        try:
            stalls, fresh = contacts(answers=1), contacts()
            cid = subscribe(client, stalls, "\\")
            tree.create(r"\x")
            tree.create(r"\y")
            assert stalls.wait_for(2)
            reply = client.call("LEASECONTRACT", fresh.info, [("Contract-id", cid)])
            assert reply.status == 200 and reply.xml().get("contactinfo") == fresh.info
            assert fresh.wait_for(1)
            assert fresh.seen() == [("create", r"\y")]
            tree.create(r"\z")
            assert fresh.wait_for(2) and fresh.seen()[1] == ("create", r"\z")
            assert tree.contract_ids() == [number_of(cid)]
            assert stalls.connections == 1
        finally:
            client.close()

    def test_front_end_close_sends_nothing_more(self, serve: Callable[..., OESFrontEnd],
                                                tree: Tree,
                                                contacts: Callable[..., Contact]) -> None:
        """Closing the front end while a NOTIFY hangs on a kept connection: the contract
        is cancelled and nothing is sent after the close."""
        front_end = serve(notify_timeout=30.0)
        client = Client(front_end.address)
        try:
            stalls = contacts(answers=1)
            subscribe(client, stalls, "\\")
            tree.create(r"\x")
            tree.create(r"\y")
            assert stalls.wait_for(2)
            front_end.close()
            assert eventually(lambda: front_end.snapshot()["notify_failed"] == 1)
            assert tree.contract_ids() == []
            assert stalls.connections == 1 and len(stalls.notifications) == 2
        finally:
            client.close()


class TestContractBook:
    """The front end's own record of the contracts leased through it."""

    def test_contracts_that_failed_are_forgotten(self, tree: Tree, client: Client,
                                                 contacts: Callable[..., Contact],
                                                 fe: OESFrontEnd) -> None:
        """"a subscription contract immediately and implicitly expires upon failure to
        deliver": its Notifier is forgotten and the snapshot's ``contracts`` says so."""
        for _ in range(5):
            dead = contacts()
            subscribe(client, dead, "\\")
            dead.close()
        tree.create(r"\a")
        assert eventually(lambda: tree.contract_ids() == [])
        assert fe.snapshot()["contracts"] == 0 and fe.service.contracts() == []

    def test_a_lease_made_while_pruning_is_kept(self, tree: Tree, fe: OESFrontEnd,
                                                client: Client, contact: Contact,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
        """A contract leased by another client while the front end looks for ended ones is
        not taken for ended: its contact gets its NOTIFY."""
        other = Client(fe.address)
        leased: list[str] = []
        real = tree.contract_ids

        def racing() -> list[int]:
            found = real()
            if not leased:  # another connection's lease completes between the two looks
                leased.append(subscribe(other, contact, "\\"))
            return found

        try:
            monkeypatch.setattr(tree, "contract_ids", racing)
            fe.snapshot()
            monkeypatch.undo()
            assert fe.service.contracts() == [number_of(leased[0])]
            tree.create(r"\a")
            assert contact.wait_for(1) and contact.seen() == [("create", r"\a")]
        finally:
            other.close()

    def test_a_lease_in_flight_at_close_is_cancelled(self, serve: Callable[..., OESFrontEnd],
                                                     tree: Tree, contact: Contact,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
        """Closing the front end cancels the contracts leased through it, a LEASECONTRACT
        that was being carried out as it closed included: none is left behind that no
        front end would ever cancel."""
        front_end = serve()
        entered, gate = threading.Event(), threading.Event()
        real = tree.lease_contract

        def held(*args: Any, **kwargs: Any) -> Any:
            entered.set()
            assert gate.wait(10)
            return real(*args, **kwargs)

        monkeypatch.setattr(tree, "lease_contract", held)
        client = Client(front_end.address)
        try:
            client.send(request("LEASECONTRACT", contact.info))
            assert entered.wait(10)
            front_end.close()
            gate.set()
            assert eventually(lambda: front_end.counters.open == 0)
            assert eventually(lambda: tree.contract_ids() == [])
            assert front_end.service.contracts() == []
        finally:
            gate.set()
            client.close()


class TestSlowLoris:
    """Limits.read_timeout: "Seconds a started frame may take to arrive whole"."""

    def test_a_trickled_request_is_closed(self, serve: Callable[..., OESFrontEnd]) -> None:
        """A request whose bytes come one at a time, each well within read_timeout, is
        still closed once the request has taken longer than read_timeout in all."""
        fe = serve(limits=Limits(read_timeout=0.5))
        slow = Client(fe.address, timeout=10)
        stop = threading.Event()

        def trickle() -> None:  # the attack's pace, not a synchronisation
            try:
                slow.send(b"GET \\Asia OES/1.0\r\nX-Slow: ")
                while not stop.wait(0.1):
                    slow.send(b"x")
            except OSError:
                return

        thread = threading.Thread(target=trickle, daemon=True)
        thread.start()
        try:
            assert eventually(lambda: fe.counters.closed_bad == 1, timeout=5.0)
            assert works(fe)
        finally:
            stop.set()
            thread.join(5)
            slow.close()


class TestContactConnections:
    """Connections to contacts are kept for the next NOTIFY ("any number of request-reply
    exchanges may occur"), but not without bound: each is a file descriptor of the
    server's, and a client may lease thousands of contracts to its own listener."""

    def test_kept_connections_are_bounded(self, serve: Callable[..., OESFrontEnd], tree: Tree,
                                          contact: Contact) -> None:
        """Past ``contact_connections`` kept open, a contract's connection closes after its
        NOTIFY, and the next NOTIFY connects again: every notification still arrives."""
        front_end = serve(contact_connections=2)
        client = Client(front_end.address)
        try:
            for _ in range(5):
                subscribe(client, contact, "\\")
            tree.create(r"\a")
            assert contact.wait_for(5)
            assert eventually(lambda: front_end.snapshot()["contact_connections"] == 2)
            tree.post(r"\a", b"again")
            assert contact.wait_for(10)
            assert eventually(lambda: front_end.snapshot()["contact_connections"] == 2)
            # 5, then the 3 closed ones again; the two kept are reused, or 10 it would be.
            # One more is allowed: a loaded `make test` once saw 9, as when a kept
            # connection is found closed and opened again (_deliver's second attempt).
            assert 8 <= contact.connections <= 9
        finally:
            client.close()


class TestHangingContacts:
    """Hanging contacts hold only their host's lane of the channel's workers
    (Service.lane_for, ``Notifier.lane_key``), as a hanging CORBA client process does."""

    def test_a_contact_has_its_hosts_lane(self, serve: Callable[..., OESFrontEnd],
                                          context: Context) -> None:
        """Every contract to one host shares one lane, keyed by the host: contacts that
        hang hold at most that lane's workers (max_workers_per_client), never the pool's."""
        from cosnotify.protocols.oes.contacts import Contact as Where
        from cosnotify.protocols.oes.contacts import Notifier, Tally

        notifier = Notifier(Where("127.0.0.1", 9), context.loop, 1.0, lambda n: None,
                            Tally())
        service = context.factory.service
        assert service.lane_for(notifier) is service.dispatcher.lane(("oes-contact",
                                                                      "127.0.0.1"))


class TestUtf7Headers:
    """"Communication is conducted using UTF-7 encoded character streams": a header is
    the text its UTF-7 decodes to, however the encoder wrote it."""

    def test_a_shifted_content_length_delimits_the_body(self, client: Client,
                                                        tree: Tree) -> None:
        """``Content-Length`` with its C written as a shifted run (``+AEM-``) is still
        the Content-Length: the body is read as the body, and the next request as the
        next request, not the other way round."""
        body = b'<node/>'
        client.send(b"POST \\a OES/1.0\r\n+AEM-ontent-Length: %d\r\n\r\n" % len(body) + body
                    + request("LIST", "\\"))
        post, listing = client.read(), client.read()
        assert post is not None and post.status == 200 and tree.exists(r"\a")
        assert listing is not None and listing.status == 200
        assert [n.get("nodename") for n in listing.xml()] == ["a"]


class TestContractsPerClient:
    """Review 118: one connection leased the tree's whole contract table (MAX_CONTRACTS,
    10,000) in seconds, and every other client's LEASECONTRACT was refused for the
    lease's 600 s. A connection, and a client host, hold a bounded share; past it a new
    lease is refused with the seed's status for a request refused: "If the request is
    not a syntactically valid and complete request, status code 400 is returned"."""

    def test_default_per_connection_limit(self, fe: OESFrontEnd) -> None:
        hog = Client(fe.address, timeout=60)
        try:
            hog.send(request("LEASECONTRACT", "tcp:127.0.0.1:9") * 1_001)
            statuses = [hog.read() for _ in range(1_001)]
            assert all(m is not None for m in statuses)
            assert [m.status for m in statuses[:1_000]] == [200] * 1_000  # type: ignore[union-attr]
            last = statuses[-1]
            assert last is not None and last.status == 400
            assert "contracts_per_connection" in last.headers.get("error", "")
        finally:
            hog.close()
        other = Client(fe.address)
        try:
            assert other.call("LEASECONTRACT", "tcp:127.0.0.1:10").status == 200
        finally:
            other.close()
        assert fe.service.options.contracts_per_connection == 1_000  # the defaults
        assert fe.service.options.contracts_per_host == 5_000

    def test_connection_and_host_limits(self, serve: Callable[..., OESFrontEnd]) -> None:
        """Cancelling a contract gives its slot back; a renewal takes none; a closed
        connection's contracts (leases outlive it) still count for its host."""
        fe = serve(explain=True, contracts_per_connection=3, contracts_per_host=5)
        tree = fe.service.tree
        a, b = Client(fe.address), Client(fe.address)
        try:
            made = [a.call("LEASECONTRACT", "tcp:127.0.0.1:9") for _ in range(3)]
            assert [m.status for m in made] == [200] * 3
            refused = a.call("LEASECONTRACT", "tcp:127.0.0.1:9")
            assert refused.status == 400
            assert "contracts_per_connection" in refused.headers.get("error", "")
            cid = made[0].xml().get("contractid")
            renewed = a.call("LEASECONTRACT", "tcp:127.0.0.1:9", [("Contract-id", cid)])
            assert renewed.status == 200  # a renewal is not a new contract
            assert a.call("CANCELCONTRACT", cid).status == 200
            assert a.call("LEASECONTRACT", "tcp:127.0.0.1:9").status == 200  # its slot back
            a.close()
            assert [b.call("LEASECONTRACT", "tcp:127.0.0.1:9").status
                    for _ in range(3)] == [200, 200, 400]
            assert len(tree.contract_ids()) == 5
        finally:
            a.close()
            b.close()

    def test_a_contract_that_ends_before_it_is_registered_gives_its_slot_back(
            self, serve: Callable[..., OESFrontEnd], monkeypatch: Any) -> None:
        """Review 123: a contract that ended between the tree's lease and the front
        end's registration of its notifier (whose close, seeing nothing registered,
        ran once and for all) kept its slot for ever."""
        fe = serve(explain=True, contracts_per_connection=1)
        tree = fe.service.tree
        lease = tree.lease_contract

        def lease_then_end(notifier: Any, *args: Any, **kwargs: Any) -> Any:
            contract = lease(notifier, *args, **kwargs)
            notifier.close()  # the contract ended at once (as when its lease ran out)
            return contract

        monkeypatch.setattr(tree, "lease_contract", lease_then_end)
        a = Client(fe.address)
        try:
            assert a.call("LEASECONTRACT", "tcp:127.0.0.1:9").status == 200
            monkeypatch.setattr(tree, "lease_contract", lease)
            assert a.call("LEASECONTRACT", "tcp:127.0.0.1:9").status == 200
        finally:
            a.close()
