"""The predicate index: which constraints of a channel an event may satisfy.

Strategy: every constraint of every indexed filter is *posted* under its
access (``terms``): under each key of each term, in the *slot* of the
term's component. A slot holds a hash table per relation (``==`` and
``in``: key to postings) and, for ranges, postings sorted by bound, one
list per key domain (numbers, strings), so ``value > bound`` is a bisection
that returns exactly the postings whose bound lies below the value. To look
an event up, each slot reads its component from the event once and looks
the value's keys up; constraints without an access are found by event type
instead (exact types hashed, wildcards tested once per type and cached).

What comes out are *candidates*: every constraint that can be TRUE for the
event, and some that are not. Each candidate is then evaluated with its own
compiled function, or, when the constraint is nothing but one comparison of
the component with a literal (``Term.exact``), by comparing the value the
slot read with that literal, where Python's comparison is the grammar's; so
results are exactly those of matching every filter (see ``match``).

Cost per event: one read per slot (components in use, not constraints),
one hash lookup per key, one bisection per range domain, and one evaluation
(or comparison) per candidate. The index is not thread-safe: the router
serialises it.
"""

from __future__ import annotations

import bisect
import logging
import math
import operator
from collections.abc import Callable, Iterable
from typing import Any, Final

from cosnotify.filter.compiler import operand_function, sequence_function
from cosnotify.filter.constraints import Entry, TypePair
from cosnotify.filter.paths import Form
from cosnotify.filter.runtime import operand
from cosnotify.routing.terms import Kind, keys_of

__all__ = ["Posting", "PredicateIndex"]

log = logging.getLogger("cosnotify.routing")

_CACHE_LIMIT: Final = 4096
_PLAIN: Final = frozenset({str, int, float, bool})
_NO_VALUE: Final = object()  # postings found without reading a value (``in``, types)

#: Integers a double holds exactly: within them, comparing an int with a number as
#: Python does (exactly) and as EXTENDED_TCL does (as doubles, §2.4.3) agree.
_EXACT_INT: Final = 2 ** 53
_COMPARE: Final = {"==": operator.eq, "<": operator.lt, "<=": operator.le,
                   ">": operator.gt, ">=": operator.ge}
#: Comparisons certainly TRUE for a value above (below) an exact posting's bound,
#: which is its literal (``_Sorted.at_most``): a number's key is the number itself,
#: within ``_EXACT_INT``, and only numbers compare exactly with ``<`` or ``>``.
_SURE_ABOVE: Final = (operator.gt, operator.ge)
_SURE_BELOW: Final = (operator.lt, operator.le)


def _domain(value: Any) -> str | None:
    """"n" for a number that compares exactly (a float, or an int, not a bool,
    within ``_EXACT_INT``), "s" for a string, else None."""
    kind = type(value)
    if kind is float or (kind is int and -_EXACT_INT <= value <= _EXACT_INT):
        return "n"
    return "s" if kind is str else None


def _exact_test(entry: Entry) -> tuple[Callable[[Any, Any], bool], Any, str] | None:
    """(compare, literal, domain) when ``entry`` is one comparison with a literal
    that Python compares as the grammar does, for values of the same domain:
    numbers with every operator, strings with ``==`` (EXTENDED_TCL orders
    one-character strings as characters, so only equality is left to Python)."""
    access = entry.access
    if access is None or len(access) != 1 or access[0].exact is None:
        return None
    op, literal = access[0].exact
    domain = _domain(literal)
    if domain is None or (domain == "s" and op != "=="):
        return None
    return _COMPARE[op], literal, domain


