"""A channel's history over CORBA: ``CosNotifyHistory`` (idl/CosNotifyHistory.idl).

Strategy: the IDL types meet the sans-IO query here and nowhere else. A
:class:`History` is the core object behind ``CosNotifyHistory::History``: it
holds its channel, turns the ``PropertySeq`` a client sends into the query's
fields (the seed's ``QueryData`` names, as :func:`~cosnotify.history.query.from_fields`
reads them), runs ``channel.query`` and gives the retained events back as
``RetainedEvent`` structs. The server's generic forwarding serves it (a
channel facet: object id ``ch/C/history``, cosnotify/server/objects.py), so
it lives and dies with its channel, and a reference to it names the same
history after a restart.

Times: a ``RetainedEvent`` gives the channel's clock (a double of Unix
seconds) as a ``TimeBase::TimeT``, which is not exact; a time bound sent as a
TimeT or UtcT is therefore widened outward by :data:`TIMET_SLACK` (1 us), so
a bound a client took from a returned event includes that event (a bound
sent as a double of Unix seconds is exact).

A malformed query is ``CORBA.BAD_PARAM``: over IIOP a system exception
carries no text, so the reason is also logged (``cosnotify.history``), and
``cosnotify query`` checks the query before sending it (the same
:class:`~cosnotify.history.query.Query` checks, with their reasons).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from omniORB import CORBA

import CosNotification
import CosNotifyHistory
import TimeBase

from cosnotify.channel.clock import TIMET_EPOCH_OFFSET
from cosnotify.corba import descriptors as D
from cosnotify.history.query import EventId, Retained, bad_query

__all__ = ["History", "NotRetained", "fields_of", "properties_of", "retained_event",
           "retained_of"]

log = logging.getLogger("cosnotify.history")

_TIMES = frozenset({"tFrom", "tTo", "sourceTFrom", "sourceTTo",
                    "t_from", "t_to", "source_t_from", "source_t_to"})
_UPPER = frozenset({"tTo", "sourceTTo", "t_to", "source_t_to"})
#: Bytes of encoded events a reply holds at most (then ``more``): omniORB's default
#: message limit is 2 MiB, and a reply's CDR is about the size of its events'.
MAX_REPLY_BYTES = 1 << 20
#: TimeBase::TimeT of the Unix epoch (100 ns units since 1582-10-15).
_EPOCH_TICKS = TIMET_EPOCH_OFFSET * 10_000_000
#: The largest TimeT (an unsigned long long): later source timestamps are given as it.
_MAX_TIMET = 2**64 - 1
#: Seconds a TimeBase bound is widened by: the channel's clock is a double of Unix
#: seconds (about 0.24 us apart today), a TimeT counts 100 ns, and the two do not
#: convert exactly; 1 us covers both.
TIMET_SLACK = 1e-6


def NotRetained(channel_id: int) -> Exception:
    """``CosNotifyHistory::NotRetained`` for channel ``channel_id``."""
    error: Exception = CosNotifyHistory.NotRetained(channel_id)
    return error


class History:
    """The history of one channel, as ``CosNotifyHistory::History`` serves it."""

    #: The object id suffix below the channel's (cosnotify/server/objects.py).
    _spec_suffix = "history"

    def __init__(self, channel: Any) -> None:
        self._owner = channel

    def __eq__(self, other: object) -> bool:
        return isinstance(other, History) and other._owner is self._owner

    def __hash__(self) -> int:
        return hash((History, id(self._owner)))

    @classmethod
    def of(cls, channel: Any) -> History:
        """The history of ``channel``: NotRetained unless the channel retains events."""
        if channel._retention is None:
            raise NotRetained(channel._id)
        return cls(channel)

    @property
    def _destroyed(self) -> bool:
        """Gone with its channel (the server then forgets its servant)."""
        return bool(self._owner._destroyed)

    def _get_channel_id(self) -> int:
        return int(self._owner._id)

    def query(self, fields: Sequence[Any]) -> tuple[list[Any], bool, Any]:
        """The retained events the query's ``fields`` (a PropertySeq) select, at most
        :data:`MAX_REPLY_BYTES` of them; whether there may be more, and where to
        resume (the IDL's ``query``)."""
        from cosnotify.history.reader import query_page

        channel = self._owner
        if channel._destroyed:
            raise CORBA.OBJECT_NOT_EXIST(0, CORBA.COMPLETED_NO, "the channel was destroyed")
        if channel._retention is None:
            raise NotRetained(channel._id)
        try:
            page = query_page(channel, None, fields_of(fields), MAX_REPLY_BYTES)
        except CORBA.BAD_PARAM as exc:
            log.info("channel %s: refused a history query: %s", channel._id, exc)
            raise
        resume = page.resume or EventId(0, 0, 0)
        return ([retained_event(r) for r in page.events], page.more,
                CosNotifyHistory.EventId(resume.server, resume.session, resume.instance))


def fields_of(properties: Sequence[Any]) -> dict[str, Any]:
    """A ``PropertySeq`` as the query's fields (BAD_PARAM for a field given twice or
    a value of the wrong type; :func:`from_fields` checks the rest)."""
    fields: dict[str, Any] = {}
    for prop in properties:
        name = prop.name
        if name in fields:
            raise bad_query(f"field {name!r} given twice")
        value = prop.value
        if not isinstance(value, CORBA.Any):
            raise bad_query(f"field {name!r} is not an Any")
        if name != "payload" and value.typecode().kind() in (CORBA.tk_null, CORBA.tk_void):
            raise bad_query(f"field {name!r} holds no value")
        if name == "payload":
            fields[name] = value  # the payload is the property's value itself
        elif name in _TIMES:
            fields[name] = _seconds(name, value)
        elif name in ("ids", "event_ids"):
            fields[name] = [_id_of(i) for i in _sequence(name, value.value())]
        elif name in ("types", "event_types"):
            fields[name] = [tuple(_strings(name, p)) for p in _sequence(name, value.value())]
        elif name == "after":
            fields[name] = _id_of(value.value())
        else:
            fields[name] = value.value()
    return fields


def _seconds(name: str, value: Any) -> float:
    """A time field: TimeT, UtcT, or a double of Unix seconds. A TimeBase bound is
    widened outward by :data:`TIMET_SLACK` (module docstring): it never leaves out an
    event inside it, the one a client read back as that TimeT included."""
    d = D.unalias(D.resolve(value.typecode()._d))
    ticks = None
    if D.equivalent(d, TimeBase._tc_TimeT._d):
        ticks = value.value()
    elif D.equivalent(d, TimeBase._tc_UtcT._d):
        ticks = value.value().time
    elif D.equivalent(d, CORBA.TC_double._d):
        return float(value.value())
    if ticks is not None:
        seconds: float = _seconds_of(ticks)
        return seconds + TIMET_SLACK if name in _UPPER else seconds - TIMET_SLACK
    raise bad_query(f"field {name!r} must be a TimeBase::TimeT, a TimeBase::UtcT or a "
                    f"double of Unix seconds")


def _timet(seconds: float) -> int:
    """Unix seconds as a TimeT, to 200 ns (``clock.seconds_to_timet`` adds the epoch
    offset before scaling, which loses 2 us in a double)."""
    return min(max(_EPOCH_TICKS + round(seconds * 10_000_000), 0), _MAX_TIMET)


def _seconds_of(ticks: int) -> float:
    """A TimeT as Unix seconds, as exactly as a double holds them."""
    return (ticks - _EPOCH_TICKS) / 10_000_000


def _sequence(name: str, value: Any) -> Sequence[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise bad_query(f"field {name!r} must be a sequence")
    return value


def _strings(name: str, value: Any) -> Sequence[str]:
    items = _sequence(name, value)
    if not all(isinstance(s, str) for s in items):
        raise bad_query(f"field {name!r} must hold sequences of strings")
    return items


def _id_of(value: Any) -> tuple[int, int, int]:
    try:
        return (int(value.server), int(value.session), int(value.instance))
    except (AttributeError, TypeError, ValueError):
        raise bad_query("ids and after are CosNotifyHistory::EventId structs") from None


def retained_event(event: Retained) -> Any:
    """A retained event as the IDL's ``RetainedEvent`` (times out of TimeT's range are
    clamped to it)."""
    source = event.source_timestamp
    return CosNotifyHistory.RetainedEvent(
        CosNotifyHistory.EventId(event.id.server, event.id.session, event.id.instance),
        list(event.type), _timet(event.timestamp), source is not None,
        0 if source is None else _timet(source), event.event)


def retained_of(value: Any) -> Retained:
    """A ``RetainedEvent`` received from a server as a :class:`Retained`."""
    from cosnotify.history.payload import payload_of

    source = _seconds_of(value.source_timestamp) if value.source_timestamp_defined else None
    event = value.event
    return Retained(EventId(value.id.server, value.id.session, value.id.instance),
                    tuple(value.type), _seconds_of(value.timestamp), source,
                    payload_of(event.remainder_of_body), event)


def properties_of(fields: dict[str, Any]) -> list[Any]:
    """Query fields (the seed's names, checked values) as the ``PropertySeq`` a
    ``History.query`` takes: what a client sends (``cosnotify query``, Spark)."""
    out = []
    for name, value in fields.items():
        if value is None:
            continue
        if name in _TIMES:
            any_value = CORBA.Any(CORBA.TC_double, float(value))  # exact
        elif name in ("ids", "event_ids"):
            any_value = CORBA.Any(CosNotifyHistory._tc_EventIdSeq, [
                CosNotifyHistory.EventId(*(int(p) for p in i)) for i in value])
        elif name in ("types", "event_types"):
            any_value = CORBA.Any(CosNotifyHistory._tc_TypePathSeq, [list(p) for p in value])
        elif name == "after":
            any_value = CORBA.Any(CosNotifyHistory._tc_EventId,
                                  CosNotifyHistory.EventId(*(int(p) for p in value)))
        elif name == "payload":
            any_value = value
        elif name in ("serverId", "server_id"):
            any_value = CORBA.Any(CORBA.TC_ulonglong, value)
        elif name in ("maxResults", "max_results"):
            any_value = CORBA.Any(CORBA.TC_ulong, value)
        elif name in ("uniqueType", "unique_type"):
            any_value = CORBA.Any(CORBA.TC_boolean, bool(value))
        else:
            any_value = CORBA.Any(CORBA.TC_string, str(value))
        out.append(CosNotification.Property(name, any_value))
    return out
