"""Random ELVIN4 text raises only SubscriptionError; compiled matchers only answer bools."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omniORB import CORBA

import CosNotifyFilter

from cosnotify.filter.constraints import InvalidConstraintError
from cosnotify.filter.elvin4 import SubscriptionError, compile_program
from tests.filter.elvin4.helpers import elvin_filter
from tests.filter.events import structured

_TOKENS = [
    "x", "y", "host", "severity", "type_name", "size", "a-b", "\\(", "1", "-1", "0x7fffffff",
    "2147483648", "10L", "1.5", "1.0e309", "017", "'s'", '"t"', '"(a+)+$"', '"*.c"', '"',
    "(", ")", ",", "&&", "||", "^^", "!", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*",
    "/", "%", "<<", ">>", ">>>", "&", "|", "^", "~", "require(", "int32(", "int64(",
    "real64(", "nan(", "string(", "opaque(", "equals(", "contains(", "begins-with(",
    "ends-with(", "wildcard(", "regex(", "size(", "fold-case(", "decompose(",
    "decompose-compat(", "bogus(", "#", "\0", "\\",
]

token_soup = st.lists(st.sampled_from(_TOKENS), max_size=30).map(" ".join)

EVENTS = [
    structured(filterable={"x": 1, "y": "t", "host": "db1", "severity": 3}),
    structured(filterable={"x": 2.5, "y": 2**40, "size": -1}),
    structured(filterable={"x": CORBA.Any(CORBA._tc_OctetSeq, b"ab")}, variable={"y": "s"}),
    structured(),
]


def _check(text: str) -> None:
    try:
        program = compile_program(text, strict=True)  # a helper that raises fails the test
    except SubscriptionError as error:
        assert error.name and 0 <= error.offset <= len(text)
        return
    for event in EVENTS:
        assert type(program.structured(event)) is bool
    assert type(program.typed([])) is bool
    assert type(program.any(CORBA.Any(CORBA.TC_long, 1))) is bool


class TestFuzz:
    @settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.text(max_size=60))
    def test_random_text(self, text: str) -> None:
        """Any text compiles or raises SubscriptionError (a ValueError), nothing else."""
        _check(text)

    @settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(token_soup)
    def test_token_soup(self, text: str) -> None:
        """Sequences of real tokens reach the parser and checker: same contract, and
        what compiles answers a bool for every event form."""
        _check(text)

    @settings(max_examples=100, deadline=None)
    @given(token_soup)
    def test_through_the_filter(self, text: str) -> None:
        """add_constraints raises only InvalidConstraint for random text."""
        flt = elvin_filter()
        try:
            flt.add_constraints([CosNotifyFilter.ConstraintExp([], text)])
        except CosNotifyFilter.InvalidConstraint as error:
            assert isinstance(error, InvalidConstraintError)
            assert str(error)
            return
        result: Any = flt.match_structured(EVENTS[0])
        assert type(result) is bool
