"""A Spark standalone cluster on 127.0.0.1, from the pyspark wheel (docs/spark.md).

Strategy: the wheel ships ``bin/spark-class`` and the jars, but not the
``sbin/start-master.sh`` family, so each daemon is started with
``spark-class org.apache.spark.deploy.master.Master`` (or ``...worker.Worker``)
directly, in the foreground, as a child of this process in a process group of
its own. Every port is 0, so the operating system picks a free one and two
clusters (two xdist workers, two checkouts) never race for a port; the daemons
say which ports they got in their log. Readiness is read from that log, never
waited for with sleeps: a thread per daemon reads its output lines and
notifies a condition, and :meth:`Daemon.wait_for` waits on it for a line
matching a pattern, with a deadline, failing with the log when the daemon
exits or the deadline passes. Stopping sends SIGTERM to each daemon's process
group (the worker's group holds its executors and their Python workers),
SIGKILL after a deadline, and then waits for every member of the group to be
gone (``pidfd``), so no JVM outlives the cluster.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["ClusterError", "Daemon", "SparkCluster", "cluster_session", "executor_tasks",
           "spark_home", "stop_group"]

#: Seconds a daemon may take to start or to stop (a JVM start takes 2-5 s here).
START_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0


#: The repository root: where the jobs run (``python -m tests.spark...``).
ROOT = Path(__file__).resolve().parents[2]


class ClusterError(RuntimeError):
    """A daemon of the cluster did not start; ``log`` is what it printed."""

    def __init__(self, what: str, log: str) -> None:
        super().__init__(f"{what}\n--- its output ---\n{log}")
        self.what = what
        self.log = log


def spark_home() -> Path:
    """The pyspark package directory, which is a SPARK_HOME (``bin/``, ``jars/``)."""
    import pyspark

    home = Path(pyspark.__file__).parent
    spark_class = home / "bin" / "spark-class"
    if not (spark_class.is_file() and os.access(spark_class, os.X_OK)):
        raise ClusterError(f"{spark_class} is missing or not executable", "")
    if not (home / "jars").is_dir():
        raise ClusterError(f"{home / 'jars'} is missing", "")
    return home


def _group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group ``pgid``."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc", entry, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # state, ppid, pgrp, ...
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


def _wait_gone(pids: list[int], deadline: float) -> list[int]:
    """Wait until the processes ``pids`` (not our children) exit; those still alive."""
    alive = []
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            if not poller.poll(max(0.0, deadline - time.monotonic()) * 1000):
                alive.append(pid)
        finally:
            os.close(fd)
    return alive


def stop_group(process: subprocess.Popen[Any], timeout: float = STOP_TIMEOUT) -> list[int]:
    """SIGTERM the process group led by ``process``, SIGKILL what is left after ``timeout``.

    Returns the pids that were still alive at the deadline and had to be
    killed (empty when everything stopped on SIGTERM). Every member of the
    group is gone when this returns.
    """
    pgid = process.pid
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    killed = _wait_gone(_group_members(pgid), deadline)
    if process.poll() is None:
        killed.append(process.pid)
    if killed or _group_members(pgid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        process.wait(timeout=timeout)
        left = _wait_gone(_group_members(pgid), time.monotonic() + timeout)
        if left:
            raise ClusterError(f"processes {left} of group {pgid} survived SIGKILL", "")
    return killed


class Daemon:
    """One ``spark-class`` JVM, its output read line by line into ``lines``."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.name = name
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._ended = False
        self.process = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, start_new_session=True)
        self._reader = threading.Thread(target=self._read, name=f"{name}-log", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._cond:
                self.lines.append(line)
                self._cond.notify_all()
        with self._cond:
            self._ended = True
            self._cond.notify_all()

    def log(self) -> str:
        with self._cond:
            return "".join(self.lines)

    def wait_for(self, pattern: str, timeout: float = START_TIMEOUT) -> re.Match[str]:
        """The first output line matching ``pattern``, waiting up to ``timeout`` for it."""
        regex = re.compile(pattern)
        seen = 0
        found: list[re.Match[str]] = []

        def ready() -> bool:
            nonlocal seen
            for line in self.lines[seen:]:
                match = regex.search(line)
                if match:
                    found.append(match)
                    return True
            seen = len(self.lines)
            return self._ended

        with self._cond:
            self._cond.wait_for(ready, timeout)
        if not found:
            status = None
            if self._ended:  # the output ended: the process has exited, or is exiting
                with contextlib.suppress(subprocess.TimeoutExpired):
                    status = self.process.wait(timeout=STOP_TIMEOUT)
            what = (f"exited with status {status}" if status is not None
                    else f"printed no line matching {pattern!r} in {timeout} s")
            raise ClusterError(f"{self.name} {what}", self.log())
        return found[0]

    def stop(self) -> list[int]:
        """Stop the daemon and its process group (see :func:`stop_group`)."""
        killed = stop_group(self.process)
        self._reader.join(STOP_TIMEOUT)
        return killed


class SparkCluster:
    """A standalone master and ``workers`` workers on 127.0.0.1, each in ``scratch``.

    ``start()`` returns once the master is the leader and every worker has
    registered with it; ``master_url`` is then ``spark://127.0.0.1:<port>``.
    """

    def __init__(self, scratch: Path, *, workers: int = 2, cores: int = 1,
                 memory: str = "1g", python: str = sys.executable) -> None:
        self.scratch = scratch
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.home = spark_home()
        self.master: Daemon | None = None
        self.worker_daemons: list[Daemon] = []
        self.worker_dirs = [scratch / f"worker-{i}" for i in range(workers)]
        self.master_url = ""
        conf = scratch / "conf"  # empty: no spark-env.sh or spark-defaults.conf of the host
        logs = scratch / "logs"
        for directory in (conf, logs, *self.worker_dirs):
            directory.mkdir(parents=True, exist_ok=True)
        self.env = dict(os.environ)
        self.env.update({
            "SPARK_HOME": str(self.home),
            "SPARK_CONF_DIR": str(conf),
            "SPARK_LOG_DIR": str(logs),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": "512m",
            # The REST submission server would take the fixed port 6066.
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
            # Executors start Python workers with this interpreter (our packages).
            "PYSPARK_PYTHON": python,
            "PYSPARK_DRIVER_PYTHON": python,
        })

    def _spark_class(self, main: str, *args: str) -> list[str]:
        return [str(self.home / "bin" / "spark-class"), main, *args]

    def start(self) -> SparkCluster:
        try:
            self.master = Daemon("master", self._spark_class(
                "org.apache.spark.deploy.master.Master",
                "--host", "127.0.0.1", "--port", "0", "--webui-port", "0"),
                self.env, self.scratch)
            self.master_url = self.master.wait_for(r"Starting Spark master at (spark://\S+)")[1]
            self.master.wait_for(r"I have been elected leader")
            for i, work in enumerate(self.worker_dirs):
                env = dict(self.env, SPARK_WORKER_DIR=str(work))
                self.worker_daemons.append(Daemon(f"worker-{i}", self._spark_class(
                    "org.apache.spark.deploy.worker.Worker", self.master_url,
                    "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                    "--cores", str(self.cores), "--memory", self.memory,
                    "--work-dir", str(work)), env, work))
            for worker in self.worker_daemons:  # they start in parallel
                worker.wait_for(r"Successfully registered with master spark://")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> list[int]:
        """Stop the workers (and their executors), then the master; pids killed by force."""
        killed = []
        for daemon in [*self.worker_daemons, *([self.master] if self.master else [])]:
            killed.extend(daemon.stop())
        return killed

    def log(self) -> str:
        daemons = [*([self.master] if self.master else []), *self.worker_daemons]
        return "".join(f"--- {d.name} ---\n{d.log()}" for d in daemons)


def cluster_session(master_url: str, scratch: str, *, executors: int = 2,
                    name: str = "cosnotify-cluster") -> Any:
    """A SparkSession on the cluster, made once every executor has registered.

    ``spark.scheduler.minRegisteredResourcesRatio = 1`` with ``spark.cores.max``
    makes the session wait (Spark's own wait, up to
    ``maxRegisteredResourcesWaitingTime``) until ``executors`` one-core
    executors are there.
    """
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master(master_url).appName(name)
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.executor.memory", "512m")
               .config("spark.executor.cores", "1")
               .config("spark.cores.max", str(executors))
               .config("spark.scheduler.minRegisteredResourcesRatio", "1.0")
               .config("spark.scheduler.maxRegisteredResourcesWaitingTime", "120s")
               .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", str(executors))
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.warehouse.dir", os.path.join(scratch, "warehouse"))
               .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={scratch}")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    return session


def run_job(module: str, args: list[str], env: dict[str, str], timeout: float,
            what: str, log: Callable[[], str]) -> dict[str, Any]:
    """Run ``python -m module args`` (a Spark job of tests/spark) in a process group of
    its own and return the JSON of its last ``RESULT`` line; the test fails with the
    job's output and ``log()`` (the cluster's or server's) if it fails or takes longer
    than ``timeout`` seconds. Its group (a driver's JVM too) is stopped after."""
    import pytest

    job = subprocess.Popen([sys.executable, "-m", module, *args], cwd=ROOT, env=env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = job.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop_group(job)
        out, err = job.communicate()
        pytest.fail(f"the {what} took more than {timeout} s:\n{err[-6000:]}\n"
                    f"{log()[-4000:]}")
    finally:
        stop_group(job)
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    if job.returncode != 0 or not lines:
        pytest.fail(f"the {what} failed ({job.returncode}):\n{err[-6000:]}\n{out[-2000:]}\n"
                    f"{log()[-4000:]}")
    result: dict[str, Any] = json.loads(lines[-1].removeprefix("RESULT "))
    return result


def executor_tasks(spark: Any) -> dict[str, int]:
    """Tasks run so far per executor id (``driver`` included), once Spark's events are in.

    Read from the driver's status store, after draining its listener bus, so
    a job that has returned is counted.
    """
    sc = spark.sparkContext._jsc.sc()
    sc.listenerBus().waitUntilEmpty()
    summaries = sc.statusStore().executorList(False)
    return {summaries.apply(i).id(): int(summaries.apply(i).totalTasks())
            for i in range(summaries.size())}
