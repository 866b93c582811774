"""Filters and mapping filters that clients implement themselves, behind a guard.

Strategy: a filter object in another process, passed to ``add_filter`` or set
as a ``priority_filter``/``lifetime_filter``, is called remotely (footnote 2
of section 2.3) on the thread that routes each event: a supplier's. The
server wraps each such reference in a guard that keeps a hanging, dead or
misbehaving filter from holding up that thread:

- ``match*`` calls carry their own short timeout (``filter_timeout``).
- What the filter raises means "no match" for that event: the spec's
  ``UnsupportedFilterableData`` (sections 3.2.1.9-3.2.1.11: the filter cannot
  handle this event's data) and any other error alike. A mapping filter's
  answer of the wrong type maps nothing (section 2.3.1: priorities are
  shorts, lifetimes TimeT).
- ``OBJECT_NOT_EXIST``: the filter is gone. It never matches again and is
  not called again; a proxy's gone mapping filter gives way to its admin's
  (section 3.4.15.4, ``supplier_proxy._mapping``).
- A communication failure (``TIMEOUT``, ``TRANSIENT``, ``COMM_FAILURE``,
  ``NO_RESPONSE``) trips the guard: the filter does not match and is not
  called from the event path until a probe, made on the worker pool with a
  later event, is answered. Probes wait a backoff that doubles with each
  failure up to ``max_backoff`` and resets only after that long without a
  failure, so a filter that hangs now and then costs the event path at most
  one ``filter_timeout`` per backoff.
- ``attach_callback`` hands the filter a reference to the proxy's callback
  (``NotifySubscribe``, section 2.6.5); ``detach_callback`` is sent from the
  worker pool, so destroying a proxy or channel never waits on a client.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import omniORB
from omniORB import CORBA

__all__ = [
    "LIFETIME_RANGE",
    "MAX_BACKOFF",
    "PRIORITY_RANGE",
    "GuardedFilter",
    "RemoteFilter",
    "RemoteMappingFilter",
]

log = logging.getLogger("cosnotify.server.remote")

#: Longest wait before a tripped filter is probed again (seconds).
MAX_BACKOFF = 60.0
_COMM_FAILURES = (CORBA.TIMEOUT, CORBA.TRANSIENT, CORBA.COMM_FAILURE, CORBA.NO_RESPONSE)
_SHORT_MAX, _TIMET_MAX = 2**15 - 1, 2**64 - 1


class GuardedFilter:
    """The circuit breaker both kinds of guard share."""

    #: What a match returns when the filter cannot be asked.
    no_match: Any = False
    #: Seconds before the first probe of a tripped filter (doubling up to MAX_BACKOFF).
    backoff = 1.0

    def __init__(self, reference: Any, timeout: float, submit: Callable[[Callable[[], Any]], None],
                 to_reference: Callable[[Any], Any], forget: Callable[[Any], None]) -> None:
        self.reference = reference   # what clients get back, and what the event path calls
        omniORB.setClientCallTimeout(reference, max(1, round(timeout * 1000)))
        self._remote = reference
        self._submit = submit
        self._to_reference = to_reference
        self._forget = forget
        self._lock = threading.Lock()
        self._gone = False
        self._strikes = 0
        self._retry_at = 0.0        # 0: closed (the filter is called)
        self._last_failure = 0.0
        self._probing = False
        self._warned: set[str] = set()
        self._callbacks: dict[int, Any] = {}   # attached callback id -> the proxy's callback

    # -- the event path -----------------------------------------------------------------------
    def _ask(self, operation: str, argument: Any) -> Any:
        if self._gone:
            return self.no_match
        if self._retry_at:
            self._maybe_probe(operation, argument)
            return self.no_match
        return self._call(operation, argument)

    def _call(self, operation: str, argument: Any) -> Any:
        try:
            answer = getattr(self._remote, operation)(argument)
        except Exception as exc:  # noqa: BLE001 - every failure is "no match", see above
            self._failed(operation, exc)
            return self.no_match
        self._answered()
        return self._checked(answer)

    def _checked(self, answer: Any) -> Any:
        return bool(answer)

    def _failed(self, operation: str, exc: Exception) -> None:
        if isinstance(exc, CORBA.OBJECT_NOT_EXIST):
            with self._lock:
                self._gone = True
            log.warning("filter %s no longer exists: it matches nothing from now on",
                        self.reference)
            return
        if isinstance(exc, _COMM_FAILURES):
            now = time.monotonic()
            with self._lock:
                if now - self._last_failure > MAX_BACKOFF:
                    self._strikes = 0
                self._strikes += 1
                self._last_failure = now
                delay = min(self.backoff * 2.0 ** min(self._strikes - 1, 64), MAX_BACKOFF)
                self._retry_at = now + delay
            log.warning("filter %s: %s failed (%s); it matches nothing for %.1f s",
                        self.reference, operation, type(exc).__name__, delay)
            return
        kind = type(exc).__name__
        if kind not in self._warned:  # a filter that always raises would flood the log
            self._warned.add(kind)
            log.warning("filter %s: %s raised %s (%s); taken as no match", self.reference,
                        operation, kind, exc)

    def _answered(self) -> None:
        if self._retry_at:
            with self._lock:
                self._retry_at = 0.0

    def _maybe_probe(self, operation: str, argument: Any) -> None:
        with self._lock:
            if self._probing or self._gone or time.monotonic() < self._retry_at:
                return
            self._probing = True

        def probe() -> bool:
            try:
                self._call(operation, argument)  # success closes, failure re-trips
            finally:
                with self._lock:
                    self._probing = False
            return False

        self._submit(probe)

    # -- subscription sharing (section 2.6.5) ---------------------------------------------------
    def get_all_constraints(self) -> Any:
        return self._remote.get_all_constraints()

    def _get_constraint_grammar(self) -> str:
        """The filter's grammar (read when it is added, for its quench types)."""
        return str(self._remote._get_constraint_grammar())

    def attach_callback(self, callback: Any) -> int:
        callback_id = int(self._remote.attach_callback(self._to_reference(callback)))
        with self._lock:
            self._callbacks[callback_id] = callback
        return callback_id

    def detach_callback(self, callback: int) -> None:
        with self._lock:
            ours = self._callbacks.pop(callback, None)
        if ours is not None:
            self._forget(ours)  # its servant, if the filter ever called it

        def detach() -> bool:
            try:
                if not self._gone:
                    self._remote.detach_callback(callback)
            except Exception as exc:  # noqa: BLE001 - a courtesy call
                log.debug("detach_callback on %s failed: %s", self.reference, exc)
            return False

        self._submit(detach)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.reference}>"


