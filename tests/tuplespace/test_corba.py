"""The tuple space over IIOP: CosNotifyEventHeap servants and a client in another process.

Provenance: idl/CosNotifyEventHeap.idl (the seed's "Event Heap Server
Operations" as IDL); issue 21, item 3 ("Offered in process and over CORBA")
and "Bad input" ("Tuple-space waits have a documented upper bound and end
cleanly when the client disconnects"). The servants are activated in this
process's RootPOA (the session ORB, loopback endpoint); the client is
tests/tuplespace/remote_client.py, a second process with its own ORB on a
loopback endpoint, so every call is a real IIOP call.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.tuplespace import TupleSpace
from cosnotify.tuplespace.corba import ConnectionWatch, TupleSpaceFactoryServant
from tests.tuplespace.conftest import WAIT, event, field, type_of

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


class RemoteError(Exception):
    def __init__(self, answer: dict[str, Any]) -> None:
        super().__init__(answer)
        self.name = answer["error"]
        self.reason = answer.get("reason")
        self.limit = answer.get("limit")


class RemoteClient:
    """remote_client.py, driven by JSON lines (its docstring)."""

    def __init__(self, ior: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.process = subprocess.Popen([sys.executable, str(HERE / "remote_client.py"), ior],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, env=env)
        self._answers: dict[Any, dict[str, Any]] = {}
        self._cond = threading.Condition()
        self._tags = itertools.count()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.answer("ready")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            got = json.loads(line)
            with self._cond:
                self._answers[got["tag"]] = got
                self._cond.notify_all()

    def send(self, op: str, on: str | None = "space", as_: str | None = None,
             call_timeout_ms: int | None = None, **args: Any) -> int:
        tag = next(self._tags)
        command: dict[str, Any] = {"tag": tag, "op": op, "on": on, "args": args}
        if as_ is not None:
            command["as"] = as_
        if call_timeout_ms is not None:
            command["call_timeout_ms"] = call_timeout_ms
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return tag

    def answer(self, tag: Any) -> Any:
        with self._cond:
            assert self._cond.wait_for(lambda: tag in self._answers, WAIT), f"no answer {tag}"
            got = self._answers.pop(tag)
        if "error" in got:
            raise RemoteError(got)
        return got.get("result")

    def call(self, op: str, **kwargs: Any) -> Any:
        return self.answer(self.send(op, **kwargs))

    def close(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def text(t: str) -> dict[str, str]:
    return {"text": t}


def ev(type_name: str, **fields: Any) -> dict[str, Any]:
    kinds = {int: "long", str: "string", float: "double", bool: "boolean"}
    return {"type": type_name, "fields": {k: [kinds[type(v)], v] for k, v in fields.items()}}


@pytest.fixture
def watch(omniorb: Any) -> ConnectionWatch:
    """The process's one ConnectionWatch (omniORB has one connection-info function),
    the one servers of this process use."""
    from cosnotify.server.app import _connection_watch

    watch: ConnectionWatch = _connection_watch()
    return watch


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_000_000.0)


@pytest.fixture
def served(omniorb: Any, watch: ConnectionWatch,
           clock: ManualClock) -> Iterator[tuple[EventChannelFactory, str]]:
    """A factory of channels, and the IOR of a TupleSpaceFactory servant over it."""
    poa = omniorb.resolve_initial_references("RootPOA")
    factory = EventChannelFactory(clock=clock)
    servant = TupleSpaceFactoryServant(factory.get_event_channel, watch)
    oid = poa.activate_object(servant)
    try:
        yield factory, omniorb.object_to_string(poa.id_to_reference(oid))
    finally:
        factory.close()
        servant.close()
        poa.deactivate_object(oid)


@pytest.fixture
def remote(served: tuple[EventChannelFactory, str]) -> Iterator[RemoteClient]:
    client = RemoteClient(served[1])
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def space(served: tuple[EventChannelFactory, str], remote: RemoteClient) -> TupleSpace:
    """Channel 0's space in process; the remote client holds it as "space"."""
    channel, channel_id = served[0].create_channel([], [])
    remote.call("space", on=None, as_="space", channel=channel_id)
    return TupleSpace.of(channel)


