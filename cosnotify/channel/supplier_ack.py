"""Event Acknowledgment on the supplier's side: the proxy push consumer as the consumer.

Section 3.7.3.1, with the channel's proxy consumer as "Consumer": "Consumer
checks duplication of the received event using the SequenceNumber ...
Consumer invokes acknowledge operation". While a structured or sequence
proxy push consumer's DeliveryReliability is Acknowledgment, an event (a
batch: its first event) carrying a ``SequenceNumber`` header field below the
next number expected on the connection is a resend of one already accepted:
it is dropped. Each number is then acknowledged to the supplier, if the
supplier is a ``CosNotifyCommAck`` ``...PushSupplierAck``, off the
supplier's call (a worker of its client's lane).

The next number expected is kept in the store with the event itself (the
counter ``ack/<proxy path>/<connection>``, written in the same commit by
``Store.add_events``), so a supplier that pushes again after a crash --
not knowing whether its event was stored -- is not given a duplicate. The
numbers of a connection increase and wrap from 2^31-1 to 0 (section 3.7.5);
they are kept unwrapped (a count that only grows) so the wrap is followed
across a restart too. A new ``connect_*`` starts a new count (3.7.5.1).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

__all__ = ["SupplierAck", "sequence_number"]

log = logging.getLogger("cosnotify.channel")

_SUPPLIER_ACKS = {
    "push_structured_event": "IDL:omg.org/CosNotifyCommAck/StructuredPushSupplierAck:1.0",
    "push_structured_events": "IDL:omg.org/CosNotifyCommAck/SequencePushSupplierAck:1.0",
}
_UNKNOWN = object()
_MASK = 0x7FFFFFFF


def _unwrapped(number: int, expected: int) -> int:
    """``number`` (0 .. 2^31-1, wrapping: section 3.7.5) as a count that only grows:
    the value congruent to it modulo 2^31 nearest to ``expected``, the unwrapped
    next number. Below ``expected`` means seen before."""
    at = expected - (expected & _MASK) + number
    if at < expected - (1 << 30):
        at += 1 << 31
    elif at >= expected + (1 << 30):
        at -= 1 << 31
    return at


def sequence_number(structured: Any) -> int | None:
    """The SequenceNumber header field of a StructuredEvent, if it has a long one."""
    for prop in structured.header.variable_header:
        if prop.name == "SequenceNumber":
            try:
                value = prop.value.value()
            except Exception:  # noqa: BLE001 - not a value we can read: no number
                return None
            return value if isinstance(value, int) else None
    return None


class SupplierAck:
    """Mixed into the structured and sequence proxy push consumers (consumer_proxy.py)."""

    acknowledges = True
    _lock: Any
    _qos: dict[str, Any]
    _service: Any
    _channel: Any
    _client: Any
    _lane: Any

    def _init_supplier_ack(self) -> None:
        self._supplier_ack = False  # DeliveryReliability is Acknowledgment
        #: The next number expected, unwrapped (it only grows; compared modulo 2^31);
        #: None: none accepted yet on this connection.
        self._expected: int | None = None
        #: Connections so far (kept in the proxy's record): each ``connect_*`` is a new
        #: logical connection, whose numbers start again (section 3.7.5.1).
        self._ack_epoch = 0
        self._ack_lock = threading.Lock()
        self._ack_client: Any = _UNKNOWN
        #: (number, notifications taken) of a numbered batch refused part-way: its resend
        #: goes on from the refused one (None: none).
        self._partial: tuple[int, int] | None = None

    def _new_connection(self) -> None:
        """A supplier connected (again): its numbers start from scratch."""
        with self._ack_lock:
            self._ack_epoch += 1
            self._expected = None
            self._ack_client = _UNKNOWN
            self._partial = None

    def _update_supplier_ack(self) -> None:
        self._supplier_ack = self._qos.get("DeliveryReliability", 0) == 1

    def _counter(self) -> str | None:
        from cosnotify.channel.topology import Topology, persistent

        topology = self._service.topology
        if topology is None or not persistent(self):
            return None
        path = Topology.path(self)
        return None if path is None else f"ack/{path}/{self._ack_epoch}"

    def _numbered_push(self, structured: Any, inject: Any) -> None:
        """Inject ``structured`` (via ``inject(mark, skip, handled)``) unless its number
        was seen; ack it.

        The number counts as seen only once the inject returned: a push that
        failed (the store full, a bad header) is taken when the supplier sends
        it again. One numbered push at a time per proxy, so a number and the
        event it names are accepted together. A batch refused part-way (its
        first events taken, as on any channel) sets ``handled[0]`` to how many
        were: its resend skips those (``skip``), so they are not taken twice.
        """
        number = sequence_number(structured)
        if number is None:
            inject(None, 0, None)
            return
        with self._ack_lock:
            counter = self._counter()
            expected = self._expected
            if expected is None and counter is not None:
                # The stored next number; 0: none accepted yet (stored values are >= 1).
                expected = self._service.topology.store.peek_value(counter) or None
            at = number if expected is None else _unwrapped(number, expected)
            if expected is None or at >= expected:
                mark = (counter, at + 1) if counter is not None else None
                partial = self._partial
                skip = partial[1] if partial is not None and partial[0] == at else 0
                handled = [0]
                try:
                    event = inject(mark, skip, handled)
                except BaseException:
                    if handled[0]:
                        self._partial = (at, skip + handled[0])
                    raise
                self._partial = None
                if mark is not None and (event is None or event.mark is not None):
                    # Not stored with an event (no durable consumer took it): alone.
                    self._service.topology.store.raise_value(*mark)
                self._expected = at + 1
        self._service.call_soon(self._acknowledge_supplier, number, lane=self._lane)

    def _acknowledge_supplier(self, number: int) -> None:
        client = self._ack_client
        if client is _UNKNOWN:
            from cosnotify.channel.clients import narrowed

            client = None
            for method, repo_id in _SUPPLIER_ACKS.items():
                if hasattr(self, method):
                    client = narrowed(self._client, repo_id, "acknowledge")
            self._ack_client = client
        if client is not None:
            client.acknowledge([number])
