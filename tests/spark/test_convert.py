"""StructuredEvent <-> row conversion, without Spark: TypeCode text, Any cells, whole events.

Round trips check both ``CORBA.Any.__eq__`` (TypeCode equivalence and value)
and ``typecode().equal()`` (the exact TypeCode, ids and names included).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cosnotify.channel.clock import seconds_to_timet
from cosnotify.orb import CORBA, tc
from cosnotify.orb import typecode as T
from cosnotify.stubs import CosNotification as N
from cosnotify.stubs import CosNotifyFilter, TimeBase
from spark_bridge import (
    ConversionError,
    any_to_cell,
    cell_to_any,
    decode_typecode,
    encode_typecode,
    event_to_row,
    resolve_qos,
    row_qos,
    row_to_event,
)
from spark_bridge import variant as V
from spark_bridge.convert import encode_any
from spark_bridge.typetext import TypeTextError
from tests.spark.conftest import alarm, timet
from tests.strategies import typecodes, typed_values

ARRIVAL = 1_700_000_000.25


def roundtrip(value: Any) -> Any:
    text, variant = any_to_cell(value)
    return cell_to_any(text, variant)


def assert_same_any(got: Any, want: Any) -> None:
    assert got == want
    assert got.typecode().equal(want.typecode())


def node_tc() -> T.TypeCode:
    """struct Node { long v; sequence<Node> kids; } (a recursive TypeCode)."""
    rid = "IDL:test/spark/Node:1.0"
    return tc.struct_tc(rid, "Node", [("v", CORBA.TC_long),
                                      ("kids", tc.sequence_tc(0, tc.recursive_tc(rid)))])


def tree_tc() -> T.TypeCode:
    """union Tree switch (boolean) { case TRUE: sequence<Tree> kids; case FALSE: string leaf; }"""
    rid = "IDL:test/spark/Tree:1.0"
    return tc.union_tc(rid, "Tree", CORBA.TC_boolean,
                       [(True, "kids", tc.sequence_tc(0, tc.recursive_tc(rid))),
                        (False, "leaf", CORBA.TC_string)])


class TestTypeText:
    """TypeCodes survive the trip through text exactly."""

    @given(typecodes)
    def test_every_generated_typecode(self, typecode: T.TypeCode) -> None:
        """Text -> TypeCode gives an equal() TypeCode for every generated shape."""
        assert decode_typecode(encode_typecode(typecode)).equal(typecode)

    @pytest.mark.parametrize("name", ["long", "ulonglong", "string", "TypeCode", "any", "octet"])
    def test_basic_kinds_are_bare_names(self, name: str) -> None:
        """Basic kinds are bare names, so SQL can say ``type = 'long'``."""
        assert encode_typecode(decode_typecode(name)) == name

    def test_recursive_struct(self) -> None:
        """A recursive struct is written with a recursive reference and rebuilt bound."""
        node = node_tc()
        text = encode_typecode(node)
        assert '"kind":"recursive"' in text
        back = decode_typecode(text)
        assert back.equal(node)
        assert T.resolve(back.member_type(1).content_type()) is back

    def test_recursive_union(self) -> None:
        """A recursive union round-trips."""
        assert decode_typecode(encode_typecode(tree_tc())).equal(tree_tc())

    def test_member_of_recursive_type(self) -> None:
        """A TypeCode taken from inside a recursive type still writes finitely."""
        inner = node_tc().member_type(1)
        assert decode_typecode(encode_typecode(inner)).equal(inner)

    def test_union_labels_of_every_discriminator_kind(self) -> None:
        """Enum, char and integer discriminators keep their labels and default."""
        color = tc.enum_tc("IDL:test/spark/Color:1.0", "Color", ["RED", "GREEN"])
        red, green = color.enum_items()
        cases = [
            tc.union_tc("IDL:test/spark/E:1.0", "E", color, [(red, "r", CORBA.TC_long),
                                                            (green, "g", CORBA.TC_string)]),
            tc.union_tc("IDL:test/spark/C:1.0", "C", CORBA.TC_char,
                        [("a", "x", CORBA.TC_long), (T.DEFAULT_LABEL, "y", CORBA.TC_double)], 1),
            tc.union_tc("IDL:test/spark/L:1.0", "L", CORBA.TC_ulonglong,
                        [(2**64 - 1, "x", CORBA.TC_long), (0, "x", CORBA.TC_long)]),
        ]
        for case in cases:
            assert decode_typecode(encode_typecode(case)).equal(case)

    def test_generated_stub_typecodes(self) -> None:
        """The service's own TypeCodes (StructuredEvent, UtcT, ConstraintExp) round-trip."""
        for typecode in (N._tc_StructuredEvent, TimeBase._tc_UtcT, N._tc_EventBatch,
                         CosNotifyFilter._tc_ConstraintExp, TimeBase._tc_TimeT):
            assert decode_typecode(encode_typecode(typecode)).equal(typecode)

    def test_references_and_exceptions(self) -> None:
        """Object reference kinds and exceptions keep their ids and names."""
        for typecode in (CORBA.TC_Object, tc.objref_tc("IDL:test/I:1.0", "I"),
                         tc.abstract_interface_tc("IDL:test/A:1.0", "A"),
                         tc.local_interface_tc("IDL:test/L:1.0", "L"),
                         CosNotifyFilter._tc_InvalidConstraint):
            assert decode_typecode(encode_typecode(typecode)).equal(typecode)

    def test_compact_typecode(self) -> None:
        """A TypeCode without member names round-trips too."""
        compact = N._tc_StructuredEvent.get_compact_typecode()
        assert decode_typecode(encode_typecode(compact)).equal(compact)

    @pytest.mark.parametrize("text", ["", "lnog", "{", '{"kind":"nope"}', '{"kind":"struct"}',
                                      '{"kind":"fixed","digits":40,"scale":1}', "[1]"])
    def test_bad_text_raises_type_text_error(self, text: str) -> None:
        """Text that is no TypeCode raises TypeTextError, nothing else."""
        with pytest.raises(TypeTextError):
            decode_typecode(text)


