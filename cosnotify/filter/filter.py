"""``CosNotifyFilter::Filter``: a forwarding filter object (Notification §3.2.1).

Strategy: the filter is grammar-agnostic; a :class:`~cosnotify.filter.registry.Grammar`
compiles each constraint once. Writers (add, modify, remove, destroy, callback
changes) serialise on one re-entrant lock and publish an immutable
:class:`_State` with a single assignment; the three ``match`` operations read
``self._state`` once and never lock, so matching runs concurrently with
changes and always sees a whole constraint set (§3.2.1.2: changes are atomic).

Subscription sharing (§2.6.5): the filter keeps the *aggregate* of the event
types its constraints require (the second option §2.6.5 allows) and calls
``subscription_change(added, removed)`` on every attached callback when that
aggregate changes. A constraint with an empty type list requires ``%ALL``
(§2.6.6). Callbacks run while the write lock is held, so they see changes in
order; a callback that raises is logged and ignored. ``destroy`` reports the
whole aggregate as removed.
"""

from __future__ import annotations

import collections
import itertools
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import attrs
from omniORB import CORBA

import CosNotification
import CosNotifyFilter

from cosnotify.eventtypes import ATTRIBUTE_DOMAIN
from cosnotify.filter.constraints import (
    Entry,
    Matcher,
    TypePair,
    as_list,
    bool_dispatch,
    check_ids,
    compile_entry,
    copy_expression,
    object_not_exist,
)
from cosnotify.filter.registry import CompileContext, Grammar

__all__ = ["Filter"]

log = logging.getLogger(__name__)


class _State:
    """One published constraint set; its match functions are built when first used.

    Building the dispatch costs time linear in the constraints, so a filter
    that changes often (or whose events are matched by the channel's routing
    index, which calls constraints directly) does not pay it per change.
    """

    __slots__ = ("_context", "_grammar", "_lock", "by_id", "entries", "match",
                 "match_structured", "match_typed")

    def __init__(self, entries: tuple[Entry, ...], by_id: dict[int, Entry],
                 grammar: Grammar | None, context: CompileContext | None) -> None:
        self.entries = entries
        self.by_id = by_id
        self._grammar = grammar
        self._context = context
        self._lock = threading.Lock()
        self.match_structured: Matcher = self._first_structured
        self.match: Matcher = self._first_any
        self.match_typed: Matcher = self._first_typed

    @classmethod
    def of(cls, entries: Sequence[Entry], grammar: Grammar, context: CompileContext) -> _State:
        ordered = tuple(sorted(entries, key=lambda e: e.constraint_id))
        return cls(ordered, {e.constraint_id: e for e in ordered}, grammar, context)

    def build(self) -> None:
        """Build the match functions (idempotent; concurrent callers build once)."""
        with self._lock:
            if self._grammar is None:
                return
            self.match_structured, self.match, self.match_typed = bool_dispatch(
                self.entries, self._grammar, self._context)  # type: ignore[arg-type]
            self._grammar = None

    def _first_structured(self, event: Any) -> bool:
        self.build()
        return self.match_structured(event)

    def _first_any(self, event: Any) -> bool:
        self.build()
        return self.match(event)

    def _first_typed(self, event: Any) -> bool:
        self.build()
        return self.match_typed(event)


def _destroyed(event: Any) -> bool:
    raise object_not_exist("match")


_DESTROYED: Final = _State((), {}, None, None)
_DESTROYED.match_structured = _DESTROYED.match = _DESTROYED.match_typed = _destroyed


