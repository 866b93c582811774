"""Notification streams: registerForEvents, registerForAll and deregister.

Provenance: the Event Heap wire protocol appendix, "Notification Streams"
(Tables 11 and 12) and deregister (Table 16); issue 21's brief: streams are
ordinary subscriptions of the channel (a consumer admin, a
StructuredProxyPushSupplier and an EVENTHEAP filter). Delivery is the
channel's (asynchronous): a test waits for a final marker event, which a
proxy delivers after everything before it.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N

from cosnotify.channel.factory import EventChannelFactory
from cosnotify.tuplespace import TupleSpace
from tests.tuplespace.conftest import WAIT, event, field, supplier, type_of
from tests.tuplespace.test_waits import Call, waiting


class Recorder:
    """A callable consumer that keeps what it is pushed."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self._cond = threading.Condition()

    def __call__(self, ev: Any) -> None:
        with self._cond:
            self.events.append(ev)
            self._cond.notify_all()

    def until(self, type_name: str) -> list[str]:
        """The types received, once an event of ``type_name`` has been."""
        with self._cond:
            assert self._cond.wait_for(
                lambda: any(type_of(e) == type_name for e in self.events), WAIT)
            return [type_of(e) for e in self.events]


class TestRegisterForEvents:
    """Table 11."""

    def test_matching_events_from_now_on(self, space: TupleSpace) -> None:
        """Table 11: "each event put on the server, from the point of wire bundle receipt
        onward, that matches the template value fields of one or more of the events" is
        returned; "copies of the retrieved events remain on the server"."""
        space.put_event(event("A", n=0))  # before: not streamed
        got = Recorder()
        stream = space.register_for_events(['EventType = "A"', 'EventType = "End"'], got)
        assert stream > 0
        space.put_event(event("A", n=1))
        space.put_event(event("B", n=2))
        space.put_event(event("A", n=3))
        space.put_event(event("End"))
        assert got.until("End") == ["A", "A", "End"]
        assert [field(e, "n") for e in got.events[:2]] == [1, 3]
        assert len(space.get_all()) == 5

    def test_events_of_every_supplier_and_waits(self, channel: Any, space: TupleSpace) -> None:
        """Table 11 streams "each event put on the server": those a Notification supplier
        pushes, and one a waitToRemoveEvent took (docs/history.md)."""
        got = Recorder()
        space.register_for_all(got)
        call = Call(space.wait_to_remove_event, 'EventType = "Job"', 30)
        waiting(space, 1)
        supplier(channel).push_structured_events([event("Job", n=1), event("End")])
        assert call.result() is not None
        assert got.until("End") == ["Job", "End"]

    def test_a_stream_is_an_ordinary_subscription(self, channel: Any,
                                                   space: TupleSpace) -> None:
        """The brief: a consumer admin of the channel, holding an EVENTHEAP filter of the
        templates (the admin's, so the stream's end finds it even when its proxy went:
        review finding 9), with one StructuredProxyPushSupplier."""
        stream = space.register_for_events('EventType = "A", n: int = 1', Recorder())
        assert stream in channel.get_all_consumeradmins()
        admin = channel.get_consumeradmin(stream)
        (proxy_id,) = admin._get_push_suppliers()
        proxy = admin.get_proxy_supplier(proxy_id)
        assert proxy.get_all_filters() == []
        (filter_id,) = admin.get_all_filters()
        flt = admin.get_filter(filter_id)
        assert flt._get_constraint_grammar() == "EVENTHEAP"
        texts = [c.constraint_expression.constraint_expr for c in flt.get_all_constraints()]
        assert texts == ['EventType: string = "A", n: int = 1']  # the canonical text


class TestRegisterForAll:
    """Table 12."""

    def test_every_event_from_now_on(self, space: TupleSpace) -> None:
        """Table 12: "each event put on the server, from the point of wire bundle receipt
        onward" is returned."""
        space.put_event(event("Before"))
        got = Recorder()
        space.register_for_all(got)
        for t in ("A", "B", "End"):
            space.put_event(event(t))
        assert got.until("End") == ["A", "B", "End"]