class Posting:
    """One constraint (``entry``) of one indexed filter (``record``)."""

    # The fields ``match`` reads are in the posting itself: at scale the
    # constraint's entry is cold in the caches, and a lone comparison is decided
    # from the posting alone.
    __slots__ = ("applies", "compare", "domain", "entry", "literal", "record")

    def __init__(self, record: Any, entry: Entry) -> None:
        self.record = record
        self.entry = entry
        self.applies = entry.applies
        #: The constraint's test without its compiled function (``_exact_test``):
        #: ``compare(value, literal)`` for values of ``domain``; else domain None.
        exact = _exact_test(entry)
        self.compare: Callable[[Any, Any], bool] | None = exact[0] if exact else None
        self.literal: Any = exact[1] if exact else None
        self.domain: str | None = exact[2] if exact else None


class _Sorted:
    """Postings grouped by bound, the distinct bounds sorted (one key domain: all
    numbers or all strings). Groups are insertion-ordered sets, so removing one
    of many postings with the same bound costs O(1), not a scan of the group."""

    __slots__ = ("bounds", "groups")

    def __init__(self) -> None:
        self.bounds: list[Any] = []
        self.groups: dict[Any, dict[Posting, None]] = {}

    def add(self, bound: Any, posting: Posting) -> None:
        group = self.groups.get(bound)
        if group is None:
            group = self.groups[bound] = {}
            bisect.insort(self.bounds, bound)
        group[posting] = None

    def remove(self, bound: Any, posting: Posting) -> None:
        group = self.groups[bound]
        del group[posting]
        if not group:
            del self.groups[bound]
            del self.bounds[bisect.bisect_left(self.bounds, bound)]

    def at_most(self, value: Any, out: list[Any], read: Any) -> None:
        """Append to ``out`` the groups of postings whose bound is <= value, as
        ``(group, read, sure)``: ``sure`` for those whose bound is below it."""
        groups, bounds = self.groups, self.bounds
        below = bisect.bisect_left(bounds, value)
        out.extend((groups[b], read, _SURE_ABOVE) for b in bounds[:below])
        if below < len(bounds) and bounds[below] == value:
            out.append((groups[value], read, ()))

    def at_least(self, value: Any, out: list[Any], read: Any) -> None:
        """As ``at_most``, for the groups whose bound is >= value."""
        groups, bounds = self.groups, self.bounds
        above = bisect.bisect_right(bounds, value)
        if above and bounds[above - 1] == value:
            out.append((groups[bounds[above - 1]], read, ()))
        out.extend((groups[b], read, _SURE_BELOW) for b in bounds[above:])


class _Windows:
    """Postings of BETWEEN terms (numbers): grouped by lower bound, the distinct
    lower bounds sorted, and the widest window known, so a value's candidates
    are the windows whose lower bound lies within that width below it, kept
    when their upper bound is not below it.

    A posting may have several windows with one lower bound (``($x >= 1 and $x < 5)
    or ($x >= 1 and $x < 2)``): a group holds each ``(posting, high)`` (review 112:
    keyed by posting alone, the last window posted replaced the others, and taking
    the second back raised KeyError). The width is a float rounded up, and a value's
    start rounded down, so the search never starts past a window it needs (review
    112: ``high - low`` rounded down missed values at the top of wide windows)."""

    __slots__ = ("bounds", "groups", "width")

    def __init__(self) -> None:
        self.bounds: list[Any] = []
        self.groups: dict[Any, dict[tuple[Posting, Any], None]] = {}  # low -> (posting, high)
        self.width = 0.0  # never shrinks: a wider guess only adds candidates

    def add(self, low: Any, high: Any, posting: Posting) -> None:
        group = self.groups.get(low)
        if group is None:
            group = self.groups[low] = {}
            bisect.insort(self.bounds, low)
        group[(posting, high)] = None
        try:
            span = math.nextafter(float(high - low), math.inf)  # at least the exact one
        except OverflowError:
            span = math.inf
        if not math.isnan(span):
            self.width = max(self.width, span)

    def remove(self, low: Any, high: Any, posting: Posting) -> None:
        group = self.groups[low]
        del group[(posting, high)]
        if not group:
            del self.groups[low]
            del self.bounds[bisect.bisect_left(self.bounds, low)]

    def around(self, value: Any) -> list[Posting]:
        bounds, groups = self.bounds, self.groups
        try:
            below = float(value)
            if below > value:  # a large int rounded up: the float just under it
                below = math.nextafter(below, -math.inf)
            start = math.nextafter(below - self.width, -math.inf)  # the rounding of "-"
        except (TypeError, ValueError, OverflowError):  # no float: every window is looked at
            start = math.nan
        first = 0 if math.isnan(start) else bisect.bisect_left(bounds, start)
        last = bisect.bisect_right(bounds, value)
        return list(dict.fromkeys(posting for low in bounds[first:last]
                                  for posting, high in groups[low] if high >= value))


