"""The XML bodies: a POST's <node> in; <node>, <contract>, <notify> out; hostile XML refused.

Source: /work/shared/seeds/object-eventing-service.txt, "Wire Protocol" (the
schema: ElementTypes node, notification, contract; ``dt:type`` bin.base64,
int, boolean, uuid, dateTime), the POST, GET, LIST, LEASECONTRACT and NOTIFY
verbs; issue 22: "Use a well-kept XML parser that refuses entity expansion";
"deep XML and entity bombs" are bad input.
"""

from __future__ import annotations

import base64
import xml.etree.ElementTree as ET

import pytest

from cosnotify.oes import Node
from cosnotify.protocols.oes.bodies import (
    MAX_DEPTH,
    MAX_ELEMENTS,
    BodyError,
    contract_xml,
    format_contract_id,
    format_expiry,
    list_xml,
    node_xml,
    notify_xml,
    parse_contract_id,
    parse_node,
)
from tests.protocols.oes.client import node_body


class TestPostBody:
    """POST: "a single <node> element as the document element, which describes the
    attributes and content of the node that are to be set"."""

    def test_content_and_attributes(self) -> None:
        """The non-required attributes and <content> (bin.base64) become Tree.post's
        arguments."""
        body = node_body(b"\x00\x01city", upl="1", guaranteed="1", barricade="0",
                         subscriptionPool="\\Countries")
        assert parse_node(body, "\\Asia\\India", "India") == {
            "content": b"\x00\x01city", "upl": 1, "guaranteed": True, "barricade": False,
            "subscription_pool": "\\Countries"}

    def test_nothing_given_is_a_touch(self) -> None:
        """"it may or may not contain a <content> child element": none and no attribute is
        a touch (nothing to set)."""
        assert parse_node('<node nodename="India"/>', "\\Asia\\India", "India") == {}

    def test_base64_may_be_wrapped(self) -> None:
        """Blanks and line breaks inside base64 text are ignored."""
        text = base64.b64encode(b"x" * 100).decode()
        wrapped = "\n".join(text[i:i + 20] for i in range(0, len(text), 20))
        assert parse_node(f"<node><content>\n{wrapped}\n</content></node>", "\\a", "a") == {
            "content": b"x" * 100}

    def test_an_empty_pool_removes_it(self) -> None:
        """subscriptionPool="" names no pool: the node's pool goes (cosnotify's reading)."""
        assert parse_node('<node subscriptionPool=""/>', "\\a", "a") == {
            "subscription_pool": None}

    @pytest.mark.parametrize(("body", "why"), [
        (None, "must be an XML document"),
        ("<contract/>", "document element is <node>"),
        ('<node colour="red"/>', "no attribute"),
        ('<node nodename="Bombay"/>', "nodename"),
        ('<node nodepath="\\Europe"/>', "nodepath"),
        ('<node upl="many"/>', "upl is an integer"),
        ('<node barricade="yes"/>', "barricade is a boolean"),
        ("<node><content>not base64!</content></node>", "not base64"),
        ("<node><content>AA==</content><content>AA==</content></node>", "at most one"),
        ("<node><node nodename='x'/></node>", "one <content>"),
        ("<node>text</node>", "elements only"),
        ("<node><content><b/></content></node>", "base64 text only"),
        ("<node>", "not well-formed"),
    ])
    def test_refused(self, body: str | None, why: str) -> None:
        """What is not the <node> a POST needs is a BodyError (400) saying why."""
        with pytest.raises(BodyError, match=why):
            parse_node(body, "\\Asia\\India", "India")


class TestHostileXml:
    """defusedxml refuses entity expansion; depth and size are bounded."""

    def test_an_entity_bomb(self) -> None:
        """The "billion laughs": an entity declaration is refused before any expansion."""
        bomb = ('<?xml version="1.0"?><!DOCTYPE node [<!ENTITY a "aaaaaaaaaa">'
                + "".join(f'<!ENTITY {c} "&{p};&{p};&{p};&{p};&{p};&{p};&{p};&{p};">'
                          for p, c in zip("abcdefgh", "bcdefghi", strict=True))
                + ']><node upl="&i;"/>')
        with pytest.raises(BodyError, match="refused"):
            parse_node(bomb, "\\a", "a")

    def test_an_external_entity(self) -> None:
        """An external entity (file disclosure) is refused."""
        body = ('<?xml version="1.0"?><!DOCTYPE node [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
                "<node><content>&x;</content></node>")
        with pytest.raises(BodyError, match="refused"):
            parse_node(body, "\\a", "a")

    def test_any_dtd(self) -> None:
        """No body needs a DTD: any is refused."""
        with pytest.raises(BodyError, match="refused"):
            parse_node("<!DOCTYPE node><node/>", "\\a", "a")

    def test_deep_xml(self) -> None:
        """Elements nested deeper than MAX_DEPTH are refused as they are parsed."""
        deep = "<node>" + "<content>" * MAX_DEPTH + "</content>" * MAX_DEPTH + "</node>"
        with pytest.raises(BodyError, match="deep"):
            parse_node(deep, "\\a", "a")
        very = "<node>" + "<x>" * 100_000 + "</x>" * 100_000 + "</node>"
        with pytest.raises(BodyError, match="deep"):
            parse_node(very, "\\a", "a")

    def test_too_many_elements(self) -> None:
        """More than MAX_ELEMENTS elements are refused."""
        wide = "<node>" + "<content/>" * MAX_ELEMENTS + "</node>"
        with pytest.raises(BodyError, match="elements"):
            parse_node(wide, "\\a", "a")


