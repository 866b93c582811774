"""StructuredEvent <-> row conversion, without Spark: TypeCode text, Any cells, whole events.

Round trips are checked with ``tests/spark/compare.py`` (CORBA ``equal()`` of
the TypeCodes and values member by member), since omniORB's values compare by
identity. Besides values built here, every check is made on Anys another
omniORBpy process pushed over IIOP, of IDL this process has no stubs for
(``wire_values``), and on Anys after a CDR trip (which gives them the same
``UnknownStruct`` classes and wire indirections).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import omniORB
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from omniORB import CORBA, tcInternal
from pyspark.sql.types import VariantVal

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter
import TimeBase

from cosnotify.channel.clock import seconds_to_timet
from cosnotify.corba import descriptors as D
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
from tests.spark.compare import assert_same_any, same_typecode, same_value
from tests.spark.conftest import alarm, timet
from tests.strategies import (
    has_kind,
    recursive_struct_tc,
    recursive_union_tc,
    struct_tc,
    typecodes,
    typed_values,
    union_tc,
)

ARRIVAL = 1_700_000_000.25
OCTET_ALIAS = tcInternal.createAliasTC("IDL:test/spark/Byte:1.0", "Byte", CORBA.TC_octet)
CHAR_ALIAS = tcInternal.createAliasTC("IDL:test/spark/Letter:1.0", "Letter", CORBA.TC_char)
EVENT = N._tc_StructuredEvent._d


def roundtrip(value: Any, references: Any = None) -> Any:
    text, variant = any_to_cell(value, references)
    return cell_to_any(text, variant, references)


def cdr_trip(value: Any) -> Any:
    """``value`` as a process without stubs unmarshals it (UnknownStruct, wire indirections)."""
    return omniORB.cdrUnmarshal(CORBA.TC_any, omniORB.cdrMarshal(CORBA.TC_any, value))


def node_tc() -> Any:
    return recursive_struct_tc("IDL:test/spark/Node:1.0", "Node")


def tree_tc() -> Any:
    return recursive_union_tc("IDL:test/spark/Tree:1.0", "Tree")


def wire_cases(wire_values: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in wire_values.items() if not name.endswith("#text")}


class TestTypeText:
    """TypeCodes survive the trip through text exactly."""

    @given(typecodes)
    def test_every_generated_typecode(self, typecode: Any) -> None:
        """Text -> TypeCode gives an equal() TypeCode, with the same text, for every shape."""
        text = encode_typecode(typecode)
        back = decode_typecode(text)
        assert same_typecode(back, typecode)
        assert encode_typecode(back) == text

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
        assert same_typecode(back, node)
        assert D.resolve(D.content(dict(D.members(back._d))["kids"])) is back._d

    def test_recursive_union(self) -> None:
        """A recursive union round-trips."""
        assert same_typecode(decode_typecode(encode_typecode(tree_tc())), tree_tc())

    def test_member_of_recursive_type(self) -> None:
        """A TypeCode taken from inside a recursive type still writes finitely."""
        inner = tcInternal.createTypeCode(dict(D.members(node_tc()._d))["kids"])
        back = decode_typecode(encode_typecode(inner))
        assert same_typecode(back, inner)

    def test_union_labels_of_every_discriminator_kind(self) -> None:
        """Enum, char and integer discriminators keep their labels and default."""
        color = D.enum_tc("IDL:test/spark/Color:1.0", "Color", ["RED", "GREEN"])
        red, green = color._d[3]
        cases = [
            union_tc("IDL:test/spark/E:1.0", "E", color, [(red, "r", CORBA.TC_long),
                                                         (green, "g", CORBA.TC_string)]),
            union_tc("IDL:test/spark/C:1.0", "C", CORBA.TC_char,
                     [("a", "x", CORBA.TC_long), (None, "y", CORBA.TC_double)], 1),
            union_tc("IDL:test/spark/L:1.0", "L", CORBA.TC_ulonglong,
                     [(2**64 - 1, "x", CORBA.TC_long), (0, "x", CORBA.TC_long)]),
        ]
        for case in cases:
            back = decode_typecode(encode_typecode(case))
            assert same_typecode(back, case)
        assert back._d[6][0][0] == 2**64 - 1

    def test_stub_typecodes_come_back_as_themselves(self) -> None:
        """The service's own TypeCodes (StructuredEvent, UtcT, ...) decode to the stubs' ones."""
        for typecode in (N._tc_StructuredEvent, TimeBase._tc_UtcT, N._tc_EventBatch,
                         CosNotifyFilter._tc_ConstraintExp, TimeBase._tc_TimeT,
                         CA._tc_ClientType):
            assert decode_typecode(encode_typecode(typecode)) is typecode

    def test_registered_id_of_another_shape(self) -> None:
        """A text that reuses a stub's repository id for another shape keeps its own shape."""
        text = ('{"kind":"struct","id":"IDL:omg.org/CosNotification/EventType:1.0",'
                '"name":"EventType","members":[["domain_name","string"]]}')
        back = decode_typecode(text)
        assert back is not N._tc_EventType and D.member_count(back) == 1
        assert encode_typecode(back) == text
        assert back._d[1] is not N.EventType

    def test_references_and_exceptions(self) -> None:
        """Object reference kinds and exceptions keep their ids and names."""
        for typecode in (CORBA.TC_Object, tcInternal.createInterfaceTC("IDL:test/I:1.0", "I"),
                         tcInternal.createAbstractInterfaceTC("IDL:test/A:1.0", "A"),
                         tcInternal.createLocalInterfaceTC("IDL:test/L:1.0", "L"),
                         CosNotifyFilter._tc_InvalidConstraint,
                         D.exception_tc("IDL:test/spark/Oops:1.0", "Oops",
                                        [("why", CORBA.TC_string)])):
            assert same_typecode(decode_typecode(encode_typecode(typecode)), typecode)

    def test_compact_typecode(self) -> None:
        """A TypeCode without member names round-trips too."""
        compact = tcInternal.TypeCode_struct(tcInternal.getCompactDescriptor(EVENT))
        text = encode_typecode(compact)
        assert '"name":""' in text
        assert same_typecode(decode_typecode(text), compact)

    def test_keyword_member_names_are_idl_names(self) -> None:
        """omniORB's ``_in`` (a member named like a Python keyword) is written ``in``."""
        holding = struct_tc("IDL:test/spark/Holding:1.0", "Holding",
                            [("_in", CORBA.TC_long), ("_value", CORBA.TC_long)])
        text = encode_typecode(holding)
        assert '["in","long"]' in text and '["_value","long"]' in text
        assert [n for n, _ in D.members(decode_typecode(text)._d)] == ["_in", "_value"]

    def test_long_double_has_no_text(self) -> None:
        """omniORBpy cannot marshal long double, so it has no text and none reads back."""
        with pytest.raises(TypeTextError, match="long double"):
            encode_typecode(CORBA.TC_longdouble)
        with pytest.raises(TypeTextError, match="omniORBpy"):
            decode_typecode("longdouble")
        with pytest.raises(TypeTextError, match="long double"):
            decode_typecode('{"kind":"sequence","bound":0,"of":"longdouble"}')

    @pytest.mark.parametrize("text", [
        "", "lnog", "{", '{"kind":"nope"}', '{"kind":"struct"}',
        '{"kind":"fixed","digits":40,"scale":1}', "[1]", '{"kind":"recursive","id":"x"}',
        '{"kind":"array","length":0,"of":"long"}', '{"kind":"string","bound":-1}',
        ('{"kind":"union","id":"u","name":"U","discriminator":"boolean","default":-1,'
         '"members":[[2,"a","long"]]}'),
        ('{"kind":"union","id":"u","name":"U","discriminator":"boolean","default":2,'
         '"members":[[true,"a","long"],[false,"b","long"],[null,"c","long"]]}'),
    ])
    def test_bad_text_raises_type_text_error(self, text: str) -> None:
        """Text that is no TypeCode raises TypeTextError, nothing else."""
        with pytest.raises(TypeTextError):
            decode_typecode(text)


