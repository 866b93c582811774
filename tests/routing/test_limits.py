"""Limits and costs of routing at scale (docs/routing.md, "Limits", "Topology changes")."""

from __future__ import annotations

from typing import Any

import pytest
from omniORB import CORBA

import CosNotifyChannelAdmin as CA
import CosNotifyFilter as F

from cosnotify.__main__ import _parser
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.channel.service import ServiceConfig
from cosnotify.filter import constraints
from cosnotify.filter import filter as filter_module
from cosnotify.filter.paths import Form
from tests.channel.conftest import ClientFilter, structured, structured_supplier


def _factory(**config: Any) -> EventChannelFactory:
    return EventChannelFactory(ServiceConfig(**config))


def _obtain(admin: Any) -> Any:
    return admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)[0]


class TestMaxSubscriptions:
    def test_one_more_than_the_limit_is_refused_with_admin_limit_exceeded(self) -> None:
        """The service-wide limit counts proxy suppliers of every channel."""
        factory = _factory(max_subscriptions=2)
        first, _ = factory.create_channel([], [])
        second, _ = factory.create_channel([], [])
        _obtain(first._get_default_consumer_admin())
        _obtain(second._get_default_consumer_admin())
        with pytest.raises(CA.AdminLimitExceeded) as raised:
            _obtain(first._get_default_consumer_admin())
        limit = raised.value.admin_property_err
        assert (limit.name, limit.value.value()) == ("MaxSubscriptions", 2)
        assert factory._service.subscription_count == 2

    def test_a_destroyed_proxy_frees_its_place(self) -> None:
        factory = _factory(max_subscriptions=1)
        channel, _ = factory.create_channel([], [])
        admin = channel._get_default_consumer_admin()
        proxy = _obtain(admin)
        proxy.disconnect_structured_pull_supplier()
        assert _obtain(admin) is not None

    def test_a_destroyed_channel_frees_its_places(self) -> None:
        factory = _factory(max_subscriptions=1)
        channel, _ = factory.create_channel([], [])
        _obtain(channel._get_default_consumer_admin())
        channel.destroy()
        other, _ = factory.create_channel([], [])
        assert _obtain(other._get_default_consumer_admin()) is not None

    def test_event_service_proxies_are_refused_with_imp_limit(self) -> None:
        """CosEventChannelAdmin's obtain operations declare no exception."""
        factory = _factory(max_subscriptions=1)
        channel, _ = factory.create_channel([], [])
        admin = channel.for_consumers()
        admin.obtain_push_supplier()
        with pytest.raises(CORBA.IMP_LIMIT):
            admin.obtain_pull_supplier()

    def test_proxy_consumers_do_not_count(self) -> None:
        factory = _factory(max_subscriptions=1)
        channel, _ = factory.create_channel([], [])
        suppliers = channel._get_default_supplier_admin()
        for _ in range(3):
            suppliers.obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
        assert factory._service.subscription_count == 0

    def test_zero_means_no_limit(self) -> None:
        factory = _factory(max_subscriptions=0)
        channel, _ = factory.create_channel([], [])
        admin = channel._get_default_consumer_admin()
        for _ in range(5):
            _obtain(admin)
        assert factory._service.subscription_count == 5

    @pytest.mark.parametrize("config", [{"max_subscriptions": -1}, {"routing": "linear"}])
    def test_bad_configuration_is_refused(self, config: dict[str, Any]) -> None:
        with pytest.raises(ValueError, match="max_subscriptions|routing"):
            ServiceConfig(**config)

    def test_serve_takes_the_limit(self) -> None:
        assert _parser().parse_args(["serve"]).max_subscriptions == 100_000
        assert _parser().parse_args(["serve", "--max-subscriptions", "0"]).max_subscriptions == 0
        with pytest.raises(SystemExit):
            _parser().parse_args(["serve", "--max-subscriptions", "-5"])


