"""The CosNotifyFilter::MappingFilter interface (§2.3.1, §3.2.2)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyFilter as F
import TimeBase

from cosnotify.corba import descriptors as D
from cosnotify.filter.factory import FilterFactory
from tests.filter.events import (
    has_wire_indirection,
    same_any,
    struct_tc,
    structured,
    value,
)


def short(n: int) -> Any:
    return CORBA.Any(CORBA.TC_short, n)


def pair(text: str, result: Any, *types: tuple[str, str]) -> Any:
    return F.MappingConstraintPair(F.ConstraintExp([N.EventType(d, t) for d, t in types], text),
                                   result)


def mapping(default: Any = None) -> Any:
    return FilterFactory().create_mapping_filter("EXTENDED_TCL",
                                                 short(0) if default is None else default)


class TestAttributes:
    """constraint_grammar, value_type and default_value (§3.2.2.1-3)."""

    def test_attributes(self) -> None:
        """The value type is the default value's TypeCode."""
        m = mapping(short(-1))
        assert m._get_constraint_grammar() == "EXTENDED_TCL"
        assert m._get_value_type().equal(CORBA.TC_short)
        assert same_any(m._get_default_value(), short(-1))

    def test_default_must_be_an_any(self) -> None:
        """A default value that is no CORBA.Any is BAD_PARAM."""
        with pytest.raises(CORBA.BAD_PARAM):
            FilterFactory().create_mapping_filter("EXTENDED_TCL", 5)

    @pytest.mark.parametrize("default", [
        CORBA.Any(CORBA.TC_short, 70000),
        CORBA.Any(TimeBase._tc_TimeT, -1),
        CORBA.Any(CORBA.TC_string, 5),
    ])
    def test_default_must_fit_its_typecode(self, default: Any) -> None:
        """A default value whose TypeCode cannot hold its value is BAD_PARAM (§3.2.3.2
        names no exception for it; the Any "will be set as the default_value", whose
        TypeCode is the value_type every value must have, §3.2.2.2)."""
        with pytest.raises(CORBA.BAD_PARAM) as info:
            FilterFactory().create_mapping_filter("EXTENDED_TCL", default)
        assert info.value.completed == CORBA.COMPLETED_NO


