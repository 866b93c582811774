"""An ordinary omniORBpy application that hosts the notification service in its own ORB.

Usage::

    python examples/python/hosted_service.py [--ior-file PATH]

The application initialises omniORB as it always does, with its own options
and servants, then makes one call, ``cosnotify.host(poa)``: the whole
service (factory, channels, admins, proxies, filters) is activated under the
application's POA and the EventChannelFactory's reference comes back. The
application prints it (``factory IOR:...``) and serves until its stdin
closes. Remote clients in any language use it like any notification
server's factory; suppliers and consumers in this process may also call the
in-process objects directly.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from omniORB import CORBA

import cosnotify


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ior-file", type=Path, help="also write the factory's IOR there")
    args = parser.parse_args(argv)

    orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:"], CORBA.ORB_ID)
    poa = orb.resolve_initial_references("RootPOA")
    poa._get_the_POAManager().activate()
    factory = cosnotify.host(poa)  # the one call
    ior = orb.object_to_string(factory)
    if args.ior_file:
        args.ior_file.write_text(ior + "\n")
    print(f"factory {ior}", flush=True)
    sys.stdin.read()  # serve until stdin closes
    orb.shutdown(True)
    orb.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
