"""The Python twin of ``cxx/interop_server.cc`` and ``cxx/interop_client.cc``.

Strategy: the same behaviour and the same ``key=value`` output as the C++
programs, so a test can run any client against any server and compare the
lines with :func:`expected`. Needs the ``Interop`` stubs on ``sys.path``
(``peers.python_stubs()``); run it through ``python -m tests.interop.peers``.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import Interop  # type: ignore[import-not-found]
import Interop__POA  # type: ignore[import-not-found]

from cosnotify.orb import CORBA

WIDE = "H\u00e9\u20ac\u4e2d"


def make_tree(depth: int) -> Any:
    return Interop.Tree(f"n{depth}", [make_tree(depth - 1)] if depth > 0 else [])


def count_nodes(tree: Any) -> int:
    return 1 + sum(count_nodes(child) for child in tree.children)


def describe(value: Any) -> str:
    """Like ``describe()`` in cxx/interop_common.cc."""
    tc = value.typecode()
    if tc.equivalent(Interop._tc_Point):
        point = value.value()
        return f"Point({point.x},{point.y})"
    if tc.equivalent(Interop._tc_Tree):
        tree = value.value()
        return f"Tree({tree.label},{count_nodes(tree)})"
    if tc.equivalent(CORBA.TC_long):
        return f"long:{value.value()}"
    if tc.equivalent(CORBA.TC_string):
        return f"string:{value.value()}"
    return f"other:{tc.kind()._v}"


class Thing(Interop__POA.Thing):
    """Interop::Thing, exactly as the C++ server behaves."""

    def __init__(self, orb: Any) -> None:
        self.orb = orb
        self.counter = 0
        self.pokes = 0

    def _get_name(self) -> str:
        return "py-thing"

    def _get_counter(self) -> int:
        return self.counter

    def _set_counter(self, value: int) -> None:
        self.counter = value
        if value == -1:
            self.orb.shutdown(False)

    def echo_everything(self, e: Any) -> Any:
        return e

    def echo_shape(self, s: Any) -> Any:
        return s

    def move(self, p: Any, n: int) -> Any:
        return Interop.Point(p.x + n, p.y + n), n * 2, f"moved by {n}"

    def add_ll(self, a: int, b: int) -> int:
        return (a + b + 2**63) % 2**64 - 2**63

    def echo_wstring(self, w: str) -> str:
        return w

    def reverse_octets(self, data: bytes) -> bytes:
        return bytes(reversed(data))

    def echo_any(self, a: Any) -> Any:
        return a

    def make_tree_any(self, depth: int) -> Any:
        return CORBA.Any(Interop._tc_Tree, make_tree(depth))

    def make_point_any(self, x: int, y: int) -> Any:
        return CORBA.Any(Interop._tc_Point, Interop.Point(x, y))

    def describe_any(self, a: Any) -> str:
        return describe(a)

    def self_ref(self) -> Any:
        return self._this()

    def echo_ref(self, t: Any) -> Any:
        return t

    def call_back(self, cb: Any, text: str) -> str:
        return str(cb.notify(text)) + "!"

    def fail_user(self, why: str) -> None:
        raise Interop.Oops(why, 42)

    def fail_system(self) -> None:
        raise CORBA.BAD_OPERATION(77, CORBA.COMPLETED_YES)

    def poke(self, n: int) -> None:
        self.pokes += n

    def poked(self) -> int:
        return self.pokes

    def echo_small(self, s: Any) -> Any:
        return s


class Callback(Interop__POA.Callback):
    def notify(self, text: str) -> str:
        return "cb:" + text


def expected(server_name: str) -> dict[str, str]:
    """What every client prints against a conforming server."""
    return {
        "name": server_name, "counter": "41", "move": "6,7,10,moved by 5",
        "add_ll": "-446744078709551616", "echo_wstring": WIDE, "reverse_octets": "44,200,100,0",
        "echo_everything": f"2,3,2147483647,2,12,text,{WIDE},-9000000000000000000,"
                           "18446744073709551615,65535,2.5,1,255",
        "echo_shape_default": "2,free", "echo_shape_radius": "9",
        "make_tree_any": "Tree(n3,4)", "echo_any_tree": "Tree(n3,4)",
        "make_point_any": "Point(7,8)", "describe_any": "Point(3,4)", "self_ref": server_name,
        "echo_ref_equivalent": "1", "call_back": "cb:hi!", "fail_user": "bad,42",
        "fail_system": "BAD_OPERATION,77,0", "poked": "7", "echo_small": "1,0.5,small",
        "is_a": "1,0", "non_existent": "0",
    }


def run_all(orb: Any, thing: Any) -> list[str]:
    """Every operation, printed like cxx/interop_client.cc does."""
    out = [f"name={thing._get_name()}"]
    thing._set_counter(41)
    out.append(f"counter={thing._get_counter()}")
    moved, n, note = thing.move(Interop.Point(1, 2), 5)
    out.append(f"move={moved.x},{moved.y},{n},{note}")
    out.append(f"add_ll={thing.add_ll(-5000000000, 18000000000000000000)}")
    out.append(f"echo_wstring={thing.echo_wstring(WIDE)}")
    reversed_octets = thing.reverse_octets(bytes((0, 100, 200, 44)))
    out.append("reverse_octets=" + ",".join(map(str, reversed_octets)))
    sp = Interop.Point(3, 4)
    everything = Interop.Everything(
        Interop.blue, Interop.Shape(p=sp), [-1, 0, 2147483647], [sp, Interop.Point(1, 2)],
        [[i * 10 + j for j in range(3)] for i in range(2)], "text", WIDE,
        -9000000000000000000, 18446744073709551615, 65535, 2.5, True, bytes((0, 255)))
    back = thing.echo_everything(everything)
    out.append(f"echo_everything={back.tint._v},{back.outline.p.x},{back.longs[2]},"
               f"{len(back.points)},{back.grid[1][2]},{back.text},{back.wide},{back.big},"
               f"{back.ubig},{back.ushort_},{back.dbl:g},{int(back.flag)},{back.data[1]}")
    shape = thing.echo_shape(Interop.Shape(label="free"))
    out.append(f"echo_shape_default={shape._d._v},{shape.label}")
    out.append(f"echo_shape_radius={thing.echo_shape(Interop.Shape(radius=9)).radius}")
    tree_any = thing.make_tree_any(3)
    out.append(f"make_tree_any={describe(tree_any)}")
    out.append(f"echo_any_tree={describe(thing.echo_any(tree_any))}")
    out.append(f"make_point_any={describe(thing.make_point_any(7, 8))}")
    out.append(f"describe_any={thing.describe_any(CORBA.Any(Interop._tc_Point, sp))}")
    me = thing.self_ref()
    out.append(f"self_ref={me._get_name()}")
    out.append(f"echo_ref_equivalent={int(thing.echo_ref(me)._is_equivalent(me))}")
    poa = orb.resolve_initial_references("RootPOA")
    poa._get_the_POAManager().activate()
    callback = poa.servant_to_reference(Callback())
    out.append(f"call_back={thing.call_back(callback, 'hi')}")
    try:
        thing.fail_user("bad")
        out.append("FAIL fail_user: no exception")
    except Interop.Oops as oops:
        out.append(f"fail_user={oops.why},{oops.code}")
    try:
        thing.fail_system()
        out.append("FAIL fail_system: no exception")
    except CORBA.SystemException as exc:
        out.append(f"fail_system={type(exc).__name__},{exc.minor},{exc.completed._v}")
    thing.poke(3)
    thing.poke(4)
    out.append(f"poked={thing.poked()}")
    small = thing.echo_small(Interop.Small(1, 0.5, "small"))
    out.append(f"echo_small={small.a},{small.b:g},{small.c}")
    out.append(f"is_a={int(thing._is_a('IDL:cosnotify.test/Interop/Thing:1.0'))},"
               f"{int(thing._is_a('IDL:cosnotify.test/Interop/Callback:1.0'))}")
    out.append(f"non_existent={int(thing._non_existent())}")
    return out


def bench(thing: Any, calls: int) -> float:
    small = Interop.Small(1, 2.0, "abc")
    for _ in range(200):
        thing.echo_small(small)
    start = time.perf_counter()
    for _ in range(calls):
        thing.echo_small(small)
    return calls / (time.perf_counter() - start)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: server [-ORB...] | client IOR | bench IOR N")
        return 2
    command, rest = argv[0], list(argv[1:])
    orb = CORBA.ORB_init(rest)  # removes the -ORB options from rest
    if command == "server":
        poa = orb.resolve_initial_references("RootPOA")
        reference = poa.servant_to_reference(Thing(orb))
        poa._get_the_POAManager().activate()
        print(orb.object_to_string(reference), flush=True)
        orb.run()
        return 0
    thing = Interop.Thing._narrow(orb.string_to_object(rest[0]))
    if command == "client":
        print("\n".join(run_all(orb, thing)), flush=True)
    elif command == "bench":
        print(f"calls_per_second={bench(thing, int(rest[1])):.1f}", flush=True)
    orb.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
