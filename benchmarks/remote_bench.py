"""Remote benchmark: events per second through ``cosnotify serve``, and through omniEvents.

Strategy: every party is its own process on loopback: the server
(``cosnotify serve``, or Debian's omniEvents C++ CosEvent service as the
anchor) and one C++ supplier and one C++ consumer (omniORB 4.2, the programs
in ``tests/interop/notify/cxx/``, built by its harness). C++ clients load the
server more honestly than Python ones: they cost the server the same and
themselves far less. A run times, on CLOCK_MONOTONIC (one clock for all
processes), from just before the supplier's first push to the consumer's
receipt of the N-th event, and its rate is N over that time. The supplier
pushes as fast as the server accepts (each push is a two-way call), so the
rate is what the server relays end to end.

Cases, each on a new channel with default QoS:

* structured push supplier -> server -> structured push consumer, no filter;
* the same with an EXTENDED_TCL filter ``$n >= 0`` on the consumer's proxy,
  made by the channel's FilterFactory (every event is evaluated and passes);
* sequences: SequencePushSupplier pushing batches of 100 -> sequence push
  consumer with MaximumBatchSize 100, PacingInterval 0;
* the anchor, the same C++ CosEventComm Any push supplier and push consumer
  through omniEvents (channel made by ``eventc`` with MaxQueueLength N+100, so
  it never discards) and through cosnotify (``for_suppliers`` /
  ``for_consumers`` of a notification channel, i.e. CosEventChannelAdmin);
* the floor: the same C++ supplier pushing straight to the same C++ consumer,
  no channel between them (structured events, and Any events), so each
  relay is also reported as a fraction of what the clients alone achieve.

Cases are measured round-robin, ``--runs`` times each after one warm-up
round, so drift on a shared machine hits all of them alike; medians are
printed, and the anchor ratio is also computed per round.

Usage: ``python benchmarks/remote_bench.py [--events N] [--runs R]
[--profile CASE] [--typed]`` (defaults: 20000 events, 5 runs). ``--typed``
then prints the typed channel's lines (benchmarks/typed_bench.py: the typed
relay against the structured one, and the in-process typed push through a
filter), in the same run. ``--profile structured``
(or ``filter``, ``sequence``, ``anchor``) records the server with py-spy
during one more run of that case and prints its hottest functions.
"""

from __future__ import annotations

import argparse
import collections
import os
import pathlib
import platform
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from machine import cpu_model, tool_version  # benchmarks/machine.py, beside this script

from tests.interop.notify import harness

CASES = {
    "structured": "structured push -> push, no filter",
    "filter": "structured push -> push, filter $n >= 0",
    "sequence": "sequence push -> push, batches of 100",
    "anchor": "CosEvent Any push -> push via cosnotify",
    "omniEvents": "CosEvent Any push -> push via omniEvents",
    "floor": "floor: structured push straight to consumer",
    "floor-any": "floor: CosEvent Any push straight to consumer",
}
#: Which floor each relayed case is reported against.
FLOOR_OF = {"structured": "floor", "filter": "floor", "anchor": "floor-any",
            "omniEvents": "floor-any"}


