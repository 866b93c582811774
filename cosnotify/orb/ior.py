"""Interoperable Object References (CORBA 3.0 sections 13.6.2-13.6.6, 15.7.2).

Strategy: an IOR is a frozen value: a type id and a tuple of profiles. IIOP
profiles (tag 0, body versions 1.0, 1.1 and 1.2, 15.7.2) are parsed into
host, port, object key and tagged components; the components we use are
parsed too (TAG_ORB_TYPE 0, TAG_CODE_SETS 1, TAG_ALTERNATE_IIOP_ADDRESS 3)
and every other component, like every other profile (including
TAG_MULTIPLE_COMPONENTS), is kept as opaque bytes so it survives a round trip.

Marshalling goes through :mod:`cosnotify.orb.cdr`; malformed input raises
``MARSHAL`` from there. An IOR's CDR does not depend on where it sits in a
stream as long as it starts 4-aligned, so :func:`ior_bytes` caches it. IOR
strings (type id, host) are treated as ISO-8859-1, i.e. octet-transparent;
they are ASCII in practice.
"""

from __future__ import annotations

import attrs

from cosnotify.orb.cdr import Decoder, Encoder
from cosnotify.orb.cdr_core import ISO_8859_1, Codec, Minor
from cosnotify.orb.codesets import TAG_CODE_SETS, CodeSetComponentInfo
from cosnotify.orb.exceptions import BAD_PARAM, COMPLETED_NO, MARSHAL, OMGVMCID, SystemException

__all__ = [
    "IOR",
    "NIL_IOR",
    "OMNIORB_ORB_TYPE",
    "AlternateAddressComponent",
    "CodeSetsComponent",
    "IIOPProfile",
    "ORBTypeComponent",
    "OpaqueProfile",
    "UnknownComponent",
    "ior_bytes",
    "make_ior",
    "read_ior",
    "read_ior_at",
    "write_ior",
]

TAG_INTERNET_IOP = 0
TAG_MULTIPLE_COMPONENTS = 1
TAG_ORB_TYPE = 0
TAG_ALTERNATE_IIOP_ADDRESS = 3
#: omniORB's registered ORB type, "ATT\\0".
OMNIORB_ORB_TYPE = 0x41545400


def _codec(little_endian: bool) -> Codec:
    return Codec(little_endian, ISO_8859_1, 0)


def _encapsulation(little_endian: bool) -> Encoder:
    return Encoder.encapsulation(_codec(little_endian))


def _open(data: bytes) -> Decoder:
    return Decoder.from_encapsulation(data, _codec(True))


# -- tagged components (13.6.2.2) -------------------------------------------------------------


@attrs.frozen
class ORBTypeComponent:
    """TAG_ORB_TYPE: the vendor ORB type of the object's ORB (13.6.6.1)."""

    orb_type: int
    tag = TAG_ORB_TYPE

    def encode(self, little_endian: bool = True) -> bytes:
        encoder = _encapsulation(little_endian)
        encoder.write_ulong(self.orb_type)
        return encoder.getvalue()


@attrs.frozen
class CodeSetsComponent:
    """TAG_CODE_SETS: the code sets the object's ORB uses (13.10.2.4)."""

    info: CodeSetComponentInfo
    tag = TAG_CODE_SETS

    def encode(self, little_endian: bool = True) -> bytes:
        return self.info.encode(little_endian)


@attrs.frozen
class AlternateAddressComponent:
    """TAG_ALTERNATE_IIOP_ADDRESS: another host and port for the object (15.7.3)."""

    host: str
    port: int
    tag = TAG_ALTERNATE_IIOP_ADDRESS

    def encode(self, little_endian: bool = True) -> bytes:
        encoder = _encapsulation(little_endian)
        encoder.write_string(self.host)
        encoder.write_ushort(self.port)
        return encoder.getvalue()


@attrs.frozen
class UnknownComponent:
    """Any other component, kept as its raw data."""

    tag: int
    data: bytes

    def encode(self, little_endian: bool = True) -> bytes:
        return self.data


Component = ORBTypeComponent | CodeSetsComponent | AlternateAddressComponent | UnknownComponent