class TestOperations:
    """Every operation of CosNotifyEventHeap::Operations, called over IIOP."""

    def test_put_get_remove_snoop_delete_clear(self, space: TupleSpace,
                                               remote: RemoteClient) -> None:
        """Tables 5, 6, 9, 10, 13, 14, 15 over IIOP: the same answers as in process."""
        assert remote.call("channel_id") == space.channel_id
        a = remote.call("put", event=ev("A", n=1, host="h1"))
        b = remote.call("put", event=ev("A", n=2))
        c = remote.call("put", event=ev("B", n=3))
        assert a < b < c and remote.call("live_count") == 3
        got = remote.call("get_event", templates=[text('EventType = "A", host: string = ?')])
        assert [t["id"] for t in got] == [a] and got[0]["fields"]["host"] == "h1"
        value = {"value": [["n", "int", "ACTUAL", "long", 3]]}  # a CosNotifyGrammars::Template
        assert [t["id"] for t in remote.call("get_event", templates=[value])] == [c]
        assert remote.call("get_event", templates=[text('EventType = "Z"')]) == []
        assert [t["id"] for t in remote.call("remove_event", templates=[
            text('EventType = "A"')])] == [a]
        assert [t["id"] for t in remote.call("snoop_events", templates=[
            text("n: int = ?")])] == [b, c]
        assert [t["id"] for t in remote.call("get_all", max_results=1)] == [b]
        assert remote.call("delete_event", id=b) is True
        assert remote.call("delete_event", id=b) is False
        assert [t.id for t in space.get_all()] == [c]
        assert remote.call("clear") is None
        assert space.get_all() == [] and remote.call("live_count") == 0

    def test_many_concurrent_removes_take_each_tuple_once(self, space: TupleSpace,
                                                          remote: RemoteClient) -> None:
        """Table 6 over IIOP: 60 removeEvent calls at once (each on a thread of the client)
        over 40 tuples take 40 distinct tuples."""
        for n in range(40):
            space.put_event(event("Job", n=n))
        tags = [remote.send("remove_event", templates=[text('EventType = "Job"')])
                for _ in range(60)]
        taken = [t["id"] for tag in tags for t in remote.answer(tag)]
        assert len(taken) == 40 and len(set(taken)) == 40
        assert space.get_all() == []

    def test_errors_carry_their_reason(self, served: tuple[EventChannelFactory, str],
                                       space: TupleSpace, remote: RemoteClient) -> None:
        """The IDL's exceptions arrive with their reason (a system exception would not)."""
        with pytest.raises(RemoteError) as raised:
            remote.call("get_event", templates=[text("TimeToLive = 5")])
        assert raised.value.name == "IDL:CosNotifyGrammars/InvalidTemplate:1.0"
        assert "Can be Overridden" in raised.value.reason
        with pytest.raises(RemoteError) as raised:
            remote.call("put", event=ev(""))
        assert raised.value.name == "IDL:CosNotifyEventHeap/InvalidEvent:1.0"
        assert "EventType" in raised.value.reason
        with pytest.raises(RemoteError) as raised:
            remote.call("wait_for_event", templates=[text("n: int = ?")], timeout_ms=300_001)
        assert raised.value.name == "IDL:CosNotifyEventHeap/LimitExceeded:1.0"
        assert raised.value.limit == 300_000
        with pytest.raises(RemoteError) as raised:
            remote.call("space", on=None, as_="nothing", channel=99)
        assert raised.value.name == "IDL:omg.org/CosNotifyChannelAdmin/ChannelNotFound:1.0"


