"""Delivering NOTIFY to a contract's contact: ``tcp:<host>:<port>``.

Strategy: "During notification delivery, the client and server roles are
swapped in the sense that the machine that runs the OES service initiates
communication with the machines that running application software placing
subscriptions" (Wire Protocol); "The NOTIFY verb is sent from the OES server
to clients when a subscription notification is to be delivered ... the
interchange ... follows the same request-response sequence" (NOTIFY Verb).

A wire contract's consumer is a :class:`Notifier`, an in-process
``StructuredPushConsumer`` that the tree's relay (cosnotify/oes/relay.py)
pushes to from a channel delivery worker, as it pushes to a CORBA consumer.
Its push hands the exchange to the front end's asyncio loop (asyncio
streams: connect, write the NOTIFY, read the reply, each bounded by
``timeout``) and waits for the outcome at most ``timeout`` more, so the
loop never blocks and a worker is held no longer than a CORBA consumer's
call timeout would hold it; once slow or failing, the channel's dispatcher
keeps such a consumer in its failing or slow lane, and each contract has its
own connection, so a dead contact stalls neither the other contracts nor the
front end's clients (but a Notifier has no lane of its own before that:
docs/protocols.md, "OES"). The connection stays open for the contract's next
notifications ("any number of request-reply exchanges may occur"), while the
front end's kept connections number at most ``kept``, and is opened again
when the contact has closed it. A Notifier that ended (its contract ended or
moved) sends nothing more: an exchange that waited or ran gives up, or passes
the notification to the Notifier a renewal put in its place.

A failure (no connection, a timeout, a reply that is not 200, a malformed
reply) raises ``CORBA.TRANSIENT`` to the relay, which keeps the seed's rules:
"a subscription contract immediately and implicitly expires upon failure to
deliver a notification" unless leased keep-alive (then the notification is
discarded, or retried for a ``cache`` subscription).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import threading
from collections.abc import Callable
from typing import Any, Final

import attrs
from omniORB import CORBA

from cosnotify.protocols.listener import Loop
from cosnotify.protocols.oes.bodies import format_contract_id, notify_xml
from cosnotify.protocols.oes.codec import MAX_BODY, ProtocolError, Reader, Reply, encode_request

__all__ = ["Contact", "Notifier", "Tally", "parse_contact"]

log = logging.getLogger("cosnotify.protocols.oes")

#: The header every NOTIFY carries besides Content-Type and Content-Length (cosnotify's).
CONTRACT_ID: Final = "Contract-id"
#: What a line cannot carry (the codec's Reader refuses it): C0 controls but TAB, and DEL.
_NOT_IN_LINE: Final = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


@attrs.frozen
class Contact:
    """A contract's contact information: "a string of the form
    'tcp:<host-ip-address>:<port>'" (CONTRACT table)."""

    host: str
    port: int

    @property
    def text(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"tcp:{host}:{self.port}"


def parse_contact(text: str | None) -> Contact:
    """LEASECONTRACT's Verb-URI: "a string of the form 'tcp:<ip-address>:<port>' where
    <ip-address> and <port> are the numeric IP address and port number of the client's
    incoming notification receiving process" (an IPv6 address in brackets);
    ValueError otherwise."""
    if not text or not text.startswith("tcp:"):
        raise ValueError("the contact is tcp:<ip-address>:<port>")
    host, colon, port = text[4:].rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError("the contact's IPv6 address is in brackets: tcp:[<address>]:<port>")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"the contact's address is a numeric IP address, not "
                         f"{host[:40]!r}") from None
    if not colon or not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"the contact's port is 1 .. 65535, not {port[:10]!r}")
    return Contact(str(address), int(port))


