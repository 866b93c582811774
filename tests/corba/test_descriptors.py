"""cosnotify.corba.descriptors on TypeCodes that came over the wire from another process."""

from __future__ import annotations

from typing import Any

import omniORB
import pytest
from omniORB import CORBA, tcInternal

import CosNotification as N

from cosnotify.corba import descriptors as D
from tests.corba.peer_cdr import ulonglong_sequence_cdr


def tc_of(wire_anys: dict[str, Any], name: str) -> Any:
    return wire_anys[name]._t


class TestTheWheelsDefects:
    """The 4.3.3 defects the module works around, pinned so an upgrade that fixes them shows."""

    def test_member_type_of_a_repeated_type_fails(self, wire_anys: dict[str, Any]) -> None:
        """A type repeated in a wire TypeCode carries kind 0xffffffff: member_type raises."""
        segment = tc_of(wire_anys, "segment")
        assert segment._d[7][0] == D.WIRE_INDIRECT
        with pytest.raises(CORBA.INTERNAL):
            segment.member_type(1)

    def test_member_count_is_a_float(self, wire_anys: dict[str, Any]) -> None:
        """The wheel's member_count of a struct is a float."""
        assert type(tc_of(wire_anys, "segment").member_count()) is float

    def test_default_member_label_fails(self, wire_anys: dict[str, Any]) -> None:
        """member_label of a union's default member raises NameError."""
        with pytest.raises(NameError):
            tc_of(wire_anys, "choice_text").member_label(4)

    def test_create_enum_tc_fails(self, omniorb: Any) -> None:
        """ORB.create_enum_tc cannot build an enum TypeCode."""
        with pytest.raises(AttributeError):
            omniorb.create_enum_tc("IDL:x/E:1.0", "E", ["a", "b"])


class TestUnsignedLongLongSequences:
    """A sequence or array of unsigned long long holding a value >= 2**63 (docs/orb.md)."""

    def test_marshalling_fails(self, omniorb: Any) -> None:
        """The wheel cannot marshal 2**63 in a sequence<ulonglong>: SystemError (from
        OverflowError 'int too big to convert'), where scalars and aliases marshal.

        When omniORBpy is fixed this test fails: then the workarounds (the strategy's
        range in tests/strategies.py, what cosnotify does in docs/orb.md)
        can go.
        """
        sequence = tcInternal.createSequenceTC(0, CORBA.TC_ulonglong)
        array = tcInternal.createArrayTC(2, CORBA.TC_ulonglong)
        for typecode, value in ((sequence, [2**63]), (array, [1, 2**64 - 1])):
            with pytest.raises(SystemError) as failure:
                omniORB.cdrMarshal(CORBA.TC_any, CORBA.Any(typecode, value))
            assert isinstance(failure.value.__cause__, OverflowError)
        alias = tcInternal.createAliasTC("IDL:test/omni/Big:1.0", "Big", CORBA.TC_ulonglong)
        fine = [CORBA.Any(CORBA.TC_ulonglong, 2**64 - 1),
                CORBA.Any(tcInternal.createSequenceTC(0, alias), [2**64 - 1]),
                CORBA.Any(sequence, [2**63 - 1])]
        for value in fine:
            back = omniORB.cdrUnmarshal(CORBA.TC_any, omniORB.cdrMarshal(CORBA.TC_any, value))
            assert back.value() == value.value()

    def test_an_any_marshalled_after_it_hides_the_failure(self, omniorb: Any) -> None:
        """Each such element goes out as 2**64 - 1, and an Any marshalled after it clears
        the pending error: no exception at all, the value silently garbled."""
        big = CORBA.Any(tcInternal.createSequenceTC(0, CORBA.TC_ulonglong), [2**63, 7])
        properties = [N.Property("big", big), N.Property("n", CORBA.Any(CORBA.TC_long, 1))]
        back = omniORB.cdrUnmarshal(N._tc_PropertySeq,
                                    omniORB.cdrMarshal(N._tc_PropertySeq, properties))
        assert back[0].value.value() == [2**64 - 1, 7]

    @pytest.mark.parametrize("little", [True, False])
    def test_unmarshalling_works(self, omniorb: Any, little: bool) -> None:
        """The same values as a C++ peer sends them unmarshal to the right ints."""
        values = [0, 2**63, 2**64 - 1]
        received = omniORB.cdrUnmarshal(CORBA.TC_any, ulonglong_sequence_cdr(values, little))
        assert received.typecode().kind() == CORBA.tk_sequence
        assert received.typecode().content_type().kind() == CORBA.tk_ulonglong
        assert received.value() == values


