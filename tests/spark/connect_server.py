"""A Spark Connect server on 127.0.0.1, from the pyspark wheel (docs/spark.md, Spark Connect).

Strategy: the wheel ships ``jars/spark-connect_2.13-<version>.jar`` and
``bin/spark-submit`` but not ``sbin/start-connect-server.sh``, so the server is
started the way that script does it, in the foreground:
``spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer
spark-internal``. (``spark-class`` with the class name does not work: the
server's ``main`` ignores ``--conf`` arguments and fails with "A master URL must
be set".) The gRPC port is 0, so the system picks a free one; the server
names it in its log ("Spark Connect server started at: 127.0.0.1:PORT"), which
is read with the same :class:`tests.spark.cluster.Daemon` as the standalone
cluster: a thread reads the output, a condition is waited on with a deadline.
The server runs in a process group of its own with its Python workers (the
data source's planner, source runner and readers run there, so they need
``PYSPARK_PYTHON`` and ``PYTHONPATH`` to reach ``spark_bridge``); stopping it
SIGTERMs the group and waits until every member is gone.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.spark.cluster import Daemon, spark_home

__all__ = ["ConnectServer"]

ROOT = Path(__file__).resolve().parents[2]
#: Seconds the server may take to start (a JVM and a SparkContext: about 4 s here).
START_TIMEOUT = 60.0


class ConnectServer:
    """A Spark Connect server with a ``local[2]`` SparkContext, working in ``scratch``.

    ``start()`` returns once the server listens; ``url`` is then
    ``sc://127.0.0.1:<port>``.
    """

    def __init__(self, scratch: Path, *, master: str = "local[2]",
                 python: str = sys.executable) -> None:
        self.scratch = scratch
        self.master = master
        self.home = spark_home()
        self.daemon: Daemon | None = None
        self.port = 0
        conf = scratch / "conf"  # empty: no spark-env.sh or spark-defaults.conf of the host
        conf.mkdir(parents=True, exist_ok=True)
        self.env = dict(os.environ)
        path = os.environ.get("PYTHONPATH")
        self.env.update({
            "SPARK_HOME": str(self.home),
            "SPARK_CONF_DIR": str(conf),
            "SPARK_LOCAL_IP": "127.0.0.1",
            # The server's Python workers run the data source: our interpreter, our code.
            "PYSPARK_PYTHON": python,
            "PYSPARK_DRIVER_PYTHON": python,
            "PYTHONPATH": str(ROOT) + (os.pathsep + path if path else ""),
        })

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def argv(self) -> list[str]:
        confs = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": "0",
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.warehouse.dir": str(self.scratch / "warehouse"),
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={self.scratch}",
        }
        argv = [str(self.home / "bin" / "spark-submit"), "--master", self.master,
                "--name", "cosnotify-connect",
                "--class", "org.apache.spark.sql.connect.service.SparkConnectServer"]
        for key, value in confs.items():
            argv += ["--conf", f"{key}={value}"]
        return [*argv, "spark-internal"]

    def start(self) -> ConnectServer:
        try:
            self.daemon = Daemon("connect-server", self.argv(), self.env, self.scratch)
            match = self.daemon.wait_for(
                r"Spark Connect server started at: 127\.0\.0\.1:(\d+)", START_TIMEOUT)
            self.port = int(match[1])
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> list[int]:
        """Stop the server and its process group (its Python workers); pids killed by force."""
        return self.daemon.stop() if self.daemon else []

    def log(self) -> str:
        return self.daemon.log() if self.daemon else ""
