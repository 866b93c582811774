"""Longer random and mutation fuzzing of the GIOP reader and the CDR decoder.

Strategy: start from a corpus of valid inputs (the omniORB captures in
tests/vectors, plus messages and CDR values made here), then for N
iterations either mutate a corpus entry (flip, overwrite with boundary
values, insert, delete, truncate, splice two entries, patch a length field)
or make random bytes, and feed the result to a fresh ``GIOPConnection`` (both
roles, with end of stream) and to the CDR decoder for a set of TypeCodes.
The contract is that the reader raises only ``RemoteProtocolError`` and the
decoder only ``CORBA.MARSHAL``; anything else is recorded with the input
that caused it.

Usage: ``python benchmarks/giop_fuzz.py [ITERATIONS] [SEED]`` (default 20000).
Exit status 1 if anything unexpected was found.
"""

from __future__ import annotations

import collections
import json
import pathlib
import random
import struct
import sys
import time
import traceback
from collections.abc import Callable

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cosnotify.orb import CORBA, cdr, tc
from cosnotify.orb import giop_messages as gm
from cosnotify.orb.giop import (
    NEED_DATA,
    ConnectionClosed,
    GIOPConnection,
    RemoteProtocolError,
    Role,
)
from cosnotify.orb.ior import make_ior

POINT = tc.struct_tc("IDL:fuzz/Point:1.0", "Point", [("x", CORBA.TC_long), ("y", CORBA.TC_double)])
NODE = tc.struct_tc("IDL:fuzz/Node:1.0", "Node", [
    ("name", CORBA.TC_string), ("kids", tc.sequence_tc(0, tc.recursive_tc("IDL:fuzz/Node:1.0")))])
COLOUR = tc.enum_tc("IDL:fuzz/Colour:1.0", "Colour", ["red", "green"])
SHAPE = tc.union_tc("IDL:fuzz/Shape:1.0", "Shape", COLOUR, [
    (COLOUR.enum_items()[0], "p", POINT), (COLOUR.enum_items()[1], "w", CORBA.TC_wstring)])
TYPECODES = [CORBA.TC_any, CORBA.TC_TypeCode, CORBA.TC_Object, POINT, NODE, SHAPE,
             tc.sequence_tc(0, CORBA.TC_any), tc.fixed_tc(9, 3), CORBA.TC_longdouble,
             tc.sequence_tc(0, SHAPE), CORBA.TC_wstring, tc.array_tc(3, CORBA.TC_boolean)]
CODECS = [cdr.Codec(True), cdr.Codec(False, cdr.ISO_8859_1, cdr.UTF_16, (1, 1)),
          cdr.Codec(True, cdr.UTF_8, cdr.UTF_16, (1, 0))]


def corpus() -> tuple[list[bytes], list[bytes]]:
    """Valid GIOP streams and valid CDR values to mutate."""
    messages = [bytes.fromhex(json.loads(p.read_text())["hex"])
                for p in sorted((ROOT / "tests" / "vectors").glob("omniorb_*_[0-9][0-9].json"))]
    ior = make_ior("IDL:fuzz/T:1.0", "host", 2809, b"key")
    for version in [(1, 0), (1, 1), (1, 2)]:
        messages.append(gm.encode_message(gm.Request(1, gm.KeyAddr(b"k"), "op", b"\x01" * 20,
                                                     version=version, little_endian=False)))
        messages.append(gm.encode_message(gm.location_forward_reply(2, ior, version=version)))
        messages.append(b"".join(gm.fragment_message(gm.encode_message(
            gm.Request(3, gm.KeyAddr(b"k"), "op", bytes(90), version=version)), 40)))
    messages.append(gm.encode_message(gm.Request(4, gm.ReferenceAddr(0, ior), "op")))
    node = NODE.python_class()
    values = [
        cdr.encode(CORBA.TC_any, CORBA.Any(POINT, POINT.python_class()(1, 2.0))),
        cdr.encode(CORBA.TC_TypeCode, NODE),
        cdr.encode(CORBA.TC_TypeCode, SHAPE),
        cdr.encode(NODE, node("a", [node("b", []), node("c", [node("d", [])])])),
        cdr.encode(CORBA.TC_Object, ior),
        cdr.encode(tc.sequence_tc(0, CORBA.TC_any), [CORBA.Any(CORBA.TC_string, "s"),
                                                     CORBA.Any(SHAPE, SHAPE.python_class()(
                                                         COLOUR.enum_items()[1], "w"))]),
    ]
    return messages, values