class RemoteFilter(GuardedFilter):
    """A client's ``CosNotifyFilter::Filter``, as the channel's proxies call it."""

    def match(self, filterable_data: Any) -> bool:
        return bool(self._ask("match", filterable_data))

    def match_structured(self, filterable_data: Any) -> bool:
        return bool(self._ask("match_structured", filterable_data))

    def match_typed(self, filterable_data: Any) -> bool:
        return bool(self._ask("match_typed", filterable_data))


class RemoteMappingFilter(GuardedFilter):
    """A client's ``CosNotifyFilter::MappingFilter`` set as a priority or lifetime filter."""

    no_match = (False, None)

    def __init__(self, reference: Any, timeout: float, submit: Callable[[Callable[[], Any]], None],
                 to_reference: Callable[[Any], Any], forget: Callable[[Any], None],
                 value_range: tuple[int, int]) -> None:
        super().__init__(reference, timeout, submit, to_reference, forget)
        self._range = value_range

    def _checked(self, answer: Any) -> Any:
        try:
            matched, value = answer
            number = value.value()
        except Exception:  # noqa: BLE001 - not (boolean, Any): garbage
            number = None
        low, high = self._range
        if type(number) is not int or not low <= number <= high:
            if "value" not in self._warned:
                self._warned.add("value")
                log.warning("mapping filter %s answered %r, not a value in [%d, %d]; "
                            "it maps nothing", self.reference, answer, low, high)
            return self.no_match
        return bool(matched), value

    def match(self, filterable_data: Any) -> tuple[bool, Any]:
        return self._ask("match", filterable_data)  # type: ignore[no-any-return]

    def match_structured(self, filterable_data: Any) -> tuple[bool, Any]:
        return self._ask("match_structured", filterable_data)  # type: ignore[no-any-return]

    def match_typed(self, filterable_data: Any) -> tuple[bool, Any]:
        """A typed event's mapping (sections 3.2.2 and 3.2.2.12: a proxy "will invoke
        the appropriate match operation variant"), as RemoteFilter asks it."""
        return self._ask("match_typed", filterable_data)  # type: ignore[no-any-return]


#: (minimum, maximum) of what a priority mapping filter may answer: a short
#: priority (section 2.5.5.1); of a lifetime: a TimeT (section 2.5.5.3).
PRIORITY_RANGE = (-_SHORT_MAX, _SHORT_MAX)
LIFETIME_RANGE = (0, _TIMET_MAX)

