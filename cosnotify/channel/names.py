"""Names of channels, admins and push proxies (TAO's NotifyMonitoringExt).

Strategy: TAO's monitoring extension lets a client name what it creates
(``create_named_channel``, ``named_new_for_*``,
``obtain_named_notification_push_*``). A name is optional: objects made by
the OMG operations have none (``name_of`` gives None). Scopes follow TAO's
``MonitorEventChannelFactory``/``MonitorEventChannel``: channel names are
unique within their factory; consumer-admin names, supplier-admin names,
proxy-supplier names and proxy-consumer names are each unique within their
channel (TAO keys proxy names by channel, not by admin). An empty name is
``NameMapError`` and a name in use ``NameAlreadyUsed``, as in TAO. Unlike
TAO, which creates a proxy before it maps the name (so a duplicate leaves an
unnamed proxy behind), the name is claimed first: a refused name leaves
nothing. A destroyed object frees its name. Names are kept in the topology
records (channel/topology.py), so they survive a restart.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import NotifyMonitoringExt

__all__ = ["NameTable", "name_of"]


def name_of(obj: Any) -> str | None:
    """The name ``obj`` (channel, admin or proxy) was created with, or None."""
    name = getattr(obj, "_name", None)
    return name if isinstance(name, str) else None


class NameTable:
    """Names unique within each scope of one owner (a factory or a channel)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._taken: dict[tuple[str, str], bool] = {}

    def claim(self, scope: str, name: Any) -> str:
        """Reserve ``name`` in ``scope``, or raise NameMapError / NameAlreadyUsed."""
        if not isinstance(name, str) or not name:
            raise NotifyMonitoringExt.NameMapError()
        with self._lock:
            if (scope, name) in self._taken:
                raise NotifyMonitoringExt.NameAlreadyUsed()
            self._taken[(scope, name)] = True
        return name

    @contextlib.contextmanager
    def claimed(self, scope: str, name: str | None) -> Iterator[None]:
        """Claim ``name`` (if not None) for the block; released if the block raises."""
        if name is not None:
            self.claim(scope, name)
        try:
            yield
        except BaseException:
            self.release(scope, name)
            raise

    def adopt(self, scope: str, name: Any) -> None:
        """A name read back from the store (taken whatever is there: it was unique)."""
        if isinstance(name, str) and name:
            with self._lock:
                self._taken[(scope, name)] = True

    def release(self, scope: str, name: str | None) -> None:
        if name is not None:
            with self._lock:
                self._taken.pop((scope, name), None)

    def names(self, scope: str) -> list[str]:
        with self._lock:
            return sorted(n for s, n in self._taken if s == scope)
