"""TypeCodes: kinds, accessors, equal/equivalent, recursion (CORBA 2.6 section 10.7)."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings

from cosnotify.orb import CORBA, tc
from cosnotify.orb import typecode as T
from tests.strategies import typecodes

POINT_ID = "IDL:test/Point:1.0"


def point(name: str = "Point", first: str = "x") -> T.TypeCode:
    return tc.struct_tc(POINT_ID, name, [(first, CORBA.TC_long), ("y", CORBA.TC_long)])


class TestKinds:
    def test_every_primitive_constant_has_its_kind(self) -> None:
        """Each CORBA.TC_* constant reports the matching CORBA.tk_* kind."""
        pairs = {
            CORBA.TC_null: CORBA.tk_null, CORBA.TC_void: CORBA.tk_void,
            CORBA.TC_short: CORBA.tk_short, CORBA.TC_long: CORBA.tk_long,
            CORBA.TC_longlong: CORBA.tk_longlong, CORBA.TC_ushort: CORBA.tk_ushort,
            CORBA.TC_ulong: CORBA.tk_ulong, CORBA.TC_ulonglong: CORBA.tk_ulonglong,
            CORBA.TC_float: CORBA.tk_float, CORBA.TC_double: CORBA.tk_double,
            CORBA.TC_longdouble: CORBA.tk_longdouble, CORBA.TC_boolean: CORBA.tk_boolean,
            CORBA.TC_char: CORBA.tk_char, CORBA.TC_wchar: CORBA.tk_wchar,
            CORBA.TC_octet: CORBA.tk_octet, CORBA.TC_any: CORBA.tk_any,
            CORBA.TC_TypeCode: CORBA.tk_TypeCode, CORBA.TC_string: CORBA.tk_string,
            CORBA.TC_wstring: CORBA.tk_wstring, CORBA.TC_Object: CORBA.tk_objref,
        }
        for typecode, kind in pairs.items():
            assert typecode.kind() == kind

    def test_tckind_ordinals_match_cdr_values(self) -> None:
        """TCKind ordinals are the values CDR puts on the wire (tk_struct is 15, tk_fixed 28)."""
        assert CORBA.tk_struct._v == 15
        assert CORBA.tk_except._v == 22
        assert CORBA.tk_fixed._v == 28
        assert CORBA.tk_local_interface._v == 33

    def test_kind_specific_operations_raise_badkind(self) -> None:
        """Asking a long for its id or members raises CORBA.TypeCode.BadKind."""
        with pytest.raises(CORBA.TypeCode.BadKind):
            CORBA.TC_long.id()
        with pytest.raises(CORBA.TypeCode.BadKind):
            CORBA.TC_long.member_count()
        with pytest.raises(CORBA.TypeCode.BadKind):
            point().length()


class TestAccessors:
    def test_struct_members(self) -> None:
        """A struct TypeCode exposes id, name, member count, names and types."""
        t = point()
        assert (t.id(), t.name(), t.member_count()) == (POINT_ID, "Point", 2)
        assert t.member_name(1) == "y"
        assert t.member_type(0).kind() == CORBA.tk_long

    def test_member_index_out_of_range_raises_bounds(self) -> None:
        """member_name past the end raises CORBA.TypeCode.Bounds."""
        with pytest.raises(CORBA.TypeCode.Bounds):
            point().member_name(2)

    def test_union_labels_discriminator_and_default(self) -> None:
        """A union reports its discriminator, labels as Anys, and the default index."""
        u = tc.union_tc("IDL:test/U:1.0", "U", CORBA.TC_short,
                        [(1, "a", CORBA.TC_long), (2, "a", CORBA.TC_long),
                         (tc.DEFAULT_LABEL, "b", CORBA.TC_string)], 2)
        assert u.discriminator_type().kind() == CORBA.tk_short
        assert u.default_index() == 2
        assert u.member_label(1).value() == 2
        assert u.member_label(1).typecode().kind() == CORBA.tk_short
        default_label = u.member_label(2)
        assert (default_label.typecode().kind(), default_label.value()) == (CORBA.tk_octet, 0)

    def test_sequence_array_string_fixed_parameters(self) -> None:
        """length() and content_type() for sequences, arrays and strings; digits and scale for fixed."""
        assert tc.sequence_tc(5, CORBA.TC_long).length() == 5
        assert tc.sequence_tc(0, CORBA.TC_long).content_type().kind() == CORBA.tk_long
        assert tc.array_tc(3, CORBA.TC_char).length() == 3
        assert tc.string_tc(10).length() == 10
        assert CORBA.TC_string.length() == 0
        f = tc.fixed_tc(10, 2)
        assert (f.fixed_digits(), f.fixed_scale()) == (10, 2)

    def test_enum_and_alias(self) -> None:
        """Enums list member names; aliases expose the aliased type."""
        e = tc.enum_tc("IDL:test/E:1.0", "E", ["a", "b"])
        assert [e.member_name(i) for i in range(e.member_count())] == ["a", "b"]
        a = tc.alias_tc("IDL:test/A:1.0", "A", e)
        assert a.content_type() is e
        assert a.unalias() is e


class TestComparison:
    def test_equal_needs_same_names(self) -> None:
        """equal() distinguishes member names; equivalent() does not."""
        assert point().equal(point())
        assert not point().equal(point(first="xx"))
        assert point().equivalent(point(first="xx"))

    def test_equivalent_strips_aliases(self) -> None:
        """An alias of long is equivalent to long but not equal to it."""
        alias = tc.alias_tc("IDL:test/L:1.0", "L", CORBA.TC_long)
        assert alias.equivalent(CORBA.TC_long)
        assert not alias.equal(CORBA.TC_long)

    def test_equivalent_uses_repository_ids_when_both_have_them(self) -> None:
        """Two structs with different ids are not equivalent even if shaped alike."""
        other = tc.struct_tc("IDL:test/Other:1.0", "Point",
                             [("x", CORBA.TC_long), ("y", CORBA.TC_long)])
        assert not point().equivalent(other)
        anonymous = tc.struct_tc("", "", [("a", CORBA.TC_long), ("b", CORBA.TC_long)])
        assert point().equivalent(anonymous)

    def test_different_bounds_are_not_equal(self) -> None:
        """sequence<long, 3> differs from sequence<long>."""
        assert not tc.sequence_tc(3, CORBA.TC_long).equal(tc.sequence_tc(0, CORBA.TC_long))

    def test_compact_typecode_drops_names_only(self) -> None:
        """get_compact_typecode removes names, keeps ids, and stays equivalent."""
        compact = point().get_compact_typecode()
        assert compact.name() == "" and compact.member_name(0) == ""
        assert compact.id() == POINT_ID
        assert compact.equivalent(point()) and not compact.equal(point())

    @settings(max_examples=60, deadline=None)
    @given(typecodes)
    def test_every_typecode_equals_itself_and_its_compact_form_is_equivalent(self, t: T.TypeCode) -> None:
        """For random TypeCodes, t.equal(t) and t.equivalent(compact(t)); hashes agree."""
        assert t.equal(t)
        assert t.equivalent(t.get_compact_typecode())
        assert hash(t) == hash(t)


class TestRecursion:
    def node(self) -> T.TypeCode:
        rid = "IDL:test/Node:1.0"
        return tc.struct_tc(rid, "Node", [("value", CORBA.TC_long),
                                          ("children", tc.sequence_tc(0, tc.recursive_tc(rid)))])

    def test_placeholder_binds_to_enclosing_struct(self) -> None:
        """The recursive member resolves to the enclosing struct TypeCode."""
        node = self.node()
        inner = node.member_type(1).content_type()
        assert inner.kind() == CORBA.tk_struct
        assert inner.member_name(0) == "value"
        assert T.resolve(inner) is node

    def test_recursive_equality_terminates(self) -> None:
        """Comparing two separately built recursive TypeCodes terminates and is True."""
        assert self.node().equal(self.node())
        assert self.node().equivalent(self.node().get_compact_typecode())

    def test_unbound_placeholder_raises_bad_typecode(self) -> None:
        """Using a placeholder outside its struct raises BAD_TYPECODE, not a crash."""
        with pytest.raises(CORBA.BAD_TYPECODE):
            tc.recursive_tc("IDL:test/Nowhere:1.0").member_count()

    def test_recursive_union(self) -> None:
        """A union may refer to itself through a sequence."""
        rid = "IDL:test/Tree:1.0"
        u = tc.union_tc(rid, "Tree", CORBA.TC_boolean,
                        [(True, "leaf", CORBA.TC_long),
                         (False, "kids", tc.sequence_tc(0, tc.recursive_tc(rid)))])
        assert T.resolve(u.member_type(1).content_type()) is u


class TestBuilderErrors:
    def test_duplicate_member_names(self) -> None:
        """A struct with two members of one name is refused with BAD_PARAM."""
        with pytest.raises(CORBA.BAD_PARAM):
            tc.struct_tc("IDL:t/S:1.0", "S", [("a", CORBA.TC_long), ("a", CORBA.TC_long)])

    def test_duplicate_union_labels(self) -> None:
        """Two members with one label are refused."""
        with pytest.raises(CORBA.BAD_PARAM):
            tc.union_tc("IDL:t/U:1.0", "U", CORBA.TC_long,
                        [(1, "a", CORBA.TC_long), (1, "b", CORBA.TC_long)])

    def test_bad_discriminator_kind(self) -> None:
        """A union may not switch on a string."""
        with pytest.raises(CORBA.BAD_PARAM):
            tc.union_tc("IDL:t/U:1.0", "U", CORBA.TC_string, [("a", "a", CORBA.TC_long)])

    def test_bad_fixed_and_array(self) -> None:
        """fixed<40,2> and zero-length arrays are refused."""
        with pytest.raises(CORBA.BAD_PARAM):
            tc.fixed_tc(40, 2)
        with pytest.raises(CORBA.BAD_PARAM):
            tc.array_tc(0, CORBA.TC_long)

    def test_non_typecode_member(self) -> None:
        """A member type that is not a TypeCode raises BAD_TYPECODE."""
        with pytest.raises(CORBA.BAD_TYPECODE):
            tc.struct_tc("IDL:t/S:1.0", "S", [("a", int)])  # type: ignore[list-item]


class TestORBFactory:
    def test_create_tc_operations(self) -> None:
        """The ORB's create_*_tc operations build the same TypeCodes as the builders."""
        orb = CORBA.ORB_init([], "test-factory")
        s = orb.create_struct_tc(POINT_ID, "Point", [CORBA.StructMember("x", CORBA.TC_long),
                                                    CORBA.StructMember("y", CORBA.TC_long)])
        assert s.equal(point())
        u = orb.create_union_tc("IDL:t/U:1.0", "U", CORBA.TC_long, [
            CORBA.UnionMember("a", CORBA.Any(CORBA.TC_long, 1), CORBA.TC_long),
            CORBA.UnionMember("b", CORBA.Any(CORBA.TC_octet, 0), CORBA.TC_string)])
        assert u.default_index() == 1
        assert orb.create_enum_tc("IDL:t/E:1.0", "E", ["a"]).member_count() == 1
        assert orb.create_sequence_tc(2, CORBA.TC_long).length() == 2
        assert orb.create_interface_tc("IDL:t/I:1.0", "I").kind() == CORBA.tk_objref
        assert orb.get_primitive_tc(CORBA.tk_double) is CORBA.TC_double

    def test_orb_init_consumes_orb_arguments(self) -> None:
        """ORB_init removes -ORB options from argv and records them."""
        argv = ["prog", "-ORBendPoint", "giop:tcp:127.0.0.1:0", "x",
                "-ORBInitRef", "NameService=corbaloc::h:1/NameService"]
        orb = CORBA.ORB_init(argv, "test-args")
        assert argv == ["prog", "x"]
        assert orb.options.endpoints == ("giop:tcp:127.0.0.1:0",)
        assert orb.options.init_refs == (("NameService", "corbaloc::h:1/NameService"),)


class TestPickling:
    def test_typecodes_pickle(self) -> None:
        """TypeCodes survive pickling (Spark ships them to worker processes)."""
        t = tc.sequence_tc(0, point())
        assert pickle.loads(pickle.dumps(t)).equal(t)
        assert pickle.loads(pickle.dumps(CORBA.TC_long)) is CORBA.TC_long

    def test_recursive_typecodes_pickle(self) -> None:
        """A recursive TypeCode pickles and the copy is still bound to itself."""
        node = TestRecursion().node()
        copy = pickle.loads(pickle.dumps(node))
        assert copy.equal(node)
        assert T.resolve(copy.member_type(1).content_type()) is copy