class TestResolve:
    def test_wire_indirection_is_followed(self, wire_anys: dict[str, Any]) -> None:
        """The second Point of a Segment resolves to the full Point descriptor."""
        (_, a), (_, b) = D.members(tc_of(wire_anys, "segment")._d)
        assert D.resolve(b) is D.resolve(a) or D.resolve(b) == D.resolve(a)
        assert D.kind(b) == D.STRUCT
        assert [n for n, _ in D.members(b)] == ["x", "y"]

    def test_recursive_type_walks_to_any_depth(self, wire_anys: dict[str, Any]) -> None:
        """Node.kids is a sequence of Node, through a wire indirection, at every level."""
        node = tc_of(wire_anys, "tree")._d
        for _ in range(5):
            kids = dict(D.members(node))["kids"]
            assert D.kind(kids) == D.ALIAS
            node = D.content(D.unalias(kids))
            assert D.repo_id(node) == "IDL:WireTypes/Node:1.0"

    def test_alias_of_alias_unaliases(self, wire_anys: dict[str, Any]) -> None:
        """Track -> Points -> sequence<Point>."""
        track = tc_of(wire_anys, "track")._d
        assert D.kind(track) == D.ALIAS and D.name(track) == "Track"
        assert D.kind(D.unalias(track)) == D.SEQUENCE
        assert D.repo_id(D.content(D.unalias(track))) == "IDL:WireTypes/Point:1.0"

    def test_names_and_ids(self, wire_anys: dict[str, Any]) -> None:
        """repo_id and name of named kinds; none for basic and anonymous ones."""
        everything = dict(D.members(tc_of(wire_anys, "everything")._d))
        assert D.repo_id(everything["paint"]) == "IDL:WireTypes/Colour:1.0"
        assert D.name(everything["hue"]) == "Shade"
        assert D.repo_id(everything["big"]) == "" and D.name(everything["big"]) is None
        assert D.name(everything["raw"]) is None
        assert D.kind(everything["money"]) == D.FIXED

    def test_keyword_member(self, wire_anys: dict[str, Any]) -> None:
        """A member named `in` travels as omniORB's attribute name `_in`."""
        holding = wire_anys["holding"]
        names = [n for n, _ in D.members(holding._t._d)]
        assert names == ["_in", "value"]
        assert D.attribute("in") == "_in"
        assert getattr(holding._v, D.attribute("in"))._n == "blue"

    def test_exception_members(self, wire_anys: dict[str, Any]) -> None:
        """An exception's TypeCode lists its members like a struct's."""
        failure = wire_anys["failure"]
        assert D.kind(failure._t._d) == D.EXCEPT
        assert [n for n, _ in D.members(failure._t._d)] == ["why", "code"]
        assert (failure._v.why, failure._v.code) == ("disk", 5)


class TestUnions:
    def test_select_by_label(self, wire_anys: dict[str, Any]) -> None:
        """The active member is the one the discriminator's label names."""
        value = wire_anys["choice_text"]
        label, member, desc = D.union_select(D.resolve(value._t._d), value._v._d)
        assert (label, member, D.kind(desc), value._v._v) == (1, "text", D.STRING, "hello")

    def test_two_labels_one_member(self, wire_anys: dict[str, Any]) -> None:
        """case 3: case 4: both select `amount`."""
        value = wire_anys["choice_amount"]
        assert D.union_select(D.resolve(value._t._d), 4)[1] == "amount"
        assert D.union_select(D.resolve(value._t._d), 3)[1] == "amount"

    def test_default_member(self, wire_anys: dict[str, Any]) -> None:
        """A discriminator no label names selects the default member."""
        value = wire_anys["choice_default"]
        assert D.union_select(D.resolve(value._t._d), value._v._d)[1] == "tint"
        assert D.union_select(D.resolve(value._t._d), 99)[1] == "tint"

    def test_no_member(self, wire_anys: dict[str, Any]) -> None:
        """A boolean union without default and FALSE selects no member."""
        value = wire_anys["flag_unset"]
        assert D.union_select(D.resolve(value._t._d), value._v._d) is None
        assert D.union_select(D.resolve(value._t._d), True)[1] == "on"

    def test_member_label_of_default_is_zero_octet(self, wire_anys: dict[str, Any]) -> None:
        """The default member's label is the zero octet (CORBA 2.6 section 10.7.1)."""
        tc = tc_of(wire_anys, "choice_text")
        label = D.member_label(tc, 4)
        assert label.typecode().kind() == CORBA.tk_octet and label.value() == 0
        assert D.member_label(tc, 3).value() == 4
        with pytest.raises(CORBA.TypeCode.Bounds):
            D.member_label(tc, 5)

    def test_member_count(self, wire_anys: dict[str, Any]) -> None:
        """member_count is an int for structs, unions and enums."""
        assert D.member_count(tc_of(wire_anys, "segment")) == 2
        assert D.member_count(tc_of(wire_anys, "choice_text")) == 5
        assert D.member_count(D.typecode(dict(D.members(
            tc_of(wire_anys, "everything")._d))["paint"])) == 3


