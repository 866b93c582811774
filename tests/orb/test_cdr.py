"""CDR encoding and decoding of values (CORBA 3.0 section 15.3)."""

from __future__ import annotations

import math
import struct
from decimal import Context, Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cosnotify.orb import CORBA, cdr, cdr_compile, tc
from cosnotify.orb import typecode as T
from cosnotify.orb.cdr import Codec, Decoder, Encoder, Minor
from cosnotify.orb.cdr_core import binary128_to_float, float_to_binary128
from cosnotify.orb.ior import IOR, make_ior
from tests.strategies import typed_values, values_for

BE, LE = Codec(False), Codec(True)
LATIN1 = Codec(True, cdr.ISO_8859_1)
POINT = tc.struct_tc("IDL:test/Point:1.0", "Point", [("x", CORBA.TC_long), ("y", CORBA.TC_double)])
COLOUR = tc.enum_tc("IDL:test/Colour:1.0", "Colour", ["red", "green", "blue"])
SHAPE = tc.union_tc("IDL:test/Shape:1.0", "Shape", CORBA.TC_long,
                    [(1, "p", POINT), (2, "s", CORBA.TC_string)], -1)


def roundtrip(t: T.TypeCode, value: Any, codec: Codec = LE, offset: int = 0) -> Any:
    return cdr.decode(t, cdr.encode(t, value, codec, offset=offset), codec, offset=offset, exact=True)


def decode_three_ways(t: T.TypeCode, data: bytes, codec: Codec = LE) -> Any:
    """Decode whole, from a copy with trailing junk, and from a memoryview; all must agree."""
    whole = cdr.decode(t, data, codec, exact=True)
    assert cdr.decode(t, data + b"\xab" * 9, codec) == whole
    assert cdr.decode(t, memoryview(bytearray(data)), codec, exact=True) == whole
    return whole


def marshal_error(t: T.TypeCode, data: bytes, codec: Codec = LE) -> int:
    """Decode bytes that must be rejected; return the MARSHAL minor code."""
    with pytest.raises(CORBA.MARSHAL) as info:
        cdr.decode(t, data, codec)
    return info.value.minor


class TestPrimitives:
    def test_integer_layout_both_byte_orders(self) -> None:
        """A long is 4 octets in the stream's byte order."""
        assert cdr.encode(CORBA.TC_long, -2, BE) == b"\xff\xff\xff\xfe"
        assert cdr.encode(CORBA.TC_long, -2, LE) == b"\xfe\xff\xff\xff"
        assert cdr.encode(CORBA.TC_ulonglong, 1, BE) == bytes(7) + b"\x01"

    def test_alignment_is_relative_to_the_stream_start(self) -> None:
        """A double at stream offset 3 is preceded by 5 octets of padding (15.3.1.1)."""
        encoder = Encoder(BE, offset=3)
        encoder.write_octet(7)
        encoder.write_double(1.0)
        assert encoder.getvalue() == b"\x07" + bytes(4) + struct.pack(">d", 1.0)
        decoder = Decoder(encoder.getvalue(), BE, offset=3)
        assert (decoder.read_octet(), decoder.read_double()) == (7, 1.0)

    def test_struct_of_primitives_packs_padding(self) -> None:
        """short, long, octet, double lay out with padding before the long and the double."""
        t = tc.struct_tc("IDL:test/P:1.0", "P", [("a", CORBA.TC_short), ("b", CORBA.TC_long),
                                                  ("c", CORBA.TC_octet), ("d", CORBA.TC_double)])
        value = t.python_class()(1, 2, 3, 4.0)
        data = cdr.encode(t, value, BE)
        assert data == struct.pack(">h2xiB7xd", 1, 2, 3, 4.0)
        assert decode_three_ways(t, data, BE) == value

    def test_boolean_octet_must_be_zero_or_one(self) -> None:
        """A boolean octet of 2 is MARSHAL, not True."""
        assert cdr.decode(CORBA.TC_boolean, b"\x01") is True
        assert marshal_error(CORBA.TC_boolean, b"\x02") == Minor.INVALID_BOOLEAN
        assert marshal_error(tc.sequence_tc(0, CORBA.TC_boolean), b"\x02\0\0\0\x01\x07") \
            == Minor.INVALID_BOOLEAN

    @pytest.mark.parametrize("value", [0.0, -0.0, 1.5, -2.25e300, 5e-324, 2.2250738585072014e-308,
                                       math.inf, -math.inf, 1e-310])
    def test_long_double_is_binary128(self, value: float) -> None:
        """long double travels as IEEE binary128 and comes back as the same float."""
        bits = float_to_binary128(value)
        back = binary128_to_float(bits)
        assert back == value and math.copysign(1, back) == math.copysign(1, value)
        assert roundtrip(CORBA.TC_longdouble, value, BE, offset=4) == value

    def test_long_double_bit_pattern(self) -> None:
        """1.0 is sign 0, exponent 0x3fff, fraction 0 in binary128."""
        assert cdr.encode(CORBA.TC_longdouble, 1.0, BE) == b"\x3f\xff" + bytes(14)
        assert math.isnan(binary128_to_float(float_to_binary128(math.nan)))
        assert binary128_to_float((0x7FFE << 112) | 1) == math.inf  # too big for a double

    def test_truncated_primitive_is_marshal(self) -> None:
        """Three octets are not a long."""
        assert marshal_error(CORBA.TC_long, b"\x01\x02\x03") == Minor.PASS_END


