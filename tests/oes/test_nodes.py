"""The tree's operations and the notifications they emit (cosnotify/oes/tree.py, events.py).

Source: /work/shared/seeds/object-eventing-service.txt -- "Basic Concepts"
(Tree; Notifications), "Database Tables" (NODE table), "Processing Logic"
(LIST, GET, POST and REMOVE verbs), the XML schema (<node>, <notification>).
Notifications are read by a plain structured proxy of the channel (no filter),
as any consumer of the channel would.
"""

from __future__ import annotations

from typing import Any

import pytest
from omniORB import CORBA

import CosNotifyChannelAdmin as CA
import CosNotifyFilter

from cosnotify.oes import NodeExists, NodeNotFound, Tree
from tests.oes.conftest import FIGURE_1, Recorder, field, figure_1, has_field, settle


def listener(channel: Any, *filters: tuple[str, str]) -> Recorder:
    """A consumer of the whole channel, with filters (grammar, constraint) if given."""
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
        CA.STRUCTURED_EVENT)
    for grammar, text in filters:
        flt = channel._get_default_filter_factory().create_filter(grammar)
        flt.add_constraints([CosNotifyFilter.ConstraintExp([], text)])
        proxy.add_filter(flt)
    recorder = Recorder()
    proxy.connect_structured_push_consumer(recorder)
    return recorder


class TestTree:
    """Tree: "a hierarchically organized global namespace; nodes in the tree store
    arbitrary binary data"."""

    def test_the_root_exists_and_has_an_empty_name(self, tree: Tree) -> None:
        """Tree: "a single root node ... The nodename of the root node is a zero-length
        character string"; its pathname is the separator alone."""
        root = tree.get("\\")
        assert (root.nodename, root.nodepath, root.content) == ("", "\\", None)
        assert tree.get("") == root

    def test_pathname_of_calcutta(self, tree: Tree) -> None:
        """Tree: "the pathname of the node named 'Calcutta' is '\\Asia\\India\\Calcutta'"."""
        figure_1(tree)
        node = tree.get(r"\Asia\India\Calcutta")
        assert (node.nodename, node.nodepath) == ("Calcutta", r"\Asia\India\Calcutta")

    def test_non_leaf_nodes_store_data(self, tree: Tree) -> None:
        """Tree: "non-leaf nodes in the OES tree may also store data"."""
        figure_1(tree)
        tree.post(r"\Asia", b"continent")
        assert tree.get(r"\Asia").content == b"continent"
        assert tree.list(r"\Asia") == ["India"]

    def test_names_are_unique_among_siblings_only(self, tree: Tree) -> None:
        """Tree: "each child node has a nodename that is locally unique among its n-1
        siblings" (the same name under two parents is two nodes)."""
        tree.create(r"\a")
        tree.create(r"\b")
        tree.create(r"\a\x", b"1")
        tree.create(r"\b\x", b"2")
        assert (tree.get(r"\a\x").content, tree.get(r"\b\x").content) == (b"1", b"2")
        with pytest.raises(NodeExists):
            tree.create(r"\a\x")

    def test_any_character_but_the_separator(self, tree: Tree) -> None:
        """Tree: "the legal set of characters that may appear in a nodename is UCS-2 less
        the path separator character" (spaces, '/', quotes, non-Latin scripts)."""
        for name in ["New Delhi", "a/b", 'say "hi"', "कोलकाता", "中国", "%2F", " x "]:
            tree.create("\\" + name)
            assert tree.get("\\" + name).nodename == name
        assert len(tree.list("\\")) == 7


class TestList:
    """LIST Verb."""

    def test_immediate_children(self, tree: Tree) -> None:
        """LIST: "an enumeration of the names of all immediate children of the node"."""
        figure_1(tree)
        assert tree.list("\\") == ["Asia", "Europe"]
        assert tree.list(r"\Asia\India") == ["Bombay", "Calcutta", "New Delhi"]

    def test_no_children_is_not_an_error(self, tree: Tree) -> None:
        """LIST: "Even if there are no child nodes enumerated, status code 200 is returned"."""
        figure_1(tree)
        assert tree.list(r"\Europe\Ireland\Cork") == []

    def test_missing_node(self, tree: Tree) -> None:
        """LIST: "If no matching node is found, status code 402 is returned" (NodeNotFound)."""
        with pytest.raises(NodeNotFound):
            tree.list(r"\Atlantis")


