"""Client processes for the durability tests: an omniORBpy supplier and consumer.

    python -m tests.durability.peer supplier --channel IOR --count N [--ack]
    python -m tests.durability.peer consumer --channel IOR [--ack]

Both outlive server restarts: a call that fails because the server is down
or restarting (TRANSIENT, COMM_FAILURE) is made again with the same
reference -- the reconnection policy docs/persistence.md describes for
clients -- after a short pause (the client's own retry policy, not a test's
synchronisation). The supplier prints ``accepted=N`` once push N returned,
then ``done``; with ``--ack`` its events carry SequenceNumber N and its proxy's
DeliveryReliability is Acknowledgment, so the channel drops a push made
again after a crash that it had in fact stored (section 3.7.3.1); the consumer prints ``ready``, then ``got=N`` for each event
as it arrives and ``end`` at the Test/End event. With ``--ack`` it uses
Event Acknowledgment (section 3.7): its proxy comes from an admin with
DeliveryReliability=Acknowledgment, it drops an event whose SequenceNumber
it has seen (printing ``dup=N``) and acknowledges each. Events are Test/Counter
structured events with a long ``n`` (the C++ peers read the same).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyComm__POA

import cosnotify.corba  # noqa: F401 - makes the CosNotify*Ack stubs importable

T = TypeVar("T")
#: What a call meets while the server is down or starting again (docs/persistence.md,
#: "Reconnecting clients"): OBJ_ADAPTER in the moment its POA is active and its servant
#: manager not yet set (omniORB needs that order: docs/orb.md).
_DOWN = (CORBA.TRANSIENT, CORBA.COMM_FAILURE, CORBA.OBJ_ADAPTER)
_PAUSE = 0.05


def _orb() -> Any:
    return CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:",
                           "-ORBclientCallTimeOutPeriod", "5000",
                           "-ORBclientConnectTimeOutPeriod", "2000"], CORBA.ORB_ID)


def again(call: Callable[[], T], limit: float = 60.0) -> T:
    """``call()``, made again while the server is down (for at most ``limit`` seconds)."""
    give_up = time.monotonic() + limit
    while True:
        try:
            return call()
        except _DOWN:
            if time.monotonic() > give_up:
                raise
            time.sleep(_PAUSE)


def event(n: int, type_name: str = "Counter", number: int | None = None) -> Any:
    header = [] if number is None else [N.Property("SequenceNumber",
                                                   CORBA.Any(CORBA.TC_long, number))]
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("Test", type_name), f"e{n}"), header),
        [N.Property("n", CORBA.Any(CORBA.TC_long, n))], CORBA.Any(CORBA.TC_null, None))


def supplier(orb: Any, channel: Any, count: int, ack: bool) -> None:
    import CosNotifyCommAck
    admin = again(channel._get_default_supplier_admin)
    proxy = again(lambda: admin.obtain_notification_push_consumer(CA.STRUCTURED_EVENT)[0])
    proxy = proxy._narrow(CA.StructuredProxyPushConsumer)
    if ack:
        again(lambda: proxy.set_qos([N.Property(
            "DeliveryReliability", CORBA.Any(CORBA.TC_short, CosNotifyCommAck.Acknowledgment))]))
    again(lambda: proxy.connect_structured_push_supplier(None))
    print("ready", flush=True)
    for n in range(count):
        pushed = event(n, number=n if ack else None)
        again(lambda: proxy.push_structured_event(pushed))  # noqa: B023 - called at once
        print(f"accepted={n}", flush=True)
    again(lambda: proxy.push_structured_event(event(-1, "End", count if ack else None)))
    print("done", flush=True)


class Consumer(CosNotifyComm__POA.StructuredPushConsumer):
    def __init__(self) -> None:
        self.ended = threading.Event()
        self.proxy: Any = None  # an Ack proxy to acknowledge to, with --ack
        self.seen: set[int] = set()
        self.lock = threading.Lock()  # a restarted server's pushes overlap an old upcall

    def push_structured_event(self, notification: Any) -> None:
        if self.proxy is not None:
            number = next(p.value.value() for p in notification.header.variable_header
                          if p.name == "SequenceNumber")
            # Record first, then acknowledge (section 3.7.3.1 steps 3-5): an acknowledge
            # may wait for a server that is being killed.
            with self.lock:
                fresh = number not in self.seen
                if fresh:
                    self.seen.add(number)
                    print(f"number={number}", flush=True)
                    self.record(notification)
                else:
                    print(f"dup={number}", flush=True)
            try:
                self.proxy.acknowledge([number])
            except CORBA.SystemException:
                pass  # lost: the event comes again (section 3.7.7.1 step 5)
            return
        self.record(notification)

    def record(self, notification: Any) -> None:
        if notification.header.fixed_header.event_type.type_name == "End":
            print("end", flush=True)
            self.ended.set()
            return
        for prop in notification.filterable_data:
            if prop.name == "n":
                print(f"got={prop.value.value()}", flush=True)

    def offer_change(self, added: Any, removed: Any) -> None:
        pass

    def disconnect_structured_push_consumer(self) -> None:
        print("disconnected", flush=True)
        self.ended.set()


def consumer(orb: Any, channel: Any, ack: bool) -> None:
    import CosNotifyChannelAdminAck
    import CosNotifyCommAck
    poa = orb.resolve_initial_references("RootPOA")
    poa._get_the_POAManager().activate()
    servant = Consumer()
    reference = poa.servant_to_reference(servant)
    channel = channel._narrow(CA.EventChannel)
    if ack:
        admin = again(lambda: channel.new_for_consumers(CA.AND_OP)[0])
        again(lambda: admin.set_qos([N.Property(
            "DeliveryReliability", CORBA.Any(CORBA.TC_short, CosNotifyCommAck.Acknowledgment))]))
    else:
        admin = again(channel._get_default_consumer_admin)
    proxy = again(lambda: admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)[0])
    if ack:
        proxy = proxy._narrow(CosNotifyChannelAdminAck.StructuredProxyPushSupplierAck)
        servant.proxy = proxy
    else:
        proxy = proxy._narrow(CA.StructuredProxyPushSupplier)
    again(lambda: proxy.connect_structured_push_consumer(reference))
    print("ready", flush=True)
    servant.ended.wait(300)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=["supplier", "consumer"])
    parser.add_argument("--channel", required=True)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--ack", action="store_true")
    args = parser.parse_args()
    orb = _orb()
    channel = orb.string_to_object(args.channel)
    try:
        if args.role == "supplier":
            supplier(orb, channel, args.count, args.ack)
        else:
            consumer(orb, channel, args.ack)
    finally:
        orb.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