class TestWireTypeCodes:
    """TypeCodes that came over IIOP, of types this process has no stubs for."""

    def test_they_read_as_the_senders_text(self, wire_values: dict[str, Any]) -> None:
        """The text of a wire TypeCode is the text the sender computes from its stubs."""
        for name, value in wire_cases(wire_values).items():
            assert encode_typecode(value._t) == wire_values[f"{name}#text"]._v, name

    def test_they_decode_to_working_typecodes(self, wire_values: dict[str, Any]) -> None:
        """The decoded TypeCode equals the wire one and answers member_type, which the
        wheel's own wire TypeCode cannot for a repeated type."""
        segment = wire_values["segment"]._t
        back = decode_typecode(encode_typecode(segment))
        assert same_typecode(back, segment) and D.equivalent(back._d, segment._d)
        assert back.member_type(1).id() == "IDL:SparkWire/Point:1.0"
        with pytest.raises(CORBA.INTERNAL):
            segment.member_type(1)

    def test_typecode_values_from_the_wire(self, wire_values: dict[str, Any]) -> None:
        """A TypeCode carried as a value (recursive, with wire indirections) is stored as text."""
        value = wire_values["typecode"]
        back = roundtrip(value)
        assert_same_any(back, value)
        assert '"kind":"recursive"' in encode_typecode(back._v)
        assert same_typecode(back._v, value._v)