class TestAnyRoundTrip:
    """A CORBA Any becomes a (type, VARIANT) cell and comes back identical."""

    @given(typed_values)
    @settings(suppress_health_check=[HealthCheck.too_slow])
    def test_every_generated_value(self, pair: tuple[T.TypeCode, Any]) -> None:
        """Every IDL kind the foundation supports (hypothesis) round-trips."""
        typecode, value = pair
        original = CORBA.Any(typecode, value)
        assert_same_any(roundtrip(original), original)

    @given(typed_values)
    def test_pyspark_can_read_every_cell(self, pair: tuple[T.TypeCode, Any]) -> None:
        """Every cell is a well-formed VARIANT for pyspark's own reader."""
        from pyspark.sql.types import VariantVal

        _, data, metadata = encode_any(CORBA.Any(*pair))
        VariantVal(data, metadata).toJson()  # raises on malformed bytes

    @pytest.mark.parametrize("typecode, value", [
        (CORBA.TC_longlong, -(2**63)), (CORBA.TC_ulonglong, 2**64 - 1), (CORBA.TC_ulong, 2**32 - 1),
        (CORBA.TC_short, -(2**15)), (CORBA.TC_ushort, 2**16 - 1), (CORBA.TC_octet, 255),
        (CORBA.TC_float, 3.4028234663852886e38), (CORBA.TC_double, math.inf),
        (CORBA.TC_double, -math.inf), (CORBA.TC_longdouble, 5e-324), (CORBA.TC_char, "é"),
        (CORBA.TC_wchar, "\u20ac"), (CORBA.TC_wstring, "\u20ac" * 70), (CORBA.TC_string, ""),
        (CORBA.TC_boolean, True), (CORBA.TC_null, None), (CORBA.TC_void, None),
        (tc.fixed_tc(31, 31), Decimal("0.9999999999999999999999999999999")),
        (tc.fixed_tc(31, 0), Decimal(-9999999999999999999999999999999)),
        (tc.sequence_tc(0, CORBA.TC_octet), b"\x00\x01\xff"),
        (tc.sequence_tc(0, CORBA.TC_octet), [0, 1, 255]),
        (tc.sequence_tc(0, CORBA.TC_char), "text"),
        (tc.sequence_tc(0, CORBA.TC_char), ["t", "x"]),
        (tc.array_tc(2, CORBA.TC_octet), b"\x07\x08"),
        (CORBA.TC_TypeCode, N._tc_StructuredEvent),
        (CORBA.TC_any, CORBA.Any(CORBA.TC_any, CORBA.Any(CORBA.TC_ulonglong, 2**64 - 1))),
        (CORBA.TC_Object, None),
        (CORBA.TC_Principal, b"who"),
    ])
    def test_edge_values(self, typecode: T.TypeCode, value: Any) -> None:
        """Extremes of each kind and both Python forms of octet and char sequences."""
        original = CORBA.Any(typecode, value)
        back = roundtrip(original)
        assert_same_any(back, original)
        assert type(back.value()) is type(value)

    def test_nan(self) -> None:
        """NaN survives (it never compares equal, so check it by kind)."""
        back = roundtrip(CORBA.Any(CORBA.TC_double, math.nan))
        assert math.isnan(back.value()) and back.typecode().equal(CORBA.TC_double)

    def test_recursive_value(self) -> None:
        """A value of a recursive struct, three levels deep, round-trips."""
        node = node_tc()
        cls = node.python_class()
        original = CORBA.Any(node, cls(1, [cls(2, []), cls(3, [cls(4, [])])]))
        assert_same_any(roundtrip(original), original)

    def test_recursive_union_value(self) -> None:
        """A value of a recursive union round-trips."""
        tree = tree_tc()
        cls = tree.python_class()
        original = CORBA.Any(tree, cls(True, [cls(False, "a"), cls(True, [cls(False, "b")])]))
        assert_same_any(roundtrip(original), original)

    def test_union_without_a_member(self) -> None:
        """A discriminator that selects no member keeps just the discriminator."""
        union = tc.union_tc("IDL:test/spark/Sparse:1.0", "Sparse", CORBA.TC_long,
                            [(1, "a", CORBA.TC_string)])
        original = CORBA.Any(union, union.python_class()(7, None))
        assert_same_any(roundtrip(original), original)

    def test_structured_event_in_an_any(self) -> None:
        """A StructuredEvent carried in an Any (Table 2-2) round-trips as a generated class."""
        original = CORBA.Any(N._tc_StructuredEvent, alarm(3))
        back = roundtrip(original)
        assert_same_any(back, original)
        assert type(back.value()) is N.StructuredEvent

    def test_registered_exception(self) -> None:
        """An exception whose stub is registered comes back as that class."""
        original = CORBA.Any(CosNotifyFilter._tc_InvalidConstraint,
                             CosNotifyFilter.InvalidConstraint(CosNotifyFilter.ConstraintExp(
                                 [N.EventType("d", "t")], "$n > 1")))
        assert_same_any(roundtrip(original), original)

    def test_compact_typecode_values(self) -> None:
        """Without member names, structs go as arrays and enums as ordinals."""
        from cosnotify.stubs import CosNotifyChannelAdmin as CA

        pair = tc.struct_tc("IDL:test/spark/Pair:1.0", "Pair",
                            [("t", N._tc_EventType), ("c", CA._tc_ClientType)])
        compact = pair.get_compact_typecode()
        value = pair.python_class()(N.EventType("D", "T"), CA.SEQUENCE_EVENT)
        text, data, metadata = encode_any(CORBA.Any(compact, value))
        assert V.read(data, metadata) == [["D", "T"], 2]
        back = cell_to_any(text, (data, metadata))
        assert back.typecode().equal(compact)
        assert back.value()._tuple() == value._tuple()  # registered member types come back

    def test_queryable_shape(self) -> None:
        """Structs are objects by member name; enums are names; unions carry _d."""
        color = tc.enum_tc("IDL:test/spark/Tint:1.0", "Tint", ["RED", "GREEN"])
        union = tc.union_tc("IDL:test/spark/V:1.0", "V", CORBA.TC_long,
                            [(1, "code", CORBA.TC_long), (2, "text", CORBA.TC_string)])
        shape = tc.struct_tc("IDL:test/spark/Shape:1.0", "Shape",
                             [("c", color), ("v", union),
                              ("xs", tc.sequence_tc(0, CORBA.TC_short))])
        value = shape.python_class()(color.enum_items()[1], union.python_class()(2, "hi"), [1, 2])
        _, data, metadata = encode_any(CORBA.Any(shape, value))
        assert V.read(data, metadata) == {"c": "GREEN", "v": {"_d": 2, "text": "hi"}, "xs": [1, 2]}


