"""FilterAdmin operations and filtering at every stage (section 2.3; TAO Filter)."""

from __future__ import annotations

from typing import Any

import pytest

import CosNotifyChannelAdmin as CA
import CosNotifyFilter

from tests.channel.conftest import CountingFilter, StructuredPushConsumer, number, structured


def is_even(event: Any) -> bool:
    return number(event) % 2 == 0


def below(limit: int) -> Any:
    return lambda event: number(event) < limit


def supplier(channel: Any, admin: Any = None) -> Any:
    admin = admin or channel._get_default_supplier_admin()
    proxy, _ = admin.obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
    proxy.connect_structured_push_supplier(None)
    return proxy


def consumer(admin: Any) -> tuple[Any, StructuredPushConsumer]:
    proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
    sink = StructuredPushConsumer()
    proxy.connect_structured_push_consumer(sink)
    return proxy, sink


def send(proxy: Any, count: int) -> None:
    for i in range(count):
        proxy.push_structured_event(structured(fields={"n": i}))


def settle(channel: Any) -> None:
    assert channel._service.dispatcher.wait_idle()


class TestFilterAdmin:
    @pytest.mark.parametrize("target", ["consumer_admin", "supplier_admin", "proxy_supplier",
                                        "proxy_consumer"])
    def test_add_get_remove_and_remove_all(self, channel: Any, target: str) -> None:
        """TAO Filter: ids are unique, get_filter finds each, remove raises FilterNotFound twice."""
        obj = {
            "consumer_admin": lambda: channel._get_default_consumer_admin(),
            "supplier_admin": lambda: channel._get_default_supplier_admin(),
            "proxy_supplier": lambda: channel._get_default_consumer_admin()
            .obtain_notification_push_supplier(CA.STRUCTURED_EVENT)[0],
            "proxy_consumer": lambda: channel._get_default_supplier_admin()
            .obtain_notification_push_consumer(CA.STRUCTURED_EVENT)[0],
        }[target]()
        filters = [CountingFilter() for _ in range(3)]
        ids = [obj.add_filter(f) for f in filters]
        assert len(set(ids)) == 3
        assert obj.get_all_filters() == ids
        for filter_id, f in zip(ids, filters):
            assert obj.get_filter(filter_id) is f
        obj.remove_filter(ids[1])
        assert obj.get_all_filters() == [ids[0], ids[2]]
        with pytest.raises(CosNotifyFilter.FilterNotFound):
            obj.remove_filter(ids[1])
        with pytest.raises(CosNotifyFilter.FilterNotFound):
            obj.get_filter(ids[1])
        obj.remove_all_filters()
        assert obj.get_all_filters() == []


class TestStages:
    def test_proxy_supplier_filter(self, channel: Any) -> None:
        """A proxy supplier's filter decides what its consumer gets."""
        proxy, sink = consumer(channel._get_default_consumer_admin())
        proxy.add_filter(CountingFilter(is_even))
        send(supplier(channel), 10)
        settle(channel)
        assert [number(e) for e in sink.received] == [0, 2, 4, 6, 8]

    def test_proxy_consumer_filter_drops_for_everyone(self, channel: Any) -> None:
        """A proxy consumer's filter discards events before any consumer sees them."""
        entry = supplier(channel)
        entry.add_filter(CountingFilter(below(3)))
        _, first = consumer(channel._get_default_consumer_admin())
        _, second = consumer(channel._get_default_consumer_admin())
        send(entry, 6)
        settle(channel)
        assert [number(e) for e in first.received] == [0, 1, 2]
        assert [number(e) for e in second.received] == [0, 1, 2]

    def test_supplier_admin_filter_applies_to_its_proxies(self, channel: Any) -> None:
        """A supplier admin's filter applies to events from all its proxy consumers."""
        admin, _ = channel.new_for_suppliers(CA.AND_OP)
        admin.add_filter(CountingFilter(is_even))
        _, sink = consumer(channel._get_default_consumer_admin())
        send(supplier(channel, admin), 6)
        settle(channel)
        assert [number(e) for e in sink.received] == [0, 2, 4]

    def test_and_operator_needs_both_sets(self, channel: Any) -> None:
        """AND_OP: an event passes only if the admin set and the proxy set both pass."""
        admin, _ = channel.new_for_consumers(CA.AND_OP)
        admin.add_filter(CountingFilter(is_even))
        proxy, sink = consumer(admin)
        proxy.add_filter(CountingFilter(below(5)))
        send(supplier(channel), 10)
        settle(channel)
        assert [number(e) for e in sink.received] == [0, 2, 4]

    def test_or_operator_needs_either_set(self, channel: Any) -> None:
        """OR_OP: an event passes if the admin set or the proxy set passes."""
        admin, _ = channel.new_for_consumers(CA.OR_OP)
        admin.add_filter(CountingFilter(is_even))
        proxy, sink = consumer(admin)
        proxy.add_filter(CountingFilter(below(5)))
        send(supplier(channel), 10)
        settle(channel)
        assert [number(e) for e in sink.received] == [0, 1, 2, 3, 4, 6, 8]

    def test_filters_in_one_set_are_ored(self, channel: Any) -> None:
        """Two filters on one proxy: an event passes if either matches."""
        proxy, sink = consumer(channel._get_default_consumer_admin())
        proxy.add_filter(CountingFilter(lambda e: number(e) == 1))
        proxy.add_filter(CountingFilter(lambda e: number(e) == 7))
        send(supplier(channel), 10)
        settle(channel)
        assert [number(e) for e in sink.received] == [1, 7]

    def test_admin_filter_evaluated_once_per_event(self, channel: Any) -> None:
        """Section 2.1.2: an admin's filters run once per event, not once per proxy."""
        admin, _ = channel.new_for_consumers(CA.AND_OP)
        shared = CountingFilter(is_even)
        admin.add_filter(shared)
        sinks = [consumer(admin)[1] for _ in range(5)]
        send(supplier(channel), 8)
        settle(channel)
        assert shared.calls == 8
        assert all([number(e) for e in s.received] == [0, 2, 4, 6] for s in sinks)

    def test_failing_filter_does_not_match(self, channel: Any) -> None:
        """A filter that raises counts as no match; delivery to others continues."""
        proxy, sink = consumer(channel._get_default_consumer_admin())

        def boom(event: Any) -> bool:
            raise RuntimeError("filter crashed")

        proxy.add_filter(CountingFilter(boom))
        _, other = consumer(channel._get_default_consumer_admin())
        send(supplier(channel), 3)
        settle(channel)
        assert sink.received == [] and len(other.received) == 3
