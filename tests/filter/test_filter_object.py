"""The CosNotifyFilter::Filter interface (§3.2.1) and its subscription callbacks (§2.6.5)."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyFilter as F

from cosnotify.filter.factory import FilterFactory
from tests.filter.events import clock, exp_key, make_filter, structured


def exp(text: str, *types: tuple[str, str]) -> Any:
    return F.ConstraintExp([N.EventType(d, t) for d, t in types], text)


def texts(f: Any) -> list[str]:
    return [info.constraint_expression.constraint_expr for info in f.get_all_constraints()]


class Recorder:
    """A NotifySubscribe that records its calls as sets of (domain, type)."""

    def __init__(self) -> None:
        self.calls: list[tuple[set[tuple[str, str]], set[tuple[str, str]]]] = []

    def subscription_change(self, added: list[Any], removed: list[Any]) -> None:
        self.calls.append(({(t.domain_name, t.type_name) for t in added},
                           {(t.domain_name, t.type_name) for t in removed}))


class TestAddConstraints:
    """add_constraints: ids, echo, atomicity and InvalidConstraint (§3.2.1.2)."""

    def test_ids_are_unique_and_echo_the_input(self) -> None:
        """Each constraint gets an id unique in the filter; the input comes back."""
        f = make_filter()
        first = f.add_constraints([exp("$a == 1", ("D", "T")), exp("$b == 2")])
        second = f.add_constraints([exp("$c == 3")])
        ids = [info.constraint_id for info in first + second]
        assert len(set(ids)) == 3
        assert exp_key(first[0].constraint_expression) == exp_key(exp("$a == 1", ("D", "T")))
        assert texts(f) == ["$a == 1", "$b == 2", "$c == 3"]

    def test_invalid_constraint_names_the_position(self) -> None:
        """InvalidConstraint carries the ConstraintExp; str() has line, column and caret."""
        f = make_filter()
        bad = exp("$a == 1 and $b <", ("D", "T"))
        with pytest.raises(F.InvalidConstraint) as info:
            f.add_constraints([bad])
        assert exp_key(info.value.constr) == exp_key(bad)
        message = str(info.value)
        assert "line 1, column 17" in message
        assert message.endswith("$a == 1 and $b <\n                ^")

    def test_all_or_nothing(self) -> None:
        """One bad constraint in a list adds none of them."""
        f = make_filter("$x == 0")
        with pytest.raises(F.InvalidConstraint) as info:
            f.add_constraints([exp("$a == 1"), exp("$a # 3"), exp("$b == 2")])
        assert info.value.constr.constraint_expr == "$a # 3"
        assert "unexpected character '#' at line 1, column 4" in str(info.value)
        assert texts(f) == ["$x == 0"]

    @pytest.mark.parametrize("text", ["$a # 3", "'x' %", "$a == \"x\"", "1 < 2 < 3", "$.", "("])
    def test_unknown_characters_and_syntax_errors(self, text: str) -> None:
        """Malformed text is InvalidConstraint, never another exception."""
        with pytest.raises(F.InvalidConstraint):
            make_filter().add_constraints([exp(text)])

    def test_bad_event_type(self) -> None:
        """A syntactically invalid event type is an InvalidConstraint too."""
        with pytest.raises(F.InvalidConstraint) as info:
            make_filter().add_constraints([exp("TRUE", ("Tele com", "X"))])
        assert "event type" in str(info.value)

    def test_non_string_expression(self) -> None:
        """A constraint_expr that is no string is BAD_PARAM, as marshalling would say."""
        with pytest.raises(CORBA.BAD_PARAM):
            make_filter().add_constraints([F.ConstraintExp([], 5)])

    def test_caller_cannot_mutate_stored_constraints(self) -> None:
        """The filter keeps its own copy of each ConstraintExp."""
        constraint = exp("TRUE", ("D", "T"))
        f = make_filter()
        f.add_constraints([constraint])
        constraint.event_types.append(N.EventType("X", "Y"))
        constraint.constraint_expr = "FALSE"
        assert exp_key(f.get_all_constraints()[0].constraint_expression) == \
            exp_key(exp("TRUE", ("D", "T")))


class TestEventTypes:
    """A constraint applies only to events of its types (§2.3, §3.2.1)."""

    @pytest.mark.parametrize(("types", "domain", "type_name", "expected"), [
        ([], "Telecom", "Alarm", True),
        ([("", "")], "Telecom", "Alarm", True),
        ([("*", "*")], "Telecom", "Alarm", True),
        ([("", "%ALL")], "Telecom", "Alarm", True),
        ([("Telecom", "Alarm")], "Telecom", "Alarm", True),
        ([("Telecom", "Alarm")], "Telecom", "Alarms", False),
        ([("Tele*", "*larm")], "Telecom", "Alarm", True),
        ([("T*m", "A*")], "Telecom", "Alarm", True),
        ([("T*m", "A*")], "Transport", "Alarm", False),
        ([("*", "Alarm")], "Anything", "Alarm", True),
        ([("", "Alarm")], "Anything", "Alarm", False),
        ([("", "Alarm")], "", "Alarm", True),
        ([("Telecom", "")], "Telecom", "Alarm", False),
        ([("Telecom", "")], "Telecom", "", True),
        ([("", "*")], "Telecom", "Alarm", True),
        ([("*", "")], "Telecom", "Alarm", True),
        ([("Other", "X"), ("Telecom", "*")], "Telecom", "Alarm", True),
    ])
    def test_structured(self, types: list[tuple[str, str]], domain: str, type_name: str,
                        expected: bool) -> None:
        """Exact names, '*' anywhere, and the every-type spellings. A single empty
        field is a name matched for equality, not a wildcard (§3.2.1: "strings that
        will be matched for equality against the domain_name and type_name fields
        ... or ... strings with wildcard symbols (*)"; only "a single element whose
        domain and type name are both set to either the empty string or else the
        wildcard symbol" means all types, and §2.6.6 makes "any combination of empty
        strings or the "*" string" %ALL; decision 37)."""
        f = make_filter((types, "TRUE"))
        assert f.match_structured(structured(domain, type_name)) is expected

    def test_constraints_are_ored(self) -> None:
        """A filter matches when any constraint whose types apply is TRUE."""
        f = make_filter(([("D", "A")], "$n == 1"), ([("D", "B")], "$n == 2"))
        assert f.match_structured(structured("D", "A", filterable={"n": 1}))
        assert f.match_structured(structured("D", "B", filterable={"n": 2}))
        assert not f.match_structured(structured("D", "A", filterable={"n": 2}))
        assert not f.match_structured(structured("D", "C", filterable={"n": 1}))

    @pytest.mark.parametrize("combine_after", [0, 3, 1000])
    def test_many_constraints(self, combine_after: int) -> None:
        """Large filters, combined in chunks at once, later, or never, OR every constraint."""
        factory = FilterFactory(clock=clock, combine_after=combine_after)
        f = make_filter(*[f"$n == {i}" for i in range(100)],
                        ([("D", "T")], "$m == 1"), ([("D", "*")], "$m == 2"), factory=factory)
        for _ in range(2):
            assert all(f.match_structured(structured(filterable={"n": i})) for i in (0, 64, 99))
            assert not f.match_structured(structured(filterable={"n": 100}))
            assert f.match_structured(structured("D", "T", filterable={"m": 1}))
            assert f.match_structured(structured("D", "X", filterable={"m": 2}))
            assert not f.match_structured(structured("E", "T", filterable={"m": 1}))
            assert f.match(CORBA.Any(CORBA.TC_null, None)) is False

    def test_any_events_have_type_any(self) -> None:
        """An Any event is of type ("", "%ANY") unless it holds a StructuredEvent."""
        plain = CORBA.Any(CORBA.TC_long, 1)
        assert make_filter(([("", "%ANY")], "$ == 1")).match(plain) is True
        assert make_filter(([("*", "%ANY")], "TRUE")).match(plain) is True
        assert make_filter(([("Telecom", "*")], "TRUE")).match(plain) is False
        wrapped = CORBA.Any(N._tc_StructuredEvent, structured("Telecom", "Alarm"))
        assert make_filter(([("Telecom", "*")], "TRUE")).match(wrapped) is True
        assert make_filter(([("", "%ANY")], "TRUE")).match(wrapped) is False

    def test_typed_event_types(self) -> None:
        """A typed event's type is its event_type pair (§2.7), else ("", "%TYPED")."""
        event = [N.Property("event_type", CORBA.Any(N._tc_EventType, N.EventType("I", "op")))]
        assert make_filter(([("I", "op")], "TRUE")).match_typed(event) is True
        assert make_filter(([("I", "other")], "TRUE")).match_typed(event) is False
        assert make_filter(([("", "%TYPED")], "TRUE")).match_typed([]) is True

    def test_empty_filter_and_empty_constraint(self) -> None:
        """No constraints match nothing; the empty constraint matches everything."""
        empty = make_filter()
        assert empty.match_structured(structured()) is False
        assert empty.match(CORBA.Any(CORBA.TC_long, 1)) is False
        assert empty.match_typed([]) is False
        anything = make_filter("")
        assert anything.match_structured(structured()) is True
        assert anything.match(CORBA.Any(CORBA.TC_long, 1)) is True
        assert anything.match_typed([]) is True

    def test_match_needs_an_any(self) -> None:
        """match() of something that is not a CORBA.Any is BAD_PARAM."""
        with pytest.raises(CORBA.BAD_PARAM):
            make_filter("TRUE").match(5)

    def test_malformed_structured_events_do_not_raise(self) -> None:
        """A value that is no StructuredEvent does not match, and does not raise."""
        f = make_filter("$priority > 1", ([("D", "T")], "TRUE"))
        assert f.match_structured(object()) is False
        assert f.match_structured(None) is False


class TestModifyConstraints:
    """modify_constraints is atomic (§3.2.1.3)."""

    def test_replace_and_delete(self) -> None:
        """Modified constraints keep their ids; deleted ones go."""
        f = make_filter("$a == 1", "$b == 2", "$c == 3")
        a, b, c = (info.constraint_id for info in f.get_all_constraints())
        f.modify_constraints([a], [F.ConstraintInfo(exp("$b == 20", ("D", "T")), b)])
        assert [i.constraint_id for i in f.get_all_constraints()] == [b, c]
        assert texts(f) == ["$b == 20", "$c == 3"]
        assert f.match_structured(structured("D", "T", filterable={"b": 20}))
        assert not f.match_structured(structured("X", "T", filterable={"b": 20}))

    def test_unknown_ids(self) -> None:
        """An unknown id in either list raises ConstraintNotFound and changes nothing."""
        f = make_filter("$a == 1", "$b == 2")
        a, _ = (info.constraint_id for info in f.get_all_constraints())
        with pytest.raises(F.ConstraintNotFound) as info:
            f.modify_constraints([a, 999], [])
        assert info.value.id == 999
        with pytest.raises(F.ConstraintNotFound) as info:
            f.modify_constraints([a], [F.ConstraintInfo(exp("TRUE"), 998)])
        assert info.value.id == 998
        with pytest.raises(F.ConstraintNotFound):
            f.modify_constraints([a], [F.ConstraintInfo(exp("TRUE"), a)])
        assert texts(f) == ["$a == 1", "$b == 2"]

    def test_invalid_modification_changes_nothing(self) -> None:
        """A bad expression in modify_list undoes the deletions too."""
        f = make_filter("$a == 1", "$b == 2")
        a, b = (info.constraint_id for info in f.get_all_constraints())
        with pytest.raises(F.InvalidConstraint):
            f.modify_constraints([a], [F.ConstraintInfo(exp("$b =="), b)])
        assert texts(f) == ["$a == 1", "$b == 2"]
        assert f.match_structured(structured(filterable={"a": 1}))

    def test_item_without_expression_is_bad_param(self) -> None:
        """A modify_list item that is no ConstraintInfo (it has no constraint_expression)
        is BAD_PARAM and changes nothing, as for mapping filters (§3.2.1.3: the
        "modify_list parameter is a sequence of ConstraintInfo data structures";
        docs/filters.md decision 40: a malformed argument is BAD_PARAM)."""

        class IdOnly:
            constraint_id = 1

        f = make_filter("$a == 1", "$b == 2")
        a, b = (info.constraint_id for info in f.get_all_constraints())
        holder = IdOnly()
        holder.constraint_id = b
        with pytest.raises(CORBA.BAD_PARAM):
            f.modify_constraints([a], [holder])
        assert texts(f) == ["$a == 1", "$b == 2"]


class TestQueries:
    """get_constraints, get_all_constraints, remove_all_constraints (§3.2.1.4-5)."""

    def test_get_constraints(self) -> None:
        """Constraints come back in the order asked; unknown ids raise."""
        f = make_filter("$a == 1", "$b == 2")
        a, b = (info.constraint_id for info in f.get_all_constraints())
        assert [i.constraint_id for i in f.get_constraints([b, a])] == [b, a]
        with pytest.raises(F.ConstraintNotFound) as info:
            f.get_constraints([a, 77])
        assert info.value.id == 77

    def test_remove_all(self) -> None:
        """The filter is empty but usable afterwards."""
        f = make_filter("TRUE")
        f.remove_all_constraints()
        assert f.get_all_constraints() == []
        assert f.match_structured(structured()) is False
        f.add_constraints([exp("TRUE")])
        assert f.match_structured(structured()) is True

    def test_grammar_attribute(self) -> None:
        """constraint_grammar of a filter of the default grammar is "EXTENDED_TCL", also
        when the factory was asked for an alias (§3.2.1.1: "The value that the
        constraint_grammar attribute is set to in the case the target filter object
        supports this default grammar will be "EXTENDED_TCL."", and §3.2.2.1)."""
        factory = FilterFactory()
        for name in ("EXTENDED_TCL", "TCL", "ETCL"):
            assert factory.create_filter(name)._get_constraint_grammar() == "EXTENDED_TCL"
            mapping = factory.create_mapping_filter(name, CORBA.Any(CORBA.TC_short, 0))
            assert mapping._get_constraint_grammar() == "EXTENDED_TCL"


class TestDestroy:
    """destroy invalidates the filter (§3.2.1.6)."""

    def test_operations_raise_object_not_exist(self) -> None:
        """Every operation, matching included, raises OBJECT_NOT_EXIST afterwards."""
        f = make_filter("TRUE")
        f.destroy()
        calls = [lambda: f.match_structured(structured()),
                 lambda: f.match(CORBA.Any(CORBA.TC_long, 1)), lambda: f.match_typed([]),
                 lambda: f.add_constraints([exp("TRUE")]), lambda: f.get_all_constraints(),
                 lambda: f.modify_constraints([], []), lambda: f.get_constraints([]),
                 lambda: f.remove_all_constraints(), lambda: f._get_constraint_grammar(),
                 lambda: f.attach_callback(Recorder()), lambda: f.detach_callback(1),
                 lambda: f.get_callbacks(), f.destroy]
        for call in calls:
            with pytest.raises(CORBA.OBJECT_NOT_EXIST):
                call()


class TestCallbacks:
    """subscription_change on the aggregate of the constraints' types (§2.6.5)."""

    def test_attach_detach(self) -> None:
        """Ids are unique; detaching an unknown id raises CallbackNotFound."""
        f = make_filter()
        first, second = f.attach_callback(Recorder()), f.attach_callback(Recorder())
        assert first != second and f.get_callbacks() == sorted([first, second])
        f.detach_callback(first)
        assert f.get_callbacks() == [second]
        with pytest.raises(F.CallbackNotFound):
            f.detach_callback(first)
        with pytest.raises(CORBA.BAD_PARAM):
            f.attach_callback(None)

    def test_aggregate_changes(self) -> None:
        """Only changes of the aggregate are reported, with the right sets."""
        f = make_filter()
        rec = Recorder()
        f.attach_callback(rec)
        [one] = f.add_constraints([exp("TRUE", ("D", "A"))])
        [two] = f.add_constraints([exp("$x == 1", ("D", "A"), ("D", "B"))])
        f.modify_constraints([one.constraint_id], [])          # A still required by two
        f.modify_constraints([], [F.ConstraintInfo(exp("TRUE", ("D", "C")),
                                                   two.constraint_id)])
        f.add_constraints([exp("TRUE")])                        # empty list: %ALL
        f.remove_all_constraints()
        assert rec.calls == [
            ({("D", "A")}, set()),
            ({("D", "B")}, set()),
            ({("D", "C")}, {("D", "A"), ("D", "B")}),
            ({("*", "%ALL")}, set()),
            (set(), {("D", "C"), ("*", "%ALL")}),
        ]

    def test_failed_changes_report_nothing(self) -> None:
        """A rejected add or modify calls no callback."""
        f = make_filter()
        rec = Recorder()
        f.attach_callback(rec)
        with pytest.raises(F.InvalidConstraint):
            f.add_constraints([exp("TRUE", ("D", "A")), exp("(")])
        assert rec.calls == []

    def test_broken_callback_is_ignored(self, caplog: pytest.LogCaptureFixture) -> None:
        """A callback that raises is logged; the change and other callbacks go on."""
        class Broken:
            def subscription_change(self, added: Any, removed: Any) -> None:
                raise CORBA.COMM_FAILURE(0, CORBA.COMPLETED_NO)
        f = make_filter()
        rec = Recorder()
        f.attach_callback(Broken())
        f.attach_callback(rec)
        with caplog.at_level(logging.WARNING, logger="cosnotify.filter.filter"):
            f.add_constraints([exp("TRUE", ("D", "A"))])
        assert texts(f) == ["TRUE"]
        assert rec.calls == [({("D", "A")}, set())]
        assert "subscription_change" in caplog.text

    def test_detached_and_destroy(self) -> None:
        """A detached callback hears nothing; destroy reports every type as removed."""
        f = make_filter(([("D", "A")], "TRUE"))
        gone, kept = Recorder(), Recorder()
        gone_id = f.attach_callback(gone)
        f.attach_callback(kept)
        f.detach_callback(gone_id)
        f.destroy()
        assert gone.calls == []
        assert kept.calls == [(set(), {("D", "A")})]


class TestConcurrency:
    """Matching runs without locks while constraints change (copy on write)."""

    def test_match_during_changes(self) -> None:
        """Readers always see a whole constraint set: the event matches throughout."""
        f = make_filter("$x == 1")
        event = structured(filterable={"x": 1})
        errors: list[BaseException] = []
        results: set[bool] = set()

        def writer() -> None:
            try:
                for i in range(300):
                    [info] = f.add_constraints([exp(f"$x == {i + 2}")])
                    f.modify_constraints([], [F.ConstraintInfo(exp("FALSE"), info.constraint_id)])
                    f.modify_constraints([info.constraint_id], [])
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        def reader() -> None:
            try:
                for _ in range(3000):
                    results.add(f.match_structured(event))
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader)
                                                         for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == [] and results == {True}
        assert texts(f) == ["$x == 1"]

