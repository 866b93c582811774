"""OES_SUBTREE subscriptions in the routing index (cosnotify/routing).

Strategy: a subscription on node S can only match an event evaluated at S or
below it (Figure 2: "subscriptions are evaluated not just on the node where an
operation takes place, but also all of the ancestors that lie on its path").
So a subscription's *access* is one ``IN`` term on :data:`NODE_PATHS`, a
component whose value for an event is the sequence of pathnames of the nodes
whose subscriptions the event reaches: every prefix of the event's node path
that its reach allows (Figures 3 and 4), and, with subscription pools
(Figure 5), the same for each origin of its pool chain. The key of a
subscription is its node's pathname, so an event's candidates are the
subscriptions placed on at most ``len(path) + 1`` nodes, however many
subscriptions the channel holds; each candidate is then matched by its own
compiled function (depth included), as the index always does.

The component reads the channel's node limits from
:data:`~cosnotify.filter.oes.limits.CURRENT_LIMITS`, which the channel makes
current while it routes an event. Prefix pathnames are cached per path, within
the same bounds as the split cache of :mod:`.subtree`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from cosnotify.filter.oes.limits import CURRENT_LIMITS, Path, format_path
from cosnotify.filter.oes.subtree import PATH_CACHE_BUDGET_CHARS, PATH_CACHE_CHARS, event_path
from cosnotify.filter.registry import CompiledConstraint
from cosnotify.routing.terms import Access, Kind, Term

__all__ = ["NODE_PATHS", "NodePaths", "decompose_oes_subtree", "prefix_pathnames"]

_PREFIX_CACHE_LIMIT: Final = 65536
_PREFIXES: dict[Path, tuple[str, ...]] = {}
_prefix_chars = 0


def prefix_pathnames(path: Path) -> tuple[str, ...]:
    """The pathnames of ``path[:0]``, ``path[:1]``, ... ``path`` (the root's is ``\\``),
    cached for pathnames up to :data:`~.subtree.PATH_CACHE_CHARS` characters."""
    global _prefix_chars
    found = _PREFIXES.get(path)
    if found is None:
        found = tuple(format_path(path[:length]) for length in range(len(path) + 1))
        chars = len(found[-1])
        if chars <= PATH_CACHE_CHARS:
            if (len(_PREFIXES) >= _PREFIX_CACHE_LIMIT
                    or _prefix_chars + chars * len(found) > PATH_CACHE_BUDGET_CHARS):
                _PREFIXES.clear()
                _prefix_chars = 0
            _PREFIXES[path] = found
            _prefix_chars += chars * len(found)
    return found


def reached_pathnames(path: Path) -> tuple[str, ...]:
    """The pathnames of the nodes whose subscriptions an event at ``path`` reaches,
    under the current node limits (module docstring)."""
    table = CURRENT_LIMITS.get()
    if table is None:
        return prefix_pathnames(path)
    if not table.pooled:
        return prefix_pathnames(path)[table.reach(path):]
    found: list[str] = []
    for origin, reach in table.origins(path):
        found.extend(prefix_pathnames(origin)[reach:])
    return tuple(found)


class NodePaths:
    """The index component of OES_SUBTREE: an event's reached node pathnames.

    ``routing.index`` asks a grammar's own component for its functions through
    ``sequence_function(form)``: each returns ``(sequence, content, base)`` as
    ``cosnotify.filter.compiler.sequence_function`` does; only the sequence is
    read, and it holds strings.
    """

    __slots__ = ()

    def sequence_function(self, form: Any) -> Callable[[Any], tuple[Any, Any, Any]]:
        name = getattr(form, "value", form)  # a routing Form, or its name
        kind = "structured" if name == "structured" else "typed" if name == "typed" else "any"

        def read(event: Any) -> tuple[Any, Any, Any]:
            path = event_path(event, kind)
            if path is None:
                return (), None, None
            return reached_pathnames(path), None, None

        return read

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NodePaths)

    def __hash__(self) -> int:
        return hash(NodePaths)

    def __repr__(self) -> str:
        return "NodePaths()"


#: The one OES_SUBTREE component.
NODE_PATHS: Final = NodePaths()


def decompose_oes_subtree(compiled: CompiledConstraint) -> Access | None:
    """The access of a subscription: its node's pathname among the event's reached
    pathnames (never None: every subscription is indexed)."""
    subscription = compiled.source
    path = getattr(subscription, "path", None)
    if path is None:
        return None
    return (Term(Kind.IN, NODE_PATHS, (("s", format_path(path)),)),)
