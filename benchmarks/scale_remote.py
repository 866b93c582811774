"""Remote consumers at scale: 1,000 push consumers in 4 processes, each with its own filter.

Strategy: every party is a process of its own on loopback. ``cosnotify serve``
(started as the interop harness starts it, embedded naming) serves one
channel. Four consumer processes (this script run as ``consumer``: omniORBpy,
one ORB each on a loopback endpoint) each connect 250 structured push
consumers, servants of that process, to the channel's default consumer
admin; each proxy gets an EXTENDED_TCL filter ``$host == 'h<i>'`` of its own,
made by the channel's default FilterFactory. In each process one consumer in
ten is *slow*: its ``push_structured_event`` blocks ``--slow-delay`` (50 ms)
per event. This process is the supplier: one StructuredProxyPushConsumer,
``--events`` (20,000) events pushed round-robin over the 1,000 hosts, each
carrying its host, its sequence number and its send time (CLOCK_MONOTONIC,
one clock for every process).

Each consumer process checks that every consumer gets exactly the events of
its host, in order, and prints a ``key=value`` line when its fast consumers
have all of theirs (``fast_done``) and when its slow ones have
(``slow_done``), with the arrival time of the last event; the coordinator
waits on those lines, never on a timer. Every run uses a new server, so its
thread count and CPU time are the run's own: ``/proc/<pid>/status``
(``Threads:``) is sampled every 10 ms from the first push to the last
delivery, and ``/proc/<pid>/stat`` gives the server's CPU time.

Two runs: the *control* with no slow consumers (the designated tenth answer
at once), then the same with the slow tenth. The fast consumers' delivery
rate is the events delivered to them over the time from the first push to
the arrival of the last of them; the ratio with-slow / control shows whether
the slow tenth holds the rest back (1.0: not at all). When the supplier is
what limits the control run (it pushes as fast as the server accepts, and
on a small machine every process competes for the same cores), that ratio
can stay near 1.0 while the fast consumers' events wait behind the slow
ones, so the table also gives the fast consumers' latency (send to
arrival) and how long after the last push their last event arrived, and
``--rate`` paces the supplier below what the control run sustains. Each
consumer process also counts the pushes in flight into it (all consumers of
one process are one client, one lane of the server's workers).

Usage: ``.venv/bin/python benchmarks/scale_remote.py [--quick] [--events N]
[--processes P] [--consumers C] [--slow-delay S] [--rate R]
[--call-timeout S] [--dump]`` (``--quick``: 200 consumers, 2,000 events).
``--dump`` runs ``py-spy dump`` on the server once while the slow run
delivers and counts its threads by their innermost cosnotify frame.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import attrs
import omniORB  # noqa: F401 - omniORB first, then the COS stubs
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyComm__POA
import CosNotifyFilter as F

NS = 1_000_000_000
#: Options of every ORB started here besides the server's: a loopback endpoint, and calls
#: to the server bounded (a hung server fails the run instead of hanging it).
CLIENT_ORB_ARGS = ["-ORBendPoint", "giop:tcp:127.0.0.1:", "-ORBclientCallTimeOutPeriod", "60000"]
#: A consumer process serves the channel's concurrent pushes on several connections.
CONSUMER_ORB_ARGS = [*CLIENT_ORB_ARGS, "-ORBconnectionWatchImmediate", "1"]


# -- the layout both sides agree on ------------------------------------------------------------
@attrs.frozen
class Layout:
    """Which consumer is where, which are slow, and how many events each must get."""

    processes: int = 4
    per_process: int = 250
    slow_per_process: int = 25
    events: int = 20_000

    def __attrs_post_init__(self) -> None:
        if self.processes < 1 or self.per_process < 1 or self.events < 0:
            raise ValueError("need at least one process and one consumer per process")
        if not 0 <= self.slow_per_process <= self.per_process:
            raise ValueError("slow_per_process must be between 0 and per_process")

    @property
    def hosts(self) -> int:
        return self.processes * self.per_process

    def first_host(self, process: int) -> int:
        return process * self.per_process

    def expected(self, host: int) -> int:
        """Events for host ``host``: event k goes to host ``k % hosts``."""
        return self.events // self.hosts + (1 if host < self.events % self.hosts else 0)

    def slow_locals(self) -> frozenset[int]:
        """Local indexes (within a process) of the slow consumers, spread evenly."""
        n, s = self.per_process, self.slow_per_process
        return frozenset((k + 1) * n // s - 1 for k in range(s)) if s else frozenset()

    def is_slow(self, host: int) -> bool:
        return host % self.per_process in self.slow_locals()

    def group_events(self, slow: bool) -> int:
        """Events due to the fast (or the slow) consumers over all processes."""
        return sum(self.expected(h) for h in range(self.hosts) if self.is_slow(h) == slow)

    def arguments(self) -> list[str]:
        return ["--processes", str(self.processes), "--per-process", str(self.per_process),
                "--slow-per-process", str(self.slow_per_process), "--events", str(self.events)]


def constraint(host: int) -> str:
    return f"$host == 'h{host}'"


# -- the consumer process ----------------------------------------------------------------------
class Tally:
    """What one consumer process has received; prints ``fast_done``/``slow_done`` lines."""

    def __init__(self, fast: int, slow: int) -> None:
        self.lock = threading.Lock()
        self.stop = threading.Event()   # set at exit: slow consumers stop blocking
        self.remaining = {"fast": fast, "slow": slow}
        self.last_ns = {"fast": 0, "slow": 0}
        self.inflight = {"fast": 0, "slow": 0}
        self.max_inflight = {"fast": 0, "slow": 0, "all": 0}
        #: Pushes in flight integrated over time (ns), from the first push to the last.
        self.area = {"fast": 0, "slow": 0}
        self.first_ns = self.changed_ns = 0

    def _advance(self) -> None:
        """Account for the time since the last change of the in-flight counts (lock held)."""
        now = time.monotonic_ns()
        if self.first_ns:
            for group, n in self.inflight.items():
                self.area[group] += n * (now - self.changed_ns)
        else:
            self.first_ns = now
        self.changed_ns = now

    def mean_inflight(self) -> dict[str, float]:
        span = self.changed_ns - self.first_ns
        return {group: area / span if span else 0.0 for group, area in self.area.items()}

    def announce_empty(self) -> None:
        """Groups with nothing to wait for are done at once."""
        with self.lock:
            for group, left in self.remaining.items():
                if left == 0:
                    print(f"{group}_done=0", flush=True)

    def enter(self, group: str) -> None:
        with self.lock:
            self._advance()
            self.inflight[group] += 1
            peak = self.max_inflight
            peak[group] = max(peak[group], self.inflight[group])
            peak["all"] = max(peak["all"], self.inflight["fast"] + self.inflight["slow"])

    def leave(self, group: str, completed_at: int) -> None:
        """One push of ``group`` ended; ``completed_at`` (ns) when it completed its consumer."""
        with self.lock:
            self._advance()
            self.inflight[group] -= 1
            if completed_at:
                self.last_ns[group] = max(self.last_ns[group], completed_at)
                self.remaining[group] -= 1
                if self.remaining[group] == 0:
                    print(f"{group}_done={self.last_ns[group]}", flush=True)


class Consumer(CosNotifyComm__POA.StructuredPushConsumer):
    """A structured push consumer for one host; checks what it gets against the layout."""

    def __init__(self, tally: Tally, layout: Layout, host: int, delay: float) -> None:
        self.tally = tally
        self.host = host
        self.name = f"h{host}"
        self.hosts = layout.hosts
        self.expected = layout.expected(host)
        self.group = "slow" if layout.is_slow(host) else "fast"
        self.delay = delay if self.group == "slow" else 0.0
        self.got = 0
        self.wrong = 0          # events for another host
        self.disorder = 0       # events out of order (or repeated)
        self.next_seq = host
        self.latency_us: list[int] = []
        self.disconnected = False
        self.offer_changes = 0

    def push_structured_event(self, event: Any) -> None:
        now = time.monotonic_ns()
        tally = self.tally
        tally.enter(self.group)
        completed = 0
        try:
            fields = {p.name: p.value.value() for p in event.filterable_data}
            if fields.get("host") != self.name:
                self.wrong += 1
                return
            if fields.get("seq") != self.next_seq:
                self.disorder += 1
            self.next_seq = int(fields.get("seq", -1)) + self.hosts
            self.latency_us.append((now - int(fields.get("sent", now))) // 1000)
            self.got += 1
            if self.got == self.expected:
                completed = now
            if self.delay:
                tally.stop.wait(self.delay)  # the slow consumer's work, not synchronisation
        finally:
            tally.leave(self.group, completed)

    def offer_change(self, added: Any, removed: Any) -> None:
        self.offer_changes += 1

    def disconnect_structured_push_consumer(self) -> None:
        self.disconnected = True


def connect_consumers(orb: Any, channel: Any, layout: Layout, process: int,
                      delay: float, tally: Tally) -> list[Consumer]:
    """This process's consumers, each connected through a proxy with its own filter."""
    poa = orb.resolve_initial_references("RootPOA")
    poa._get_the_POAManager().activate()
    admin = channel._get_default_consumer_admin()
    filters = channel._get_default_filter_factory()
    consumers = []
    first = layout.first_host(process)
    for host in range(first, first + layout.per_process):
        consumer = Consumer(tally, layout, host, delay)
        flt = filters.create_filter("EXTENDED_TCL")
        flt.add_constraints([F.ConstraintExp([], constraint(host))])
        proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        proxy = proxy._narrow(CA.StructuredProxyPushSupplier)
        proxy.add_filter(flt)
        proxy.connect_structured_push_consumer(consumer._this())
        consumers.append(consumer)
    return consumers


