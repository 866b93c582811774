"""The CORBA server: every interface of the service over IIOP, on omniORB (``cosnotify serve``)."""

from cosnotify.server.app import NotificationServer, ServerConfig, host, hosted_server

__all__ = ["NotificationServer", "ServerConfig", "host", "hosted_server"]
