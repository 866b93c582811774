"""Per-source sequencing: which events one client has already received.

Strategy: the seed keeps this on the client ("Event Heap Client
Responsibilities"): "For each EventType received at that client, the client
must maintain a list of all sources (based on source field) from which
events of the given type have been received. For each of these sources, the
SessionID and SequenceNum values from the most recently received event must
be stored", and the server returns only events that "satisfy the sequencing
constraints derived from the sequence information". Here the space plays
both parts for a connected client (clients.py): :class:`Seen` is that list,
kept by the server, and an event is *fresh* for the client unless its
SequenceNum is at most the one recorded for its (EventType, Source) and
SessionID.

Two decisions where the seed is silent:

- **Per session.** The seed's SourceInfo holds one session per source. A
  client that received an event of a source's new session would then find
  the old session's events fresh again, and could receive one twice. So
  the highest SequenceNum is kept per SessionID (up to MAX_SESSIONS_SEEN of
  them per pair), and an event is fresh when it is above its own session's.
- **Events that carry no sequencing.** An event without Source, SessionID
  and SequenceNum of the seed's types (one a Notification supplier pushed)
  is numbered by the space itself: source None, session 0 and its arrival
  number. So a client never receives such an event twice either -- and, as
  with any source, once it has received one it is not given an *older* one
  of the same EventType (the seed's rule, for a "source" that is every
  Notification supplier together).

Memory is bounded: at most MAX_SEEN (EventType, Source) pairs per client,
the oldest forgotten first.

A received event can be *un-received* (:meth:`Seen.unnote`): a wait whose
caller went before the reply gives its tuple back, and the client has not
received it (corba.py). And :class:`Seen` keeps the client's *cursors*: per
template text, the arrival number up to which every tuple that template
matches is one the client has received (or gone; never one a caller's
``accept`` test passed over: search.py), so a sequenced read
starts past them instead of rescanning them (search.py). Receiving more
only keeps a cursor true; forgetting (the bounds above) or un-receiving
voids the client's cursors, and a tuple given back at its old place voids
everyone's (``TupleTable.epoch``). At most MAX_CURSORS per client, the
least recently used forgotten first.
"""

from __future__ import annotations

from typing import Any

from cosnotify.tuplespace.limits import MAX_CURSORS, MAX_SEEN, MAX_SESSIONS_SEEN
from cosnotify.tuplespace.records import Live

__all__ = ["Seen"]


class Seen:
    """One client's sequencing state (module docstring); the space's lock guards it."""

    def __init__(self) -> None:
        #: (EventType, Source) -> {SessionID: highest SequenceNum received}.
        self._table: dict[tuple[str | None, str | None], dict[int, int]] = {}
        #: Template text -> (epoch, arrival number): the cursors (module docstring).
        self._cursors: dict[str, tuple[int, int]] = {}

    def fresh(self, live: Live) -> bool:
        """Has the client not received ``live`` (or anything after it in its session)?"""
        source, session, number = live.seq_key
        sessions = self._table.get((live.type_name, source))
        if sessions is None:
            return True
        last = sessions.get(session)
        return last is None or number > last

    def note(self, live: Live) -> Any:
        """The client received ``live``; what :meth:`unnote` needs to undo it."""
        source, session, number = live.seq_key
        key = (live.type_name, source)
        table = self._table
        sessions = table.get(key)
        if sessions is None:
            if len(table) >= MAX_SEEN:
                del table[next(iter(table))]
                self._cursors.clear()
            sessions = table[key] = {}
        last = sessions.get(session)
        if last is None:
            if len(sessions) >= MAX_SESSIONS_SEEN:
                del sessions[next(iter(sessions))]
                self._cursors.clear()
            sessions[session] = number
        elif number > last:
            sessions[session] = number
        return key, session, last, number

    def unnote(self, receipt: Any) -> None:
        """Undo :meth:`note` (its result), unless the client received a later event of
        that source and session meanwhile."""
        key, session, last, number = receipt
        sessions = self._table.get(key)
        if sessions is None or sessions.get(session) != number:
            return
        if last is None:
            del sessions[session]
            if not sessions:
                del self._table[key]
        else:
            sessions[session] = last
        self._cursors.clear()

    def cursor(self, text: str, epoch: int) -> int:
        """The client's cursor for template ``text`` (0: none)."""
        found = self._cursors.get(text)
        return found[1] if found is not None and found[0] == epoch else 0

    def set_cursor(self, text: str, epoch: int, seq: int) -> None:
        cursors = self._cursors
        cursors.pop(text, None)
        if len(cursors) >= MAX_CURSORS:
            del cursors[next(iter(cursors))]
        cursors[text] = (epoch, seq)

    def __len__(self) -> int:
        return len(self._table)
