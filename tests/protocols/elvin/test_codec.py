"""The Elvin 4 codec: packets (seed §7.4), XDR (§8.2.3) and TCP framing (§8.2.1), sans IO.

The vectors in vectors.json were built (make_vectors.py) with tests/protocols/elvin/client.py,
whose encoder is written from the seed's tables and shares no code with
cosnotify; each names the seed section it comes from. Where the seed gives
bytes itself (§8.2.3.2's INT64 EXAMPLE) the vector reproduces them.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cosnotify.corba  # noqa: F401 - omniORB first
from cosnotify.filter.elvin4.values import Int64
from cosnotify.protocols.elvin import packets as P
from cosnotify.protocols.elvin.codec import NEED_DATA, Decoder, encode_packet
from cosnotify.protocols.elvin.xdr import ElvinCodecError, Reader

VECTORS = json.loads((Path(__file__).parent / "vectors.json").read_text())
VALID = [v for v in VECTORS if v["valid"]]
#: Where the NameValue array starts in the packets whose attributes come first (§7.4).
NVS_AT = {"NotifyEmit": 4, "NotifyDeliver": 4, "UNotify": 12}
INVALID = [v for v in VECTORS if not v["valid"]]


def _value(item: dict[str, Any]) -> Any:
    [(kind, raw)] = item.items()
    return {"int32": int, "int64": Int64, "real64": float, "string": str,
            "opaque": bytes.fromhex}[kind](raw)


def _keys(raw: list[Any]) -> tuple[P.KeySetList, ...]:
    return tuple(P.KeySetList(scheme, tuple(tuple(bytes.fromhex(k) for k in ks) for ks in sets))
                 for scheme, sets in raw)


def _ast(raw: list[Any]) -> P.SubAST:
    code, rest = raw
    if code in (1, 5):
        return P.SubAST(code, rest)
    if code in (2, 3, 4):
        return P.SubAST(code, _value(rest))
    return P.SubAST(code, None, tuple(_ast(c) for c in rest))


def expected(vector: dict[str, Any]) -> Any:
    """The packet a vector describes, built from its JSON fields."""
    cls = getattr(P, vector["type"])
    fields = {}
    for name, raw in vector["fields"].items():
        if name in ("attributes", "options"):
            fields[name] = tuple((k, _value(v)) for k, v in raw)
        elif name == "args" and isinstance(raw, list):
            fields[name] = tuple(_value(v) for v in raw)
        elif "keys" in name:
            fields[name] = _keys(raw)
        elif name == "sub_expr":
            fields[name] = _ast(raw)
        elif isinstance(raw, list):
            fields[name] = tuple(raw)
        else:
            fields[name] = raw
    return cls(**fields)


def framed(vector: dict[str, Any]) -> bytes:
    body = bytes.fromhex(vector["hex"])
    return struct.pack(">I", len(body)) + body


def feed(decoder: Decoder, data: bytes, how: str) -> list[Any]:
    """Feed ``data`` whole or one byte at a time; collect the packets."""
    out: list[Any] = []
    chunks = [data] if how == "whole" else [data[i:i + 1] for i in range(len(data))]
    for chunk in chunks:
        decoder.receive_data(chunk)
        while (packet := decoder.next_packet()) is not NEED_DATA:
            out.append(packet)
    return out


class TestVectors:
    """Each packet type of §7.1 against a vector from the seed's tables."""

    @pytest.mark.parametrize("vector", VALID, ids=[v["name"] for v in VALID])
    def test_decodes(self, vector: dict[str, Any]) -> None:
        """The vector's bytes decode to the packet its fields describe (§7.4, §8.2.3)."""
        assert P.decode_body(bytes.fromhex(vector["hex"])) == expected(vector)

    @pytest.mark.parametrize("vector", VALID, ids=[v["name"] for v in VALID])
    def test_encodes(self, vector: dict[str, Any]) -> None:
        """The packet encodes to exactly the vector's bytes (XDR is canonical, §8.2.3.2)."""
        assert encode_packet(expected(vector)) == framed(vector)

    @pytest.mark.parametrize("vector", INVALID, ids=[v["name"] for v in INVALID])
    def test_rejects(self, vector: dict[str, Any]) -> None:
        """A malformed packet raises ElvinCodecError with the Nack code and offset."""
        with pytest.raises(ElvinCodecError) as info:
            P.decode_body(bytes.fromhex(vector["hex"]))
        assert (info.value.code, info.value.offset) == (vector["code"], vector["offset"])
        assert vector["why"] in info.value.message

    def test_every_packet_type_has_a_vector(self) -> None:
        """Every pkt_id of §8.2.3.1 is covered by a valid vector."""
        assert {v["type"] for v in VALID} == {cls.__name__ for cls, _ in P.LAYOUT.values()}

    def test_int64_example_bytes(self) -> None:
        """§8.2.3.2: an int64 1024L is the type id 2 then the hyper 0x400."""
        data = P.encode_body(P.NotifyEmit((("v", Int64(1024)),)))
        assert bytes.fromhex("00000002" "0000000000000400") in data


