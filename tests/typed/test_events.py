"""Table 2-2's translations of typed events (cosnotify/typed/events.py).

Cases from the table's text: a typed call becomes a %TYPED Structured Event
with an empty domain and filterable data ``operation`` then the parameters
(and an Any holding that name-value sequence); an event that does not follow
that convention "will not result in the event being delivered to any Typed
clients".
"""

from __future__ import annotations

from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N

from cosnotify.filter.factory import FilterFactory
from cosnotify.typed.events import (
    TYPED,
    call_of,
    call_of_any,
    to_any,
    to_match_typed,
    to_structured,
)
from cosnotify.typed.interfaces import TypedInterface


def prop(name: str, tc: Any, value: Any) -> Any:
    return N.Property(name, CORBA.Any(tc, value))


def structured(*props: Any) -> Any:
    return N.StructuredEvent(N.EventHeader(N.FixedEventHeader(N.EventType("", TYPED), ""), []),
                             list(props), CORBA.Any(CORBA.TC_null, None))


OPERATION = "::CoffeeTest::Coffee::drinking_coffee"


class TestTypedToUntyped:
    def test_a_call_as_a_structured_event(self, coffee: TypedInterface) -> None:
        event = to_structured(coffee.operations["drinking_coffee"], ["Jane", 5])
        fixed = event.header.fixed_header
        assert (fixed.event_type.domain_name, fixed.event_type.type_name) == ("", "%TYPED")
        assert [(p.name, p.value.value()) for p in event.filterable_data] == [
            ("operation", OPERATION), ("name", "Jane"), ("minutes", 5)]
        assert event.filterable_data[2].value.typecode().equivalent(CORBA.TC_long)

    def test_a_call_as_an_any(self, coffee: TypedInterface) -> None:
        value = to_any(coffee.operations["cancel_coffee"], ["Jane"])
        assert value.typecode().equivalent(N._tc_PropertySeq)
        assert [(p.name, p.value.value()) for p in value.value()] == [
            ("operation", "::CoffeeTest::Coffee::cancel_coffee"), ("name", "Jane")]

    def test_a_call_with_the_wrong_number_of_arguments(self, coffee: TypedInterface) -> None:
        with pytest.raises(CORBA.BAD_PARAM):
            to_structured(coffee.operations["drinking_coffee"], ["Jane"])

    def test_a_string_omniorb_cannot_encode_is_bad_param(self, coffee: TypedInterface) -> None:
        """A call in process is not marshalled: a lone surrogate in a string argument is
        the caller's bad value, BAD_PARAM naming the parameter (review 68: SystemError)."""
        with pytest.raises(CORBA.BAD_PARAM, match="name"):
            to_structured(coffee.operations["drinking_coffee"], ["\ud800", 5])


class TestUntypedToTyped:
    def test_round_trips(self, coffee: TypedInterface) -> None:
        drinking = coffee.operations["drinking_coffee"]
        assert call_of(coffee, to_structured(drinking, ["Jane", 5])) == (drinking, ["Jane", 5])
        assert call_of_any(coffee, to_any(drinking, ["Jane", 5])) == (drinking, ["Jane", 5])

    def test_a_structured_supplier_may_write_the_name_without_the_leading_colons(
            self, coffee: TypedInterface) -> None:
        event = structured(prop("operation", CORBA.TC_string, OPERATION[2:]),
                           prop("name", CORBA.TC_string, "Jo"), prop("minutes", CORBA.TC_long, 1))
        assert call_of(coffee, event) == (coffee.operations["drinking_coffee"], ["Jo", 1])

    @pytest.mark.parametrize("props", [
        [],  # no filterable data
        [("name", CORBA.TC_string, "Jo"), ("minutes", CORBA.TC_long, 1)],  # no operation
        [("operation", CORBA.TC_long, 1)],  # operation not a string
        [("operation", CORBA.TC_string, "::CoffeeTest::Tea::drinking_coffee"),
         ("name", CORBA.TC_string, "Jo"), ("minutes", CORBA.TC_long, 1)],  # another interface
        [("operation", CORBA.TC_string, "::CoffeeTest::Coffee::brewing"),
         ("name", CORBA.TC_string, "Jo")],  # no such operation
        [("operation", CORBA.TC_string, OPERATION), ("name", CORBA.TC_string, "Jo")],  # short
        [("operation", CORBA.TC_string, OPERATION), ("name", CORBA.TC_string, "Jo"),
         ("minutes", CORBA.TC_long, 1), ("sugar", CORBA.TC_long, 2)],  # one too many
        [("operation", CORBA.TC_string, OPERATION), ("who", CORBA.TC_string, "Jo"),
         ("minutes", CORBA.TC_long, 1)],  # a parameter's name
        [("operation", CORBA.TC_string, OPERATION), ("minutes", CORBA.TC_long, 1),
         ("name", CORBA.TC_string, "Jo")],  # the order
        [("operation", CORBA.TC_string, OPERATION), ("name", CORBA.TC_string, "Jo"),
         ("minutes", CORBA.TC_short, 1)],  # a parameter's type
    ], ids=["empty", "no-operation", "not-a-string", "other-interface", "no-such-operation",
            "short", "too-long", "renamed", "reordered", "retyped"])
    def test_what_does_not_fit_reaches_no_typed_client(self, coffee: TypedInterface,
                                                       props: list[Any]) -> None:
        made = [prop(*p) for p in props]
        assert call_of(coffee, structured(*made)) is None
        assert call_of_any(coffee, CORBA.Any(N._tc_PropertySeq, made)) is None

    def test_an_any_that_is_not_a_name_value_sequence(self, coffee: TypedInterface) -> None:
        assert call_of_any(coffee, CORBA.Any(CORBA.TC_string, OPERATION)) is None


