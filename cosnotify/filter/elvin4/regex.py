"""``regex`` and ``wildcard`` patterns (Elvin 4 client protocol §6.1.8).

Strategy: the seed defers both ("Need pointer to (E?)RE semantics", "Need
pointer to glob semantics"); its references name POSIX.1, so:

- ``regex(attr, re)`` is a POSIX extended regular expression (ERE), searched
  for anywhere in the value (``regexec`` without REG_NEWLINE). We parse the
  ERE ourselves and run it as a Thompson NFA with a lazily built DFA, never
  with Python's backtracking ``re``, so no pattern, ``(a+)+$`` included,
  backtracks. A transition already in the DFA cache costs one dictionary
  lookup; building a new one visits up to ``MAX_STATES`` NFA states, and a
  pattern such as ``(a[ab]{240}){8}x`` builds a new one at almost every
  character. So a search has a *work budget*: ``WORK_BUDGET`` NFA-state
  visits spent building transitions; a search that exhausts it answers
  bottom. One evaluation of a constraint shares one :class:`Budget` among
  all its ``regex`` and ``wildcard`` calls (review 130: six costly calls of
  a 150-byte subscription took six budgets, seconds per notification), so
  once it is spent every further call that needs uncached work is bottom
  too. An evaluation thus costs at most ``len(subject)`` cached transitions
  per call plus ``WORK_BUDGET`` state visits in all. The DFA cache of a pattern holds at most
  ``_CACHE_WEIGHT`` NFA states (summed over its entries), then starts over.
  Limits: at most ``MAX_STATES`` NFA states (``{m,n}`` copies its operand;
  ``n`` at most ``DUP_MAX`` = POSIX RE_DUP_MAX) else REGEXP_TOO_COMPLEX; a
  syntax error is INVALID_REGEXP; a subject longer than ``MAX_SUBJECT``
  characters gives bottom.
  ERE details: ``\\c`` is the character c (as in Elvin strings, §6.1.4);
  brackets take ranges, ``[:class:]`` classes, a leading ``]`` or ``^``;
  backslash is literal inside brackets; ``^`` and ``$`` anchor anywhere; a
  ``)`` that closes no group is an ordinary character (POSIX ERE). A bracket
  expression is parsed once (sorted, merged code-point intervals searched by
  bisection) and shared by every ``{m,n}`` copy of it.
- ``wildcard(attr, glob)`` is a whole-value ``fnmatch(3)`` match without
  flags: ``*`` any string (``/`` and leading ``.`` included), ``?`` one
  character, ``[...]`` a bracket expression (``!`` or ``^`` negates), ``\\``
  quotes the next character, inside brackets too; a trailing ``\\`` matches
  nothing (as glibc); an unclosed ``[`` is literal. Matching splits the
  pattern at ``*`` and places each piece leftmost (greedy-free): a piece of
  plain characters is found with ``str.find`` (linear); a piece with ``?`` or
  brackets is tried position by position, each position costing one unit of
  the same budget (shared with the evaluation's other calls) per run of the
  piece; exhausting it, or a subject longer than ``MAX_SUBJECT``, gives bottom.
"""

from __future__ import annotations

import bisect
import itertools
import unicodedata
from collections.abc import Callable
from typing import Any, Final

__all__ = ["DUP_MAX", "MAX_STATES", "MAX_SUBJECT", "WORK_BUDGET", "Budget", "Glob",
           "PatternError", "Regex"]

MAX_STATES: Final = 2000
DUP_MAX: Final = 255
MAX_SUBJECT: Final = 1 << 20
#: NFA-state visits (regex) or piece positions (wildcard) one evaluation of a constraint
#: may spend beyond cached work, over all its calls; read at each Budget so tests can
#: lower it.
WORK_BUDGET = 3_000_000
#: The DFA cache of one pattern holds at most this weight: each entry weighs the
#: size of its state set plus ``_ENTRY_WEIGHT`` (its own overhead), so a few MB.
_CACHE_WEIGHT: Final = 200_000
_ENTRY_WEIGHT: Final = 8

