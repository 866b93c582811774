"""cosnotify's pure-Python CORBA runtime and ORB.

Strategy: ``CORBA`` and ``PortableServer`` are the mapping's namespaces;
everything else (``typecode``, ``values``, ``any``, ``validate``, ``cdr``,
``giop``, ``ior``, ``transport``, ``poa``, ``naming``) is implementation.
"""

from typing import Any

from cosnotify.orb import CORBA, PortableServer

__all__ = ["CORBA", "PortableServer", "set_timeout", "with_timeout"]


def __getattr__(name: str) -> Any:
    """``with_timeout(obj, seconds)`` and ``set_timeout(obj, seconds)``, from objref."""
    if name in ("with_timeout", "set_timeout"):
        from cosnotify.orb import objref

        return getattr(objref, name)
    raise AttributeError(f"module 'cosnotify.orb' has no attribute {name!r}")
