"""A consumer that survives restarts: of the server, and of itself.

Usage::

    python examples/python/reconnecting_consumer.py URL --state FILE [--count N]

``URL`` names the EventChannelFactory of ``cosnotify serve --db PATH
--allow-reconnect`` (for example
``corbaname::127.0.0.1:2809#NotifyEventChannelFactory``).

The first run makes a channel whose connections and events are persistent
(ConnectionReliability and EventReliability Persistent), a consumer admin
and a push proxy, and saves their ids in ``FILE``. A later run -- after this
process or the server restarted -- resolves the factory again and walks
down by the saved ids (``get_event_channel``, ``get_consumeradmin``,
``get_proxy_supplier``), as TAO's Reconnecting tests do, then connects its
new servant to the same proxy (the server's ``--allow-reconnect``), and is
given what was sent while it was away. While this process runs, a server
restart needs nothing from it: the server calls its servant again.

It prints ``channel ID`` and ``ready``, then each event, and exits after
``N`` events (default 10) without disconnecting, so the proxy keeps its
events for the next run. A call that meets a server still restarting
(COMM_FAILURE, TRANSIENT) is made again, a few times.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyComm__POA

T = TypeVar("T")
_printing = threading.Lock()


def say(text: str) -> None:
    """One whole line at a time: the servant's thread prints too."""
    with _printing:
        print(text, flush=True)

PERSISTENT = [N.Property(name, CORBA.Any(CORBA.TC_short, N.Persistent))
              for name in ("ConnectionReliability", "EventReliability")]


def again(call: Callable[[], T], attempts: int = 50) -> T:
    """``call()``, made again while the server is away or just back."""
    for _ in range(attempts - 1):
        try:
            return call()
        except (CORBA.COMM_FAILURE, CORBA.TRANSIENT):
            time.sleep(0.1)  # the client's retry policy
    return call()


class Consumer(CosNotifyComm__POA.StructuredPushConsumer):
    def __init__(self, count: int) -> None:
        self.count = count
        self.received = 0
        self.done = threading.Event()

    def push_structured_event(self, event: Any) -> None:
        fields = " ".join(f"{p.name}={p.value.value()}" for p in event.filterable_data)
        say(f"received {event.header.fixed_header.event_name} {fields}")
        self.received += 1
        if self.received >= self.count:
            self.done.set()

    def offer_change(self, added: Any, removed: Any) -> None:
        pass

    def disconnect_structured_push_consumer(self) -> None:
        say("disconnected by the channel")
        self.done.set()


def find_or_make_proxy(factory: Any, state: Path) -> tuple[Any, int]:
    """The proxy named by the saved ids, or a new one whose ids are saved."""
    if state.exists():
        ids = json.loads(state.read_text())
        channel = again(lambda: factory.get_event_channel(ids["channel"]))
        admin = again(lambda: channel.get_consumeradmin(ids["admin"]))
        proxy = again(lambda: admin.get_proxy_supplier(ids["proxy"]))
        return proxy._narrow(CA.StructuredProxyPushSupplier), ids["channel"]
    channel, channel_id = again(lambda: factory.create_channel(PERSISTENT, []))
    admin, admin_id = channel.new_for_consumers(CA.AND_OP)
    proxy, proxy_id = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
    state.write_text(json.dumps({"channel": channel_id, "admin": admin_id, "proxy": proxy_id}))
    return proxy._narrow(CA.StructuredProxyPushSupplier), channel_id


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url", help="the EventChannelFactory (corbaname:, corbaloc: or IOR:)")
    parser.add_argument("--state", type=Path, required=True, help="where the ids are kept")
    parser.add_argument("--count", type=int, default=10, help="events to wait for (default 10)")
    parser.add_argument("--timeout", type=float, default=60.0, help="give up after (seconds)")
    args = parser.parse_args(argv)

    orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)
    try:
        poa = orb.resolve_initial_references("RootPOA")
        poa._get_the_POAManager().activate()
        factory = again(lambda: orb.string_to_object(args.url)._narrow(CA.EventChannelFactory))
        proxy, channel_id = find_or_make_proxy(factory, args.state)
        say(f"channel {channel_id}")
        consumer = Consumer(args.count)
        reference = poa.servant_to_reference(consumer)
        again(lambda: proxy.connect_structured_push_consumer(reference))
        say("ready")
        if not consumer.done.wait(args.timeout):
            print(f"timed out after {consumer.received} events", file=sys.stderr)
            return 1
        return 0
    finally:
        orb.destroy()


if __name__ == "__main__":
    sys.exit(main())
