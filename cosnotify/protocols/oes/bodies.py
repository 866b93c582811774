"""The OES wire protocol's XML bodies: ``<node>``, ``<contract>``, ``<notify>``.

Strategy: "the message bodies consist exclusively of XML data" (Wire
Protocol), after the seed's schema (``node``, ``notification``, ``contract``
ElementTypes). Bodies that come in (a POST's ``<node>``) are parsed by
defusedxml over the standard library's expat, which refuses entity
declarations (the "billion laughs"), external entities and, here, any DTD at
all (none is needed); a tree builder of our own refuses elements deeper than
:data:`MAX_DEPTH` or more than :data:`MAX_ELEMENTS` of them, so a body costs
at most its size (``codec.MAX_BODY``) in memory. Every refusal is a
:class:`BodyError` with the reason (a 400). Bodies that go out are written by
hand, attributes quoted, names kept as the tree has them.

Type mapping (the schema's ``dt:type`` beside each):

- ``content``, ``lastValue``, ``presentValue`` (``bin.base64``): bytes as
  base64; blanks and line breaks inside are ignored on input;
- ``upl``, ``depth`` (``int``): decimal, -1 is "infinite";
- ``guaranteed``, ``barricade`` (``boolean``): ``1``/``0`` out; ``1``,
  ``0``, ``true``, ``false`` in;
- ``contractid`` (``uuid``): the tree's contract number ``n`` as the UUID
  whose integer is ``n`` (``00000000-0000-0000-0000-00000000002a`` is 42);
  in, the UUID or the plain number;
- ``expiry`` (``dateTime``): ISO 8601 in UTC, ``2026-11-26T23:40:00Z``
  (milliseconds when the lease has them);
- names and paths (``string``): text; a character XML 1.0 cannot carry (a C0
  control, which a CORBA client may put in a name) is written as U+FFFD.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import re
import uuid
import xml.etree.ElementTree as ET
from typing import Any, Final

import defusedxml
import defusedxml.ElementTree

__all__ = [
    "MAX_DEPTH",
    "MAX_ELEMENTS",
    "BodyError",
    "contract_xml",
    "format_contract_id",
    "format_expiry",
    "list_xml",
    "node_xml",
    "notify_xml",
    "parse_contract_id",
    "parse_node",
    "parse_xml",
]

#: Elements nested at most this deep in a body that comes in (a POST's is 2 deep).
MAX_DEPTH: Final = 8
#: Elements in a body that comes in, at most.
MAX_ELEMENTS: Final = 64
#: The attributes of a POST's ``<node>`` (the schema's), and the keyword of Tree.post each is.
NODE_ATTRIBUTES: Final = {"nodename": None, "nodepath": None, "upl": "upl",
                          "guaranteed": "guaranteed", "barricade": "barricade",
                          "subscriptionPool": "subscription_pool"}
_DECLARATION: Final = '<?xml version="1.0" encoding="UTF-7"?>'
_BOOLEANS: Final = {"1": True, "0": False, "true": True, "false": False}
_INT: Final = re.compile(r"-?[0-9]{1,10}\Z")
_NOT_XML: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_BLANKS: Final = re.compile(r"[ \t\r\n]+")
_ATTRIBUTE_ENTITIES: Final = {'"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}


class BodyError(ValueError):
    """A body that is not what the request needs: ``reason`` (a 400)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Builder(ET.TreeBuilder):
    """A tree builder that refuses deep or large documents as they are parsed."""

    def __init__(self) -> None:
        super().__init__()
        self._depth = 0
        self._count = 0

    def start(self, tag: Any, attrs: Any) -> ET.Element:
        self._depth += 1
        self._count += 1
        if self._depth > MAX_DEPTH:
            raise BodyError(f"the XML is nested over {MAX_DEPTH} elements deep")
        if self._count > MAX_ELEMENTS:
            raise BodyError(f"the XML holds over {MAX_ELEMENTS} elements")
        return super().start(tag, attrs)

    def end(self, tag: Any) -> ET.Element:
        self._depth -= 1
        return super().end(tag)


