"""The main job, end to end, over IIOP: server -> supplier -> filter -> consumer -> Spark.

Run with ``make demo`` (or ``.venv/bin/python examples/demo.py``). Every
number printed is measured in this run.

1. ``cosnotify serve`` starts as a separate process on 127.0.0.1 (a free
   port) with its embedded NameService.
2. This process is the client. It resolves the EventChannelFactory by
   ``corbaname`` through that naming service, creates a channel and a consumer
   admin, and attaches an EXTENDED_TCL filter made by the server's
   FilterFactory. The filter runs in the server.
3. Two consumers join that admin over IIOP: a StructuredPushConsumer served
   by this process's ORB, and a remote ``spark_bridge.SparkSinkProxy`` that
   turns each delivered batch into a Spark DataFrame.
4. A supplier pushes TMF-814-style alarms of five severities. Only critical
   and major ones pass the filter, and both consumers receive them.
5. The DataFrame is queried: rows per severity, and ``tcl_filter`` running
   the constraint language inside Spark.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from typing import Any

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from omniORB import CORBA

import CosNaming
import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyComm__POA
import CosNotifyFilter

TOTAL = 1000
SEVERITIES = ["critical", "major", "minor", "warning", "cleared"]
CONSTRAINT = "$severity == 'critical' or $severity == 'major'"
WAIT = 120.0


def alarm(i: int) -> Any:
    """A TMF-814-style alarm as a StructuredEvent."""
    severity = SEVERITIES[i % len(SEVERITIES)]
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("Telecom", "CommunicationsAlarm"),
                                         f"alarm-{i}"),
                      [N.Property("Priority", CORBA.Any(CORBA.TC_short, 4 - i % 5))]),
        [N.Property("severity", CORBA.Any(CORBA.TC_string, severity)),
         N.Property("ne", CORBA.Any(CORBA.TC_string, f"NE-{i % 7}")),
         N.Property("sequence", CORBA.Any(CORBA.TC_long, i))],
        CORBA.Any(CORBA.TC_string, f"probable cause {i % 3}"))


class Consumer(CosNotifyComm__POA.StructuredPushConsumer):
    """Counts what the server pushes to it; ``done`` once ``expected`` arrived."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.counts: dict[str, int] = {}
        self.received = 0
        self.done = threading.Event()
        self.disconnected = threading.Event()

    def push_structured_event(self, event: Any) -> None:
        severity = event.filterable_data[0].value.value()
        self.counts[severity] = self.counts.get(severity, 0) + 1
        self.received += 1
        if self.received >= self.expected:
            self.done.set()

    def offer_change(self, added: Any, removed: Any) -> None:
        pass

    def disconnect_structured_push_consumer(self) -> None:
        self.disconnected.set()


