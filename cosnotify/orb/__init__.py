"""cosnotify's pure-Python CORBA runtime and ORB.

Strategy: ``CORBA`` and ``PortableServer`` are the mapping's namespaces;
everything else (``typecode``, ``values``, ``any``, ``validate``, ``cdr``,
``giop``, ``ior``, ``transport``, ``poa``, ``naming``) is implementation.
"""

from cosnotify.orb import CORBA, PortableServer

__all__ = ["CORBA", "PortableServer"]
