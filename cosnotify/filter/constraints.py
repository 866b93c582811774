"""Constraint sets shared by Filter and MappingFilter (§3.2.1, §3.2.2).

Strategy: a filter's constraints live in an immutable :class:`Entry` tuple;
every change builds a new tuple and new dispatch functions under the
filter's write lock and publishes them with one attribute assignment, so
``match`` reads a consistent snapshot without taking any lock (copy on
write). A change is all-or-nothing: every new constraint is compiled and
checked before anything is published (§3.2.1.2-3).

Event types (§2.3, §3.2.1): a constraint applies only to events whose
``(domain, type)`` one of its patterns covers; an empty list (or any
every-type spelling, normalised by ``cosnotify.eventtypes``) covers all. For
structured events the set of constraints that apply to a given type is
computed once per type and cached; Any events always have type
``("", "%ANY")`` (§2.1.4, Table 2-2), so their set is fixed per snapshot;
typed events take their type from the ``event_type`` pair (§2.7).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, Generic, TypeAlias, TypeVar

import attrs
from omniORB import CORBA

import CosNotification
import CosNotifyComm
import CosNotifyFilter

from cosnotify.corba import descriptors as D
from cosnotify.eventtypes import ALL, attribute_type, check_event_types, type_matches
from cosnotify.filter.registry import CompileContext, CompiledConstraint, Grammar, any_of
from cosnotify.filter.runtime import CorbaAny, strip

__all__ = [
    "ANY_EVENT_TYPE",
    "Entry",
    "EntryMatcher",
    "InvalidConstraintError",
    "Matcher",
    "TypePair",
    "as_list",
    "bool_dispatch",
    "check_ids",
    "compile_entry",
    "copy_expression",
    "entry_dispatch",
    "object_not_exist",
]

log = logging.getLogger(__name__)

Matcher: TypeAlias = Callable[[Any], bool]
TypePair: TypeAlias = tuple[str, str]

#: The type of every unstructured (Any) event (§2.1.4, Table 2-2).
ANY_EVENT_TYPE: Final = ("", "%ANY")
#: The type of a typed event without an ``event_type`` pair (§2.1.4, Table 2-2).
TYPED_EVENT_TYPE: Final = ("", "%TYPED")
_SE_ID: Final = CosNotification.StructuredEvent._NP_RepositoryId
_SE_TYPECODE: Final = CosNotification._tc_StructuredEvent
_CACHE_LIMIT: Final = 4096


class InvalidConstraintError(CosNotifyFilter.InvalidConstraint):  # type: ignore[misc]
    """``CosNotifyFilter::InvalidConstraint`` whose ``str()`` says what is wrong.

    ``constr`` is the offending ConstraintExp, as the IDL requires; ``detail``
    is the grammar's message (for EXTENDED_TCL: position, line, column and a
    caret excerpt). ``except CosNotifyFilter.InvalidConstraint`` catches it,
    and omniORB marshals it as that exception (same repository id, same
    members): ``detail`` stays on this side.
    """

    def __init__(self, constr: Any, detail: str) -> None:
        super().__init__(constr)
        self.detail = detail

    def __str__(self) -> str:
        expr = getattr(self.constr, "constraint_expr", self.constr)
        return f"invalid constraint {expr!r}: {self.detail}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.constr, self.detail))


def as_list(items: Any, operation: str) -> list[Any]:
    """An IDL sequence argument as a list; ``BAD_PARAM`` if it is not a sequence."""
    try:
        return list(items)
    except TypeError:
        raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO,
                              f"{operation}: not a sequence: {items!r}") from None


def check_ids(ids: Iterable[Any], known: Any) -> None:
    """``ConstraintNotFound`` for the first of ``ids`` that is not a key of ``known``
    (a value that is not an integer, even an unhashable one, is never a key)."""
    for constraint_id in ids:
        if not isinstance(constraint_id, int) or constraint_id not in known:
            raise CosNotifyFilter.ConstraintNotFound(constraint_id)


def object_not_exist(what: str) -> Exception:
    """``CORBA::OBJECT_NOT_EXIST`` for an operation on a destroyed filter (§3.2.1.6)."""
    error: Exception = CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO,
                                              f"{what}: the filter was destroyed")
    return error


@attrs.frozen(eq=False)
class Entry:
    """One constraint of a filter: its id, expression, types and compiled form."""

    constraint_id: int
    expression: Any  # CosNotifyFilter.ConstraintExp (a private copy)
    types: tuple[TypePair, ...]  # normalised; (ALL,) for "every type"
    applies: Callable[[str, str], bool] | None  # None: every type
    compiled: CompiledConstraint
    value: Any = None  # MappingFilter: the CORBA.Any result_to_set
    #: The routing index's terms (``cosnotify.routing.terms``); None: not indexable.
    access: Any = None
    #: (grammar, context, text, types): entries with equal signatures give equal
    #: answers for one event (the context holds the clock of ``$curtime``),
    #: so the routing index evaluates one of them per event.
    signature: Any = None
    #: ``("%ATTRIBUTE", name)`` for each attribute the constraint tests, when its
    #: grammar says (``Grammar.tested``): reported beside ``types`` (a quench).
    attributes: tuple[TypePair, ...] = ()


def _type_test(types: Sequence[TypePair]) -> Callable[[str, str], bool] | None:
    """A fast test for "does this constraint apply to (domain, type)?"."""
    if ALL in types:
        return None
    exact = frozenset(p for p in types if "*" not in p[0] + p[1])
    others = tuple(p for p in types if p not in exact)

    def applies(domain: str, type_name: str) -> bool:
        return (domain, type_name) in exact or any(
            type_matches(p, domain, type_name) for p in others)
    return applies


def compile_entry(grammar: Grammar, context: CompileContext, expression: Any,
                  constraint_id: int = 0, value: Any = None, *, index: bool = True) -> Entry:
    """Check and compile one ConstraintExp; InvalidConstraint if it is not valid.

    With ``index`` (forwarding filters), the grammar's decompose function gives
    the entry's routing access. A constraint beyond the index's limits (more than
    ``routing.terms.MAX_KEYS`` keys) is still valid, so it is kept, unindexed: the
    router evaluates it for every event of its types. §3.2.1.2 raises
    InvalidConstraint only for a constraint that "is not a valid expression within
    the supported constraint grammar" (review 114)."""
    try:
        text = expression.constraint_expr
        raw_types = list(expression.event_types)
    except (AttributeError, TypeError):
        raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO,
                              f"not a CosNotifyFilter::ConstraintExp: {expression!r}") from None
    if not isinstance(text, str):
        raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO,
                              f"constraint_expr must be a string, not {text!r}")
    if not all(type(getattr(t, "domain_name", None)) is str
               and type(getattr(t, "type_name", None)) is str for t in raw_types):
        raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO, "event_types must be a sequence of "
                                                     f"EventType (two strings): {raw_types!r}")
    copy = _expression(raw_types, text)
    try:
        types = check_event_types(raw_types)
    except CosNotifyComm.InvalidEventType as exc:
        bad = exc.type
        raise InvalidConstraintError(
            copy, f"invalid event type ({bad.domain_name!r}, {bad.type_name!r})") from None
    try:
        compiled = grammar.compile(text, context)
    except ValueError as exc:
        raise InvalidConstraintError(copy, str(exc)) from None
    except Exception as exc:
        log.exception("compiling constraint %r failed", text)
        raise InvalidConstraintError(copy, f"cannot compile: {exc}") from None
    access = None
    if index and grammar.decompose is not None:
        try:
            access = grammar.decompose(compiled)
        except ValueError as exc:
            log.info("constraint %r kept unindexed: %s", text, exc)
        except Exception:
            log.exception("decomposing constraint %r failed", text)
    unique = tuple(dict.fromkeys(types)) or (ALL,)
    return Entry(constraint_id, copy, unique, _type_test(unique), compiled, value, access,
                 (grammar.name, id(context), text, unique), _attributes(grammar, compiled, text))


