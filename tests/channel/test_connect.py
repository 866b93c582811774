"""Connecting, suspending and disconnecting proxies (sections 3.4.9-3.4.14; TAO ConnectDisconnect)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from omniORB import CORBA

import CosEventChannelAdmin as ECA
import CosEventComm
import CosNotification as N
import CosNotifyChannelAdmin as CA
import TimeBase

from cosnotify.channel.clock import ManualClock
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.service import ServiceConfig
from tests.channel.conftest import (
    WAIT,
    PullSupplier,
    StructuredPushConsumer,
    number,
    same_any,
    structured,
)


def structured_push_supplier_proxy(channel: Any) -> Any:
    proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)
    proxy.connect_structured_push_supplier(None)
    return proxy


class TestConnect:
    def test_second_connect_raises_already_connected(self, channel: Any) -> None:
        """Connecting an already connected proxy raises AlreadyConnected."""
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(StructuredPushConsumer())
        with pytest.raises(ECA.AlreadyConnected):
            proxy.connect_structured_push_consumer(StructuredPushConsumer())

    def test_consumer_without_the_operation_raises_type_error(self, channel: Any) -> None:
        """A push consumer that cannot receive structured events is refused with TypeError."""
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        with pytest.raises(ECA.TypeError):
            proxy.connect_structured_push_consumer(object())

    def test_pull_supplier_without_try_pull_raises_type_error(self, channel: Any) -> None:
        """A pull supplier the channel cannot pull from is refused with TypeError."""
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_pull_consumer(
            CA.STRUCTURED_EVENT)
        with pytest.raises(ECA.TypeError):
            proxy.connect_structured_pull_supplier(object())

    def test_nil_push_consumer_is_bad_param(self, channel: Any) -> None:
        """A push proxy cannot serve a nil consumer: BAD_PARAM."""
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.ANY_EVENT)
        with pytest.raises(CORBA.BAD_PARAM):
            proxy.connect_any_push_consumer(None)

    def test_push_before_connect_raises_disconnected(self, channel: Any) -> None:
        """Pushing to a proxy consumer nobody connected raises Disconnected."""
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)
        with pytest.raises(CosEventComm.Disconnected):
            proxy.push_structured_event(structured())


class TestSuspendResume:
    def test_suspend_and_resume_state_errors(self, channel: Any) -> None:
        """NotConnected before connect; ConnectionAlreadyInactive/Active on repeats."""
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        with pytest.raises(CA.NotConnected):
            proxy.suspend_connection()
        with pytest.raises(CA.NotConnected):
            proxy.resume_connection()
        proxy.connect_structured_push_consumer(StructuredPushConsumer())
        with pytest.raises(CA.ConnectionAlreadyActive):
            proxy.resume_connection()
        proxy.suspend_connection()
        with pytest.raises(CA.ConnectionAlreadyInactive):
            proxy.suspend_connection()
        proxy.resume_connection()

    def test_suspended_push_supplier_queues_then_delivers_everything(self, channel: Any) -> None:
        """Events arriving while suspended are queued and delivered on resume (3.4.12.2)."""
        consumer = StructuredPushConsumer()
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(consumer)
        proxy.suspend_connection()
        supplier = structured_push_supplier_proxy(channel)
        for i in range(10):
            supplier.push_structured_event(structured(fields={"n": i}))
        assert proxy.pending == 10 and consumer.received == []
        proxy.resume_connection()
        assert consumer.wait_for(10)
        assert [number(e) for e in consumer.received] == list(range(10))

    def test_suspended_pull_consumer_stops_polling(self, manual_channel: Any, clock: Any) -> None:
        """A suspended pull-style proxy consumer does not call its supplier (3.4.9.2)."""
        dispatcher = manual_channel._service.dispatcher
        supplier = PullSupplier()
        proxy, _ = manual_channel._get_default_supplier_admin().obtain_notification_pull_consumer(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_supplier(supplier)
        assert dispatcher.wait_idle()
        clock.advance(1.0)  # one pull_interval: a second poll
        assert dispatcher.wait_idle()
        assert supplier.polls == 2
        proxy.suspend_connection()
        for _ in range(5):
            clock.advance(1.0)
            assert dispatcher.wait_idle()
        assert supplier.polls == 2
        proxy.resume_connection()
        assert dispatcher.wait_idle()
        assert supplier.polls == 3


class TestDisconnect:
    def test_blocked_pull_wakes_with_disconnected(self, channel: Any) -> None:
        """A consumer blocked in pull gets Disconnected when the proxy is destroyed."""
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.STRUCTURED_EVENT)
        proxy.connect_structured_pull_consumer(None)
        outcome: list[BaseException] = []
        started = threading.Event()

        def puller() -> None:
            started.set()
            try:
                proxy.pull_structured_event()
            except BaseException as exc:  # noqa: BLE001 - recorded for the assertion
                outcome.append(exc)

        thread = threading.Thread(target=puller)
        thread.start()
        assert started.wait(WAIT)
        proxy._destroy()
        thread.join(WAIT)
        assert not thread.is_alive()
        assert len(outcome) == 1 and isinstance(outcome[0], CosEventComm.Disconnected)

    def test_pull_after_disconnect_raises_disconnected(self, channel: Any) -> None:
        """Pulling from a proxy whose consumer disconnected raises Disconnected."""
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_pull_supplier(
            CA.ANY_EVENT)
        proxy.connect_any_pull_consumer(None)
        proxy.disconnect_pull_supplier()
        with pytest.raises(CosEventComm.Disconnected):
            proxy.try_pull()

    def test_connect_disconnect_loop(self, channel: Any) -> None:
        """TAO ConnectDisconnect: many connect/disconnect cycles, events still flow after."""
        admin = channel._get_default_consumer_admin()
        supplier = structured_push_supplier_proxy(channel)
        for i in range(50):
            proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
            consumer = StructuredPushConsumer()
            proxy.connect_structured_push_consumer(consumer)
            supplier.push_structured_event(structured(fields={"n": i}))
            assert consumer.wait_for(1)
            proxy.disconnect_structured_push_supplier()
        assert admin._get_push_suppliers() == []
        assert channel._router.connected == 0  # the index routes to none of them
        admin._list_routes()  # the scan lists its routes again lazily, before its next event
        assert admin._routes == ()

    def test_event_service_style_proxies(self, channel: Any) -> None:
        """Event Service style proxies connect with connect_push_* and carry Anys."""
        from tests.channel.conftest import AnyPushConsumer

        consumer = AnyPushConsumer()
        es_consumer_admin = channel.for_consumers()
        es_supplier_admin = channel.for_suppliers()
        out = es_consumer_admin.obtain_push_supplier()
        out.connect_push_consumer(consumer)
        with pytest.raises(ECA.AlreadyConnected):
            out.connect_push_consumer(AnyPushConsumer())
        entry = es_supplier_admin.obtain_push_consumer()
        entry.connect_push_supplier(None)
        entry.push(CORBA.Any(CORBA.TC_string, "hello"))
        assert consumer.wait_for(1)
        assert same_any(consumer.received[0], CORBA.Any(CORBA.TC_string, "hello"))


@pytest.fixture
def reconnecting() -> Iterator[Any]:
    """A channel of a factory with ``allow_reconnect`` (TAO's -AllowReconnect), on a
    manual clock: a backed-off retry waits for the test to move it."""
    config = ServiceConfig(pull_interval=1.0, slow_push=0, allow_reconnect=True)
    with EventChannelFactory(config, clock=ManualClock()) as factory:
        yield factory.create_channel([], [])[0]


class Hanging:
    """An old client whose call is under way when its proxy is reconnected; the call
    then fails with ``error``."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.entered = threading.Event()
        self.release = threading.Event()

    def _call(self) -> Any:
        self.entered.set()
        assert self.release.wait(WAIT)
        raise self.error

    def try_pull_structured_event(self) -> Any:
        return self._call()

    def push_structured_event(self, event: Any) -> None:
        self._call()

    def disconnect_structured_pull_supplier(self) -> None: ...
    def disconnect_structured_push_consumer(self) -> None: ...


OLD_FAILURES = [CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO),
                CORBA.TRANSIENT(0, CORBA.COMPLETED_NO)]