class TestAnyRoundTrip:
    """A CORBA Any becomes a (type, VARIANT) cell and comes back the same."""

    @given(typed_values)
    @settings(suppress_health_check=[HealthCheck.too_slow])
    def test_every_generated_value(self, pair: tuple[Any, Any]) -> None:
        """Every IDL kind omniORBpy supports (hypothesis) round-trips."""
        original = CORBA.Any(*pair)
        assert_same_any(roundtrip(original), original)

    @given(pair=typed_values)
    @settings(suppress_health_check=[HealthCheck.too_slow])
    def test_every_generated_value_as_a_peer_sends_it(self, pair: tuple[Any, Any],
                                                      omniorb: Any) -> None:
        """After a CDR trip (no stubs, wire indirections) values round-trip and marshal again."""
        assume(not has_kind(pair[0], frozenset({D.WCHAR})))  # cdrMarshal has no wchar code set
        try:
            received = cdr_trip(CORBA.Any(*pair))
        except CORBA.MARSHAL:  # bounds count UTF-8 bytes: string<1> cannot hold "é" in CDR
            assume(False)
        back = roundtrip(received)
        assert_same_any(back, received)
        assert_same_any(cdr_trip(back), received)

    @given(typed_values)
    def test_pyspark_can_read_every_cell(self, pair: tuple[Any, Any]) -> None:
        """Every cell is a well-formed VARIANT for pyspark's own reader."""
        _, data, metadata = encode_any(CORBA.Any(*pair))
        VariantVal(data, metadata).toJson()  # raises on malformed bytes

    @pytest.mark.parametrize("typecode, value", [
        (CORBA.TC_longlong, -(2**63)), (CORBA.TC_ulonglong, 2**64 - 1), (CORBA.TC_ulong, 2**32 - 1),
        (CORBA.TC_short, -(2**15)), (CORBA.TC_ushort, 2**16 - 1), (CORBA.TC_octet, 255),
        (CORBA.TC_float, 3.4028234663852886e38), (CORBA.TC_double, math.inf),
        (CORBA.TC_double, -math.inf), (CORBA.TC_double, 5e-324), (CORBA.TC_char, "é"),
        (CORBA.TC_wchar, "\u20ac"), (CORBA.TC_wstring, "\u20ac" * 70), (CORBA.TC_string, ""),
        (CORBA.TC_boolean, True), (CORBA.TC_null, None), (CORBA.TC_void, None),
        (tcInternal.createFixedTC(31, 31), CORBA.fixed("0.9999999999999999999999999999999")),
        (tcInternal.createFixedTC(31, 0), CORBA.fixed("-9999999999999999999999999999999")),
        (tcInternal.createSequenceTC(0, CORBA.TC_octet), b"\x00\x01\xff"),
        (tcInternal.createSequenceTC(0, CORBA.TC_char), "text"),
        (tcInternal.createSequenceTC(0, CORBA.TC_wchar), ["\u20ac", "x"]),
        (tcInternal.createSequenceTC(0, OCTET_ALIAS), [0, 255]),
        (tcInternal.createArrayTC(2, CHAR_ALIAS), ["a", "\xe9"]),
        (tcInternal.createArrayTC(2, CORBA.TC_octet), b"\x07\x08"),
        (CORBA.TC_TypeCode, N._tc_StructuredEvent),
        (CORBA.TC_any, CORBA.Any(CORBA.TC_any, CORBA.Any(CORBA.TC_ulonglong, 2**64 - 1))),
        (CORBA.TC_Object, None),
        (CORBA.TC_Principal, b"who"),
    ])
    def test_edge_values(self, typecode: Any, value: Any) -> None:
        """Extremes of each kind, in the Python types omniORB uses."""
        original = CORBA.Any(typecode, value)
        back = roundtrip(original)
        assert_same_any(back, original)
        assert type(back._v) is type(value)

    @pytest.mark.parametrize("typecode, value", [
        (CORBA.TC_char, "\0"), (CORBA.TC_wchar, "\0"),
        (tcInternal.createSequenceTC(0, CORBA.TC_char), "a\0b"),
        (tcInternal.createArrayTC(2, CORBA.TC_char), "\0x"),
        (tcInternal.createArrayTC(2, CHAR_ALIAS), ["\0", "x"]),
    ])
    def test_nul_chars_come_back(self, typecode: Any, value: Any) -> None:
        """A NUL char (valid in CORBA; only strings exclude NUL) is read back, not refused
        (review 109: event_to_row wrote it, row_to_event refused it)."""
        original = CORBA.Any(typecode, value)
        assert_same_any(roundtrip(original), original)

    def test_nul_char_from_the_wire_in_an_event(self, omniorb: Any) -> None:
        """An event holding a NUL char received over CDR converts to a row and back."""
        received = cdr_trip(CORBA.Any(CORBA.TC_char, "\0"))
        event = N.StructuredEvent(
            N.EventHeader(N.FixedEventHeader(N.EventType("d", "t"), "e"), []),
            [N.Property("c", received)], CORBA.Any(CORBA.TC_null, None))
        back = row_to_event(event_to_row(event, ARRIVAL))
        assert_same_any(back.filterable_data[0].value, received)

    @pytest.mark.parametrize("type_text", ["string", "wstring"])
    def test_nul_in_a_string_cell_is_still_refused(self, type_text: str) -> None:
        """A string or wstring cell holding NUL is no CORBA string: ConversionError."""
        _, variant = any_to_cell(CORBA.Any(tcInternal.createSequenceTC(0, CORBA.TC_char),
                                           "a\0b"))  # the VARIANT string "a\0b"
        with pytest.raises(ConversionError):
            cell_to_any(type_text, variant)

    def test_list_forms_come_back_in_omniorbs_forms(self) -> None:
        """Octet and char sequences given as lists come back as bytes and str (what omniORB
        marshals), other sequences given as tuples as lists (what CDR gives)."""
        octets = CORBA.Any(tcInternal.createSequenceTC(0, CORBA.TC_octet), [0, 1, 255])
        chars = CORBA.Any(tcInternal.createSequenceTC(0, CORBA.TC_char), ["t", "x"])
        longs = CORBA.Any(tcInternal.createSequenceTC(0, CORBA.TC_long), (1, 2))
        assert roundtrip(octets)._v == b"\x00\x01\xff"
        assert roundtrip(chars)._v == "tx"
        assert roundtrip(longs)._v == [1, 2]
        # Of an alias of octet or char omniORB takes only lists; the compact forms are
        # taken on writing, and rows holding them (as the bridge wrote them before) read.
        aliased = tcInternal.createSequenceTC(0, OCTET_ALIAS)
        text, variant = any_to_cell(CORBA.Any(aliased, b"\x01\x02"))
        assert V.read(variant.value, variant.metadata) == [1, 2]
        assert cell_to_any(text, (V.binary(b"\x01\x02"), V.EMPTY_METADATA))._v == [1, 2]
        letters = tcInternal.createSequenceTC(0, CHAR_ALIAS)
        assert roundtrip(CORBA.Any(letters, "ab"))._v == ["a", "b"]

    def test_nan(self) -> None:
        """NaN survives (it never compares equal, so check it by kind)."""
        back = roundtrip(CORBA.Any(CORBA.TC_double, math.nan))
        assert math.isnan(back._v) and back._t._d == D.DOUBLE

    def test_fixed_is_a_decimal_with_the_typecodes_scale(self) -> None:
        """fixed<10,2> is stored as a decimal of scale 2 and read back as a CORBA.fixed."""
        original = CORBA.Any(tcInternal.createFixedTC(10, 2), CORBA.fixed("12.5"))
        _, data, metadata = encode_any(original)
        assert str(V.read(data, metadata)) == "12.50"
        back = roundtrip(original)
        assert type(back._v) is type(original._v) and back._v == original._v
        for plain in (Decimal("12.5"), 12):  # Decimal and int are taken too
            assert str(roundtrip(CORBA.Any(original._t, plain))._v) == str(plain)

    def test_recursive_value(self) -> None:
        """A value of a recursive struct, three levels deep, round-trips."""
        node = node_tc()
        cls = node._d[1]
        original = CORBA.Any(node, cls(1, [cls(2, []), cls(3, [cls(4, [])])]))
        back = roundtrip(original)
        assert_same_any(back, original)
        assert back._v.kids[1].kids[0].v == 4

    def test_recursive_union_value(self) -> None:
        """A value of a recursive union round-trips."""
        tree = tree_tc()
        cls = tree._d[1]
        original = CORBA.Any(tree, cls(True, [cls(False, "a"), cls(True, [cls(False, "b")])]))
        assert_same_any(roundtrip(original), original)

    def test_union_without_a_member(self) -> None:
        """A discriminator that selects no member keeps just the discriminator."""
        union = union_tc("IDL:test/spark/Sparse:1.0", "Sparse", CORBA.TC_long,
                         [(1, "a", CORBA.TC_string)])
        original = CORBA.Any(union, union._d[1](7, None))
        _, data, metadata = encode_any(original)
        assert V.read(data, metadata) == {"_d": 7}
        assert_same_any(roundtrip(original), original)

    def test_structured_event_in_an_any(self) -> None:
        """A StructuredEvent carried in an Any (Table 2-2) round-trips as the stub's class."""
        original = CORBA.Any(N._tc_StructuredEvent, alarm(3))
        back = roundtrip(original)
        assert_same_any(back, original)
        assert type(back._v) is N.StructuredEvent and back._t is N._tc_StructuredEvent

    def test_registered_exception(self) -> None:
        """An exception whose stub is registered comes back as that class."""
        original = CORBA.Any(CosNotifyFilter._tc_InvalidConstraint,
                             CosNotifyFilter.InvalidConstraint(CosNotifyFilter.ConstraintExp(
                                 [N.EventType("d", "t")], "$n > 1")))
        back = roundtrip(original)
        assert_same_any(back, original)
        assert type(back._v) is CosNotifyFilter.InvalidConstraint

    def test_compact_typecode_values(self) -> None:
        """Without member names, structs go as arrays and enums as ordinals."""
        pair = struct_tc("IDL:test/spark/Pair:1.0", "Pair",
                         [("t", N._tc_EventType), ("c", CA._tc_ClientType)])
        compact = tcInternal.TypeCode_struct(tcInternal.getCompactDescriptor(pair._d))
        value = compact._d[1](N.EventType("D", "T"), CA.SEQUENCE_EVENT)
        text, data, metadata = encode_any(CORBA.Any(compact, value))
        assert V.read(data, metadata) == [["D", "T"], 2]
        back = cell_to_any(text, (data, metadata))
        assert same_typecode(back._t, compact)
        event_type, client_type = back._v._tuple()
        assert (event_type._tuple(), client_type._v) == (("D", "T"), 2)

    def test_queryable_shape(self) -> None:
        """Structs are objects by member name; enums are names; unions carry _d."""
        color = D.enum_tc("IDL:test/spark/Tint:1.0", "Tint", ["RED", "GREEN"])
        union = union_tc("IDL:test/spark/V:1.0", "V", CORBA.TC_long,
                         [(1, "code", CORBA.TC_long), (2, "text", CORBA.TC_string)])
        shape = struct_tc("IDL:test/spark/Shape:1.0", "Shape",
                          [("c", color), ("v", union),
                           ("xs", tcInternal.createSequenceTC(0, CORBA.TC_short))])
        value = shape._d[1](color._d[3][1], union._d[1](2, "hi"), [1, 2])
        _, data, metadata = encode_any(CORBA.Any(shape, value))
        assert V.read(data, metadata) == {"c": "GREEN", "v": {"_d": 2, "text": "hi"}, "xs": [1, 2]}