class _Slot:
    """Everything posted on one component."""

    __slots__ = ("component", "eq", "has", "lower", "readers", "sequences", "size", "upper",
                 "windows")

    def __init__(self, component: Any) -> None:
        self.component = component
        self.eq: dict[Any, dict[Posting, None]] = {}  # key -> postings (a set, ordered)
        self.has: dict[Any, dict[Posting, None]] = {}
        self.lower: dict[str, _Sorted] = {}  # value >= bound
        self.upper: dict[str, _Sorted] = {}  # value <= bound
        self.windows: _Windows | None = None  # low <= value <= high (numbers)
        self.readers: dict[Form, Callable[[Any], Any]] = {}
        self.sequences: dict[Form, Callable[[Any], Any]] = {}
        self.size = 0

    def post(self, kind: Kind, key: Any, posting: Posting, add: bool) -> None:
        if kind is Kind.EQ or kind is Kind.IN:
            table = self.eq if kind is Kind.EQ else self.has
            if add:
                table.setdefault(key, {})[posting] = None
            else:
                found = table[key]
                del found[posting]
                if not found:
                    del table[key]
        elif kind is Kind.BETWEEN:
            (_, low), (_, high) = key
            if add:
                if self.windows is None:
                    self.windows = _Windows()
                self.windows.add(low, high, posting)
            else:
                assert self.windows is not None
                self.windows.remove(low, high, posting)
        else:
            ranges = self.lower if kind is Kind.LOWER else self.upper
            domain, bound = key
            if add:
                ranges.setdefault(domain, _Sorted()).add(bound, posting)
            else:
                ranges[domain].remove(bound, posting)
                if not ranges[domain].bounds:
                    del ranges[domain]
        self.size += 1 if add else -1

    def reader(self, form: Form) -> Callable[[Any], Any]:
        found = self.readers.get(form)
        if found is None:
            found = self.readers[form] = operand_function(self.component, form)
        return found

    def sequence(self, form: Form) -> Callable[[Any], Any]:
        found = self.sequences.get(form)
        if found is None:
            # A grammar's own component (OES_SUBTREE's node paths: filter/oes/index.py)
            # gives its function itself; EXTENDED_TCL's are compiled from the AST.
            own = getattr(self.component, "sequence_function", None)
            found = self.sequences[form] = (own(form) if own is not None
                                            else sequence_function(self.component, form))
        return found

    def lookup(self, event: Any, form: Form, out: list[Any]) -> None:
        """Append to ``out`` the postings ``event`` may satisfy here: (postings, the
        value read, sure) triples, the value ``_NO_VALUE`` for ``in`` postings;
        ``sure``: the comparisons certainly TRUE for the value (``match``)."""
        if self.eq or self.lower or self.upper or self.windows:
            try:
                value = self.reader(form)(event)
            except Exception:  # noqa: BLE001, S110 - unreadable: no comparison can be TRUE
                pass
            else:
                for key in keys_of(value):
                    found = self.eq.get(key)
                    if found:
                        out.append((found, value, ()))
                    if self.lower:
                        ranges = self.lower.get(key[0])
                        if ranges is not None:
                            ranges.at_most(key[1], out, value)
                    if self.upper:
                        ranges = self.upper.get(key[0])
                        if ranges is not None:
                            ranges.at_least(key[1], out, value)
                    if self.windows and key[0] == "n":
                        out.append((self.windows.around(key[1]), value, ()))
        if self.has:
            try:
                seq, content, _ = self.sequence(form)(event)
            except Exception:  # noqa: BLE001 - not a sequence: ``in`` is FALSE
                return
            has = self.has
            for item in seq:
                if type(item) not in _PLAIN:
                    try:
                        item = operand(item, content)
                    except Exception:  # noqa: BLE001, S112 - an element no literal equals
                        continue
                for key in keys_of(item):
                    found = has.get(key)
                    if found:
                        out.append((found, _NO_VALUE, ()))


