"""Python values of IDL types, Any, exceptions and validation against TypeCodes."""

from __future__ import annotations

import pickle
from decimal import Decimal
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings

from cosnotify.orb import CORBA, tc, validate, values
from cosnotify.orb import typecode as T
from tests.strategies import typed_values

RED = values.EnumItem("red", 0)
GREEN = values.EnumItem("green", 1)
COLOUR = values.Enum("IDL:test/Colour:1.0", (RED, GREEN))
TC_COLOUR = tc.enum_tc("IDL:test/Colour:1.0", "Colour", ["red", "green"])


class Point(values.StructBase):
    _NP_RepositoryId = "IDL:test/Point:1.0"
    __slots__ = ("x", "y")

    def __init__(self, x: int, y: int) -> None:
        self.x = x
        self.y = y


TC_POINT = tc.struct_tc(Point._NP_RepositoryId, "Point", [("x", CORBA.TC_long), ("y", CORBA.TC_long)])


class Shape(values.Union):
    _NP_RepositoryId = "IDL:test/Shape:1.0"
    _m_to_d: ClassVar[dict[str, Any]] = {"p": RED}  # the mapping's class attributes
    _d_to_m: ClassVar[dict[Any, str]] = {RED: "p"}
    _def_m = "label"
    _def_d = GREEN


TC_SHAPE = tc.union_tc(Shape._NP_RepositoryId, "Shape", TC_COLOUR,
                       [(RED, "p", TC_POINT), (tc.DEFAULT_LABEL, "label", CORBA.TC_string)], 1)


class Oops(CORBA.UserException):
    _NP_RepositoryId = "IDL:test/Oops:1.0"

    def __init__(self, why: str) -> None:
        CORBA.UserException.__init__(self, why)
        self.why = why


class TestStructs:
    def test_positional_and_keyword_construction_compare_equal(self) -> None:
        """Point(1, 2) == Point(x=1, y=2), and differing members compare unequal."""
        assert Point(1, 2) == Point(x=1, y=2)
        assert Point(1, 2) != Point(1, 3)

    def test_repr_names_members(self) -> None:
        """The repr shows the class and every member."""
        assert repr(Point(1, 2)) == "Point(x=1, y=2)"

    def test_dynamic_class_from_typecode(self) -> None:
        """A struct known only by TypeCode gets a cached class with the same behaviour."""
        t = tc.struct_tc("IDL:test/Dyn:1.0", "Dyn", [("a", CORBA.TC_long), ("class", CORBA.TC_long)])
        cls = t.python_class()
        value = cls(1, _class=2)
        assert value._class == 2
        assert t.python_class() is cls
        assert pickle.loads(pickle.dumps(value)) == value

    def test_pickle_round_trip(self) -> None:
        """Generated structs pickle by value."""
        assert pickle.loads(pickle.dumps(Point(3, 4))) == Point(3, 4)

    def test_keyword_names_are_escaped(self) -> None:
        """IDL names that are Python keywords gain a leading underscore."""
        assert values.attr_name("in") == "_in"
        assert values.attr_name("None") == "_None"
        assert values.attr_name("x") == "x"


class TestUnions:
    def test_member_properties_follow_discriminator(self) -> None:
        """Setting a member sets _d; reading another member raises BAD_PARAM."""
        s = Shape(p=Point(1, 2))
        assert s._d == RED and s.p == Point(1, 2)
        with pytest.raises(CORBA.BAD_PARAM):
            s.label  # noqa: B018
        s.label = "circle"
        assert s._d == GREEN and s._v == "circle"

    def test_positional_construction_and_equality(self) -> None:
        """Shape(d, v) equals the keyword form with the same discriminator."""
        assert Shape(RED, Point(0, 0)) == Shape(p=Point(0, 0))
        assert Shape(GREEN, "a") != Shape(GREEN, "b")

    def test_dynamic_union_pickles(self) -> None:
        """A union class made from a TypeCode pickles."""
        t = tc.union_tc("IDL:test/DU:1.0", "DU", CORBA.TC_long,
                        [(1, "a", CORBA.TC_long), (tc.DEFAULT_LABEL, "b", CORBA.TC_string)], 1)
        cls = t.python_class()
        value = cls(b="x")
        assert value._d not in (1,)
        assert pickle.loads(pickle.dumps(value)) == value


class TestEnums:
    def test_items_have_name_ordinal_and_order(self) -> None:
        """Enum items carry _n and _v and order by ordinal."""
        assert (GREEN._n, GREEN._v) == ("green", 1)
        assert RED < GREEN
        assert COLOUR._item(1) is GREEN

    def test_items_of_different_enums_differ(self) -> None:
        """Items of two enums with equal ordinals are not equal."""
        other = values.EnumItem("red", 0)
        values.Enum("IDL:test/Other:1.0", (other,))
        assert other != RED
        with pytest.raises(TypeError):
            other < RED  # noqa: B015

    def test_enum_items_unpickle_to_the_registered_singleton(self) -> None:
        """Pickling a registered enum item gives back the same object."""
        from cosnotify.orb import registry

        registry.register_type(COLOUR._NP_RepositoryId, COLOUR)
        assert pickle.loads(pickle.dumps(GREEN)) is GREEN