class TestStrings:
    def test_string_layout(self) -> None:
        """A string is a ulong length counting the NUL, the octets, and the NUL."""
        assert cdr.encode(CORBA.TC_string, "ab", BE) == b"\0\0\0\x03ab\0"

    def test_utf8_by_default_latin1_when_negotiated(self) -> None:
        """'é' is two octets in UTF-8 and one in ISO-8859-1."""
        assert cdr.encode(CORBA.TC_string, "é", LE) == b"\x03\0\0\0\xc3\xa9\0"
        assert cdr.encode(CORBA.TC_string, "é", LATIN1) == b"\x02\0\0\0\xe9\0"
        assert roundtrip(CORBA.TC_string, "é€", LE) == "é€"

    def test_unrepresentable_character_is_data_conversion(self) -> None:
        """'€' has no ISO-8859-1 form: DATA_CONVERSION, not BAD_PARAM."""
        with pytest.raises(CORBA.DATA_CONVERSION):
            cdr.encode(CORBA.TC_string, "€", LATIN1)
        with pytest.raises(CORBA.DATA_CONVERSION):
            cdr.encode(CORBA.TC_char, "é", LE)  # a UTF-8 char is one octet: ASCII only
        assert roundtrip(CORBA.TC_char, "é", LATIN1) == "é"

    def test_invalid_utf8_is_marshal(self) -> None:
        """Octets that are not UTF-8 are MARSHAL with the bad-text minor code."""
        assert marshal_error(CORBA.TC_string, b"\x02\0\0\0\xff\0") == Minor.INVALID_CHAR_DATA
        assert marshal_error(CORBA.TC_char, b"\xe9") == Minor.INVALID_CHAR_DATA

    def test_missing_nul_and_zero_length_are_rejected(self) -> None:
        """A string must end with NUL; length 0 has no room for one."""
        assert marshal_error(CORBA.TC_string, b"\x02\0\0\0ab") == Minor.STRING_NOT_NUL_TERMINATED
        assert marshal_error(CORBA.TC_string, b"\0\0\0\0") == Minor.STRING_NOT_NUL_TERMINATED

    def test_length_is_checked_before_allocating(self) -> None:
        """A string claiming 4 GiB in an 8-octet buffer fails at once."""
        assert marshal_error(CORBA.TC_string, b"\xff\xff\xff\xffabcd") == Minor.PASS_END

    def test_bounded_string(self) -> None:
        """string<3> accepts 3 characters and rejects 4, both ways."""
        bounded = tc.string_tc(3)
        assert roundtrip(bounded, "abc") == "abc"
        with pytest.raises(CORBA.BAD_PARAM):
            cdr.encode(bounded, "abcd")
        assert marshal_error(bounded, cdr.encode(CORBA.TC_string, "abcd")) == Minor.STRING_TOO_LONG

    def test_embedded_nul_is_bad_param(self) -> None:
        """Strings cannot carry NUL."""
        with pytest.raises(CORBA.BAD_PARAM):
            cdr.encode(CORBA.TC_string, "a\0b")


