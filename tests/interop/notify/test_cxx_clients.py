"""omniORB C++ clients (Debian's COS stubs) against ``cosnotify serve`` over IIOP.

Each test runs the programs of ``cxx/`` as separate processes: a consumer that
makes (or joins) a channel and prints ``ready=1`` once connected, then a
supplier, then the consumer's tally. Structured streams end with a Test/End
event and Any streams with -1, so a consumer knows it has everything and the
counts are exact, extra events included.
"""

from __future__ import annotations

import io
import os
import pathlib
import shutil
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

import pytest
from omniORB import CORBA

import CosEventChannelAdmin as ECA
import CosNotifyChannelAdmin as CA

from tests.interop import peers
from tests.interop.conftest import nameclt
from tests.interop.notify import harness
from tests.interop.notify.harness import NotifyServer, Program

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("interop-notify")]

Programs = dict[str, pathlib.Path]


def numbers(result: dict[str, str], key: str = "numbers") -> list[int]:
    return [int(n) for n in result.get(key, "").split(",") if n]


def sizes(text: str) -> list[int]:
    return [int(n) for n in text.split(",") if n]


def consumer(cxx: Programs, mode: str, *args: str) -> Program:
    """A C++ consumer, waited on until it is connected (``ready=1``)."""
    program = Program([cxx["notify_consumer"], mode, *args, "--timeout", "90"])
    try:
        program.wait_for("ready")
    except BaseException:
        program.close()
        raise
    return program


def supply(cxx: Programs, mode: str, channel: str, *args: str) -> dict[str, str]:
    """Run a C++ supplier to completion."""
    return harness.run([cxx["notify_supplier"], mode, "--channel", channel, *args,
                        "--timeout", "90"], timeout=100)


def relay(cxx: Programs, server: NotifyServer, consumer_args: list[str], supplier_mode: str,
          supplier_args: list[str], *, go: bool = False) -> tuple[dict[str, str], dict[str, str]]:
    """Consumer on a new channel, then the supplier; both processes' results."""
    with consumer(cxx, consumer_args[0], "--factory", server.factory_url,
                  *consumer_args[1:]) as sink:
        supplied = supply(cxx, supplier_mode, sink.wait_for("channel"), *supplier_args)
        if go:
            sink.send("go")
        return supplied, sink.finish(60)


class TestStructuredPush:
    def test_filter_from_our_factory_passes_exactly_the_matching_events(
            self, notify_cxx: Programs, notify_server: NotifyServer) -> None:
        """A C++ consumer's EXTENDED_TCL filter ($n >= 50) passes events 50..99, in order."""
        supplied, got = relay(notify_cxx, notify_server,
                              ["structured-push", "--filter", "$n >= 50"],
                              "structured", ["--count", "100"])
        assert supplied["pushed"] == "100"
        assert got["constraints"] == "2"
        assert got["finished"] == "1" and got["in_order"] == "1"
        assert numbers(got) == list(range(50, 100))

    def test_filter_applies_to_its_own_proxy_only(self, notify_cxx: Programs,
                                                  notify_server: NotifyServer) -> None:
        """Two C++ consumers on one channel: the unfiltered one gets all 200 events."""
        with consumer(notify_cxx, "structured-push", "--factory", notify_server.factory_url,
                      "--filter", "$n < 10 or $n > 189") as filtered:
            channel = filtered.wait_for("channel")
            with consumer(notify_cxx, "structured-push", "--channel", channel) as everything:
                supply(notify_cxx, "structured", channel, "--count", "200")
                assert numbers(everything.finish()) == list(range(200))
            assert numbers(filtered.finish()) == [*range(10), *range(190, 200)]

    @pytest.mark.parametrize(("grammar", "text", "expected"), [
        ("ELVIN4", 'n >= 5 && n < 8 && begins-with(node, "\\\\Asia")', [5, 6]),
        ("EVENTHEAP", 'n: int = 6, node: string = ?', [6]),
        ("OES_SUBTREE", r"\Asia\India depth *", [1, 2, 5, 6, 9]),
    ])
    def test_each_seed_grammar_from_cxx(self, notify_cxx: Programs, notify_server: NotifyServer,
                                        grammar: str, text: str, expected: list[int]) -> None:
        """A C++ consumer makes a filter of each seed grammar through the channel's standard
        FilterFactory and receives exactly the matching events of a C++ supplier (nodes
        cycle \\Asia, \\Asia\\India, \\Asia\\India\\Calcutta, \\Europe\\France)."""
        supplied, got = relay(notify_cxx, notify_server,
                              ["structured-push", "--filter", text, "--grammar", grammar],
                              "structured", ["--count", "10", "--nodes"])
        assert supplied["pushed"] == "10"
        assert got["grammar"] == grammar and got["constraints"] == "2"
        assert got["finished"] == "1"
        assert numbers(got) == expected

    def test_sequence_supplier_to_structured_consumer(self, notify_cxx: Programs,
                                                      notify_server: NotifyServer) -> None:
        """Sequences of 7 pushed by a C++ SequencePushSupplier arrive one by one, in order."""
        supplied, got = relay(notify_cxx, notify_server, ["structured-push"],
                              "sequence", ["--count", "50", "--batch", "7"])
        assert supplied["sequences"] == "8"
        assert numbers(got) == list(range(50))