class TestWireValues:
    """Anys another omniORBpy process pushed, of IDL this process never compiled."""

    def test_every_wire_value_round_trips(self, wire_values: dict[str, Any], omniorb: Any
                                          ) -> None:
        """Each comes back the same, with the same text, and marshals as it arrived."""
        for name, value in wire_cases(wire_values).items():
            back = roundtrip(value, omniorb)
            assert_same_any(back, value)
            assert encode_typecode(back._t) == encode_typecode(value._t), name
            assert_same_any(cdr_trip(back), value)

    def test_pyspark_reads_every_wire_cell(self, wire_values: dict[str, Any], omniorb: Any
                                           ) -> None:
        """pyspark's reader takes every cell; the struct's members are its keys."""
        for value in wire_cases(wire_values).values():
            VariantVal(*encode_any(value, omniorb)[1:]).toJson()
        _, data, metadata = encode_any(wire_values["kinds"], omniorb)
        kinds = V.read(data, metadata)
        assert kinds["ull"] == 2**64 - 1 and kinds["d"] == -math.inf
        assert str(kinds["money"]) == "12.50" and kinds["quad"] == b"\x01\x02\x03\x04"
        assert kinds["levels"] == ["high", "low"] and kinds["nil"] is None

    def test_stub_types_come_back_in_stub_classes(self, wire_values: dict[str, Any],
                                                  omniorb: Any) -> None:
        """Types this process has stubs for (StructuredEvent, UtcT) decode to those classes."""
        event = roundtrip(wire_values["event"], omniorb)
        assert type(event._v) is N.StructuredEvent
        inner = roundtrip(wire_values["kinds"], omniorb)._v.inner
        assert type(inner._v) is TimeBase.UtcT and inner._t is TimeBase._tc_UtcT

    def test_unknown_types_compare_as_omniorb_values(self, wire_values: dict[str, Any]) -> None:
        """Enum items equal the received ones; unions select the same member."""
        original = wire_values["by_level_default"]._v
        back = roundtrip(wire_values["by_level_default"])._v
        assert back._d == original._d and back.other == original.other == 1.5
        assert roundtrip(wire_values["oops"])._v.severity == wire_values["oops"]._v.severity