class _ByType:
    """Constraints without an access, found by the event's type (§2.3).

    A type pattern with a literal domain and type is hashed on both; one that
    leaves the domain or the type open ("*"; "" is a literal, §3.2.1) on the other; patterns with
    '*' inside a name are tested once per event type seen, and cached.
    """

    def __init__(self) -> None:
        self.everywhere: dict[Posting, None] = {}
        self.exact: dict[TypePair, dict[Posting, None]] = {}
        self.by_domain: dict[str, dict[Posting, None]] = {}
        self.by_type: dict[str, dict[Posting, None]] = {}
        self.patterns: dict[Posting, None] = {}
        self._size = 0
        self._cache: dict[TypePair | None, tuple[Posting, ...]] = {}

    def __len__(self) -> int:
        return self._size

    def _tables(self, entry: Entry) -> list[tuple[dict[Any, Any], Any]]:
        """(table, key) pairs where ``entry`` is filed (key None: the table is a set)."""
        if entry.applies is None:
            return [(self.everywhere, None)]
        found: list[tuple[dict[Any, Any], Any]] = []
        for domain, type_name in entry.types:
            open_domain, open_type = domain == "*", type_name == "*"  # "": a name
            if ("*" in domain and not open_domain) or ("*" in type_name and not open_type):
                found.append((self.patterns, None))
            elif open_domain:
                found.append((self.by_type, type_name))
            elif open_type:
                found.append((self.by_domain, domain))
            else:
                found.append((self.exact, (domain, type_name)))
        return found

    def add(self, posting: Posting) -> None:
        for table, key in self._tables(posting.entry):
            (table if key is None else table.setdefault(key, {}))[posting] = None
        self._size += 1
        self._cache.clear()

    def remove(self, posting: Posting) -> None:
        for table, key in self._tables(posting.entry):
            if key is None:
                table.pop(posting, None)
            else:
                inner = table.get(key)
                if inner is not None:
                    inner.pop(posting, None)
                    if not inner:
                        del table[key]
        self._size -= 1
        self._cache.clear()

    def lookup(self, key: TypePair | None) -> tuple[Posting, ...]:
        found = self._cache.get(key)
        if found is None:
            chosen = dict(self.everywhere)
            if key is not None:
                domain, type_name = key
                chosen.update(self.exact.get(key, {}))
                chosen.update(self.by_domain.get(domain, {}))
                chosen.update(self.by_type.get(type_name, {}))
                chosen.update((p, None) for p in self.patterns
                              if p.entry.applies(domain, type_name))  # type: ignore[misc]
            found = tuple(chosen)
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[key] = found
        return found