class Tally:
    """NOTIFY deliveries of a front end: sent and failed (any thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.sent = 0
        self.failed = 0
        #: Connections to contacts open now (the loop's thread changes it).
        self.open = 0

    def add(self, delivered: bool) -> None:
        with self._lock:
            if delivered:
                self.sent += 1
            else:
                self.failed += 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {"notify_sent": self.sent, "notify_failed": self.failed,
                    "contact_connections": self.open}


def _field(event: Any, name: str) -> Any:
    for prop in event.filterable_data:
        if prop.name == name:
            try:
                return prop.value.value()
            except (AttributeError, TypeError):  # not an Any: an in-process supplier's
                return None
    return None


def _content(event: Any, name: str) -> bytes | None:
    found = _field(event, name)
    return found if isinstance(found, bytes) else None


class Notifier:
    """A wire contract's consumer: NOTIFY to its contact (module docstring)."""

    def __init__(self, contact: Contact, loop: Loop, timeout: float,
                 on_end: Callable[[Notifier], None], tally: Tally, kept: int = 256) -> None:
        self.contact = contact
        #: Connections to contacts (all of the front end's) kept open between NOTIFYs.
        self.kept = kept
        #: The tree's contract number (set once the lease is made).
        self.contract_id = 0
        self._loop = loop
        self._timeout = timeout
        self._on_end = on_end
        self._tally = tally
        self._lock: asyncio.Lock | None = None   # the loop's: one exchange at a time
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._ended = threading.Event()
        #: The Notifier a renewal naming another contact put in this one's place.
        self._successor: Notifier | None = None

    @property
    def lane_key(self) -> tuple[str, str]:
        """The dispatcher's lane for this contact's host (Service.lane_for): contacts
        that hang hold their host's lane, never every worker of the channel."""
        return ("oes-contact", self.contact.host)

    # -- CosNotifyComm::StructuredPushConsumer (a channel worker calls them) -------------
    def push_structured_event(self, event: Any) -> None:
        """NOTIFY this event's node to the contact; TRANSIENT when it cannot be delivered."""
        operation = event.header.fixed_header.event_type.type_name
        node = _field(event, "node")
        if not isinstance(node, str):  # no NOTIFY can say it: the contact did not fail
            log.info("contract %d: an (OES, %s) event without a node is not notified",
                     self.contract_id, operation)
            return
        # A structured supplier's (OES, operation) event may carry anything in the
        # content fields: what is not sequence<octet> is not content, and is left out
        # rather than failing the contract.
        body = notify_xml(self.contract_id, operation, _content(event, "lastValue"),
                          _content(event, "presentValue"))
        # A name may hold a C0 control (a CORBA client's, the Tree API's), which no line
        # carries: shown as U+FFFD, as in LIST and GET, rather than failing the contract.
        data = encode_request("NOTIFY", _NOT_IN_LINE.sub("\ufffd", node),
                              ((CONTRACT_ID, format_contract_id(self.contract_id)),
                               ("Content-Type", "text/xml; charset=utf-7")), body)
        if self._ended.is_set():
            if self._successor is not None:  # pushed as a renewal moved the contract
                self._successor.push_structured_event(event)
                return
            raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO, "the contract ended")
        if _running_loop() is self._loop.loop:  # never wait for the loop on the loop
            raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO, "NOTIFY from the loop's own thread")
        exchange = self._exchange(data)
        try:
            future = self._loop.submit(exchange)
        except RuntimeError as exc:  # the loop is closed: the server is stopping
            exchange.close()
            raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO, "the front end is closed") from exc
        try:
            future.result(self._timeout + 1.0)
        except Exception as exc:
            future.cancel()
            if isinstance(exc, _Ended) and self._successor is not None:
                # a renewal moved the contract to another contact while this waited or
                # ran: the notification goes there (it may have reached this one too)
                self._successor.push_structured_event(event)
                return
            self._tally.add(False)
            log.info("NOTIFY %s to %s failed: %s", node, self.contact.text, exc)
            raise CORBA.TRANSIENT(0, CORBA.COMPLETED_MAYBE,
                                  f"NOTIFY to {self.contact.text} failed: {exc!r}") from exc
        self._tally.add(True)

    def disconnect_structured_push_consumer(self) -> None:
        """The contract ended (lease over, cancelled, delivery failed): its connection
        closes and the front end forgets it."""
        self.close()

    def supersede(self, successor: Notifier) -> None:
        """A renewal named another contact: ``successor`` delivers from now on, the
        notifications in flight here included; this one closes."""
        self._successor = successor
        self.close()

    @property
    def ended(self) -> bool:
        """Closed: its contract ended (or the front end went)."""
        return self._ended.is_set()

    def close(self) -> None:
        """Forget the contract and close its connection (any thread)."""
        if self._ended.is_set():
            return
        self._ended.set()
        self._on_end(self)
        try:
            self._loop.loop.call_soon_threadsafe(self._drop)
        except RuntimeError:
            pass  # the loop is closed: its transports went with it

    # -- the loop's side ------------------------------------------------------------------
    async def _exchange(self, data: bytes) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            await asyncio.wait_for(self._deliver(data), self._timeout)

    async def _deliver(self, data: bytes) -> None:
        for attempt in (1, 2):
            # Ended (cancelled, renewed to another contact, the front end closed) while
            # this exchange waited or ran: nothing more goes to the contact, and no
            # connection is opened that nothing would close.
            self._check_live()
            kept = self._writer is not None and not self._writer.is_closing()
            if not kept:
                self._drop()
                self._reader, self._writer = await asyncio.open_connection(
                    self.contact.host, self.contact.port, limit=MAX_BODY + 65536)
                self._tally.open += 1
                self._check_live()
            assert self._reader is not None and self._writer is not None
            try:
                self._writer.write(data)
                await self._writer.drain()
                reply = await self._read_reply(self._reader)
            except (ConnectionError, _Closed):
                self._drop()
                if kept and attempt == 1:
                    continue  # the contact closed the connection kept open: open it again
                raise
            except BaseException:
                self._drop()
                raise
            if reply.status != 200:
                self._drop()
                raise _Refused(f"the contact answered {reply.status} {reply.reason[:40]}")
            if self._tally.open > self.kept:  # a descriptor each: the next one connects
                self._drop()
            return

    def _check_live(self) -> None:
        if self._ended.is_set():
            self._drop()
            raise _Ended("the contract ended")

    @staticmethod
    async def _read_reply(stream: asyncio.StreamReader) -> Reply:
        reader = Reader("reply")
        while True:
            data = await stream.read(65536)
            if not data:
                raise _Closed("the contact closed the connection")
            reader.feed(data)
            try:
                found = reader.next_message()
            except ProtocolError as exc:
                raise _Refused(f"a malformed reply: {exc.reason}") from None
            if found is not None:
                assert isinstance(found, Reply)
                return found

    def _drop(self) -> None:
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            self._tally.open -= 1
            writer.transport.abort()

    def __repr__(self) -> str:
        return f"<Notifier of contract {self.contract_id} to {self.contact.text}>"


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class _Closed(ConnectionError):
    """The contact closed the connection before its reply."""


class _Ended(Exception):
    """The contract ended while its NOTIFY waited or ran."""


class _Refused(Exception):
    """The contact's reply was not 200, or not a reply."""
