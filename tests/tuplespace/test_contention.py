"""A long read never holds the space's lock long: the channel's pushes go on.

Provenance: issue 21, item 3 (the tuple space shares the channel: "their clients
and CORBA clients share one channel") and the review of the tuple space, finding 2
("One call can block the whole channel's push path for seconds"; "Sequenced reads
are linear per call"); docs/history.md, "How it is found". Nothing is timed: the
tests count the tuples a call examines while it holds the lock (the grammar's
matcher calls between two pauses), and make a push happen inside a pause.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from cosnotify.tuplespace import TupleSpace
from cosnotify.tuplespace import index as index_module
from cosnotify.tuplespace import search as search_module
from cosnotify.tuplespace import space as space_module
from cosnotify.tuplespace.templates import CompiledTemplate
from tests.tuplespace.conftest import WAIT, event, field, supplier

SLICE = 100


class Matches:
    """Counts the grammar's matcher calls, in all and since the last pause."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.total = self.since_pause = self.most_between_pauses = 0
        self.pauses = 0
        original = CompiledTemplate.matches

        def counted(template: CompiledTemplate, live: Any) -> bool:
            self.total += 1
            self.since_pause += 1
            self.most_between_pauses = max(self.most_between_pauses, self.since_pause)
            return original(template, live)

        monkeypatch.setattr(CompiledTemplate, "matches", counted)

    def paused(self) -> None:
        self.pauses += 1
        self.since_pause = 0


