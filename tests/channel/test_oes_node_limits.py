"""OES_SUBTREE filters in a channel, with the channel's node limits (OESNodeLimits).

The seed (object-eventing-service.txt, "Notifications") gives each node an
upward propagation limit and a barricade, and issue 19 makes them a setting
of each channel: the channel admin property ``OESNodeLimits`` holds a
``CosNotifyGrammars::NodeLimitSeq``, and the channel makes its table current
while it filters an event (docs/grammars/oes.md). Cases follow Figures 3 and
4 on the Figure 1 tree.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter as F
import CosNotifyGrammars as G

from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.service import ServiceConfig
from tests.channel.conftest import structured_supplier

NODES = [r"\Asia", r"\Asia\India", r"\Asia\India\Bombay", r"\Asia\India\Calcutta",
         r"\Asia\India\New Delhi", r"\Europe\France\Paris"]

#: Figure 3: Bombay's limit 0, Calcutta's 1, New Delhi's infinite (the default).
FIGURE_3 = [G.NodeLimit(r"\Asia\India\Bombay", 0, False),
            G.NodeLimit(r"\Asia\India\Calcutta", 1, False)]
#: Figure 4: and a barricade on India.
FIGURE_4 = [*FIGURE_3, G.NodeLimit(r"\Asia\India", -1, True)]


def limits(seq: list[Any]) -> Any:
    return N.Property("OESNodeLimits", CORBA.Any(G._tc_NodeLimitSeq, seq))


def event(node: str) -> Any:
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("OES", "Changed"), node), []),
        [N.Property("node", CORBA.Any(CORBA.TC_string, node))], CORBA.Any(CORBA.TC_null, None))


@pytest.fixture(params=["index", "scan"])
def factory(request: Any) -> Iterator[EventChannelFactory]:
    made = EventChannelFactory(ServiceConfig(routing=request.param))
    yield made
    made.close()


def subscriber(channel: Any, text: str, admin: Any = None) -> Any:
    flt = channel._get_default_filter_factory().create_filter("OES_SUBTREE")
    flt.add_constraints([F.ConstraintExp([], text)])
    proxy, _ = (admin or channel._get_default_consumer_admin()).obtain_notification_pull_supplier(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_pull_consumer(None)
    proxy.add_filter(flt)
    return proxy


def nodes_received(proxy: Any) -> list[str]:
    got = []
    while True:
        received, has = proxy.try_pull_structured_event()
        if not has:
            return got
        got.append(received.header.fixed_header.event_name)


def push_nodes(channel: Any) -> None:
    supplier = structured_supplier(channel)
    for node in NODES:
        supplier.push_structured_event(event(node))


class TestChannelLimits:
    """The channel's table decides how far up each event's node reaches."""

    def test_without_limits_every_ancestor_is_reached(self, factory: EventChannelFactory) -> None:
        """No OESNodeLimits: a subscription on Asia of infinite depth gets all Asian nodes."""
        channel, _ = factory.create_channel([], [])
        asia = subscriber(channel, r"\Asia depth *")
        push_nodes(channel)
        assert nodes_received(asia) == NODES[:5]

    def test_figure_3(self, factory: EventChannelFactory) -> None:
        """Bombay (limit 0) reaches only itself, Calcutta (limit 1) India but not Asia,
        New Delhi (no limit) Asia."""
        channel, _ = factory.create_channel([], [limits(FIGURE_3)])
        asia = subscriber(channel, r"\Asia depth *")
        india = subscriber(channel, r"\Asia\India depth *")
        bombay = subscriber(channel, r"\Asia\India\Bombay depth 0")
        push_nodes(channel)
        assert nodes_received(asia) == [r"\Asia", r"\Asia\India", r"\Asia\India\New Delhi"]
        assert nodes_received(india) == [r"\Asia\India", r"\Asia\India\Calcutta",
                                         r"\Asia\India\New Delhi"]
        assert nodes_received(bombay) == [r"\Asia\India\Bombay"]

    def test_figure_4_barricade(self, factory: EventChannelFactory) -> None:
        """A barricade on India keeps New Delhi's events from subscriptions on Asia."""
        channel, _ = factory.create_channel([], [limits(FIGURE_4)])
        asia = subscriber(channel, r"\Asia depth *")
        india = subscriber(channel, r"\Asia\India depth *")
        push_nodes(channel)
        assert nodes_received(asia) == [r"\Asia"]
        assert nodes_received(india) == [r"\Asia\India", r"\Asia\India\Calcutta",
                                         r"\Asia\India\New Delhi"]

    def test_limits_belong_to_their_channel(self, factory: EventChannelFactory) -> None:
        """Two channels share one filter factory; each filters by its own table."""
        limited, _ = factory.create_channel([], [limits(FIGURE_4)])
        free, _ = factory.create_channel([], [])
        on_limited = subscriber(limited, r"\Asia depth *")
        on_free = subscriber(free, r"\Asia depth *")
        push_nodes(limited)
        push_nodes(free)
        assert nodes_received(on_limited) == [r"\Asia"]
        assert nodes_received(on_free) == NODES[:5]

    def test_set_admin_changes_a_live_channel(self, factory: EventChannelFactory) -> None:
        """Setting and then clearing OESNodeLimits applies to the next events."""
        channel, _ = factory.create_channel([], [])
        asia = subscriber(channel, r"\Asia depth *")
        channel.set_admin([limits(FIGURE_4)])
        push_nodes(channel)
        assert nodes_received(asia) == [r"\Asia"]
        channel.set_admin([limits([])])
        push_nodes(channel)
        assert nodes_received(asia) == NODES[:5]

    def test_supplier_side_filters_use_the_table(self, factory: EventChannelFactory) -> None:
        """A proxy consumer's OES_SUBTREE filter is evaluated with the channel's table."""
        channel, _ = factory.create_channel([], [limits(FIGURE_3)])
        everything, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        everything.connect_structured_pull_consumer(None)
        supplier = structured_supplier(channel)
        flt = channel._get_default_filter_factory().create_filter("OES_SUBTREE")
        flt.add_constraints([F.ConstraintExp([], r"\Asia\India depth *")])
        supplier.add_filter(flt)
        for node in NODES:
            supplier.push_structured_event(event(node))
        assert nodes_received(everything) == [r"\Asia\India", r"\Asia\India\Calcutta",
                                              r"\Asia\India\New Delhi"]

    def test_a_filter_asked_directly_applies_no_limits(self, factory: EventChannelFactory) -> None:
        """match_structured called by a client, outside any channel's routing, uses no table."""
        channel, _ = factory.create_channel([], [limits(FIGURE_4)])
        flt = channel._get_default_filter_factory().create_filter("OES_SUBTREE")
        flt.add_constraints([F.ConstraintExp([], r"\Asia depth *")])
        assert flt.match_structured(event(r"\Asia\India\New Delhi")) is True


