"""The call hot path: framing and header fast paths agree with the general GIOP codecs."""

from __future__ import annotations

import struct

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosnotify.orb import CORBA
from cosnotify.orb import giop_messages as gm
from cosnotify.orb.cdr_core import Codec
from cosnotify.orb.fastpath import (
    STOP,
    Framer,
    OperationPlan,
    RawReply,
    RequestParser,
    finish_message,
    finish_reply,
    parse_reply,
    parse_request,
    reply_prefix,
    request_prefix,
)
from cosnotify.orb.interface import IN, INOUT, OUT, Operation, Param
from tests.strategies import replies, requests

FEEDS = ["whole", "bytewise", "trailing"]


def frames(framer: Framer, data: bytes, how: str) -> list[object]:
    """Feed ``data`` whole, a byte at a time, or followed by a partial header."""
    out: list[object] = []

    def drain() -> None:
        while True:
            item = framer.next()
            if item is None:
                return
            out.append(item)
            if item is STOP:
                return

    if how == "bytewise":
        for i in range(len(data)):
            framer.feed(data[i:i + 1])
            drain()
    else:
        framer.feed(data + (b"GIOP\x01" if how == "trailing" else b""))
        drain()
    return out


class TestFramer:
    @pytest.mark.parametrize("how", FEEDS)
    def test_cuts_messages_at_their_size(self, how: str) -> None:
        """Two messages come out whole, however the bytes arrive."""
        one = gm.encode_message(gm.Request(1, gm.KeyAddr(b"k"), "op", b"abc"))
        two = gm.encode_message(gm.Reply(7, body=b"xyz"))
        assert frames(Framer(1 << 20), one + two, how) == [one, two]

    @pytest.mark.parametrize("header", [b"GIOX\x01\x02\x01\x00", b"GIOP\x02\x00\x01\x00",
                                        b"GIOP\x01\x03\x01\x00", b"GIOP\x01\x02\x01\x08"])
    def test_insane_header_stops(self, header: bytes) -> None:
        """Bad magic, version or type stops the framer (the GIOP connection reports it)."""
        framer = Framer(1 << 20)
        assert frames(framer, header + bytes(8), "whole") == [STOP]
        assert framer.stopped

    def test_oversized_message_stops(self) -> None:
        """A size past the limit stops the framer before any body is buffered."""
        framer = Framer(100)
        assert frames(framer, b"GIOP\x01\x02\x01\x00" + struct.pack("<I", 101), "whole") == [STOP]

    def test_take_rest_empties_the_buffer(self) -> None:
        """take_rest() hands back what was not framed yet."""
        framer = Framer(100)
        framer.feed(b"GIOP\x01")
        assert framer.take_rest() == b"GIOP\x01"
        assert framer.next() is None


def _as_fields(request: gm.Request) -> tuple[object, ...]:
    return (request.request_id, request.response_expected, request.object_key, request.operation,
            tuple((c.context_id, c.context_data) for c in request.service_contexts),
            request.little_endian)


class TestParseRequest:
    @settings(max_examples=300)
    @given(requests)
    def test_agrees_with_the_general_decoder(self, request: gm.Request) -> None:
        """For any request, the fast parser either declines or reads what decode_message reads."""
        raw = gm.encode_message(request)
        fast = parse_request(raw)
        general = gm.decode_message(raw)
        assert isinstance(general, gm.Request)
        if fast is None:
            assert request.version != (1, 2) or not isinstance(request.target, gm.KeyAddr)
            return
        assert (fast.request_id, fast.response_expected, fast.object_key, fast.operation,
                fast.service_contexts, fast.little_endian) == _as_fields(general)
        assert fast.data[fast.pos:] == general.body
        assert fast.pos % 8 == 0 or fast.pos == len(raw)

    @settings(max_examples=200)
    @given(requests, st.integers(0, 2**32 - 1))
    def test_parser_cache_reads_new_request_ids(self, request: gm.Request, other_id: int) -> None:
        """The remembered header is reused only for identical headers, with the new request id."""
        request = attrs.evolve(request, version=(1, 2), body=request.body or b"\x01")
        parser = RequestParser()
        first = parser.parse(gm.encode_message(request))
        second_raw = gm.encode_message(attrs.evolve(request, request_id=other_id))
        second = parser.parse(second_raw)
        assert (first is None) == (second is None)
        if second is not None:
            assert second.request_id == other_id
            assert second.data[second.pos:] == request.body
            assert second.operation == request.operation

    def test_parser_cache_not_fooled_by_another_operation(self) -> None:
        """A request for another operation is parsed afresh."""
        parser = RequestParser()
        parser.parse(gm.encode_message(gm.Request(1, gm.KeyAddr(b"key"), "one", b"body1234")))
        other = parser.parse(gm.encode_message(gm.Request(2, gm.KeyAddr(b"key"), "two", b"b")))
        assert other is not None and other.operation == "two"

    def test_declines_fragments_and_other_addressing(self) -> None:
        """A fragmented request or a profile-addressed one takes the general path."""
        raw = bytearray(gm.encode_message(gm.Request(1, gm.KeyAddr(b"k"), "op", b"x" * 40)))
        raw[6] |= 2
        assert parse_request(bytes(raw)) is None
        from cosnotify.orb.ior import IIOPProfile

        addressed = gm.Request(1, gm.ProfileAddr(IIOPProfile("h", 1, b"k")), "op", b"")
        assert parse_request(gm.encode_message(addressed)) is None


