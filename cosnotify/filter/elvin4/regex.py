"""``regex`` and ``wildcard`` patterns (Elvin 4 client protocol §6.1.8).

Strategy: the seed defers both ("Need pointer to (E?)RE semantics", "Need
pointer to glob semantics"); its references name POSIX.1, so:

- ``regex(attr, re)`` is a POSIX extended regular expression (ERE), searched
  for anywhere in the value (``regexec`` without REG_NEWLINE). We parse the
  ERE ourselves and run it as a Thompson NFA with a lazily built DFA, never
  with Python's backtracking ``re``: matching is linear in the subject
  (at most ``len(subject) * MAX_STATES`` steps), so no pattern, ``(a+)+$``
  included, can stall the channel. Limits: at most ``MAX_STATES`` NFA states
  (``{m,n}`` copies its operand; ``n`` at most ``DUP_MAX`` = POSIX
  RE_DUP_MAX) else REGEXP_TOO_COMPLEX; a syntax error is INVALID_REGEXP;
  a subject longer than ``MAX_SUBJECT`` characters gives bottom.
  ERE details: ``\\c`` is the character c (as in Elvin strings, §6.1.4);
  brackets take ranges, ``[:class:]`` classes, a leading ``]`` or ``^``;
  backslash is literal inside brackets; ``^`` and ``$`` anchor anywhere.
- ``wildcard(attr, glob)`` is a whole-value ``fnmatch(3)`` match without
  flags: ``*`` any string (``/`` and leading ``.`` included), ``?`` one
  character, ``[...]`` a bracket expression (``!`` or ``^`` negates), ``\\``
  quotes the next character; an unclosed ``[`` is literal. Matching splits
  the pattern at ``*`` and places each piece leftmost (greedy-free), so it is
  O(len(subject) * len(pattern)).
"""

from __future__ import annotations

import itertools
import unicodedata
from collections.abc import Callable
from typing import Any, Final

__all__ = ["DUP_MAX", "MAX_STATES", "MAX_SUBJECT", "Glob", "PatternError", "Regex"]

MAX_STATES: Final = 2000
DUP_MAX: Final = 255
MAX_SUBJECT: Final = 1 << 20
_DFA_CACHE: Final = 4096

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


class PatternError(ValueError):
    """A bad pattern: ``name`` is INVALID_REGEXP or REGEXP_TOO_COMPLEX, ``offset``
    the position in the pattern."""

    def __init__(self, name: str, message: str, offset: int) -> None:
        super().__init__(message)
        self.name = name
        self.offset = offset


class CharSet:
    """A bracket expression: characters, ranges and classes, maybe negated."""

    __slots__ = ("chars", "classes", "negated", "ranges")

    def __init__(self, chars: set[str], ranges: list[tuple[str, str]],
                 classes: list[Callable[[str], bool]], negated: bool) -> None:
        self.chars = frozenset(chars)
        self.ranges = tuple(ranges)
        self.classes = tuple(classes)
        self.negated = negated

    def __call__(self, c: str) -> bool:
        hit = (c in self.chars or any(lo <= c <= hi for lo, hi in self.ranges)
               or any(test(c) for test in self.classes))
        return hit != self.negated


def parse_bracket(pattern: str, i: int, negators: str) -> tuple[CharSet, int]:
    """The bracket expression starting after ``[`` at ``i``: (set, index after ``]``).
    PatternError if it is not closed."""
    start = i - 1
    negated = i < len(pattern) and pattern[i] in negators
    if negated:
        i += 1
    chars: set[str] = set()
    ranges: list[tuple[str, str]] = []
    classes: list[Callable[[str], bool]] = []
    first = True
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
        if pattern[i + 1:i + 2] == "-" and pattern[i + 2:i + 3] not in ("]", ""):
            hi = pattern[i + 2]
            if hi < c:
                raise PatternError("INVALID_REGEXP", f"invalid range {c}-{hi}", i)
            ranges.append((c, hi))
            i += 3
            continue
        chars.add(c)
        i += 1


