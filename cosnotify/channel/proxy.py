"""What every proxy shares: identity, connection state, QoS and filters.

Strategy: a proxy is created by an admin, knows its channel, and moves
through a small state table: *idle* (created, no client) -> *connected* ->
*destroyed*, with *suspended* as a flag on connected push suppliers and pull
consumers. ``connect_*``, ``disconnect_*``, ``suspend_connection`` and
``resume_connection`` consult the table and raise the IDL's exceptions
(AlreadyConnected, NotConnected, ConnectionAlreadyActive/Inactive).

Destruction is idempotent and has two flavours (sections 3.3 and 3.4):
a client's ``disconnect_*`` call tears the proxy down quietly; the channel
tearing it down (``destroy``, a consumer that is gone) also tells the client
through *its* ``disconnect_*`` operation, on the worker pool, so a dead
client cannot hold up the caller.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import attrs
from omniORB import CORBA

import CosEventChannelAdmin
import CosEventComm
import CosNotification
import CosNotifyChannelAdmin as CA

from cosnotify.channel.admin_mixins import FilterAdminMixin, QoSAdminMixin, initial_qos
from cosnotify.channel.clients import connectable
from cosnotify.channel.counters import record_departure
from cosnotify.eventtypes import check_event_types
from cosnotify.qos.negotiation import Target, additional_qos, check_qos
from cosnotify.qos.properties import Level

__all__ = ["MIN_RETRY_INTERVAL", "ProxyBase", "Suspendable", "retry_delay", "retry_interval"]

log = logging.getLogger("cosnotify.channel")

_DELIVERY = "DeliveryReliability"

#: The least a retry of a failing client waits (seconds): a RetryInterval of 0, which
#: the QoS allows, would otherwise retry a dead client in a tight loop, 0 doubled
#: being 0 (review 129). Backoffs double from it.
MIN_RETRY_INTERVAL = 0.01


def retry_interval(qos: Any) -> float:
    """The proxy's RetryInterval in seconds, at least ``MIN_RETRY_INTERVAL``."""
    return max(float(qos.get("RetryInterval", 1_000_000)) / 1e7, MIN_RETRY_INTERVAL)


def retry_delay(qos: Any, failures: int, max_backoff: float) -> float:
    """How long the ``failures``-th retry waits: RetryInterval (at least
    ``MIN_RETRY_INTERVAL``) doubled for each failure before it, up to ``max_backoff``
    (and never below the minimum). The exponent is bounded: 2 ** 1024 is no float
    (review 102: a durable proxy's 1,025th failure raised OverflowError)."""
    delay = retry_interval(qos) * 2.0 ** min(failures - 1, 64)
    return max(min(delay, max_backoff), MIN_RETRY_INTERVAL)


