"""Clients are reaped: a client that stopped calling, or whose connection closed, ends.

Provenance: the seed's "Event Heap Client Responsibilities" ("Source should be a
unique value, and it is suggested that a random integer be attached ... to
insure this is so"; "Clients should automatically reconnect to the server
anytime the connection goes down") and Table 1 ("Only one Source of a given name
may be active in an Event Heap at one time"); the review of the tuple space,
finding 3 ("Clients are never reaped ... after 10,000 client starts connect with
any new Source raises LimitExceeded"; "a reconnect leaves the old servant
activated"); docs/history.md, "Limits". Time is the channel's ManualClock.
"""

from __future__ import annotations

from typing import Any

import pytest
from omniORB import CORBA, ConnectionInfo

import CosNotifyEventHeap as EH

from cosnotify.channel.clock import ManualClock
from cosnotify.tuplespace import TupleSpace
from cosnotify.tuplespace import registry as registry_module
from cosnotify.tuplespace.corba import ConnectionWatch, TupleSpaceServant
from cosnotify.tuplespace.limits import CLIENT_GRACE, CLIENT_IDLE
from tests.tuplespace.conftest import event
from tests.tuplespace.test_waits import Call, waiting

ADDRESS = "giop:tcp:127.0.0.1:40001"
OTHER = "giop:tcp:127.0.0.1:40002"


class TestIdleClients:
    """docs/history.md: a client with no call begun or in progress for CLIENT_IDLE
    seconds is ended."""

    def test_an_idle_client_is_ended(self, space: TupleSpace, clock: ManualClock) -> None:
        """Each call keeps a client; CLIENT_IDLE seconds without one end it: its Source
        is free, its calls are OBJECT_NOT_EXIST, and what it asked to be told is told."""
        client = space.connect("app-1")
        told: list[str] = []
        client.on_end.append(lambda: told.append("ended"))
        clock.advance(CLIENT_IDLE - 1)
        assert client.get_event('EventType = "A"') is None  # heard from
        clock.advance(CLIENT_IDLE - 1)
        assert space.clients == ["app-1"] and told == []
        clock.advance(1)
        assert space.clients == [] and told == ["ended"]
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            client.put_event(event("A"))

    def test_a_waiting_client_is_not_idle(self, space: TupleSpace, clock: ManualClock,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
        """A wait in progress is a call in progress: a client blocked in a wait longer
        than the idle time is kept, and the end of its wait counts as hearing from it."""
        monkeypatch.setattr(registry_module, "CLIENT_IDLE", 100.0)
        client = space.connect("waiter")
        call = Call(client.wait_for_event, 'EventType = "A"', 250)
        waiting(space, 1)
        clock.advance(150)
        assert space.clients == ["waiter"]
        clock.advance(100)
        assert call.result() is None
        clock.advance(99)
        assert space.clients == ["waiter"]
        clock.advance(1)
        assert space.clients == []

    def test_dead_clients_free_their_places(self, space: TupleSpace, clock: ManualClock,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
        """Finding 3: clients started with random Sources that died without close() fill
        MAX_CLIENTS; once idle for CLIENT_IDLE they are gone and a new Source connects."""
        monkeypatch.setattr(registry_module, "MAX_CLIENTS", 3)
        for n in range(3):
            space.connect(f"app-{n}")
        with pytest.raises(EH.LimitExceeded):
            space.connect("fresh-app")
        clock.advance(CLIENT_IDLE)
        assert space.connect("fresh-app").active
        assert space.clients == ["fresh-app"]


class FakePOA:
    """What the servants ask of a POA: activation and deactivation, recorded."""

    def __init__(self) -> None:
        self.active: dict[bytes, Any] = {}
        self._ids = iter(range(1, 10_000))

    def activate_object(self, servant: Any) -> bytes:
        oid = str(next(self._ids)).encode()
        self.active[oid] = servant
        return oid

    def id_to_reference(self, oid: bytes) -> Any:
        return self.active[oid]

    def servant_to_id(self, servant: Any) -> bytes:
        for oid, found in self.active.items():
            if found is servant:
                return oid
        raise CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO)

    def deactivate_object(self, oid: bytes) -> None:
        del self.active[oid]


class Calls:
    """omniORB's call information, as if each call came over connection ``address``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import omniORB

        self.address = ADDRESS
        monkeypatch.setattr(omniORB, "currentCallInfo",
                            lambda: {"operation": "op", "peer_address": self.address})


class TestOverCorba:
    """docs/history.md: over CORBA a client whose connection closed and that calls no more
    within CLIENT_GRACE is ended, and a client's servant goes with its client."""

    def test_a_client_whose_connection_closed_is_ended(self, space: TupleSpace,
                                                       clock: ManualClock,
                                                       monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
        """A client process that died: its connection closes; CLIENT_GRACE later its client
        ends and its servant is deactivated."""
        calls, poa, watch = Calls(monkeypatch), FakePOA(), ConnectionWatch()
        servant = TupleSpaceServant(space, watch, poa)
        client_servant = servant.connect(EH.ClientInfo("worker-77", "", "", "", ""))
        assert client_servant.get_event([EH.TemplateSpec(text='EventType = "A"')]) == []
        assert watch.clients_watched == 1
        watch.connection_event(ConnectionInfo.CLOSED, False, calls.address, None)
        assert space.wait_for_lost(1, 0)
        clock.advance(CLIENT_GRACE - 1)
        assert space.clients == ["worker-77"] and len(poa.active) == 1
        clock.advance(1)
        assert space.clients == [] and poa.active == {}
        assert watch.clients_watched == 0

    def test_a_client_that_calls_again_is_kept(self, space: TupleSpace, clock: ManualClock,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
        """"Clients should automatically reconnect": a client that calls again within the
        grace, over a new connection, keeps its session; that connection is watched."""
        calls, poa, watch = Calls(monkeypatch), FakePOA(), ConnectionWatch()
        servant = TupleSpaceServant(space, watch, poa)
        client_servant = servant.connect(EH.ClientInfo("worker-77", "", "", "", ""))
        session = client_servant._get_session_id()
        watch.connection_event(ConnectionInfo.CLOSED, False, calls.address, None)
        calls.address = OTHER
        clock.advance(CLIENT_GRACE - 1)
        assert client_servant.get_event([EH.TemplateSpec(text='EventType = "A"')]) == []
        clock.advance(CLIENT_GRACE)
        assert space.clients == ["worker-77"] and client_servant._get_session_id() == session
        watch.connection_event(ConnectionInfo.CLOSED, False, OTHER, None)
        clock.advance(CLIENT_GRACE)
        assert space.clients == []

    def test_a_reconnect_deactivates_the_old_servant(self, space: TupleSpace,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
        """Table 1: one active Source of a name; connecting again replaces the client, and
        the replaced client's servant is deactivated (finding 3: "a reconnect leaves the old
        servant activated"); so is one that disconnects."""
        Calls(monkeypatch)
        poa, watch = FakePOA(), ConnectionWatch()
        servant = TupleSpaceServant(space, watch, poa)
        first = servant.connect(EH.ClientInfo("me", "", "", "", ""))
        second = servant.connect(EH.ClientInfo("me", "", "", "", ""))
        assert list(poa.active.values()) == [second]
        assert first._client.active is False
        second.disconnect()
        assert poa.active == {} and watch.clients_watched == 0
