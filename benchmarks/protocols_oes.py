"""Benchmark: the OES front end -- POST round trips over a socket, NOTIFY to a contact.

Run: ``.venv/bin/python benchmarks/protocols_oes.py [--posts 3000] [--rounds 3]``.

Strategy, one process on 127.0.0.1 (issue 22, item 4; docs/protocols.md, "OES"):
a factory, its ``default`` channel's tree, the OES front end on the
protocols loop, and a contact (a thread that reads NOTIFY requests and
answers ``OES/1.0 200 OK``). One wire contract to the contact subscribes to
the root (depth -1), so each POST notifies it once. Timed, per round:

* **wire POST, notified**: a client posts ``posts`` updates of one node, each a
  round trip (request, then its 200) on one connection; posts/s is over the
  round trips, notifications/s until the contact has every NOTIFY;
* **wire POST, pipelined x100**: the same, 100 requests written before their
  replies are read (the front end answers in order);
* **notifications, 10 contracts**: ten contracts (ten contacts) on the root, so
  each pipelined POST notifies ten, delivered in parallel on the channel's
  workers;
* **wire POST, no contract**: the round trips alone (the contract cancelled);
* **Tree.post, in process**: the same posts called on the tree, with an
  in-process consumer as the contract's, until it has every notification:
  what the wire adds is the ratio.

``run()`` returns the report as lines (the final protocols benchmark prints them).
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import socket
import sys
import threading
import time
from statistics import median
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import omniORB  # noqa: F401 - puts the COS stubs on sys.path
from machine import cpu_model

from cosnotify.channel.factory import EventChannelFactory
from cosnotify.oes import Tree
from cosnotify.protocols import Context
from cosnotify.protocols.listener import Loop
from cosnotify.protocols.oes import start

CRLF = b"\r\n"
#: Contracts (each with its contact) notified by each POST in the fan-out case.
FAN_OUT = 10


def _request(verb: str, uri: str, headers: list[tuple[str, str]] | None = None,
             body: str | None = None) -> bytes:
    lines = [f"{verb} {uri} OES/1.0".encode("utf-7")]
    data = body.encode("utf-7") if body is not None else b""
    lines += [f"{name}: {value}".encode("utf-7") for name, value in headers or []]
    if body is not None:
        lines.append(b"Content-Length: %d" % len(data))
    return CRLF.join(lines) + CRLF + CRLF + data


class _Stream:
    """Read OES messages (head and Content-Length body) off a socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()

    def read(self) -> bytes | None:
        while True:
            end = self.buffer.find(CRLF + CRLF)
            if end >= 0:
                head = bytes(self.buffer[:end])
                length = 0
                for line in head.split(CRLF)[1:]:
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                if len(self.buffer) >= end + 4 + length:
                    del self.buffer[:end + 4 + length]
                    return head
            data = self.sock.recv(262144)
            if not data:
                return None
            self.buffer += data


class _Contact:
    """A client's notification receiving process: counts NOTIFYs, answers each 200."""

    def __init__(self) -> None:
        self.count = 0
        self.cond = threading.Condition()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        stream = _Stream(sock)
        while stream.read() is not None:
            sock.sendall(b"OES/1.0 200 OK\r\n\r\n")
            with self.cond:
                self.count += 1
                if self.count % 100 == 0:
                    self.cond.notify_all()  # the waiter polls for the rest
        sock.close()

    def wait_for(self, count: int, timeout: float = 120.0) -> bool:
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.count < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(min(left, 0.005))
        return True


class _Counter:
    """An in-process StructuredPushConsumer that counts."""

    def __init__(self) -> None:
        self.count = 0
        self.done = threading.Event()
        self.target = 0

    def push_structured_event(self, event: Any) -> None:
        self.count += 1
        if self.count >= self.target:
            self.done.set()

    def disconnect_structured_push_consumer(self) -> None:
        pass


