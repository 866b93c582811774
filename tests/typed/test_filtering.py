"""Filters and typed calls (sections 2.3.1 and 2.7), with the router and the scan alike.

Section 2.3: "The match_typed operation is invoked by a Proxy object upon
receipt of a typed event." Section 2.7: the channel disassembles a typed
event into a name-value sequence whose first pair is ``event_type``, "an
event type structure containing the strings that are the name of the typed
interface, and the name of the operation in that interface". So every filter
a typed call meets -- the supplier side's, the consumer side's (structured
and typed consumers alike), mapping filters -- is asked ``match_typed``, and
an event type of ``("CoffeeTest::Coffee", "drinking_coffee")`` selects it. An
event supplied in another form keeps its own match operation, even when it
follows the %TYPED convention (JacORB's messages do the same).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter

from cosnotify import ServiceConfig
from cosnotify.typed.channel import TypedEventChannel, TypedEventChannelFactory
from tests.typed.conftest import DATA
from tests.typed.inprocess import (
    PullCoffee,
    Recorder,
    pulled_names,
    settle,
    structured_puller,
    typed_consumer,
)

DRINKING = N.EventType("CoffeeTest::Coffee", "drinking_coffee")
CANCEL = N.EventType("CoffeeTest::Coffee", "cancel_coffee")


@pytest.fixture(scope="module", params=["scan", "index"])
def factory(request: Any) -> Iterator[TypedEventChannelFactory]:
    with TypedEventChannelFactory(idl=[DATA / "Coffee.idl"],
                                  config=ServiceConfig(routing=request.param)) as made:
        yield made


def tcl(factory: TypedEventChannelFactory, types: list[Any], expression: str) -> Any:
    made = factory._get_filter_factory().create_filter("EXTENDED_TCL")
    made.add_constraints([CosNotifyFilter.ConstraintExp(types, expression)])
    return made


def typed_receiver(channel: TypedEventChannel, admin: Any = None) -> tuple[Any, Recorder]:
    """A TypedProxyPushSupplier (key Coffee) with a recording typed push consumer."""
    admin = admin or channel._get_default_consumer_admin()
    proxy, _ = admin.obtain_typed_notification_push_supplier("Coffee")
    consumer = Recorder()
    proxy.connect_typed_push_consumer(consumer)
    return proxy, consumer


def structured_event(type_name: str, filterable: list[Any]) -> Any:
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("", type_name), ""), []), filterable,
        CORBA.Any(CORBA.TC_null, None))


def structured_supplier(channel: TypedEventChannel) -> Any:
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_push_supplier(None)
    return proxy


def test_the_supplier_side_filters_typed_calls(channel: TypedEventChannel,
                                               factory: TypedEventChannelFactory) -> None:
    """A TypedProxyPushConsumer's filters and its admin's get match_typed."""
    puller = structured_puller(channel)
    admin, _ = channel.new_for_typed_notification_suppliers(CA.AND_OP)
    proxy, _ = admin.obtain_typed_notification_push_consumer("Coffee")
    proxy.connect_typed_push_supplier(None)
    proxy.add_filter(tcl(factory, [DRINKING], "$minutes > 3"))
    coffee = proxy.get_typed_consumer()
    coffee.drinking_coffee("Jo", 2)
    coffee.drinking_coffee("Al", 9)
    coffee.cancel_coffee("Al")
    settle(channel)
    assert pulled_names(puller) == ["Al"]
    # AND_OP: the admin's group must pass too; the structured form's type is not a
    # typed call's type, so this admin filter passes nothing.
    admin.add_filter(tcl(factory, [N.EventType("", "%TYPED")], "TRUE"))
    coffee.drinking_coffee("Bo", 9)
    settle(channel)
    assert not puller.try_pull_structured_event()[1]


def test_a_typed_consumers_filters_get_match_typed(channel: TypedEventChannel,
                                                   factory: TypedEventChannelFactory) -> None:
    proxy, consumer = typed_receiver(channel)
    proxy.add_filter(tcl(factory, [DRINKING], "$minutes > 3"))
    _, coffee = typed_consumer(channel)
    coffee.drinking_coffee("Jo", 2)
    coffee.cancel_coffee("Jo")  # another operation: another event type
    coffee.drinking_coffee("Al", 9)
    assert consumer.wait_for(1)
    settle(channel)
    assert consumer.calls == [("drinking_coffee", ("Al", 9))]


def test_structured_consumers_select_typed_calls_by_interface_and_operation(
        channel: TypedEventChannel, factory: TypedEventChannelFactory) -> None:
    """The form of receipt decides: a typed call is (Coffee, cancel_coffee) to every
    filter; a structured event that follows the %TYPED convention stays ("", %TYPED)."""
    cancels = structured_puller(channel)
    cancels.add_filter(tcl(factory, [CANCEL], "TRUE"))
    typed_form = structured_puller(channel)
    typed_form.add_filter(tcl(factory, [N.EventType("", "%TYPED")], "TRUE"))
    _, coffee = typed_consumer(channel)
    coffee.drinking_coffee("Jo", 2)
    coffee.cancel_coffee("Al")
    structured_supplier(channel).push_structured_event(structured_event("%TYPED", [
        N.Property("operation", CORBA.Any(CORBA.TC_string,
                                          "::CoffeeTest::Coffee::cancel_coffee")),
        N.Property("name", CORBA.Any(CORBA.TC_string, "Sam"))]))
    settle(channel)
    assert pulled_names(cancels) == ["Al"]
    assert pulled_names(typed_form) == ["Sam"]


def test_consumer_admin_filters_get_match_typed(channel: TypedEventChannel,
                                               factory: TypedEventChannelFactory) -> None:
    admin, _ = channel.new_for_typed_notification_consumers(CA.AND_OP)
    admin.add_filter(tcl(factory, [DRINKING], "$name == 'Al'"))
    proxy, consumer = typed_receiver(channel, admin)
    proxy.add_filter(tcl(factory, [N.EventType("CoffeeTest::Coffee", "*")], "TRUE"))
    _, coffee = typed_consumer(channel)
    coffee.drinking_coffee("Jo", 2)
    coffee.cancel_coffee("Al")
    coffee.drinking_coffee("Al", 9)
    assert consumer.wait_for(1)
    settle(channel)
    assert consumer.calls == [("drinking_coffee", ("Al", 9))]


def test_mapping_filters_map_typed_calls(channel: TypedEventChannel,
                                         factory: TypedEventChannelFactory) -> None:
    """A priority mapping filter (section 2.3.1) reads the typed call too: cancels
    first, in a priority-ordered queue."""
    puller = structured_puller(channel)
    puller.set_qos([N.Property(N.OrderPolicy, CORBA.Any(CORBA.TC_short, N.PriorityOrder))])
    mapping = factory._get_filter_factory().create_mapping_filter(
        "EXTENDED_TCL", CORBA.Any(CORBA.TC_short, 0))
    mapping.add_mapping_constraints([CosNotifyFilter.MappingConstraintPair(
        CosNotifyFilter.ConstraintExp([CANCEL], "TRUE"), CORBA.Any(CORBA.TC_short, 9))])
    puller._set_priority_filter(mapping)
    _, coffee = typed_consumer(channel)
    coffee.drinking_coffee("Jo", 2)
    coffee.cancel_coffee("Al")
    coffee.drinking_coffee("Bo", 3)
    settle(channel)
    assert pulled_names(puller) == ["Al", "Jo", "Bo"]


def test_a_typed_pull_suppliers_calls_are_typed_events(
        channel: TypedEventChannel, factory: TypedEventChannelFactory) -> None:
    """What the channel pulls from a typed pull supplier is a typed event too."""
    _, consumer = typed_receiver(channel)
    proxy, _ = channel._get_default_supplier_admin().obtain_typed_notification_pull_consumer(
        "Coffee")
    proxy.add_filter(tcl(factory, [DRINKING], "$minutes > 5"))
    proxy.connect_typed_pull_supplier(PullCoffee([("Jane", 5), ("Al", 7), ("Bo", 8)]))
    assert consumer.wait_for(2)
    settle(channel)
    assert consumer.calls == [("drinking_coffee", ("Al", 7)), ("drinking_coffee", ("Bo", 8))]


class AskedFilter:
    """A filter this process's factories did not make (as a client's own filter object
    would be): it records which match operation it is asked, and matches."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, Any]] = []

    def match(self, data: Any) -> bool:
        self.asked.append(("match", data))
        return True

    def match_structured(self, data: Any) -> bool:
        self.asked.append(("match_structured", data))
        return True

    def match_typed(self, data: Any) -> bool:
        self.asked.append(("match_typed", data))
        return True