class TestAddAndModify:
    """add_mapping_constraints and modify_mapping_constraints (§3.2.2.4-5)."""

    def test_add_returns_infos(self) -> None:
        """Each pair gets a unique id; the value comes back."""
        m = mapping()
        infos = m.add_mapping_constraints([pair("TRUE", short(1)), pair("FALSE", short(2))])
        assert len({i.constraint_id for i in infos}) == 2
        assert [i.value.value() for i in infos] == [1, 2]
        assert all(i.value.typecode().equal(CORBA.TC_short) for i in infos)
        assert [i.constraint_expression.constraint_expr for i in
                m.get_all_mapping_constraints()] == ["TRUE", "FALSE"]

    def test_invalid_value_adds_nothing(self) -> None:
        """A value of another TypeCode raises InvalidValue with the pair's data."""
        m = mapping()
        with pytest.raises(F.InvalidValue) as info:
            m.add_mapping_constraints([pair("TRUE", short(1)),
                                       pair("$a == 1", CORBA.Any(CORBA.TC_long, 1))])
        assert info.value.constr.constraint_expr == "$a == 1"
        assert same_any(info.value.value, CORBA.Any(CORBA.TC_long, 1))
        assert m.get_all_mapping_constraints() == []

    @pytest.mark.parametrize("bad", [
        CORBA.Any(CORBA.TC_short, 70000),
        CORBA.Any(CORBA.TC_short, "seven"),
    ])
    def test_value_that_does_not_fit_its_typecode_is_invalid(self, bad: Any) -> None:
        """A value whose TypeCode is value_type's but whose value that type cannot hold
        (an Any made in process is never marshalled) is InvalidValue, and nothing is
        added or modified (§3.2.2.4: "If any of the values supplied in the input
        sequence is not of the same type as that of the value_type attribute ... the
        InvalidValue exception is raised", and "all of the constraint-value pairs
        ... or none of them")."""
        m = mapping()
        with pytest.raises(F.InvalidValue) as info:
            m.add_mapping_constraints([pair("TRUE", short(1)), pair("$a == 1", bad)])
        assert info.value.constr.constraint_expr == "$a == 1"
        assert m.get_all_mapping_constraints() == []
        [kept] = m.add_mapping_constraints([pair("TRUE", short(1))])
        with pytest.raises(F.InvalidValue):
            m.modify_mapping_constraints([], [F.MappingConstraintInfo(
                F.ConstraintExp([], "FALSE"), kept.constraint_id, bad)])
        [only] = m.get_all_mapping_constraints()
        assert (only.constraint_expression.constraint_expr, only.value.value()) == ("TRUE", 1)

    def test_alias_values_are_equivalent(self) -> None:
        """TimeBase::TimeT values fit an unsigned long long value type."""
        m = mapping(CORBA.Any(CORBA.TC_ulonglong, 0))
        m.add_mapping_constraints([pair("TRUE", CORBA.Any(TimeBase._tc_TimeT, 5))])
        assert len(m.get_all_mapping_constraints()) == 1

    def test_invalid_constraint(self) -> None:
        """A bad expression raises InvalidConstraint with a caret excerpt."""
        with pytest.raises(F.InvalidConstraint) as info:
            mapping().add_mapping_constraints([pair("$a ==", short(1))])
        assert "^" in str(info.value)

    def test_modify_is_atomic(self) -> None:
        """Bad ids, expressions or values leave the filter unchanged."""
        m = mapping()
        a, b = (i.constraint_id for i in m.add_mapping_constraints(
            [pair("$a == 1", short(1)), pair("$b == 1", short(2))]))
        info = lambda text, cid, value: F.MappingConstraintInfo(
            F.ConstraintExp([], text), cid, value)
        with pytest.raises(F.ConstraintNotFound):
            m.modify_mapping_constraints([a, 99], [])
        with pytest.raises(F.InvalidValue):
            m.modify_mapping_constraints([a], [info("TRUE", b, CORBA.Any(CORBA.TC_string, ""))])
        with pytest.raises(F.InvalidConstraint):
            m.modify_mapping_constraints([a], [info("(", b, short(3))])
        assert len(m.get_all_mapping_constraints()) == 2
        m.modify_mapping_constraints([a], [info("$b == 2", b, short(7))])
        [only] = m.get_all_mapping_constraints()
        assert (only.constraint_id, only.value.value()) == (b, 7)
        matched, result = m.match_structured(structured(filterable={"b": 2}))
        assert matched is True and same_any(result, short(7))

    def test_get_remove_destroy(self) -> None:
        """get_mapping_constraints, remove_all and destroy."""
        m = mapping()
        a, = (i.constraint_id for i in m.add_mapping_constraints([pair("TRUE", short(1))]))
        assert same_any(m.get_mapping_constraints([a])[0].value, short(1))
        with pytest.raises(F.ConstraintNotFound):
            m.get_mapping_constraints([a + 1])
        m.remove_all_mapping_constraints()
        matched, result = m.match_structured(structured())
        assert matched is False and same_any(result, short(0))
        m.destroy()
        for call in (lambda: m.match_structured(structured()), m.get_all_mapping_constraints,
                     lambda: m.add_mapping_constraints([]), m._get_value_type, m.destroy):
            with pytest.raises(CORBA.OBJECT_NOT_EXIST):
                call()


