"""Capture real GIOP traffic between omniORB's nameclt and omniNames.

Strategy: start ``omniNames`` on a private port, put a recording TCP relay in
front of it, and run ``nameclt`` through the relay with different GIOP
versions and operations. Each GIOP message seen on the wire is split out by
its 12-byte header and written as a JSON vector. The ``expect`` fields come
from the small, independent parser below (not from ``cosnotify.orb.giop``),
so the tests compare two readings of bytes omniORB produced.

Run from the repository root (needs omniORB's ``omniNames`` and ``nameclt``)::

    .venv/bin/python tests/vectors/capture_omniorb.py [--out DIR]

It rewrites ``tests/vectors/omniorb_*.json`` and ``ior_omninames.json`` (or
writes them to ``DIR``). No step waits on a timer: omniNames is ready when it
prints its root context, and the relay hands over a connection's bytes once
both of its ends have closed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import re
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.interop.peers import LineReader, Unavailable

MSG_NAMES = ["Request", "Reply", "CancelRequest", "LocateRequest", "LocateReply",
             "CloseConnection", "MessageError", "Fragment"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Relay:
    """Accept on ``port``, connect each client to ``target``, record both directions.

    Each connection has two pump threads, one per direction; a pump ends when
    its source closes, after passing the close on. :meth:`take` joins the pumps
    of every connection so far, so every byte is recorded when it returns.
    """

    def __init__(self, port: int, target: int) -> None:
        self.target = target
        self.server = socket.create_server(("127.0.0.1", port))
        self.connections: list[tuple[list[tuple[str, bytes]], list[socket.socket],
                                     list[threading.Thread]]] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            record: list[tuple[str, bytes]] = []
            pumps = [threading.Thread(target=self._pump,
                                      args=(client, upstream, "client->server", record),
                                      daemon=True),
                     threading.Thread(target=self._pump,
                                      args=(upstream, client, "server->client", record),
                                      daemon=True)]
            with self.lock:  # started under the lock: take() never sees an unstarted pump
                self.connections.append((record, [client, upstream], pumps))
                for pump in pumps:
                    pump.start()

    def _pump(self, src: socket.socket, dst: socket.socket, direction: str,
              record: list[tuple[str, bytes]]) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            with self.lock:
                record.append((direction, data))
            try:
                dst.sendall(data)
            except OSError:
                return

    def take(self, timeout: float = 10.0) -> list[list[tuple[str, bytes]]]:
        """The records of the connections so far, once both ends of each have closed.

        Both peers close a connection when the client exits; a pump still
        running at ``timeout`` has its sockets shut down, which ends it.
        """
        with self.lock:
            taken, self.connections = self.connections, []
        deadline = time.monotonic() + timeout
        for _, sockets, pumps in taken:
            for pump in pumps:
                pump.join(max(0.0, deadline - time.monotonic()))
            if any(pump.is_alive() for pump in pumps):
                print("relay: a connection stayed open; shutting it down", file=sys.stderr)
                for sock in sockets:
                    try:
                        sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                for pump in pumps:
                    pump.join(timeout)
            for sock in sockets:
                sock.close()
        with self.lock:
            return [record for record, _, _ in taken]

    def close(self) -> None:
        """Stop accepting (shutdown wakes the blocked accept) and take what is left."""
        try:
            self.server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.server.close()
        self.take()


def split_messages(chunks: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """Cut each direction's byte stream into GIOP messages, in the order they completed."""
    streams: dict[str, bytearray] = {}
    done: dict[str, int] = {}
    out: list[tuple[int, str, bytes]] = []
    for moment, (direction, data) in enumerate(chunks):
        stream = streams.setdefault(direction, bytearray())
        stream.extend(data)
        pos = done.get(direction, 0)
        while pos + 12 <= len(stream):
            little = stream[pos + 6] & 1
            (size,) = struct.unpack_from("<I" if little else ">I", stream, pos + 8)
            if pos + 12 + size > len(stream):
                break
            out.append((moment, direction, bytes(stream[pos:pos + 12 + size])))
            pos += 12 + size
        done[direction] = pos
    return [(d, m) for _, d, m in out]


# -- an independent, minimal GIOP reader for the expected fields ------------------------

