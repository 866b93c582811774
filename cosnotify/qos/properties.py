"""Every standard QoS and admin property: type, levels, default and range.

Strategy: the spec's tables become data. Each :class:`PropertyDef` records
the value type (checked against the Any's TypeCode: BAD_TYPE), the legal
range (BAD_VALUE), the values this implementation supports (UNSUPPORTED_
VALUE), and the levels where Table 2-5 allows it (UNSUPPORTED_PROPERTY).
The negotiation code in ``negotiation.py`` only interprets this table.

Sources: Table 2-5 (levels), section 2.5.5 (meanings and defaults), section
2.1.5 (EnableTransaction), section 3.7.8 (DeliveryReliability, Retries,
RetryInterval), section 2.5.7 (admin properties).
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

__all__ = [
    "ADMIN_PROPERTIES",
    "ENABLE_TRANSACTION",
    "FILTER_GROUP_SEMANTICS",
    "OES_NODE_LIMITS",
    "QOS_PROPERTIES",
    "RETAIN_AGE",
    "RETAIN_BYTES",
    "RETAIN_COUNT",
    "SPEC_GROUPS",
    "TAO_GROUPS",
    "TRANSACTION_ADMIN_PROPERTIES",
    "Level",
    "PropertyDef",
    "ValueType",
    "levels_of",
]

ENABLE_TRANSACTION = "EnableTransaction"  # section 2.1.5; not a constant in the IDL
#: The channel admin property choosing how filter groups combine (docs/filters.md).
FILTER_GROUP_SEMANTICS = "FilterGroupSemantics"
RETAIN_AGE = "RetainAge"
RETAIN_COUNT = "RetainCount"
RETAIN_BYTES = "RetainBytes"
SPEC_GROUPS, TAO_GROUPS = 0, 1
#: The channel admin property holding the OES_SUBTREE node limits (docs/grammars/oes.md).
OES_NODE_LIMITS = "OESNodeLimits"

SHORT_MIN, SHORT_MAX = -(2**15), 2**15 - 1
LONG_MAX = 2**31 - 1
TIMET_MAX = 2**64 - 1


class ValueType(enum.Enum):
    """The IDL type a property's Any must hold."""

    SHORT = "short"
    LONG = "long"
    BOOLEAN = "boolean"
    TIMET = "TimeBase::TimeT"
    UTCT = "TimeBase::UtcT"
    ULONGLONG = "unsigned long long"
    #: ``CosNotifyGrammars::NodeLimitSeq``; the Python value is a tuple of
    #: ``cosnotify.filter.oes.limits.NodeLimit``.
    NODE_LIMITS = "CosNotifyGrammars::NodeLimitSeq"


class Level(enum.Flag):
    """Where a property may be set (Table 2-5, refined by its footnotes)."""

    MESSAGE = enum.auto()
    CHANNEL = enum.auto()
    CONSUMER_ADMIN = enum.auto()
    SUPPLIER_ADMIN = enum.auto()
    PROXY_SUPPLIER = enum.auto()      # any kind of proxy supplier
    SEQUENCE_PROXY_SUPPLIER = enum.auto()
    PROXY_CONSUMER = enum.auto()
    SEQUENCE_PROXY_CONSUMER = enum.auto()

    ADMIN = CONSUMER_ADMIN | SUPPLIER_ADMIN
    PROXY = PROXY_SUPPLIER | SEQUENCE_PROXY_SUPPLIER | PROXY_CONSUMER | SEQUENCE_PROXY_CONSUMER
    SEQUENCE_PROXY = SEQUENCE_PROXY_SUPPLIER | SEQUENCE_PROXY_CONSUMER
    OBJECTS = CHANNEL | ADMIN | PROXY


@attrs.frozen
class PropertyDef:
    """One standard property."""

    name: str
    type: ValueType
    levels: Level
    default: Any                     # None: no default (not reported until set)
    low: Any = None                  # the legal range, inclusive (None: unbounded)
    high: Any = None
    supported: tuple[Any, ...] | None = None   # supported values, if fewer than legal
    #: Legal values when the property is an enumeration (checked before the range).
    choices: tuple[Any, ...] | None = None


def _p(*args: Any, **kwargs: Any) -> PropertyDef:
    return PropertyDef(*args, **kwargs)


BEST_EFFORT, PERSISTENT = 0, 1
ANY_ORDER, FIFO_ORDER, PRIORITY_ORDER, DEADLINE_ORDER, LIFO_ORDER = 0, 1, 2, 3, 4

_NOT_ON_SUPPLIER_SIDE = Level.CHANNEL | Level.CONSUMER_ADMIN | Level.PROXY_SUPPLIER \
    | Level.SEQUENCE_PROXY_SUPPLIER
_BATCHING = Level.CHANNEL | Level.ADMIN | Level.SEQUENCE_PROXY

