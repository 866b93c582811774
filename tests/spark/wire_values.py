"""Builder for tests/corba/wire_client.py: Anys of data/SparkWire.idl (runs in the client).

Each case ``name`` comes with a case ``name#text``: the TypeCode text this
process (which has the stubs) computes for the Any's TypeCode, so the
receiver can check that a TypeCode from the wire reads as the same text.
"""

import math

import CosNotification
import TimeBase

from spark_bridge.typetext import encode_typecode

MODULES = ["SparkWire"]
#: The object reference inside ``kinds`` and ``ref`` (nothing listens there).
REFERENCE = "corbaloc::127.0.0.1:9/SparkWireThing"


def cases(CORBA, modules):
    W = modules["SparkWire"]
    orb = CORBA.ORB_init([], CORBA.ORB_ID)  # the client's ORB, already initialised
    thing = orb.string_to_object(REFERENCE)
    tree = W.Node("root", [W.Node("a", []), W.Node("b", [W.Node("c", [])])])
    kinds = W.Kinds(
        s=-(2**15), us=2**16 - 1, l=-(2**31), ul=2**32 - 1, ll=-(2**63), ull=2**64 - 1,
        f=3.4028234663852886e38, d=-math.inf, b=True, c="é", o=255,
        str="text", wstr="wide €", bstr="abcde", bwstr="€€€",
        tiny=CORBA.fixed(31, 31, -(10**31 - 1)), whole=CORBA.fixed(-99999),
        money=CORBA.fixed("12.50"),
        bytes4=b"\x00\x01\xfe\xff", chars="xyz",
        abc="abc", quad=b"\x01\x02\x03\x04", monogram="JFK",
        nested=[[1, 2], [], [3]], levels=[W.high, W.low],
        inner=CORBA.Any(TimeBase._tc_UtcT, TimeBase.UtcT(1, 2, 3, -60)),
        anys=[CORBA.Any(CORBA.TC_TypeCode, CORBA.TypeCode(W.Segment)),
              CORBA.Any(CORBA.TC_any, CORBA.Any(CORBA.TC_long, -1))],
        ref=thing, nil=None,
    )
    header = CosNotification.EventHeader(CosNotification.FixedEventHeader(
        CosNotification.EventType("Telecom", "Alarm"), "e1"),
        [CosNotification.Property("Priority", CORBA.Any(CORBA.TC_short, 3))])
    event = CosNotification.StructuredEvent(
        header, [CosNotification.Property("where", CORBA.Any(CORBA.TypeCode(W.Point),
                                                              W.Point(1, 2)))],
        CORBA.Any(CORBA.TC_string, "body"))

    def any_of(cls, value):
        return CORBA.Any(CORBA.TypeCode(cls), value)

    anys = [
        ("kinds", any_of(W.Kinds, kinds)),
        ("nan", CORBA.Any(CORBA.TC_double, math.nan)),
        ("segment", any_of(W.Segment, W.Segment(W.Point(1, 2), W.Point(3, 4)))),
        ("by_level_low", any_of(W.ByLevel, W.ByLevel(note="n"))),
        ("by_level_high", any_of(W.ByLevel, W.ByLevel(where=W.Point(5, 6)))),
        ("by_level_default", any_of(W.ByLevel, W.ByLevel(other=1.5))),
        ("by_char", any_of(W.ByChar, W.ByChar(b="wide"))),
        ("tagged", any_of(W.Tagged, W.Tagged(more=[W.Tagged(leaf="x"),
                                                   W.Tagged(more=[])]))),
        ("tree", any_of(W.Node, tree)),
        ("initials", any_of(W.Initials, "ABC")),
        ("oops", any_of(W.Oops, W.Oops("disk", W.mid))),
        ("ref", CORBA.Any(CORBA.TC_Object, thing)),
        ("thing_nil", any_of(W.Thing, None)),
        ("typecode", CORBA.Any(CORBA.TC_TypeCode, CORBA.TypeCode(W.Node))),
        ("event", CORBA.Any(CosNotification._tc_StructuredEvent, event)),
        ("null", CORBA.Any(CORBA.TC_null, None)),
    ]
    texts = [(f"{name}#text", CORBA.Any(CORBA.TC_string, encode_typecode(value.typecode())))
             for name, value in anys]
    return anys + texts
