"""Configuration and shared machinery of one notification service instance.

Strategy: an :class:`EventChannelFactory` owns one :class:`Service`, which
holds what every channel, admin and proxy under it shares: the clock, the
bounded worker pool, the implementation limits and the QoS capabilities.
Nothing here is a CORBA object; it is passed down at construction.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable
from typing import Any

import attrs
from omniORB import CORBA

import CosNotifyChannelAdmin as CA

from cosnotify.channel.clock import Clock, SystemClock
from cosnotify.channel.dispatch import Dispatcher, Lane
from cosnotify.qos.negotiation import Capabilities

__all__ = ["Service", "ServiceConfig"]

log = logging.getLogger("cosnotify.channel")


@attrs.frozen
class ServiceConfig:
    """Implementation limits and tunables (documented in docs/architecture.md)."""

    #: Worker threads delivering to push consumers and polling pull suppliers.
    min_workers: int = 2
    max_workers: int = 32
    #: How often a pull-style proxy consumer polls a supplier that had no event.
    pull_interval: float = 0.1
    #: Events per consumer queued at most when MaxEventsPerConsumer is 0 (unlimited
    #: by the spec's default): a safety cap so a dead consumer cannot exhaust memory.
    consumer_queue_cap: int = 100_000
    #: Events one delivery task hands over before yielding its worker.
    delivery_slice: int = 256
    #: Upper bound on the retry backoff for failing consumers and suppliers.
    max_backoff: float = 30.0
    #: Workers the consumers and suppliers of one remote client may hold at once
    #: (0: a quarter of max_workers); see dispatch.Lane.
    max_workers_per_client: int = 0
    #: Workers consumers whose last delivery failed may hold at once (0: a quarter).
    max_workers_failing: int = 0
    #: A push that takes longer than this (seconds) marks its consumer *slow*: its
    #: deliveries move to a shared lane of ``max_workers_slow`` workers (0: a
    #: quarter), out of its client's lane, until a push is quick again; 0: never.
    slow_push: float = 0.01
    max_workers_slow: int = 0
    #: Seconds of pushing after which a delivery task yields its worker to the next
    #: task (besides ``delivery_slice`` events), so slow consumers take turns.
    delivery_time_slice: float = 0.05
    #: Seconds a connected pull consumer may go without pulling before its proxy is
    #: destroyed (omniNotify's DeadConProxyInterval); 0: never (pull_supplier.py).
    idle_pull_consumer_timeout: float = 0.0
    #: A ``connect_*`` on a proxy that is already connected replaces its client
    #: (keeping its queue) instead of raising AlreadyConnected: TAO's -AllowReconnect,
    #: for clients that restart and reuse their proxy ids (docs/persistence.md).
    allow_reconnect: bool = False
    #: How each event finds its consumers: "index" (a predicate index over every
    #: filter of the channel, cosnotify.routing; docs/routing.md), "scan" (every
    #: proxy's filters in turn, as TAO, JacORB and omniNotify do), or "auto" (the
    #: scan while a channel has at most ``scan_below`` connected proxy suppliers,
    #: where it costs less, else the index; both give the same deliveries).
    routing: str = "auto"
    scan_below: int = 8
    #: Proxy suppliers (subscriptions) the service holds at most, over all its
    #: channels; obtaining one more raises AdminLimitExceeded (name
    #: "MaxSubscriptions"). 0: no limit. About 15 KB each (docs/routing.md).
    max_subscriptions: int = 100_000
    #: Count events per proxy and channel (cosnotify.stats, docs/operations.md). Off
    #: only to measure what counting costs (benchmarks/counters_bench.py); read once
    #: per proxy, when it is made.
    counters: bool = True

    def __attrs_post_init__(self) -> None:
        if self.routing not in ("auto", "index", "scan"):
            raise ValueError(f"routing must be 'auto', 'index' or 'scan', not {self.routing!r}")
        if self.scan_below < 0:
            raise ValueError("scan_below must be >= 0")
        if self.max_subscriptions < 0:
            raise ValueError("max_subscriptions must be >= 0 (0: no limit)")
        if self.consumer_queue_cap < 1 or self.delivery_slice < 1:
            raise ValueError("consumer_queue_cap and delivery_slice must be positive")
        if min(self.max_workers_per_client, self.max_workers_failing,
               self.max_workers_slow) < 0:
            raise ValueError("max_workers_per_client, max_workers_failing and "
                             "max_workers_slow must be >= 0")
        if not (0 <= self.slow_push < float("inf") and 0 < self.delivery_time_slice < float("inf")):
            raise ValueError("slow_push must be >= 0 and delivery_time_slice > 0 (seconds)")
        if not 0 <= self.idle_pull_consumer_timeout < float("inf"):
            raise ValueError("idle_pull_consumer_timeout must be a finite number >= 0 (0: never)")


class Service:
    """The clock, worker pool and limits shared by a factory's channels."""

    def __init__(self, config: ServiceConfig | None = None, clock: Clock | None = None,
                 capabilities: Capabilities | None = None) -> None:
        self.config = config or ServiceConfig()
        self.clock: Clock = clock or SystemClock()
        self._owns_clock = clock is None
        self.capabilities = capabilities or Capabilities()
        config = self.config
        self.dispatcher = Dispatcher(config.min_workers, config.max_workers,
                                     lane_limit=config.max_workers_per_client or None,
                                     failing_limit=config.max_workers_failing or None,
                                     slow_limit=config.max_workers_slow or None)
        #: ``client_key(reference)``: which remote client (process) a consumer or
        #: supplier reference belongs to, or None (in-process); set by the server
        #: layer. Each client's tasks share a lane (see dispatch.Lane).
        self.client_key: Callable[[Any], Hashable | None] | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._subscriptions = 0
        #: Called with each channel, admin and proxy once it is destroyed (the server
        #: layer deactivates its servant); None when nothing needs to know.
        self.destroyed_hook: Callable[[Any], None] | None = None
        #: The topology's store hooks (channel/topology.py) when the factory has a store.
        self.topology: Any = None

    def reserve_subscription(self, force: bool = False) -> None:
        """Count one more proxy supplier, or raise AdminLimitExceeded past
        ``config.max_subscriptions`` (``force``: one restored from the store)."""
        limit = self.config.max_subscriptions
        with self._lock:
            if limit and not force and self._subscriptions >= limit:
                raise CA.AdminLimitExceeded(CA.AdminLimit(
                    "MaxSubscriptions", CORBA.Any(CORBA.TC_long, limit)))
            self._subscriptions += 1

    def release_subscription(self) -> None:
        with self._lock:
            self._subscriptions -= 1

    @property
    def subscription_count(self) -> int:
        """Proxy suppliers the service holds now."""
        return self._subscriptions

    def object_destroyed(self, obj: Any) -> None:
        """Report that ``obj`` was destroyed to the hook, if any (never raises)."""
        hook = self.destroyed_hook
        if hook is not None:
            try:
                hook(obj)
            except Exception:
                log.exception("destroyed hook failed for %r", obj)

    def submit(self, task: Any, lane: Lane | None = None) -> None:
        """Run a task on the worker pool (see ``dispatch.Dispatcher.submit``)."""
        self.dispatcher.submit(task, lane)

    def lane_for(self, client: Any) -> Lane | None:
        """The lane of the remote client behind ``client`` (None: in-process, no lane).

        An in-process client that stands for a peer of its own -- a protocol front
        end's consumer that calls out to a contact (cosnotify/protocols) -- names its
        lane with a ``lane_key`` attribute, so a peer that hangs holds only its lane.
        """
        if client is None:
            return None
        if not isinstance(client, CORBA.Object):  # a reference: no attribute to ask
            try:
                own = getattr(client, "lane_key", None)
                if own is not None:
                    return self.dispatcher.lane(own)
            except Exception:  # an odd object (a raising property, an unhashable key)
                log.exception("lane_key of %r failed", client)
        key_of = self.client_key
        if key_of is None:
            return None
        try:
            key = key_of(client)
        except Exception:  # an odd reference just gets no lane
            log.exception("client_key failed for %r", client)
            return None
        return None if key is None else self.dispatcher.lane(key)

    def call_soon(self, fn: Any, *args: Any, lane: Lane | None = None) -> bool:
        """Run ``fn(*args)`` once on a worker, logging (never raising) failures; False if
        the workers are closed (the service is stopping): not run."""

        def task() -> bool:
            try:
                fn(*args)
            except Exception:
                log.exception("background call %s failed", getattr(fn, "__qualname__", fn))
            return False

        return self.dispatcher.submit(task, lane)

    def off_clock(self, fn: Any, *args: Any) -> None:
        """For a timer's callback: run ``fn(*args)`` -- a store write, a teardown -- on a
        worker, since the clock's thread (every channel's timers) must not wait; here
        only once the workers are closed (the service is stopping), or it would be lost.
        Failures are logged, never raised."""
        if self.call_soon(fn, *args):
            return
        try:
            fn(*args)
        except Exception:
            log.exception("background call %s failed", getattr(fn, "__qualname__", fn))

    def close(self, wait: bool = True) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.dispatcher.close(wait=wait)
        if self._owns_clock:
            self.clock.close()