_CHAR, _ANY, _SET, _SPLIT, _EPS, _BOL, _EOL, _MATCH = range(8)

_CLASSES: Final[dict[str, Callable[[str], bool]]] = {
    "alpha": str.isalpha, "digit": lambda c: "0" <= c <= "9", "alnum": str.isalnum,
    "upper": str.isupper, "lower": str.islower, "space": str.isspace,
    "blank": lambda c: c in " \t", "print": str.isprintable,
    "graph": lambda c: c.isprintable() and not c.isspace(),
    "cntrl": lambda c: unicodedata.category(c) == "Cc",
    "punct": lambda c: unicodedata.category(c)[0] in "PS",
    "xdigit": lambda c: c in "0123456789abcdefABCDEF",
}


class Budget:
    """The work one ``regex`` or ``wildcard`` call site has left in one evaluation of a
    constraint: its share of WORK_BUDGET (compiler.generate; module docstring); below
    zero, it is spent."""

    __slots__ = ("left",)

    def __init__(self, left: int | None = None) -> None:
        self.left = WORK_BUDGET if left is None else left


class PatternError(ValueError):
    """A bad pattern: ``name`` is INVALID_REGEXP or REGEXP_TOO_COMPLEX, ``offset``
    the position in the pattern."""

    def __init__(self, name: str, message: str, offset: int) -> None:
        super().__init__(message)
        self.name = name
        self.offset = offset


class CharSet:
    """A bracket expression: code-point intervals and classes, maybe negated.

    ``starts``/``ends`` are the sorted, merged intervals (inclusive), so a
    character is looked up by bisection, however many ranges were written.
    """

    __slots__ = ("classes", "ends", "negated", "starts")

    def __init__(self, chars: set[str], ranges: list[tuple[str, str]],
                 classes: list[Callable[[str], bool]], negated: bool) -> None:
        spans = sorted([(ord(c), ord(c)) for c in chars] + [(ord(lo), ord(hi))
                                                              for lo, hi in ranges])
        starts: list[int] = []
        ends: list[int] = []
        for lo, hi in spans:
            if ends and lo <= ends[-1] + 1:
                ends[-1] = max(ends[-1], hi)
            else:
                starts.append(lo)
                ends.append(hi)
        self.starts = tuple(starts)
        self.ends = tuple(ends)
        self.classes = tuple(classes)
        self.negated = negated

    def __call__(self, c: str) -> bool:
        o = ord(c)
        k = bisect.bisect_right(self.starts, o) - 1
        hit = (k >= 0 and o <= self.ends[k]) or any(test(c) for test in self.classes)
        return hit != self.negated


def _digits(text: str) -> bool:
    """ASCII digits only: ``str.isdigit`` also passes superscripts, which ``int`` refuses."""
    return text.isascii() and text.isdigit()


