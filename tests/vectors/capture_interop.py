"""Capture the GIOP traffic of omniORB's C++ interop client and server (Interop.idl).

Strategy: start ``tests/interop/cxx/interop_server`` behind the recording
relay of ``capture_omniorb.py`` (its IORs publish the relay's port, so calls
on returned references pass through it too), run ``interop_client`` against
it once, and write each GIOP message as a JSON vector
``interop_cxx_NN.json`` in the same format as the omniNames captures
(``expect`` fields from that script's independent parser). Every byte was
written by omniORB 4.2.5 (client requests, server replies).

Run from the repository root (needs omniidl, g++ and the omniORB headers)::

    .venv/bin/python tests/vectors/capture_interop.py [--out DIR]

(``--out DIR`` writes the vectors there instead of over the committed ones.)
"""

from __future__ import annotations

import datetime
import json
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from capture_omniorb import Relay, arguments, expect_fields, free_port, split_messages

from tests.interop import peers


def main(argv: list[str] | None = None) -> int:
    out = arguments(argv, __doc__).out
    out.mkdir(parents=True, exist_ok=True)
    programs = peers.build_cxx()
    date = datetime.date.today().isoformat()
    server_port, relay_port = free_port(), free_port()
    with peers.Process([str(programs["server"]), "-ORBendPoint",
                        f"giop:tcp:127.0.0.1:{server_port}", "-ORBendPointPublish",
                        f"giop:tcp:127.0.0.1:{relay_port}"]) as server:
        relay = Relay(relay_port, server_port)
        try:
            run = subprocess.run([str(programs["client"]), server.first_line],
                                 capture_output=True, text=True, timeout=60, check=False)
            print(run.stdout)
            if run.returncode != 0:
                print(run.stderr, file=sys.stderr)
                return 1
            # The client has exited; take() returns once the relay has seen both
            # ends of each connection close, so every byte is recorded.
            messages = [(number, d, m) for number, conn in enumerate(relay.take())
                        for d, m in split_messages(conn)]
        finally:
            relay.close()
    for old in out.glob("interop_cxx_*.json"):
        old.unlink()
    for index, (number, direction, msg) in enumerate(messages):
        vector = {
            "source": f"omniORB 4.2.5 interop_client -> interop_server (tests/interop/cxx), "
                      f"captured via relay on {date}",
            "scenario": "interop_client IOR: every operation of Interop::Thing once",
            "connection": number,
            "direction": direction,
            "hex": msg.hex(),
            "expected_valid": True,
            "expect": expect_fields(msg),
        }
        (out / f"interop_cxx_{index:02d}.json").write_text(json.dumps(vector, indent=1) + "\n")
    print(f"{len(messages)} vectors written")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
