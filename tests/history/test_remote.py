"""History queries over CORBA: ``CosNotifyHistory`` on a served channel (docs/history.md).

Issue 21: the query "over CORBA, as an extension interface in idl/ that
cosnotify serve offers on retained channels"; the fields are the Eventer
seed's ``QueryData`` ("query events"), sent as a PropertySeq; malformed
queries are BAD_PARAM, unknown ids match nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyHistory
import TimeBase

from cosnotify.history.corba import properties_of, retained_of
from cosnotify.server import NotificationServer, ServerConfig
from tests.history.test_channel import event, retain


@pytest.fixture
def server(omniorb: Any, tmp_path: Path) -> Iterator[NotificationServer]:
    srv = NotificationServer(ServerConfig(port=0, call_timeout=2.0,
                                          db=tmp_path / "store.db")).start()
    yield srv
    srv.stop()


@pytest.fixture
def factory(server: NotificationServer, omniorb: Any) -> Any:
    """The factory as a client sees it: from its IOR, narrowed to the history facet."""
    return omniorb.string_to_object(server.ior)._narrow(CosNotifyHistory.HistoryFactory)


def supply(channel: Any, events: list[Any]) -> None:
    proxy, _ = channel.default_supplier_admin.obtain_notification_push_consumer(
        CA.SEQUENCE_EVENT)
    proxy = proxy._narrow(CA.SequenceProxyPushConsumer)
    proxy.connect_sequence_push_supplier(None)
    proxy.push_structured_events(events)
    proxy.disconnect_sequence_push_consumer()


def retained_channel(factory: Any, events: list[Any]) -> tuple[Any, int]:
    ecf = factory._narrow(CA.EventChannelFactory)
    channel, cid = ecf.create_channel([], retain(count=1000))
    supply(channel, events)
    return channel, cid


def prop(name: str, tc: Any, value: Any) -> Any:
    return N.Property(name, CORBA.Any(tc, value))


def ask(history: Any, fields: list[Any]) -> list[Any]:
    """The events of one reply (``more`` and ``resume`` are tested on their own)."""
    found, _more, _resume = history.query(fields)
    return list(found)


def numbers(found: list[Any]) -> list[int]:
    return [e.event.filterable_data[0].value.value() for e in found]


def test_the_factory_is_a_history_factory(factory: Any) -> None:
    """The factory `cosnotify serve` binds narrows to CosNotifyHistory::HistoryFactory
    (idl/CosNotifyMonitor.idl), and its references still answer _is_a for the OMG
    factory."""
    assert factory._is_a("IDL:CosNotifyHistory/HistoryFactory:1.0")
    assert factory._is_a("IDL:omg.org/CosNotifyChannelAdmin/EventChannelFactory:1.0")


def test_a_query_over_corba_returns_the_seeds_fields(factory: Any) -> None:
    """Eventer "query events": types with `*`, maxResults and order; each result carries
    id (server, session, instance), type, timestamp and source timestamp."""
    events = [event("D", "a", 0, source=10.0), event("D", "b", 1), event("E", "a", 2)]
    _, cid = retained_channel(factory, events)
    history = factory.get_history(cid)
    assert history.channel_id == cid
    found = ask(history, [prop("types", CosNotifyHistory._tc_TypePathSeq, [["D", "*"]]),
                           prop("order", CORBA.TC_string, "ascending")])
    assert numbers(found) == [0, 1]
    first = retained_of(found[0])
    assert first.type == ("D", "a")
    assert first.source_timestamp == pytest.approx(10.0)
    assert retained_of(found[1]).source_timestamp is None
    assert found[0].id.session == found[1].id.session  # one supply call, one session
    assert found[0].id.instance < found[1].id.instance
    limited = ask(history, [prop("maxResults", CORBA.TC_ulong, 1)])
    assert numbers(limited) == [2]  # descending by default: the latest


def test_every_field_travels(factory: Any) -> None:
    """Each QueryData field as the IDL documents it: ids (an unknown one matches
    nothing), serverId, time ranges as TimeT, UtcT or double, payload, orderBy,
    uniqueType, and a constraint in a registered grammar."""
    events = [event("D", "a", n, source=100.0 - n) for n in range(4)]
    _, cid = retained_channel(factory, events)
    history = factory.get_history(cid)
    everything = ask(history, [])
    ids = [e.id for e in everything]
    assert numbers(ask(history, [prop("ids", CosNotifyHistory._tc_EventIdSeq, [ids[0]])])) \
        == [3]
    unknown = CosNotifyHistory.EventId(ids[0].server, ids[0].session, 10**9)
    assert ask(history, [prop("ids", CosNotifyHistory._tc_EventIdSeq, [unknown])]) == []
    assert len(ask(history, [prop("serverId", CORBA.TC_ulonglong, ids[0].server)])) == 4
    assert ask(history, [prop("serverId", CORBA.TC_ulonglong, ids[0].server + 1)]) == []
    arrival = everything[0].timestamp
    utc = TimeBase.UtcT(arrival, 0, 0, 0)
    assert len(ask(history, [prop("tFrom", TimeBase._tc_UtcT, utc)])) == 4
    assert ask(history, [prop("tFrom", TimeBase._tc_TimeT, arrival + 10**7)]) == []
    assert numbers(ask(history, [prop("sourceTTo", CORBA.TC_double, 98.5)])) == [3, 2]
    by_source = ask(history, [prop("orderBy", CORBA.TC_string, "sourceTimestamp"),
                               prop("order", CORBA.TC_string, "ascending")])
    assert numbers(by_source) == [3, 2, 1, 0]
    assert len(ask(history, [prop("uniqueType", CORBA.TC_boolean, True)])) == 1
    assert numbers(ask(history, [prop("constraint", CORBA.TC_string, "$n >= 2")])) == [3, 2]
    assert ask(history, [N.Property("payload", CORBA.Any(CORBA.TC_long, 5))]) == []


@pytest.mark.parametrize("fields", [
    [prop("tFrom", CORBA.TC_double, 20.0), prop("tTo", CORBA.TC_double, 10.0)],
    [prop("colour", CORBA.TC_string, "red")],
    [prop("maxResults", CORBA.TC_long, -1)],
    [prop("order", CORBA.TC_string, "sideways")],
    [prop("tFrom", CORBA.TC_string, "yesterday")],
    [prop("types", CosNotifyHistory._tc_TypePathSeq, [["*", "a"]])],
    [prop("constraint", CORBA.TC_string, "$n >>> 2")],
    [prop("grammar", CORBA.TC_string, "NO_SUCH"), prop("constraint", CORBA.TC_string, "x")],
    [prop("maxResults", CORBA.TC_ulong, 1), prop("maxResults", CORBA.TC_ulong, 2)],
])
def test_malformed_queries_are_bad_param(factory: Any, fields: list[Any]) -> None:
    """Issue 21, "Bad input": a reversed time range, unknown fields, a negative
    maxResults... get BAD_PARAM; the channel goes on answering."""
    _, cid = retained_channel(factory, [event("D", "a", 0)])
    history = factory.get_history(cid)
    with pytest.raises(CORBA.BAD_PARAM):
        ask(history, fields)
    assert numbers(ask(history, [])) == [0]


def test_a_channel_without_retention_has_no_history(factory: Any) -> None:
    """"offers on retained channels": NotRetained otherwise; ChannelNotFound for an
    unknown id."""
    ecf = factory._narrow(CA.EventChannelFactory)
    _, cid = ecf.create_channel([], [])
    with pytest.raises(CosNotifyHistory.NotRetained) as raised:
        factory.get_history(cid)
    assert raised.value.id == cid
    with pytest.raises(CA.ChannelNotFound):
        factory.get_history(cid + 1000)


def test_the_history_goes_with_its_channel(factory: Any) -> None:
    """A destroyed channel takes its history: the reference then names no object."""
    channel, cid = retained_channel(factory, [event("D", "a", 0)])
    history = factory.get_history(cid)
    channel.destroy()
    with pytest.raises(CORBA.OBJECT_NOT_EXIST):
        ask(history, [])


def test_properties_of_is_what_the_server_reads(factory: Any) -> None:
    """The client side's encoding (cosnotify query, Spark) of the seed's fields."""
    events = [event("D", "a", n, source=50.0 + n) for n in range(3)]
    _, cid = retained_channel(factory, events)
    history = factory.get_history(cid)
    ids = [retained_of(e).id for e in ask(history, [])]
    fields = {"types": [("D", "?")], "tFrom": 0.0, "sourceTFrom": 51.0, "order": "ascending",
              "orderBy": "sourceTimestamp", "maxResults": 5, "uniqueType": False,
              "ids": [(i.server, i.session, i.instance) for i in ids], "serverId": 0,
              "grammar": "EXTENDED_TCL", "constraint": "$n < 5"}
    found = ask(history, properties_of(fields))
    assert numbers(found) == [1, 2]
    assert retained_of(found[0]).source_timestamp == 51.0


class TestPages:
    """A reply says when the query stopped early (``more``) and where to go on
    (``resume``, for ``after``): the cap, a reply's bytes, the rows one query reads."""

    def test_more_and_resume_make_the_whole_answer(self, factory: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
        import cosnotify.history.corba as history_corba

        _, cid = retained_channel(factory, [event("D", "a", n) for n in range(10)])
        history = factory.get_history(cid)
        monkeypatch.setattr(history_corba, "MAX_REPLY_BYTES", 1)  # one event a reply
        got: list[int] = []
        fields = [prop("order", CORBA.TC_string, "ascending")]
        while True:
            found, more, resume = history.query(fields)
            got += numbers(found)
            assert len(found) <= 1
            if not more:
                break
            fields = [prop("order", CORBA.TC_string, "ascending"),
                      prop("after", CosNotifyHistory._tc_EventId, resume)]
        assert got == list(range(10))

    def test_a_scan_that_stops_says_so(self, factory: Any,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
        """A selective constraint over more rows than one query reads: the reply is
        short, even empty, and says ``more``, never a silent end."""
        from cosnotify.history import reader

        _, cid = retained_channel(factory, [event("D", "a", n) for n in range(30)])
        history = factory.get_history(cid)
        monkeypatch.setattr(reader, "MAX_SCANNED", 4)
        monkeypatch.setattr(reader, "PAGE", 3)
        fields = [prop("order", CORBA.TC_string, "ascending"),
                  prop("constraint", CORBA.TC_string, "$n >= 25")]
        found, more, resume = history.query(fields)
        assert (found, more) == ([], True)
        got: list[int] = []
        while more:
            found, more, resume = history.query(
                [*fields, prop("after", CosNotifyHistory._tc_EventId, resume)])
            got += numbers(found)
        assert got == [25, 26, 27, 28, 29]


class TestReviewFindings:
    """An adversarial review of the CORBA history layer found these."""

    def test_huge_ids_match_nothing(self, factory: Any) -> None:
        """"unknown ids just match nothing", also past SQLite's integers."""
        _, cid = retained_channel(factory, [event("D", "a", 0)])
        history = factory.get_history(cid)
        huge = CosNotifyHistory.EventId(0, 0, 2**64 - 1)
        assert ask(history, [prop("ids", CosNotifyHistory._tc_EventIdSeq, [huge])]) == []
        with pytest.raises(CORBA.BAD_PARAM):
            ask(history, [prop("after", CosNotifyHistory._tc_EventId, huge)])
        many = [CosNotifyHistory.EventId(0, 0, n) for n in range(10_001)]
        with pytest.raises(CORBA.BAD_PARAM):
            ask(history, [prop("ids", CosNotifyHistory._tc_EventIdSeq, many)])

    def test_a_far_future_source_timestamp_is_clamped(self, factory: Any) -> None:
        late = event("D", "a", 0)
        late.header.variable_header.append(N.Property("SourceTimestamp", CORBA.Any(
            TimeBase._tc_TimeT, 2**64 - 1)))
        _, cid = retained_channel(factory, [late])
        [found] = ask(factory.get_history(cid), [])
        assert found.source_timestamp_defined
        assert found.source_timestamp == 2**64 - 1

    def test_no_value_is_bad_param_and_zero_results_is_none(self, factory: Any) -> None:
        _, cid = retained_channel(factory, [event("D", "a", 0)])
        history = factory.get_history(cid)
        with pytest.raises(CORBA.BAD_PARAM):
            ask(history, [N.Property("order", CORBA.Any(CORBA.TC_null, None))])
        assert ask(history, [prop("maxResults", CORBA.TC_ulong, 0)]) == []

    def test_unique_type_continues_after_a_cursor(self, factory: Any) -> None:
        """uniqueType with ``after``: the first event of each type past the cursor (it
        was refused, though a cut uniqueType answer says ``more``: review 68)."""
        _, cid = retained_channel(factory, [event("D", "a", 0), event("D", "a", 1),
                                            event("D", "b", 2)])
        history = factory.get_history(cid)
        newest = ask(history, [])[0]
        assert newest.id.instance > 0 and tuple(newest.type) == ("D", "b")
        found = ask(history, [prop("uniqueType", CORBA.TC_boolean, True),
                              prop("after", CosNotifyHistory._tc_EventId, newest.id)])
        assert [tuple(e.type) for e in found] == [("D", "a")]
        assert numbers(found) == [1]  # a's latest past the cursor, not 0 as well

    def test_a_destroyed_channels_history_servant_goes(self, factory: Any,
                                                      server: NotificationServer) -> None:
        """The servant of a history whose channel is destroyed is forgotten, as the
        channel's own is (no servant left per destroyed channel)."""
        before = server.objects.active_servants
        for _ in range(5):
            channel, cid = retained_channel(factory, [event("D", "a", 0)])
            history = factory.get_history(cid)
            ask(history, [])
            channel.destroy()
            with pytest.raises(CORBA.OBJECT_NOT_EXIST):
                ask(history, [])
        assert server.objects.active_servants <= before + 1
