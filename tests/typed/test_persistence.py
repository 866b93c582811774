"""Persistent typed channels: the loaded IDL is part of the topology (docs/typed.md).

A typed channel with ConnectionReliability and EventReliability Persistent
(section 2.5.5.1) comes back after a restart with its typed admins and
proxies, their keys, and the events they held -- calls a TypedProxyPullSupplier
had read for another operation's pull too. The IDL comes back from the store:
the file may be gone from the disk. A file given again is read from the disk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from omniORB import CORBA

import CosNotification as N

from cosnotify.channel import codec
from cosnotify.channel.durable import _event
from cosnotify.channel.event import from_structured
from cosnotify.channel.factory import EventChannelFactory
from cosnotify.store import Store
from cosnotify.typed.channel import TypedEventChannel, TypedEventChannelFactory
from tests.durability.conftest import DURABLE_QOS
from tests.typed.conftest import DATA
from tests.typed.inprocess import Recorder, settle

Opener = Callable[..., TypedEventChannelFactory]


@pytest.fixture
def opener(tmp_path: Path) -> Iterator[Opener]:
    """Open a typed factory over one SQLite file; each call closes the previous one
    and its store first, as a restarted process would."""
    from cosnotify.store.sqlite import SQLiteStore

    opened: list[tuple[TypedEventChannelFactory, Store]] = []

    def close_last() -> None:
        if opened:
            factory, store = opened.pop()
            factory.close()
            store.close()

    def reopen(*idl: Path, include: tuple[Path, ...] = ()) -> TypedEventChannelFactory:
        close_last()
        store = SQLiteStore(tmp_path / "store.db")
        try:
            factory = TypedEventChannelFactory(idl=idl, include=include, store=store)
        except BaseException:
            store.close()
            raise
        opened.append((factory, store))
        return factory

    yield reopen
    close_last()


@pytest.fixture
def coffee_idl(tmp_path: Path) -> Path:
    """A copy of Coffee.idl the test may delete or change."""
    path = tmp_path / "idl" / "Coffee.idl"
    path.parent.mkdir()
    path.write_text((DATA / "Coffee.idl").read_text())
    return path


def typed_proxies(channel: TypedEventChannel) -> tuple[Any, Any]:
    """A TypedProxyPushConsumer and a TypedProxyPullSupplier, Coffee, connected."""
    pusher, _ = channel._get_default_supplier_admin().obtain_typed_notification_push_consumer(
        "Coffee")
    pusher.connect_typed_push_supplier(None)
    puller, _ = channel._get_default_consumer_admin().obtain_typed_notification_pull_supplier(
        "Coffee")
    puller.connect_typed_pull_consumer(None)
    return pusher, puller


def test_a_typed_channel_comes_back_with_its_idl_from_the_store(
        opener: Opener, coffee_idl: Path) -> None:
    factory = opener(coffee_idl)
    channel, channel_id = factory.create_typed_channel(DURABLE_QOS, [])
    pusher, puller = typed_proxies(channel)
    coffee = pusher.get_typed_consumer()
    coffee.drinking_coffee("Jane", 5)
    coffee.cancel_coffee("Jo")
    coffee.drinking_coffee("Al", 7)
    settle(channel)
    # Jane's call is read, and kept for drinking_coffee, while cancel_coffee is pulled.
    assert puller.get_typed_supplier().try_cancel_coffee() == (True, "Jo")
    ids = (pusher._admin._id, pusher._id, puller._admin._id, puller._id)

    coffee_idl.unlink()  # the store keeps the IDL
    factory = opener()
    assert factory.get_all_typed_channels() == [channel_id]
    assert factory.get_all_channels() == []
    back = factory.get_typed_event_channel(channel_id)
    assert isinstance(back, TypedEventChannel)
    admin = back.get_consumeradmin(ids[2])
    puller = admin.get_proxy_supplier(ids[3])
    assert (type(puller).__name__, puller.interface.repo_id) == (
        "TypedProxyPullSupplier", "IDL:CoffeeTest/Coffee:1.0")
    pull = puller.get_typed_supplier()
    assert pull.try_drinking_coffee() == (True, "Jane", 5)  # the kept call was not lost
    assert pull.try_drinking_coffee() == (True, "Al", 7)
    assert pull.try_cancel_coffee() == (False, "")
    pusher = back.get_supplieradmin(ids[0]).get_proxy_consumer(ids[1])
    pusher.get_typed_consumer().cancel_coffee("Bo")  # still connected, still Coffee
    settle(back)
    assert pull.try_cancel_coffee() == (True, "Bo")


def test_calls_queued_for_a_typed_push_consumer_wait_for_it(
        opener: Opener, coffee_idl: Path) -> None:
    """An in-process client has no reference to keep: its TypedProxyPushSupplier comes
    back unconnected (docs/persistence.md), with the calls it held, for the next one."""
    factory = opener(coffee_idl)
    channel, channel_id = factory.create_typed_channel(DURABLE_QOS, [])
    proxy, proxy_id = channel._get_default_consumer_admin(
        ).obtain_typed_notification_push_supplier("Coffee")
    proxy.connect_typed_push_consumer(Recorder())
    proxy.suspend_connection()  # the calls wait in its queue, and in the store
    pusher, _ = typed_proxies(channel)
    pusher.get_typed_consumer().drinking_coffee("Jane", 5)
    settle(channel)
    admin_id = proxy._admin._id

    factory = opener()
    proxy = factory.get_typed_event_channel(channel_id).get_consumeradmin(
        admin_id).get_proxy_supplier(proxy_id)
    assert not proxy._connected
    recorder = Recorder()
    proxy.connect_typed_push_consumer(recorder)
    assert recorder.wait_for(1)
    assert recorder.calls == [("drinking_coffee", ("Jane", 5))]


def test_an_untyped_factory_refuses_a_store_with_typed_channels(
        opener: Opener, coffee_idl: Path, tmp_path: Path) -> None:
    """Opened without the typed channels, the store would drop their events."""
    from cosnotify.store.sqlite import SQLiteStore

    opener(coffee_idl).create_typed_channel(DURABLE_QOS, [])
    opener(coffee_idl).close()  # closes the first; this one is closed by the fixture
    store = SQLiteStore(tmp_path / "store.db")
    try:
        with pytest.raises(ValueError, match="TypedEventChannelFactory"):
            EventChannelFactory(store=store)
    finally:
        store.close()


def test_idl_given_again_is_read_from_the_disk(opener: Opener, coffee_idl: Path) -> None:
    opener(coffee_idl).create_typed_channel(DURABLE_QOS, [])
    coffee_idl.write_text(coffee_idl.read_text().replace(
        "void cancel_coffee(in string name);",
        "void cancel_coffee(in string name);\n        void refill(in short cups);").replace(
        "boolean try_cancel_coffee(out string name);",
        "boolean try_cancel_coffee(out string name);\n        void refill(out short cups);"
        "\n        boolean try_refill(out short cups);"))
    factory = opener(coffee_idl)
    assert "refill" in factory.interfaces.lookup("Coffee").operations
    coffee_idl.unlink()
    factory = opener()  # the store keeps the new text
    assert "refill" in factory.interfaces.lookup("Coffee").operations


def test_included_user_files_are_kept_too(opener: Opener, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "Cups.idl").write_text(
        "#ifndef CUPS_IDL\n#define CUPS_IDL\n"
        "module PersistCups { struct Cup { string owner; short size; }; };\n#endif\n")
    main = tmp_path / "Order.idl"
    main.write_text('#include "Cups.idl"\n'
                    "module PersistOrder { interface Order { void ordered(in PersistCups::Cup cup); };"
                    " };\n")
    factory = opener(main, include=(shared,))
    _, channel_id = factory.create_typed_channel(DURABLE_QOS, [])
    main.unlink()
    (shared / "Cups.idl").unlink()
    factory = opener()
    operation = factory.interfaces.lookup("PersistOrder::Order").operations["ordered"]
    assert operation.parameters[0].typecode.id() == "IDL:PersistCups/Cup:1.0"
    assert factory.get_all_typed_channels() == [channel_id]


def test_a_stored_typed_call_is_filtered_as_one_when_read_back(coffee: Any) -> None:
    """The store keeps that an event was a typed call: read back (channel/durable.py),
    its filters' sequence is made again (``event_type`` first)."""
    from cosnotify.typed.events import to_match_typed, to_structured

    operation = coffee.operations["drinking_coffee"]
    event = from_structured(to_structured(operation, ["Jane", 5]), 1.0)
    event.typed = to_match_typed(operation, ["Jane", 5])
    back = _event(codec.encode_event(event), 7)
    assert back.typed is not None
    assert [p.name for p in back.typed] == ["event_type", "name", "minutes"]
    event_type = back.typed[0].value.value()
    assert (event_type.domain_name, event_type.type_name) == ("CoffeeTest::Coffee",
                                                              "drinking_coffee")
    plain = from_structured(N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("", "%TYPED"), ""), []),
        event.structured.filterable_data, CORBA.Any(CORBA.TC_null, None)), 1.0)
    assert _event(codec.encode_event(plain), 8).typed is None  # supplied structured


