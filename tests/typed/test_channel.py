"""A typed channel in process (cosnotify/typed/channel.py, proxies.py).

Section 2.7's Coffee example: a typed supplier calls ``drinking_coffee`` on
the object its TypedProxyPushConsumer gives; structured consumers of the
same channel see the %TYPED event of Table 2-2; a typed pull consumer calls
``try_drinking_coffee``/``drinking_coffee`` on the object its
TypedProxyPullSupplier gives. What is no call of the interface reaches no
typed client and is counted.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from omniORB import CORBA

import CosEventChannelAdmin
import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter
import CosTypedEventChannelAdmin as TECA

import cosnotify
from cosnotify.typed.channel import TypedEventChannel, TypedEventChannelFactory
from cosnotify.typed.interfaces import IDLError
from tests.typed.conftest import DATA
from tests.typed.inprocess import (
    PullCoffee,
    Recorder,
    pulled_names,
    settle,
    structured_puller,
    typed_consumer,
    typed_supplier,
)


@pytest.fixture(scope="module")
def factory() -> Iterator[TypedEventChannelFactory]:
    with TypedEventChannelFactory(idl=[DATA / "Coffee.idl"]) as made:
        yield made


class TestTypedPush:
    def test_a_call_reaches_structured_consumers_as_typed(self, channel: TypedEventChannel
                                                          ) -> None:
        puller = structured_puller(channel)
        _, coffee = typed_consumer(channel)
        coffee.drinking_coffee("Jane", 5)
        settle(channel)
        event, has_event = puller.try_pull_structured_event()
        assert has_event
        assert event.header.fixed_header.event_type.type_name == "%TYPED"
        assert [(p.name, p.value.value()) for p in event.filterable_data] == [
            ("operation", "::CoffeeTest::Coffee::drinking_coffee"), ("name", "Jane"),
            ("minutes", 5)]

    def test_the_proxy_filters_typed_calls(self, channel: TypedEventChannel,
                                           factory: TypedEventChannelFactory) -> None:
        puller = structured_puller(channel)
        proxy, coffee = typed_consumer(channel)
        flt = factory._get_filter_factory().create_filter("EXTENDED_TCL")
        flt.add_constraints([CosNotifyFilter.ConstraintExp([], "$minutes > 3")])
        proxy.add_filter(flt)
        coffee.drinking_coffee("Jo", 2)
        coffee.drinking_coffee("Al", 9)
        settle(channel)
        assert pulled_names(puller) == ["Al"]

    def test_calls_before_connecting_are_refused(self, channel: TypedEventChannel) -> None:
        proxy, _ = channel._get_default_supplier_admin().obtain_typed_notification_push_consumer(
            "Coffee")
        with pytest.raises(CORBA.BAD_INV_ORDER):  # the user's operation declares nothing
            proxy.get_typed_consumer().cancel_coffee("Jane")


class TestTypedPull:
    def test_each_operation_pulls_its_own_calls_in_order(self, channel: TypedEventChannel
                                                         ) -> None:
        _, pull = typed_supplier(channel)
        _, coffee = typed_consumer(channel)
        coffee.drinking_coffee("Jane", 5)
        coffee.cancel_coffee("Jo")
        coffee.drinking_coffee("Al", 7)
        settle(channel)
        assert pull.try_cancel_coffee() == (True, "Jo")
        assert pull.drinking_coffee() == ("Jane", 5)  # kept while cancel_coffee was read
        assert pull.try_drinking_coffee() == (True, "Al", 7)
        assert pull.try_drinking_coffee() == (False, "", 0)
        assert pull.try_cancel_coffee() == (False, "")

    def test_structured_and_any_suppliers_reach_typed_consumers(
            self, channel: TypedEventChannel) -> None:
        proxy, pull = typed_supplier(channel)
        admin = channel._get_default_supplier_admin()
        structured, _ = admin.obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
        structured.connect_structured_push_supplier(None)
        anys, _ = admin.obtain_notification_push_consumer(CA.ANY_EVENT)
        anys.connect_any_push_supplier(None)

        def props(name: str) -> list[Any]:
            return [N.Property("operation",
                               CORBA.Any(CORBA.TC_string, "CoffeeTest::Coffee::cancel_coffee")),
                    N.Property("name", CORBA.Any(CORBA.TC_string, name))]

        def event(filterable: list[Any]) -> Any:
            return N.StructuredEvent(
                N.EventHeader(N.FixedEventHeader(N.EventType("", "%TYPED"), ""), []),
                filterable, CORBA.Any(CORBA.TC_null, None))

        structured.push_structured_event(event(props("from structured")))
        structured.push_structured_event(event(props("x")[:1]))  # no parameter: no call
        anys.push(CORBA.Any(N._tc_PropertySeq, props("from any")))
        anys.push(CORBA.Any(CORBA.TC_long, 7))  # not a name-value sequence: no call
        settle(channel)
        assert pull.try_cancel_coffee() == (True, "from structured")
        assert pull.try_cancel_coffee() == (True, "from any")
        assert pull.try_cancel_coffee() == (False, "")
        assert proxy.not_typed == 2

    def test_the_untyped_pull_gives_everything_as_anys(self, channel: TypedEventChannel
                                                      ) -> None:
        """Table 2-2, Typed Event to Any: "A new Any is created containing a data
        structure that is a sequence of name-value pairs", ``operation`` first."""
        proxy, _ = typed_supplier(channel)
        _, coffee = typed_consumer(channel)
        coffee.cancel_coffee("Jo")
        settle(channel)
        value, has_event = proxy.try_pull()
        assert has_event and value.typecode().equivalent(N._tc_PropertySeq)
        assert [(p.name, p.value.value()) for p in value.value()] == [
            ("operation", "::CoffeeTest::Coffee::cancel_coffee"), ("name", "Jo")]

    def test_any_consumers_get_the_name_value_sequence(self, channel: TypedEventChannel
                                                      ) -> None:
        """Table 2-2 for every Any consumer: a ProxyPullSupplier (and Event Service
        consumers) of the same channel get the call as a PropertySeq."""
        puller, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.ANY_EVENT)
        puller.connect_any_pull_consumer(None)
        events = channel.for_consumers().obtain_pull_supplier()
        events.connect_pull_consumer(None)
        _, coffee = typed_consumer(channel)
        coffee.drinking_coffee("Jane", 5)
        settle(channel)
        for proxy in (puller, events):
            value, has_event = proxy.try_pull()
            assert has_event and value.typecode().equivalent(N._tc_PropertySeq)
            assert [p.value.value() for p in value.value()] == [
                "::CoffeeTest::Coffee::drinking_coffee", "Jane", 5]