def parse_bracket(pattern: str, i: int, negators: str,
                  escapes: bool = False) -> tuple[CharSet, int]:
    """The bracket expression starting after ``[`` at ``i``: (set, index after ``]``).
    With ``escapes`` (fnmatch), ``\\`` quotes the next character. PatternError if
    it is not closed."""
    start = i - 1
    negated = i < len(pattern) and pattern[i] in negators
    if negated:
        i += 1
    chars: set[str] = set()
    ranges: list[tuple[str, str]] = []
    classes: list[Callable[[str], bool]] = []
    first = True

    def char_at(j: int) -> tuple[str, int]:
        """The (maybe escaped) character at ``j`` and the index after it."""
        if escapes and pattern[j] == "\\":
            if j + 1 >= len(pattern):
                raise PatternError("INVALID_REGEXP", "unclosed bracket expression", start)
            return pattern[j + 1], j + 2
        return pattern[j], j + 1

    while True:
        if i >= len(pattern):
            raise PatternError("INVALID_REGEXP", "unclosed bracket expression", start)
        c = pattern[i]
        if c == "]" and not first:
            return CharSet(chars, ranges, classes, negated), i + 1
        first = False
        if c == "[" and pattern[i + 1:i + 2] in (":", "=", "."):
            kind = pattern[i + 1]
            end = pattern.find(kind + "]", i + 2)
            if end < 0:
                raise PatternError("INVALID_REGEXP", f"unclosed [{kind}", i)
            word = pattern[i + 2:end]
            i = end + 2
            if kind == ":":
                if word not in _CLASSES:
                    raise PatternError("INVALID_REGEXP", f"unknown class [:{word}:]", i)
                classes.append(_CLASSES[word])
            elif len(word) == 1:
                chars.add(word)
            else:
                raise PatternError("INVALID_REGEXP", f"unsupported [{kind}{word}{kind}]", i)
            continue
        at = i
        c, i = char_at(i)
        if pattern[i:i + 1] == "-" and pattern[i + 1:i + 2] not in ("]", ""):
            hi, i = char_at(i + 1)
            if hi < c:
                raise PatternError("INVALID_REGEXP", f"invalid range {c}-{hi}", at)
            ranges.append((c, hi))
            continue
        chars.add(c)