class TestChangeCosts:
    def test_adding_constraints_does_not_rebuild_the_dispatch(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The dispatch is built on first use after a change, not on every change."""
        builds: list[int] = []
        real = constraints.bool_dispatch

        def counting(entries: Any, *args: Any) -> Any:
            builds.append(len(entries))
            return real(entries, *args)
        monkeypatch.setattr(filter_module, "bool_dispatch", counting)
        factory = _factory()
        channel, _ = factory.create_channel([], [])
        flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        for i in range(50):
            flt.add_constraints([F.ConstraintExp([], f"$n == {i}")])
        assert builds == []
        assert flt.match_structured(structured(fields={"n": 49})) is True
        assert flt.match_structured(structured(fields={"n": 50})) is False
        assert builds == [50]

    def test_a_filter_shared_by_many_proxies_is_indexed_once(self) -> None:
        factory = _factory()
        channel, _ = factory.create_channel([], [])
        admin = channel._get_default_consumer_admin()
        flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        flt.add_constraints([F.ConstraintExp([], "$n == 1"), F.ConstraintExp([], "$n > 5")])
        proxies = [_obtain(admin) for _ in range(10)]
        for proxy in proxies:
            proxy.add_filter(flt)
        stats = channel._router.stats()
        assert (stats["filters"], stats["constraints"]) == (1, 2)
        for proxy in proxies:
            proxy.remove_all_filters()
        stats = channel._router.stats()
        assert (stats["filters"], stats["constraints"]) == (0, 0)


def test_an_opaque_filter_is_asked_once_per_event_however_many_hold_it() -> None:
    factory = _factory(routing="index")
    channel, _ = factory.create_channel([], [])
    admin = channel._get_default_consumer_admin()
    opaque = ClientFilter()
    proxies = [_obtain(admin) for _ in range(5)]
    for proxy in proxies:
        proxy.add_filter(opaque)
        proxy.connect_structured_pull_consumer(None)
    supplier = structured_supplier(channel)
    supplier.push_structured_event(structured(fields={"n": 1}))
    assert opaque.calls == ["match_structured"]
    assert all(proxy.try_pull_structured_event()[1] for proxy in proxies)
    assert channel._router.stats()["opaque_filters"] == 1


class TestAuto:
    """routing="auto" (the default) scans while few proxy suppliers are connected."""

    def _channel(self, scan_below: int) -> tuple[Any, Any]:
        factory = _factory(routing="auto", scan_below=scan_below)
        channel, _ = factory.create_channel([], [])
        return channel, structured_supplier(channel)

    def _subscriber(self, channel: Any, n: int) -> Any:
        proxy = _obtain(channel._get_default_consumer_admin())
        flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        flt.add_constraints([F.ConstraintExp([], f"$n == {n}")])
        proxy.add_filter(flt)
        proxy.connect_structured_pull_consumer(None)
        return proxy

    def test_the_index_takes_over_past_scan_below(self, monkeypatch: pytest.MonkeyPatch) -> None:
        channel, supplier = self._channel(scan_below=2)
        asked: list[int] = []
        real = channel._router.receivers

        def receivers(event: Any) -> Any:
            asked.append(1)
            return real(event)
        monkeypatch.setattr(channel._router, "receivers", receivers)
        proxies = [self._subscriber(channel, n) for n in range(2)]
        supplier.push_structured_event(structured(fields={"n": 1}))
        assert asked == []  # two connected: scanned
        proxies.append(self._subscriber(channel, 2))
        for n in range(3):
            supplier.push_structured_event(structured(fields={"n": n}))
        assert asked == [1, 1, 1]
        got = []
        for proxy in proxies:
            found = []
            while True:
                event, ok = proxy.try_pull_structured_event()
                if not ok:
                    break
                found.append(event.filterable_data[0].value.value())
            got.append(found)
        assert got == [[0], [1, 1], [2]]


def test_equal_constraints_are_evaluated_once_per_event() -> None:
    """Ten proxies, each with its own filter of the same constraint: one evaluation.
    (Not a lone comparison, which the index decides without evaluating it:
    test_exact.py.)"""
    factory = _factory(routing="index")
    channel, _ = factory.create_channel([], [])
    admin = channel._get_default_consumer_admin()
    calls: list[int] = []
    proxies = []
    for _ in range(10):
        proxy = _obtain(admin)
        flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
        flt.add_constraints([F.ConstraintExp([], "$n > 1 and $n != 5")])
        entry = flt._state.entries[0]
        real = entry.compiled.structured

        def counting(event: Any, real: Any = real) -> bool:
            calls.append(1)
            return bool(real(event))
        object.__setattr__(entry.compiled, "structured", counting)
        proxy.add_filter(flt)
        proxy.connect_structured_pull_consumer(None)
        proxies.append(proxy)
    supplier = structured_supplier(channel)
    supplier.push_structured_event(structured(fields={"n": 2}))
    assert len(calls) == 1
    assert all(proxy.try_pull_structured_event()[1] for proxy in proxies)


class TestWindows:
    """``$x >= a and $x < b`` is one BETWEEN term: only windows around a value are
    candidates (docs/routing.md)."""

    def test_a_numeric_window_is_one_between_term(self) -> None:
        from cosnotify.filter.decompose import decompose
        from cosnotify.filter.parser import parse_constraint
        from cosnotify.routing.terms import Kind

        (term,) = decompose(parse_constraint("$x >= 10 and $x < 20")) or ()
        assert term.kind is Kind.BETWEEN and term.keys == (("n", 10.0), ("n", 20.0))
        (term,) = decompose(parse_constraint("$x >= 'a' and $x < 'c'")) or ()
        assert term.kind is Kind.LOWER  # characters compare as strings too: no window

    def test_only_windows_around_the_value_are_candidates(self) -> None:
        factory = _factory(routing="index")
        channel, _ = factory.create_channel([], [])
        admin = channel._get_default_consumer_admin()
        proxies = []
        for low in range(0, 1000, 10):
            proxy = _obtain(admin)
            flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
            flt.add_constraints([F.ConstraintExp([], f"$x >= {low} and $x < {low + 10}")])
            proxy.add_filter(flt)
            proxy.connect_structured_pull_consumer(None)
            proxies.append(proxy)
        event = structured(fields={"x": 505})
        found = [posting for postings, _, _ in channel._router.index.candidates(
            event, Form.STRUCTURED, ("Telecom", "CommunicationsAlarm")) for posting in postings]
        assert len(found) <= 2  # [500, 510) and, inclusively, nothing else
        structured_supplier(channel).push_structured_event(event)
        assert [i for i, p in enumerate(proxies) if p.try_pull_structured_event()[1]] == [50]


@pytest.mark.parametrize("text", ["$a == 0 or $a == 0", "$a > 0 or $a > 0",
                                  "'x' in $s or 'x' in $s",
                                  "($a >= 0 and $a < 1) or ($a >= 0 and $a < 1)"])
def test_a_repeated_term_is_posted_and_withdrawn_once(text: str) -> None:
    """Postings under one key are a set: a term that a constraint repeats is posted
    once, and removing the constraint withdraws it cleanly."""
    factory = _factory(routing="index")
    channel, _ = factory.create_channel([], [])
    proxy = _obtain(channel._get_default_consumer_admin())
    flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
    flt.add_constraints([F.ConstraintExp([], text)])
    proxy.add_filter(flt)
    assert channel._router.index.slot_count == 1
    flt.remove_all_constraints()
    assert (len(channel._router.index), channel._router.index.slot_count) == (0, 0)