class TestMatch:
    """Constraints are tried from the highest value to the lowest (§2.3.1)."""

    def test_highest_value_first(self) -> None:
        """The best value among satisfied constraints wins; else FALSE and the default."""
        m = mapping(short(-5))
        m.add_mapping_constraints([pair("$p > 0", short(1)), pair("$p > 5", short(10)),
                                   pair("$p > 2", short(3))])
        for p, expected in ((9, (True, 10)), (4, (True, 3)), (1, (True, 1)), (0, (False, -5))):
            matched, result = m.match_structured(structured(filterable={"p": p}))
            assert (matched, result.value()) == expected

    def test_event_forms_and_types(self) -> None:
        """match, match_structured and match_typed, with event-type lists."""
        m = mapping()
        m.add_mapping_constraints([pair("TRUE", short(4), ("D", "A")),
                                   pair("$ == 1", short(2), ("", "%ANY")),
                                   pair("$(x) == 1", short(3), ("", "%TYPED"))])
        results = [m.match_structured(structured("D", "A")),
                   m.match_structured(structured("D", "B")),
                   m.match(CORBA.Any(CORBA.TC_long, 1)),
                   m.match(CORBA.Any(N._tc_StructuredEvent, structured("D", "A"))),
                   m.match_typed([N.Property("x", CORBA.Any(CORBA.TC_long, 1))])]
        assert [(matched, result.value()) for matched, result in results] == [
            (True, 4), (False, 0), (True, 2), (True, 4), (True, 3)]

    def test_ties_keep_insertion_order(self) -> None:
        """Equal values are tried in the order they were added."""
        m = mapping(CORBA.Any(CORBA.TC_string, ""))
        first = CORBA.Any(CORBA.TC_string, "same")
        second = CORBA.Any(CORBA.TC_string, "same")
        m.add_mapping_constraints([pair("TRUE", first), pair("TRUE", second)])
        assert m.match_structured(structured())[1] is first

    @pytest.mark.parametrize(("typecode", "values", "best"), [
        (TimeBase._tc_TimeT, [10, 2**64 - 1, 5], 2**64 - 1),    # longest lifetime first
        (CORBA.TC_double, [0.5, -1.0, 2.5], 2.5),
        (CORBA.TC_boolean, [False, True], True),
        (CORBA.TC_string, ["b", "c", "a"], "c"),
    ])
    def test_order_by_value_type(self, typecode: Any, values: list[Any], best: Any) -> None:
        """Numbers, booleans and strings order by value, highest first."""
        m = mapping(CORBA.Any(typecode, values[0]))
        m.add_mapping_constraints([pair("TRUE", CORBA.Any(typecode, v)) for v in values])
        assert m.match_structured(structured())[1].value() == best

    def test_lifetime_zero_is_the_longest(self) -> None:
        """A TimeBase::TimeT value of 0 is no timeout (Table 2-4: "The special value zero
        indicates there is no timeout"), so for a lifetime mapping filter it is the
        longest lifetime and is tried first (§3.2.2.10: "starting with the constraint
        with the 'best' associated value ... the longest lifetime"); decision 43."""
        timet = lambda n: CORBA.Any(TimeBase._tc_TimeT, n)
        m = mapping(timet(10))
        m.add_mapping_constraints([pair("TRUE", timet(v)) for v in (5, 2**64 - 1, 0, 7)])
        assert m.match_structured(structured())[1].value() == 0
        # Values given as plain unsigned long long, equivalent to a TimeT value_type:
        m = mapping(timet(10))
        m.add_mapping_constraints([pair("TRUE", CORBA.Any(CORBA.TC_ulonglong, v))
                                   for v in (5, 0, 7)])
        assert m.match_structured(structured())[1].value() == 0
        # An unsigned long long value_type names no lifetime: 0 is the smallest number.
        m = mapping(CORBA.Any(CORBA.TC_ulonglong, 1))
        m.add_mapping_constraints([pair("TRUE", CORBA.Any(CORBA.TC_ulonglong, v))
                                   for v in (0, 7)])
        assert m.match_structured(structured())[1].value() == 7

    def test_enums_by_ordinal(self, idl: Any) -> None:
        """Enum values are tried from the highest ordinal down."""
        fe = idl.FE
        m = mapping(CORBA.Any(fe._tc_Asset, fe.HOUSE))
        m.add_mapping_constraints([pair("TRUE", CORBA.Any(fe._tc_Asset, a))
                                   for a in (fe.CAR, fe.BOAT, fe.HOUSE)])
        assert m.match_structured(structured())[1].value() == fe.BOAT

    def test_unordered_values_keep_insertion_order(self) -> None:
        """Values of types with no order (structs) are tried in insertion order."""
        point = struct_tc("IDL:test/Pt:1.0", "Pt", [("x", CORBA.TC_long)])
        make = lambda x: value(point, x)
        m = mapping(make(0))
        m.add_mapping_constraints([pair("TRUE", make(1)), pair("TRUE", make(9))])
        assert m.match_structured(structured())[1].value().x == 1


