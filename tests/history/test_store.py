"""The stores' history (cosnotify/store/history.py): both stores, one contract.

A retained row is read back by scan -- ranges, ids, type-path prefixes, order,
expiry -- a page at a time, and trimmed by age, count and bytes. SQLite ids
are never reused (AUTOINCREMENT), and a store of the previous schema gains the
table when it is opened.
"""

from __future__ import annotations

import math
import random
import sqlite3
import struct
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cosnotify.store import Store, StoreError
from cosnotify.store.history import HistoryRow, HistoryScan, type_key
from cosnotify.store.sqlite_history import scan_sql

Opener = Callable[[], Store]


def row(t: float, path: tuple[str, ...] = ("a", "b"), source: float | None = None,
        expires: float | None = None, data: bytes = b"x") -> HistoryRow:
    return HistoryRow(t, 0, path, source, expires, data)


def fill(store: Store) -> list[int]:
    return store.add_history("ch/0", [
        row(10, ("a", "b"), source=5), row(20, ("a", "b", "c")), row(30, ("a", "x"), source=1),
        row(40, ("b", "b"), source=9), row(50, ("ab", "b"))])


def read(store: Store, scan: HistoryScan, limit: int = 100) -> list[float]:
    return [r.arrival for r in store.read_history("ch/0", scan, limit=limit)]


def test_rows_come_back_as_they_were(store: Store) -> None:
    ids = fill(store)
    assert ids == sorted(ids) and len(set(ids)) == 5
    [first] = store.read_history("ch/0", HistoryScan(t_to=10))
    assert (first.id, first.arrival, first.type, first.source, first.data) == (
        ids[0], 10, ("a", "b"), 5, b"x")
    assert store.read_history("ch/1", HistoryScan()) == []  # per channel


@pytest.mark.parametrize("bound", [("PART_BYTES", 25), ("PART_ROWS", 3)])
def test_a_write_longer_than_one_part(store: Store, monkeypatch: pytest.MonkeyPatch,
                                      bound: tuple[str, int]) -> None:
    """A write whose data passes PART_BYTES, or whose rows PART_ROWS, is several
    statements in one transaction (a BLOB and a JSON text each, SQLite refusing one past
    10^9 bytes): every row's id, in order, each row its own data and type, also where a
    type key is in an earlier part's BLOB."""
    from cosnotify.store import sqlite_history

    monkeypatch.setattr(sqlite_history, *bound)
    count = 40
    rows = [row(n, (f"d{n % 3}", "t"), data=n.to_bytes(2, "big") * (1 + n % 7))
            for n in range(count)]
    assert len(sqlite_history.history_parts(rows)) > 5
    ids = store.add_history("ch/0", rows)
    assert len(ids) == count and ids == list(range(ids[0], ids[0] + count))
    back = store.read_history("ch/0", HistoryScan(ascending=True), limit=count + 1)
    assert [(r.id, r.arrival, r.type, r.data) for r in back] == [
        (ids[n], n, rows[n].type, rows[n].data) for n in range(count)]
    assert store.add_history("ch/0", []) == []


def test_times_come_back_to_the_bit(store: Store) -> None:
    """A write carries its times as JSON text (store/sqlite_history.py): every double
    comes back as the same double -- random bit patterns, subnormals, extremes -- and
    ints as they were. (Not zeros: SQLite keeps a whole REAL as an integer, bound or
    not, so -0.0 comes back as 0.0.)"""
    rng = random.Random(21)
    values = [struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
              for _ in range(3000)]
    values = [v for v in values if math.isfinite(v) and v]
    values += [time.time() + rng.random() for _ in range(1000)]
    values += [5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
               -1.7976931348623157e308, 0.1, 1 / 3, 2**53 + 1.0]
    ids = store.add_history("ch/0", [row(v, source=-v, expires=v * 0.5) for v in values])
    back = {r.id: r for r in store.read_history("ch/0", HistoryScan(), limit=len(values))}
    got = [back[i] for i in ids]
    assert [struct.pack("<d", r.arrival) for r in got] == [struct.pack("<d", v) for v in values]
    assert [struct.pack("<d", r.source) for r in got] == [  # type: ignore[arg-type]
        struct.pack("<d", -v) for v in values]
    [ints] = [store.add_history("ch/1", [HistoryRow(7, 2**63 - 1, ("a",), -3, None, b"i")])]
    [again] = store.read_history("ch/1", HistoryScan())
    assert (again.id, again.arrival, again.session, again.source) == (ints[0], 7, 2**63 - 1, -3)


