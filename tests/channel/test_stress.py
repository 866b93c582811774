"""Concurrency: many threads connecting, pushing, pulling, filtering and destroying at once."""

from __future__ import annotations

import random
import threading
from typing import Any

from omniORB import CORBA

import CosEventComm
import CosNotifyChannelAdmin as CA

from tests.channel.conftest import WAIT, CountingFilter, StructuredPushConsumer, number, structured

EXPECTED = (CosEventComm.Disconnected, CORBA.OBJECT_NOT_EXIST, CA.ProxyNotFound,
            CA.AdminNotFound)


class TestStress:
    def test_concurrent_everything(self, channel: Any) -> None:
        """No deadlock, no lost event for steadily connected consumers, no leaked exception."""
        errors: list[BaseException] = []
        stop = threading.Event()
        pushed = 400
        steady = [StructuredPushConsumer() for _ in range(3)]
        for consumer in steady:
            proxy, _ = channel._get_default_consumer_admin().obtain_notification_push_supplier(
                CA.STRUCTURED_EVENT)
            proxy.connect_structured_push_consumer(consumer)
        barrier = threading.Barrier(9)

        def guarded(fn: Any) -> Any:
            def run() -> None:
                try:
                    barrier.wait(WAIT)
                    fn()
                except EXPECTED:
                    pass
                except BaseException as exc:  # noqa: BLE001 - collected for the assertion
                    errors.append(exc)
            return run

        def pusher(offset: int) -> Any:
            def run() -> None:
                proxy, _ = channel._get_default_supplier_admin().obtain_notification_push_consumer(
                    CA.STRUCTURED_EVENT)
                proxy.connect_structured_push_supplier(None)
                for i in range(pushed):
                    proxy.push_structured_event(structured(fields={"n": offset + i}))
            return run

        def churn() -> None:
            rng = random.Random(1)
            while not stop.is_set():
                admin, _ = channel.new_for_consumers(rng.choice([CA.AND_OP, CA.OR_OP]))
                proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
                proxy.connect_structured_push_consumer(StructuredPushConsumer())
                filter_id = proxy.add_filter(CountingFilter(lambda e: number(e) % 3 == 0))
                if rng.random() < 0.5:
                    proxy.remove_filter(filter_id)
                pull, _ = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
                pull.connect_structured_pull_consumer(None)
                pull.try_pull_structured_event()
                proxy.suspend_connection()
                proxy.resume_connection()
                if rng.random() < 0.5:
                    proxy.disconnect_structured_push_supplier()
                admin.destroy()

        def puller() -> None:
            admin = channel._get_default_consumer_admin()
            while not stop.is_set():
                proxy, _ = admin.obtain_notification_pull_supplier(CA.SEQUENCE_EVENT)
                proxy.connect_sequence_pull_consumer(None)
                for _ in range(20):
                    proxy.try_pull_structured_events(5)
                proxy.disconnect_sequence_pull_supplier()

        def qos() -> None:
            admin = channel._get_default_consumer_admin()
            while not stop.is_set():
                proxy, _ = admin.obtain_notification_push_supplier(CA.ANY_EVENT)
                proxy.get_qos()
                proxy.add_filter(CountingFilter())
                proxy.remove_all_filters()
                proxy._destroy()

        workers = [threading.Thread(target=guarded(pusher(k * 10_000))) for k in range(4)]
        background = [threading.Thread(target=guarded(fn)) for fn in (churn, churn, puller, qos)]
        for thread in workers + background:
            thread.start()
        barrier.wait(WAIT)
        for thread in workers:
            thread.join(60)
        stop.set()
        for thread in background:
            thread.join(60)
        assert not any(t.is_alive() for t in workers + background), "deadlock"
        assert errors == []
        for consumer in steady:
            assert consumer.wait_for(4 * pushed)
            got = [number(e) for e in consumer.received]
            assert sorted(got) == sorted(k * 10_000 + i for k in range(4) for i in range(pushed))
            for k in range(4):  # each supplier's events arrive in its order
                mine = [n for n in got if k * 10_000 <= n < (k + 1) * 10_000]
                assert mine == sorted(mine)
