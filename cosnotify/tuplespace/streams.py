"""Notification streams (registerForEvents, registerForAll) as channel subscriptions.

Strategy: the seed's streams return "each event put on the server, from the
point of wire bundle receipt onward, that matches the template value fields
of one or more of the events included in the request", with "Sequencing is
ignored, and copies of the retrieved events remain on the server", "until a
deregister operation". That is what a consumer of the channel gets, so a
stream *is* an ordinary subscription: a consumer admin of its own (named
``EventHeap stream <uuid>``, TAO's admin names, so a stream is known again
after a restart), one StructuredProxyPushSupplier, an EVENTHEAP filter with
one constraint per template (a filter passes what any constraint passes; no
filter for registerForAll), connected to the caller's
``CosNotifyComm::StructuredPushConsumer`` -- a reference over CORBA, or in
process any object with ``push_structured_event`` or a plain callable. The
stream id is the admin's id; deregister disconnects the proxy (the consumer
is not called back) and destroys the admin and the filter. Delivery is the
channel's: asynchronous, with the channel's QoS, and (on a Persistent
channel, for a CORBA consumer) restored after a restart. A callable cannot be
restored, so its admin is made BestEffort and is not stored. Anything that
fails half-way is undone.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any, Final

from omniORB import CORBA

import CosNotification
import CosNotifyChannelAdmin as CA
import CosNotifyFilter

from cosnotify.tuplespace.records import bad_param, limit_exceeded

__all__ = ["STREAM_PREFIX", "deregister", "register"]

log = logging.getLogger("cosnotify.tuplespace")

#: The name every stream's consumer admin starts with.
STREAM_PREFIX: Final = "EventHeap stream "


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


def register(channel: Any, texts: list[str] | None, consumer: Any) -> int:
    """A stream of ``channel``'s events that ``texts`` (EVENTHEAP constraints; None: all)
    select, pushed to ``consumer``; its id."""
    target, local = _consumer(consumer)
    try:
        admin, admin_id = channel.named_new_for_consumers(
            CA.AND_OP, f"{STREAM_PREFIX}{uuid.uuid4().hex}")
    except CA.AdminLimitExceeded as exc:
        raise _limit(exc) from None
    flt = None
    try:
        if local:
            admin.set_qos([CosNotification.Property(
                "ConnectionReliability", CORBA.Any(CORBA.TC_short, CosNotification.BestEffort))])
        proxy, _ = admin.obtain_notification_push_supplier(CA.STRUCTURED_EVENT)
        if texts is not None:
            flt = channel._get_default_filter_factory().create_filter("EVENTHEAP")
            flt.add_constraints([CosNotifyFilter.ConstraintExp([], text) for text in texts])
            proxy.add_filter(flt)
        proxy.connect_structured_push_consumer(target)
    except BaseException as exc:
        _undo(admin, flt)
        if isinstance(exc, CA.AdminLimitExceeded):
            raise _limit(exc) from None
        raise
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


def deregister(channel: Any, stream: Any) -> bool:
    """End stream ``stream`` of ``channel``; False if there is none of that id."""
    if isinstance(stream, bool) or not isinstance(stream, int):
        raise bad_param(f"a stream id is an integer, not {stream!r:.100}")
    if stream <= 0:
        return False
    try:
        admin = channel.get_consumeradmin(stream)
    except CA.AdminNotFound:
        return False
    name = getattr(admin, "_name", None)
    if not isinstance(name, str) or not name.startswith(STREAM_PREFIX):
        return False  # an admin of someone else's: not a stream
    filters = []
    for proxy in admin._all_proxies():
        for filter_id in proxy.get_all_filters():
            filters.append(proxy.get_filter(filter_id))
        try:
            proxy.disconnect_structured_push_supplier()  # the consumer asked: no call back
        except CORBA.OBJECT_NOT_EXIST:
            pass
    admin.destroy()
    for flt in filters:
        try:
            flt.destroy()
        except CORBA.OBJECT_NOT_EXIST:
            pass
    return True