def machine_info() -> list[str]:
    cpu = cpu_model()

    return [f"CPU: {cpu} ({os.cpu_count()} logical CPUs)",
            f"Python: {platform.python_implementation()} {platform.python_version()}",
            f"omniORB: {tool_version(['pkg-config', '--modversion', 'omniORB4'])}",
            f"omniEvents: {tool_version(['omniEvents', '-V'])}",
            f"OS: {platform.platform()}"]


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class Bench:
    """The servers and programs of one benchmark session."""

    def __init__(self, workdir: pathlib.Path, events: int) -> None:
        self.events = events
        self.cxx = harness.build_programs()
        self.server = harness.NotifyServer(workdir)
        self.omnievents: harness.OmniEvents | None = None
        try:
            self.omnievents = harness.OmniEvents(workdir)
        except harness.Unavailable as exc:
            print(f"omniEvents unavailable ({exc}): no anchor", file=sys.stderr)

    def close(self) -> None:
        if self.omnievents is not None:
            self.omnievents.close()
        self.server.stop()

    def _pair(self, consumer_args: list[str], supplier_args: list[str],
              count: int) -> tuple[float, float]:
        """Run consumer then supplier; events/s relayed (first push to last receipt) and
        accepted (first push to the supplier's last push returning)."""
        wait = str(max(60, count // 200))
        direct = "--direct" in consumer_args
        extra = [] if direct else ["--destroy"]
        with harness.Program([self.cxx["notify_consumer"], *consumer_args, "--quiet", *extra,
                              "--wait", wait, "--timeout", str(int(wait) + 60)]) as consumer:
            consumer.wait_for("ready", 60)
            if direct:
                target = ["--consumer", consumer.wait_for("consumer", 1)]
            else:
                channel = consumer.wait_for("channel", 1) if "--factory" in consumer_args else \
                    consumer_args[consumer_args.index("--channel") + 1]
                target = ["--channel", channel]
            supplied = harness.run([self.cxx["notify_supplier"], *supplier_args, *target,
                                    "--count", str(count),
                                    "--timeout", str(int(wait) + 60)], timeout=int(wait) + 90)
            got = consumer.finish(int(wait) + 90)
        if int(got["received"]) != count or got["in_order"] != "1":
            raise RuntimeError(f"consumer got {got['received']} of {count} events "
                               f"(in order: {got['in_order']})")
        start = int(supplied["start_ns"])
        return (count / ((int(got["last_ns"]) - start) / 1e9),
                count / ((int(supplied["end_ns"]) - start) / 1e9))

    def run(self, case: str, count: int | None = None) -> tuple[float, float]:
        count = count or self.events
        factory = ["--factory", self.server.factory_url]
        if case == "structured":
            return self._pair(["structured-push", *factory], ["structured"], count)
        if case == "filter":
            return self._pair(["structured-push", *factory, "--filter", "$n >= 0"],
                              ["structured"], count)
        if case == "sequence":
            return self._pair(["sequence-push", *factory, "--batch", "100", "--pacing", "0",
                               "--expect", str(count)], ["sequence", "--batch", "100", "--no-end"],
                              count)
        if case == "anchor":
            return self._pair(["cos-push", *factory], ["cos-push"], count)
        if case == "floor":
            return self._pair(["structured-push", "--direct"], ["structured"], count)
        if case == "floor-any":
            return self._pair(["cos-push", "--direct"], ["cos-push"], count)
        if case == "omniEvents":
            assert self.omnievents is not None
            channel = self.omnievents.create_channel("-q", str(count + 100))
            return self._pair(["cos-push", "--channel", channel], ["cos-push"], count)
        raise ValueError(case)

    def profile(self, case: str, out: pathlib.Path) -> None:
        py_spy = shutil.which("py-spy") or str(pathlib.Path(sys.executable).parent / "py-spy")
        with harness.Program([py_spy, "record", "-f", "raw", "--gil", "--nonblocking", "-r", "200", "-o", str(out),
                              "--pid", str(self.server.pid)]) as recorder:
            rate, _ = self.run(case)
            recorder.proc.send_signal(2)  # SIGINT: py-spy writes its output and exits
            recorder.proc.wait(60)
        print(f"profiled run of {case}: {rate:,.0f} events/s relayed")
        print_hot_spots(out)


def print_hot_spots(raw: pathlib.Path, top: int = 15) -> None:
    """Self time (leaf frames) and inclusive time per function from py-spy's raw output."""
    leaf: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        if not samples.isdigit():
            continue
        n = int(samples)
        total += n
        frames = stack.split(";")
        leaf[frames[-1]] += n
        for frame in set(frames):
            inclusive[frame] += n
    if not total:
        print("no samples")
        return
    print(f"\n{total} samples; self time:")
    for frame, n in leaf.most_common(top):
        print(f"  {100 * n / total:5.1f}%  {frame}")
    print("inclusive time:")
    for frame, n in inclusive.most_common(top + 10):
        print(f"  {100 * n / total:5.1f}%  {frame}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20000, help="events per run")
    parser.add_argument("--runs", type=int, default=5, help="measured runs per case")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated case names")
    parser.add_argument("--profile", choices=list(CASES), help="py-spy the server in one case")
    parser.add_argument("--typed", action="store_true",
                        help="then the typed channel's lines (benchmarks/typed_bench.py)")
    parser.add_argument("--typed-events", type=int, default=2000,
                        help="events per typed relay run (and ten times as many in process)")
    args = parser.parse_args()

    for line in machine_info():
        print(line)
    print(f"load average at start: {load()}")
    print(f"{args.events} events per run, {args.runs} runs per case, C++ clients (omniORB)\n")
    with tempfile.TemporaryDirectory(prefix="remote-bench-") as tmp:
        try:
            bench = Bench(pathlib.Path(tmp), args.events)
        except harness.Unavailable as exc:
            print(f"cannot run: {exc}", file=sys.stderr)
            return 1
        try:
            cases = [c for c in args.cases.split(",") if c != "omniEvents" or bench.omnievents]
            if args.profile:
                bench.run(args.profile, min(2000, args.events))
                bench.profile(args.profile, pathlib.Path(tmp) / "profile.txt")
                return 0
            for case in cases:  # warm-up: connections, imports, filter compilation
                bench.run(case, min(2000, args.events))
            rates: dict[str, list[float]] = {case: [] for case in cases}
            accepted: dict[str, list[float]] = {case: [] for case in cases}
            ratios = []
            for round_no in range(args.runs):
                for case in cases:
                    relayed, took = bench.run(case)
                    rates[case].append(relayed)
                    accepted[case].append(took)
                if "anchor" in rates and "omniEvents" in rates:
                    ratios.append(rates["anchor"][-1] / rates["omniEvents"][-1])
                print(f"round {round_no + 1}: " + ", ".join(
                    f"{case} {rates[case][-1]:,.0f}" for case in cases) + f"  (load {load()})",
                      flush=True)
        finally:
            bench.close()
    show: Callable[[list[float]], str] = lambda xs: (
        f"{statistics.median(xs):>9,.0f} {min(xs):>9,.0f} {max(xs):>9,.0f}")
    print(f"\n{'events/s relayed':<44} {'median':>9} {'min':>9} {'max':>9}"
          f"   {'accepted':>9}")
    for case in cases:
        print(f"{CASES[case]:<44} {show(rates[case])}   "
              f"{statistics.median(accepted[case]):>9,.0f}")
    print("(relayed: first push to last receipt; accepted: the supplier's own push rate, "
          "median)")
    print("\nrelay as a fraction of the floor (the same clients, no channel), medians:")
    for case, floor in FLOOR_OF.items():
        if case in rates and floor in rates:
            share = statistics.median(rates[case]) / statistics.median(rates[floor])
            print(f"  {CASES[case]:<44} {100 * share:5.1f}% of {CASES[floor]}")
    if ratios:
        median = statistics.median(rates["anchor"]) / statistics.median(rates["omniEvents"])
        print(f"\ncosnotify / omniEvents (CosEvent anchor): {100 * median:.0f}% of medians; "
              f"per-round median {100 * statistics.median(ratios):.0f}% "
              f"(range {100 * min(ratios):.0f}-{100 * max(ratios):.0f}%); goal >= 50%")
    if args.typed:  # issue 20: the typed relay beside the structured one, this run
        from typed_bench import report  # benchmarks/typed_bench.py, beside this script

        print("\ntyped channels (benchmarks/typed_bench.py):")
        report(args.typed_events, args.runs)
    print(f"load average at end: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
