"""Filter groups: how an admin's filters and a proxy's filters combine (section 2.3).

The spec's text decides it (docs/filters.md, "Filter groups"):

- section 2.1.2: an Admin's filters "apply at all times to all Proxy objects
  which have been created by the Admin";
- section 2.3: all filter objects associated with a proxy are ORed, and "if
  the match operation of all filter objects associated with the Proxy
  evaluates to FALSE, the Proxy will discard the event";
- footnote 3: the InterFilterGroupOperator is "a minor variation" for a proxy
  with "some locally defined filter objects, and some which it inherits".

So an empty group lets the other decide, whatever the operator. TAO and
JacORB read OR_OP so that an empty group passes everything; the channel admin
property FilterGroupSemantics = 1 selects that reading.

Every case: the admin's filter passes n in {1, 2}, the proxy's n in {2, 3};
events n = 1..4 go through; the table says which arrive. Each table row is
run on the consumer side (a ConsumerAdmin and a proxy supplier) and on the
supplier side (a SupplierAdmin and a proxy consumer), with indexed and
scanning routing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter as F

from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.service import ServiceConfig
from tests.channel.conftest import structured, structured_supplier
from tests.channel.test_real_filters import drain

ALL = [1, 2, 3, 4]
SPEC, TAO = 0, 1

#: (operator, admin has filters, proxy has filters) -> (spec reading, TAO/JacORB reading)
TABLE = [
    (CA.AND_OP, False, False, ALL, ALL),
    (CA.AND_OP, True, False, [1, 2], [1, 2]),
    (CA.AND_OP, False, True, [2, 3], [2, 3]),
    (CA.AND_OP, True, True, [2], [2]),
    (CA.OR_OP, False, False, ALL, ALL),
    (CA.OR_OP, True, False, [1, 2], ALL),
    (CA.OR_OP, False, True, [2, 3], ALL),
    (CA.OR_OP, True, True, [1, 2, 3], [1, 2, 3]),
]
ROWS = [pytest.param(op, admin, proxy, spec, tao,
                     id=f"{'AND' if op == CA.AND_OP else 'OR'}-admin{int(admin)}-proxy{int(proxy)}")
        for op, admin, proxy, spec, tao in TABLE]


def semantics(value: int) -> Any:
    return N.Property("FilterGroupSemantics", CORBA.Any(CORBA.TC_short, value))


@pytest.fixture(params=["index", "scan"])
def routing_factory(request: Any) -> Iterator[EventChannelFactory]:
    made = EventChannelFactory(ServiceConfig(routing=request.param))
    yield made
    made.close()


def n_filter(channel: Any, *values: int) -> Any:
    made = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
    made.add_constraints([F.ConstraintExp([], " or ".join(f"$n == {v}" for v in values))])
    return made


def pull_consumer(admin: Any) -> Any:
    proxy, _ = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
    proxy.connect_structured_pull_consumer(None)
    return proxy


def push_all(supplier: Any) -> None:
    for n in ALL:
        supplier.push_structured_event(structured(fields={"n": n}))


class TestConsumerSide:
    """A ConsumerAdmin's group and a proxy supplier's group."""

    @pytest.mark.parametrize(("op", "admin_set", "proxy_set", "spec", "tao"), ROWS)
    @pytest.mark.parametrize("reading", [SPEC, TAO])
    def test_table(self, routing_factory: EventChannelFactory, reading: int, op: Any,
                   admin_set: bool, proxy_set: bool, spec: list[int], tao: list[int]) -> None:
        """The proxy supplier receives the events the table's reading says."""
        channel, _ = routing_factory.create_channel([], [semantics(reading)])
        admin, _ = channel.new_for_consumers(op)
        if admin_set:
            admin.add_filter(n_filter(channel, 1, 2))
        proxy = pull_consumer(admin)
        if proxy_set:
            proxy.add_filter(n_filter(channel, 2, 3))
        push_all(structured_supplier(channel))
        assert drain(proxy) == (spec if reading == SPEC else tao)