class TestDeregister:
    """Table 16."""

    def test_the_stream_stops(self, channel: Any, space: TupleSpace) -> None:
        """Table 16: deregister "Stops future wire bundles form being sent for a
        Notification Stream"; its subscription goes."""
        got, other = Recorder(), Recorder()
        stream = space.register_for_all(got)
        space.register_for_all(other)
        space.put_event(event("A"))
        assert got.until("A") == ["A"]
        assert space.deregister(stream)
        assert stream not in channel.get_all_consumeradmins()
        space.put_event(event("B"))
        space.put_event(event("End"))
        assert other.until("End") == ["A", "B", "End"]
        assert [type_of(e) for e in got.events] == ["A"]

    def test_an_unknown_stream_is_false(self, channel: Any, space: TupleSpace) -> None:
        """Table 16's "Expected Response from Server: Nothing": an unknown stream (or an
        admin that is not a stream) is FALSE, and nothing is destroyed."""
        stream = space.register_for_all(Recorder())
        assert space.deregister(stream)
        assert not space.deregister(stream)
        assert not space.deregister(999)
        _, mine = channel.new_for_consumers(channel._get_default_consumer_admin()._operator)
        assert not space.deregister(mine)
        assert mine in channel.get_all_consumeradmins()

    def test_a_bad_template_registers_nothing(self, channel: Any, space: TupleSpace) -> None:
        """Nothing half-done: an invalid template leaves no admin behind."""
        import CosNotifyGrammars as G

        before = channel.get_all_consumeradmins()
        with pytest.raises(G.InvalidTemplate):
            space.register_for_events("n: int = ", Recorder())
        with pytest.raises(CORBA.BAD_PARAM):
            space.register_for_events("n: int = ?", object())
        assert channel.get_all_consumeradmins() == before


def test_a_callback_stream_is_not_kept_across_a_restart(tmp_path: Any) -> None:
    """On a Persistent channel a stream to a CORBA consumer is stored like any
    subscription; one to an in-process callable cannot be, so it is BestEffort and does
    not come back (docs/history.md)."""
    from cosnotify.store.sqlite import SQLiteStore

    persistent = [N.Property("ConnectionReliability", CORBA.Any(CORBA.TC_short, N.Persistent))]
    store = SQLiteStore(tmp_path / "store.db")
    with EventChannelFactory(store=store) as made:
        channel, channel_id = made.create_channel(persistent, [])
        stream = TupleSpace.of(channel).register_for_all(Recorder())
        assert stream in channel.get_all_consumeradmins()
    store.close()
    store = SQLiteStore(tmp_path / "store.db")
    try:
        with EventChannelFactory(store=store) as made:
            channel = made.get_event_channel(channel_id)
            assert stream not in channel.get_all_consumeradmins()
            assert not TupleSpace.of(channel).deregister(stream)
    finally:
        store.close()


class TestConsumers:
    """Review finding 8: a consumer the channel cannot push to "leak[s] an undeclared
    exception as UNKNOWN"; it is the IDL's InvalidConsumer, with the reason, and nothing
    is registered."""

    def test_a_reference_that_is_no_consumer_is_invalid(self, omniorb: Any, channel: Any,
                                                        space: TupleSpace) -> None:
        """Table 11's stream needs a consumer to return events to: a reference that is
        not a CosNotifyComm::StructuredPushConsumer (here, a tuple space's) is refused
        in process and through the servant, and leaves no admin."""
        import CosNotifyEventHeap as EH

        from cosnotify.tuplespace.corba import TupleSpaceServant

        poa = omniorb.resolve_initial_references("RootPOA")
        servant = TupleSpaceServant(space)
        oid = poa.activate_object(servant)
        try:
            not_a_consumer = poa.id_to_reference(oid)
            before = channel.get_all_consumeradmins()
            with pytest.raises(EH.InvalidConsumer) as raised:
                space.register_for_all(not_a_consumer)
            assert "StructuredPushConsumer" in raised.value.reason
            with pytest.raises(EH.InvalidConsumer):
                servant.register_for_events([EH.TemplateSpec(text='EventType = "A"')],
                                            not_a_consumer)
            assert channel.get_all_consumeradmins() == before
        finally:
            poa.deactivate_object(oid)

    def test_an_unreachable_consumer_is_invalid(self, omniorb: Any, channel: Any,
                                                space: TupleSpace) -> None:
        """A consumer reference nobody answers at cannot be asked what it is: refused."""
        import CosNotifyEventHeap as EH

        nobody = omniorb.string_to_object("corbaloc::127.0.0.1:1/Nothing")
        before = channel.get_all_consumeradmins()
        with pytest.raises(EH.InvalidConsumer):
            space.register_for_events('EventType = "A"', nobody)
        assert channel.get_all_consumeradmins() == before


