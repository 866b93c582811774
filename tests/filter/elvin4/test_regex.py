"""``regex`` (POSIX ERE, linear-time engine) and ``wildcard`` (fnmatch) patterns (§6.1.8)."""

from __future__ import annotations

import random
import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cosnotify.filter.elvin4 import SubscriptionError, compile_program, regex
from cosnotify.filter.elvin4.regex import (
    _CACHE_WEIGHT,
    _ENTRY_WEIGHT,
    _SET,
    DUP_MAX,
    MAX_STATES,
    MAX_SUBJECT,
    Glob,
    PatternError,
    Regex,
    parse_bracket,
)
from tests.filter.elvin4.helpers import event_of, tri


def quote(text: str) -> str:
    """``text`` as an Elvin string literal (§6.1.4: backslash escapes)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class TestRegex:
    @pytest.mark.parametrize(("pattern", "subject", "want"), [
        ("abc", "xabcx", True), ("^abc", "xabc", False), ("abc$", "abcx", False),
        ("^$", "", True), ("a|b", "b", True), ("^(ab|cd)*$", "abcdab", True),
        ("^(ab|cd)*$", "abc", False), ("^a+$", "", False), ("^a?b$", "b", True),
        ("^a{2}$", "aa", True), ("^a{2}$", "aaa", False), ("^a{2,}$", "aaaa", True),
        ("^a{0}b$", "b", True), ("^a{0}b$", "ab", False), ("^a{1,2}$", "aaa", False),
        ("^.$", "\n", True), ("[]a]", "]", True), ("[^a]", "a", False), ("[a-c]", "b", True),
        ("^[[:digit:]]+$", "0123", True), ("^[[:alpha:]]+$", "ab1", False),
        ("[[:space:]]", "a b", True), (r"a\.b", "a.b", True), (r"a\.b", "axb", False),
        ("[\\]", "\\", True), ("a{x", "a{x", True), ("x^", "x", False), ("$x", "x", False),
    ])
    def test_search(self, pattern: str, subject: str, want: bool) -> None:
        """POSIX ERE semantics, searched anywhere in the value (regexec)."""
        assert Regex(pattern).search(subject) is want

    @pytest.mark.parametrize(("pattern", "name"), [
        ("(a", "INVALID_REGEXP"), ("(a))(", "INVALID_REGEXP"), ("*a", "INVALID_REGEXP"),
        ("a**{2}", "INVALID_REGEXP"), ("[a", "INVALID_REGEXP"), ("[[:nope:]]", "INVALID_REGEXP"),
        ("[z-a]", "INVALID_REGEXP"), ("a{3,2}", "INVALID_REGEXP"), ("a\\", "INVALID_REGEXP"),
        ("a{1,", "INVALID_REGEXP"), (f"a{{{DUP_MAX + 1}}}", "REGEXP_TOO_COMPLEX"),
        # superscript digits pass str.isdigit, not int (a ValueError once, not §6.3's)
        ("a{\u00b2}", "INVALID_REGEXP"), ("a{1,\u00b3}", "INVALID_REGEXP"),
        # more digits than int() reads (4,300): too complex, not a ValueError (review 65)
        ("a{" + "1" * 5000 + "}", "REGEXP_TOO_COMPLEX"), ("a{1," + "9" * 5000 + "}",
                                                          "REGEXP_TOO_COMPLEX"),
        ("(((a{100}){100}){100})", "REGEXP_TOO_COMPLEX"), ("(" * 150 + ")" * 150,
                                                          "REGEXP_TOO_COMPLEX"),
    ])
    def test_bad_patterns(self, pattern: str, name: str) -> None:
        """Bad patterns are INVALID_REGEXP or REGEXP_TOO_COMPLEX (§6.3), at compile time."""
        with pytest.raises(PatternError) as info:
            Regex(pattern)
        assert info.value.name == name
        with pytest.raises(SubscriptionError) as error:
            compile_program(f"regex(x, {quote(pattern)})")
        assert error.value.name == name

    def test_a_bound_with_leading_zeros_is_its_number(self) -> None:
        """However many zeros lead a bound, it is the number after them (a{0002} is
        a{2}); 5,000 of them once made int() refuse the text (review 65)."""
        regex = Regex("^a{" + "0" * 5000 + "2}$")
        assert regex.search("aa") and not regex.search("a") and not regex.search("aaa")

    def test_state_bound(self) -> None:
        """At most MAX_STATES NFA states."""
        Regex("a{255}" * 7)
        with pytest.raises(PatternError):
            Regex("a{255}" * (MAX_STATES // 255 + 1))

    @pytest.mark.parametrize("pattern", ["(a+)+$", "(a|a)*b", "(a|aa)+$", "(.*a){12}$",
                                         ".*.*.*.*.*.*.*.*x", "^(a?){30}a{30}$"])
    def test_evil_patterns_are_linear(self, pattern: str) -> None:
        """Catastrophic-backtracking patterns finish quickly on 'aaaa...b'."""
        subject = "a" * 20_000 + "b"
        start = time.perf_counter()
        Regex(pattern).search(subject)
        elapsed = time.perf_counter() - start
        assert elapsed < 20  # generous: a backtracking engine would take ages

    def test_evil_pattern_through_a_filter(self) -> None:
        """``regex(x, "(a+)+$")`` against 'aaaa…b' answers (false) without stalling."""
        event = event_of({"x": ("string", "a" * 5000 + "b")})
        assert tri('regex(x, "(a+)+$")', event) is False

    def test_subject_bound(self) -> None:
        """Subjects longer than MAX_SUBJECT characters are bottom."""
        assert Regex("a").search("a" * (MAX_SUBJECT + 1)) is None

    @settings(max_examples=200, deadline=None)
    @given(st.from_regex(r"[ab.|*+?()^$]{0,8}", fullmatch=True), st.text("ab\n", max_size=8))
    def test_agrees_with_python_re(self, pattern: str, subject: str) -> None:
        """On patterns both accept, the set of matching strings is Python's (for search)."""
        if re.search(r"[*+?][?+]|\(\?", pattern):
            return  # lazy and possessive quantifiers, (?...) groups: Python, not ERE
        try:
            ours = Regex(pattern)
        except PatternError:
            return
        try:
            # POSIX '$' is the end of the subject; Python's also matches before a final \n.
            theirs = re.compile(pattern.replace("$", r"\Z"), re.DOTALL)
        except re.error:
            return
        assert ours.search(subject) is (theirs.search(subject) is not None)