class TestClients:
    """CosNotifyEventHeap::Client: the seed's EventHeap object over IIOP."""

    def test_a_remote_client_is_stamped_and_sequenced(self, space: TupleSpace,
                                                      remote: RemoteClient) -> None:
        """Tables 1 and 3 and "Event Heap Client Responsibilities", over IIOP."""
        remote.call("connect", as_="me", source="sensor-9", application="app")
        remote.call("put", on="me", event=ev("T", n=1))
        remote.call("put", on="me", event=ev("T", n=2))
        found = space.get_all()
        assert [field(t, "Source") for t in found] == ["sensor-9"] * 2
        assert [field(t, "SequenceNum") for t in found] == [1, 2]
        session = remote.call("session_id", on="me")
        assert {field(t, "SessionID") for t in found} == {session}
        assert remote.call("info", on="me") == "sensor-9"
        got = [remote.call("get_event", on="me", templates=[text('EventType = "T"')])
               for _ in range(3)]
        assert [[t["fields"]["n"] for t in g] for g in got] == [[1], [2], []]

    def test_reconnecting_replaces_the_old_client(self, space: TupleSpace,
                                                  remote: RemoteClient) -> None:
        """"Only one Source of a given name may be active": a second connect with the
        Source replaces the first, whose reference then answers OBJECT_NOT_EXIST; the new
        one carries on the session; disconnect ends it."""
        remote.call("connect", as_="first", source="me")
        remote.call("connect", as_="second", source="me")
        with pytest.raises(RemoteError) as raised:
            remote.call("get_all", on="first")
        assert raised.value.name == "IDL:omg.org/CORBA/OBJECT_NOT_EXIST:1.0"
        assert space.clients == ["me"]
        remote.call("disconnect", on="second")
        assert space.clients == []

    def test_a_client_whose_process_dies_is_ended(self, space: TupleSpace,
                                                  served: tuple[EventChannelFactory, str],
                                                  clock: ManualClock) -> None:
        """Review finding 3 ("A client whose process died without disconnect() stays"):
        its connection closes, the server is told, and CLIENT_GRACE later (no call came
        back) the client is ended and its Source is free."""
        from cosnotify.tuplespace.limits import CLIENT_GRACE

        dying = RemoteClient(served[1])
        try:
            dying.call("space", on=None, as_="space", channel=space.channel_id)
            dying.call("connect", as_="me", source="dying-7")
            assert dying.call("get_event", on="me", templates=[text('EventType = "A"')]) == []
            assert space.clients == ["dying-7"]
            dying.process.kill()
            dying.process.wait(WAIT)
            assert space.wait_for_lost(1, WAIT)
        finally:
            dying.close()
        clock.advance(CLIENT_GRACE - 1)
        assert space.clients == ["dying-7"]
        clock.advance(1)
        assert space.clients == []