class TestFactory:
    def test_idl_that_breaks_the_rules_stops_the_factory(self, tmp_path: Any) -> None:
        bad = tmp_path / "bad.idl"
        bad.write_text("module FactoryBreach { interface I { long op(in long n); }; };\n")
        with pytest.raises(IDLError, match="returns void"):
            cosnotify.TypedEventChannelFactory(idl=[bad])

    def test_typed_channels_are_notification_channels(
            self, factory: TypedEventChannelFactory) -> None:
        channel, channel_id = factory.create_typed_channel([], [])
        try:
            assert factory.get_typed_event_channel(channel_id) is channel
            assert channel_id in factory.get_all_typed_channels()
            admin, _ = channel.new_for_typed_notification_consumers(CA.AND_OP)
            proxy, _ = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
            assert proxy is not None  # the untyped proxies are there too
        finally:
            channel.destroy()
        with pytest.raises(CA.ChannelNotFound):
            factory.get_typed_event_channel(channel_id)


class TestKeys:
    def test_unknown_interfaces(self, channel: TypedEventChannel) -> None:
        suppliers = channel._get_default_supplier_admin()
        consumers = channel._get_default_consumer_admin()
        with pytest.raises(TECA.InterfaceNotSupported):
            suppliers.obtain_typed_notification_push_consumer("Tea")
        with pytest.raises(TECA.InterfaceNotSupported):
            consumers.obtain_typed_notification_pull_supplier("IDL:CoffeeTest/Tea:1.0")
        with pytest.raises(TECA.NoSuchImplementation):
            consumers.obtain_typed_notification_push_supplier("Tea")
        with pytest.raises(TECA.NoSuchImplementation):
            suppliers.obtain_typed_notification_pull_consumer("Tea")
        assert suppliers._get_push_consumers() == [] and consumers._get_pull_suppliers() == []

    def test_event_service_style_admins_and_proxies(self, channel: TypedEventChannel) -> None:
        puller = structured_puller(channel)
        proxy = channel.for_suppliers().obtain_typed_push_consumer("CoffeeTest::Coffee")
        proxy.connect_typed_push_supplier(None)
        proxy.get_typed_consumer().cancel_coffee("Jo")
        settle(channel)
        assert puller.try_pull_structured_event()[1]
        assert channel.for_consumers().obtain_typed_pull_supplier("Coffee") is not None