class TestSupplierSide:
    """A SupplierAdmin's group and a proxy consumer's group."""

    @pytest.mark.parametrize(("op", "admin_set", "proxy_set", "spec", "tao"), ROWS)
    @pytest.mark.parametrize("reading", [SPEC, TAO])
    def test_table(self, routing_factory: EventChannelFactory, reading: int, op: Any,
                   admin_set: bool, proxy_set: bool, spec: list[int], tao: list[int]) -> None:
        """The proxy consumer forwards the events the table's reading says."""
        channel, _ = routing_factory.create_channel([], [semantics(reading)])
        consumer = pull_consumer(channel._get_default_consumer_admin())
        admin, _ = channel.new_for_suppliers(op)
        if admin_set:
            admin.add_filter(n_filter(channel, 1, 2))
        proxy, _ = admin.obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_supplier(None)
        if proxy_set:
            proxy.add_filter(n_filter(channel, 2, 3))
        push_all(proxy)
        assert drain(consumer) == (spec if reading == SPEC else tao)


class TestTheProperty:
    """FilterGroupSemantics as a channel admin property (docs/qos.md)."""

    def test_default_is_the_spec(self, routing_factory: EventChannelFactory) -> None:
        """A new channel reports FilterGroupSemantics 0, the spec's reading."""
        channel, _ = routing_factory.create_channel([], [])
        values = {p.name: p.value.value() for p in channel.get_admin()}
        assert values["FilterGroupSemantics"] == SPEC

    def test_out_of_range_is_refused(self, routing_factory: EventChannelFactory) -> None:
        """A value other than 0 or 1 is UnsupportedAdmin with BAD_VALUE, and nothing changes."""
        channel, _ = routing_factory.create_channel([], [])
        with pytest.raises(N.UnsupportedAdmin) as caught:
            channel.set_admin([semantics(2)])
        assert [e.code for e in caught.value.admin_err] == [N.BAD_VALUE]
        values = {p.name: p.value.value() for p in channel.get_admin()}
        assert values["FilterGroupSemantics"] == SPEC

    def test_switching_changes_connected_proxies(self,
                                                 routing_factory: EventChannelFactory) -> None:
        """Changing the reading on a live channel re-shapes proxies already connected."""
        channel, _ = routing_factory.create_channel([], [])
        admin, _ = channel.new_for_consumers(CA.OR_OP)
        admin.add_filter(n_filter(channel, 1, 2))
        proxy = pull_consumer(admin)
        supplier = structured_supplier(channel)
        push_all(supplier)
        assert drain(proxy) == [1, 2]
        channel.set_admin([semantics(TAO)])
        push_all(supplier)
        assert drain(proxy) == ALL
        channel.set_admin([semantics(SPEC)])
        push_all(supplier)
        assert drain(proxy) == [1, 2]


class TestSubscriptionListAsTheProxyGroup:
    """A proxy supplier's subscription_change list stands in for its filter group."""

    EVENTS = (("Wanted", 3), ("Other", 1), ("Other", 4), ("Wanted", 2))

    @pytest.mark.parametrize(("op", "received"), [(CA.OR_OP, [3, 1, 2]), (CA.AND_OP, [2])],
                             ids=["OR", "AND"])
    @pytest.mark.parametrize("order", ["list-first", "admin-filter-first",
                                       "proxy-filter-removed"])
    @pytest.mark.parametrize("reading", [SPEC, TAO])
    def test_list_and_admin_filters_combine_by_the_operator(
            self, routing_factory: EventChannelFactory, reading: int, order: str, op: Any,
            received: list[int]) -> None:
        """Section 2.6.5: a consumer "may use the subscription_change operation instead of
        a filter object": under OR_OP it receives what its admin's filters pass and the
        types it named (review 136: the list was ANDed with the groups, so it received
        only events both passed), under AND_OP what both pass."""
        channel, _ = routing_factory.create_channel([], [semantics(reading)])
        admin, _ = channel.new_for_consumers(op)
        if order == "admin-filter-first":
            admin.add_filter(n_filter(channel, 1, 2))
        proxy = pull_consumer(admin)
        proxy.subscription_change([N.EventType("Telecom", "Wanted")], [])
        if order != "admin-filter-first":
            admin.add_filter(n_filter(channel, 1, 2))
        if order == "proxy-filter-removed":
            proxy.remove_filter(proxy.add_filter(n_filter(channel, 4)))
        supplier = structured_supplier(channel)
        for type_name, n in self.EVENTS:
            supplier.push_structured_event(structured(type_name=type_name, fields={"n": n}))
        assert drain(proxy) == received