def test_sqlite_keeps_infinities_and_a_nan_as_bound(tmp_path: Path) -> None:
    """An infinite time is kept as one (JSON has no name for it: the write sends
    ``9e999``); a NaN source is kept as NULL, as SQLite stores a NaN it is bound; a
    NaN arrival is refused (the column is NOT NULL) and nothing of the write lands."""
    from cosnotify.store.sqlite import SQLiteStore

    made = SQLiteStore(tmp_path / "store.db")
    try:
        made.add_history("ch/0", [row(1, source=math.inf, expires=math.inf),
                                  row(2, source=-math.inf), row(3, source=math.nan)])
        got = made.read_history("ch/0", HistoryScan(ascending=True))
        assert [(r.arrival, r.source) for r in got] == [(1, math.inf), (2, -math.inf), (3, None)]
        assert made.expire_history("ch/0", 1e300) == (0, 0)  # never expires
        with pytest.raises(StoreError):
            made.add_history("ch/0", [row(4), row(math.nan)])
        assert len(made.read_history("ch/0", HistoryScan())) == 3
    finally:
        made.close()


def test_empty_data_comes_back_empty(store: Store) -> None:
    [empty] = store.add_history("ch/0", [row(3, data=b"")])
    assert [(r.id, r.data) for r in store.read_history("ch/0", HistoryScan())] == [(empty, b"")]


def test_sqlite_refuses_a_bad_row_by_name_before_writing_any(tmp_path: Path) -> None:
    from cosnotify.store.sqlite import SQLiteStore

    made = SQLiteStore(tmp_path / "store.db")
    try:
        with pytest.raises(TypeError, match=r"rows\[1\]"):
            made.add_history("ch/0", [row(1), row(2, data="text")])  # type: ignore[arg-type]
        with pytest.raises(OverflowError, match=r"rows\[1\]"):
            made.add_history("ch/0", [row(1), HistoryRow(2, 2**63, ("a",), None, None, b"")])
        assert made.read_history("ch/0", HistoryScan()) == []
    finally:
        made.close()


def test_ranges_order_and_pages(store: Store) -> None:
    fill(store)
    assert read(store, HistoryScan()) == [50, 40, 30, 20, 10]  # descending by default
    assert read(store, HistoryScan(ascending=True, t_from=20, t_to=40)) == [20, 30, 40]
    page = store.read_history("ch/0", HistoryScan(), limit=2)
    cursor = (page[-1].arrival, page[-1].id)
    assert [r.arrival for r in store.read_history("ch/0", HistoryScan(), cursor, 2)] == [30, 20]


def test_source_order_and_the_rows_without_one(store: Store) -> None:
    fill(store)
    assert read(store, HistoryScan(by_source=True)) == [40, 10, 30]  # 9, 5, 1
    assert read(store, HistoryScan(by_source=True, nulls=True)) == [20, 50]
    assert read(store, HistoryScan(source_t_from=2, source_t_to=9)) == [40, 10]


def test_type_prefixes_are_by_segment(store: Store) -> None:
    fill(store)
    assert read(store, HistoryScan(type_prefixes=(("a",),))) == [30, 20, 10]  # not "ab"
    assert read(store, HistoryScan(type_prefixes=(("a", "b"), ("b",)))) == [40, 20, 10]
    assert read(store, HistoryScan(type_prefixes=((),))) == [50, 40, 30, 20, 10]
    assert read(store, HistoryScan(type_prefixes=())) == []


def test_instances(store: Store) -> None:
    ids = fill(store)
    assert read(store, HistoryScan(instances=(ids[1], ids[3], 10**9))) == [40, 20]
    assert read(store, HistoryScan(instances=())) == []


def test_expired_rows_are_not_read_and_deleted(store: Store) -> None:
    store.add_history("ch/0", [row(1, expires=5), row(2), row(3, expires=50)])
    assert read(store, HistoryScan(now=10)) == [3, 2]
    assert store.expire_history("ch/0", now=10) == (1, 1)
    assert store.history_size("ch/0") == (2, 2)