class TestTypecode:
    def test_wire_descriptor_becomes_a_working_typecode(self, wire_anys: dict[str, Any]) -> None:
        """typecode() of a wire descriptor answers member_type where the wheel's raises."""
        tc = D.typecode(tc_of(wire_anys, "segment")._d)
        assert tc.member_type(1).id() == "IDL:WireTypes/Point:1.0"
        assert tc.equal(tc) and tc.kind() == CORBA.tk_struct

    def test_recursive_wire_typecode(self, wire_anys: dict[str, Any]) -> None:
        """The rebuilt recursive TypeCode walks and marshals the value it came with."""
        value = wire_anys["tree"]
        tc = D.typecode(value._t._d)
        kids = tc.member_type(1).content_type().content_type()
        assert kids.id() == "IDL:WireTypes/Node:1.0"
        assert kids.member_type(1).content_type().content_type().kind() == CORBA.tk_struct
        back = omniORB.cdrUnmarshal(tc, omniORB.cdrMarshal(tc, value._v))
        assert back.kids[1].kids[0].name == "c"

    def test_everything_round_trips(self, wire_anys: dict[str, Any]) -> None:
        """Every member kind of Everything round-trips through the rebuilt TypeCode.

        (Compared decoded: omniORB leaves alignment padding uninitialised.)
        """
        value = wire_anys["everything"]
        tc = D.typecode(value._t._d)
        back = omniORB.cdrUnmarshal(tc, omniORB.cdrMarshal(tc, value._v))
        assert repr(back) == repr(value._v)

    def test_equivalent_across_markers(self, wire_anys: dict[str, Any], omniorb: Any) -> None:
        """A wire TypeCode is equivalent to the same type built in process, names aside."""
        point = omniorb.create_struct_tc("IDL:WireTypes/Point:1.0", "Point", [
            CORBA.StructMember("x", CORBA.TC_long, None),
            CORBA.StructMember("y", CORBA.TC_long, None)])
        wire_segment = tc_of(wire_anys, "segment")._d
        assert D.equivalent(dict(D.members(wire_segment))["b"], point._d)
        assert not D.equivalent(wire_segment, point._d)
        assert D.equivalent(wire_segment, D.typecode(wire_segment)._d)
        assert D.equivalent(tc_of(wire_anys, "tree")._d, tc_of(wire_anys, "tree")._d)
        assert D.equivalent(CORBA.TC_long._d, CORBA.TC_long._d)
        assert not D.equivalent(CORBA.TC_long._d, CORBA.TC_short._d)

    def test_enum_tc(self) -> None:
        """enum_tc builds what create_enum_tc should: items comparable within their type."""
        tc = D.enum_tc("IDL:x/Level:1.0", "Level", ["low", "high"])
        assert tc.kind() == CORBA.tk_enum and tc.member_name(1) == "high"
        items = tc._d[3]
        assert items[0] < items[1] and items[1]._parent_id == "IDL:x/Level:1.0"
        assert omniORB.cdrUnmarshal(tc, omniORB.cdrMarshal(tc, items[1])) == items[1]

    def test_exception_tc(self) -> None:
        """exception_tc builds what create_exception_tc should."""
        tc = D.exception_tc("IDL:x/Oops:1.0", "Oops", [("why", CORBA.TC_string)])
        assert tc.kind() == CORBA.tk_except and tc.member_name(0) == "why"
        assert D.member_count(tc) == 1