def report(consumers: list[Consumer], tally: Tally) -> dict[str, Any]:
    with tally.lock:
        return {
            "hosts": [c.host for c in consumers],
            "got": [c.got for c in consumers],
            "expected": [c.expected for c in consumers],
            "wrong": [c.wrong for c in consumers],
            "disorder": [c.disorder for c in consumers],
            "slow": [c.group == "slow" for c in consumers],
            "disconnected": sum(c.disconnected for c in consumers),
            "offer_changes": sum(c.offer_changes for c in consumers),
            "latency_us": {group: [us for c in consumers if c.group == group
                                   for us in c.latency_us] for group in ("fast", "slow")},
            "max_inflight": dict(tally.max_inflight),
            "mean_inflight": tally.mean_inflight(),
        }


def consumer_main(argv: list[str]) -> int:
    """``consumer --channel IOR --process P --slow-delay S [layout]``: prints ``ready=N``,
    ``fast_done=NS``, ``slow_done=NS``; on a ``report`` line on stdin prints
    ``report=JSON``; exits at the end of stdin."""
    parser = argparse.ArgumentParser(prog="scale_remote.py consumer")
    parser.add_argument("--channel", required=True)
    parser.add_argument("--process", type=int, required=True)
    parser.add_argument("--slow-delay", type=float, default=0.05)
    layout_arguments(parser)
    args = parser.parse_args(argv)
    layout = Layout(args.processes, args.per_process, args.slow_per_process, args.events)
    orb = CORBA.ORB_init(CONSUMER_ORB_ARGS, CORBA.ORB_ID)
    first = layout.first_host(args.process)
    mine = range(first, first + layout.per_process)
    tally = Tally(fast=sum(1 for h in mine if not layout.is_slow(h) and layout.expected(h)),
                  slow=sum(1 for h in mine if layout.is_slow(h) and layout.expected(h)))
    try:
        channel = orb.string_to_object(args.channel)._narrow(CA.EventChannel)
        consumers = connect_consumers(orb, channel, layout, args.process, args.slow_delay, tally)
        print(f"ready={len(consumers)}", flush=True)
        tally.announce_empty()
        for line in sys.stdin:
            if line.strip() == "report":
                print("report=" + json.dumps(report(consumers, tally)), flush=True)
    except CORBA.Exception as exc:
        print(f"FAIL {type(exc).__name__}: {exc}", flush=True)
        return 1
    finally:
        tally.stop.set()
        orb.destroy()
    return 0


