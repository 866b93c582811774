"""Bad input to the tuple space: a clear error with its reason, and nothing half-done.

Provenance: issue 21, "Bad input" (tuple-space waits have a documented upper
bound) and the project's rules (bad input gets BAD_PARAM or the IDL's own
exceptions with a reason); the EVENTHEAP grammar's errors
(docs/grammars/eventheap.md); the seed's "Events versus Tuples" (Table 1:
EventType "Must be overridden"; Tables 1 and 3: the reserved fields' types
and "Can be Overridden?").
"""

from __future__ import annotations

from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyEventHeap as EH
import CosNotifyGrammars as G

from cosnotify.tuplespace import TupleSpace
from cosnotify.tuplespace import limits as L
from tests.tuplespace.conftest import event, supplier

OPERATIONS = {
    "get_event": lambda s, t: s.get_event(t),
    "remove_event": lambda s, t: s.remove_event(t),
    "wait_for_event": lambda s, t: s.wait_for_event(t, 0),
    "wait_to_remove_event": lambda s, t: s.wait_to_remove_event(t, 0),
    "snoop_events": lambda s, t: s.snoop_events(t),
    "register_for_events": lambda s, t: s.register_for_events(t, lambda e: None),
}


def consumer(channel: Any) -> Any:
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_pull_consumer(None)
    return proxy


class TestTemplates:
    """Every operation that takes templates refuses a bad one the same way."""

    @pytest.mark.parametrize("op", sorted(OPERATIONS))
    @pytest.mark.parametrize(("template", "said"), [
        ("n: int = ", "column"),  # a syntax error, with where
        ("TimeToLive = 120000", "Can be Overridden"),  # Table 1: "Post value only."
        ("SessionID = ?", "Can be Overridden"),  # Table 3: "No."
        ("n: int = 4294967296", "int"),  # beyond a Java int
        ("x: EHJava.Foo = ?", "type"),  # a platform type: no CORBA value is one
        (42, "not a template"),
        ([], "no template"),
    ])
    def test_invalid_template(self, space: TupleSpace, op: str, template: Any,
                              said: str) -> None:
        """InvalidTemplate with the grammar's reason; the space is untouched."""
        put = space.put_event(event("A", n=1))
        with pytest.raises(G.InvalidTemplate) as raised:
            OPERATIONS[op](space, template)
        assert said in raised.value.reason
        assert [t.id for t in space.get_all()] == [put]

    def test_an_idl_template_value_is_checked(self, space: TupleSpace) -> None:
        """A CosNotifyGrammars::Template is rendered by the grammar: a repeated name is
        InvalidTemplate; a good one works like its text."""
        good = [G.TemplateField("n", "int", G.ACTUAL, CORBA.Any(CORBA.TC_long, 1))]
        space.put_event(event("A", n=1))
        assert space.get_event(good) is not None
        assert space.get_event([good, "n: int = 2"]) is not None
        with pytest.raises(G.InvalidTemplate):
            space.get_event(good + good)

    def test_too_many_templates(self, space: TupleSpace) -> None:
        """docs/history.md: at most MAX_TEMPLATES templates a call."""
        with pytest.raises(EH.LimitExceeded) as raised:
            space.get_event(["n: int = ?"] * (L.MAX_TEMPLATES + 1))
        assert raised.value.limit == L.MAX_TEMPLATES
        assert space.get_event(["n: int = ?"] * L.MAX_TEMPLATES) is None


