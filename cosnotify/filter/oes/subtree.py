"""OES_SUBTREE constraints: a subscription on a node of the OES tree, with a depth.

Strategy: the seed (object-eventing-service.txt, "Basic Concepts": "Tree",
"Notifications" and Figure 2; the SUBSCRIPTION table's ``Depth``) places a
subscription on a node and watches the sub-tree of the given depth below it
(0: the node only; -1, the default: the whole sub-tree). The text form is the
node's pathname and an optional depth clause (docs/grammars/oes.md)::

    \\Asia\\India depth 1        \\Europe depth *        \\Asia depth 0

An event names its node in a string property ``node`` (its pathname). It
matches when the subscription's node is the event's node or an ancestor, no
more than ``depth`` levels up, and the channel's node limits let the event
reach that far (:mod:`.limits`: Figures 3 and 4). The language is two tokens,
so a regular expression parses it. A subscription is compiled to closures
over its path tuple; an event's pathname is split once and the split kept in a
cache bounded in count and size (only pathnames up to 1,024 characters), so
matching is a dict lookup, a tuple-prefix comparison and, with limits, a cached
reach. With subscription pools (Figure 5) in the current table, the event is
matched at each origin of its pool chain (:meth:`.limits.NodeLimits.origins`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

import attrs
from omniORB import CORBA, tcInternal

from cosnotify.corba import descriptors as D
from cosnotify.filter.ast import MAX_LENGTH
from cosnotify.filter.errors import ConstraintSyntaxError
from cosnotify.filter.oes.limits import CURRENT_LIMITS, INFINITE, Path, format_path, split_path
from cosnotify.filter.runtime import strip

__all__ = [
    "MAX_DEPTH",
    "NODE_PROPERTY",
    "PATH_CACHE_BUDGET_CHARS",
    "PATH_CACHE_CHARS",
    "Subscription",
    "SubtreeSyntaxError",
    "compile_subscription",
    "event_path",
    "parse_subscription",
    "render_subscription",
]

#: The property holding an event's node pathname.
NODE_PROPERTY: Final = "node"
#: The largest finite depth written (the SUBSCRIPTION table's Depth is an Integer).
MAX_DEPTH: Final = 2 ** 31 - 1
_PATH_CACHE_LIMIT: Final = 65536
#: Pathnames longer than this are split on every match, never cached.
PATH_CACHE_CHARS: Final = 1024
#: The split cache is dropped when the pathnames it holds would pass this many characters.
PATH_CACHE_BUDGET_CHARS: Final = 2 ** 21

Matcher = Callable[[Any], bool]


class SubtreeSyntaxError(ConstraintSyntaxError):
    """A constraint string is not a valid OES_SUBTREE subscription (docs/grammars/oes.md).

    Carries ``position`` (0-based offset), ``line``, ``column`` and a caret
    ``excerpt`` like every constraint syntax error.
    """


@attrs.frozen
class Subscription:
    """A subscription: the node's path (root first) and depth (-1: infinite)."""

    path: Path = ()
    depth: int = INFINITE


# -- text -----------------------------------------------------------------------------------

_QUOTED: Final = re.compile(r'"((?:[^"]|"")*)"')


def _clause(body: str) -> tuple[str, str] | None:
    """``(path, word)`` when ``body`` (no surrounding whitespace) ends in
    ``<whitespace> depth <whitespace> word``, or is ``depth <whitespace> word``
    (the path left out: ``("", word)``, the root); None otherwise. Linear:
    ``rsplit``, not a regular-expression search, which is quadratic on runs of
    spaces."""
    parts = body.rsplit(None, 1)
    if len(parts) != 2:
        return None
    rest, word = parts
    parts = rest.rsplit(None, 1)
    if len(parts) == 1 and parts[0].lower() == "depth":
        return "", word
    if len(parts) != 2 or parts[1].lower() != "depth":
        return None
    return parts[0], word


def parse_subscription(text: str) -> Subscription:
    """Parse ``path [depth D]``; SubtreeSyntaxError when ``text`` is not one.

    The path is ``\\`` (the root), ``\\name\\name...`` or the same in double
    quotes (``""`` for a quote inside); D is ``*`` or ``-1`` (infinite) or a
    non-negative integer. The path may be left out: the empty text is the root
    with infinite depth, ``depth D`` alone the root with depth D.
    """
    if len(text) > MAX_LENGTH:
        raise SubtreeSyntaxError(
            f"constraint is {len(text)} characters long; the limit is {MAX_LENGTH}",
            text, MAX_LENGTH)
    start = len(text) - len(text.lstrip())
    end = len(text.rstrip())
    depth = INFINITE
    if start < end and text[start] == '"':
        quoted = _QUOTED.match(text, start)
        if quoted is None:
            raise SubtreeSyntaxError("unterminated quoted path", text, start)
        pathname, offset = quoted.group(1).replace('""', '"'), start + 1
        rest = text[quoted.end():end]
        if rest:
            words = rest.split(None, 2)
            if not rest[0].isspace() or len(words) != 2 or words[0].lower() != "depth":
                at = quoted.end() + len(rest) - len(rest.lstrip())
                raise SubtreeSyntaxError("expected 'depth' or the end after the path",
                                         text, at)
            depth = _depth(words[1], text, end - len(words[1]))
    else:
        clause = _clause(text[start:end])
        if clause is not None:
            depth = _depth(clause[1], text, end - len(clause[1]))
            end = start + len(clause[0])
        pathname, offset = text[start:end], start
    return Subscription(_pathname(pathname, text, offset), depth)


