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

A node may also name a *subscription pool* (Figure 5; the NODE table's
``SubscriptionPool``): "A subscription pool placed on a node short-circuits the
normal upward bubbling of a notification event generated at that node, and
redirects so that it appears it was generated from a different node. Normal
bubbling of the redirected notification event continues upward from this other
node." The caption says what it is for: "subscriptions need only be placed on
Countries to cover all these independent sub-trees", so a pool redirects the
notifications of the pooled node's whole sub-tree, each where its bubbling
reaches the pooled node. An event at N is therefore evaluated at a chain of
*origins* (:meth:`NodeLimits.origins`): N, with the prefixes of N's path up to
the deepest pooled node Q its reach lets it bubble to (Q included, nothing
above Q); then Q's pool P as if generated there (P's subscriptions and those
above P, within P's reach, up to the deepest pooled node there), and so on. A
table without pools has one origin per event, ``(N, reach(N))``.

:class:`NodeLimits` holds one channel's table. Reads take no lock: the table
is an immutable snapshot (the nodes, a trie of the barricades and a reach cache)
replaced whole by every change, so a reader computing a reach on an old snapshot
stores it in that snapshot's cache, never in the new one. A reach costs time
linear in the path's length: one lookup of the whole path (its own limit) and
one walk down the barricade trie, never a lookup per prefix. The cache keeps
only short paths (:data:`CACHE_PATH_CHARS`) within a character budget, so long
pathnames never stay alive in it. The channel that routes an event makes
its table current in :data:`CURRENT_LIMITS` (a ``contextvars.ContextVar``,
:func:`using`); OES_SUBTREE matchers read it, and with none set no limits
apply.
"""

from __future__ import annotations

import contextvars
import importlib
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final, TypeAlias

import attrs

import cosnotify.corba  # noqa: F401  (puts the generated stubs on sys.path)

__all__ = [
    "CACHE_BUDGET_CHARS",
    "CACHE_PATH_CHARS",
    "CURRENT_LIMITS",
    "INFINITE",
    "MAX_UPL",
    "NodeLimit",
    "NodeLimits",
    "Origins",
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
#: The largest finite upward propagation limit: NodeLimit.upl is an IDL ``long``.
MAX_UPL: Final = 2 ** 31 - 1
#: Reach caches are dropped when they grow past this many paths.
_CACHE_LIMIT: Final = 65536
#: Paths whose pathname is longer than this many characters are never cached.
CACHE_PATH_CHARS: Final = 1024
#: A reach cache is dropped when the pathnames it holds would pass this many characters.
CACHE_BUDGET_CHARS: Final = 2 ** 21


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


def _pool(value: object) -> Path | None:
    """A subscription pool: None (no pool) or a node path (ValueError when malformed)."""
    return None if value is None else _path(value)  # type: ignore[arg-type]


def _barricade(value: object) -> bool:
    """An IDL boolean as omniORBpy gives it (a bool; 0 or 1 in process), else ValueError."""
    if value is True or value is False:
        return value
    if type(value) is int and value in (0, 1):
        return bool(value)
    raise ValueError(f"a barricade is a boolean, not {value!r}")


@attrs.frozen
class NodeLimit:
    """One node's limits: its upward propagation limit (-1: infinite), barricade and
    subscription pool (None: none; Figure 5).

    ValueError for a malformed path or pool, a limit that is not an IDL ``long``
    of at least -1, or a barricade that is not a boolean (True, False, 1 or 0).
    Pools are set by OES trees (cosnotify/oes); ``CosNotifyGrammars::NodeLimit``
    has no pool, so :meth:`NodeLimits.to_seq` leaves them out.
    """

    path: Path = attrs.field(converter=_path)
    upl: int = INFINITE
    barricade: bool = attrs.field(default=False, converter=_barricade)
    pool: Path | None = attrs.field(default=None, converter=_pool)

    def __attrs_post_init__(self) -> None:
        if type(self.upl) is not int or not INFINITE <= self.upl <= MAX_UPL:
            raise ValueError(f"an upward propagation limit is -1 (infinite) or 0 .. "
                             f"{MAX_UPL}, not {self.upl!r}")

    @property
    def is_default(self) -> bool:
        """True when the limits are the NODE table's defaults (no entry is kept)."""
        return self.upl == INFINITE and not self.barricade and self.pool is None


