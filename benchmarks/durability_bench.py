"""Durability benchmark: persistent events through ``cosnotify serve``, restart, and memory.

Strategy: three parts, each printing ratios measured side by side in the
same run, with the machine noted (docs/performance.md, "Durability"). The
memory part runs first, while this process holds nothing else.

1. **Relay.** As in ``remote_bench.py``, every party is its own process on
   loopback: ``cosnotify serve --db PATH --db-sync MODE`` (a new server and a
   new store file per run), one C++ supplier and one C++ consumer (the
   programs of ``tests/interop/notify/cxx/``). This process makes the channel
   through omniORBpy and hands its IOR to both programs (``--channel``).
   The persistent channel has ConnectionReliability and EventReliability
   Persistent; the best-effort one default QoS on the same kind of server
   (also with ``--db``), so only the QoS differs. Two shapes: structured
   push, one event per call (each push waits for its own commit), and
   sequences of 100 (one commit per batch). Cases take turns (round-robin)
   so drift on a shared machine hits them alike; ratios are taken within a
   round. The **floor** is plain ``sqlite3`` writing the store's own rows (an
   ``events`` row of the size of the encoded C++ event and a ``pending``
   row) in the same WAL mode and ``synchronous`` level, one commit per batch
   of 1 or 100, run just before and just after each persistent run (fsync
   times on a shared VM drift within seconds); its mean is that run's floor.
2. **Restart.** Built in process on an ``SQLiteStore``: one persistent
   channel with 1,000 structured push proxy suppliers, each connected to a
   consumer servant of this process and suspended, and 100 events pushed in
   batches (100 x 1,000 = 100,000 stored copies). The factory and store are
   closed, then ``EventChannelFactory(store=SQLiteStore(path))`` (the
   restore) is timed, and so is ``cosnotify serve --db PATH`` from its start
   to its "serving" log line, beside the same server on an empty store. A
   second state has the same 1,000 proxies but 100,000 distinct events
   (waiting for one of them), to show what the number of events costs.
3. **Memory.** In process: one persistent channel, one structured push
   proxy supplier connected and suspended (a stuck consumer), and a sequence
   supplier pushing ``--events`` events in batches of 1,000. This process's
   RSS (``VmRSS``) is sampled every tenth of the way. A durable proxy keeps at
   most ``durable.WINDOW`` copies in memory; the rest wait on disk.
4. **In process** (``--parts inproc``, not in the default run):
   ``benchmarks/durability_inproc.py``, the pure-Python channel without a
   server, persistent against best effort, side by side.

No timing is asserted. The default run takes about 2 minutes on the
development VM, ``--quick`` (a smoke run) about 30 seconds. Usage::

    .venv/bin/python benchmarks/durability_bench.py [--runs 5] [--quick]
        [--parts relay,restart,rss,inproc] [--events 1000000] [--profile CASE]

``--profile structured/full`` (any ``shape/reliability`` of part 1) records
the server with py-spy during one run of that case and prints its hottest
functions.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import platform
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from machine import cpu_model, tool_version  # benchmarks/machine.py, beside this script
from omniORB import CORBA
from remote_bench import print_hot_spots  # the same py-spy summary
from store_bench import filesystem
from store_bench import floor as store_floor

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyComm__POA

from cosnotify.channel import durable
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.store import MemoryStore
from cosnotify.store.sqlite import SQLiteStore
from tests.interop.notify import harness

#: ConnectionReliability and EventReliability Persistent (section 2.5.5.1).
PERSISTENT_QOS = [N.Property("ConnectionReliability", CORBA.Any(CORBA.TC_short, N.Persistent)),
                  N.Property("EventReliability", CORBA.Any(CORBA.TC_short, N.Persistent))]
SHAPES = {"structured": ("structured push, 1 event per call", 1),
          "sequence": ("sequence push, batches of 100", 100)}
RELIABILITIES = {"best": "best-effort", "full": "persistent, --db-sync full",
                 "normal": "persistent, --db-sync normal"}
SYNC = {"full": "FULL", "normal": "NORMAL"}


# -- what every part prints ----------------------------------------------------------------
def machine_info(folder: str) -> list[str]:
    return [f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs)",
            (f"Python: {platform.python_implementation()} {platform.python_version()}, "
             f"SQLite {sqlite3.sqlite_version}"),
            f"omniORB (C++ clients): {tool_version(['pkg-config', '--modversion', 'omniORB4'])}",
            f"OS: {platform.platform()}",
            f"stores in {folder}: {filesystem(os.path.realpath(folder))}"]


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def rss_mib() -> float:
    """This process's resident set (``VmRSS``), MiB."""
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def counter_event(n: int) -> Any:
    """The C++ programs' Test/Counter event (notify_common.hh), in omniORBpy values."""
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("Test", "Counter"), f"e{n}"), []),
        [N.Property("n", CORBA.Any(CORBA.TC_long, n))], CORBA.Any(CORBA.TC_long, n))