def layout_arguments(parser: argparse.ArgumentParser, default: Layout = Layout()) -> None:
    parser.add_argument("--processes", type=int, default=default.processes)
    parser.add_argument("--per-process", type=int, default=default.per_process)
    parser.add_argument("--slow-per-process", type=int, default=default.slow_per_process)
    parser.add_argument("--events", type=int, default=default.events)


# -- the coordinator's building blocks -------------------------------------------------------
class ConsumerProcess:
    """One consumer process (this script, ``consumer``), read through harness.Program."""

    def __init__(self, channel_ior: str, layout: Layout, process: int, delay: float) -> None:
        from tests.interop.notify import harness

        self.process = process
        self.program = harness.Program(
            [sys.executable, "-X", "faulthandler", __file__, "consumer", "--channel", channel_ior,
             "--process", str(process), "--slow-delay", str(delay), *layout.arguments()],
            env=harness.quiet_omniorb_env())

    def wait_ready(self, timeout: float) -> int:
        return int(self.program.wait_for("ready", timeout))

    def wait_done(self, group: str, timeout: float) -> int:
        """The arrival time (ns, CLOCK_MONOTONIC) of the group's last event; 0: none due."""
        return int(self.program.wait_for(f"{group}_done", timeout))

    def report(self, timeout: float) -> dict[str, Any]:
        self.program.send("report")
        found: dict[str, Any] = json.loads(self.program.wait_for("report", timeout))
        return found

    def finish(self, timeout: float = 30.0) -> None:
        """End of stdin: the process destroys its ORB and exits (status 0)."""
        try:
            self.program.finish(timeout)
        except AssertionError as exc:  # without the report lines, which can be long
            lines = [line for line in str(exc).splitlines() if not line.startswith("report=")]
            raise AssertionError("\n".join(lines)) from None

    def close(self) -> None:
        self.program.close()


