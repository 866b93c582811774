"""EXTENDED_TCL evaluation rules (§2.4.2-§2.4.6) beyond the spec's own examples.

The rules' cases on Any events (conversions, comparisons, enums, ``in``,
implicit members, unions, Any layers, run-time variables of Any events) are
the data set tests/filter/any_paths.py, run in process and over the wire by
test_any_paths.py. What remains here needs a structured or typed event, a
second filter, or nothing but the compiler.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from omniORB import CORBA, tcInternal

import CosNotification as N
import CosNotifyFilter

from cosnotify.filter import parse_constraint
from cosnotify.filter.compiler import generated_source
from cosnotify.filter.factory import FilterFactory
from cosnotify.filter.paths import Form
from tests.filter.events import NOW, make_filter, matcher, struct_tc, structured, value

MAX_ULL = 18446744073709551615


def evaluate(text: str, event: Any) -> bool:
    return matcher(text)(event)


class TestSixtyFourBit:
    """Integers are exact: 64-bit values never pass through a double."""

    def test_ulonglong_property(self) -> None:
        """ulonglong properties of a structured event compare exactly."""
        for n in (MAX_ULL, MAX_ULL - 1, 2**53 + 1):
            event = structured(filterable={"n": CORBA.Any(CORBA.TC_ulonglong, n)})
            assert evaluate(f"$n == {n}", event) is True
            assert evaluate(f"$n == {n - 1}", event) is False


class TestRunTimeVariables:
    """The §2.4.5 translation order, in each event form."""

    def test_structured_order(self) -> None:
        """Fixed header, then variable header, then filterable data, then $.name."""
        event = structured(domain="D", variable={"x": 1, "domain_name": "prop"},
                           filterable={"x": 2, "y": 3})
        assert evaluate("$domain_name == 'D' and $x == 1 and $y == 3", event) is True
        assert evaluate("$header.fixed_header.event_type.domain_name == 'D'", event) is True
        assert evaluate("x == 1 and y == 3 and domain_name == 'D'", event) is True
        assert evaluate("exist $z or exist z", event) is False

    def test_first_translation_wins(self) -> None:
        """The first translation that names something is used; there is no backtracking."""
        record = struct_tc("IDL:test/R:1.0", "R", [("a", CORBA.TC_long)])
        event = structured(variable={"p": 5}, filterable={"p": value(record, 7)})
        assert evaluate("$p == 5", event) is True
        assert evaluate("exist $p.a", event) is False

    def test_curtime(self) -> None:
        """$curtime is a TimeBase::UtcT from the injected clock; $\\curtime is a property."""
        event = structured(filterable={"curtime": 42})
        assert evaluate(f"$curtime.time == {NOW} and $curtime.tdf == 0", event) is True
        assert evaluate("$curtime._type_id == 'UtcT' and "
                        "$curtime._repos_id == 'IDL:omg.org/TimeBase/UtcT:1.0'", event) is True
        assert evaluate("$\\curtime == 42 and \\$curtime == 42", event) is True
        assert evaluate("exist curtime and not exist $\\curtime.x", event) is True
        later = FilterFactory(clock=lambda: NOW + 1).create_filter("EXTENDED_TCL")
        later.add_constraints([_exp(f"$curtime.time > {NOW}")])
        assert later.match_structured(event) is True

    def test_escaped_bare_curtime_is_the_property(self) -> None:
        """§2.4.2: "A reserved run-time variable may be escaped by inserting a backslash
        between the dollar sign and the <Ident>", and a bare <Ident> resolves exactly
        like $ident (decision 1): '\\curtime' is '$\\curtime', the property (review 114)."""
        event = structured(filterable={"curtime": 5})
        assert evaluate("\\curtime == 5", event) is True
        assert evaluate("\\curtime == $\\curtime and exist \\curtime", event) is True
        assert evaluate("exist \\curtime", structured()) is False
        assert evaluate("exist curtime and not exist \\curtime", structured()) is True
        typed = [N.Property("curtime", CORBA.Any(CORBA.TC_long, 5))]
        assert make_filter("\\curtime == 5").match_typed(typed) is True
        record = value(struct_tc("IDL:test/C:1.0", "C", [("curtime", CORBA.TC_long)]), 5)
        assert evaluate("\\curtime == 5 and $\\curtime == 5", record) is True

    def test_typed_events(self) -> None:
        """A typed event (§2.7): its event_type pair names domain and type; the other
        parameters are $(name)."""
        f = make_filter("$domain_name == 'Coffee' and $type_name == 'drinking_coffee' "
                        "and $minutes > 3 and $(name) == 'ann'")
        def typed(minutes: int) -> list[Any]:
            return [N.Property("event_type",
                               CORBA.Any(N._tc_EventType, N.EventType("Coffee", "drinking_coffee"))),
                    N.Property("name", CORBA.Any(CORBA.TC_string, "ann")),
                    N.Property("minutes", CORBA.Any(CORBA.TC_long, minutes))]
        assert f.match_typed(typed(5)) is True
        assert f.match_typed(typed(2)) is False


def _exp(text: str) -> Any:
    return CosNotifyFilter.ConstraintExp([], text)


class TestDeepConstraints:
    """Very deep trees still compile (Python limits nested parentheses to 200)."""

    def test_deep_arithmetic(self) -> None:
        """A 190-level arithmetic chain compiles and evaluates."""
        text = "1" + " - 1" * 190 + " == -189"
        assert evaluate(text, CORBA.Any(CORBA.TC_long, 0)) is True
        nested = "(" * 150 + "$ == 0" + ")" * 150
        assert evaluate(nested, CORBA.Any(CORBA.TC_long, 0)) is True
        right = "1 + (" * 150 + "1" + ")" * 150 + " == 151"
        assert evaluate(right, CORBA.Any(CORBA.TC_long, 0)) is True


class TestLookupShortcuts:
    """The shortcuts of the generated code mean what the general lookups mean."""

    def test_any_variable_follows_each_descriptor(self) -> None:
        """$priority on Any events answers for each event's own struct type, however
        the types alternate (the member index is remembered per descriptor)."""
        plain = struct_tc("IDL:test/P:1.0", "P", [("priority", CORBA.TC_long)])
        other = struct_tc("IDL:test/O:1.0", "O", [("x", CORBA.TC_long), ("priority",
                                                                         CORBA.TC_short)])
        layout = struct_tc("IDL:test/L:1.0", "L", [("header", N._tc_EventHeader),
                                                   ("priority", CORBA.TC_long)])
        none = struct_tc("IDL:test/N:1.0", "N", [("x", CORBA.TC_long)])
        header = N.EventHeader(N.FixedEventHeader(N.EventType("D", "T"), ""),
                               [N.Property("priority", CORBA.Any(CORBA.TC_long, 1))])
        f = make_filter("$priority == 1")
        events = [(value(plain, 1), True), (value(other, 0, 1), True),
                  (value(layout, header, 2), True), (value(none, 1), False),
                  (value(plain, 2), False), (value(other, 1, 2), False),
                  (value(layout, N.EventHeader(header.fixed_header, []), 1), True),
                  (value(plain, 1), True)]
        assert [f.match(event) for event, _ in events] == [expected for _, expected in events]

    def test_basic_typecode_that_is_not_the_singleton(self) -> None:
        """A property typed by a basic TypeCode object other than omniORB's own
        (recognised by identity) is read through its descriptor."""
        own_long = tcInternal.TypeCode_empty(tcInternal.tv_long)
        own_string = tcInternal.TypeCode_string((tcInternal.tv_string, 0))
        assert own_long is not CORBA.TC_long and own_string is not CORBA.TC_string
        event = structured(filterable={"n": CORBA.Any(own_long, 5),
                                       "s": CORBA.Any(own_string, "x")})
        assert evaluate("$n == 5 and $s == 'x' and $n + 1 == 6", event) is True
        assert evaluate("$n == 'x'", event) is False

    def test_fixed_header_field_read_once(self) -> None:
        """A fixed-header field named twice is read once per match, with the same result."""
        reads = []

        class EventType:
            type_name = "T"

            @property
            def domain_name(self) -> str:
                reads.append(1)
                return "D"
        text = "$domain_name == 'a' or $domain_name == 'D'"
        assert "_c0 := ev.header.fixed_header.event_type.domain_name" in generated_source(
            parse_constraint(text), Form.STRUCTURED)
        event = N.StructuredEvent(N.EventHeader(N.FixedEventHeader(EventType(), ""), []), [],
                                  CORBA.Any(CORBA.TC_null, None))
        assert make_filter(text).match_structured(event) is True
        assert reads == [1]
        assert evaluate(text, structured(domain="E")) is False


def _union_k(names: list[str], members: Sequence[tuple[Any, Any]], disc: int,
             value: Any) -> Any:
    """An Any of a union over ``short`` with the given member names, (label, type) pairs
    (label None: ``default:``), holding ``value`` under discriminator ``disc``."""
    entries = [CORBA.UnionMember(name, CORBA.Any(CORBA.TC_octet, 0) if label is None
                                 else CORBA.Any(CORBA.TC_short, label), tc, None)
               for name, (label, tc) in zip(names, members)]
    tag = "".join(name or "_" for name in names)
    tc = tcInternal.createUnionTC(f"IDL:test/K{tag}{len(entries)}:1.0", "K",
                                  CORBA.TC_short, entries)
    return CORBA.Any(tc, tc._d[1](disc, value))


class TestUnionsWithoutMemberNames:
    """§2.4.6: "CORBA does not require that the names of IDL type members be marshaled
    into the TypeCode"; positional notation is how a constraint reads such a union, so
    its worked example must hold without names too (review 114, decision 31)."""

    #: §2.4.6's union K: "case 0: case 2: string K; case 3: X L; case 5: long M;
    #: default: short N;" (case 3 left out).
    K = ((0, CORBA.TC_string), (2, CORBA.TC_string), (5, CORBA.TC_long), (None, CORBA.TC_short))

    @pytest.mark.parametrize("names", [["K", "K", "M", "N"], ["", "", "", ""]])
    def test_the_worked_example(self, names: list[str]) -> None:
        """Either label reads member K while the discriminator is 2."""
        for text in ("$._d == 2 and $.(0) != 'hoob'", "$._d == 2 and $.(2) != 'hoob'"):
            assert evaluate(text, _union_k(names, self.K, 2, "putty")) is True
            assert evaluate(text, _union_k(names, self.K, 2, "hoob")) is False
            assert evaluate(text, _union_k(names, self.K, 0, "putty")) is False
        putty = _union_k(names, self.K, 2, "putty")
        assert evaluate("exist $.(2) and not exist $.(0) and not exist $.(5)", putty) is True
        assert evaluate("$.(5) == 1 or $.() == 1", putty) is False
        assert evaluate("$.() == 3 and default $ and not exist $.(5)",
                        _union_k(names, self.K, 9, 3)) is True

    def test_members_of_one_type_apart_stay_apart(self) -> None:
        """Unnamed entries of one type are one member only when consecutive (the labels
        of one member are listed together): here (0) and (2) are two members."""
        members = [(0, CORBA.TC_string), (5, CORBA.TC_long), (2, CORBA.TC_string)]
        event = _union_k(["", "", ""], members, 2, "putty")
        assert evaluate("$.(2) == 'putty' and not exist $.(0)", event) is True
        assert evaluate("$.(0) == 'putty'", event) is False

    def test_a_label_shared_with_default(self) -> None:
        """``case 3: default: short N;`` without names: ``default $`` for 3 and for 9."""
        members = [(0, CORBA.TC_string), (3, CORBA.TC_short), (None, CORBA.TC_short)]
        for disc, expected in ((3, True), (9, True), (0, False)):
            value = "s" if disc == 0 else 1
            assert evaluate("default $", _union_k(["", "", ""], members, disc, value)) is expected
        assert evaluate("$.(3) == 1 and $.() == 1", _union_k(["", "", ""], members, 9, 1))