class TestFraming:
    """The 4-byte length header of §8.2.1, fed three ways."""

    STREAM = b"".join(framed(v) for v in VALID)

    @pytest.mark.parametrize("how", ["whole", "bytewise"])
    def test_whole_and_one_byte_at_a_time(self, how: str) -> None:
        """Every packet comes out, in order, however the bytes arrive."""
        assert feed(Decoder(1 << 16), self.STREAM, how) == [expected(v) for v in VALID]

    def test_trailing_bytes_wait_for_the_rest(self) -> None:
        """A partial next frame is kept (in_frame) until it completes."""
        decoder = Decoder(1 << 16)
        tail = framed(VALID[0])
        got = feed(decoder, self.STREAM + tail[:7], "whole")
        assert len(got) == len(VALID) and decoder.in_frame
        assert feed(decoder, tail[7:], "whole") == [expected(VALID[0])]
        assert not decoder.in_frame

    def test_oversize_length_is_fatal_before_buffering(self) -> None:
        """§8.2.1: a header over the limit "MUST reset the TCP connection"."""
        decoder = Decoder(1024)
        decoder.receive_data(struct.pack(">I", 1025))
        with pytest.raises(ElvinCodecError) as info:
            decoder.next_packet()
        assert info.value.fatal

    def test_a_bad_body_is_consumed(self) -> None:
        """A frame that does not decode is skipped whole: the next one still decodes."""
        decoder = Decoder(1024)
        bad = framed(INVALID[1])
        decoder.receive_data(bad + framed(VALID[4]))
        with pytest.raises(ElvinCodecError):
            decoder.next_packet()
        assert decoder.next_packet() == expected(VALID[4])

    def test_the_xid_is_reported(self) -> None:
        """An error after the xid carries it, so the router can Nack (§7.3.3)."""
        with pytest.raises(ElvinCodecError) as info:
            P.decode_body(bytes.fromhex(next(v for v in INVALID
                                             if v["name"] == "bad UTF-8")["hex"]))
        assert info.value.xid == 5 and info.value.packet_type == 58


values = st.one_of(st.integers(-2**31, 2**31 - 1),
                   st.integers(-2**63, 2**63 - 1).map(Int64),
                   st.floats(allow_nan=False),
                   st.text(alphabet=st.characters(blacklist_characters="\0",
                                                  blacklist_categories=("Cs",))),
                   st.binary())


class TestProperties:
    """Round trips and fuzz (bounded)."""

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.tuples(st.text(min_size=1, max_size=20).filter(lambda s: "\0" not in s),
                              values), min_size=1, max_size=8), st.booleans())
    def test_notify_emit_round_trip(self, attributes: list[Any], insecure: bool) -> None:
        """Any notification encodes and decodes to itself, types included (§8.2.3.5)."""
        packet = P.NotifyEmit(tuple(attributes), insecure)
        [back] = feed(Decoder(1 << 20), encode_packet(packet), "whole")
        assert back == packet
        assert [type(v) for _, v in back.attributes] == [type(v) for _, v in attributes]

    @settings(max_examples=200, deadline=None)
    @given(st.binary(max_size=200))
    def test_random_bytes_raise_only_the_codec_error(self, data: bytes) -> None:
        """Random bytes into the decoder give packets, NEED_DATA or ElvinCodecError."""
        decoder = Decoder(4096)
        decoder.receive_data(data)
        try:
            while decoder.next_packet() is not NEED_DATA:
                pass
        except ElvinCodecError:
            pass

    @settings(max_examples=200, deadline=None)
    @given(st.sampled_from(VALID), st.data())
    def test_mutated_packets_raise_only_the_codec_error(self, vector: dict[str, Any],
                                                        data: Any) -> None:
        """A valid packet with bytes flipped, cut or appended decodes or raises
        ElvinCodecError, nothing else."""
        body = bytearray(bytes.fromhex(vector["hex"]))
        for _ in range(data.draw(st.integers(1, 4))):
            if body:
                at = data.draw(st.integers(0, len(body) - 1))
                body[at] = data.draw(st.integers(0, 255))
        body = body[:data.draw(st.integers(0, len(body)))] + data.draw(st.binary(max_size=8))
        try:
            P.decode_body(bytes(body))
        except ElvinCodecError as exc:
            assert exc.code in (1001, 1006)

    @settings(max_examples=200, deadline=None)
    @given(st.sampled_from([v for v in VALID if v["type"] in NVS_AT]), st.data())
    def test_the_fast_reader_agrees_with_the_checked_one(self, vector: dict[str, Any],
                                                         data: Any) -> None:
        """NameValue[]'s optimistic reader gives what the checked reader gives (value and
        position, or the same error) on valid and mutated arrays alike."""
        body = bytearray(bytes.fromhex(vector["hex"]))
        start = NVS_AT[vector["type"]]
        for _ in range(data.draw(st.integers(0, 3))):
            at = data.draw(st.integers(start, len(body) - 1))
            body[at] = data.draw(st.integers(0, 255))
        first, second = _read_both(bytes(body), start)
        assert _bits(first) == _bits(second)

    def test_a_real64_mutated_into_a_nan_reads_alike(self) -> None:
        """The case hypothesis found (1 byte of NotifyEmit's attributes set to 0x7f): the
        Real64 turns NaN, which equals nothing, so the readers' results are compared
        bit for bit."""
        [vector] = [v for v in VALID if v["name"] == "NotifyEmit"]
        body = bytearray(bytes.fromhex(vector["hex"]))
        body[56] = 0x7F
        first, second = _read_both(bytes(body), NVS_AT[vector["type"]])
        assert dict(first[0])["r"] != dict(first[0])["r"]  # NaN
        assert _bits(first) == _bits(second)


def _read_both(body: bytes, start: int) -> list[Any]:
    """What NameValue[]'s optimistic and checked readers give: (value, position), or
    (error code, offset)."""
    results = []
    for read in (P._nvs, P._nvs_checked):
        r = Reader(body, start)
        try:
            results.append((read(r), r.pos))
        except ElvinCodecError as exc:
            results.append((exc.code, exc.offset))
    return results


def _bits(value: Any) -> Any:
    """``value`` with every float as its IEEE bytes (a mutated Real64 may be NaN)."""
    if isinstance(value, float):
        return struct.pack(">d", value)
    if isinstance(value, tuple):
        return tuple(_bits(item) for item in value)
    return value
