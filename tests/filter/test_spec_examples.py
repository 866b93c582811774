"""Every constraint example of Notification 1.1 §2.3-§2.4.7, each shown TRUE and FALSE.

Events for the unstructured examples are Anys carrying types from
tests/filter/data/FilterExamples.idl (compiled by the ``idl`` fixture).
Where the spec's text is a misprint or refers to types we do not have, the
test evaluates the text as written and the reading docs/filters.md adopts.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from cosnotify.orb import CORBA, tc
from cosnotify.stubs import CosNotification as N
from cosnotify.stubs import TimeBase
from tests.filter.events import NOW, make_filter, matcher, structured


def check(constraint: str, true: Sequence[Any], false: Sequence[Any]) -> None:
    """``constraint`` is TRUE for every event of ``true`` and FALSE for every one of ``false``."""
    match = matcher(constraint)
    for event in true:
        assert match(event) is True, (constraint, event)
    for event in false:
        assert match(event) is False, (constraint, event)


def value(typecode: Any, *args: Any) -> Any:
    """A CORBA.Any of an IDL struct or union built from its TypeCode's class."""
    return CORBA.Any(typecode, typecode.python_class()(*args))


class TestSection23:
    """§2.3: event types in the expression or in the constraint's type list."""

    EXPRESSION = ("(($domain_name == 'Telecom' and $type_name == 'CommunicationsAlarm')\n"
                  "  or ($domain_name == 'Transport' and $type_name == 'RoadImpassable'))\n"
                  "and severity != 4")
    TRUE = (structured("Telecom", "CommunicationsAlarm", filterable={"severity": 3}),
            structured("Transport", "RoadImpassable", filterable={"severity": 1}))
    FALSE = (structured("Telecom", "CommunicationsAlarm", filterable={"severity": 4}),
             structured("Telecom", "RoadImpassable", filterable={"severity": 3}),
             structured("Transport", "CommunicationsAlarm", filterable={"severity": 3}),
             structured("Telecom", "CommunicationsAlarm"))

    def test_expression_form(self) -> None:
        """The long constraint (with single quotes) selects by type and severity."""
        check(self.EXPRESSION, self.TRUE, self.FALSE)

    def test_type_list_form(self) -> None:
        """{[{Telecom, CommunicationsAlarm}, {Transport, RoadImpassable}], "severity != 4"}
        has the same meaning."""
        f = make_filter(([("Telecom", "CommunicationsAlarm"), ("Transport", "RoadImpassable")],
                         "severity != 4"))
        assert [f.match_structured(e) for e in self.TRUE] == [True, True]
        assert [f.match_structured(e) for e in self.FALSE] == [False] * 4


class TestSection241:
    """§2.4.1: integer division, and the 1.0 * cast."""

    def test_integer_division(self, idl: SimpleNamespace) -> None:
        """2.5 * ($.one / $.two) > 1 is FALSE for 1/2: the division is integral."""
        check("2.5 * ($.one / $.two) > 1",
              [value(idl.FE._tc_Ratio, 2, 2), value(idl.FE._tc_Ratio, 7, 3)],
              [value(idl.FE._tc_Ratio, 1, 2), value(idl.FE._tc_Ratio, 0, 9)])

    def test_cast_to_floating_point(self, idl: SimpleNamespace) -> None:
        """2.5 * (1.0 * $.one / $.two) > 1 is TRUE for 1/2 (§2.4.3 rewrite)."""
        check("2.5 * (1.0 * $.one / $.two) > 1",
              [value(idl.FE._tc_Ratio, 1, 2)], [value(idl.FE._tc_Ratio, 1, 5)])


