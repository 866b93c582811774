"""A structured push consumer: the server pushes each event to an object in this process.

Usage::

    python examples/python/push_consumer.py URL [--channel ID] [--count N] [--filter TEXT]
                                            [--vanish]

``URL`` names the EventChannelFactory (for example
``corbaname::127.0.0.1:2809#NotifyEventChannelFactory``). Without ``--channel``
the consumer creates a channel and prints ``channel ID`` for the suppliers.
With ``--filter`` it attaches an EXTENDED_TCL filter made by the channel's
FilterFactory (for example ``'$n >= 5'``), which runs in the server. It prints
``ready`` once connected, then each event it receives; after ``N`` events
(default 10) it disconnects and exits. With ``--vanish`` it exits without
disconnecting, as a consumer that crashed would: the channel's later pushes
to it fail, which ``cosnotify ls`` and ``top`` show (docs/operations.md).

The consumer receives calls, so its ORB listens (on loopback, a free port) and
its servant is activated in the RootPOA.
"""

from __future__ import annotations

import argparse
import sys
import threading
from typing import Any

from omniORB import CORBA

import CosNotifyChannelAdmin as CA
import CosNotifyComm__POA
import CosNotifyFilter


def describe(event: Any) -> str:
    """``Example/Reading reading-3 n=3 temperature=21.5``."""
    header = event.header.fixed_header
    fields = " ".join(f"{p.name}={p.value.value()}" for p in event.filterable_data)
    return f"{header.event_type.domain_name}/{header.event_type.type_name} " \
           f"{header.event_name} {fields}"


class Consumer(CosNotifyComm__POA.StructuredPushConsumer):
    """Prints each event; ``done`` is set after ``count`` events or on disconnection."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.received = 0
        self.done = threading.Event()

    def push_structured_event(self, event: Any) -> None:
        if self.done.is_set():
            return  # more events may come while we disconnect: ignore them
        self.received += 1  # one call at a time: the server pushes in order
        print(f"received {describe(event)}", flush=True)
        if self.received >= self.count:
            self.done.set()

    def offer_change(self, added: Any, removed: Any) -> None:
        pass

    def disconnect_structured_push_consumer(self) -> None:
        print("disconnected by the channel", flush=True)
        self.done.set()


def open_channel(factory: Any, channel_id: int | None) -> tuple[Any, int]:
    """The channel with this id, or a new one."""
    if channel_id is None:
        channel, made_id = factory.create_channel([], [])
        return channel, int(made_id)
    return factory.get_event_channel(channel_id), channel_id


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url", help="the EventChannelFactory (corbaname:, corbaloc: or IOR:)")
    parser.add_argument("--channel", type=int, help="join this channel (default: create one)")
    parser.add_argument("--count", type=int, default=10, help="events to wait for (default 10)")
    parser.add_argument("--filter", help="an EXTENDED_TCL constraint, e.g. '$n >= 5'")
    parser.add_argument("--timeout", type=float, default=60.0, help="give up after (seconds)")
    parser.add_argument("--vanish", action="store_true",
                        help="exit without disconnecting, as a crashed consumer would")
    args = parser.parse_args(argv)

    orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)
    poa = orb.resolve_initial_references("RootPOA")
    poa._get_the_POAManager().activate()
    try:
        factory = orb.string_to_object(args.url)._narrow(CA.EventChannelFactory)
        channel, channel_id = open_channel(factory, args.channel)
        print(f"channel {channel_id}", flush=True)
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy = proxy._narrow(CA.StructuredProxyPushSupplier)
        if args.filter:
            flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
            flt.add_constraints([CosNotifyFilter.ConstraintExp([], args.filter)])
            proxy.add_filter(flt)
        consumer = Consumer(args.count)
        proxy.connect_structured_push_consumer(poa.servant_to_reference(consumer))
        print("ready", flush=True)
        if not consumer.done.wait(args.timeout):
            print(f"timed out after {consumer.received} events", file=sys.stderr)
            return 1
        print(f"received {consumer.received} events", flush=True)
        if args.vanish:
            print("vanishing without disconnecting", flush=True)
        else:
            proxy.disconnect_structured_push_supplier()
    finally:
        orb.shutdown(True)
        orb.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