class TestSequencePush:
    def test_maximum_batch_size_without_pacing(self, notify_cxx: Programs,
                                               notify_server: NotifyServer) -> None:
        """MaximumBatchSize 10, PacingInterval 0, set by C++ set_qos: 100 events = 10 x 10."""
        _, got = relay(notify_cxx, notify_server,
                       ["sequence-push", "--batch", "10", "--pacing", "0", "--expect", "100"],
                       "structured", ["--count", "100", "--no-end"])
        assert got["qos.MaximumBatchSize"] == "10" and got["qos.PacingInterval"] == "0"
        assert sizes(got["batches"]) == [10] * 10
        assert numbers(got) == list(range(100))

    def test_pacing_interval_flushes_a_short_batch(self, notify_cxx: Programs,
                                                   notify_server: NotifyServer) -> None:
        """With PacingInterval 0.3 s, 25 events in batches of at most 10 all arrive."""
        _, got = relay(notify_cxx, notify_server,
                       ["sequence-push", "--batch", "10", "--pacing", "3000000", "--expect", "25"],
                       "sequence", ["--count", "25", "--batch", "25", "--no-end"])
        batches = sizes(got["batches"])
        assert got["qos.PacingInterval"] == "3000000"
        assert sum(batches) == 25 and max(batches) == 10
        assert min(batches) < 10  # a short batch: only the pacing interval sends one
        assert numbers(got) == list(range(25))


class TestPull:
    def test_structured_pull_and_try_pull(self, notify_cxx: Programs,
                                          notify_server: NotifyServer) -> None:
        """pull_structured_event, then try_pull_structured_event, until the queue is empty."""
        _, got = relay(notify_cxx, notify_server, ["structured-pull"],
                       "structured", ["--count", "40"], go=True)
        assert numbers(got) == list(range(40))
        assert int(got["pulled"]) >= 1 and int(got["try_pulled"]) >= 1
        assert int(got["pulled"]) + int(got["try_pulled"]) == 41  # the End event too
        assert got["after_end_has_event"] == "0"

    def test_sequence_pull_and_try_pull(self, notify_cxx: Programs,
                                        notify_server: NotifyServer) -> None:
        """pull_structured_events(25) gives MaximumBatchSize (10); try_pull_..._events(5) <= 5."""
        _, got = relay(notify_cxx, notify_server,
                       ["sequence-pull", "--batch", "10", "--max", "25", "--try-max", "5"],
                       "sequence", ["--count", "33", "--batch", "7"], go=True)
        calls = [call.split(":") for call in got["calls"].split(",")]
        assert calls[0] == ["pull", "10"]
        assert all(int(n) <= 10 for kind, n in calls if kind == "pull")
        assert all(int(n) <= 5 for kind, n in calls if kind == "try")
        assert numbers(got) == list(range(33))


