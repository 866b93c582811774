r"""Filter matching throughput (docs/performance.md, "## Filters").

Strategy: build each filter through the public FilterFactory, warm it up, then
time ``match_structured``/``match`` calls in a tight loop on one core. Each
case runs ``--runs`` times; the median rate is reported (the spread shows
noise). The machine (CPU model from /proc/cpuinfo, Python version) is printed
with the figures so they can be compared across runs.

Cases:
  a) ``$type_name == 'CommunicationsAlarm' and $priority < 2`` on a structured
     event with 5 filterable properties (priority among them);
  b) the §2.4.7 Marx Brothers ``in`` example on an Any event (a Movie struct);
  c) a filter of 10 constraints of which only the last matches;
  d) ELVIN4 ``require(host) && severity > 2 && begins-with(host, "db")``;
  e) an EVENTHEAP template of 5 fields (reserved EventType and Source, an int
     actual, a string and a double formal);
  f) OES_SUBTREE ``\Earth depth *`` on an event 6 levels down;
  and for d, e and f the nearest EXTENDED_TCL constraint (d0, e0, f0) on the
  same event, in the same run (issue 19's goals: d, e and f >= 1M matches/s).

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


def make_filter(constraints: list[str], grammar: str = "EXTENDED_TCL") -> Any:
    f = FilterFactory().create_filter(grammar)
    f.add_constraints([CosNotifyFilter.ConstraintExp([], text) for text in constraints])
    return f


#: The node of the seed-grammar event: 6 levels below the root.
NODE = "\\Earth\\Asia\\India\\West Bengal\\Kolkata\\Salt Lake"


def seed_event() -> Any:
    """An Alarm with the attributes the seed grammars' cases test, 6 filterable in all."""
    fields = [
        N.Property("host", CORBA.Any(CORBA.TC_string, "db-7")),
        N.Property("severity", CORBA.Any(CORBA.TC_long, 3)),
        N.Property("Source", CORBA.Any(CORBA.TC_string, "router-7")),
        N.Property("load", CORBA.Any(CORBA.TC_double, 0.5)),
        N.Property("count", CORBA.Any(CORBA.TC_ulong, 12)),
        N.Property("node", CORBA.Any(CORBA.TC_string, NODE)),
    ]
    header = N.EventHeader(N.FixedEventHeader(N.EventType("Telecom", "Alarm"), "e"), [])
    return N.StructuredEvent(header, fields, CORBA.Any(CORBA.TC_null, None))


#: (key, title, grammar, constraint) for the seed grammars and their EXTENDED_TCL kin.
SEED_CASES = [
    ("d", "ELVIN4 require/compare/begins-with", "ELVIN4",
     'require(host) && severity > 2 && begins-with(host, "db")'),
    ("d0", "  EXTENDED_TCL nearest: exist/compare/substring", "EXTENDED_TCL",
     "exist $host and $severity > 2 and 'db' ~ $host"),
    ("e", "EVENTHEAP template of 5 fields", "EVENTHEAP",
     ('EventType = "Alarm", severity: int = 3, host: string = ?, Source = "router-7", '
     "load: double = ?")),
    ("e0", "  EXTENDED_TCL nearest: 3 equalities, 2 exist", "EXTENDED_TCL",
     ("$type_name == 'Alarm' and $severity == 3 and exist $host and $Source == 'router-7' "
     "and exist $load")),
    ("f", "OES_SUBTREE depth * on a 6-level path", "OES_SUBTREE", "\\Earth depth *"),
    ("f0", "  EXTENDED_TCL nearest: substring of $node", "EXTENDED_TCL",
     "'\\\\Earth' ~ $node"),
]


def cases() -> dict[str, tuple[str, Callable[[Any], bool], Any]]:
    ten = [f"$domain_name == 'Telecom' and $severity == {10 + i}" for i in range(9)]
    ten.append("$type_name == 'CommunicationsAlarm' and $priority < 2")
    a = make_filter(["$type_name == 'CommunicationsAlarm' and $priority < 2"])
    b = make_filter([MARX])
    c = make_filter(ten)
    table = {
        "a": ("$type_name/$priority on a structured event", a.match_structured,
              structured_event()),
        "b": ("Marx Brothers 'in' example on an Any event", b.match, movie_event()),
        "c": ("10 constraints, only the last matches", c.match_structured,
              structured_event()),
    }
    seed = seed_event()
    for key, title, grammar, text in SEED_CASES:
        table[key] = (title, make_filter([text], grammar).match_structured, seed)
    return table


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
    parser.add_argument("--only", help="comma-separated case keys to run (default: all)")
    parser.add_argument("--profile", choices=["a", "b", "c", *(c[0] for c in SEED_CASES)],
                        help="profile one case with cProfile instead of timing")
    args = parser.parse_args(argv)
    table = cases()
    for key, (_, match, event) in table.items():
        assert match(event) is True, f"benchmark event of case {key} must match"
    if args.only:
        table = {key: table[key] for key in args.only.split(",")}
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
    medians: dict[str, float] = {}
    for key, (title, match, event) in table.items():
        rates = [rate(match, event, args.seconds) for _ in range(args.runs)]
        medians[key] = statistics.median(rates)
        print(f"({key}) {title}: {medians[key]:,.0f} matches/s "
              f"(min {min(rates):,.0f}, max {max(rates):,.0f})")
    for key in ("d", "e", "f"):
        if key in medians and f"{key}0" in medians:
            print(f"({key}) / ({key}0): {medians[key] / medians[key + '0']:.2f}x "
                  "the nearest EXTENDED_TCL constraint")
    return 0


if __name__ == "__main__":
    sys.exit(main())
