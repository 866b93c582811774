"""The SQLite event log against a model of what each consumer still needs.

Provenance: the store interface's contract (docs/persistence.md, "The store
interface"): an event is kept while some consumer it was written for has not
released its copy; ``pending(c)`` is what ``c`` still needs, in id order;
``consumers()`` every consumer that needs one; a release of a copy a
consumer does not hold changes nothing. The model is that contract as a
dict; the store's own bookkeeping (``event_copies``, schema 5 -> 6) must
agree with its ``pending`` rows after every step, including reopens and
writes in several parts (reviews 63 and 64 found a count kept wrong once).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from cosnotify.store import sqlite_events
from cosnotify.store.sqlite import SQLiteStore

NAMES = ["a", "b", "c", 'q"\\', "caf\u00e9"]
names = st.sampled_from(NAMES)
new_events = st.lists(st.tuples(st.binary(max_size=12), st.lists(names, max_size=4)),
                      max_size=5)


class EventLogMachine(RuleBasedStateMachine):
    """Writes, releases, drops and reopens, each checked against the model."""

    path: Path

    def __init__(self) -> None:
        super().__init__()
        self.store = SQLiteStore(self.path)
        #: The model: event id -> (its bytes, the consumers that still need it).
        self.events: dict[int, tuple[bytes, set[str]]] = {}
        self.highest = 0

    def teardown(self) -> None:
        self.store.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def _release(self, consumer: str, ids: list[int]) -> None:
        for event_id in ids:
            held = self.events.get(event_id)
            if held is not None and consumer in held[1]:
                held[1].discard(consumer)
                if not held[1]:
                    del self.events[event_id]

    def _some_ids(self, data: Any) -> list[int]:
        pool = sorted(self.events) + [self.highest + 1, 0]
        ids: list[int] = data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=5))
        return ids + ids[:1]  # one released twice

    @rule(events=new_events, consumer=names, data=st.data())
    def add_events(self, events: list[tuple[bytes, list[str]]], consumer: str,
                   data: Any) -> None:
        releases = {consumer: self._some_ids(data)} if self.events else None
        ids = self.store.add_events(events, releases=releases)
        for name, held in (releases or {}).items():
            self._release(name, held)
        assert len(ids) == len(events)
        assert all(event_id > self.highest for event_id in ids)
        for event_id, (body, consumers) in zip(ids, events, strict=True):
            if consumers:
                self.events[event_id] = (body, set(consumers))
        self.highest = max([self.highest, *ids])

    @rule(consumer=names, data=st.data())
    @precondition(lambda self: self.events)
    def release(self, consumer: str, data: Any) -> None:
        ids = self._some_ids(data)
        self.store.release(consumer, ids)
        self._release(consumer, ids)

    @rule(consumer=names)
    def drop_consumer(self, consumer: str) -> None:
        self.store.drop_consumer(consumer)
        self._release(consumer, list(self.events))

    @rule()
    def reopen(self) -> None:
        self.store.close()
        self.store = SQLiteStore(self.path)

    @invariant()
    def the_store_answers_as_the_model(self) -> None:
        for name in NAMES:
            wanted = sorted((i, body) for i, (body, held) in self.events.items()
                            if name in held)
            assert [(e.id, e.data) for e in self.store.pending(name)] == wanted
            assert self.store.pending_count(name) == len(wanted)
            if len(wanted) > 1:
                after = wanted[0][0]
                assert [e.id for e in self.store.pending(name, after=after, limit=1)] == [
                    wanted[1][0]]
        assert self.store.consumers() == sorted(
            {name for _, held in self.events.values() for name in held})

    @invariant()
    def the_counts_agree_with_the_copies(self) -> None:
        with sqlite3.connect(self.path) as conn:
            stored = {i for (i,) in conn.execute("SELECT id FROM events")}
            copies = dict(conn.execute("SELECT event_id, count(*) FROM pending"
                                       " GROUP BY event_id"))
            counted = dict(conn.execute("SELECT event_id, copies FROM event_copies"))
        conn.close()
        assert stored == set(self.events) == set(copies)
        for event_id, count in copies.items():
            assert counted.get(event_id, 1) == count
        assert set(counted) <= stored


@pytest.mark.parametrize("part_bytes", [sqlite_events.PART_BYTES, 8])
def test_the_event_log_keeps_what_the_model_keeps(tmp_path: Path, part_bytes: int,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """With writes in one part and in parts of 8 bytes (several statements a write)."""
    monkeypatch.setattr(sqlite_events, "PART_BYTES", part_bytes)
    EventLogMachine.path = tmp_path / "store.db"
    machine = EventLogMachine.TestCase
    machine.settings = settings(max_examples=25, stateful_step_count=30, deadline=None,
                                suppress_health_check=[HealthCheck.too_slow])
    machine().runTest()