#: Table 2-5 and friends. ``supported`` marks what this build implements: Persistent
#: reliability needs the persistent store and TRUE EnableTransaction needs an OTS.
QOS_PROPERTIES: dict[str, PropertyDef] = {p.name: p for p in (
    _p("EventReliability", ValueType.SHORT, Level.MESSAGE | Level.CHANNEL, BEST_EFFORT,
       BEST_EFFORT, PERSISTENT, supported=(BEST_EFFORT,), choices=(BEST_EFFORT, PERSISTENT)),
    _p("ConnectionReliability", ValueType.SHORT, Level.OBJECTS, BEST_EFFORT,
       BEST_EFFORT, PERSISTENT, supported=(BEST_EFFORT,), choices=(BEST_EFFORT, PERSISTENT)),
    _p("Priority", ValueType.SHORT, Level.MESSAGE | Level.OBJECTS, 0, -32767, 32767),
    _p("StartTime", ValueType.UTCT, Level.MESSAGE, None),
    _p("StopTime", ValueType.UTCT, Level.MESSAGE, None),
    _p("Timeout", ValueType.TIMET, Level.MESSAGE | Level.OBJECTS, 0, 0, TIMET_MAX),
    _p("StartTimeSupported", ValueType.BOOLEAN, Level.OBJECTS, True, False, True),
    _p("StopTimeSupported", ValueType.BOOLEAN, Level.OBJECTS, True, False, True),
    _p("MaxEventsPerConsumer", ValueType.LONG, _NOT_ON_SUPPLIER_SIDE, 0, 0, LONG_MAX),
    _p("OrderPolicy", ValueType.SHORT, Level.OBJECTS, ANY_ORDER, ANY_ORDER, DEADLINE_ORDER,
       choices=(ANY_ORDER, FIFO_ORDER, PRIORITY_ORDER, DEADLINE_ORDER)),
    _p("DiscardPolicy", ValueType.SHORT, _NOT_ON_SUPPLIER_SIDE, ANY_ORDER, ANY_ORDER, LIFO_ORDER,
       choices=(ANY_ORDER, FIFO_ORDER, PRIORITY_ORDER, DEADLINE_ORDER, LIFO_ORDER)),
    _p("MaximumBatchSize", ValueType.LONG, _BATCHING, 1, 1, LONG_MAX),
    _p("PacingInterval", ValueType.TIMET, _BATCHING, 0, 0, TIMET_MAX),
    # Section 3.7.8 (CosNotifyCommAck): reliable delivery by acknowledgement.
    _p("DeliveryReliability", ValueType.SHORT, Level.OBJECTS, 0, 0, 1, choices=(0, 1),
       supported=(0,)),   # Acknowledgment (1) where Capabilities.acknowledgment (ack.py)
    _p("Retries", ValueType.LONG, Level.OBJECTS, 3, 0, LONG_MAX),
    _p("RetryInterval", ValueType.TIMET, Level.OBJECTS, 1_000_000, 0, TIMET_MAX),
    # Section 2.1.5: transactional delivery needs an Object Transaction Service.
    _p(ENABLE_TRANSACTION, ValueType.BOOLEAN, Level.OBJECTS, False, False, True,
       supported=(False,)),
)}

#: Section 2.5.7: administrative properties, settable on the channel only.
ADMIN_PROPERTIES: dict[str, PropertyDef] = {p.name: p for p in (
    _p("MaxQueueLength", ValueType.LONG, Level.CHANNEL, 0, 0, LONG_MAX),
    _p("MaxConsumers", ValueType.LONG, Level.CHANNEL, 0, 0, LONG_MAX),
    _p("MaxSuppliers", ValueType.LONG, Level.CHANNEL, 0, 0, LONG_MAX),
    _p("RejectNewEvents", ValueType.BOOLEAN, Level.CHANNEL, False, False, True),
    # cosnotify's own (docs/filters.md, "Filter groups"): how an empty filter group
    # counts under OR_OP. 0: as section 2.3 states (the other group decides);
    # 1: as TAO and JacORB do (an empty group passes everything).
    _p(FILTER_GROUP_SEMANTICS, ValueType.SHORT, Level.CHANNEL, SPEC_GROUPS, SPEC_GROUPS,
       TAO_GROUPS, choices=(SPEC_GROUPS, TAO_GROUPS)),
    # cosnotify's own: each node's upward propagation limit and barricade, for the
    # channel's OES_SUBTREE filters (docs/grammars/oes.md). Empty: no limits.
    _p(OES_NODE_LIMITS, ValueType.NODE_LIMITS, Level.CHANNEL, ()),
    # cosnotify's own (docs/qos.md, docs/history.md): how much of its history a channel
    # keeps in the store after delivering it, by age, count and bytes; 0: no bound of
    # that kind, all three 0: no history. Needs a store.
    _p(RETAIN_AGE, ValueType.TIMET, Level.CHANNEL, 0, 0, TIMET_MAX),
    _p(RETAIN_COUNT, ValueType.LONG, Level.CHANNEL, 0, 0, LONG_MAX),
    _p(RETAIN_BYTES, ValueType.ULONGLONG, Level.CHANNEL, 0, 0, 2**64 - 1),
)}

#: Section 2.1.5's admin properties of transactional delivery (TransactionTimeout: an
#: unsigned long, "mapped on the unsigned long input parameter of the OTS
#: Current.set_timeout()"; the other two: no type given). Understood (section 2.5.2:
#: "expected to understand all properties defined in this specification"), not
#: supported: they "affect only the proxies with transaction client behavior", which
#: need EnableTransaction TRUE and an OTS. UNSUPPORTED_PROPERTY (docs/qos.md).
TRANSACTION_ADMIN_PROPERTIES = frozenset(
    ("TransactionEvents", "TransactionEventSequences", "TransactionTimeout"))


def levels_of(definition: PropertyDef) -> list[str]:
    """Human-readable level names of a property (for docs and messages)."""
    names = []
    for level, label in ((Level.MESSAGE, "message"), (Level.PROXY, "proxy"),
                         (Level.ADMIN, "admin"), (Level.CHANNEL, "channel")):
        if definition.levels & level:
            names.append(label)
    return names