class TestWritten:
    """The bodies the server writes parse back with a plain XML parser."""

    def test_get_node(self) -> None:
        """GET: every attribute of the pseudo-code, and <content> "even if the content is
        empty"."""
        node = Node("\\Asia\\India", "India", None, 1, True, False, "\\Countries")
        root = ET.fromstring(node_xml(node))
        assert root.tag == "node" and root.attrib == {
            "nodename": "India", "nodepath": "\\Asia\\India", "upl": "1", "guaranteed": "1",
            "barricade": "0", "subscriptionPool": "\\Countries"}
        assert [c.tag for c in root] == ["content"] and not root[0].text

    def test_names_are_quoted(self) -> None:
        """Names with XML's special characters, quotes and line breaks come back as they are;
        a C0 control (no XML 1.0 document can carry it) is U+FFFD."""
        node = Node('\\a<&>"\n\'', 'a<&>"\n\'', b"\xff", -1, False, False, None)
        root = ET.fromstring(node_xml(node))
        assert root.get("nodename") == 'a<&>"\n\'' and root[0].text == "/w=="
        odd = Node("\\a\x01", "a\x01", None, -1, False, False, None)
        assert ET.fromstring(node_xml(odd)).get("nodename") == "a\ufffd"

    def test_list(self) -> None:
        """LIST: the node's <node>, with a child <node nodename=...> per child."""
        root = ET.fromstring(list_xml("\\Asia\\India", "India",
                                      ["Bombay", "Calcutta", "New Delhi"]))
        assert root.get("nodepath") == "\\Asia\\India"
        assert [c.get("nodename") for c in root] == ["Bombay", "Calcutta", "New Delhi"]

    def test_contract(self) -> None:
        """LEASECONTRACT: <contract> with contractid (uuid), expiry (dateTime) and
        contactinfo, and no child <subscription>."""
        root = ET.fromstring(contract_xml(42, 1_000_000.5, "tcp:127.0.0.1:9"))
        assert root.attrib == {"contractid": "00000000-0000-0000-0000-00000000002a",
                               "expiry": "1970-01-12T13:46:40.500Z",
                               "contactinfo": "tcp:127.0.0.1:9"} and len(root) == 0

    def test_contract_ids(self) -> None:
        """A contract id is read back from its UUID or its number; other text names none."""
        assert parse_contract_id(format_contract_id(7)) == 7 == parse_contract_id("7")
        assert parse_contract_id("{00000000-0000-0000-0000-000000000007}") == 7
        assert parse_contract_id("seven") is None and parse_contract_id(None) is None
        assert parse_contract_id("ffffffff-ffff-ffff-ffff-ffffffffffff") is None

    def test_expiry_whole_seconds(self) -> None:
        """dateTime: ISO 8601 UTC; no fraction when there is none."""
        assert format_expiry(0) == "1970-01-01T00:00:00Z"

    @pytest.mark.parametrize(("operation", "last", "present", "children"), [
        ("create", None, b"new", ["presentValue"]),
        ("post", b"old", b"new", ["lastValue", "presentValue"]),
        ("touch", None, None, ["presentValue"]),
        ("remove", b"old", None, ["lastValue"]),
        ("remove", None, None, ["lastValue"]),
    ])
    def test_notify(self, operation: str, last: bytes | None, present: bytes | None,
                    children: list[str]) -> None:
        """NOTIFY: a <notify> with contract-id; "as a result of a POST request ... a
        <presentValue> child element ... a REMOVE request ... a <lastValue>"."""
        root = ET.fromstring(notify_xml(3, operation, last, present))
        assert root.tag == "notify" and root.get("contract-id") == format_contract_id(3)
        assert root.get("operation") == operation and [c.tag for c in root] == children
        if present is not None:
            assert base64.b64decode(root.find("presentValue").text or "") == present  # type: ignore[union-attr]
