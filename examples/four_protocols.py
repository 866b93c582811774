"""One service, four kinds of client: Eventer, Elvin 4, CORBA and Spark on one channel.

Run with ``.venv/bin/python examples/four_protocols.py`` (``make demo`` sets up the
venv). Every line printed is measured in this run (docs/protocols.md).

1. ``cosnotify serve`` starts as a child process on 127.0.0.1 with a SQLite
   store, its Elvin 4 front end and its Eventer front end; both serve the
   channel named ``default`` (the Eventer front end makes it keep a history).
2. Three subscribers join: an Elvin client subscribing ``type_name == "alarm"``
   (ELVIN4), a CORBA structured pull consumer filtering ``$type_name ==
   'alarm'`` (EXTENDED_TCL, in the server), and an Eventer client subscribed
   to ``plant/alarm/*``.
3. Three producers send an alarm and a status each: an Eventer client registers
   (hat-event 0.8.17's own client), an Elvin client emits (NotifyEmit), a CORBA
   supplier pushes over IIOP.
4. Each subscriber prints what it got: the three alarms, whoever sent them.
5. An Eventer query and a Spark batch read of the channel's history
   (``format("cosnotify_history")``) return all six events from the store.

The Elvin clients speak cosnotify's own Elvin codec (``encode_packet`` and
``Decoder``, the packets of the seed's section 7.4), so this script needs
nothing more than the venv.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter

from cosnotify.protocols.elvin.codec import NEED_DATA, Decoder, encode_packet
from cosnotify.protocols.elvin.packets import (
    ConnRply,
    ConnRqst,
    NotifyDeliver,
    NotifyEmit,
    SubAddRqst,
    SubRply,
)

WAIT = 60.0


class Server:
    """``cosnotify serve --db ... --elvin ... --eventer ...`` in a child process."""

    _READY = re.compile(r"serving \S+ at (\S+) \(naming")
    _FRONT = re.compile(r"(\w+) front end at 127\.0\.0\.1:(\d+)")

    def __init__(self, store: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cosnotify", "serve", "--endpoint", "127.0.0.1:0",
             "--db", str(store), "--db-sync", "normal",
             "--elvin", "127.0.0.1:0", "--eventer", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True)
        self.url = ""
        self.ports: dict[str, int] = {}
        self.log: list[str] = []
        self._ready = threading.Event()
        threading.Thread(target=self._read, name="server-log", daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.log.append(line.rstrip())
            front = self._FRONT.search(line)
            if front:
                self.ports[front.group(1)] = int(front.group(2))
            found = self._READY.search(line)
            if found:
                self.url = found.group(1)
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


class ElvinClient:
    """A minimal Elvin 4 client over TCP (the seed's section 8), blocking."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
        self.decoder = Decoder(1 << 20)
        self.xid = 0
        reply = self.request(lambda xid: ConnRqst(xid, 4, 0))
        assert isinstance(reply, ConnRply), reply

    def next_packet(self) -> Any:
        while True:
            packet = self.decoder.next_packet()
            if packet is not NEED_DATA:
                return packet
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("the server closed the connection")
            self.decoder.receive_data(data)

    def request(self, make: Any) -> Any:
        self.xid += 1
        self.sock.sendall(encode_packet(make(self.xid)))
        return self.next_packet()

    def subscribe(self, expression: str) -> int:
        reply = self.request(lambda xid: SubAddRqst(xid, expression))
        assert isinstance(reply, SubRply), reply
        return reply.subscription_id

    def emit(self, **attributes: Any) -> None:
        self.sock.sendall(encode_packet(NotifyEmit(tuple(attributes.items()))))

    def deliveries(self, count: int) -> list[dict[str, Any]]:
        got = []
        while len(got) < count:
            packet = self.next_packet()
            if isinstance(packet, NotifyDeliver):
                got.append(dict(packet.attributes))
        return got

    def close(self) -> None:
        self.sock.close()


def step(title: str) -> None:
    print(f"\n== {title}", flush=True)


def corba_event(type_name: str, severity: int, text: str) -> Any:
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("plant", type_name), "corba"), []),
        [N.Property("severity", CORBA.Any(CORBA.TC_long, severity)),
         N.Property("text", CORBA.Any(CORBA.TC_string, text))],
        CORBA.Any(CORBA.TC_null, None))


def origin(event: Any) -> str:
    """``plant/alarm from X``: X is who sent a structured event the consumer pulled."""
    kind = event.header.fixed_header.event_type
    sender = event.header.fixed_header.event_name  # the CORBA supplier names its events
    if not sender:
        fields = {p.name: p.value.value() for p in event.filterable_data}
        sender = fields.get("source", "eventer")  # Eventer's data is its JSON payload
    return f"{kind.domain_name}/{kind.type_name} from {sender}"