class Filter:
    """A ``CosNotifyFilter::Filter`` holding constraints of one grammar (§3.2.1)."""

    #: Callbacks hear the aggregate of the constraints' types (§2.6.5's second
    #: option; the channel follows such a filter as a set: channel/subscriptions.py).
    _reports_aggregate: Final = True

    def __init__(self, grammar_name: str, grammar: Grammar,
                 context: CompileContext | None = None) -> None:
        self._grammar_name = grammar_name
        self._grammar = grammar
        self._context = context or CompileContext()
        self._lock = threading.RLock()
        self._shadow_lock = threading.Lock()  # publishing vs. a first match shadowing
        self._state = _DESTROYED
        self._install(_State.of((), grammar, self._context))
        self._next_constraint_id = 1  # ids are never reused, across restarts too
        self._callback_ids = itertools.count(1)
        self._callbacks: dict[int, Any] = {}
        self._types: collections.Counter[TypePair] = collections.Counter()
        self._is_destroyed = False
        #: Told (with the lock held, so in order) after every change of the
        #: constraints or of destruction: the persistent store's hook.
        self.listener: Callable[[Any], None] | None = None
        #: ``flt/N`` when the filter is kept in a store, else None.
        self.store_path: str | None = None
        #: Routers indexing this filter (``cosnotify.routing``): router -> its record.
        self._watchers: dict[Any, Any] = {}

    def __repr__(self) -> str:
        return (f"<Filter {self._grammar_name} with {len(self._state.entries)} constraint(s)"
                f"{' (destroyed)' if self._is_destroyed else ''}>")

    # -- matching (lock-free) ----------------------------------------------------------------
    def match(self, filterable_data: Any) -> bool:
        """Does the Any event satisfy a constraint? (§3.2.1.7; type ``%ANY``)"""
        return self._built().match(filterable_data)

    def match_structured(self, filterable_data: Any) -> bool:
        """Does the structured event satisfy a constraint? (§3.2.1.8)"""
        return self._built().match_structured(filterable_data)

    def match_typed(self, filterable_data: Any) -> bool:
        """Does the typed event (a PropertySeq, §2.7) satisfy a constraint? (§3.2.1.9)"""
        return self._built().match_typed(filterable_data)

    def _built(self) -> _State:
        """The published state with its match functions built; they then shadow
        the three methods above (while it stays the published one)."""
        state = self._state
        if state._grammar is not None:
            state.build()
            with self._shadow_lock:
                if self._state is state:
                    self._shadow(state)
        return state

    # -- attributes ----------------------------------------------------------------------------
    def _get_constraint_grammar(self) -> str:
        """The grammar name given to the factory (§3.2.1.1)."""
        self._check("constraint_grammar")
        return self._grammar_name

    # -- constraints ---------------------------------------------------------------------------
    def add_constraints(self, constraint_list: Iterable[Any]) -> list[Any]:
        """Add constraints atomically; ``InvalidConstraint`` adds none (§3.2.1.2)."""
        self._check("add_constraints")
        compiled = [compile_entry(self._grammar, self._context, exp)
                    for exp in as_list(constraint_list, "add_constraints")]
        with self._lock:
            self._check("add_constraints")
            first = self._next_constraint_id
            added = [attrs.evolve(e, constraint_id=first + i) for i, e in enumerate(compiled)]
            self._next_constraint_id = first + len(added)
            self._append(added)
            self._changed()
        return [_info(e) for e in added]

    def modify_constraints(self, del_list: Iterable[int], modify_list: Iterable[Any]) -> None:
        """Delete and replace constraints, all or nothing (§3.2.1.3).

        Every id in either list must name a current constraint
        (``ConstraintNotFound``), and an id may not be both deleted and
        modified; every new expression must be valid (``InvalidConstraint``).
        """
        self._check("modify_constraints")
        deletions = as_list(del_list, "modify_constraints")
        modifications = _infos(modify_list)
        with self._lock:
            self._check("modify_constraints")
            current = dict(self._state.by_id)
            check_ids(deletions, current)
            doomed = set(deletions)
            modified = [info.constraint_id for info in modifications]
            check_ids(modified, {k: v for k, v in current.items() if k not in doomed})
            replaced: dict[int, Entry] = {}
            for constraint_id, info in zip(modified, modifications):
                replaced[constraint_id] = compile_entry(
                    self._grammar, self._context, info.constraint_expression, constraint_id)
            for constraint_id in doomed:
                del current[constraint_id]
            current.update(replaced)
            if doomed or replaced:
                self._publish(list(current.values()))
                self._changed()

    def get_constraints(self, id_list: Iterable[int]) -> list[Any]:
        """The constraints with these ids, in that order (§3.2.1.4)."""
        self._check("get_constraints")
        by_id = self._state.by_id
        result = []
        for constraint_id in as_list(id_list, "get_constraints"):
            entry = by_id.get(constraint_id) if isinstance(constraint_id, int) else None
            if entry is None:
                raise CosNotifyFilter.ConstraintNotFound(constraint_id)
            result.append(_info(entry))
        return result

    def get_all_constraints(self) -> list[Any]:
        """Every constraint, by ascending id (§3.2.1.5)."""
        self._check("get_all_constraints")
        return [_info(e) for e in self._state.entries]

    def _attribute_types(self) -> list[TypePair]:
        """The ``("%ATTRIBUTE", name)`` subscription types of the attributes this
        filter's constraints test (grammars with ``tested``, such as ELVIN4)."""
        with self._lock:
            return sorted(p for p in self._types if p[0] == ATTRIBUTE_DOMAIN)

    def remove_all_constraints(self) -> None:
        """Remove every constraint; the filter stays usable (§3.2.1.5)."""
        self._check("remove_all_constraints")
        with self._lock:
            self._check("remove_all_constraints")
            self._publish([])
            self._changed()

    def destroy(self) -> None:
        """Destroy the filter; later operations raise OBJECT_NOT_EXIST (§3.2.1.6)."""
        with self._lock:
            self._check("destroy")
            self._is_destroyed = True
            removed = sorted(self._types)
            self._types.clear()
            gone = list(self._state.entries)
            self._install(_DESTROYED)
            for watcher, record in list(self._watchers.items()):
                watcher.withdrawn(record, gone)
            self._watchers = {}
            self._notify([], removed)
            self._callbacks = {}
            self._changed()

    # -- callbacks (§2.6.5) ----------------------------------------------------------------------
    def attach_callback(self, callback: Any) -> int:
        """Register a NotifySubscribe; returns its CallbackID (§3.2.1.10)."""
        self._check("attach_callback")
        if callback is None:
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO, "attach_callback: nil callback")
        with self._lock:
            self._check("attach_callback")
            callback_id = next(self._callback_ids)
            self._callbacks = {**self._callbacks, callback_id: callback}
        return callback_id

    def detach_callback(self, callback: int) -> None:
        """Unregister a callback; ``CallbackNotFound`` if unknown (§3.2.1.11)."""
        self._check("detach_callback")
        with self._lock:
            self._check("detach_callback")
            if not isinstance(callback, int) or callback not in self._callbacks:
                raise CosNotifyFilter.CallbackNotFound()
            self._callbacks = {k: v for k, v in self._callbacks.items() if k != callback}

    def get_callbacks(self) -> list[int]:
        """The ids of the attached callbacks (§3.2.1.12)."""
        self._check("get_callbacks")
        return sorted(self._callbacks)

    # -- internals -------------------------------------------------------------------------------
    def _check(self, operation: str) -> None:
        if self._is_destroyed:
            raise object_not_exist(operation)

    def _changed(self) -> None:
        listener = self.listener
        if listener is not None:
            listener(self)

    def _restore(self, entries: Sequence[Entry], next_id: int) -> None:
        """Install constraints with their own ids (read back from the store); the
        next id given is ``next_id`` or above."""
        with self._lock:
            self._publish(entries)
            top = max((e.constraint_id for e in entries), default=0)
            self._next_constraint_id = max(next_id, top + 1)

    def _watch(self, watcher: Any, record: Any) -> None:
        """Tell ``watcher`` (a router) of every constraint, now and as they change:
        ``posted(record, entries)`` before entries are published,
        ``withdrawn(record, entries)`` after they no longer are, so what the
        watcher holds always covers the published constraints (called in order,
        with this filter's lock held)."""
        with self._lock:
            if self._is_destroyed:
                return
            self._watchers = {**self._watchers, watcher: record}
            watcher.posted(record, list(self._state.entries))

    def _unwatch(self, watcher: Any, record: Any) -> None:
        with self._lock:
            if self._watchers.get(watcher) is not record:
                return
            self._watchers = {k: v for k, v in self._watchers.items() if k is not watcher}
            watcher.withdrawn(record, list(self._state.entries))

    def _install(self, state: _State) -> None:
        """Publish ``state``. Once built, its match functions also become instance
        attributes that shadow the methods above, so ``f.match_structured(event)``
        calls the compiled dispatch directly, without an extra Python frame."""
        with self._shadow_lock:
            self._state = state
            if state._grammar is None:
                self._shadow(state)
            else:
                for name in ("match", "match_structured", "match_typed"):
                    vars(self).pop(name, None)

    def _shadow(self, state: _State) -> None:
        """(``_shadow_lock`` held.)"""
        vars(self).update(match=state.match, match_structured=state.match_structured,
                          match_typed=state.match_typed)

    def _publish(self, entries: Sequence[Entry], fresh: Sequence[Entry] | None = None,
                 gone: Sequence[Entry] | None = None) -> None:
        """Install a new constraint set and report aggregate type changes (lock held).

        ``fresh`` and ``gone`` are the entries added and removed, when the caller
        knows them (else they are worked out), so a change costs what changed,
        not the size of the filter.
        """
        state = _State.of(entries, self._grammar, self._context)
        self._switch(state, fresh, gone)

    def _append(self, added: Sequence[Entry]) -> None:
        """``_publish`` for new constraints (their ids are above every other's): no
        sort, and the id table is copied rather than rebuilt."""
        old = self._state
        by_id = dict(old.by_id)
        by_id.update((e.constraint_id, e) for e in added)
        self._switch(_State((*old.entries, *added), by_id, self._grammar, self._context),
                     added, ())

    def _switch(self, state: _State, fresh: Sequence[Entry] | None,
                gone: Sequence[Entry] | None) -> None:
        if fresh is None or gone is None:
            old, new = self._state.by_id, state.by_id
            fresh = [e for e in state.entries if old.get(e.constraint_id) is not e]
            gone = [e for e in old.values() if new.get(e.constraint_id) is not e]
        types = self._types
        before = set(types)
        for entry in fresh:
            types.update(entry.types)
            types.update(entry.attributes)
        for entry in gone:
            types.subtract(entry.types)
            types.subtract(entry.attributes)
        for pair in [pair for pair in types if types[pair] <= 0]:
            del types[pair]
        added = sorted(set(types) - before)
        removed = sorted(before - set(types))
        watchers = self._watchers
        for watcher, record in watchers.items():
            watcher.posted(record, list(fresh))
        self._install(state)
        for watcher, record in watchers.items():
            watcher.withdrawn(record, list(gone))
        if added or removed:
            self._notify(added, removed)

    def _notify(self, added: list[TypePair], removed: list[TypePair]) -> None:
        if not self._callbacks or not (added or removed):
            return
        added_seq = [CosNotification.EventType(d, t) for d, t in added]
        removed_seq = [CosNotification.EventType(d, t) for d, t in removed]
        for callback_id, callback in list(self._callbacks.items()):
            try:
                callback.subscription_change(added_seq, removed_seq)
            except Exception:
                log.warning("subscription_change on callback %d (%r) failed",
                            callback_id, callback, exc_info=True)


def _info(entry: Entry) -> Any:
    return CosNotifyFilter.ConstraintInfo(copy_expression(entry.expression), entry.constraint_id)


def _infos(items: Iterable[Any]) -> list[Any]:
    """``modify_list`` as a list of ConstraintInfos; BAD_PARAM for an item that is none
    (it lacks ``constraint_id`` or ``constraint_expression``: decision 40), before
    anything is looked at, as ``mapping._items`` does."""
    result = as_list(items, "modify_constraints")
    for info in result:
        if not (hasattr(info, "constraint_id") and hasattr(info, "constraint_expression")):
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO, f"not a ConstraintInfo: {info!r}")
    return result