class TestGet:
    """GET Verb and the NODE table's defaults."""

    def test_defaults(self, tree: Tree) -> None:
        """NODE table: Upl "default: -1", QoS "default: False (0)", Barricade "default:
        False (0)", SubscriptionPool null; a node made without content has none."""
        tree.create(r"\a")
        node = tree.get(r"\a")
        assert (node.upl, node.guaranteed, node.barricade, node.subscription_pool,
                node.content) == (-1, False, False, None, None)

    def test_attributes_and_content(self, tree: Tree) -> None:
        """GET: "the properties and content of OES tree node named in the argument URI"
        (nodename, nodepath, upl, guaranteed, barricade, subscriptionPool, content)."""
        tree.create(r"\pool")
        tree.create(r"\a", b"\x00\xff", upl=2, guaranteed=True, barricade=True,
                    subscription_pool=r"\pool")
        node = tree.get(r"\a")
        assert (node.nodename, node.nodepath, node.content, node.upl, node.guaranteed,
                node.barricade, node.subscription_pool) == (
            "a", r"\a", b"\x00\xff", 2, True, True, r"\pool")

    def test_empty_content_is_content(self, tree: Tree) -> None:
        """GET: "will have a <content> element as a child—even if the content is empty":
        empty content (b"") is not the absence of content (None)."""
        tree.create(r"\a", b"")
        tree.create(r"\b")
        assert (tree.get(r"\a").content, tree.get(r"\b").content) == (b"", None)

    def test_missing_node(self, tree: Tree) -> None:
        """GET: "If no matching node is found, status code 402 is returned"."""
        with pytest.raises(NodeNotFound):
            tree.get(r"\Asia")


class TestPost:
    """POST Verb."""

    def test_creates_with_ancestors(self, tree: Tree) -> None:
        """POST: "If the OES tree node specified does not exist it is created ... If any
        of the node's ancestors do not exist, they are also created: ... attributes are
        given their default values and it is created without an initial content"."""
        tree.post(r"\Asia\India\Calcutta", b"city", upl=1)
        assert tree.get(r"\Asia\India\Calcutta").content == b"city"
        assert tree.get(r"\Asia\India\Calcutta").upl == 1
        india = tree.get(r"\Asia\India")
        assert (india.content, india.upl) == (None, -1)

    def test_updates_only_what_is_given(self, tree: Tree) -> None:
        """POST: "Only those attributes explicitly present in the request XML are updated;
        if the <content> element is present ... the content ... is also updated"."""
        tree.create(r"\a", b"one", upl=3, barricade=True)
        tree.post(r"\a", guaranteed=True)
        node = tree.get(r"\a")
        assert (node.content, node.upl, node.barricade, node.guaranteed) == (
            b"one", 3, True, True)
        tree.post(r"\a", b"two")
        assert tree.get(r"\a").content == b"two" and tree.get(r"\a").upl == 3

    def test_pool_set_and_removed(self, tree: Tree) -> None:
        """NODE table: SubscriptionPool "Integer (Null allowed)": set, then back to null."""
        tree.create(r"\Countries")
        tree.create(r"\France")
        tree.post(r"\France", subscription_pool=r"\Countries")
        assert tree.get(r"\France").subscription_pool == r"\Countries"
        tree.post(r"\France", subscription_pool=None)
        assert tree.get(r"\France").subscription_pool is None


class TestRemove:
    """REMOVE Verb."""

    def test_removes_the_sub_tree(self, tree: Tree) -> None:
        """REMOVE: "removing a particular node removes that node, its associated content,
        plus the descendant nodes and their contents"."""
        figure_1(tree)
        assert tree.remove(r"\Asia\India") == 5 - 1
        assert tree.list(r"\Asia") == []
        with pytest.raises(NodeNotFound):
            tree.get(r"\Asia\India\Bombay")
        tree.create(r"\Asia\India")  # the name is free again, with nothing below
        assert tree.list(r"\Asia\India") == []

    def test_missing_node(self, tree: Tree) -> None:
        """REMOVE: "If the node specified by the argument URI does not exist, status code
        404 is returned"."""
        with pytest.raises(NodeNotFound):
            tree.remove(r"\Asia")