class TestWaits:
    """waitForEvent and waitToRemoveEvent over IIOP, and how they end."""

    def test_a_remote_wait_takes_the_incoming_event(self, space: TupleSpace,
                                                    remote: RemoteClient) -> None:
        """Table 7 over IIOP: the incoming event is returned and not placed."""
        tag = remote.send("wait_to_remove_event", templates=[text('EventType = "Job"')],
                          timeout_ms=60_000)
        assert space.wait_for_waiters(1, WAIT)
        put = space.put_event(event("Job", n=1))
        assert [t["id"] for t in remote.answer(tag)] == [put]
        assert space.get_all() == []

    def test_a_remote_wait_times_out_with_nothing(self, space: TupleSpace, clock: ManualClock,
                                                  remote: RemoteClient) -> None:
        """A wait ends at its timeout_ms (the channel's clock) with zero tuples."""
        tag = remote.send("wait_for_event", templates=[text('EventType = "A"')],
                          timeout_ms=2_000)
        assert space.wait_for_waiters(1, WAIT)
        clock.advance(2.0)
        assert remote.answer(tag) == []

    def test_the_clients_own_call_timeout_ends_the_wait(self, space: TupleSpace,
                                                        remote: RemoteClient) -> None:
        """A client whose call times out closes its connection: the server's wait ends at
        once (the ConnectionWatch), and the next matching event stays in the space."""
        tag = remote.send("wait_to_remove_event", templates=[text('EventType = "Job"')],
                          timeout_ms=60_000, call_timeout_ms=300)
        with pytest.raises(RemoteError) as raised:
            remote.answer(tag)
        assert raised.value.name == "IDL:omg.org/CORBA/TIMEOUT:1.0"
        assert space.wait_for_waiters(0, WAIT)
        put = space.put_event(event("Job", n=1))
        assert [t.id for t in space.get_all()] == [put]

    def test_a_client_that_dies_ends_its_wait(self, space: TupleSpace,
                                              served: tuple[EventChannelFactory, str]) -> None:
        """Issue 21: waits "end cleanly when the client disconnects": a client process
        killed mid-wait takes nothing."""
        dying = RemoteClient(served[1])
        try:
            dying.call("space", on=None, as_="space", channel=space.channel_id)
            dying.send("wait_to_remove_event", templates=[text('EventType = "Job"')],
                       timeout_ms=60_000)
            assert space.wait_for_waiters(1, WAIT)
            dying.process.kill()
            dying.process.wait(WAIT)
            assert space.wait_for_waiters(0, WAIT)
        finally:
            dying.close()
        put = space.put_event(event("Job", n=1))
        assert [t.id for t in space.get_all()] == [put]

    def test_destroying_the_channel_ends_a_remote_wait(self, space: TupleSpace,
                                                       remote: RemoteClient) -> None:
        """A destroyed channel ends its space: the remote waiter gets OBJECT_NOT_EXIST."""
        tag = remote.send("wait_for_event", templates=[text('EventType = "A"')],
                          timeout_ms=60_000)
        assert space.wait_for_waiters(1, WAIT)
        space.channel.destroy()
        with pytest.raises(RemoteError) as raised:
            remote.answer(tag)
        assert raised.value.name == "IDL:omg.org/CORBA/OBJECT_NOT_EXIST:1.0"


class TestStreams:
    """Tables 11, 12 and 16 over IIOP: a stream to the client's StructuredPushConsumer."""

    def test_a_stream_pushes_to_a_remote_consumer(self, space: TupleSpace,
                                                  remote: RemoteClient) -> None:
        """registerForEvents delivers each matching event to the consumer the client
        passed, by the channel's own subscription; deregister ends it."""
        stream = remote.call("register_for_events", templates=[
            text('EventType = "A"'), text('EventType = "End"')])
        assert stream in space.channel.get_all_consumeradmins()
        for t in ("A", "B", "A", "End"):
            space.put_event(event(t))
        assert remote.call("pushed", on=None, count=3, timeout=WAIT) == ["A", "A", "End"]
        assert remote.call("deregister", stream=stream) is True
        assert remote.call("deregister", stream=stream) is False
        assert stream not in space.channel.get_all_consumeradmins()
        everything = remote.call("register_for_all")
        space.put_event(event("C"))
        assert remote.call("pushed", on=None, count=4, timeout=WAIT)[-1] == "C"
        assert [type_of(t) for t in space.get_all()] == ["A", "B", "A", "End", "C"]
        assert remote.call("deregister", stream=everything) is True


