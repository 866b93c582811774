"""The ``cosnotify`` command: ``serve``, ``ls``, ``tail``, ``publish``, ``top``.

Strategy: a small argparse front end with one sub-command per tool. ``serve``
is here; the operator's tools are modules of :mod:`cosnotify.tools`, each
adding its own sub-parser. Each sub-command returns a process exit status;
errors in the arguments or in starting up print one line to stderr and exit
2 (usage) or 1 (failure), never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import math
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cosnotify.tools.connect import count_arg

__all__ = ["TOOLS", "main"]

#: The tool modules of :mod:`cosnotify.tools`, in the order ``--help`` lists them.
TOOLS = ("ls", "tail", "publish", "top", "query")

log = logging.getLogger("cosnotify")


def _endpoint(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad port in {text!r}") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"port out of range in {text!r}")
    return host.strip("[]"), number


def _name(text: str) -> str:
    """A name a factory is bound as: not empty (a bad argument exits 2)."""
    if not text:
        raise argparse.ArgumentTypeError("a name cannot be empty")
    return text


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text!r}")
    return value


def _seconds_or_zero(text: str) -> float:
    if text.strip() in ("0", "0.0"):
        return 0.0
    return _seconds(text)


def _count_or_zero(text: str) -> int:
    return 0 if text.strip() == "0" else count_arg(text)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cosnotify",
                                     description="An OMG CORBA Notification Service 1.1.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run a notification server over IIOP")
    serve.add_argument("--endpoint", type=_endpoint, default=("127.0.0.1", 2809),
                       metavar="HOST:PORT",
                       help="where to listen (default 127.0.0.1:2809; port 0 picks a free port)")
    serve.add_argument("--naming", metavar="URL",
                       help="an external NameService (e.g. corbaloc::127.0.0.1:2809/NameService);"
                            " without it an embedded one answers at the endpoint")
    serve.add_argument("--idl", type=Path, action="append", default=[], metavar="FILE",
                       help="user IDL for typed channels (repeatable; docs/typed.md)")
    serve.add_argument("-I", "--include", type=Path, action="append", default=[],
                       metavar="DIR", help="include directory for --idl files (repeatable)")
    serve.add_argument("--typed-name", type=_name, default="TypedNotifyEventChannelFactory",
                       help="the name the typed factory is bound as, with --idl")
    serve.add_argument("--name", type=_name, default="NotifyEventChannelFactory",
                       help="the name the EventChannelFactory is bound under")
    serve.add_argument("--ior-file", type=Path, metavar="PATH",
                       help="write the factory's IOR to PATH")
    serve.add_argument("--db", type=Path, metavar="PATH",
                       help="the SQLite store: Persistent reliability, and channels back after "
                            "a restart (docs/persistence.md)")
    serve.add_argument("--db-max-bytes", type=count_arg, metavar="N",
                       help="the most the store's file may grow to; past it persistent "
                            "pushes get NO_RESOURCES (default: the disk is the limit)")
    serve.add_argument("--db-sync", choices=["full", "normal"], default="full",
                       help="full (default): what is accepted survives a power loss (an "
                            "fsync per commit); normal: survives a killed process only")
    serve.add_argument("--call-timeout", type=_seconds, default=10.0, metavar="SECONDS",
                       help="timeout of each call to a remote consumer or supplier (default 10)")
    serve.add_argument("--filter-timeout", type=_seconds, default=1.0, metavar="SECONDS",
                       help="timeout of each call to a filter a client implements (default 1)")
    serve.add_argument("--idle-pull-timeout", type=_seconds_or_zero, default=0.0,
                       metavar="SECONDS",
                       help="destroy a pull consumer's proxy after this long without a pull "
                            "(default 0: never)")
    serve.add_argument("--allow-reconnect", action="store_true",
                       help="let connect_* on a connected proxy replace its client (TAO's "
                            "-AllowReconnect) instead of raising AlreadyConnected")
    serve.add_argument("--max-workers", type=count_arg, default=32, metavar="N",
                       help="worker threads delivering to consumers and polling suppliers, "
                            "at most (default 32)")
    serve.add_argument("--max-workers-per-client", type=_count_or_zero, default=0, metavar="N",
                       help="workers the consumers and suppliers of one client process may "
                            "hold at once (default 0: a quarter of --max-workers)")
    serve.add_argument("--slow-push", type=_seconds_or_zero, default=0.01, metavar="SECONDS",
                       help="a push that takes longer marks its consumer slow: it is served "
                            "from a shared lane of a quarter of the workers until a push is "
                            "quick again (default 0.01; 0: never)")
    serve.add_argument("--max-subscriptions", type=_count_or_zero, default=100_000, metavar="N",
                       help="proxy suppliers the service holds at most, over all channels; "
                            "one more is refused with AdminLimitExceeded (default 100000; "
                            "0: no limit)")
    serve.add_argument("--max-connections", type=count_arg, metavar="N",
                       help="connections past which omniORB serves connections from its "
                            "thread pool instead of a thread each (default 10000)")
    serve.add_argument("--metrics", type=_endpoint, metavar="HOST:PORT",
                       help="serve Prometheus metrics at http://HOST:PORT/metrics "
                            "(docs/operations.md); port 0 picks a free one")
    from cosnotify.protocols.serve import DEFAULT_PORTS

    seeds = {"elvin": "Elvin 4 clients (the seed's section 8 protocol)",
             "eventer": "Eventer clients (hat-event's tcp+sbs protocol)",
             "eventheap": "Event Heap clients (the wire bundle protocol)",
             "oes": "OES clients (the text wire protocol)"}
    for protocol, what in seeds.items():
        serve.add_argument(f"--{protocol}", metavar="HOST:PORT",
                           help=f"serve {what} at HOST:PORT (default port "
                                f"{DEFAULT_PORTS[protocol]}; off unless given; "
                                "docs/protocols.md)")
        serve.add_argument(f"--{protocol}-channel", metavar="ID|NAME",
                           help=f"the channel the {protocol} front end serves: an id, or a "
                                "name made on first use (default: the channel named "
                                "'default')")
    serve.add_argument("--elvin-test-conn", type=_seconds_or_zero, metavar="SECONDS",
                       help="seconds of silence from an Elvin session after which the "
                            "front end sends TestConn, closing the session if nothing "
                            "answers within 30 s (seed section 7.4.13; default 3600: it is "
                            "how a dead client's connection is found; 0: never, and a "
                            "silent session is never closed)")
    serve.add_argument("--server-id", type=int, default=0, metavar="N",
                       help="this server's id where a protocol names one (Eventer's "
                            "EventId.server; default 0)")
    serve.add_argument("-v", "--verbose", action="count", default=0,
                       help="log more (once: info, twice: debug)")
    serve.set_defaults(run=serve_command)
    for tool in TOOLS:
        importlib.import_module(f"cosnotify.tools.{tool}").add_parser(commands)
    return parser


def serve_command(args: argparse.Namespace) -> int:
    from cosnotify.channel.service import ServiceConfig
    from cosnotify.protocols.serve import PROTOCOLS, elvin_limits, front_end_config
    from cosnotify.server import NotificationServer, ServerConfig

    host, port = args.endpoint
    try:
        for protocol in PROTOCOLS:  # a channel for a front end not asked for: a mistake
            if getattr(args, f"{protocol}_channel") is not None and \
                    getattr(args, protocol) is None:
                raise ValueError(f"--{protocol}-channel needs --{protocol} HOST:PORT")
        if args.elvin_test_conn is not None and args.elvin is None:
            raise ValueError("--elvin-test-conn needs --elvin HOST:PORT")
        limits = {"elvin": None if args.elvin_test_conn is None
                  else elvin_limits(args.elvin_test_conn)}
        front_ends = tuple(
            front_end_config(protocol, getattr(args, protocol),
                             getattr(args, f"{protocol}_channel"), limits.get(protocol))
            for protocol in PROTOCOLS if getattr(args, protocol) is not None)
        config = ServerConfig(front_ends=front_ends, server_id=args.server_id,
                              host=host, port=port, naming_url=args.naming, name=args.name,
                              idl=tuple(args.idl), include=tuple(args.include),
                              typed_name=args.typed_name,
                              ior_file=args.ior_file, call_timeout=args.call_timeout,
                              filter_timeout=args.filter_timeout,
                              max_connections=args.max_connections, db=args.db,
                              db_max_bytes=args.db_max_bytes, db_sync=args.db_sync.upper(),
                              service=ServiceConfig(
                                  idle_pull_consumer_timeout=args.idle_pull_timeout,
                                  allow_reconnect=args.allow_reconnect,
                                  max_subscriptions=args.max_subscriptions,
                                  max_workers=args.max_workers,
                                  max_workers_per_client=args.max_workers_per_client,
                                  slow_push=args.slow_push))
    except Exception as exc:  # noqa: BLE001 - one line, not a traceback
        print(f"cosnotify serve: cannot start: {exc}", file=sys.stderr)
        return 1
    metrics: Any = None
    registry: Any = None
    where = ""
    if args.metrics is not None:
        # Bound before the service starts: a port in use stops it from starting at all.
        from cosnotify.ops.metrics import serve_metrics

        metrics_host, metrics_port = args.metrics
        try:
            metrics, registry = serve_metrics(metrics_host, metrics_port)
        except OSError as exc:
            print(f"cosnotify serve: cannot start: metrics at {metrics_host}:{metrics_port}: "
                  f"{exc.strerror or exc}", file=sys.stderr)
            return 1
        url_host = f"[{metrics_host}]" if ":" in metrics_host else metrics_host
        where = f"; metrics http://{url_host}:{metrics.server_address[1]}/metrics"
    # The handlers come before the start (a big store's restore takes a while): a
    # signal then stops the server as soon as it has started, cleanly, never with a
    # traceback or a half-done start (review 108).
    stopping = threading.Event()
    started: list[Any] = []

    def stop(signum: int, frame: Any) -> None:
        log.info("signal %d: shutting down (a second signal ends the process at once)", signum)
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, signal.SIG_DFL)
        stopping.set()
        for running in started:
            running.request_stop()  # run() returns; the main thread stops the server

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        server = NotificationServer(config).start()
    except Exception as exc:  # noqa: BLE001 - one line, not a traceback
        if metrics is not None:
            metrics.shutdown()
        print(f"cosnotify serve: cannot start: {exc}", file=sys.stderr)
        return 1
    started.append(server)
    if stopping.is_set():  # a signal during the start
        server.request_stop()
    if registry is not None:
        from cosnotify.ops.metrics import StatsCollector

        registry.register(StatsCollector(server.factory))
    log.warning("serving %s at %s (naming %s%s)", config.name, server.factory_url,
                server.naming_url, where)
    try:
        server.run()
    finally:
        if metrics is not None:
            metrics.shutdown()
        server.stop(exiting=True)
    log.warning("stopped")
    _leave(0)
    return 0  # (not reached)


def _leave(status: int) -> None:
    """End a server process whose stop is complete (the ORB shut down, the store
    closed, the log flushed) without the interpreter's finalization: there, daemon
    threads (workers, the clock, the front ends' loop) and omniORB's own teardown
    can still run, and a thread writing to stderr while finalization flushes it
    aborts the process (SIGABRT, "could not acquire lock for <_io.BufferedWriter
    name='<stderr>'> at interpreter shutdown"): a clean stop would exit -6."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(getattr(args, "verbose", 0), 2)]
    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    status: int = args.run(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
