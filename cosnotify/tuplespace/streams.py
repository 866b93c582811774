"""Notification streams (registerForEvents, registerForAll) as channel subscriptions.

Strategy: the seed's streams return "each event put on the server, from the
point of wire bundle receipt onward, that matches the template value fields
of one or more of the events included in the request", with "Sequencing is
ignored, and copies of the retrieved events remain on the server", "until a
deregister operation". That is what a consumer of the channel gets, so a
stream *is* an ordinary subscription: a consumer admin of its own (named
``EventHeap stream <uuid>``, TAO's admin names, so a stream is known again
after a restart), with an EVENTHEAP filter holding one constraint per
template (a filter passes what any constraint passes; no filter for
registerForAll), and one StructuredProxyPushSupplier connected to the
caller's ``CosNotifyComm::StructuredPushConsumer`` -- a reference over
CORBA, or in process any object with ``push_structured_event`` or a plain
callable. The filter is the admin's, not the proxy's, so the stream's end
finds it even when the channel has torn the proxy down. The stream id is
the admin's id; deregister disconnects the proxy (the consumer is not
called back) and destroys the admin and the filter. Delivery is the
channel's: asynchronous, with the channel's QoS, and (on a Persistent
channel, for a CORBA consumer) restored after a restart. A callable cannot
be restored, so its admin is made BestEffort and is not stored. Anything
that fails half-way is undone; a consumer the channel cannot use (not a
StructuredPushConsumer, or unreachable) is ``InvalidConsumer``.

"All returned events will use the same Return Tag. It is the
responsibility of the client to insure that Return Tag is unique for that
client": a stream belongs to whoever registered it -- a client's Source
(its admin's name ends `` of <Source>``, so this survives a restart too),
or nobody for an anonymous call -- and only that owner deregisters it.

A stream whose consumer is gone (the channel tore its proxy down after a
failed push) is ended, admin and filter, at the next registration or
deregistration on its channel: dead streams never pile up.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any, Final

from omniORB import CORBA

import CosEventChannelAdmin
import CosNotification
import CosNotifyChannelAdmin as CA
import CosNotifyFilter

from cosnotify.tuplespace.records import bad_param, invalid_consumer, limit_exceeded

__all__ = ["STREAM_PREFIX", "deregister", "register"]

log = logging.getLogger("cosnotify.tuplespace")

#: The name every stream's consumer admin starts with.
STREAM_PREFIX: Final = "EventHeap stream "
#: What separates the uuid from the owner's Source in a client's stream's name.
_OWNER: Final = " of "
_UUID_LENGTH: Final = 32

# Stream admins being made now, by channel: not yet connected, so not dead.
_making_lock = threading.Lock()
_making: set[tuple[int, int]] = set()


class CallbackConsumer:
    """A ``StructuredPushConsumer`` in process that hands each event to a callable."""

    def __init__(self, callback: Callable[[Any], Any]) -> None:
        self._callback = callback

    def push_structured_event(self, event: Any) -> None:
        self._callback(event)

    def offer_change(self, added: list[Any], removed: list[Any]) -> None:
        pass

    def disconnect_structured_push_consumer(self) -> None:
        pass


def _consumer(consumer: Any) -> tuple[Any, bool]:
    """The object the proxy pushes to, and whether it lives only in this process."""
    if isinstance(consumer, CORBA.Object):
        return consumer, False
    if callable(getattr(consumer, "push_structured_event", None)):
        return consumer, True
    if callable(consumer):
        return CallbackConsumer(consumer), True
    raise bad_param(f"not a StructuredPushConsumer or a callable: {consumer!r:.200}")


def _name(owner: str | None) -> str:
    name = f"{STREAM_PREFIX}{uuid.uuid4().hex}"
    return name if owner is None else f"{name}{_OWNER}{owner}"


def _owner_of(name: Any) -> tuple[bool, str | None]:
    """Is ``name`` a stream's admin's, and whose stream (None: anonymous)?"""
    if not isinstance(name, str) or not name.startswith(STREAM_PREFIX):
        return False, None
    rest = name[len(STREAM_PREFIX) + _UUID_LENGTH:]
    return True, (rest[len(_OWNER):] if rest.startswith(_OWNER) else None)


def register(channel: Any, texts: list[str] | None, consumer: Any,
             owner: str | None = None) -> int:
    """A stream of ``channel``'s events that ``texts`` (EVENTHEAP constraints; None: all)
    select, pushed to ``consumer``, owned by ``owner`` (a Source, or None); its id."""
    target, local = _consumer(consumer)
    reap(channel)
    with _making_lock:  # reap() does not take it for dead while it is being made
        try:
            admin, admin_id = channel.named_new_for_consumers(CA.AND_OP, _name(owner))
        except CA.AdminLimitExceeded as exc:
            raise _limit(exc) from None
        key = (id(channel), int(admin_id))
        _making.add(key)
    flt = None
    try:
        if local:
            admin.set_qos([CosNotification.Property(
                "ConnectionReliability", CORBA.Any(CORBA.TC_short, CosNotification.BestEffort))])
        if texts is not None:
            flt = channel._get_default_filter_factory().create_filter("EVENTHEAP")
            flt.add_constraints([CosNotifyFilter.ConstraintExp([], text) for text in texts])
            admin.add_filter(flt)
        proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        proxy.connect_structured_push_consumer(target)
    except BaseException as exc:
        _undo(admin, flt)
        if isinstance(exc, CA.AdminLimitExceeded):
            raise _limit(exc) from None
        if isinstance(exc, CosEventChannelAdmin.TypeError):
            raise invalid_consumer(
                "the channel cannot push to it: it is not a CosNotifyComm::"
                "StructuredPushConsumer, or it could not be reached to ask") from None
        raise
    finally:
        with _making_lock:
            _making.discard(key)
    return int(admin_id)


def _limit(exc: Any) -> Exception:
    limit = getattr(exc, "admin_property_err", None)
    value = getattr(getattr(limit, "value", None), "_v", 0)
    name = getattr(limit, "name", "a limit")
    return limit_exceeded(f"the channel refused a subscription: {name} reached",
                          value if isinstance(value, int) else 0)


def _undo(admin: Any, flt: Any) -> None:
    try:
        admin.destroy()
    finally:
        if flt is not None:
            flt.destroy()


def deregister(channel: Any, stream: Any, owner: str | None = None) -> bool:
    """End stream ``stream`` of ``channel`` if ``owner`` owns it; False if there is no
    such stream of that owner."""
    if isinstance(stream, bool) or not isinstance(stream, int):
        raise bad_param(f"a stream id is an integer, not {stream!r:.100}")
    try:
        if stream <= 0:
            return False
        try:
            admin = channel.get_consumeradmin(stream)
        except CA.AdminNotFound:
            return False
        is_stream, whose = _owner_of(getattr(admin, "_name", None))
        if not is_stream or whose != owner:
            return False  # an admin of someone else's: not this caller's stream
        _end(admin)
        return True
    finally:
        reap(channel)


def _end(admin: Any) -> None:
    """Destroy a stream's admin, its proxy (the consumer is not called back) and its
    filters -- the admin's, and a proxy's (a stream made before filters were the
    admin's)."""
    filters = [admin.get_filter(filter_id) for filter_id in admin.get_all_filters()]
    for proxy in admin._all_proxies():
        for filter_id in proxy.get_all_filters():
            filters.append(proxy.get_filter(filter_id))
        try:
            proxy.disconnect_structured_push_supplier()
        except CORBA.OBJECT_NOT_EXIST:
            pass
    try:
        admin.destroy()
    except CORBA.OBJECT_NOT_EXIST:
        pass
    for flt in filters:
        try:
            flt.destroy()
        except CORBA.OBJECT_NOT_EXIST:
            pass


def reap(channel: Any) -> int:
    """End ``channel``'s streams whose proxy the channel tore down (their consumer is
    gone); how many."""
    ended = 0
    for admin_id in channel.get_all_consumeradmins():
        if admin_id == 0:
            continue
        try:
            admin = channel.get_consumeradmin(admin_id)
        except CA.AdminNotFound:
            continue
        if not _owner_of(getattr(admin, "_name", None))[0] or admin._all_proxies():
            continue
        with _making_lock:
            if (id(channel), admin_id) in _making:
                continue
        try:
            _end(admin)
            ended += 1
        except Exception:
            log.exception("a dead stream %d of %r could not be ended", admin_id, channel)
    return ended