class TestFiltering:
    """Section 2.7: match_typed gets the call as a name-value sequence whose first pair is
    event_type (the interface as the domain, the operation as the type)."""

    def test_the_sequence_a_filter_gets(self, coffee: TypedInterface) -> None:
        props = to_match_typed(coffee.operations["drinking_coffee"], ["Jane", 5])
        assert props[0].name == "event_type"
        event_type = props[0].value.value()
        assert (event_type.domain_name, event_type.type_name) == (
            "CoffeeTest::Coffee", "drinking_coffee")
        assert [(p.name, p.value.value()) for p in props[1:]] == [("name", "Jane"),
                                                                  ("minutes", 5)]

    @pytest.mark.parametrize(("types", "constraint", "minutes", "expected"), [
        ([("CoffeeTest::Coffee", "drinking_coffee")], "$minutes > 3", 5, True),
        ([("CoffeeTest::Coffee", "drinking_coffee")], "$minutes > 3", 2, False),
        ([("CoffeeTest::Coffee", "cancel_coffee")], "TRUE", 5, False),
        ([("*", "*")], "$name == 'Jane' and $event_type.type_name == 'drinking_coffee'", 1,
         True),
        ([("", "%TYPED")], "TRUE", 1, False),  # a typed call has its own type
    ])
    def test_an_extended_tcl_filter(self, coffee: TypedInterface, types: list[Any],
                                    constraint: str, minutes: int, expected: bool) -> None:
        import CosNotifyFilter

        flt = FilterFactory().create_filter("EXTENDED_TCL")
        flt.add_constraints([CosNotifyFilter.ConstraintExp(
            [N.EventType(d, t) for d, t in types], constraint)])
        props = to_match_typed(coffee.operations["drinking_coffee"], ["Jane", minutes])
        assert flt.match_typed(props) is expected


def test_a_parameter_of_a_typedef(tmp_path: Any) -> None:
    """A supplier that writes the typedef's base type is writing that type (found in
    review: omniORB's TypeCode.equivalent is not symmetric with aliases)."""
    from cosnotify.typed.interfaces import InterfaceRepository

    idl = tmp_path / "named.idl"
    idl.write_text("module Named { typedef string Name; interface Greeter {"
                   " void hello(in Name who); }; };")
    repository = InterfaceRepository()
    repository.load([idl])
    greeter = repository.lookup("Greeter")
    event = structured(prop("operation", CORBA.TC_string, "::Named::Greeter::hello"),
                       prop("who", CORBA.TC_string, "Jo"))
    assert call_of(greeter, event) == (greeter.operations["hello"], ["Jo"])
    typed = to_structured(greeter.operations["hello"], ["Jo"])
    assert call_of(greeter, typed) == (greeter.operations["hello"], ["Jo"])


def test_a_value_its_parameter_cannot_hold_is_bad_param(coffee: TypedInterface) -> None:
    """Bad input (the issue's): a call in process is not unmarshalled, so its values are
    checked as omniORB would marshal them, before anything enters the channel."""
    drinking = coffee.operations["drinking_coffee"]
    with pytest.raises(CORBA.BAD_PARAM, match="minutes: Expecting long"):
        to_structured(drinking, ["Jane", "five"])
    with pytest.raises(CORBA.BAD_PARAM, match="out of range"):
        to_structured(drinking, ["Jane", 2**40])


def test_typed_names_as_the_generic_lookup_reads_them(coffee: TypedInterface) -> None:
    """EXTENDED_TCL's ``$name`` on a typed event (a direct lookup since the typed work):
    the first pair of a name wins, a bare identifier no pair names is an enum label,
    and ``$type_name`` is the operation's (section 2.7)."""
    import CosNotifyChannelAdmin as CA
    import CosNotifyFilter

    props = [*to_match_typed(coffee.operations["drinking_coffee"], ["Jane", 5]),
             N.Property("minutes", CORBA.Any(CORBA.TC_long, 9)),
             N.Property("kind", CORBA.Any(CA._tc_ProxyType, CA.PUSH_TYPED))]
    for expression, expected in (("$minutes == 5", True), ("$minutes == 9", False),
                                 ("$type_name == 'drinking_coffee'", True),
                                 ("$domain_name == 'CoffeeTest::Coffee'", True),
                                 ("$kind == PUSH_TYPED", True), ("$kind == PULL_TYPED", False),
                                 ("exist $nothing", False)):
        flt = FilterFactory().create_filter("EXTENDED_TCL")
        flt.add_constraints([CosNotifyFilter.ConstraintExp([], expression)])
        assert flt.match_typed(props) is expected, expression