#: A trie of the barricaded nodes: name -> (barricade here, the trie below).
_Trie: TypeAlias = dict[str, tuple[bool, "_Trie"]]
#: Where an event is evaluated: (origin, reach) pairs, the event's own node first.
Origins: TypeAlias = tuple[tuple[Path, int], ...]


def _table(limits: Iterable[NodeLimit]) -> dict[Path, NodeLimit]:
    """The table of ``limits``: entries equal to the defaults dropped; ValueError when
    one node is given twice (the NODE table has one row per node)."""
    nodes: dict[Path, NodeLimit] = {}
    seen: set[Path] = set()
    for limit in limits:
        if limit.path in seen:
            raise ValueError(f"node {format_path(limit.path)!r} is given twice")
        seen.add(limit.path)
        if not limit.is_default:
            nodes[limit.path] = limit
    return nodes


def _barricades(nodes: Mapping[Path, NodeLimit]) -> _Trie:
    """The trie of the barricaded nodes of ``nodes``."""
    return _trie(path for path, limit in nodes.items() if limit.barricade)


def _trie(paths: Iterable[Path]) -> _Trie:
    """A trie marking ``paths`` (name -> (marked here, the trie below))."""
    root: _Trie = {}
    for path in paths:
        trie = root
        for i, name in enumerate(path):
            here, below = trie.get(name, (False, {}))
            trie[name] = (here or i == len(path) - 1, below)
            trie = below
    return root


class _Snapshot:
    """The nodes with limits, their barricade trie, and the reaches (or, with pools,
    the origins) computed so far."""

    __slots__ = ("barricades", "cache", "cached_chars", "nodes", "origins", "pooled", "pools")

    def __init__(self, nodes: dict[Path, NodeLimit]) -> None:
        self.nodes = nodes
        self.barricades = _barricades(nodes)
        #: The trie of the pooled nodes (empty: none; matchers then ask for a reach only).
        self.pools = _trie(path for path, limit in nodes.items() if limit.pool is not None)
        self.pooled = bool(self.pools)
        self.cache: dict[Path, int] = {}
        self.origins: dict[Path, Origins] = {}
        #: The pathname characters the caches hold (approximate under races).
        self.cached_chars = 0

    def keep(self, cache: dict[Path, Any], path: Path, found: Any) -> None:
        """Cache ``found`` for ``path`` within the size bounds (module constants)."""
        chars = len(path) + sum(map(len, path))  # the pathname's length
        if chars <= CACHE_PATH_CHARS:
            if len(cache) >= _CACHE_LIMIT or self.cached_chars + chars > CACHE_BUDGET_CHARS:
                self.cache.clear()
                self.origins.clear()
                self.cached_chars = 0
            cache[path] = found
            self.cached_chars += chars


