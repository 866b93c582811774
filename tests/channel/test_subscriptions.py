"""Offer and subscription sharing (section 2.6; TAO Updates; Table 3-1 modes)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyComm
import CosNotifyFilter

from cosnotify.eventtypes import ALL, normalize, type_matches
from cosnotify.filter.filter import Filter
from cosnotify.filter.registry import lookup_grammar
from tests.channel.conftest import PushSupplier, StructuredPushConsumer, structured


def types(*pairs: tuple[str, str]) -> list[Any]:
    return [N.EventType(d, t) for d, t in pairs]


def pairs(event_types: list[Any]) -> set[tuple[str, str]]:
    return {(t.domain_name, t.type_name) for t in event_types}


def accumulated(changes: list[tuple[list[Any], list[Any]]]) -> set[tuple[str, str]]:
    """Replay (added, removed) notifications into the set they describe."""
    current: set[tuple[str, str]] = set()
    for added, removed in changes:
        current -= pairs(removed)
        current |= pairs(added)
    return current


def settle(channel: Any) -> None:
    assert channel._service.dispatcher.wait_idle()


class TestNormalisation:
    @pytest.mark.parametrize("domain,type_name", [("", ""), ("*", "*"), ("", "*"), ("*", ""),
                                                  ("*", "%ALL"), ("", "%ALL")])
    def test_every_spelling_of_all_types(self, domain: str, type_name: str) -> None:
        """Section 2.6.6: empty and '*' in any combination mean %ALL."""
        assert normalize(domain, type_name) == ALL

    def test_all_types_of_one_domain(self) -> None:
        """%ALL with a named domain covers that domain only (2.6.6 defines %ALL with "" or "*")."""
        assert normalize("Telecom", "%ALL") == ("Telecom", "*")
        assert not type_matches(normalize("Telecom", "%ALL"), "Finance", "Quote")

    def test_wildcards_match_anywhere(self) -> None:
        """Section 2.3: '*' stands for zero or more characters in any position."""
        assert type_matches(("Tele*", "*Alarm"), "Telecom", "CommunicationsAlarm")
        assert type_matches(("T*m", "Comm*Al*m"), "Telecom", "CommunicationsAlarm")
        assert not type_matches(("Tele*", "*Alarm"), "Transport", "CommunicationsAlarm")
        assert type_matches(("Telecom", "CommunicationsAlarm"), "Telecom", "CommunicationsAlarm")


class TestOffers:
    def test_offers_aggregate_and_reach_consumers(self, channel: Any) -> None:
        """TAO Updates: an offer new to the channel reaches consumers via offer_change;
        a second supplier offering the same type changes nothing."""
        sink = StructuredPushConsumer()
        out, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        out.connect_structured_push_consumer(sink)
        admin = channel._get_default_supplier_admin()
        first, _ = admin.obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
        second, _ = admin.obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
        first.offer_change(types(("Telecom", "Alarm")), [])
        second.offer_change(types(("Telecom", "Alarm"), ("Telecom", "Clear")), [])
        settle(channel)
        assert accumulated(sink.offers) == {("Telecom", "Alarm"), ("Telecom", "Clear")}
        first.offer_change([], types(("Telecom", "Alarm")))
        settle(channel)
        assert accumulated(sink.offers) == {("Telecom", "Alarm"), ("Telecom", "Clear")}
        second.offer_change([], types(("Telecom", "Alarm")))
        settle(channel)
        assert accumulated(sink.offers) == {("Telecom", "Clear")}
        assert pairs(out.obtain_offered_types(CA.ALL_NOW_UPDATES_ON)) == {("Telecom", "Clear")}

    def test_destroyed_supplier_withdraws_its_offers(self, channel: Any) -> None:
        """A proxy consumer's offers leave the aggregate when it is destroyed."""
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        proxy.offer_change(types(("D", "T")), [])
        out, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        assert pairs(out.obtain_offered_types(CA.ALL_NOW_UPDATES_OFF)) == {("D", "T")}
        proxy._destroy()
        assert out.obtain_offered_types(CA.ALL_NOW_UPDATES_OFF) == []

    def test_supplier_admin_offer_change(self, channel: Any) -> None:
        """SupplierAdmin.offer_change contributes to the aggregate (section 2.6.2)."""
        channel._get_default_supplier_admin().offer_change(types(("A", "B")), [])
        out, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.ANY_EVENT)
        assert pairs(out.obtain_offered_types(CA.ALL_NOW_UPDATES_OFF)) == {("A", "B")}

    def test_invalid_event_type_is_refused(self, channel: Any) -> None:
        """A syntactically invalid name raises InvalidEventType naming it (3.3.1.1)."""
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.ANY_EVENT)
        with pytest.raises(CosNotifyComm.InvalidEventType) as info:
            proxy.offer_change(types(("Tele com", "x")), [])
        assert info.value.type.domain_name == "Tele com"