class _Builder:
    """Recursive-descent ERE parser emitting Thompson NFA fragments."""

    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.states: list[list[Any]] = []
        self.depth = 0

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
        while self.i < len(self.p) and self.p[self.i] not in "|)":
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
        if end < 0 or not low_text.isdigit() or (high_text and not high_text.isdigit()):
            if self.p[j:j + 1].isdigit():
                raise PatternError("INVALID_REGEXP", "malformed {m,n} bound", self.i)
            return None  # a '{' that starts no bound is an ordinary character
        low = int(low_text)
        high = (int(high_text) if high_text else None) if comma else low
        if low > DUP_MAX or (high is not None and high > DUP_MAX):
            raise PatternError("REGEXP_TOO_COMPLEX", f"bound above {DUP_MAX} (RE_DUP_MAX)",
                               self.i)
        if high is not None and high < low:
            raise PatternError("INVALID_REGEXP", "bound {m,n} with n < m", self.i)
        self.i = end + 1
        return low, high

    def repeat(self, start: int, frag: tuple[int, list[tuple[int, int]]],
               low: int, high: int | None) -> tuple[int, list[tuple[int, int]]]:
        """``atom{low,high}``: copies of the atom, re-parsed from its source."""
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
            charset, self.i = parse_bracket(self.p, self.i, "^")
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
    """A compiled ERE; ``search(subject)`` is True, False, or None (subject too long)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        builder = _Builder(pattern)
        start, holes = builder.alternation()
        if builder.i < len(pattern):
            raise PatternError("INVALID_REGEXP", "unmatched )", builder.i)
        match = builder.new(_MATCH)
        builder.patch(holes, match)
        self._states = [tuple(s) for s in builder.states]
        self._start = start
        #: (kernel, at start, at end) -> (closed state set, does it accept?)
        self._closures: dict[tuple[frozenset[int], bool, bool], tuple[frozenset[int], bool]] = {}
        #: closed state set -> character -> next kernel
        self._steps: dict[frozenset[int], dict[str, frozenset[int]]] = {}

    def _closure(self, kernel: frozenset[int], at_start: bool,
                 at_end: bool) -> tuple[frozenset[int], bool]:
        key = (kernel, at_start, at_end)
        found = self._closures.get(key)
        if found is not None:
            return found
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
        if len(self._closures) > _DFA_CACHE:  # bound the memory a pattern can hold
            self._closures.clear()
            self._steps.clear()
        self._closures[key] = result
        return result

    def _step(self, current: frozenset[int], c: str) -> frozenset[int]:
        table = self._steps.get(current)
        if table is None:
            table = self._steps[current] = {}
        found = table.get(c)
        if found is not None:
            return found
        states = self._states
        nxt = {self._start}  # a search may start at every position
        for s in current:
            kind, arg, o1, _ = states[s]
            if (kind == _CHAR and arg == c) or kind == _ANY or (kind == _SET and arg(c)):
                nxt.add(o1)
        result = frozenset(nxt)
        table[c] = result
        return result

    def search(self, subject: str) -> bool | None:
        n = len(subject)
        if n > MAX_SUBJECT:
            return None
        current, accepting = self._closure(frozenset({self._start}), True, n == 0)
        if accepting:
            return True
        last = n - 1
        closure, step = self._closure, self._step
        for i, c in enumerate(subject):
            current, accepting = closure(step(current, c), False, i == last)
            if accepting:
                return True
        return False


class Glob:
    """A compiled wildcard pattern; ``match(subject)`` tests the whole value."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        segments: list[list[Any]] = [[]]
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
                    charset, i = parse_bracket(pattern, i, "!^")
                    segments[-1].append(charset)
                except PatternError:
                    segments[-1].append("[")
            elif c == "\\" and i < len(pattern):
                segments[-1].append(pattern[i])
                i += 1
            else:
                segments[-1].append(c)
        self._segments = [tuple(s) for s in segments]

    @staticmethod
    def _at(subject: str, i: int, segment: tuple[Any, ...]) -> bool:
        for k, item in enumerate(segment):
            c = subject[i + k]
            if item is None:
                continue
            if type(item) is str:
                if item != c:
                    return False
            elif not item(c):
                return False
        return True

    def match(self, subject: str) -> bool:
        segments = self._segments
        n = len(subject)
        first = segments[0]
        if len(segments) == 1:
            return len(first) == n and self._at(subject, 0, first)
        if len(first) > n or not self._at(subject, 0, first):
            return False
        pos = len(first)
        last = segments[-1]
        end = n - len(last)
        for segment in segments[1:-1]:
            width = len(segment)
            while True:
                if pos + width > end:
                    return False
                if self._at(subject, pos, segment):
                    break
                pos += 1
            pos += width
        return end >= pos and self._at(subject, end, last)