def _depth(word: str, text: str, position: int) -> int:
    if word in ("*", "-1"):
        return INFINITE
    if not (word.isascii() and word.isdigit()):
        raise SubtreeSyntaxError(f"a depth is '*', '-1' or a non-negative integer, not "
                                 f"{word[:40]!r}", text, position)
    if len(word) > 10 or int(word) > MAX_DEPTH:
        raise SubtreeSyntaxError(f"depth {word[:40]} is larger than {MAX_DEPTH}", text,
                                 position)
    return int(word)


def _pathname(pathname: str, text: str, offset: int) -> Path:
    """The node names of a written pathname, or SubtreeSyntaxError at the fault."""
    if pathname in ("", "\\"):
        return ()
    if pathname[0] != "\\":
        raise SubtreeSyntaxError("a node path starts with '\\' (the root)", text, offset)
    at = 1
    names = []
    for name in pathname[1:].split("\\"):
        if not name:
            raise SubtreeSyntaxError("empty node name (a nodename is at least one character)",
                                     text, offset + at)
        names.append(name)
        at += len(name) + 1
    return tuple(names)


def render_subscription(subscription: Subscription) -> str:
    """The text of ``subscription``, quoted when a name would not read back bare."""
    pathname = format_path(subscription.path)
    bare = pathname == pathname.strip() and _clause(pathname) is None
    shown = pathname if bare else '"' + pathname.replace('"', '""') + '"'
    depth = "*" if subscription.depth == INFINITE else str(subscription.depth)
    return f"{shown} depth {depth}"


# -- events ---------------------------------------------------------------------------------

#: The TypeCodes of string and wstring (omniORB keeps one object for each).
_STRING_TCS: Final = frozenset(tc for key, tc in tcInternal.basicTypeCodes.items()
                               if type(key) is tuple and key[0] in (D.STRING, D.WSTRING))
_CorbaAny: Final = CORBA.Any
_PATHS: dict[str, Path | None] = {}
#: The characters of the pathnames in ``_PATHS`` (approximate when threads race).
_paths_chars = 0


def _split(pathname: Any) -> Path | None:
    """``split_path`` of a string, cached; None for anything else.

    The cache is bounded by size, not only by count: a pathname longer than
    :data:`PATH_CACHE_CHARS` is not kept, and the cache is dropped before the
    pathnames it holds pass :data:`PATH_CACHE_BUDGET_CHARS` characters.
    """
    global _paths_chars
    if type(pathname) is not str:
        return None
    found = _PATHS.get(pathname, False)
    if found is False:
        found = split_path(pathname)
        chars = len(pathname)
        if chars <= PATH_CACHE_CHARS:
            if (len(_PATHS) >= _PATH_CACHE_LIMIT
                    or _paths_chars + chars > PATH_CACHE_BUDGET_CHARS):
                _PATHS.clear()
                _paths_chars = 0
            _PATHS[pathname] = found
            _paths_chars += chars
    return found  # type: ignore[return-value]


def _string_of(value: Any) -> Any:
    """The string an Any holds (through aliases and inner Anys), else None."""
    if type(value) is not _CorbaAny:
        return None
    if value._t in _STRING_TCS:
        return value._v
    found = strip(value._v, value._t._d)
    if found is None:
        return None
    inner, _, base = found
    kind = base if type(base) is int else base[0]
    return inner if kind in (D.STRING, D.WSTRING) else None


def _from_properties(seq: Any) -> Path | None:
    for p in seq:
        if p.name == NODE_PROPERTY:
            return _split(_string_of(p.value))
    return None


def event_path(event: Any, form: str = "structured") -> Path | None:
    """The node path an event carries (``node``), or None; never raises.

    ``structured``: the first ``node`` property of filterable_data, else of the
    variable header; ``typed``: the ``node`` pair; ``any``: the string the Any
    holds, or the ``node`` pair of a PropertySeq it holds.
    """
    try:
        if form == "structured":
            for p in event.filterable_data:
                if p.name == NODE_PROPERTY:
                    return _split(_string_of(p.value))
            return _from_properties(event.header.variable_header)
        if form == "typed":
            return _from_properties(event)
        text = _string_of(event)
        if text is not None:
            return _split(text)
        found = strip(event._v, event._t._d)
        if found is not None and type(found[2]) is tuple and found[2][0] == D.SEQUENCE:
            return _from_properties(found[0])
    except Exception:  # noqa: BLE001 - a malformed event has no node
        return None
    return None


# -- matching -------------------------------------------------------------------------------


def compile_subscription(subscription: Subscription) -> tuple[Matcher, Matcher, Matcher]:
    """The structured, any and typed match functions of ``subscription``."""
    prefix = subscription.path
    k = len(prefix)
    finite = subscription.depth != INFINITE
    deepest = k + subscription.depth
    current = CURRENT_LIMITS.get
    paths = _PATHS

    def accept(path: Path | None) -> bool:
        if path is None:
            return False
        table = current()
        if table is not None and table.pooled:
            # Figure 5: the event is evaluated at each origin of its pool chain.
            for origin, reach in table.origins(path):
                if (reach <= k and origin[:k] == prefix
                        and not (finite and len(origin) > deepest)):
                    return True
            return False
        if path[:k] != prefix:
            return False
        if finite and len(path) > deepest:
            return False
        return table is None or table.reach(path) <= k

    def structured(event: Any) -> bool:
        try:
            for p in event.filterable_data:
                if p.name == "node":
                    v = p.value
                    break
            else:
                for p in event.header.variable_header:
                    if p.name == "node":
                        v = p.value
                        break
                else:
                    return False
            text = v._v if v._t in _STRING_TCS else _string_of(v)
            path = paths.get(text, False)
            if path is False:
                path = _split(text)
            return accept(path)  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 - a malformed event does not match
            return False

    def typed(event: Any) -> bool:
        return accept(event_path(event, "typed"))

    def any_(event: Any) -> bool:
        return accept(event_path(event, "any"))

    return structured, any_, typed