def _attributes(grammar: Grammar, compiled: CompiledConstraint,
                text: str) -> tuple[TypePair, ...]:
    if grammar.tested is None:
        return ()
    try:
        names = sorted(set(grammar.tested(compiled)))
    except Exception:
        log.exception("the attributes of constraint %r are unknown", text)
        return ()
    return tuple(pair for pair in map(attribute_type, names) if pair is not None)


def _expression(types: Iterable[Any], text: str) -> Any:
    return CosNotifyFilter.ConstraintExp(
        [CosNotification.EventType(t.domain_name, t.type_name) for t in types], text)


def copy_expression(expression: Any) -> Any:
    """A fresh ConstraintExp, so callers cannot change a filter's constraints in place."""
    return _expression(expression.event_types, expression.constraint_expr)


# -- event types of events -------------------------------------------------------------------


def structured_type(event: Any) -> TypePair | None:
    """``(domain_name, type_name)`` of a structured event, or None if it has none."""
    try:
        event_type = event.header.fixed_header.event_type
        key = (event_type.domain_name, event_type.type_name)
    except Exception:  # noqa: BLE001 - a malformed event has no type; matching says FALSE
        return None
    return key if type(key[0]) is str and type(key[1]) is str else None


def typed_type(properties: Any) -> TypePair:
    """The type of a typed event: its ``event_type`` pair (§2.7), else ``%TYPED``."""
    try:
        for prop in properties:
            if prop.name == "event_type":
                found = strip(prop.value, D.ANY)
                if found is not None:
                    key = (found[0].domain_name, found[0].type_name)
                    if type(key[0]) is str and type(key[1]) is str:
                        return key
                break
    except Exception:  # noqa: BLE001 - malformed properties (even a bad TypeCode): no type
        return TYPED_EVENT_TYPE
    return TYPED_EVENT_TYPE


