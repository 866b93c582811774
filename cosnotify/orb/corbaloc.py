"""``corbaloc:`` and ``corbaname:`` URLs, and CosNaming stringified names.

Strategy: pure functions over strings. :func:`parse` follows the grammar of
CORBA 3.0 section 13.6.10 (Interoperable Naming Service): a comma-separated
address list (``iiop`` addresses ``[:|iiop:][major.minor@]host[:port]``,
default version 1.0 and port 2809, IPv6 hosts in brackets; or ``rir:``,
which must stand alone), then ``/`` and a %-escaped key string, and for
``corbaname`` a ``#`` and a %-escaped stringified name whose key defaults to
``NameService``. The result is a frozen :class:`ObjectURL` with the object
key as bytes; :func:`ior_for` makes the IOR a client invokes on.

:func:`to_name` and :func:`to_string` convert between CosNaming names, as
(id, kind) pairs, and their stringified form (CosNaming 1.3 section 2.4.2:
``/`` separates components, ``.`` separates id from kind, ``\\`` escapes
both and itself). Errors are ``BAD_PARAM`` with the standard minor codes for
URLs (7 bad scheme, 8 bad address, 9 bad scheme-specific part) and
:class:`StringNameError` for names, which the naming service reports as
``CosNaming::NamingContext::InvalidName``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import attrs

from cosnotify.orb.exceptions import BAD_PARAM, COMPLETED_NO, OMGVMCID
from cosnotify.orb.ior import IOR, IIOPProfile

__all__ = [
    "DEFAULT_PORT",
    "IIOPAddress",
    "ObjectURL",
    "RIRAddress",
    "StringNameError",
    "UnknownAddress",
    "ior_for",
    "parse",
    "to_name",
    "to_string",
    "to_url",
    "url_escape",
    "url_unescape",
]

DEFAULT_PORT = 2809
DEFAULT_NAMING_KEY = b"NameService"
BAD_SCHEME, BAD_ADDRESS, BAD_SPECIFIC = OMGVMCID | 7, OMGVMCID | 8, OMGVMCID | 9
#: Characters a URL may carry unescaped (13.6.10.1).
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                  ";/:?@&=+$,-_.!~*'()")
# ASCII digits, and few of them: int() of a 5000-digit port is a ValueError.
_ADDRESS = re.compile(r"^(?:(?P<major>[0-9]{1,3})\.(?P<minor>[0-9]{1,3})@)?"
                      r"(?P<host>\[[0-9A-Fa-f:.]+\]|[^:\[\]@/]*)(?::(?P<port>[0-9]{0,5}))?$")


@attrs.frozen
class IIOPAddress:
    """One ``iiop`` address of a URL."""

    host: str
    port: int = DEFAULT_PORT
    version: tuple[int, int] = (1, 0)


@attrs.frozen
class RIRAddress:
    """The ``rir:`` address: resolve the key with resolve_initial_references."""


@attrs.frozen
class UnknownAddress:
    """An address for a protocol we do not speak, kept so callers can skip it."""

    protocol: str
    address: str


Address = IIOPAddress | RIRAddress | UnknownAddress


@attrs.frozen
class ObjectURL:
    """A parsed ``corbaloc`` or ``corbaname`` URL."""

    scheme: str
    addresses: tuple[Address, ...]
    key: bytes
    name: str = ""

    @property
    def is_rir(self) -> bool:
        return any(isinstance(a, RIRAddress) for a in self.addresses)

    def iiop_addresses(self) -> tuple[IIOPAddress, ...]:
        return tuple(a for a in self.addresses if isinstance(a, IIOPAddress))

    def name_components(self) -> list[tuple[str, str]]:
        """The corbaname's name as (id, kind) pairs (empty: the context itself)."""
        return to_name(self.name) if self.name else []


def _bad(minor: int, text: str) -> Exception:
    return BAD_PARAM(minor, COMPLETED_NO, text)


def url_unescape(text: str) -> bytes:
    """The octets of a %-escaped string (13.6.10.1); other characters as UTF-8."""
    out = bytearray()
    i = 0
    while i < len(text):
        char = text[i]
        if char == "%":
            pair = text[i + 1:i + 3]
            if len(pair) != 2 or not all(c in "0123456789abcdefABCDEF" for c in pair):
                raise _bad(BAD_SPECIFIC, f"bad escape {text[i:i + 3]!r} in {text!r}")
            out.append(int(pair, 16))
            i += 3
        else:
            out += char.encode("utf-8")
            i += 1
    return bytes(out)


