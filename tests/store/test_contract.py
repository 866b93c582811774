"""The Store contract (cosnotify/store/interface.py), run against every implementation.

Each test uses only the interface, so the SQLite store and the in-memory one
must give the same answers. The memory store's parameter is skipped where
cosnotify.store.memory cannot be imported.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cosnotify.store.interface import Reason, Record, Store, StoredEvent, StoreError
from cosnotify.store.sqlite import SQLiteStore


def make_sqlite(tmp_path: Path) -> Store:
    return SQLiteStore(tmp_path / "store.db")


def make_memory(tmp_path: Path) -> Store:
    memory = pytest.importorskip("cosnotify.store.memory")
    made: Store = memory.MemoryStore()
    return made


@pytest.fixture(params=[make_sqlite, make_memory], ids=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    made: Store = request.param(tmp_path)
    yield made
    made.close()


def everything(store: Store, consumer: str) -> list[StoredEvent]:
    return store.pending(consumer, limit=10**9)


def ids_of(events: list[StoredEvent]) -> list[int]:
    return [event.id for event in events]


class TestRecords:
    def test_records_come_back_in_first_written_order(self, store: Store) -> None:
        """records() lists records in the order their paths were first written."""
        for path in ["ch/5", "ch/1", "flt/0", "ch/1/ca/0"]:
            store.put(Record(path, "k", path.encode()))
        assert [r.path for r in store.records()] == ["ch/5", "ch/1", "flt/0", "ch/1/ca/0"]
        assert store.records()[0] == Record("ch/5", "k", b"ch/5")

    def test_rewriting_replaces_and_keeps_position(self, store: Store) -> None:
        """put() on an existing path replaces kind and data, in the original position."""
        store.put(Record("a", "k1", b"1"))
        store.put(Record("b", "k1", b"2"))
        store.put(Record("a", "k2", b"3"))
        assert store.records() == [Record("a", "k2", b"3"), Record("b", "k1", b"2")]

    def test_delete_takes_the_subtree_only(self, store: Store) -> None:
        """delete(p) removes p and p/..., not paths that merely start with p's text."""
        paths = ["ch/0", "ch/0/ca/1", "ch/0/ca/1/3", "ch/01", "ch/0-x", "ch/0.y", "ch", "ch/1"]
        for path in paths:
            store.put(Record(path, "k", b""))
        store.delete("ch/0")
        assert [r.path for r in store.records()] == ["ch/01", "ch/0-x", "ch/0.y", "ch", "ch/1"]

    def test_delete_of_a_missing_path_does_nothing(self, store: Store) -> None:
        """Deleting a path that holds no record is not an error and changes nothing."""
        store.put(Record("a", "k", b""))
        store.delete("b")
        assert [r.path for r in store.records()] == ["a"]

    def test_a_path_written_again_after_delete_goes_last(self, store: Store) -> None:
        """After delete, the path's next put is a first write: it goes to the end."""
        store.put(Record("a", "k", b""))
        store.put(Record("b", "k", b""))
        store.delete("a")
        store.put(Record("a", "k", b"again"))
        assert [r.path for r in store.records()] == ["b", "a"]


class TestCounters:
    def test_a_counter_starts_at_zero_and_counts_up(self, store: Store) -> None:
        """next_value returns 0, 1, 2... and counters of other names are independent."""
        assert [store.next_value("ch") for _ in range(3)] == [0, 1, 2]
        assert store.next_value("flt") == 0
        assert store.next_value("ch") == 3

    def test_peek_does_not_take(self, store: Store) -> None:
        """peek_value is what next_value would return, and taking nothing."""
        assert store.peek_value("ch") == 0
        store.next_value("ch")
        assert store.peek_value("ch") == store.peek_value("ch") == 1
        assert store.next_value("ch") == 1

    def test_raise_value_raises_but_never_lowers(self, store: Store) -> None:
        """raise_value makes the next value at least at_least, and never lowers it."""
        store.raise_value("ch", 10)
        assert store.next_value("ch") == 10
        store.raise_value("ch", 3)
        assert store.next_value("ch") == 11
        store.raise_value("new", 0)
        assert store.peek_value("new") == 0