class TestAny:
    def test_typecode_and_value(self) -> None:
        """An Any returns the TypeCode and value it was built with."""
        a = CORBA.Any(CORBA.TC_long, 5)
        assert a.typecode() is CORBA.TC_long and a.value() == 5

    def test_equality_ignores_aliases(self) -> None:
        """Anys are equal when their TypeCodes are equivalent and values equal."""
        alias = tc.alias_tc("IDL:test/L:1.0", "L", CORBA.TC_long)
        assert CORBA.Any(alias, 5) == CORBA.Any(CORBA.TC_long, 5)
        assert CORBA.Any(CORBA.TC_long, 5) != CORBA.Any(CORBA.TC_short, 5)

    def test_needs_a_typecode(self) -> None:
        """Building an Any from a non-TypeCode raises BAD_PARAM."""
        with pytest.raises(CORBA.BAD_PARAM):
            CORBA.Any(int, 5)  # type: ignore[arg-type]


class TestExceptions:
    def test_system_exception_fields(self) -> None:
        """CORBA.BAD_PARAM(minor, completed) carries both, and a repository id."""
        e = CORBA.BAD_PARAM(7, CORBA.COMPLETED_MAYBE)
        assert (e.minor, e.completed) == (7, CORBA.COMPLETED_MAYBE)
        assert e._NP_RepositoryId == "IDL:omg.org/CORBA/BAD_PARAM:1.0"
        assert isinstance(e, CORBA.SystemException) and isinstance(e, CORBA.Exception)

    def test_every_standard_system_exception_exists(self) -> None:
        """All standard system exceptions, BAD_QOS included, are in CORBA."""
        for name in ("UNKNOWN", "MARSHAL", "OBJECT_NOT_EXIST", "TRANSIENT", "TIMEOUT", "BAD_QOS",
                     "COMM_FAILURE", "IMP_LIMIT", "CODESET_INCOMPATIBLE", "NO_IMPLEMENT"):
            cls = getattr(CORBA, name)
            assert issubclass(cls, CORBA.SystemException)
            assert cls().completed == CORBA.COMPLETED_NO

    def test_user_exception_members_and_pickling(self) -> None:
        """A user exception keeps its members, compares by value and pickles."""
        e = Oops("bad")
        assert e.why == "bad" and e == Oops("bad") and e != Oops("worse")
        assert pickle.loads(pickle.dumps(e)) == e
        assert pickle.loads(pickle.dumps(CORBA.TRANSIENT(2, CORBA.COMPLETED_NO))).minor == 2


class TestValidate:
    def test_good_values_pass(self) -> None:
        """Values of the right shape pass silently."""
        validate.check(TC_POINT, Point(1, 2))
        validate.check(TC_SHAPE, Shape(label="x"))
        validate.check(tc.sequence_tc(0, CORBA.TC_octet), b"\x00\xff")
        validate.check(tc.fixed_tc(5, 2), Decimal("123.45"))
        validate.check(CORBA.TC_any, CORBA.Any(TC_POINT, Point(1, 2)))

    @pytest.mark.parametrize(("typecode", "value", "path"), [
        (CORBA.TC_short, 40000, "value"),
        (CORBA.TC_ulong, -1, "value"),
        (CORBA.TC_char, "ab", "value"),
        (CORBA.TC_char, "\u0100", "value"),
        (tc.string_tc(3), "abcd", "value"),
        (CORBA.TC_string, "a\0b", "value"),
        (tc.sequence_tc(2, CORBA.TC_long), [1, 2, 3], "value"),
        (tc.array_tc(2, CORBA.TC_long), [1], "value"),
        (TC_POINT, Point(1, "y"), "value.y"),
        (tc.sequence_tc(0, TC_POINT), [Point(1, 2), Point(None, 2)], "value[1].x"),
        (TC_SHAPE, Shape(p="not a point"), "value.p"),
        (TC_COLOUR, 0, "value"),
        (tc.fixed_tc(4, 2), Decimal("123.4"), "value"),
        (CORBA.TC_any, CORBA.Any(CORBA.TC_long, "x"), "value<any>"),
        (CORBA.TC_double, "1.0", "value"),
    ])
    def test_mismatch_names_member_path(self, typecode: T.TypeCode, value: object, path: str) -> None:
        """A bad value raises BAD_PARAM whose message starts with the member path."""
        with pytest.raises(CORBA.BAD_PARAM) as info:
            validate.check(typecode, value)
        assert info.value.detail.startswith(path + ":")

    def test_missing_member(self) -> None:
        """A struct value lacking a member is reported by name."""
        p = Point.__new__(Point)
        p.x = 1
        with pytest.raises(CORBA.BAD_PARAM, match="value.y: member is missing"):
            validate.check(TC_POINT, p)

    @settings(max_examples=150, deadline=None)
    @given(typed_values)
    def test_generated_values_validate(self, pair: tuple[T.TypeCode, object]) -> None:
        """For random TypeCodes, generated values validate against their TypeCode."""
        typecode, value = pair
        validate.check(typecode, value)