class PredicateIndex:
    """Postings of the constraints of many filters, looked up per event."""

    def __init__(self) -> None:
        self._slots: dict[Any, _Slot] = {}
        self._by_type = _ByType()
        #: (record, entry) -> its posting, to remove it again.
        self._postings: dict[tuple[int, int], Posting] = {}

    def __len__(self) -> int:
        """How many constraints are posted."""
        return len(self._postings)

    @property
    def fallback_count(self) -> int:
        """Constraints posted by type only (no access): evaluated for every event."""
        return len(self._by_type)

    @property
    def slot_count(self) -> int:
        return len(self._slots)

    # -- changes --------------------------------------------------------------------------
    def add(self, record: Any, entries: Iterable[Entry]) -> None:
        for entry in entries:
            ident = (id(record), id(entry))
            if ident in self._postings:
                continue
            posting = self._postings[ident] = Posting(record, entry)
            self._post(posting, add=True)

    def remove(self, record: Any, entries: Iterable[Entry]) -> None:
        for entry in entries:
            posting = self._postings.pop((id(record), id(entry)), None)
            if posting is not None:
                self._post(posting, add=False)

    def _post(self, posting: Posting, add: bool) -> None:
        access = posting.entry.access
        if access is None:
            if add:
                self._by_type.add(posting)
            else:
                self._by_type.remove(posting)
            return
        # Each (component, kind, key) once: postings under one key are a set, so
        # ``$a == 1 or $a == 1`` must post (and withdraw) its key once.
        places = dict.fromkeys(
            (term.component, term.kind, key) for term in access
            for key in ((term.keys,) if term.kind is Kind.BETWEEN else term.keys))
        for component, kind, key in places:
            slot = self._slots.get(component)
            if slot is None:
                slot = self._slots[component] = _Slot(component)
            slot.post(kind, key, posting, add)
            if not slot.size:
                del self._slots[component]

    # -- lookup ---------------------------------------------------------------------------
    def candidates(self, event: Any, form: Form, key: TypePair | None) -> list[Any]:
        """(postings, value, sure) triples whose postings together hold every posting
        ``event`` (of ``form``, of type ``key``) may satisfy, and more; a posting may
        be in several. ``value`` is what the postings' slot read (``_Slot.lookup``);
        ``sure``, the exact comparisons (``Posting.compare``) its postings pass."""
        lists: list[Any] = []
        by_type = self._by_type.lookup(key)
        if by_type:
            lists.append((by_type, _NO_VALUE, ()))
        for slot in self._slots.values():
            slot.lookup(event, form, lists)
        return lists

    def match(self, event: Any, form: Form, key: TypePair | None) -> list[Any]:
        """The records whose filter matches ``event``: exactly those, as if each
        filter's own ``match`` were called (§2.3: a filter matches when one of
        its constraints that applies to the event's type is TRUE).

        Changes are atomic (§3.2.1.2): a filter's answer is that of one version
        of its constraints. The caller holds the lock that changes to the index
        take, and a filter posts new constraints before it publishes them and
        withdraws old ones after (``Filter._switch``, one change at a time), so
        what is posted is the union of the version published before the change
        under way, if any, and the one after it. A constraint of the union that
        is TRUE makes the version holding it match; when none is, neither
        version matches: the union's answer is always one version's. (This
        takes a change's posting to succeed whole: ``_Slot.post`` has no way
        to fail but memory.)
        """
        attribute = form.value
        matched: dict[Any, None] = {}
        answers: dict[Any, bool] = {}  # by signature: equal constraints, one evaluation
        for postings, value, sure in self.candidates(event, form, key):
            domain = _domain(value)
            for posting in postings:
                record = posting.record
                if record in matched:
                    continue
                applies = posting.applies
                if domain is not None and posting.domain == domain:
                    compare = posting.compare
                    if (compare in sure or compare(value, posting.literal)) and (
                            applies is None or (key is not None and applies(*key))):
                        matched[record] = None
                    continue
                entry = posting.entry
                signature = entry.signature
                answer = answers.get(signature) if signature is not None else None
                if answer is None:
                    answer = bool((applies is None or (key is not None and applies(*key)))
                                  and getattr(entry.compiled, attribute)(event))
                    if signature is not None:
                        answers[signature] = answer
                if answer:
                    matched[record] = None
        return list(matched)
