"""The wire bundle codec against the seed's tables (vectors.json), three ways, and fuzzed."""

from __future__ import annotations

import json
import pathlib
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cosnotify.protocols.eventheap.codec import (
    FUNDAMENTAL_TYPES,
    BundleReader,
    Field,
    SequenceInfo,
    SourceInfo,
    Tuple,
    Value,
    WireBundle,
    decode_bundle,
    decode_field,
    encode_bundle,
    encode_field,
    encode_version,
)
from cosnotify.protocols.eventheap.wire import Cursor, EventHeapWireError, encode_utf

_DATA = json.loads((pathlib.Path(__file__).parent / "vectors.json").read_text())
VECTORS: list[dict[str, Any]] = _DATA["vectors"]


def _ids(kind: str, valid: bool) -> list[dict[str, Any]]:
    return [v for v in VECTORS if v["kind"] == kind and v["valid"] is valid]


def _value(spec: list[Any]) -> Value:
    mode, value = spec
    if isinstance(value, dict):
        value = bytes.fromhex(value["hex"])
    return Value(mode, value)


def _field(name: str, spec: dict[str, Any]) -> Field:
    return Field(name, spec["type"], _value(spec["post"]), _value(spec["template"]))


def _bundle(spec: dict[str, Any]) -> WireBundle:
    infos = spec["sequence_info"]
    tuples = spec["tuples"]
    return WireBundle(
        spec["destination_tag"], spec["return_tag"],
        None if infos is None else tuple(
            SequenceInfo(t, tuple(SourceInfo(*s) for s in srcs)) for t, srcs in infos),
        None if tuples is None else tuple(
            Tuple(serial, tuple(Field(n, ft, _value(p), _value(t)) for n, ft, p, t in fields))
            for serial, fields in tuples))


def _three_ways(raw: bytes) -> list[tuple[str, list[bytes]]]:
    return [("whole", [raw]), ("bytewise", [raw[i:i + 1] for i in range(len(raw))]),
            ("trailing", [raw + b"\x00\x07trailing"])]


class TestVectors:
    def test_every_field_type_has_a_vector(self) -> None:
        """Each fundamental type and a platform type has a valid vector with its source."""
        types = {v["expected"]["type"] for v in _ids("field", True)}
        assert set(FUNDAMENTAL_TYPES) <= types
        assert any(t.startswith("EHJava.") for t in types)
        assert all(v["source"] for v in VECTORS)

    @pytest.mark.parametrize("vector", _ids("field", True), ids=lambda v: v["name"])
    def test_valid_field(self, vector: dict[str, Any]) -> None:
        """A field's bytes built from the seed's tables decode to the expected values."""
        raw = bytes.fromhex(vector["hex"])
        expected = _field("f", vector["expected"])
        assert decode_field(raw, "f") == expected
        if "non-zero" not in vector["name"]:
            assert encode_field(expected) == raw

    @pytest.mark.parametrize("vector", _ids("field", False), ids=lambda v: v["name"])
    def test_invalid_field(self, vector: dict[str, Any]) -> None:
        """A field's bytes the seed does not allow raise EventHeapWireError."""
        with pytest.raises(EventHeapWireError):
            decode_field(bytes.fromhex(vector["hex"]), "f")

    @pytest.mark.parametrize("vector", _ids("utf", True), ids=lambda v: v["name"])
    def test_valid_utf(self, vector: dict[str, Any]) -> None:
        """A UTF-8 String decodes to its text, and the text encodes to the same bytes."""
        raw = bytes.fromhex(vector["hex"])
        assert Cursor(raw).read_utf("s") == vector["expected"]["text"]
        assert encode_utf(vector["expected"]["text"]) == raw

    @pytest.mark.parametrize("vector", _ids("utf", False), ids=lambda v: v["name"])
    def test_invalid_utf(self, vector: dict[str, Any]) -> None:
        """Bytes that are not the seed's UTF-8 String raise EventHeapWireError."""
        with pytest.raises(EventHeapWireError):
            Cursor(bytes.fromhex(vector["hex"])).read_utf("s")

    @pytest.mark.parametrize("vector", _ids("bundle", True), ids=lambda v: v["name"])
    @pytest.mark.parametrize("way", ["whole", "bytewise", "trailing"])
    def test_valid_bundle_three_ways(self, vector: dict[str, Any], way: str) -> None:
        """A bundle decodes the same fed whole, a byte at a time, or with bytes after it."""
        raw = bytes.fromhex(vector["hex"])
        chunks = dict(_three_ways(raw))[way]
        reader = BundleReader(handshake=False)
        found: list[Any] = []
        for chunk in chunks:
            reader.feed(chunk)
            event = reader.next_event()
            if event is not None:
                found.append(event)
        assert found == [_bundle(vector["expected"])]
        assert reader.pending == (len(b"\x00\x07trailing") if way == "trailing" else 0)
        assert encode_bundle(found[0]) == raw

    @pytest.mark.parametrize("vector", _ids("bundle", False), ids=lambda v: v["name"])
    def test_invalid_bundle(self, vector: dict[str, Any]) -> None:
        """A bundle the seed does not allow raises EventHeapWireError, not a wait."""
        with pytest.raises(EventHeapWireError):
            decode_bundle(bytes.fromhex(vector["hex"]))