@pytest.fixture
def small_slice(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(search_module, "SCAN_SLICE", SLICE)
    yield


def fill(channel: Any, count: int, type_name: str = "Job") -> None:
    push = supplier(channel)
    for at in range(0, count, 500):
        push.push_structured_events([event(type_name, k=n) for n in range(at, at + 500)])


class TestTheLockIsLetGo:
    """Review finding 2: "64 formal templates that cannot narrow scan MAX_TEMPLATES x
    MAX_TUPLES" under the lock every accepted event needs."""

    def test_a_read_examines_a_slice_at_a_time(self, channel: Any, space: TupleSpace,
                                               small_slice: None,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
        """A read over 3,000 candidates (no index narrows it) examines at most SCAN_SLICE
        of them per hold of the lock, and still finds the one match, the newest."""
        monkeypatch.setattr(index_module, "MAX_INDEXED_NAMES", 0)
        fill(channel, 3_000)
        matches = Matches(monkeypatch)
        monkeypatch.setattr(space_module, "_yield", matches.paused)
        found = space.get_event("k: int = 2999")
        assert found is not None and field(found, "k") == 2999
        assert matches.total >= 3_000
        assert matches.pauses >= 3_000 // SLICE - 1
        assert matches.most_between_pauses <= SLICE

    def test_a_push_goes_on_while_a_long_read_runs(self, channel: Any, space: TupleSpace,
                                                    small_slice: None,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
        """While a read scans 3,000 candidates (64 templates that match nothing), a
        supplier's push completes: it is accepted, kept, and the read goes on; the read
        then finds the pushed event, which came while it ran."""
        monkeypatch.setattr(index_module, "MAX_INDEXED_NAMES", 0)
        fill(channel, 3_000)
        pushed = threading.Event()
        push = supplier(channel)

        def during_a_pause() -> None:
            if not pushed.is_set():
                threading.Thread(target=lambda: (
                    push.push_structured_events([event("Job", k=-1)]), pushed.set())).start()
                assert pushed.wait(WAIT), "the push waited for the read"

        monkeypatch.setattr(space_module, "_yield", during_a_pause)
        templates = [f"k: int = {-1 - n}" for n in range(63)] + ["k: int = -1"]
        found = space.get_event(templates)
        assert pushed.is_set()
        assert found is not None and field(found, "k") == -1
        assert space.live_count == 3_001

    def test_making_an_index_is_done_a_slice_at_a_time(self, channel: Any,
                                                       space: TupleSpace, small_slice: None,
                                                       monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
        """The first template on a property name indexes the live tuples by it a slice at
        a time (the lock let go between), then narrows: no tuple is examined by the
        matcher but the one it selects."""
        fill(channel, 3_000)
        matches = Matches(monkeypatch)
        monkeypatch.setattr(space_module, "_yield", matches.paused)
        found = space.get_event("k: int = 1234")
        assert found is not None and field(found, "k") == 1234
        assert matches.pauses >= 3_000 // SLICE - 1
        assert matches.total == 1
        assert space.get_event("k: int = 1234") is not None and matches.total == 2


class TestNarrowing:
    """docs/history.md, "How it is found": a bucket holds every tuple a template can
    match, so the matcher examines only those."""

    def test_formal_fields_narrow(self, channel: Any, space: TupleSpace,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
        """"Formal: This value matches any non-virtual value in a comparison tuple" of the
        field's name and type ("Tuple Matching"; "matches any field with the same name
        and type"): formal fields on names no tuple has find nothing at once, and one on
        a name some tuples have examines only those."""
        fill(channel, 1_000)
        supplier(channel).push_structured_events([event("Job", z=1), event("Job", z="s")])
        matches = Matches(monkeypatch)
        assert space.get_event([f"f{n}: int = ?" for n in range(15)]) is None
        assert matches.total == 0
        assert [field(t, "z") for t in space.snoop_events("z: int = ?")] == [1]
        assert matches.total == 1

    def test_a_sequenced_read_does_not_rescan_what_its_client_received(
            self, channel: Any, space: TupleSpace, monkeypatch: pytest.MonkeyPatch) -> None:
        """"Event Heap Client Responsibilities": a sequenced getEvent returns only events
        its client has not received; reading 2,000 events one call at a time examines
        each about once, not all it received before (finding 2: "_find walks the bucket
        from the oldest and skips every tuple the client has seen")."""
        fill(channel, 2_000)
        reader = space.connect("reader")
        matches = Matches(monkeypatch)
        got = [reader.get_event('EventType = "Job"') for _ in range(2_001)]
        assert [field(t, "k") for t in got[:-1]] == list(range(2_000)) and got[-1] is None
        assert matches.total <= 3 * 2_000
        assert reader.get_event(['EventType = "Job"', 'EventType = "Job", k: int = ?']) is None
        assert matches.total <= 3 * 2_000 + 10

    def test_a_cursor_stays_true_as_tuples_come_and_go(self, channel: Any,
                                                       space: TupleSpace) -> None:
        """A client's position in a template is only a shortcut: tuples removed, new ones,
        and one given back at its place are all seen as the seed says (each fresh event
        once). Each event has a Source of its own (Tables 1 and 3), so each is fresh until
        received."""
        supplier(channel).push_structured_events([
            event("Job", k=n, Source=f"s{n}", SessionID=1, SequenceNum=1) for n in range(10)])
        reader = space.connect("reader")
        assert field(reader.get_event('EventType = "Job"'), "k") == 0
        taken = space.remove_event("k: int = 1")
        assert taken is not None
        assert field(reader.get_event('EventType = "Job"'), "k") == 2
        space.give_back(taken)  # back at its place, before the reader's position
        assert field(reader.get_event('EventType = "Job"'), "k") == 1
        supplier(channel).push_structured_events([
            event("Job", k=10, Source="s10", SessionID=1, SequenceNum=1)])
        rest = [reader.get_event('EventType = "Job"') for _ in range(9)]
        assert [field(t, "k") if t else None for t in rest] == [3, 4, 5, 6, 7, 8, 9, 10, None]


class TestConcurrentRemovesWithPauses:
    """Table 6: "no others may retrieve it after this call returns" -- also when every
    search lets the lock go every few tuples."""

    def test_each_tuple_is_taken_once(self, channel: Any, space: TupleSpace,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
        """6 threads remove while a supplier pushes, searches pausing every 3 tuples:
        every tuple is taken exactly once."""
        monkeypatch.setattr(search_module, "SCAN_SLICE", 3)
        fill(channel, 500)
        barrier = threading.Barrier(7)
        taken: list[list[int]] = [[] for _ in range(6)]

        def remover(k: int) -> None:
            barrier.wait(WAIT)
            for _ in range(150):
                found = space.remove_event(['EventType = "Job", k: int = ?', "k: int = -5"])
                if found is not None:
                    taken[k].append(found.id)

        def pusher() -> None:
            barrier.wait(WAIT)
            push = supplier(channel)
            for n in range(100):
                push.push_structured_events([event("Job", k=1_000 + n)])

        threads = [threading.Thread(target=remover, args=(k,)) for k in range(6)]
        threads.append(threading.Thread(target=pusher))
        for t in threads:
            t.start()
        for t in threads:
            t.join(WAIT)
        every = [i for ids in taken for i in ids] + [t.id for t in space.get_all()]
        assert len(every) == 600 and len(set(every)) == 600
