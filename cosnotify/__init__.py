"""cosnotify: an OMG CORBA Notification Service 1.1 for Python.

Strategy: the ORB is omniORBpy. Importing the package imports ``omniORB``
first (``cosnotify.corba``), so omniORB's bundled COS stubs and the generated
Ack stubs import by their IDL names everywhere below. The service itself
(filters, channel, QoS) uses omniORB's values, Anys and exceptions but no ORB
calls; the server layer puts it behind omniORB's POA. Top-level names here
are the public entry points of docs/public-api.md section 3.
"""

__version__ = "0.1.0"

from typing import Any

import cosnotify.corba  # noqa: F401 - omniORB before any COS stub module

__all__ = ["EventChannelFactory", "ServiceConfig", "TypedEventChannelFactory", "__version__",
           "host", "stats"]


def __getattr__(name: str) -> Any:
    # Imported lazily so `import cosnotify.corba` does not pull in the channel.
    if name == "EventChannelFactory":
        from cosnotify.channel.factory import EventChannelFactory

        return EventChannelFactory
    if name == "TypedEventChannelFactory":
        from cosnotify.typed.channel import TypedEventChannelFactory

        return TypedEventChannelFactory
    if name == "host":
        from cosnotify.server import host

        return host
    if name == "ServiceConfig":
        from cosnotify.channel.service import ServiceConfig

        return ServiceConfig
    if name == "stats":
        from cosnotify.ops.stats import stats

        return stats
    raise AttributeError(name)