class TestPutEvent:
    """What putEvent refuses, and that a refused put supplies nothing."""

    @pytest.mark.parametrize(("bad", "said"), [
        ("not an event", "StructuredEvent"),
        (event(""), "EventType"),  # Table 1: EventType "Must be overridden"
        (event("A", SessionID="x"), "SessionID"),  # Table 3: Integer
        (event("A", Source=5), "Source"),  # Table 1: String
        (event("A", header={"Priority": 99_999}), "Priority"),  # a bad header QoS
    ])
    def test_invalid_event(self, channel: Any, space: TupleSpace, bad: Any, said: str) -> None:
        """InvalidEvent with the reason; nothing reaches the channel's consumers or the
        space."""
        pull = consumer(channel)
        with pytest.raises(EH.InvalidEvent) as raised:
            space.put_event(bad)
        assert said in raised.value.reason
        assert space.get_all() == []
        _, has = pull.try_pull_structured_event()
        assert not has

    def test_a_property_that_is_not_an_any(self, space: TupleSpace) -> None:
        """A property whose value is not an Any is InvalidEvent, not a crash."""
        ev = event("A")
        ev.filterable_data.append(N.Property("n", 5))
        with pytest.raises(EH.InvalidEvent):
            space.put_event(ev)

    def test_a_full_channel_refuses_the_put(self, factory: Any) -> None:
        """MaxQueueLength with RejectNewEvents (Notification §2.5.7): the channel refuses
        the event (IMP_LIMIT) and the space keeps nothing."""
        admin = [N.Property("MaxQueueLength", CORBA.Any(CORBA.TC_long, 1)),
                 N.Property("RejectNewEvents", CORBA.Any(CORBA.TC_boolean, True))]
        channel, _ = factory.create_channel([], admin)
        consumer(channel)
        space = TupleSpace.of(channel)
        kept = space.put_event(event("A"))
        with pytest.raises(CORBA.IMP_LIMIT):
            space.put_event(event("B"))
        assert [t.id for t in space.get_all()] == [kept]

    def test_a_full_space_still_delivers_a_suppliers_event(self, channel: Any,
                                                           space: TupleSpace) -> None:
        """An event another supplier brings when the space is full is delivered to the
        channel's consumers but not kept (counted in ``refused``)."""
        pull = consumer(channel)
        space.max_tuples = 1
        supplier(channel).push_structured_events([event("A"), event("B")])
        assert [t.event.header.fixed_header.event_type.type_name
                for t in space.get_all()] == ["A"]
        assert space.refused == 1
        got = [pull.try_pull_structured_event() for _ in range(2)]
        assert all(has for _, has in got)


class TestLimitsAndArguments:
    @pytest.mark.parametrize("timeout", [-1, float("nan"), "5", True])
    def test_a_bad_timeout_is_bad_param(self, space: TupleSpace, timeout: Any) -> None:
        """A wait's timeout is seconds >= 0: anything else is BAD_PARAM with the reason."""
        with pytest.raises(CORBA.BAD_PARAM):
            space.wait_for_event("n: int = ?", timeout)

    def test_a_wait_beyond_the_bound_is_refused(self, space: TupleSpace) -> None:
        """Issue 21: waits have a documented upper bound, MAX_WAIT (the IDL's MaxWaitMs)."""
        with pytest.raises(EH.LimitExceeded) as raised:
            space.wait_to_remove_event("n: int = ?", L.MAX_WAIT + 1)
        assert raised.value.limit == EH.MaxWaitMs == L.MAX_WAIT * 1000
        assert space.waiting == 0

    def test_max_results(self, space: TupleSpace) -> None:
        """docs/history.md: max_results is at most MAX_RESULTS (the IDL's MaxResults)."""
        assert EH.MaxResults == L.MAX_RESULTS
        with pytest.raises(EH.LimitExceeded):
            space.get_all(L.MAX_RESULTS + 1)
        with pytest.raises(CORBA.BAD_PARAM):
            space.snoop_events("n: int = ?", -1)

    @pytest.mark.parametrize("bad", ["1", 1.0, None, True])
    def test_ids_are_integers(self, space: TupleSpace, bad: Any) -> None:
        """deleteEvent and deregister take integer ids: anything else is BAD_PARAM."""
        with pytest.raises(CORBA.BAD_PARAM):
            space.delete_event(bad)
        with pytest.raises(CORBA.BAD_PARAM):
            space.deregister(bad)

    @pytest.mark.parametrize(("source", "kwargs"), [
        ("", {}), ("x" * (L.MAX_NAME_LENGTH + 1), {}), (5, {}), ("ok", {"device": 3})])
    def test_a_bad_source_is_invalid(self, space: TupleSpace, source: Any,
                                     kwargs: dict[str, Any]) -> None:
        """"Source should be a unique value": a client needs a Source, and names are
        strings of at most MAX_NAME_LENGTH characters (InvalidSource)."""
        with pytest.raises(EH.InvalidSource):
            space.connect(source, **kwargs)
        assert space.clients == []


