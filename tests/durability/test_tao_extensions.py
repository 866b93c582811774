"""TAO's names and ReconnectionRegistry across restarts: in process and `cosnotify serve --db`."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import CosNotifyChannelAdmin as CA
import NotifyExt
import NotifyExt__POA
import NotifyMonitoringExt as M

from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.names import name_of
from tests.channel.conftest import WAIT
from tests.durability.conftest import PERSISTENT_QOS, reference
from tests.durability.test_reconnect import Service, again


class Callback(NotifyExt__POA.ReconnectionCallback):
    """Records each reconnect; signals on an event."""

    def __init__(self) -> None:
        self.told: list[Any] = []
        self.called = threading.Event()

    def reconnect(self, new_connection: Any) -> None:
        self.told.append(new_connection)
        self.called.set()

    def is_alive(self) -> bool:
        return True


class TestInProcessRestart:
    def test_names_survive_a_restart(self, reopen: Callable[[], EventChannelFactory]) -> None:
        """Persistent channels, admins and proxies come back with their names, still taken."""
        factory = reopen()
        channel, channel_id = factory.create_named_channel(PERSISTENT_QOS, [], "alpha")
        admin, admin_id = channel.named_new_for_consumers(CA.AND_OP, "ca")
        _, proxy_id = admin.obtain_named_notification_push_supplier(CA.STRUCTURED_EVENT, "p")

        factory = reopen()
        channel = factory.get_event_channel(channel_id)
        admin = channel.get_consumeradmin(admin_id)
        assert (channel.name, admin.name, name_of(admin.get_proxy_supplier(proxy_id))) == (
            "alpha", "ca", "p")
        with pytest.raises(M.NameAlreadyUsed):
            factory.create_named_channel([], [], "alpha")
        with pytest.raises(M.NameAlreadyUsed):
            channel.named_new_for_consumers(CA.AND_OP, "ca")
        with pytest.raises(M.NameAlreadyUsed):
            admin.obtain_named_notification_push_supplier(CA.ANY_EVENT, "p")

    def test_callbacks_survive_a_restart(self, reopen: Callable[[], EventChannelFactory],
                                         omniorb: Any) -> None:
        """A registered callback is stored, comes back with its id, and is told to reconnect."""
        callback = Callback()
        factory = reopen()
        kept = factory.register_callback(reference(omniorb, callback))
        gone = factory.register_callback(reference(omniorb, Callback()))
        factory.unregister_callback(gone)

        factory = reopen()
        assert list(factory.reconnection_registry.callbacks()) == [kept]
        assert factory.register_callback(reference(omniorb, Callback())) == gone + 1
        marker = reference(omniorb, Callback())
        assert factory.send_reconnect(marker) == 2
        assert callback.called.wait(WAIT)
        assert callback.told[0]._is_equivalent(marker)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    made = Service(tmp_path)
    yield made
    assert made.process.stop() == 0, "".join(made.process.log)


class TestServeRestart:
    def test_reconnect_after_serve_restarts(self, service: Service, omniorb: Any) -> None:
        """`cosnotify serve --db` restarted calls each callback's reconnect with the factory,
        and a named persistent channel keeps its name."""
        factory = again(lambda: omniorb.string_to_object(service.url)._narrow(
            M.EventChannelFactory))
        callback = Callback()
        factory.register_callback(reference(omniorb, callback)._narrow(
            NotifyExt.ReconnectionCallback))
        _, channel_id = factory.create_named_channel(PERSISTENT_QOS, [], "alpha")
        assert not callback.called.is_set()

        service.restart()
        assert callback.called.wait(WAIT), "".join(service.process.log)
        told = again(lambda: callback.told[0]._narrow(M.EventChannelFactory))
        assert again(told.get_all_channels) == [channel_id]
        with pytest.raises(M.NameAlreadyUsed):
            told.create_named_channel([], [], "alpha")