class Supplier:
    """A StructuredProxyPushConsumer of the channel, fed from this process."""

    def __init__(self, channel: Any) -> None:
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        self.proxy = proxy._narrow(CA.StructuredProxyPushConsumer)
        self.proxy.connect_structured_push_supplier(None)
        self.header = N.EventHeader(N.FixedEventHeader(N.EventType("bench", "scale"), ""), [])
        self.body = CORBA.Any(CORBA.TC_null, None)

    def push(self, layout: Layout, rate: float = 0.0) -> tuple[int, int]:
        """Push the layout's events round-robin over its hosts, at most ``rate`` per second
        (0: as fast as the server takes them); (first, last) push times (ns)."""
        hosts = [CORBA.Any(CORBA.TC_string, f"h{h}") for h in range(layout.hosts)]
        push, header, body = self.proxy.push_structured_event, self.header, self.body
        count = len(hosts)
        pace = threading.Event()  # never set: its wait paces the load, it synchronises nothing
        start = time.monotonic_ns()
        for seq in range(layout.events):
            if rate:
                ahead = start + seq * NS / rate - time.monotonic_ns()
                if ahead > 0:
                    pace.wait(ahead / NS)
            push(N.StructuredEvent(header, [
                N.Property("host", hosts[seq % count]),
                N.Property("seq", CORBA.Any(CORBA.TC_ulong, seq)),
                N.Property("sent", CORBA.Any(CORBA.TC_longlong, time.monotonic_ns()))], body))
        return start, time.monotonic_ns()

    def disconnect(self) -> None:
        self.proxy.disconnect_structured_push_consumer()