INTERESTING = [0, 1, 2, 3, 4, 7, 8, 0x7F, 0x80, 0xFE, 0xFF]


def mutate(data: bytes, rng: random.Random, others: list[bytes]) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.randrange(7)
        if not out:
            out += bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif choice == 0:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
        elif choice == 1:
            out[rng.randrange(len(out))] = rng.choice(INTERESTING)
        elif choice == 2:
            at = rng.randrange(len(out) + 1)
            out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif choice == 3:
            at = rng.randrange(len(out))
            del out[at:at + rng.randint(1, 8)]
        elif choice == 4:
            out = out[:rng.randrange(len(out) + 1)]
        elif choice == 5:
            other = rng.choice(others)
            out = out[:rng.randrange(len(out) + 1)] + other[rng.randrange(len(other) + 1):]
        else:  # a plausible length field set to something large or off by a little
            at = rng.randrange(0, max(1, len(out) - 3)) & ~3
            value = rng.choice([0, 1, 0x7FFFFFFF, 0xFFFFFFFF, len(out), len(out) + 1, 0xFFFFFFF0])
            out[at:at + 4] = struct.pack(rng.choice("<>") + "I", value)
    return bytes(out)


def feed_reader(data: bytes, role: Role) -> str:
    conn = GIOPConnection(role, max_message_size=1 << 20)
    conn.receive_data(data)
    conn.receive_data(b"")
    try:
        for _ in range(64):
            event = conn.next_event()
            if event is NEED_DATA or isinstance(event, ConnectionClosed):
                return "ok"
            if isinstance(event, (gm.Reply, gm.LocateReply)) and event.body:
                try:
                    event.system_exception()
                except CORBA.MARSHAL:
                    pass
            if isinstance(event, gm.Request):
                try:
                    event.codesets()
                except CORBA.MARSHAL:
                    pass
        return "ok"
    except RemoteProtocolError as exc:
        return f"protocol error {exc.minor:#x}"


def feed_decoder(data: bytes, rng: random.Random) -> str:
    t = rng.choice(TYPECODES)
    codec = rng.choice(CODECS)
    try:
        cdr.decode(t, data, codec, offset=rng.randrange(8))
        return "decoded"
    except CORBA.MARSHAL as exc:
        return f"MARSHAL {exc.minor:#x}"


def main() -> int:
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else int(time.time())
    rng = random.Random(seed)
    messages, values = corpus()
    outcomes: collections.Counter[str] = collections.Counter()
    problems: list[tuple[str, bytes, str]] = []
    start = time.perf_counter()
    targets: list[tuple[str, Callable[[bytes], str], list[bytes]]] = [
        ("reader/server", lambda d: feed_reader(d, Role.SERVER), messages),
        ("reader/client", lambda d: feed_reader(d, Role.CLIENT), messages),
        ("cdr", lambda d: feed_decoder(d, rng), values + [m[12:] for m in messages]),
    ]
    for i in range(iterations):
        name, target, pool = targets[i % len(targets)]
        if rng.random() < 0.1:
            data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 64)))
            if rng.random() < 0.5:
                data = b"GIOP\x01" + data
        else:
            data = mutate(rng.choice(pool), rng, pool)
        try:
            outcome = target(data)
        except Exception:  # noqa: BLE001 - exactly what we are hunting for
            outcome = "UNEXPECTED"
            problems.append((name, data, traceback.format_exc(limit=6)))
        outcomes[f"{name}: {outcome.split(' 0x')[0]}"] += 1
    elapsed = time.perf_counter() - start
    print(f"{iterations} inputs in {elapsed:.1f}s (seed {seed})")
    for key, count in sorted(outcomes.items()):
        print(f"  {count:8d}  {key}")
    for name, data, trace in problems[:10]:
        print(f"\nUNEXPECTED in {name} for input {data.hex()}\n{trace}")
    print(f"\n{len(problems)} unexpected exceptions")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
