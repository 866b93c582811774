"""Benchmark: a typed push relay against a structured one, side by side, through ``cosnotify serve``.

Run: ``.venv/bin/python benchmarks/typed_bench.py [--events 2000] [--rounds 3]``, or
``.venv/bin/python benchmarks/remote_bench.py --typed``, which prints these lines
after its own in the same run.

Strategy: one ``cosnotify serve --idl tests/typed/data/Coffee.idl`` on
loopback; in each round, in turns:

* **typed**: the C++ typed supplier (tests/typed/cxx/typed_supplier.cc,
  Debian's omniORB) calls ``drinking_coffee`` on its TypedProxyPushConsumer's
  typed object, one event per call; this process is the typed push consumer
  (a ``CosTypedEventComm::TypedPushConsumer`` whose typed object is a Coffee
  servant) on a TypedProxyPushSupplier of the same typed channel;
* **structured**: the C++ structured supplier of the interop tests
  (``notify_supplier structured``), one event per call, into an untyped
  channel; this process is a structured push consumer.

Relayed events/s: from the supplier's first call (its CLOCK_MONOTONIC
``start_ns``) to the consumer's last receipt (``time.monotonic_ns``, the
same clock). Both consumers are omniORBpy servants of this process, so only
the channel's path differs. A new channel per run. Issue 20's goal: typed
>= 70% of structured. No timing is asserted anywhere.

Then, **in process** (no ORB calls): a typed push through a filter beside
the structured figure. A ``TypedEventChannelFactory``; the supplier proxy
(a TypedProxyPushConsumer, or a StructuredProxyPushConsumer) has an
EXTENDED_TCL filter ``$minutes >= 0``; the typed supplier calls
``drinking_coffee`` on the proxy's typed object, the structured one pushes
the same call's %TYPED Structured Event, made beforehand ("structured") or
built for each push ("structured, built": what a typed call costs the
channel); a structured pull proxy receives. Timed: the calls until the
channel's workers are idle.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import sys
import tempfile
import threading
import time
from statistics import median
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import omniORB  # noqa: F401 - puts the COS stubs on sys.path
from machine import cpu_model, print_rates  # benchmarks/machine.py, beside this script

import CosNotifyChannelAdmin as CA
import CosNotifyComm__POA
import CosTypedNotifyChannelAdmin as TCA

from cosnotify.typed.interfaces import InterfaceRepository
from spark_bridge import connect
from tests.interop.notify import harness
from tests.typed.cxx_peer import build_typed_supplier
from tests.typed.servants import typed_push_consumer

IDL = ROOT / "tests" / "typed" / "data" / "Coffee.idl"


class Receipts:
    """Counts events; ``last_ns`` is the monotonic time of the last one."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.count = 0
        self.last_ns = 0
        self.cond = threading.Condition()

    def got(self, *call: Any) -> None:
        """One more event (``call``: a typed call's arguments, ignored)."""
        with self.cond:
            self.count += 1
            self.last_ns = time.monotonic_ns()
            if self.count >= self.expected:
                self.cond.notify_all()

    def wait(self) -> None:
        with self.cond:
            if not self.cond.wait_for(lambda: self.count >= self.expected, 300):
                raise RuntimeError(f"got {self.count} of {self.expected} events")


class StructuredConsumer(CosNotifyComm__POA.StructuredPushConsumer):
    def __init__(self, receipts: Receipts) -> None:
        self.receipts = receipts

    def push_structured_event(self, event: Any) -> None:
        if event.header.fixed_header.event_type.type_name == "Counter":
            self.receipts.got()

    def offer_change(self, added: Any, removed: Any) -> None:
        pass

    def disconnect_structured_push_consumer(self) -> None:
        pass