def test_typed_proxies_are_recorded_with_their_key(opener: Opener, coffee_idl: Path) -> None:
    factory = opener(coffee_idl)
    channel, _ = factory.create_typed_channel(DURABLE_QOS, [])
    _, puller = typed_proxies(channel)
    store = factory.service.topology.store
    records = {r.path: codec.loads(r.data) for r in store.records()}
    path = f"ch/{channel._id}/ca/{puller._admin._id}/{puller._id}"
    assert records[path]["interface"] == "IDL:CoffeeTest/Coffee:1.0"
    assert records[f"ch/{channel._id}"]["typed"] is True
    assert [r["path"] for r in records.values() if "text" in r] == [str(coffee_idl)]


class TestReviewFindings:
    """An adversarial review of the persistence of typed channels found these."""

    def test_a_kept_path_never_reaches_a_shell(self, tmp_path: Path) -> None:
        """omniidl runs its preprocessor through the shell with the file's path in it:
        a store's record is data, so a path with ``$(...)`` is refused, not run."""
        from cosnotify.store.interface import Record
        from cosnotify.store.sqlite import SQLiteStore
        from cosnotify.typed.channel import IDL_KIND
        from cosnotify.typed.interfaces import IDLError

        marker = tmp_path / "ran"
        for field in ("path", "include", "included"):
            store = SQLiteStore(tmp_path / f"{field}.db")
            record = {"path": "/kept/Ok.idl", "include": [], "included": [],
                      "text": "module KeptOk { interface I { void op(in long n); }; };\n"}
            crafted = f"/kept/$(touch {marker})"
            if field == "path":
                record["path"] = crafted + ".idl"
            elif field == "include":
                record["include"] = [crafted]
            else:
                record["included"] = [[crafted + ".idl", "module X { };\n"]]
            store.put(Record("idl/crafted", IDL_KIND, codec.dumps(record)))
            try:
                with pytest.raises(IDLError, match="cannot be given safely"):
                    TypedEventChannelFactory(store=store)
            finally:
                store.close()
            assert not marker.exists()

    def test_kept_calls_leave_the_memory_window_to_the_others(
            self, opener: Opener, coffee_idl: Path) -> None:
        """Kept calls stay in the store until given, but do not fill the memory window
        (``DurableQueue.held``): a call of the pulled operation on disk is still read."""
        factory = opener(coffee_idl)
        channel, _ = factory.create_typed_channel(DURABLE_QOS, [])
        channel._event_log.window = 4
        pusher, puller = typed_proxies(channel)
        coffee = pusher.get_typed_consumer()
        for i in range(9):
            coffee.cancel_coffee(f"c{i}")  # nobody pulls these yet
        coffee.drinking_coffee("Jane", 5)
        settle(channel)
        pull = puller.get_typed_supplier()
        assert pull.try_drinking_coffee() == (True, "Jane", 5)
        assert [pull.try_cancel_coffee()[1] for _ in range(9)] == [f"c{i}" for i in range(9)]

    def test_a_changed_key_refuses_the_start_and_loses_nothing(
            self, opener: Opener, coffee_idl: Path) -> None:
        """A typed proxy whose key no loaded IDL declares cannot come back; skipped, its
        stored events would be dropped: the start is refused instead."""
        factory = opener(coffee_idl)
        channel, channel_id = factory.create_typed_channel(DURABLE_QOS, [])
        pusher, puller = typed_proxies(channel)
        pusher.get_typed_consumer().drinking_coffee("Jane", 5)
        settle(channel)
        ids = (puller._admin._id, puller._id)
        old = coffee_idl.read_text()
        coffee_idl.write_text(old.replace("    interface PullCoffee {",
                                          "#pragma version Coffee 1.1\n    interface PullCoffee {"))
        with pytest.raises(ValueError, match="IDL:CoffeeTest/Coffee:1.0"):
            opener(coffee_idl)
        coffee_idl.write_text(old)
        factory = opener(coffee_idl)
        puller = factory.get_typed_event_channel(channel_id).get_consumeradmin(
            ids[0]).get_proxy_supplier(ids[1])
        assert puller.get_typed_supplier().try_drinking_coffee() == (True, "Jane", 5)

    def test_a_damaged_typed_record_is_still_an_event(self) -> None:
        """A record flagged as a typed call whose data is no call (damaged) is read back
        as the Structured Event it holds, not dropped."""
        from cosnotify.channel.event import typed_sequence

        for filterable in ([], [N.Property("operation", CORBA.Any(CORBA.TC_long, 3))]):
            structured = N.StructuredEvent(
                N.EventHeader(N.FixedEventHeader(N.EventType("", "%TYPED"), ""), []),
                filterable, CORBA.Any(CORBA.TC_null, None))
            assert typed_sequence(structured) is None
            event = from_structured(structured, 1.0)
            event.typed = []  # flagged as typed when it was stored
            back = _event(codec.encode_event(event), 9)
            assert back.typed is None and back.is_structured

    def test_a_pull_proxy_needs_its_pull_interface_back(
            self, opener: Opener, coffee_idl: Path) -> None:
        """A TypedProxyPullSupplier's key needs ``Pull<I>``: IDL without it refuses the
        start, as a missing key does."""
        factory = opener(coffee_idl)
        channel, _ = factory.create_typed_channel(DURABLE_QOS, [])
        typed_proxies(channel)
        text = coffee_idl.read_text()
        coffee_idl.write_text(text[:text.index("    interface PullCoffee")] + "};\n")
        with pytest.raises(ValueError, match="the Pull interface of IDL:CoffeeTest/Coffee"):
            opener(coffee_idl)


