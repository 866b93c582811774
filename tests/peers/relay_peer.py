"""A client process for the server tests: it relays calls to the test's servants.

Usage: python relay_peer.py IDL_OUTDIR

Prints the IOR of its ``TestPeer::Relays`` object on stdout, then serves until
its stdin is closed. ``relay(target, repo_id)`` makes an object of that
interface here whose operations call the same operations on ``target`` (a
servant in the test process) and return what it returns or raise what it
raises: the server under test sees a real remote client at this process's
address, and the test's servant decides what that client does (answer, hang,
raise Disconnected...). Calls to ``target`` have no timeout of their own, so
the server's timeouts are the ones that act.
"""

import sys
import threading

import omniORB
from omniORB import CORBA, PortableServer


def main(outdir: str) -> None:
    sys.path.insert(0, outdir)
    import TestPeer__POA

    # Skeletons for every interface a test may make remote (they register on import).
    import CosEventComm__POA  # noqa: F401
    import CosNotifyChannelAdmin__POA  # noqa: F401 - proxies a test pulls from through here
    import CosNotifyComm__POA  # noqa: F401
    import CosNotifyFilter__POA  # noqa: F401

    orb = CORBA.ORB_init(["-ORBendPoint", "giop:tcp:127.0.0.1:",
                          "-ORBconnectionWatchImmediate", "1"], CORBA.ORB_ID)
    root = orb.resolve_initial_references("RootPOA")
    root._get_the_POAManager().activate()

    class Relay:
        """Forwards every operation of its skeleton to ``self._target``."""

        def __init__(self, target):
            self._target = target

        def __getattr__(self, name):
            if name.startswith(("__", "_omni")):
                raise AttributeError(name)
            if name not in type(self)._omni_op_d:
                raise AttributeError(name)
            return getattr(self._target, name)

    classes = {}

    class Relays(TestPeer__POA.Relays):
        def relay(self, target, repo_id):
            skeleton = omniORB.skeletonMapping[repo_id]
            cls = classes.get(repo_id)
            if cls is None:
                cls = classes[repo_id] = type(f"Relay_{skeleton.__name__}", (Relay, skeleton),
                                              {"__init__": Relay.__init__})
            objref_class = omniORB.objrefMapping[repo_id]
            narrowed = target._unchecked_narrow(objref_class)
            omniORB.setClientCallTimeout(narrowed, 0)
            oid = root.activate_object(cls(narrowed))
            return root.id_to_reference(oid)

        def drop(self, relay):
            try:
                root.deactivate_object(root.reference_to_id(relay))
            except (PortableServer.POA.ObjectNotActive, PortableServer.POA.WrongAdapter):
                pass

    control = Relays()
    root.activate_object(control)
    print(orb.object_to_string(control._this()), flush=True)
    done = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    done.wait()
    orb.shutdown(True)
    orb.destroy()


if __name__ == "__main__":
    main(sys.argv[1])