class TestWideCharacters:
    def test_giop12_wchar_and_wstring_are_octet_counted(self) -> None:
        """GIOP 1.2: wchar is an octet count and UTF-16BE; wstring a ulong octet count, no NUL."""
        codec = Codec(True, giop=(1, 2))
        assert cdr.encode(CORBA.TC_wchar, "é", codec) == b"\x02\x00\xe9"
        assert cdr.encode(CORBA.TC_wstring, "hé", codec) == b"\x04\0\0\0\x00h\x00\xe9"
        assert roundtrip(CORBA.TC_wstring, "h€𝄞", codec) == "h€𝄞"

    def test_giop12_decoding_honours_a_byte_order_mark(self) -> None:
        """A little-endian BOM switches the UTF-16 byte order of that one value."""
        codec = Codec(False, giop=(1, 2))
        assert cdr.decode(CORBA.TC_wstring, b"\0\0\0\x06\xff\xfeh\x00i\x00", codec) == "hi"
        assert cdr.decode(CORBA.TC_wstring, b"\0\0\0\x06\xfe\xff\x00h\x00i", codec) == "hi"
        assert cdr.decode(CORBA.TC_wchar, b"\x04\xff\xfe\xe9\x00", codec) == "é"

    def test_giop11_wstring_counts_characters_with_the_nul(self) -> None:
        """GIOP 1.1: wstring length is in 2-octet units including NUL; wchar is 2 octets."""
        codec = Codec(False, giop=(1, 1))
        assert cdr.encode(CORBA.TC_wstring, "hi", codec) == b"\0\0\0\x03\x00h\x00i\x00\x00"
        assert cdr.encode(CORBA.TC_wchar, "é", Codec(True, giop=(1, 1))) == b"\xe9\x00"
        assert roundtrip(CORBA.TC_wstring, "", codec) == ""
        assert roundtrip(CORBA.TC_wstring, "h€𝄞", Codec(True, giop=(1, 1))) == "h€𝄞"

    def test_giop10_has_no_wide_characters(self) -> None:
        """wchar over GIOP 1.0 is MARSHAL minor 5 both ways (CORBA 3.0 15.3.1.6)."""
        codec = Codec(True, giop=(1, 0))
        with pytest.raises(CORBA.MARSHAL) as sent:
            cdr.encode(CORBA.TC_wchar, "a", codec)
        assert sent.value.minor == CORBA.OMGVMCID | 5
        assert marshal_error(CORBA.TC_wstring, b"\x01\0\0\0\0\0", codec) == Minor.WCHAR_GIOP10

    def test_no_negotiated_wchar_set(self) -> None:
        """Without a wchar code set, sending wchar is BAD_PARAM and receiving it MARSHAL."""
        codec = Codec(True, cdr.ISO_8859_1, 0)
        with pytest.raises(CORBA.BAD_PARAM):
            cdr.encode(CORBA.TC_wchar, "a", codec)
        assert marshal_error(CORBA.TC_wchar, b"\x02\0a", codec) == Minor.WCHAR_TCS_UNKNOWN

    def test_bad_utf16(self) -> None:
        """A lone surrogate or an odd octet count is MARSHAL."""
        codec = Codec(False, giop=(1, 2))
        assert marshal_error(CORBA.TC_wstring, b"\0\0\0\x02\xd8\x00", codec) == Minor.INVALID_CHAR_DATA
        assert marshal_error(CORBA.TC_wstring, b"\0\0\0\x03\x00a\x00", codec) == Minor.INVALID_WCHAR


