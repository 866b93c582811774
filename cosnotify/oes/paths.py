"""Pathnames, names, contents and attributes of an OES tree, checked; the tree's limits.

Strategy: everything a client names or sends is checked here, before the tree
changes anything, against the seed's rules ("Basic Concepts", Tree; the NODE
and SUBSCRIPTION tables) or a documented limit of cosnotify's (module
constants; docs/history.md, "OES trees"). A check returns the value in the
tree's own form (a path is a tuple of names, root first) or raises
:class:`~cosnotify.oes.errors.InvalidRequest` with the reason.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import quote

from cosnotify.filter.oes.limits import INFINITE, MAX_UPL, Path, format_path
from cosnotify.oes.errors import InvalidRequest

__all__ = [
    "MAX_CONTENT_BYTES",
    "MAX_CONTRACTS",
    "MAX_LEASE",
    "MAX_LEVELS",
    "MAX_NAME_CHARS",
    "MAX_NODES",
    "MAX_SUBSCRIPTIONS",
    "MAX_TREE_SUBSCRIPTIONS",
    "SEPARATOR",
    "check_content",
    "check_flag",
    "check_lease",
    "check_limit",
    "format_path",
    "parse_path",
    "record_suffix",
]

#: The path separator: "the reverse solidus (\\) character" (Tree).
SEPARATOR: Final = "\\"
#: NODE table: "Nodename Char[64]", in UCS-2 code units ("UCS-2 ... is assumed to be the
#: character set"): a character outside the BMP takes two (a UTF-16 surrogate pair).
MAX_NAME_CHARS: Final = 64
#: NODE table: "Content Char[10240] Base64 encoded binary content": 10,240 base64
#: characters hold 7,680 bytes.
MAX_CONTENT_BYTES: Final = 7680
#: Levels below the root, at most (cosnotify's: the seed sets none). A pathname is
#: then at most 32 * 65 = 2,080 characters.
MAX_LEVELS: Final = 32
#: Nodes one tree holds at most, the root included (cosnotify's).
MAX_NODES: Final = 100_000
#: Subscription contracts one tree holds at most (cosnotify's).
MAX_CONTRACTS: Final = 10_000
#: Subscriptions one contract holds at most (cosnotify's).
MAX_SUBSCRIPTIONS: Final = 1024
#: Subscriptions all of a tree's contracts hold at most (cosnotify's: each is a constraint
#: of a filter of the channel, so this bounds the filters' memory and the index's size).
MAX_TREE_SUBSCRIPTIONS: Final = 100_000
#: The longest lease, seconds (cosnotify's: 30 days); a lease is renewed for more.
MAX_LEASE: Final = 30 * 24 * 3600.0
#: A pathname longer than this is refused before it is split.
_MAX_PATHNAME: Final = MAX_LEVELS * (MAX_NAME_CHARS + 1)
#: Valid pathnames seen lately, and their paths (at most this many: a few MB).
_PARSED: dict[str, Path] = {}
_PARSED_KEPT: Final = 4096


def parse_path(pathname: Any, what: str = "pathname") -> Path:
    """The names of ``pathname`` (``\\Asia\\India`` -> ``("Asia", "India")``; the root
    is ``\\`` or ``""``), or InvalidRequest saying what is wrong with it.

    Tree: "The nodename of any non-root node is a character string at least one
    character in length", and "the legal set of characters that may appear in a
    nodename is UCS-2 less the path separator character". A name holds at most
    :data:`MAX_NAME_CHARS` characters, none of them NUL (no CORBA string carries it)
    or a lone surrogate (no text encoding does), counted in UCS-2 units; a path at most
    :data:`MAX_LEVELS`.
    """
    if type(pathname) is not str:
        raise InvalidRequest("", f"a {what} is a string, not {type(pathname).__name__}")
    found = _PARSED.get(pathname)
    if found is not None:
        return found
    if pathname in ("", SEPARATOR):
        return ()
    shown = pathname if len(pathname) <= 80 else pathname[:77] + "..."
    if len(pathname) > _MAX_PATHNAME:
        raise InvalidRequest(shown, f"a {what} has at most {MAX_LEVELS} levels of "
                                    f"{MAX_NAME_CHARS} characters")
    if pathname[0] != SEPARATOR:
        raise InvalidRequest(shown, f"a {what} starts with the separator '\\' (the root)")
    names = tuple(pathname[1:].split(SEPARATOR))
    if len(names) > MAX_LEVELS:
        raise InvalidRequest(shown, f"a {what} has at most {MAX_LEVELS} levels, not "
                                    f"{len(names)}")
    for name in names:
        check_name(name, shown)
    if len(_PARSED) >= _PARSED_KEPT:
        _PARSED.clear()
    _PARSED[pathname] = names
    return names


def check_name(name: str, shown: str) -> None:
    """One nodename (see :func:`parse_path`)."""
    if not name:
        raise InvalidRequest(shown, "a nodename is at least one character (an empty "
                                    "name: the separator twice, or at the end)")
    units = len(name)
    if units > MAX_NAME_CHARS // 2 and not name.isascii():
        units += sum(1 for c in name if c > "\uffff")  # a surrogate pair in UCS-2/UTF-16
    if units > MAX_NAME_CHARS:
        raise InvalidRequest(shown, f"nodename {name[:20]!r}... is {units} UCS-2 characters "
                                    f"long; the NODE table's Char[{MAX_NAME_CHARS}] holds "
                                    f"{MAX_NAME_CHARS}")
    if "\x00" in name:
        raise InvalidRequest(shown, "a nodename may not hold NUL")
    if any("\ud800" <= c <= "\udfff" for c in name):
        raise InvalidRequest(shown, "a nodename may not hold a lone surrogate")


def check_content(content: Any, shown: str) -> bytes | None:
    """Content: bytes (or None: no content), at most :data:`MAX_CONTENT_BYTES`."""
    if content is None:
        return None
    if isinstance(content, bytearray | memoryview):
        content = bytes(content)
    if type(content) is not bytes:
        raise InvalidRequest(shown, f"content is bytes, not {type(content).__name__}")
    if len(content) > MAX_CONTENT_BYTES:
        raise InvalidRequest(shown, f"content is {len(content)} bytes; the NODE table's "
                                    f"Char[10240] of base64 holds {MAX_CONTENT_BYTES}")
    return content


def check_limit(value: Any, name: str, shown: str) -> int:
    """An upward propagation limit or a depth: -1 ("infinite") or 0 .. 2^31-1 (an
    Integer; NODE.Upl and SUBSCRIPTION.Depth: "constraint [..] >= -1")."""
    if type(value) is not int or not INFINITE <= value <= MAX_UPL:
        raise InvalidRequest(shown, f"{name} is -1 (infinite) or 0 .. {MAX_UPL}, not "
                                    f"{value!r}")
    return value


def check_flag(value: Any, name: str, shown: str) -> bool:
    """A Boolean column: True or False (or the ints 1 and 0)."""
    if value is True or value is False:
        return value
    if type(value) is int and value in (0, 1):
        return bool(value)
    raise InvalidRequest(shown, f"{name} is a boolean, not {value!r}")


def check_lease(value: Any) -> float:
    """A lease in seconds: more than 0, at most :data:`MAX_LEASE`."""
    if type(value) not in (int, float) or not 0 < value <= MAX_LEASE:
        raise InvalidRequest("", f"a lease is more than 0 and at most {MAX_LEASE:.0f} "
                                 f"seconds, not {value!r}")
    return float(value)


def record_suffix(path: Path) -> str:
    """The store path of a node below the tree's (``/n`` then ``/name`` per level,
    each name percent-encoded, so a subtree is one prefix: ``Store.delete`` takes it
    whole, and ``a`` never takes ``ab``)."""
    return "/n" + "".join("/" + quote(name, safe="") for name in path)


def shown(path: Path) -> str:
    """The pathname of ``path``, for messages."""
    return format_path(path)
