"""The CosNotifyFilter::MappingFilter interface (§2.3.1, §3.2.2)."""

from __future__ import annotations

from typing import Any

import pytest

from cosnotify.filter.factory import FilterFactory
from cosnotify.orb import CORBA, tc
from cosnotify.stubs import CosNotification as N
from cosnotify.stubs import CosNotifyFilter as F
from cosnotify.stubs import TimeBase
from tests.filter.events import structured


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
        assert m._get_default_value() == short(-1)

    def test_default_must_be_an_any(self) -> None:
        """A default value that is no CORBA.Any is BAD_PARAM."""
        with pytest.raises(CORBA.BAD_PARAM):
            FilterFactory().create_mapping_filter("EXTENDED_TCL", 5)


class TestAddAndModify:
    """add_mapping_constraints and modify_mapping_constraints (§3.2.2.4-5)."""

    def test_add_returns_infos(self) -> None:
        """Each pair gets a unique id; the value comes back."""
        m = mapping()
        infos = m.add_mapping_constraints([pair("TRUE", short(1)), pair("FALSE", short(2))])
        assert len({i.constraint_id for i in infos}) == 2
        assert [i.value for i in infos] == [short(1), short(2)]
        assert [i.constraint_expression.constraint_expr for i in
                m.get_all_mapping_constraints()] == ["TRUE", "FALSE"]

    def test_invalid_value_adds_nothing(self) -> None:
        """A value of another TypeCode raises InvalidValue with the pair's data."""
        m = mapping()
        with pytest.raises(F.InvalidValue) as info:
            m.add_mapping_constraints([pair("TRUE", short(1)),
                                       pair("$a == 1", CORBA.Any(CORBA.TC_long, 1))])
        assert info.value.constr.constraint_expr == "$a == 1"
        assert info.value.value == CORBA.Any(CORBA.TC_long, 1)
        assert m.get_all_mapping_constraints() == []

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
        assert (only.constraint_id, only.value) == (b, short(7))
        assert m.match_structured(structured(filterable={"b": 2})) == (True, short(7))

    def test_get_remove_destroy(self) -> None:
        """get_mapping_constraints, remove_all and destroy."""
        m = mapping()
        a, = (i.constraint_id for i in m.add_mapping_constraints([pair("TRUE", short(1))]))
        assert m.get_mapping_constraints([a])[0].value == short(1)
        with pytest.raises(F.ConstraintNotFound):
            m.get_mapping_constraints([a + 1])
        m.remove_all_mapping_constraints()
        assert m.match_structured(structured()) == (False, short(0))
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
        assert m.match_structured(structured(filterable={"p": 9})) == (True, short(10))
        assert m.match_structured(structured(filterable={"p": 4})) == (True, short(3))
        assert m.match_structured(structured(filterable={"p": 1})) == (True, short(1))
        assert m.match_structured(structured(filterable={"p": 0})) == (False, short(-5))

    def test_event_forms_and_types(self) -> None:
        """match, match_structured and match_typed, with event-type lists."""
        m = mapping()
        m.add_mapping_constraints([pair("TRUE", short(4), ("D", "A")),
                                   pair("$ == 1", short(2), ("", "%ANY")),
                                   pair("$(x) == 1", short(3), ("", "%TYPED"))])
        assert m.match_structured(structured("D", "A")) == (True, short(4))
        assert m.match_structured(structured("D", "B")) == (False, short(0))
        assert m.match(CORBA.Any(CORBA.TC_long, 1)) == (True, short(2))
        assert m.match(CORBA.Any(N._tc_StructuredEvent, structured("D", "A"))) == \
            (True, short(4))
        assert m.match_typed([N.Property("x", CORBA.Any(CORBA.TC_long, 1))]) == (True, short(3))

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

    def test_enums_by_ordinal(self, idl: Any) -> None:
        """Enum values are tried from the highest ordinal down."""
        fe = idl.FE
        m = mapping(CORBA.Any(fe._tc_Asset, fe.HOUSE))
        m.add_mapping_constraints([pair("TRUE", CORBA.Any(fe._tc_Asset, a))
                                   for a in (fe.CAR, fe.BOAT, fe.HOUSE)])
        assert m.match_structured(structured())[1].value() == fe.BOAT

    def test_unordered_values_keep_insertion_order(self) -> None:
        """Values of types with no order (structs) are tried in insertion order."""
        point = tc.struct_tc("IDL:test/Pt:1.0", "Pt", [("x", CORBA.TC_long)])
        make = lambda x: CORBA.Any(point, point.python_class()(x))
        m = mapping(make(0))
        m.add_mapping_constraints([pair("TRUE", make(1)), pair("TRUE", make(9))])
        assert m.match_structured(structured())[1].value().x == 1
