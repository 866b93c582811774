"""The notification an OES tree operation emits: one Structured Event.

Strategy: "OES generates notification events for every such operation"
(Notifications): creating a node, changing it (a POST, or a touch: a POST
that changes nothing, "so as to trigger a notification") and removing it.
The event carries what the seed's ``<notification>`` carries, with the
seed's names (the XML schema and the NOTIFY verb), so any grammar selects
from it:

=================  ===============================================================
``node``           the pathname of the node the operation was on (a ``wstring``:
                   names are "UCS-2"); the OES_SUBTREE grammar reads it (NOTIFY:
                   "the path of the node that generated the subscription
                   notification")
``nodename``       its name (``wstring``; "" for the root)
``operation``      ``create``, ``post``, ``touch`` or ``remove`` (the
                   SUBSCRIPTION table's LNOperation: "0 means post, 1 means
                   touch, 2 means remove"; a creation is the POST that made the
                   node)
``lastValue``      the content before the operation (``sequence<octet>``), when
                   the node had content
``presentValue``   the content after it, when the node has content (NOTIFY: a
                   POST's notification has a ``<presentValue>``, a REMOVE's a
                   ``<lastValue>``)
``upl``            the node's upward propagation limit (``long``, -1: infinite)
``guaranteed``     its QoS flag (``boolean``)
``barricade``      its barricade (``boolean``)
``subscriptionPool``  the pathname of its subscription pool, when it has one
=================  ===============================================================

in ``filterable_data``, in that order. The fixed header's event type is
(``OES``, the operation); the event name is empty.
"""

from __future__ import annotations

from typing import Any, Final

from omniORB import CORBA

import CosNotification as N

from cosnotify.filter.oes.limits import Path, format_path

__all__ = ["CREATE", "DOMAIN", "OPERATIONS", "POST", "REMOVE", "TOUCH", "notification"]

#: The domain_name of every tree notification.
DOMAIN: Final = "OES"
CREATE: Final = "create"
POST: Final = "post"
TOUCH: Final = "touch"
REMOVE: Final = "remove"
OPERATIONS: Final = (CREATE, POST, TOUCH, REMOVE)

_TC_CONTENT: Final = CORBA._tc_OctetSeq
_TRUE: Final = CORBA.Any(CORBA.TC_boolean, True)
_FALSE: Final = CORBA.Any(CORBA.TC_boolean, False)
_INFINITE: Final = CORBA.Any(CORBA.TC_long, -1)
_NULL: Final = CORBA.Any(CORBA.TC_null, None)
_TYPES: Final = {op: N.EventType(DOMAIN, op) for op in OPERATIONS}
#: Values shared by every event (Anys); the Property pairs are made per event, so a
#: consumer in this process that edits its event's pairs edits only its own.
_OPS: Final = {op: CORBA.Any(CORBA.TC_string, op) for op in OPERATIONS}
_ROOT_NAME: Final = CORBA.Any(CORBA.TC_wstring, "")


def notification(operation: str, path: Path, last: bytes | None, present: bytes | None,
                 upl: int, guaranteed: bool, barricade: bool,
                 pool: Path | None) -> Any:
    """The Structured Event of ``operation`` on the node at ``path`` (module docstring)."""
    Property = N.Property
    data = [Property("node", CORBA.Any(CORBA.TC_wstring, format_path(path))),
            Property("nodename", CORBA.Any(CORBA.TC_wstring, path[-1]) if path
                     else _ROOT_NAME),
            Property("operation", _OPS[operation])]
    if last is not None:
        data.append(Property("lastValue", CORBA.Any(_TC_CONTENT, last)))
    if present is not None:
        data.append(Property("presentValue", CORBA.Any(_TC_CONTENT, present)))
    data.append(Property("upl", _INFINITE if upl == -1 else CORBA.Any(CORBA.TC_long, upl)))
    data.append(Property("guaranteed", _TRUE if guaranteed else _FALSE))
    data.append(Property("barricade", _TRUE if barricade else _FALSE))
    if pool is not None:
        data.append(Property("subscriptionPool",
                             CORBA.Any(CORBA.TC_wstring, format_path(pool))))
    return N.StructuredEvent(
        N.EventHeader(N.FixedEventHeader(_TYPES[operation], ""), []), data, _NULL)