class TestUsesInterface:
    """The two proxies whose key is ``uses_interface``: the channel calls the client."""

    def test_a_typed_push_consumer_gets_the_calls(self, channel: TypedEventChannel) -> None:
        proxy, _ = channel._get_default_consumer_admin().obtain_typed_notification_push_supplier(
            "Coffee")
        consumer = Recorder()
        proxy.connect_typed_push_consumer(consumer)
        _, coffee = typed_consumer(channel)
        structured, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        structured.connect_structured_push_supplier(None)
        structured.push_structured_event(N.StructuredEvent(  # no call of Coffee
            N.EventHeader(N.FixedEventHeader(N.EventType("Telecom", "Alarm"), ""), []), [],
            CORBA.Any(CORBA.TC_null, None)))
        coffee.drinking_coffee("Jane", 5)
        coffee.cancel_coffee("Jo")
        assert consumer.wait_for(2)
        assert consumer.calls == [("drinking_coffee", ("Jane", 5)), ("cancel_coffee", ("Jo",))]
        assert proxy.not_typed == 1

    def test_a_consumer_that_is_no_coffee_is_refused(self, channel: TypedEventChannel) -> None:
        proxy, _ = channel._get_default_consumer_admin().obtain_typed_notification_push_supplier(
            "Coffee")
        with pytest.raises(CosEventChannelAdmin.TypeError):
            proxy.connect_typed_push_consumer(Recorder(coffee=object()))
        assert not proxy._connected  # nothing half-connected
        proxy.connect_typed_push_consumer(Recorder())

    def test_the_channel_pulls_a_typed_pull_supplier(self, channel: TypedEventChannel) -> None:
        seen = Recorder()
        pusher, _ = channel._get_default_consumer_admin().obtain_typed_notification_push_supplier(
            "Coffee")
        pusher.connect_typed_push_consumer(seen)
        proxy, _ = channel._get_default_supplier_admin().obtain_typed_notification_pull_consumer(
            "Coffee")
        proxy.connect_typed_pull_supplier(PullCoffee([("Jane", 5), ("Al", 7)]))
        assert seen.wait_for(2)
        assert seen.calls == [("drinking_coffee", ("Jane", 5)), ("drinking_coffee", ("Al", 7))]

    def test_a_supplier_that_is_no_pull_coffee_is_refused(self, channel: TypedEventChannel
                                                          ) -> None:
        proxy, _ = channel._get_default_supplier_admin().obtain_typed_notification_pull_consumer(
            "Coffee")
        supplier = PullCoffee([])
        supplier.get_typed_supplier = lambda: object()  # type: ignore[method-assign]
        with pytest.raises(CosEventChannelAdmin.TypeError):
            proxy.connect_typed_pull_supplier(supplier)
        assert not proxy._connected


def test_try_with_nothing_gives_zero_values_that_marshal(tmp_path: Any, omniorb: Any) -> None:
    """try_op's FALSE comes with values of the out types: over IIOP they must marshal
    (an enum, a struct, a sequence, an array), so they are the types' zeros."""
    idl = tmp_path / "kinds.idl"
    idl.write_text("""module ZeroKinds {
        enum Level { LOW, HIGH };
        struct Where { long x; string s; Level grade; };
        typedef sequence<long> Numbers;
        typedef sequence<octet> Bytes;
        typedef short Pair[2];
        interface Probe { void seen(in Level l, in Where w, in Numbers n, in Bytes b,
                                    in Pair p, in any a, in double d); };
        interface PullProbe { void seen(out Level l, out Where w, out Numbers n, out Bytes b,
                                        out Pair p, out any a, out double d);
                              boolean try_seen(out Level l, out Where w, out Numbers n,
                                               out Bytes b, out Pair p, out any a,
                                               out double d); };
    };""")
    level, where, numbers, data, pair, value, number = tried_with_nothing(idl, "ZeroKinds::Probe")
    assert str(level) == "LOW" and (where.x, where.s, str(where.grade)) == (0, "", "LOW")
    assert (numbers, data, pair, number) == ([], b"", [0, 0], 0.0)
    assert value.typecode().kind() == CORBA.tk_null


