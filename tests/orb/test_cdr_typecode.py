"""TypeCode marshalling, including recursive and repeated indirections (CORBA 3.0 15.3.5.1)."""

from __future__ import annotations

import json
import pathlib
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosnotify.orb import CORBA, cdr, tc
from cosnotify.orb import typecode as T
from cosnotify.orb.cdr import Codec, Minor
from tests.strategies import typecodes

VECTORS = pathlib.Path(__file__).parent.parent / "vectors"
LE, BE = Codec(True), Codec(False)
INDIRECTION = b"\xff\xff\xff\xff"


def tc_roundtrip(t: T.TypeCode, codec: Codec = LE, offset: int = 0) -> T.TypeCode:
    data = cdr.encode(CORBA.TC_TypeCode, t, codec, offset=offset)
    back: T.TypeCode = cdr.decode(CORBA.TC_TypeCode, data, codec, offset=offset, exact=True)
    return back


def node_tc() -> T.TypeCode:
    """struct Node { long v; sequence<Node> kids; }"""
    return tc.struct_tc("IDL:test/Node:1.0", "Node", [
        ("v", CORBA.TC_long), ("kids", tc.sequence_tc(0, tc.recursive_tc("IDL:test/Node:1.0")))])


def point_tc() -> T.TypeCode:
    return tc.struct_tc("IDL:test/Point:1.0", "Point", [("x", CORBA.TC_long), ("y", CORBA.TC_long)])


def pair_tc() -> T.TypeCode:
    point = point_tc()
    return tc.struct_tc("IDL:test/Pair:1.0", "Pair", [("a", point), ("b", point),
                                                       ("more", tc.sequence_tc(0, point))])


def property_seq_tc() -> T.TypeCode:
    name = tc.alias_tc("IDL:omg.org/CosNotification/PropertyName:1.0", "PropertyName", CORBA.TC_string)
    value = tc.alias_tc("IDL:omg.org/CosNotification/PropertyValue:1.0", "PropertyValue", CORBA.TC_any)
    prop = tc.struct_tc("IDL:omg.org/CosNotification/Property:1.0", "Property",
                        [("name", name), ("value", value)])
    return tc.alias_tc("IDL:omg.org/CosNotification/PropertySeq:1.0", "PropertySeq",
                       tc.sequence_tc(0, prop))


#: What each TypeCode in omniorb_typecodes.json should decode to.
OMNIORB_EXPECTED = {
    "recursive_struct": node_tc,
    "repeated_struct": pair_tc,
    "union_with_default": lambda: tc.union_tc("IDL:test/L:1.0", "L", CORBA.TC_long, [
        (1, "a", CORBA.TC_long), (2, "b", CORBA.TC_string), (tc.DEFAULT_LABEL, "c", CORBA.TC_double)], 2),
    "alias_of_array": lambda: tc.alias_tc("IDL:test/Triple:1.0", "Triple", tc.array_tc(3, CORBA.TC_short)),
    "fixed_10_3": lambda: tc.fixed_tc(10, 3),
    "string_20": lambda: tc.string_tc(20),
    "objref": lambda: tc.objref_tc("IDL:test/Thing:1.0", "Thing"),
    "exception": lambda: tc.exception_tc("IDL:test/Oops:1.0", "Oops", [("why", CORBA.TC_string)]),
    "property_seq": property_seq_tc,
}


class TestOmniORBVectors:
    @pytest.mark.parametrize("vector", json.loads((VECTORS / "omniorb_typecodes.json").read_text())["vectors"],
                             ids=lambda v: v["name"])
    def test_decodes_what_omniorb_marshals(self, vector: dict[str, Any]) -> None:
        """TypeCodes marshalled by omniORB (indirections included) decode to the expected TypeCode."""
        data = bytes.fromhex(vector["hex"])
        got = cdr.decode(CORBA.TC_TypeCode, data, LE, exact=True)
        assert got.equal(OMNIORB_EXPECTED[vector["name"]]())
        again = tc_roundtrip(got)
        assert again.equal(got)

    def test_our_encoding_matches_omniorb_apart_from_padding(self) -> None:
        """Our bytes for the repeated-struct TypeCode equal omniORB's with padding zeroed."""
        vector = next(v for v in json.loads((VECTORS / "omniorb_typecodes.json").read_text())["vectors"]
                      if v["name"] == "repeated_struct")
        ours = cdr.encode(CORBA.TC_TypeCode, pair_tc(), LE)
        theirs = bytes.fromhex(vector["hex"])
        assert len(ours) == len(theirs)
        differing = [i for i in range(len(ours)) if ours[i] != theirs[i]]
        assert all(ours[i] == 0 for i in differing)  # only omniORB's uninitialised padding


