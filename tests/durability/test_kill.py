"""kill -9: a Persistent/Persistent channel loses nothing a supplier saw accepted.

``cosnotify serve --db`` is killed with SIGKILL at random moments while an
omniORBpy supplier process pushes numbered events, and restarted each time
on the same endpoint and store. A C++ consumer (Debian's omniORB) and an
acknowledging omniORBpy consumer (Event Acknowledgment, section 3.7), each a
process of its own, stay connected throughout: the restarted server
reconnects to them from the stored references. Every event the supplier saw
accepted must reach both. The C++ consumer may be given an event twice only
within the duplicate window of docs/persistence.md; the acknowledging one,
dropping numbers it has seen, sees each event once.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import pytest

import CosNotifyChannelAdmin as CA

from cosnotify.channel.durable import WINDOW
from tests.durability.conftest import DURABLE_QOS
from tests.interop.notify import harness
from tests.interop.peers import free_port
from tests.server.conftest import ServeProcess

ROOT = Path(__file__).resolve().parents[2]
KILLS = 5
COUNT = 600


def serve(tmp: Path, port: int, db: Path) -> ServeProcess:
    return ServeProcess(tmp, "--endpoint", f"127.0.0.1:{port}", "--db", str(db),
                        "--call-timeout", "5")


def peer(role: str, channel: str, *args: str) -> harness.Program:
    return harness.Program([sys.executable, "-m", "tests.durability.peer", role,
                            "--channel", channel, *args], cwd=ROOT)


def received(lines: list[str], key: str) -> list[int]:
    return [int(line.split("=", 1)[1]) for line in lines if line.startswith(key + "=")]


def test_sigkill_at_random_moments_loses_no_accepted_event(
        omniorb: Any, tmp_path: Path, notify_cxx: dict[str, Path]) -> None:
    seed = random.randrange(1 << 30)
    kill_points = sorted(random.Random(seed).sample(range(20, COUNT - 20), KILLS))
    port, db = free_port(), tmp_path / "store.db"
    server = serve(tmp_path, port, db)
    programs: list[harness.Program] = []
    try:
        factory = omniorb.string_to_object(server.ior)._narrow(CA.EventChannelFactory)
        channel = omniorb.object_to_string(factory.create_channel(DURABLE_QOS, [])[0])
        cxx = harness.Program([notify_cxx["notify_consumer"], "structured-push",
                               "--channel", channel, "--wait", "240", "--timeout", "300"])
        programs.append(cxx)
        cxx.wait_for("ready")
        python = peer("consumer", channel, "--ack")
        programs.append(python)
        python.wait_line("ready")
        supplier = peer("supplier", channel, "--count", str(COUNT), "--ack")
        programs.append(supplier)
        supplier.wait_line("ready")
        for point in kill_points:
            supplier.wait_line(f"accepted={point}", timeout=120)
            server.process.kill()
            server.stop()
            server = serve(tmp_path, port, db)
        supplier.wait_line("done", timeout=120)
        python.wait_line("end", timeout=120)
        # Read at the End event. (Its last call, disconnect, may then meet the
        # connection the first server left: a client retries it, docs/persistence.md.)
        cxx_numbers = cxx.wait_for("numbers", timeout=120)
    finally:
        for program in programs:
            program.close()
        server.stop()

    context = f"(seed {seed}, kills after {kill_points})"
    accepted = received(supplier.lines, "accepted")
    assert accepted == list(range(COUNT)), context
    got = {"C++": [int(n) for n in cxx_numbers.split(",") if n],
           "omniORBpy": received(python.lines, "got")}
    for name, numbers in got.items():
        missing = sorted(set(accepted) - set(numbers))
        assert not missing, f"{name} consumer lost {missing} {context}"
        duplicates = len(numbers) - len(set(numbers))
        if name == "omniORBpy":  # it acknowledges, and drops what it has seen by number
            assert duplicates == 0, f"{name}: {duplicates} duplicates {context}"
        else:
            assert duplicates <= KILLS * WINDOW, f"{name}: {duplicates} duplicates {context}"
        # Duplicates are redeliveries: each first arrival comes in order.
        firsts = list(dict.fromkeys(numbers))
        if firsts != sorted(firsts):
            at = next(i for i, (a, b) in enumerate(zip(firsts, sorted(firsts))) if a != b)
            lines = python.lines if name == "omniORBpy" else []
            got_at = [i for i, line in enumerate(lines) if line.startswith("got=")][at]
            raise AssertionError(f"{name} consumer: out of order at {at}: "
                                 f"{firsts[max(0, at - 5):at + 10]} {context}\n"
                                 + "\n".join(lines[max(0, got_at - 20):got_at + 30]))


@pytest.fixture(scope="module")
def notify_cxx() -> dict[str, Path]:
    try:
        return harness.build_programs()
    except harness.Unavailable as exc:
        pytest.skip(f"cannot build the C++ notification clients: {exc}")
