"""Fixtures for tests/corba: Anys that crossed the wire from another process."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import CosNotifyComm__POA

HERE = Path(__file__).parent


class Collector(CosNotifyComm__POA.StructuredPushConsumer):
    """Keeps the first filterable property of each ``wire/case`` event until ``wire/done``."""

    def __init__(self) -> None:
        self.received: dict[str, Any] = {}
        self.done = threading.Event()

    def push_structured_event(self, event: Any) -> None:
        if event.header.fixed_header.event_type.type_name == "done":
            self.done.set()
            return
        prop = event.filterable_data[0]
        self.received[prop.name] = prop.value

    def offer_change(self, added: Any, removed: Any) -> None:
        pass

    def disconnect_structured_push_consumer(self) -> None:
        pass


def received_from_client(orb: Any, idl: Path, builder: Path, timeout: float = 60) -> dict[str, Any]:
    """Run wire_client.py against a collector here; the Anys it pushed, by case name."""
    collector = Collector()
    poa = orb.resolve_initial_references("RootPOA")
    oid = poa.activate_object(collector)
    try:
        ior = orb.object_to_string(poa.id_to_reference(oid))
        done = subprocess.run([sys.executable, str(HERE / "wire_client.py"), ior, str(idl),
                               str(builder)], capture_output=True, text=True, timeout=timeout,
                              check=False)
        assert done.returncode == 0, done.stderr
        assert collector.done.wait(timeout)
        return collector.received
    finally:
        poa.deactivate_object(oid)


@pytest.fixture(scope="session")
def wire_anys(omniorb: Any) -> dict[str, Any]:
    """The Anys of tests/corba/wire_types.py, as this process received them."""
    return received_from_client(omniorb, HERE / "data" / "WireTypes.idl", HERE / "wire_types.py")
