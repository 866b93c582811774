"""Elvin 4 security keys: the producer/consumer key schemes (seed §7.4, §7.4.8, §7.4.15).

Strategy: the seed defines the ``Keys`` structure (a list of key schemes,
each a list of key sets of opaque keys) and how it is used -- "Delivery can
be specified as requiring the consumer to have a matching key
(deliver_insecure is not set). Alternatively, the producer can not require
that the consumer have a key, but if one or more are supplied, then at least
one MUST match" (§7.4.15) -- but its "later section" on schemes was never
written (§8.2.2 reads "null"). We use the schemes every Elvin 4 router
speaks (Mantara elvind, Avis), with their numbers:

==========  ===============  ========  =============================================
scheme id   name             key sets  a notification matches a subscription when
==========  ===============  ========  =============================================
1           SHA-1-Dual       2         both the producer and the consumer set match
2           SHA-1-Producer   1         SHA-1(producer's private key) is a consumer key
3           SHA-1-Consumer   1         SHA-1(consumer's private key) is a producer key
==========  ===============  ========  =============================================

A producer holds private keys of the producer scheme and public keys of the
consumer scheme; a consumer the other way round. :func:`public` turns either
side's raw keys into the public form (SHA-1 digests, 20 bytes), so only
public key material is ever kept or carried through a channel.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Final

import attrs

from cosnotify.protocols.elvin.packets import Keys

__all__ = ["BAD_KEY_INDEX", "BAD_KEY_SCHEME", "CONSUMER", "DUAL", "MAX_KEYS", "NO_KEYS",
           "PRODUCER", "SCHEMES", "BadKeys", "PublicKeys", "RawKey", "check", "flatten",
           "matches", "matches_either", "pack", "public", "unpack"]

DUAL: Final = 1
PRODUCER: Final = 2
CONSUMER: Final = 3
#: scheme id -> (name for Supported-Key-Schemes, number of key sets).
SCHEMES: Final = {DUAL: ("SHA-1-Dual", 2), PRODUCER: ("SHA-1-Producer", 1),
                  CONSUMER: ("SHA-1-Consumer", 1)}
#: Nack codes (§7.4.2).
BAD_KEY_SCHEME: Final = 1004
BAD_KEY_INDEX: Final = 1005
#: Keys one holder may hold (cosnotify's limit; the seed sets none): a connection's
#: notification keys, its subscription keys, one subscription's, one quench's, and one
#: notification's own. Each notification carries its producer's public keys, sealed, to
#: every consumer (mapping.py): unbounded, one client's keys cost every delivery (review 97).
MAX_KEYS: Final = 256

#: (scheme, key set index, key bytes): one raw key as a client registered it.
RawKey = tuple[int, int, bytes]


class BadKeys(ValueError):
    """Keys naming an unknown scheme or key set: the Nack ``code`` and its ``args``."""

    def __init__(self, message: str, code: int, args: tuple[int, ...]) -> None:
        super().__init__(message)
        self.code = code
        self.nack_args = args


def _id32(value: int) -> int:
    """An id32 as the int32 Value a Nack argument is (§7.4: "the signedness of the
    underlying type does not matter"): the same 32 bits."""
    return value - (1 << 32) if value >> 31 else value


def check(keys: Keys) -> None:
    """BadKeys (BAD_KEY_SCHEME, BAD_KEY_INDEX) unless every scheme and set is known."""
    for ksl in keys:
        known = SCHEMES.get(ksl.scheme)
        if known is None:
            raise BadKeys(f"unknown key scheme {ksl.scheme}", BAD_KEY_SCHEME,
                          (_id32(ksl.scheme),))
        if len(ksl.key_sets) != known[1]:
            # §7.4.2: BAD_KEY_INDEX's arguments are "scheme_id, id32; index, int32": the
            # first index missing (too few sets) or extra (too many) (review 130)
            raise BadKeys(f"key scheme {known[0]} has {known[1]} key set(s), not "
                            f"{len(ksl.key_sets)}", BAD_KEY_INDEX,
                            (ksl.scheme, min(len(ksl.key_sets), known[1])))


def flatten(keys: Keys) -> set[RawKey]:
    """The raw keys of a checked ``Keys``."""
    return {(ksl.scheme, index, key) for ksl in keys
            for index, key_set in enumerate(ksl.key_sets) for key in key_set}


def _sha1(key: bytes) -> bytes:
    return hashlib.sha1(key).digest()


@attrs.frozen
class PublicKeys:
    """One side's keys in public form, per (scheme, key set index).

    ``producer``/``consumer``: SHA-1-Producer and SHA-1-Consumer public keys;
    ``dual_producer``/``dual_consumer``: the two sets of SHA-1-Dual.
    """

    producer: frozenset[bytes] = frozenset()
    consumer: frozenset[bytes] = frozenset()
    dual_producer: frozenset[bytes] = frozenset()
    dual_consumer: frozenset[bytes] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.producer or self.consumer or self.dual_producer or self.dual_consumer)

    def union(self, other: PublicKeys) -> PublicKeys:
        return PublicKeys(self.producer | other.producer, self.consumer | other.consumer,
                          self.dual_producer | other.dual_producer,
                          self.dual_consumer | other.dual_consumer)