class TestFixed:
    @pytest.mark.parametrize(("digits", "scale", "value", "octets"), [
        (5, 2, Decimal("123.45"), "12345c"),
        (5, 2, Decimal("-1.5"), "00150d"),
        (4, 2, Decimal("12.34"), "01234c"),   # even digits: a leading zero nibble
        (1, 0, Decimal(0), "0c"),
        (3, 3, Decimal("-0.001"), "001d"),
        (31, 0, Decimal("9" * 31), "9" * 31 + "c"),
        (6, 1, Decimal("12.35"), "0000124c"),  # rounded half-even to 12.4
    ])
    def test_packed_bcd(self, digits: int, scale: int, value: Decimal, octets: str) -> None:
        """fixed is packed BCD with a trailing sign nibble, C positive, D negative (15.3.2.8)."""
        t = tc.fixed_tc(digits, scale)
        data = cdr.encode(t, value)
        assert data.hex() == octets
        expected = value.quantize(Decimal(1).scaleb(-scale), context=Context(prec=50))
        assert cdr.decode(t, data) == expected

    def test_too_many_digits_is_bad_param(self) -> None:
        """1000 does not fit fixed<3,0>."""
        with pytest.raises(CORBA.BAD_PARAM):
            cdr.encode(tc.fixed_tc(3, 0), Decimal(1000))

    def test_bad_nibbles_are_marshal(self) -> None:
        """A non-decimal digit or sign nibble is MARSHAL."""
        t = tc.fixed_tc(3, 0)
        assert marshal_error(t, bytes.fromhex("1a3c")) == Minor.INVALID_FIXED
        assert marshal_error(t, bytes.fromhex("1231")) == Minor.INVALID_FIXED
        assert marshal_error(tc.fixed_tc(2, 0), bytes.fromhex("112c")) == Minor.INVALID_FIXED


class TestConstructed:
    def test_struct_sequence_enum_union(self) -> None:
        """A struct holding a sequence of unions and an enum survives the round trip."""
        holder = tc.struct_tc("IDL:test/H:1.0", "H", [
            ("shapes", tc.sequence_tc(0, SHAPE)), ("colour", COLOUR),
            ("raw", tc.sequence_tc(0, CORBA.TC_octet)), ("grid", tc.array_tc(2, CORBA.TC_short))])
        shape = SHAPE.python_class()
        value = holder.python_class()(
            [shape(1, POINT.python_class()(3, 4.5)), shape(2, "two"), shape(7, None)],
            COLOUR.enum_items()[2], b"\x00\xff", [5, -6])
        for codec in (BE, LE):
            for offset in range(8):
                assert roundtrip(holder, value, codec, offset) == value

    def test_union_implicit_default_has_no_member(self) -> None:
        """A discriminator no label names (and no default member) marshals alone."""
        assert cdr.encode(SHAPE, SHAPE.python_class()(9, None), BE) == b"\0\0\0\x09"
        assert cdr.decode(SHAPE, b"\0\0\0\x09", BE)._d == 9

    def test_bad_enum_ordinal_is_marshal(self) -> None:
        """An enum ordinal past the last member is MARSHAL."""
        assert marshal_error(COLOUR, b"\x03\0\0\0") == Minor.INVALID_ENUM

    def test_sequence_longer_than_the_data_is_rejected_before_allocating(self) -> None:
        """A sequence<long> of 2**30 elements in 8 octets fails at once."""
        assert marshal_error(tc.sequence_tc(0, CORBA.TC_long), b"\0\0\0\x40abcd", BE) \
            == Minor.SEQUENCE_TOO_LONG
        assert marshal_error(tc.sequence_tc(0, POINT), b"\xff\xff\xff\x7f") == Minor.SEQUENCE_TOO_LONG

    def test_bounded_sequence(self) -> None:
        """sequence<long, 2> rejects 3 elements both ways."""
        bounded = tc.sequence_tc(2, CORBA.TC_long)
        with pytest.raises(CORBA.BAD_PARAM):
            cdr.encode(bounded, [1, 2, 3])
        assert marshal_error(bounded, cdr.encode(tc.sequence_tc(0, CORBA.TC_long), [1, 2, 3])) \
            == Minor.SEQUENCE_TOO_LONG

    def test_accepted_python_forms(self) -> None:
        """Tuples for sequences, bytes for octet arrays, str for char sequences."""
        assert roundtrip(tc.sequence_tc(0, CORBA.TC_long), (1, 2)) == [1, 2]
        assert roundtrip(tc.array_tc(2, CORBA.TC_octet), b"ab") == [97, 98]
        assert roundtrip(tc.sequence_tc(0, CORBA.TC_char), "hi") == ["h", "i"]
        assert roundtrip(tc.sequence_tc(0, CORBA.TC_octet), bytearray(b"xy")) == b"xy"

    def test_bad_value_names_the_member_path(self) -> None:
        """BAD_PARAM says which member did not fit, and nothing is left written."""
        outer = tc.struct_tc("IDL:test/O:1.0", "O", [("points", tc.sequence_tc(0, POINT))])
        bad = outer.python_class()([POINT.python_class()(1, 2.0), POINT.python_class()("x", 2.0)])
        encoder = Encoder(LE)
        encoder.write_ulong(5)
        with pytest.raises(CORBA.BAD_PARAM) as info:
            encoder.write(outer, bad)
        assert "points[1].x" in info.value.detail
        assert encoder.getvalue() == b"\x05\0\0\0"

    def test_exception_values(self) -> None:
        """Exceptions marshal like structs and decode to their class."""
        oops = tc.exception_tc("IDL:test/Oops:1.0", "Oops", [("why", CORBA.TC_string)])
        value = roundtrip(oops, oops.python_class()("because"))
        assert isinstance(value, CORBA.UserException) and value.why == "because"


