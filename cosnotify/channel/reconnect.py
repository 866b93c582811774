"""TAO's ReconnectionRegistry (NotifyExt), kept by the EventChannelFactory.

Strategy: a client registers a ``NotifyExt::ReconnectionCallback`` with the
factory and gets an id (1, 2, ...; never reused with a store, the ids come
from the store's counter). With a store, each callback is a record
(``rc/N``, kind ``reconnect_callback``: the id and the IOR) written when it
is registered and deleted when it is unregistered -- like TAO's
``Reconnection_Registry``, which saves the IORs with the topology. After a
restart the records are read back and :meth:`send_reconnect` calls
``reconnect(new factory reference)`` on each callback; the server layer does
that on the worker pool once the factory's reference exists
(server/app.py). As in TAO, a callback whose call fails is logged and
dropped from the registry, and unregistering an unknown id does nothing.
In-process callbacks (not CORBA references) work but are not stored.
"""

from __future__ import annotations

import itertools
import logging
import threading
from typing import Any

from cosnotify.channel import codec
from cosnotify.channel.topology import Topology, client_stub, store_failures
from cosnotify.store.interface import Record

__all__ = ["CALLBACK_ID", "ReconnectionRegistry"]

log = logging.getLogger("cosnotify.channel")

#: The interface a restored callback reference is typed as (asked nothing).
CALLBACK_ID = "IDL:NotifyExt/ReconnectionCallback:1.0"
_KIND = "reconnect_callback"


class ReconnectionRegistry:
    """The callbacks registered with one factory."""

    def __init__(self, topology: Topology | None) -> None:
        self._topology = topology
        self._lock = threading.Lock()
        self._callbacks: dict[int, Any] = {}
        self._ids = itertools.count(1)

    def register_callback(self, reconection: Any) -> int:
        """Register ``reconection`` (TAO's spelling of the IDL parameter)."""
        topology = self._topology
        text = codec.reference_text(reconection)
        with self._lock:
            callback_id = (topology.next_id("reconnect") + 1 if topology is not None
                           else next(self._ids))
            self._callbacks[callback_id] = reconection
        if topology is not None and text is not None:
            with store_failures():
                topology.store.put(Record(f"rc/{callback_id}", _KIND,
                                          codec.dumps({"id": callback_id, "ior": text})))
        return callback_id

    def unregister_callback(self, id: int) -> None:
        with self._lock:
            known = self._callbacks.pop(id, None) is not None
        if known:
            self._forget(id)

    def _forget(self, callback_id: int) -> None:
        if self._topology is not None:
            with store_failures():
                self._topology.store.delete(f"rc/{callback_id}")

    def callbacks(self) -> dict[int, Any]:
        with self._lock:
            return dict(self._callbacks)

    def restore(self) -> int:
        """Read the stored callbacks back; returns how many there are."""
        if self._topology is None:
            return 0
        with store_failures():
            records = self._topology.store.records()
        for record in records:
            if record.kind != _KIND:
                continue
            try:
                data = codec.loads(record.data)
                reference = client_stub(codec.reference_from_text(data["ior"]), CALLBACK_ID)
            except Exception:
                log.exception("store record %s could not be restored: skipped", record.path)
                continue
            with self._lock:
                self._callbacks[int(data["id"])] = reference
        return len(self._callbacks)

    def send_reconnect(self, new_connection: Any) -> int:
        """Call ``reconnect(new_connection)`` on every callback; those that fail are
        logged and dropped (TAO's ``send_reconnect``). Returns how many succeeded."""
        done = 0
        for callback_id, callback in sorted(self.callbacks().items()):
            try:
                callback.reconnect(new_connection)
                done += 1
            except Exception as exc:  # noqa: BLE001 - any failure drops it, as in TAO
                log.warning("reconnection callback %d failed (%s): dropped", callback_id, exc)
                with self._lock:
                    self._callbacks.pop(callback_id, None)
                try:
                    self._forget(callback_id)
                except Exception:
                    log.exception("reconnection callback %d: its record stays", callback_id)
        return done
