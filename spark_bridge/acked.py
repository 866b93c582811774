"""Acknowledging subscriptions: what the exactly-once stream reader pulls from.

Strategy: Event Acknowledgment (Notification 1.1 section 3.7) lets the
channel, not the reader, keep every event until the reader says it is done
with it. :func:`create_ack_subscription` makes, in a persistent channel, a
consumer admin of its own whose DeliveryReliability is Acknowledgment and in
it a ``StructuredProxyPullSupplierAck`` (with the constraint as an
EXTENDED_TCL filter of the channel's default filter factory). Every event
the proxy gives carries a ``SequenceNumber``: on a persistent channel that
is the event's store id, so an event given again -- after RetryInterval, or
after the server restarted -- carries the number it had before (section
3.7.5.1: the number "is never lost or reset" while the connection lasts). A
sequence proxy numbers batches, not events, and its batches are formed
again after a restart (docs/persistence.md), so the reader pulls a
structured proxy, one event per call.

:class:`AckPuller` is the reader's client: ``pull`` returns ``(number,
event)`` pairs (the SequenceNumber field taken out of the header: it is the
channel's delivery mark, not part of the event), ``acknowledge`` tells the
proxy which numbers the reader is done with. Both ride out a server that
restarts (TRANSIENT, COMM_FAILURE) for up to ``call_timeout`` seconds; a
subscription that no longer exists is a :class:`ChannelError`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import attrs
from omniORB import CORBA

import CosEventChannelAdmin as ECA
import CosNotification as N
import CosNotifyChannelAdmin as CA

from spark_bridge.connect import (
    CALL_TIMEOUT,
    ChannelAddress,
    ChannelError,
    _add_constraint,
    _consumer_admin,
    _quietly,
    _subscription_proxy,
    ack_stubs,
    acknowledging,
    client_orb,
    resolve_channel,
)

__all__ = ["AckPuller", "AckSubscription", "create_ack_subscription",
           "numbers_text", "parse_numbers", "subscription_is_acknowledging"]

log = logging.getLogger("spark_bridge.acked")

SEQUENCE_NUMBER = "SequenceNumber"
#: Events a durable proxy of cosnotify keeps in memory at most, the unacknowledged
#: included (``cosnotify.channel.durable.WINDOW``, docs/persistence.md): past it the
#: proxy gives nothing more until some are acknowledged. The reader plans batches of
#: at most half of it, so a batch is pulled while the one before awaits its commit.
WINDOW = 4096
#: RetryInterval of a new subscription: what a killed reader had pulled and not
#: acknowledged is given again this many seconds after it was given.
RETRY_INTERVAL = 10.0
_DOWN = (CORBA.TRANSIENT, CORBA.COMM_FAILURE)
_PAUSE = 0.05  # seconds between calls to a server that is restarting
_ACK_CHUNK = 50_000  # numbers per acknowledge call
T = TypeVar("T")


@attrs.frozen
class AckSubscription:
    """An acknowledging subscription: where it is. ``options()`` are the read's options."""

    channel: str
    channel_id: int | None
    admin_id: int
    proxy_id: int

    def options(self) -> dict[str, str]:
        """``channel``, ``channel_id`` (if any), ``admin_id`` and ``proxy_id``, as strings."""
        found = {"channel": self.channel, "admin_id": str(self.admin_id),
                 "proxy_id": str(self.proxy_id)}
        if self.channel_id is not None:
            found["channel_id"] = str(self.channel_id)
        return found

    def drop(self, orb: Any = None, call_timeout: float = CALL_TIMEOUT) -> None:
        """Remove the subscription and its admin (:func:`spark_bridge.drop_subscription`
        with this ``admin_id``: proxy ids are per admin, so without it another admin's
        proxy could be named)."""
        from spark_bridge.connect import drop_subscription

        drop_subscription(self.channel, self.proxy_id, channel_id=self.channel_id,
                          admin_id=self.admin_id, orb=orb, call_timeout=call_timeout)


def _short(value: int) -> Any:
    return CORBA.Any(CORBA.TC_short, value)


def _time(seconds: float) -> Any:
    import TimeBase
    return CORBA.Any(TimeBase._tc_TimeT, round(seconds * 1e7))