def decode_component(tag: int, data: bytes) -> Component:
    """Parse one tagged component; known tags with malformed data raise MARSHAL."""
    if tag == TAG_ORB_TYPE:
        return ORBTypeComponent(_open(data).read_ulong())
    if tag == TAG_CODE_SETS:
        return CodeSetsComponent(CodeSetComponentInfo.decode(data))
    if tag == TAG_ALTERNATE_IIOP_ADDRESS:
        decoder = _open(data)
        return AlternateAddressComponent(decoder.read_string(), decoder.read_ushort())
    return UnknownComponent(tag, data)


# -- profiles -----------------------------------------------------------------------------


@attrs.frozen
class IIOPProfile:
    """TAG_INTERNET_IOP: ``IIOP::ProfileBody`` 1.0, 1.1 or 1.2 (15.7.2).

    Components only exist in body versions 1.1 and later.
    """

    host: str
    port: int
    object_key: bytes
    version: tuple[int, int] = (1, 2)
    components: tuple[Component, ...] = ()
    tag = TAG_INTERNET_IOP

    def encode(self, little_endian: bool = True) -> bytes:
        """The profile data: an encapsulation of the ProfileBody."""
        encoder = _encapsulation(little_endian)
        encoder.write_octet(self.version[0])
        encoder.write_octet(self.version[1])
        encoder.write_string(self.host)
        encoder.write_ushort(self.port)
        encoder.write_octet_sequence(self.object_key)
        if self.version >= (1, 1):
            encoder.write_ulong(len(self.components))
            for component in self.components:
                encoder.write_ulong(component.tag)
                encoder.write_octet_sequence(component.encode(little_endian))
        return encoder.getvalue()

    @classmethod
    def decode(cls, data: bytes) -> IIOPProfile | OpaqueProfile:
        """Parse profile data; a body of an unknown major version stays opaque."""
        decoder = _open(data)
        version = (decoder.read_octet(), decoder.read_octet())
        if version[0] != 1:
            return OpaqueProfile(TAG_INTERNET_IOP, data)
        host = decoder.read_string()
        port = decoder.read_ushort()
        key = decoder.read_octet_sequence()
        components: list[Component] = []
        if version >= (1, 1) and not decoder.at_end():
            count = decoder.read_ulong()
            if count * 8 > decoder.remaining():
                raise MARSHAL(Minor.INVALID_IOR, COMPLETED_NO, f"{count} components cannot fit")
            for _ in range(count):
                tag = decoder.read_ulong()
                components.append(decode_component(tag, decoder.read_octet_sequence()))
        return cls(host, port, key, version, tuple(components))

    def component(self, kind: type[Component]) -> Component | None:
        """The first component of class ``kind``, or None."""
        return next((c for c in self.components if isinstance(c, kind)), None)

    def code_sets(self) -> CodeSetComponentInfo | None:
        found = self.component(CodeSetsComponent)
        return found.info if isinstance(found, CodeSetsComponent) else None

    def orb_type(self) -> int | None:
        found = self.component(ORBTypeComponent)
        return found.orb_type if isinstance(found, ORBTypeComponent) else None


@attrs.frozen
class OpaqueProfile:
    """A profile we do not interpret (TAG_MULTIPLE_COMPONENTS, other transports)."""

    tag: int
    data: bytes

    def encode(self, little_endian: bool = True) -> bytes:
        return self.data


Profile = IIOPProfile | OpaqueProfile


def decode_profile(tag: int, data: bytes) -> Profile:
    """Parse one ``IOP::TaggedProfile``'s data."""
    if tag == TAG_INTERNET_IOP:
        return IIOPProfile.decode(data)
    return OpaqueProfile(tag, data)


# -- the IOR ----------------------------------------------------------------------------------