def holds_structured_event(event: Any) -> Any:
    """The StructuredEvent inside an Any (through Any layers), or None (§2.1.4)."""
    tc = event._t
    if tc is _SE_TYPECODE:
        return event._v
    d = tc._d
    if type(d) is tuple and d[0] == D.STRUCT:
        return event._v if d[2] == _SE_ID else None
    try:
        found = strip(event._v, d)
    except Exception:  # noqa: BLE001 - e.g. an unbound recursive TypeCode: not an event
        return None
    if found is not None:
        base = found[2]
        if type(base) is tuple and base[0] == D.STRUCT and base[2] == _SE_ID:
            return found[0]
    return None


# -- dispatch ------------------------------------------------------------------------------------

T = TypeVar("T")


class _TypeTable(Generic[T]):
    """Per event type, ``build(entries that apply)``, computed once per type and cached."""

    def __init__(self, entries: Sequence[Entry], build: Callable[[tuple[Entry, ...]], T]) -> None:
        self._entries = tuple(entries)
        self._build = build
        self._cache: dict[TypePair | None, T] = {}

    def lookup(self, key: TypePair | None) -> T:
        try:
            return self._cache[key]
        except KeyError:
            pass
        chosen = tuple(e for e in self._entries
                       if e.applies is None or (key is not None and e.applies(*key)))
        built = self._build(chosen)
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[key] = built
        return built


def _never(event: Any) -> bool:
    return False


_NEVER: Final = CompiledConstraint(_never, _never, _never)
#: Constraints per combined function: bounds the size (and compile time) of each.
_CHUNK: Final = 32
#: Constraint text per combined function (a longer constraint is not combined).
_CHUNK_CHARS: Final = 8192
_FORMS: Final = ("structured", "any", "typed")


class _Combining:
    """OR over the ``form`` matchers of a few constraints (§2.3).

    It starts by calling each constraint's matcher; after ``combine_after``
    calls it has the grammar compile them into one function and uses that
    (work shared between constraints pays off only for groups in use, and a
    filter that keeps changing never pays for compilation it would discard).
    """

    __slots__ = ("_calls", "_compiled", "_context", "_form", "_grammar", "_matchers", "match")

    def __init__(self, compiled: tuple[CompiledConstraint, ...], form: str, grammar: Grammar,
                 context: CompileContext) -> None:
        self._compiled = compiled
        self._form = form
        self._grammar = grammar
        self._context = context
        self._matchers: tuple[Matcher, ...] = tuple(getattr(c, form) for c in compiled)
        self._calls = 0
        self.match: Matcher = self._each
        if len(compiled) == 1:
            self.match = self._matchers[0]
        elif grammar.combine is None:
            self.match = any_of(self._matchers)
        elif context.combine_after <= 0:
            self._combine()

    def _each(self, event: Any) -> bool:
        self._calls += 1
        if self._calls >= self._context.combine_after and self.match == self._each:
            # ``>=``: unlocked increments from several threads may skip a value.
            self._combine()
        for matcher in self._matchers:
            if matcher(event):
                return True
        return False

    def _combine(self) -> None:
        combine = self._grammar.combine
        assert combine is not None
        try:
            self.match = combine(self._compiled, self._form, self._context)
        except Exception:
            log.exception("combining %d constraints failed", len(self._compiled))
            self.match = any_of(self._matchers)


