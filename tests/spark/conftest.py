"""Fixtures for the Spark bridge: one local SparkSession for the whole suite, and events.

The session is created once per test process (``scope="session"``). Tests
that use it are marked ``spark`` and grouped with ``xdist_group("spark")``, so
under ``pytest -n auto --dist loadgroup`` they run in one worker and share
it; the conversion tests need no Spark at all.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from omniORB import CORBA, tcInternal

import CosNotification as N
import TimeBase

from cosnotify.corba import descriptors as D
from tests.corba.conftest import received_from_client
from tests.strategies import struct_tc

HERE = Path(__file__).parent
WAIT = 60.0  # generous upper bound for conditions that should hold soon (Spark jobs included)

SEVERITY = D.enum_tc("IDL:test/spark/Severity:1.0", "Severity",
                     ["CLEARED", "WARNING", "MINOR", "MAJOR", "CRITICAL"])
LOCATION = struct_tc("IDL:test/spark/Location:1.0", "Location",
                     [("rack", CORBA.TC_long), ("slot", CORBA.TC_short),
                      ("site", CORBA.TC_string)])
AMOUNT = tcInternal.createFixedTC(8, 2)


def alarm(i: int, header: list[Any] | None = None) -> Any:
    """A TMF-814-style alarm numbered ``i``, with values of several IDL kinds."""
    severity = SEVERITY._d[3][i % 5]
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(N.EventType("Telecom", "CommunicationsAlarm"),
                                         f"alarm-{i}"), header or []),
        [N.Property("severity", CORBA.Any(SEVERITY, severity)),
         N.Property("n", CORBA.Any(CORBA.TC_long, i)),
         N.Property("ne", CORBA.Any(CORBA.TC_string, f"NE-{i % 3}")),
         N.Property("counter", CORBA.Any(CORBA.TC_ulonglong, 2**64 - 1 - i)),
         N.Property("amount", CORBA.Any(AMOUNT, CORBA.fixed(f"{i / 4:.2f}"))),
         N.Property("where", CORBA.Any(LOCATION, LOCATION._d[1](i, 2, "Paris")))],
        CORBA.Any(CORBA.TC_string, f"probable cause {i % 4}"))


def number(event: Any) -> int:
    """The ``n`` field of an event made by :func:`alarm`."""
    return next(p.value.value() for p in event.filterable_data if p.name == "n")


def timet(seconds: float) -> Any:
    return CORBA.Any(TimeBase._tc_TimeT, int(seconds * 10_000_000))


@pytest.fixture(scope="session")
def wire_values(omniorb: Any) -> dict[str, Any]:
    """The Anys of tests/spark/wire_values.py, as this process received them from a client."""
    return received_from_client(omniorb, HERE / "data" / "SparkWire.idl", HERE / "wire_values.py")


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One local[2] SparkSession for every Spark test in this process."""
    scratch = str(tmp_path_factory.mktemp("spark"))
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("cosnotify-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.warehouse.dir", os.path.join(scratch, "warehouse"))
               .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={scratch}")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def server(omniorb: Any) -> Iterator[Any]:
    """A notification server on the session ORB (per test module).

    omniORB allows one ORB per process: the server shares the test's, so the
    test's own calls to it are collocated, while Spark's Python processes
    reach it over IIOP like any remote client.
    """
    from cosnotify.server import NotificationServer, ServerConfig

    srv = NotificationServer(ServerConfig(port=0, call_timeout=30.0)).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, omniorb: Any) -> Iterator[Any]:
    """A ``cosnotify serve`` child process: a channel that calls this process over IIOP."""
    from tests.server.conftest import ServeProcess

    made = ServeProcess(tmp_path_factory.mktemp("served"), "--call-timeout", "30")
    yield made
    made.stop()


@pytest.fixture(scope="module")
def registered(spark: Any) -> Any:
    """The shared SparkSession with the ``cosnotify`` data source registered."""
    import spark_bridge

    spark_bridge.register(spark)
    return spark


@pytest.fixture
def channel(server: Any) -> Iterator[Any]:
    """A new channel of ``server`` (a ``tests.spark.channels.Channel``), destroyed after."""
    from tests.spark.channels import Channel

    ch = Channel(server)
    yield ch
    ch.core.destroy()