def parse_xml(text: str) -> ET.Element:
    """The document element of ``text``; BodyError for what is not a small, plain XML
    document (no DTD, no entity declaration, no external entity)."""
    parser = defusedxml.ElementTree.DefusedXMLParser(target=_Builder(), forbid_dtd=True)
    try:
        parser.feed(text)
        root: ET.Element = parser.close()
    except BodyError:
        raise
    except defusedxml.DefusedXmlException as exc:
        raise BodyError(f"the XML is refused: {type(exc).__name__} (no DTD or entity "
                        "declarations)") from None
    except ET.ParseError as exc:
        raise BodyError(f"not well-formed XML: {exc}") from None
    except (ValueError, UnicodeError) as exc:  # expat's own refusals of odd text
        raise BodyError(f"not XML: {exc}") from None
    return root


def _boolean(value: str, name: str) -> bool:
    found = _BOOLEANS.get(value.strip())
    if found is None:
        raise BodyError(f"{name} is a boolean (1 or 0), not {value[:20]!r}")
    return found


def parse_int(value: str, name: str) -> int:
    """An ``int`` attribute or header: decimal (the range is the tree's to check)."""
    value = value.strip()
    if not _INT.match(value):
        raise BodyError(f"{name} is an integer, not {value[:20]!r}")
    return int(value)


def decode_base64(text: str | None, name: str) -> bytes:
    """``bin.base64`` text as bytes (blanks ignored)."""
    cleaned = _BLANKS.sub("", text or "")
    try:
        return base64.b64decode(cleaned, validate=True)
    except (binascii.Error, ValueError):
        raise BodyError(f"<{name}> is not base64") from None


def parse_node(text: str | None, pathname: str, nodename: str) -> dict[str, Any]:
    """A POST's body as Tree.post's keyword arguments (``content`` included when the
    ``<content>`` element is there). POST: "The message body of the request must be a
    XML document, with a single <node> element as the document element ... This
    <node> document element can contain some or all of the non-required attributes;
    it may or may not contain a <content> child element." ``nodename`` and
    ``nodepath``, when given, must name the node of the Verb-URI (a POST cannot
    rename); an empty ``subscriptionPool`` removes the node's pool."""
    if text is None or not text.strip():
        raise BodyError("POST: the body must be an XML document with a <node> element")
    root = parse_xml(text)
    if root.tag != "node":
        raise BodyError(f"POST: the document element is <node>, not <{root.tag}>")
    found: dict[str, Any] = {}
    for name, value in root.attrib.items():
        if name not in NODE_ATTRIBUTES:
            raise BodyError(f"<node> has no attribute {name!r} (the schema's: "
                            f"{', '.join(NODE_ATTRIBUTES)})")
        if name == "nodename" and value != nodename:
            raise BodyError(f"nodename {value[:40]!r} is not the Verb-URI's {nodename[:40]!r}")
        elif name == "nodepath" and value != pathname and not (
                value in ("", "\\") and pathname in ("", "\\")):
            raise BodyError(f"nodepath {value[:40]!r} is not the Verb-URI {pathname[:40]!r}")
        elif name == "upl":
            found["upl"] = parse_int(value, "upl")
        elif name in ("guaranteed", "barricade"):
            found[name] = _boolean(value, name)
        elif name == "subscriptionPool":
            found["subscription_pool"] = value or None
    if (root.text or "").strip():
        raise BodyError("<node> holds elements only (content='eltOnly'), not text")
    for child in root:
        if child.tag != "content":
            raise BodyError(f"POST: <node> may hold one <content> element, not <{child.tag}>")
        if "content" in found:
            raise BodyError("<node> holds at most one <content> element")
        if len(child) or child.attrib:
            raise BodyError("<content> holds base64 text only")
        found["content"] = decode_base64(child.text, "content")
        if (child.tail or "").strip():
            raise BodyError("<node> holds elements only (content='eltOnly'), not text")
    return found