class TestConversionErrors:
    """Values that cannot be stored raise ConversionError, with nothing half-written."""

    @pytest.mark.parametrize("typecode, value", [
        (CORBA.TC_long, 2**31), (CORBA.TC_ulonglong, -1), (CORBA.TC_short, "1"),
        (CORBA.TC_string, 5), (tcInternal.createFixedTC(3, 1), CORBA.fixed("123.4")),
        (tcInternal.createFixedTC(3, 1), CORBA.fixed("1.25")),
        (tcInternal.createSequenceTC(0, CORBA.TC_long), 7), (CORBA.TC_char, "ab"),
        (tcInternal.createStringTC(2), "abc"), (CORBA.TC_float, 1e39),
        (tcInternal.createSequenceTC(0, CORBA.TC_octet), [256]),
        (tcInternal.createArrayTC(2, CORBA.TC_long), [1]),
        (CORBA.TC_longdouble, 1.5),
    ])
    def test_value_outside_its_typecode(self, typecode: Any, value: Any) -> None:
        """A value that does not fit its TypeCode (or a kind without form) is refused."""
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
        assert cell_to_any(text, variant, orb)._v == "ref"

    def test_reference_through_the_orb(self, wire_values: dict[str, Any], omniorb: Any) -> None:
        """A reference from the wire is stored as its IOR and read back equivalent."""
        text, variant = any_to_cell(wire_values["ref"], omniorb)
        assert V.read(variant.value, variant.metadata).startswith("IOR:")
        assert cell_to_any(text, variant, omniorb)._v._is_equivalent(wire_values["ref"]._v)


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
        assert type(back) is N.StructuredEvent
        assert same_value(EVENT, back, event)

    def test_event_from_the_wire(self, wire_values: dict[str, Any]) -> None:
        """A StructuredEvent as a peer sent it (its property of an unknown type) converts."""
        event = wire_values["event"]._v
        back = row_to_event(event_to_row(event, ARRIVAL))
        assert same_value(EVENT, back, event)
        assert resolve_qos(back, ARRIVAL) == (3, None)

    def test_row_layout(self) -> None:
        """A row is the nine columns of event_schema(), in order."""
        row = event_to_row(alarm(7), ARRIVAL)
        assert row[:3] == ("Telecom", "CommunicationsAlarm", "alarm-7")
        assert [p[0] for p in row[4]] == ["severity", "n", "ne", "counter", "amount", "where"]
        assert [p[1] for p in row[4]][1:5] == ["long", "string", "ulonglong",
                                               '{"kind":"fixed","digits":8,"scale":2}']
        assert row[6] == datetime.fromtimestamp(ARRIVAL, UTC)
        assert row[7:] == (0, None)

    def test_property_order_and_repeats_are_kept(self) -> None:
        """Repeated names and their order survive (a map would lose them)."""
        event = alarm(1)
        event.filterable_data = [N.Property("x", CORBA.Any(CORBA.TC_long, 2)),
                                 N.Property("a", CORBA.Any(CORBA.TC_string, "s")),
                                 N.Property("x", CORBA.Any(CORBA.TC_short, 1))]
        back = row_to_event(event_to_row(event, ARRIVAL))
        assert same_value(EVENT, back, event)
        assert [(p.name, p.value._v) for p in back.filterable_data] == [("x", 2), ("a", "s"),
                                                                         ("x", 1)]

    def test_row_from_mapping(self) -> None:
        """A row given as a mapping of column names converts too."""
        from spark_bridge.schema import COLUMNS

        row = dict(zip(COLUMNS, event_to_row(alarm(2), ARRIVAL), strict=True))
        row["filterable_data"] = [dict(zip(("name", "type", "value"), p, strict=True))
                                  for p in row["filterable_data"]]
        assert same_value(EVENT, row_to_event(row), alarm(2))

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

    def test_header_timeout_zero_clears_the_default(self) -> None:
        """A header Timeout of 0 is "no timeout" and overrides the proxy's (Table 2-4), as
        the channel's own _apply_header_field has it (review 128: the default was kept)."""
        event = alarm(1, [N.Property("Timeout", timet(0))])
        assert resolve_qos(event, ARRIVAL, 4, 2.0) == (4, None)
        stop = TimeBase.UtcT(seconds_to_timet(ARRIVAL + 10), 0, 0, 0)
        event.header.variable_header.append(
            N.Property("StopTime", CORBA.Any(TimeBase._tc_UtcT, stop)))
        assert resolve_qos(event, ARRIVAL, 4, 2.0)[1] == pytest.approx(ARRIVAL + 10)

    def test_stop_time_is_absolute(self) -> None:
        """StopTime (UtcT) sets the expiry, and the earlier of StopTime and Timeout wins."""
        stop = TimeBase.UtcT(seconds_to_timet(ARRIVAL + 10), 0, 0, 0)
        utc = CORBA.Any(TimeBase._tc_UtcT, stop)
        assert resolve_qos(alarm(1, [N.Property("StopTime", utc)]), ARRIVAL) == \
            (0, pytest.approx(ARRIVAL + 10))
        event = alarm(1, [N.Property("StopTime", utc), N.Property("Timeout", timet(3))])
        assert resolve_qos(event, ARRIVAL)[1] == pytest.approx(ARRIVAL + 3)

    @pytest.mark.parametrize("field", [
        N.Property("StopTime", CORBA.Any(TimeBase._tc_UtcT, TimeBase.UtcT(2**64 - 1, 0, 0, 0))),
        N.Property("Timeout", CORBA.Any(TimeBase._tc_TimeT, 2**64 - 1))])
    def test_an_expiry_past_year_9999_is_never(self, field: Any) -> None:
        """A StopTime or Timeout of 2**64-1 (~year 60000, past Spark's timestamps) gives
        a NULL expiry_time, never expires (review 128: a bare ValueError)."""
        assert resolve_qos(alarm(1, [field]), ARRIVAL)[1] > 1e12
        assert row_qos(event_to_row(alarm(1, [field]), ARRIVAL)) == (ARRIVAL, 0, None)
        last = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)  # a whole second: exact
        assert event_to_row(alarm(1), ARRIVAL, expiry=last.timestamp())[8] == last
        assert event_to_row(alarm(1), ARRIVAL, expiry=last.timestamp() + 1)[8] is None