class NodeLimits:
    """One channel's node limits (seed: NODE.Upl and NODE.Barricade); thread-safe.

    Nodes not listed have the seed's defaults: infinite limit, no barricade.
    """

    def __init__(self, limits: Iterable[NodeLimit] = ()) -> None:
        self._lock = threading.Lock()
        self._snapshot = _Snapshot(_table(limits))

    # -- changes ---------------------------------------------------------------------------
    def set(self, path: str | Path, upl: int = INFINITE, barricade: bool = False,
            pool: str | Path | None = None) -> NodeLimit:
        """Give the node at ``path`` these limits (the defaults remove them)."""
        limit = NodeLimit(path, upl, barricade, pool)
        with self._lock:
            nodes = dict(self._snapshot.nodes)
            if limit.is_default:
                nodes.pop(limit.path, None)
            else:
                nodes[limit.path] = limit
            self._snapshot = _Snapshot(nodes)
        return limit

    def replace(self, limits: Iterable[NodeLimit]) -> None:
        """Make ``limits`` the whole table (entries equal to the defaults are dropped).

        ValueError, the table unchanged, when one node is given twice.
        """
        nodes = _table(limits)
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
            found = _reach(snapshot.nodes, snapshot.barricades, path)
            snapshot.keep(snapshot.cache, path, found)
        return found

    @property
    def pooled(self) -> bool:
        """Whether some node has a subscription pool (then match with :meth:`origins`)."""
        return self._snapshot.pooled

    def origins(self, path: Path) -> Origins:
        """Where an event at ``path`` is evaluated (module docstring, Figure 5): pairs
        ``(origin, reach)``, ``path`` first; a subscription on a node of length ``k``
        matches when that node is an origin or its ancestor, ``k >= reach``, within its
        depth of the origin. Without pools: ``((path, reach(path)),)``."""
        snapshot = self._snapshot
        found = snapshot.origins.get(path)
        if found is None:
            found = _origins(snapshot.nodes, snapshot.barricades, snapshot.pools, path)
            snapshot.keep(snapshot.origins, path, found)
        return found

    # -- the IDL form ------------------------------------------------------------------------
    @classmethod
    def from_seq(cls, seq: Iterable[Any]) -> NodeLimits:
        """A table from a ``CosNotifyGrammars::NodeLimitSeq`` (or UnknownStructs alike).

        Raises ValueError for a malformed path, a limit below -1 or above an IDL
        ``long``, a barricade that is not a boolean, or a node given twice (after
        normalisation: ``""`` and ``"\\"`` are both the root). Entries equal to the
        defaults are dropped, so :meth:`to_seq` gives back exactly the table.
        """
        limits = []
        for item in seq:
            path, upl, barricade = item.path, item.upl, item.barricade
            if type(path) is not str:
                raise ValueError(f"not a node pathname: {path!r}")
            limits.append(NodeLimit(path, upl, barricade))
        return cls(limits)

    def to_seq(self) -> list[Any]:
        """The table as a ``CosNotifyGrammars::NodeLimitSeq`` (sorted by path)."""
        module = importlib.import_module("CosNotifyGrammars")
        return [module.NodeLimit(format_path(limit.path), limit.upl, limit.barricade)
                for limit in self]

    def __repr__(self) -> str:
        return f"NodeLimits({list(self)!r})"


def _reach(nodes: Mapping[Path, NodeLimit], barricades: _Trie, path: Path) -> int:
    """Figure 3 (the node's own limit) and Figure 4 (the deepest barricade at the
    node or an ancestor below that limit): the shortest reachable prefix length.

    Linear in ``len(path)``: one lookup of the whole path in ``nodes`` and a walk
    down ``barricades`` (:func:`_barricades` of ``nodes``) that stops where the
    path leaves the trie.
    """
    depth = len(path)
    own = nodes.get(path) if nodes else None
    low = 0 if own is None or own.upl == INFINITE else max(0, depth - own.upl)
    deepest = 0
    trie = barricades
    for length, name in enumerate(path, 1):
        step = trie.get(name)
        if step is None:
            break
        barricade, trie = step
        if barricade:
            deepest = length
    return max(low, deepest)


def _origins(nodes: Mapping[Path, NodeLimit], barricades: _Trie, pools: _Trie,
             path: Path) -> Origins:
    """Figure 5: an event bubbles from its node, within its reach, up to the deepest
    pooled node on the way (the node itself, or an ancestor: the pool covers the pooled
    node's sub-tree), which redirects it to its pool, where it bubbles again as if
    generated there. A pool that would revisit a node of the chain (a cycle: an OES tree
    refuses them) is passed over, so the chain ends. Linear in the chain's path lengths:
    one walk down the pool trie per origin."""
    found: list[tuple[Path, int]] = []
    seen = {path}
    node = path
    while True:
        reach = _reach(nodes, barricades, node)
        redirect: tuple[int, Path] | None = None
        trie = pools
        for length, name in enumerate(node, 1):
            step = trie.get(name)
            if step is None:
                break
            pooled, trie = step
            if pooled and length >= reach:
                pool = nodes[node[:length]].pool
                if pool is not None and pool not in seen:
                    redirect = (length, pool)  # the deepest one wins: bubbling meets it first
        if redirect is None:
            found.append((node, reach))
            return tuple(found)
        found.append((node, redirect[0]))
        seen.add(redirect[1])
        node = redirect[1]


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
