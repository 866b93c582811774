"""Event Service style typed proxies: what ``CosTypedEventChannelAdmin``'s admins make.

Strategy: section 2.7 keeps the typed Event Service's operations on a typed
channel -- "the inherited operations can be used to create the Admin
interfaces defined for the OMG Event Service version of the typed event
channel", which create "OMG Event Service style typed proxy objects, which
can be connected to by OMG Event Service style typed clients". Such a client
connects with the Event Service's operations, not the ``connect_typed_*``
ones:

- ``obtain_typed_push_consumer(key)`` gives a
  ``CosTypedEventChannelAdmin::TypedProxyPushConsumer``, a
  ``CosEventChannelAdmin::ProxyPushConsumer``: ``connect_push_supplier``;
- ``obtain_typed_pull_supplier(key)`` gives a
  ``CosTypedEventChannelAdmin::TypedProxyPullSupplier``, a
  ``CosEventChannelAdmin::ProxyPullSupplier``: ``connect_pull_consumer``;
- ``obtain_typed_pull_consumer(key)`` gives a
  ``CosEventChannelAdmin::ProxyPullConsumer``: ``connect_pull_supplier``,
  whose supplier is a ``CosTypedEventComm::TypedPullSupplier`` (it gives the
  ``Pull<I>`` object the proxy polls);
- ``obtain_typed_push_supplier(key)`` gives a
  ``CosEventChannelAdmin::ProxyPushSupplier``: ``connect_push_consumer``,
  whose consumer is a ``CosTypedEventComm::TypedPushConsumer`` (it gives the
  ``<I>`` object the proxy calls).

Each is the notification style typed proxy (proxies.py) with that operation
added, as the untyped channel's Event Service style proxies are, and with no
offer or subscription relay (an Event Service client knows neither). A client
that is not a typed one for the last two is refused with
``CosEventChannelAdmin::TypeError``.
"""

from __future__ import annotations

from typing import Any

import CosEventChannelAdmin

from cosnotify.channel.clients import connectable
from cosnotify.typed.proxies import (
    TypedProxyPullConsumer,
    TypedProxyPullSupplier,
    TypedProxyPushConsumer,
    TypedProxyPushSupplier,
)

__all__ = ["EventServiceTypedProxyPullConsumer", "EventServiceTypedProxyPullSupplier",
           "EventServiceTypedProxyPushConsumer", "EventServiceTypedProxyPushSupplier"]


class EventServiceTypedProxyPushConsumer(TypedProxyPushConsumer):
    """``CosTypedEventChannelAdmin::TypedProxyPushConsumer``."""

    event_service_style = True

    def connect_push_supplier(self, push_supplier: Any) -> None:
        self._connect_supplier(push_supplier)

    def _start_subscription_relay(self) -> None:
        pass


class EventServiceTypedProxyPullSupplier(TypedProxyPullSupplier):
    """``CosTypedEventChannelAdmin::TypedProxyPullSupplier``."""

    event_service_style = True

    def connect_pull_consumer(self, pull_consumer: Any) -> None:
        self._connect_consumer(pull_consumer)

    def _start_offer_relay(self) -> None:
        pass


class EventServiceTypedProxyPullConsumer(TypedProxyPullConsumer):
    """``CosEventChannelAdmin::ProxyPullConsumer`` of ``obtain_typed_pull_consumer``."""

    event_service_style = True

    def connect_pull_supplier(self, pull_supplier: Any) -> None:
        self.connect_typed_pull_supplier(
            _typed(self, pull_supplier, self.supplier_interface, self.supplier_method))

    def _start_subscription_relay(self) -> None:
        pass


class EventServiceTypedProxyPushSupplier(TypedProxyPushSupplier):
    """``CosEventChannelAdmin::ProxyPushSupplier`` of ``obtain_typed_push_supplier``."""

    event_service_style = True

    def connect_push_consumer(self, push_consumer: Any) -> None:
        self.connect_typed_push_consumer(
            _typed(self, push_consumer, self.consumer_interface, self.consumer_method))

    def _start_offer_relay(self) -> None:
        pass


def _typed(proxy: Any, client: Any, repo_id: str, method: str) -> Any:
    """A client given as a plain Event Service one, seen as the typed client it must
    be (a reference arrives typed by the operation's parameter: ``PushConsumer``);
    ``TypeError`` if it is none. AlreadyConnected comes first, before the client is
    asked anything; a nil client is left to the typed connect (its BAD_PARAM)."""
    if client is None:
        return None
    proxy._refuse_if_connected()
    typed = connectable(client, repo_id, method)
    if typed is None:
        raise CosEventChannelAdmin.TypeError()
    return typed