class TestConversionErrors:
    """Values that cannot be stored raise ConversionError, with nothing half-written."""

    @pytest.mark.parametrize("typecode, value", [
        (CORBA.TC_long, 2**31), (CORBA.TC_ulonglong, -1), (CORBA.TC_short, "1"),
        (CORBA.TC_string, 5), (tc.fixed_tc(3, 1), Decimal("123.4")),
        (tc.sequence_tc(0, CORBA.TC_long), 7),
    ])
    def test_value_outside_its_typecode(self, typecode: T.TypeCode, value: Any) -> None:
        """A value that does not fit its TypeCode is refused."""
        with pytest.raises(ConversionError):
            encode_any(CORBA.Any(typecode, value))

    def test_reference_needs_an_orb(self) -> None:
        """A non-nil object reference cannot be stored without an ORB."""
        with pytest.raises(ConversionError, match="ORB"):
            encode_any(CORBA.Any(CORBA.TC_Object, object()))

    def test_reference_with_an_orb(self) -> None:
        """With an ORB's string conversions, references are stored as strings."""

        class FakeORB:
            def object_to_string(self, obj: Any) -> str:
                return "IOR:00" + obj

            def string_to_object(self, text: str) -> Any:
                return text[6:]

        orb = FakeORB()
        text, variant = any_to_cell(CORBA.Any(CORBA.TC_Object, "ref"), orb)
        assert V.read(variant.value, variant.metadata) == "IOR:00ref"
        assert cell_to_any(text, variant, orb).value() == "ref"


