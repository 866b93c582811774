"""cosnotify: an OMG CORBA Notification Service 1.1 for Python.

Strategy: the package is layered. ``cosnotify.orb`` is the CORBA runtime
(TypeCodes, Any, CDR, GIOP, POA), ``cosnotify.idl`` compiles IDL into
``cosnotify.stubs``, and the service itself (filters, channel, QoS, server)
builds on those. Top-level names here are the public entry points of
docs/public-api.md section 3.
"""

__version__ = "0.1.0"

from typing import Any

__all__ = ["EventChannelFactory", "ServiceConfig", "__version__"]


def __getattr__(name: str) -> Any:
    # Imported lazily so `import cosnotify.orb` does not pull in the channel.
    if name == "EventChannelFactory":
        from cosnotify.channel.factory import EventChannelFactory

        return EventChannelFactory
    if name == "ServiceConfig":
        from cosnotify.channel.service import ServiceConfig

        return ServiceConfig
    raise AttributeError(name)
