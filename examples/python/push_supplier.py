"""A structured push supplier: pushes readings into a channel of a notification server.

Usage::

    python examples/python/push_supplier.py URL --channel ID [--count N]

``URL`` names the EventChannelFactory, as ``cosnotify serve`` prints it (for
example ``corbaname::127.0.0.1:2809#NotifyEventChannelFactory``); ``ID`` is the
channel a consumer example printed. The supplier pushes ``N`` (default 10)
structured events of type ``Example/Reading`` with filterable fields ``n`` and
``temperature``, prints what it pushed, disconnects and exits. It only makes
calls, so its ORB needs no listening endpoint.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA


def reading(n: int) -> Any:
    """Event ``n``: a structured event with two filterable fields and a text body."""
    temperature = 20.0 + (n % 10) * 0.5
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("Example", "Reading"), f"reading-{n}"), []),
        [N.Property("n", CORBA.Any(CORBA.TC_long, n)),
         N.Property("temperature", CORBA.Any(CORBA.TC_double, temperature))],
        CORBA.Any(CORBA.TC_string, f"reading {n}: {temperature:.1f} C"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url", help="the EventChannelFactory (corbaname:, corbaloc: or IOR:)")
    parser.add_argument("--channel", type=int, required=True, help="the channel id")
    parser.add_argument("--count", type=int, default=10, help="events to push (default 10)")
    args = parser.parse_args(argv)

    orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)
    try:
        factory = orb.string_to_object(args.url)._narrow(CA.EventChannelFactory)
        channel = factory.get_event_channel(args.channel)
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        proxy = proxy._narrow(CA.StructuredProxyPushConsumer)
        proxy.connect_structured_push_supplier(None)  # a nil supplier: we are not told of changes
        for n in range(args.count):
            proxy.push_structured_event(reading(n))
        print(f"pushed {args.count} events to channel {args.channel}", flush=True)
        proxy.disconnect_structured_push_consumer()
    finally:
        orb.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
