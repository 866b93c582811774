"""cosnotify: an OMG CORBA Notification Service 1.1 for Python.

Strategy: the package is layered. ``cosnotify.orb`` is the CORBA runtime
(TypeCodes, Any, CDR, GIOP, POA), ``cosnotify.idl`` compiles IDL into
``cosnotify.stubs``, and the service itself (filters, channel, QoS, server)
builds on those. Top-level names here are the public entry points of
docs/public-api.md section 3.
"""

__version__ = "0.1.0"