class TestAny:
    def test_any_carries_its_typecode(self) -> None:
        """An Any is its TypeCode then its value."""
        assert cdr.encode(CORBA.TC_any, CORBA.Any(CORBA.TC_long, 7), BE) == b"\0\0\0\x03\0\0\0\x07"

    def test_nested_anys(self) -> None:
        """Anys holding structs holding Anys round-trip, TypeCodes compared with equal()."""
        inner = CORBA.Any(POINT, POINT.python_class()(1, 2.0))
        holder = tc.struct_tc("IDL:test/AnyHolder:1.0", "AnyHolder", [("a", CORBA.TC_any)])
        value = CORBA.Any(holder, holder.python_class()(CORBA.Any(CORBA.TC_any, inner)))
        back = roundtrip(CORBA.TC_any, value, BE, offset=5)
        assert back == value
        assert back.typecode().equal(holder)

    def test_any_depth_limit(self) -> None:
        """Anys nested past max_depth are MARSHAL, not a Python recursion error."""
        with pytest.raises(CORBA.MARSHAL) as info:
            cdr.decode(CORBA.TC_any, _nested_any_bytes(70))
        assert info.value.minor == Minor.TOO_DEEP
        assert cdr.decode(CORBA.TC_any, _nested_any_bytes(10)).typecode() is CORBA.TC_any

    def test_encoding_too_deep_is_bad_param(self) -> None:
        """Encoding Anys nested past the limit is refused."""
        value: Any = CORBA.Any(CORBA.TC_long, 1)
        for _ in range(70):
            value = CORBA.Any(CORBA.TC_any, value)
        with pytest.raises(CORBA.BAD_PARAM):
            cdr.encode(CORBA.TC_any, value)

    def test_any_of_a_received_struct_reuses_one_typecode(self) -> None:
        """Decoding the same struct TypeCode twice yields the very same TypeCode object."""
        data = cdr.encode(CORBA.TC_any, CORBA.Any(POINT, POINT.python_class()(1, 2.0)))
        first, second = cdr.decode(CORBA.TC_any, data), cdr.decode(CORBA.TC_any, data)
        assert first.typecode() is second.typecode()

    def test_any_of_fixed_reuses_one_typecode(self) -> None:
        """A fixed TypeCode (parameters inline, no encapsulation) is reused too, so its
        compiled decoder is found by identity; the value is exact."""
        fixed = tc.fixed_tc(8, 2)
        data = cdr.encode(CORBA.TC_any, CORBA.Any(fixed, Decimal("-123456.78")))
        first, second = cdr.decode(CORBA.TC_any, data), cdr.decode(CORBA.TC_any, data)
        assert first.typecode() is second.typecode()
        assert first.typecode().equal(fixed)
        assert first.value() == Decimal("-123456.78")

    def test_truncated_fixed_typecode_is_marshal(self) -> None:
        """A fixed TypeCode cut inside its digits/scale parameters is MARSHAL."""
        data = cdr.encode(CORBA.TC_any, CORBA.Any(tc.fixed_tc(8, 2), Decimal("1.25")), LE)
        assert marshal_error(CORBA.TC_any, data[:6]) == Minor.PASS_END
        bad_scale = data[:6] + struct.pack("<h", 9) + data[8:]  # scale 9 > digits 8
        assert marshal_error(CORBA.TC_any, bad_scale) == Minor.INVALID_TYPECODE