def _persistent(channel: Any, address: ChannelAddress) -> None:
    """Refuse a channel whose events or connections do not survive a restart."""
    qos = {p.name: p.value.value() for p in address.timed(channel).get_qos()}
    wanted = ("EventReliability", "ConnectionReliability")
    if any(qos.get(name, N.BestEffort) != N.Persistent for name in wanted):
        got = ", ".join(f"{name}={'Persistent' if qos.get(name) == N.Persistent else 'BestEffort'}"
                        for name in wanted)
        raise ChannelError(address.url, f"exactly-once reads need a persistent channel "
                                        f"(EventReliability and ConnectionReliability "
                                        f"Persistent); this one has {got}: read it with "
                                        "create_subscription (at most once) instead")


def create_ack_subscription(channel: str, constraint: str | None = None, *,
                            channel_id: int | None = None,
                            retry_interval: float = RETRY_INTERVAL, orb: Any = None,
                            call_timeout: float = CALL_TIMEOUT) -> AckSubscription:
    """Make an acknowledging subscription in a persistent channel (module docstring).

    It queues, on disk, the events that pass ``constraint`` from now on until
    a reader acknowledges them. ``retry_interval`` (seconds) is its
    RetryInterval.
    Drop it with :meth:`AckSubscription.drop`, which also destroys its admin.
    """
    if not 0 < retry_interval < float("inf"):
        raise ValueError(f"retry_interval must be a number of seconds > 0, not {retry_interval!r}")
    address = ChannelAddress(channel, channel_id, None, call_timeout)
    orb = client_orb() if orb is None else orb
    target = resolve_channel(orb, address)
    admin = None
    try:
        _persistent(target, address)
        admin, admin_id = target.new_for_consumers(CA.AND_OP)
        admin = address.timed(admin)
        admin.set_qos([N.Property("DeliveryReliability", _short(1)),
                       N.Property("RetryInterval", _time(retry_interval))])
        proxy, proxy_id = admin.obtain_notification_pull_supplier(CA.STRUCTURED_EVENT)
        proxy = address.timed(address.timed(proxy)._narrow(ack_stubs().StructuredProxyPullSupplierAck))
        _add_constraint(address, target, proxy, constraint)
        proxy.connect_structured_pull_consumer(None)
    except BaseException as exc:
        if admin is not None:
            _quietly(admin.destroy)  # its proxy and filter go with it
        if isinstance(exc, ChannelError) or not isinstance(exc, Exception):
            raise
        raise ChannelError(channel, f"{type(exc).__name__}: {exc}") from exc
    return AckSubscription(channel, channel_id, int(admin_id), int(proxy_id))


def subscription_is_acknowledging(address: ChannelAddress, proxy_id: int) -> bool:
    """Whether the subscription ``proxy_id`` (at ``address``) is acknowledging."""
    orb = client_orb()
    try:
        admin = _consumer_admin(resolve_channel(orb, address), address)
        return acknowledging(_subscription_proxy(admin, address, proxy_id))
    except ChannelError:
        raise
    except Exception as exc:
        raise ChannelError(address.url, f"{type(exc).__name__}: {exc}") from exc


def numbers_text(numbers: Iterable[int]) -> str:
    """``numbers`` as sorted ranges: ``"3-7,9,12-13"`` (offsets carry this)."""
    ordered = sorted(set(numbers))
    parts: list[str] = []
    at = 0
    while at < len(ordered):
        end = at
        while end + 1 < len(ordered) and ordered[end + 1] == ordered[end] + 1:
            end += 1
        first, last = ordered[at], ordered[end]
        parts.append(str(first) if first == last else f"{first}-{last}")
        at = end + 1
    return ",".join(parts)


def parse_numbers(text: str) -> set[int]:
    """The numbers :func:`numbers_text` wrote."""
    found: set[int] = set()
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        found.update(range(int(first), int(last or first) + 1))
    return found


def _number_and_event(structured: Any) -> tuple[int, Any]:
    """The SequenceNumber of a given event, and the event without it."""
    header = structured.header
    number = None
    kept = []
    for prop in header.variable_header:
        if prop.name == SEQUENCE_NUMBER and number is None:
            number = int(prop.value.value())
        else:
            kept.append(prop)
    if number is None:
        raise ChannelError("", "an acknowledging proxy gave an event without a SequenceNumber")
    event = N.StructuredEvent(N.EventHeader(header.fixed_header, kept),
                              structured.filterable_data, structured.remainder_of_body)
    return number, event