def tried_with_nothing(idl: Any, key: str) -> list[Any]:
    """The values ``try_seen`` gives beside FALSE, on a new typed pull proxy for ``key``;
    each is checked to marshal as its out parameter (cdrMarshal raises if not)."""
    import omniORB

    with TypedEventChannelFactory(idl=[idl]) as made:
        channel, _ = made.create_typed_channel([], [])
        proxy, _ = channel._get_default_consumer_admin().obtain_typed_notification_pull_supplier(
            key)
        proxy.connect_typed_pull_consumer(None)
        result = proxy.get_typed_supplier().try_seen()
        assert result[0] is False
        probe = made.interfaces.lookup(key)
        for parameter, zero in zip(probe.operations["seen"].parameters, result[1:], strict=True):
            omniORB.cdrMarshal(parameter.typecode, zero)
        return list(result[1:])


class TestReviewFindings:
    """One test per defect the review of the typed layer found."""

    def test_a_blocked_pull_wakes_for_a_call_another_pull_read(
            self, channel: TypedEventChannel) -> None:
        proxy, pull = typed_supplier(channel)
        _, coffee = typed_consumer(channel)
        got: dict[str, Any] = {}
        pulls = [threading.Thread(target=lambda: got.update(drinking=pull.drinking_coffee())),
                 threading.Thread(target=lambda: got.update(cancel=pull.cancel_coffee()))]
        for thread in pulls:
            thread.start()
        with proxy._lock:  # both pulls are waiting on the queue
            assert proxy._cond.wait_for(lambda: proxy._pulling == 2, 30)
        coffee.cancel_coffee("Jo")
        coffee.drinking_coffee("Jane", 5)
        for thread in pulls:
            thread.join(30)
        assert got == {"cancel": "Jo", "drinking": ("Jane", 5)}

    def test_nothing_is_pulled_after_disconnecting(self, channel: TypedEventChannel) -> None:
        proxy, pull = typed_supplier(channel)
        _, coffee = typed_consumer(channel)
        coffee.cancel_coffee("Jo")
        coffee.drinking_coffee("Jane", 5)
        settle(channel)
        assert pull.try_drinking_coffee() == (True, "Jane", 5)  # keeps Jo's cancel
        proxy.disconnect_pull_supplier()
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):  # the proxy went with its connection
            pull.try_cancel_coffee()

    def test_typed_proxies_are_listed_by_their_admins(self, channel: TypedEventChannel) -> None:
        suppliers = channel._get_default_supplier_admin()
        consumers = channel._get_default_consumer_admin()
        _, push_id = suppliers.obtain_typed_notification_push_consumer("Coffee")
        _, pull_id = consumers.obtain_typed_notification_pull_supplier("Coffee")
        assert push_id in suppliers._get_push_consumers()
        assert pull_id in consumers._get_pull_suppliers()


def test_an_operation_without_parameters(tmp_path: Any) -> None:
    """try_op of an operation with no parameters is a bare boolean (omniORBpy's
    mapping: a tuple would read as TRUE over IIOP)."""
    idl = tmp_path / "bell.idl"
    idl.write_text("module BellTest { interface Bell { void ring(); };"
                   " interface PullBell { void ring(); boolean try_ring(); }; };")
    with TypedEventChannelFactory(idl=[idl]) as made:
        channel, _ = made.create_typed_channel([], [])
        proxy, _ = channel._get_default_consumer_admin().obtain_typed_notification_pull_supplier(
            "Bell")
        proxy.connect_typed_pull_consumer(None)
        pull = proxy.get_typed_supplier()
        assert pull.try_ring() is False
        pusher, _ = channel._get_default_supplier_admin().obtain_typed_notification_push_consumer(
            "Bell")
        pusher.connect_typed_push_supplier(None)
        pusher.get_typed_consumer().ring()
        assert made.service.dispatcher.wait_idle()
        assert pull.try_ring() is True


