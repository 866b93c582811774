"""OES trees: the Object Eventing Service's tree of named nodes, on a channel.

Strategy: the seed (/work/shared/seeds/object-eventing-service.txt) describes
"a hierarchy of named nodes containing arbitrary binary data" with "selective
notification of changes to the tree or the values stored at nodes". Here a
tree is bound to a notification channel (``Tree.of(channel)``): its nodes live
in memory and, for a persistent channel, in the store (``durable``); every
operation notifies through the channel with one Structured Event per node
(``events``), which OES_SUBTREE filters -- and any other grammar -- select
from; subscription contracts are consumer admins and proxies of the channel
with leases (``contracts``). ``corba`` serves it over IIOP
(idl/CosNotifyOES.idl). docs/history.md, "OES trees", maps each seed concept.
"""

from __future__ import annotations

from typing import Any

import CosNotifyChannelAdmin as CA

from cosnotify.oes.contracts import Contract, Subscription
from cosnotify.oes.errors import (
    ContractNotFound,
    InvalidRequest,
    NodeExists,
    NodeNotFound,
    OESError,
    SubscriptionNotFound,
)
from cosnotify.oes.events import DOMAIN
from cosnotify.oes.paths import (
    MAX_CONTENT_BYTES,
    MAX_CONTRACTS,
    MAX_LEASE,
    MAX_LEVELS,
    MAX_NAME_CHARS,
    MAX_NODES,
    MAX_SUBSCRIPTIONS,
    MAX_TREE_SUBSCRIPTIONS,
)
from cosnotify.oes.tree import UNCHANGED, Node, Tree

__all__ = [
    "DOMAIN",
    "MAX_CONTENT_BYTES",
    "MAX_CONTRACTS",
    "MAX_LEASE",
    "MAX_LEVELS",
    "MAX_NAME_CHARS",
    "MAX_NODES",
    "MAX_SUBSCRIPTIONS",
    "MAX_TREE_SUBSCRIPTIONS",
    "UNCHANGED",
    "Contract",
    "ContractNotFound",
    "InvalidRequest",
    "Node",
    "NodeExists",
    "NodeNotFound",
    "OESError",
    "Subscription",
    "SubscriptionNotFound",
    "Tree",
    "tree_of",
]


def tree_of(factory: Any, channel_id: int) -> Tree:
    """The tree of the factory's channel ``channel_id`` (``TreeFactory::get_tree``);
    ``CosNotifyChannelAdmin::ChannelNotFound`` when there is no such channel."""
    channel = factory._find_channel(channel_id) if type(channel_id) is int else None
    if channel is None:
        raise CA.ChannelNotFound()
    return Tree.of(channel)