SPARSE = ('{"kind":"union","id":"IDL:test/spark/W:1.0","name":"W","discriminator":"long",'
          '"default":-1,"members":[[1,"a","long"]]}')


def _object(*fields: tuple[str, bytes]) -> tuple[bytes, bytes]:
    writer = V.Writer()
    return writer.object(list(fields)), writer.metadata()


class TestBadCells:
    """Cells that do not describe a value raise ConversionError or TypeTextError."""

    @pytest.mark.parametrize("type_text, cell", [
        ('{"kind":"struct","id":"IDL:test/spark/P:1.0","name":"P","members":[["a","long"]]}',
         (V.string("not an object"), V.EMPTY_METADATA)),
        ('{"kind":"struct","id":"IDL:test/spark/P:1.0","name":"P","members":[["a","long"]]}',
         _object(("b", V.int32(1)))),
        ("long", (V.string("x"), V.EMPTY_METADATA)),
        ("double", (V.Writer().array([]), V.EMPTY_METADATA)),
        ('{"kind":"enum","id":"IDL:test/spark/Q:1.0","name":"Q","members":["A"]}',
         (V.string("B"), V.EMPTY_METADATA)),
        ('{"kind":"fixed","digits":5,"scale":2}', (V.decimal(1234, 3, 5), V.EMPTY_METADATA)),
        (SPARSE, _object(("_d", V.int32(2)), ("a", V.int32(1)))),
        (SPARSE, _object(("_d", V.int32(1)), ("b", V.int32(1)))),
        ("any", _object(("type", V.string("long")))),
        ("long", (b"", V.EMPTY_METADATA)),
    ])
    def test_mismatched_variant(self, type_text: str, cell: tuple[bytes, bytes]) -> None:
        """A VARIANT that does not fit the TypeCode raises ConversionError."""
        with pytest.raises(ConversionError):
            cell_to_any(type_text, cell)