class TestSecondReview:
    """One test per defect the review of the server side found."""

    def test_kept_calls_are_counted_down_when_pulled(self, channel: TypedEventChannel,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
        from cosnotify.typed import proxies

        monkeypatch.setattr(proxies, "WAITING", 3)
        proxy, pull = typed_supplier(channel)
        _, coffee = typed_consumer(channel)
        for n in range(10):  # each round keeps one drinking call for a moment
            coffee.drinking_coffee("Jane", n)
            coffee.cancel_coffee(f"Jo{n}")
            settle(channel)
            assert pull.try_cancel_coffee() == (True, f"Jo{n}")
            assert pull.try_drinking_coffee() == (True, "Jane", n)
        assert proxy.dropped_calls == 0

    def test_typed_objects_share_a_class_and_go_with_their_proxy(
            self, channel: TypedEventChannel) -> None:
        first, _ = typed_supplier(channel)
        second, _ = typed_supplier(channel)
        assert type(first.get_typed_supplier()) is type(second.get_typed_supplier())
        typed = first.get_typed_supplier()
        assert not typed._destroyed
        first.disconnect_pull_supplier()
        assert typed._destroyed

    def test_a_typed_channel_belongs_to_the_typed_factory(
            self, channel: TypedEventChannel, factory: TypedEventChannelFactory) -> None:
        assert channel._get_MyFactory() is factory.typed
        channel_id = channel.channel_id
        assert channel_id not in factory.get_all_channels()  # untyped clients' list
        with pytest.raises(CA.ChannelNotFound):
            factory.get_event_channel(channel_id)
        assert factory.get_typed_event_channel(channel_id) is channel

    def test_a_typed_pull_leaves_no_operation_behind(self, channel: TypedEventChannel) -> None:
        proxy, pull = typed_supplier(channel)
        assert pull.try_drinking_coffee()[0] is False
        assert proxy._pulling_for.operation is None
        assert not proxy._interrupted()


def test_operations_named_like_python_keywords(tmp_path: Any) -> None:
    idl = tmp_path / "kw.idl"
    idl.write_text("module KwTest { interface Kw { void pass(in long n); };"
                   " interface PullKw { void pass(out long n); boolean try_pass(out long n); };"
                   " };")
    with TypedEventChannelFactory(idl=[idl]) as made:
        channel, _ = made.create_typed_channel([], [])
        puller, _ = channel._get_default_consumer_admin().obtain_typed_notification_pull_supplier(
            "Kw")
        puller.connect_typed_pull_consumer(None)
        proxy, _ = channel._get_default_supplier_admin().obtain_typed_notification_push_consumer(
            "Kw")
        proxy.connect_typed_push_supplier(None)
        proxy.get_typed_consumer()._pass(7)
        assert made.service.dispatcher.wait_idle()
        assert puller.get_typed_supplier().try_pass() == (True, 7)


def test_a_bad_call_leaves_the_proxy_connected(channel: TypedEventChannel) -> None:
    puller = structured_puller(channel)
    proxy, coffee = typed_consumer(channel)
    with pytest.raises(CORBA.BAD_PARAM):
        coffee.drinking_coffee("Jane", "five")
    with pytest.raises(CORBA.BAD_PARAM):
        coffee.drinking_coffee("Jane")
    assert proxy._connected
    coffee.drinking_coffee("Jane", 5)
    settle(channel)
    assert pulled_names(puller) == ["Jane"]  # nothing of the bad calls entered


def test_zero_values_of_unions_fixeds_typecodes_and_valuetypes(tmp_path: Any,
                                                              omniorb: Any) -> None:
    """The kinds the first zero values left out: a union (its first case), a fixed
    (0 of its digits and scale), a valuetype (null), a TypeCode (tk_null); each must
    marshal, as try_op's FALSE reply over IIOP does. (A TypeCode parameter needs
    ``orb.idl``, which the wheel does not ship: its zero is checked on its own.)"""
    idl = tmp_path / "more.idl"
    idl.write_text("""module ZeroMore {
        enum Shape { ROUND, SQUARE };
        union Size switch (Shape) { case ROUND: double radius; case SQUARE: long side; };
        typedef fixed<6,2> Price;
        valuetype Note { public string text; };
        interface Probe { void seen(in Size s, in Price p, in Note n); };
        interface PullProbe { void seen(out Size s, out Price p, out Note n);
                              boolean try_seen(out Size s, out Price p, out Note n); };
    };""")
    import omniORB

    from cosnotify.typed.events import empty_value

    size, price, note = tried_with_nothing(idl, "ZeroMore::Probe")
    assert (str(size._d), size._v) == ("ROUND", 0.0)
    assert (str(price), price.decimals()) == ("0.00", 2)
    assert note is None
    typecode = empty_value(CORBA.TC_TypeCode)
    assert typecode.kind() == CORBA.tk_null
    omniORB.cdrMarshal(CORBA.TC_TypeCode, typecode)


def test_events_that_are_no_call_are_counted_in_the_stats(channel: TypedEventChannel) -> None:
    """Table 2-2: they reach no typed client; the service's snapshot (cosnotify.stats,
    what ``cosnotify ls`` shows) counts them per typed proxy."""
    proxy, _ = typed_supplier(channel)
    structured, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    structured.connect_structured_push_supplier(None)
    structured.push_structured_event(N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("Telecom", "Alarm"), ""), []), [],
        CORBA.Any(CORBA.TC_null, None)))
    settle(channel)
    assert proxy.get_typed_supplier().try_cancel_coffee() == (False, "")
    snapshot = cosnotify.stats(channel._factory)
    [found] = [p for c in snapshot["channels"] if c["id"] == channel._id
               for a in c["admins"] for p in a["proxies"] if p["id"] == proxy._id
               and a["id"] == proxy._admin._id and "not_typed" in p["counters"]]
    assert (found["counters"]["not_typed"], found["counters"]["dropped_calls"]) == (1, 0)