class _Builder:
    """Recursive-descent ERE parser emitting Thompson NFA fragments."""

    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.states: list[list[Any]] = []
        self.depth = 0
        #: bracket expressions by offset: parsed once, shared by ``{m,n}`` copies
        self.brackets: dict[int, tuple[CharSet, int]] = {}

    def new(self, kind: int, arg: Any = None) -> int:
        if len(self.states) >= MAX_STATES:
            raise PatternError("REGEXP_TOO_COMPLEX",
                               f"pattern needs more than {MAX_STATES} states", self.i)
        self.states.append([kind, arg, None, None])
        return len(self.states) - 1

    # A fragment is (start state, list of (state, slot) holes to patch).
    def patch(self, holes: list[tuple[int, int]], target: int) -> None:
        for state, slot in holes:
            self.states[state][slot] = target

    def alternation(self) -> tuple[int, list[tuple[int, int]]]:
        frag = self.branch()
        while self.i < len(self.p) and self.p[self.i] == "|":
            self.i += 1
            other = self.branch()
            split = self.new(_SPLIT)
            self.states[split][2], self.states[split][3] = frag[0], other[0]
            frag = (split, frag[1] + other[1])
        return frag

    def branch(self) -> tuple[int, list[tuple[int, int]]]:
        pieces: list[tuple[int, list[tuple[int, int]]]] = []
        # a ')' ends a branch only inside a group; elsewhere it is ordinary (POSIX ERE)
        stops = "|)" if self.depth else "|"
        while self.i < len(self.p) and self.p[self.i] not in stops:
            pieces.append(self.piece())
        if not pieces:
            eps = self.new(_EPS)
            return eps, [(eps, 2)]
        for (_, holes), (start, _) in itertools.pairwise(pieces):
            self.patch(holes, start)
        return pieces[0][0], pieces[-1][1]

    def piece(self) -> tuple[int, list[tuple[int, int]]]:
        atom_start = self.i
        frag = self.atom()
        quantified = False
        while self.i < len(self.p) and self.p[self.i] in "*+?{":
            c = self.p[self.i]
            if c == "{":
                at = self.i
                bounds = self.bounds()
                if bounds is None:
                    break
                if quantified:  # POSIX: undefined; the copies would miss the quantifier
                    raise PatternError("INVALID_REGEXP", "a bound after a quantifier", at)
                frag = self.repeat(atom_start, frag, *bounds)
            else:
                self.i += 1
                frag = self.quantify(frag, c)
            quantified = True
        return frag

    def bounds(self) -> tuple[int, int | None] | None:
        j = self.i + 1
        end = self.p.find("}", j)
        body = self.p[j:end] if end >= 0 else ""
        low_text, comma, high_text = body.partition(",")
        if end < 0 or not _digits(low_text) or (high_text and not _digits(high_text)):
            if self.p[j:j + 1].isdigit():
                raise PatternError("INVALID_REGEXP", "malformed {m,n} bound", self.i)
            return None  # a '{' that starts no bound is an ordinary character
        # A bound of more digits than DUP_MAX's is above it: refused before int(), which
        # refuses more than 4,300 digits itself (a ValueError, not §6.3's error).
        if max(len(low_text.lstrip("0")), len(high_text.lstrip("0"))) > len(str(DUP_MAX)):
            raise PatternError("REGEXP_TOO_COMPLEX", f"bound above {DUP_MAX} (RE_DUP_MAX)",
                               self.i)
        low = int(low_text.lstrip("0") or "0")
        high = (int(high_text.lstrip("0") or "0") if high_text else None) if comma else low
        if low > DUP_MAX or (high is not None and high > DUP_MAX):
            raise PatternError("REGEXP_TOO_COMPLEX", f"bound above {DUP_MAX} (RE_DUP_MAX)",
                               self.i)
        if high is not None and high < low:
            raise PatternError("INVALID_REGEXP", "bound {m,n} with n < m", self.i)
        self.i = end + 1
        return low, high

    def repeat(self, start: int, frag: tuple[int, list[tuple[int, int]]],
               low: int, high: int | None) -> tuple[int, list[tuple[int, int]]]:
        """``atom{low,high}``: copies of the atom, re-parsed from its source (its bracket
        expressions come from ``self.brackets``)."""
        def copy() -> tuple[int, list[tuple[int, int]]]:
            saved = self.i
            self.i = start
            made = self.atom()
            self.i = saved
            return made
        if low == 0 and high == 0:
            eps = self.new(_EPS)
            return eps, [(eps, 2)]
        parts = [frag] + [copy() for _ in range(max(low, 1) - 1)]
        if low == 0:
            parts = [self.quantify(frag, "?")]
        if high is None:
            parts.append(self.quantify(copy(), "*"))
        else:
            parts.extend(self.quantify(copy(), "?") for _ in range(high - max(low, 1)))
        for (_, holes), (nxt, _) in itertools.pairwise(parts):
            self.patch(holes, nxt)
        return parts[0][0], parts[-1][1]

    def quantify(self, frag: tuple[int, list[tuple[int, int]]],
                 c: str) -> tuple[int, list[tuple[int, int]]]:
        split = self.new(_SPLIT)
        self.states[split][2] = frag[0]
        if c == "*":
            self.patch(frag[1], split)
            return split, [(split, 3)]
        if c == "+":
            self.patch(frag[1], split)
            return frag[0], [(split, 3)]
        return split, frag[1] + [(split, 3)]  # "?"

    def atom(self) -> tuple[int, list[tuple[int, int]]]:
        if self.i >= len(self.p):
            raise PatternError("INVALID_REGEXP", "pattern ends unexpectedly", self.i)
        c = self.p[self.i]
        self.i += 1
        if c == "(":
            self.depth += 1
            if self.depth > 100:
                raise PatternError("REGEXP_TOO_COMPLEX", "groups nest too deeply", self.i)
            frag = self.alternation()
            self.depth -= 1
            if self.i >= len(self.p) or self.p[self.i] != ")":
                raise PatternError("INVALID_REGEXP", "unclosed group", self.i)
            self.i += 1
            return frag
        if c in "*+?":
            raise PatternError("INVALID_REGEXP", f"{c} has nothing to repeat", self.i - 1)
        if c == "{" and self.p[self.i:self.i + 1].isdigit():
            raise PatternError("INVALID_REGEXP", "{ has nothing to repeat", self.i - 1)
        if c == "\\":
            if self.i >= len(self.p):
                raise PatternError("INVALID_REGEXP", "trailing backslash", self.i - 1)
            c = self.p[self.i]
            self.i += 1
            state = self.new(_CHAR, c)
        elif c == "[":
            at = self.i
            parsed = self.brackets.get(at)
            if parsed is None:
                parsed = self.brackets[at] = parse_bracket(self.p, at, "^")
            charset, self.i = parsed
            state = self.new(_SET, charset)
        elif c == ".":
            state = self.new(_ANY)
        elif c == "^":
            state = self.new(_BOL)
        elif c == "$":
            state = self.new(_EOL)
        else:
            state = self.new(_CHAR, c)
        return state, [(state, 2)]