async def eventer_part(port: int, elvin_port: int, entry: Any) -> tuple[list[Any], list[Any]]:
    """Eventer subscribes and registers; the Elvin and CORBA producers send meanwhile;
    returns (the Eventer subscriber's alarms, an Eventer query's answer)."""
    from hat.event import common
    from hat.event.eventer import client as eventer

    address = f"tcp+sbs://127.0.0.1:{port}"
    subscriber = await eventer.connect(address, subscriptions=[("plant", "alarm", "*")])
    # Eventer does not acknowledge MsgSubscribe; the server reads one connection's
    # messages in order, so once a query on it is answered the subscription is in place.
    await subscriber.query(common.QueryData(max_results=1))
    producer = await eventer.connect(address)
    try:
        step("3. three producers send an alarm and a status each")
        json_payload = common.EventPayload(common.EventPayloadType.JSON,
                                           {"severity": 4, "source": "eventer"})
        made = await producer.register_with_response([
            common.RegisterEvent(("plant", "alarm", "pump-7"), None, json_payload),
            common.RegisterEvent(("plant", "status", "pump-7"), None, json_payload)])
        print(f"Eventer registered 2 events: ids {[tuple(e.event_id) for e in made if e]}")
        elvin = ElvinClient(elvin_port)
        # The status first: one connection's notifications enter the channel in order,
        # so once the alarm reached a subscriber the status is in the channel too.
        elvin.emit(domain_name="plant", type_name="status", severity=1, source="elvin")
        elvin.emit(domain_name="plant", type_name="alarm", severity=5, source="elvin")
        print("Elvin emitted 2 notifications (NotifyEmit)")
        entry.push_structured_event(corba_event("status", 0, "valve ok"))
        entry.push_structured_event(corba_event("alarm", 3, "valve stuck"))
        print("CORBA supplier pushed 2 structured events over IIOP")
        alarms: list[Any] = []
        while len(alarms) < 3:
            alarms += await asyncio.wait_for(subscriber.receive(), WAIT)
        # Every producer's alarm came after its status, and a query writes the history
        # buffered before it: all six are in the answer.
        found = await producer.query(common.QueryData(
            event_types=[("plant", "*")], order=common.Order.ASCENDING))
        elvin.close()
        return alarms, found
    finally:
        await subscriber.async_close()
        await producer.async_close()


def run(server: Server, orb: Any) -> int:
    import spark_bridge

    factory = orb.string_to_object(server.url)._narrow(CA.EventChannelFactory)
    ids = factory.get_all_channels()
    assert ids, "the front ends made no channel"
    channel = factory.get_event_channel(ids[0])
    print(f"the front ends serve channel {ids[0]} (named 'default'); "
          f"Elvin at port {server.ports['elvin']}, Eventer at port {server.ports['eventer']}")

    step("2. three subscribers join")
    elvin_sub = ElvinClient(server.ports["elvin"])
    elvin_sub.subscribe('type_name == "alarm"')
    print('Elvin client subscribed: type_name == "alarm"')
    admin = channel._get_default_consumer_admin()
    pull, _ = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
    pull = pull._narrow(CA.StructuredProxyPullSupplier)
    flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
    flt.add_constraints([CosNotifyFilter.ConstraintExp([], "$type_name == 'alarm'")])
    pull.add_filter(flt)
    pull.connect_structured_pull_consumer(None)
    print("CORBA pull consumer connected, filter (in the server): $type_name == 'alarm'")
    print("Eventer client subscribed: plant/alarm/*")
    entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    entry = entry._narrow(CA.StructuredProxyPushConsumer)
    entry.connect_structured_push_supplier(None)

    eventer_alarms, history = asyncio.run(
        eventer_part(server.ports["eventer"], server.ports["elvin"], entry))

    step("4. each subscriber got the three alarms, whoever sent them")
    delivered = elvin_sub.deliveries(3)
    elvin_sub.close()
    print("Elvin subscriber:  " + ", ".join(sorted(
        f"{d['domain_name']}/{d['type_name']} from "
        f"{d.get('source') or d.get('event_name') or 'eventer'}" for d in delivered)))
    pulled = []
    deadline = time.monotonic() + WAIT
    while len(pulled) < 3 and time.monotonic() < deadline:
        event = pull.pull_structured_event()
        pulled.append(event)
    print("CORBA consumer:    " + ", ".join(sorted(origin(e) for e in pulled)))
    print("Eventer subscriber: " + ", ".join(sorted("/".join(e.event_type)
                                                     for e in eventer_alarms)))
    pull.disconnect_structured_pull_supplier()

    step("5. the history: an Eventer query and a Spark batch read")
    print(f"Eventer query plant/*: {len(history)} events: "
          + ", ".join("/".join(e.event_type) for e in history))
    print("starting a local SparkSession (this takes a few seconds) ...", flush=True)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("cosnotify-four-protocols")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        spark_bridge.register(spark)
        frame = (spark.read.format("cosnotify_history").option("channel", server.url)
                 .option("channel_id", str(ids[0])).load())
        rows = frame.groupBy("type_name").count().orderBy("type_name").collect()
        print("Spark, rows per type_name: "
              + ", ".join(f"{r.type_name}={r['count']}" for r in rows))
        alarms = frame.where(frame.type_name == "alarm").count()
        print(f"Spark, alarms in the history: {alarms}")
    finally:
        spark.stop()
    ok = (len(delivered) == 3 and len(pulled) == 3 and len(eventer_alarms) == 3
          and len(history) == 6 and alarms == 3)
    return 0 if ok else 1


def main() -> int:
    orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)
    with tempfile.TemporaryDirectory() as scratch:
        step("1. cosnotify serve with a store, Elvin 4 and Eventer front ends")
        server = Server(Path(scratch) / "notify.db")
        try:
            if not server.wait_ready():
                print("ERROR: the server did not start:\n" + "\n".join(server.log))
                return 1
            print(f"serving at {server.url}")
            status = run(server, orb)
        finally:
            code = server.stop()
            print(f"\nserver exit status {code}")
    orb.destroy()
    return status if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
