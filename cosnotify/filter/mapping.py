"""``CosNotifyFilter::MappingFilter`` (Notification §2.3.1, §3.2.2).

Strategy: the same copy-on-write constraint set as :mod:`filter`, with a value
(``result_to_set``) per constraint. Constraints are kept sorted from the
"best" value to the worst (§2.3.1: "in the order of highest to lowest with
respect to the value"); ``match`` returns ``(TRUE, value)`` for the first
constraint the event satisfies, else ``(FALSE, default_value)`` — the IDL's
boolean result followed by its ``out any``.

"Highest" (docs/filters.md decision 43): numbers (integers, floating point,
fixed, ``TimeBase::TimeT``) by numeric value, so the highest priority and
the longest lifetime come first -- a ``TimeBase::TimeT`` 0, no timeout (Table
2-4), before any other lifetime; booleans TRUE before FALSE; strings by
descending code-point order; enums by descending ordinal. Values of any other
type cannot be ordered and keep their insertion order. Equal values keep
insertion (constraint id) order. When ``value_type`` is ``any``, values of
different kinds are grouped: numbers, then strings, then enums, then the rest.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from typing import Any, Final

import attrs
from omniORB import CORBA

import CosNotifyFilter

from cosnotify.corba import descriptors as D
from cosnotify.filter.constraints import (
    Entry,
    EntryMatcher,
    as_list,
    check_ids,
    compile_entry,
    copy_expression,
    entry_dispatch,
    object_not_exist,
)
from cosnotify.filter.registry import CompileContext, Grammar
from cosnotify.filter.runtime import CorbaAny, EnumVal, any_operand

__all__ = ["MappingFilter", "value_rank"]


#: Rank classes: keys of different classes never compare their values, so
#: values of different kinds (possible when ``value_type`` is ``any``) sort
#: as numbers, then strings, then enums, then unordered values.
_UNORDERED: Final = (0, 0)
_ENUM, _STRING, _NUMBER = 1, 2, 3


#: ``TimeBase::TimeT``: a lifetime, for which 0 is the longest (no timeout, Table 2-4).
_TIMET_ID: Final = "IDL:omg.org/TimeBase/TimeT:1.0"
_NO_TIMEOUT: Final = (_NUMBER, math.inf)


def _is_lifetime(d: D.Descriptor) -> bool:
    """Is ``d`` (a value type's descriptor) ``TimeBase::TimeT``, a lifetime?"""
    try:
        return D.repo_id(d) == _TIMET_ID
    except Exception:  # noqa: BLE001 - a malformed descriptor names no type
        return False


def value_rank(value: Any, lifetime: bool = False) -> tuple[int, Any]:
    """A sort key: a larger key is a better value (see the module docstring).

    ``lifetime``: the filter's value type is ``TimeBase::TimeT``, whose 0 means
    no timeout and so ranks first; in an ``any`` value type, a held TimeT is."""
    try:
        operand = any_operand(value)
    except Exception:  # noqa: BLE001 - Fail, or a malformed value: no order
        return _UNORDERED
    t = type(operand)
    if t is EnumVal:
        return (_ENUM, operand.ordinal)
    if t is str:
        return (_STRING, operand)
    if t is bool or t is int or t is Decimal or t is float:
        if t is float and math.isnan(operand) or t is Decimal and operand.is_nan():
            return _UNORDERED
        if operand == 0 and t is int and (lifetime or _holds_timet(value)):
            return _NO_TIMEOUT
        return (_NUMBER, operand)
    return _UNORDERED


def _holds_timet(value: Any) -> bool:
    """Is ``value`` an ``any`` holding a ``TimeBase::TimeT`` (a value type of ``any``)?"""
    held = value._v
    try:
        return D.kind(value._t._d) == D.ANY and type(held) is CorbaAny \
            and _is_lifetime(held._t._d)
    except Exception:  # noqa: BLE001 - a malformed descriptor names no type
        return False


@attrs.frozen(eq=False)
class _State:
    """One published constraint set, best value first, with its match functions."""

    entries: tuple[Entry, ...]  # best value first
    by_id: dict[int, Entry]
    structured: EntryMatcher
    any: EntryMatcher
    typed: EntryMatcher

    @classmethod
    def of(cls, entries: Sequence[Entry], lifetime: bool = False) -> _State:
        by_id = {e.constraint_id: e for e in entries}
        ordered = tuple(sorted(entries, key=lambda e: (value_rank(e.value, lifetime),
                                                       -e.constraint_id), reverse=True))
        structured, any_form, typed = entry_dispatch(ordered)
        return cls(ordered, by_id, structured, any_form, typed)


def _destroyed(event: Any) -> Entry | None:
    raise object_not_exist("match")


_DESTROYED: Final = _State((), {}, _destroyed, _destroyed, _destroyed)


class MappingFilter:
    """A ``CosNotifyFilter::MappingFilter`` (§3.2.2) of one grammar and value type."""

    def __init__(self, grammar_name: str, grammar: Grammar, default_value: Any,
                 context: CompileContext | None = None) -> None:
        if type(default_value) is not CorbaAny:
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO, f"default_value must be a CORBA.Any, "
                                                         f"not {default_value!r}")
        unfit = _unfit(default_value)
        if unfit is not None:  # §3.2.3.2 names no exception for it
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO, f"default_value: {unfit}")
        self._grammar_name = grammar_name
        self._grammar = grammar
        self._default = default_value
        # A TypeCode from the wire may carry the wheel's 0xffffffff marker: typecode()
        # rebuilds such a one into a TypeCode whose methods work.
        self._value_type = D.typecode(default_value._t._d)
        #: A lifetime filter's value type: its 0 (no timeout) is the best value.
        self._lifetime = _is_lifetime(self._value_type._d)
        self._context = context or CompileContext()
        self._lock = threading.Lock()
        self._state = _State.of(())
        self._next_constraint_id = 1  # ids are never reused, across restarts too
        self._is_destroyed = False
        #: Told (lock held) after every change: the persistent store's hook.
        self.listener: Callable[[Any], None] | None = None
        #: ``flt/N`` when the filter is kept in a store, else None.
        self.store_path: str | None = None

    def __repr__(self) -> str:
        return (f"<MappingFilter {self._grammar_name} {self._value_type!r} with "
                f"{len(self._state.by_id)} constraint(s)"
                f"{' (destroyed)' if self._is_destroyed else ''}>")

    # -- matching (lock-free): (boolean result, out any result_to_set) ----------------------------
    def match(self, filterable_data: Any) -> tuple[bool, Any]:
        """Map an Any event (§3.2.2.10)."""
        return self._result(self._state.any(filterable_data))

    def match_structured(self, filterable_data: Any) -> tuple[bool, Any]:
        """Map a structured event (§3.2.2.11)."""
        return self._result(self._state.structured(filterable_data))

    def match_typed(self, filterable_data: Any) -> tuple[bool, Any]:
        """Map a typed event given as a PropertySeq (§3.2.2.12, §2.7)."""
        return self._result(self._state.typed(filterable_data))

    def _result(self, entry: Entry | None) -> tuple[bool, Any]:
        if entry is None:
            return False, self._default
        return True, entry.value

    # -- attributes ----------------------------------------------------------------------------
    def _get_constraint_grammar(self) -> str:
        self._check("constraint_grammar")
        return self._grammar_name

    def _get_value_type(self) -> Any:
        """The TypeCode every value must have: the default value's (§3.2.2.2)."""
        self._check("value_type")
        return self._value_type

    def _get_default_value(self) -> Any:
        """The value ``match`` returns with FALSE (§3.2.2.3)."""
        self._check("default_value")
        return self._default

    # -- constraints ---------------------------------------------------------------------------
    def add_mapping_constraints(self, pair_list: Iterable[Any]) -> list[Any]:
        """Add constraint-value pairs atomically (§3.2.2.4)."""
        self._check("add_mapping_constraints")
        compiled = [self._compile(pair.constraint_expression, pair.result_to_set)
                    for pair in _items(pair_list, "result_to_set")]
        with self._lock:
            self._check("add_mapping_constraints")
            first = self._next_constraint_id
            added = [attrs.evolve(e, constraint_id=first + i) for i, e in enumerate(compiled)]
            self._next_constraint_id = first + len(added)
            self._state = _State.of([*self._state.by_id.values(), *added], self._lifetime)
            self._changed()
        return [_info(e) for e in added]

    def modify_mapping_constraints(self, del_list: Iterable[int],
                                   modify_list: Iterable[Any]) -> None:
        """Delete and replace pairs, all or nothing (§3.2.2.5)."""
        self._check("modify_mapping_constraints")
        deletions = as_list(del_list, "modify_mapping_constraints")
        modifications = _items(modify_list, "value", "constraint_id")
        with self._lock:
            self._check("modify_mapping_constraints")
            current = dict(self._state.by_id)
            check_ids(deletions, current)
            doomed = set(deletions)
            modified = [info.constraint_id for info in modifications]
            check_ids(modified, {k: v for k, v in current.items() if k not in doomed})
            replaced: dict[int, Entry] = {}
            for constraint_id, info in zip(modified, modifications):
                replaced[constraint_id] = self._compile(info.constraint_expression, info.value,
                                                        constraint_id)
            for constraint_id in doomed:
                del current[constraint_id]
            current.update(replaced)
            if doomed or replaced:
                self._state = _State.of(list(current.values()), self._lifetime)
                self._changed()

    def get_mapping_constraints(self, id_list: Iterable[int]) -> list[Any]:
        """The pairs with these ids, in that order (§3.2.2.6)."""
        self._check("get_mapping_constraints")
        by_id = self._state.by_id
        result = []
        for constraint_id in as_list(id_list, "get_mapping_constraints"):
            entry = by_id.get(constraint_id) if isinstance(constraint_id, int) else None
            if entry is None:
                raise CosNotifyFilter.ConstraintNotFound(constraint_id)
            result.append(_info(entry))
        return result

    def get_all_mapping_constraints(self) -> list[Any]:
        """Every pair, by ascending id (§3.2.2.7)."""
        self._check("get_all_mapping_constraints")
        by_id = self._state.by_id  # one published set, however the filter changes meanwhile
        return [_info(by_id[i]) for i in sorted(by_id)]

    def remove_all_mapping_constraints(self) -> None:
        """Remove every pair; the filter stays usable (§3.2.2.8)."""
        self._check("remove_all_mapping_constraints")
        with self._lock:
            self._check("remove_all_mapping_constraints")
            self._state = _State.of(())
            self._changed()

    def destroy(self) -> None:
        """Destroy the filter; later operations raise OBJECT_NOT_EXIST (§3.2.2.9)."""
        with self._lock:
            self._check("destroy")
            self._is_destroyed = True
            self._state = _DESTROYED
            self._changed()

    # -- internals -------------------------------------------------------------------------------
    def _check(self, operation: str) -> None:
        if self._is_destroyed:
            raise object_not_exist(operation)

    def _changed(self) -> None:
        listener = self.listener
        if listener is not None:
            listener(self)

    def _restore(self, entries: Sequence[Entry], next_id: int) -> None:
        """Install pairs with their own ids (read back from the store); the
        next id given is ``next_id`` or above."""
        with self._lock:
            self._state = _State.of(entries, self._lifetime)
            top = max((e.constraint_id for e in entries), default=0)
            self._next_constraint_id = max(next_id, top + 1)

    def _compile(self, expression: Any, value: Any, constraint_id: int = 0) -> Entry:
        entry = compile_entry(self._grammar, self._context, expression, constraint_id,
                              index=False)
        if type(value) is not CorbaAny or not D.equivalent(value._t._d, self._value_type._d) \
                or _unfit(value) is not None:
            raise CosNotifyFilter.InvalidValue(entry.expression, value)
        return attrs.evolve(entry, value=value)


