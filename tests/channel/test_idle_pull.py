"""Pull consumers that stop pulling: ServiceConfig.idle_pull_consumer_timeout.

omniNotify destroys connected proxies idle for ``DeadConProxyInterval``; for
pull consumers cosnotify does the same when the limit is set, so a consumer
killed without disconnecting does not keep its proxy, and a queue of events,
for ever. A pull waiting in the proxy is activity. Time is a ManualClock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

import CosEventComm
import CosNotifyChannelAdmin as CA

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.service import ServiceConfig
from tests.channel.conftest import WAIT, PullConsumer, number, structured

TIMEOUT = 5.0


@pytest.fixture
def idle_factory(clock: ManualClock) -> Iterator[EventChannelFactory]:
    f = EventChannelFactory(ServiceConfig(idle_pull_consumer_timeout=TIMEOUT), clock=clock)
    yield f
    f.close()


def advance(factory: EventChannelFactory, clock: ManualClock, seconds: float) -> None:
    """Time passes; the idle check it may start (on a worker) is done on return."""
    clock.advance(seconds)
    assert factory.service.dispatcher.wait_idle()


def pull_proxy(channel: Any, consumer: Any) -> Any:
    proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_pull_consumer(consumer)
    return proxy


def push(channel: Any, *numbers: int) -> None:
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_push_supplier(None)
    for n in numbers:
        proxy.push_structured_event(structured(fields={"n": n}))


class TestIdlePullConsumers:
    def test_a_consumer_that_stops_pulling_loses_its_proxy(
            self, idle_factory: EventChannelFactory, clock: ManualClock) -> None:
        """No pull for the timeout destroys the proxy, tells the consumer, frees its events."""
        channel, _ = idle_factory.create_channel([], [])
        consumer = PullConsumer()
        proxy = pull_proxy(channel, consumer)
        push(channel, 1, 2, 3)
        advance(idle_factory, clock, TIMEOUT - 1)
        event, has_event = proxy.try_pull_structured_event()  # activity: the clock restarts
        assert has_event and number(event) == 1
        advance(idle_factory, clock, TIMEOUT - 1)
        assert not proxy.destroyed
        advance(idle_factory, clock, 1.0)  # TIMEOUT since the last pull
        assert proxy.destroyed
        assert consumer.disconnected.wait(WAIT)  # told, as when any proxy is destroyed
        assert proxy._queue.ready() == 0  # the two unpulled events were released
        with pytest.raises(CosEventComm.Disconnected):
            proxy.try_pull_structured_event()

    def test_a_pull_waiting_in_the_proxy_is_activity(
            self, idle_factory: EventChannelFactory, clock: ManualClock) -> None:
        """A consumer blocked in pull is active however long it waits."""
        channel, _ = idle_factory.create_channel([], [])
        proxy = pull_proxy(channel, PullConsumer())
        waiting = threading.Event()
        take = proxy._wait_and_take

        def announced(*args: Any) -> Any:
            waiting.set()
            return take(*args)

        proxy._wait_and_take = announced
        pulled: list[Any] = []
        puller = threading.Thread(target=lambda: pulled.append(proxy.pull_structured_event()))
        puller.start()
        assert waiting.wait(WAIT)
        advance(idle_factory, clock, TIMEOUT * 3)  # the consumer has been blocked in pull all along
        assert not proxy.destroyed
        push(channel, 7)
        puller.join(WAIT)
        assert [number(e) for e in pulled] == [7]
        advance(idle_factory, clock, TIMEOUT)
        assert proxy.destroyed

    def test_off_by_default(self, manual_channel: Any, clock: ManualClock) -> None:
        """A lasting subscription may wait long for a reader (spark_bridge)."""
        proxy = pull_proxy(manual_channel, PullConsumer())
        assert manual_channel._service.config.idle_pull_consumer_timeout == 0
        clock.advance(10 ** 6)
        assert not proxy.destroyed and proxy._idle_timer is None

    @pytest.mark.parametrize("value", [-1.0, float("inf"), float("nan")])
    def test_bad_values_are_refused(self, value: float) -> None:
        """Negative, infinite and NaN timeouts are refused by ServiceConfig."""
        with pytest.raises(ValueError, match="idle_pull_consumer_timeout"):
            ServiceConfig(idle_pull_consumer_timeout=value)

    def test_serve_option(self, capsys: pytest.CaptureFixture[str]) -> None:
        """``serve --idle-pull-timeout`` refuses a negative value with a usage error."""
        from cosnotify.__main__ import main

        with pytest.raises(SystemExit) as exited:
            main(["serve", "--idle-pull-timeout", "-3"])
        assert exited.value.code == 2
        assert "--idle-pull-timeout" in capsys.readouterr().err


def test_the_idle_check_and_its_teardown_run_on_a_worker(
        idle_factory: EventChannelFactory, clock: ManualClock) -> None:
    """A teardown writes to the store (a persistent channel's topology, its copies):
    not on the clock's thread, which every channel's timers share (a ManualClock runs
    its timers on the thread advancing it: this one)."""
    channel, _ = idle_factory.create_channel([], [])
    proxy = pull_proxy(channel, PullConsumer())
    ran_on: list[threading.Thread] = []
    teardown = proxy._teardown

    def recording(*args: Any, **kwargs: Any) -> None:
        ran_on.append(threading.current_thread())
        teardown(*args, **kwargs)

    proxy._teardown = recording
    advance(idle_factory, clock, TIMEOUT)
    assert proxy.destroyed and ran_on and threading.current_thread() not in ran_on
