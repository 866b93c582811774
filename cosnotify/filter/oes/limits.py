"""Per-channel node limits of the Object Eventing Service: propagation limits, barricades.

Strategy: the seed (object-eventing-service.txt, "Notifications", Figures 3
and 4, and the NODE table's ``Upl`` and ``Barricade`` columns) gives every
node an *upward propagation limit* (how many levels above the node
subscriptions are still evaluated; -1, the default, is infinite) and an
optional *barricade* (no notification propagates above the node). Both only
cut off ancestors, so for an event at node N they reduce to one number, the
*reach*: the length of the shortest prefix of N's path whose subscriptions are
still evaluated. A subscription on a node of path length ``k`` may match an
event of N only when ``k >= reach(N)``.

:class:`NodeLimits` holds one channel's table. Reads take no lock: the table
is an immutable snapshot (the nodes and a reach cache) replaced whole by every
change, so a reader computing a reach on an old snapshot stores it in that
snapshot's cache, never in the new one. The channel that routes an event makes
its table current in :data:`CURRENT_LIMITS` (a ``contextvars.ContextVar``,
:func:`using`); OES_SUBTREE matchers read it, and with none set no limits
apply.
"""

from __future__ import annotations

import contextvars
import importlib
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Final

import attrs

import cosnotify.corba  # noqa: F401  (puts the generated stubs on sys.path)

__all__ = [
    "CURRENT_LIMITS",
    "INFINITE",
    "NodeLimit",
    "NodeLimits",
    "Path",
    "current_limits",
    "format_path",
    "reset_limits",
    "set_limits",
    "split_path",
    "using",
]

#: The seed's "-1 means infinite" (NODE.Upl, SUBSCRIPTION.Depth).
INFINITE: Final = -1
#: A node path as its node names, root first; the root is ``()``.
Path = tuple[str, ...]
SEPARATOR: Final = "\\"
#: Reach caches are dropped when they grow past this many paths.
_CACHE_LIMIT: Final = 65536


def split_path(text: str) -> Path | None:
    """The node names of a pathname (``\\Asia\\India`` -> ``("Asia", "India")``).

    The root is ``""`` (its name is the empty string) or ``"\\"``. None when
    ``text`` is not a pathname: not starting with the separator, or with an
    empty nodename (``\\Asia\\\\India``, ``\\Asia\\``).
    """
    if not text or text == SEPARATOR:
        return ()
    if text[0] != SEPARATOR:
        return None
    names = tuple(text[1:].split(SEPARATOR))
    if "" in names:
        return None
    return names


def format_path(path: Path) -> str:
    """The pathname of ``path``: ``\\`` for the root, else ``\\name\\name...``."""
    return SEPARATOR + SEPARATOR.join(path)


def _path(path: str | Path) -> Path:
    if isinstance(path, tuple):
        if all(type(name) is str and name and SEPARATOR not in name for name in path):
            return path
        raise ValueError(f"not a node path: {path!r}")
    found = split_path(path) if type(path) is str else None
    if found is None:
        raise ValueError(f"not a node pathname: {path!r}")
    return found


@attrs.frozen
class NodeLimit:
    """One node's limits: its upward propagation limit (-1: infinite) and barricade."""

    path: Path = attrs.field(converter=_path)
    upl: int = INFINITE
    barricade: bool = False

    def __attrs_post_init__(self) -> None:
        if type(self.upl) is not int or self.upl < INFINITE:
            raise ValueError(f"an upward propagation limit is -1 (infinite) or >= 0, "
                             f"not {self.upl!r}")


@attrs.frozen
class _Snapshot:
    """The nodes with limits, and the reaches computed from them so far."""

    nodes: dict[Path, NodeLimit]
    cache: dict[Path, int] = attrs.field(factory=dict)


