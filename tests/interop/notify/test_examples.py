"""Every example runs: ``examples/python`` (our ORB only) and ``examples/cxx`` (omniORB).

Each test starts the examples as their users would, against a ``cosnotify
serve`` subprocess: a consumer first (it creates the channel and prints
``channel ID``, then ``ready``), then suppliers on that channel.
"""

from __future__ import annotations

import pathlib
import re
import sys

import pytest

from tests.interop.notify import harness
from tests.interop.notify.harness import ROOT, NotifyServer, Program

pytestmark = pytest.mark.xdist_group("interop-notify")

PY = ROOT / "examples" / "python"


def python_example(name: str, *args: str) -> Program:
    """``examples/python/NAME.py ARGS`` run by this interpreter (killed on exit)."""
    return Program([sys.executable, PY / f"{name}.py", *args], cwd=ROOT)


def started(program: Program) -> int:
    """Wait until a consumer example is connected; the id of its channel."""
    channel = int(program.wait_line("channel ").split()[1])
    program.wait_line("ready")
    return channel


def run_to_end(program: Program, timeout: float = 60.0) -> list[str]:
    """Wait for a clean exit; the lines the example printed."""
    program.finish(timeout)
    return program.lines


def numbers(lines: list[str], verb: str) -> list[int]:
    """The n of each "received ..."/"pulled ..." line."""
    return [int(m.group(1)) for line in lines if line.startswith(verb + " ")
            for m in [re.search(r" n=(-?\d+)", line)] if m]


class TestPythonExamples:
    def test_push_consumer_with_filter_and_pull_consumer(self,
                                                         notify_server: NotifyServer) -> None:
        """push_supplier.py feeds a filtered push_consumer.py and a pull_consumer.py."""
        url = notify_server.factory_url
        with python_example("push_consumer", url, "--count", "5", "--filter", "$n >= 5") as push:
            channel = started(push)
            with python_example("pull_consumer", url, "--channel", str(channel),
                                "--count", "10") as pull:
                pull.wait_line("ready")
                with python_example("push_supplier", url, "--channel", str(channel),
                                    "--count", "10") as supplier:
                    assert run_to_end(supplier) == [f"pushed 10 events to channel {channel}"]
                pulled = run_to_end(pull)
            received = run_to_end(push)
        assert numbers(received, "received") == [5, 6, 7, 8, 9]
        assert "received Example/Reading reading-5 n=5 temperature=22.5" in received
        assert received[-1] == "received 5 events"
        assert numbers(pulled, "pulled") == list(range(10))

    def test_pull_supplier_is_polled(self, notify_server: NotifyServer) -> None:
        """pull_supplier.py hands its readings to the channel, which pushes them on."""
        url = notify_server.factory_url
        with python_example("push_consumer", url, "--count", "3") as push:
            channel = started(push)
            with python_example("pull_supplier", url, "--channel", str(channel),
                                "--count", "3") as supplier:
                supplied = run_to_end(supplier)
            received = run_to_end(push)
        assert supplied == [f"handed out reading-{n}" for n in range(3)] + ["supplied 3 events"]
        assert numbers(received, "received") == [0, 1, 2]


@pytest.fixture(scope="module")
def examples() -> dict[str, pathlib.Path]:
    """``examples/cxx`` built by its Makefile (cached)."""
    try:
        return harness.build_examples()
    except harness.Unavailable as exc:
        pytest.skip(f"cannot build examples/cxx: {exc}")


@pytest.mark.interop
class TestCxxExamples:
    def test_cxx_consumer_with_filter_and_cxx_supplier(
            self, examples: dict[str, pathlib.Path], notify_server: NotifyServer) -> None:
        """The README run: four readings hotter than 21 C reach the C++ consumer."""
        url = notify_server.factory_url
        with Program([examples["structured_consumer"], url, "4", "$temperature > 21.0"]) as sink:
            channel = started(sink)
            with Program([examples["structured_supplier"], url, str(channel), "10"]) as source:
                assert run_to_end(source) == [f"pushed 10 events to channel {channel}"]
            received = run_to_end(sink)
        assert numbers(received, "received") == [3, 4, 5, 6]
        assert "received Example/Reading reading-4 n=4 temperature=22" in received
        assert received[-1] == "received 4 events"

    def test_cxx_and_python_examples_interoperate(
            self, examples: dict[str, pathlib.Path], notify_server: NotifyServer) -> None:
        """A Python supplier feeds the C++ consumer; the C++ supplier feeds a Python consumer."""
        url = notify_server.factory_url
        with Program([examples["structured_consumer"], url, "6"]) as cxx_sink, \
                python_example("push_consumer", url, "--count", "3") as py_sink:
            cxx_channel, py_channel = started(cxx_sink), started(py_sink)
            with python_example("push_supplier", url, "--channel", str(cxx_channel),
                                "--count", "6") as py_source:
                run_to_end(py_source)
            with Program([examples["structured_supplier"], url, str(py_channel), "3"]) as source:
                run_to_end(source)
            assert numbers(run_to_end(cxx_sink), "received") == list(range(6))
            assert numbers(run_to_end(py_sink), "received") == [0, 1, 2]