class TestReconnectDuringACall:
    """Section 2.5.5.1: "Clients which then re-instantiate objects with these references
    will (logically) reconnect to their associated proxies"; with allow_reconnect, a
    call to the old client that fails after the new one connected is not the new one's
    failure: it neither destroys the proxy (Disconnected or OBJECT_NOT_EXIST) nor backs
    it off (Retries and RetryInterval) (review 129)."""

    @pytest.mark.parametrize("error", OLD_FAILURES, ids=lambda e: type(e).__name__)
    def test_a_failed_poll_of_the_old_supplier_keeps_the_new_connection(
            self, reconnecting: Any, error: Exception) -> None:
        """The new pull supplier is polled at once, and its event goes through."""
        channel = reconnecting
        consumer = StructuredPushConsumer()
        out, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        out.connect_structured_push_consumer(consumer)
        proxy, _ = channel._get_default_supplier_admin().obtain_notification_pull_consumer(
            CA.STRUCTURED_EVENT)
        old = Hanging(error)
        proxy.connect_structured_pull_supplier(old)
        assert old.entered.wait(WAIT)
        try:
            proxy.connect_structured_pull_supplier(PullSupplier([structured(fields={"n": 1})]))
        finally:
            old.release.set()
        assert channel._service.dispatcher.wait_idle()
        assert not proxy.destroyed
        assert consumer.wait_for(1)  # no clock moved: polled with no backoff
        assert number(consumer.received[0]) == 1 and proxy._failures == 0

    @pytest.mark.parametrize("error", OLD_FAILURES, ids=lambda e: type(e).__name__)
    def test_a_failed_push_to_the_old_consumer_keeps_the_new_connection(
            self, reconnecting: Any, error: Exception) -> None:
        """The new push consumer gets the event at once, the one whose push failed."""
        channel = reconnecting
        proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)
        old = Hanging(error)
        proxy.connect_structured_push_consumer(old)
        structured_push_supplier_proxy(channel).push_structured_event(
            structured(fields={"n": 1}))
        assert old.entered.wait(WAIT)
        new = StructuredPushConsumer()
        try:
            proxy.connect_structured_push_consumer(new)
        finally:
            old.release.set()
        assert channel._service.dispatcher.wait_idle()
        assert not proxy.destroyed
        assert new.wait_for(1)  # no clock moved: delivered with no backoff
        assert number(new.received[0]) == 1 and proxy._failures == 0

    def test_a_failed_resend_to_the_old_consumer_keeps_the_new_connection(
            self, reconnecting: Any) -> None:
        """An Ack proxy's resend (section 3.7.7.1) to the old consumer that fails with
        OBJECT_NOT_EXIST after a new one connected leaves the proxy to the new one,
        which is given the unacknowledged event."""
        channel = reconnecting
        clock = channel._service.clock
        admin = channel._get_default_consumer_admin()
        admin.set_qos([N.Property("DeliveryReliability", CORBA.Any(CORBA.TC_short, 1)),
                       N.Property("RetryInterval", CORBA.Any(TimeBase._tc_TimeT, 10_000_000))])
        proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)

        class TakesOneThenHangs(Hanging):
            given = 0

            def push_structured_event(self, event: Any) -> None:
                self.given += 1
                if self.given > 1:  # the resend: never acknowledged, given again
                    self._call()

        old = TakesOneThenHangs(CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO))
        proxy.connect_structured_push_consumer(old)
        structured_push_supplier_proxy(channel).push_structured_event(
            structured(fields={"n": 1}))
        assert channel._service.dispatcher.wait_idle() and old.given == 1
        clock.advance(1.0)  # RetryInterval: the resend
        assert old.entered.wait(WAIT)
        new = StructuredPushConsumer()
        try:
            proxy.connect_structured_push_consumer(new)
        finally:
            old.release.set()
        for _ in range(5):
            assert channel._service.dispatcher.wait_idle()
            if new.received:
                break
            clock.advance(1.0)
        assert not proxy.destroyed
        assert [number(e) for e in new.received] == [1]
