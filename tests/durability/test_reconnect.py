"""TAO's Reconnecting scenarios, against ``cosnotify serve --db`` restarted for real.

TAO's orbsvcs/tests/Notify/Reconnecting tests: a supplier restarts and
reuses its saved ids; a consumer restarts and reuses its saved ids; the
service restarts and the topology reloads; a consumer's exception leads to
redelivery. Here "a client restarts" is a client that resolves everything
again from the factory's corbaname URL and its saved ids, with a new
servant (a new reference) where it has one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from omniORB import CORBA

import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter
import TimeBase

from tests.channel.conftest import number, structured
from tests.durability.conftest import DURABLE_QOS, StructuredConsumer, reference
from tests.interop.peers import free_port
from tests.server.conftest import ServeProcess

T = TypeVar("T")


def again(call: Callable[[], T]) -> T:
    """The first call after a restart may meet the old connection (docs/persistence.md)."""
    for _ in range(20):
        try:
            return call()
        except (CORBA.COMM_FAILURE, CORBA.TRANSIENT):
            continue
    return call()


class Service:
    """``cosnotify serve --db`` on one port, restartable."""

    def __init__(self, tmp: Path, *options: str) -> None:
        self.tmp, self.port, self.options = tmp, free_port(), options
        self.db = tmp / "store.db"
        self.process = self._start()

    def _start(self) -> ServeProcess:
        return ServeProcess(self.tmp, "--endpoint", f"127.0.0.1:{self.port}",
                            "--db", str(self.db), "--call-timeout", "5", *self.options)

    def restart(self) -> None:
        assert self.process.stop() == 0, "".join(self.process.log)
        self.process = self._start()

    @property
    def url(self) -> str:
        return f"corbaname::127.0.0.1:{self.port}#NotifyEventChannelFactory"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    made = Service(tmp_path, "--allow-reconnect")
    yield made
    assert made.process.stop() == 0, "".join(made.process.log)


def resolve(orb: Any, url: str) -> Any:
    return again(lambda: orb.string_to_object(url)._narrow(CA.EventChannelFactory))


def test_the_service_restarts_and_the_topology_reloads(service: Service, omniorb: Any) -> None:
    factory = resolve(omniorb, service.url)
    channel, channel_id = factory.create_channel(DURABLE_QOS, [])
    admin, admin_id = channel.new_for_consumers(CA.AND_OP)
    flt = channel._get_default_filter_factory().create_filter("EXTENDED_TCL")
    flt.add_constraints([CosNotifyFilter.ConstraintExp([], "$n > 1")])
    admin.add_filter(flt)
    consumer = StructuredConsumer()
    proxy = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)[0]._narrow(
        CA.StructuredProxyPushSupplier)
    proxy.connect_structured_push_consumer(reference(omniorb, consumer))
    supplier = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)[0]._narrow(CA.StructuredProxyPushConsumer)
    supplier.connect_structured_push_supplier(None)

    service.restart()
    # The references from before name the same objects.
    assert again(factory.get_all_channels) == [channel_id]
    assert admin_id in again(channel.get_all_consumeradmins)
    assert [c.constraint_expression.constraint_expr
            for c in again(flt.get_all_constraints)] == ["$n > 1"]
    for n in (1, 2, 3):
        again(lambda: supplier.push_structured_event(structured(fields={"n": n})))  # noqa: B023
    assert consumer.wait_for(2)
    assert [number(e) for e in consumer.items] == [2, 3]


def test_a_supplier_restarts_and_reuses_its_ids(service: Service, omniorb: Any) -> None:
    factory = resolve(omniorb, service.url)
    channel, channel_id = factory.create_channel(DURABLE_QOS, [])
    consumer = StructuredConsumer()
    out = channel._get_default_consumer_admin().obtain_notification_push_supplier(
        CA.STRUCTURED_EVENT)[0]._narrow(CA.StructuredProxyPushSupplier)
    out.connect_structured_push_consumer(reference(omniorb, consumer))
    admin, admin_id = channel.new_for_suppliers(CA.AND_OP)
    proxy, proxy_id = admin.obtain_notification_push_consumer(CA.STRUCTURED_EVENT)
    proxy._narrow(CA.StructuredProxyPushConsumer).connect_structured_push_supplier(None)

    service.restart()
    # The restarted supplier kept only ids: factory -> channel -> admin -> proxy.
    factory = resolve(omniorb, service.url)
    proxy = again(lambda: factory.get_event_channel(channel_id)).get_supplieradmin(
        admin_id).get_proxy_consumer(proxy_id)._narrow(CA.StructuredProxyPushConsumer)
    proxy.push_structured_event(structured(fields={"n": 9}))
    assert consumer.wait_for(1)
    assert number(consumer.items[0]) == 9


def test_a_consumer_restarts_and_reuses_its_ids(service: Service, omniorb: Any) -> None:
    """Its events pushed while it was away reach the new consumer (--allow-reconnect)."""
    factory = resolve(omniorb, service.url)
    channel, channel_id = factory.create_channel(DURABLE_QOS, [])
    admin, admin_id = channel.new_for_consumers(CA.AND_OP)
    proxy, proxy_id = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
    proxy = proxy._narrow(CA.StructuredProxyPushSupplier)
    first = StructuredConsumer()
    proxy.connect_structured_push_consumer(reference(omniorb, first))
    proxy.suspend_connection()  # the consumer goes away: what comes meanwhile waits
    supplier = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)[0]._narrow(CA.StructuredProxyPushConsumer)
    supplier.connect_structured_push_supplier(None)
    for n in range(3):
        supplier.push_structured_event(structured(fields={"n": n}))

    service.restart()
    factory = resolve(omniorb, service.url)
    proxy = again(lambda: factory.get_event_channel(channel_id)).get_consumeradmin(
        admin_id).get_proxy_supplier(proxy_id)._narrow(CA.StructuredProxyPushSupplier)
    second = StructuredConsumer()
    proxy.connect_structured_push_consumer(reference(omniorb, second))  # reconnect
    proxy.resume_connection()
    assert second.wait_for(3)
    assert [number(e) for e in second.items] == [0, 1, 2]
    assert first.items == []


def test_a_consumer_exception_leads_to_redelivery(service: Service, omniorb: Any) -> None:
    class Failing(StructuredConsumer):
        failures = 2

        def push_structured_event(self, event: Any) -> None:
            if self.failures:
                self.failures -= 1
                raise CORBA.NO_RESOURCES(0, CORBA.COMPLETED_NO)
            super().push_structured_event(event)

    factory = resolve(omniorb, service.url)
    channel, _ = factory.create_channel(DURABLE_QOS, [])
    proxy = channel._get_default_consumer_admin().obtain_notification_push_supplier(
        CA.STRUCTURED_EVENT)[0]._narrow(CA.StructuredProxyPushSupplier)
    proxy.set_qos([N.Property("RetryInterval", CORBA.Any(TimeBase._tc_TimeT, 100_000))])
    consumer = Failing()
    proxy.connect_structured_push_consumer(reference(omniorb, consumer))
    supplier = channel._get_default_supplier_admin().obtain_notification_push_consumer(
        CA.STRUCTURED_EVENT)[0]._narrow(CA.StructuredProxyPushConsumer)
    supplier.connect_structured_push_supplier(None)
    supplier.push_structured_event(structured(fields={"n": 4}))
    assert consumer.wait_for(1)
    assert [number(e) for e in consumer.items] == [4] and consumer.failures == 0


def test_without_allow_reconnect_a_connected_proxy_says_already_connected(
        tmp_path: Path, omniorb: Any) -> None:
    import CosEventChannelAdmin

    service = Service(tmp_path)
    try:
        factory = resolve(omniorb, service.url)
        channel, _ = factory.create_channel(DURABLE_QOS, [])
        proxy = channel._get_default_consumer_admin().obtain_notification_push_supplier(
            CA.STRUCTURED_EVENT)[0]._narrow(CA.StructuredProxyPushSupplier)
        proxy.connect_structured_push_consumer(reference(omniorb, StructuredConsumer()))
        with pytest.raises(CosEventChannelAdmin.AlreadyConnected):
            proxy.connect_structured_push_consumer(reference(omniorb, StructuredConsumer()))
    finally:
        service.process.stop()


class TestStartFailures:
    """A store that cannot be used ends ``serve`` at once with one line (exit 1)."""

    def serve_fails(self, *options: str) -> str:
        import subprocess
        import sys

        done = subprocess.run([sys.executable, "-m", "cosnotify", "serve", "--endpoint",
                               "127.0.0.1:0", *options], capture_output=True, text=True,
                              timeout=60, check=False)
        assert done.returncode == 1
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        return lines[0]

    def test_a_file_that_is_not_a_store(self, tmp_path: Path) -> None:
        path = tmp_path / "notes.txt"
        path.write_text("not a database\n" * 10)
        line = self.serve_fails("--db", str(path))
        assert str(path) in line and "not" in line
        assert path.read_text() == "not a database\n" * 10

    def test_a_path_that_cannot_be_written(self, tmp_path: Path) -> None:
        blocker = tmp_path / "file"
        blocker.write_text("")
        line = self.serve_fails("--db", str(blocker / "store.db"))  # its parent is a file
        assert "store.db" in line

    def test_a_store_of_a_newer_schema(self, tmp_path: Path) -> None:
        import sqlite3

        from cosnotify.store.sqlite import SQLiteStore

        path = tmp_path / "store.db"
        SQLiteStore(path).close()
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE meta SET value = 999 WHERE key = 'schema_version'")
        conn.close()
        line = self.serve_fails("--db", str(path))
        assert "newer" in line

    def test_a_store_damaged_in_its_records(self, tmp_path: Path) -> None:
        """Pages overwritten, which the header checks cannot see (quick_check at open
        finds them): one line with the store's reason, not an ERROR log and a CORBA
        exception's repr (as when the start's first read of the records met them)."""
        from cosnotify.store.interface import Record
        from cosnotify.store.sqlite import SQLiteStore

        path = tmp_path / "store.db"
        with SQLiteStore(path) as store:
            for n in range(400):
                store.put(Record(f"cb/{n}", "callback", b"x" * 500))
        size = path.stat().st_size
        with path.open("r+b") as file:
            file.seek(size // 2 // 4096 * 4096)
            file.write(b"\xde\xad\xbe\xef" * 1024 * 8)
        line = self.serve_fails("--db", str(path))
        assert line.startswith(f"cosnotify serve: cannot start: {path}: ")
        assert "the file is damaged" in line and "NO_RESOURCES" not in line

    def test_a_records_read_failing_at_start_is_the_store_error(
            self, caplog: pytest.LogCaptureFixture) -> None:
        """Damage quick_check cannot see (a row's bytes) is met at the start's first read,
        the IDL records (typed/channel.py stored_sources): the StoreError itself reaches
        ``serve`` (one line), no ERROR log and NO_RESOURCES on the way."""
        from cosnotify.store import MemoryStore
        from cosnotify.store.interface import Reason, StoreError
        from cosnotify.typed.channel import stored_sources

        class Damaged(MemoryStore):
            def records(self) -> Any:
                raise StoreError(Reason.DAMAGED, "store.db: records: the file is damaged")

        with pytest.raises(StoreError, match="the file is damaged"):
            stored_sources(Damaged())
        assert not [r for r in caplog.records if r.levelname == "ERROR"]

    def test_a_store_another_server_has_open(self, tmp_path: Path) -> None:
        """Review 108: a second server started on the store of a running one, and the
        two then wrote what the other did not know (a channel one destroyed, an admin
        the other made under it: an orphan at the next start). The second is refused
        with one line; once the first stops, the store opens again."""
        from tests.server.conftest import ServeProcess

        path = tmp_path / "store.db"
        first = ServeProcess(tmp_path, "--db", str(path))
        try:
            line = self.serve_fails("--db", str(path))
            assert str(path) in line and "in use by another process" in line
        finally:
            assert first.stop() == 0
        again = ServeProcess(tmp_path, "--db", str(path))
        assert again.stop() == 0


def test_the_reconnecting_consumer_example(service: Service, omniorb: Any,
                                          tmp_path: Path) -> None:
    """examples/python/reconnecting_consumer.py across a server restart and its own."""
    import json
    import sys

    from tests.interop.notify.harness import Program

    root = Path(__file__).resolve().parents[2]
    state = tmp_path / "ids.json"

    def run_example() -> Program:
        program = Program([sys.executable, root / "examples/python/reconnecting_consumer.py",
                           service.url, "--state", state, "--count", "2"], cwd=root)
        program.wait_line("ready", timeout=60)
        return program

    def push(*numbers: int) -> None:
        ids = json.loads(state.read_text())
        factory = resolve(omniorb, service.url)
        channel = again(lambda: factory.get_event_channel(ids["channel"]))
        supplier = channel._get_default_supplier_admin().obtain_notification_push_consumer(
            CA.STRUCTURED_EVENT)[0]._narrow(CA.StructuredProxyPushConsumer)
        supplier.connect_structured_push_supplier(None)
        for n in numbers:
            supplier.push_structured_event(structured(fields={"n": n}))

    first = run_example()
    try:
        push(1, 2)
        first.proc.wait(60)
        assert [line for line in first.lines if line.startswith("received")] == [
            "received e n=1", "received e n=2"]
    finally:
        first.close()
    service.restart()
    push(3, 4)  # the consumer is away: they wait in the store
    second = run_example()
    try:
        assert second.proc.wait(60) == 0, second.output()
        assert [line for line in second.lines if line.startswith("received")] == [
            "received e n=3", "received e n=4"]
    finally:
        second.close()
