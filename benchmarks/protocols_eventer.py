"""Benchmark: the Eventer front end against hat-event 0.8.17's own server (issue 22's table).

Run: ``.venv/bin/python benchmarks/protocols_eventer.py`` (about 40 s).

Strategy: both servers run as child processes on 127.0.0.1, each with its own
interpreter (its own GIL and core), and hat-event's own client
(``hat.event.eventer.client``) in this process talks to each in turn:

* **hat-event** -- ``python -m hat.event.server`` with the lmdb backend in a
  temporary directory (``flush_period`` 1 s; every type kept ``latest`` and
  ``ordered`` by timestamp, so it can answer queries), no engine modules;
* **cosnotify** -- this file's ``--serve``: an ``EventChannelFactory`` over an
  ``SQLiteStore`` in a temporary directory and the Eventer front end, whose
  channel retains (``RetainCount`` 1,000,000).

Measured, the servers alternating, 3 rounds each, the best round reported:

* **register, batches of 1** -- ``register_with_response`` of one event, one
  request after the other (``REGISTER_ONE`` requests): events/s;
* **register, batches of 100** -- the same with 100 events per request
  (``REGISTER_BATCHES`` requests): events/s;
* **query** -- 10,000 events stored (100 requests of 100, types ``("bench",
  "q", "0".."9")`` and ``("other", ...)`` in turn), then ``query`` with a type
  wildcard ``("bench", "*")``, a time range (the middle half of the
  registrations) and ``max_results`` 100: the median latency of
  ``QUERIES`` queries;
* **each window once** -- before that, on the same events, 50 queries of
  ``("bench", "*")`` over disjoint time ranges of 100 events each, every
  event answered for the first time: the median latency. cosnotify's front
  end keeps the encoding of the events it answered with
  (``cosnotify/protocols/eventer/replies.py``), so the repeated query above
  measures an answer of events already encoded, and this one a first answer.

The ratios: cosnotify's rate over hat-event's (>= 1 meets the goal), and
cosnotify's query latency over hat-event's (<= 1 meets it).
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import platform
import socket
import subprocess
import sys
import tempfile
import time
from statistics import median
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.machine import cpu_model

REGISTER_ONE = 2_000
REGISTER_BATCHES = 100
STORED = 10_000
QUERIES = 200
ROUNDS = 3


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _serve(db: str, port: int, mode: str) -> None:
    """The cosnotify side (a child process): factory, SQLite store, Eventer front end.
    ``mode``: ``store`` (as measured), ``nostore`` (no store: nothing retained, what the
    front end costs without the history writer)."""
    import cosnotify
    from cosnotify.protocols import Context
    from cosnotify.protocols.eventer import start
    from cosnotify.protocols.listener import Loop
    from cosnotify.store.sqlite import SQLiteStore

    factory = cosnotify.EventChannelFactory(store=None if mode == "nostore" else SQLiteStore(db))
    loop = Loop()
    front_end = start(Context(factory, loop, 1), "127.0.0.1", port)
    print("ready", flush=True)
    try:
        sys.stdin.read()  # until the parent closes our stdin
    finally:
        front_end.close()
        loop.close()


def _wait_port(port: int, process: subprocess.Popen[Any], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited: {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


def _start_hat(directory: pathlib.Path, port: int) -> subprocess.Popen[Any]:
    conf = {
        "type": "event", "log": {"version": 1},
        "backend": {"module": "hat.event.server.backends.lmdb",
                    "db_path": str(directory / "hat-event.db"), "max_db_size": 1_000_000_000,
                    "flush_period": 1, "conditions": [],
                    "latest": {"subscriptions": [["*"]]},
                    "ordered": [{"order_by": "TIMESTAMP", "subscriptions": [["*"]]}]},
        "engine": {"server_id": 1, "modules": []},
        "eventer_server": {"address": f"tcp+sbs://127.0.0.1:{port}"}}
    path = directory / "hat-event.json"
    path.write_text(json.dumps(conf))
    process = subprocess.Popen([sys.executable, "-m", "hat.event.server", "--conf", str(path)],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    _wait_port(port, process)
    return process


def _start_cosnotify(directory: pathlib.Path, port: int,
                     mode: str = "store") -> subprocess.Popen[Any]:
    process = subprocess.Popen([sys.executable, __file__, "--serve",
                                str(directory / f"cosnotify-{mode}.db"), str(port), mode],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if line.strip() != "ready":
        raise RuntimeError(f"cosnotify's server did not start: {line!r}")
    return process


def _stop(process: subprocess.Popen[Any]) -> None:
    if process.stdin is not None:
        process.stdin.close()
    else:
        process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


async def _register_rate(address: str, batch: int, requests: int, tag: str) -> float:
    from hat.event import common
    from hat.event.eventer import client as hat_client

    client = await hat_client.connect(address)
    try:
        events = [common.RegisterEvent(("bench", tag, str(i % 10)), None,
                                       common.EventPayload(common.EventPayloadType.JSON,
                                                           {"n": i}))
                  for i in range(batch)]
        await client.register_with_response(events)  # warm up
        start = time.perf_counter()
        for _ in range(requests):
            made = await client.register_with_response(events)
        elapsed = time.perf_counter() - start
        assert all(e is not None for e in made)
        return batch * requests / elapsed
    finally:
        await client.async_close()


async def _query_latency(address: str) -> tuple[float, int, float]:
    from hat.event import common
    from hat.event.eventer import client as hat_client

    client = await hat_client.connect(address)
    try:
        stamps = []
        for n in range(STORED // 100):
            domain = "bench" if n % 2 == 0 else "other"
            made = await client.register_with_response([
                common.RegisterEvent((domain, "q", str(i % 10)), None, None)
                for i in range(100)])
            stamps.append(made[0].timestamp)
        query = common.QueryData(event_types=[("bench", "*")], t_from=stamps[len(stamps) // 4],
                                 t_to=stamps[3 * len(stamps) // 4], max_results=100)
        # Each window once: request k's 100 "bench" events (k even), up to the first
        # event of request k + 1 ("other": not selected). No event is in two windows,
        # so none was answered before: the latency of a first query.
        firsts = []
        for k in range(0, len(stamps) - 1, 2):
            window = common.QueryData(event_types=[("bench", "*")], t_from=stamps[k],
                                      t_to=stamps[k + 1], max_results=100)
            start = time.perf_counter()
            found = await client.query(window)
            firsts.append(time.perf_counter() - start)
            assert len(found) == 100 and len({e.event_id.session for e in found}) == 1
        found = await client.query(query)
        times = []
        for _ in range(QUERIES):
            start = time.perf_counter()
            found = await client.query(query)
            times.append(time.perf_counter() - start)
        return median(times), len(found), median(firsts)
    finally:
        await client.async_close()


def run() -> list[str]:
    """Both servers, measured in one run; the lines of the report."""
    names = ("hat-event", "cosnotify", "cosnotify, no history")
    rates: dict[str, dict[str, list[float]]] = {name: {} for name in names}
    queries: dict[str, tuple[float, int, float]] = {}
    with tempfile.TemporaryDirectory(prefix="eventer-bench-") as tmp:
        directory = pathlib.Path(tmp)
        ports = {name: _free_port() for name in names}
        servers = {"hat-event": _start_hat(directory, ports["hat-event"]),
                   "cosnotify": _start_cosnotify(directory, ports["cosnotify"]),
                   "cosnotify, no history": _start_cosnotify(
                       directory, ports["cosnotify, no history"], "nostore")}
        try:
            for _ in range(ROUNDS):
                for name, port in ports.items():
                    address = f"tcp+sbs://127.0.0.1:{port}"
                    for label, batch, count in (("register x1", 1, REGISTER_ONE),
                                                ("register x100", 100, REGISTER_BATCHES)):
                        rate = asyncio.run(_register_rate(address, batch, count, "r"))
                        rates[name].setdefault(label, []).append(rate)
            for process in servers.values():
                _stop(process)
            # Fresh servers for the query: exactly STORED events each.
            query_names = ("hat-event", "cosnotify")
            for name in query_names:
                (directory / name).mkdir()
            servers = {
                "hat-event": _start_hat(directory / "hat-event", ports["hat-event"]),
                "cosnotify": _start_cosnotify(directory / "cosnotify", ports["cosnotify"])}
            for name in query_names:
                queries[name] = asyncio.run(
                    _query_latency(f"tcp+sbs://127.0.0.1:{ports[name]}"))
        finally:
            for process in servers.values():
                if process.poll() is None:
                    _stop(process)
    lines = [(f"Eventer front end vs hat-event 0.8.17 (lmdb), {cpu_model()}, "
              f"{os.cpu_count()} CPUs, Python {platform.python_version()}"),
             (f"  {'measure':28}{'hat-event':>12}{'cosnotify':>12}{'ratio':>7}"
             f"{'no history':>12}{'ratio':>7}")]
    for label in ("register x1", "register x100"):
        theirs, ours, bare = (max(rates[name][label]) for name in names)
        lines.append(f"  {label + ' (events/s)':28}{theirs:12,.0f}{ours:12,.0f}"
                     f"{ours / theirs:7.2f}{bare:12,.0f}{bare / theirs:7.2f}")
    (theirs_q, theirs_n, theirs_1), (ours_q, ours_n, ours_1) = (
        queries[name] for name in ("hat-event", "cosnotify"))
    lines.append(f"  {'query 100 of 10k (ms)':28}{theirs_q * 1e3:12.2f}{ours_q * 1e3:12.2f}"
                 f"{ours_q / theirs_q:7.2f}")
    lines.append(f"  {'  each window once (ms)':28}{theirs_1 * 1e3:12.2f}{ours_1 * 1e3:12.2f}"
                 f"{ours_1 / theirs_1:7.2f}")
    lines.append(f"  (rates: best of {ROUNDS} rounds; query: median of {QUERIES}, "
                 f"{theirs_n} and {ours_n} events returned; each window once: median of "
                 f"{STORED // 200} queries of 100 events none asked before; no history: a "
                 "service without a store)")
    return lines


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--serve":
        _serve(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        return
    for line in run():
        print(line)


if __name__ == "__main__":
    main()