class TestSubscriptions:
    def test_filter_types_reach_suppliers(self, channel: Any) -> None:
        """Event types in consumers' filters are relayed to suppliers by subscription_change."""
        from tests.channel.conftest import CountingFilter

        supplier = PushSupplier()
        entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        entry.connect_structured_push_supplier(supplier)
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(StructuredPushConsumer())
        settle(channel)
        assert accumulated(supplier.subscriptions) == {ALL}
        constrained = CountingFilter()
        constrained.get_all_constraints = lambda: [  # type: ignore[method-assign]
            type("Info", (), {"constraint_expression": type(
                "Exp", (), {"event_types": types(("Telecom", "Alarm"))})()})()]
        filter_id = proxy.add_filter(constrained)
        settle(channel)
        assert accumulated(supplier.subscriptions) == {("Telecom", "Alarm")}
        # The filter later adds a type: it calls back through attach_callback.
        (callback,) = constrained.callbacks.values()
        callback.subscription_change(types(("Telecom", "Clear")), [])
        settle(channel)
        assert accumulated(supplier.subscriptions) == {("Telecom", "Alarm"), ("Telecom", "Clear")}
        proxy.remove_filter(filter_id)
        settle(channel)
        assert accumulated(supplier.subscriptions) == {ALL}
        assert constrained.callbacks == {}

    def test_direct_subscription_change_restricts_delivery(self, channel: Any) -> None:
        """A consumer may subscribe by type without a filter (section 2.6.5)."""
        sink = StructuredPushConsumer()
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(sink)
        proxy.subscription_change(types(("Telecom", "*Alarm")), [])
        entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        entry.connect_structured_push_supplier(None)
        for type_name in ("CommunicationsAlarm", "Heartbeat", "EquipmentAlarm"):
            entry.push_structured_event(structured(type_name=type_name))
        settle(channel)
        assert [e.header.fixed_header.event_type.type_name for e in sink.received] == [
            "CommunicationsAlarm", "EquipmentAlarm"]
        assert pairs(entry.obtain_subscription_types(CA.ALL_NOW_UPDATES_OFF)) == {
            ("Telecom", "*Alarm")}


