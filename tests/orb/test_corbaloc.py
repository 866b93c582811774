"""corbaloc/corbaname URLs (CORBA 3.0 13.6.10) and stringified names (CosNaming 2.4.2)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosnotify.orb import CORBA
from cosnotify.orb.corbaloc import (
    IIOPAddress,
    RIRAddress,
    StringNameError,
    UnknownAddress,
    ior_for,
    parse,
    to_name,
    to_string,
    to_url,
    url_escape,
    url_unescape,
)


class TestCorbaloc:
    def test_simple(self) -> None:
        """corbaloc::host:port/key is IIOP 1.0 at host:port with that key."""
        url = parse("corbaloc::127.0.0.1:2809/NameService")
        assert url.scheme == "corbaloc"
        assert url.addresses == (IIOPAddress("127.0.0.1", 2809, (1, 0)),)
        assert url.key == b"NameService"

    def test_several_addresses_versions_and_default_port(self) -> None:
        """Comma-separated addresses; version@ prefixes; missing ports are 2809."""
        url = parse("corbaloc:iiop:1.2@host1:3000,:host2,iiop:[::1]:4000/a/b")
        assert url.addresses == (IIOPAddress("host1", 3000, (1, 2)), IIOPAddress("host2", 2809, (1, 0)),
                                 IIOPAddress("::1", 4000, (1, 0)))
        assert url.key == b"a/b"

    def test_escaped_key(self) -> None:
        """%XX escapes in the key become octets, including NUL and 0xff."""
        url = parse("corbaloc::h/%00ab%FF%2f")
        assert url.key == b"\x00ab\xff/"

    def test_rir(self) -> None:
        """corbaloc:rir:/NameService names an initial reference."""
        url = parse("corbaloc:rir:/NameService")
        assert url.addresses == (RIRAddress(),) and url.is_rir and url.key == b"NameService"

    def test_empty_host_is_localhost_and_unknown_protocols_are_kept(self) -> None:
        """An empty iiop address means the local host; other protocols are left for the ORB to skip."""
        url = parse("corbaloc::,ssliop:secure:4443/k")
        assert url.addresses == (IIOPAddress("localhost"), UnknownAddress("ssliop", "secure:4443"))
        assert url.iiop_addresses() == (IIOPAddress("localhost"),)

    @pytest.mark.parametrize(("text", "minor"), [
        ("corbalocx::h/k", 7), ("http://h/k", 7), ("corbaloc:", 8), ("corbaloc:/k", 8),
        ("corbaloc::h:99999/k", 8), ("corbaloc::h:port/k", 8), ("corbaloc:rir:,:h/k", 8),
        ("corbaloc::h/%4", 9), ("corbaloc::h/%zz", 9), ("corbaloc:iiop:1.x@h/k", 8),
    ])
    def test_errors_are_bad_param_with_standard_minors(self, text: str, minor: int) -> None:
        """Bad scheme 7, bad address 8, bad scheme-specific part 9 (OMG minor codes)."""
        with pytest.raises(CORBA.BAD_PARAM) as info:
            parse(text)
        assert info.value.minor == CORBA.OMGVMCID | minor

    def test_ior_for(self) -> None:
        """The IOR of a corbaloc has one IIOP profile per iiop address, no components."""
        ior = ior_for(parse("corbaloc:iiop:1.2@a:1,:b:2/key"), "IDL:x:1.0")
        assert [(p.host, p.port, p.version, p.object_key) for p in ior.iiop_profiles()] \
            == [("a", 1, (1, 2), b"key"), ("b", 2, (1, 0), b"key")]
        with pytest.raises(CORBA.BAD_PARAM):
            ior_for(parse("corbaloc:rir:/x"))

    @settings(max_examples=100, deadline=None)
    @given(st.binary(max_size=30))
    def test_key_escape_roundtrip(self, key: bytes) -> None:
        """url_unescape(url_escape(key)) == key for any octets."""
        assert url_unescape(url_escape(key)) == key
        assert parse(f"corbaloc::h/{url_escape(key)}").key == key


class TestCorbaname:
    def test_name_after_hash(self) -> None:
        """corbaname::host#a/b.c resolves a/b.c in the NameService (the default key)."""
        url = parse("corbaname::127.0.0.1:2809#NotifyEventChannelFactory/x.y")
        assert url.key == b"NameService"
        assert url.name_components() == [("NotifyEventChannelFactory", ""), ("x", "y")]

    def test_rir_and_escaped_names(self) -> None:
        """corbaname:rir:#... uses the NameService initial reference; the name is %-unescaped."""
        url = parse("corbaname:rir:#a%20b/c%2Fd")
        assert url.is_rir and url.key == b"NameService"
        assert url.name == "a b/c/d"
        assert url.name_components() == [("a b", ""), ("c", ""), ("d", "")]

    def test_explicit_key_and_no_name(self) -> None:
        """A key before # is used; no # means the naming context itself."""
        url = parse("corbaname::h:1/Other")
        assert url.key == b"Other" and url.name_components() == []

    def test_bad_name_is_rejected(self) -> None:
        """A corbaname with a malformed name fails when parsed."""
        with pytest.raises(StringNameError):
            parse("corbaname::h#a//b")

    def test_to_url(self) -> None:
        """to_url escapes the name's unsafe characters (NamingContextExt::to_url)."""
        assert to_url(":myhost:2809", "a b/c") == "corbaname::myhost:2809#a%20b/c"
        assert parse(to_url(":myhost:2809", "a b/c")).name == "a b/c"


class TestStringifiedNames:
    @pytest.mark.parametrize(("text", "name"), [
        ("a", [("a", "")]),
        ("a.b/c.d", [("a", "b"), ("c", "d")]),
        (".kind", [("", "kind")]),
        (".", [("", "")]),
        ("a/./b", [("a", ""), ("", ""), ("b", "")]),
        ("a\\.b.c\\/d", [("a.b", "c/d")]),
        ("back\\\\slash", [("back\\slash", "")]),
    ])
    def test_parse_and_print(self, text: str, name: list[tuple[str, str]]) -> None:
        """'/' separates components, '.' id from kind, '\\' escapes; printing inverts parsing."""
        assert to_name(text) == name
        assert to_string(name) == text

    @pytest.mark.parametrize("bad", ["", "/", "a/", "/a", "a//b", "a.b.c", "a.", "a\\x", "a\\"])
    def test_malformed_names(self, bad: str) -> None:
        """Empty components, two dots, a trailing dot or a bad escape are InvalidName material."""
        with pytest.raises(StringNameError):
            to_name(bad)

    def test_name_components_objects(self) -> None:
        """to_string also takes objects with id and kind (CosNaming.NameComponent)."""

        class NameComponent:
            def __init__(self, id: str, kind: str) -> None:
                self.id, self.kind = id, kind

        assert to_string([NameComponent("a", "b"), NameComponent("c", "")]) == "a.b/c"
        with pytest.raises(StringNameError):
            to_string([])

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.tuples(st.text(max_size=6), st.text(max_size=6)), min_size=1, max_size=4))
    def test_roundtrip(self, name: list[tuple[str, str]]) -> None:
        """to_name(to_string(n)) == n for any name, whatever characters it holds."""
        assert to_name(to_string(name)) == name
