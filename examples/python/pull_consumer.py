"""A structured pull consumer: it asks the channel for each event.

Usage::

    python examples/python/pull_consumer.py URL --channel ID [--count N]

``URL`` names the EventChannelFactory; ``ID`` is an existing channel. The
consumer connects a StructuredProxyPullSupplier (events are kept for it from
then on), prints ``ready``, then pulls ``N`` events (default 10):
``pull_structured_event`` blocks until an event is there; before blocking it
tries ``try_pull_structured_event``, which never blocks. It makes calls only,
so its ORB needs no listening endpoint.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from omniORB import CORBA

import CosNotifyChannelAdmin as CA


def describe(event: Any) -> str:
    fields = " ".join(f"{p.name}={p.value.value()}" for p in event.filterable_data)
    return f"{event.header.fixed_header.event_name} {fields}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url", help="the EventChannelFactory (corbaname:, corbaloc: or IOR:)")
    parser.add_argument("--channel", type=int, required=True, help="the channel id")
    parser.add_argument("--count", type=int, default=10, help="events to pull (default 10)")
    args = parser.parse_args(argv)

    # A blocking pull waits for the next event: allow it a minute.
    orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:",
                          "-ORBclientCallTimeOutPeriod", "60000"], CORBA.ORB_ID)
    try:
        factory = orb.string_to_object(args.url)._narrow(CA.EventChannelFactory)
        channel = factory.get_event_channel(args.channel)
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        proxy = proxy._narrow(CA.StructuredProxyPullSupplier)
        proxy.connect_structured_pull_consumer(None)
        print("ready", flush=True)
        waited = 0
        for _ in range(args.count):
            event, has_event = proxy.try_pull_structured_event()
            if not has_event:
                waited += 1
                event = proxy.pull_structured_event()
            print(f"pulled {describe(event)}", flush=True)
        print(f"pulled {args.count} events ({waited} blocking pulls)", flush=True)
        proxy.disconnect_structured_pull_supplier()
    finally:
        orb.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
