"""The spec's Coffee example (Notification 1.1, section 2.7) on a typed channel, in process.

Run: ``.venv/bin/python examples/typed/coffee.py``. It loads Coffee.idl (beside
this script), makes a typed channel, and shows every way Table 2-2 lists:

- a typed push supplier calls ``drinking_coffee`` on the object its
  TypedProxyPushConsumer gives;
- a structured consumer of the same channel sees the ``%TYPED`` event, and a
  filter on a parameter (``$minutes > 3``) works on it;
- a typed pull consumer calls ``try_drinking_coffee`` / ``drinking_coffee`` on
  the object its TypedProxyPullSupplier gives;
- a typed push consumer (this script's ``Barista``) is called by the channel.

The server side (``cosnotify serve --idl``) is not there yet: docs/typed.md.
"""

from __future__ import annotations

import threading
from pathlib import Path

import omniORB  # noqa: F401 - puts the COS stubs on sys.path

import CosNotifyChannelAdmin as CA
import CosNotifyFilter

import cosnotify

HERE = Path(__file__).resolve().parent


class Barista:
    """A typed push consumer: the channel calls Coffee's operations on it."""

    def __init__(self) -> None:
        self.served = threading.Event()

    def get_typed_consumer(self) -> Barista:
        return self

    def push(self, data: object) -> None:
        pass

    def disconnect_push_consumer(self) -> None:
        pass

    def drinking_coffee(self, name: str, minutes: int) -> None:
        print(f"barista: {name} is drinking coffee for {minutes} minutes")
        if name == "Al":
            self.served.set()

    def cancel_coffee(self, name: str) -> None:
        print(f"barista: {name} cancelled")


def main() -> None:
    with cosnotify.TypedEventChannelFactory(idl=[HERE / "Coffee.idl"]) as factory:
        channel, channel_id = factory.create_typed_channel([], [])
        print(f"typed channel {channel_id}; interfaces: "
              + ", ".join(i.repo_id for i in factory.interfaces.interfaces()))
        suppliers = channel._get_default_supplier_admin()
        consumers = channel._get_default_consumer_admin()

        structured, _ = consumers.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        long_ones = factory._get_filter_factory().create_filter("EXTENDED_TCL")
        long_ones.add_constraints([CosNotifyFilter.ConstraintExp([], "$minutes > 3")])
        structured.add_filter(long_ones)
        structured.connect_structured_pull_consumer(None)

        puller, _ = consumers.obtain_typed_notification_pull_supplier("Coffee")
        puller.connect_typed_pull_consumer(None)
        pull_coffee = puller.get_typed_supplier()

        barista = Barista()
        pusher, _ = consumers.obtain_typed_notification_push_supplier("CoffeeShop::Coffee")
        pusher.connect_typed_push_consumer(barista)

        proxy, _ = suppliers.obtain_typed_notification_push_consumer("IDL:CoffeeShop/Coffee:1.0")
        proxy.connect_typed_push_supplier(None)
        coffee = proxy.get_typed_consumer()
        coffee.drinking_coffee("Jane", 5)
        coffee.cancel_coffee("Jo")
        coffee.drinking_coffee("Al", 2)
        barista.served.wait(10)

        while True:
            event, has_event = structured.try_pull_structured_event()
            if not has_event:
                break
            fixed = event.header.fixed_header.event_type
            fields = ", ".join(f"{p.name}={p.value.value()!r}" for p in event.filterable_data)
            print(f"structured consumer ($minutes > 3): {fixed.type_name} {fields}")
        print(f"typed pull consumer: try_cancel_coffee() -> {pull_coffee.try_cancel_coffee()}")
        print(f"typed pull consumer: drinking_coffee() -> {pull_coffee.drinking_coffee()}")
        print(f"typed pull consumer: try_drinking_coffee() -> "
              f"{pull_coffee.try_drinking_coffee()}")
        print(f"typed pull consumer: try_drinking_coffee() -> "
              f"{pull_coffee.try_drinking_coffee()}")


if __name__ == "__main__":
    main()
