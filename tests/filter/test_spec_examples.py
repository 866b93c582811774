"""Every constraint example of Notification 1.1 §2.3-§2.4.7, each shown TRUE and FALSE.

The examples evaluated on unstructured (Any) events are checks of the data set
tests/filter/any_paths.py (types from tests/filter/data/FilterExamples.idl),
run in process and over the wire by test_any_paths.py; this module holds the
ones that need structured events. Where the spec's text is a misprint or
refers to types we do not have, the test evaluates the text as written and the
reading docs/filters.md adopts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from omniORB import CORBA

import CosNotification as N
import TimeBase

from tests.filter.events import NOW, make_filter, matcher, struct_tc, structured, value


def check(constraint: str, true: Sequence[Any], false: Sequence[Any]) -> None:
    """``constraint`` is TRUE for every event of ``true`` and FALSE for every one of ``false``."""
    match = matcher(constraint)
    for event in true:
        assert match(event) is True, (constraint, event)
    for event in false:
        assert match(event) is False, (constraint, event)


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


class TestSection242:
    """§2.4.2: component paths (the Any-event examples are in any_paths.py)."""

    def test_one_constraint_for_both_event_kinds(self) -> None:
        """$.header.fixed_header.event_type.type_name works on a structured event (and,
        in any_paths.py, on an unstructured one with the same member layout)."""
        check("$.header.fixed_header.event_type.type_name == 'CommunicationsAlarm'",
              [structured(type_name="CommunicationsAlarm")], [structured(type_name="Other")])


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
        """$priority reads a structured event's header (an unstructured $.priority is
        in any_paths.py)."""
        check("$priority < 2", [structured(variable={"priority": 1})],
              [structured(variable={"priority": 5})])


class TestSection247:
    """§2.4.7: the annotated examples on structured events."""

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

    def test_recent_events(self) -> None:
        """$origination_timestamp.high + 2 < $curtime.high names TimeBase 1.0's
        ulonglong struct; with today's UtcT it never resolves. The modern form works."""
        def at(timet: int) -> Any:
            utc = CORBA.Any(TimeBase._tc_UtcT, TimeBase.UtcT(timet, 0, 0, 0))
            return structured(variable={"origination_timestamp": utc})
        recent, old = at(NOW - 60 * 10**7), at(NOW - 3600 * 10**7)
        check("$origination_timestamp.high + 2 < $curtime.high", [], [recent, old])
        check("$curtime.time - $origination_timestamp.time < 9000000000", [recent], [old])

    def test_threshold_type(self) -> None:
        """Events whose threshold has the unscoped type name 'short'."""
        check("exist $threshold._type_id and $threshold._type_id == 'short'",
              [structured(filterable={"threshold": CORBA.Any(CORBA.TC_short, 5)})],
              [structured(filterable={"threshold": CORBA.Any(CORBA.TC_long, 5)}),
               structured()])

    def test_structured_events_only(self) -> None:
        """$._repos_id names the event's type: every ORB prefixes omg.org. As printed,
        $_.repos_id is the member repos_id of a variable '_'."""
        check("$._repos_id == 'IDL:omg.org/CosNotification/StructuredEvent:1.0'",
              [structured()], [])
        holder = struct_tc("IDL:test/Holder:1.0", "Holder", [("repos_id", CORBA.TC_string)])
        tagged = lambda rid: structured(filterable={"_": value(holder, rid)})
        check("$_.repos_id == 'IDL:CosNotification/StructuredEvent:1.0'",
              [tagged("IDL:CosNotification/StructuredEvent:1.0")],
              [tagged("IDL:x:1.0"), structured()])

    def test_service_user_type(self, idl: Any) -> None:
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