class TestObtainModes:
    @pytest.mark.parametrize("mode,returns,updates", [
        ("ALL_NOW_UPDATES_OFF", True, False),
        ("ALL_NOW_UPDATES_ON", True, True),
        ("NONE_NOW_UPDATES_OFF", False, False),
        ("NONE_NOW_UPDATES_ON", False, True),
    ])
    def test_table_3_1(self, channel: Any, mode: str, returns: bool, updates: bool) -> None:
        """Each ObtainInfoMode returns (or not) the list and turns updates on (or off)."""
        consumer_side = StructuredPushConsumer()
        out, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        out.connect_structured_push_consumer(consumer_side)
        channel._get_default_supplier_admin().offer_change(types(("A", "A")), [])
        settle(channel)
        before = len(consumer_side.offers)
        result = out.obtain_offered_types(getattr(CA, mode))
        assert (pairs(result) == {("A", "A")}) is returns
        assert (result == []) is not returns
        channel._get_default_supplier_admin().offer_change(types(("B", "B")), [])
        settle(channel)
        assert (len(consumer_side.offers) > before) is updates

    @pytest.mark.parametrize("subscribed", [True, False], ids=["removal", "addition"])
    def test_all_now_updates_on_corrects_a_change_in_flight(self, factory: Any,
                                                            subscribed: bool) -> None:
        """Table 3-1, ALL_NOW_UPDATES_ON: the list and turning updates on "should be
        atomic". A change already being sent reaches the supplier after the list; what
        its relay sends next corrects it (review 141: the pending undo was dropped, and
        the supplier believed a subscribed type gone, or an unsubscribed one there)."""
        channel, _ = factory.create_channel([], [])
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(StructuredPushConsumer())
        x = types(("D", "X"))
        if subscribed:
            proxy.subscription_change(x, [])
        entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        supplier = _BlockingSupplier()
        entry.connect_structured_push_supplier(supplier)
        # X removed (or added): its send blocks in the supplier; then undone (pending).
        first, undo = (([], x), (x, [])) if subscribed else ((x, []), ([], x))
        proxy.subscription_change(*first)
        assert supplier.entered.wait(10)
        proxy.subscription_change(*undo)
        listed = pairs(entry.obtain_subscription_types(CA.ALL_NOW_UPDATES_ON))
        assert (("D", "X") in listed) is subscribed
        supplier.release.set()
        settle(channel)
        # The supplier's view: the list, then each change that reached it after it.
        view = accumulated([(types(*listed), [])] + supplier.calls)
        assert ("D", "X") in pairs(supplier.calls[0][0]) | pairs(supplier.calls[0][1])
        assert view == set(channel._hub.current("subscriptions")) == listed


class _BlockingSupplier(PushSupplier):
    """Its first subscription_change blocks until ``release``: a send in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[list[Any], list[Any]]] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def subscription_change(self, added: list[Any], removed: list[Any]) -> None:
        self.calls.append((list(added), list(removed)))
        if len(self.calls) == 1:
            self.entered.set()
            assert self.release.wait(10)


# -- review 116 ---------------------------------------------------------------------------------
def _wired(channel: Any) -> tuple[Any, Any, Any, Any]:
    """(proxy consumer, its supplier, proxy supplier, its consumer), all connected."""
    supplier = PushSupplier()
    entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    entry.connect_structured_push_supplier(supplier)
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
        CA.STRUCTURED_EVENT)
    sink = StructuredPushConsumer()
    proxy.connect_structured_push_consumer(sink)
    return entry, supplier, proxy, sink


def _subscribed(entry: Any) -> set[tuple[str, str]]:
    """The aggregate; the supplier's subscription_change updates stay on (Table 3-1)."""
    return pairs(entry.obtain_subscription_types(CA.ALL_NOW_UPDATES_ON))


def _exp(text: str, *event_types: tuple[str, str]) -> Any:
    return CosNotifyFilter.ConstraintExp(types(*event_types), text)


def _received(sink: Any) -> list[tuple[str, str]]:
    return [(e.header.fixed_header.event_type.domain_name,
             e.header.fixed_header.event_type.type_name) for e in sink.received]


class RacingFilter(Filter):
    """A filter of ours that runs ``hook`` on a second thread, to its end, right after
    one of its operations: a forced interleaving, no sleeps."""

    after_read: Any = None
    after_attach: Any = None

    def get_all_constraints(self) -> list[Any]:
        result = super().get_all_constraints()
        _run(self, "after_read")
        return result

    def attach_callback(self, callback: Any) -> int:
        result = super().attach_callback(callback)
        _run(self, "after_attach")
        return result


def _run(flt: Any, name: str) -> None:
    hook = getattr(flt, name)
    setattr(flt, name, None)
    if hook is not None:
        thread = threading.Thread(target=hook)
        thread.start()
        thread.join()


def _racing() -> RacingFilter:
    return RacingFilter("EXTENDED_TCL", lookup_grammar("EXTENDED_TCL"))