def test_old_rows_and_the_oldest_past_a_bound(store: Store) -> None:
    store.add_history("ch/0", [row(float(t), data=b"x" * 10) for t in range(10)])
    assert store.expire_history("ch/0", now=10, before=3) == (3, 30)  # before 3 go
    assert store.drop_oldest_history("ch/0", count=2) == (2, 20)
    assert read(store, HistoryScan(ascending=True)) == [5, 6, 7, 8, 9]
    assert store.drop_oldest_history("ch/0", nbytes=25) == (3, 30)  # whole rows
    assert read(store, HistoryScan()) == [9, 8]
    assert store.drop_oldest_history("ch/0", count=1, nbytes=1) == (1, 10)
    assert store.history_size("ch/0") == (1, 10)
    store.drop_history("ch/0")
    assert store.history_size("ch/0") == (0, 0)


def test_the_channels_that_retain_rows(store: Store) -> None:
    """What a restart compares with the channels that came back (topology.py)."""
    assert store.history_channels() == []
    fill(store)
    store.add_history("ch/10", [row(1)])
    store.add_history("ch/2", [row(1)])
    assert store.history_channels() == ["ch/0", "ch/10", "ch/2"]
    store.drop_history("ch/10")
    assert store.history_channels() == ["ch/0", "ch/2"]


def test_type_keys_sort_by_segment() -> None:
    assert type_key(("a", "b")) < type_key(("a", "b", "c")) < type_key(("ab",))


def test_sqlite_ids_are_never_reused(tmp_path: Path) -> None:
    from cosnotify.store.sqlite import SQLiteStore

    made = SQLiteStore(tmp_path / "store.db")
    [first] = made.add_history("ch/0", [row(1)])
    made.drop_history("ch/0")
    made.close()
    made = SQLiteStore(tmp_path / "store.db")
    try:
        [second] = made.add_history("ch/0", [row(2)])
        assert second > first
    finally:
        made.close()


def test_a_store_of_the_previous_schema_gains_the_table(tmp_path: Path) -> None:
    from cosnotify.store.sqlite import MIGRATIONS, SQLiteStore
    from tests.store.test_sqlite import older_store

    path = tmp_path / "old.db"
    older_store(path, 1).close()
    made = SQLiteStore(path)
    try:
        made.add_history("ch/0", [row(1)])
        assert made.history_size("ch/0") == (1, 1)
    finally:
        made.close()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'"
                            ).fetchone() == (len(MIGRATIONS),)
    finally:
        conn.close()


def test_a_store_of_schema_2_ends_with_the_whole_source_index(tmp_path: Path) -> None:
    """Schema steps 2 -> 3 -> 4: the source index made partial, then whole again (the
    second pass of a scan by source reads the rows without a source through it, by
    id); rows kept before the steps are found by it."""
    from cosnotify.store.sqlite import SQLiteStore
    from tests.store.test_sqlite import older_store

    path = tmp_path / "two.db"
    conn = older_store(path, 2)
    conn.execute("INSERT INTO history (channel, arrival, session, type, source, expires, size,"
                 " data) VALUES ('ch/0', 1, 0, x'6100', 7, NULL, 1, x'78')")
    conn.close()
    made = SQLiteStore(path)
    try:
        made.add_history("ch/0", [row(2), row(3, source=5)])
        scan = HistoryScan(by_source=True, ascending=True)
        assert [r.source for r in made.read_history("ch/0", scan)] == [5, 7]
        nulls = HistoryScan(by_source=True, ascending=True, nulls=True)
        assert [r.arrival for r in made.read_history("ch/0", nulls)] == [2]
    finally:
        made.close()
    conn = sqlite3.connect(path)
    try:
        [sql] = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'history_by_source'"
                             ).fetchone()
        assert "WHERE" not in sql
        for scan in (HistoryScan(by_source=True), HistoryScan(by_source=True, nulls=True)):
            built = scan_sql("ch/0", scan, None, 10)
            assert built is not None
            plan = " ".join(str(r) for r in conn.execute("EXPLAIN QUERY PLAN " + built[0],
                                                         built[1]))
            assert "history_by_source" in plan, plan
    finally:
        conn.close()