class TestReader:
    def test_handshake_then_bundles(self) -> None:
        """The peer's version comes first ("Initial Hand-Shake"), then its bundles."""
        raw = encode_version() + encode_bundle(WireBundle("getAll", "t")) * 2
        for way, chunks in _three_ways(raw):
            reader = BundleReader()
            found: list[Any] = []
            for chunk in chunks:
                reader.feed(chunk)
                while (event := reader.next_event()) is not None:
                    found.append(event)
            if way == "trailing":
                assert found[:3] == ["EHWPv1", WireBundle("getAll", "t"), WireBundle("getAll", "t")]
            else:
                assert found == ["EHWPv1", WireBundle("getAll", "t"), WireBundle("getAll", "t")]

    def test_oversize_length_refused_at_once(self) -> None:
        """A tuple length beyond max_frame is refused before its bytes arrive."""
        reader = BundleReader(max_frame=1024, handshake=False)
        reader.feed(b"\x08" + struct.pack(">ii", 1, 1 << 30))
        with pytest.raises(EventHeapWireError) as info:
            reader.next_event()
        assert info.value.kind == "too_large"

    def test_huge_count_refused_at_once(self) -> None:
        """A tuple count whose tuples cannot fit in max_frame is refused at once."""
        reader = BundleReader(max_frame=1024, handshake=False)
        reader.feed(b"\x08" + struct.pack(">i", 1 << 20))
        with pytest.raises(EventHeapWireError) as info:
            reader.next_event()
        assert info.value.kind == "too_large"

    def test_growing_bundle_refused_past_max_frame(self) -> None:
        """A bundle still unfinished past max_frame bytes is refused."""
        reader = BundleReader(max_frame=64, handshake=False)
        reader.feed(b"\x08" + struct.pack(">i", 9))  # 9 tuples of at most 64 bytes in all
        for _ in range(9):
            reader.feed(struct.pack(">i", 8) + b"\x00" * 8)  # serial 0, no fields
            try:
                assert reader.next_event() is None
            except EventHeapWireError as exc:
                assert exc.kind == "too_large"
                return
        pytest.fail("a bundle past max_frame was not refused")

    def test_big_bundle_is_not_reparsed_per_byte(self) -> None:
        """Fed a byte at a time, a bundle is only re-read when the needed bytes are there."""
        big = encode_bundle(WireBundle("x", None, None, (Tuple(0, tuple(
            Field(f"f{i}", "string", Value(0, "v" * 50), Value(1)) for i in range(50))),)))
        reader = BundleReader(handshake=False)
        attempts = 0
        for i in range(len(big)):
            reader.feed(big[i:i + 1])
            if reader.pending >= reader._need:
                attempts += 1
            if reader.next_event() is not None:
                break
        assert attempts < 20


_text = st.text(max_size=20)
_values = {
    "boolean": st.booleans(), "int": st.integers(-2**31, 2**31 - 1),
    "long": st.integers(-2**63, 2**63 - 1),
    "float": st.floats(width=32, allow_nan=False), "double": st.floats(allow_nan=False),
    "string": _text,
}


