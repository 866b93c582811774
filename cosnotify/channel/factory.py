"""The EventChannelFactory (section 3.4.18): the root of the in-process service.

Strategy: the factory validates initial QoS and admin properties with the
same negotiation code as ``set_qos``/``set_admin`` (so ``create_channel``
raises UnsupportedQoS / UnsupportedAdmin with the same error lists), numbers
channels from 0, and owns the :class:`Service` (clock, worker pool, limits)
every channel under it shares. ``close()`` is not an IDL operation: it
destroys every channel and stops the workers.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, Self

from omniORB import CORBA

import CosNotification
import CosNotifyChannelAdmin as CA

from cosnotify.channel.channel import EventChannel
from cosnotify.channel.clock import Clock
from cosnotify.channel.service import Service, ServiceConfig
from cosnotify.qos.negotiation import Capabilities, Target, check_admin, check_qos
from cosnotify.qos.properties import Level

__all__ = ["EventChannelFactory"]


class EventChannelFactory:
    """``CosNotifyChannelAdmin::EventChannelFactory``, in process."""

    def __init__(self, config: ServiceConfig | None = None, clock: Clock | None = None,
                 capabilities: Capabilities | None = None) -> None:
        self._service = Service(config, clock, capabilities)
        self._lock = threading.Lock()
        self._channels: dict[int, EventChannel] = {}
        self._ids = itertools.count(0)
        self._filter_factory: Any = None
        self._closed = False

    @property
    def service(self) -> Service:
        return self._service

    def create_channel(self, initial_qos: list[Any],
                       initial_admin: list[Any]) -> tuple[EventChannel, int]:
        qos, qos_errors = check_qos(initial_qos, Target(Level.CHANNEL), {},
                                    self._service.capabilities)
        if qos_errors:
            raise CosNotification.UnsupportedQoS(qos_errors)
        admin, admin_errors = check_admin(initial_admin)
        if admin_errors:
            raise CosNotification.UnsupportedAdmin(admin_errors)
        with self._lock:
            if self._closed:
                raise CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO, "the factory was closed")
            channel_id = next(self._ids)
            channel = EventChannel(self, channel_id, qos, set(qos), admin)
            self._channels[channel_id] = channel
        return channel, channel_id

    def get_all_channels(self) -> list[int]:
        with self._lock:
            return sorted(self._channels)

    def get_event_channel(self, id: int) -> EventChannel:
        with self._lock:
            channel = self._channels.get(id)
        if channel is None:
            raise CA.ChannelNotFound()
        return channel

    def _channel_destroyed(self, channel: EventChannel) -> None:
        with self._lock:
            self._channels.pop(channel._id, None)

    def _get_filter_factory(self) -> Any:
        with self._lock:
            if self._filter_factory is None:
                from cosnotify.filter.factory import FilterFactory

                self._filter_factory = FilterFactory()
            return self._filter_factory

    def close(self, wait: bool = True) -> None:
        """Destroy every channel and stop the service's threads; no channel is made after."""
        with self._lock:
            self._closed = True
            channels = list(self._channels.values())
        for channel in channels:
            channel.destroy()
        self._service.close(wait=wait)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