class TestRoundTrip:
    @settings(max_examples=150, deadline=None)
    @given(typecodes, st.booleans(), st.integers(0, 7))
    def test_generated_typecodes(self, t: T.TypeCode, little: bool, offset: int) -> None:
        """Any TypeCode survives marshalling, in both byte orders from any offset."""
        assert tc_roundtrip(t, Codec(little), offset).equal(t)

    def test_every_kind(self) -> None:
        """Each kind with parameters (objref, enum, union labels of every type, wstring...) round-trips."""
        colour = tc.enum_tc("IDL:test/Colour:1.0", "Colour", ["red", "green"])
        items = colour.enum_items()
        kinds = [
            tc.objref_tc("IDL:test/I:1.0", "I"), tc.abstract_interface_tc("IDL:test/A:1.0", "A"),
            tc.local_interface_tc("IDL:test/Lo:1.0", "Lo"), tc.wstring_tc(4), tc.fixed_tc(31, 31),
            tc.union_tc("IDL:test/U1:1.0", "U1", colour, [(items[0], "r", CORBA.TC_long),
                                                            (items[1], "g", CORBA.TC_short)]),
            tc.union_tc("IDL:test/U2:1.0", "U2", CORBA.TC_char, [("a", "a", CORBA.TC_long),
                                                                 (tc.DEFAULT_LABEL, "d", CORBA.TC_octet)], 1),
            tc.union_tc("IDL:test/U3:1.0", "U3", CORBA.TC_boolean, [(True, "t", CORBA.TC_long)]),
            tc.union_tc("IDL:test/U4:1.0", "U4", CORBA.TC_wchar, [("\u20ac", "e", CORBA.TC_long)]),
            tc.union_tc("IDL:test/U5:1.0", "U5", CORBA.TC_ulonglong, [(2**64 - 1, "m", CORBA.TC_long)]),
            tc.union_tc("IDL:test/U6:1.0", "U6", tc.alias_tc("IDL:test/S:1.0", "S", CORBA.TC_short),
                        [(-3, "m", CORBA.TC_long)]),
            CORBA.TC_Principal, CORBA.TC_void, CORBA.TC_null, CORBA.TC_Object,
        ]
        for t in kinds:
            for codec in (LE, BE, Codec(True, giop=(1, 1))):
                assert tc_roundtrip(t, codec).equal(t), t


class TestIndirection:
    def test_recursive_struct_uses_indirection(self) -> None:
        """struct Node's inner reference is 0xffffffff and a negative offset back to Node."""
        data = cdr.encode(CORBA.TC_TypeCode, node_tc(), BE)
        at = data.index(INDIRECTION)
        (offset,) = struct.unpack(">i", data[at + 4:at + 8])
        assert at + 4 + offset == 0  # back to the top-level kind
        back = cdr.decode(CORBA.TC_TypeCode, data, BE)
        assert back.equal(node_tc())
        kids = back.member_type(1).content_type()
        assert T.resolve(kids) is back

    def test_recursive_values(self) -> None:
        """A tree of Nodes round-trips through the recursive TypeCode."""
        node = node_tc()
        cls = node.python_class()
        tree = cls(1, [cls(2, []), cls(3, [cls(4, [])])])
        for codec in (LE, BE):
            assert cdr.decode(node, cdr.encode(node, tree, codec), codec) == tree
        carried = cdr.decode(CORBA.TC_any, cdr.encode(CORBA.TC_any, CORBA.Any(node, tree)))
        assert carried.value() == tree

    def test_recursive_union(self) -> None:
        """union Tree switch (boolean) { case TRUE: sequence<Tree> kids; case FALSE: long leaf; }"""
        rid = "IDL:test/Tree:1.0"
        tree = tc.union_tc(rid, "Tree", CORBA.TC_boolean, [
            (True, "kids", tc.sequence_tc(0, tc.recursive_tc(rid))), (False, "leaf", CORBA.TC_long)])
        assert tc_roundtrip(tree).equal(tree)
        cls = tree.python_class()
        value = cls(True, [cls(False, 5), cls(True, [])])
        assert cdr.decode(tree, cdr.encode(tree, value)) == value

    def test_repeated_typecode_is_indirected_across_encapsulations(self) -> None:
        """Point's second and third uses (one inside the sequence's encapsulation) are indirections."""
        data = cdr.encode(CORBA.TC_TypeCode, pair_tc(), LE)
        assert data.count(INDIRECTION) == 2
        back = cdr.decode(CORBA.TC_TypeCode, data, LE)
        assert back.equal(pair_tc())
        assert back.member_type(0) is back.member_type(1) is back.member_type(2).content_type()

    def test_deep_recursive_value_hits_the_depth_limit(self) -> None:
        """A Node chain deeper than max_depth is MARSHAL, not a RecursionError."""
        node = node_tc()
        cls = node.python_class()
        chain = cls(0, [])
        for i in range(100):
            chain = cls(i, [chain])
        with pytest.raises(CORBA.BAD_PARAM):
            cdr.encode(node, chain)
        data = b"".join(struct.pack("<ii", i, 1) for i in range(100)) + struct.pack("<ii", 0, 0)
        with pytest.raises(CORBA.MARSHAL) as info:
            cdr.decode(node, data, LE)
        assert info.value.minor == Minor.TOO_DEEP
        assert cdr.decode(node, data, LE, max_depth=200) is not None