class TestDeadConsumers:
    """Review finding 9: "Streams leak when their consumer dies": the channel tears the
    stream's proxy down; its admin, EVENTHEAP filter and the filter's store record go
    too, and deregister still finds everything."""

    def test_a_stream_whose_consumer_died_ends(self, omniorb: Any) -> None:
        """Three streams on a Persistent channel to a consumer that is gone (its pushes
        answer OBJECT_NOT_EXIST, as a dead object's do): the channel drops their proxies;
        the next registration ends them -- admins, filters and stored filter records."""
        import CosNotifyComm__POA

        from cosnotify.store import MemoryStore

        class Gone(CosNotifyComm__POA.StructuredPushConsumer):  # type: ignore[misc]
            def push_structured_event(self, ev: Any) -> None:
                raise CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO)

            def offer_change(self, added: Any, removed: Any) -> None:
                pass

            def disconnect_structured_push_consumer(self) -> None:
                pass

        poa = omniorb.resolve_initial_references("RootPOA")
        oid = poa.activate_object(Gone())
        persistent = [N.Property("ConnectionReliability",
                                 CORBA.Any(CORBA.TC_short, N.Persistent))]
        store = MemoryStore()
        try:
            with EventChannelFactory(store=store) as made:
                channel, _ = made.create_channel(persistent, [])
                space = TupleSpace.of(channel)
                dead = [space.register_for_events('EventType = "A"', poa.id_to_reference(oid))
                        for _ in range(3)]
                assert len([r for r in store.records() if r.path.startswith("flt")]) == 3
                space.put_event(event("A"))
                assert made.service.dispatcher.wait_idle(WAIT)
                assert all(channel.get_consumeradmin(s)._all_proxies() == [] for s in dead)
                alive = space.register_for_all(Recorder())
                assert set(channel.get_all_consumeradmins()) == {0, alive}
                assert [r for r in store.records() if r.path.startswith("flt")] == []
                assert not space.deregister(dead[0])
        finally:
            poa.deactivate_object(oid)

    def test_deregister_ends_a_stream_whose_proxy_went(self, channel: Any,
                                                       space: TupleSpace) -> None:
        """Table 16: deregister of a stream whose proxy the channel dropped ends it: TRUE,
        and its admin and filter are gone."""
        stream = space.register_for_events('EventType = "A"', Recorder())
        admin = channel.get_consumeradmin(stream)
        (filter_id,) = admin.get_all_filters()
        flt = admin.get_filter(filter_id)
        for proxy in admin._all_proxies():
            proxy._destroy()  # as the channel does when the consumer is gone
        assert space.deregister(stream)
        assert stream not in channel.get_all_consumeradmins()
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            flt.get_all_constraints()


class TestOwners:
    """Review finding 13 (third part): "any client can deregister another's" -- the seed
    ties a stream to its registration's Return Tag, "It is the responsibility of the
    client to insure that Return Tag is unique for that client"."""

    def test_only_the_owner_deregisters(self, channel: Any, space: TupleSpace) -> None:
        """A client's stream is its Source's: another client, or an anonymous call, gets
        FALSE and the stream goes on; the owner -- also after a reconnect -- ends it. An
        anonymous stream is ended anonymously only."""
        mine = space.connect("me").register_for_all(Recorder())
        other = space.connect("other")
        anonymous = space.register_for_all(Recorder())
        assert not other.deregister(mine)
        assert not space.deregister(mine)
        assert not other.deregister(anonymous)
        assert mine in channel.get_all_consumeradmins()
        assert space.connect("me").deregister(mine)
        assert space.deregister(anonymous)
        assert set(channel.get_all_consumeradmins()) == {0}


def test_a_streams_time_to_live_matches_every_event(space: TupleSpace) -> None:
    """Table 1: every event has a TimeToLive ("Post Value 120000 ms"), and a template's is
    formal: a stream's `TimeToLive = ?` selects events with and without a Timeout (review
    finding 13); its filter holds the template without it."""
    got = Recorder()
    stream = space.register_for_events('TimeToLive = ?, EventType = "A"', got)
    space.put_event(event("A", n=1))
    space.put_event(event("A", ttl_ms=5_000, n=2))
    space.put_event(event("B", n=3))
    space.put_event(event("A", n=4, End=True))
    got.until("A")
    with got._cond:
        assert got._cond.wait_for(lambda: len(got.events) == 3, WAIT)
    assert [field(e, "n") for e in got.events] == [1, 2, 4]
    admin = space.channel.get_consumeradmin(stream)
    (filter_id,) = admin.get_all_filters()
    texts = [c.constraint_expression.constraint_expr
             for c in admin.get_filter(filter_id).get_all_constraints()]
    assert texts == ['EventType: string = "A"']