class PerConstraintFilter:
    """A user filter (section 3.2.1: "As long as such user-defined filter objects support
    the Filter interface, they can be attached ... in the same fashion") that takes the
    first option of section 2.6.5: each constraint's types as added when it is added,
    as removed when it is removed."""

    def __init__(self) -> None:
        self.constraints: dict[int, Any] = {}
        self.callbacks: dict[int, Any] = {}
        self.next_id = 1

    def _get_constraint_grammar(self) -> str:
        return "USER"

    def add_constraints(self, expressions: list[Any]) -> list[Any]:
        out = []
        for expression in expressions:
            cid, self.next_id = self.next_id, self.next_id + 1
            self.constraints[cid] = expression
            for callback in list(self.callbacks.values()):
                callback.subscription_change(list(expression.event_types), [])
            out.append(CosNotifyFilter.ConstraintInfo(expression, cid))
        return out

    def remove(self, cid: int) -> None:
        expression = self.constraints.pop(cid)
        for callback in list(self.callbacks.values()):
            callback.subscription_change([], list(expression.event_types))

    def get_all_constraints(self) -> list[Any]:
        return [CosNotifyFilter.ConstraintInfo(e, c) for c, e in self.constraints.items()]

    def match_structured(self, event: Any) -> bool:
        return True

    def attach_callback(self, callback: Any) -> int:
        cid, self.next_id = self.next_id, self.next_id + 1
        self.callbacks[cid] = callback
        return cid

    def detach_callback(self, cid: int) -> None:
        del self.callbacks[cid]


