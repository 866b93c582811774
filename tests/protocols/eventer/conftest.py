"""Fixtures of the Eventer front end's tests: a core with a store, a loop, the front end,
and hat-event 0.8.17's own client to talk to it (docs/protocols.md, "Eventer")."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

import cosnotify.corba  # noqa: F401 - omniORB first
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.protocols import Context
from cosnotify.protocols.eventer import start
from cosnotify.protocols.listener import FrontEnd, Limits, Loop
from cosnotify.store.sqlite import SQLiteStore

T = TypeVar("T")

#: Seconds any wait in these tests may take before it fails: a bound on a hang, not a
#: speed (the query of 3,000 ids takes 2 s alone, and timed out at 10 under 8 workers).
WAIT = 30.0
#: The server id the front ends of these tests give (EventId.server).
SERVER_ID = 7


class Served:
    """A running Eventer front end over a factory with an SQLite store."""

    def __init__(self, path: Path, limits: Limits | None = None) -> None:
        self.store = SQLiteStore(path)
        self.factory = EventChannelFactory(store=self.store)
        self.loop = Loop()
        self.context = Context(self.factory, self.loop, SERVER_ID)
        self.front_end: FrontEnd = start(self.context, "127.0.0.1", 0, limits=limits)
        self.channel = self.context.channel(None)

    @property
    def address(self) -> str:
        return f"tcp+sbs://127.0.0.1:{self.front_end.address[1]}"

    def close(self) -> None:
        self.front_end.close()
        self.loop.close()
        self.factory.close()
        self.store.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    made = Served(tmp_path / "store.db")
    yield made
    made.close()


@pytest.fixture
def strict(tmp_path: Path) -> Iterator[Served]:
    """A front end with small limits: 4 KiB frames, a 0.5 s read timeout."""
    made = Served(tmp_path / "store.db", Limits(max_frame=4096, read_timeout=0.5))
    yield made
    made.close()


def run(coroutine_function: Callable[[], Awaitable[T]]) -> T:
    """Run a hat-event client coroutine to its end (bounded by WAIT)."""
    async def bounded() -> T:
        return await asyncio.wait_for(coroutine_function(), WAIT)

    return asyncio.run(bounded())


def raw(served: Served) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", served.front_end.address[1]), timeout=WAIT)
    return sock


def closed_by_peer(sock: socket.socket, timeout: float = WAIT) -> bool:
    """True once the server closed ``sock`` (it reads to the end within ``timeout``)."""
    sock.settimeout(timeout)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


class Recorder:
    """An in-process StructuredPushConsumer that records what it gets."""

    def __init__(self) -> None:
        self.received: list[Any] = []
        self.cond = threading.Condition()

    def push_structured_event(self, event: Any) -> None:
        with self.cond:
            self.received.append(event)
            self.cond.notify_all()

    def disconnect_structured_push_consumer(self) -> None:
        pass

    def offer_change(self, added: Any, removed: Any) -> None:
        pass

    def wait_for(self, count: int, timeout: float = WAIT) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: len(self.received) >= count, timeout)


def binary(data: bytes) -> Any:
    import hat.event.common as hc

    return hc.EventPayload(hc.EventPayloadType.BINARY, data)


@pytest.fixture
def stored(served: Served) -> list[Any]:
    """Four events, each its own request: E1 (q,a,x; source 100; binary 1), E2 (q,a,y; no
    source; json), E3 (q,b,x; source 300; sbs), E4 (q,a,x; source 50; binary 1)."""
    import hat.event.common as hc
    from hat.event.eventer import client as hat_client

    async def go() -> list[Any]:
        client = await hat_client.connect(served.address)
        made = []
        for event in (
                hc.RegisterEvent(("q", "a", "x"), hc.Timestamp(100, 0), binary(b"1")),
                hc.RegisterEvent(("q", "a", "y"), None,
                                 hc.EventPayload(hc.EventPayloadType.JSON, {"v": 2})),
                hc.RegisterEvent(("q", "b", "x"), hc.Timestamp(300, 0),
                                 hc.EventPayload(hc.EventPayloadType.SBS,
                                                 hc.SbsData("M", "T", b"\x01\x02"))),
                hc.RegisterEvent(("q", "a", "x"), hc.Timestamp(50, 0), binary(b"1"))):
            made.extend(await client.register_with_response([event]))
        await client.async_close()
        return made

    return run(go)