class Mini:
    def __init__(self, data: bytes, little: bool) -> None:
        self.d, self.p, self.e = data, 12, "<" if little else ">"

    def align(self, n: int) -> None:
        self.p += -self.p % n

    def ulong(self) -> int:
        self.align(4)
        (v,) = struct.unpack_from(self.e + "I", self.d, self.p)
        self.p += 4
        return int(v)

    def short(self) -> int:
        self.align(2)
        (v,) = struct.unpack_from(self.e + "h", self.d, self.p)
        self.p += 2
        return int(v)

    def octets(self) -> bytes:
        n = self.ulong()
        v = self.d[self.p:self.p + n]
        self.p += n
        return v

    def string(self) -> str:
        return self.octets()[:-1].decode("latin-1")

    def contexts(self) -> list[int]:
        ids = []
        for _ in range(self.ulong()):
            ids.append(self.ulong())
            self.octets()
        return ids


def expect_fields(msg: bytes) -> dict[str, Any]:
    major, minor, flags, mtype = msg[4], msg[5], msg[6], msg[7]
    little = bool(flags & 1)
    m = Mini(msg, little)
    out: dict[str, Any] = {"message_type": MSG_NAMES[mtype], "version": [major, minor],
                           "little_endian": little, "more_fragments": bool(flags & 2),
                           "size": len(msg)}
    if MSG_NAMES[mtype] == "Request":
        if minor < 2:
            out["service_context_ids"] = m.contexts()
            out["request_id"] = m.ulong()
            out["response_expected"] = bool(m.d[m.p])
            m.p += 1 if minor == 0 else 4
            out["object_key"] = m.octets().hex()
            out["operation"] = m.string()
            m.octets()  # principal
        else:
            out["request_id"] = m.ulong()
            out["response_flags"] = m.d[m.p]
            m.p += 4
            disposition = m.short()
            out["target_disposition"] = disposition
            if disposition == 0:
                out["object_key"] = m.octets().hex()
            out["operation"] = m.string()
            out["service_context_ids"] = m.contexts()
            if m.p < len(msg):
                m.align(8)
        out["body_offset"] = m.p
    elif MSG_NAMES[mtype] == "Reply":
        if minor < 2:
            out["service_context_ids"] = m.contexts()
            out["request_id"] = m.ulong()
            out["reply_status"] = m.ulong()
        else:
            out["request_id"] = m.ulong()
            out["reply_status"] = m.ulong()
            out["service_context_ids"] = m.contexts()
            if m.p < len(msg):
                m.align(8)
        out["body_offset"] = m.p
        if out["reply_status"] in (1, 2):
            out["exception_id"] = m.string()
    elif MSG_NAMES[mtype] in ("LocateRequest", "CancelRequest"):
        out["request_id"] = m.ulong()
        if MSG_NAMES[mtype] == "LocateRequest":
            if minor >= 2:
                m.short()
            out["object_key"] = m.octets().hex()
    elif MSG_NAMES[mtype] == "LocateReply":
        out["request_id"] = m.ulong()
        out["locate_status"] = m.ulong()
    elif MSG_NAMES[mtype] == "Fragment" and minor >= 2:
        out["request_id"] = m.ulong()
    return out