class TestMalformed:
    def marshal_minor(self, data: bytes) -> int:
        with pytest.raises(CORBA.MARSHAL) as info:
            cdr.decode(CORBA.TC_TypeCode, data, BE)
        return info.value.minor

    def test_unknown_kind(self) -> None:
        """Kinds we do not support (valuetypes, 99) are MARSHAL."""
        assert self.marshal_minor(b"\0\0\0\x63") == Minor.INVALID_TYPECODE_KIND
        assert self.marshal_minor(b"\0\0\0\x1d\0\0\0\0") == Minor.INVALID_TYPECODE_KIND

    def test_indirection_to_nowhere(self) -> None:
        """A top-level indirection, or one pointing at no TypeCode, is MARSHAL."""
        assert self.marshal_minor(INDIRECTION + b"\xff\xff\xff\xf0") == Minor.INVALID_INDIRECTION
        # sequence: kind, length, encapsulation (order octet, padding, indirection to 10, bound)
        seq = b"\0\0\0\x13" + b"\0\0\0\x10" + b"\0\0\0\0" + INDIRECTION + b"\xff\xff\xff\xfa" + bytes(4)
        assert self.marshal_minor(seq) == Minor.INVALID_INDIRECTION

    def test_recursion_through_a_sequence_alone_is_rejected(self) -> None:
        """An indirection back to an enclosing sequence (not a struct or union) is MARSHAL."""
        seq = b"\0\0\0\x13" + b"\0\0\0\x10" + b"\0\0\0\0" + INDIRECTION + b"\xff\xff\xff\xf0" + bytes(4)
        assert self.marshal_minor(seq) == Minor.INVALID_INDIRECTION

    def test_typecode_depth_limit(self) -> None:
        """Sequences nested 70 deep exceed the default TypeCode depth of 64."""
        t: T.TypeCode = CORBA.TC_long
        for _ in range(70):
            t = tc.sequence_tc(0, t)
        data = cdr.encode(CORBA.TC_TypeCode, t, BE)
        assert self.marshal_minor(data) == Minor.TOO_DEEP

    def test_encapsulation_longer_than_the_data(self) -> None:
        """A complex TypeCode claiming more octets than remain is MARSHAL."""
        assert self.marshal_minor(b"\0\0\0\x0f\x7f\0\0\0\0") == Minor.PASS_END

    def test_parameters_a_builder_rejects(self) -> None:
        """Duplicate member names are MARSHAL (bad TypeCode), not BAD_PARAM."""
        good = cdr.encode(CORBA.TC_TypeCode, point_tc(), BE)
        bad = good.replace(b"\x02y\0", b"\x02x\0")
        assert self.marshal_minor(bad) == Minor.INVALID_TYPECODE

    @settings(max_examples=300, deadline=None)
    @given(st.binary(max_size=80), st.booleans())
    def test_random_bytes(self, data: bytes, little: bool) -> None:
        """Arbitrary octets decode to a TypeCode or raise MARSHAL."""
        try:
            cdr.decode(CORBA.TC_TypeCode, data, Codec(little))
        except CORBA.MARSHAL:
            pass

    @settings(max_examples=300, deadline=None)
    @given(typecodes, st.data())
    def test_mutated_typecodes(self, t: T.TypeCode, data: st.DataObject) -> None:
        """Corrupted TypeCode encodings raise MARSHAL or decode; nothing else."""
        encoded = bytearray(cdr.encode(CORBA.TC_TypeCode, t, BE))
        # Positions are drawn as fractions: generated repository ids vary in length.
        for _ in range(data.draw(st.integers(1, 3))):
            index = int(data.draw(st.floats(0, 1)) * (len(encoded) - 1))
            encoded[index] = data.draw(st.sampled_from([0, 1, 4, 0x7F, 0xF0, 0xFF]))
        try:
            cdr.decode(CORBA.TC_TypeCode, bytes(encoded), BE)
        except CORBA.MARSHAL:
            pass
