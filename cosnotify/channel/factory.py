"""The EventChannelFactory (section 3.4.18): the root of the in-process service.

Strategy: the factory validates initial QoS and admin properties with the
same negotiation code as ``set_qos``/``set_admin`` (so ``create_channel``
raises UnsupportedQoS / UnsupportedAdmin with the same error lists), numbers
channels from 0, and owns the :class:`Service` (clock, worker pool, limits)
every channel under it shares. ``close()`` is not an IDL operation: it
destroys every channel and stops the workers.

TAO's extensions (docs/server.md, "TAO's extensions"): ``create_named_channel``
(NotifyMonitoringExt; names unique per factory, channel/names.py), the
ReconnectionRegistry (NotifyExt; channel/reconnect.py), ``destroy()`` -- the
factory shuts down as TAO's does: ``close()``, or the server's stop when a
server serves it (``on_destroy``) -- and ``save_topology()``, a no-op: with a
store every change is already written when it is made, and without one there
is nothing to save.
"""

from __future__ import annotations

import itertools
import logging
import threading
from typing import Any, Self

import attrs
from omniORB import CORBA

import CosNotification
import CosNotifyChannelAdmin as CA

from cosnotify.channel.admin_props import check_retention
from cosnotify.channel.channel import EventChannel
from cosnotify.channel.clock import Clock
from cosnotify.channel.names import NameTable
from cosnotify.channel.reconnect import ReconnectionRegistry
from cosnotify.channel.service import Service, ServiceConfig
from cosnotify.channel.topology import Topology, persistent
from cosnotify.qos.negotiation import Capabilities, Target, check_admin, check_qos
from cosnotify.qos.properties import Level
from cosnotify.store.interface import Store

log = logging.getLogger("cosnotify.channel")

__all__ = ["EventChannelFactory"]