class TestSection242:
    """§2.4.2: unnamed Any layers are passed over quietly."""

    def test_member_of_struct_in_any(self, idl: SimpleNamespace) -> None:
        """Event.memA.Any.struct{val, cnt}: $.memA.cnt."""
        event = lambda cnt: value(idl.FE._tc_MemAEvent,
                                  value(idl.FE._tc_ValCnt, 1, cnt))
        check("$.memA.cnt == 3", [event(3)], [event(4)])

    def test_any_in_any(self, idl: SimpleNamespace) -> None:
        """Event.memB.Any.Any.int: $.memB is the int."""
        event = lambda n: value(idl.FE._tc_MemBEvent,
                                CORBA.Any(CORBA.TC_any, CORBA.Any(CORBA.TC_long, n)))
        check("$.memB == 7", [event(7)], [event(8)])

    def test_bare_char(self) -> None:
        """Event.char: $ alone is the data."""
        check("$ == 'x'", [CORBA.Any(CORBA.TC_char, "x")], [CORBA.Any(CORBA.TC_char, "y")])

    def test_method_arguments(self, idl: SimpleNamespace) -> None:
        """Event.methA.(char key, Any.int types[10]): $.methA.types[3] is the 4th element."""
        event = lambda start: value(
            idl.FE._tc_MethEvent,
            idl.FE.MethArgs("k", CORBA.Any(idl.FE._tc_TenLongs, list(range(start, start + 10)))))
        check("$.methA.types[3] == 3", [event(0)], [event(1)])

    def test_one_constraint_for_both_event_kinds(self) -> None:
        """$.header.fixed_header.event_type.type_name works on a structured event and on
        an unstructured one with the same member layout."""
        mirror = tc.struct_tc("IDL:test/Mirror:1.0", "Mirror",
                              [("header", N._tc_EventHeader), ("n", CORBA.TC_long)])

        def unstructured(type_name: str) -> Any:
            header = N.EventHeader(N.FixedEventHeader(N.EventType("D", type_name), ""), [])
            return value(mirror, header, 1)
        check("$.header.fixed_header.event_type.type_name == 'CommunicationsAlarm'",
              [structured(type_name="CommunicationsAlarm"), unstructured("CommunicationsAlarm")],
              [structured(type_name="Other"), unstructured("Other")])

    def test_exist_on_implicit_member(self, idl: SimpleNamespace) -> None:
        """(exist any._d and any._d == 50) or any == 50, written with $."""
        check("(exist $._d and $._d == 50) or $ == 50",
              [value(idl.FE._tc_Defaulted, 50, 1), CORBA.Any(CORBA.TC_long, 50)],
              [value(idl.FE._tc_Defaulted, 0, "s"), CORBA.Any(CORBA.TC_long, 49)])


class TestSection243:
    """§2.4.3: errors end the match; and/or short-circuit."""

    CONSTRAINT = "($.a + 1 > 32) or ($.b == 5) or ($.c > 3)"

    def events(self, idl: SimpleNamespace) -> list[Any]:
        return [value(idl.FE._tc_Event1, "Hawaii", 5.0), value(idl.FE._tc_Event2, "H", 5.0),
                value(idl.FE._tc_Event3, 5, 5.0), value(idl.FE._tc_Event4, 5, 5.0)]

    def test_four_events(self, idl: SimpleNamespace) -> None:
        """'Hawaii' + 1 is an error (FALSE); 'H' + 1 > 32 short-circuits (TRUE); a missing
        $.b is an error even though $.c > 3 (FALSE); $.b == 5 converts 5 to 5.0 (TRUE)."""
        match = matcher(self.CONSTRAINT)
        assert [match(e) for e in self.events(idl)] == [False, True, False, True]

    def test_rewritten_with_exist(self, idl: SimpleNamespace) -> None:
        """($.a + 1 > 32) or (exist $.b and $.b == 5) or ($.c > 3) accepts event 3 too."""
        match = matcher("($.a + 1 > 32) or (exist $.b and $.b == 5) or ($.c > 3)")
        assert [match(e) for e in self.events(idl)] == [False, True, True, True]

    def test_char_arithmetic(self, idl: SimpleNamespace) -> None:
        """'H' + 1 > 32 is TRUE: a char is numeric; a lower char is FALSE."""
        check("$.a + 1 > 32", [value(idl.FE._tc_Event2, "H", 0.0)],
              [value(idl.FE._tc_Event2, "\x1f", 0.0)])
        check("'H' + 1 > 32", [CORBA.Any(CORBA.TC_null, None)], [])


class TestSection244:
    """§2.4.4: name-value pairs by index or by name."""

    def event(self, *pairs: tuple[str, int]) -> Any:
        return structured(variable=[(name, CORBA.Any(CORBA.TC_long, n)) for name, n in pairs])

    def test_indexed_form(self) -> None:
        """variable_header[1] and [2] checked by name and value."""
        check("($.header.variable_header[1].name == 'priority' and\n"
              " $.header.variable_header[1].value > 1163) or\n"
              " ($.header.variable_header[2].name == 'priority' and\n"
              " $.header.variable_header[2].value > 1163)",
              [self.event(("Timeout", 1), ("priority", 2000)),
               self.event(("a", 1), ("b", 1), ("priority", 2000))],
              [self.event(("Timeout", 1), ("priority", 100)),
               self.event(("priority", 2000), ("Timeout", 1), ("other", 3)),
               self.event(("priority", 2000))])

    def test_associative_form(self) -> None:
        """$.header.variable_header(priority) is the value of priority."""
        check("$.header.variable_header(priority) > 1163",
              [self.event(("Timeout", 1), ("priority", 2000))],
              [self.event(("priority", 100)), self.event(("Timeout", 5000))])