#: The empty key set.
NO_KEYS: Final = PublicKeys()


def public(raw: Iterable[RawKey], *, producer_side: bool) -> PublicKeys:
    """The public form of a producer's (notification) or a consumer's (subscription) keys.

    The producer's private keys are its producer-scheme keys (and the first
    dual set); the consumer's are its consumer-scheme keys (and the second
    dual set). Private keys are hashed; public keys are kept as given.
    """
    sets: list[set[bytes]] = [set(), set(), set(), set()]
    for scheme, index, key in raw:
        if scheme == PRODUCER:
            sets[0].add(_sha1(key) if producer_side else key)
        elif scheme == CONSUMER:
            sets[1].add(key if producer_side else _sha1(key))
        elif index == 0:
            sets[2].add(_sha1(key) if producer_side else key)
        else:
            sets[3].add(key if producer_side else _sha1(key))
    return PublicKeys(*(frozenset(s) for s in sets))


def matches(notification: PublicKeys, subscription: PublicKeys) -> bool:
    """Do a notification's keys and a subscription's keys match (a secure match)?"""
    if notification.producer & subscription.producer:
        return True
    if notification.consumer & subscription.consumer:
        return True
    return bool(notification.dual_producer & subscription.dual_producer
                and notification.dual_consumer & subscription.dual_consumer)


def matches_either(notification: PublicKeys, first: PublicKeys, second: PublicKeys) -> bool:
    """``matches(notification, first.union(second))``, without making the union: a
    subscription's keys are its own and its connection's, kept apart so the connection's
    are not copied into each of its subscriptions."""
    n = notification
    if n.producer and (n.producer & first.producer or n.producer & second.producer):
        return True
    if n.consumer and (n.consumer & first.consumer or n.consumer & second.consumer):
        return True
    return bool((n.dual_producer & first.dual_producer or n.dual_producer & second.dual_producer)
                and (n.dual_consumer & first.dual_consumer
                     or n.dual_consumer & second.dual_consumer))


_TAGS: Final = ("producer", "consumer", "dual_producer", "dual_consumer")


def pack(keys: PublicKeys) -> bytes:
    """Public keys as one opaque value: per key, a tag byte (1-4), a length byte, the key.

    Carried through a channel in the event's variable header (mapping.py).
    """
    out = bytearray()
    for tag, name in enumerate(_TAGS, 1):
        for key in sorted(getattr(keys, name)):
            if len(key) <= 255:
                out += bytes((tag, len(key))) + key
    return bytes(out)


def unpack(data: bytes) -> PublicKeys:
    """:func:`pack`'s inverse; malformed data gives what was read before it."""
    sets: list[set[bytes]] = [set(), set(), set(), set()]
    at = 0
    while at + 2 <= len(data):
        tag, n = data[at], data[at + 1]
        if not 1 <= tag <= 4 or at + 2 + n > len(data):
            break
        sets[tag - 1].add(bytes(data[at + 2:at + 2 + n]))
        at += 2 + n
    return PublicKeys(*(frozenset(s) for s in sets))