class TestEvents:
    """Whole events to rows and back."""

    @given(st.lists(typed_values, max_size=3), typed_values)
    @settings(suppress_health_check=[HealthCheck.too_slow], max_examples=60)
    def test_generated_values_in_every_slot(self, fields: list[Any], body: Any) -> None:
        """Generated Anys in filterable_data, variable_header and remainder_of_body."""
        data = [N.Property(f"f{i}", CORBA.Any(t, v)) for i, (t, v) in enumerate(fields)]
        event = N.StructuredEvent(
            N.EventHeader(N.FixedEventHeader(N.EventType("D", "T"), "e"), list(data)),
            data, CORBA.Any(*body))
        back = row_to_event(event_to_row(event, ARRIVAL))
        assert back == event
        for got, want in zip(back.filterable_data + back.header.variable_header + [back],
                             event.filterable_data + event.header.variable_header + [event]):
            value = got.value if hasattr(got, "value") else got.remainder_of_body
            other = want.value if hasattr(want, "value") else want.remainder_of_body
            assert value.typecode().equal(other.typecode())

    def test_row_layout(self) -> None:
        """A row is the nine columns of event_schema(), in order."""
        row = event_to_row(alarm(7), ARRIVAL)
        assert row[:3] == ("Telecom", "CommunicationsAlarm", "alarm-7")
        assert [p[0] for p in row[4]] == ["severity", "n", "ne", "counter", "amount", "where"]
        assert [p[1] for p in row[4]][1:4] == ["long", "string", "ulonglong"]
        assert row[6] == datetime.fromtimestamp(ARRIVAL, UTC)
        assert row[7:] == (0, None)

    def test_property_order_and_repeats_are_kept(self) -> None:
        """Repeated names and their order survive (a map would lose them)."""
        event = alarm(1)
        event.filterable_data = [N.Property("x", CORBA.Any(CORBA.TC_long, 2)),
                                 N.Property("a", CORBA.Any(CORBA.TC_string, "s")),
                                 N.Property("x", CORBA.Any(CORBA.TC_short, 1))]
        assert row_to_event(event_to_row(event, ARRIVAL)) == event

    def test_row_from_mapping(self) -> None:
        """A row given as a mapping of column names converts too."""
        from spark_bridge.schema import COLUMNS

        row = dict(zip(COLUMNS, event_to_row(alarm(2), ARRIVAL)))
        row["filterable_data"] = [dict(zip(("name", "type", "value"), p))
                                  for p in row["filterable_data"]]
        assert row_to_event(row) == alarm(2)

    def test_row_qos(self) -> None:
        """Arrival, priority and expiry come back as seconds."""
        row = event_to_row(alarm(1), ARRIVAL, priority=-3, expiry=ARRIVAL + 5)
        assert row_qos(row) == (ARRIVAL, -3, ARRIVAL + 5)


