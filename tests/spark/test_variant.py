"""The VARIANT binary codec, checked against pyspark's own (pure Python) reader and writer.

No SparkSession: ``VariantVal.toPython`` and ``VariantVal.parseJson`` are the
reference implementation shipped with pyspark.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql.types import VariantVal

from spark_bridge import variant as V

_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=80)

#: Plain JSON-like values (what both implementations agree on).
plain_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
              st.floats(allow_nan=False, allow_infinity=False), _text),
    lambda children: st.one_of(
        st.lists(children, max_size=6),
        st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,5}", fullmatch=True), children,
                        max_size=6)),
    max_leaves=20)


def encode(value: Any, w: V.Writer) -> bytes:
    """A plain value written with the smallest fitting types."""
    if value is None:
        return V.null()
    if isinstance(value, bool):
        return V.boolean(value)
    if isinstance(value, int):
        return V.int64(value)
    if isinstance(value, float):
        return V.double(value)
    if isinstance(value, str):
        return V.string(value)
    if isinstance(value, list):
        return w.array([encode(item, w) for item in value])
    return w.object([(key, encode(item, w)) for key, item in value.items()])


def roundtrip(value: Any) -> tuple[bytes, bytes]:
    w = V.Writer()
    data = encode(value, w)
    return data, w.metadata()


class TestAgainstPyspark:
    """Our bytes read the same with pyspark's reader, and pyspark's bytes with ours."""

    @given(plain_values)
    def test_pyspark_reads_what_we_write(self, value: Any) -> None:
        """pyspark's VariantUtils decodes our encoding to the same value."""
        data, metadata = roundtrip(value)
        assert VariantVal(data, metadata).toPython() == value
        assert V.read(data, metadata) == value

    @given(plain_values)
    def test_we_read_what_pyspark_writes(self, value: Any) -> None:
        """Our reader decodes pyspark's encoding (from JSON text) to the same value."""
        import json

        built = VariantVal.parseJson(json.dumps(value))
        got = V.read(built.value, built.metadata)
        assert _same_number_kinds(got, value)


def _same_number_kinds(got: Any, want: Any) -> bool:
    """pyspark stores JSON floats as decimals when they fit; compare numerically."""
    if isinstance(want, float):
        return float(got) == want
    if isinstance(want, list):
        return len(got) == len(want) and all(_same_number_kinds(g, w) for g, w in zip(got, want))
    if isinstance(want, dict):
        return got.keys() == want.keys() and all(_same_number_kinds(got[k], w)
                                                 for k, w in want.items())
    return bool(got == want)


class TestPrimitives:
    """Each primitive keeps its kind and value through write and read."""

    @pytest.mark.parametrize("write, value", [
        (V.int16, -32768), (V.int32, 2**31 - 1), (V.int64, -(2**63)),
        (V.double, 1e308), (V.string, "é" * 40), (V.string, "x" * 300),
        (V.binary, b"\x00\xff" * 200), (V.boolean, True), (V.boolean, False),
    ])
    def test_value_survives(self, write: Any, value: Any) -> None:
        """The value read back equals the value written."""
        assert V.read(write(value), V.EMPTY_METADATA) == value

    def test_float32_is_four_bytes(self) -> None:
        """float is stored as a 4-byte float, not widened to double."""
        data = V.float32(0.5)
        assert len(data) == 5 and V.read(data, V.EMPTY_METADATA) == 0.5
        assert VariantVal(data, V.EMPTY_METADATA).toPython() == 0.5

    @pytest.mark.parametrize("value", [math.inf, -math.inf])
    def test_infinities(self, value: float) -> None:
        """Infinities, which JSON cannot carry, are kept."""
        assert V.read(V.double(value), V.EMPTY_METADATA) == value

    def test_nan(self) -> None:
        """NaN is kept."""
        assert math.isnan(V.read(V.double(math.nan), V.EMPTY_METADATA))

    @pytest.mark.parametrize("unscaled, scale, digits", [
        (123, 2, 3), (-(10**18 - 1), 4, 18), (2**64 - 1, 0, 20), (10**31 - 1, 31, 31),
    ])
    def test_decimals_are_exact(self, unscaled: int, scale: int, digits: int) -> None:
        """Decimals up to 31 digits (fixed) and 20 (unsigned long long) read back exactly."""
        data = V.decimal(unscaled, scale, digits)
        want = Decimal(unscaled).scaleb(-scale, V._EXACT)
        assert V.read(data, V.EMPTY_METADATA) == want
        if digits <= 28:  # pyspark's toPython rounds to the default 28-digit context
            assert VariantVal(data, V.EMPTY_METADATA).toPython() == want


class TestContainers:
    """Objects and arrays beyond one-byte sizes and offsets."""

    def test_large_array(self) -> None:
        """More than 255 elements switch the array to 4-byte counts."""
        value = list(range(1000))
        data, metadata = roundtrip(value)
        assert V.read(data, metadata) == value
        assert VariantVal(data, metadata).toPython() == value

    def test_many_keys(self) -> None:
        """More than 255 keys need wider field ids and a wider metadata dictionary."""
        value = {f"k{i}": i for i in range(300)}
        data, metadata = roundtrip(value)
        assert V.read(data, metadata) == value
        assert VariantVal(data, metadata).toPython() == value

    def test_keys_are_shared(self) -> None:
        """Nested objects reuse one dictionary entry per key."""
        w = V.Writer()
        w.array([w.object([("a", V.int64(i))]) for i in range(3)])
        assert list(w.keys) == ["a"]

    def test_empty_containers(self) -> None:
        """Empty objects and arrays are valid."""
        assert V.read(*roundtrip({})) == {}
        assert V.read(*roundtrip([])) == []


class TestMalformed:
    """Bad bytes raise VariantError, never something else."""

    def test_bad_metadata_version(self) -> None:
        """Metadata with another version is refused."""
        with pytest.raises(V.VariantError):
            V.read(V.int64(1), b"\x02\x00\x00")

    def test_truncated_value(self) -> None:
        """A cut-off value is reported as truncated."""
        with pytest.raises(V.VariantError):
            V.read(V.int64(1)[:3], V.EMPTY_METADATA)

    def test_truncated_string(self) -> None:
        """A long string shorter than its length field is refused."""
        with pytest.raises(V.VariantError):
            V.read(V.string("x" * 100)[:50], V.EMPTY_METADATA)

    def test_unknown_primitive(self) -> None:
        """A primitive type id beyond the specification is refused."""
        with pytest.raises(V.VariantError):
            V.read(bytes([60 << 2]), V.EMPTY_METADATA)