def in_process(n: int, rounds: int) -> dict[str, list[float]]:
    """Events/s of a typed push through a filter, and of the structured push of the
    same events through the same filter (module docstring)."""
    import CosNotifyFilter

    from cosnotify.typed.channel import TypedEventChannelFactory
    from cosnotify.typed.events import to_structured

    rates: dict[str, list[float]] = {"typed": [], "structured": [], "structured, built": []}
    with TypedEventChannelFactory(idl=[IDL]) as factory:
        drinking = factory.interfaces.lookup("Coffee").operations["drinking_coffee"]
        events = [to_structured(drinking, ["Jane", i]) for i in range(n)]
        for _ in range(rounds):
            for kind in list(rates):
                channel, _ = factory.create_typed_channel([], [])
                puller, _ = channel._get_default_consumer_admin() \
                    .obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
                puller.connect_structured_pull_consumer(None)
                admin = channel._get_default_supplier_admin()
                if kind == "typed":
                    proxy, _ = admin.obtain_typed_notification_push_consumer("Coffee")
                    proxy.connect_typed_push_supplier(None)
                else:
                    proxy, _ = admin.obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
                    proxy.connect_structured_push_supplier(None)
                flt = factory._get_filter_factory().create_filter("EXTENDED_TCL")
                flt.add_constraints([CosNotifyFilter.ConstraintExp([], "$minutes >= 0")])
                proxy.add_filter(flt)
                start = time.perf_counter()
                if kind == "typed":
                    call = proxy.get_typed_consumer().drinking_coffee
                    for i in range(n):
                        call("Jane", i)
                elif kind == "structured":
                    push = proxy.push_structured_event
                    for event in events:
                        push(event)
                else:  # the supplier builds each event, as a typed call's is built
                    push = proxy.push_structured_event
                    for i in range(n):
                        push(to_structured(drinking, ["Jane", i]))
                assert factory.service.dispatcher.wait_idle()
                rates[kind].append(n / (time.perf_counter() - start))
                channel.destroy()
    return rates


def relay(n: int, rounds: int) -> dict[str, list[float]]:
    """Relayed events/s of the typed and the structured relay, in turns (module
    docstring); each list has one figure per round."""
    orb = connect.client_orb()
    orb.resolve_initial_references("RootPOA")._get_the_POAManager().activate()
    coffee = InterfaceRepository()
    coffee.load([IDL])
    skeleton = coffee.lookup("Coffee").skeleton
    typed_program = build_typed_supplier()
    cxx = harness.build_programs()
    rates: dict[str, list[float]] = {"typed": [], "structured": []}
    with tempfile.TemporaryDirectory() as scratch:
        server = harness.NotifyServer(pathlib.Path(scratch), extra=["--idl", str(IDL)])
        try:
            url = server.factory_url.split("#", 1)[0]
            typed_factory = orb.string_to_object(f"{url}#TypedNotifyEventChannelFactory")
            typed_factory = typed_factory._narrow(TCA.TypedEventChannelFactory)
            factory = orb.string_to_object(server.ior)._narrow(CA.EventChannelFactory)
            for _ in range(rounds):
                # typed
                channel, _ = typed_factory.create_typed_channel([], [])
                receipts = Receipts(n)
                pusher, _ = channel._get_default_consumer_admin() \
                    .obtain_typed_notification_push_supplier("Coffee")
                pusher.connect_typed_push_consumer(
                    typed_push_consumer(skeleton, receipts.got))
                done = harness.run([typed_program, orb.object_to_string(channel), str(n)],
                                   timeout=300)
                receipts.wait()
                rates["typed"].append(n / ((receipts.last_ns - int(done["start_ns"])) / 1e9))
                channel.destroy()
                # structured
                channel, _ = factory.create_channel([], [])
                receipts = Receipts(n)
                proxy, _ = channel._get_default_consumer_admin() \
                    .obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
                proxy = proxy._narrow(CA.StructuredProxyPushSupplier)
                proxy.connect_structured_push_consumer(StructuredConsumer(receipts)._this())
                done = harness.run([cxx["notify_supplier"], "structured", "--channel",
                                    orb.object_to_string(channel), "--count", str(n)],
                                   timeout=300)
                receipts.wait()
                rates["structured"].append(n / ((receipts.last_ns - int(done["start_ns"]))
                                                / 1e9))
                channel.destroy()
        finally:
            server.stop()
    return rates


def report(n: int, rounds: int) -> None:
    """Measure and print both parts (what ``remote_bench.py --typed`` prints too)."""
    rates = relay(n, rounds)
    print(f"\n{n:,} events per run, one per call, {rounds} rounds in turns; relayed "
          "events/s, C++ supplier -> cosnotify serve -> omniORBpy consumer (median)")
    print_rates(rates)
    ratio = median(rates["typed"]) / median(rates["structured"])
    print(f"  typed / structured: {ratio:.0%}   (goal: >= 70%)")
    local = in_process(n * 10, rounds)
    print(f"\nin process, {n * 10:,} events per run through a filter ($minutes >= 0) on "
          "the supplier proxy, to a structured pull proxy; events/s (median)")
    print_rates(local)
    print(f"  typed / structured: {median(local['typed']) / median(local['structured']):.0%}; "
          f"typed / structured, built per push: "
          f"{median(local['typed']) / median(local['structured, built']):.0%}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"{cpu_model()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.1f}")
    report(args.events, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