def url_escape(data: bytes | str) -> str:
    """``data`` with every octet outside the URL-safe set written as %XX."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return "".join(chr(b) if chr(b) in _SAFE else f"%{b:02x}" for b in raw)


def _address(text: str, url: str) -> Address:
    if text == "rir:":
        return RIRAddress()
    if text.startswith(":"):
        rest = text[1:]
    elif text.startswith("iiop:"):
        rest = text[5:]
    else:
        protocol, sep, address = text.partition(":")
        if not sep or not protocol:
            raise _bad(BAD_ADDRESS, f"bad address {text!r} in {url!r}")
        return UnknownAddress(protocol, address)
    match = _ADDRESS.match(rest)
    if match is None:
        raise _bad(BAD_ADDRESS, f"bad iiop address {text!r} in {url!r}")
    host = match["host"]
    if host.startswith("["):
        host = host[1:-1]
    port_text = match["port"]
    port = int(port_text) if port_text else DEFAULT_PORT
    if not 0 < port < 65536:
        raise _bad(BAD_ADDRESS, f"bad port in {text!r}")
    version = (int(match["major"]), int(match["minor"])) if match["major"] else (1, 0)
    if version[0] != 1:
        raise _bad(BAD_ADDRESS, f"IIOP version {version[0]}.{version[1]} in {text!r}")
    return IIOPAddress(host or "localhost", port, version)


def parse(url: str) -> ObjectURL:
    """Parse a ``corbaloc:`` or ``corbaname:`` URL (13.6.10)."""
    text = url.strip()
    scheme, sep, rest = text.partition(":")
    scheme = scheme.lower()
    if not sep or scheme not in ("corbaloc", "corbaname"):
        raise _bad(BAD_SCHEME, f"not a corbaloc or corbaname URL: {url!r}")
    name = ""
    if scheme == "corbaname":
        rest, hash_sign, escaped_name = rest.partition("#")
        if hash_sign:
            name = url_unescape(escaped_name).decode("utf-8", "replace")
            if name:
                to_name(name)  # validate now
    address_text, _, key_text = rest.partition("/")
    if not address_text:
        raise _bad(BAD_ADDRESS, f"no address in {url!r}")
    addresses = tuple(_address(a, url) for a in address_text.split(","))
    if any(isinstance(a, RIRAddress) for a in addresses) and len(addresses) > 1:
        raise _bad(BAD_ADDRESS, f"rir: cannot be combined with other addresses: {url!r}")
    key = url_unescape(key_text)
    if scheme == "corbaname" and not key:
        key = DEFAULT_NAMING_KEY
    return ObjectURL(scheme, addresses, key, name)


def ior_for(url: ObjectURL, type_id: str = "") -> IOR:
    """An IOR with one IIOP profile per iiop address of ``url`` (no components)."""
    profiles = tuple(IIOPProfile(a.host, a.port, url.key, a.version) for a in url.iiop_addresses())
    if not profiles:
        raise _bad(BAD_ADDRESS, "the URL has no iiop address")
    return IOR(type_id, profiles)


# -- stringified names (CosNaming 1.3 section 2.4.2) ---------------------------------------


class StringNameError(ValueError):
    """A malformed stringified name; ``position`` is where parsing stopped."""

    def __init__(self, reason: str, text: str, position: int) -> None:
        super().__init__(f"{reason} at position {position} of {text!r}")
        self.reason = reason
        self.text = text
        self.position = position


def _split(text: str, separator: str, whole: str, base: int) -> list[tuple[str, int]]:
    """Split on unescaped ``separator``; pieces keep their escapes and start positions."""
    pieces: list[tuple[str, int]] = []
    start = 0
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\":
            if i + 1 >= len(text) or text[i + 1] not in "/.\\":
                raise StringNameError("bad escape", whole, base + i)
            i += 2
            continue
        if char == separator:
            pieces.append((text[start:i], base + start))
            start = i + 1
        i += 1
    pieces.append((text[start:], base + start))
    return pieces


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def to_name(text: str) -> list[tuple[str, str]]:
    """The (id, kind) components of a stringified name."""
    if not text:
        raise StringNameError("empty name", text, 0)
    components = []
    for piece, at in _split(text, "/", text, 0):
        if not piece:
            raise StringNameError("empty name component", text, at)
        if piece == ".":
            components.append(("", ""))
            continue
        parts = _split(piece, ".", text, at)
        if len(parts) > 2:
            raise StringNameError("more than one '.' in a component", text, parts[2][1] - 1)
        if len(parts) == 2 and not parts[1][0]:
            raise StringNameError("trailing '.' with an empty kind", text, parts[1][1] - 1)
        components.append((_unescape(parts[0][0]), _unescape(parts[1][0]) if len(parts) == 2 else ""))
    return components


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("/", "\\/").replace(".", "\\.")


def _pair(component: Any) -> tuple[str, str]:
    if isinstance(component, tuple):
        return component[0], component[1]
    return component.id, component.kind


def to_string(name: Iterable[Any]) -> str:
    """The stringified form of a name: (id, kind) pairs or NameComponent values."""
    out = []
    for component in name:
        ident, kind = _pair(component)
        if not ident and not kind:
            out.append(".")
        elif not kind:
            out.append(_escape(ident))
        else:
            out.append(f"{_escape(ident)}.{_escape(kind)}")
    if not out:
        raise StringNameError("empty name", "", 0)
    return "/".join(out)


def to_url(address: str, string_name: str) -> str:
    """``NamingContextExt::to_url``: a corbaname URL for ``address`` and a name."""
    if string_name:
        to_name(string_name)
    return f"corbaname:{address}#{url_escape(string_name)}"