def test_a_bad_value_from_a_typed_pull_supplier_drops_that_call_only(
        channel: TypedEventChannel) -> None:
    """An in-process Pull<I> whose try_op gives a value its type cannot hold: that call
    is dropped and counted (``bad_calls``); the proxy stays connected and polls on."""
    seen = Recorder()
    pusher, _ = channel._get_default_consumer_admin().obtain_typed_notification_push_supplier(
        "Coffee")
    pusher.connect_typed_push_consumer(seen)
    proxy, _ = channel._get_default_supplier_admin().obtain_typed_notification_pull_consumer(
        "Coffee")
    proxy.connect_typed_pull_supplier(PullCoffee([("Jane", "five"), ("Al", 7)]))
    assert seen.wait_for(1)
    assert seen.calls == [("drinking_coffee", ("Al", 7))]
    assert proxy._connected and proxy.bad_calls == 1


class TestReview107:
    """The third review of the typed layer (review 107)."""

    def test_a_refused_second_pull_supplier_never_replaces_the_first(
            self, channel: TypedEventChannel) -> None:
        """3.6.3.1: AlreadyConnected. The second supplier's typed object was stored
        before the refusal, and the proxy then polled it, not the connected one."""
        recorder = Recorder()
        push, _ = channel._get_default_consumer_admin().obtain_typed_notification_push_supplier(
            "Coffee")
        push.connect_typed_push_consumer(recorder)
        proxy, _ = channel._get_default_supplier_admin().obtain_typed_notification_pull_consumer(
            "Coffee")
        first = PullCoffee([])
        proxy.connect_typed_pull_supplier(first)
        intruder = PullCoffee([("INTRUDER", 666)])
        with pytest.raises(CosEventChannelAdmin.AlreadyConnected):
            proxy.connect_typed_pull_supplier(intruder)
        with pytest.raises(CosEventChannelAdmin.AlreadyConnected):  # not TypeError
            proxy.connect_typed_pull_supplier(object())
        first.drinks.append(("legit", 1))
        recorder.wait_for(1)
        settle(channel)
        assert recorder.calls[0] == ("drinking_coffee", ("legit", 1))
        assert intruder.drinks == [("INTRUDER", 666)]  # never pulled

    def test_a_refused_second_push_consumer_is_never_pushed_to(
            self, channel: TypedEventChannel) -> None:
        """3.6.4.1: AlreadyConnected. The second consumer's typed object was in place
        from before the check to the refusal (a remote round trip over IIOP), and the
        connected consumer's calls went to it meanwhile. Now the check comes first,
        before the second consumer is even asked for its typed object."""
        recorder = Recorder()
        proxy, _ = channel._get_default_consumer_admin().obtain_typed_notification_push_supplier(
            "Coffee")
        proxy.connect_typed_push_consumer(recorder)

        class Intruder(Recorder):
            asked = False

            def get_typed_consumer(self) -> Any:
                Intruder.asked = True
                return self

        intruder = Intruder()
        with pytest.raises(CosEventChannelAdmin.AlreadyConnected):
            proxy.connect_typed_push_consumer(intruder)
        assert not Intruder.asked
        _, typed = typed_consumer(channel)
        typed.drinking_coffee("after", 2)
        recorder.wait_for(1)
        settle(channel)
        assert recorder.calls == [("drinking_coffee", ("after", 2))] and intruder.calls == []

    def test_try_with_nothing_gives_a_char_array_as_a_string(
            self, tmp_path: Any, omniorb: Any) -> None:
        """omniORBpy's char[N] is a str: a list of NULs made try_op's FALSE reply fail to
        marshal (BAD_PARAM over IIOP), inside a struct too."""
        idl = tmp_path / "chars.idl"
        idl.write_text("""module ZeroChars {
            typedef char Code[3];
            struct Tagged { Code c; long n; };
            interface Probe { void seen(in Code c, in Tagged t); };
            interface PullProbe { void seen(out Code c, out Tagged t);
                                  boolean try_seen(out Code c, out Tagged t); };
        };""")
        code, tagged = tried_with_nothing(idl, "ZeroChars::Probe")
        assert code == "\0\0\0" and tagged.c == "\0\0\0"


