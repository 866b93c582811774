"""ORB benchmark: two-way calls per second across Python and omniORB C++, and CDR rates.

Strategy: every server runs in its own process (``tests/interop/peers.py``
builds the C++ programs and the Python stubs). A client process makes ``N``
two-way ``Interop::Thing::echo_small(Small{long, double, string})`` calls on
one connection after 200 warm-up calls and prints its rate. Each pairing is
measured ``R`` times, the pairings interleaved round-robin so that drift of
a shared machine hits them alike; the median is reported. Then the CDR
encode and decode rates of a ``CosNotification::StructuredEvent`` with five
filterable properties, in-process.

Usage: ``python benchmarks/orb_bench.py [--calls N] [--runs R] [--no-cxx]``
(defaults: 20000 calls, 5 runs). Machine information is printed first. On a
shared machine rates drift; the ratio that matters (Python<->Python over
omniORB C++<->C++) is therefore also computed per round, from measurements
taken seconds apart, and its median reported.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from machine import cpu_model  # benchmarks/machine.py, beside this script

from tests.interop import peers

PY_TPC = "Python -> Python (thread per connection)"
PY_POOL = "Python -> Python (thread pool)"
CXX = "C++ -> C++ (omniORB)"


def machine_info() -> list[str]:
    cpu = cpu_model()
    omniorb = "not installed"
    try:
        omniorb = subprocess.run(["pkg-config", "--modversion", "omniORB4"], capture_output=True,
                                 text=True, timeout=10, check=False).stdout.strip() or omniorb
    except (OSError, subprocess.SubprocessError):
        pass
    return [f"CPU: {cpu} ({os.cpu_count()} logical CPUs)",
            f"Python: {platform.python_implementation()} {platform.python_version()}",
            f"omniORB: {omniorb}", f"OS: {platform.platform()}"]


def python_server(policy: int) -> peers.Process:
    return peers.Process([sys.executable, "-m", "tests.interop.peers", "server",
                          "-ORBendPoint", "giop:tcp:127.0.0.1:0",
                          "-ORBthreadPerConnectionPolicy", str(policy)],
                         env=peers.python_env(), cwd=ROOT)


def python_client(ior: str, calls: int) -> float:
    text = peers.run_text([sys.executable, "-m", "tests.interop.peers", "bench", ior, str(calls)],
                          timeout=600, env=peers.python_env())
    return float(peers.parse_lines(text)["calls_per_second"])


def cxx_client(program: pathlib.Path) -> Callable[[str, int], float]:
    def run(ior: str, calls: int) -> float:
        text = peers.run_text([str(program), ior, "bench", str(calls)], timeout=600)
        return float(peers.parse_lines(text)["calls_per_second"])
    return run


def calls_per_second(calls: int, runs: int, with_cxx: bool
                     ) -> tuple[list[tuple[str, float]], list[float]]:
    servers: dict[str, peers.Process] = {}
    pairings: list[tuple[str, str, Callable[[str, int], float]]] = []
    try:
        servers["py-tpc"] = python_server(1)
        servers["py-pool"] = python_server(0)
        pairings += [(PY_TPC, "py-tpc", python_client), (PY_POOL, "py-pool", python_client)]
        if with_cxx:
            programs = peers.build_cxx()
            servers["cxx"] = peers.Process([str(programs["server"]), "-ORBendPoint",
                                            "giop:tcp:127.0.0.1:0"])
            client = cxx_client(programs["client"])
            pairings += [("C++ -> Python (thread per connection)", "py-tpc", client),
                         ("C++ -> Python (thread pool)", "py-pool", client),
                         ("Python -> C++", "cxx", python_client),
                         (CXX, "cxx", client)]
        results: dict[str, list[float]] = {name: [] for name, _, _ in pairings}
        ratios: list[float] = []
        for _ in range(runs):
            for name, server, client_fn in pairings:
                results[name].append(client_fn(servers[server].first_line, calls))
            if with_cxx:  # this round's Python<->Python over omniORB's C++<->C++
                ratios.append(max(results[PY_TPC][-1], results[PY_POOL][-1])
                              / results[CXX][-1])
        return [(name, statistics.median(values)) for name, values in results.items()], ratios
    finally:
        for process in servers.values():
            process.close()


def cdr_rates(seconds: float = 1.0) -> tuple[float, float, int]:
    from cosnotify.orb import CORBA
    from cosnotify.orb.cdr import Decoder, Encoder
    from cosnotify.stubs import CosNotification as N

    properties = [N.Property("priority", CORBA.Any(CORBA.TC_short, 3)),
                  N.Property("region", CORBA.Any(CORBA.TC_string, "emea")),
                  N.Property("price", CORBA.Any(CORBA.TC_double, 101.25)),
                  N.Property("volume", CORBA.Any(CORBA.TC_long, 5000)),
                  N.Property("urgent", CORBA.Any(CORBA.TC_boolean, True))]
    event = N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("Trading", "Quote"), "q-1"), []),
        properties, CORBA.Any(CORBA.TC_string, "payload"))
    tc = N._tc_StructuredEvent

    def encode() -> bytes:
        encoder = Encoder()
        encoder.write(tc, event)
        return encoder.getvalue()

    data = encode()

    def decode() -> object:
        return Decoder(data).read(tc)

    assert decode() == event
    rates = []
    for fn in (encode, decode):
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            for _ in range(200):
                fn()
            count += 200
        rates.append(count / (time.perf_counter() - start))
    return rates[0], rates[1], len(data)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-cxx", action="store_true", help="skip the omniORB C++ peers")
    args = parser.parse_args()
    for line in machine_info():
        print(line)
    with_cxx = not args.no_cxx
    if with_cxx:
        try:
            peers.build_cxx()
        except peers.Unavailable as exc:
            print(f"(C++ peers skipped: {exc})")
            with_cxx = False
    print(f"\nTwo-way calls per second, echo_small(struct{{long, double, string}}), "
          f"{args.calls} calls, median of {args.runs} runs:")
    results, ratios = calls_per_second(args.calls, args.runs, with_cxx)
    width = max(len(name) for name, _ in results)
    for name, rate in results:
        print(f"  {name:<{width}}  {rate:10.0f}")
    if ratios:
        print(f"  Python<->Python / omniORB C++<->C++, per round: "
              f"{', '.join(f'{100 * r:.0f}%' for r in ratios)}; "
              f"median {100 * statistics.median(ratios):.0f}% (goal: at least 25%)")
    encode, decode, size = cdr_rates()
    print(f"\nCDR, StructuredEvent with 5 filterable properties ({size} octets):")
    print(f"  encode  {encode:10.0f} events/s")
    print(f"  decode  {decode:10.0f} events/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