class TestGlob:
    @pytest.mark.parametrize(("pattern", "subject", "want"), [
        ("*", "", True), ("*", "abc", True), ("a*", "abc", True), ("*c", "abc", True),
        ("a*c", "ac", True), ("a*b*c", "aXbYc", True), ("a*b*c", "aXcYb", False),
        ("?", "", False), ("??", "ab", True), ("[ab]c", "bc", True), ("[!ab]c", "bc", False),
        ("[^ab]c", "cc", True), ("[a-", "[a-", True), ("\\*", "*", True), ("\\*", "a", False),
        ("*.txt", ".txt", True), ("a/*", "a/b/c", True), ("abc", "abcd", False),
        ("*a*a*a*a*b", "a" * 3000, False),
    ])
    def test_match(self, pattern: str, subject: str, want: bool) -> None:
        """fnmatch(3) without flags, over the whole value."""
        assert Glob(pattern).match(subject) is want


class TestRegexCost:
    def test_budget_exhausted_is_bottom(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A search that builds new DFA states at every character stops at WORK_BUDGET: bottom."""
        monkeypatch.setattr(regex, "WORK_BUDGET", 20_000)
        subject = "".join(random.Random(1).choice("ab") for _ in range(3000))
        assert Regex("(a[ab]{240}){8}x").search(subject) is None
        assert tri('regex(x, "(a[ab]{240}){8}x")', event_of({"x": ("string", subject)})) is None

    def test_cached_transitions_cost_no_budget(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Only building transitions spends the budget: a small DFA runs through long values."""
        monkeypatch.setattr(regex, "WORK_BUDGET", 1000)
        assert Regex("(a+)+$").search("a" * 100_000 + "b") is False
        assert Regex("b$").search("a" * 100_000 + "b") is True

    def test_one_budget_per_evaluation(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """§6.1.8 "regex(attr, re)" calls of one subscription share one work budget per
        evaluation, in equal shares: six costly calls spend WORK_BUDGET in all, not six
        times it, and each call that spends its share is bottom (reviews 130, 143)."""
        monkeypatch.setattr(regex, "WORK_BUDGET", 20_000)
        visits = [0]
        step, closure = Regex._step, Regex._closure

        def counted_step(self: Regex, current: frozenset[int], c: str) -> frozenset[int]:
            visits[0] += len(current) + 1           # what search charges for it
            return step(self, current, c)

        def counted_closure(self: Regex, *key: object) -> object:
            found, cost = closure(self, *key)  # type: ignore[arg-type]
            visits[0] += cost
            return found, cost
        monkeypatch.setattr(Regex, "_step", counted_step)
        monkeypatch.setattr(Regex, "_closure", counted_closure)
        rnd = random.Random(1)
        names = "abcdef"
        event = event_of({n: ("string", "".join(rnd.choice("ab") for _ in range(3000)))
                          for n in names})
        text = " || ".join(f'regex({n}, "(a[ab]{{240}}){{8}}x")' for n in names)
        program = compile_program(text, strict=True)
        for _ in range(2):                           # a fresh budget each evaluation
            visits[0] = 0
            assert program.structured(event) is False
            # the budget, and at most one closure past it (built, then charged)
            assert 10_000 < visits[0] <= 20_000 + MAX_STATES + 1
        assert tri(text, event) is None              # bottom, not false

    @pytest.mark.parametrize("cheap, value", [('regex(y, "^ok$")', "ok"),
                                              ('wildcard(y, "*a?b*")', "xaqb")])
    def test_a_costly_call_does_not_spend_a_cheap_ones_share(
            self, monkeypatch: pytest.MonkeyPatch, cheap: str, value: str) -> None:
        """§6.1.8's three-valued or: bottom || TRUE is TRUE. A costly regex that spends
        its share leaves a cheap call of the same expression its own, so the match
        stands (review 143: with one budget for both, the cheap call was bottom too,
        and a notification could be kept from a subscription it matched)."""
        monkeypatch.setattr(regex, "WORK_BUDGET", 20_000)
        subject = "".join(random.Random(1).choice("ab") for _ in range(3000))
        event = event_of({"x": ("string", subject), "y": ("string", value)})
        text = f'regex(x, "(a[ab]{{240}}){{8}}x") || {cheap}'
        assert tri('regex(x, "(a[ab]{240}){8}x")', event) is None
        assert tri(text, event) is True
        assert compile_program(text, strict=True).structured(event) is True

    def test_a_spent_budget_leaves_cached_work_free(self) -> None:
        """A search on a spent budget still runs its cached transitions (as before: only
        building them costs); one that needs a new one is bottom."""
        compiled = Regex("b$")
        assert compiled.search("ab") is True                      # now cached
        spent = regex.Budget()
        spent.left = -1
        assert compiled.search("aab", spent) is True
        assert compiled.search("abc", spent) is None
        assert Glob("*a?b*").match("a" * 10, spent) is None
        assert Glob("*ab*").match("xaby", spent) is True          # str.find: no budget

    def test_default_budget_is_a_few_million(self) -> None:
        """The documented bound: a few million NFA-state visits per search."""
        assert 1_000_000 <= regex.WORK_BUDGET <= 5_000_000

    def test_charset_is_merged_intervals(self) -> None:
        """A bracket keeps sorted, merged code-point intervals (bisection, not a scan)."""
        pattern = "[" + "a-a" * 1000 + "b-cx]"
        charset, end = parse_bracket(pattern, 1, "^")
        assert end == len(pattern)
        assert charset.starts == (ord("a"), ord("x"))
        assert charset.ends == (ord("c"), ord("x"))
        assert charset("b") and charset("x") and not charset("d") and not charset("`")

    def test_bracket_shared_by_bound_copies(self) -> None:
        """``{m,n}`` copies of a bracket share one parsed CharSet."""
        compiled = Regex("([" + "a" * 5000 + "]{255}){7}")
        sets = [state[1] for state in compiled._states if state[0] == _SET]
        assert len(sets) == 255 * 7
        assert len({id(charset) for charset in sets}) == 1

    def test_cache_weight_is_bounded(self) -> None:
        """Distinct characters do not grow the DFA cache past _CACHE_WEIGHT."""
        compiled = Regex("ab")
        subject = "".join(chr(c) for c in range(0x4E00, 0x4E00 + 60_000))
        assert compiled.search(subject) is False
        entries = sum(len(table) for table in compiled._steps.values())
        assert entries <= _CACHE_WEIGHT // _ENTRY_WEIGHT
        assert compiled._weight <= _CACHE_WEIGHT

    def test_lone_close_paren_is_ordinary(self) -> None:
        """POSIX ERE: a ``)`` that closes no group is an ordinary character."""
        assert Regex("a)").search("xa)y") is True
        assert Regex("a)").search("a") is False
        assert Regex("(a)b)").search("ab)") is True
        assert tri('regex(x, "a)")', event_of({"x": ("string", "a)")})) is True


class TestGlobCost:
    def test_literal_pieces_cost_no_budget(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Plain pieces between stars are found with str.find: linear, no budget."""
        monkeypatch.setattr(regex, "WORK_BUDGET", 10)
        assert Glob("*" + "a" * 16_000 + "b*").match("a" * 40_000) is False
        assert Glob("*" + "a" * 100 + "b*").match("a" * 40_000 + "b") is True

    def test_budget_exhausted_is_bottom(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Pieces with ? or brackets spend WORK_BUDGET per position tried: bottom when out."""
        monkeypatch.setattr(regex, "WORK_BUDGET", 100)
        assert Glob("*a?b*").match("a" * 1000) is None
        assert tri('wildcard(x, "*a?b*")', event_of({"x": ("string", "a" * 1000)})) is None

    def test_calls_share_the_evaluation_budget(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """§6.1.8 "wildcard(attr, glob)" calls of one subscription share one budget per
        evaluation with its regex calls, in shares: positions tried in all stay within it."""
        monkeypatch.setattr(regex, "WORK_BUDGET", 100)
        tried = [0]
        at = regex._Piece.at

        def counted(self: regex._Piece, subject: str, i: int) -> bool:
            tried[0] += 1
            return at(self, subject, i)
        monkeypatch.setattr(regex._Piece, "at", counted)
        event = event_of({n: ("string", "a" * 1000) for n in "xyz"})
        text = " || ".join(f'wildcard({n}, "*a?b*")' for n in "xyz")
        assert compile_program(text, strict=True).structured(event) is False
        # a position tried costs 2 (two runs), besides each call's test of its (empty)
        # first and last pieces: 56, where a budget per call allowed 156
        assert 40 < tried[0] <= 100 // 2 + 3 * 2
        assert tri(text, event) is None              # bottom, not false

    def test_subject_bound(self) -> None:
        """Values longer than MAX_SUBJECT characters are bottom, as for regex."""
        assert Glob("*").match("a" * (MAX_SUBJECT + 1)) is None

    @pytest.mark.parametrize(("pattern", "subject", "want"), [
        ("[\\]]", "]", True), ("[\\]]", "\\]", False), ("a\\", "a\\", False),
        ("a\\", "a", False), ("[\\!]", "!", True), ("[!\\]]", "]", False),
        ("[\\a-\\c]", "b", True), ("\\", "", False),
    ])
    def test_backslash_as_glibc(self, pattern: str, subject: str, want: bool) -> None:
        """fnmatch(3): ``\\`` quotes inside brackets too; a trailing ``\\`` matches nothing."""
        assert Glob(pattern).match(subject) is want
