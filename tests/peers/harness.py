"""Relay peers: real remote clients for tests of the server (see relay_peer.py).

Strategy: omniORB allows one ORB per process, so a servant in the test
process is reached by a server in the same process through a collocated
call: no IIOP, no timeout. A relay peer is a second process that holds a
relay for each servant the test makes remote; the server calls the relay
over IIOP, the relay calls the servant. Each peer is one client address, so
two peers are two clients (per-client lanes).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from cosnotify.corba.stubgen import omniidl

HERE = Path(__file__).parent


def compile_relay_idl(outdir: Path) -> Any:
    """The TestPeer stubs, compiled into ``outdir`` and imported."""
    omniidl(["-bpython", "-C", str(outdir), str(HERE / "Relay.idl")])
    if str(outdir) not in sys.path:
        sys.path.insert(0, str(outdir))
    import TestPeer

    return TestPeer


class Peer:
    """One relay peer process."""

    def __init__(self, orb: Any, stubs_dir: Path) -> None:
        import TestPeer

        self._orb = orb
        self._process = subprocess.Popen(
            [sys.executable, str(HERE / "relay_peer.py"), str(stubs_dir)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        ior = self._process.stdout.readline().strip()
        if not ior.startswith("IOR:"):
            self.close()
            raise RuntimeError(f"relay peer did not start (said {ior!r})")
        self.control = orb.string_to_object(ior)._narrow(TestPeer.Relays)

    def remote(self, servant: Any) -> Any:
        """A reference, in the peer's process, that relays to ``servant`` (activated here)."""
        poa = self._orb.resolve_initial_references("RootPOA")
        target = poa.servant_to_reference(servant)
        repo_id = servant._NP_RepositoryId
        relay = self.control.relay(target, repo_id)
        return relay._narrow(type(target)) if relay is not None else None

    def drop(self, relay: Any) -> None:
        """``relay`` stops existing (its calls raise OBJECT_NOT_EXIST)."""
        self.control.drop(relay)

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