class TestEvents:
    def test_ids_increase_one_per_event(self, store: Store) -> None:
        """add_events returns one increasing id per event, across calls."""
        first = store.add_events([(b"a", ["c"]), (b"b", ["c"])])
        second = store.add_events([(b"c", ["c"])])
        ids = first + second
        assert len(ids) == 3
        assert ids == sorted(set(ids))

    def test_an_empty_batch_stores_nothing(self, store: Store) -> None:
        """add_events([]) returns [] and leaves no consumer."""
        assert store.add_events([]) == []
        assert store.consumers() == []

    def test_an_event_without_consumers_is_not_kept(self, store: Store) -> None:
        """An event with no consumers gets an id but nobody has it pending."""
        ids = store.add_events([(b"lost", []), (b"kept", ["c"])])
        assert len(ids) == 2
        assert store.consumers() == ["c"]
        assert everything(store, "c") == [StoredEvent(ids[1], b"kept")]

    def test_empty_and_binary_events_come_back_byte_for_byte(self, store: Store) -> None:
        """Event bytes are opaque: empty, NULs and every byte value come back as written,
        in one batch and alone."""
        payloads = [b"", b"\x00", bytes(range(256)), b"", b"tail"]
        ids = store.add_events([(data, ["c"]) for data in payloads])
        ids += store.add_events([(b"", ["c"])])
        assert everything(store, "c") == [StoredEvent(i, data)
                                          for i, data in zip(ids, [*payloads, b""], strict=True)]

    def test_marks_and_releases_share_the_events_commit(self, store: Store) -> None:
        """add_events(..., marks, releases): counters raised and ids released with it."""
        first = store.add_events([(b"1", ["a"]), (b"2", ["a"])])
        store.raise_value("m", 5)
        more = store.add_events([(b"3", ["a"])], {"m": 3, "n": 9}, {"a": [first[0]]})
        assert ids_of(everything(store, "a")) == [first[1], more[0]]
        assert (store.peek_value("m"), store.peek_value("n")) == (5, 9)  # raised, never lowered
        store.add_events([], None, {"a": [first[1]]})  # releases alone
        assert ids_of(everything(store, "a")) == [more[0]]

    def test_each_consumer_reads_its_events_in_order(self, store: Store) -> None:
        """pending() gives a consumer's events in id order, with their bytes."""
        ids = store.add_events([(b"1", ["a", "b"]), (b"2", ["b"]), (b"3", ["a"])])
        assert everything(store, "a") == [StoredEvent(ids[0], b"1"), StoredEvent(ids[2], b"3")]
        assert everything(store, "b") == [StoredEvent(ids[0], b"1"), StoredEvent(ids[1], b"2")]
        assert store.pending("nobody") == []
        assert store.pending_count("a") == 2
        assert store.pending_count("nobody") == 0

    def test_paging_with_after_and_limit_sees_each_event_once(self, store: Store) -> None:
        """Pages of pending(after=last id, limit=n) cover every event once, in order."""
        ids = store.add_events([(b"%d" % i, ["c"]) for i in range(25)])
        seen: list[int] = []
        after = -1
        while page := store.pending("c", after=after, limit=7):
            assert len(page) <= 7
            seen += ids_of(page)
            after = page[-1].id
        assert seen == ids
        assert ids_of(store.pending("c", after=ids[9], limit=3)) == ids[10:13]

    def test_release_removes_only_that_consumers_copy(self, store: Store) -> None:
        """After release, the consumer no longer sees the event; other holders still do."""
        ids = store.add_events([(b"1", ["a", "b"]), (b"2", ["a", "b"])])
        store.release("a", [ids[0]])
        assert ids_of(everything(store, "a")) == [ids[1]]
        assert store.pending_count("a") == 1
        assert ids_of(everything(store, "b")) == ids

    def test_releasing_every_copy_drops_the_consumer(self, store: Store) -> None:
        """A consumer with nothing left pending is not listed by consumers()."""
        ids = store.add_events([(b"1", ["a", "b"])])
        store.release("a", ids)
        assert store.consumers() == ["b"]
        store.release("b", iter(ids))
        assert store.consumers() == []
        assert store.pending_count("b") == 0

    def test_writes_and_releases_of_thousands(self, store: Store) -> None:
        """More rows than one SQLite statement takes (store/sqlite_rows.py): every
        event, copy and release lands, for each consumer, as with a few."""
        ids = store.add_events([(b"%d" % n, ["a", "b"] if n % 3 else ["a"])
                                for n in range(3000)])
        assert len(ids) == 3000 and ids == sorted(ids)
        assert (store.pending_count("a"), store.pending_count("b")) == (3000, 2000)
        store.release("a", ids[:2500] + ids[:10])  # a repeated id too
        store.add_events([], None, {"a": ids[2500:2600], "b": ids[:1500]})
        assert ids_of(everything(store, "a")) == ids[2600:]
        assert ids_of(everything(store, "b")) == [i for n, i in enumerate(ids)
                                                  if n % 3 and n >= 1500]
        assert [e.data for e in everything(store, "a")[:2]] == [b"2600", b"2601"]

    def test_ids_are_not_reused_after_release(self, store: Store) -> None:
        """Once every event is released, new events still get higher ids."""
        ids = store.add_events([(b"x", ["c"]) for _ in range(3)])
        store.release("c", ids)
        (later,) = store.add_events([(b"y", ["c"])])
        assert later > max(ids)
        assert ids_of(store.pending("c", after=max(ids))) == [later]

    def test_a_consumer_named_twice_holds_one_copy(self, store: Store) -> None:
        """Duplicate names in an event's consumers count once."""
        ids = store.add_events([(b"1", ["a", "a"])])
        assert store.pending_count("a") == 1
        store.release("a", ids)
        assert store.pending("a") == []

    def test_releasing_what_is_not_held_is_harmless(self, store: Store) -> None:
        """Releasing unknown ids, another consumer's ids, or twice changes nothing else."""
        ids = store.add_events([(b"1", ["a"]), (b"2", ["b"])])
        store.release("a", [ids[1], 10**6])
        store.release("nobody", ids)
        store.release("a", [])
        assert ids_of(everything(store, "a")) == [ids[0]]
        assert ids_of(everything(store, "b")) == [ids[1]]

    def test_drop_consumer_releases_everything_it_holds(self, store: Store) -> None:
        """drop_consumer empties one consumer's queue and leaves the others'."""
        ids = store.add_events([(b"%d" % i, ["a", "b"] if i % 2 else ["a"]) for i in range(6)])
        store.drop_consumer("a")
        assert store.pending("a") == []
        assert store.consumers() == ["b"]
        assert ids_of(everything(store, "b")) == ids[1::2]
        store.drop_consumer("never-seen")

    def test_consumers_lists_every_holder(self, store: Store) -> None:
        """consumers() names each consumer with something pending, once."""
        store.add_events([(b"1", ["x/2", "x/10"]), (b"2", ["x/2", "y"])])
        assert sorted(store.consumers()) == ["x/10", "x/2", "y"]

    def test_concurrent_callers_get_distinct_ids_all_pending(self, store: Store) -> None:
        """Threads adding at once get distinct increasing ids, and every event is kept."""
        threads, per_thread = 6, 40
        start = threading.Barrier(threads)
        got: dict[int, list[int]] = {}

        def add(n: int) -> None:
            start.wait()
            got[n] = [i for _ in range(per_thread)
                      for i in store.add_events([(b"%d" % n, ["c", f"t{n}"])])]

        workers = [threading.Thread(target=add, args=(n,)) for n in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        every = [i for n in range(threads) for i in got[n]]
        assert len(set(every)) == threads * per_thread
        for n in range(threads):
            assert got[n] == sorted(got[n])
            assert ids_of(everything(store, f"t{n}")) == got[n]
        assert ids_of(everything(store, "c")) == sorted(every)


#: Every Store method, called with harmless arguments.
CALLS: list[tuple[str, Callable[[Store], Any]]] = [
    ("put", lambda s: s.put(Record("a", "k", b""))),
    ("delete", lambda s: s.delete("a")),
    ("records", lambda s: s.records()),
    ("next_value", lambda s: s.next_value("n")),
    ("peek_value", lambda s: s.peek_value("n")),
    ("raise_value", lambda s: s.raise_value("n", 5)),
    ("add_events", lambda s: s.add_events([(b"x", ["c"])])),
    ("add_events([])", lambda s: s.add_events([])),
    ("release", lambda s: s.release("c", [1])),
    ("release([])", lambda s: s.release("c", [])),
    ("pending", lambda s: s.pending("c")),
    ("pending_count", lambda s: s.pending_count("c")),
    ("drop_consumer", lambda s: s.drop_consumer("c")),
    ("consumers", lambda s: s.consumers()),
    ("flush", lambda s: s.flush()),
]


class TestLifecycle:
    def test_it_is_a_store(self, store: Store) -> None:
        """The implementation satisfies the runtime-checkable Store protocol."""
        assert isinstance(store, Store)

    def test_flush_keeps_everything_readable(self, store: Store) -> None:
        """flush() after releases changes nothing a reader sees."""
        ids = store.add_events([(b"1", ["a"]), (b"2", ["a"])])
        store.release("a", ids[:1])
        store.flush()
        store.flush()
        assert ids_of(everything(store, "a")) == ids[1:]

    @pytest.mark.parametrize("call", [c for _, c in CALLS], ids=[n for n, _ in CALLS])
    def test_every_method_fails_closed_after_close(
            self, store: Store, call: Callable[[Store], Any]) -> None:
        """After close(), each method raises StoreError(CLOSED)."""
        store.add_events([(b"x", ["c"])])
        store.close()
        with pytest.raises(StoreError) as caught:
            call(store)
        assert caught.value.reason is Reason.CLOSED
