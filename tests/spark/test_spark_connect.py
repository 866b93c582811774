"""The bridge over Spark Connect (docs/spark.md, Spark Connect).

A Spark Connect server is started from the pyspark wheel on 127.0.0.1
(``tests/spark/connect_server.py``) once for this module, and the channels live
in a ``cosnotify serve`` child. The client is a child process too
(``tests/spark/connect_job.py``): this xdist worker may hold the suite's classic
``local[2]`` session. It registers the ``cosnotify`` source over Connect, runs
a batch read, an ``availableNow`` stream read, a write and the remote
SparkSinkProxy, and reports each outcome as JSON; one test checks the report,
a subtest per scenario, and that stopping the server leaves no process.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.spark.cluster import _group_members, run_job
from tests.spark.connect_server import ConnectServer

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.xdist_group("spark_connect")]

#: Seconds the whole client job may take (it takes about 15 s here).
JOB_TIMEOUT = 240.0


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    """A Spark Connect server (local[2]); every process of it gone after."""
    made = ConnectServer(tmp_path_factory.mktemp("connect")).start()
    yield made
    made.stop()


@pytest.fixture(scope="module")
def report(connect_server: ConnectServer, served: Any,
           tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What ``tests/spark/connect_job.py`` reports after running over Connect."""
    scratch = tmp_path_factory.mktemp("connect-job")
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    return run_job("tests.spark.connect_job", [connect_server.url, served.ior, str(scratch)],
                   env, JOB_TIMEOUT, "Connect job", connect_server.log)


def check_session(report: dict[str, Any]) -> None:
    """The client's session is a Connect session, not a classic one."""
    assert report["session"] == "pyspark.sql.connect.session.SparkSession"


def check_options(report: dict[str, Any]) -> None:
    """A misspelt option or a bad constraint: under Connect ``load()`` returns (plans
    are analysed lazily, by the server) and the bridge's error comes with the first
    analysis, wrapped in the server's AnalysisException."""
    got = report["options"]
    assert "exception" not in got, got
    assert got["load_returned"]
    error = got["schema_error"]
    assert error is not None
    assert error.startswith("AnalysisException: [PYTHON_DATA_SOURCE_ERROR]"), error
    assert "ValueError: unknown option(s) ['constrant']" in error
    bad = got["constraint_error"]
    assert bad is not None
    assert bad.startswith("AnalysisException: [PYTHON_DATA_SOURCE_ERROR]"), bad
    assert "cosnotify.filter.errors.ConstraintSyntaxError: unexpected end of constraint" in bad


def check_batch_read(report: dict[str, Any]) -> None:
    """spark.read.format("cosnotify") of a subscription over Connect returns the
    matching events pushed into the channel, unchanged."""
    got = report["batch_read"]
    assert "exception" not in got, got.get("traceback")
    assert got["numbers"] == list(range(5, 20))
    assert got["same"]


def check_stream_read(report: dict[str, Any]) -> None:
    """readStream.format("cosnotify") with availableNow into Parquet over Connect: the
    matching events, in batches of at most max_events_per_batch, and the query ends."""
    got = report["stream_read"]
    assert "exception" not in got, got.get("traceback")
    assert got["error"] is None
    assert got["ended"]
    assert got["numbers"] == [0, 1, 2, *range(10, 20)]
    assert got["same"]
    assert got["batches"] >= 3  # 13 events, at most 5 per micro-batch


def check_write(report: dict[str, Any]) -> None:
    """df.write.format("cosnotify") over Connect pushes every row as an event, and a
    subscription of the channel receives them unchanged."""
    got = report["write"]
    assert "exception" not in got, got.get("traceback")
    assert got["numbers"] == list(range(10))
    assert got["same"]


def check_tcl(report: dict[str, Any]) -> None:
    """tcl_filter works over Connect: one constraint translated to SQL (with the UDF only
    for rows whose run-time types SQL does not cover: ``sql+udf``), and one the bridge's
    UDF decides alone, the UDF registered over Connect (once per session, keyed by its
    session id: a Connect session has no JVM session) and run by the server's Python
    workers."""
    got = report["tcl"]
    assert "exception" not in got, got.get("traceback")
    assert got["sql"]["mode"] == "sql+udf"
    assert got["sql"]["numbers"] == [5, 8]  # n >= 5 and ne NE-2 (i % 3 == 2)
    assert got["udf"]["mode"] == "udf"
    assert got["udf"]["numbers"] == [7, 8, 9]


def check_sink(report: dict[str, Any]) -> None:
    """SparkSinkProxy.attach_remote with a Connect session: the consumer runs in the
    client, and each batch goes to the server as createDataFrame(pyarrow Table)."""
    got = report["sink"]
    assert "exception" not in got, got.get("traceback")
    assert got["failure"] is None
    assert got["arrived"] and not got["failed"]
    assert got["numbers"] == [6, 7, 8, 9]
    assert got["same"]
    assert got["batches"] >= 2  # max_batch_size=2


CHECKS = [check_session, check_options, check_batch_read, check_stream_read, check_write,
          check_tcl, check_sink]


class TestSparkConnect:
    def test_bridge_over_spark_connect(self, connect_server: ConnectServer,
                                       report: dict[str, Any],
                                       subtests: pytest.Subtests) -> None:
        """The cosnotify source registered over Connect reads, streams and writes a
        channel, and the remote sink writes through Connect (a subtest each)."""
        for check in CHECKS:
            with subtests.test(check.__name__.removeprefix("check_")):
                check(report)

    def test_stopping_the_server_leaves_no_process(self, connect_server: ConnectServer,
                                                   report: dict[str, Any]) -> None:
        """Stopping the server (after the job) ends its JVM and its Python workers on
        SIGTERM: no member of its process group is left."""
        assert connect_server.daemon is not None
        pgid = connect_server.daemon.process.pid
        assert _group_members(pgid)  # the JVM is running before
        killed = connect_server.stop()
        assert killed == []
        assert _group_members(pgid) == []
        assert connect_server.daemon.process.returncode is not None