class TestResolveQos:
    """Priority and expiry come from the header, else from the defaults."""

    def test_defaults(self) -> None:
        """No header fields: the default priority and no expiry."""
        assert resolve_qos(alarm(1), ARRIVAL) == (0, None)
        assert resolve_qos(alarm(1), ARRIVAL, 4, 2.0) == (4, ARRIVAL + 2.0)

    def test_header_priority_and_timeout(self) -> None:
        """Header Priority and Timeout (TimeT, relative) win over the defaults."""
        event = alarm(1, [N.Property("Priority", CORBA.Any(CORBA.TC_short, -7)),
                          N.Property("Timeout", timet(30))])
        assert resolve_qos(event, ARRIVAL, 4, 2.0) == (-7, ARRIVAL + 30)

    def test_stop_time_is_absolute(self) -> None:
        """StopTime (UtcT) sets the expiry, and the earlier of StopTime and Timeout wins."""
        stop = TimeBase.UtcT(seconds_to_timet(ARRIVAL + 10), 0, 0, 0)
        utc = CORBA.Any(TimeBase._tc_UtcT, stop)
        assert resolve_qos(alarm(1, [N.Property("StopTime", utc)]), ARRIVAL) == \
            (0, pytest.approx(ARRIVAL + 10))
        event = alarm(1, [N.Property("StopTime", utc), N.Property("Timeout", timet(3))])
        assert resolve_qos(event, ARRIVAL)[1] == pytest.approx(ARRIVAL + 3)


class TestBadCells:
    """Cells that do not describe a value raise ConversionError or TypeTextError."""

    @pytest.mark.parametrize("type_text, data", [
        ('{"kind":"struct","id":"IDL:test/spark/P:1.0","name":"P","members":[["a","long"]]}',
         V.string("not an object")),
        ("long", V.string("x")),
        ("double", V.Writer().array([])),
        ('{"kind":"enum","id":"IDL:test/spark/Q:1.0","name":"Q","members":["A"]}',
         V.string("B")),
        ("long", b""),
    ])
    def test_mismatched_variant(self, type_text: str, data: bytes) -> None:
        """A VARIANT that does not fit the TypeCode raises ConversionError."""
        with pytest.raises(ConversionError):
            cell_to_any(type_text, (data, V.EMPTY_METADATA))