class TestEventService:
    def test_push_supplier_to_push_consumer(self, notify_cxx: Programs,
                                            notify_server: NotifyServer) -> None:
        """CosEventComm push supplier and consumer through for_suppliers/for_consumers."""
        supplied, got = relay(notify_cxx, notify_server, ["cos-push"],
                              "cos-push", ["--count", "30"])
        assert supplied["pushed"] == "30"
        assert got["connect_again"] == "AlreadyConnected"
        assert numbers(got) == list(range(30))

    def test_pull_consumer_pulls_and_try_pulls(self, notify_cxx: Programs,
                                               notify_server: NotifyServer) -> None:
        """A CosEventComm pull consumer: pull, then try_pull until empty."""
        _, got = relay(notify_cxx, notify_server, ["cos-pull"], "cos-push", ["--count", "30"],
                       go=True)
        assert numbers(got) == list(range(30))
        assert int(got["pulled"]) + int(got["try_pulled"]) == 31
        assert got["after_end_has_event"] == "0"

    def test_pull_supplier_is_polled_by_the_channel(self, notify_cxx: Programs,
                                                    notify_server: NotifyServer) -> None:
        """The channel try_pulls a C++ CosEventComm PullSupplier; a push consumer gets all."""
        supplied, got = relay(notify_cxx, notify_server, ["cos-push"],
                              "cos-pull", ["--count", "25"])
        assert supplied["pulled_by_channel"] == "26" and supplied["done"] == "1"
        assert int(supplied["try_pull_calls"]) >= 27  # 26 values, then an empty answer
        assert numbers(got) == list(range(25))

    def test_pull_supplier_to_pull_consumer(self, notify_cxx: Programs,
                                            notify_server: NotifyServer) -> None:
        """Pull at both ends: the channel polls the supplier, the consumer pulls the channel."""
        _, got = relay(notify_cxx, notify_server, ["cos-pull"], "cos-pull", ["--count", "25"],
                       go=True)
        assert numbers(got) == list(range(25))


