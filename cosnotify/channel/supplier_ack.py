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
counter ``ack/<proxy path>``, written in the same commit by
``Store.add_events``), so a supplier that pushes again after a crash --
not knowing whether its event was stored -- is not given a duplicate. The
numbers of a connection are taken to increase (section 3.7.5); their wrap
from 2^31-1 to 0 is not followed across a restart.
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


def _older(number: int, expected: int) -> bool:
    """Is ``number`` before ``expected`` on a connection whose numbers wrap at 2^31
    (section 3.7.5)? Within half the range behind counts as before."""
    return 0 < ((expected - number) & _MASK) < (1 << 30)


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
        self._expected: int | None = None  # None: no number accepted yet
        self._ack_lock = threading.Lock()
        self._ack_client: Any = _UNKNOWN

    def _update_supplier_ack(self) -> None:
        self._supplier_ack = self._qos.get("DeliveryReliability", 0) == 1

    def _counter(self) -> str | None:
        from cosnotify.channel.topology import Topology, persistent

        topology = self._service.topology
        if topology is None or not persistent(self):
            return None
        path = Topology.path(self)
        return None if path is None else f"ack/{path}"

    def _numbered_push(self, structured: Any, inject: Any) -> None:
        """Inject ``structured`` (via ``inject(mark)``) unless its number was seen; ack it.

        The number counts as seen only once the inject returned: a push that
        failed (the store full, a bad header) is taken when the supplier sends
        it again. One numbered push at a time per proxy, so a number and the
        event it names are accepted together.
        """
        number = sequence_number(structured)
        if number is None:
            inject(None)
            return
        counter = self._counter()
        with self._ack_lock:
            expected = self._expected
            if expected is None and counter is not None:
                # The stored next number; 0: none accepted yet (stored values are >= 1).
                expected = self._service.topology.store.peek_value(counter) or None
            if expected is None or not _older(number, expected):
                mark = (counter, number + 1) if counter is not None else None
                event = inject(mark)
                if mark is not None and (event is None or event.mark is not None):
                    # Not stored with an event (no durable consumer took it): alone.
                    self._service.topology.store.raise_value(*mark)
                self._expected = (number + 1) & _MASK
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
