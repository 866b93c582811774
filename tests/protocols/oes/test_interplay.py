"""Wire clients and CosNotify clients on one channel.

Source: issue 22 ("Each maps its protocol onto channels, proxies, filters and the
store"; "an event pushed by an in-process CosNotify supplier on the same
channel reaches your protocol's subscriber, and your client's events reach an
in-process CosNotify structured push consumer with an EXTENDED_TCL filter");
/work/shared/seeds/object-eventing-service.txt, "Notifications" ("OES
generates notification events for every such operation"); docs/history.md,
"OES trees" (the notification's fields).
"""

from __future__ import annotations

import threading
from typing import Any

from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter

from cosnotify.oes import Tree
from tests.protocols.oes.client import Client, Contact, content_of, node_body


class Recorder:
    """An in-process CosNotifyComm::StructuredPushConsumer."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.cond = threading.Condition()

    def push_structured_event(self, event: Any) -> None:
        with self.cond:
            self.events.append(event)
            self.cond.notify_all()

    def disconnect_structured_push_consumer(self) -> None:
        pass

    def wait_for(self, count: int) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: len(self.events) >= count, 10)


def field(event: Any, name: str) -> Any:
    return next(p.value.value() for p in event.filterable_data if p.name == name)


def consumer(channel: Any, constraint: str) -> Recorder:
    """A structured push consumer of the channel with one EXTENDED_TCL filter."""
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
        CA.STRUCTURED_EVENT)
    flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
    flt.add_constraints([CosNotifyFilter.ConstraintExp([], constraint)])
    proxy.add_filter(flt)
    recorder = Recorder()
    proxy.connect_structured_push_consumer(recorder)
    return recorder


class TestWireToCorba:
    """A wire POST is the tree's notification on the channel."""

    def test_extended_tcl_consumer(self, tree: Tree, client: Client) -> None:
        """A consumer filtering ``$operation == 'post' and $nodename == 'Paris'`` gets the
        wire client's update of Paris, with its content, and nothing else."""
        recorder = consumer(tree.channel, "$operation == 'post' and $nodename == 'Paris'")
        client.call("POST", r"\Europe\France\Paris", body=node_body(b"v1"))   # create
        client.call("POST", r"\Europe\France\Nice", body=node_body(b"n"))     # create
        client.call("POST", r"\Europe\France\Nice", body=node_body(b"n2"))    # not Paris
        client.call("POST", r"\Europe\France\Paris", body=node_body(b"v2", upl="1"))
        assert recorder.wait_for(1)
        tree.channel._service.dispatcher.wait_idle()
        [event] = recorder.events
        assert event.header.fixed_header.event_type.domain_name == "OES"
        assert field(event, "node") == r"\Europe\France\Paris"
        assert (field(event, "lastValue"), field(event, "presentValue")) == (b"v1", b"v2")
        assert field(event, "upl") == 1

    def test_a_wire_remove(self, tree: Tree, client: Client) -> None:
        """A wire REMOVE reaches a consumer filtering on ``$operation == 'remove'``."""
        tree.create(r"\Asia\India", b"x", parents=True)
        recorder = consumer(tree.channel, "$operation == 'remove'")
        assert client.call("REMOVE", r"\Asia").status == 200
        assert recorder.wait_for(2)
        assert [field(e, "node") for e in recorder.events] == [r"\Asia\India", r"\Asia"]


class TestCorbaToWire:
    """Notifications made elsewhere reach a wire contract's contact."""

    def test_a_structured_supplier(self, tree: Tree, client: Client, contact: Contact) -> None:
        """A CosNotify supplier pushing an (``OES``, ``post``) event with a ``node`` field is
        routed by the contract's OES_SUBTREE filter like the tree's own notifications."""
        cid = client.call("LEASECONTRACT", contact.info).xml().attrib["contractid"]
        tree.create(r"\Europe")
        assert client.call("SUBSCRIBE", r"\Europe", [("Contract-id", cid)]).status == 200
        proxy, _ = tree.channel._get_default_supplier_admin() \
            .obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_supplier(None)
        for node in (r"\Asia\India", r"\Europe\France\Paris"):
            event = N.StructuredEvent(
                N.EventHeader(N.FixedEventHeader(N.EventType("OES", "post"), ""), []),
                [N.Property("node", CORBA.Any(CORBA.TC_wstring, node)),
                 N.Property("presentValue", CORBA.Any(CORBA._tc_OctetSeq, b"from CORBA"))],
                CORBA.Any(CORBA.TC_null, None))
            proxy.push_structured_event(event)
        assert contact.wait_for(1)
        tree.channel._service.dispatcher.wait_idle()
        [notify] = contact.notifications
        assert notify.uri == r"\Europe\France\Paris" and notify.headers["contract-id"] == cid
        assert content_of(notify.xml().find("presentValue")) == b"from CORBA"

    def test_the_tree_api(self, tree: Tree, client: Client, contact: Contact) -> None:
        """A subtree SUBSCRIBE contract receives NOTIFY for changes made in process through
        the Tree API (create, post, remove)."""
        tree.create(r"\Asia")
        cid = client.call("LEASECONTRACT", contact.info).xml().attrib["contractid"]
        client.call("SUBSCRIBE", r"\Asia", [("Contract-id", cid)])
        tree.create(r"\Asia\India\Calcutta", b"c", parents=True)
        tree.post(r"\Asia\India\Calcutta", b"Kolkata")
        tree.remove(r"\Asia\India")
        assert contact.wait_for(5)
        assert contact.seen() == [("create", r"\Asia\India"), ("create", r"\Asia\India\Calcutta"),
                                  ("post", r"\Asia\India\Calcutta"),
                                  ("remove", r"\Asia\India\Calcutta"),
                                  ("remove", r"\Asia\India")]
        post = contact.notifications[2].xml()
        assert content_of(post.find("lastValue")) == b"c"
        assert content_of(post.find("presentValue")) == b"Kolkata"