class TestOmniEventsTools:
    """omniEvents' own clients: ``events`` and ``eventf`` are CosEvent clients of any channel."""

    @pytest.fixture
    def channel(self, omniorb: Any, notify_server: NotifyServer) -> Any:
        """A new notification channel of the server, seen through our own ORB."""
        factory = omniorb.string_to_object(notify_server.factory_url)._narrow(CA.EventChannelFactory)
        channel, _ = factory.create_channel([], [])
        return channel

    def test_events_records_and_replays_through_our_channels(
            self, tmp_path: pathlib.Path, omniorb: Any, notify_cxx: Programs,
            notify_server: NotifyServer, channel: Any) -> None:
        """``events`` records a C++ supplier's Anys from our channel and replays them into one."""
        _require("events")
        recording = tmp_path / "events.dat"
        ior = omniorb.object_to_string(channel)
        with recording.open("wb") as out, _Recorder(ior, out) as recorder:
            _prime(channel._narrow(ECA.EventChannel), recorder)
            supply(notify_cxx, "cos-push", ior, "--count", "10")
            records = _wait_for_records(recorder, 11)
        assert [value for value in records if value != 1000] == [*range(10), -1]

        replayed = tmp_path / "replay.dat"
        replayed.write_bytes(_strip_priming(recording.read_bytes()))
        with consumer(notify_cxx, "cos-push", "--factory", notify_server.factory_url) as sink:
            with replayed.open("rb") as source:
                done = subprocess.run(["events", "-s", sink.wait_for("channel")], stdin=source,
                                      capture_output=True, timeout=60, check=False)
            assert done.returncode == 0, done.stderr
            assert numbers(sink.finish()) == list(range(10))

    def test_eventf_federates_omnievents_and_cosnotify(
            self, omniorb: Any, notify_cxx: Programs, notify_server: NotifyServer,
            omnievents: harness.OmniEvents, channel: Any) -> None:
        """omniEvents -> cosnotify -> omniEvents, wired by ``eventf``; C++ clients at the ends."""
        _require("eventf")
        first = omnievents.create_channel()
        last = omnievents.create_channel()
        ours = omniorb.object_to_string(channel)
        for source, target in ((first, ours), (ours, last)):
            done = subprocess.run(["eventf", source, target], capture_output=True, text=True,
                                  timeout=30, env=harness.quiet_omniorb_env(), check=False)
            assert done.returncode == 0, done.stdout + done.stderr
        with consumer(notify_cxx, "cos-push", "--channel", last) as sink:
            supply(notify_cxx, "cos-push", first, "--count", "20")
            assert numbers(sink.finish()) == list(range(20))

    def test_rmeventc_destroys_our_channel(self, omniorb: Any, notify_server: NotifyServer,
                                           channel: Any) -> None:
        """``rmeventc`` calls CosEventChannelAdmin::EventChannel::destroy on our channel."""
        _require("rmeventc")
        factory = channel._get_MyFactory()
        [channel_id] = [i for i in factory.get_all_channels()
                        if factory.get_event_channel(i)._is_equivalent(channel)]
        done = subprocess.run(["rmeventc", omniorb.object_to_string(channel)], capture_output=True,
                              text=True, timeout=30, env=harness.quiet_omniorb_env(), check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert channel_id not in factory.get_all_channels()
        with pytest.raises(CORBA.OBJECT_NOT_EXIST):
            channel._get_default_consumer_admin()


@pytest.fixture(scope="module")
def checks(notify_cxx: Programs, notify_server: NotifyServer) -> dict[str, str]:
    """What ``notify_checks exceptions`` printed (run once)."""
    return harness.run([notify_cxx["notify_checks"], "exceptions", "--factory",
                        notify_server.factory_url, "--timeout", "60"], timeout=90)


class TestExceptions:
    """User and system exceptions raised by the server arrive in C++ with their fields."""

    def test_unsupported_qos_with_its_property_errors(self, checks: dict[str, str]) -> None:
        """UnsupportedQoS: code, name and available range of every PropertyError."""
        assert checks["unsupported_qos.count"] == "1"
        assert checks["unsupported_qos.0"] == "BAD_VALUE:MaximumBatchSize:1:2147483647"
        assert checks["unsupported_qos3.count"] == "3"
        assert [checks[f"unsupported_qos3.{i}"] for i in range(3)] == [
            "BAD_PROPERTY:NoSuchProperty:none:none", "BAD_TYPE:Priority:none:none",
            "BAD_VALUE:MaximumBatchSize:1:2147483647"]
        assert [checks[f"validate_qos.{i}"] for i in range(3)] == [
            checks[f"unsupported_qos3.{i}"] for i in range(3)]
        assert checks["proxy_qos.0"] == "UNSUPPORTED_PROPERTY:MaximumBatchSize:none:none"

    def test_unsupported_admin_and_admin_limit_exceeded(self, checks: dict[str, str]) -> None:
        """UnsupportedAdmin for MaxConsumers -1; AdminLimitExceeded past MaxConsumers 2."""
        assert checks["unsupported_admin.0"] == "BAD_VALUE:MaxConsumers:0:2147483647"
        assert checks["second_proxy_id"] == "1"
        assert (checks["admin_limit.name"], checks["admin_limit.value"]) == ("MaxConsumers", "2")

    def test_invalid_constraint_carries_the_constraint(self, checks: dict[str, str]) -> None:
        """InvalidConstraint holds the offending ConstraintExp; InvalidGrammar for XPATH."""
        assert checks.get("invalid_constraint") is None, checks.get("invalid_constraint")
        assert checks["invalid_constraint.expr"] == "$a ## 1"
        assert checks["invalid_constraint.types"] == "1:Test/Counter"
        assert checks["constraints_after"] == "0"
        assert checks["invalid_grammar"] == "InvalidGrammar"

    def test_channel_not_found_and_object_not_exist(self, checks: dict[str, str]) -> None:
        """ChannelNotFound from the factory; OBJECT_NOT_EXIST from a destroyed admin."""
        assert checks["channel_not_found"] == "ChannelNotFound"
        assert checks["destroyed"] == "OBJECT_NOT_EXIST"


class TestOmniNames:
    @pytest.fixture
    def server_on_omninames(self, omninames: int,
                            tmp_path: pathlib.Path) -> Iterator[NotifyServer]:
        server = NotifyServer(tmp_path, naming=f"corbaloc::127.0.0.1:{omninames}/NameService")
        try:
            yield server
        finally:
            server.stop()

    def test_factory_bound_in_omninames_and_usable_from_cxx(
            self, omninames: int, server_on_omninames: NotifyServer,
            notify_cxx: Programs) -> None:
        """nameclt lists the factory; a C++ client resolves it from omniNames and uses it."""
        listed = nameclt(omninames, "list")
        assert listed.returncode == 0 and "NotifyEventChannelFactory" in listed.stdout.split()
        url = f"corbaname::127.0.0.1:{omninames}#NotifyEventChannelFactory"
        result = harness.run([notify_cxx["notify_checks"], "channel", "--factory", url,
                              "--timeout", "60"], timeout=90)
        assert result["listed"] == "1" and result["channel_id"].isdigit()
        assert result["roundtrip"] == "e42:42"
        assert server_on_omninames.stop() == 0  # SIGTERM: a clean shutdown


# -- helpers for omniEvents' tools --------------------------------------------------------------
# ``events`` writes each event as CDR in native byte order: the arrival time
# (ULong seconds, ULong nanoseconds), then the Any (TypeCode kind, value).
_RECORD = struct.Struct("=IIIi")
_TK_LONG = 3


def _require(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed (Debian: omnievents)")


class _Recorder:
    """``events`` recording a channel; killed on exit, as it never exits on its own.

    Its stdout (the recording) is copied to ``out`` on a reader thread that
    signals a condition per chunk, so a test waits for records, not on a timer.
    Its stderr carries omniORB's invocation trace, which says when
    ``connect_push_consumer`` has returned: the recorder is connected.
    """

    def __init__(self, ior: str, out: IO[bytes]) -> None:
        self.process = subprocess.Popen(
            ["events", "-ORBtraceInvocations", "1", "-ORBtraceInvocationReturns", "1", ior],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=harness.quiet_omniorb_env())
        assert self.process.stdout is not None and self.process.stderr is not None
        self.data = bytearray()
        self._out = out
        self._ended = False
        self._cond = threading.Condition()
        self._copier = threading.Thread(target=self._copy, args=(self.process.stdout,),
                                        daemon=True)
        self._copier.start()
        self.trace = peers.LineReader(
            self.process, io.TextIOWrapper(self.process.stderr, errors="replace"))

    def _copy(self, stream: IO[bytes]) -> None:
        try:
            while chunk := os.read(stream.fileno(), 65536):
                self._out.write(chunk)
                self._out.flush()
                with self._cond:
                    self.data += chunk
                    self._cond.notify_all()
        except (OSError, ValueError):  # closed under us by the teardown
            pass
        finally:
            with self._cond:
                self._ended = True
                self._cond.notify_all()

    def wait_until(self, done: Callable[[bytes], bool], timeout: float, what: str) -> bytes:
        """The recording once ``done(recording)`` holds, waiting up to ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not done(bytes(self.data)):
                assert not self._ended, f"events exited before {what}: {self.trace.output()}"
                left = deadline - time.monotonic()
                assert left > 0, f"{what} within {timeout} s: recorded {_records(self.data)}"
                self._cond.wait(left)
            return bytes(self.data)

    def close(self) -> None:
        self.process.kill()
        self.process.wait(10)
        self._copier.join(10)  # the pipes end with the process
        self.trace.thread.join(10)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()

    def __enter__(self) -> _Recorder:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _records(data: bytes | bytearray) -> list[int]:
    values = []
    for offset in range(0, len(data) - len(data) % _RECORD.size, _RECORD.size):
        _, _, kind, value = _RECORD.unpack_from(data, offset)
        assert kind == _TK_LONG, f"record {offset // _RECORD.size} is not a long: kind {kind}"
        values.append(value)
    return values


def _prime(channel: Any, recorder: _Recorder) -> None:
    """Once ``events`` has connected (its trace says so), push 1000 and see it recorded."""
    recorder.trace.wait_for("Return 'connect_push_consumer'", 30)
    entry = channel.for_suppliers().obtain_push_consumer()
    entry.connect_push_supplier(None)
    entry.push(CORBA.Any(CORBA.TC_long, 1000))
    recorder.wait_until(lambda data: len(data) >= _RECORD.size, 30, "events recorded nothing")
    entry.disconnect_push_consumer()


def _wait_for_records(recorder: _Recorder, count: int) -> list[int]:
    """The recording's values, once it holds ``count`` records after the priming ones."""
    data = recorder.wait_until(
        lambda data: len([v for v in _records(data) if v != 1000]) >= count, 30,
        f"{count} records")
    return _records(data)


def _strip_priming(data: bytes) -> bytes:
    kept = bytearray()
    for offset in range(0, len(data), _RECORD.size):
        record = data[offset:offset + _RECORD.size]
        if _RECORD.unpack(record)[3] != 1000:
            kept += record
    return bytes(kept)
