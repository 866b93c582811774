"""The CORBA server: every interface of the service over IIOP (``cosnotify serve``)."""

from cosnotify.server.app import NotificationServer, ServerConfig

__all__ = ["NotificationServer", "ServerConfig"]
