"""Fixtures for the OES front end: the core in process, the listener on 127.0.0.1,
clients and contacts (tests/protocols/oes/client.py).

Source: /work/shared/seeds/object-eventing-service.txt, "Wire Protocol" and
"Processing Logic"; issue 22, item 4.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from omniORB import CORBA  # noqa: F401 - omniORB before the COS stubs

import cosnotify
from cosnotify.oes import Tree
from cosnotify.protocols import Context
from cosnotify.protocols.listener import Limits, Loop
from cosnotify.protocols.oes import OESFrontEnd, start
from tests.protocols.oes.client import Client, Contact


@pytest.fixture
def factory() -> Iterator[Any]:
    made = cosnotify.EventChannelFactory()
    yield made
    made.close()


@pytest.fixture
def loop() -> Iterator[Loop]:
    made = Loop(workers=4)
    yield made
    made.close()


@pytest.fixture
def context(factory: Any, loop: Loop) -> Context:
    return Context(factory, loop)


@pytest.fixture
def serve(context: Context) -> Iterator[Callable[..., OESFrontEnd]]:
    """Start front ends (closed at teardown): ``serve(**options)``."""
    made: list[OESFrontEnd] = []

    def serve_(**options: Any) -> OESFrontEnd:
        options.setdefault("limits", Limits(read_timeout=5.0))
        front_end = start(context, "127.0.0.1", 0, **options)
        made.append(front_end)
        return front_end

    yield serve_
    for front_end in made:
        front_end.close()


@pytest.fixture
def fe(serve: Callable[..., OESFrontEnd]) -> OESFrontEnd:
    return serve(explain=True)


@pytest.fixture
def tree(context: Context, fe: OESFrontEnd) -> Tree:
    """The tree the front end serves: the channel named ``default``'s."""
    return Tree.of(context.channel(None))


@pytest.fixture
def client(fe: OESFrontEnd) -> Iterator[Client]:
    made = Client(fe.address)
    yield made
    made.close()


@pytest.fixture
def contact() -> Iterator[Contact]:
    made = Contact()
    yield made
    made.close()


@pytest.fixture
def contacts() -> Iterator[Callable[..., Contact]]:
    made: list[Contact] = []

    def contact_(**options: Any) -> Contact:
        found = Contact(**options)
        made.append(found)
        return found

    yield contact_
    for found in made:
        found.close()