def encoded_size() -> int:
    """Bytes the store keeps for one C++ counter event: one pushed through a channel."""
    store = MemoryStore()
    with EventChannelFactory(store=store) as factory:
        channel, _ = factory.create_channel(PERSISTENT_QOS, [])
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        sequence_supplier(channel).push_structured_events([counter_event(12345)])
        (stored,) = store.pending(proxy._durable_path())
        return len(stored.data)


def remove_store(path: pathlib.Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")


# -- part 1: relay through cosnotify serve, and the SQLite floor ------------------------------
def floor(path: pathlib.Path, events: int, batch: int, synchronous: str, size: int) -> float:
    """``store_bench.floor`` with the relayed event's size (``size`` bytes); events/s."""
    try:
        return float(store_floor(str(path), events, batch, synchronous, b"e" * size,
                                 "ch/0/ca/0/1"))
    finally:
        remove_store(path)


class Relay:
    """Runs of part 1: a new server and store per run, C++ clients, a channel made here."""

    def __init__(self, orb: Any, workdir: pathlib.Path) -> None:
        self.orb = orb
        self.workdir = workdir
        self.cxx = harness.build_programs()
        self.runs = 0

    @contextlib.contextmanager
    def channel(self, reliability: str) -> Iterator[tuple[harness.NotifyServer, str]]:
        """A server on a new store, and the IOR of a new channel on it."""
        self.runs += 1
        db = self.workdir / f"relay-{self.runs}.db"
        server = harness.NotifyServer(self.workdir, extra=[
            "--db", str(db), "--db-sync", "normal" if reliability == "normal" else "full"])
        try:
            factory = self.orb.string_to_object(server.ior)._narrow(CA.EventChannelFactory)
            channel, _ = factory.create_channel([] if reliability == "best" else PERSISTENT_QOS,
                                                [])
            yield server, self.orb.object_to_string(channel)
        finally:
            server.stop()
            remove_store(db)
            server.log_path.unlink(missing_ok=True)

    def pair(self, shape: str, channel: str, count: int) -> tuple[float, float]:
        """Events/s relayed (first push to last receipt) and accepted (the supplier's)."""
        if shape == "structured":
            consumer_args, supplier_args = ["structured-push"], ["structured"]
        else:
            consumer_args = ["sequence-push", "--batch", "100", "--pacing", "0",
                             "--expect", str(count)]
            supplier_args = ["sequence", "--batch", "100", "--no-end"]
        wait = str(max(60, count // 100))
        with harness.Program([self.cxx["notify_consumer"], *consumer_args, "--channel", channel,
                              "--quiet", "--destroy", "--wait", wait,
                              "--timeout", str(int(wait) + 60)]) as consumer:
            consumer.wait_for("ready", 60)
            supplied = harness.run([self.cxx["notify_supplier"], *supplier_args,
                                    "--channel", channel, "--count", str(count),
                                    "--timeout", str(int(wait) + 60)], timeout=int(wait) + 90)
            got = consumer.finish(int(wait) + 90)
        if int(got["received"]) != count or got["in_order"] != "1":
            raise RuntimeError(f"consumer got {got['received']} of {count} events "
                               f"(in order: {got['in_order']})")
        start = int(supplied["start_ns"])
        return (count / ((int(got["last_ns"]) - start) / 1e9),
                count / ((int(supplied["end_ns"]) - start) / 1e9))

    def run(self, shape: str, reliability: str, count: int) -> tuple[float, float]:
        with self.channel(reliability) as (_, channel):
            return self.pair(shape, channel, count)

    def profile(self, shape: str, reliability: str, count: int, out: pathlib.Path) -> None:
        py_spy = shutil.which("py-spy") or str(pathlib.Path(sys.executable).parent / "py-spy")
        with self.channel(reliability) as (server, channel), \
                harness.Program([py_spy, "record", "-f", "raw", "--gil", "--nonblocking",
                                 "-r", "200", "-o", str(out), "--pid", str(server.pid)]) as spy:
            time.sleep(1)  # py-spy attaches
            rate, _ = self.pair(shape, channel, count)
            spy.proc.send_signal(2)  # SIGINT: py-spy writes its output and exits
            spy.proc.wait(60)
        print(f"profiled run of {shape}/{reliability}: {rate:,.0f} events/s relayed")
        print_hot_spots(out)


def relay_part(orb: Any, workdir: pathlib.Path, args: argparse.Namespace) -> None:
    relay = Relay(orb, workdir)
    size = encoded_size()
    counts = {"structured": args.structured_events, "sequence": args.sequence_events}
    print(f"\n== relay: 1 C++ supplier -> cosnotify serve --db -> 1 C++ consumer, IIOP on "
          f"127.0.0.1\n{counts['structured']:,} structured / {counts['sequence']:,} sequenced "
          f"events per run, a new server and store per run, {args.runs} round(s) after a warm-up;"
          f"\nfloor: sqlite3, the store's rows ({size}-byte events, the encoded C++ event), "
          f"WAL, one commit per batch,\nrun just before and just after each persistent run "
          f"(their mean)")
    cases = [(shape, rel) for shape in SHAPES for rel in RELIABILITIES]
    for shape, rel in cases:  # warm-up: the C++ build, page cache, imports
        relay.run(shape, rel, min(1000, counts[shape]))
    rates: dict[tuple[str, str], list[float]] = {case: [] for case in cases}
    accepted: dict[tuple[str, str], list[float]] = {case: [] for case in cases}
    floors: dict[tuple[str, str], list[float]] = {}

    def floor_of(shape: str, rel: str) -> float:
        batch = SHAPES[shape][1]
        return floor(workdir / "floor.db", args.floor_events * (1 if batch == 1 else 20), batch,
                     SYNC[rel], size)

    for round_no in range(args.runs):
        for shape, rel in cases:
            before = floor_of(shape, rel) if rel in SYNC else 0.0
            relayed, took = relay.run(shape, rel, counts[shape])
            rates[shape, rel].append(relayed)
            accepted[shape, rel].append(took)
            if rel in SYNC:  # fsync times drift within seconds: the floor on both sides
                floors.setdefault((shape, rel), []).append((before + floor_of(shape, rel)) / 2)
        print(f"round {round_no + 1}: " + ", ".join(
            f"{shape}/{rel} {rates[shape, rel][-1]:,.0f}" for shape, rel in cases)
              + f"  (load {load()})", flush=True)

    def spread(xs: list[float]) -> str:
        return f"{statistics.median(xs):>9,.0f} {min(xs):>9,.0f} {max(xs):>9,.0f}"

    print(f"\n{'events/s relayed':<62} {'median':>9} {'min':>9} {'max':>9}   {'accepted':>9}")
    for shape, rel in cases:
        label = f"{SHAPES[shape][0]}, {RELIABILITIES[rel]}"
        print(f"{label:<62} {spread(rates[shape, rel])}   "
              f"{statistics.median(accepted[shape, rel]):>9,.0f}")
    for (shape, rel), values in floors.items():
        label = f"floor: sqlite3, batch of {SHAPES[shape][1]}, synchronous={SYNC[rel]}"
        print(f"{label:<62} {spread(values)}")
    print("(relayed: first push to last receipt; accepted: the supplier's push rate, median)")

    def per_round(top: list[float], bottom: list[float]) -> str:
        ratios = [a / b for a, b in zip(top, bottom, strict=True)]
        return (f"{100 * statistics.median(ratios):5.1f}% "
                f"(per round {100 * min(ratios):.1f}-{100 * max(ratios):.1f}%)")

    print("\npersistent / best-effort, same rounds (goal >= 50%):")
    for shape in SHAPES:
        for rel in SYNC:
            print(f"  {SHAPES[shape][0]:<34} --db-sync {rel:<7}"
                  f"{per_round(rates[shape, rel], rates[shape, 'best'])}")
    print("persistent / the SQLite floor at the same batch size and synchronous level:")
    for shape in SHAPES:
        for rel in SYNC:
            print(f"  {SHAPES[shape][0]:<34} --db-sync {rel:<7}"
                  f"{per_round(rates[shape, rel], floors[shape, rel])}")


# -- parts 2 and 3: in process -----------------------------------------------------------------
class StuckConsumer(CosNotifyComm__POA.StructuredPushConsumer):
    """A structured push consumer whose proxy is suspended: nothing reaches it."""

    def __init__(self) -> None:
        self.received = 0

    def push_structured_event(self, event: Any) -> None:
        self.received += 1

    def offer_change(self, added: Any, removed: Any) -> None:
        pass

    def disconnect_structured_push_consumer(self) -> None:
        pass


def stuck_proxies(orb: Any, channel: Any, count: int, keep: list[Any]) -> list[Any]:
    """``count`` structured push proxy suppliers, each connected to its own servant of this
    process and suspended."""
    poa = orb.resolve_initial_references("RootPOA")
    admin = channel._get_default_consumer_admin()
    proxies = []
    for _ in range(count):
        servant = StuckConsumer()
        keep.append(servant)
        proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(poa.servant_to_reference(servant))
        proxy.suspend_connection()
        proxies.append(proxy)
    return proxies


def sequence_supplier(channel: Any) -> Any:
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.SEQUENCE_EVENT)
    proxy.connect_sequence_push_supplier(None)
    return proxy


def push_batches(supplier: Any, events: int, batch: int, first: int = 0,
                 every: int = 0, sample: Callable[[int], None] | None = None) -> float:
    """Push ``events`` new counter events in batches; events/s accepted."""
    started = time.perf_counter()
    for start in range(first, first + events, batch):
        supplier.push_structured_events(
            [counter_event(n) for n in range(start, min(start + batch, first + events))])
        done = start + batch - first
        if sample is not None and every and done % every == 0:
            sample(done)
    return events / (time.perf_counter() - started)


def restore_seconds(path: pathlib.Path) -> tuple[float, int, int, int]:
    """Open the store and restore the factory: (seconds, proxies, copies the last proxy
    holds, copies read back into memory by the restore)."""
    started = time.perf_counter()
    store = SQLiteStore(path)
    factory = EventChannelFactory(store=store)
    took = time.perf_counter() - started
    proxies = held = resident = 0
    for channel_id in factory.get_all_channels():
        admin = factory.get_event_channel(channel_id)._get_default_consumer_admin()
        ids = admin._get_push_suppliers()
        proxies += len(ids)
        for proxy_id in ids:
            proxy = admin.get_proxy_supplier(proxy_id)
            queue = getattr(getattr(proxy, "_queue", None), "durable", None)
            resident += len(queue.resident) if queue is not None else 0
        if ids:
            held = max(held, store.pending_count(admin.get_proxy_supplier(ids[-1])
                                                 ._durable_path()))
    factory.close()
    store.close()
    return took, proxies, held, resident


def serve_seconds(workdir: pathlib.Path, path: pathlib.Path) -> float:
    """``cosnotify serve --db path``: seconds from its start to its "serving" log line."""
    started = time.perf_counter()
    server = harness.NotifyServer(workdir, extra=["--db", str(path)])
    took = time.perf_counter() - started
    server.stop()
    server.log_path.unlink(missing_ok=True)
    return took


def restart_part(orb: Any, workdir: pathlib.Path, args: argparse.Namespace) -> None:
    proxies, events = args.proxies, args.restart_events
    print(f"\n== restart: {proxies:,} suspended structured push proxies (consumers: servants "
          f"of this process), {events} events to each: {proxies * events:,} stored copies")
    servants: list[Any] = []
    states = {}
    started = time.perf_counter()
    path = workdir / "restart-copies.db"
    store = SQLiteStore(path)
    factory = EventChannelFactory(store=store)
    channel, _ = factory.create_channel(PERSISTENT_QOS, [])
    stuck_proxies(orb, channel, proxies, servants)
    push_batches(sequence_supplier(channel), events, 10)
    factory.close()
    store.close()
    states["A"] = (path, f"{proxies:,} proxies x {events} events = {proxies * events:,} copies")
    built_a = time.perf_counter() - started

    started = time.perf_counter()
    path = workdir / "restart-events.db"
    store = SQLiteStore(path)
    factory = EventChannelFactory(store=store)
    channel, _ = factory.create_channel(PERSISTENT_QOS, [])
    stuck_proxies(orb, channel, proxies - 1, servants)
    channel, _ = factory.create_channel(PERSISTENT_QOS, [])
    stuck_proxies(orb, channel, 1, servants)
    distinct = proxies * events
    push_batches(sequence_supplier(channel), distinct, 1000)
    factory.close()
    store.close()
    states["B"] = (path, f"{proxies - 1:,} proxies without events + 1 with {distinct:,}")
    built_b = time.perf_counter() - started
    for name, built in [("A", built_a), ("B", built_b)]:
        state_path, text = states[name]
        print(f"state {name}: {text}; built in {built:.1f} s, "
              f"{state_path.stat().st_size / 2**20:.1f} MiB")

    empty = workdir / "restart-empty.db"
    SQLiteStore(empty).close()
    restores: dict[str, list[float]] = {}
    serves: dict[str, list[float]] = {}
    checks: dict[str, tuple[int, int, int]] = {}
    for _ in range(args.restarts):
        for name, (state_path, _) in [*states.items(), ("empty", (empty, ""))]:
            took, restored, held, resident = restore_seconds(state_path)
            checks[name] = (restored, held, resident)
            restores.setdefault(name, []).append(took)
            serves.setdefault(name, []).append(serve_seconds(workdir, state_path))
    print(f"\n{'seconds, median of ' + str(args.restarts):<24} {'restore in process':>19}"
          f" {'serve to serving':>17}   proxies, copies of the last, copies in memory")
    for name in [*states, "empty"]:
        restored, held, resident = checks[name]
        print(f"{('state ' + name) if name != 'empty' else 'empty store':<24} "
              f"{statistics.median(restores[name]):>19.3f} {statistics.median(serves[name]):>17.3f}"
              f"   {restored:,}, {held:,}, {resident:,}")
    print("(restore in process: SQLiteStore(path) + EventChannelFactory(store=...); serve: "
          "process start to its 'serving' log line)")
    for name in states:
        print(f"state {name}, all restores (s): "
              + ", ".join(f"{x:.3f}" for x in restores[name])
              + "; serve: " + ", ".join(f"{x:.2f}" for x in serves[name]))
    for name in states:
        remove_store(states[name][0])


def rss_part(orb: Any, workdir: pathlib.Path, args: argparse.Namespace) -> None:
    events, batch = args.events, min(1000, args.events // 10)
    every = events // 10
    print(f"\n== memory: {events:,} persistent events in batches of {batch} for one "
          f"suspended (stuck) consumer; VmRSS every {every:,} events; window "
          f"{durable.WINDOW:,} copies in memory")
    path = workdir / "rss.db"
    servants: list[Any] = []
    store = SQLiteStore(path)
    factory = EventChannelFactory(store=store)
    try:
        channel, _ = factory.create_channel(PERSISTENT_QOS, [])
        (proxy,) = stuck_proxies(orb, channel, 1, servants)
        supplier = sequence_supplier(channel)
        series: list[tuple[int, float, float]] = []
        before = rss_mib()
        started = time.perf_counter()

        def sample(done: int) -> None:
            series.append((done, rss_mib(), time.perf_counter() - started))

        rate = push_batches(supplier, events, batch, every=every, sample=sample)
        pending = store.pending_count(proxy._durable_path())
        print(f"RSS before the first push: {before:.1f} MiB")
        print(f"{'events pushed':>14} {'VmRSS MiB':>10} {'seconds':>8}")
        for done, rss, at in series:
            print(f"{done:>14,} {rss:>10.1f} {at:>8.1f}")
        first, last = series[0], series[-1]
        print(f"growth from {first[0]:,} to {last[0]:,} events: {last[1] - first[1]:+.1f} MiB "
              f"({(last[1] - first[1]) * 2**20 / (last[0] - first[0]):+.1f} bytes per event); "
              f"first {first[0]:,}: {first[1] - before:+.1f} MiB")
        print(f"accepted {rate:,.0f} events/s; the store holds {pending:,} copies for the "
              f"proxy, {len(proxy._queue.durable.resident):,} in memory; file "
              f"{path.stat().st_size / 2**20:.0f} MiB")
    finally:
        factory.close()
        store.close()
        remove_store(path)


# -- main --------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", default="relay,restart,rss",
                        help="comma-separated: relay, restart, rss, inproc")
    parser.add_argument("--runs", type=int, default=5, help="relay rounds (after a warm-up)")
    parser.add_argument("--structured-events", type=int, default=5000,
                        help="events per structured relay run")
    parser.add_argument("--sequence-events", type=int, default=50000,
                        help="events per sequence relay run")
    parser.add_argument("--floor-events", type=int, default=1000,
                        help="events per floor run of batch 1 (x20 for batches of 100)")
    parser.add_argument("--proxies", type=int, default=1000, help="proxies in the restart state")
    parser.add_argument("--restart-events", type=int, default=100,
                        help="events to each proxy in the restart state")
    parser.add_argument("--restarts", type=int, default=3, help="timed restarts of each state")
    parser.add_argument("--events", type=int, default=1_000_000,
                        help="events pushed for the stuck consumer (memory part)")
    parser.add_argument("--quick", action="store_true", help="a smoke run (under 2 minutes)")
    parser.add_argument("--dir", default=None, help="where the stores go (default: temp dir)")
    parser.add_argument("--profile", choices=[f"{s}/{r}" for s in SHAPES for r in RELIABILITIES],
                        help="py-spy the server in one relay case instead")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.structured_events, args.sequence_events = 1, 1000, 10000
        args.floor_events, args.restarts = 300, 1
        args.events = min(args.events, 100_000)
    parts = args.parts.split(",")

    orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)
    orb.resolve_initial_references("RootPOA")._get_the_POAManager().activate()
    with tempfile.TemporaryDirectory(prefix="durability-bench-", dir=args.dir) as tmp:
        workdir = pathlib.Path(tmp)
        for line in machine_info(tmp):
            print(line)
        print(f"load average at start: {load()}", flush=True)
        try:
            if args.profile:
                shape, rel = args.profile.split("/")
                Relay(orb, workdir).profile(shape, rel, args.structured_events if shape ==
                                            "structured" else args.sequence_events,
                                            workdir / "profile.txt")
                return 0
            if "rss" in parts:  # first, while this process holds nothing else
                rss_part(orb, workdir, args)
            if "relay" in parts:
                relay_part(orb, workdir, args)
            if "restart" in parts:
                restart_part(orb, workdir, args)
            if "inproc" in parts:
                import durability_inproc  # benchmarks/, beside this script

                durability_inproc.run(orb, runs=args.runs)
        except harness.Unavailable as exc:
            print(f"cannot run: {exc}", file=sys.stderr)
            return 1
        print(f"\nload average at end: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