def _nested_any_bytes(depth: int) -> bytes:
    return b"\x0b\0\0\0" * depth + b"\x03\0\0\0\x01\0\0\0"


class TestObjectReferences:
    def test_default_hooks_use_ior_values_and_none_for_nil(self) -> None:
        """By default an objref decodes to its IOR, and None marshals as the nil IOR."""
        ref = make_ior("IDL:test/Thing:1.0", "host", 2809, b"key")
        objref = tc.objref_tc("IDL:test/Thing:1.0", "Thing")
        assert roundtrip(objref, ref) == ref
        assert cdr.encode(objref, None, BE) == b"\0\0\0\x01\0\0\0\0\0\0\0\0"
        assert roundtrip(objref, None) is None

    def test_custom_hooks(self) -> None:
        """objref_factory sees the IOR and the expected id; objref_encoder maps objects."""
        objref = tc.objref_tc("IDL:test/Thing:1.0", "Thing")
        ref = make_ior("IDL:test/Thing:1.0", "host", 2809, b"key")

        class Stub:
            pass

        data = cdr.encode(objref, Stub(), objref_encoder=lambda value: ref)
        seen: list[tuple[IOR, str]] = []
        cdr.decode(objref, data, objref_factory=lambda i, rid: seen.append((i, rid)))
        assert seen == [(ref, "IDL:test/Thing:1.0")]

    def test_stub_with_delegate_ior(self) -> None:
        """An object whose _NP_delegate has an ior marshals as that IOR."""
        ref = make_ior("IDL:test/Thing:1.0", "host", 2809, b"key")

        class Delegate:
            ior = ref

        class Stub:
            _NP_delegate = Delegate()

        assert roundtrip(CORBA.TC_Object, Stub()) == ref
        with pytest.raises(CORBA.BAD_PARAM):
            cdr.encode(CORBA.TC_Object, object())


class TestRoundTrip:
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(typed_values, st.booleans(), st.integers(0, 7), st.data())
    def test_every_typecode_both_orders_every_offset(self, pair: tuple[T.TypeCode, Any],
                                                     little: bool, offset: int,
                                                     data: st.DataObject) -> None:
        """decode(encode(v)) == v for random TypeCodes, byte orders and start offsets 0..7."""
        t, value = pair
        codec = Codec(little)
        try:
            encoded = cdr.encode(t, value, codec, offset=offset)
        except CORBA.DATA_CONVERSION:  # a non-ASCII char under UTF-8: try ISO-8859-1
            codec = Codec(little, cdr.ISO_8859_1)
            try:
                encoded = cdr.encode(t, value, codec, offset=offset)
            except CORBA.DATA_CONVERSION:
                assume(False)
                raise
        decoded = cdr.decode(t, encoded, codec, offset=offset, exact=True)
        assert decoded == value
        junk = data.draw(st.binary(max_size=9))
        assert cdr.decode(t, encoded + junk, codec, offset=offset) == value
        assert cdr.encode(t, decoded, codec, offset=offset) == encoded

    @settings(max_examples=60, deadline=None)
    @given(st.data())
    def test_streams_of_several_values(self, data: st.DataObject) -> None:
        """Values written one after another read back in order from one stream."""
        pairs = data.draw(st.lists(st.sampled_from([CORBA.TC_octet, CORBA.TC_double, CORBA.TC_string,
                                                    POINT, CORBA.TC_short, CORBA.TC_longdouble])
                                   .flatmap(lambda t: st.tuples(st.just(t), values_for(t))),
                                   min_size=1, max_size=6))
        offset = data.draw(st.integers(0, 7))
        encoder = Encoder(BE, offset=offset)
        for t, value in pairs:
            encoder.write(t, value)
        decoder = Decoder(encoder.getvalue(), BE, offset=offset)
        assert [decoder.read(t) for t, _ in pairs] == [v for _, v in pairs]
        assert decoder.at_end()