def _merge(chosen: Sequence[Entry], grammar: Grammar,
           context: CompileContext) -> CompiledConstraint:
    """One CompiledConstraint that is TRUE when any of ``chosen`` is (§2.3)."""
    if not chosen:
        return _NEVER
    if len(chosen) == 1:
        return chosen[0].compiled
    chunks = _chunks(chosen)
    forms = []
    for form in _FORMS:
        parts = tuple(_Combining(chunk, form, grammar, context) for chunk in chunks)
        forms.append(_or_parts(parts))
    return CompiledConstraint(*forms)


def _chunks(entries: Sequence[Entry]) -> list[tuple[CompiledConstraint, ...]]:
    """Consecutive groups of at most ``_CHUNK`` constraints and (unless one
    constraint alone is longer) ``_CHUNK_CHARS`` characters of constraint text,
    so combining one group never compiles more than that in a matching thread."""
    chunks: list[tuple[CompiledConstraint, ...]] = []
    current: list[CompiledConstraint] = []
    size = 0
    for entry in entries:
        length = len(entry.expression.constraint_expr)
        if current and (len(current) == _CHUNK or size + length > _CHUNK_CHARS):
            chunks.append(tuple(current))
            current, size = [], 0
        current.append(entry.compiled)
        size += length
    if current:
        chunks.append(tuple(current))
    return chunks


def _or_parts(parts: tuple[_Combining, ...]) -> Matcher:
    if len(parts) == 1:
        only = parts[0]

        def match_one(event: Any) -> bool:
            return only.match(event)
        return match_one

    def match(event: Any) -> bool:
        for part in parts:
            if part.match(event):
                return True
        return False
    return match


def _check_any(event: Any) -> None:
    if type(event) is not CorbaAny:
        raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO, f"match: not a CORBA.Any: {event!r}")


def bool_dispatch(entries: Sequence[Entry], grammar: Grammar,
                  context: CompileContext) -> tuple[Matcher, Matcher, Matcher]:
    """``match_structured``, ``match`` and ``match_typed`` for a Filter (OR, §2.3).

    The constraints that apply to one event type are merged once (with the
    grammar's combine function when it has one) and reused for every event of
    that type.
    """
    merged: dict[tuple[int, ...], CompiledConstraint] = {}

    def merge(chosen: tuple[Entry, ...]) -> CompiledConstraint:
        key = tuple(id(e) for e in chosen)
        found = merged.get(key)
        if found is None:
            found = _merge(chosen, grammar, context)
            if len(merged) >= _CACHE_LIMIT:
                merged.clear()
            merged[key] = found
        return found

    structured: Matcher
    typed: Matcher
    if all(e.applies is None for e in entries):
        everything = merge(tuple(entries))
        structured, typed = everything.structured, everything.typed
    else:
        by_type = _TypeTable(entries, merge)

        def structured(event: Any) -> bool:
            return by_type.lookup(structured_type(event)).structured(event)

        def typed(event: Any) -> bool:
            return by_type.lookup(typed_type(event)).typed(event)

    any_matcher = merge(tuple(e for e in entries
                              if e.applies is None or e.applies(*ANY_EVENT_TYPE))).any

    def any_form(event: Any) -> bool:
        _check_any(event)
        inner = holds_structured_event(event)
        if inner is not None:
            return structured(inner)
        return any_matcher(event)

    return structured, any_form, typed


EntryMatcher: TypeAlias = Callable[[Any], "Entry | None"]


def _first_of(entries: tuple[Entry, ...], form: str) -> EntryMatcher:
    pairs = tuple((getattr(e.compiled, form), e) for e in entries)

    def first(event: Any) -> Entry | None:
        for matcher, entry in pairs:
            if matcher(event):
                return entry
        return None
    return first


def entry_dispatch(entries: Sequence[Entry]) -> tuple[EntryMatcher, EntryMatcher, EntryMatcher]:
    """For a MappingFilter: the first entry (in ``entries`` order) an event satisfies."""
    by_type = _TypeTable(entries, lambda chosen: (_first_of(chosen, "structured"),
                                                  _first_of(chosen, "typed")))
    any_first = _first_of(tuple(e for e in entries
                                if e.applies is None or e.applies(*ANY_EVENT_TYPE)), "any")

    def structured(event: Any) -> Entry | None:
        return by_type.lookup(structured_type(event))[0](event)

    def typed(event: Any) -> Entry | None:
        return by_type.lookup(typed_type(event))[1](event)

    def any_form(event: Any) -> Entry | None:
        _check_any(event)
        inner = holds_structured_event(event)
        if inner is not None:
            return structured(inner)
        return any_first(event)

    return structured, any_form, typed
