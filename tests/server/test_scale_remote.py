"""Many remote consumers in client processes, a tenth of them slow: the scale benchmark, small.

``benchmarks/scale_remote.py`` measures 1,000 consumers in 4 processes; this
runs its building blocks (the layout, the consumer processes, the supplier,
the report check) against the session's ``cosnotify serve`` with 2 processes
of 20 consumers, 2 of them slow in each. Each consumer has its own
EXTENDED_TCL filter ``$host == 'h<i>'`` and checks what it gets; the test
waits on the lines the processes print when their consumers have everything,
each wait bounded.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import CosNotifyChannelAdmin as CA

from benchmarks import scale_remote as bench

LAYOUT = bench.Layout(processes=2, per_process=20, slow_per_process=2, events=400)
SLOW_DELAY = 0.02   # seconds each push to a slow consumer blocks
WAIT = 20.0         # the most each phase may take (it takes a second or two)


@pytest.fixture
def scale_channel(served: Any, omniorb: Any) -> Iterator[Any]:
    """A new channel of the session's ``cosnotify serve``."""
    factory = omniorb.string_to_object(served.ior)._narrow(CA.EventChannelFactory)
    channel, _ = factory.create_channel([], [])
    yield channel
    channel.destroy()


@pytest.fixture
def consumer_processes(scale_channel: Any, omniorb: Any) -> Iterator[list[bench.ConsumerProcess]]:
    """The layout's consumer processes, each connecting its consumers to ``scale_channel``."""
    ior = omniorb.object_to_string(scale_channel)
    made: list[bench.ConsumerProcess] = []
    try:
        for process in range(LAYOUT.processes):
            made.append(bench.ConsumerProcess(ior, LAYOUT, process, SLOW_DELAY))
        yield made
    finally:
        for proc in made:
            proc.close()


class TestLayout:
    def test_every_event_has_one_host(self) -> None:
        """Events are dealt round-robin: the hosts' shares add up to every event."""
        layout = bench.Layout(processes=3, per_process=7, slow_per_process=2, events=100)
        shares = [layout.expected(host) for host in range(layout.hosts)]
        assert sum(shares) == 100
        assert max(shares) - min(shares) == 1
        assert (layout.group_events(slow=False) + layout.group_events(slow=True)) == 100

    def test_slow_tenth_is_spread(self) -> None:
        """A tenth of each process's consumers are slow, one in each run of ten."""
        layout = bench.Layout(processes=4, per_process=250, slow_per_process=25)
        slow = [host for host in range(layout.hosts) if layout.is_slow(host)]
        assert len(slow) == 100
        assert {host // 10 for host in slow} == set(range(100))

    def test_no_slow(self) -> None:
        """slow_per_process 0 makes every consumer fast."""
        layout = bench.Layout(processes=2, per_process=5, slow_per_process=0, events=20)
        assert not any(layout.is_slow(host) for host in range(layout.hosts))
        assert layout.group_events(slow=False) == 20


class TestScaleRemote:
    def test_every_consumer_gets_exactly_its_events(
            self, scale_channel: Any, consumer_processes: list[bench.ConsumerProcess]) -> None:
        """40 remote consumers with a filter each get exactly their host's events, in
        order; the slow ones too."""
        for proc in consumer_processes:
            assert proc.wait_ready(WAIT) == LAYOUT.per_process
        supplier = bench.Supplier(scale_channel)
        start, _ = supplier.push(LAYOUT)
        fast = [proc.wait_done("fast", WAIT) for proc in consumer_processes]
        slow = [proc.wait_done("slow", WAIT) for proc in consumer_processes]
        assert all(done > start for done in fast + slow)
        reports = [proc.report(WAIT) for proc in consumer_processes]
        assert bench.check_reports(LAYOUT, reports) == []
        got = {kind: sum(n for found in reports for n, is_slow in zip(found["got"], found["slow"])
                         if is_slow == (kind == "slow")) for kind in ("fast", "slow")}
        assert got == {"fast": LAYOUT.group_events(slow=False),
                       "slow": LAYOUT.group_events(slow=True)}
        # The slow consumers really were slow: each push to one blocks SLOW_DELAY, so
        # the last event of a slow consumer arrives after all of its earlier pushes.
        per_host = LAYOUT.events // LAYOUT.hosts
        assert max(slow) - start >= (per_host - 1) * SLOW_DELAY * 1e9
        supplier.disconnect()
        for proc in consumer_processes:
            proc.finish()