class TestRandomInput:
    @settings(max_examples=200, deadline=None)
    @given(st.sampled_from([POINT, SHAPE, COLOUR, CORBA.TC_any, CORBA.TC_string,
                            CORBA.TC_TypeCode, tc.sequence_tc(0, SHAPE), CORBA.TC_Object,
                            CORBA.TC_wstring, tc.fixed_tc(5, 2), CORBA.TC_longdouble]),
           st.binary(max_size=64), st.booleans())
    def test_random_bytes_raise_only_marshal(self, t: T.TypeCode, data: bytes, little: bool) -> None:
        """Arbitrary octets either decode or raise MARSHAL, nothing else."""
        try:
            cdr.decode(t, data, Codec(little))
        except CORBA.MARSHAL:
            pass

    @settings(max_examples=200, deadline=None)
    @given(typed_values, st.data())
    def test_mutated_encodings_raise_only_marshal(self, pair: tuple[T.TypeCode, Any],
                                                  data: st.DataObject) -> None:
        """Flipping, cutting or extending valid CDR never raises anything but MARSHAL."""
        t, value = pair
        codec = Codec(True, cdr.ISO_8859_1)
        try:
            encoded = bytearray(cdr.encode(t, value, codec))
        except CORBA.DATA_CONVERSION:
            assume(False)
            raise
        # Positions are drawn as fractions: generated repository ids vary in length.
        for _ in range(data.draw(st.integers(1, 4))):
            where = data.draw(st.floats(0, 1))
            if encoded and data.draw(st.booleans()):
                encoded[int(where * (len(encoded) - 1))] = data.draw(st.integers(0, 255))
            else:
                encoded = encoded[:int(where * len(encoded))]
        try:
            cdr.decode(t, bytes(encoded), codec)
        except CORBA.MARSHAL:
            pass


class TestStreams:
    def test_encapsulation_restarts_alignment(self) -> None:
        """After the byte-order octet, a ulong in an encapsulation is at offset 4 (15.3.3)."""
        encoder = Encoder.encapsulation(BE)
        encoder.write_ulong(9)
        assert encoder.getvalue() == b"\x00\0\0\0\0\0\0\x09"
        decoder = Decoder.from_encapsulation(b"\x01\0\0\0\x09\0\0\0")
        assert decoder.codec.little_endian and decoder.read_ulong() == 9

    def test_bad_encapsulation_byte_order(self) -> None:
        """A byte-order octet other than 0 or 1 is MARSHAL."""
        with pytest.raises(CORBA.MARSHAL):
            Decoder.from_encapsulation(b"\x05\0\0\0")

    def test_exact_rejects_leftovers(self) -> None:
        """decode(exact=True) refuses trailing octets."""
        with pytest.raises(CORBA.MARSHAL) as info:
            cdr.decode(CORBA.TC_octet, b"\x01\x02", exact=True)
        assert info.value.minor == Minor.TRAILING_DATA

    def test_marshallers_are_compiled_once_per_layout(self) -> None:
        """A TypeCode equal to one already compiled (built afresh) reuses its functions."""
        def build() -> T.TypeCode:
            return tc.struct_tc("IDL:test/Fresh:1.0", "Fresh", [("s", CORBA.TC_string)])

        first, second = build(), build()
        assert first is not second
        assert cdr_compile.encoder_for(first, LE) is cdr_compile.encoder_for(second, LE)
        assert cdr_compile.decoder_for(first, BE) is cdr_compile.decoder_for(second, BE)

    def test_tell_and_pos(self) -> None:
        """tell() is the stream offset, pos the index into the given data."""
        decoder = Decoder(b"\0" * 16, BE, pos=2, offset=12)
        assert (decoder.pos, decoder.tell()) == (2, 14)
        decoder.read_ulong()
        assert (decoder.pos, decoder.tell()) == (8, 20)