class Regex:
    """A compiled ERE; ``search(subject, budget)`` is True, False, or None (bottom: the
    subject is too long or the search exhausted ``budget``, a fresh one by default)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        builder = _Builder(pattern)
        start, holes = builder.alternation()
        if builder.i < len(pattern):  # not expected: only a group's ')' stops a branch
            raise PatternError("INVALID_REGEXP", "unmatched )", builder.i)
        match = builder.new(_MATCH)
        builder.patch(holes, match)
        self._states = [tuple(s) for s in builder.states]
        self._start = start
        #: (kernel, at start, at end) -> (closed state set, does it accept?)
        self._closures: dict[tuple[frozenset[int], bool, bool], tuple[frozenset[int], bool]] = {}
        #: closed state set -> character -> next kernel
        self._steps: dict[frozenset[int], dict[str, frozenset[int]]] = {}
        #: one object per distinct kernel, so step entries share their results
        self._kernels: dict[frozenset[int], frozenset[int]] = {}
        #: the weight both caches hold (see ``_CACHE_WEIGHT``)
        self._weight = 0

    def _remember(self, weight: int) -> None:
        """Make room for a cache entry of ``weight``: start over when the caches
        would hold more than ``_CACHE_WEIGHT`` states."""
        self._weight += weight
        if self._weight > _CACHE_WEIGHT:
            self._closures.clear()
            self._steps.clear()
            self._kernels.clear()
            self._weight = weight

    def _closure(self, kernel: frozenset[int], at_start: bool,
                 at_end: bool) -> tuple[tuple[frozenset[int], bool], int]:
        """The closure of ``kernel`` (cached) and the NFA states visited to build it."""
        states = self._states
        seen: set[int] = set()
        stack = list(kernel)
        out: set[int] = set()
        while stack:
            s = stack.pop()
            if s in seen:
                continue
            seen.add(s)
            kind, _, o1, o2 = states[s]
            if kind == _SPLIT:
                stack.extend((o1, o2))
            elif kind == _EPS or (kind == _BOL and at_start) or (kind == _EOL and at_end):
                stack.append(o1)
            elif kind in (_CHAR, _ANY, _SET, _MATCH):
                out.add(s)
        result = (frozenset(out), any(states[s][0] == _MATCH for s in out))
        self._remember(len(out) + _ENTRY_WEIGHT)
        self._closures[(kernel, at_start, at_end)] = result
        return result, len(seen) + 1

    def _step(self, current: frozenset[int], c: str) -> frozenset[int]:
        """The kernel after reading ``c`` in ``current`` (visits every state of it)."""
        states = self._states
        nxt = {self._start}  # a search may start at every position
        for s in current:
            kind, arg, o1, _ = states[s]
            if (kind == _CHAR and arg == c) or kind == _ANY or (kind == _SET and arg(c)):
                nxt.add(o1)
        result = frozenset(nxt)
        self._remember(_ENTRY_WEIGHT)
        shared = self._kernels.get(result)
        if shared is None:
            self._remember(len(result))
            shared = self._kernels[result] = result
        result = shared
        table = self._steps.get(current)
        if table is None:
            table = self._steps[current] = {}
        table[c] = result
        return result

    def search(self, subject: str, shared: Budget | None = None) -> bool | None:
        n = len(subject)
        if n > MAX_SUBJECT:
            return None
        if shared is None:
            shared = Budget()
        budget = shared.left
        try:
            closures, steps = self._closures, self._steps
            key = (frozenset({self._start}), True, n == 0)
            found = closures.get(key)
            if found is None:
                found, cost = self._closure(*key)
                budget -= cost
                if budget < 0:
                    return None
            current, accepting = found
            if accepting:
                return True
            last = n - 1
            for i, c in enumerate(subject):
                table = steps.get(current)
                kernel = None if table is None else table.get(c)
                if kernel is None:
                    budget -= len(current) + 1
                    if budget < 0:
                        return None
                    kernel = self._step(current, c)
                at_end = i == last
                found = closures.get((kernel, False, at_end))
                if found is None:
                    found, cost = self._closure(kernel, False, at_end)
                    budget -= cost
                    if budget < 0:
                        return None
                current, accepting = found
                if accepting:
                    return True
            return False
        finally:
            shared.left = budget


class _Piece:
    """The part of a glob between two ``*``: ``width`` characters, tested by ``runs``
    of (offset, plain text or CharSet); ``text`` is set when it is all plain text."""

    __slots__ = ("runs", "text", "width")

    def __init__(self, items: list[Any]) -> None:
        self.width = len(items)
        runs: list[tuple[int, Any]] = []
        for k, item in enumerate(items):
            if item is None:
                continue
            if type(item) is str and runs and type(runs[-1][1]) is str and (
                    runs[-1][0] + len(runs[-1][1]) == k):
                runs[-1] = (runs[-1][0], runs[-1][1] + item)
            else:
                runs.append((k, item))
        self.runs = tuple(runs)
        self.text: str | None = None
        if all(type(item) is str for item in items):
            self.text = "".join(items)

    def at(self, subject: str, i: int) -> bool:
        """Does the piece match ``subject`` at ``i`` (which leaves room for it)?"""
        for offset, item in self.runs:
            if type(item) is str:
                if not subject.startswith(item, i + offset):
                    return False
            elif not item(subject[i + offset]):
                return False
        return True


class Glob:
    """A compiled wildcard pattern; ``match(subject, budget)`` tests the whole value:
    True, False, or None (bottom: the subject is too long or the match exhausted
    ``budget``, a fresh one by default)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        segments: list[list[Any]] = [[]]
        self._never = False  # a trailing backslash: fnmatch(3) matches nothing
        i = 0
        while i < len(pattern):
            c = pattern[i]
            i += 1
            if c == "*":
                segments.append([])
            elif c == "?":
                segments[-1].append(None)
            elif c == "[":
                try:
                    charset, i = parse_bracket(pattern, i, "!^", escapes=True)
                    segments[-1].append(charset)
                except PatternError:
                    segments[-1].append("[")
            elif c == "\\":
                if i >= len(pattern):
                    self._never = True
                    break
                segments[-1].append(pattern[i])
                i += 1
            else:
                segments[-1].append(c)
        self._pieces = [_Piece(s) for s in segments]

    def match(self, subject: str, shared: Budget | None = None) -> bool | None:
        n = len(subject)
        if n > MAX_SUBJECT:
            return None
        if self._never:
            return False
        pieces = self._pieces
        first = pieces[0]
        if len(pieces) == 1:
            return first.width == n and first.at(subject, 0)
        last = pieces[-1]
        end = n - last.width
        if first.width > end or not first.at(subject, 0):
            return False
        if not last.at(subject, end):
            return False
        pos = first.width
        if shared is None:
            shared = Budget()
        for piece in pieces[1:-1]:
            width = piece.width
            if piece.text is not None:
                found = subject.find(piece.text, pos, end)
                if found < 0:
                    return False
                pos = found + width
                continue
            cost = len(piece.runs) or 1
            budget = shared.left
            while True:
                if pos + width > end:
                    shared.left = budget
                    return False
                budget -= cost
                if budget < 0:
                    shared.left = budget
                    return None
                if piece.at(subject, pos):
                    break
                pos += 1
            shared.left = budget
            pos += width
        return True