class TestReview116:
    """Subscription sharing with filters (sections 2.3, 2.6, 3.3.2.1)."""

    def test_filters_that_require_no_type_subscribe_to_none(self, channel: Any) -> None:
        """F01: section 2.6.5, "Filter objects must call the references that are currently
        attached when the set of event types that their constraints require changes": a
        proxy whose filters require no type (no constraints left, or the filter destroyed)
        receives nothing and contributes nothing; %ALL only without filters (2.3)."""
        entry, supplier, proxy, sink = _wired(channel)
        ff = channel._get_default_filter_factory()
        f = ff.create_filter("EXTENDED_TCL")
        f.add_constraints([_exp("TRUE", ("Telecom", "Alarm"))])
        filter_id = proxy.add_filter(f)
        settle(channel)
        assert _subscribed(entry) == accumulated(supplier.subscriptions) == {("Telecom", "Alarm")}
        f.remove_all_constraints()
        entry.push_structured_event(structured("Telecom", "Alarm"))
        settle(channel)
        assert sink.received == []
        assert _subscribed(entry) == accumulated(supplier.subscriptions) == set()
        proxy.remove_filter(filter_id)
        settle(channel)
        assert _subscribed(entry) == {ALL}
        empty = ff.create_filter("EXTENDED_TCL")  # never had a constraint
        proxy.add_filter(empty)
        settle(channel)
        assert _subscribed(entry) == set()
        doomed = ff.create_filter("EXTENDED_TCL")
        doomed.add_constraints([_exp("TRUE", ("Telecom", "Clear"))])
        proxy.add_filter(doomed)
        settle(channel)
        assert _subscribed(entry) == {("Telecom", "Clear")}
        doomed.destroy()
        settle(channel)
        assert _subscribed(entry) == accumulated(supplier.subscriptions) == set()

    def test_types_reported_per_constraint_are_counted(self, channel: Any) -> None:
        """F02: section 2.6.5, a filter "may choose whether to convey the event types for a
        constraint as the added parameter ... when the constraint is added and then as the
        removed parameter ... when that constraint is removed": a type two constraints
        require stays subscribed until both are gone."""
        entry, _, proxy, _ = _wired(channel)
        f = PerConstraintFilter()
        f.add_constraints([_exp("$x == 0", ("Telecom", "Alarm"))])  # before attaching
        proxy.add_filter(f)
        (first,) = f.add_constraints([_exp("$x == 1", ("Telecom", "Alarm"))])
        (second,) = f.add_constraints([_exp("$x == 2", ("Telecom", "Alarm"))])
        f.remove(first.constraint_id)
        settle(channel)
        assert _subscribed(entry) == {("Telecom", "Alarm")}
        f.remove(1)
        settle(channel)
        assert _subscribed(entry) == {("Telecom", "Alarm")}
        f.remove(second.constraint_id)
        settle(channel)
        assert _subscribed(entry) == set()

    def test_our_filters_are_followed_as_a_set(self, channel: Any) -> None:
        """F02: this service's filters report the aggregate (decision 41): a type two of
        its constraints name, read when the filter is added, goes once neither does."""
        entry, _, proxy, _ = _wired(channel)
        f = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        infos = f.add_constraints([_exp("$x == 1", ("A", "A")), _exp("$x == 2", ("A", "A"))])
        proxy.add_filter(f)
        settle(channel)
        assert _subscribed(entry) == {("A", "A")}
        f.modify_constraints([i.constraint_id for i in infos], [])
        settle(channel)
        assert _subscribed(entry) == set()

    def test_a_filter_takes_over_from_subscription_change(self, channel: Any) -> None:
        """F03: section 2.6.5, "once it adds a filter to the proxy, it must then interact
        with the filter only, and allow the filter to invoke subscription_change": the
        filter decides what the consumer receives and what the proxy contributes; with
        its filters removed, the proxy's subscription_change list applies again."""
        entry, _, proxy, sink = _wired(channel)
        proxy.subscription_change(types(("A", "A")), [])
        f = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        f.add_constraints([_exp("TRUE", ("B", "B"))])
        filter_id = proxy.add_filter(f)
        entry.push_structured_event(structured("A", "A"))
        entry.push_structured_event(structured("B", "B"))
        settle(channel)
        assert _received(sink) == [("B", "B")]
        assert _subscribed(entry) == {("B", "B")}
        proxy.remove_filter(filter_id)
        entry.push_structured_event(structured("A", "A"))
        entry.push_structured_event(structured("B", "B"))
        settle(channel)
        assert _received(sink) == [("B", "B"), ("A", "A")]
        assert _subscribed(entry) == {("A", "A")}

    def test_a_constraint_added_while_the_filter_is_added_is_subscribed(
            self, channel: Any) -> None:
        """F04: a constraint added between the channel's attach_callback and its
        get_all_constraints is in the aggregate (section 2.6.5: "An event channel will
        create an aggregate list of all the event types required by its consumers")."""
        entry, _, proxy, _ = _wired(channel)
        f = _racing()
        f.add_constraints([_exp("TRUE", ("A", "A"))])
        f.after_attach = lambda: f.add_constraints([_exp("TRUE", ("B", "B"))])
        f.after_read = lambda: f.add_constraints([_exp("TRUE", ("C", "C"))])
        proxy.add_filter(f)
        settle(channel)
        assert _subscribed(entry) == {("A", "A"), ("B", "B"), ("C", "C")}

    @pytest.mark.parametrize("hook", ["after_attach", "after_read"])
    def test_a_filter_removed_while_it_is_added_keeps_no_callback(
            self, channel: Any, hook: str) -> None:
        """F05: remove_filter on another thread while add_filter attaches the callback or
        reads the constraints: the filter is left with no callback of the proxy (section
        2.6.5: attach_callback and detach_callback "are used by Proxy Suppliers and
        ConsumerAdmins to provide and remove object references")."""
        entry, _, proxy, _ = _wired(channel)
        f = _racing()
        f.add_constraints([_exp("TRUE", ("A", "A"))])
        setattr(f, hook, lambda: proxy.remove_filter(proxy.get_all_filters()[-1]))
        proxy.add_filter(f)
        settle(channel)
        assert proxy.get_all_filters() == []
        assert f.get_callbacks() == []
        assert _subscribed(entry) == {ALL}

    def test_concurrent_updates_of_a_contribution_are_not_lost(self, channel: Any) -> None:
        """F06: a filter change on another thread while the proxy works out its
        contribution is in the aggregate afterwards (section 2.6.3: "Event Channels
        will aggregate the event types that their consumers require")."""
        entry, _, proxy, _ = _wired(channel)
        f = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        f.add_constraints([_exp("TRUE", ("C", "C"))])
        proxy.add_filter(f)
        computed = proxy._wanted_types
        racing = [lambda: f.add_constraints([_exp("TRUE", ("B", "B"))])]

        def wanted() -> set[tuple[str, str]]:
            result = computed()
            if racing:
                thread = threading.Thread(target=racing.pop())
                thread.start()
                thread.join()
            return result

        proxy._wanted_types = wanted
        proxy.subscription_change(types(("C", "C")), [])
        settle(channel)
        assert _subscribed(entry) == {("B", "B"), ("C", "C")}

    def test_removing_a_type_never_named_removes_nothing(self, channel: Any) -> None:
        """F07: section 3.3.2.1, the second parameter names "those event types that the
        associated consumer wants to remove from its subscription list"; a proxy's list
        starts as every type (2.3: a proxy without filters "will pass through all events
        it receives"), so removing another type leaves it; removing %ALL empties it."""
        entry, _, proxy, sink = _wired(channel)
        proxy.subscription_change([], types(("X", "X")))
        entry.push_structured_event(structured("Y", "Y"))
        settle(channel)
        assert _received(sink) == [("Y", "Y")]
        assert _subscribed(entry) == {ALL}
        proxy.subscription_change(types(("Y", "Y")), [])
        proxy.subscription_change([], types(("X", "X")))
        entry.push_structured_event(structured("X", "X"))
        entry.push_structured_event(structured("Y", "Y"))
        settle(channel)
        assert _received(sink) == [("Y", "Y"), ("Y", "Y")]
        assert _subscribed(entry) == {("Y", "Y")}
        other, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        quiet = StructuredPushConsumer()
        other.connect_structured_push_consumer(quiet)
        other.subscription_change([], types(("*", "%ALL")))
        entry.push_structured_event(structured("Y", "Y"))
        settle(channel)
        assert quiet.received == []
        assert _subscribed(entry) == {("Y", "Y")}

    @pytest.mark.parametrize("target", ["proxy", "admin"])
    def test_add_filter_on_a_destroyed_object(self, channel: Any, target: str) -> None:
        """F08: a destroyed proxy or admin raises OBJECT_NOT_EXIST, as the remote call
        would, and attaches no callback to the filter."""
        admin, _ = channel.new_for_consumers(CA.AND_OP)
        proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(StructuredPushConsumer())
        if target == "proxy":
            proxy.disconnect_structured_push_supplier()
            owner = proxy
        else:
            admin.destroy()
            owner = admin
        f = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            owner.add_filter(f)
        assert f.get_callbacks() == []

    @pytest.mark.parametrize(("operator", "tao", "expected"), [
        ("AND_OP", False, {("Telecom", "Alarm")}),
        ("OR_OP", False, {("Telecom", "Alarm")}),
        ("OR_OP", True, {ALL, ("Telecom", "Alarm")}),
    ])
    def test_admin_filters_bound_a_proxy_without_filters(
            self, channel: Any, operator: str, tao: bool,
            expected: set[tuple[str, str]]) -> None:
        """F11: section 2.3, "The set of filter objects associated with an Admin object
        thus applies to each Proxy object associated with that Admin": a proxy without
        filters under an admin whose filters pass only Telecom/Alarm receives only that,
        and contributes nothing beyond the admin's types; where an empty group passes
        everything (FilterGroupSemantics TAO, OR_OP) it receives, and wants, every type."""
        if tao:
            channel.set_admin([N.Property("FilterGroupSemantics",
                                          CORBA.Any(CORBA.TC_short, 1))])
        entry, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        entry.connect_structured_push_supplier(None)
        admin, _ = channel.new_for_consumers(getattr(CA, operator))
        proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        sink = StructuredPushConsumer()
        proxy.connect_structured_push_consumer(sink)
        assert _subscribed(entry) == {ALL}
        f = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        f.add_constraints([_exp("TRUE", ("Telecom", "Alarm"))])
        filter_id = admin.add_filter(f)
        entry.push_structured_event(structured("Other", "Type"))
        settle(channel)
        assert (sink.received == []) is not tao
        assert _subscribed(entry) == expected
        admin.remove_filter(filter_id)
        settle(channel)
        assert _subscribed(entry) == {ALL}