class AckPuller:
    """The reader's side of an acknowledging subscription (module docstring)."""

    owned = False  # the subscription outlives every query that reads it

    def __init__(self, orb: Any, proxy: Any, proxy_id: int, url: str,
                 call_timeout: float = CALL_TIMEOUT) -> None:
        self.orb = orb
        self.proxy = proxy
        self.proxy_id = proxy_id
        self.url = url
        self.call_timeout = call_timeout
        qos = {p.name: p.value.value() for p in self._call(proxy.get_qos)}
        self.default_priority = int(qos.get("Priority", 0))
        self.default_timeout = int(qos.get("Timeout", 0)) / 1e7
        self.retry_interval = int(qos.get("RetryInterval", 0)) / 1e7
        self.window = WINDOW

    @classmethod
    def open(cls, address: ChannelAddress, proxy_id: int, orb: Any = None) -> AckPuller:
        orb = client_orb() if orb is None else orb
        channel = resolve_channel(orb, address)
        try:
            admin = _consumer_admin(channel, address)
            try:
                proxy = address.timed(admin.get_proxy_supplier(proxy_id))
            except CA.ProxyNotFound:
                raise ChannelError(address.url, f"no proxy {proxy_id} in the consumer admin"
                                   ) from None
            proxy = address.timed(proxy._narrow(ack_stubs().StructuredProxyPullSupplierAck))
            try:
                proxy.connect_structured_pull_consumer(None)
            except ECA.AlreadyConnected:
                pass
            return cls(orb, proxy, proxy_id, address.url, address.call_timeout)
        except ChannelError:
            raise
        except Exception as exc:
            raise ChannelError(address.url, f"{type(exc).__name__}: {exc}") from exc

    def _call(self, call: Callable[[], T]) -> T:
        """``call()``, made again while the server is restarting (for ``call_timeout``)."""
        give_up = time.monotonic() + self.call_timeout
        while True:
            try:
                return call()
            except CORBA.OBJECT_NOT_EXIST as exc:
                raise ChannelError(self.url, f"proxy {self.proxy_id} no longer exists (the "
                                             "channel, its admin or the subscription was "
                                             "destroyed)") from exc
            except _DOWN as exc:
                if time.monotonic() > give_up:
                    raise ChannelError(self.url, f"the channel has not answered for "
                                                 f"{self.call_timeout:g} s ({exc})") from exc
                time.sleep(_PAUSE)  # a restarting server: try again, at a gentle pace

    def pull(self, limit: int) -> list[tuple[int, Any]]:
        """Up to ``limit`` (number, event) pairs the proxy gives now; never waits."""
        got: list[tuple[int, Any]] = []
        proxy = self.proxy
        while len(got) < limit:
            structured, has_event = self._call(proxy.try_pull_structured_event)
            if not has_event:
                break
            got.append(_number_and_event(structured))
        return got

    def acknowledge(self, numbers: Sequence[int]) -> None:
        """Tell the proxy the reader is done with ``numbers`` (repeats are harmless)."""
        for at in range(0, len(numbers), _ACK_CHUNK):
            chunk = list(numbers[at:at + _ACK_CHUNK])
            self._call(lambda: self.proxy.acknowledge(chunk))  # noqa: B023 - called at once

    def drain(self, limit: int | None, idle_timeout: float,
              poll: float = 0.02) -> list[tuple[int, Any]]:
        """What a batch read takes: pull until empty for ``idle_timeout`` seconds."""
        got: list[tuple[int, Any]] = []
        quiet_since = time.monotonic()
        while limit is None or len(got) < limit:
            pulled = self.pull(self.window // 2 if limit is None
                               else min(self.window // 2, limit - len(got)))
            if pulled:
                # A batch read is at most once, as for a sequence subscription: what it
                # pulls is acknowledged at once, and so never fills the window.
                self.acknowledge([number for number, _ in pulled])
                got.extend(pulled)
                quiet_since = time.monotonic()
                continue
            if time.monotonic() - quiet_since >= idle_timeout:
                break
            time.sleep(poll)
        return got

    def close(self) -> None:
        """Nothing to undo: the subscription stays, holding what was not acknowledged."""