class NodeLimits:
    """One channel's node limits (seed: NODE.Upl and NODE.Barricade); thread-safe.

    Nodes not listed have the seed's defaults: infinite limit, no barricade.
    """

    def __init__(self, limits: Iterable[NodeLimit] = ()) -> None:
        self._lock = threading.Lock()
        self._snapshot = _Snapshot({limit.path: limit for limit in limits})

    # -- changes ---------------------------------------------------------------------------
    def set(self, path: str | Path, upl: int = INFINITE, barricade: bool = False) -> NodeLimit:
        """Give the node at ``path`` these limits (the defaults remove them)."""
        limit = NodeLimit(path, upl, barricade)
        with self._lock:
            nodes = dict(self._snapshot.nodes)
            if upl == INFINITE and not barricade:
                nodes.pop(limit.path, None)
            else:
                nodes[limit.path] = limit
            self._snapshot = _Snapshot(nodes)
        return limit

    def replace(self, limits: Iterable[NodeLimit]) -> None:
        """Make ``limits`` the whole table."""
        nodes = {limit.path: limit for limit in limits
                 if limit.upl != INFINITE or limit.barricade}
        with self._lock:
            self._snapshot = _Snapshot(nodes)

    def clear(self) -> None:
        """Give every node the defaults again."""
        self.replace(())

    # -- reads -----------------------------------------------------------------------------
    def get(self, path: str | Path) -> NodeLimit:
        """The limits of the node at ``path`` (the defaults when none were set)."""
        key = _path(path)
        return self._snapshot.nodes.get(key) or NodeLimit(key)

    def __iter__(self) -> Iterator[NodeLimit]:
        return iter(sorted(self._snapshot.nodes.values(), key=lambda limit: limit.path))

    def __len__(self) -> int:
        return len(self._snapshot.nodes)

    def reach(self, path: Path) -> int:
        """The shortest prefix length of ``path`` whose subscriptions an event at
        ``path`` reaches (0: every ancestor up to the root)."""
        snapshot = self._snapshot
        found = snapshot.cache.get(path)
        if found is None:
            found = _reach(snapshot.nodes, path)
            if len(snapshot.cache) >= _CACHE_LIMIT:
                snapshot.cache.clear()
            snapshot.cache[path] = found
        return found

    # -- the IDL form ------------------------------------------------------------------------
    @classmethod
    def from_seq(cls, seq: Iterable[Any]) -> NodeLimits:
        """A table from a ``CosNotifyGrammars::NodeLimitSeq`` (or UnknownStructs alike).

        Raises ValueError for a malformed path or a limit below -1.
        """
        limits = []
        for item in seq:
            path, upl, barricade = item.path, item.upl, item.barricade
            if type(path) is not str:
                raise ValueError(f"not a node pathname: {path!r}")
            limits.append(NodeLimit(path, upl, bool(barricade)))
        return cls(limits)

    def to_seq(self) -> list[Any]:
        """The table as a ``CosNotifyGrammars::NodeLimitSeq`` (sorted by path)."""
        module = importlib.import_module("CosNotifyGrammars")
        return [module.NodeLimit(format_path(limit.path), limit.upl, limit.barricade)
                for limit in self]

    def __repr__(self) -> str:
        return f"NodeLimits({list(self)!r})"


def _reach(nodes: dict[Path, NodeLimit], path: Path) -> int:
    """Figure 3 (the node's own limit) and Figure 4 (the deepest barricade at the
    node or an ancestor below that limit): the shortest reachable prefix length."""
    depth = len(path)
    own = nodes.get(path)
    low = 0 if own is None or own.upl == INFINITE else max(0, depth - own.upl)
    if nodes:
        for length in range(depth, low, -1):
            limit = nodes.get(path[:length])
            if limit is not None and limit.barricade:
                return length
    return low


#: The node limits of the channel routing the current event; None: no limits apply.
CURRENT_LIMITS: Final[contextvars.ContextVar[NodeLimits | None]] = contextvars.ContextVar(
    "cosnotify_oes_node_limits", default=None)


def current_limits() -> NodeLimits | None:
    """The node limits OES_SUBTREE matchers apply now."""
    return CURRENT_LIMITS.get()


def set_limits(table: NodeLimits | None) -> contextvars.Token[NodeLimits | None]:
    """Make ``table`` current; give the token to :func:`reset_limits` afterwards."""
    return CURRENT_LIMITS.set(table)


def reset_limits(token: contextvars.Token[NodeLimits | None]) -> None:
    """Undo the :func:`set_limits` that returned ``token``."""
    CURRENT_LIMITS.reset(token)


@contextmanager
def using(table: NodeLimits | None) -> Iterator[NodeLimits | None]:
    """Make ``table`` current for the ``with`` block (the channel's routing of one event)."""
    token = CURRENT_LIMITS.set(table)
    try:
        yield table
    finally:
        CURRENT_LIMITS.reset(token)