def test_a_persistent_typed_channel_keeps_its_history(opener: Opener, coffee_idl: Path) -> None:
    """A restart drops only the histories of channels the store no longer keeps
    (docs/history.md): a typed channel is one it keeps, though get_all_channels
    leaves it out."""
    from cosnotify.history.query import Query
    from tests.history.test_channel import retain

    factory = opener(coffee_idl)
    channel, channel_id = factory.create_typed_channel(DURABLE_QOS, retain(count=10))
    pusher, _ = typed_proxies(channel)
    pusher.get_typed_consumer().drinking_coffee("Jane", 5)
    settle(channel)
    assert len(channel.query(Query())) == 1
    factory = opener()
    back = factory.get_typed_event_channel(channel_id)
    [kept] = back.query(Query())
    assert kept.type == ("", "%TYPED")


def test_the_files_a_failed_load_idl_did_load_are_kept(opener: Opener, coffee_idl: Path,
                                                        tmp_path: Path) -> None:
    """Review 107: ``load_idl([good, bad])`` raised IDLError for the second file with
    the first loaded and usable as a key, but not kept: a proxy made with it made the
    next start with ``--db`` alone fail ("which no IDL loaded now declares")."""
    from cosnotify.typed.interfaces import IDLError

    bad = tmp_path / "idl" / "Bad.idl"
    bad.write_text("module Broken { interface X { void f(in nosuchtype t); }; };")
    factory = opener()
    with pytest.raises(IDLError):
        factory.load_idl([coffee_idl, bad])
    channel, channel_id = factory.create_typed_channel(DURABLE_QOS, [])
    typed_proxies(channel)
    coffee_idl.unlink()
    factory = opener()  # the store alone
    assert factory.get_all_typed_channels() == [channel_id]
