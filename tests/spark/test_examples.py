"""The Spark examples run as their users run them, and print what they promise.

``examples/demo.py`` is ``make demo``: a ``cosnotify serve`` child process,
IIOP clients, a filter in the server and a remote SparkSinkProxy.
``examples/spark_alarm_analytics.py`` streams through the ``cosnotify`` data
source. Each starts a SparkSession of its own, so they run in the spark
xdist group, one at a time.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

ROOT = pathlib.Path(__file__).parents[2]


def run_example(name: str) -> str:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    done = subprocess.run([sys.executable, str(ROOT / "examples" / name)], check=False,
                          cwd=ROOT, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr[-3000:]}"
    return done.stdout


def test_demo_runs_end_to_end() -> None:
    """1000 alarms, two of five severities pass the server's filter: 400 reach both
    consumers, 200 of each severity land in Spark, and the server exits cleanly."""
    out = run_example("demo.py")
    assert "lists: ['NotifyEventChannelFactory']" in out
    assert "consumer received 400 events" in out
    assert "{'critical': 200, 'major': 200}" in out
    assert "400 rows in " in out
    assert "severity=critical: 200 rows" in out and "severity=major: 200 rows" in out
    assert "severity=minor" not in out
    assert "in Spark: 200 rows" in out
    assert "exit status 0" in out


def test_alarm_analytics_counts_every_alarm() -> None:
    """Heartbeats are filtered out in the channel; every one of the 2000 alarms is counted."""
    out = run_example("spark_alarm_analytics.py")
    assert "pushed 2000 alarms and 500 heartbeats" in out
    assert "total counted: 2000 of 2000 alarms" in out


def test_four_protocols_share_one_channel() -> None:
    """Issue 22's example: an Eventer client, an Elvin client and a CORBA supplier each
    send an alarm and a status; the Elvin subscriber, the CORBA consumer and the
    Eventer subscriber each get the three alarms, and an Eventer query and Spark read
    all six from the channel's history."""
    out = run_example("four_protocols.py")
    three = "plant/alarm from corba, plant/alarm from elvin, plant/alarm from eventer"
    assert f"Elvin subscriber:  {three}" in out
    assert f"CORBA consumer:    {three}" in out
    assert "Eventer subscriber: plant/alarm, plant/alarm, plant/alarm/pump-7" in out
    assert "Eventer query plant/*: 6 events" in out
    assert "Spark, rows per type_name: alarm=3, status=3" in out
    assert "server exit status 0" in out
