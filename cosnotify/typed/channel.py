"""The typed channel, its admins and its factory (``CosTypedNotifyChannelAdmin``), in process.

Strategy: a typed channel is a notification channel (section 2.7: it
"inherits from both the CosNotifyChannelAdmin::EventChannel interface and
the CosTypedEventChannelAdmin::TypedEventChannel interface"), so
:class:`TypedEventChannel` is an :class:`~cosnotify.channel.channel.EventChannel`
whose admins are typed: :class:`TypedConsumerAdmin` and
:class:`TypedSupplierAdmin` are the untyped admins plus the typed ``obtain_*``
operations. A key names an interface the factory's
:class:`~cosnotify.typed.interfaces.InterfaceRepository` has loaded
(``TypedEventChannelFactory(idl=[...], include=[...])``); an unknown one
raises what the IDL declares: ``InterfaceNotSupported`` for
``supported_interface``, ``NoSuchImplementation`` for ``uses_interface``.
A key for a pull proxy (a pull supplier's ``supported_interface``, a pull
consumer's ``uses_interface``) must have its ``Pull<I>``.

Event Service style typed admins and proxies (``for_consumers``,
``obtain_typed_push_consumer``...) are the same objects without ids, as for
the untyped channel (section 2.1.2).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from os import PathLike
from typing import Any, ClassVar

import CosNotifyChannelAdmin as CA
import CosTypedEventChannelAdmin as TECA

from cosnotify.channel import codec
from cosnotify.channel.admin import ConsumerAdmin, SupplierAdmin
from cosnotify.channel.channel import EventChannel
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.topology import store_failures
from cosnotify.store.interface import Record
from cosnotify.typed.event_service import (
    EventServiceTypedProxyPullConsumer,
    EventServiceTypedProxyPullSupplier,
    EventServiceTypedProxyPushConsumer,
    EventServiceTypedProxyPushSupplier,
)
from cosnotify.typed.interfaces import InterfaceRepository, Source, TypedInterface
from cosnotify.typed.proxies import (
    TypedProxyPullConsumer,
    TypedProxyPullSupplier,
    TypedProxyPushConsumer,
    TypedProxyPushSupplier,
)

__all__ = ["EventServiceTypedConsumerAdmin", "EventServiceTypedSupplierAdmin",
           "TypedConsumerAdmin", "TypedEventChannel", "TypedEventChannelFactory",
           "TypedFactory", "TypedSupplierAdmin"]


#: The kind of the store records that keep loaded IDL (``idl/<digest of its path>``).
IDL_KIND = "idl"


def _idl_path(path: str) -> str:
    return "idl/" + hashlib.sha256(path.encode()).hexdigest()[:24]


def stored_sources(store: Any) -> list[Source]:
    """The IDL files a store keeps, in the order they were first kept.

    Read at start only (the server, a typed factory's constructor): a StoreError
    goes to the caller as it is, like the restore's, so ``serve`` says it in one
    line (not an ERROR log and a NO_RESOURCES)."""
    records = store.records()
    return [Source.from_record(codec.loads(r.data)) for r in records if r.kind == IDL_KIND]


def _interface(admin: Any, key: str, missing: Any, pull: bool = False) -> TypedInterface:
    repository: InterfaceRepository = admin._channel._factory.interfaces
    try:
        interface = repository.lookup(str(key))
    except KeyError:
        raise missing() from None
    if pull and interface.pull_repo_id is None:
        raise missing()  # no Pull<I> was loaded: nothing to give a pull consumer
    return interface


class TypedSupplierAdmin(SupplierAdmin):
    """``CosTypedNotifyChannelAdmin::TypedSupplierAdmin``."""

    def obtain_typed_notification_push_consumer(self, supported_interface: str
                                                 ) -> tuple[TypedProxyPushConsumer, int]:
        interface = _interface(self, supported_interface, TECA.InterfaceNotSupported)
        proxy, proxy_id = self._create(
            lambda admin, pid: TypedProxyPushConsumer(admin, pid, interface), True)
        return proxy, proxy_id  # type: ignore[return-value]

    def obtain_typed_push_consumer(self, supported_interface: str) -> TypedProxyPushConsumer:
        """Event Service style (event_service.py): no id, the Event Service's connect."""
        interface = _interface(self, supported_interface, TECA.InterfaceNotSupported)
        return self._create(  # type: ignore[no-any-return]
            lambda admin, pid: EventServiceTypedProxyPushConsumer(admin, pid, interface), False)[0]

    def obtain_typed_notification_pull_consumer(self, uses_interface: str
                                                ) -> tuple[TypedProxyPullConsumer, int]:
        interface = _interface(self, uses_interface, TECA.NoSuchImplementation, pull=True)
        proxy, proxy_id = self._create(
            lambda admin, pid: TypedProxyPullConsumer(admin, pid, interface), True)
        return proxy, proxy_id  # type: ignore[return-value]

    def obtain_typed_pull_consumer(self, uses_interface: str) -> TypedProxyPullConsumer:
        """Event Service style (event_service.py): no id, the Event Service's connect."""
        interface = _interface(self, uses_interface, TECA.NoSuchImplementation, pull=True)
        return self._create(  # type: ignore[no-any-return]
            lambda admin, pid: EventServiceTypedProxyPullConsumer(admin, pid, interface), False)[0]


class TypedConsumerAdmin(ConsumerAdmin):
    """``CosTypedNotifyChannelAdmin::TypedConsumerAdmin``."""

    def obtain_typed_notification_pull_supplier(self, supported_interface: str
                                                ) -> tuple[TypedProxyPullSupplier, int]:
        interface = _interface(self, supported_interface, TECA.InterfaceNotSupported,
                               pull=True)
        proxy, proxy_id = self._create(
            lambda admin, pid: TypedProxyPullSupplier(admin, pid, interface), True)
        return proxy, proxy_id  # type: ignore[return-value]

    def obtain_typed_pull_supplier(self, supported_interface: str) -> TypedProxyPullSupplier:
        """Event Service style (event_service.py): no id, the Event Service's connect."""
        interface = _interface(self, supported_interface, TECA.InterfaceNotSupported,
                               pull=True)
        return self._create(  # type: ignore[no-any-return]
            lambda admin, pid: EventServiceTypedProxyPullSupplier(admin, pid, interface), False)[0]

    def obtain_typed_notification_push_supplier(self, uses_interface: str
                                                ) -> tuple[TypedProxyPushSupplier, int]:
        interface = _interface(self, uses_interface, TECA.NoSuchImplementation)
        proxy, proxy_id = self._create(
            lambda admin, pid: TypedProxyPushSupplier(admin, pid, interface), True)
        return proxy, proxy_id  # type: ignore[return-value]

    def obtain_typed_push_supplier(self, uses_interface: str) -> TypedProxyPushSupplier:
        """Event Service style (event_service.py): no id, the Event Service's connect."""
        interface = _interface(self, uses_interface, TECA.NoSuchImplementation)
        return self._create(  # type: ignore[no-any-return]
            lambda admin, pid: EventServiceTypedProxyPushSupplier(admin, pid, interface), False)[0]


class EventServiceTypedSupplierAdmin(TypedSupplierAdmin):
    """``CosTypedEventChannelAdmin::TypedSupplierAdmin`` made by ``for_suppliers`` (no id;
    section 2.7: "OMG Event Service style typed Admin objects created by invoking the
    inherited operations" have no unique identifiers, so no ``MyID`` either)."""


class EventServiceTypedConsumerAdmin(TypedConsumerAdmin):
    """``CosTypedEventChannelAdmin::TypedConsumerAdmin`` made by ``for_consumers`` (no id)."""


class TypedEventChannel(EventChannel):
    """``CosTypedNotifyChannelAdmin::TypedEventChannel`` (and the untyped one)."""

    consumer_admin_class = TypedConsumerAdmin
    supplier_admin_class = TypedSupplierAdmin
    #: Event Service style typed admins (``for_consumers``...): typed admins without ids,
    #: served as CosTypedEventChannelAdmin's (server/servants.py).
    es_consumer_admin_class = EventServiceTypedConsumerAdmin
    es_supplier_admin_class = EventServiceTypedSupplierAdmin
    typed = True
    proxy_classes: ClassVar[dict[str, Any]] = {cls.__name__: cls for cls in (
        TypedProxyPushConsumer, TypedProxyPullSupplier, TypedProxyPullConsumer,
        TypedProxyPushSupplier)}

    def _get_MyFactory(self) -> Any:
        """The typed factory (the IDL's ``TypedEventChannelFactory MyFactory``)."""
        return getattr(self._factory, "typed", self._factory)

    def new_for_typed_notification_consumers(self, op: Any) -> tuple[TypedConsumerAdmin, int]:
        return self.new_for_consumers(op)  # type: ignore[return-value]

    def new_for_typed_notification_suppliers(self, op: Any) -> tuple[TypedSupplierAdmin, int]:
        return self.new_for_suppliers(op)  # type: ignore[return-value]



class TypedEventChannelFactory(EventChannelFactory):
    """``CosTypedNotifyChannelAdmin::TypedEventChannelFactory``, in process.

    ``idl`` and ``include`` are loaded at once (``IDLError`` if they do not compile
    or break the typed rules); :meth:`load_idl` adds more later. It is also an
    untyped factory: ``create_channel`` makes untyped channels, in the same id
    space; ``get_all_channels``/``get_event_channel`` see the untyped ones only (in
    the IDL a TypedEventChannel is no EventChannel, so an untyped client could not
    use one). :attr:`typed` is the object the server serves as the typed factory.

    With a ``store``, the IDL is part of the topology: each file loaded is kept in
    the store (its text, and the user files it includes), and a factory opened on
    that store later loads what the store kept before it restores the typed channels
    -- a file given again in ``idl`` is read from the disk instead, and kept again.
    """

    typed_channel_class = TypedEventChannel

    def __init__(self, idl: Iterable[str | PathLike[str]] = (),
                 include: Iterable[str | PathLike[str]] = (), **options: Any) -> None:
        idl = list(idl)
        store = options.get("store")
        self.interfaces = InterfaceRepository()
        # Before the service starts (an error leaves nothing running), and before the
        # store's typed channels are restored (their proxies' keys must be known).
        given = {os.path.abspath(path) for path in idl}
        for source in stored_sources(store) if store is not None else ():
            if source.path not in given:
                self.interfaces.load_source(source)
        self.interfaces.load(idl, include)
        super().__init__(**options)
        self.typed = TypedFactory(self)
        try:
            self._keep_idl(set(self.interfaces.sources))  # a kept file's includes may
        except BaseException:                              # have changed since: all again
            self.close()
            raise

    def load_idl(self, idl: Iterable[str | PathLike[str]],
                 include: Iterable[str | PathLike[str]] = ()) -> list[TypedInterface]:
        """Load more IDL (``IDLError`` as at construction); a store keeps it too. The
        files are loaded in turn: when one fails, those before it are loaded, usable
        as keys, and kept as well (a restart would refuse their proxies otherwise)."""
        idl = list(idl)
        paths = {os.path.abspath(path) for path in idl}
        try:
            learned = self.interfaces.load(idl, include)
        except BaseException:
            self._keep_idl(paths & set(self.interfaces.sources))
            raise
        self._keep_idl(paths)
        return learned

    def _keep_idl(self, paths: set[str]) -> None:
        topology = self._service.topology
        if topology is None:
            return
        with store_failures():
            for path in sorted(paths):
                record = codec.dumps(self.interfaces.sources[path].as_record())
                topology.store.put(Record(_idl_path(path), IDL_KIND, record))

    def create_typed_channel(self, initial_qos: list[Any], initial_admin: list[Any]
                             ) -> tuple[TypedEventChannel, int]:
        return self._create_channel(initial_qos, initial_admin, None,  # type: ignore[return-value]
                                    TypedEventChannel)

    def get_all_channels(self) -> list[int]:
        """The untyped channels: a typed one is no ``CosNotifyChannelAdmin::EventChannel``
        in the IDL (section 3.6), so an untyped client could not use its reference."""
        with self._lock:
            return sorted(i for i, c in self._channels.items()
                          if not isinstance(c, TypedEventChannel))

    def get_event_channel(self, id: int) -> EventChannel:
        channel = self._find_channel(id)
        if channel is None or isinstance(channel, TypedEventChannel):
            raise CA.ChannelNotFound()
        return channel

    def get_all_typed_channels(self) -> list[int]:
        with self._lock:
            return sorted(i for i, c in self._channels.items()
                          if isinstance(c, TypedEventChannel))

    def get_typed_event_channel(self, id: int) -> TypedEventChannel:
        channel = self._find_channel(id)
        if not isinstance(channel, TypedEventChannel):
            raise CA.ChannelNotFound()
        return channel


class TypedFactory:
    """The typed factory's own operations on a :class:`TypedEventChannelFactory`: what
    the server serves as ``CosTypedNotifyChannelAdmin::TypedEventChannelFactory``
    beside the untyped factory (one core object cannot have two servants)."""

    def __init__(self, factory: TypedEventChannelFactory) -> None:
        self.factory = factory

    def create_typed_channel(self, initial_qos: list[Any], initial_admin: list[Any]
                             ) -> tuple[TypedEventChannel, int]:
        return self.factory.create_typed_channel(initial_qos, initial_admin)

    def get_all_typed_channels(self) -> list[int]:
        return self.factory.get_all_typed_channels()

    def get_typed_event_channel(self, id: int) -> TypedEventChannel:
        return self.factory.get_typed_event_channel(id)
