"""A test client of the Event Heap wire protocol, built from the seed's own tables.

Strategy: there is no public Event Heap client to test against (issue 22), so
this one does what the seed's "Event Heap Client Responsibilities" ask of a
client: it sends its version ("EHWPv1"), builds events with the fields of
Tables 1-3 (EventType, TimeToLive 120000 ms, Source, SourceApplication,
SourceDevice with their post values, Target* with a formal post value,
SessionID and SequenceNum set "on posting"), builds templates with Table 1's
template values (Target set to its Source, Source formal...), keeps the
SequenceInfo of what it received, and reads replies with timeouts. It uses
the package's sans-IO codec to read and write bundles; the codec itself is
checked against hand-written bytes in vectors.json.
"""

from __future__ import annotations

import itertools
import socket
from typing import Any

from cosnotify.protocols.eventheap.codec import (
    ACTUAL,
    FORMAL,
    VIRTUAL,
    BundleReader,
    Field,
    SequenceInfo,
    SourceInfo,
    Tuple,
    Value,
    WireBundle,
    encode_bundle,
    encode_version,
)

#: Seconds a test waits for a reply at most (never reached when all is well).
WAIT = 10.0

_TYPES = {bool: "boolean", int: "int", float: "double", str: "string"}


def actual(value: Any) -> Value:
    return Value(ACTUAL, value)


def user_field(name: str, value: Any, template: Value | None = None) -> Field:
    """A field with an actual post value and (by default) the same template value."""
    if isinstance(value, Field):
        return value
    ftype = _TYPES[type(value)]
    return Field(name, ftype, actual(value), template or actual(value))


def field_of(tup: Tuple, name: str) -> Any:
    found = tup.field(name)
    if found is None:
        raise KeyError(name)
    return found.post.value


class EventHeapClient:
    """One EventHeap client object over its own socket (module docstring)."""

    _sessions = itertools.count(1000)

    def __init__(self, address: tuple[str, int], source: str = "test-client",
                 application: str = "tests", device: str = "localhost",
                 handshake: bool = True) -> None:
        self.sock = socket.create_connection(address, timeout=WAIT)
        self.source = source
        self.application = application
        self.device = device
        self.session_id = next(self._sessions)
        self._numbers = itertools.count(1)
        self._tags = itertools.count(1)
        self.reader = BundleReader()
        #: EventType -> Source -> (SessionID, SequenceNum) of the newest received.
        self.seen: dict[str, dict[str, tuple[int, int]]] = {}
        self.server_version: str | None = None
        if handshake:
            self.sock.sendall(encode_version())
            version = self._next()
            assert isinstance(version, str)
            self.server_version = version

    def close(self) -> None:
        self.sock.close()

    # -- events and templates (Tables 1-3) ------------------------------------------------
    def event(self, event_type: str, ttl_ms: int = 120000, **fields: Any) -> Tuple:
        """An event as a client posts it: Tables 1-3 filled "on posting"."""
        out = [
            Field("EventType", "string", actual(event_type), actual(event_type)),
            Field("TimeToLive", "int", actual(ttl_ms), Value(FORMAL)),
            Field("Source", "string", actual(self.source), Value(FORMAL)),
            Field("Target", "string", Value(FORMAL), Value(FORMAL)),
            Field("SourceApplication", "string", actual(self.application), Value(FORMAL)),
            Field("TargetApplication", "string", Value(FORMAL), Value(FORMAL)),
            Field("SourceDevice", "string", actual(self.device), Value(FORMAL)),
            Field("TargetDevice", "string", Value(FORMAL), Value(FORMAL)),
            Field("SessionID", "int", actual(self.session_id), Value(VIRTUAL)),
            Field("SequenceNum", "int", actual(next(self._numbers)), Value(VIRTUAL)),
        ]
        out += [user_field(name, value) for name, value in fields.items()]
        return Tuple(0, tuple(out))

    def template(self, event_type: str | None = None, target_me: bool = False,
                 **fields: Any) -> Tuple:
        """A template as a client submits it (Table 1's template values)."""
        et = Value(FORMAL) if event_type is None else actual(event_type)
        out = [
            Field("EventType", "string", et, et),
            Field("TimeToLive", "int", actual(120000), Value(FORMAL)),
            Field("Source", "string", Value(VIRTUAL), Value(FORMAL)),
            Field("SessionID", "int", Value(VIRTUAL), Value(VIRTUAL)),
        ]
        if target_me:
            out.append(Field("Target", "string", Value(FORMAL), actual(self.source)))
        out += [user_field(name, value) for name, value in fields.items()]
        return Tuple(0, tuple(out))

    # -- the wire ---------------------------------------------------------------------------
    def send(self, op: str | None, tuples: list[Tuple] | None = None,
             tag: str | None = "auto", sequence: bool = False) -> str | None:
        """Send a request; its return tag."""
        if tag == "auto":
            tag = f"{self.source}/{next(self._tags)}"
        info = self.sequence_info() if sequence else None
        self.sock.sendall(encode_bundle(WireBundle(op, tag, info,
                                                   None if tuples is None else tuple(tuples))))
        return tag

    def sequence_info(self) -> tuple[SequenceInfo, ...]:
        return tuple(SequenceInfo(t, tuple(SourceInfo(s, sess, num)
                                           for s, (sess, num) in sources.items()))
                     for t, sources in self.seen.items())

    def _next(self, timeout: float = WAIT) -> str | WireBundle | None:
        self.sock.settimeout(timeout)
        while True:
            found = self.reader.next_event()
            if found is not None:
                return found
            data = self.sock.recv(65536)
            if not data:
                return None
            self.reader.feed(data)

    def receive(self, timeout: float = WAIT) -> WireBundle:
        found = self._next(timeout)
        assert isinstance(found, WireBundle), f"no bundle but {found!r}"
        for tup in found.tuples or ():
            self._note(tup)
        return found

    def _note(self, tup: Tuple) -> None:
        try:
            event_type, source = field_of(tup, "EventType"), field_of(tup, "Source")
            session, number = field_of(tup, "SessionID"), field_of(tup, "SequenceNum")
        except KeyError:
            return
        self.seen.setdefault(event_type, {})[source] = (session, number)

    def call(self, op: str, tuples: list[Tuple] | None = None,
             sequence: bool = False) -> WireBundle:
        """Send a request and read its reply (the next bundle)."""
        tag = self.send(op, tuples, sequence=sequence)
        reply = self.receive()
        assert reply.destination_tag == tag, (reply, tag)
        return reply

    def put(self, event: Tuple) -> None:
        reply = self.call("putEvent", [event])
        assert reply.return_tag is None and reply.tuples is None, reply

    def closed_by_peer(self, timeout: float = WAIT) -> bool:
        """Whether the server closes the connection (reading what it still sends)."""
        self.sock.settimeout(timeout)
        try:
            while self.sock.recv(65536):
                pass
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
        return True
