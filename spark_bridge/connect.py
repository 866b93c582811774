"""Reaching a notification channel over IIOP from any of Spark's processes.

Strategy: Spark runs the data source in processes of its own (a planner, a
long-lived streaming "source runner", executor workers), so nothing made in
the driver can be handed to them except picklable options. Each process
therefore opens its own client ORB, lazily and once (:func:`client_orb`), and
resolves the channel from the options by IDL operations only, exactly as a
TAO or JacORB client would:

- ``channel`` is an object URL (``IOR:``, ``corbaloc:``, ``corbaname:``)
  naming an ``EventChannel``, or an ``EventChannelFactory`` together with
  ``channel_id`` (without it, the factory must hold exactly one channel:
  picking one silently, or creating an empty one, would hide mistakes).
- ``admin_id`` picks an existing consumer or supplier admin; by default the
  channel's default admin (id 0) is used, as most clients do.

:class:`PullSubscription` is the consumer side of the data source: a
sequence pull proxy with the constraint attached as an EXTENDED_TCL filter
made by the channel's own default filter factory, so the channel filters
(section 2.3) and only matching events cross the network. It either owns
a temporary proxy (connected on open, disconnected on close) or uses an
existing one by ``proxy_id`` (a *subscription* made by
:func:`create_subscription`), which keeps queueing while no query runs and
is left connected. :func:`open_push_proxy` is the supplier side (the sink).

The ORB is omniORBpy's, and omniORB allows one per process: a process that
already has one (the driver of an application that made its own, a test
process hosting the server) is served by it, and otherwise the bridge makes
it on first use, publishing a loopback endpoint unless the environment names
one (omniORB's ``ORBendPoint`` variable). Spark's executor workers are forked
from a daemon, and an ORB that exists when a process forks is broken in the
child (docs/spark.md): so nothing here initialises an ORB at import, only
when a call needs one, in the process that makes the call, and a child that
inherited an ORB gets an error instead of a broken one. Every reference the
bridge obtains gets a call timeout of its own (``omniORB.setClientCallTimeout``,
option ``call_timeout``), so a channel that hangs fails a task instead of
holding it forever.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from typing import Any

import attrs
import omniORB
from omniORB import CORBA

import CosEventChannelAdmin as ECA
import CosNotification as N
import CosNotifyChannelAdmin as CA
import CosNotifyFilter as NF

from cosnotify.filter import parse_constraint

__all__ = [
    "CALL_TIMEOUT",
    "ChannelAddress",
    "ChannelError",
    "InheritedORBError",
    "PullSubscription",
    "check_channel",
    "check_option_names",
    "client_orb",
    "create_subscription",
    "drop_subscription",
    "open_push_proxy",
    "orb_arguments",
    "release_client_orb",
    "resolve_channel",
    "timed",
]

log = logging.getLogger("spark_bridge.connect")

_CHANNEL_ID = CA.EventChannel._NP_RepositoryId
#: The repository id of the proxy an acknowledging subscription is.
ACK_PULL_ID = "IDL:omg.org/CosNotifyChannelAdminAck/StructuredProxyPullSupplierAck:1.0"
_FACTORY_ID = CA.EventChannelFactory._NP_RepositoryId
#: Seconds each call of the bridge to a channel may take (option ``call_timeout``).
CALL_TIMEOUT = 60.0
#: Seconds connecting to a channel may take, when the bridge makes the ORB.
CONNECT_TIMEOUT = 5.0
_orb_lock = threading.Lock()
_orb: tuple[int, Any, bool] | None = None  # (pid, ORB, whether client_orb made it)
_inherited = False  # this process was forked while its parent had an ORB


class ChannelError(ValueError):
    """The options do not lead to a usable channel, admin or proxy.

    ``url`` is the ``channel`` option and ``detail`` says what went wrong;
    ``__cause__`` is the CORBA exception, when there was one.
    """

    def __init__(self, url: str, detail: str) -> None:
        super().__init__(f"{detail} (channel {_shorten(url)})")
        self.url = url
        self.detail = detail


def _shorten(url: str) -> str:
    return url if len(url) <= 60 else url[:57] + "..."


class InheritedORBError(RuntimeError):
    """This process was forked from one that had initialised its ORB.

    omniORB's ORB does not survive a fork: in the child its connections lose
    replies, its servants are unreachable and ``destroy()`` aborts. Initialise
    the ORB only in the processes that use it (Spark's workers do it on first
    use), or destroy it before forking.
    """


def _forked() -> None:
    global _inherited, _orb
    _inherited = omniORB.orb is not None
    _orb = None


os.register_at_fork(after_in_child=_forked)


def orb_arguments() -> list[str]:
    """The options of an ORB the bridge makes: a loopback endpoint unless the environment
    names one (``ORBendPoint``), a global call and connect timeout."""
    argv = [] if os.environ.get("ORBendPoint") else ["-ORBendPoint", "giop:tcp:127.0.0.1:"]
    return argv + ["-ORBclientCallTimeOutPeriod", str(_millis(CALL_TIMEOUT)),
                   "-ORBclientConnectTimeOutPeriod", str(_millis(CONNECT_TIMEOUT))]


def client_orb() -> Any:
    """This process's ORB, made on first use if the process has none yet.

    Never called at import: Spark forks its Python workers from a daemon, and
    the ORB must be initialised in the worker, after the fork. Raises
    :class:`InheritedORBError` in a process forked while its parent had an ORB.
    """
    global _orb
    with _orb_lock:
        pid = os.getpid()
        if _orb is not None and _orb[0] == pid and omniORB.orb is _orb[1]:
            return _orb[1]
        if _inherited and omniORB.orb is not None:
            raise InheritedORBError(
                f"process {pid} was forked after its parent initialised omniORB; the "
                "bridge needs an ORB initialised in the process that uses it")
        made = omniORB.orb is None
        orb = CORBA.ORB_init(orb_arguments(), CORBA.ORB_ID)
        _orb = (pid, orb, made)
        return orb


def release_client_orb() -> None:
    """Destroy the ORB :func:`client_orb` made in this process (before the process exits).

    An ORB the process had before the bridge used it is left alone.
    """
    global _orb
    with _orb_lock:
        found, _orb = _orb, None
        if found is not None and found[0] == os.getpid() and found[2] \
                and omniORB.orb is found[1]:
            found[1].destroy()


def _millis(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def timed(reference: Any, seconds: float) -> Any:
    """``reference`` with a call timeout of its own (``omniORB.setClientCallTimeout``)."""
    if isinstance(reference, CORBA.Object):
        omniORB.setClientCallTimeout(reference, _millis(seconds))
    return reference


_LONG_MIN, _LONG_MAX = -(2**31), 2**31 - 1  # ids and sizes travel as IDL longs
#: Options Spark itself hands a data source (lower-cased, as Spark passes them).
_SPARK_OPTIONS = frozenset({"checkpointlocation"})


def _int_option(options: Mapping[str, Any], name: str, default: int | None,
                lo: int = _LONG_MIN, hi: int = _LONG_MAX) -> int | None:
    value = options.get(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"option {name!r} must be an integer, got {value!r}") from None
    if not lo <= number <= hi:
        raise ValueError(f"option {name!r} must be an integer in [{lo}, {hi}], got {value!r}")
    return number


def _float_option(options: Mapping[str, Any], name: str, default: float) -> float:
    """A finite, non-negative number of seconds."""
    value = options.get(name)
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"option {name!r} must be a number, got {value!r}") from None
    if not 0 <= number < float("inf"):  # also refuses NaN, which would wait forever
        raise ValueError(f"option {name!r} must be a finite number >= 0, got {value!r}")
    return number


def check_option_names(options: Mapping[str, Any], known: frozenset[str], what: str) -> None:
    """Refuse options this side does not know: a misspelt ``constraint`` read unfiltered."""
    unknown = sorted(str(k) for k in options
                     if str(k).lower() not in known and str(k).lower() not in _SPARK_OPTIONS)
    if unknown:
        hint = ' (the channel goes in option "channel", not in a path)' \
            if "path" in unknown else ""
        raise ValueError(f"unknown option(s) {unknown} for {what}{hint}; the options are "
                         f"{sorted(known)}")


@attrs.frozen
class ChannelAddress:
    """Where the channel is and how to reach it: ``url`` (channel or factory),
    ``channel_id``, ``admin_id``, and the seconds each call may take."""

    url: str
    channel_id: int | None = None
    admin_id: int | None = None
    call_timeout: float = CALL_TIMEOUT

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> ChannelAddress:
        url = options.get("channel")
        if not url:
            raise ValueError('option "channel" is required: the IOR, corbaloc or corbaname URL '
                             "of an EventChannel or an EventChannelFactory")
        call_timeout = _float_option(options, "call_timeout", CALL_TIMEOUT)
        if call_timeout <= 0:
            raise ValueError(f"option 'call_timeout' must be a number > 0, got {call_timeout!r}")
        return cls(str(url), _int_option(options, "channel_id", None),
                   _int_option(options, "admin_id", None), call_timeout)

    def timed(self, reference: Any) -> Any:
        """``reference``, its calls limited to :attr:`call_timeout` seconds."""
        return timed(reference, self.call_timeout)


def check_channel(address: ChannelAddress, *, consumer: bool, proxy_id: int | None = None,
                  orb: Any = None) -> None:
    """Resolve the channel, its admin and the subscription ``proxy_id``, or raise ChannelError.

    The data source calls this when a query is built, so a wrong URL, id or
    unreachable channel fails ``load()`` / ``save()`` rather than a task later.
    """
    orb = client_orb() if orb is None else orb
    channel = resolve_channel(orb, address)
    try:
        admin = _consumer_admin(channel, address) if consumer \
            else _supplier_admin(channel, address)
        if proxy_id is not None:
            _subscription_proxy(admin, address, proxy_id)
    except ChannelError:
        raise
    except Exception as exc:
        raise ChannelError(address.url, f"{type(exc).__name__}: {exc}") from exc


def _subscription_proxy(admin: Any, address: ChannelAddress, proxy_id: int) -> Any:
    """The subscription ``proxy_id`` of a consumer admin, or ChannelError: a
    SequenceProxyPullSupplier (``create_subscription``) or a
    StructuredProxyPullSupplierAck (``create_ack_subscription``), narrowed."""
    try:
        proxy = address.timed(admin.get_proxy_supplier(proxy_id))
    except CA.ProxyNotFound:
        raise ChannelError(address.url, f"no proxy {proxy_id} in the consumer admin") from None
    if proxy._is_a(ACK_PULL_ID):
        return address.timed(proxy._narrow(ack_stubs().StructuredProxyPullSupplierAck))
    proxy = address.timed(proxy._narrow(CA.SequenceProxyPullSupplier))
    if proxy is None or proxy._get_MyType() != CA.PULL_SEQUENCE:
        raise ChannelError(address.url, f"proxy {proxy_id} is neither a "
                                        "SequenceProxyPullSupplier (create_subscription) nor a "
                                        "StructuredProxyPullSupplierAck "
                                        "(create_ack_subscription)")
    return proxy


def ack_stubs() -> Any:
    """The ``CosNotifyChannelAdminAck`` stubs (cosnotify's own IDL: importable once
    ``cosnotify.corba`` has put its generated stubs on the path)."""
    import importlib

    import cosnotify.corba  # noqa: F401

    return importlib.import_module("CosNotifyChannelAdminAck")


def acknowledging(proxy: Any) -> bool:
    """Whether a subscription proxy is an acknowledging one (exactly-once reads)."""
    return bool(proxy._is_a(ACK_PULL_ID))


def resolve_channel(orb: Any, address: ChannelAddress) -> Any:
    """The ``CosNotifyChannelAdmin::EventChannel`` that ``address`` names."""
    url = address.url
    try:
        obj = address.timed(orb.string_to_object(url))
        if obj is None:
            raise ChannelError(url, "the URL is a nil reference")
        if obj._is_a(_CHANNEL_ID):
            if address.channel_id is not None:
                raise ChannelError(url, "the URL names an EventChannel; channel_id is only "
                                        "for an EventChannelFactory URL")
            return address.timed(obj._narrow(CA.EventChannel))
        if not obj._is_a(_FACTORY_ID):
            raise ChannelError(url, "the URL names neither an EventChannel nor an "
                                    "EventChannelFactory")
        factory = address.timed(obj._narrow(CA.EventChannelFactory))
        channel_id = address.channel_id
        if channel_id is None:
            ids = sorted(factory.get_all_channels())
            if len(ids) != 1:
                raise ChannelError(url, f"the factory has channels {ids}: "
                                        'choose one with option "channel_id"')
            channel_id = ids[0]
        try:
            return address.timed(factory.get_event_channel(channel_id))
        except CA.ChannelNotFound:
            raise ChannelError(url, f"the factory has no channel {channel_id}") from None
    except ChannelError:
        raise
    except Exception as exc:  # CORBA system exceptions, CosNaming::NotFound ...
        raise ChannelError(url, f"cannot resolve: {type(exc).__name__}: {exc}") from exc


def _consumer_admin(channel: Any, address: ChannelAddress) -> Any:
    if address.admin_id is None:
        return address.timed(channel._get_default_consumer_admin())
    try:
        return address.timed(channel.get_consumeradmin(address.admin_id))
    except CA.AdminNotFound:
        raise ChannelError(address.url, f"no consumer admin {address.admin_id}") from None


def _supplier_admin(channel: Any, address: ChannelAddress) -> Any:
    if address.admin_id is None:
        return address.timed(channel._get_default_supplier_admin())
    try:
        return address.timed(channel.get_supplieradmin(address.admin_id))
    except CA.AdminNotFound:
        raise ChannelError(address.url, f"no supplier admin {address.admin_id}") from None


def _long(value: int) -> Any:
    return CORBA.Any(CORBA.TC_long, value)


def _quietly(operation: Any, *args: Any) -> None:
    try:
        operation(*args)
    except Exception as exc:  # noqa: BLE001 - the object may already be gone
        log.debug("%s failed: %s", getattr(operation, "__name__", operation), exc)


def _new_pull_proxy(address: ChannelAddress, channel: Any, admin: Any, constraint: str | None,
                    pull_size: int) -> tuple[Any, int, Any]:
    """A connected sequence pull proxy with the constraint as a filter: (proxy, id, filter)."""
    proxy, proxy_id = admin.obtain_notification_pull_supplier(CA.SEQUENCE_EVENT)
    proxy = address.timed(address.timed(proxy)._narrow(CA.SequenceProxyPullSupplier))
    flt = None
    try:
        proxy.set_qos([N.Property("MaximumBatchSize", _long(pull_size))])
        flt = _add_constraint(address, channel, proxy, constraint)
        proxy.connect_sequence_pull_consumer(None)
    except BaseException:
        _quietly(proxy.disconnect_sequence_pull_supplier)
        if flt is not None:
            _quietly(flt.destroy)
        raise
    return proxy, proxy_id, flt


def _add_constraint(address: ChannelAddress, channel: Any, proxy: Any,
                    constraint: str | None) -> Any:
    """Add ``constraint`` to ``proxy`` as a filter of the channel's default filter
    factory; the filter, or None without a constraint."""
    if constraint is None or not constraint.strip():
        return None
    factory = address.timed(channel._get_default_filter_factory())
    flt = address.timed(factory.create_filter("EXTENDED_TCL"))
    try:
        flt.add_constraints([NF.ConstraintExp([], constraint)])
        proxy.add_filter(flt)
    except BaseException:
        _quietly(flt.destroy)
        raise
    return flt


class PullSubscription:
    """A sequence pull proxy in a remote channel that the data source pulls from.

    ``owned`` proxies (made by :meth:`open` without ``proxy_id``) are
    disconnected by :meth:`close`, and their filter destroyed; a proxy named
    by ``proxy_id`` is left as it was found.
    """

    def __init__(self, orb: Any, proxy: Any, proxy_id: int, owned: bool, pull_size: int,
                 flt: Any = None, url: str = "") -> None:
        self.orb = orb
        self.url = url
        self.proxy = proxy
        self.proxy_id = proxy_id
        self.owned = owned
        self.pull_size = pull_size
        self._filter = flt
        self.default_priority = 0
        self.default_timeout = 0.0
        try:
            qos = {p.name: p.value._v for p in proxy.get_qos()}
            self.default_priority = int(qos.get("Priority", 0))
            self.default_timeout = int(qos.get("Timeout", 0)) / 1e7
            # A pull returns at most the proxy's MaximumBatchSize, and a short pull is
            # taken to mean "empty": a subscription made with a smaller batch size than
            # this reader's pull_size must not look empty after its first pull.
            most = int(qos.get("MaximumBatchSize", 0))
            if most > 0:
                self.pull_size = min(pull_size, most)
        except Exception as exc:  # noqa: BLE001 - defaults are a nicety
            log.debug("get_qos failed: %s", exc)

    @classmethod
    def open(cls, address: ChannelAddress, constraint: str | None = None,
             proxy_id: int | None = None, pull_size: int = 1000,
             orb: Any = None) -> PullSubscription:
        """Connect a new proxy (with ``constraint``) or reuse the proxy ``proxy_id``."""
        orb = client_orb() if orb is None else orb
        channel = resolve_channel(orb, address)
        try:
            admin = _consumer_admin(channel, address)
            if proxy_id is None:
                proxy, new_id, flt = _new_pull_proxy(address, channel, admin, constraint,
                                                     pull_size)
                try:
                    return cls(orb, proxy, new_id, True, pull_size, flt, address.url)
                except BaseException:  # SIGTERM (SystemExit) while reading its QoS
                    _quietly(proxy.disconnect_sequence_pull_supplier)
                    if flt is not None:
                        _quietly(flt.destroy)
                    raise
            if constraint is not None and constraint.strip():
                raise ChannelError(address.url, 'give "constraint" to create_subscription, not '
                                                'together with "proxy_id"')
            proxy = _subscription_proxy(admin, address, proxy_id)
            if acknowledging(proxy):
                raise ChannelError(address.url, f"proxy {proxy_id} is an acknowledging "
                                                "subscription: a stream read reads it "
                                                "(exactly once), and a batch read")
            try:
                proxy.connect_sequence_pull_consumer(None)
            except ECA.AlreadyConnected:
                pass
            return cls(orb, proxy, proxy_id, False, pull_size, url=address.url)
        except ChannelError:
            raise
        except Exception as exc:
            raise ChannelError(address.url, f"{type(exc).__name__}: {exc}") from exc

    def pull(self, limit: int | None = None) -> list[Any]:
        """What is queued now, up to ``limit`` events (None: until a pull comes back short).

        Never waits: ``try_pull_structured_events`` returns what the proxy holds.
        """
        events: list[Any] = []
        while limit is None or len(events) < limit:
            ask = self.pull_size if limit is None else min(self.pull_size, limit - len(events))
            try:
                batch, has_event = self.proxy.try_pull_structured_events(ask)
            except CORBA.OBJECT_NOT_EXIST as exc:
                raise ChannelError(self.url, f"proxy {self.proxy_id} no longer exists (the "
                                             "channel, its admin or the subscription was "
                                             f"destroyed); {len(events)} events pulled "
                                             "by this call are lost") from exc
            if not has_event:
                break
            events.extend(batch)
            if len(batch) < ask:
                break
        return events

    def drain(self, limit: int | None = None, idle_timeout: float = 0.0,
              poll: float = 0.02) -> list[Any]:
        """Pull until the queue is empty and stays empty for ``idle_timeout`` seconds."""
        events: list[Any] = []
        quiet_since = time.monotonic()
        while limit is None or len(events) < limit:
            got = self.pull(None if limit is None else limit - len(events))
            if got:
                events.extend(got)
                quiet_since = time.monotonic()
                continue
            if time.monotonic() - quiet_since >= idle_timeout:
                break
            time.sleep(poll)
        return events

    def close(self) -> None:
        """Disconnect an owned proxy and destroy its filter; leave a named one alone.

        A signal cannot leave this ORB in the middle of a call: omniORB waits for
        replies in C++ with the GIL released, and Python runs the handler only
        when the call has returned. So close() after a SIGTERM uses the same ORB.
        """
        if self.owned and self.proxy is not None:
            proxy, flt = self.proxy, self._filter
            try:
                proxy.disconnect_sequence_pull_supplier()
            except CORBA.OBJECT_NOT_EXIST:
                pass  # the channel, its admin or the proxy is gone already
            except Exception as exc:  # noqa: BLE001 - close never raises
                log.warning("could not disconnect proxy %d of %s: %s", self.proxy_id,
                            self.url, exc)
            if flt is not None:
                _quietly(flt.destroy)
        self.proxy = None


def create_subscription(channel: str, constraint: str | None = None, *,
                        channel_id: int | None = None, admin_id: int | None = None,
                        pull_size: int = 1000, orb: Any = None,
                        call_timeout: float = CALL_TIMEOUT) -> int:
    """Create a lasting sequence pull proxy in ``channel`` and return its proxy id.

    The proxy queues the events that pass ``constraint`` (EXTENDED_TCL) from
    now on, whether or not a query is reading, within the channel's limits
    (MaxEventsPerConsumer, DiscardPolicy, event lifetimes). Read it with
    ``.option("proxy_id", id)``; a batch read then drains what it holds.
    """
    if not 1 <= pull_size <= _LONG_MAX:
        raise ValueError(f"pull_size must be in [1, {_LONG_MAX}], got {pull_size!r}")
    if constraint is not None and constraint.strip():
        parse_constraint(constraint)  # ConstraintSyntaxError here, with a caret excerpt
    address = ChannelAddress(channel, channel_id, admin_id, call_timeout)
    orb = client_orb() if orb is None else orb
    target = resolve_channel(orb, address)
    try:
        admin = _consumer_admin(target, address)
        _, proxy_id, _ = _new_pull_proxy(address, target, admin, constraint, pull_size)
    except ChannelError:
        raise
    except Exception as exc:
        raise ChannelError(channel, f"{type(exc).__name__}: {exc}") from exc
    return int(proxy_id)


def drop_subscription(channel: str, proxy_id: int, *, channel_id: int | None = None,
                      admin_id: int | None = None, orb: Any = None,
                      call_timeout: float = CALL_TIMEOUT) -> None:
    """Disconnect (and so destroy) the subscription proxy ``proxy_id`` and its filters.

    An acknowledging subscription (``create_ack_subscription``; give its
    ``admin_id``) takes its admin with it, once the admin holds no other proxy:
    what it had not acknowledged goes too.
    """
    address = ChannelAddress(channel, channel_id, admin_id, call_timeout)
    orb = client_orb() if orb is None else orb
    target = resolve_channel(orb, address)
    try:
        admin = _consumer_admin(target, address)
        proxy = _subscription_proxy(admin, address, proxy_id)
        filters = [address.timed(proxy.get_filter(i)) for i in proxy.get_all_filters()]
        if acknowledging(proxy):
            proxy.disconnect_structured_pull_supplier()
            if admin_id not in (None, 0) and not admin._get_push_suppliers() \
                    and not admin._get_pull_suppliers():
                admin.destroy()
        else:
            proxy.disconnect_sequence_pull_supplier()
    except ChannelError:
        raise
    except Exception as exc:
        raise ChannelError(channel, f"{type(exc).__name__}: {exc}") from exc
    for flt in filters:
        _quietly(flt.destroy)


def open_push_proxy(address: ChannelAddress, orb: Any = None) -> Any:
    """A connected ``SequenceProxyPushConsumer`` of the supplier admin (for the sink)."""
    orb = client_orb() if orb is None else orb
    channel = resolve_channel(orb, address)
    proxy = None
    try:
        proxy, _ = _supplier_admin(channel, address).obtain_notification_push_consumer(
            CA.SEQUENCE_EVENT)
        proxy = address.timed(address.timed(proxy)._narrow(CA.SequenceProxyPushConsumer))
        proxy.connect_sequence_push_supplier(None)
    except BaseException as exc:
        if proxy is not None:  # obtained but not connected: do not leave it in the admin
            _quietly(proxy.disconnect_sequence_push_consumer)
        if isinstance(exc, ChannelError) or not isinstance(exc, Exception):
            raise
        raise ChannelError(address.url, f"{type(exc).__name__}: {exc}") from exc
    return proxy