def test_other_filters_are_asked_match_typed(channel: TypedEventChannel) -> None:
    puller = structured_puller(channel)
    asked = AskedFilter()
    puller.add_filter(asked)
    _, coffee = typed_consumer(channel)
    coffee.drinking_coffee("Jo", 2)
    settle(channel)
    assert pulled_names(puller) == ["Jo"]
    [(operation, data)] = asked.asked
    assert operation == "match_typed"
    assert data[0].name == "event_type"
    event_type = data[0].value.value()
    assert (event_type.domain_name, event_type.type_name) == ("CoffeeTest::Coffee",
                                                              "drinking_coffee")
    assert [(p.name, p.value.value()) for p in data[1:]] == [("name", "Jo"), ("minutes", 2)]


def test_subscription_types_select_typed_calls_by_interface_and_operation(
        channel: TypedEventChannel) -> None:
    """A proxy's ``subscription_change`` (section 2.6.3) names event types; a typed
    call's is (interface, operation), as for its filters."""
    puller = structured_puller(channel)
    puller.subscription_change([CANCEL], [])
    _, coffee = typed_consumer(channel)
    coffee.drinking_coffee("Jo", 2)
    coffee.cancel_coffee("Al")
    settle(channel)
    assert pulled_names(puller) == ["Al"]


@pytest.mark.parametrize(("grammar", "constraint"), [
    ("EXTENDED_TCL", "$type_name == 'drinking_coffee' and $minutes > 3"),
    ("TCL", "minutes > 3"),
    ("ELVIN4", 'type_name == "drinking_coffee" && minutes > 3'),
    ("EVENTHEAP", 'EventType = "drinking_coffee", minutes: int = 9'),
])
def test_the_other_grammars_read_typed_calls(channel: TypedEventChannel,
                                             factory: TypedEventChannelFactory,
                                             grammar: str, constraint: str) -> None:
    """Every grammar whose constraints name an event's values reads the typed form
    (docs/grammars/: the event_type pair for the type, then the parameters)."""
    proxy, consumer = typed_receiver(channel)
    made = factory._get_filter_factory().create_filter(grammar)
    made.add_constraints([CosNotifyFilter.ConstraintExp([], constraint)])
    proxy.add_filter(made)
    _, coffee = typed_consumer(channel)
    coffee.drinking_coffee("Jo", 2)
    coffee.cancel_coffee("Jo")
    coffee.drinking_coffee("Al", 9)
    assert consumer.wait_for(1)
    settle(channel)
    assert consumer.calls == [("drinking_coffee", ("Al", 9))]
