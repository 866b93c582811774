"""A small Elvin 4 test client, written from the seed's tables, independent of cosnotify's codec.

There is no public Elvin client to test against here, so this one encodes and
decodes packets straight from seeds/elvin-client-protocol-4.0.txt: the pkt_id
enumeration (§8.2.3.1), the base types (§8.2.3.2: boolean and uint8 as 4-byte
ints, int64 a hyper, strings and opaques length-prefixed and zero-padded to
4), arrays (§8.2.3.3), the value type codes (xdr_int32 = 1 ... xdr_opaque =
5), the SubAST codes (§8.2.3.4), the packet structs (§7.4) and the 4-byte
framing header (§8.2.1). It shares no code with cosnotify/protocols/elvin, so
a test that passes has the two agreeing, not one agreeing with itself.

Values: ``int`` is int32, ``I64(n)`` int64, ``float`` real64, ``str`` string,
``bytes`` opaque.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

# §8.2.3.1
PKT = {"UNotify": 32, "Nack": 48, "ConnRqst": 49, "ConnRply": 50, "DisconnRqst": 51,
       "DisconnRply": 52, "Disconn": 53, "SecRqst": 54, "SecRply": 55, "NotifyEmit": 56,
       "NotifyDeliver": 57, "SubAddRqst": 58, "SubModRqst": 59, "SubDelRqst": 60,
       "SubRply": 61, "DropWarn": 62, "TestConn": 63, "ConfConn": 64, "QosRqst": 70,
       "QosRply": 71, "QnchAddRqst": 80, "QnchModRqst": 81, "QnchDelRqst": 82,
       "QnchRply": 83, "SubAddNotify": 84, "SubModNotify": 85, "SubDelNotify": 86}
NAME = {v: k for k, v in PKT.items()}
WAIT = 10.0


class I64(int):
    """An int64 value (a plain int is an int32)."""


# -- writing (§8.2.3.2, §8.2.3.3) ------------------------------------------------------------------
def u32(n: int) -> bytes:
    return struct.pack(">I", n)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


def id64(n: int) -> bytes:
    return struct.pack(">Q", n)


def opaque(b: bytes) -> bytes:
    return u32(len(b)) + b + b"\0" * (-len(b) % 4)


def string(s: str) -> bytes:
    return opaque(s.encode("utf-8"))


def value(v: Any) -> bytes:
    if isinstance(v, I64):
        return u32(2) + i64(v)
    if isinstance(v, (bool, int)):
        return u32(1) + i32(int(v))
    if isinstance(v, float):
        return u32(3) + struct.pack(">d", v)
    if isinstance(v, str):
        return u32(4) + string(v)
    return u32(5) + opaque(v)


def nvs(items: list[tuple[str, Any]] | dict[str, Any]) -> bytes:
    pairs = list(items.items()) if isinstance(items, dict) else list(items)
    return u32(len(pairs)) + b"".join(string(k) + value(v) for k, v in pairs)


def keys(lists: list[tuple[int, list[list[bytes]]]] = ()) -> bytes:  # type: ignore[assignment]
    """§7.4 ``Keys``: [(scheme, [[key, ...] per key set]), ...]."""
    out = u32(len(lists))
    for scheme, sets in lists:
        out += u32(scheme) + u32(len(sets))
        for key_set in sets:
            out += u32(len(key_set)) + b"".join(opaque(k) for k in key_set)
    return out


def frame(pkt: str | int, body: bytes = b"") -> bytes:
    """A framed packet (§8.2.1): length, then pkt_id and the body."""
    data = u32(PKT[pkt] if isinstance(pkt, str) else pkt) + body
    return u32(len(data)) + data


def conn_rqst(xid: int, options: Any = (), nfn: Any = (), sub: Any = (),
              major: int = 4, minor: int = 0) -> bytes:
    return frame("ConnRqst", u32(xid) + u32(major) + u32(minor) + nvs(list(options))
                 + keys(list(nfn)) + keys(list(sub)))


def notify_emit(attrs: Any, insecure: bool = True, k: Any = ()) -> bytes:
    return frame("NotifyEmit", nvs(attrs) + u32(int(insecure)) + keys(list(k)))


def unotify(attrs: Any, insecure: bool = True, k: Any = (), major: int = 4) -> bytes:
    return frame("UNotify", u32(major) + u32(0) + nvs(attrs) + u32(int(insecure)) + keys(list(k)))


def sub_add(xid: int, expr: str, insecure: bool = True, k: Any = ()) -> bytes:
    return frame("SubAddRqst", u32(xid) + string(expr) + u32(int(insecure)) + keys(list(k)))


def sub_mod(xid: int, sub_id: int, expr: str = "", insecure: bool = True, add: Any = (),
            delete: Any = ()) -> bytes:
    return frame("SubModRqst", u32(xid) + id64(sub_id) + string(expr) + u32(int(insecure))
                 + keys(list(add)) + keys(list(delete)))


def sub_del(xid: int, sub_id: int) -> bytes:
    return frame("SubDelRqst", u32(xid) + id64(sub_id))


def sec_rqst(xid: int, add_nfn: Any = (), del_nfn: Any = (), add_sub: Any = (),
             del_sub: Any = ()) -> bytes:
    return frame("SecRqst", u32(xid) + keys(list(add_nfn)) + keys(list(del_nfn))
                 + keys(list(add_sub)) + keys(list(del_sub)))


def qnch_add(xid: int, names: list[str], insecure: bool = True, k: Any = ()) -> bytes:
    return frame("QnchAddRqst", u32(xid) + u32(len(names)) + b"".join(string(n) for n in names)
                 + u32(int(insecure)) + keys(list(k)))


def qnch_mod(xid: int, quench_id: int, add: list[str] = (), delete: list[str] = (),  # type: ignore[assignment]
             insecure: bool = True) -> bytes:
    return frame("QnchModRqst", u32(xid) + id64(quench_id)
                 + u32(len(add)) + b"".join(string(n) for n in add)
                 + u32(len(delete)) + b"".join(string(n) for n in delete)
                 + u32(int(insecure)) + keys() + keys())


def qnch_del(xid: int, quench_id: int) -> bytes:
    return frame("QnchDelRqst", u32(xid) + id64(quench_id))


def qos_rqst(xid: int, options: Any) -> bytes:
    return frame("QosRqst", u32(xid) + nvs(list(options)))


# -- reading ------------------------------------------------------------------------------------
class Body:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        out = self.data[self.pos:self.pos + n]
        assert len(out) == n, "short packet"
        self.pos += n
        return out

    def u32(self) -> int:
        return int(struct.unpack(">I", self.take(4))[0])

    def i32(self) -> int:
        return int(struct.unpack(">i", self.take(4))[0])

    def id64(self) -> int:
        return int(struct.unpack(">Q", self.take(8))[0])

    def opaque(self) -> bytes:
        n = self.u32()
        out = self.take(n)
        self.take(-n % 4)
        return out

    def string(self) -> str:
        return self.opaque().decode("utf-8")

    def value(self) -> Any:
        code = self.u32()
        if code == 1:
            return self.i32()
        if code == 2:
            return I64(struct.unpack(">q", self.take(8))[0])
        if code == 3:
            return float(struct.unpack(">d", self.take(8))[0])
        if code == 4:
            return self.string()
        assert code == 5, f"bad value type {code}"
        return self.opaque()

    def nvs(self) -> dict[str, Any]:
        return {self.string(): self.value() for _ in range(self.u32())}

    def ids(self) -> list[int]:
        return [self.id64() for _ in range(self.u32())]

    def ast(self) -> Any:
        code = self.u32()
        if code == 0:
            return (0,)
        if code in (1, 5):
            return (code, self.string())
        if code == 2:
            return (code, self.i32())
        if code in (3, 4):
            return (code, self.take(8))
        return (code, [self.ast() for _ in range(self.u32())])


def parse(pkt_id: int, data: bytes) -> dict[str, Any]:
    """The fields of a packet the router sends (§7.4), as a dict with its ``type``."""
    b = Body(data)
    name = NAME.get(pkt_id, str(pkt_id))
    out: dict[str, Any] = {"type": name}
    if name == "Nack":
        out.update(xid=b.u32(), error=b.u32(), message=b.string(),
                   args=[b.value() for _ in range(b.u32())])
    elif name in ("ConnRply", "QosRply"):
        out.update(xid=b.u32(), options=b.nvs())
    elif name in ("DisconnRply", "SecRply"):
        out.update(xid=b.u32())
    elif name == "Disconn":
        out.update(reason=b.u32(), args=b.string())
    elif name == "NotifyDeliver":
        out.update(attributes=b.nvs(), secure=b.ids(), insecure=b.ids())
    elif name in ("SubRply", "QnchRply"):
        out.update(xid=b.u32(), id=b.id64())
    elif name in ("SubAddNotify", "SubModNotify"):
        out.update(secure=b.ids(), insecure=b.ids(), term=b.id64(), ast=b.ast())
    elif name == "SubDelNotify":
        out.update(quenches=b.ids(), term=b.id64())
    assert b.pos == len(data), f"{name}: {len(data) - b.pos} bytes left over"
    return out


class Client:
    """One TCP connection to the router, speaking packets from this module."""

    def __init__(self, address: tuple[str, int], timeout: float = WAIT) -> None:
        self.sock = socket.create_connection(address, timeout=timeout)
        self.sock.settimeout(timeout)
        self.buffer = b""
        self.xid = 0

    def next_xid(self) -> int:
        self.xid += 1
        return self.xid

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self, n: int) -> bool:
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                return False
            self.buffer += chunk
        return True

    def recv(self) -> dict[str, Any] | None:
        """The next packet, or None when the router closed the connection."""
        if not self._fill(4):
            return None
        (length,) = struct.unpack(">I", self.buffer[:4])
        if not self._fill(4 + length):
            return None
        data, self.buffer = self.buffer[4:4 + length], self.buffer[4 + length:]
        return parse(struct.unpack(">I", data[:4])[0], data[4:])

    def expect(self, kind: str) -> dict[str, Any]:
        packet = self.recv()
        assert packet is not None, f"closed while waiting for {kind}"
        assert packet["type"] == kind, f"wanted {kind}, got {packet}"
        return packet

    def closed(self) -> bool:
        """Did the router close the connection (reading nothing more before the timeout)?"""
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False

    def connect(self, options: Any = (), nfn: Any = (), sub: Any = ()) -> dict[str, Any]:
        self.send(conn_rqst(self.next_xid(), options, nfn, sub))
        return self.expect("ConnRply")

    def request(self, build: Any, *args: Any, **kw: Any) -> dict[str, Any]:
        """Send a request built with a fresh xid; return its reply (asserting the xid)."""
        xid = self.next_xid()
        self.send(build(xid, *args, **kw))
        reply = self.recv()
        assert reply is not None and reply.get("xid") == xid, reply
        return reply

    def subscribe(self, expr: str, insecure: bool = True, k: Any = ()) -> int:
        reply = self.request(sub_add, expr, insecure, k)
        assert reply["type"] == "SubRply", reply
        return int(reply["id"])

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def disconnect(self) -> dict[str, Any]:
        xid = self.next_xid()
        self.send(frame("DisconnRqst", u32(xid)))
        while True:
            packet = self.recv()
            assert packet is not None, "closed before DisconnRply"
            if packet["type"] == "DisconnRply":
                return packet


def wait_until(predicate: Any, timeout: float = WAIT) -> bool:
    """Poll ``predicate`` until true or the deadline (no fixed sleeps as synchronisation)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return bool(predicate())