def test_an_inherited_operation_is_named_where_it_is_declared(tmp_path: Any) -> None:
    """Table 2-2: the event's ``operation`` is "the fully scoped operation name", the
    Interface Repository absolute name, which for an operation Derived inherits from
    Base is ``::M::Base::b`` (JacORB writes ``lookup(operation).absolute_name()``).
    Review 107: cosnotify wrote ``::M::Derived::b``, which a proxy keyed on Base did
    not take. A call made through Derived reaches a Base consumer, and an event named
    either way reaches a Derived one."""
    idl = tmp_path / "inherits.idl"
    idl.write_text("""module Inherits {
        interface Base { void b(in long x); };
        interface Derived : Base { void d(in long y); };
        interface PullBase { void b(out long x); boolean try_b(out long x); };
        interface PullDerived { void b(out long x); boolean try_b(out long x);
                                void d(out long y); boolean try_d(out long y); };
    };""")
    with TypedEventChannelFactory(idl=[idl]) as made:
        channel, _ = made.create_typed_channel([], [])
        consumers = channel._get_default_consumer_admin()
        structured = structured_puller(channel)
        base, _ = consumers.obtain_typed_notification_pull_supplier("Inherits::Base")
        base.connect_typed_pull_consumer(None)
        derived, _ = consumers.obtain_typed_notification_pull_supplier("Inherits::Derived")
        derived.connect_typed_pull_consumer(None)
        proxy, _ = channel._get_default_supplier_admin(
            ).obtain_typed_notification_push_consumer("Inherits::Derived")
        proxy.connect_typed_push_supplier(None)
        proxy.get_typed_consumer().b(7)
        settle(channel)
        event, found = structured.try_pull_structured_event()
        assert found and event.filterable_data[0].value.value() == "::Inherits::Base::b"
        assert base.get_typed_supplier().try_b() == (True, 7)
        assert derived.get_typed_supplier().try_b() == (True, 7)
        interface = made.interfaces.lookup("Inherits::Derived")
        assert interface.by_scoped_name("::Inherits::Derived::b") is interface.operations["b"]
        assert interface.by_scoped_name("::Inherits::Base::d") is None