# -- bodies that go out ------------------------------------------------------------------
def _text(value: str) -> str:
    value = _NOT_XML.sub("\ufffd", value)
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _attr(value: str) -> str:
    value = _text(value)
    for char, entity in _ATTRIBUTE_ENTITIES.items():
        value = value.replace(char, entity)
    return f'"{value}"'


def _b64(data: bytes | None) -> str:
    return base64.b64encode(data or b"").decode("ascii")


def _flag(value: bool) -> str:
    return "1" if value else "0"


def node_xml(node: Any) -> str:
    """GET's reply: "a <node> element for the OES tree node ... will have at least all
    non-default valued attributes set, and will have a <content> element as a child --
    even if the content is empty" (every attribute of the pseudo-code is set; a node
    without a pool has no ``subscriptionPool``)."""
    pool = ("" if node.subscription_pool is None
            else f" subscriptionPool={_attr(node.subscription_pool)}")
    return (f"{_DECLARATION}<node nodename={_attr(node.nodename)} "
            f"nodepath={_attr(node.nodepath)} upl=\"{node.upl}\" "
            f"guaranteed=\"{_flag(node.guaranteed)}\" barricade=\"{_flag(node.barricade)}\""
            f"{pool}><content>{_b64(node.content)}</content></node>")


def list_xml(nodepath: str, nodename: str, children: list[str]) -> str:
    """LIST's reply: "as the document element, a <node> element for the node specified
    ... For each immediate child ..., a child <node> XML element ... has at least the
    required nodename attribute"."""
    inner = "".join(f"<node nodename={_attr(name)}/>" for name in children)
    return (f"{_DECLARATION}<node nodename={_attr(nodename)} nodepath={_attr(nodepath)}>"
            f"{inner}</node>")


def format_contract_id(contract_id: int) -> str:
    """The ``contractid`` (``dt:type='uuid'``) of the tree's contract ``contract_id``."""
    return str(uuid.UUID(int=contract_id))


def parse_contract_id(text: str | None) -> int | None:
    """The tree's contract number of a Contract-id (the UUID, or the number); None for
    what names no contract."""
    if text is None:
        return None
    text = text.strip()
    if text.isascii() and text.isdigit() and len(text) <= 19:
        return int(text)
    try:
        number = uuid.UUID(text).int
    except ValueError:
        return None
    return number if number < 2 ** 63 else None


def format_expiry(seconds: float) -> str:
    """A ``dateTime``: ISO 8601, UTC, milliseconds when there are any."""
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    millis = moment.microsecond // 1000
    return f"{text}.{millis:03d}Z" if millis else text + "Z"


def contract_xml(contract_id: int, expiry: float, contactinfo: str) -> str:
    """LEASECONTRACT's reply: "as its document element, a <contract> element. All
    required attributes will be set ..., but it will contain no child <subscription>
    elements"."""
    return (f"{_DECLARATION}<contract contractid=\"{format_contract_id(contract_id)}\" "
            f"expiry=\"{format_expiry(expiry)}\" contactinfo={_attr(contactinfo)}/>")


def notify_xml(contract_id: int, operation: str, last: bytes | None,
               present: bytes | None) -> str:
    """NOTIFY's body: "as its document element, a <notify> element. This document
    element has its contract-id attribute set"; "If the notification is being delivered
    as a result of a POST request, the XML document ... will have a <presentValue>
    child element. If ... a REMOVE request, ... a <lastValue> child element." A POST's
    notification also has a ``<lastValue>`` when the node had content before; the
    ``operation`` attribute (``create``, ``post``, ``touch``, ``remove``) is
    cosnotify's."""
    head = (f"{_DECLARATION}<notify contract-id=\"{format_contract_id(contract_id)}\" "
            f"operation={_attr(operation)}>")
    parts = [head]
    if last is not None or operation == "remove":
        parts.append(f"<lastValue>{_b64(last)}</lastValue>")
    if operation != "remove":
        parts.append(f"<presentValue>{_b64(present)}</presentValue>")
    parts.append("</notify>")
    return "".join(parts)