class Server:
    """``python -m cosnotify serve`` in a child process; ``url`` once it serves."""

    _READY = re.compile(r"serving \S+ at (\S+) \(naming (\S+)\)")

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cosnotify", "serve", "--endpoint", "127.0.0.1:0",
             "--call-timeout", "60"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True)
        self.url = self.naming = ""
        self.log: list[str] = []
        self._ready = threading.Event()
        threading.Thread(target=self._read, name="server-log", daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.log.append(line.rstrip())
            found = self._READY.search(line)
            if found:
                self.url, self.naming = found.group(1), found.group(2)
                self._ready.set()
        self._ready.set()  # the server exited: stop waiting

    def wait_ready(self) -> bool:
        return self._ready.wait(WAIT) and bool(self.url)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def step(title: str) -> None:
    print(f"\n== {title}", flush=True)


def spark_session() -> Any:
    """A local SparkSession on loopback, using this interpreter for the workers."""
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("cosnotify-demo")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run(server: Server, orb: Any) -> int:
    import spark_bridge

    step("2. the client resolves the factory through the embedded NameService")
    naming = orb.string_to_object(server.naming)._narrow(CosNaming.NamingContext)
    bound = [b.binding_name[0].id for b in naming.list(10)[0]]
    print(f"NameService at {server.naming} lists: {bound}")
    factory = orb.string_to_object(server.url)._narrow(CA.EventChannelFactory)
    channel, channel_id = factory.create_channel([], [])
    print(f"created channel {channel_id} in the server")
    admin, admin_id = channel.new_for_consumers(CA.AND_OP)
    flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
    flt.add_constraints([CosNotifyFilter.ConstraintExp(
        [N.EventType("Telecom", "CommunicationsAlarm")], CONSTRAINT)])
    admin.add_filter(flt)
    print(f"consumer admin {admin_id} filters (in the server) with: {CONSTRAINT}")

    step("3. two consumers join that admin over IIOP")
    expected = sum(1 for i in range(TOTAL) if SEVERITIES[i % 5] in ("critical", "major"))
    poa = orb.resolve_initial_references("RootPOA")
    poa._get_the_POAManager().activate()
    consumer = Consumer(expected)
    proxy, proxy_id = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
    proxy = proxy._narrow(CA.StructuredProxyPushSupplier)
    proxy.connect_structured_push_consumer(poa.servant_to_reference(consumer))
    print(f"StructuredPushConsumer (served here) connected to proxy {proxy_id}")
    print("starting a local SparkSession (this takes a few seconds) ...", flush=True)
    spark = spark_session()
    frames: list[Any] = []
    sink = spark_bridge.SparkSinkProxy.attach_remote(
        orb.object_to_string(channel), spark, orb=orb, admin_id=admin_id,
        max_batch_size=100, pacing_interval=0.5,
        callback=lambda df, batch_id: frames.append(df))
    print("SparkSinkProxy (served here) connected as a sequence consumer, batches of <= 100")

    step("4. a supplier pushes alarms of five severities")
    entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    entry = entry._narrow(CA.StructuredProxyPushConsumer)
    entry.connect_structured_push_supplier(None)
    started = time.perf_counter()
    for i in range(TOTAL):
        entry.push_structured_event(alarm(i))
    pushed = time.perf_counter() - started
    print(f"pushed {TOTAL} events in {pushed * 1000:.0f} ms ({TOTAL / pushed:,.0f} events/s, "
          "one IIOP call each)")
    if not consumer.done.wait(WAIT):
        print(f"ERROR: the consumer got {consumer.received} of {expected} events")
        return 1
    delivered = time.perf_counter() - started
    print(f"consumer received {consumer.received} events {delivered * 1000:.0f} ms after the first"
          f" push ({expected} of the {TOTAL} match the constraint): "
          f"{dict(sorted(consumer.counts.items()))}")

    step("5. the same events in a Spark DataFrame")
    landed = sink.wait(lambda stats: stats.written >= expected, timeout=WAIT)
    sink.close()
    if not landed or not frames:
        print(f"ERROR: the sink wrote {sink.stats().written} of {expected} events")
        return 1
    df = frames[0]
    for more in frames[1:]:
        df = df.unionByName(more)
    print(f"{df.count()} rows in {len(frames)} micro-batches; columns: {', '.join(df.columns)}")
    severity = spark_bridge.property_value("severity", as_type="string")
    for row in df.groupBy(severity.alias("severity")).count().orderBy("severity").collect():
        print(f"  severity={row['severity']}: {row['count']} rows")
    critical = "$severity == 'critical' and $Priority == 4"
    print(f"tcl_filter(df, \"{critical}\") in Spark: "
          f"{spark_bridge.tcl_filter(df, critical).count()} rows "
          f"({spark_bridge.translate(critical).mode})")
    spark.stop()
    proxy.disconnect_structured_push_supplier()
    entry.disconnect_structured_push_consumer()
    channel.destroy()
    return 0


def main() -> int:
    step("1. channel server on 127.0.0.1 with embedded naming")
    server = Server()
    if not server.wait_ready():
        print("ERROR: the server did not start:\n  " + "\n  ".join(server.log))
        server.stop()
        return 1
    print(f"cosnotify serve (pid {server.process.pid}) serves {server.url}")
    orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)
    try:
        status = run(server, orb)
    finally:
        orb.shutdown(True)
        orb.destroy()
        code = server.stop()
    step("6. shutdown")
    print(f"the server stopped on SIGTERM with exit status {code}")
    return status or (1 if code else 0)


if __name__ == "__main__":
    sys.exit(main())