def arguments(argv: list[str] | None, doc: str | None) -> argparse.Namespace:
    """``--out DIR`` (default: this directory); ``doc``'s first paragraph is the description."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=HERE, metavar="DIR",
                        help="where to write the vectors (default: tests/vectors, rewriting "
                             "the committed ones)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    out = arguments(argv, __doc__).out
    out.mkdir(parents=True, exist_ok=True)
    date = datetime.date.today().isoformat()
    with tempfile.TemporaryDirectory() as datadir:
        ns_port, relay_port = free_port(), free_port()
        # Publish the relay's port in every IOR omniNames makes, so calls on
        # returned references also pass through the relay.
        names = subprocess.Popen(
            ["omniNames", "-start", str(ns_port), "-datadir", datadir,
             "-ORBendPoint", f"giop:tcp:127.0.0.1:{ns_port}",
             "-ORBendPointPublish", f"giop:tcp:127.0.0.1:{relay_port}"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, errors="replace")
        assert names.stdout is not None
        log = LineReader(names, names.stdout)
        relay = Relay(relay_port, ns_port)
        try:
            # omniNames is ready once it prints its root context's IOR.
            try:
                root_line = log.wait_for("Root context is", 30)
            except Unavailable as exc:
                print(f"omniNames did not start: {exc}", file=sys.stderr)
                return 1
            root = re.search(r"Root context is (IOR:[0-9a-f]+)", root_line)
            root_ior = root.group(1) if root else ""
            # A corbaloc address without a version means IIOP 1.0, so omniORB
            # speaks GIOP 1.0 to it; name the version to get 1.1 and 1.2 traffic.
            ref = f"NameService=corbaloc:iiop:1.2@127.0.0.1:{relay_port}/NameService"
            ref11 = f"NameService=corbaloc:iiop:1.1@127.0.0.1:{relay_port}/NameService"
            ref10 = f"NameService=corbaloc::127.0.0.1:{relay_port}/NameService"
            bad = f"NameService=corbaloc:iiop:1.2@127.0.0.1:{relay_port}/NoSuchKey"
            long_name = "x" * 20000
            scenarios: list[tuple[str, list[str]]] = [
                ("list_empty_giop12", ["-ORBInitRef", ref, "list"]),
                ("bind_new_context_giop12", ["-ORBInitRef", ref, "bind_new_context", "ctx1"]),
                ("list_one_giop12", ["-ORBInitRef", ref, "list"]),
                ("resolve_missing_giop12", ["-ORBInitRef", ref, "resolve", "nosuch"]),
                ("list_by_ior_giop12", ["-ior", root_ior, "list"]),
                ("list_by_ior_giop11", ["-ORBmaxGIOPVersion", "1.1", "-ior", root_ior, "list"]),
                ("resolve_giop12", ["-ORBInitRef", ref, "resolve", "ctx1"]),
                ("list_giop10", ["-ORBInitRef", ref10, "list"]),
                ("list_giop11", ["-ORBInitRef", ref11, "list"]),
                ("bad_key_giop12", ["-ORBInitRef", bad, "list"]),
                ("bind_long_giop12", ["-ORBInitRef", ref, "bind_new_context", long_name]),
                ("bind_long_giop11", ["-ORBInitRef", ref11,
                                      "bind_new_context", long_name + "y"]),
            ]
            written = []
            for name, args in scenarios:
                run = subprocess.run(["nameclt", *args], check=False, capture_output=True,
                                     text=True, timeout=20)
                # nameclt has exited; take() returns once the relay has seen both
                # ends of each of its connections close, every byte recorded.
                print(name, run.returncode, run.stdout.strip()[:60], run.stderr.strip()[:200])
                messages = [(number, d, m) for number, conn in enumerate(relay.take())
                            for d, m in split_messages(conn)]
                for index, (number, direction, msg) in enumerate(messages):
                    vector = {
                        "source": f"omniORB 4.2.5 nameclt -> omniNames, captured via relay on {date}",
                        "scenario": f"nameclt {' '.join(a if len(a) < 40 else a[:8] + '...' for a in args)}"
                                    f" (exit {run.returncode})",
                        "connection": number,
                        "direction": direction,
                        "hex": msg.hex(),
                        "expected_valid": True,
                        "expect": expect_fields(msg),
                    }
                    path = out / f"omniorb_{name}_{index:02d}.json"
                    path.write_text(json.dumps(vector, indent=1) + "\n")
                    written.append(path.name)
            names.terminate()
            names.wait(timeout=5)
        finally:
            if names.poll() is None:
                names.kill()
                names.wait(timeout=5)
            relay.close()
            log.thread.join(10)  # the pipe ends with the process
            names.stdout.close()
    if root_ior:
        ior = root_ior
        catior = subprocess.run(["catior", "-x", ior], check=False, capture_output=True, text=True).stdout
        (out / "ior_omninames.json").write_text(json.dumps({
            "source": f"omniORB 4.2.5 omniNames root context IOR, printed on {date}",
            "ior": ior, "catior": catior.splitlines(), "expected_valid": True,
        }, indent=1) + "\n")
        written.append("ior_omninames.json")
    print("\n".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
