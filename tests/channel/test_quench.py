"""Quench through subscription sharing: suppliers learn which attributes ELVIN4 filters test.

Elvin 4 §5.3.3: a quenching client "is subsequently kept informed of active
subscription expressions that refer to any of the registered names", so a
producer can leave out what nobody tests. cosnotify carries this through the
Notification spec's own mechanism (section 2.6): a filter whose grammar knows
the attributes its constraints test (ELVIN4) reports each as the
subscription type ``("%ATTRIBUTE", name)``; the channel aggregates them like
any type and tells suppliers with ``subscription_change`` (and
``obtain_subscription_types``). docs/grammars/elvin4.md, "Quench".
"""

from __future__ import annotations

from typing import Any

import pytest

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyComm
import CosNotifyFilter as F

from cosnotify.eventtypes import ALL, ATTRIBUTE_DOMAIN, attribute_type
from tests.channel.conftest import PushSupplier, StructuredPushConsumer
from tests.channel.test_subscriptions import accumulated, pairs, settle


def attributes(*names: str) -> set[tuple[str, str]]:
    return {(ATTRIBUTE_DOMAIN, name) for name in names}


def quencher(channel: Any) -> PushSupplier:
    """A supplier connected to a proxy consumer: it hears subscription_change."""
    supplier = PushSupplier()
    entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    entry.connect_structured_push_supplier(supplier)
    return supplier


def consumer_proxy(channel: Any) -> Any:
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_push_consumer(StructuredPushConsumer())
    return proxy


def elvin_filter(channel: Any, *texts: str, types: tuple[tuple[str, str], ...] = ()) -> Any:
    flt = channel._get_default_filter_factory().create_filter("ELVIN4")
    flt.add_constraints([F.ConstraintExp([N.EventType(d, t) for d, t in types], text)
                         for text in texts])
    return flt


class TestQuench:
    """What suppliers hear as ELVIN4 filters come and go."""

    def test_a_filter_reports_the_attributes_it_tests(self, channel: Any) -> None:
        """An ELVIN4 filter on a proxy adds ("%ATTRIBUTE", name) for each attribute its
        expression tests, beside the constraint's event type."""
        supplier = quencher(channel)
        proxy = consumer_proxy(channel)
        proxy.add_filter(elvin_filter(
            channel, 'require(host) && severity > 2 && begins-with(host, "db")',
            types=(("Telecom", "Alarm"),)))
        settle(channel)
        assert accumulated(supplier.subscriptions) == {
            ("Telecom", "Alarm"), *attributes("host", "severity")}

    def test_all_types_does_not_hide_the_attributes(self, channel: Any) -> None:
        """A constraint for every type still reports its attributes (ALL absorbs only
        event types)."""
        supplier = quencher(channel)
        consumer_proxy(channel).add_filter(elvin_filter(channel, "temperature > 30"))
        settle(channel)
        assert accumulated(supplier.subscriptions) == {ALL, *attributes("temperature")}

    def test_changes_follow_the_constraints(self, channel: Any) -> None:
        """Adding a constraint adds its attributes; removing the last constraint testing
        an attribute withdraws it; removing the filter withdraws the rest."""
        supplier = quencher(channel)
        proxy = consumer_proxy(channel)
        flt = elvin_filter(channel, "a == 1")
        filter_id = proxy.add_filter(flt)
        settle(channel)
        assert accumulated(supplier.subscriptions) == {ALL, *attributes("a")}
        [added] = flt.add_constraints([F.ConstraintExp([], "b < 2 || a > 9")])
        settle(channel)
        assert accumulated(supplier.subscriptions) == {ALL, *attributes("a", "b")}
        flt.modify_constraints([added.constraint_id], [])
        settle(channel)
        assert accumulated(supplier.subscriptions) == {ALL, *attributes("a")}
        proxy.remove_filter(filter_id)
        settle(channel)
        assert accumulated(supplier.subscriptions) == {ALL}

    def test_an_attribute_stays_while_anyone_tests_it(self, channel: Any) -> None:
        """Two proxies test `host`: it is withdrawn only when the second filter goes."""
        supplier = quencher(channel)
        first, second = consumer_proxy(channel), consumer_proxy(channel)
        one = first.add_filter(elvin_filter(channel, 'host == "a"'))
        two = second.add_filter(elvin_filter(channel, 'host == "b" && load > 1'))
        settle(channel)
        assert accumulated(supplier.subscriptions) == {ALL, *attributes("host", "load")}
        second.remove_filter(two)
        settle(channel)
        assert accumulated(supplier.subscriptions) == {ALL, *attributes("host")}
        first.remove_filter(one)
        settle(channel)
        assert accumulated(supplier.subscriptions) == {ALL}

    def test_obtain_subscription_types_lists_them(self, channel: Any) -> None:
        """A supplier that asks (Table 3-1) gets the attribute types with the others."""
        entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        consumer_proxy(channel).add_filter(elvin_filter(channel, "require(x)"))
        settle(channel)
        assert pairs(entry.obtain_subscription_types(CA.ALL_NOW_UPDATES_OFF)) == {
            ALL, *attributes("x")}

    def test_extended_tcl_reports_no_attributes(self, channel: Any) -> None:
        """EXTENDED_TCL has no quench: only its event types are reported."""
        supplier = quencher(channel)
        flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        flt.add_constraints([F.ConstraintExp([], "$host == 'a'")])
        consumer_proxy(channel).add_filter(flt)
        settle(channel)
        assert accumulated(supplier.subscriptions) == {ALL}


class TestClientsCannotDeclareThem:
    """("%ATTRIBUTE", name) is what filters report; clients declaring it get the spec's
    errors, as for any '%' name outside %ALL, %ANY and %TYPED (section 3.3.1.1)."""

    @pytest.mark.parametrize("pair", [("%ATTRIBUTE", "host"), ("Telecom", "%ATTRIBUTE")])
    def test_in_a_constraint(self, channel: Any, pair: tuple[str, str]) -> None:
        """A constraint's event type list cannot hold it: InvalidConstraint."""
        flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        with pytest.raises(F.InvalidConstraint):
            flt.add_constraints([F.ConstraintExp([N.EventType(*pair)], "TRUE")])

    @pytest.mark.parametrize("pair", [("%ATTRIBUTE", "host"), ("Telecom", "%ATTRIBUTE")])
    def test_in_subscription_and_offer_changes(self, channel: Any,
                                               pair: tuple[str, str]) -> None:
        """subscription_change on a proxy supplier and offer_change on a proxy consumer
        raise InvalidEventType."""
        proxy = consumer_proxy(channel)
        with pytest.raises(CosNotifyComm.InvalidEventType):
            proxy.subscription_change([N.EventType(*pair)], [])
        entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        with pytest.raises(CosNotifyComm.InvalidEventType):
            entry.offer_change([N.EventType(*pair)], [])


class TestAttributeTypes:
    """Which attribute names can travel as a type name (section 3.3.1.1's syntax)."""

    @pytest.mark.parametrize("name", ["host", "x.y", "Ünïcode", "a-b"])
    def test_plain_names(self, name: str) -> None:
        """Names without whitespace, control characters, '%' or '*' are reported as is."""
        assert attribute_type(name) == (ATTRIBUTE_DOMAIN, name)

    @pytest.mark.parametrize("name", ["", "two words", "tab\there", "50%", "wild*", "\x00"])
    def test_names_that_cannot_be_types(self, name: str) -> None:
        """Other names are not reported (they would be InvalidEventType, or a pattern)."""
        assert attribute_type(name) is None