class TestTheProperty:
    """OESNodeLimits as a channel admin property (docs/qos.md)."""

    def test_reported_by_get_admin(self, factory: EventChannelFactory) -> None:
        """get_admin returns the table, sorted by path; a new channel's is empty."""
        channel, _ = factory.create_channel([], [limits(FIGURE_4)])
        values = {p.name: p.value.value() for p in channel.get_admin()}
        assert [(x.path, x.upl, x.barricade) for x in values["OESNodeLimits"]] == [
            (r"\Asia\India", -1, True), (r"\Asia\India\Bombay", 0, False),
            (r"\Asia\India\Calcutta", 1, False)]
        fresh, _ = factory.create_channel([], [])
        assert {p.name: p.value.value() for p in fresh.get_admin()}["OESNodeLimits"] == []

    @pytest.mark.parametrize(("value", "code"), [
        (CORBA.Any(G._tc_NodeLimitSeq, [G.NodeLimit(r"\Asia", -2, False)]), N.BAD_VALUE),
        (CORBA.Any(G._tc_NodeLimitSeq, [G.NodeLimit("Asia", 1, False)]), N.BAD_VALUE),
        (CORBA.Any(CORBA.TC_long, 3), N.BAD_TYPE),
        # One row per node (the seed's NODE table): the same node twice, the root twice.
        (CORBA.Any(G._tc_NodeLimitSeq, [G.NodeLimit(r"\Asia", 1, False),
                                        G.NodeLimit(r"\Asia", -1, True)]), N.BAD_VALUE),
        (CORBA.Any(G._tc_NodeLimitSeq, [G.NodeLimit("", 1, False),
                                        G.NodeLimit("\\", 2, False)]), N.BAD_VALUE),
        (CORBA.Any(G._tc_NodeLimitSeq, [G.NodeLimit(r"\Asia", 2**40, False)]), N.BAD_VALUE),
    ])
    def test_bad_values_are_refused(self, factory: EventChannelFactory, value: Any,
                                    code: Any) -> None:
        """A limit below -1 or a path that is not a pathname is BAD_VALUE, another type
        BAD_TYPE; the table is unchanged."""
        channel, _ = factory.create_channel([], [limits(FIGURE_3)])
        with pytest.raises(N.UnsupportedAdmin) as caught:
            channel.set_admin([N.Property("OESNodeLimits", value)])
        assert [e.code for e in caught.value.admin_err] == [code]
        values = {p.name: p.value.value() for p in channel.get_admin()}
        assert len(values["OESNodeLimits"]) == 2


