"""Filter matching throughput (docs/performance.md, "## Filters").

Strategy: build each filter through the public FilterFactory, warm it up, then
time ``match_structured``/``match`` calls in a tight loop on one core. Each
case runs ``--runs`` times; the median rate is reported (the spread shows
noise). The machine (CPU model from /proc/cpuinfo, Python version) is printed
with the figures so they can be compared across runs.

Cases:
  a) ``$type_name == 'CommunicationsAlarm' and $priority < 2`` on a structured
     event with 5 filterable properties (priority among them);
  b) the §2.4.7 Marx Brothers ``in`` example on an Any event (a Movie struct);
  c) a filter of 10 constraints of which only the last matches.

Usage: python benchmarks/filter_bench.py [--runs N] [--seconds S] [--profile CASE]
"""

from __future__ import annotations

import argparse
import itertools
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from machine import cpu_model  # benchmarks/machine.py, beside this script
from omniORB import CORBA, tcInternal

import CosNotification as N
import CosNotifyFilter

from cosnotify.filter.factory import FilterFactory

MARX = ("$type_name == 'MOVIE' and "
        "(('groucho' in $.starlist) + ('chico' in $.starlist) + "
        "('harpo' in $.starlist) + ('zeppo' in $.starlist) + "
        "('gummo' in $.starlist)) > 2")


def structured_event() -> Any:
    """A CommunicationsAlarm with 5 filterable properties, priority among them."""
    fields = [
        N.Property("severity", CORBA.Any(CORBA.TC_short, 3)),
        N.Property("source", CORBA.Any(CORBA.TC_string, "router-7")),
        N.Property("priority", CORBA.Any(CORBA.TC_short, 1)),
        N.Property("count", CORBA.Any(CORBA.TC_ulong, 12)),
        N.Property("cleared", CORBA.Any(CORBA.TC_boolean, False)),
    ]
    header = N.EventHeader(
        N.FixedEventHeader(N.EventType("Telecom", "CommunicationsAlarm"), "lost_packet"),
        [N.Property("Timeout", CORBA.Any(CORBA.TC_ulonglong, 10_000_000))])
    return N.StructuredEvent(header, fields, CORBA.Any(CORBA.TC_null, None))


#: A struct no stubs declare: its value is an omniORB UnknownStruct, as for a type
#: the server never compiled.
MOVIE_TC = tcInternal.createStructTC("IDL:bench/Movie:1.0", "Movie", [
    CORBA.StructMember("type_name", CORBA.TC_string, None),
    CORBA.StructMember("title", CORBA.TC_string, None),
    CORBA.StructMember("starlist", tcInternal.createSequenceTC(0, CORBA.TC_string), None),
])


def movie_event() -> Any:
    movie = MOVIE_TC._d[1]("MOVIE", "A Night at the Opera",
                           ["groucho", "chico", "harpo", "margaret"])
    return CORBA.Any(MOVIE_TC, movie)


def make_filter(constraints: list[str]) -> Any:
    f = FilterFactory().create_filter("EXTENDED_TCL")
    f.add_constraints([CosNotifyFilter.ConstraintExp([], text) for text in constraints])
    return f


def cases() -> dict[str, tuple[str, Callable[[Any], bool], Any]]:
    ten = [f"$domain_name == 'Telecom' and $severity == {10 + i}" for i in range(9)]
    ten.append("$type_name == 'CommunicationsAlarm' and $priority < 2")
    a = make_filter(["$type_name == 'CommunicationsAlarm' and $priority < 2"])
    b = make_filter([MARX])
    c = make_filter(ten)
    return {
        "a": ("$type_name/$priority on a structured event", a.match_structured,
              structured_event()),
        "b": ("Marx Brothers 'in' example on an Any event", b.match, movie_event()),
        "c": ("10 constraints, only the last matches", c.match_structured,
              structured_event()),
    }


def rate(match: Callable[[Any], bool], event: Any, seconds: float) -> float:
    """Matches per second over one timed run of about ``seconds``."""
    n = 1000
    while True:  # calibrate the loop count
        start = time.perf_counter()
        for _ in itertools.repeat(None, n):
            match(event)
        elapsed = time.perf_counter() - start
        if elapsed >= seconds / 4:
            break
        n *= 4
    n = max(1, int(n * seconds / elapsed))
    start = time.perf_counter()
    for _ in itertools.repeat(None, n):
        match(event)
    return n / (time.perf_counter() - start)


def machine() -> str:
    return f"{cpu_model()}; Python {platform.python_version()} ({platform.python_implementation()})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="timed runs per case (median)")
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one run")
    parser.add_argument("--profile", choices=["a", "b", "c"],
                        help="profile one case with cProfile instead of timing")
    args = parser.parse_args(argv)
    table = cases()
    for _, match, event in table.values():
        assert match(event) is True, "benchmark events must match"
    if args.profile:
        import cProfile
        import pstats

        _, match, event = table[args.profile]
        profiler = cProfile.Profile()
        profiler.runcall(lambda: [match(event) for _ in range(200_000)])
        pstats.Stats(profiler).sort_stats("tottime").print_stats(12)
        return 0
    print(f"machine: {machine()}")
    print(f"method: median of {args.runs} runs of ~{args.seconds:g}s each, one thread")
    for key, (title, match, event) in table.items():
        rates = [rate(match, event, args.seconds) for _ in range(args.runs)]
        print(f"({key}) {title}: {statistics.median(rates):,.0f} matches/s "
              f"(min {min(rates):,.0f}, max {max(rates):,.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
