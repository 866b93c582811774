"""IORs, IIOP profiles, tagged components and code set negotiation (CORBA 3.0 13.6, 13.10, 15.7)."""

from __future__ import annotations

import json
import pathlib
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosnotify.orb import CORBA, cdr
from cosnotify.orb.codesets import (
    OUR_CODE_SETS,
    CodeSetComponent,
    CodeSetComponentInfo,
    CodeSetContext,
    codec_for,
    negotiate,
)
from cosnotify.orb.ior import (
    IOR,
    NIL_IOR,
    OMNIORB_ORB_TYPE,
    AlternateAddressComponent,
    CodeSetsComponent,
    IIOPProfile,
    OpaqueProfile,
    ORBTypeComponent,
    UnknownComponent,
    make_ior,
)
from tests.strategies import iors

VECTORS = pathlib.Path(__file__).parent.parent / "vectors"
OMNINAMES = json.loads((VECTORS / "ior_omninames.json").read_text())
NAMES = {"ISO-8859-1": cdr.ISO_8859_1, "UTF-8": cdr.UTF_8, "UTF-16": cdr.UTF_16}


class TestOmniNamesIOR:
    def test_decodes_as_catior_prints_it(self) -> None:
        """Type id, profile, host, port, key and components agree with omniORB's catior."""
        ior = IOR.from_string(OMNINAMES["ior"])
        text = "\n".join(OMNINAMES["catior"])
        assert ior.type_id == re.search(r'Type ID: "([^"]+)"', text).group(1)
        major, minor, host, port, key = re.search(
            r"IIOP (\d)\.(\d) (\S+) (\d+) 0x([0-9a-f]+)", text).groups()
        profile = ior.iiop_profile()
        assert profile is not None and len(ior.profiles) == 1
        assert (profile.version, profile.host, profile.port, profile.object_key.hex()) \
            == ((int(major), int(minor)), host, int(port), key)
        assert "TAG_ORB_TYPE omniORB" in text and profile.orb_type() == OMNIORB_ORB_TYPE
        code_sets = profile.code_sets()
        assert code_sets is not None
        assert code_sets.for_char_data.native_code_set \
            == NAMES[re.search(r"char native code set:\s+(\S+)", text).group(1)]
        assert code_sets.for_char_data.conversion_code_sets \
            == (NAMES[re.search(r"char conversion code sets:\s+(\S+)", text).group(1)],)
        assert code_sets.for_wchar_data.native_code_set \
            == NAMES[re.search(r"wchar native code set:\s+(\S+)", text).group(1)]
        persistent = re.search(r"TAG_OMNIORB_PERSISTENT_ID 0x([0-9a-f]+)", text).group(1)
        assert any(isinstance(c, UnknownComponent) and c.data.hex() == persistent
                   for c in profile.components)

    def test_reencodes_to_the_same_string(self) -> None:
        """Writing the parsed IOR back gives omniORB's exact string."""
        ior = IOR.from_string(OMNINAMES["ior"])
        assert ior.to_string() == OMNINAMES["ior"]

    def test_negotiation_with_omninames_picks_utf8(self) -> None:
        """Our UTF-8 is in omniORB's char conversion sets, so TCS-C is UTF-8; TCS-W UTF-16."""
        context = negotiate(IOR.from_string(OMNINAMES["ior"]).code_sets())
        assert context == CodeSetContext(cdr.UTF_8, cdr.UTF_16)


class TestRoundTrip:
    @settings(max_examples=100, deadline=None)
    @given(iors, st.booleans())
    def test_string_form(self, ior: IOR, little: bool) -> None:
        """IOR -> IOR: string -> IOR gives the same value in either byte order."""
        assert IOR.from_string(ior.to_string(little)) == ior

    @settings(max_examples=50, deadline=None)
    @given(iors, st.integers(0, 7))
    def test_inside_a_stream_at_any_offset(self, ior: IOR, offset: int) -> None:
        """An IOR marshalled as an object reference at any offset reads back equal."""
        data = cdr.encode(CORBA.TC_Object, ior, offset=offset)
        assert cdr.decode(CORBA.TC_Object, data, offset=offset) == (ior if ior.profiles else None)

    def test_profile_versions_and_components(self) -> None:
        """IIOP 1.0 bodies have no components; 1.1 and 1.2 keep known and unknown ones."""
        components = (ORBTypeComponent(OMNIORB_ORB_TYPE), CodeSetsComponent(OUR_CODE_SETS),
                      AlternateAddressComponent("backup", 2810), UnknownComponent(0x99, b"\x01\x02"))
        for version in [(1, 1), (1, 2)]:
            profile = IIOPProfile("host", 1234, b"\x00key", version, components)
            assert IIOPProfile.decode(profile.encode(False)) == profile
        old = IIOPProfile("host", 1234, b"key", (1, 0))
        assert IIOPProfile.decode(old.encode()) == old

    def test_multiple_profiles_and_opaque_ones(self) -> None:
        """TAG_MULTIPLE_COMPONENTS and unknown profiles survive untouched, in order."""
        ior = IOR("IDL:test/T:1.0", (OpaqueProfile(1, b"\x01\x02\x03"),
                                     IIOPProfile("a", 1, b"k", (1, 2)), OpaqueProfile(0x1234, b""),
                                     IIOPProfile("b", 2, b"k", (1, 1))))
        back = IOR.from_string(ior.to_string())
        assert back == ior
        assert ior.addresses() == [("a", 1), ("b", 2)]

    def test_unknown_iiop_major_version_stays_opaque(self) -> None:
        """An IIOP profile body of version 2.0 is kept as opaque data."""
        data = bytearray(IIOPProfile("h", 1, b"k").encode())
        data[1] = 2
        assert IIOPProfile.decode(bytes(data)) == OpaqueProfile(0, bytes(data))

    def test_alternate_addresses(self) -> None:
        """TAG_ALTERNATE_IIOP_ADDRESS adds to addresses()."""
        ior = make_ior("IDL:test/T:1.0", "main", 1, b"k",
                       components=(AlternateAddressComponent("other", 2),))
        assert ior.addresses() == [("main", 1), ("other", 2)]


