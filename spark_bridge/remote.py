"""SparkSinkProxy for a channel in another process: a servant that forwards to the sink.

Strategy: the sink already speaks CosNotifyComm (``push_structured_events``,
``offer_change``, ``disconnect_sequence_push_consumer``) and touches its proxy
only through IDL operations, so serving it remotely takes a thin servant
(:class:`SinkConsumer`) activated in an ORB's RootPOA and
``SparkSinkProxy.attach(..., as_reference=...)`` with the servant's reference.
The channel is found by URL exactly as the data source finds it
(``connect.resolve_channel``); a constraint becomes an EXTENDED_TCL filter made
by the channel's own filter factory and added to the proxy before it connects.
Closing the sink disconnects the proxy, then deactivates the servant and
destroys the filter.

A remote push that finds the sink's buffer full blocks the ORB thread serving
it; the channel's call timeout (``ServerConfig.call_timeout``) must be longer
than a batch takes to write, or the channel gives up on the consumer.
"""

from __future__ import annotations

from typing import Any

from cosnotify.filter import parse_constraint
from cosnotify.stubs import CosNotifyComm__POA
from cosnotify.stubs import CosNotifyFilter as NF
from spark_bridge.connect import (
    ChannelAddress,
    _consumer_admin,
    _quietly,
    client_orb,
    resolve_channel,
)

__all__ = ["SinkConsumer", "attach_remote"]


class SinkConsumer(CosNotifyComm__POA.SequencePushConsumer):
    """``CosNotifyComm::SequencePushConsumer`` served for a sink."""

    def __init__(self, sink: Any) -> None:
        self.sink = sink

    def push_structured_events(self, notifications: list[Any]) -> None:
        self.sink.push_structured_events(notifications)

    def offer_change(self, added: list[Any], removed: list[Any]) -> None:
        self.sink.offer_change(added, removed)

    def disconnect_sequence_push_consumer(self) -> None:
        self.sink.disconnect_sequence_push_consumer()


def attach_remote(cls: Any, channel: str, spark: Any, *, orb: Any = None,
                  channel_id: int | None = None, admin_id: int | None = None,
                  constraint: str | None = None, **options: Any) -> Any:
    """``cls.attach`` on the consumer admin of a remote channel, with a served consumer."""
    if constraint is not None and constraint.strip():
        parse_constraint(constraint)  # ConstraintSyntaxError before anything is made
    orb = client_orb() if orb is None else orb
    address = ChannelAddress(channel, channel_id, admin_id)
    target = resolve_channel(orb, address)
    admin = _consumer_admin(target, address)
    poa = orb.resolve_initial_references("RootPOA")
    poa.the_POAManager.activate()
    filters = []
    if constraint is not None and constraint.strip():
        flt = target._get_default_filter_factory().create_filter("EXTENDED_TCL")
        try:
            flt.add_constraints([NF.ConstraintExp([], constraint)])
        except BaseException:
            _quietly(flt.destroy)  # the channel holds a filter until it is destroyed
            raise
        filters.append(flt)
    servants: list[SinkConsumer] = []

    def as_reference(sink: Any) -> Any:
        servant = SinkConsumer(sink)
        servants.append(servant)
        return poa.servant_to_reference(servant)

    options.setdefault("references", orb)
    try:
        sink = cls.attach(admin, spark, as_reference=as_reference, filters=filters, **options)
    except BaseException:
        for flt in filters:
            _quietly(flt.destroy)
        for servant in servants:
            _quietly(poa.deactivate_object, poa.servant_to_id(servant))
        raise
    for servant in servants:
        sink._on_close.append(lambda s=servant: poa.deactivate_object(poa.servant_to_id(s)))
    for flt in filters:
        sink._on_close.append(flt.destroy)
    return sink
