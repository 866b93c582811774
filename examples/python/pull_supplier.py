"""A structured pull supplier: the channel asks this process for each event.

Usage::

    python examples/python/pull_supplier.py URL --channel ID [--count N]

``URL`` names the EventChannelFactory; ``ID`` is an existing channel. The
supplier connects a servant to a StructuredProxyPullConsumer; the channel then
polls it with ``try_pull_structured_event``. It hands out ``N`` readings
(default 10), answers "nothing" after that, and exits once the channel has
come back for more (so the last reading surely arrived).

The supplier receives calls, so its ORB listens (on loopback, a free port).
"""

from __future__ import annotations

import argparse
import sys
import threading
from typing import Any

from omniORB import CORBA

import CosEventComm
import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyComm__POA


def reading(n: int) -> Any:
    temperature = 20.0 + (n % 10) * 0.5
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("Example", "Reading"), f"reading-{n}"), []),
        [N.Property("n", CORBA.Any(CORBA.TC_long, n)),
         N.Property("temperature", CORBA.Any(CORBA.TC_double, temperature))],
        CORBA.Any(CORBA.TC_string, f"reading {n}: {temperature:.1f} C"))


class Supplier(CosNotifyComm__POA.StructuredPullSupplier):
    """Hands out ``count`` readings; ``done`` is set when asked again after the last."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.handed = 0
        self.lock = threading.Lock()
        self.done = threading.Event()

    def try_pull_structured_event(self) -> tuple[Any, bool]:
        with self.lock:
            if self.handed < self.count:
                self.handed += 1
                print(f"handed out reading-{self.handed - 1}", flush=True)
                return reading(self.handed - 1), True
        self.done.set()
        return reading(-1), False  # has_event FALSE: the event is ignored

    def pull_structured_event(self) -> Any:
        event, has_event = self.try_pull_structured_event()
        if not has_event:  # a blocking pull with nothing left: wait for disconnection
            self.done.wait(60)
            raise CosEventComm.Disconnected()
        return event

    def subscription_change(self, added: Any, removed: Any) -> None:
        pass

    def disconnect_structured_pull_supplier(self) -> None:
        self.done.set()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url", help="the EventChannelFactory (corbaname:, corbaloc: or IOR:)")
    parser.add_argument("--channel", type=int, required=True, help="the channel id")
    parser.add_argument("--count", type=int, default=10, help="events to supply (default 10)")
    parser.add_argument("--timeout", type=float, default=60.0, help="give up after (seconds)")
    args = parser.parse_args(argv)

    orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)
    poa = orb.resolve_initial_references("RootPOA")
    poa._get_the_POAManager().activate()
    try:
        factory = orb.string_to_object(args.url)._narrow(CA.EventChannelFactory)
        channel = factory.get_event_channel(args.channel)
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_pull_consumer(
            CA.STRUCTURED_EVENT)
        proxy = proxy._narrow(CA.StructuredProxyPullConsumer)
        supplier = Supplier(args.count)
        proxy.connect_structured_pull_supplier(poa.servant_to_reference(supplier))
        if not supplier.done.wait(args.timeout):
            print(f"timed out after {supplier.handed} events", file=sys.stderr)
            return 1
        print(f"supplied {supplier.handed} events", flush=True)
        proxy.disconnect_structured_pull_consumer()
    finally:
        orb.shutdown(True)
        orb.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