class TestParseReply:
    @settings(max_examples=300)
    @given(replies, st.integers(0, 2**32 - 1))
    def test_agrees_with_the_general_decoder(self, reply: gm.Reply, request_id: int) -> None:
        """For any reply, the fast parser declines or reads id, status and body as decode does."""
        raw = gm.encode_message(attrs.evolve(reply, request_id=request_id))
        fast = parse_reply(raw)
        general = gm.decode_message(raw)
        assert isinstance(general, gm.Reply)
        if fast is None:
            assert general.service_contexts
            return
        assert isinstance(fast, RawReply)
        assert (fast.request_id, fast.reply_status, fast.little_endian, fast.version) == (
            general.request_id, general.reply_status, general.little_endian, general.version)
        assert raw[24:] == general.body


class TestBuilders:
    @pytest.mark.parametrize("version", [(1, 0), (1, 1), (1, 2)])
    @pytest.mark.parametrize("little", [True, False])
    def test_request_prefix_makes_the_same_bytes(self, version: tuple[int, int],
                                                 little: bool) -> None:
        """A request built on a prefix equals encode_message's, in every version."""
        contexts = (gm.ServiceContext(1, b"\x01\x02\x03"),)
        body = b"\x01\x02\x03\x04\x05"
        prefix, rid_at = request_prefix(b"obj", "operation", 3, contexts, version, little)
        buffer = bytearray(prefix) + body
        finish_message(buffer, 0x01020304, rid_at, little)
        expected = gm.Request(0x01020304, gm.KeyAddr(b"obj"), "operation", body, 3, contexts, b"",
                              version, little)
        decoded = gm.decode_message(bytes(buffer))
        assert decoded == attrs.evolve(expected, body=decoded.body)
        assert decoded.body == body

    @pytest.mark.parametrize("version", [(1, 0), (1, 1), (1, 2)])
    @pytest.mark.parametrize("little", [True, False])
    def test_reply_prefix_makes_the_same_bytes(self, version: tuple[int, int], little: bool) -> None:
        """A reply built on a prefix decodes to the same Reply, body at octet 24."""
        buffer = reply_prefix(99, 2, version, little) + b"BODYBODY"
        raw = bytes(finish_reply(buffer, little))
        assert gm.decode_message(raw) == gm.Reply(99, gm.ReplyStatus.SYSTEM_EXCEPTION, b"BODYBODY",
                                                  (), version, little)


class TestOperationPlan:
    OP = Operation("op", (Param("a", IN, CORBA.TC_long), Param("b", INOUT, CORBA.TC_string),
                          Param("c", OUT, CORBA.TC_double)), CORBA.TC_boolean)

    def test_round_trip_and_packing(self) -> None:
        """Reply values pack as the mapping says, and unpack back."""
        plan = OperationPlan(self.OP, Codec())
        assert plan.pack([True, "x", 1.5]) == (True, "x", 1.5)
        assert plan.unpack((True, "x", 1.5)) == (True, "x", 1.5)
        void_one = OperationPlan(Operation("v", (Param("o", OUT, CORBA.TC_long),), CORBA.TC_void),
                                 Codec())
        assert void_one.pack([5]) == 5 and void_one.unpack(5) == (5,)
        void = OperationPlan(Operation("n", (), CORBA.TC_void), Codec())
        assert void.pack([]) is None and void.unpack(None) == ()

    def test_bad_value_is_bad_param(self) -> None:
        """A value that does not fit its TypeCode is BAD_PARAM."""
        from cosnotify.orb.cdr_core import EncodeState

        plan = OperationPlan(self.OP, Codec())
        with pytest.raises(CORBA.BAD_PARAM):
            plan.encode(bytearray(), plan.in_encoders, plan.in_types, ("not a long", "s"),
                        EncodeState(lambda v: v, 64))

    def test_truncated_data_is_marshal(self) -> None:
        """Decoding past the end of the data is MARSHAL."""
        from cosnotify.orb.cdr_core import DecodeState

        plan = OperationPlan(self.OP, Codec())
        with pytest.raises(CORBA.MARSHAL):
            plan.decode(b"\x01\x00", 0, plan.in_decoders, DecodeState(lambda i, r: i, 64))