@attrs.frozen
class IOR:
    """``IOP::IOR``: a type id and profiles; no profiles means the nil reference."""

    type_id: str
    profiles: tuple[Profile, ...] = ()

    def is_nil(self) -> bool:
        return not self.profiles

    def iiop_profiles(self) -> tuple[IIOPProfile, ...]:
        return tuple(p for p in self.profiles if isinstance(p, IIOPProfile))

    def iiop_profile(self) -> IIOPProfile | None:
        """The first IIOP profile, the one a client uses first."""
        return next(iter(self.iiop_profiles()), None)

    @property
    def object_key(self) -> bytes | None:
        profile = self.iiop_profile()
        return profile.object_key if profile else None

    def code_sets(self) -> CodeSetComponentInfo | None:
        profile = self.iiop_profile()
        return profile.code_sets() if profile else None

    def addresses(self) -> list[tuple[str, int]]:
        """Every (host, port) of every IIOP profile, alternates after primaries."""
        found: list[tuple[str, int]] = []
        for profile in self.iiop_profiles():
            found.append((profile.host, profile.port))
            found.extend((c.host, c.port) for c in profile.components
                         if isinstance(c, AlternateAddressComponent))
        return list(dict.fromkeys(found))

    def to_bytes(self, little_endian: bool = True) -> bytes:
        """The IOR as an encapsulation (the content of a stringified IOR)."""
        encoder = _encapsulation(little_endian)
        write_ior(encoder, self)
        return encoder.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> IOR:
        return read_ior(_open(data))

    def to_string(self, little_endian: bool = True) -> str:
        """``IOR:`` and the hex of the encapsulated IOR (13.6.6)."""
        return "IOR:" + self.to_bytes(little_endian).hex()

    @classmethod
    def from_string(cls, text: str) -> IOR:
        """Parse an ``IOR:`` string (either case); ``BAD_PARAM`` if it is not one."""
        text = text.strip()
        if text[:4].upper() != "IOR:":
            raise BAD_PARAM(OMGVMCID | 7, COMPLETED_NO, f"not an IOR string: {text[:20]!r}")
        try:
            data = bytes.fromhex(text[4:])
        except ValueError:
            raise BAD_PARAM(OMGVMCID | 9, COMPLETED_NO, "IOR string is not hexadecimal") from None
        try:
            return cls.from_bytes(data)
        except SystemException as exc:
            raise BAD_PARAM(OMGVMCID | 9, COMPLETED_NO, f"malformed IOR: {exc}") from exc


NIL_IOR = IOR("", ())


def read_ior(decoder: Decoder) -> IOR:
    """Read an ``IOP::IOR`` from a stream."""
    type_id = decoder.read_string()
    count = decoder.read_ulong()
    if count * 8 > decoder.remaining():
        raise MARSHAL(Minor.INVALID_IOR, COMPLETED_NO, f"{count} profiles cannot fit")
    profiles = []
    for _ in range(count):
        tag = decoder.read_ulong()
        profiles.append(decode_profile(tag, decoder.read_octet_sequence()))
    return IOR(type_id, tuple(profiles))


def write_ior(encoder: Encoder, ior: IOR) -> None:
    """Write an ``IOP::IOR`` to a stream."""
    encoder.align(4)
    encoder.write_octets(ior_bytes(ior, encoder.codec))


_ior_cache: dict[tuple[IOR, bool], bytes] = {}


def ior_bytes(ior: IOR, codec: Codec) -> bytes:
    """The CDR of ``ior`` starting at a 4-aligned stream offset."""
    if not isinstance(ior, IOR):
        raise BAD_PARAM(OMGVMCID | 41, COMPLETED_NO, f"objref_encoder returned {ior!r}, not an IOR")
    key = (ior, codec.little_endian)
    found = _ior_cache.get(key)
    if found is None:
        encoder = Encoder(_codec(codec.little_endian))
        encoder.write_string(ior.type_id)
        encoder.write_ulong(len(ior.profiles))
        for profile in ior.profiles:
            encoder.write_ulong(profile.tag)
            encoder.write_octet_sequence(profile.encode(codec.little_endian))
        found = encoder.getvalue()
        if len(_ior_cache) > 512:
            _ior_cache.clear()
        _ior_cache[key] = found
    return found


def read_ior_at(data: bytes, pos: int, codec: Codec) -> tuple[IOR, int]:
    """Read an IOR at index ``pos`` of a buffer whose index 0 is 8-aligned."""
    decoder = Decoder(data, _codec(codec.little_endian), pos=pos)
    return read_ior(decoder), decoder.pos


def make_ior(type_id: str, host: str, port: int, object_key: bytes, *,
             version: tuple[int, int] = (1, 2),
             components: tuple[Component, ...] | None = None) -> IOR:
    """An IOR with one IIOP profile; by default it advertises our code sets."""
    if components is None:
        from cosnotify.orb.codesets import OUR_CODE_SETS

        components = (CodeSetsComponent(OUR_CODE_SETS),) if version >= (1, 1) else ()
    return IOR(type_id, (IIOPProfile(host, port, bytes(object_key), version, components),))