class TestStrings:
    def test_case_insensitive_hex_and_prefix(self) -> None:
        """Upper-case hex digits and an upper- or lower-case prefix are accepted."""
        text = OMNINAMES["ior"]
        assert IOR.from_string("ior:" + text[4:].upper()) == IOR.from_string(text)
        assert IOR.from_string("  " + text + "\n") == IOR.from_string(text)

    @pytest.mark.parametrize("bad", ["", "IOR:", "IOR:0", "IOR:zz", "corbaloc::x/y", "IOR:02",
                                     "IOR:01000000", "IOR:00000000ffffffff"])
    def test_bad_strings_are_bad_param(self, bad: str) -> None:
        """Malformed IOR strings raise BAD_PARAM, never anything else."""
        with pytest.raises(CORBA.BAD_PARAM):
            IOR.from_string(bad)

    @settings(max_examples=200, deadline=None)
    @given(st.binary(max_size=60))
    def test_random_ior_bytes(self, data: bytes) -> None:
        """Random hex after IOR: is parsed or rejected with BAD_PARAM."""
        try:
            IOR.from_string("IOR:" + data.hex())
        except CORBA.BAD_PARAM:
            pass

    def test_nil(self) -> None:
        """The nil IOR has an empty type id and no profiles."""
        assert NIL_IOR.is_nil() and NIL_IOR.iiop_profile() is None and NIL_IOR.object_key is None
        assert IOR.from_string(NIL_IOR.to_string()) == NIL_IOR


class TestCodeSets:
    def test_component_and_context_encodings(self) -> None:
        """CodeSetComponentInfo and CodeSetContext are encapsulations (13.10.2.4-5)."""
        assert CodeSetComponentInfo.decode(OUR_CODE_SETS.encode(False)) == OUR_CODE_SETS
        context = CodeSetContext(cdr.ISO_8859_1, cdr.UTF_16)
        assert context.encode(True) == b"\x01\0\0\0\x01\0\x01\0\x09\x01\x01\0"
        assert CodeSetContext.decode(context.encode(False)) == context

    @pytest.mark.parametrize(("ours", "theirs", "expected"), [
        # Same native set.
        ((cdr.UTF_8, ()), (cdr.UTF_8, ()), cdr.UTF_8),
        # Our native set is one the server converts from.
        ((cdr.UTF_8, ()), (cdr.ISO_8859_1, (cdr.UTF_8,)), cdr.UTF_8),
        # The server's native set is one we convert to.
        ((cdr.UTF_8, (cdr.ISO_8859_1,)), (cdr.ISO_8859_1, ()), cdr.ISO_8859_1),
        # A shared conversion set.
        ((0x00010020, (cdr.ISO_8859_1,)), (0x00010100, (cdr.ISO_8859_1,)), cdr.ISO_8859_1),
        # Compatible but nothing shared: the fallback, UTF-8.
        ((cdr.UTF_8, ()), (cdr.ISO_8859_1, ()), cdr.UTF_8),
    ])
    def test_char_negotiation(self, ours: tuple[int, tuple[int, ...]], theirs: tuple[int, tuple[int, ...]],
                              expected: int) -> None:
        """The TCS-C choice follows CORBA 3.0 13.10.2.6 step by step."""
        wide = CodeSetComponent(cdr.UTF_16)
        client = CodeSetComponentInfo(CodeSetComponent(*ours), wide)
        server = CodeSetComponentInfo(CodeSetComponent(*theirs), wide)
        assert negotiate(server, client).char_data == expected

    def test_incompatible_sets(self) -> None:
        """No common set and an unknown native set: CODESET_INCOMPATIBLE."""
        server = CodeSetComponentInfo(CodeSetComponent(0x10020001), CodeSetComponent(cdr.UTF_16))
        with pytest.raises(CORBA.CODESET_INCOMPATIBLE):
            negotiate(server)

    def test_no_component_means_latin1_and_no_wchar(self) -> None:
        """Without TAG_CODE_SETS: ISO-8859-1 for char, no wchar set (13.10.2.6)."""
        context = negotiate(None)
        assert context == CodeSetContext(cdr.ISO_8859_1, 0)
        codec = codec_for(context, True)
        with pytest.raises(CORBA.BAD_PARAM):
            cdr.encode(CORBA.TC_wstring, "x", codec)
        assert codec_for(None, False) == cdr.Codec(False, cdr.ISO_8859_1, 0)

    def test_codec_for_rejects_unknown_char_sets(self) -> None:
        """A CodeSets context naming a char set we cannot convert is CODESET_INCOMPATIBLE."""
        with pytest.raises(CORBA.CODESET_INCOMPATIBLE):
            codec_for(CodeSetContext(0x10020001, cdr.UTF_16), True)
        assert codec_for(CodeSetContext(cdr.UTF_8, 0x10020001), True).wchar_set == 0
