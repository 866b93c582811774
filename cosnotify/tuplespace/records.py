"""What the tuple space hands out and keeps: tuples, client descriptions, errors.

Strategy: a :class:`Tuple` is the frozen value a caller gets (the seed's
event with the ID "unique to the instantiation history of the server" that
deleteEvent names); a :class:`Live` is the space's own mutable record of a
live tuple, with what its index and sequencing read from the event once.
The IDL's exceptions are made here, each with its reason, so the core and
the servants raise the same ones (the h11 rule: one place says what an
error is).
"""

from __future__ import annotations

from typing import Any

import attrs
from omniORB import CORBA

import CosNotifyEventHeap
import CosNotifyGrammars

__all__ = [
    "ClientInfo",
    "Live",
    "Tuple",
    "bad_param",
    "gone",
    "invalid_consumer",
    "invalid_event",
    "invalid_source",
    "invalid_template",
    "limit_exceeded",
]


@attrs.frozen
class Tuple:
    """A live tuple as a caller gets it.

    ``id``: the seed's ID (Event Heap Server Responsibilities), never 0 and never
    repeated by the service (across restarts, with a store). ``event``: the event as a
    ``CosNotification::StructuredEvent`` (an Any event is its %ANY wrapper, Table 2-2).
    ``arrival`` and ``expires``: Unix seconds on the channel's clock.
    """

    id: int
    event: Any
    arrival: float
    expires: float
    #: The space's record, for ``TupleSpace.give_back`` (not part of the value).
    _live: Any = attrs.field(default=None, eq=False, repr=False, alias="live")
    #: How a client received it (its sequencing record before, and whether it was
    #: taken), for ``give_back``; None for an anonymous call (not part of the value).
    _receipt: Any = attrs.field(default=None, eq=False, repr=False, alias="receipt")


@attrs.frozen
class ClientInfo:
    """The seed's EventHeap object's names ("Event Heap Client Responsibilities": "The
    client must maintain Source, Application, Device, Group and Person values for each
    client instance"); an empty string is "not given"."""

    source: str
    application: str = ""
    device: str = ""
    person: str = ""
    group: str = ""


class Live:
    """One live tuple inside a space (see the module docstring)."""

    __slots__ = ("arrival", "dropped", "event", "expires", "form", "id", "keys", "seq",
                 "seq_key", "size", "subject", "type_name")

    def __init__(self, tuple_id: int, event: Any, arrival: float, expires: float) -> None:
        self.id = tuple_id
        #: The channel's envelope (cosnotify.channel.event.Event).
        self.event = event
        self.arrival = arrival
        self.expires = expires
        #: Arrival order in its space (set when it is added): oldest first.
        self.seq = 0
        #: Which EVENTHEAP matcher reads it ("structured", "typed" or "any"), the value
        #: that matcher gets, and its EventType (fields.read_event).
        self.form = "structured"
        self.subject: Any = None
        self.type_name: str | None = None
        #: (index, key) of each indexed property name it has (index.py; a tuple, not a
        #: dict: the collector walks every object a live tuple holds).
        self.keys: tuple[tuple[Any, Any], ...] = ()
        #: (source or None, session, number): what sequencing reads (sequencing.py).
        self.seq_key: tuple[str | None, int, int] = (None, 0, 0)
        #: True once removed from its space (its buckets skip it: index.py).
        self.dropped = False
        #: Its estimated encoded size in bytes (sizes.py).
        self.size = 0

    def as_tuple(self, receipt: Any = None) -> Tuple:
        return Tuple(self.id, self.event.as_structured(), self.arrival, self.expires, live=self,
                     receipt=receipt)

    def __repr__(self) -> str:
        return f"<Live #{self.id} seq={self.seq} {self.type_name!r} expires={self.expires}>"


def invalid_template(reason: str) -> Exception:
    """``CosNotifyGrammars::InvalidTemplate``: not an EVENTHEAP template."""
    error: Exception = CosNotifyGrammars.InvalidTemplate(reason)
    return error


def invalid_event(reason: str) -> Exception:
    """``CosNotifyEventHeap::InvalidEvent``: put_event refuses the event."""
    error: Exception = CosNotifyEventHeap.InvalidEvent(reason)
    return error


def invalid_consumer(reason: str) -> Exception:
    """``CosNotifyEventHeap::InvalidConsumer``: a stream's consumer the channel cannot use."""
    error: Exception = CosNotifyEventHeap.InvalidConsumer(reason)
    return error


def invalid_source(reason: str) -> Exception:
    """``CosNotifyEventHeap::InvalidSource``: connect refuses the client's names."""
    error: Exception = CosNotifyEventHeap.InvalidSource(reason)
    return error


def limit_exceeded(reason: str, limit: int) -> Exception:
    """``CosNotifyEventHeap::LimitExceeded``: a limit of limits.py."""
    error: Exception = CosNotifyEventHeap.LimitExceeded(reason, limit)
    return error


def bad_param(reason: str) -> Exception:
    """``CORBA::BAD_PARAM`` with the reason (in process; over IIOP only the kind)."""
    error: Exception = CORBA.BAD_PARAM(0, CORBA.COMPLETED_NO, reason)
    return error


def gone(what: str) -> Exception:
    """``CORBA::OBJECT_NOT_EXIST``: the space (its channel) or the client is gone."""
    error: Exception = CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO, f"{what} is gone")
    return error
