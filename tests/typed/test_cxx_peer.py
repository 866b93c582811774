"""A C++ typed supplier (Debian's omniORB) through ``cosnotify serve --idl``.

Issue 20's real peer: tests/typed/cxx/typed_supplier.cc, compiled against
the user IDL (tests/typed/data/Coffee.idl) and against typed notification
stubs Debian's omniidl generates (cxx_peer.py), calls ``drinking_coffee`` on
the reference its TypedProxyPushConsumer gives. An omniORBpy typed push
consumer (this process: a ``CosTypedEventComm::TypedPushConsumer`` whose
``get_typed_consumer`` is a Coffee servant) gets the calls; a structured
consumer sees them as %TYPED events; an omniORBpy typed pull consumer
reads the same events through ``PullCoffee``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import CosNotifyChannelAdmin as CA

from cosnotify.typed.interfaces import TypedInterface
from tests.interop.notify import harness
from tests.server.conftest import ServeProcess
from tests.typed.conftest import DATA
from tests.typed.cxx_peer import build_typed_supplier
from tests.typed.servants import Calls, typed_push_consumer
from tests.typed.test_server import typed_factory

pytestmark = pytest.mark.interop

COUNT = 200


@pytest.fixture(scope="module")
def typed_supplier() -> Any:
    try:
        return build_typed_supplier()
    except harness.Unavailable as exc:
        pytest.skip(f"cannot build the C++ typed supplier: {exc}")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    made = ServeProcess(tmp_path_factory.mktemp("cxx-typed"), "--idl", str(DATA / "Coffee.idl"))
    yield made
    made.stop()


def test_a_cxx_typed_supplier(omniorb: Any, served: ServeProcess, coffee: TypedInterface,
                              typed_supplier: Any) -> None:
    channel, _ = typed_factory(omniorb, served).create_typed_channel([], [])
    try:
        consumers = channel._get_default_consumer_admin()
        servant = Calls()
        pusher, _ = consumers.obtain_typed_notification_push_supplier("Coffee")
        pusher.connect_typed_push_consumer(typed_push_consumer(coffee.skeleton,
                                                               servant.drinking))
        structured, _ = consumers.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        structured = structured._narrow(CA.StructuredProxyPullSupplier)
        structured.connect_structured_pull_consumer(None)
        puller, _ = consumers.obtain_typed_notification_pull_supplier("Coffee")
        puller.connect_typed_pull_consumer(None)
        pull = puller.get_typed_supplier()._narrow(coffee.pull_stub)

        with harness.Program([typed_supplier, omniorb.object_to_string(channel),
                              str(COUNT)]) as program:
            program.wait_line("done", timeout=120)
        with servant.cond:
            assert servant.cond.wait_for(lambda: len(servant.calls) >= COUNT, 60)
        assert servant.calls == [("cxx", n) for n in range(COUNT)]
        assert [pull.drinking_coffee() for _ in range(COUNT)] == [("cxx", n)
                                                                    for n in range(COUNT)]
        first = structured.pull_structured_event()
        assert first.header.fixed_header.event_type.type_name == "%TYPED"
        assert [p.value.value() for p in first.filterable_data] == [
            "::CoffeeTest::Coffee::drinking_coffee", "cxx", 0]
    finally:
        channel.destroy()