class TestConnectionWatch:
    """The ConnectionWatch's rules (cosnotify/tuplespace/corba.py), without a network:
    omniORB's call information and connection events are given by the test."""

    ADDRESS = "giop:tcp:127.0.0.1:40001"

    @pytest.fixture
    def in_a_call(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import omniORB

        monkeypatch.setattr(omniORB, "currentCallInfo",
                            lambda: {"operation": "wait", "peer_address": self.ADDRESS})

    def test_a_collocated_call_is_not_watched(self) -> None:
        """A call not made over a connection (no call information) has no Cancel."""
        with ConnectionWatch().watching() as cancel:
            assert cancel is None

    def test_a_failed_connection_cancels_its_calls(self, in_a_call: None) -> None:
        """omniORB's RECV_FAILED (or CLOSED...) for the caller's address cancels the wait;
        an event of another address does not."""
        from omniORB import ConnectionInfo

        watch = ConnectionWatch()
        with watch.watching() as cancel:
            assert cancel is not None and watch.watched == 1
            watch.connection_event(ConnectionInfo.RECV_FAILED, True, "giop:tcp:x:1", None)
            assert not cancel.cancelled
            watch.connection_event(ConnectionInfo.RECV_FAILED, True, self.ADDRESS, None)
            assert cancel.cancelled
        assert watch.watched == 0

    def test_a_connection_closed_before_the_wait_cancels_it_at_once(
            self, in_a_call: None) -> None:
        """A connection that closed before its call's wait began: the wait is cancelled at
        once; a new connection from the address is watched afresh."""
        from omniORB import ConnectionInfo

        watch = ConnectionWatch()
        watch.connection_event(ConnectionInfo.CLOSED, False, self.ADDRESS, None)
        with watch.watching() as cancel:
            assert cancel is not None and cancel.cancelled
        watch.connection_event(ConnectionInfo.ACCEPTED_CONNECTION, False, self.ADDRESS, None)
        with watch.watching() as cancel:
            assert cancel is not None and not cancel.cancelled

    def test_a_tuple_found_for_a_gone_caller_is_given_back(self, in_a_call: None) -> None:
        """waitToRemoveEvent whose caller went as its tuple was found: the servant gives the
        tuple back, so nothing is lost (only the reply, which had nowhere to go)."""
        from omniORB import ConnectionInfo

        import CosNotifyEventHeap as EH

        from cosnotify.tuplespace.corba import TupleSpaceServant

        with EventChannelFactory(clock=ManualClock()) as made:
            channel, _ = made.create_channel([], [])
            space = TupleSpace.of(channel)
            put = space.put_event(event("Job", n=1))
            watch = ConnectionWatch()
            watch.connection_event(ConnectionInfo.CLOSED, False, self.ADDRESS, None)
            servant = TupleSpaceServant(space, watch)
            spec = [EH.TemplateSpec(text='EventType = "Job"')]
            assert servant.wait_to_remove_event(spec, 10_000) == []
            assert [t.id for t in space.get_all()] == [put]
            assert [t.id for t in servant.remove_event(spec)] == [put]


def test_a_stream_to_a_corba_consumer_survives_a_restart(omniorb: Any, tmp_path: Path) -> None:
    """docs/history.md: a stream is an ordinary subscription, so on a Persistent channel a
    stream to a CORBA consumer is stored and restored after a restart like any other
    (Notification §2.5.5.1), and deregister still ends it (Table 16)."""
    from omniORB import CORBA

    import CosNotification as N
    import CosNotifyComm__POA

    from cosnotify.store.sqlite import SQLiteStore

    received: list[str] = []
    arrived = threading.Condition()

    class Consumer(CosNotifyComm__POA.StructuredPushConsumer):  # type: ignore[misc]
        def push_structured_event(self, ev: Any) -> None:
            with arrived:
                received.append(type_of(ev))
                arrived.notify_all()

        def offer_change(self, added: Any, removed: Any) -> None:
            pass

        def disconnect_structured_push_consumer(self) -> None:
            pass

    poa = omniorb.resolve_initial_references("RootPOA")
    consumer = Consumer()
    oid = poa.activate_object(consumer)
    persistent = [N.Property("ConnectionReliability", CORBA.Any(CORBA.TC_short, N.Persistent))]
    try:
        store = SQLiteStore(tmp_path / "store.db")
        with EventChannelFactory(store=store) as made:
            channel, channel_id = made.create_channel(persistent, [])
            stream = TupleSpace.of(channel).register_for_events(
                'EventType = "A"', poa.id_to_reference(oid))
        store.close()
        store = SQLiteStore(tmp_path / "store.db")
        try:
            with EventChannelFactory(store=store) as made:
                channel = made.get_event_channel(channel_id)
                assert stream in channel.get_all_consumeradmins()
                space = TupleSpace.of(channel)
                space.put_event(event("B"))
                space.put_event(event("A"))
                with arrived:
                    assert arrived.wait_for(lambda: received == ["A"], WAIT)
                assert space.deregister(stream)
                assert stream not in channel.get_all_consumeradmins()
        finally:
            store.close()
    finally:
        poa.deactivate_object(oid)