class ProxyBase(QoSAdminMixin, FilterAdminMixin):
    """Base of every proxy (notification and Event Service style)."""

    #: The CosNotifyChannelAdmin::ProxyType this class reports as MyType.
    proxy_type: Any = None
    #: The QoS level of this proxy kind (Table 2-5).
    qos_level = Level.PROXY_SUPPLIER
    #: Name of the client operation that ends the connection from our side.
    client_disconnect: str = ""
    #: True for Event Service style proxies (no id, no QoS or filters in the IDL).
    event_service_style = False
    #: "supplier" for proxy suppliers, "consumer" for proxy consumers.
    side = "proxy"

    def __init__(self, admin: Any, proxy_id: int | None) -> None:
        self._admin = admin
        self._channel = admin._channel
        self._service = self._channel._service
        self._id = proxy_id
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._client: Any = None
        #: The client's lane in the worker pool (Service.lane_for), set on connect.
        self._lane: Any = None
        self._connected = False
        self._suspended = False
        self._destroyed = False
        qos, explicit = admin._qos_snapshot()
        self._qos, self._qos_explicit = initial_qos(self.qos_level, qos, explicit)
        self._qos_level = self.qos_level
        self._qos_lock = threading.RLock()
        self._keep_qos_in_effect()
        self._init_filters()

    # -- IDL attributes ------------------------------------------------------------
    def _get_MyType(self) -> Any:
        return self.proxy_type

    def _get_MyAdmin(self) -> Any:
        return self._admin

    @property
    def proxy_id(self) -> int | None:
        return self._id

    @property
    def destroyed(self) -> bool:
        return self._destroyed

    # -- QoS --------------------------------------------------------------------------
    def _qos_target(self) -> Target:
        parent, _ = self._admin._qos_snapshot()
        return Target(self._qos_level, parent=parent, has_children=False)

    #: Whether this kind implements ``acknowledge`` (the Ack proxies of ack.py).
    acknowledges = False

    def _qos_capabilities(self) -> Any:
        caps = self._service.capabilities
        if caps.acknowledgment and not self.acknowledges:
            # DeliveryReliability=Acknowledgment needs an Ack proxy: set it on the admin
            # before obtaining the proxy (docs/qos.md).
            return attrs.evolve(caps, acknowledgment=False)
        return caps

    def _keep_qos_in_effect(self) -> None:
        """DeliveryReliability=Acknowledgment inherited by a kind that cannot acknowledge
        is not in effect on it: it holds (and get_qos reports) None, the one value its
        set_qos accepts (section 2.5.6.3: get_qos gives "the current QoS properties in
        effect"). Also run on a record restored from before review 115."""
        if not self.acknowledges:
            with self._qos_lock:
                if self._qos.get(_DELIVERY, 0) != 0:
                    self._qos[_DELIVERY] = 0
                    self._qos_explicit.discard(_DELIVERY)

    def validate_event_qos(self, required_qos: list[Any]) -> list[Any]:
        """Which per-event QoS this proxy honours (section 3.4.1.4): what push accepts
        in a header (event.apply_qos), judged by the same proxy QoS and channel."""
        target = Target(Level.MESSAGE,
                        persistent_header=self._channel._event_log is not None)
        caps = self._qos_capabilities()
        with self._qos_lock:
            current = dict(self._qos)
        _, errors = check_qos(required_qos, target, current, caps)
        if errors:
            raise CosNotification.UnsupportedQoS(errors)
        return additional_qos(required_qos, target, current, caps)

    # -- connection state --------------------------------------------------------------
    def _connect(self, client: Any, *, required: str | None, interface: str | None,
                 allow_nil: bool, attach: Callable[[], None] | None = None) -> None:
        """Attach ``client``; raises AlreadyConnected, TypeError or BAD_PARAM.
        ``attach`` runs under the lock in the step that attaches it, only if it is
        attached (a typed proxy's typed object goes with its client)."""
        self._check_alive()  # before judging the argument, as the server does
        if client is None and not allow_nil:
            raise CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO, "a nil client reference cannot be served")
        if client is not None and required:
            client = connectable(client, interface, required)
            if client is None:
                raise CosEventChannelAdmin.TypeError()
        with self._lock:
            self._check_alive()
            if self._connected:
                # Section 3.3.10.1 and friends: AlreadyConnected -- unless the service
                # lets a restarted client take its proxy back (TAO's -AllowReconnect).
                if not self._service.config.allow_reconnect:
                    raise CosEventChannelAdmin.AlreadyConnected()
            else:
                self._admin._check_connect_limit(self)
                self._channel._count_connection(self._admin.limit_name, 1)
            self._client = client
            if attach is not None:
                attach()
            self._lane = self._service.lane_for(client)
            self._connected = True
        self._admin._connection_changed(self)
        self._on_connected()
        self._new_connection()
        self._persist()

    def _new_connection(self) -> None:
        """Hook: a client connected by ``connect_*`` (a new logical connection; not one
        restored after a restart), before the proxy's record is saved."""

    def _restore_connection(self, client: Any, suspended: bool) -> None:
        """Reconnect to ``client`` after a restart (channel/restore.py); no checks."""
        with self._lock:
            if not self._connected:
                self._channel._count_connection(self._admin.limit_name, 1)
            self._client = client
            self._lane = self._service.lane_for(client)
            self._connected = True
            self._suspended = suspended
        self._admin._connection_changed(self)
        self._on_connected()

    def _on_connected(self) -> None:
        """Hook: start delivery, polling or relays."""

    def _refuse_if_connected(self) -> None:
        """AlreadyConnected now (or OBJECT_NOT_EXIST), before a connect asks anything
        of its client; :meth:`_connect` checks again in the step that attaches."""
        with self._lock:
            self._check_alive()
            if self._connected and not self._service.config.allow_reconnect:
                raise CosEventChannelAdmin.AlreadyConnected()

    def _check_alive(self) -> None:
        if self._destroyed:
            raise CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO, f"{self!r} was destroyed")

    def _require_connected(self) -> None:
        if self._destroyed or not self._connected:
            raise CosEventComm.Disconnected()

    def _on_suspend_change(self) -> None:
        """Hook: stop or restart delivery or polling."""

    # -- teardown -----------------------------------------------------------------------
    def _client_disconnected(self) -> None:
        """The client called our ``disconnect_*``: tear down without calling it back.
        Once destroyed, OBJECT_NOT_EXIST, as the remote call gets (public-api.md)."""
        self._check_alive()
        self._teardown(notify_client=False, why="disconnected by its client")

    def _destroy(self, notify_client: bool = True,
                 why: str | None = "its admin or channel was destroyed") -> None:
        """The channel tears this proxy down; tells a connected client (sections 3.4.15.x)."""
        self._teardown(notify_client=notify_client, why=why)

    def _teardown(self, notify_client: bool, why: str | None = None) -> None:
        """Destroy this proxy. ``why``: the reason ``cosnotify ls`` gives among the
        channel's departures (None: not listed, as for a proxy refused at birth)."""
        with self._lock:
            if self._destroyed:
                return
            self._destroyed = True
            client = self._client if self._connected else None
            had = self._client
            if self._connected:
                self._channel._count_connection(self._admin.limit_name, -1)
            self._connected = False
            self._client = None
            self._cond.notify_all()
        try:
            self._on_teardown()
        finally:
            # Out of its admin and among the departures in one step, so a snapshot
            # (ops/stats.py) counts it in its admin's sum or in the departed one, never
            # in neither (the channel's totals would fall) nor in both.
            with self._channel._departing:
                if why is not None:
                    record_departure(self._channel, self._service.clock.now(), why, self,
                                     had)
                self._admin._proxy_gone(self)
            topology = self._service.topology
            if topology is not None:
                topology.forget(self)
            self._service.object_destroyed(self)
        if notify_client and client is not None and self.client_disconnect:
            self._service.call_soon(_tell_client, client, self.client_disconnect,
                                    lane=self._lane)

    def _on_teardown(self) -> None:
        """Hook: release queues, timers, subscriptions."""

    def _service_stops(self) -> None:
        """Hook: the service stops and keeps this proxy for its next start
        (``EventChannel._shutdown``): end what waits on it (pull_supplier.py)."""

    def kind_text(self) -> str:
        """``"structured push supplier"`` and the like (``"event service push consumer"``)."""
        form = _FORMS.get(str(self.proxy_type), type(self).__name__)
        if self.event_service_style:
            form = "event service " + form.removeprefix("any ")
        return f"{form} {self.side}"

    def admin_kind(self) -> str:
        """``"consumer"`` (the admin of a proxy supplier), ``"supplier"``, or
        ``"event service consumer"``/``"event service supplier"``."""
        kind = "consumer" if self.side == "supplier" else "supplier"
        return kind if self._admin._id is not None else "event service " + kind

    # -- subscription sharing ---------------------------------------------------------
    def _checked_types(self, types: list[Any]) -> list[tuple[str, str]]:
        return check_event_types(types)

    def __repr__(self) -> str:
        state = "destroyed" if self._destroyed else ("connected" if self._connected else "idle")
        return f"<{type(self).__name__} id={self._id} {state}>"