def check_reports(layout: Layout, reports: list[dict[str, Any]]) -> list[str]:
    """What is wrong with what the consumers got (empty: each got exactly its events)."""
    problems = []
    for found in reports:
        for i, host in enumerate(found["hosts"]):
            got, want = found["got"][i], layout.expected(host)
            if got != want or found["wrong"][i] or found["disorder"][i]:
                kind = "slow" if found["slow"][i] else "fast"
                problems.append(f"{kind} h{host}: {got} of {want} events, "
                                f"{found['wrong'][i]} for other hosts, "
                                f"{found['disorder'][i]} out of order")
    return problems


# -- measuring the server ----------------------------------------------------------------------
TICK = os.sysconf("SC_CLK_TCK")


def _proc_cpu(stat_path: pathlib.Path) -> float:
    """utime + stime (seconds) from a /proc stat file."""
    fields = stat_path.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def server_threads(pid: int) -> int:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise RuntimeError(f"no Threads: line for {pid}")


def thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds of each thread of ``pid``."""
    found = {}
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            found[int(task.name)] = _proc_cpu(task / "stat")
        except (OSError, IndexError, ValueError):  # the thread ended meanwhile
            pass
    return found


@attrs.frozen
class ProbeResult:
    threads_idle: int      # when the probe started (consumers connected, nothing pushed)
    threads_max: int       # the most sampled during the run
    threads_mean: float
    threads_ran: int       # threads that used CPU during the run (new ones included)
    threads_new: int       # threads that did not exist when the probe started
    cpu_s: float           # the server's CPU time during the run


class ServerProbe:
    """Samples a process's thread count every ``interval`` s (measurement, not synchronisation)."""

    def __init__(self, pid: int, interval: float = 0.01) -> None:
        self.pid = pid
        self.interval = interval
        self._stop = threading.Event()
        self.samples: list[int] = []
        self.threads_idle = server_threads(pid)
        self._cpu0 = _proc_cpu(pathlib.Path(f"/proc/{pid}/stat"))
        self._tasks0 = thread_cpu(pid)
        self._thread = threading.Thread(target=self._sample, name="server-probe", daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while True:
            try:
                self.samples.append(server_threads(self.pid))
            except (OSError, RuntimeError):
                return
            if self._stop.wait(self.interval):
                return

    def stop(self) -> ProbeResult:
        self._stop.set()
        self._thread.join(10)
        cpu = _proc_cpu(pathlib.Path(f"/proc/{self.pid}/stat")) - self._cpu0
        tasks = thread_cpu(self.pid)
        ran = sum(1 for tid, used in tasks.items() if used > self._tasks0.get(tid, -1.0))
        samples = self.samples or [self.threads_idle]
        return ProbeResult(self.threads_idle, max(samples), statistics.fmean(samples), ran,
                           len(set(tasks) - set(self._tasks0)), cpu)


def py_spy_summary(pid: int) -> list[str]:
    """``py-spy dump`` of ``pid``: how many threads are in which cosnotify/omniORB function."""
    py_spy = shutil.which("py-spy") or str(pathlib.Path(sys.executable).parent / "py-spy")
    try:
        done = subprocess.run([py_spy, "dump", "--pid", str(pid)], capture_output=True,
                              text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return [f"py-spy dump failed: {exc}"]
    if done.returncode != 0:
        return [f"py-spy dump failed: {done.stderr.strip()[-300:]}"]
    where: collections.Counter[str] = collections.Counter()
    stack: list[str] = []

    def close_stack() -> None:
        if stack:
            # The innermost frame of cosnotify's own code says what the thread is doing.
            ours = [f for f in stack if "cosnotify" in f]
            where[(ours[0] if ours else stack[0]).split(" (")[0]] += 1
            stack.clear()

    for line in done.stdout.splitlines():
        if line.startswith("Thread "):
            close_stack()
        elif line.startswith("    "):
            stack.append(line.strip())
    close_stack()
    return [f"{n:4d}  {frame}" for frame, n in where.most_common(12)]


# -- one run -----------------------------------------------------------------------------------
@attrs.define
class RunResult:
    label: str
    layout: Layout
    delay: float
    setup_s: float = 0.0
    push_s: float = 0.0
    fast_s: float = 0.0             # first push -> last fast-consumer event arrived
    slow_s: float = 0.0             # first push -> last slow-consumer event arrived
    fast_per_process: list[float] = attrs.Factory(list)
    probe: ProbeResult | None = None
    reports: list[dict[str, Any]] = attrs.Factory(list)
    problems: list[str] = attrs.Factory(list)
    dump: list[str] = attrs.Factory(list)

    @property
    def fast_events(self) -> int:
        return self.layout.group_events(slow=False)

    @property
    def fast_rate(self) -> float:
        return self.fast_events / self.fast_s if self.fast_s else 0.0

    def latencies_ms(self, group: str) -> list[float]:
        return sorted(us / 1000 for found in self.reports
                      for us in found["latency_us"][group])

    def max_inflight(self, group: str) -> int:
        return max((found["max_inflight"][group] for found in self.reports), default=0)

    def mean_inflight(self, group: str) -> float:
        """Pushes of the group in flight into one process, averaged over time and processes."""
        means = [found["mean_inflight"][group] for found in self.reports]
        return statistics.fmean(means) if means else 0.0


def run_once(orb: Any, workdir: pathlib.Path, layout: Layout, delay: float, label: str,
             call_timeout: float, timeout: float, *, rate: float = 0.0,
             dump: bool = False) -> RunResult:
    """A new server, the consumer processes, the pushes, and what was measured."""
    from tests.interop.notify import harness

    result = RunResult(label, layout, delay)
    server = harness.NotifyServer(workdir, call_timeout=call_timeout)
    processes: list[ConsumerProcess] = []
    try:
        factory = orb.string_to_object(server.factory_url)._narrow(CA.EventChannelFactory)
        channel, _ = factory.create_channel([], [])
        supplier = Supplier(channel)
        ior = orb.object_to_string(channel)
        began = time.monotonic()
        processes = [ConsumerProcess(ior, layout, p, delay) for p in range(layout.processes)]
        for proc in processes:
            proc.wait_ready(timeout)
        result.setup_s = time.monotonic() - began
        probe = ServerProbe(server.pid)
        dumper = None
        if dump:
            dumper = threading.Thread(target=lambda: result.dump.extend(py_spy_summary(server.pid)))
        start, pushed = supplier.push(layout, rate)
        if dumper is not None:
            dumper.start()
        result.push_s = (pushed - start) / NS
        try:
            done = [proc.wait_done("fast", timeout) for proc in processes]
            result.fast_per_process = [(t - start) / NS if t else 0.0 for t in done]
            result.fast_s = max(result.fast_per_process)
            result.slow_s = max((proc.wait_done("slow", timeout) - start) / NS
                                for proc in processes)
        except AssertionError as exc:  # a group not done in time: report what arrived
            result.problems.append(f"not every event arrived within {timeout} s: "
                                   f"{str(exc).splitlines()[0]}")
        result.probe = probe.stop()
        if dumper is not None:
            dumper.join(60)
        result.reports = [proc.report(timeout) for proc in processes]
        result.problems += check_reports(layout, result.reports)
        supplier.disconnect()
        for proc in processes:
            proc.finish()
    finally:
        for proc in processes:
            proc.close()
        server.stop()
    return result


# -- printing ----------------------------------------------------------------------------------
def server_configuration(call_timeout: float) -> list[str]:
    """What ``cosnotify serve`` runs with: its command line's options and the defaults it
    takes (serve has no option for the worker pool)."""
    from cosnotify.channel.dispatch import Dispatcher
    from cosnotify.channel.service import ServiceConfig
    from cosnotify.server.app import ServerConfig, orb_arguments

    service = ServiceConfig()
    pool = Dispatcher(service.min_workers, service.max_workers,
                      lane_limit=service.max_workers_per_client or None,
                      failing_limit=service.max_workers_failing or None)
    try:
        lane, failing = pool.lane_limit, pool.failing.limit
    finally:
        pool.close()
    orb_args = orb_arguments(ServerConfig(port=0, call_timeout=call_timeout))
    command = (f"server: python -m cosnotify serve --endpoint 127.0.0.1:<free port> "
               f"--call-timeout {call_timeout:g} (embedded naming; a new server per run)")
    workers = (f"  worker pool: {service.min_workers}-{service.max_workers} threads; per-client "
               f"lane {lane} workers; failing lane {failing}; delivery slice "
               f"{service.delivery_slice} events; routing {service.routing}")
    return [command, workers, "  omniORB: " + " ".join(orb_args[2:]) + " (thread per connection)"]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    return values[min(len(values) - 1, int(q * len(values)))]


def print_table(runs: list[RunResult]) -> None:
    width = 46
    rows: list[tuple[str, list[str]]] = []

    def row(name: str, fn: Any) -> None:
        rows.append((name, [fn(r) for r in runs]))

    row("consumers connected in (s)", lambda r: f"{r.setup_s:.1f}")
    row("supplier: pushes accepted (events/s)", lambda r: f"{r.layout.events / r.push_s:,.0f}")
    row("fast consumers: events", lambda r: f"{r.fast_events:,}")
    row("fast: last event arrived at (s)", lambda r: f"{r.fast_s:.2f}")
    row("fast: ... after the last push (s)", lambda r: f"{max(0.0, r.fast_s - r.push_s):.2f}")
    row("fast: per process (s)",
        lambda r: "/".join(f"{t:.1f}" for t in r.fast_per_process))
    row("fast: delivery rate (events/s)", lambda r: f"{r.fast_rate:,.0f}")
    for q, name in ((0.5, "p50"), (0.99, "p99"), (1.0, "max")):
        row(f"fast: latency {name} (ms)",
            lambda r, q=q: f"{percentile(r.latencies_ms('fast'), q):,.1f}")
    row("slow tenth: events", lambda r: f"{r.layout.group_events(slow=True):,}")
    row("slow tenth: last event arrived at (s)", lambda r: f"{r.slow_s:.2f}")
    row("slow tenth: latency max (ms)",
        lambda r: f"{percentile(r.latencies_ms('slow'), 1.0):,.0f}")
    row("pushes in flight into one process, max",
        lambda r: f"{r.max_inflight('all')} ({r.max_inflight('slow')} slow)")
    row("... mean over time: fast / slow",
        lambda r: f"{r.mean_inflight('fast'):.2f} / {r.mean_inflight('slow'):.2f}")
    row("offer_change calls to consumers",
        lambda r: f"{sum(found['offer_changes'] for found in r.reports):,}")
    row("server threads: idle / mean / max",
        lambda r: f"{r.probe.threads_idle} / {r.probe.threads_mean:.0f} / {r.probe.threads_max}"
        if r.probe else "-")
    row("server threads: new / that ran",
        lambda r: f"{r.probe.threads_new} / {r.probe.threads_ran}" if r.probe else "-")
    row("server CPU (s, % of the slow-done time)",
        lambda r: f"{r.probe.cpu_s:.1f} ({100 * r.probe.cpu_s / max(r.slow_s, 1e-9):.0f}%)"
        if r.probe else "-")
    row("every consumer got exactly its events",
        lambda r: "yes" if not r.problems else f"NO ({len(r.problems)})")
    cols = [max(14, len(r.label) + 2, *(len(v[i]) + 2 for _, v in rows for i in [k]))
            for k, r in enumerate(runs)]
    print(f"{'':<{width}}" + "".join(f"{r.label:>{c}}" for r, c in zip(runs, cols)))
    for name, values in rows:
        print(f"{name:<{width}}" + "".join(f"{v:>{c}}" for v, c in zip(values, cols)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 200 consumers, 2,000 events")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--consumers", type=int, help="consumers in all (default 1000; quick 200)")
    parser.add_argument("--events", type=int, help="events pushed (default 20000; quick 2000)")
    parser.add_argument("--slow-fraction", type=float, default=0.1,
                        help="share of each process's consumers that are slow (default 0.1)")
    parser.add_argument("--slow-delay", type=float, default=0.05,
                        help="seconds a slow consumer's push blocks (default 0.05)")
    parser.add_argument("--call-timeout", type=float, default=10.0,
                        help="the server's --call-timeout (default 10)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds each phase may take before the run fails (default 120)")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="events/s the supplier pushes at most (default 0: as fast as the "
                             "server takes them)")
    parser.add_argument("--dump", action="store_true",
                        help="py-spy dump the server once during the slow run")
    args = parser.parse_args()
    consumers = args.consumers or (200 if args.quick else 1000)
    events = args.events if args.events is not None else (2000 if args.quick else 20_000)
    per_process = consumers // args.processes
    layout = Layout(args.processes, per_process, round(per_process * args.slow_fraction), events)

    from benchmarks.machine import cpu_model

    print("Remote consumers at scale (benchmarks/scale_remote.py)")
    print(f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs); Python "
          f"{platform.python_version()}; {platform.platform()}; "
          f"load at start {os.getloadavg()[0]:.2f}")
    for line in server_configuration(args.call_timeout):
        print(line)
    slow_total = layout.slow_per_process * layout.processes
    print(f"consumers: {layout.processes} processes x {layout.per_process} structured push "
          f"consumers = {layout.hosts}, each proxy with its own EXTENDED_TCL filter "
          f"\"$host == 'h<i>'\" from the channel's default FilterFactory")
    print(f"slow: {layout.slow_per_process} per process ({slow_total} in all) block "
          f"{1000 * args.slow_delay:g} ms per event (the control run: 0 ms)")
    print(f"supplier: this process, one StructuredProxyPushConsumer, {layout.events:,} events "
          f"round-robin over the {layout.hosts} hosts ({layout.events / layout.hosts:g} each), "
          f"one two-way push each, "
          f"{f'paced at {args.rate:,.0f}/s' if args.rate else 'unpaced'}\n", flush=True)

    orb = CORBA.ORB_init(CLIENT_ORB_ARGS, CORBA.ORB_ID)
    began = time.monotonic()
    runs = []
    try:
        with tempfile.TemporaryDirectory(prefix="scale-remote-") as tmp:
            for label, delay in (("no slow", 0.0), ("slow tenth", args.slow_delay)):
                run = run_once(orb, pathlib.Path(tmp), layout, delay, label, args.call_timeout,
                               args.timeout, rate=args.rate, dump=args.dump and delay > 0)
                runs.append(run)
                print(f"{label}: fast consumers done at {run.fast_s:.2f} s, slow at "
                      f"{run.slow_s:.2f} s", flush=True)
    finally:
        orb.destroy()
    print()
    print_table(runs)
    control, slow = runs
    ratio = slow.fast_rate / control.fast_rate if control.fast_rate else 0.0
    print(f"\nfast-consumer delivery rate, with the slow tenth / without: {ratio:.2f}")
    fast_with, fast_without = slow.latencies_ms("fast"), control.latencies_ms("fast")
    print("fast-consumer latency, with the slow tenth / without: p50 "
          + " , p99 ".join(f"{percentile(fast_with, q):,.1f} / {percentile(fast_without, q):,.1f} ms"
                           for q in (0.5, 0.99)))
    for run in runs:
        for problem in run.problems[:10]:
            print(f"{run.label}: {problem}")
    if slow.dump:
        print("\npy-spy dump of the server during the slow run (threads per innermost "
              "cosnotify frame):")
        for line in slow.dump:
            print("  " + line)
    print(f"\nwall time {time.monotonic() - began:.0f} s; load at end {os.getloadavg()[0]:.2f}")
    return 0 if not any(run.problems for run in runs) else 1


def exit_now(status: int) -> None:
    """Exit without Python's finalization, once the ORB is destroyed.

    omniORB's worker threads may still be ending after ``orb.destroy()`` returns;
    one that takes the GIL while the interpreter finalizes is unwound by it inside a
    C++ destructor, and the process aborts ("terminate called without an active
    exception", seen here about one exit in five with 250 servants).
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    exit_now(consumer_main(sys.argv[2:]) if sys.argv[1:2] == ["consumer"] else main())
