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

The servant lives in the RootPOA of the process's omniORB ORB (``orb``, or
``connect.client_orb()``): omniORB allows one ORB per process, so its
endpoint is whatever the process's ORB publishes. The bridge's own ORB
publishes a loopback endpoint unless the ``ORBendPoint`` environment variable
names another; for a channel on another host, initialise the ORB with an
endpoint that host can reach before the bridge does (docs/spark.md). The
references to the channel, its admin, proxy and filter each get
``call_timeout`` (``omniORB.setClientCallTimeout``).

A remote push that finds the sink's buffer full blocks the ORB thread serving
it; the channel's call timeout (``ServerConfig.call_timeout``) must be longer
than a batch takes to write, or the channel gives up on the consumer.
"""

from __future__ import annotations

from typing import Any

import omniORB  # noqa: F401 - before the COS stubs it puts on sys.path

import CosNotifyComm__POA
import CosNotifyFilter as NF

from cosnotify.filter import parse_constraint
from spark_bridge.connect import (
    CALL_TIMEOUT,
    ChannelAddress,
    _consumer_admin,
    _quietly,
    client_orb,
    resolve_channel,
)

__all__ = ["SinkConsumer", "attach_remote"]


class SinkConsumer(CosNotifyComm__POA.SequencePushConsumer):  # type: ignore[misc]
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
                  constraint: str | None = None, call_timeout: float = CALL_TIMEOUT,
                  **options: Any) -> Any:
    """``cls.attach`` on the consumer admin of a remote channel, with a served consumer."""
    if constraint is not None and constraint.strip():
        parse_constraint(constraint)  # ConstraintSyntaxError before anything is made
    orb = client_orb() if orb is None else orb
    address = ChannelAddress(channel, channel_id, admin_id, call_timeout)
    target = resolve_channel(orb, address)
    admin = _consumer_admin(target, address)
    poa = orb.resolve_initial_references("RootPOA")
    poa._get_the_POAManager().activate()
    filters = []
    if constraint is not None and constraint.strip():
        factory = address.timed(target._get_default_filter_factory())
        flt = address.timed(factory.create_filter("EXTENDED_TCL"))
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
        sink = cls.attach(admin, spark, as_reference=as_reference, filters=filters,
                          timed=address.timed, **options)
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