_FORMS = {"PUSH_ANY": "any push", "PULL_ANY": "any pull",
          "PUSH_STRUCTURED": "structured push", "PULL_STRUCTURED": "structured pull",
          "PUSH_SEQUENCE": "sequence push", "PULL_SEQUENCE": "sequence pull",
          "PUSH_TYPED": "typed push", "PULL_TYPED": "typed pull"}


class Suspendable:
    """``suspend_connection``/``resume_connection``: only the proxies whose IDL has them
    (push proxy suppliers and pull proxy consumers, sections 3.4.9-3.4.14)."""

    _lock: threading.RLock
    _connected: bool
    _suspended: bool
    # Provided by ProxyBase (which comes after this mixin in the MRO).
    _check_alive: Callable[[], None]
    _on_suspend_change: Callable[[], None]
    _persist: Callable[[], None]

    def suspend_connection(self) -> None:
        with self._lock:
            self._check_alive()
            if not self._connected:
                raise CA.NotConnected()
            if self._suspended:
                raise CA.ConnectionAlreadyInactive()
            self._suspended = True
        self._on_suspend_change()
        self._persist()

    def resume_connection(self) -> None:
        with self._lock:
            self._check_alive()
            if not self._connected:
                raise CA.NotConnected()
            if not self._suspended:
                raise CA.ConnectionAlreadyActive()
            self._suspended = False
        self._on_suspend_change()
        self._persist()


def _tell_client(client: Any, operation: str) -> None:
    try:
        getattr(client, operation)()
    except Exception as exc:  # noqa: BLE001 - the client may already be gone
        log.debug("%s on %r failed: %s", operation, client, exc)

