"""The front end's pure parts without sockets: option negotiation, keys, the event mapping."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cosnotify.corba  # noqa: F401 - omniORB first
from cosnotify.filter.elvin4 import compile_program
from cosnotify.filter.elvin4.values import Int64
from cosnotify.protocols.elvin import keys as K
from cosnotify.protocols.elvin import options as O
from cosnotify.protocols.elvin.mapping import event_keys, from_event, to_event
from cosnotify.protocols.elvin.packets import KeySetList


def negotiate(*requested: tuple[str, object]) -> dict[str, object]:
    _, reply = O.negotiate(O.defaults(1 << 20, 8 << 20), tuple(requested),  # type: ignore[arg-type]
                           1 << 20, 8 << 20)
    return dict(reply)


class TestOptions:
    """§7.5's three answers, as data."""

    def test_an_int64_for_an_int32_option_is_answered_as_int32(self) -> None:
        """A value of the wrong Elvin type is refused (case b): the entry is the router's
        int32 value, so it "MUST NOT match the request"."""
        answer = negotiate(("Subscription.Max-Count", Int64(10)))["Subscription.Max-Count"]
        assert answer == 10 and type(answer) is int

    @pytest.mark.parametrize("asked,got", [(0, 1), (10**6, 65536), (5, 5)])
    def test_numbers_are_clamped_to_the_range(self, asked: int, got: int) -> None:
        """Out of range: the nearest value the router provides."""
        assert negotiate(("Subscription.Max-Count", asked))["Subscription.Max-Count"] == got

    def test_receive_queue_accepts_any_legal_value(self) -> None:
        """No receive queue: "it MUST accept any legal value for this property"."""
        assert negotiate(("Receive-Queue.Drop-Policy", "largest"))[
            "Receive-Queue.Drop-Policy"] == "largest"

    def test_dictated_options_ignore_the_request(self) -> None:
        """Vendor-Identification is the router's, whatever is asked."""
        assert negotiate(("Vendor-Identification", "x"))["Vendor-Identification"].startswith(
            "cosnotify")


class TestKeys:
    """The key schemes of keys.py."""

    def test_private_keys_are_never_kept(self) -> None:
        """The public form of a producer's private key is its SHA-1."""
        public = K.public({(K.PRODUCER, 0, b"k")}, producer_side=True)
        assert public.producer == frozenset({hashlib.sha1(b"k").digest()})

    @settings(max_examples=100, deadline=None)
    @given(st.sets(st.tuples(st.integers(1, 4), st.binary(max_size=40)), max_size=6))
    def test_pack_round_trip(self, items: set[tuple[int, bytes]]) -> None:
        """Public keys survive the trip through the opaque variable-header property."""
        sets: list[set[bytes]] = [set(), set(), set(), set()]
        for tag, key in items:
            sets[tag - 1].add(key)
        keys = K.PublicKeys(*(frozenset(s) for s in sets))
        assert K.unpack(K.pack(keys)) == keys

    def test_unpack_of_garbage_gives_what_it_read(self) -> None:
        """A malformed property never raises."""
        assert K.unpack(b"\x01\x05ab") == K.NO_KEYS

    def test_check(self) -> None:
        """Unknown schemes and wrong key set counts are refused with their Nack codes;
        BAD_KEY_INDEX's "index, int32" (§7.4.2) is the first set missing: SHA-1-Dual's
        second."""
        with pytest.raises(K.BadKeys) as info:
            K.check((KeySetList(1, ((b"a",),)),))
        assert (info.value.code, info.value.nack_args) == (K.BAD_KEY_INDEX, (1, 1))


values = st.one_of(st.integers(-2**31, 2**31 - 1), st.integers(-2**63, 2**63 - 1).map(Int64),
                   st.floats(allow_nan=False), st.text().filter(lambda s: "\0" not in s),
                   st.binary())


class TestMapping:
    """Notification <-> structured event."""

    @settings(max_examples=100, deadline=None)
    @given(st.dictionaries(st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True), values,
                           min_size=1, max_size=6))
    def test_round_trip_keeps_types(self, attributes: dict[str, object]) -> None:
        """Elvin -> CORBA -> Elvin gives the same attributes with the same types."""
        back = dict(from_event(to_event(tuple(attributes.items()))))  # type: ignore[arg-type]
        attributes = {k: v for k, v in attributes.items()
                      if not (k in ("domain_name", "type_name", "event_name")
                              and (type(v) is str and not v))}
        assert back == attributes
        assert {k: type(v) for k, v in back.items()} == {k: type(v)
                                                          for k, v in attributes.items()}

    def test_an_elvin4_program_sees_the_notification(self) -> None:
        """The event built from a notification matches the notification's own expression."""
        event = to_event((("type_name", "Alarm"), ("severity", Int64(5))))
        assert compile_program('type_name == "Alarm" && int64(severity)').structured(event)

    def test_keys_travel_public(self) -> None:
        """The event carries the producer's public keys; event_keys reads them back."""
        public = K.public({(K.PRODUCER, 0, b"k")}, producer_side=True)
        event = to_event((("x", 1),), public)
        assert event_keys(event) == public
        assert from_event(event) == (("x", 1),)