class TestSection245:
    """§2.4.5: run-time variables as short-hand."""

    LONG = ("$.header.fixed_header.event_type.type_name == 'CommunicationsAlarm' and\n"
            "$.header.fixed_header.event_name == 'lost_packet' and\n"
            "$.header.variable_header(priority) < 2")
    SHORT = ("$type_name == 'CommunicationsAlarm' and\n"
             "$event_name == 'lost_packet' and $priority < 2")
    TRUE = (structured(event_name="lost_packet", variable={"priority": 1}),)
    FALSE = (structured(event_name="lost_packet", variable={"priority": 2}),
             structured(event_name="found_packet", variable={"priority": 1}),
             structured(type_name="Other", event_name="lost_packet", variable={"priority": 1}))

    def test_long_form(self) -> None:
        """The explicit paths."""
        check(self.LONG, self.TRUE, self.FALSE)

    def test_short_form(self) -> None:
        """The run-time variables mean the same."""
        check(self.SHORT, self.TRUE, self.FALSE)

    def test_generic_priority(self) -> None:
        """$priority reads a structured event's header and an unstructured $.priority."""
        record = tc.struct_tc("IDL:test/Prio:1.0", "Prio", [("priority", CORBA.TC_short)])
        check("$priority < 2", [structured(variable={"priority": 1}), value(record, 1)],
              [structured(variable={"priority": 5}), value(record, 5)])


class TestSection246:
    """§2.4.6: positional notation, union labels and exist on unions."""

    def student(self, idl: SimpleNamespace, gpa: int = 90, midterm: int = 70,
                final: int = 80, attendance: int = 12) -> Any:
        fe = idl.FE
        tests = [fe.Score("midterm", CORBA.Any(CORBA.TC_long, midterm)),
                 fe.Score("final", CORBA.Any(CORBA.TC_long, final))]
        days = [20] * 12
        days[3] = attendance
        return value(fe._tc_Student, "Chico", tests, days, gpa, [])

    @pytest.mark.parametrize("constraint", [
        "$.gpa < 80 or $.tests(midterm) > $.tests(final) or\n$.monthly_attendance[3] < 10",
        "$.3 < 80 or $.1(midterm) > $.1(final) or $.2[3] < 10",
    ])
    def test_named_and_positional(self, idl: SimpleNamespace, constraint: str) -> None:
        """The named constraint and its positional translation (the spec's $1 misprint
        corrected to $.1) agree."""
        check(constraint,
              [self.student(idl, gpa=70), self.student(idl, midterm=90),
               self.student(idl, attendance=5)],
              [self.student(idl)])

    def test_struct_and_enum_positions(self, idl: SimpleNamespace) -> None:
        """struct X: A is .0, B is .1, C is .2; enum P: Q is 0, R is 1, S is 2."""
        x = lambda c: value(idl.FE._tc_X, 1, "b", c)
        check("$.0 == 1 and $.1 == 'b' and $.2 == 3", [x(3)], [x(4)])
        check("$.A == 1 and $.B == 'b' and $.C == 3", [x(3)], [x(4)])
        q = CORBA.Any(idl.FE._tc_P, idl.FE.Q)
        r = CORBA.Any(idl.FE._tc_P, idl.FE.R)
        check("$ == 0", [q], [r])
        check("$ == Q", [q], [r])

    def k(self, idl: SimpleNamespace, d: int, v: Any) -> Any:
        return value(idl.FE._tc_K, d, v)

    def test_union_member_by_label(self, idl: SimpleNamespace) -> None:
        """$.M < 54 is $.(5) < 54; $.L.C < 128 is $.(3).2 < 128."""
        for text in ("$.M < 54", "$.(5) < 54"):
            check(text, [self.k(idl, 5, 53)], [self.k(idl, 5, 54), self.k(idl, 3, None)])
        x = lambda c: idl.FE.X(1, "b", c)
        for text in ("$.L.C < 128", "$.(3).2 < 128"):
            check(text, [self.k(idl, 3, x(127))], [self.k(idl, 3, x(128)), self.k(idl, 5, 1)])

    def test_label_chosen_independent_of_discriminator(self, idl: SimpleNamespace) -> None:
        """Both $._d == 2 and $.(0) != 'hoob' and $._d == 2 and $.(2) != 'hoob' match a
        union with discriminator 2 whose string is not 'hoob'."""
        for text in ("$._d == 2 and $.(0) != 'hoob'", "$._d == 2 and $.(2) != 'hoob'"):
            check(text, [self.k(idl, 2, "putty")],
                  [self.k(idl, 2, "hoob"), self.k(idl, 0, "putty")])

    def test_putty(self, idl: SimpleNamespace) -> None:
        """'putty' ~ $.(2); the spec's unquoted putty is a property name, which a union
        event lacks, so it is FALSE."""
        check("'putty' ~ $.(2)", [self.k(idl, 0, "silly putty")],
              [self.k(idl, 0, "clay"), self.k(idl, 5, 1)])
        check("putty ~ $.(2)", [], [self.k(idl, 0, "silly putty")])

    def test_default_member(self, idl: SimpleNamespace) -> None:
        """$.N == 999 is $.() == 999: the default member."""
        for text in ("$.N == 999", "$.() == 999"):
            check(text, [self.k(idl, 7, 999)], [self.k(idl, 7, 998), self.k(idl, 5, 999)])

    def test_exist_on_unions(self, idl: SimpleNamespace) -> None:
        """exist $.str (the spec's K) holds iff the discriminator is 0 or 2, which is
        exist $.(0) or exist $.(2); exist $.(0) is $._d == 0 for a single-label member."""
        for text in ("exist $.str", "exist $.(0) or exist $.(2)", "exist $.(0)"):
            check(text, [self.k(idl, 0, "a"), self.k(idl, 2, "a")],
                  [self.k(idl, 3, idl.FE.X(1, "b", 2)), self.k(idl, 9, 1)])
        check("exist $.(5)", [self.k(idl, 5, 1)], [self.k(idl, 0, "a")])
        check("$._d == 5", [self.k(idl, 5, 1)], [self.k(idl, 0, "a")])