class TestReviewFindings:
    """Paths where an event is filtered outside the channel's routing, and table changes
    while an event is being routed."""

    def test_copies_read_back_from_the_store_are_mapped_with_the_limits(self) -> None:
        """A persistent channel's copies that waited on disk get their mapping filter's
        value under the channel's node limits, as the copies kept in memory did."""
        import CosNotification as Notification

        from cosnotify.store import MemoryStore

        durable = [Notification.Property(name, CORBA.Any(CORBA.TC_short, Notification.Persistent))
                   for name in ("ConnectionReliability", "EventReliability")]
        with EventChannelFactory(store=MemoryStore()) as made:
            channel, _ = made.create_channel(durable, [limits(FIGURE_4)])
            channel._event_log.window = 2  # three of the five copies wait on disk
            mapping = channel._get_default_filter_factory().create_mapping_filter(
                "OES_SUBTREE", CORBA.Any(CORBA.TC_short, 0))
            mapping.add_mapping_constraints([F.MappingConstraintPair(
                F.ConstraintExp([], r"\Asia depth *"), CORBA.Any(CORBA.TC_short, 7))])
            proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
                CA.STRUCTURED_EVENT)
            proxy.connect_structured_pull_consumer(None)
            proxy._set_priority_filter(mapping)
            supplier = structured_supplier(channel)
            for _ in range(5):  # the barricade on India keeps them from Asia: priority 0
                supplier.push_structured_event(event(r"\Asia\India\New Delhi"))
            seen = []
            while True:
                seen += [entry.priority for entry in proxy._queue._live_entries()]
                _, has = proxy.try_pull_structured_event()
                if not has:
                    break
            assert seen and set(seen) == {0}

    def test_a_table_change_during_routing_leaves_the_event_one_answer(self) -> None:
        """set_admin while an event is being filtered: every proxy sees the table the
        event started with, so equal filters give equal answers."""
        from tests.channel.conftest import ClientFilter

        made = EventChannelFactory(ServiceConfig(routing="scan"))
        try:
            channel, _ = made.create_channel([], [limits(FIGURE_4)])
            first = subscriber(channel, r"\Asia depth *")

            class ChangesTheTable(ClientFilter):
                def match_structured(self, data: Any) -> bool:
                    channel.set_admin([limits(FIGURE_4[:1])])  # drops the barricade
                    return True

            middle, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
                CA.STRUCTURED_EVENT)
            middle.connect_structured_pull_consumer(None)
            middle.add_filter(ChangesTheTable())
            second = subscriber(channel, r"\Asia depth *")
            structured_supplier(channel).push_structured_event(event(r"\Asia\India\New Delhi"))
            assert nodes_received(first) == nodes_received(second) == []
            structured_supplier(channel).push_structured_event(event(r"\Asia\India\New Delhi"))
            assert nodes_received(first) == [r"\Asia\India\New Delhi"]
        finally:
            made.close()