class TestNotifications:
    """Notifications: "OES generates notification events for every such operation";
    the <notification> element and the NOTIFY verb."""

    def test_creating_changing_and_removing_notify(self, channel: Any, tree: Tree) -> None:
        """Notifications: "creating a node; removing a node; or, changing the value stored
        at a node" each notify (type (OES, operation); node: the node's pathname)."""
        heard = listener(channel)
        tree.create(r"\a")
        tree.post(r"\a", b"v")
        tree.remove(r"\a")
        settle(channel)
        assert heard.seen == [("create", r"\a"), ("post", r"\a"), ("remove", r"\a")]
        assert {e.header.fixed_header.event_type.domain_name for e in heard.events} == {"OES"}

    def test_post_carries_last_and_present_value(self, channel: Any, tree: Tree) -> None:
        """NOTIFY: a POST's notification "will have a <presentValue> child element"; the
        issue: "the node path, the last value and the present value"."""
        tree.create(r"\a", b"old")
        heard = listener(channel)
        tree.post(r"\a", b"new")
        settle(channel)
        event = heard.events[0]
        assert (field(event, "node"), field(event, "nodename"), field(event, "operation")) \
            == (r"\a", "a", "post")
        assert (field(event, "lastValue"), field(event, "presentValue")) == (b"old", b"new")

    def test_remove_carries_the_last_value(self, channel: Any, tree: Tree) -> None:
        """NOTIFY: a REMOVE's notification "will have a <lastValue> child element"."""
        tree.create(r"\a", b"gone")
        heard = listener(channel)
        tree.remove(r"\a")
        settle(channel)
        event = heard.events[0]
        assert field(event, "lastValue") == b"gone" and not has_field(event, "presentValue")

    def test_values_are_left_out_when_undefined(self, channel: Any, tree: Tree) -> None:
        """<notification>: lastValue and presentValue are minOccurs='0': a node created
        without content notifies neither."""
        heard = listener(channel)
        tree.create(r"\a")
        settle(channel)
        event = heard.events[0]
        assert not has_field(event, "lastValue") and not has_field(event, "presentValue")

    def test_touch(self, channel: Any, tree: Tree) -> None:
        """POST: "'touching' an OES tree node, so as to trigger a notification, without
        actually changing the node's contents or properties" (LNOperation 1: touch)."""
        tree.create(r"\a", b"same", upl=2)
        heard = listener(channel)
        tree.post(r"\a")
        settle(channel)
        assert heard.seen == [("touch", r"\a")]
        assert field(heard.events[0], "presentValue") == b"same"
        assert tree.get(r"\a").upl == 2

    def test_attributes_travel_with_the_notification(self, channel: Any, tree: Tree) -> None:
        """The <node> element's attributes (upl, guaranteed, barricade, subscriptionPool)
        are in the notification, with their present values."""
        tree.create(r"\pool")
        heard = listener(channel)
        tree.create(r"\a", upl=4, guaranteed=True, barricade=True, subscription_pool=r"\pool")
        settle(channel)
        event = heard.events[0]
        assert (field(event, "upl"), field(event, "guaranteed"), field(event, "barricade"),
                field(event, "subscriptionPool")) == (4, True, True, r"\pool")

    def test_creation_notifies_every_node_made(self, channel: Any, tree: Tree) -> None:
        """POST: "Node creation always results in a notification being generated": the
        ancestors it makes too, from the top."""
        heard = listener(channel)
        tree.post(r"\Asia\India\Calcutta")
        settle(channel)
        assert heard.seen == [("create", r"\Asia"), ("create", r"\Asia\India"),
                              ("create", r"\Asia\India\Calcutta")]

    def test_remove_notifies_every_node_removed(self, channel: Any, tree: Tree) -> None:
        """REMOVE: "A notification is always generated for each node in the tree that was
        removed as a result of this operation" (here the deepest first)."""
        figure_1(tree)
        heard = listener(channel)
        tree.remove(r"\Europe")
        settle(channel)
        removed = [node for op, node in heard.seen if op == "remove"]
        assert sorted(removed) == sorted(p for p in FIGURE_1 if p.startswith(r"\Europe"))
        assert removed[-1] == r"\Europe"
        assert removed.index(r"\Europe\France\Nice") < removed.index(r"\Europe\France")

    def test_reads_do_not_notify(self, channel: Any, tree: Tree) -> None:
        """Notifications are for operations that change the tree ("creating ...
        removing ... changing"): GET and LIST notify nothing."""
        tree.create(r"\a")
        heard = listener(channel)
        tree.get(r"\a")
        tree.list(r"\a")
        tree.post(r"\a")  # a touch, to know the deliveries are done
        settle(channel)
        assert heard.seen == [("touch", r"\a")]

    def test_every_grammar_selects(self, channel: Any, tree: Tree) -> None:
        """The issue: "OES_SUBTREE filters, and any other grammar, select from it":
        EXTENDED_TCL on the seed's field names."""
        figure_1(tree)
        tcl = listener(channel, ("EXTENDED_TCL",
                                 "$operation == 'post' and $nodename == 'Paris'"))
        subtree = listener(channel, ("OES_SUBTREE", r"\Europe\France depth 1"))
        tree.post(r"\Europe\France\Paris", b"1")
        tree.post(r"\Europe\France\Nice", b"2")
        tree.post(r"\Asia\India", b"3")
        settle(channel)
        assert tcl.seen == [("post", r"\Europe\France\Paris")]
        assert subtree.seen == [("post", r"\Europe\France\Paris"),
                                ("post", r"\Europe\France\Nice")]

    def test_the_root_posts_too(self, channel: Any, tree: Tree) -> None:
        """Tree: the root is a node (it "may also store data"); its notification names
        it ``\\``, with the empty nodename."""
        heard = listener(channel)
        tree.post("\\", b"top")
        settle(channel)
        assert heard.seen == [("post", "\\")] and field(heard.events[0], "nodename") == ""
        assert tree.get("\\").content == b"top"


class TestLifecycle:
    """A tree belongs to its channel."""

    def test_one_tree_per_channel(self, channel: Any) -> None:
        """``Tree.of`` gives the channel's one tree, made on first use."""
        assert Tree.of(channel) is Tree.of(channel)

    def test_destroyed_channel(self, channel: Any, tree: Tree) -> None:
        """A tree whose channel was destroyed answers OBJECT_NOT_EXIST, as the channel."""
        tree.create(r"\a")
        channel.destroy()
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            tree.get(r"\a")
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            Tree.of(channel)