@st.composite
def fields(draw: Any, name: str) -> Field:
    ftype = draw(st.sampled_from([*FUNDAMENTAL_TYPES, "EHJava.a.B"]))
    strategy = _values.get(ftype, st.binary(max_size=20))

    def value() -> Value:
        mode = draw(st.sampled_from([0, 0, 1, 2, 3, 4]))
        if mode:
            return Value(mode)
        return Value(0, draw(st.none() | strategy))

    return Field(name, ftype, value(), value())


@st.composite
def bundles(draw: Any) -> WireBundle:
    names = draw(st.lists(_text, max_size=5, unique=True))
    tuples = draw(st.none() | st.lists(
        st.builds(Tuple, st.integers(-2**31, 2**31 - 1),
                  st.tuples(*[fields(n) for n in names])), max_size=3).map(tuple))
    infos = draw(st.none() | st.lists(st.builds(
        SequenceInfo, _text, st.lists(st.builds(SourceInfo, _text, st.integers(-2**31, 2**31 - 1),
                                                st.integers(-2**31, 2**31 - 1)),
                                      max_size=3).map(tuple)), max_size=3).map(tuple))
    return WireBundle(draw(st.none() | _text), draw(st.none() | _text), infos, tuples)


class TestProperties:
    @settings(max_examples=200, deadline=None)
    @given(bundles())
    def test_round_trip(self, bundle: WireBundle) -> None:
        """What the encoder writes, the reader reads back unchanged, in any pieces."""
        raw = encode_bundle(bundle)
        assert decode_bundle(raw) == bundle
        reader = BundleReader(handshake=False)
        half = len(raw) // 2
        reader.feed(raw[:half])
        assert half == len(raw) or reader.next_event() is None
        reader.feed(raw[half:])
        assert reader.next_event() == bundle

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.binary(max_size=300))
    def test_random_bytes_raise_only_the_codec_error(self, data: bytes) -> None:
        """Random bytes give bundles, a wait for more, or EventHeapWireError -- nothing else."""
        reader = BundleReader(max_frame=4096)
        reader.feed(data)
        try:
            while reader.next_event() is not None:
                pass
        except EventHeapWireError:
            pass

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(bundles(), st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)),
                               min_size=1, max_size=6))
    def test_mutated_bundles_raise_only_the_codec_error(
            self, bundle: WireBundle, edits: list[tuple[int, int]]) -> None:
        """A valid bundle with bytes changed decodes, waits, or raises EventHeapWireError."""
        raw = bytearray(encode_bundle(bundle))
        for at, byte in edits:
            raw[at % len(raw)] = byte
        reader = BundleReader(max_frame=4096, handshake=False)
        reader.feed(bytes(raw))
        try:
            while reader.next_event() is not None:
                pass
        except EventHeapWireError:
            pass


class TestEncoder:
    def test_unencodable_values(self) -> None:
        """Values the wire cannot carry are EventHeapWireError when encoding."""
        for bad in (Field("x", "int", Value(0, 2**31), Value(1)),
                    Field("x", "string", Value(0, "\ud800"), Value(1)),
                    Field("x", "string", Value(0, "x" * 70000), Value(1)),
                    Field("x", "nonsense", Value(1), Value(1))):
            with pytest.raises(EventHeapWireError):
                encode_field(bad)