def wrapped(inner: Any) -> Any:
    """Table 2-2 of the Notification Service: an Any as its %ANY Structured Event."""
    return N.StructuredEvent(N.EventHeader(N.FixedEventHeader(N.EventType("", "%ANY"), ""), []),
                             [], inner)


class TestWrappedAndExpiredPuts:
    """Review findings 11 ("A client's %ANY put loses its stamps and bypasses the event
    check") and 14 ("a put whose StopTime has passed returns an id for a tuple that never
    exists")."""

    @pytest.mark.parametrize("inner", [
        CORBA.Any(N._tc_PropertySeq, [N.Property("v", CORBA.Any(CORBA.TC_long, 5))]),
        CORBA.Any(N._tc_StructuredEvent, event("", Source=5)),  # no EventType, Source 5
    ])
    def test_a_wrapped_any_is_refused(self, channel: Any, space: TupleSpace,
                                      inner: Any) -> None:
        """"In general, all events must have an event type" (Events versus Tuples): the
        channel unwraps a %ANY event to its Any (Notification §2.1.4), whose fields are
        not the wrapper's -- a client's stamps would be lost, and the event put would not
        be the one checked. InvalidEvent, for a client and anonymously; nothing supplied."""
        pull = consumer(channel)
        client = space.connect("sensor-7")
        for put in (client.put_event, space.put_event):
            with pytest.raises(EH.InvalidEvent) as raised:
                put(wrapped(inner))
            assert "%ANY" in raised.value.reason
        assert space.get_all() == []
        _, has = pull.try_pull_structured_event()
        assert not has

    def test_a_put_already_expired_is_refused(self, channel: Any, space: TupleSpace,
                                              clock: Any) -> None:
        """Table 1, TimeToLive: "The amount of time after placement in the Event Heap until
        the event expires and becomes no longer retrievable": an event whose StopTime has
        passed would never be retrievable: InvalidEvent, and nothing supplied."""
        import TimeBase

        from cosnotify.channel.clock import seconds_to_timet

        ev = event("A")
        ev.header.variable_header.append(N.Property("StopTime", CORBA.Any(
            TimeBase._tc_UtcT, TimeBase.UtcT(seconds_to_timet(clock.now() - 1), 0, 0, 0))))
        pull = consumer(channel)
        with pytest.raises(EH.InvalidEvent) as raised:
            space.put_event(ev)
        assert "passed" in raised.value.reason
        assert space.get_all() == []
        _, has = pull.try_pull_structured_event()
        assert not has


class TestManyTemplateSpecs:
    """Review finding 14: "every TemplateSpec is rendered before the MaxTemplates check"."""

    def test_too_many_specs_are_refused_before_any_is_rendered(
            self, space: TupleSpace, monkeypatch: pytest.MonkeyPatch) -> None:
        """The IDL's MaxTemplates: 60,000 TemplateSpecs are LimitExceeded at once."""
        from cosnotify.tuplespace import corba
        from cosnotify.tuplespace.corba import TupleSpaceServant

        rendered: list[Any] = []
        monkeypatch.setattr(corba, "render_template",
                            lambda value: rendered.append(value) or "n: int = 1")
        spec = EH.TemplateSpec(value=[G.TemplateField("n", "int", G.ACTUAL,
                                                      CORBA.Any(CORBA.TC_long, 1))])
        with pytest.raises(EH.LimitExceeded) as raised:
            TupleSpaceServant(space).get_event([spec] * 60_000)
        assert raised.value.limit == L.MAX_TEMPLATES and rendered == []
