"""The bridge on a real Spark standalone cluster: a master and two workers on 127.0.0.1.

The cluster is started from the pyspark wheel's ``bin/spark-class``
(``tests/spark/cluster.py``) once for this module, and the channels live in a
``cosnotify serve`` child. A process can hold one SparkContext and this
xdist worker may hold the suite's ``local[2]`` one, so the driver program is a
child process too (``tests/spark/cluster_job.py``): it runs the batch read,
the stream read, the write and the remote SparkSinkProxy on the cluster and
reports, as JSON, what came out and how many tasks each executor ran for
each. In standalone mode the driver runs no task, and the report shows which
executors ran each scenario's.

One test checks the report, a subtest per scenario: ``xdist_group`` does not
keep a module's tests on one xdist worker with pytest 9.2 and xdist 3.8
(xdist sets ``item._nodeid``, which pytest 9.2 no longer reads), and each
worker would start a cluster of its own.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.spark.cluster import SparkCluster, run_job

pytestmark = [pytest.mark.spark, pytest.mark.spark_cluster, pytest.mark.slow,
              pytest.mark.xdist_group("spark_cluster")]

#: Seconds the whole job may take (it takes about 25 s here).
JOB_TIMEOUT = 300.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    """A standalone master and two one-core workers, stopped (every JVM gone) after."""
    made = SparkCluster(tmp_path_factory.mktemp("cluster")).start()
    yield made
    made.stop()


@pytest.fixture(scope="module")
def report(cluster: SparkCluster, served: Any,
           tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What ``tests/spark/cluster_job.py`` reports after running on the cluster."""
    scratch = tmp_path_factory.mktemp("cluster-job")
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable)
    return run_job("tests.spark.cluster_job", [cluster.master_url, served.ior, str(scratch)],
                   env, JOB_TIMEOUT, "cluster job", cluster.log)


def on_executors(tasks: dict[str, int], report: dict[str, Any]) -> bool:
    """Tasks ran, and only on the cluster's executors."""
    return bool(tasks) and set(tasks) <= set(report["executors"])


def check_placement(report: dict[str, Any], cluster: SparkCluster) -> None:
    """The job's two executors run in the two workers, in processes other than the
    driver's: each task's working directory is inside one worker's work dir."""
    assert report["master"] == cluster.master_url
    assert len(report["executors"]) == 2
    assert report["block_managers"] == 3  # the driver and two executors
    places = report["probe"]["places"]
    assert sorted(p["partition"] for p in places) == [0, 1, 2, 3]
    workers = {Path(p["cwd"]).resolve().parents[1] for p in places}
    assert workers == {w.resolve() for w in cluster.worker_dirs}
    assert {Path(p["cwd"]).name for p in places} == set(report["executors"])
    pids = {p["pid"] for p in places}
    assert len(pids) == 2 and report["driver_pid"] not in pids
    tasks = report["probe"]["tasks"]
    assert sorted(tasks) == report["executors"] and sum(tasks.values()) == 4


def check_batch_read(report: dict[str, Any], cluster: SparkCluster) -> None:
    """spark.read.format("cosnotify") of a subscription returns the matching events
    pushed into the channel, read by a task on an executor."""
    got = report["batch_read"]
    assert got["numbers"] == list(range(5, 20))
    assert got["same"]
    assert on_executors(got["tasks"], report), got["tasks"]


def check_stream_read(report: dict[str, Any], cluster: SparkCluster) -> None:
    """readStream.format("cosnotify") into a Parquet sink gets the matching events, in
    micro-batches of at most max_events_per_batch, with tasks on the executors."""
    got = report["stream_read"]
    assert got["error"] is None
    assert got["arrived"]
    assert got["numbers"] == [0, 1, 2, *range(10, 20)]
    assert got["same"]
    assert got["batches"] >= 3  # 13 events, at most 5 per micro-batch
    assert on_executors(got["tasks"], report), got["tasks"]


def check_write(report: dict[str, Any], cluster: SparkCluster) -> None:
    """df.write.format("cosnotify") pushes every row as an event from both executors
    (one task each), and a subscription of the channel receives them unchanged."""
    got = report["write"]
    assert got["partitions"] == 2
    assert got["numbers"] == list(range(10))
    assert got["same"]
    assert got["tasks"] == {e: 1 for e in report["executors"]}


def check_remote_sink(report: dict[str, Any], cluster: SparkCluster) -> None:
    """SparkSinkProxy.attach_remote: the served channel pushes to the driver's consumer,
    and the batches are written as Parquet by tasks on the executors."""
    got = report["sink"]
    assert got["arrived"] and not got["failed"]
    assert got["numbers"] == [6, 7, 8, 9]
    assert got["same"]
    assert got["batches"] >= 2  # max_batch_size=2
    assert on_executors(got["tasks"], report), got["tasks"]


CHECKS = [check_placement, check_batch_read, check_stream_read, check_write,
          check_remote_sink]


class TestCluster:
    def test_bridge_with_tasks_on_two_workers(self, cluster: SparkCluster,
                                              report: dict[str, Any],
                                              subtests: pytest.Subtests) -> None:
        """Tasks run on both workers, and the batch read, stream read, write and remote
        SparkSinkProxy work there (one subtest each: see the check_ functions)."""
        for check in CHECKS:
            with subtests.test(check.__name__.removeprefix("check_")):
                check(report, cluster)