class TestPieces:
    """Review 118: docs/protocols.md, "a large bundle arriving in pieces is not re-read
    for each piece" -- a bundle whose top level is many small items (SequenceInfo's
    SourceInfo objects) was re-parsed from its first byte for every piece."""

    @staticmethod
    def sources_bundle(n: int) -> bytes:
        head = bytes([4]) + struct.pack(">i", 1) + encode_utf("T") + struct.pack(">i", n)
        return head + (encode_utf("") + struct.pack(">ii", 0, 0)) * n

    def test_each_source_info_is_read_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from cosnotify.protocols.eventheap import codec

        made: list[int] = []

        def counting(*args: Any) -> SourceInfo:
            made.append(1)
            return SourceInfo(*args)

        monkeypatch.setattr(codec, "SourceInfo", counting)
        n = 20_000
        data = self.sources_bundle(n)
        reader = BundleReader(1 << 20, handshake=False)
        found = None
        for off in range(0, len(data), 4096):
            reader.feed(data[off:off + 4096])
            found = reader.next_event()
            assert (found is None) == (off + 4096 < len(data))
        assert isinstance(found, WireBundle) and found.sequence_info is not None
        assert len(found.sequence_info[0].sources) == n
        assert len(made) == n  # not once per piece it had come by
        assert reader.examined < 2 * len(data)
        assert reader.pending == 0

    def test_pieces_give_what_the_whole_gives(self) -> None:
        """Cut anywhere, a bundle of every part reads the same as whole; errors keep
        their offset in the bundle."""
        bundle = WireBundle("d", "r", (SequenceInfo("T", (SourceInfo("s", 1, 2),) * 3),),
                            (Tuple(5, (Field("a", "int", Value(0, 7), Value(1)),)),) * 2)
        raw = encode_bundle(bundle)
        for cut in range(1, len(raw)):
            for step in (cut, 1):
                reader = BundleReader(handshake=False)
                got = None
                for off in range(0, len(raw), step):
                    reader.feed(raw[off:off + step])
                    got = reader.next_event()
                assert got == bundle, (cut, step)
        bad = bytearray(raw)
        bad[-1] = 0x80  # the last tuple's template mode: a Java byte is at most 127
        whole = BundleReader(handshake=False)
        whole.feed(bytes(bad))
        with pytest.raises(EventHeapWireError) as at_once:
            whole.next_event()
        split = BundleReader(handshake=False)
        with pytest.raises(EventHeapWireError) as in_pieces:
            for off in range(0, len(bad), 3):
                split.feed(bytes(bad[off:off + 3]))
                split.next_event()
        assert in_pieces.value.offset == at_once.value.offset == len(bad) - 1

    def test_deferred_tuples_decode_as_the_reader_would(self) -> None:
        """``defer``: a bundle's tuples are handed out unparsed (a server parses a big
        one off its loop thread, review 118) and parse to the same bundle, with errors
        at the same offsets."""
        from cosnotify.protocols.eventheap.codec import Undecoded, encode_tuple

        bundle = WireBundle("putEvent", "r", None,
                            (Tuple(5, (Field("a", "int", Value(0, 7), Value(1)),)),) * 2)
        raw = encode_bundle(bundle)
        reader = BundleReader(handshake=False, defer=True)
        reader.feed(raw + encode_bundle(WireBundle("getAll", "t")))
        found = reader.next_event()
        assert isinstance(found, Undecoded) and found.size == 2 * len(encode_tuple(bundle.tuples[0]))  # type: ignore[index]
        assert found.decode() == bundle
        assert reader.next_event() == WireBundle("getAll", "t")  # no tuples: as it is
        bad = bytearray(raw)
        bad[-1] = 0x80
        reader = BundleReader(handshake=False, defer=True)
        reader.feed(bytes(bad))
        found = reader.next_event()
        assert isinstance(found, Undecoded)
        with pytest.raises(EventHeapWireError) as info:
            found.decode()
        assert info.value.offset == len(bad) - 1

    def test_many_bundles_in_one_read_are_one_copy(self) -> None:
        """Many small bundles in one read (here 20,000 one-byte bundles, mask 0: the
        seed's nulls) are parsed from one copy of the buffer, not each from a copy of
        all that follows it (20,000 copies of ~10 KB on the loop thread)."""
        reader = BundleReader(handshake=False)
        reader.feed(bytes(20_000) + b"\x08")  # and the start of one more
        found = 0
        while (event := reader.next_event()) is not None:
            assert event == WireBundle()
            found += 1
        assert found == 20_000 and reader.pending == 1
        assert reader.examined == 20_001
        reader.feed(struct.pack(">i", 0))
        assert reader.next_event() == WireBundle(tuples=())
        assert reader.examined == 20_001 + 4 and reader.pending == 0  # its mask was read