class EventChannelFactory:
    """``CosNotifyChannelAdmin::EventChannelFactory``, in process."""

    #: The channels it makes (a typed factory makes typed ones: cosnotify/typed).
    channel_class: Any = EventChannel

    def __init__(self, config: ServiceConfig | None = None, clock: Clock | None = None,
                 capabilities: Capabilities | None = None, *, store: Store | None = None,
                 restore: bool = True) -> None:
        if store is not None:
            capabilities = attrs.evolve(capabilities or Capabilities(), persistent=True,
                                        persistent_events=True)
        self._service = Service(config, clock, capabilities)
        self._lock = threading.Lock()
        self._channels: dict[int, EventChannel] = {}
        self._ids = itertools.count(0)
        self._filter_factory: Any = None
        self._closed = False
        self._names = NameTable()
        #: Called by ``destroy()`` instead of ``close()`` (the server: it stops).
        self.on_destroy: Any = None
        if store is not None:
            self._service.topology = Topology(store)
        self._registry = ReconnectionRegistry(self._service.topology)
        if store is not None and restore:
            try:
                self.restore()
            except BaseException:  # a store refused (restore.py): stop what started,
                self._service.topology.closing = True  # touching nothing in the store
                self.close(wait=False)
                raise

    def restore(self, remote_filter: Any = None) -> None:
        """Bring back the persistent objects of the store (docs/persistence.md).

        Done by the constructor unless it was given ``restore=False``: the server
        does it itself once it can guard the filters clients implement
        (``remote_filter(reference, role)``, channel/topology.py).
        """
        topology = self._service.topology
        if topology is None:
            raise CORBA.BAD_INV_ORDER(0, CORBA.COMPLETED_NO, "this factory has no store")
        topology.remote_filter = remote_filter
        topology.restore(self)
        self._registry.restore()

    @property
    def service(self) -> Service:
        return self._service

    def create_channel(self, initial_qos: list[Any],
                       initial_admin: list[Any]) -> tuple[EventChannel, int]:
        return self._create_channel(initial_qos, initial_admin, None)

    def create_named_channel(self, initial_qos: list[Any], initial_admin: list[Any],
                             name: str) -> tuple[EventChannel, int]:
        """NotifyMonitoringExt: ``create_channel`` with a name unique in this factory."""
        return self._create_channel(initial_qos, initial_admin, name)

    def _create_channel(self, initial_qos: list[Any], initial_admin: list[Any],
                        name: str | None, cls: Any = None) -> tuple[EventChannel, int]:
        qos, qos_errors = check_qos(initial_qos, Target(Level.CHANNEL), {},
                                    self._service.capabilities)
        if qos_errors:
            raise CosNotification.UnsupportedQoS(qos_errors)
        admin, admin_errors = check_admin(initial_admin)
        if admin_errors:
            raise CosNotification.UnsupportedAdmin(admin_errors)
        check_retention(admin, self._service)
        topology = self._service.topology
        with self._lock:
            if self._closed:
                raise CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO, "the factory was closed")
            with self._names.claimed("channel", name):
                channel_id = topology.next_id("channels") if topology else next(self._ids)
                channel = (cls or self.channel_class)(self, channel_id, qos, set(qos), admin)
            channel._name = name
            self._channels[channel_id] = channel
        try:
            channel._persist()
        except CORBA.SystemException:  # the store refused its record: no channel was made
            with self._lock:           # (review 101: it stayed, gone at the next start)
                self._channels.pop(channel_id, None)
            try:
                channel.destroy()
            except Exception:
                log.exception("could not take back a channel its store refused")
            raise
        return channel, channel_id

    def _adopt_channel(self, channel: EventChannel) -> None:
        """A channel restored from the store (topology.py)."""
        with self._lock:
            self._channels[channel._id] = channel
        self._names.adopt("channel", channel._name)

    def get_all_channels(self) -> list[int]:
        with self._lock:
            return sorted(self._channels)

    def get_event_channel(self, id: int) -> EventChannel:
        channel = self._find_channel(id)
        if channel is None:
            raise CA.ChannelNotFound()
        return channel

    def get_history(self, id: int) -> Any:
        """``CosNotifyHistory::HistoryFactory``: channel ``id``'s history (docs/history.md);
        ChannelNotFound, or NotRetained when it retains no events."""
        from cosnotify.history.corba import History

        channel = self._find_channel(id)  # typed channels too
        if channel is None:
            raise CA.ChannelNotFound()
        return History.of(channel)

    def _find_channel(self, id: int) -> EventChannel | None:
        """Channel ``id`` of any kind (a typed factory's typed ones too), or None."""
        with self._lock:
            return self._channels.get(id)

    def _channel_destroyed(self, channel: EventChannel) -> None:
        with self._lock:
            self._channels.pop(channel._id, None)
        self._names.release("channel", channel._name)

    def _get_filter_factory(self) -> Any:
        with self._lock:
            if self._filter_factory is None:
                from cosnotify.filter.factory import FilterFactory

                self._filter_factory = FilterFactory(persistence=self._service.topology)
            return self._filter_factory

    # -- TAO's NotifyExt::EventChannelFactory ------------------------------------------------------
    def register_callback(self, reconection: Any) -> int:
        return self._registry.register_callback(reconection)

    def unregister_callback(self, id: int) -> None:
        self._registry.unregister_callback(id)

    def is_alive(self) -> bool:
        return True

    @property
    def reconnection_registry(self) -> ReconnectionRegistry:
        return self._registry

    def send_reconnect(self, new_connection: Any) -> int:
        """Tell every registered callback to reconnect to ``new_connection`` (after a
        restart); failing callbacks are dropped. Returns how many were told."""
        return self._registry.send_reconnect(new_connection)

    def save_topology(self) -> None:
        """TAO's diagnostic flush: every change is already in the store when made."""

    def destroy(self) -> None:
        """Shut the factory down, as TAO's does: the server stops, or ``close()``."""
        hook = self.on_destroy
        if hook is not None:
            hook()
        else:
            self.close()

    def close(self, wait: bool = True) -> None:
        """Destroy every channel and stop the service's threads; no channel is made after.

        With a store, persistent objects are not destroyed but left as they are,
        records and clients' connections included, for the next start; only
        the others are destroyed (their clients told).
        """
        with self._lock:
            self._closed = True
            channels = list(self._channels.values())
        topology = self._service.topology
        refused = topology is not None and topology.closing  # a restore refused: no writes
        for channel in channels:
            if topology is not None and persistent(channel):
                channel._shutdown()
            else:
                channel.destroy()
        if topology is not None:
            topology.closing = True
        self._service.close(wait=wait)
        for channel in channels:  # no supplier runs now: what a channel accepted is in
            retention = channel._retention  # its history (persistent ones come back)
            if retention is not None and not refused and persistent(channel):
                retention.stop(write=True)
        for channel in channels:  # the workers are done: their last releases are in
            if channel._event_log is not None:
                channel._event_log.flush_releases()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