class TestSnapshots:
    """Readers see one published constraint set (docs/filters.md, "Thread safety")."""

    def test_get_all_reads_one_snapshot(self) -> None:
        """A change published while get_all_mapping_constraints runs does not reach its
        answer: it is the pairs of one moment (§3.2.2.7: "returns all of the
        constraint-value pairs encapsulated by the target mapping filter"), never a
        KeyError nor a mix of two sets."""
        m = mapping()
        m.add_mapping_constraints([pair(f"$n == {i}", short(i)) for i in range(3)])

        class SwappedWhileRead(dict):  # type: ignore[type-arg]
            """The published ids; reading them publishes another set, as a concurrent
            remove_all_mapping_constraints could."""

            def __iter__(self) -> Any:
                yield from list(dict.__iter__(self))
                m.remove_all_mapping_constraints()

        m._state = attrs.evolve(m._state, by_id=SwappedWhileRead(m._state.by_id))
        got = m.get_all_mapping_constraints()
        assert [(i.constraint_id, i.value.value()) for i in got] == [(1, 0), (2, 1), (3, 2)]
        assert m.get_all_mapping_constraints() == []


class TestValuesFromTheWire:
    """Values and value types whose TypeCodes crossed the wire (WireTypes.idl, no stubs here)."""

    def member_any(self, holder: Any, name: str) -> Any:
        """An Any of member ``name`` of a received struct, typed by its wire descriptor."""
        desc = dict(D.members(holder._t._d))[name]
        return CORBA.Any(D.typecode(desc), getattr(holder._v, name))

    def test_recursive_value_type(self, wire_types: dict[str, Any]) -> None:
        """A recursive wire type is a usable value type: equivalent values (another
        descriptor of the same type) are accepted, others are InvalidValue."""
        tree = wire_types["tree"]
        assert has_wire_indirection(tree._t._d)
        m = mapping(tree)
        value_type = m._get_value_type()
        assert value_type.member_type(1).content_type().content_type().kind() == \
            CORBA.tk_struct
        other = self.member_any(wire_types["everything"], "tree")
        assert other._t._d is not tree._t._d
        m.add_mapping_constraints([pair("$.name == 'root'", other)])
        with pytest.raises(F.InvalidValue):
            m.add_mapping_constraints([pair("TRUE", wire_types["segment"])])
        matched, result = m.match(wire_types["tree"])
        assert matched is True and result is other

    def test_wire_enums_by_ordinal(self, wire_types: dict[str, Any]) -> None:
        """Enum values of a wire TypeCode (EnumItems labelled from the descriptor) are
        tried from the highest ordinal down."""
        paint = self.member_any(wire_types["everything"], "paint")
        items = D.resolve(paint._t._d)[3]
        assert [item._n for item in items] == ["red", "green", "blue"]
        colour = lambda i: CORBA.Any(paint._t, items[i])
        m = mapping(colour(0))
        m.add_mapping_constraints([pair("TRUE", colour(i)) for i in (1, 2, 0)])
        assert m.match_structured(structured())[1].value()._n == "blue"

    def test_fixed_values_by_amount(self, wire_types: dict[str, Any]) -> None:
        """fixed values (omniORB's CORBA.fixed) order numerically, exactly."""
        money = self.member_any(wire_types["everything"], "money")
        assert str(money.value()) == "12.5"
        amount = lambda text: CORBA.Any(money._t, CORBA.fixed(text))
        m = mapping(amount("0"))
        m.add_mapping_constraints([pair("TRUE", amount(t)) for t in ("12.49", "12.51", "-99")])
        assert str(m.match_structured(structured())[1].value()) == "12.51"
        assert m.add_mapping_constraints([pair("TRUE", money)])