class TestSection247:
    """§2.4.7: the annotated examples."""

    def test_no_lost_packets(self) -> None:
        """CommunicationsAlarm events but no lost_packet messages."""
        check("$type_name == 'CommunicationsAlarm' and not\n($event_name == 'lost_packet')",
              [structured(event_name="link_down")],
              [structured(event_name="lost_packet"),
               structured(type_name="Other", event_name="link_down")])

    def test_priority_range(self) -> None:
        """CommunicationsAlarm events with priorities from 1 to 5."""
        check("$type_name == 'CommunicationsAlarm' and\n$priority >= 1 and $priority <= 5",
              [structured(variable={"priority": 1}), structured(filterable={"priority": 5})],
              [structured(variable={"priority": 0}), structured(variable={"priority": 6}),
               structured(type_name="X", variable={"priority": 3}), structured()])

    def test_marx_brothers(self, idl: SimpleNamespace) -> None:
        """MOVIE events featuring at least 3 of the Marx Brothers."""
        movie = lambda *stars: value(idl.FE._tc_Movie, "MOVIE", "Duck Soup",
                                     list(stars))
        check("$type_name == 'MOVIE' and\n"
              "(('groucho' in $.starlist) + ('chico' in $.starlist) +\n"
              "('harpo' in $.starlist) + ('zeppo' in $.starlist) +\n"
              "('gummo' in $.starlist)) > 2",
              [movie("groucho", "chico", "harpo", "zeppo"), movie("gummo", "harpo", "chico")],
              [movie("groucho", "chico", "margaret"),
               value(idl.FE._tc_Movie, "SHOW", "x", ["groucho", "chico", "harpo"])])

    def test_recent_events(self) -> None:
        """$origination_timestamp.high + 2 < $curtime.high names TimeBase 1.0's
        ulonglong struct; with today's UtcT it never resolves. The modern form works."""
        def at(timet: int) -> Any:
            utc = CORBA.Any(TimeBase._tc_UtcT, TimeBase.UtcT(timet, 0, 0, 0))
            return structured(variable={"origination_timestamp": utc})
        recent, old = at(NOW - 60 * 10**7), at(NOW - 3600 * 10**7)
        check("$origination_timestamp.high + 2 < $curtime.high", [], [recent, old])
        check("$curtime.time - $origination_timestamp.time < 9000000000", [recent], [old])

    def test_students(self, idl: SimpleNamespace) -> None:
        """Students that took all 3 tests with an average of at least 80."""
        def student(*scores: int) -> Any:
            results = [idl.FE.TestResult(f"t{i}", s) for i, s in enumerate(scores)]
            return value(idl.FE._tc_Student, "Harpo", [], [0] * 12, 3, results)
        check("$.test._length == 3 and\n"
              "($.test[0].score + $.test[1].score + $.test[2].score) / 3\n>= 80",
              [student(90, 80, 85), student(80, 80, 80)],
              [student(70, 80, 85), student(90, 90), student(90, 90, 90, 90)])

    def test_processes(self, idl: SimpleNamespace) -> None:
        """Processes over a usage threshold (ulong, double and ulonglong mixed with doubles)."""
        process = lambda mem, cpu, size: value(idl.FE._tc_Process, mem, cpu, size)
        check("$.memsize / 5.5 + $.cputime * 1275.0 + $.filesize * 1.25\n> 500000.0",
              [process(5_500_000, 0.0, 0), process(0, 400.0, 0), process(0, 0.0, 2**63)],
              [process(1000, 1.0, 1000)])

    def test_default_discriminator(self, idl: SimpleNamespace) -> None:
        """default $._d and $.defvalue == 2: the default member active and set to 2.
        As printed ($_.d) it names a variable '_' with a member d."""
        union = lambda d, v: value(idl.FE._tc_Defaulted, d, v)
        check("default $._d and $.defvalue == 2", [union(7, 2)],
              [union(7, 3), union(0, "2"), union(1, 2.0)])
        inner = tc.struct_tc("IDL:test/Inner:1.0", "Inner", [("d", idl.FE._tc_Defaulted)])
        outer = tc.struct_tc("IDL:test/Outer:1.0", "Outer",
                             [("_", inner), ("defvalue", CORBA.TC_long)])
        literal = lambda d, v: value(
            outer, inner.python_class()(idl.FE.Defaulted(d, 0)), v)
        check("default $_.d and $.defvalue == 2", [literal(7, 2)],
              [literal(0, 2), literal(7, 3), union(7, 2)])

    def test_threshold_type(self) -> None:
        """Events whose threshold has the unscoped type name 'short'."""
        check("exist $threshold._type_id and $threshold._type_id == 'short'",
              [structured(filterable={"threshold": CORBA.Any(CORBA.TC_short, 5)})],
              [structured(filterable={"threshold": CORBA.Any(CORBA.TC_long, 5)}),
               structured()])

    def test_structured_events_only(self, idl: SimpleNamespace) -> None:
        """$._repos_id names the event's type: every ORB prefixes omg.org. As printed,
        $_.repos_id is the member repos_id of a variable '_'."""
        check("$._repos_id == 'IDL:omg.org/CosNotification/StructuredEvent:1.0'",
              [structured(), CORBA.Any(N._tc_StructuredEvent, structured())],
              [value(idl.FE._tc_Movie, "MOVIE", "", [])])
        holder = tc.struct_tc("IDL:test/Holder:1.0", "Holder", [("repos_id", CORBA.TC_string)])
        tagged = lambda rid: structured(
            filterable={"_": value(holder, rid)})
        check("$_.repos_id == 'IDL:CosNotification/StructuredEvent:1.0'",
              [tagged("IDL:CosNotification/StructuredEvent:1.0")],
              [tagged("IDL:x:1.0"), structured()])

    def test_service_user_type(self, idl: SimpleNamespace) -> None:
        """$violation(serviceUser)._repos_id names the type of a nested property."""
        def violation(user: Any) -> Any:
            pairs = [N.Property("serviceUser", user)]
            return structured(filterable={"violation": CORBA.Any(N._tc_PropertySeq, pairs)})
        check("$violation(serviceUser)._repos_id ==\n"
              "'IDL:TelecomNotification/ServiceUserType:1.0'",
              [violation(value(idl.TN._tc_ServiceUserType, "ann", 1))],
              [violation(CORBA.Any(CORBA.TC_string, "ann")),
               violation(value(idl.FE._tc_X, 1, "b", 2))])

    def test_rights_list(self) -> None:
        """Events that carry a required_rights header property."""
        check("exist $.header.variable_header(required_rights)",
              [structured(variable={"required_rights": "admin"})],
              [structured(filterable={"required_rights": "admin"}), structured()])

    def test_enum_labels(self, idl: SimpleNamespace) -> None:
        """$_.in == HOUSE or $_.in == CAR: enum labels as bare identifiers. As printed,
        '_' is a variable; the member form $.in reads a Holding directly."""
        fe = idl.FE
        holding = lambda asset: value(fe._tc_Holding, asset, 1)
        check("$.in == HOUSE or $.in == CAR", [holding(fe.HOUSE), holding(fe.CAR)],
              [holding(fe.BOAT)])
        wrapper = tc.struct_tc("IDL:test/Wrapper:1.0", "Wrapper", [("_", fe._tc_Holding)])
        wrapped = lambda asset: value(wrapper, fe.Holding(asset, 1))
        check("$_.in == HOUSE or $_.in == CAR", [wrapped(fe.HOUSE), wrapped(fe.CAR)],
              [wrapped(fe.BOAT), holding(fe.HOUSE)])