def run(posts: int = 3000, rounds: int = 3) -> list[str]:
    """The report, as lines."""
    factory = EventChannelFactory()
    loop = Loop()
    context = Context(factory, loop)
    front_end = start(context, "127.0.0.1", 0)
    tree = Tree.of(context.channel(None))
    contact = _Contact()
    sock = socket.create_connection(front_end.address)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    stream = _Stream(sock)

    def call(data: bytes) -> bytes:
        sock.sendall(data)
        head = stream.read()
        assert head is not None and head.startswith(b"OES/1.0 200"), head
        return head

    call(_request("LEASECONTRACT", f"tcp:127.0.0.1:{contact.port}"))
    [contract_id] = tree.contract_ids()  # the reply's <contract> names it too
    call(_request("SUBSCRIBE", "\\", [("Contract-id", str(contract_id))]))
    bodies = [_request("POST", "\\bench\\node",
                       body=f'<node><content>{i % 10_000:08d}</content></node>')
              for i in range(posts)]
    call(bodies[0])
    contact.wait_for(2)  # \bench and \bench\node created
    rates: dict[str, list[float]] = {"wire POST, notified": [], "notifications": [],
                                     "wire POST, pipelined x100": [],
                                     "notifications, pipelined": [],
                                     f"notifications, {FAN_OUT} contracts": [],
                                     "wire POST, no contract": [], "Tree.post, in process": []}
    try:
        for _ in range(rounds):
            before = contact.count
            started = time.perf_counter()
            for data in bodies:
                call(data)
            posted = time.perf_counter()
            if not contact.wait_for(before + posts):
                raise RuntimeError("notifications missing")
            notified = time.perf_counter()
            rates["wire POST, notified"].append(posts / (posted - started))
            rates["notifications"].append(posts / (notified - started))

            before = contact.count
            started = time.perf_counter()
            for at in range(0, posts, 100):
                batch = bodies[at:at + 100]
                sock.sendall(b"".join(batch))
                for _ in batch:
                    head = stream.read()
                    assert head is not None and head.startswith(b"OES/1.0 200")
            posted = time.perf_counter()
            if not contact.wait_for(before + posts):
                raise RuntimeError("notifications missing")
            notified = time.perf_counter()
            rates["wire POST, pipelined x100"].append(posts / (posted - started))
            rates["notifications, pipelined"].append(posts / (notified - started))

        crowd = [contact] + [_Contact() for _ in range(FAN_OUT - 1)]
        for other in crowd[1:]:
            call(_request("LEASECONTRACT", f"tcp:127.0.0.1:{other.port}"))
        for number in tree.contract_ids():
            if number != contract_id:
                call(_request("SUBSCRIBE", "\\", [("Contract-id", str(number))]))
        fewer = bodies[:max(100, posts // FAN_OUT)]
        for _ in range(rounds):
            before = [c.count for c in crowd]
            started = time.perf_counter()
            for at in range(0, len(fewer), 100):
                batch = fewer[at:at + 100]
                sock.sendall(b"".join(batch))
                for _ in batch:
                    head = stream.read()
                    assert head is not None and head.startswith(b"OES/1.0 200")
            for other, count in zip(crowd, before, strict=True):
                if not other.wait_for(count + len(fewer)):
                    raise RuntimeError("notifications missing")
            rates[f"notifications, {FAN_OUT} contracts"].append(
                FAN_OUT * len(fewer) / (time.perf_counter() - started))
        for number in tree.contract_ids():
            call(_request("CANCELCONTRACT", str(number)))
        for other in crowd[1:]:
            other.server.close()
        for _ in range(rounds):
            started = time.perf_counter()
            for data in bodies:
                call(data)
            rates["wire POST, no contract"].append(posts / (time.perf_counter() - started))

        counter = _Counter()
        contract = tree.lease_contract(counter, 600)
        tree.subscribe(contract.contract_id, "\\")
        for _ in range(rounds):
            counter.target = counter.count + posts
            counter.done.clear()
            started = time.perf_counter()
            for index in range(posts):
                tree.post("\\bench\\node", f"{index % 10_000:08d}".encode())
            if not counter.done.wait(120):
                raise RuntimeError("in-process notifications missing")
            rates["Tree.post, in process"].append(posts / (time.perf_counter() - started))
    finally:
        sock.close()
        front_end.close()
        loop.close()
        factory.close()
        contact.server.close()

    base = median(rates["Tree.post, in process"])
    title = (f"OES wire protocol: {posts} POSTs per round, {rounds} rounds, one contract on "
             "the root notified by NOTIFY to a contact on 127.0.0.1 (one connection each way)")
    lines = [title,
             f"  machine: {cpu_model()}, Python {platform.python_version()}"]
    units = {label: "notifications/s" for label in rates if label.startswith("notifications")}
    for label, values in rates.items():
        unit = units.get(label, "posts/s")
        lines.append(f"  {label:28}{median(values):10,.0f} {unit:16}"
                     f"({median(values) / base:5.2f}x Tree.post)   rounds: "
                     + ", ".join(f"{v:,.0f}" for v in values))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for line in run(args.posts, args.rounds):
        print(line)


if __name__ == "__main__":
    main()
