"""The clients connected to a space: connecting, replacing, ending and reaping them.

Strategy: a mixin of :class:`~cosnotify.tuplespace.space.TupleSpace` over its
``_clients`` (an OrderedDict by Source, the least recently heard from first),
under the space's lock (clients.py says what a client is). Connecting with
a Source already connected replaces its client ("Only one Source of a given
name may be active in an Event Heap at one time"); a client ends when it is
replaced, closed, idle for CLIENT_IDLE seconds (``_reap``, at each operation
but the push path), or CLIENT_GRACE after its connection closed without a
call since (``_connection_lost``, from the servants' connection watch); an
ended client's waits end with OBJECT_NOT_EXIST and its ``on_end``
callbacks are told.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import OrderedDict
from typing import Any

from cosnotify.tuplespace.clients import Client, SourceState, check_info
from cosnotify.tuplespace.limits import CLIENT_GRACE, CLIENT_IDLE, MAX_CLIENTS
from cosnotify.tuplespace.records import ClientInfo, gone, limit_exceeded
from cosnotify.tuplespace.waits import Waiter

__all__ = ["ClientRegistry"]

log = logging.getLogger("cosnotify.tuplespace")


class ClientRegistry:
    """The space's clients (module docstring); TupleSpace gives the state below."""

    _lock: threading.Lock
    _changed: threading.Condition
    _clients: OrderedDict[str, Client]
    _waiters: list[Waiter]
    _clock: Any
    _closed: bool
    #: Times a client was told its connection closed (``Client.connection_lost``).
    connections_lost: int

    def _check_open(self, client: Client | None = None) -> None:
        raise NotImplementedError

    def _sweep(self, now: float | None = None, reap: bool = True) -> float:
        raise NotImplementedError

    def connect(self, source: str | ClientInfo, application: str = "", device: str = "",
                person: str = "", group: str = "") -> Client:
        """A client of this space with these names (clients.py): a client already
        connected with this Source is replaced, and the new one carries on its state."""
        info = source if isinstance(source, ClientInfo) else ClientInfo(
            source, application, device, person, group)
        check_info(info)
        with self._lock:
            self._check_open()
            now = self._sweep()
            old = self._clients.pop(info.source, None)
            if old is None and len(self._clients) >= MAX_CLIENTS:
                raise limit_exceeded(f"{MAX_CLIENTS} clients are connected to this tuple "
                                     "space", MAX_CLIENTS)
            client = Client(self, info, old._state if old is not None else SourceState(), now)
            self._clients[info.source] = client
            if old is not None:
                self._retire(old)
        return client

    def _disconnect(self, client: Client) -> None:
        with self._lock:
            if self._clients.get(client.source) is client:
                del self._clients[client.source]
            self._retire(client)

    def _retire(self, client: Client) -> None:
        """``client`` is no longer active: its waits end, its ``on_end`` callbacks are
        told (the lock is held)."""
        client.active = False
        for waiter in [w for w in self._waiters if w.client is client]:
            self._waiters.remove(waiter)
            waiter.end(None, gone(f"client {client.source!r}"))
        self._changed.notify_all()
        callbacks, client.on_end = client.on_end, []
        for callback in callbacks:
            try:
                callback()
            except Exception:
                log.exception("%r: a callback of %r failed as it ended", self, client)

    def _reap(self, now: float) -> None:
        """End the clients not heard from for CLIENT_IDLE seconds (clients.py); one with
        a wait in progress is being heard from. The lock is held."""
        clients = self._clients
        while clients:
            client = next(iter(clients.values()))
            if now - client.heard < CLIENT_IDLE:
                return
            if client.waiting:
                client.heard = now
                clients.move_to_end(client.source)
                continue
            del clients[client.source]
            self._retire(client)

    def _connection_lost(self, client: Client) -> None:
        with self._lock:
            if not client.active or self._closed:
                return
            mark = client.calls
            self.connections_lost += 1
            self._changed.notify_all()
        self._clock.call_later(CLIENT_GRACE, functools.partial(self._end_silent, client, mark))

    def wait_for_lost(self, count: int, timeout: float) -> bool:
        """Block until clients' connections were lost ``count`` times in all (for tests and
        tools); False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: self.connections_lost >= count, timeout)

    def _end_silent(self, client: Client, mark: int) -> None:
        """End ``client`` if it made no call since its connection closed (``mark``)."""
        self.end_if_silent(client, mark)

    def end_if_silent(self, client: Client, mark: int) -> bool:
        """End ``client`` now if it is active, made no call since ``mark`` (its count of
        calls then) and waits for nothing -- checked and done in one step; whether it
        was ended (a front end at its limit of Sources: protocols/eventheap/server.py)."""
        with self._lock:
            if self._closed or not client.active or client.calls != mark or client.waiting:
                return False
            if self._clients.get(client.source) is client:
                del self._clients[client.source]
            self._retire(client)
            return True

    @property
    def clients(self) -> list[str]:
        """The Sources connected now."""
        with self._lock:
            self._sweep()
            return sorted(self._clients)
