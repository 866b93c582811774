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
    found = history.query([prop("types", CosNotifyHistory._tc_TypePathSeq, [["D", "*"]]),
                           prop("order", CORBA.TC_string, "ascending")])
    assert numbers(found) == [0, 1]
    first = retained_of(found[0])
    assert first.type == ("D", "a")
    assert first.source_timestamp == pytest.approx(10.0)
    assert retained_of(found[1]).source_timestamp is None
    assert found[0].id.session == found[1].id.session  # one supply call, one session
    assert found[0].id.instance < found[1].id.instance
    limited = history.query([prop("maxResults", CORBA.TC_ulong, 1)])
    assert numbers(limited) == [2]  # descending by default: the latest


def test_every_field_travels(factory: Any) -> None:
    """Each QueryData field as the IDL documents it: ids (an unknown one matches
    nothing), serverId, time ranges as TimeT, UtcT or double, payload, orderBy,
    uniqueType, and a constraint in a registered grammar."""
    events = [event("D", "a", n, source=100.0 - n) for n in range(4)]
    _, cid = retained_channel(factory, events)
    history = factory.get_history(cid)
    everything = history.query([])
    ids = [e.id for e in everything]
    assert numbers(history.query([prop("ids", CosNotifyHistory._tc_EventIdSeq, [ids[0]])])) \
        == [3]
    unknown = CosNotifyHistory.EventId(ids[0].server, ids[0].session, 10**9)
    assert history.query([prop("ids", CosNotifyHistory._tc_EventIdSeq, [unknown])]) == []
    assert len(history.query([prop("serverId", CORBA.TC_ulonglong, ids[0].server)])) == 4
    assert history.query([prop("serverId", CORBA.TC_ulonglong, ids[0].server + 1)]) == []
    arrival = everything[0].timestamp
    utc = TimeBase.UtcT(arrival, 0, 0, 0)
    assert len(history.query([prop("tFrom", TimeBase._tc_UtcT, utc)])) == 4
    assert history.query([prop("tFrom", TimeBase._tc_TimeT, arrival + 10**7)]) == []
    assert numbers(history.query([prop("sourceTTo", CORBA.TC_double, 98.5)])) == [3, 2]
    by_source = history.query([prop("orderBy", CORBA.TC_string, "sourceTimestamp"),
                               prop("order", CORBA.TC_string, "ascending")])
    assert numbers(by_source) == [3, 2, 1, 0]
    assert len(history.query([prop("uniqueType", CORBA.TC_boolean, True)])) == 1
    assert numbers(history.query([prop("constraint", CORBA.TC_string, "$n >= 2")])) == [3, 2]
    assert history.query([N.Property("payload", CORBA.Any(CORBA.TC_long, 5))]) == []


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
        history.query(fields)
    assert numbers(history.query([])) == [0]


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
        history.query([])


def test_properties_of_is_what_the_server_reads(factory: Any) -> None:
    """The client side's encoding (cosnotify query, Spark) of the seed's fields."""
    events = [event("D", "a", n, source=50.0 + n) for n in range(3)]
    _, cid = retained_channel(factory, events)
    history = factory.get_history(cid)
    ids = [retained_of(e).id for e in history.query([])]
    fields = {"types": [("D", "?")], "tFrom": 0.0, "sourceTFrom": 51.0, "order": "ascending",
              "orderBy": "sourceTimestamp", "maxResults": 5, "uniqueType": False,
              "ids": [(i.server, i.session, i.instance) for i in ids], "serverId": 0,
              "grammar": "EXTENDED_TCL", "constraint": "$n < 5"}
    found = history.query(properties_of(fields))
    assert numbers(found) == [1, 2]
    assert retained_of(found[0]).source_timestamp == 51.0
