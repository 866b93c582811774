"""Typed clients in process, for the typed channel tests: connected typed proxies,
a typed push consumer that records its calls, a typed pull supplier of drinks."""

from __future__ import annotations

import threading
from typing import Any

from omniORB import CORBA

import CosEventComm
import CosNotifyChannelAdmin as CA

from cosnotify.typed.channel import TypedEventChannel


def typed_consumer(channel: TypedEventChannel) -> tuple[Any, Any]:
    """A connected TypedProxyPushConsumer for Coffee, and its typed object."""
    proxy, _ = channel._get_default_supplier_admin().obtain_typed_notification_push_consumer(
        "Coffee")
    proxy.connect_typed_push_supplier(None)
    return proxy, proxy.get_typed_consumer()


def typed_supplier(channel: TypedEventChannel) -> tuple[Any, Any]:
    proxy, _ = channel._get_default_consumer_admin().obtain_typed_notification_pull_supplier(
        "IDL:CoffeeTest/Coffee:1.0")
    proxy.connect_typed_pull_consumer(None)
    return proxy, proxy.get_typed_supplier()


def structured_puller(channel: TypedEventChannel) -> Any:
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_pull_consumer(None)
    return proxy


def pulled_names(puller: Any) -> list[str]:
    """The ``name`` of every %TYPED event a structured pull proxy holds now."""
    names = []
    while True:
        event, has_event = puller.try_pull_structured_event()
        if not has_event:
            return names
        assert event.header.fixed_header.event_type.type_name == "%TYPED"
        names.append(event.filterable_data[1].value.value())


def settle(channel: TypedEventChannel) -> None:
    assert channel._factory.service.dispatcher.wait_idle()




class Recorder:
    """A typed push consumer in process: ``get_typed_consumer()`` gives ``coffee``,
    whose calls are recorded under a condition."""

    def __init__(self, coffee: Any = None) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.cond = threading.Condition()
        self.coffee = coffee if coffee is not None else self

    def get_typed_consumer(self) -> Any:
        return self.coffee

    def push(self, data: Any) -> None:
        pass

    def disconnect_push_consumer(self) -> None:
        pass

    def _record(self, name: str, *args: Any) -> None:
        with self.cond:
            self.calls.append((name, args))
            self.cond.notify_all()

    def drinking_coffee(self, name: str, minutes: int) -> None:
        self._record("drinking_coffee", name, minutes)

    def cancel_coffee(self, name: str) -> None:
        self._record("cancel_coffee", name)

    def wait_for(self, count: int) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: len(self.calls) >= count, 30)


class PullCoffee:
    """A typed pull supplier in process: Pull<Coffee> over a list of drinks."""

    def __init__(self, drinks: list[tuple[str, int]]) -> None:
        self.drinks = list(drinks)

    def get_typed_supplier(self) -> Any:
        return self

    def pull(self) -> Any:
        raise CosEventComm.Disconnected()

    def try_pull(self) -> Any:
        return CORBA.Any(CORBA.TC_null, None), False

    def disconnect_pull_supplier(self) -> None:
        pass

    def try_drinking_coffee(self) -> tuple[Any, ...]:
        return (True, *self.drinks.pop(0)) if self.drinks else (False, "", 0)

    def try_cancel_coffee(self) -> tuple[bool, str]:
        return False, ""