def _unfit(value: Any) -> str | None:
    """Why ``value``'s TypeCode cannot hold its value, or None when it can.

    An Any made in process is never marshalled, so nothing else checks that its
    value fits its TypeCode (a short of 70000). One that does not would be
    published and then fail where it is marshalled: the store saving the filter
    (after the change was published: §3.2.2.4's "or none of them" broken), or a
    remote client reading it. So values are tried with the encoder the store
    uses (``codec.encode_any``: omniORB's ``cdrMarshal``, which makes a loopback
    ORB if the process has none), once, when they are added."""
    from cosnotify.channel.codec import encode_any  # the store's encoder (layering: lazy)

    try:
        encode_any(value)
    except CORBA.BAD_PARAM as exc:
        return " ".join(map(str, getattr(exc, "_info", None) or [exc]))
    except (CORBA.SystemException, ValueError, SystemError) as exc:
        # A str omniORB cannot encode (a lone surrogate) comes out of cdrMarshal as a
        # SystemError or UNKNOWN, not BAD_PARAM (as in typed/events.py).
        return f"a value its type cannot hold ({type(exc).__name__})"
    return None


def _items(items: Iterable[Any], *fields: str) -> list[Any]:
    result = as_list(items, "mapping constraints")
    for item in result:
        if not all(hasattr(item, name) for name in ("constraint_expression", *fields)):
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO,
                                  f"malformed mapping constraint: {item!r}")
    return result


def _info(entry: Entry) -> Any:
    return CosNotifyFilter.MappingConstraintInfo(copy_expression(entry.expression),
                                                 entry.constraint_id, entry.value)

